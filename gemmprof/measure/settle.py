"""When has a card under load settled? Decided from NVML samples (SM clock and power), not from a fixed sleep.

A GEMM launched back to back starts at the boost clock; within a few seconds the card reaches its power cap and
the clock falls to where it will stay (on the H200 at 700 W: 1980 MHz for the first calls, 1395-1440 MHz after
about 3 s for random inputs), and there it often oscillates (1215-1545 MHz sampled every 0.33 s). NVIDIA's GEMM
measurement guide warms up until the clocks settle for that reason. The rule here:

  over the last `window_s` of samples, the mean SM clock of the window's second half is within
  max(clock_tolerance, oscillation / 4) of its first half's, and the same holds for power (power_tolerance),

after at least `min_s` of load. Where every clock sample of the window sits at the card's maximum (no power or
thermal limit holds it down), power is not asked to settle: a light kernel's power wanders without moving the
clock. A clock that falls and levels off settles once the fall has left the window; one
that swings around a steady mean settles (verdict "oscillating" when its swing, the 90th minus the 10th
percentile over the mean, exceeds 5%); one that keeps drifting never does, and the warm-up stops at `max_s` with
the verdict "not settled". No CUDA here: tests drive it with stand-in traces.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gemmprof.results.clocks import ClockSample

OSCILLATING = 0.05  # a swing of more than 5% of the mean clock over the window is called oscillating


@dataclass(frozen=True)
class SettleRule:
    window_s: float = 2.0
    min_s: float = 2.0
    max_s: float = 20.0
    clock_tolerance: float = 0.015
    power_tolerance: float = 0.03

    def to_dict(self) -> dict:
        return {"window_s": self.window_s, "min_s": self.min_s, "max_s": self.max_s,
                "clock_tolerance": self.clock_tolerance, "power_tolerance": self.power_tolerance}


@dataclass(frozen=True)
class SettleState:
    done: bool
    verdict: str  # "" while warming | settled | oscillating | not settled
    clock_mhz: float | None = None  # the last window's mean
    power_w: float | None = None
    oscillation: float | None = None


def _halves_agree(values: Sequence[float], tolerance: float) -> tuple[bool, float, float]:
    """(the two halves' means within tolerance of each other, relative to the whole mean; the mean; the swing)."""
    n = len(values)
    mean = statistics.fmean(values)
    if mean <= 0:
        return True, mean, 0.0
    first, second = statistics.fmean(values[: n // 2]), statistics.fmean(values[n // 2:])
    ordered = sorted(values)
    swing = (ordered[int(0.9 * (n - 1))] - ordered[int(0.1 * (n - 1))]) / mean
    return abs(second - first) / mean <= max(tolerance, swing / 4), mean, swing


def judge(samples: Sequence[ClockSample], elapsed_s: float, rule: SettleRule = SettleRule(),
          max_clock_mhz: float | None = None) -> SettleState:
    """Whether warming can stop after `elapsed_s` seconds of load, from the samples taken during it (their t_s
    counts from the same start). At least 6 samples must lie in the window; fewer keep it warming."""
    window = [s for s in samples if s.t_s >= elapsed_s - rule.window_s]
    timed_out = elapsed_s >= rule.max_s
    if len(window) < 6:
        return SettleState(timed_out, "not settled" if timed_out else "")
    clock_ok, clock, swing = _halves_agree([s.sm_clock_mhz for s in window], rule.clock_tolerance)
    powers = [s.power_w for s in window if s.power_w is not None]
    power_ok, power = True, None
    at_max = bool(max_clock_mhz) and min(s.sm_clock_mhz for s in window) >= 0.99 * max_clock_mhz
    if len(powers) >= 6 and not at_max:
        power_ok, power, _ = _halves_agree(powers, rule.power_tolerance)
    elif powers:
        power = statistics.fmean(powers)
    if elapsed_s >= rule.min_s and clock_ok and power_ok:
        return SettleState(True, "oscillating" if swing > OSCILLATING else "settled", clock, power, swing)
    return SettleState(timed_out, "not settled" if timed_out else "", clock, power, swing)
