"""Typed outcomes of one configuration: what compiling it gave, what measuring it gave, and the cached record."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

INVALID = "invalid"  # rejected by the spec's constraints (never compiled) or by the launch
COMPILE_ERROR = "compile_error"
FAILED_VERIFICATION = "failed_verification"
ERROR = "error"  # a CUDA error at launch, a worker that died twice, ...
TIMED = "timed"
STATUSES = (INVALID, COMPILE_ERROR, FAILED_VERIFICATION, ERROR, TIMED)


def first_line(text: str, prefer: str = "error") -> str:
    """The line of a compiler log worth showing: the first one that mentions `prefer`, else the first non-empty."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    for ln in lines:
        if prefer in ln.lower():
            return ln[:300]
    return lines[0][:300] if lines else ""


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    message: str = ""  # the log's first line when not ok
    info: dict[str, Any] = field(default_factory=dict)  # registers, shared memory, ... (picklable, JSON-able)
    seconds: float = 0.0


@dataclass(frozen=True)
class Outcome:
    """What a measurement callable returns: verified-then-timed, or why not."""

    status: str
    samples_ms: tuple[float, ...] = ()
    message: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown outcome status {self.status!r}")
        if self.status == TIMED and not self.samples_ms:
            raise ValueError("a timed outcome needs its samples")


def median(samples) -> float:
    return statistics.median(samples)


def spread(samples) -> float:
    """Interquartile range over the median, as gemmprof's Measurement reports it."""
    s = sorted(samples)
    if len(s) < 4:
        return (s[-1] - s[0]) / statistics.median(s)
    q = statistics.quantiles(s, n=4, method="inclusive")
    return (q[2] - q[0]) / statistics.median(s)


def quartiles(samples) -> tuple[float, float]:
    s = sorted(samples)
    if len(s) < 4:
        return s[0], s[-1]
    q = statistics.quantiles(s, n=4, method="inclusive")
    return q[0], q[2]


@dataclass(frozen=True)
class Record:
    """One configuration's line in the cache."""

    params: dict[str, int]
    status: str
    message: str = ""
    samples_ms: tuple[float, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)
    worker: str = ""

    @property
    def median_ms(self) -> float | None:
        return median(self.samples_ms) if self.status == TIMED else None

    def tflops(self, flops: int) -> float | None:
        m = self.median_ms
        return flops / (m * 1e-3) / 1e12 if m else None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"params": dict(self.params), "status": self.status}
        if self.message:
            d["message"] = self.message
        if self.samples_ms:
            d["samples_ms"] = list(self.samples_ms)
        if self.info:
            d["info"] = dict(self.info)
        if self.worker:
            d["worker"] = self.worker
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "record") -> Record:
        """A record as the cache holds it; a missing or mistyped field is an InputError naming `where`."""
        from gemmprof.errors import InputError
        from gemmprof.results.fields import Fields

        f = Fields(d, where)
        status = f.name("status")
        if status not in STATUSES:
            raise InputError(f"{where}.status: {status[:40]!r} is not one of {', '.join(STATUSES)}")
        params = f.ints("params")
        if not params:
            raise InputError(f"{where}.params: expected an object of integers, got none")
        samples = f.times("samples_ms") if d.get("samples_ms") else ()
        return cls(params=params, status=status, message=f.str("message", "") or "",
                   samples_ms=samples, info=f.mapping("info") or {}, worker=f.str("worker", "") or "")

    @classmethod
    def from_outcome(cls, params, outcome: Outcome, compiled: CompileOutcome | None = None, worker: str = ""):
        info = {**(compiled.info if compiled else {}), **outcome.info}
        if compiled is not None and compiled.seconds:
            info.setdefault("compile_s", round(compiled.seconds, 3))
        return cls(dict(params), outcome.status, outcome.message, tuple(outcome.samples_ms), info, worker)
