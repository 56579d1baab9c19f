"""The SM clock, temperature and power around and during one variant's timing, read through NVML (never set);
the energy its GEMMs took; how the card was warmed before it was timed.

A figure is only as good as the clock behind it. `held_mhz` is the median SM clock sampled while the timed calls
ran (the clock the figure was taken at); `clock_fell` says the measurement may not be at the clock the run
started with: the SM clock read right after the timing loop is more than 5% below the one read right before it
(after warm-up), or below 90% of the card's maximum SM clock (a power or thermal limit held it down) where the
card was not warmed until its clock settled (in the sustained regime that lower clock is what is measured).
`throttle_reasons` are NVML's clock-event reasons seen during the timed calls (e.g. "sw_power_cap").
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from gemmprof.results import cells

FELL_FROM_START = 0.95  # after < 95% of before: the clock dropped during the measurement
BELOW_MAX = 0.90  # after < 90% of the maximum SM clock: held well under its boost clock
SETTLED = ("settled", "oscillating")  # warm-up verdicts of a card whose clock reached its steady state


@dataclass(frozen=True)
class ClockSample:
    """One NVML reading: SM clock in MHz, GPU temperature in degrees C, the active clock-event reasons."""

    sm_clock_mhz: float
    temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    power_w: float | None = None
    energy_mj: float | None = None  # NVML's total-energy counter (millijoules since the driver loaded)
    t_s: float = 0.0  # seconds since the sampler started


@dataclass(frozen=True)
class ClockRecord:
    """Before (after warm-up) and after the timed repetitions of one variant, and what was sampled in between."""

    sm_clock_mhz_before: float
    sm_clock_mhz_after: float
    temperature_c_before: float | None = None
    temperature_c_after: float | None = None
    sm_clock_mhz_max: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    held_mhz: float | None = None  # median SM clock of the samples taken while the timed calls ran
    held_min_mhz: float | None = None
    held_max_mhz: float | None = None
    power_w: float | None = None  # mean power of those samples
    samples: int = 0

    @classmethod
    def from_samples(cls, before: ClockSample, after: ClockSample, max_mhz: float | None,
                     during: list[ClockSample] | None = None) -> ClockRecord:
        """`during`: the samples taken while the timed calls ran (their union of clock-event reasons, the held
        clock); without them, the reasons read after the loop."""
        sampled = [s for s in during or () if s is not None]
        during = sampled or [before, after]  # not sampled (burst, or a short run): the two reads
        reasons = tuple(sorted({r for s in during for r in s.throttle_reasons})) if during else \
            tuple(after.throttle_reasons)
        clocks = [s.sm_clock_mhz for s in during]
        powers = [s.power_w for s in during if s.power_w is not None]
        return cls(before.sm_clock_mhz, after.sm_clock_mhz, before.temperature_c, after.temperature_c, max_mhz,
                   reasons, statistics.median(clocks) if clocks else None, min(clocks) if clocks else None,
                   max(clocks) if clocks else None, statistics.fmean(powers) if powers else None, len(sampled))

    @property
    def clock_mhz(self) -> float:
        """The clock the figure was taken at: the held clock where sampled, else the mean of before and after."""
        return self.held_mhz if self.held_mhz else (self.sm_clock_mhz_before + self.sm_clock_mhz_after) / 2

    @property
    def clock_fell(self) -> bool:
        return self.fell(settled=False)

    def fell(self, settled: bool) -> bool:
        """`settled`: the card was warmed until its clock settled (regime sustained), so a clock under 90% of the
        maximum is the state being measured, not a fall; only a drop during the timed calls counts."""
        if self.sm_clock_mhz_after < FELL_FROM_START * self.sm_clock_mhz_before:
            return True
        return not settled and bool(self.sm_clock_mhz_max) and \
            self.sm_clock_mhz_after < BELOW_MAX * self.sm_clock_mhz_max

    def describe(self) -> str:
        """e.g. '1980->1755 MHz, held 1410 (1395-1545), 41->52 C'."""
        text = f"{self.sm_clock_mhz_before:.0f}->{self.sm_clock_mhz_after:.0f} MHz"
        if self.held_mhz:
            text += f", held {self.held_mhz:.0f} ({self.held_min_mhz:.0f}-{self.held_max_mhz:.0f})"
        if self.temperature_c_before is not None and self.temperature_c_after is not None:
            text += f", {self.temperature_c_before:.0f}->{self.temperature_c_after:.0f} C"
        return text

    def to_dict(self) -> dict:
        """Flat keys, merged into the variant's row of the results file."""
        return {"sm_clock_mhz_before": self.sm_clock_mhz_before, "sm_clock_mhz_after": self.sm_clock_mhz_after,
                "temperature_c_before": self.temperature_c_before, "temperature_c_after": self.temperature_c_after,
                "sm_clock_mhz_max": self.sm_clock_mhz_max, "throttle_reasons": list(self.throttle_reasons),
                "clock_fell": self.clock_fell, "sm_clock_mhz_held": self.held_mhz,
                "sm_clock_mhz_held_min": self.held_min_mhz, "sm_clock_mhz_held_max": self.held_max_mhz,
                "power_w_held": self.power_w, "clock_samples": self.samples}

    @classmethod
    def from_dict(cls, d: dict) -> ClockRecord | None:
        """None when the row has no clock readings (files from before clocks were recorded, or no NVML)."""
        if d.get("sm_clock_mhz_before") is None or d.get("sm_clock_mhz_after") is None:
            return None
        try:
            before, after = cells.real(d["sm_clock_mhz_before"]), cells.real(d["sm_clock_mhz_after"])
        except cells.CellError as exc:  # the caller names the file and variant for a ValueError
            raise ValueError(f"a clock reading {exc}") from None
        held = [_optional(d, k) for k in ("sm_clock_mhz_held", "sm_clock_mhz_held_min", "sm_clock_mhz_held_max",
                                          "power_w_held")]
        return cls(before, after, d.get("temperature_c_before"),
                   d.get("temperature_c_after"), d.get("sm_clock_mhz_max"),
                   tuple(str(r) for r in d.get("throttle_reasons") or ()), *held, cells.count(d.get("clock_samples") or 0))


def _optional(d: dict, key: str) -> float | None:
    if d.get(key) is None:
        return None
    try:
        return cells.real(d[key])
    except cells.CellError as exc:
        raise ValueError(f"{key} {exc}") from None


def empty_dict() -> dict:
    return {"sm_clock_mhz_before": None, "sm_clock_mhz_after": None, "temperature_c_before": None,
            "temperature_c_after": None, "sm_clock_mhz_max": None, "throttle_reasons": [], "clock_fell": None,
            "sm_clock_mhz_held": None, "sm_clock_mhz_held_min": None, "sm_clock_mhz_held_max": None,
            "power_w_held": None, "clock_samples": 0}


@dataclass(frozen=True)
class EnergyRecord:
    """NVML's total-energy counter read around a window of back-to-back calls of one variant (no L2 flush or
    other work between them): joules per call, and the window's mean power."""

    joules: float
    calls: int
    seconds: float  # the window's length on the GPU (CUDA events around it)
    sampled_power_w: float | None = None  # the mean of NVML's power readings taken during the window
    method: str = ""  # how the joules were read (between the counter's steps, or two reads around the window)

    @property
    def joules_per_call(self) -> float:
        return self.joules / self.calls

    @property
    def power_w(self) -> float:
        return self.joules / self.seconds if self.seconds > 0 else float("nan")

    @property
    def ms_per_call(self) -> float:
        return 1e3 * self.seconds / self.calls

    def to_dict(self) -> dict:
        return {"joules": self.joules, "calls": self.calls, "seconds": self.seconds,
                "joules_per_call": self.joules_per_call, "power_w": self.power_w, "ms_per_call": self.ms_per_call,
                "sampled_power_w": self.sampled_power_w, "method": self.method}

    @classmethod
    def from_dict(cls, d: dict) -> EnergyRecord:
        joules, seconds, calls = cells.real(d["joules"]), cells.real(d["seconds"]), d["calls"]
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 1 or joules < 0 or seconds < 0:
            raise ValueError("energy: expected joules >= 0, seconds >= 0 and a positive number of calls")
        return cls(joules, calls, seconds, _optional(d, "sampled_power_w"), str(d.get("method") or ""))


@dataclass(frozen=True)
class WarmUpRecord:
    """How a variant was brought to the clock it was timed at. regime "burst": a few launches, the card as found;
    "sustained": launched back to back until the SM clock and power settled (`verdict` says how: settled,
    oscillating around a steady mean, or not settled when the time limit came), detected from NVML samples."""

    regime: str
    seconds: float
    calls: int
    verdict: str  # "" (burst) | settled | oscillating | not settled | no NVML
    clock_mhz: float | None = None  # mean SM clock over the last window of the warm-up
    power_w: float | None = None
    oscillation: float | None = None  # (90th - 10th percentile) / mean of the SM clock over that window
    cool_down_s: float = 0.0  # idle seconds before the warm-up

    def describe(self) -> str:
        if self.regime != "sustained":
            return f"{self.regime}: {self.calls} warm-up calls"
        text = f"{self.verdict} after {self.seconds:.1f} s"
        if self.clock_mhz:
            text += f" at {self.clock_mhz:.0f} MHz"
        if self.power_w:
            text += f", {self.power_w:.0f} W"
        if self.verdict == "oscillating" and self.oscillation:
            text += f" (+-{50 * self.oscillation:.0f}%)"
        return text

    def to_dict(self) -> dict:
        return {"regime": self.regime, "seconds": self.seconds, "calls": self.calls, "verdict": self.verdict,
                "clock_mhz": self.clock_mhz, "power_w": self.power_w, "oscillation": self.oscillation,
                "cool_down_s": self.cool_down_s}

    @classmethod
    def from_dict(cls, d: dict) -> WarmUpRecord:
        regime, verdict = d.get("regime"), d.get("verdict", "")
        if not isinstance(regime, str) or not isinstance(verdict, str):
            raise ValueError("warm_up: regime and verdict must be strings")
        calls = d.get("calls", 0)
        if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
            raise ValueError("warm_up.calls: expected a count")
        return cls(regime, cells.real(d.get("seconds", 0.0)), calls, verdict,
                   *(_optional(d, k) for k in ("clock_mhz", "power_w", "oscillation")),
                   cells.real(d.get("cool_down_s", 0.0)))
