"""The SM clock and temperature around one variant's timing loop, read through NVML (never set).

A figure is only as good as the clock behind it. `clock_fell` says the measurement may not be at the clock the
run started with: the SM clock read right after the timing loop is more than 5% below the one read right before
it (after warm-up), or below 90% of the card's maximum SM clock (a power or thermal limit held it down).
`throttle_reasons` are NVML's clock-event reasons read after the loop (e.g. "sw_power_cap", "hw_thermal_slowdown").
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmprof.results import cells

FELL_FROM_START = 0.95  # after < 95% of before: the clock dropped during the measurement
BELOW_MAX = 0.90  # after < 90% of the maximum SM clock: held well under its boost clock


@dataclass(frozen=True)
class ClockSample:
    """One NVML reading: SM clock in MHz, GPU temperature in degrees C, the active clock-event reasons."""

    sm_clock_mhz: float
    temperature_c: float | None = None
    throttle_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClockRecord:
    """Before (after warm-up) and after the timed repetitions of one variant."""

    sm_clock_mhz_before: float
    sm_clock_mhz_after: float
    temperature_c_before: float | None = None
    temperature_c_after: float | None = None
    sm_clock_mhz_max: float | None = None
    throttle_reasons: tuple[str, ...] = ()

    @classmethod
    def from_samples(cls, before: ClockSample, after: ClockSample, max_mhz: float | None) -> ClockRecord:
        return cls(before.sm_clock_mhz, after.sm_clock_mhz, before.temperature_c, after.temperature_c, max_mhz,
                   tuple(after.throttle_reasons))

    @property
    def clock_fell(self) -> bool:
        if self.sm_clock_mhz_after < FELL_FROM_START * self.sm_clock_mhz_before:
            return True
        return bool(self.sm_clock_mhz_max) and self.sm_clock_mhz_after < BELOW_MAX * self.sm_clock_mhz_max

    def describe(self) -> str:
        """e.g. '1980->1755 MHz, 41->52 C'."""
        text = f"{self.sm_clock_mhz_before:.0f}->{self.sm_clock_mhz_after:.0f} MHz"
        if self.temperature_c_before is not None and self.temperature_c_after is not None:
            text += f", {self.temperature_c_before:.0f}->{self.temperature_c_after:.0f} C"
        return text

    def to_dict(self) -> dict:
        """Flat keys, merged into the variant's row of the results file."""
        return {"sm_clock_mhz_before": self.sm_clock_mhz_before, "sm_clock_mhz_after": self.sm_clock_mhz_after,
                "temperature_c_before": self.temperature_c_before, "temperature_c_after": self.temperature_c_after,
                "sm_clock_mhz_max": self.sm_clock_mhz_max, "throttle_reasons": list(self.throttle_reasons),
                "clock_fell": self.clock_fell}

    @classmethod
    def from_dict(cls, d: dict) -> ClockRecord | None:
        """None when the row has no clock readings (files from before clocks were recorded, or no NVML)."""
        if d.get("sm_clock_mhz_before") is None or d.get("sm_clock_mhz_after") is None:
            return None
        try:
            before, after = cells.real(d["sm_clock_mhz_before"]), cells.real(d["sm_clock_mhz_after"])
        except cells.CellError as exc:  # the caller names the file and variant for a ValueError
            raise ValueError(f"a clock reading {exc}") from None
        return cls(before, after, d.get("temperature_c_before"),
                   d.get("temperature_c_after"), d.get("sm_clock_mhz_max"),
                   tuple(str(r) for r in d.get("throttle_reasons") or ()))


def empty_dict() -> dict:
    return {"sm_clock_mhz_before": None, "sm_clock_mhz_after": None, "temperature_c_before": None,
            "temperature_c_after": None, "sm_clock_mhz_max": None, "throttle_reasons": [], "clock_fell": None}
