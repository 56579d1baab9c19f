"""`gemmprof run` as a library call: compile, verify, time each selected rung and the cuBLAS baselines."""

from __future__ import annotations

import datetime as _dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from gemmprof._version import __version__
from gemmprof.catalog.baselines import Baseline, for_kernels, with_b_layout
from gemmprof.catalog.binding import BoundKernel
from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.errors import GemmprofError, SpecError
from gemmprof.measure import nvtx, timing, tma_launch
from gemmprof.measure.build import CompileError, compile_for_launch, device_arch
from gemmprof.measure.cublas import make_launcher
from gemmprof.measure.device import device_name
from gemmprof.measure.fp8 import check_scale_shapes
from gemmprof.measure.problem import Problem, make_problem, tolerance, verify, workspace_buffer
from gemmprof.measure.timing import L2Flusher, TimingConfig, time_kernel
from gemmprof.model.occupancy import occupancy
from gemmprof.model.traffic import GemmShape, gemm_flops, get_dtype, min_arithmetic_intensity, tiled_traffic
from gemmprof.results.clocks import ClockRecord
from gemmprof.results.run import LaunchConfig, ModelFigures, RunResult, VariantResult

OPTIN_THRESHOLD = 48 * 1024
Launch = Callable[[], None]  # one launch of a verified variant into its output, ready to time


@dataclass
class RunOptions:
    shape: GemmShape
    alpha: float = 1.0
    beta: float = 0.0
    seed: int | None = None
    baselines: bool = True
    launch_once: bool = False  # verify, then one launch inside the NVTX range (for ncu)
    timing: TimingConfig = TimingConfig()
    compiler: str | None = None  # nvcc | nvrtc; None: the spec's pin, else nvcc where found, else NVRTC
    scales: str = "tensor"  # fp8 inputs: tensor | 1x128 | 128x128 (gemmprof.measure.fp8)


class ContextLost(GemmprofError):
    """The CUDA context died (a kernel faulted): nothing more can run in this process."""


def device_info() -> dict:
    import cupy

    rt = cupy.cuda.runtime
    props = rt.getDeviceProperties(0)
    name = device_name(props)
    info = {"name": name, "compute_capability": f"{props['major']}.{props['minor']}",
            "sm_count": props["multiProcessorCount"], "l2_bytes": props["l2CacheSize"],
            "max_sm_clock_mhz": props["clockRate"] / 1000, "max_mem_clock_mhz": props["memoryClockRate"] / 1000,
            "driver_version": rt.driverGetVersion(), "cuda_runtime_version": rt.runtimeGetVersion(),
            "cupy_version": cupy.__version__}
    info.update(_nvidia_smi_clocks())
    return info


def _nvidia_smi_clocks() -> dict:
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    query = "driver_version,clocks.sm,clocks.mem,clocks.max.sm,power.limit,temperature.gpu"
    try:
        out = subprocess.run([smi, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    keys = ["driver", "sm_clock_mhz_at_start", "mem_clock_mhz_at_start", "max_sm_clock_mhz_smi",
            "power_limit_w", "temperature_c_at_start"]
    return {f"smi_{k}": v.strip() for k, v in zip(keys, out.split(","), strict=False)}


def _context_alive() -> bool:
    import cupy

    try:
        cupy.cuda.runtime.deviceSynchronize()
        cupy.zeros(1).sum().item()
        return True
    except Exception:
        return False


def _cuda_errors():
    import cupy

    return (cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.driver.CUDADriverError)


def _rung_row(kernel: BoundKernel) -> VariantResult:
    s = kernel.spec
    return VariantResult(id=s.id, name=kernel.variant_name, title=s.title, dtype=kernel.run_dtype,
                         kind="ladder" if s.is_ladder_rung else "user", params=dict(kernel.params),
                         params_source=kernel.params_source)


def model_figures(dtype: str, shape: GemmShape, beta: float, gpu: GpuSpec, kernel: BoundKernel | None,
                  peak_kind: str) -> ModelFigures:
    dt = get_dtype(dtype)
    # only a spec with a traffic: block has a model; without one, no figure (never the naive tiles' default)
    has_model = kernel is not None and bool(kernel.spec.traffic)
    tiled = tiled_traffic(shape, dt, kernel.tiles(shape, gpu.sm_count), beta).arithmetic_intensity if has_model else None
    return ModelFigures(flops=gemm_flops(shape), min_arithmetic_intensity=min_arithmetic_intensity(shape, dt, beta),
                        model_arithmetic_intensity=tiled, peak_kind=peak_kind,
                        peak_flops=gpu.peak_tflops.get(peak_kind, 0) * 1e12 or None)


class Runner:
    def __init__(self, gpu_spec: GpuSpec, options: RunOptions):
        self.gpu_spec, self.opt = gpu_spec, options
        self.seed = options.seed if options.seed is not None else secrets.randbits(31)
        self._problems: dict[tuple[str, str], Problem] = {}
        self._flush = None
        self._clocks: tuple | None = None  # (NvmlReader | None, why not)
        self._device: dict | None = None
        self.ahead = None  # compile_pool.CompileAhead: nvcc builds started before measuring (None: build in line)

    def problem(self, storage: str, c_dtype: str = "fp32") -> Problem:
        """The inputs of `storage` dtype (the same for every C dtype), and C0 and the reference for C's dtype; fp8
        inputs with the run's scales (RunOptions.scales)."""
        key = (storage, c_dtype)
        if key not in self._problems:
            self._problems[key] = make_problem(self.opt.shape, storage, self.opt.alpha, self.opt.beta,
                                               self.seed + {"fp16": 1, "bf16": 2, "e4m3": 3, "e5m2": 4}.get(storage, 0),
                                               c_dtype, scales=self.opt.scales)
        return self._problems[key]

    def flush(self):
        if self._flush is None and self.opt.timing.flush_l2:
            import cupy

            l2 = cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]
            self._flush = L2Flusher(l2)
        return self._flush

    def clock_reader(self):
        """NVML on this run's device, opened once; None (see clock_status) when unavailable. Read only."""
        if self._clocks is None:
            import cupy

            from gemmprof.measure.nvml import open_reader

            try:
                bus = cupy.cuda.Device().pci_bus_id
            except Exception:
                bus = None
            self._clocks = open_reader(bus)
        return self._clocks[0]

    @property
    def clock_status(self) -> str:
        if self._clocks is None:
            return "not read"
        return "NVML" if self._clocks[0] else f"not recorded: {self._clocks[1]}"

    # one variant ---------------------------------------------------------------------------------------------
    def run_kernel(self, kernel: BoundKernel, compiler: str | None = None) -> VariantResult:
        return self._time(*self.prepare_kernel(kernel, compiler))

    def run_baseline(self, baseline: Baseline) -> VariantResult:
        return self._time(*self.prepare_baseline(baseline))

    def prepare_kernel(self, kernel: BoundKernel, compiler: str | None = None) -> tuple[VariantResult, Launch | None]:
        """Build and verify: the row, and the launch to time (None when the row already says why not)."""
        row = _rung_row(kernel)
        shape, dtype = self.opt.shape, kernel.run_dtype
        row.nvtx_range = nvtx.range_name(kernel.variant_name, shape)
        row.model = model_figures(dtype, shape, self.opt.beta, self.gpu_spec, kernel, get_dtype(dtype).peak_kind)
        try:
            kernel.check_shape(shape)
        except SpecError as exc:
            row.status, row.message = "rejected", str(exc)
            return row, None
        why_not = tma_launch.skip_reason(kernel, self.device["compute_capability"])
        abi = kernel.spec.abi
        refused = abi.refuses(self.opt.alpha, self.opt.beta)
        if why_not or refused:
            row.status, row.message = ("skipped", why_not) if why_not else ("rejected", refused)
            return row, None
        layout = kernel.spec.layout
        try:
            lds = abi.leading(shape, layout, kernel.env)
        except SpecError as exc:
            row.status, row.message = "rejected", str(exc)
            return row, None
        row.c_dtype, row.scales = kernel.run_c_dtype, kernel.run_scales
        try:
            check_scale_shapes(kernel, shape, self.opt.scales)  # an fp8 kernel's scale arrays as its spec reads them
        except SpecError as exc:
            row.status, row.message = "rejected", str(exc)
            return row, None
        problem, c_store = self.problem(dtype, kernel.run_c_dtype), (layout["C"], lds["ldc"])
        check = tolerance(dtype, kernel.run_c_dtype)
        if kernel.spec.launcher is not None:
            from gemmprof.measure.launcher import prepare

            try:
                launch_into, row.build = prepare(kernel, problem, device_arch(), lds)
            except GemmprofError as exc:
                row.status, row.message = "error", str(exc)
                return row, None
            return self._verify(row, problem, launch_into, check, kernel.spec.reads_c, c_store)
        grid, block, smem = kernel.launch_config(shape, sms=self.device["sm_count"])
        row.launch = LaunchConfig(grid, block, smem)
        try:
            built = kernel.for_shape(shape, self.device["sm_count"])  # only the code this launch runs (`specialize`)
            which = compiler or self.opt.compiler  # without a pool (a Runner of its own), the two-argument call
            compiled = compile_for_launch(built, which) if self.ahead is None else \
                compile_for_launch(built, which, ahead=self.ahead)
        except (CompileError, SpecError) as exc:
            row.status, row.message = "error", str(exc)
            return row, None
        res = row.resources = compiled.resources
        row.build = compiled.build
        try:
            occ = occupancy(self.gpu_spec, block[0] * block[1] * block[2], res.registers, res.static_smem, smem)
            row.occupancy = occ.to_dict()
        except GemmprofError as exc:
            row.message = f"occupancy: {exc}"
        func = compiled.function
        if smem > OPTIN_THRESHOLD:
            func.max_dynamic_shared_size_bytes = smem
        sms = self.device["sm_count"]
        bind = tma_launch.launcher(kernel, func, grid, block, smem, shape, sms)
        try:
            tiled = tma_launch.tiled_maps(kernel, shape, sms)  # checked here: a bad map is this row's error
        except GemmprofError as exc:
            row.status, row.message = "error", f"tensor maps: {exc}"
            return row, None

        try:  # its size is an expression of the spec's, evaluated only now
            workspace = workspace_buffer(kernel, shape)
        except GemmprofError as exc:
            row.status, row.message = "rejected", str(exc)
            return row, None

        def launch_into(out):  # the arguments packed once, outside the timed launches (maps encoded per output)
            return bind(tma_launch.launch_args(kernel, shape, problem, lds, tiled, workspace, out))

        row, verified = self._verify(row, problem, launch_into, check, kernel.spec.reads_c, c_store)
        split = kernel.decomposition_note(shape, sms)  # e.g. split-K's slices, in the note
        if split:
            row.message = f"{split}; {row.message}" if row.message else split
        return row, verified

    @property
    def device(self) -> dict:
        """Compute capability and multiprocessor count of device 0 (read once)."""
        if self._device is None:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(0)
            self._device = {"compute_capability": f"{props['major']}.{props['minor']}",
                            "sm_count": props["multiProcessorCount"]}
        return self._device

    def prepare_baseline(self, baseline: Baseline) -> tuple[VariantResult, Launch | None]:
        row = VariantResult(id="cuBLAS", name=baseline.name, title=baseline.title, dtype=baseline.dtype,
                            kind="baseline")
        row.nvtx_range = nvtx.range_name(baseline.name, self.opt.shape)
        row.model = model_figures(row.dtype, self.opt.shape, self.opt.beta, self.gpu_spec, None, baseline.peak_kind)
        row.c_dtype = baseline.c_dtype
        problem = self.problem(baseline.storage, baseline.c_dtype)
        return self._verify(row, problem, lambda out: make_launcher(baseline, problem, out),
                            tolerance(baseline.tolerance_key, baseline.c_dtype))

    def _verify(self, row, problem, launch_into, tolerance, reads_c_declared=False, c_store=("row", None)
                ) -> tuple[VariantResult, Launch | None]:
        """Check the output against the reference; with --launch-once, launch once more in the NVTX range.
        c_store: C's layout and leading dimension (None: packed)."""
        import cupy

        from gemmprof.measure.launcher import LaunchFailed

        try:
            poisoned = problem.fresh_output(*c_store)
            launch_into(poisoned)()
            second = None
            if problem.beta == 0:  # a second launch over a finite sentinel tells unwritten from read-C
                second = problem.sentinel_output(*c_store)
                launch_into(second)()
            cupy.cuda.Device().synchronize()
            check = row.verification = verify(poisoned, second, problem, tolerance, reads_c_declared, c_store[0])
            out = second if second is not None else poisoned
            if not check.passed:
                row.status, row.message = "FAIL", check.describe()
                return row, None
            if check.findings:
                row.message = check.describe()
            if self.opt.launch_once:
                out = problem.fresh_output(*c_store)
                nvtx.push(row.nvtx_range)
                launch_into(out)()
                nvtx.pop()
                cupy.cuda.Device().synchronize()
                return row, None
            return row, launch_into(out)
        except (*_cuda_errors(), LaunchFailed) as exc:
            _cuda_error(row, exc)
        return row, None

    def _time(self, row: VariantResult, launch: Launch | None) -> VariantResult:
        from gemmprof.measure.launcher import LaunchFailed

        if launch is None:
            return row
        reader, hooks, seen = self.clock_hooks()
        nvtx.push(row.nvtx_range)
        try:
            row.timing = time_kernel(launch, self.opt.timing, self.flush(), **hooks)
        except (*_cuda_errors(), LaunchFailed) as exc:
            _cuda_error(row, exc)
        finally:
            nvtx.pop()
        row.clocks = _clock_record(reader, hooks, seen)
        return row

    def time_together(self, prepared: list[tuple[VariantResult, Launch | None]]) -> None:
        """Time the verified variants interleaved (TimingConfig.interleave_rounds): their batches of launches
        taken round-robin, each batch inside its variant's NVTX range; one clock record spans the whole loop."""
        from gemmprof.measure.launcher import LaunchFailed

        ready = [(row, launch) for row, launch in prepared if launch is not None]
        if not ready:
            return
        flush, reader_hooks = self.flush(), self.clock_hooks()
        try:
            measured = timing.time_interleaved([timing.event_timer(la, flush, row.nvtx_range) for row, la in ready],
                                               [partial(timing.warm_up, la, self.opt.timing) for _, la in ready],
                                               self.opt.timing, **reader_hooks[1])
        except (*_cuda_errors(), LaunchFailed) as exc:
            for row, _ in ready:  # which variant failed is unknown: none of them has a trustworthy time
                row.status, row.message = "error", f"CUDA error in the interleaved timing: {exc}"
            if not _context_alive():
                raise ContextLost(f"CUDA error in the interleaved timing: {exc}") from None
            return
        clocks = _clock_record(*reader_hooks)
        for (row, _), m in zip(ready, measured, strict=True):
            row.timing, row.clocks = m, clocks

    def clock_hooks(self):
        """NVML readings just before and after a timing loop: (reader, hooks for it, where they land)."""
        reader, seen = self.clock_reader(), {}
        hooks = {}
        if reader is not None:
            hooks = {"on_start": lambda: seen.__setitem__("before", reader.read()),
                     "on_end": lambda: seen.__setitem__("after", reader.read())}
        return reader, hooks, seen


def _clock_record(reader, hooks, seen) -> ClockRecord | None:
    if seen.get("before") and seen.get("after"):
        return ClockRecord.from_samples(seen["before"], seen["after"], reader.max_sm_clock_mhz)
    return None


def _cuda_error(row: VariantResult, exc: Exception) -> None:
    from gemmprof.measure.launcher import LaunchFailed

    row.status, row.message = "error", str(exc) if isinstance(exc, LaunchFailed) else f"CUDA error: {exc}"
    if not _context_alive():
        raise ContextLost(row.message) from None


def new_result(gpu_spec: GpuSpec, options: RunOptions, runner: Runner, command: str) -> RunResult:
    device = device_info()
    if not options.launch_once:
        runner.clock_reader()
        device["clocks_source"] = runner.clock_status  # per-variant SM clock and temperature, or why not
    return RunResult(shape=options.shape, alpha=options.alpha, beta=options.beta, device=device,
                     gpu_spec=gpu_spec.key, seed=runner.seed, timing_method=options.timing.to_dict(),
                     created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                     gemmprof_version=__version__, command=command)


def baselines_for(kernels: list[BoundKernel], wanted: bool) -> list[Baseline]:
    """cuBLAS for every input dtype run, and with the same C dtype where a kernel writes fp16 or bf16 C. Each reads
    B as the kernels of its dtype store it when they agree (the Hopper rungs: column-major), row-major otherwise."""
    if not wanted:
        return []
    out = []
    for b in for_kernels({(k.run_dtype, k.run_c_dtype) for k in kernels}):
        layouts = {k.spec.layout["B"] for k in kernels if k.run_dtype == b.dtype}
        out.append(with_b_layout(b, layouts.pop()) if len(layouts) == 1 else b)
    return out
