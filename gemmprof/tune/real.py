"""The real compile and measure callables, built on gemmprof's build and runner (nvcc or NVRTC, CUDA events).

`compile_candidate` runs in a pool of CPU processes and builds with the compiler `run` would use: nvcc writes the
cubin into gemmprof's cubin cache (keyed by source, flags, compiler version and arch; no GPU needed), so the GPU
worker's own build of the same configuration is a cache hit and the GPU never waits for the compiler. With NVRTC
it fills CuPy's kernel cache the same way. `CupyMeasure` verifies, then times, with `Runner.run_kernel` exactly as
`gemmprof run` does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache

from gemmprof.measure.pools import ignore_sigint
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


def compile_candidate(spec_path: str, arch: str | None, compiler: str | None, params: dict[str, int],
                      shape: tuple[int, int, int] | None = None, sms: int | None = None) -> CompileOutcome:
    """Build one configuration as the GPU worker will (at the sweep's `shape`, for a device of `sms`
    multiprocessors: BoundKernel.for_shape), so that its build is a cache hit."""
    from gemmprof.catalog.binding import bind
    from gemmprof.errors import SpecError
    from gemmprof.measure.build import CompileError, choose_compiler, cupy_compile, device_arch, nvcc_build
    from gemmprof.results.shape import GemmShape

    t0 = time.perf_counter()
    kernel = bind(_spec(spec_path), params)
    try:
        kernel = kernel.for_shape(GemmShape(*shape), sms) if shape else kernel
    except SpecError as exc:
        return CompileOutcome(False, str(exc)[:300], seconds=time.perf_counter() - t0)
    try:
        if choose_compiler(kernel, compiler)[0] == "nvcc":
            built = nvcc_build(kernel, arch or device_arch())
            if not built.ok:
                raise CompileError(f"{kernel.spec.name}: nvcc failed:\n{built.log}")
            r = built.resources
        else:
            r = cupy_compile(kernel).resources
    except CompileError as exc:
        return CompileOutcome(False, first_line(str(exc).split("\n", 1)[-1]) or str(exc)[:300],
                              seconds=time.perf_counter() - t0)
    return CompileOutcome(True, info={"registers": r.registers, "static_smem": r.static_smem,
                                      "local_bytes": r.local_bytes}, seconds=time.perf_counter() - t0)


def compiler_name(spec_path: str, compiler: str | None = None) -> str:
    """The compiler a sweep measures, with its version (it keys the tune cache)."""
    from gemmprof.catalog.binding import bind
    from gemmprof.measure import nvcc as nvccmod
    from gemmprof.measure.build import choose_compiler

    if choose_compiler(bind(_spec(spec_path)), compiler)[0] == "nvcc":
        return f"nvcc {nvccmod.nvcc_version(nvccmod.nvcc_path())}"
    import cupy

    major, minor = cupy.cuda.nvrtc.getVersion()
    return f"nvrtc {major}.{minor} (cupy {cupy.__version__})"


def _smi_query(field: str) -> str | None:
    """One field of GPU 0 from nvidia-smi (no CUDA context in this process); None where nvidia-smi fails."""
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        return subprocess.run([smi, f"--query-gpu={field}", "--format=csv,noheader", "-i", "0"],
                              capture_output=True, text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def gpu_sms() -> int | None:
    """GPU 0's multiprocessor count from its GPU spec (profiles/*.yaml, found by the name nvidia-smi gives), without
    a CUDA context in this process; None when unknown (then a shape-specialized kernel is built by the worker)."""
    from gemmprof.catalog.gpu_specs import gpu_for_device_name

    name = _smi_query("name")
    gpu = gpu_for_device_name(name) if name else None
    return gpu.sm_count if gpu else None


def gpu_arch() -> str | None:
    """sm_XY of GPU 0 from nvidia-smi, without a CUDA context in this process (None: the workers will ask)."""
    out = _smi_query("compute_cap")
    return "sm_" + out.replace(".", "") if out and out.replace(".", "").isdigit() else None


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
    compiler: str | None = None  # None: what `run` would use (nvcc where found)

    def __call__(self, device_index: int) -> CupyMeasure:
        ignore_sigint()
        return CupyMeasure(self, device_index)


class CupyMeasure(Measure):
    def __init__(self, cfg: CupyFactory, device_index: int):

        from gemmprof.catalog.gpu_specs import get_gpu
        from gemmprof.errors import require_cupy
        from gemmprof.measure.device import current_device_gpu
        from gemmprof.measure.runner import Runner, RunOptions
        from gemmprof.measure.timing import TimingConfig
        from gemmprof.model.traffic import GemmShape

        require_cupy()
        self.cfg, self.index = cfg, device_index
        from gemmprof.measure.device import device_name

        self.device_name = device_name()
        self.compiler = compiler_name(cfg.spec_path, cfg.compiler)
        options = RunOptions(shape=GemmShape(cfg.M, cfg.N, cfg.K), seed=cfg.seed, baselines=False,
                             compiler=cfg.compiler,
                             timing=TimingConfig(budget_s=cfg.budget_s, min_reps=5, max_reps=cfg.max_reps,
                                                 flush_l2=cfg.flush_l2))
        self.runner = Runner(current_device_gpu() or get_gpu("h100"), options)
        self._launchers: dict[str, object] = {}

    def measure(self, params, compiled) -> Outcome:
        from gemmprof.catalog.binding import bind
        from gemmprof.measure.runner import ContextLost
        from gemmprof.model.annotate import annotate

        kernel = bind(_spec(self.cfg.spec_path), params)
        try:
            row = self.runner.run_kernel(kernel)
        except ContextLost as exc:
            raise RestartWorker(Outcome(ERROR, message=str(exc)[:300])) from None
        opt = self.runner.opt
        annotate(row, opt.shape, opt.beta, self.runner.gpu_spec, kernel, self.runner.device["sm_count"],
                 opt.timing.l2_policy)
        res = row.resources
        info = {k: v for k, v in (("registers", res.registers if res else None),
                                  ("static_smem", res.static_smem if res else None),
                                  ("local_bytes", res.local_bytes if res else None),
                                  ("rel_error", row.rel_error)) if v is not None}
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

        from gemmprof.catalog.binding import bind
        from gemmprof.measure import tma_launch
        from gemmprof.measure.build import compile_for_launch
        from gemmprof.measure.problem import tolerance, verify, workspace_buffer
        from gemmprof.measure.runner import OPTIN_THRESHOLD

        key = config_key(params)
        if key not in self._launchers:
            kernel = bind(_spec(self.cfg.spec_path), params)
            sms = self.runner.device["sm_count"]
            grid, block, smem = kernel.launch_config(self.runner.opt.shape, sms=sms)
            func = compile_for_launch(kernel.for_shape(self.runner.opt.shape, sms), self.cfg.compiler).function
            if smem > OPTIN_THRESHOLD:
                func.max_dynamic_shared_size_bytes = smem
            abi, shape = kernel.spec.abi, self.runner.opt.shape
            problem = self.runner.problem(kernel.run_dtype, kernel.run_c_dtype)
            layout = kernel.spec.layout
            # a spec with tma_args or a cluster launches as run launches it (tensor maps appended, cuLaunchKernelEx)
            bind = tma_launch.launcher(kernel, func, grid, block, smem, shape, sms)
            tiled = tma_launch.tiled_maps(kernel, shape, sms)
            workspace = workspace_buffer(kernel, shape)

            lds = abi.leading(shape, layout, kernel.env)

            def args_into(c):  # the spec's own argument list (args:), as run packs it
                return tma_launch.launch_args(kernel, shape, problem, lds, tiled, workspace, c)

            first, out = problem.fresh_output(layout["C"], lds["ldc"]), problem.sentinel_output(layout["C"], lds["ldc"])
            for c in (first, out):
                bind(args_into(c))()
            cupy.cuda.Device().synchronize()
            launch = bind(args_into(out))
            check = verify(first, out if problem.beta == 0 else None, problem,
                           tolerance(kernel.run_dtype, kernel.run_c_dtype, shape.K), layout=layout["C"])
            if not check.passed:  # verified again before it is re-timed
                raise RuntimeError(f"{key}: {check.describe()}")
            self._launchers[key] = launch
        return self._launchers[key]

    def sample(self, params, reps):
        from gemmprof.measure.timing import TimingConfig, time_kernel

        config = TimingConfig(warmup=1, min_reps=reps, max_reps=reps, budget_s=0.0, flush_l2=self.cfg.flush_l2)
        return list(time_kernel(self._launcher(params), config, self.runner.flush()).samples_ms)
