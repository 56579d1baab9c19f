"""`gemmprof run` as a library call: compile, verify, time each selected rung and the cuBLAS baselines."""

from __future__ import annotations

import datetime as _dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from gemmprof._version import __version__
from gemmprof.catalog.baselines import Baseline, for_kernels, with_b_layout
from gemmprof.catalog.binding import BoundKernel
from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.errors import GemmprofError, SpecError
from gemmprof.measure import nvtx, timing, tma_launch
from gemmprof.measure.bench import Bench, input_set
from gemmprof.measure.build import CompileError, compile_for_launch, device_arch
from gemmprof.measure.cublas import make_launcher
from gemmprof.measure.device import device_name
from gemmprof.measure.fp8 import check_scale_shapes
from gemmprof.measure.l2 import Flusher, PersistingL2, rotation_sets
from gemmprof.measure.problem import Problem, make_problem, tolerance, verify, workspace_buffer
from gemmprof.measure.timing import TimedVariant, TimingConfig
from gemmprof.results.run import LaunchConfig, RunResult, TimingChecks, VariantResult
from gemmprof.results.shape import GemmShape

OPTIN_THRESHOLD = 48 * 1024
EXPECT_CLOCK_TOLERANCE = 0.02  # --expect-clock: the held clock within 2% of the one expected
Launch = Callable[[], None]  # one launch of a verified variant into its output, ready to time
LaunchFor = Callable[[Problem, object], Launch]  # a variant's launch on any input set, into any output


@dataclass
class Prepared:
    """A verified variant: how it launches on an input set of its dtype, and how its C is stored and checked."""

    launch_for: LaunchFor
    storage: str
    c_dtype: str
    c_store: tuple[str, int | None]
    tolerance: float
    reads_c_declared: bool = False
    perturb: bool = True  # False where the variant's arrays are copies of the problem's (a changed row is unseen)


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
    found = {f"smi_{k}": v.strip() for k, v in zip(keys, out.split(","), strict=False)}
    found.update(_owner_clocks(smi))
    return found


def _owner_clocks(smi: str) -> dict:
    """The application clocks the card's owner set, beside their defaults (gemmprof only reads them): where they
    differ, the clocks are locked, and the run says so."""
    import subprocess

    query = "clocks.applications.graphics,clocks.default_applications.graphics"
    try:
        out = subprocess.run([smi, f"--query-gpu={query}", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20, check=True).stdout.strip()
        app, default = (float(x) for x in out.split(","))
    except (OSError, subprocess.SubprocessError, ValueError):
        return {}
    found = {"smi_app_clock_mhz": app, "smi_default_app_clock_mhz": default}
    if app != default:
        found["clocks_locked"] = f"application clocks set to {app:.0f} MHz by the card's owner (default {default:.0f})"
    return found


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
                         params_source=kernel.params_source, plan=kernel.plan)


class Runner:
    def __init__(self, gpu_spec: GpuSpec, options: RunOptions):
        self.gpu_spec, self.opt = gpu_spec, options
        self.seed = options.seed if options.seed is not None else secrets.randbits(31)
        self._problems: dict[tuple, Problem] = {}
        self._sets: dict[tuple, list[Problem]] = {}
        self._flush = None
        self._clocks: tuple | None = None  # (NvmlReader | None, why not)
        self._device: dict | None = None
        self._persist: PersistingL2 | None = None
        self.ahead = None  # compile_pool.CompileAhead: nvcc builds started before measuring (None: build in line)

    def problem(self, storage: str, c_dtype: str = "fp32") -> Problem:
        """The verification's inputs of `storage` dtype (the same for every C dtype; uniform in [-1, 1) whatever
        the fill), and C0 and the reference for C's dtype; fp8 inputs with the run's scales (RunOptions.scales)."""
        key = (storage, c_dtype)
        if key not in self._problems:
            self._problems[key] = make_problem(self.opt.shape, storage, self.opt.alpha, self.opt.beta,
                                               self._seed(storage), c_dtype, scales=self.opt.scales)
        return self._problems[key]

    def _seed(self, storage: str, set_index: int = 0) -> int:
        return self.seed + {"fp16": 1, "bf16": 2, "pool": 3, "e4m3": 4, "e5m2": 5}.get(storage, 0) + 1000 * set_index

    def timed_sets(self, storage: str, c_dtype: str = "fp32") -> list[Problem]:
        """The input sets the timed calls run on: the verification's problem where the fill is its own and the L2
        policy needs one set; with `rotate`, enough sets of the fill to total twice the L2 (two at least)."""
        key = (storage, c_dtype)
        if key not in self._sets:
            t = self.opt.timing
            first = self.problem(storage, c_dtype)
            count = rotation_sets(self.l2_bytes, first.operand_bytes) if t.l2_policy == "rotate" else 1
            reuse = t.fill == "uniform"
            self._sets[key] = [first if reuse and i == 0 else
                               make_problem(self.opt.shape, storage, self.opt.alpha, self.opt.beta,
                                            self._seed(storage, i + 1), c_dtype, t.fill, self.opt.scales)
                               for i in range(count)]
        return self._sets[key]

    @property
    def l2_bytes(self) -> int:
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]

    def flush(self):
        if self._flush is None and self.opt.timing.l2_policy == "flush":
            self._flush = Flusher(self.l2_bytes)
        return self._flush

    def persisting_l2(self) -> PersistingL2:
        if self._persist is None:
            import cupy

            self._persist = PersistingL2(stream_ptr=lambda: cupy.cuda.get_current_stream().ptr)
        return self._persist

    def close(self) -> None:
        """Give the card back its persisting-L2 carve-out, as found."""
        if self._persist is not None:
            self._persist.restore()

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

    def prepare_kernel(self, kernel: BoundKernel, compiler: str | None = None
                       ) -> tuple[VariantResult, Prepared | None]:
        """Build and verify: the row, and how to launch it for timing (None when the row already says why not). A
        planning entry runs the rung it chooses at this shape and SM count (catalog/plan.py), its row saying which
        and why."""
        from gemmprof.catalog.plan import resolve

        try:
            kernel = resolve(kernel, self.opt.shape, self.device["sm_count"])
        except SpecError as exc:  # the plan's own shape constraints, or a plan that chose a rung rejecting the shape
            row = _rung_row(kernel)
            row.status, row.message = "rejected", str(exc)
            return row, None
        row = _rung_row(kernel)
        shape, dtype = self.opt.shape, kernel.run_dtype
        row.nvtx_range = nvtx.range_name(kernel.variant_name, shape)
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
        c_store = (layout["C"], lds["ldc"])
        check = tolerance(dtype, kernel.run_c_dtype, shape.K)
        reads_c = kernel.spec.reads_c
        if kernel.spec.launcher is not None:
            from gemmprof.measure.launcher import prepare

            try:
                launch_for, row.build = prepare(kernel, shape, device_arch(), lds)
            except GemmprofError as exc:
                row.status, row.message = "error", str(exc)
                return row, None
            return self._verify(row, Prepared(launch_for, dtype, kernel.run_c_dtype, c_store, check, reads_c))
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
        row.resources = compiled.resources
        row.build = compiled.build
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

        def launch_for(problem, out):  # the arguments packed once, outside the timed launches (maps per set)
            return bind(tma_launch.launch_args(kernel, shape, problem, lds, tiled, workspace, out))

        row, verified = self._verify(row, Prepared(launch_for, dtype, kernel.run_c_dtype, c_store, check, reads_c))
        split = kernel.decomposition_note(shape, sms)  # e.g. split-K's slices, in the note
        if kernel.plan:  # "plan: h12 (TN=256, CM=2, ...) by rule 7: why"
            split = kernel.plan.note(split)
        rounds = tma_launch.rounds_note(kernel, func, grid, block, smem, shape, sms)  # more clusters than fit at once
        split = "; ".join(n for n in (split, rounds) if n)
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

    def prepare_baseline(self, baseline: Baseline) -> tuple[VariantResult, Prepared | None]:
        row = VariantResult(id="cuBLAS", name=baseline.name, title=baseline.title, dtype=baseline.dtype,
                            kind="baseline")
        row.nvtx_range = nvtx.range_name(baseline.name, self.opt.shape)
        row.c_dtype = baseline.c_dtype
        return self._verify(row, Prepared(lambda problem, out: make_launcher(baseline, problem, out),
                                          baseline.storage, baseline.c_dtype, ("row", None),
                                          tolerance(baseline.tolerance_key, baseline.c_dtype, self.opt.shape.K)))

    def _verify(self, row: VariantResult, prepared: Prepared) -> tuple[VariantResult, Prepared | None]:
        """Check the output against the reference, from two launches (over NaN-poisoned C, then over a finite
        sentinel); with --launch-once, launch once more in the NVTX range. Then the variant is ready to time."""
        import cupy

        from gemmprof.measure.launcher import LaunchFailed

        problem, c_store = self.problem(prepared.storage, prepared.c_dtype), prepared.c_store
        try:
            poisoned = problem.fresh_output(*c_store)
            prepared.launch_for(problem, poisoned)()
            second = None
            if problem.beta == 0:  # a second launch over a finite sentinel tells unwritten from read-C
                second = problem.sentinel_output(*c_store)
                prepared.launch_for(problem, second)()
            cupy.cuda.Device().synchronize()
            check = row.verification = verify(poisoned, second, problem, prepared.tolerance,
                                              prepared.reads_c_declared, c_store[0])
            if not check.passed:
                row.status, row.message = "FAIL", check.describe()
                return row, None
            if check.findings:
                row.message = check.describe()
            if self.opt.launch_once:
                out = problem.fresh_output(*c_store)
                nvtx.push(row.nvtx_range)
                prepared.launch_for(problem, out)()
                nvtx.pop()
                cupy.cuda.Device().synchronize()
                return row, None
            return row, prepared
        except (*_cuda_errors(), LaunchFailed) as exc:
            _cuda_error(row, exc)
        return row, None

    def bench(self, prepared: Prepared, reads_c: bool = False) -> Bench:
        """The verified variant on its timed input sets, each with its own output (poisoned between calls).
        `reads_c`: it read C with beta == 0 when verified (then C is poisoned with a finite value, not NaN)."""
        layout = prepared.c_store[0]
        sets = []
        for i, problem in enumerate(self.timed_sets(prepared.storage, prepared.c_dtype)):
            out = problem.sentinel_output(*prepared.c_store)
            sets.append(input_set(problem, out, prepared.launch_for(problem, out), layout, self._seed("pool", i),
                                  reads_c))
        return Bench(sets, self.flush(), prepared.c_store, prepared.tolerance, prepared.reads_c_declared,
                     prepared.perturb)

    def _time(self, row: VariantResult, prepared: Prepared | None) -> VariantResult:
        from gemmprof.measure.launcher import LaunchFailed

        if prepared is None:
            return row
        ops, timers_before = timing.captured()
        reader = self.clock_reader()
        try:
            bench = self.bench(prepared, bool(row.verification and row.verification.reads_c))
            with self._sampler(reader) as sampler:
                timed = timing.time_variant(bench, self.opt.timing, ops, reader, sampler, self.persisting_l2(),
                                            row.nvtx_range, timers_before)
            self._record(row, bench, timed)
        except (*_cuda_errors(), LaunchFailed) as exc:
            _cuda_error(row, exc)
        return row

    def time_together(self, prepared: list[tuple[VariantResult, Prepared | None]],
                      config: TimingConfig | None = None) -> None:
        """Time the verified variants interleaved (TimingConfig.interleave_rounds): their batches of launches
        taken round-robin, each batch inside its variant's NVTX range. `config`: other than the run's (cuBLASLt's
        candidates, timed round-robin to choose the fastest)."""
        from gemmprof.measure.launcher import LaunchFailed

        config = config or self.opt.timing
        ready = [(row, p) for row, p in prepared if p is not None]
        if not ready:
            return
        ops, timers_before = timing.captured()
        reader = self.clock_reader()
        try:
            benches = [self.bench(p, bool(row.verification and row.verification.reads_c)) for row, p in ready]
            with self._sampler(reader) as sampler:
                measured = timing.time_together(benches, config, ops, reader, sampler,
                                                self.persisting_l2(), [row.nvtx_range for row, _ in ready],
                                                timers_before)
        except (*_cuda_errors(), LaunchFailed) as exc:
            for row, _ in ready:  # which variant failed is unknown: none of them has a trustworthy time
                row.status, row.message = "error", f"CUDA error in the interleaved timing: {exc}"
            if not _context_alive():
                raise ContextLost(f"CUDA error in the interleaved timing: {exc}") from None
            return
        for (row, _), bench, timed in zip(ready, benches, measured, strict=True):
            self._record(row, bench, timed)

    def _sampler(self, reader):
        """NVML sampled through the timing where the regime needs it (sustained's settling, the energy window);
        a burst run reads the clock before and after, as a sample takes milliseconds."""
        from gemmprof.measure.nvml import Sampler

        t = self.opt.timing
        return Sampler(reader) if reader is not None and (t.regime == "sustained" or t.with_energy) else _NoSampler()

    def _record(self, row: VariantResult, bench: Bench, timed: TimedVariant) -> None:
        """The timing's records on the row; a wrong checked call, a finding of the timer's own checks or a clock
        other than --expect-clock's fails it (its samples stay in the file, its figures are not reported)."""
        row.timing, row.clocks, row.warm_up, row.energy = timed.measurement, timed.clocks, timed.warm_up, \
            timed.energy
        checked = bench.verify_checked()
        wrong = [f"timed call {c.index}: {c.verification.describe()}" for c in checked if not c.passed]
        row.checks = TimingChecks(sum(b.calls for b in timed.batches), tuple(c.index for c in checked), tuple(wrong),
                                  tuple(timed.findings), max((b.tail_ms for b in timed.batches), default=0.0),
                                  self.persisting_l2().status, timed.checks_s(bench.host_ns))
        if not row.checks.passed:
            row.status, row.message = "FAIL", row.checks.describe()
            return
        for note in timed.notes:  # a figure that depends on how it was timed says so (timing.turn_drift_note)
            row.message = f"{row.message}; {note}" if row.message else note
        expected = self.opt.timing.expect_clock_mhz
        if expected and row.clocks is not None:
            held = row.clocks.clock_mhz
            if abs(held / expected - 1) > EXPECT_CLOCK_TOLERANCE:
                row.status = "rejected"
                row.message = (f"held {held:.0f} MHz ({row.clocks.held_min_mhz or held:.0f}-"
                               f"{row.clocks.held_max_mhz or held:.0f}) where --expect-clock said {expected:.0f} "
                               f"(+-{EXPECT_CLOCK_TOLERANCE:.0%}): not reported")
        elif expected:
            row.status, row.message = "rejected", "--expect-clock: the SM clock could not be read (NVML)"


class _NoSampler:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
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
