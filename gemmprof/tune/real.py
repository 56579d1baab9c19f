"""The real compile and measure callables, built on gemmprof's build and runner (CuPy, NVRTC, CUDA events).

`compile_candidate` runs in a pool of CPU processes: compiling through CuPy fills CuPy's on-disk kernel cache
(keyed by source, options, architecture and name expression), so the GPU worker's own `cupy_compile` of the
same configuration is a cache hit and the GPU never waits for NVRTC. `CupyMeasure` verifies, then times, with
`Runner.run_kernel` exactly as `gemmprof run` does.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from functools import lru_cache

from gemmprof.tune.measure import Measure, RestartWorker
from gemmprof.tune.records import (
    COMPILE_ERROR,
    ERROR,
    FAILED_VERIFICATION,
    INVALID,
    TIMED,
    CompileOutcome,
    Outcome,
    first_line,
)
from gemmprof.tune.space import config_key


@lru_cache(maxsize=8)
def _spec(path: str):
    from gemmprof.catalog.spec import load_spec

    return load_spec(path)


def ignore_sigint() -> None:
    """Pool and worker processes leave Ctrl-C to the parent, which keeps the cache and stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def compile_candidate(spec_path: str, params: dict[str, int]) -> CompileOutcome:
    from gemmprof.catalog.spec import bind
    from gemmprof.measure.build import CompileError, cupy_compile

    t0 = time.perf_counter()
    try:
        compiled = cupy_compile(bind(_spec(spec_path), params))
    except CompileError as exc:
        return CompileOutcome(False, first_line(str(exc).split("\n", 1)[-1]) or str(exc)[:300],
                              seconds=time.perf_counter() - t0)
    r = compiled.resources
    return CompileOutcome(True, info={"registers": r.registers, "static_smem": r.static_smem,
                                      "local_bytes": r.local_bytes}, seconds=time.perf_counter() - t0)


def compiler_name() -> str:
    import cupy

    major, minor = cupy.cuda.nvrtc.getVersion()
    return f"nvrtc {major}.{minor} (cupy {cupy.__version__})"


@dataclass(frozen=True)
class CupyFactory:
    spec_path: str
    M: int
    N: int
    K: int
    seed: int = 1234
    budget_s: float = 0.15
    max_reps: int = 50
    flush_l2: bool = True

    def __call__(self, device_index: int) -> CupyMeasure:
        ignore_sigint()
        return CupyMeasure(self, device_index)


class CupyMeasure(Measure):
    def __init__(self, cfg: CupyFactory, device_index: int):

        from gemmprof.catalog.gpu_specs import current_device_gpu, get_gpu
        from gemmprof.errors import require_cupy
        from gemmprof.measure.runner import Runner, RunOptions
        from gemmprof.measure.timing import TimingConfig
        from gemmprof.model.traffic import GemmShape

        require_cupy()
        self.cfg, self.index = cfg, device_index
        from gemmprof.measure.device import device_name

        self.device_name = device_name()
        self.compiler = compiler_name()
        options = RunOptions(shape=GemmShape(cfg.M, cfg.N, cfg.K), seed=cfg.seed, baselines=False,
                             timing=TimingConfig(budget_s=cfg.budget_s, min_reps=5, max_reps=cfg.max_reps,
                                                 flush_l2=cfg.flush_l2))
        self.runner = Runner(current_device_gpu() or get_gpu("h100"), options)
        self._launchers: dict[str, object] = {}

    def measure(self, params, compiled) -> Outcome:
        from gemmprof.catalog.spec import bind
        from gemmprof.measure.runner import ContextLost

        try:
            row = self.runner.run_kernel(bind(_spec(self.cfg.spec_path), params))
        except ContextLost as exc:
            raise RestartWorker(Outcome(ERROR, message=str(exc)[:300])) from None
        info = {k: v for k, v in (("registers", row.registers), ("static_smem", row.static_smem),
                                  ("local_bytes", row.local_bytes), ("rel_error", row.rel_error)) if v is not None}
        if row.occupancy:
            info["occupancy"] = row.occupancy.get("theoretical_occupancy")
        if row.status == "ok" and row.timing is not None:
            return Outcome(TIMED, tuple(row.timing.samples_ms), info=info)
        if row.status == "FAIL":
            return Outcome(FAILED_VERIFICATION, message=row.message[:300], info=info)
        if row.status == "rejected":
            return Outcome(INVALID, message=row.message[:300], info=info)
        if "compilation failed" in row.message:
            return Outcome(COMPILE_ERROR, message=first_line(row.message.split("\n", 1)[-1]), info=info)
        return Outcome(ERROR, message=first_line(row.message, "error"), info=info)

    def _launcher(self, params):
        import cupy

        from gemmprof.catalog.spec import bind
        from gemmprof.measure.build import cupy_compile
        from gemmprof.measure.problem import TOLERANCE, kernel_args, verify
        from gemmprof.measure.runner import OPTIN_THRESHOLD

        key = config_key(params)
        if key not in self._launchers:
            kernel = bind(_spec(self.cfg.spec_path), params)
            grid, block, smem = kernel.launch_config(self.runner.opt.shape)
            func = cupy_compile(kernel).function
            if smem > OPTIN_THRESHOLD:
                func.max_dynamic_shared_size_bytes = smem
            problem = self.runner.problem(kernel.spec.dtype)
            out = problem.fresh_output()
            args = kernel_args(problem, kernel.spec.layout, out)
            func(grid, block, args, shared_mem=smem)
            cupy.cuda.Device().synchronize()
            check = verify(out, problem, TOLERANCE[kernel.spec.dtype])
            if not check.passed:  # verified again before it is re-timed
                raise RuntimeError(f"{key}: {check.describe()}")
            self._launchers[key] = lambda: func(grid, block, args, shared_mem=smem)
        return self._launchers[key]

    def sample(self, params, reps):
        from gemmprof.measure.timing import TimingConfig, time_kernel

        config = TimingConfig(warmup=1, min_reps=reps, max_reps=reps, budget_s=0.0, flush_l2=self.cfg.flush_l2)
        return list(time_kernel(self._launcher(params), config, self.runner.flush()).samples_ms)
