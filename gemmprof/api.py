"""gemmprof as a library: `gemmprof.bench(fn, m=..., n=..., k=..., dtype=...)` verifies and times a Python GEMM
exactly as `gemmprof run --callable` does and returns the same typed RunResult."""

from __future__ import annotations

from gemmprof.catalog.launch_fields import C_DTYPE_NAMES as C_DTYPES
from gemmprof.catalog.launch_fields import DTYPE_NAMES as CALLABLE_DTYPES
from gemmprof.catalog.launch_fields import FP8_DTYPES
from gemmprof.errors import InputError
from gemmprof.results.run import RunResult

FILLS = ("uniform", "uniform01", "randn", "zeros", "ints")


def bench(fn, *, m: int, n: int, k: int, dtype: str = "fp32", c_dtype: str | None = None, arrays: str = "cupy",
          alpha: float = 1.0, beta: float = 0.0, name: str | None = None, baselines: bool = True,
          seed: int | None = None, budget_s: float = 1.0, max_reps: int = 200, flush_l2: bool = True,
          precision: float = 0.005, warmup: int = 3, gpu: str | None = None, regime: str = "sustained",
          fill: str = "uniform", l2: str | None = None, checks: int = 3, energy: bool | None = None,
          scales: str = "tensor") -> RunResult:
    """Verify fn(A, B, C, alpha, beta) against a float64 reference and time it with CUDA events.

    fn must fill C = alpha * A @ B + beta * C in place and enqueue its work on CuPy's current stream. A (m x k)
    and B (k x n) come in `dtype` (fp32, fp16, or bf16: uint16 bit patterns for CuPy arrays, torch.bfloat16 for
    torch), C (m x n) in `c_dtype` (fp32, or fp16 or bf16 for a GEMM that writes half C: verified with that C's
    tolerance, beside cuBLAS writing the same C). Without `c_dtype`, half inputs get C inferred from one call
    over fp32 C (callables.choose_c_dtype: fp32 if it fills it; the inputs' type if it raised there, or wrote
    only half numbers into it, and fills a C of that type) and the row's note says which and why; fp8 inputs
    (`dtype` e4m3 or e5m2) get bf16 C unless `c_dtype` says otherwise, and come with their scales as fn's keyword
    arguments scale_a and scale_b, scaled as `scales` says (tensor, 1x128, 128x128: docs/fp8.md), beside
    cuBLASLt's fp8 GEMM. `arrays` is "cupy" or "torch" (tensors over the same memory, through DLPack). With
    `baselines`, cuBLAS of the same input and C dtypes and torch.matmul (where torch is
    installed) are timed beside it. `warmup` calls precede the timed ones, which stop once the median's 95%
    confidence interval is within +-`precision` (a fraction; 0: spend all of `budget_s`, up to `max_reps` calls).
    `regime` "sustained" (default) warms each variant until NVML's SM clock and power settle before timing it, as
    a GEMM runs under load; "burst" times the card as found. `fill`, `l2`, `checks` and `energy` are `gemmprof run`'s
    --fill, --l2, --checks and --energy. The result's variants hold fn's row (status "ok", "FAIL" or "error" with
    its message) and the baselines'.
    """
    from dataclasses import replace

    from gemmprof.catalog import gpu_specs
    from gemmprof.errors import require_cupy
    from gemmprof.measure import arrays as arrays_mod
    from gemmprof.measure import callables, python_jobs, timing
    from gemmprof.measure.device import current_device_gpu
    from gemmprof.measure.runner import ContextLost, Runner, RunOptions, new_result
    from gemmprof.measure.timing import TimingConfig
    from gemmprof.model.annotate import annotate
    from gemmprof.model.traffic import GemmShape

    if dtype not in CALLABLE_DTYPES:
        raise InputError(f"bench: dtype {dtype!r}: give one of {', '.join(CALLABLE_DTYPES)}")
    if c_dtype is not None and c_dtype not in C_DTYPES:
        raise InputError(f"bench: c_dtype {c_dtype!r}: give one of {', '.join(C_DTYPES)}")
    fp8 = dtype in FP8_DTYPES
    if fp8:
        from gemmprof.measure.fp8 import check_scales

        check_scales(scales, dtype, k)
        c_dtype = c_dtype or "bf16"
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise InputError(f"bench: warmup {warmup!r}: give a number of calls, 0 or more")
    for key, value, allowed in (("regime", regime, timing.REGIMES), ("fill", fill, FILLS),
                                ("l2", l2 or "flush", ("flush", "rotate", "warm"))):
        if value not in allowed:
            raise InputError(f"bench: {key} {value!r}: give one of {', '.join(allowed)}")
    timing.capture()  # before fn's own module could matter: CuPy's timing functions as they are now
    shape = GemmShape(m, n, k)
    call = callables.from_function(fn, name=name, scales=scales if fp8 else None)
    adapter = arrays_mod.adapter(arrays)
    require_cupy()
    gpu_spec = gpu_specs.get_gpu(gpu) if gpu else (current_device_gpu() or gpu_specs.get_gpu("h100"))
    options = RunOptions(shape=shape, alpha=float(alpha), beta=float(beta), seed=seed, baselines=baselines,
                         timing=TimingConfig(budget_s=budget_s, max_reps=max_reps, flush_l2=flush_l2,
                                             precision=precision, warmup=warmup, regime=regime, fill=fill, l2=l2,
                                             checks=checks, energy=energy), scales=scales)
    runner = Runner(gpu_spec, options)
    inferred = ""
    if c_dtype is None:
        c_dtype, inferred = callables.choose_c_dtype(
            dtype, lambda c: callables.attempt_call(runner, fn, dtype, adapter, c))
    call = replace(call, c_dtype=c_dtype)
    command = (f"gemmprof.bench({call.name}, m={m}, n={n}, k={k}, dtype={dtype!r}, "
               + (f"c_dtype={c_dtype!r}, " if c_dtype != "fp32" else "") + (f"scales={scales!r}, " if fp8 else "")
               + f"arrays={arrays!r})")
    result = new_result(gpu_spec, options, runner, command)
    mine = ("callable", (call, dtype, adapter))
    jobs = python_jobs.baseline_jobs([mine], baselines, lambda note: None)
    jobs += python_jobs.fp8_baseline_jobs([], [mine], baselines, lambda note: None, shape, scales) + [mine]
    for kind, item in jobs:
        try:
            row = runner.run_baseline(item) if kind == "baseline" else callables.run_callable(runner, *item)
        except ContextLost as exc:  # the CUDA context is gone: nothing more can run in this process
            if kind == "callable":
                result.variants.append(callables.lost_row(item, str(exc)))
            break
        if kind == "callable" and inferred:
            row.message = "; ".join(x for x in (inferred, row.message) if x)
        result.variants.append(annotate(row, shape, options.beta, gpu_spec, l2_policy=options.timing.l2_policy))
    runner.close()
    return result
