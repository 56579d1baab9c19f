"""Timing with CUDA events: warm-up, L2 flushed before every repetition, repetitions sized to a time budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gemmprof.results.run import Measurement


@dataclass(frozen=True)
class TimingConfig:
    warmup: int = 3
    min_reps: int = 10
    max_reps: int = 200
    budget_s: float = 1.0  # kernel time to spend per variant, about
    flush_l2: bool = True

    def to_dict(self):
        return {"method": "CUDA events around each launch; L2 flushed by a memset of 2x its size before each "
                          "repetition" if self.flush_l2 else "CUDA events around each launch",
                "warmup": self.warmup, "min_reps": self.min_reps, "max_reps": self.max_reps,
                "budget_s": self.budget_s, "statistic": "median; spread = IQR / median"}


class L2Flusher:
    def __init__(self, l2_bytes: int):
        import cupy

        self.buf = cupy.empty(max(2 * l2_bytes, 1 << 20), dtype=cupy.uint8)

    def __call__(self):
        self.buf.fill(0)


def time_kernel(launch: Callable[[], None], config: TimingConfig, flush: Callable[[], None] | None,
                on_start: Callable[[], None] | None = None, on_end: Callable[[], None] | None = None) -> Measurement:
    """`on_start` runs after warm-up, right before the timed repetitions; `on_end` right after the last one
    finished (the clock readings around the loop)."""
    import cupy

    def timed(n: int) -> list[float]:
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

    for _ in range(config.warmup):
        launch()
    cupy.cuda.Device().synchronize()
    if on_start:
        on_start()
    probe = timed(3)
    per = max(sorted(probe)[1], 1e-4) * 1e-3
    reps = int(min(config.max_reps, max(config.min_reps, config.budget_s / per)))
    samples = probe + timed(max(reps - len(probe), 0))
    if on_end:
        on_end()
    return Measurement(tuple(samples))
