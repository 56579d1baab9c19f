"""The Python callables of one `gemmprof run`: loaded from --callable, with the torch.matmul row beside them, and
handed again to a child process when a fault ends the parent's CUDA context. Jobs are ("callable", (PyCallable,
input dtype, arrays adapter)), run by measure.callables.run_callable; the PyCallable carries C's dtype."""

from __future__ import annotations

from functools import partial

from gemmprof.catalog.launch_fields import FP8_DTYPES
from gemmprof.measure import arrays as arrays_mod
from gemmprof.measure import callables


def refs(texts) -> list[callables.CallableRef]:
    return callables.refs(texts)


def load_all(refs_, dtype: str, arrays: str, c_dtype: str = "fp32", scales: str | None = None) -> list[tuple]:
    """Import every file and check every function before the GPU is touched; one adapter for all of them, and
    one C dtype (--c-dtype); fp8 inputs (`scales`: --scales) need functions that take the scales."""
    from dataclasses import replace

    if not refs_:
        return []
    adapter = arrays_mod.adapter(arrays)
    scales = scales if dtype in FP8_DTYPES else None
    return [("callable", (replace(callables.load(r, scales=scales), c_dtype=c_dtype), dtype, adapter))
            for r in refs_]


def torch_baseline(c_dtype: str = "fp32") -> callables.PyCallable:
    from gemmprof.catalog.baselines import torch_matmul, torch_matmul_name

    return callables.PyCallable(name=torch_matmul_name(c_dtype), title="", fn=torch_matmul, id="torch",
                                kind="baseline", c_dtype=c_dtype)


def baseline_jobs(py_jobs: list[tuple], wanted: bool, note, have=()) -> list[tuple]:
    """The baselines of the callables' input and C dtypes, as a kernel spec's with that c_dtype gets: cuBLAS's
    (those not in `have` already, the kernels' own) and torch.matmul writing the same C where torch is installed
    and can (else `note` says why there is no such row)."""
    from dataclasses import replace

    from gemmprof.catalog.baselines import (
        for_kernels,
        torch_installed,
        torch_matmul_title,
        torch_matmul_writes,
    )

    if not py_jobs or not wanted:
        return []
    call, dtype, _ = py_jobs[0][1]
    if dtype in FP8_DTYPES:  # fp8_baseline_jobs
        return []
    jobs = [("baseline", b) for b in for_kernels({(dtype, call.c_dtype)}) if b not in have]
    if not torch_installed():
        note("no torch.matmul row: torch is not installed (pip install torch)")
        return jobs
    if not torch_matmul_writes(dtype, call.c_dtype):
        note(f"no torch.matmul row: torch.mm writes {call.c_dtype} C only from {call.c_dtype} inputs")
        return jobs
    item = replace(torch_baseline(call.c_dtype), title=torch_matmul_title(dtype, call.c_dtype))
    return jobs + [("callable", (item, dtype, arrays_mod.adapter("torch")))]


def fp8_baseline_jobs(kernels, py_jobs: list[tuple], wanted: bool, note, shape, scales: str = "tensor"
                      ) -> list[tuple]:
    """cuBLASLt's fp8 GEMM (torch._scaled_mm) for every fp8 input and C dtype the run's kernels and callables use,
    on the same problem (the run's scales), where torch is installed and cuBLASLt can (else `note` says why not)."""
    from gemmprof.catalog.baselines import (
        cublaslt_fp8_missing,
        cublaslt_fp8_title,
        torch_installed,
        torch_scaled_mm,
    )
    from gemmprof.results.run import cublaslt_fp8_name

    pairs = {(k.run_dtype, k.run_c_dtype) for k in kernels if k.run_dtype in FP8_DTYPES}
    pairs |= {(dtype, call.c_dtype) for call, dtype, _ in (item for _, item in py_jobs) if dtype in FP8_DTYPES}
    if not pairs or not wanted:
        return []
    if not torch_installed():
        note("no cuBLASLt fp8 row: torch is not installed (its torch._scaled_mm calls cuBLASLt; pip install torch)")
        return []
    jobs = []
    for dtype, c_dtype in sorted(pairs):
        why = cublaslt_fp8_missing(dtype, shape)
        if why:
            note(f"no cuBLASLt fp8 row for {dtype} inputs: {why}")
            continue
        # per tensor, also the row that accumulates as a per-tensor kernel does (h14): all of K in the tensor cores
        for fast in (False, True) if scales in ("", "tensor") else (False,):
            item = callables.PyCallable(name=cublaslt_fp8_name(dtype, c_dtype, scales, fast),
                                        title=cublaslt_fp8_title(dtype, c_dtype, scales, fast),
                                        fn=partial(torch_scaled_mm, fast_accum=True) if fast else torch_scaled_mm,
                                        id="cuBLAS", kind="baseline", c_dtype=c_dtype)
            jobs.append(("callable", (item, dtype, arrays_mod.adapter("torch"))))
    return jobs


def child_selectors(rest: list[tuple]) -> tuple[list[tuple], list[str]]:
    """The callables among the remaining jobs that a child can load again (from their files), and the child's
    arguments for them: ("--callable", FILE.py:function)..., the arrays they were given and the C they fill."""
    left = [item for kind, item in rest if kind == "callable" and item[0].ref]
    args = [x for call, _, _ in left for x in ("--callable", call.ref)]
    if left and left[0][2].kind != "cupy":
        args += ["--arrays", left[0][2].kind]
    if left and left[0][0].c_dtype != "fp32":
        args += ["--c-dtype", left[0][0].c_dtype]
    return left, args
