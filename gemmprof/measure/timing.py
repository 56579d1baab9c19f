"""Timing: CUDA events around each call, until the median is known to a stated precision or the time budget is
spent; the regime the card is timed in (burst or sustained), the L2 policy, and the checks that make the figure
one no kernel or function can game.

A variant's timing (`time_variant`): optional cool-down; the persisting-L2 carve-out reset; warm-up (burst: a few
calls on the card as found; sustained: calls back to back until NVML's SM clock and power settle, measure/settle.py);
then batches of calls (`Timer`), each call between two events with the work that keeps calls honest outside them
(measure/bench.py), NVML sampled throughout (the clock held, power, clock-event reasons); then, where asked, an
energy window of calls back to back between two reads of NVML's energy counter. Each batch ends with a closing
event and a device-wide synchronization read on the host clock: work still running after the closing event (on
another stream) or before the first call (left from an earlier one) is named. The timing functions are taken from
CuPy and `time` once, before any user code runs, and checked for replacement after each variant.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gemmprof.measure import nvtx
from gemmprof.measure.settle import SettleRule, judge
from gemmprof.results.clocks import ClockRecord, EnergyRecord, WarmUpRecord
from gemmprof.results.run import Measurement
from gemmprof.results.stages import beyond_turn_drift

_perf_ns = time.perf_counter_ns  # taken when gemmprof's timing is imported, before any user code
_sleep = time.sleep

REGIMES = {"burst": "a few warm-up calls, the card as found (a cold card's boost clock)",
           "sustained": "calls back to back until the SM clock and power settle (NVML), then timed"}
TAIL_MS = 0.2  # the device busy this long after a batch's closing event: work outside the events (idle: ~0.03 ms)
SUSTAINED_MAX_REPS = 100_000  # sustained: timed for the whole budget, whatever max_reps says
SECOND_LOOK_BATCHES = 3  # more batches for a variant with one long tail (second_look)
CHECKS = 3  # timed calls verified per variant, chosen at random


@dataclass(frozen=True)
class TimingConfig:
    warmup: int = 3
    min_reps: int = 10
    max_reps: int = 200
    budget_s: float = 1.0  # kernel time to spend per variant, at most, about
    flush_l2: bool = True  # the L2 policy when `l2` is not given: flush (True) or warm
    # > 0: stop early, after at least min_reps, once the 95% confidence interval of the median lies within
    # +-precision of it (Measurement.median_ci); 0: spend the whole budget (up to max_reps)
    precision: float = 0.005
    # > 0: the variants of a run are timed together, each one's repetitions in this many batches taken in turn
    # (in turns, each round ordered by round_order), so a clock that drifts during the run reaches every variant alike;
    # 0: one after another
    interleave_rounds: int = 0
    regime: str = "burst"  # burst | sustained (REGIMES)
    l2: str | None = None  # flush | rotate | warm (measure/l2.POLICIES); None: by flush_l2
    fill: str = "uniform"  # the values of the timed calls' inputs (measure/problem.FILLS)
    cool_down_s: float = 0.0  # idle seconds before each variant's warm-up
    expect_clock_mhz: float | None = None  # figures held at another clock (+-2%) are refused
    checks: int = CHECKS  # timed calls verified per variant (0: none)
    energy: bool | None = None  # an energy window after the timing; None: in the sustained regime only
    energy_s: float = 1.5  # its length, about (the H200's counter steps every 100 ms)
    settle: SettleRule = field(default_factory=SettleRule)

    @property
    def l2_policy(self) -> str:
        return self.l2 or ("flush" if self.flush_l2 else "warm")

    @property
    def with_energy(self) -> bool:
        return self.regime == "sustained" if self.energy is None else self.energy

    def timed(self) -> TimingConfig:
        """The stopping rule as the regime runs it: sustained times for the whole budget, however many calls
        that takes (an early stop would catch one phase of a clock swinging under the power cap)."""
        if self.regime != "sustained" or self.budget_s <= 0:
            return self
        from dataclasses import replace

        return replace(self, precision=0.0, max_reps=max(self.max_reps, SUSTAINED_MAX_REPS))

    def to_dict(self):
        from gemmprof.measure.l2 import POLICIES
        from gemmprof.measure.problem import FILLS

        d = {"regime": self.regime, "regime_means": REGIMES[self.regime], "l2": self.l2_policy,
             "l2_means": POLICIES[self.l2_policy], "fill": self.fill, "fill_means": FILLS[self.fill],
             "method": "CUDA events around each call; between calls (not timed) a fresh row of A, C poisoned "
                       "again, and the L2 policy; a device-wide synchronization closes each batch",
             "checks": self.checks, "cool_down_s": self.cool_down_s, "expect_clock_mhz": self.expect_clock_mhz,
             "energy": self.with_energy, "warmup": self.warmup, "min_reps": self.min_reps,
             "max_reps": self.max_reps,
             "slow_kernels": "one warm-up launch when it takes 10% of the budget; at least 5 repetitions when "
                             "min_reps would take over twice the budget",
             "budget_s": self.budget_s, "statistic": "median; spread = IQR / median",
             "precision": self.precision,
             "stopping": ("the whole budget (sustained: the figure spans the clock's swings)"
                          if self.timed() is not self else
                          f"batches doubling from min_reps until the 95% confidence interval of the median is "
                          f"within +-{self.precision:.2%} of it, or the budget or max_reps is reached"
                          if self.precision > 0 and not self.interleave_rounds else "the budget or max_reps")}
        if self.regime == "sustained":
            d["settle"] = self.settle.to_dict()
        if self.interleave_rounds:
            d["method"] += (f"; variants interleaved: each one's repetitions in {self.interleave_rounds} batches "
                            "taken in turns, each round in the order of a row of a balanced Latin square (each "
                            "variant follows every other one equally often)")
            d["interleave_rounds"] = self.interleave_rounds
        return d


class DeviceOps:
    """CUDA events and a device-wide synchronization, taken from CuPy once: code loaded later that replaces
    CuPy's names does not reach gemmprof's timer (and `watched_timers` notices the replacement)."""

    def __init__(self):
        import cupy

        self.event = cupy.cuda.Event
        self.elapsed = cupy.cuda.get_elapsed_time
        self.device_sync = cupy.cuda.runtime.deviceSynchronize


_CAPTURED: tuple | None = None  # (the cupy module, its DeviceOps, watched_timers() then)


def capture() -> None:
    """Take CuPy's timing functions and note every watched timer as they are now: call this before any user code
    is imported (a Python GEMM's module could replace them at import). Nothing happens without CuPy."""
    import sys

    global _CAPTURED
    try:
        import cupy
    except ImportError:
        return
    if _CAPTURED is None or _CAPTURED[0] is not sys.modules.get("cupy", cupy):
        _CAPTURED = (cupy, DeviceOps(), watched_timers())


def captured() -> tuple[DeviceOps, dict[str, object]]:
    """(the DeviceOps taken by `capture`, the timers noted then)."""
    capture()
    return _CAPTURED[1], _CAPTURED[2]


def watched_timers() -> dict[str, object]:
    """The timing functions a Python GEMM could replace to fool a benchmark, as they are now: CuPy's (which
    gemmprof uses), the host clocks, and torch's and Triton's where loaded."""
    import sys

    found = {"time.perf_counter": time.perf_counter, "time.perf_counter_ns": time.perf_counter_ns,
             "time.monotonic": time.monotonic, "time.time": time.time}
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        cuda = getattr(cupy, "cuda", None)
        for name in ("Event", "get_elapsed_time", "Stream"):
            found[f"cupy.cuda.{name}"] = getattr(cuda, name, None)
        found["cupy.cuda.runtime.deviceSynchronize"] = getattr(getattr(cuda, "runtime", None), "deviceSynchronize",
                                                               None)
    torch = sys.modules.get("torch")
    tcuda = getattr(torch, "cuda", None) if torch is not None else None
    if tcuda is not None:
        found["torch.cuda.Event"] = getattr(tcuda, "Event", None)
        found["torch.cuda.Event.elapsed_time"] = getattr(getattr(tcuda, "Event", None), "elapsed_time", None)
        found["torch.cuda.synchronize"] = getattr(tcuda, "synchronize", None)
    testing = sys.modules.get("triton.testing")
    if testing is not None:
        found["triton.testing.do_bench"] = getattr(testing, "do_bench", None)
    return found


def replaced_timers(before: dict[str, object]) -> list[str]:
    """Names whose object changed since `before` (a name first seen now is not a change)."""
    now = watched_timers()
    return sorted(k for k, v in before.items() if k in now and now[k] is not v)


@dataclass(frozen=True)
class BatchRecord:
    """One batch of timed calls as the events and the host clock saw it (milliseconds)."""

    calls: int
    events_ms: float  # the calls' events, summed
    span_ms: float  # the first call's start event to the batch's closing event
    host_ms: float  # host clock: the device idle before the batch to the closing event seen complete
    enqueue_ms: float  # host clock: the start to the last call enqueued
    tail_ms: float  # host clock: the closing event seen complete to the device idle (every stream)
    t0_s: float = 0.0  # the batch's start and end on the NVML sampler's clock (its samples during the batch)
    t1_s: float = 0.0


def tail_limit(median_ms: float) -> float:
    """The longest the device may stay busy after a batch's closing event before it counts as work outside the
    events: TAIL_MS, or 5% of a call."""
    return max(TAIL_MS, 0.05 * median_ms)


def long_tails(batches: list[BatchRecord], median_ms: float) -> int:
    """How many batches left the device busy past `tail_limit` after their closing event."""
    limit = tail_limit(median_ms)
    return sum(b.tail_ms > limit for b in batches)


def second_look(timer: Timer, batches: list[BatchRecord], median_ms: float) -> None:
    """Where exactly one batch had a long tail, three more batches of three calls (not kept as samples): the host
    that reads the tail can be held up once (nvcc builds of other variants share its cores; seen on the H200 at
    0.33 ms on an honest rung), and a work-outside-the-events verdict takes two long tails. Work left running now
    and then (a thread that launches later: 2 of 8 batches on the H200) gets three more chances to show."""
    if long_tails(batches, median_ms) == 1:
        for _ in range(SECOND_LOOK_BATCHES):
            timer(3, check=False)


def batch_findings(batches: list[BatchRecord], median_ms: float) -> list[str]:
    """What the host clock says of the events: work left running after the closing event of two batches or more
    (another stream, or work queued behind the timed calls; one long tail alone is the host held up, and
    `second_look` gives such a variant more batches); events adding up to more than the host clock saw. (Work
    left from before a batch cannot delay it: each batch starts after a device-wide synchronization. The host may
    notice a batch's end late, NVML's readings holding the driver a few milliseconds: only the tail, read with the
    sampler held off, is compared.) Pure: tests feed it stand-in batches."""
    found = []
    long = long_tails(batches, median_ms)
    if long >= 2:
        found.append(f"work outlived its timing events: the device stayed busy up to "
                     f"{max(b.tail_ms for b in batches):.3f} ms after the "
                     f"last call of {long} of {len(batches)} batches had ended (work on another stream, or left "
                     f"queued): its time is not all between its events")
    if any(b.events_ms > 1.02 * b.host_ms + 0.05 for b in batches):
        found.append("the timing events add up to more than the host clock saw: the timer was tampered with")
    return found


class Timer:
    """`timer(n)`: n calls of `bench`, each between two CUDA events, with the bench's work around each call
    outside them; a closing event and a device-wide synchronization end the batch. Returns milliseconds per
    call; the batches' records and the calls chosen for checking are kept. `check_rate`: the chance that a call
    is checked (the bench copies its C aside)."""

    def __init__(self, bench, ops: DeviceOps, check_rate: float = 0.0, rng: random.Random | None = None,
                 clock: Callable[[], float] | None = None, nvtx_range: str | None = None, quiet=None):
        self.bench, self.ops, self.check_rate = bench, ops, check_rate
        self.quiet = quiet or contextlib.nullcontext()  # the sampler's lock: no NVML reading during the tail
        self.rng = rng or random.Random(random.SystemRandom().getrandbits(64))
        self.clock = clock or (lambda: 0.0)
        self.nvtx_range = nvtx_range
        self.calls = 0
        self.checked = 0
        self.batches: list[BatchRecord] = []
        self.check_ns = 0  # host time of the checks' own batches and syncs (TimedVariant.checks_ns)

    def __call__(self, n: int, check: bool = True) -> list[float]:
        if self.nvtx_range:
            nvtx.push(self.nvtx_range)
            try:
                return self._batch(n, check)
            finally:
                nvtx.pop()
        return self._batch(n, check)

    def _batch(self, n: int, check: bool) -> list[float]:
        ops, bench = self.ops, self.bench
        ops.device_sync()
        t0_s, t0 = self.clock(), _perf_ns()
        pairs = []
        for _ in range(n):
            bench.prepare(self.calls)
            start, end = ops.event(), ops.event()
            start.record()
            bench.launch()
            end.record()
            checked = check and self.rng.random() < self.check_rate
            bench.finish(self.calls, checked)
            self.checked += checked
            self.calls += 1
            pairs.append((start, end))
        closing = ops.event()
        closing.record()
        t_enq = _perf_ns()
        closing.synchronize()
        with self.quiet:
            t_a = _perf_ns()
            ops.device_sync()
            t_b = _perf_ns()
        self.check_ns += t_b - t_a  # the device-wide sync after the closing event: the tail's reading
        times = [ops.elapsed(s, e) for s, e in pairs]
        span = ops.elapsed(pairs[0][0], closing) if pairs else 0.0
        self.batches.append(BatchRecord(n, sum(times), span, (t_a - t0) / 1e6, (t_enq - t0) / 1e6,
                                        (t_b - t_a) / 1e6, t0_s, self.clock()))
        return times

    def check_one_more(self) -> list[float]:
        """One more timed call, checked: where chance picked none, the variant still has a checked timed call."""
        rate, self.check_rate = self.check_rate, 1.0
        t0 = _perf_ns()
        try:
            return self(1)
        finally:
            self.check_rate = rate
            self.check_ns += _perf_ns() - t0

    def look_again(self, median_ms: float, first: int = 0) -> None:
        """second_look over the batches from `first`, its time counted as the checks'."""
        t0 = _perf_ns()
        second_look(self, self.batches[first:], median_ms)
        self.check_ns += _perf_ns() - t0


@dataclass
class TimedVariant:
    """What timing one variant produced, beside its samples."""

    measurement: Measurement
    clocks: ClockRecord | None = None
    warm_up: WarmUpRecord | None = None
    energy: EnergyRecord | None = None
    batches: list[BatchRecord] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    checks_ns: int = 0  # host time of the timer's own checks: the device-wide syncs' tails, the second look, the
    #                     one more checked call, the carve-out's reset and look, the timing functions' look
    check_work_ms: float | None = None  # device time per call of the bench's check work (Bench.check_work)
    counted_from: int = 0  # the first batch whose calls the checks' cost counts (after a sustained warm-up)
    uncounted_ns: int = 0  # the bench's host time for the checks during a sustained warm-up (not counted)
    notes: list[str] = field(default_factory=list)  # what a reader of the figure should know (turn_drift_note)

    def checks_s(self, bench_host_ns: int = 0) -> float:
        """What the checks cost this variant, in seconds: the timer's own (checks_ns), the bench's host time
        (`bench_host_ns`, less what it spent during a sustained warm-up) and its device work over the calls from
        `counted_from` on. A sustained warm-up lasts until the card settles, with the checks' work or without it;
        a burst warm-up is a count of calls and is counted. An upper bound: host work overlaps the device's."""
        calls = sum(b.calls for b in self.batches[self.counted_from:])
        return (self.checks_ns + bench_host_ns - self.uncounted_ns) / 1e9 + (self.check_work_ms or 0.0) * calls / 1e3


CHECK_WORK_CALLS = 5  # calls' worth of check work timed once per variant for its device time


def check_work_ms(bench, ops: DeviceOps, calls: int = CHECK_WORK_CALLS) -> float | None:
    """The device time per call of the work the checks add around a call (Bench.check_work), between two events;
    None for a bench without such work."""
    if not hasattr(bench, "check_work"):
        return None
    ops.device_sync()
    start, end = ops.event(), ops.event()
    start.record()
    bench.check_work(calls)
    end.record()
    end.synchronize()
    return ops.elapsed(start, end) / calls


def cool_down(config: TimingConfig) -> None:
    if config.cool_down_s > 0:
        _sleep(config.cool_down_s)


def warm(timer: Timer, config: TimingConfig, sampler=None) -> WarmUpRecord:
    """Bring the card to the regime's state with the variant's own calls (not checked, not kept). Burst:
    config.warmup calls (one when a call takes a tenth of the budget). Sustained: calls back to back, in
    chunks of about 0.1 s, until `settle.judge` says the SM clock and power settled (or config.settle.max_s)."""
    probe = timer(1, check=False)
    per_ms = max(probe[0], 1e-3)
    if config.regime == "sustained":
        return _warm_in_turns([timer], config, sampler, [per_ms])[0]
    calls = 1
    if config.warmup > 1 and (per_ms * 1e-3 < 0.1 * config.budget_s or config.budget_s <= 0):
        timer(config.warmup - 1, check=False)
        calls = config.warmup
    return WarmUpRecord("burst", 0.0, calls, "", cool_down_s=config.cool_down_s)


def _shift(sample, t0: float):
    from dataclasses import replace

    return replace(sample, t_s=sample.t_s - t0)


def energy_window(bench, ops: DeviceOps, reader, seconds: float, per_ms: float, sampler=None
                  ) -> EnergyRecord | None:
    """Calls back to back (no flush, no work between them) for about `seconds`, NVML's total-energy counter read
    throughout. The counter moves in steps (every 100 ms on the H200), so the energy is taken between its first
    and last step inside the window, while the GPU was busy all along: joules over that time is the power, and
    joules per call is that power times the GPU's time per call. The power NVML sampled between the same steps is
    kept beside it (the two should agree). Without a sampler, the two reads around the window. None where the
    counter cannot be read."""
    if reader is None:
        return None
    n = int(min(1_000_000, max(10, math.ceil(seconds / max(per_ms * 1e-3, 1e-6)))))
    sets = bench.sets
    ops.device_sync()
    t0 = sampler.now() if sampler is not None else None
    before = reader.read()
    start, end = ops.event(), ops.event()
    start.record()
    for i in range(n):
        sets[i % len(sets)].launch()
    end.record()
    end.synchronize()
    ops.device_sync()
    after = reader.read()
    from gemmprof.measure.bench import reset

    for s in sets:  # C was overwritten without being poisoned again
        reset(s)
    ops.device_sync()
    gpu_s = ops.elapsed(start, end) / 1e3
    steps = _counter_steps(sampler.snapshot(t0) if sampler is not None else [])
    if steps is not None:
        (ta, ea), (tb, eb), powers = steps
        power = (eb - ea) / 1e3 / (tb - ta)
        return EnergyRecord(power * gpu_s, n, gpu_s, sum(powers) / len(powers) if powers else None,
                            f"counter steps {tb - ta:.2f} s apart")
    if before is None or after is None or before.energy_mj is None or after.energy_mj is None:
        return None
    return EnergyRecord((after.energy_mj - before.energy_mj) / 1e3, n, gpu_s, None, "two reads around the window")


def _counter_steps(samples) -> tuple | None:
    """((time, mJ) of the counter's first step, of its last, the power samples between) among samples taken while
    the GPU was busy; None with fewer than two steps half a second apart."""
    marks, last = [], None
    for x in samples:
        if x.energy_mj is not None and x.energy_mj != last:
            if last is not None:
                marks.append((x.t_s, x.energy_mj))
            last = x.energy_mj
    # the window's last samples may fall after the calls ended (the two device syncs): leave the final step out
    marks = marks[:-1]
    if len(marks) < 2 or marks[-1][0] - marks[0][0] < 0.5:
        return None
    (ta, _), (tb, _) = marks[0], marks[-1]
    powers = [x.power_w for x in samples if x.power_w is not None and ta <= x.t_s <= tb]
    return marks[0], marks[-1], powers


def event_timer(launch: Callable[[], None], flush: Callable[[], None] | None,
                nvtx_range: str | None = None) -> Callable[[int], list[float]]:
    """A function timing n launches with CUDA events (L2 flushed before each when `flush`): ms per launch.
    With `nvtx_range`, each batch of n runs inside that range (interleaved timing opens it per batch)."""
    import cupy

    def timed(n: int) -> list[float]:
        if nvtx_range:
            nvtx.push(nvtx_range)
            try:
                return _timed(n)
            finally:
                nvtx.pop()
        return _timed(n)

    def _timed(n: int) -> list[float]:
        pairs = []
        for _ in range(n):
            if flush:
                flush()
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            launch()
            end.record()
            pairs.append((start, end))
        pairs[-1][1].synchronize()
        return [cupy.cuda.get_elapsed_time(s, e) for s, e in pairs]

    return timed


def warm_up(launch: Callable[[], None], config: TimingConfig) -> None:
    """config.warmup launches, or fewer when one launch alone takes a tenth of the budget or more (the naive
    rung at 4096, 0.28 s: its verification launches have just run, and one more is warm-up enough)."""
    import time

    import cupy

    for i in range(config.warmup):
        t0 = time.perf_counter()
        launch()
        if i == 0:
            cupy.cuda.Device().synchronize()
            if time.perf_counter() - t0 >= 0.1 * config.budget_s > 0:
                break
    cupy.cuda.Device().synchronize()


def repetitions(probe_ms: list[float], config: TimingConfig) -> int:
    """How many launches fill the time budget, judged by the middle of three probe launches: at least
    config.min_reps, unless those would take more than twice the budget, then at least 5 (a kernel of a tenth of
    a second or more is steady from launch to launch; its spread is reported all the same)."""
    per = max(sorted(probe_ms)[1], 1e-4) * 1e-3
    slow = config.budget_s > 0 and config.min_reps * per > 2 * config.budget_s  # budget 0: exactly min_reps
    floor = min(config.min_reps, 5) if slow else config.min_reps
    return int(min(config.max_reps, max(floor, config.budget_s / per)))


def time_kernel(launch: Callable[[], None], config: TimingConfig, flush: Callable[[], None] | None,
                on_start: Callable[[], None] | None = None, on_end: Callable[[], None] | None = None) -> Measurement:
    """`on_start` runs after warm-up, right before the timed repetitions; `on_end` right after the last one
    finished (the clock readings around the loop)."""
    timed = event_timer(launch, flush)
    warm_up(launch, config)
    if on_start:
        on_start()
    samples = until_precise(timed, config)
    if on_end:
        on_end()
    return Measurement(tuple(samples))


def until_precise(timed: Callable[[int], list[float]], config: TimingConfig) -> list[float]:
    """Three probe launches size the budget's count (`repetitions`); then batches, each doubling the samples
    taken (first up to min_reps), until that count, or, with config.precision > 0, until the median's 95%
    confidence interval is within +-precision of it. A steady kernel stops after 10-40 launches; a noisy one
    spends its budget. No CUDA here: `timed(n)` brings it."""
    samples = timed(3)
    return samples + _until(timed, config, samples, repetitions(samples, config))


def _williams_first_row(n: int) -> list[int]:
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:  # 0, 1, n-1, 2, n-2, ...
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    return first


def round_order(n: int, r: int) -> list[int]:
    """The order of round r among n variants: a row of a balanced Latin square (Williams; 2n rows for odd n, the
    second n reversed), so over its rows each variant comes straight after every other one equally often. The
    rows are visited in the square's own first-row order, which spreads the pairs across round boundaries too
    (balanced over every n rounds for even n). Under a power cap a light kernel lends the next one a faster clock
    (measured on the H200: the same kernel 5% faster after a light one than after a heavy one); a fixed order
    gives that lead to the same variant in every round."""
    first = _williams_first_row(n)
    k = r % (n if n % 2 == 0 else 2 * n)
    i = first[k % n]
    row = [(x + i) % n for x in first]
    return row[::-1] if k >= n else row


def turn_sizes(reps: int, rounds: int) -> list[int]:
    """A variant's reps launches as `rounds` batches of near-equal size (round_robin's turns, empty ones included)."""
    return [reps * (r + 1) // rounds - reps * r // rounds for r in range(rounds)]


def variant_turns(reps: list[int], rounds: int) -> list[tuple[int, ...]]:
    """Each variant's turns as round_robin times its reps launches, for its Measurement (Measurement.turns): () where
    one round makes no turns."""
    return [tuple(turn_sizes(n, rounds)) if rounds > 1 else () for n in reps]


def round_robin(timers: list[Callable[[int], list[float]]], reps: list[int], rounds: int) -> list[list[float]]:
    """Variant i's reps[i] launches as `rounds` batches of near-equal size (turn_sizes), the variants taking turns:
    round r times batch r of each variant, in round_order(len(timers), r). timers[i](n) times n launches of
    variant i."""
    samples: list[list[float]] = [[] for _ in timers]
    sizes = [turn_sizes(n, rounds) for n in reps]
    for r in range(rounds):
        for i in round_order(len(timers), r):
            if sizes[i][r]:
                samples[i] += timers[i](sizes[i][r])
    return samples


def turn_drift_note(m: Measurement) -> str | None:
    """Whether a variant timed in turns ran differently late in its turns than early in them
    (Measurement.turn_thirds): a difference past TURN_DRIFT means the figure depends on how long each turn lasts.
    On the H200 h9 ran the last third of each 0.1 s turn 9.9% slower than the first
    (benchmarks/2026-11-29_h200_rule7, section 2), so turns of 0.03 s and of 0.1 s ordered it differently against
    h12. None where no drift shows or no turn is long enough to judge. Pure: tests feed it recorded samples."""
    change = m.turn_drift
    if not beyond_turn_drift(change):
        return None
    first, last = m.turn_thirds
    return (f"in turns, its launches late in each turn ran {abs(change):.1%} {'slower' if change > 0 else 'faster'} "
            f"than early ones (median {last:.3f} against {first:.3f} ms): its figure depends on how long a turn "
            f"lasts (a tenth of --budget); a longer --budget weighs the later state more")


def time_interleaved(timers: list[Callable[[int], list[float]]], warm_ups: list[Callable[[], None]],
                     config: TimingConfig, on_start: Callable[[], None] | None = None,
                     on_end: Callable[[], None] | None = None) -> list[Measurement]:
    """Every variant warmed up, probed and sized to the budget as time_kernel does, then timed in turns in
    config.interleave_rounds rounds (round_robin; 1: one after another). No CUDA here: the timers and warm-ups
    bring it."""
    for warm_up in warm_ups:
        warm_up()
    if on_start:
        on_start()
    probes = [timed(3) for timed in timers]
    rest = [max(repetitions(p, config) - len(p), 0) for p in probes]
    rounds = max(config.interleave_rounds, 1)
    samples = round_robin(timers, rest, rounds)
    if on_end:
        on_end()
    return [Measurement(tuple(p + s), len(p) if turns else 0, turns)
            for p, s, turns in zip(probes, samples, variant_turns(rest, rounds), strict=True)]


def time_variant(bench, config: TimingConfig, ops: DeviceOps, reader=None, sampler=None, persist=None,
                 nvtx_range: str | None = None, timers_before: dict | None = None) -> TimedVariant:
    """One variant, start to finish: cool-down, carve-out reset, warm-up, the timed batches (NVML sampled
    throughout), the energy window where asked, then the checks: the timed calls chosen at random verified, the
    batches read against the host clock, the carve-out and the timing functions looked at again."""
    config = config.timed()
    cool_down(config)
    t0 = _perf_ns()
    if persist is not None:
        persist.reset_once()
    shared_ns = _perf_ns() - t0
    timer = Timer(bench, ops, clock=sampler.now if sampler is not None else None, nvtx_range=nvtx_range,
                  quiet=sampler.quiet if sampler is not None else None)
    warm_up_record = warm(timer, config, sampler)
    first_timed = len(timer.batches)
    counted, warm_ns, warm_host_ns = _uncounted(config, timer, first_timed)
    before = reader.read(full=False) if reader is not None else None
    t_before = sampler.now() if sampler is not None else 0.0
    timer.check_rate = _check_rate(config, config.max_reps)
    probes = timer(3)
    target = repetitions(probes, config)  # the chance of a check follows the count the budget allows
    timer.check_rate = _check_rate(config, target - len(probes))
    samples = probes + _until(timer, config, probes, target)
    if config.checks and not timer.checked:
        samples += timer.check_one_more()
    after = reader.read(full=False) if reader is not None else None
    during = sampler.snapshot(t_before) if sampler is not None else []
    clocks = ClockRecord.from_samples(before, after, reader.max_sm_clock_mhz, during) \
        if before is not None and after is not None else None
    measurement = Measurement(tuple(samples))
    timer.look_again(measurement.median_ms, first_timed)
    energy = energy_window(bench, ops, reader, config.energy_s, measurement.median_ms, sampler) \
        if config.with_energy else None
    findings = batch_findings(timer.batches[first_timed:], measurement.median_ms)
    t0 = _perf_ns()
    if persist is not None:
        findings += persist.findings()
    if timers_before is not None:
        findings += [f"replaced {name} during its calls: gemmprof's timer does not use the replacement; a "
                     "benchmark that did would be fooled" for name in replaced_timers(timers_before)]
    work = check_work_ms(bench, ops)
    shared_ns += _perf_ns() - t0
    return TimedVariant(measurement, clocks, warm_up_record, energy, timer.batches, findings,
                        timer.check_ns - warm_ns + shared_ns, work, counted, warm_host_ns)


def _uncounted(config: TimingConfig, timer: Timer, first_timed: int) -> tuple[int, int, int]:
    """(the first batch the checks' cost counts, the timer's and the bench's check time before it): a sustained
    warm-up's checks are not counted (it lasts until the card settles, with them or without)."""
    if config.regime != "sustained":
        return 0, 0, 0
    return first_timed, timer.check_ns, getattr(timer.bench, "host_ns", 0)


def _check_rate(config: TimingConfig, calls: int) -> float:
    """The chance that a timed call is checked, so that about config.checks of `calls` are."""
    return min(1.0, config.checks / max(calls, 1)) if config.checks else 0.0


def _until(timed: Callable[[int], list[float]], config: TimingConfig, probes: list[float], target: int
           ) -> list[float]:
    """until_precise after its probes: batches doubling the samples up to `target`, or until precise."""
    samples = list(probes)
    while len(samples) < target:
        samples += timed(min(target, max(config.min_reps, 2 * len(samples))) - len(samples))
        if config.precision > 0 and Measurement(tuple(samples)).median_ci <= config.precision:
            break
    return samples[len(probes):]


def time_together(benches: list, config: TimingConfig, ops: DeviceOps, reader=None, sampler=None, persist=None,
                  nvtx_ranges: list[str | None] | None = None, timers_before: dict | None = None
                  ) -> list[TimedVariant]:
    """Several variants timed in turns (config.interleave_rounds batches each: round_robin): warmed together
    (burst: each its warm-up calls; sustained: chunks in turns until the clock and power settle), probed and
    sized to the budget as time_variant does, then timed in rounds. Each variant's clock record covers the
    samples taken during its own batches."""
    config = config.timed()
    cool_down(config)
    t0 = _perf_ns()
    if persist is not None:
        persist.reset_once()
    shared_ns = _perf_ns() - t0  # counted to the first variant
    clock = sampler.now if sampler is not None else None
    ranges = nvtx_ranges or [None] * len(benches)
    timers = [Timer(b, ops, clock=clock, nvtx_range=r, quiet=sampler.quiet if sampler is not None else None)
              for b, r in zip(benches, ranges, strict=True)]
    if config.regime == "sustained":
        warm_ups = _warm_in_turns(timers, config, sampler)  # they warm the card together
    else:
        warm_ups = [warm(t, config, sampler) for t in timers]
    firsts = [len(t.batches) for t in timers]
    uncounted = [_uncounted(config, t, first) for t, first in zip(timers, firsts, strict=True)]
    before = reader.read(full=False) if reader is not None else None
    for t in timers:
        t.check_rate = _check_rate(config, config.max_reps)
    probes = [t(3) for t in timers]
    targets = [repetitions(p, config) for p in probes]
    for t, target, p in zip(timers, targets, probes, strict=True):
        t.check_rate = _check_rate(config, target - len(p))
    reps = [max(n - len(p), 0) for n, p in zip(targets, probes, strict=True)]
    rounds = max(config.interleave_rounds, 1)
    rest = round_robin(timers, reps, rounds)
    sizes = variant_turns(reps, rounds)
    extra = [t.check_one_more() if config.checks and not t.checked else [] for t in timers]
    after = reader.read(full=False) if reader is not None else None
    out = []
    t0 = _perf_ns()
    replaced = replaced_timers(timers_before) if timers_before is not None else []
    shared_ns += _perf_ns() - t0
    for t, p, r, e, w, first, (counted, warm_ns, warm_host_ns), turns in zip(
            timers, probes, rest, extra, warm_ups, firsts, uncounted, sizes, strict=True):
        m = Measurement(tuple(p + r + e), len(p) if turns else 0, turns)  # where its turns are: Measurement.turn_drift
        t.look_again(m.median_ms, first)
        own = [b for b in t.batches[first:]]
        during = [x for x in (sampler.snapshot() if sampler is not None else [])
                  if any(b.t0_s <= x.t_s <= b.t1_s for b in own)]
        clocks = ClockRecord.from_samples(before, after, reader.max_sm_clock_mhz, during) \
            if before is not None and after is not None else None
        energy = energy_window(t.bench, ops, reader, config.energy_s, m.median_ms, sampler) \
            if config.with_energy else None
        findings = batch_findings(own, m.median_ms)
        t0 = _perf_ns()
        if persist is not None:
            findings += persist.findings()
        findings += [f"replaced {name} while the variants ran: gemmprof's timer does not use the replacement"
                     for name in replaced]
        work = check_work_ms(t.bench, ops)
        spent = t.check_ns - warm_ns + _perf_ns() - t0 + (shared_ns if not out else 0)
        drift = turn_drift_note(m)
        out.append(TimedVariant(m, clocks, w, energy, t.batches, findings, spent, work, counted, warm_host_ns,
                                notes=[drift] if drift else []))
    return out


def _warm_in_turns(timers: list[Timer], config: TimingConfig, sampler, per: list[float] | None = None
                   ) -> list[WarmUpRecord]:
    """Sustained warm-up: each variant takes about 0.1 s of calls in turn (one variant: back to back) until the
    card settles, judged on NVML's samples (a fixed rule.min_s without NVML, said so); variants warmed together
    get the same record."""
    per = per or [max(t(1, check=False)[0], 1e-3) for t in timers]
    rule = config.settle
    clock = sampler.now if sampler is not None else time.monotonic
    t_start, calls = clock(), len(timers)
    while True:
        for i, t in enumerate(timers):
            n = max(1, min(10_000, int(0.1 / (per[i] * 1e-3))))
            per[i] = max(min(t(n, check=False)), 1e-3)
            calls += n
        elapsed = clock() - t_start
        if sampler is None:
            if elapsed >= rule.min_s:
                return [WarmUpRecord("sustained", elapsed, calls, "no NVML", cool_down_s=config.cool_down_s)] * \
                    len(timers)
            continue
        state = judge([_shift(x, t_start) for x in sampler.snapshot(t_start)], elapsed, rule,
                      getattr(sampler.reader, "max_sm_clock_mhz", None))
        if state.done:
            record = WarmUpRecord("sustained", elapsed, calls, state.verdict, state.clock_mhz, state.power_w,
                                  state.oscillation, config.cool_down_s)
            return [record] * len(timers)
