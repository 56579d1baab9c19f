"""`gemmprof ceiling` as a library call: this GPU's achievable (burst) and sustainable (sustained) matmul throughput
per input dtype, and its DRAM bandwidth, measured the way every variant is (measure/timing.py).

Matmul: the cuBLAS baseline of each dtype (SGEMM; TF32, fp16 and bf16 tensor cores with fp32 accumulate, fp32 C)
over a small shape scan, each call verified and timed by the Runner in the regime asked for; the best figure of
the scan is the ceiling, every shape's kept beside it. Bandwidth: a device-to-device copy (cupy.copyto, a
cudaMemcpyAsync) of a buffer many times the L2, counting the bytes read plus the bytes written, timed by the same
loop (a fresh word of the source before each call, checked calls compared whole with their source). The burst
regime runs first, on the card as found; the sustained regime after it, each variant warmed until NVML's SM clock
and power settle. Each point keeps the SM clock it held and the power it drew.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gemmprof._version import __version__
from gemmprof.catalog.baselines import BASELINES, Baseline
from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.measure.settle import SettleRule
from gemmprof.measure.timing import TimingConfig
from gemmprof.model.annotate import FLOOR_MARGIN
from gemmprof.results.ceilings import CeilingScan, MeasuredCeiling, ScanPoint, best_of
from gemmprof.results.shape import GemmShape
from gemmprof.results.sweep import parse_shapes

DTYPES = ("fp32", "tf32", "fp16", "bf16")
BASELINE_OF = {"fp32": "cublas_sgemm", "tf32": "cublas_tf32", "fp16": "cublas_hgemm", "bf16": "cublas_bf16"}
DEFAULT_SHAPES = parse_shapes("4096 8192 8192x8192x4096")
COPY_MIB = 1024  # each of the copy's two buffers: 17 times the H200's L2
COPY_SOURCE = "device-to-device copy"
Progress = Callable[[str], None]


@dataclass(frozen=True)
class CeilingRequest:
    dtypes: tuple[str, ...] = DTYPES
    regimes: tuple[str, ...] = ("burst", "sustained")
    shapes: tuple[GemmShape, ...] = DEFAULT_SHAPES
    bandwidth: bool = True
    copy_mib: int = COPY_MIB
    budget_s: float = 1.0  # timed seconds per point (sustained: all of it; burst: until the median is known)
    fill: str = "uniform"
    l2: str = "flush"
    cool_down_s: float = 0.0
    seed: int | None = None
    settle: SettleRule = field(default_factory=SettleRule)  # when a sustained warm-up may stop

    def timing(self, regime: str) -> TimingConfig:
        """The run's own timing in `regime`; the power is the sampler's (no separate energy window)."""
        return TimingConfig(regime=regime, budget_s=self.budget_s, fill=self.fill, l2=self.l2,
                            cool_down_s=self.cool_down_s, energy=False, settle=self.settle)

    @property
    def steps(self) -> int:
        return len(self.regimes) * (len(self.dtypes) * len(self.shapes) + int(self.bandwidth))


@dataclass(frozen=True)
class _Taken:
    """A point with the records behind it, for the ceiling made of the best one."""

    point: ScanPoint
    clocks: object | None = None  # ClockRecord


def measure(gpu_spec: GpuSpec, request: CeilingRequest, device: str, driver: str = "",
            progress: Progress | None = None, on_regime: Callable[[list[CeilingScan]], None] | None = None
            ) -> list[CeilingScan]:
    """Every scan of the request, regime by regime (burst first: the card as found); `on_regime` gets each regime's
    scans as soon as they are done (the command stores them, so a later failure loses nothing)."""
    say = progress or (lambda text: None)
    counter = iter(range(1, request.steps + 1))
    scans: list[CeilingScan] = []
    for regime in sorted(request.regimes, key=("burst", "sustained").index):
        config = request.timing(regime)
        taken: dict[tuple[str, str], list[_Taken]] = {("compute", d): [] for d in request.dtypes}
        try:
            for shape in request.shapes:
                for dtype, t in _gemms(gpu_spec, request, config, shape, counter, say):
                    taken["compute", dtype].append(t)
            if request.bandwidth:
                say(f"[{next(counter)}/{request.steps}] {regime} dram: {COPY_SOURCE} of {request.copy_mib} MiB")
                t = copy_point(gpu_spec, request, config)
                say(f"    {_said(t.point, 'GB/s')}")
                taken["memory", "dram"] = [t]
        except BaseException:  # a lost CUDA context or Ctrl-C: what this regime measured so far is kept
            if on_regime:
                with contextlib.suppress(Exception):  # the first error is the one to report
                    on_regime(_scans(taken, regime, device, driver, request))
            raise
        done = _scans(taken, regime, device, driver, request)
        if on_regime:
            on_regime(done)
        scans += done
    return scans


def _gemms(gpu_spec, request: CeilingRequest, config: TimingConfig, shape: GemmShape, counter, say):
    """(dtype, taken) for each dtype at `shape`, from one Runner (its problems shared by the dtypes' baselines)."""
    from gemmprof.measure import runner as runner_mod

    runner = runner_mod.Runner(gpu_spec, runner_mod.RunOptions(shape=shape, seed=request.seed, timing=config))
    try:
        for dtype in request.dtypes:
            base = BASELINES[BASELINE_OF[dtype]]
            say(f"[{next(counter)}/{request.steps}] {config.regime} {dtype} {shape.label}: {base.name}")
            t = gemm_point(runner, base, shape, gpu_spec, config)
            say(f"    {_said(t.point, 'TFLOP/s')}")
            yield dtype, t
    finally:
        runner.close()


def gemm_point(runner, base: Baseline, shape: GemmShape, gpu_spec: GpuSpec, config: TimingConfig) -> _Taken:
    """One baseline verified and timed by the runner, with its model figures and the physical floor (annotate)."""
    from gemmprof.model.annotate import annotate

    row = annotate(runner.run_baseline(base), shape, 0.0, gpu_spec, None, None, config.l2_policy)
    clocks = row.clocks
    if not row.passed or row.achieved_flops is None:
        status = row.status if row.status != "ok" else "error"
        return _Taken(ScanPoint(shape.label, None, status=status, message=row.message or "not timed"), clocks)
    return _Taken(ScanPoint(shape.label, row.achieved_flops / 1e12, row.timing.median_ms, row.timing.spread,
                            clocks.clock_mhz if clocks else None, clocks.power_w if clocks else None,
                            row.warm_up.describe() if row.warm_up else ""), clocks)


def _scans(taken: dict, regime: str, device: str, driver: str, request: CeilingRequest) -> list[CeilingScan]:
    """The regime's scans that have at least one point (all of them, unless it stopped early)."""
    return [_scan(kind, key, regime, COPY_SOURCE if kind == "memory" else BASELINE_OF[key], got, device, driver,
                  request) for (kind, key), got in taken.items() if got]


def _scan(kind: str, key: str, regime: str, source: str, taken: list[_Taken], device: str, driver: str,
          request: CeilingRequest) -> CeilingScan:
    points = tuple(t.point for t in taken)
    best = best_of(list(points))
    ceiling = None
    if best is not None:
        clocks = next(t.clocks for t in taken if t.point is best)
        ceiling = MeasuredCeiling(
            kind, key, regime, best.value, best.what, source, device,
            _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            best.held_mhz, clocks.held_min_mhz if clocks else None, clocks.held_max_mhz if clocks else None,
            best.power_w, tuple(clocks.throttle_reasons) if clocks else (), best.warm_up, request.fill, request.l2,
            __version__, driver, points)
    return CeilingScan(kind, key, regime, source, points, ceiling)


def _said(p: ScanPoint, unit: str) -> str:
    if not p.passed:
        return f"{p.status}: {p.message}"
    parts = [f"{p.value:.1f} {unit}"]
    if p.held_mhz:
        parts.append(f"at {p.held_mhz:.0f} MHz")
    if p.power_w:
        parts.append(f"{p.power_w:.0f} W")
    if p.warm_up:
        parts.append(f"({p.warm_up})")
    return " ".join(parts)


# -- the copy ----------------------------------------------------------------------------------------------------
class _CopySet:
    """The bench's one input set, as the energy window reads it (its launch; its output and what resets it)."""

    def __init__(self, launch, out):
        self.launch, self.out, self.reset_value = launch, out, 0


class CopyBench:
    """A device-to-device copy with the Timer's interface (measure/timing.py): before call i (not timed) one word of
    the source, chosen at random, is changed, so no call can be the last one's; on a call chosen for checking the
    destination is compared with the source on the device, read back after the timing. `xp`: CuPy (NumPy in
    tests)."""

    def __init__(self, src, dst, xp, flush=None, rng: random.Random | None = None):
        self.src, self.dst, self.xp, self.flush = src, dst, xp, flush
        self.rng = rng or random.Random(random.SystemRandom().getrandbits(64))
        self.sets = [_CopySet(self.launch, dst)]
        self._pending: list[tuple[int, object]] = []

    @property
    def nbytes(self) -> int:
        """Bytes one call moves: the source read and the destination written."""
        return int(self.src.nbytes + self.dst.nbytes)

    def prepare(self, i: int) -> None:
        j = self.rng.randrange(self.src.size)
        self.src[j:j + 1] ^= (i % 0xFFFF) + 1  # a nonzero XOR: the word differs from every earlier call's
        if self.flush is not None:
            self.flush()

    def launch(self) -> None:
        self.xp.copyto(self.dst, self.src)

    def finish(self, i: int, checked: bool) -> None:
        if checked:
            self._pending.append((i, (self.dst == self.src).all()))  # on the device, read after the timing

    def verify_checked(self) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """(the checked calls, one description per wrong one)."""
        checked = tuple(i for i, _ in self._pending)
        wrong = tuple(f"timed call {i}: the destination differs from the source" for i, equal in self._pending
                      if not bool(equal))
        self._pending.clear()
        return checked, wrong


def copy_point(gpu_spec: GpuSpec, request: CeilingRequest, config: TimingConfig) -> _Taken:
    """The copy timed in the regime of `config` by the timing core, with NVML sampled throughout; bytes read plus
    written over the median time. A figure above the datasheet's DRAM bandwidth (+5%) is impossible: it fails."""
    from gemmprof.measure import runner as runner_mod

    what = f"{request.copy_mib} MiB"
    runner = runner_mod.Runner(gpu_spec, runner_mod.RunOptions(shape=request.shapes[0], seed=request.seed,
                                                               timing=config))
    try:
        timed, checked, wrong = _time_copy(runner, request.copy_mib * 2 ** 20, config)
    except Exception as exc:  # out of memory, a CUDA error: this point fails, the others stand
        return _Taken(ScanPoint(what, None, status="error", message=f"{type(exc).__name__}: {exc}"))
    finally:
        runner.close()
    m, clocks = timed.measurement, timed.clocks
    gbs = 2 * request.copy_mib * 2 ** 20 / (m.median_ms * 1e-3) / 1e9
    point = ScanPoint(what, gbs, m.median_ms, m.spread, clocks.clock_mhz if clocks else None,
                      clocks.power_w if clocks else None, timed.warm_up.describe() if timed.warm_up else "")
    problems = list(timed.findings) + list(wrong)
    if config.checks and not checked:
        problems.append("no timed call was checked")
    limit = gpu_spec.dram_bandwidth_gbs * FLOOR_MARGIN
    if gbs > limit:
        problems.append(f"impossible: {gbs:.0f} GB/s is above {gpu_spec.name}'s DRAM bandwidth "
                        f"{gpu_spec.dram_bandwidth_gbs:.0f} GB/s (+5%)")
    if problems:
        point = replace(point, value=None, status="FAIL", message="; ".join(problems))
    return _Taken(point, clocks)


def _time_copy(runner, nbytes: int, config: TimingConfig):
    """(TimedVariant, checked calls, wrong ones) of a copy between two buffers of `nbytes` each."""
    import cupy

    from gemmprof.measure import timing
    from gemmprof.measure.nvml import Sampler

    n = nbytes // 4
    src = cupy.arange(n, dtype=cupy.uint32) * cupy.uint32(2654435761)  # distinct words, no two alike nearby
    dst = cupy.zeros_like(src)
    bench = CopyBench(src, dst, cupy, runner.flush())
    ops, timers_before = timing.captured()
    reader = runner.clock_reader()
    with Sampler(reader) if reader is not None else contextlib.nullcontext() as sampler:
        timed = timing.time_variant(bench, config, ops, reader, sampler, runner.persisting_l2(), None, timers_before)
    checked, wrong = bench.verify_checked()
    return timed, checked, wrong
