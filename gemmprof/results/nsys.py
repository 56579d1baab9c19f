"""Nsight Systems records: kernel launches, per-kernel statistics, API calls and memory operations of one report.

The readers in gemmprof.adapters.nsys fill these; gemmprof.adapters.nsys.compare and the renderers consume them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Launch:
    """One kernel execution from a SQLite export; times in ns."""

    name: str
    start_ns: int
    end_ns: int
    range: str | None = None  # the innermost NVTX range around its launch call
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers: int | None = None
    static_smem: int | None = None
    dynamic_smem: int | None = None

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class KernelStats:
    """The launches of one kernel (in one NVTX range, when grouped by range); times in ns."""

    name: str  # as the report gives it: demangled, with template arguments and parameters
    instances: int
    total_ns: float
    avg_ns: float
    med_ns: float | None = None
    min_ns: float | None = None
    max_ns: float | None = None
    stddev_ns: float | None = None  # sample standard deviation, as nsys prints it
    range: str | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers: int | None = None
    static_smem: int | None = None
    dynamic_smem: int | None = None
    first_start_ns: float | None = None


@dataclass(frozen=True)
class ApiCall:
    name: str
    calls: int
    total_ns: float


@dataclass(frozen=True)
class MemOp:
    operation: str  # "memcpy HtoD", "memcpy DtoH", "memset", ...
    count: int
    total_ns: float | None
    bytes: float | None


@dataclass
class NsysReport:
    path: str  # as the user named it
    format: str  # sqlite | nsys-rep | csv | text | live
    launches: list[Launch] | None = None  # SQLite exports: every launch
    summary: list[KernelStats] | None = None  # text and CSV: nsys's own per-kernel summary
    range_names: list[str] = field(default_factory=list)
    api: list[ApiCall] = field(default_factory=list)
    memops: list[MemOp] = field(default_factory=list)
    gpu_name: str | None = None
    nsys_version: str | None = None
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # e.g. the profiled program failed: reported, and the exit status is non-zero

    @property
    def has_ranges(self) -> bool:
        return any(la.range for la in self.launches or ())

    def kernels(self, by_range: bool) -> list[KernelStats]:
        if self.launches is None:
            return list(self.summary or [])
        return aggregate(self.launches, by_range)


def _same(values):
    first = values[0]
    return first if all(v == first for v in values) else None


def aggregate(launches: list[Launch], by_range: bool) -> list[KernelStats]:
    """Per (range, kernel, grid, block) when by_range, else per (kernel, grid, block), as nsys's gpukernsum groups."""
    groups: dict[tuple, list[Launch]] = {}
    for la in launches:
        groups.setdefault((la.range if by_range else None, la.name, la.grid, la.block), []).append(la)
    out = []
    for (rng, name, grid, block), items in groups.items():
        d = [la.duration_ns for la in items]
        out.append(KernelStats(
            name=name, instances=len(d), total_ns=sum(d), avg_ns=sum(d) / len(d), med_ns=statistics.median(d),
            min_ns=min(d), max_ns=max(d), stddev_ns=statistics.stdev(d) if len(d) > 1 else 0.0, range=rng,
            grid=grid, block=block, registers=_same([la.registers for la in items]),
            static_smem=_same([la.static_smem for la in items]), dynamic_smem=_same([la.dynamic_smem for la in items]),
            first_start_ns=items[0].start_ns))
    return out
