"""The Python callables of one `gemmprof run`: loaded from --callable, with the torch.matmul row beside them, and
handed again to a child process when a fault ends the parent's CUDA context. Jobs are ("callable", (PyCallable,
input dtype, arrays adapter)), run by measure.callables.run_callable."""

from __future__ import annotations

from gemmprof.measure import arrays as arrays_mod
from gemmprof.measure import callables


def refs(texts) -> list[callables.CallableRef]:
    return callables.refs(texts)


def load_all(refs_, dtype: str, arrays: str) -> list[tuple]:
    """Import every file and check every function before the GPU is touched; one adapter for all of them."""
    if not refs_:
        return []
    adapter = arrays_mod.adapter(arrays)
    return [("callable", (callables.load(r), dtype, adapter)) for r in refs_]


def torch_baseline() -> callables.PyCallable:
    from gemmprof.catalog.baselines import TORCH_MATMUL, torch_matmul

    return callables.PyCallable(name=TORCH_MATMUL, title="", fn=torch_matmul, id="torch", kind="baseline")


def baseline_jobs(py_jobs: list[tuple], wanted: bool, note, have=()) -> list[tuple]:
    """The baselines of the callables' input dtype: cuBLAS's (those not in `have` already, the kernels' own) and
    torch.matmul where torch is installed (else `note` says why there is no such row)."""
    from dataclasses import replace

    from gemmprof.catalog.baselines import for_dtypes, torch_installed, torch_matmul_title

    if not py_jobs or not wanted:
        return []
    dtype = py_jobs[0][1][1]
    jobs = [("baseline", b) for b in for_dtypes({dtype}) if b not in have]
    if not torch_installed():
        note("no torch.matmul row: torch is not installed (pip install torch)")
        return jobs
    item = replace(torch_baseline(), title=torch_matmul_title(dtype))
    return jobs + [("callable", (item, dtype, arrays_mod.adapter("torch")))]


def child_selectors(rest: list[tuple]) -> tuple[list[tuple], list[str]]:
    """The callables among the remaining jobs that a child can load again (from their files), and the child's
    arguments for them: ("--callable", FILE.py:function)... and the arrays they were given."""
    left = [item for kind, item in rest if kind == "callable" and item[0].ref]
    args = [x for call, _, _ in left for x in ("--callable", call.ref)]
    if left and left[0][2].kind != "cupy":
        args += ["--arrays", left[0][2].kind]
    return left, args
