"""What `gemmprof ceiling` measured on one device: per input dtype and timing regime, the best matmul throughput
of a small shape scan (cuBLAS), and the DRAM bandwidth of a large device-to-device copy (bytes read plus bytes
written); each with the SM clock held and the power drawn while it was timed (NVML), and every point of its scan.

Stored per device model by catalog/ceilings.py and read back as the same type; an unknown key is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmprof.errors import InputError
from gemmprof.results.fields import Fields, check_keys

UNITS = {"compute": "TFLOP/s", "memory": "GB/s"}
SCALE = {"compute": 1e12, "memory": 1e9}  # the unit in base units (FLOP/s, bytes/s)
KEYS = {"compute": ("fp32", "tf32", "fp16", "bf16"), "memory": ("dram",)}
REGIMES = ("burst", "sustained")
STATUSES = ("ok", "FAIL", "error", "rejected", "skipped")


@dataclass(frozen=True)
class ScanPoint:
    """One point of the scan: a GEMM shape (MxNxK) or the copy's size ("1024 MiB"), its figure in the
    ceiling's unit (None where it did not pass), and the conditions it was taken at."""

    what: str
    value: float | None
    median_ms: float | None = None
    spread: float | None = None  # IQR over the median of its timed calls
    held_mhz: float | None = None
    power_w: float | None = None
    warm_up: str = ""  # how the card was brought to the regime (WarmUpRecord.describe())
    status: str = "ok"
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "ok" and self.value is not None

    def to_dict(self) -> dict:
        return {"what": self.what, "value": self.value, "median_ms": self.median_ms, "spread": self.spread,
                "held_mhz": self.held_mhz, "power_w": self.power_w, "warm_up": self.warm_up,
                "status": self.status, "message": self.message}

    @classmethod
    def from_dict(cls, d: dict, where: str) -> ScanPoint:
        f = _strict(d, where, cls.__dataclass_fields__)
        status = f.name("status")
        if status not in STATUSES:
            raise InputError(f"{where}.status: expected one of {', '.join(STATUSES)}, got {status!r}")
        return cls(f.name("what"), f.num("value", 0), f.num("median_ms", 0), f.num("spread", 0), f.num("held_mhz", 0),
                   f.num("power_w", 0), f.str("warm_up", "") or "", status, f.str("message", "") or "")


@dataclass(frozen=True)
class MeasuredCeiling:
    """The best figure of one scan: `kind` compute (key: the input dtype, fp32 SIMT or tf32/fp16/bf16 tensor cores
    with fp32 accumulate) or memory (key: dram), in one regime (burst: a cold card's first calls; sustained: the
    card warmed until its clock and power settled). `value` is in `unit` (TFLOP/s or GB/s); the clock, power and
    warm-up are those of the best point."""

    kind: str
    key: str
    regime: str
    value: float
    where: str  # the scan point that gave the best figure (a shape, or the copy's size)
    source: str  # what was timed: a cuBLAS baseline's name, or the copy
    device: str  # the CUDA device name it was measured on
    measured_at: str  # ISO 8601, UTC
    held_mhz: float | None = None
    held_min_mhz: float | None = None
    held_max_mhz: float | None = None
    power_w: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    warm_up: str = ""
    fill: str = ""
    l2: str = ""
    gemmprof_version: str = ""
    driver: str = ""
    scan: tuple[ScanPoint, ...] = ()

    @property
    def unit(self) -> str:
        return UNITS[self.kind]

    @property
    def per_s(self) -> float:
        """FLOP/s (compute) or bytes/s (memory)."""
        return self.value * SCALE[self.kind]

    @property
    def ident(self) -> tuple[str, str, str]:
        return self.kind, self.key, self.regime

    def describe(self) -> str:
        """e.g. 'fp16 sustained 747.9 TFLOP/s (cublas_hgemm at 8192x8192x8192, held 1455 MHz, 688 W, 2026-11-28)'."""
        parts = [f"{self.source} {'of' if self.kind == 'memory' else 'at'} {self.where}"]
        if self.held_mhz:
            parts.append(f"held {self.held_mhz:.0f} MHz")
        if self.power_w:
            parts.append(f"{self.power_w:.0f} W")
        parts.append(self.measured_at[:10])
        return f"{self.key} {self.regime} {self.value:.1f} {self.unit} ({', '.join(parts)})"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "key": self.key, "regime": self.regime, "value": self.value, "unit": self.unit,
                "where": self.where, "source": self.source, "device": self.device, "measured_at": self.measured_at,
                "held_mhz": self.held_mhz, "held_min_mhz": self.held_min_mhz, "held_max_mhz": self.held_max_mhz,
                "power_w": self.power_w, "throttle_reasons": list(self.throttle_reasons), "warm_up": self.warm_up,
                "fill": self.fill, "l2": self.l2, "gemmprof_version": self.gemmprof_version, "driver": self.driver,
                "scan": [p.to_dict() for p in self.scan]}

    @classmethod
    def from_dict(cls, d: dict, where: str) -> MeasuredCeiling:
        f = _strict(d, where, {*cls.__dataclass_fields__, "unit"})
        kind = f.name("kind")
        if kind not in KEYS:
            raise InputError(f"{where}.kind: expected compute or memory, got {kind!r}")
        key, regime = f.name("key"), f.name("regime")
        if key not in KEYS[kind]:
            raise InputError(f"{where}.key: expected one of {', '.join(KEYS[kind])} for {kind}, got {key!r}")
        if regime not in REGIMES:
            raise InputError(f"{where}.regime: expected burst or sustained, got {regime!r}")
        if d.get("unit", UNITS[kind]) != UNITS[kind]:
            raise InputError(f"{where}.unit: a {kind} ceiling is in {UNITS[kind]}, got {d.get('unit')!r}")
        value = f.num("value", 0)
        if not value:
            raise InputError(f"{where}.value: expected a positive number, got {d.get('value')!r}")
        scan = d.get("scan") or []
        if not isinstance(scan, list):
            raise InputError(f"{where}.scan: expected a list of scan points")
        return cls(kind, key, regime, value, f.name("where"), f.name("source"), f.name("device"),
                   f.name("measured_at"), f.num("held_mhz", 0), f.num("held_min_mhz", 0), f.num("held_max_mhz", 0),
                   f.num("power_w", 0), tuple(f.strs("throttle_reasons")), f.str("warm_up", "") or "",
                   f.str("fill", "") or "", f.str("l2", "") or "", f.str("gemmprof_version", "") or "",
                   f.str("driver", "") or "",
                   tuple(ScanPoint.from_dict(p, f"{where}.scan[{i}]") for i, p in enumerate(scan)))


def best_of(points: list[ScanPoint]) -> ScanPoint | None:
    """The scan point with the highest figure among those that passed."""
    passed = [p for p in points if p.passed]
    return max(passed, key=lambda p: p.value) if passed else None


def _strict(d, where: str, known) -> Fields:
    f = Fields(d, where)
    check_keys(d, where, known)
    return f


@dataclass(frozen=True)
class CeilingScan:
    """One scan as measured (not stored): every point, and the ceiling where at least one point passed."""

    kind: str
    key: str
    regime: str
    source: str
    points: tuple[ScanPoint, ...]
    ceiling: MeasuredCeiling | None

    @property
    def failed(self) -> list[ScanPoint]:
        return [p for p in self.points if not p.passed]
