"""Timing with CUDA events: warm-up, L2 flushed before every repetition, repetitions until the median is known to
a stated precision or the time budget is spent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gemmprof.measure import nvtx
from gemmprof.results.run import Measurement


@dataclass(frozen=True)
class TimingConfig:
    warmup: int = 3
    min_reps: int = 10
    max_reps: int = 200
    budget_s: float = 1.0  # kernel time to spend per variant, at most, about
    flush_l2: bool = True
    # > 0: stop early, after at least min_reps, once the 95% confidence interval of the median lies within
    # +-precision of it (Measurement.median_ci); 0: spend the whole budget (up to max_reps)
    precision: float = 0.005
    # > 0: the variants of a run are timed together, each one's repetitions in this many batches taken in turn
    # (round-robin), so a clock that drifts during the run reaches every variant alike; 0: one after another
    interleave_rounds: int = 0

    def to_dict(self):
        method = ("CUDA events around each launch; L2 flushed by a memset of 2x its size before each repetition"
                  if self.flush_l2 else "CUDA events around each launch")
        d = {"method": method, "warmup": self.warmup, "min_reps": self.min_reps, "max_reps": self.max_reps,
             "slow_kernels": "one warm-up launch when it takes 10% of the budget; at least 5 repetitions when "
                             "min_reps would take over twice the budget",
             "budget_s": self.budget_s, "statistic": "median; spread = IQR / median",
             "precision": self.precision,
             "stopping": (f"batches doubling from min_reps until the 95% confidence interval of the median is "
                          f"within +-{self.precision:.2%} of it, or the budget or max_reps is reached"
                          if self.precision > 0 and not self.interleave_rounds else "the budget or max_reps")}
        if self.interleave_rounds:
            d["method"] += (f"; variants interleaved: each one's repetitions in {self.interleave_rounds} batches "
                            "taken round-robin")
            d["interleave_rounds"] = self.interleave_rounds
        return d


class L2Flusher:
    def __init__(self, l2_bytes: int):
        import cupy

        self.buf = cupy.empty(max(2 * l2_bytes, 1 << 20), dtype=cupy.uint8)

    def __call__(self):
        self.buf.fill(0)


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
    target = repetitions(samples, config)
    while len(samples) < target:
        samples += timed(min(target, max(config.min_reps, 2 * len(samples))) - len(samples))
        if config.precision > 0 and Measurement(tuple(samples)).median_ci <= config.precision:
            break
    return samples


def round_robin(timers: list[Callable[[int], list[float]]], reps: list[int], rounds: int) -> list[list[float]]:
    """Variant i's reps[i] launches as `rounds` batches of near-equal size, the variants taking turns: round r
    times batch r of variant 0, then of variant 1, and so on. timers[i](n) times n launches of variant i."""
    samples: list[list[float]] = [[] for _ in timers]
    for r in range(rounds):
        for i, timed in enumerate(timers):
            n = reps[i] * (r + 1) // rounds - reps[i] * r // rounds
            if n:
                samples[i] += timed(n)
    return samples


def time_interleaved(timers: list[Callable[[int], list[float]]], warm_ups: list[Callable[[], None]],
                     config: TimingConfig, on_start: Callable[[], None] | None = None,
                     on_end: Callable[[], None] | None = None) -> list[Measurement]:
    """Every variant warmed up, probed and sized to the budget as time_kernel does, then timed round-robin in
    config.interleave_rounds rounds (1: one after another). No CUDA here: the timers and warm-ups bring it."""
    for warm_up in warm_ups:
        warm_up()
    if on_start:
        on_start()
    probes = [timed(3) for timed in timers]
    rest = [max(repetitions(p, config) - len(p), 0) for p in probes]
    samples = round_robin(timers, rest, max(config.interleave_rounds, 1))
    if on_end:
        on_end()
    return [Measurement(tuple(p + s)) for p, s in zip(probes, samples, strict=True)]
