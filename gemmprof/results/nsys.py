"""Nsight Systems records: kernel launches, per-kernel statistics, API calls and memory operations of one report.

The readers in gemmprof.adapters.nsys fill these; gemmprof.adapters.nsys.compare and the renderers consume them.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

from gemmprof.errors import InputError
from gemmprof.results import cells
from gemmprof.results.fields import Fields, check_keys
from gemmprof.results.files import load_json, save_json
from gemmprof.results.shape import GemmShape

COMPARE_KIND = "gemmprof.nsys-compare"  # what `gemmprof compare-nsys -o FILE.json` writes
COMPARE_SCHEMA = 1


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


@dataclass
class CompareRow:
    """One kernel (per NVTX range, when grouped by range) of one report, with the figures compare-nsys adds."""
    input: str
    stats: KernelStats
    variant: str | None = None  # from a "gemmprof VARIANT MxNxK" range
    shape: GemmShape | None = None
    gpu_time_pct: float | None = None  # of all kernel time in its report
    baseline: bool = False
    speedup: float | None = None  # baseline's average time over this row's
    dtype: str | None = None
    flops: int | None = None
    tflops: float | None = None  # at the average time
    peak_tflops: float | None = None
    pct_of_peak: float | None = None

    def to_dict(self) -> dict:
        s = self.stats
        return {"input": self.input, "range": s.range, "variant": self.variant,
                "shape": self.shape.label if self.shape else None, "kernel": s.name, "instances": s.instances,
                "total_ns": s.total_ns, "avg_ns": s.avg_ns, "med_ns": s.med_ns, "min_ns": s.min_ns,
                "max_ns": s.max_ns, "stddev_ns": s.stddev_ns, "grid": s.grid, "block": s.block,
                "registers": s.registers, "static_smem_bytes": s.static_smem, "dynamic_smem_bytes": s.dynamic_smem,
                "gpu_time_pct": self.gpu_time_pct, "baseline": self.baseline, "speedup": self.speedup,
                "dtype": self.dtype, "flops": self.flops, "tflops": self.tflops, "peak_tflops": self.peak_tflops,
                "pct_of_peak": self.pct_of_peak}

    @classmethod
    def from_dict(cls, d, where: str) -> CompareRow:
        f = Fields(d, where)
        check_keys(d, where, _ROW_KEYS)
        shape = f.str("shape")
        if shape:
            try:
                dims = cells.integers(shape, minimum=1) if re.fullmatch(r"[0-9]+x[0-9]+x[0-9]+", shape) else ()
            except cells.CellError:
                dims = ()
            if len(dims) != 3:
                f._bad("shape", "a shape MxNxK")
            shape = GemmShape(*dims)
        stats = KernelStats(name=f.name("kernel"), instances=f.int("instances", 0), total_ns=f.num("total_ns", 0) or 0.0,
                            avg_ns=f.num("avg_ns", 0) or 0.0, med_ns=f.num("med_ns", 0), min_ns=f.num("min_ns", 0),
                            max_ns=f.num("max_ns", 0), stddev_ns=f.num("stddev_ns", 0), range=f.str("range"),
                            grid=_dims(f, "grid"), block=_dims(f, "block"), registers=f.int("registers"),
                            static_smem=f.int("static_smem_bytes"), dynamic_smem=f.int("dynamic_smem_bytes"))
        baseline = d.get("baseline", False)
        if not isinstance(baseline, bool):
            f._bad("baseline", "true or false")
        return cls(input=f.str("input") or "", stats=stats, variant=f.str("variant"), shape=shape,
                   gpu_time_pct=f.num("gpu_time_pct", 0), baseline=baseline, speedup=f.num("speedup", 0),
                   dtype=f.str("dtype"), flops=f.int("flops"), tflops=f.num("tflops", 0),
                   peak_tflops=f.num("peak_tflops", 0), pct_of_peak=f.num("pct_of_peak", 0))


_ROW_KEYS = set(CompareRow(input="", stats=KernelStats("", 0, 0.0, 0.0)).to_dict())


def _dims(f: Fields, key: str) -> tuple[int, int, int] | None:
    v = f.d.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                                         for x in v):
        f._bad(key, "three whole numbers")
    return tuple(v)


@dataclass
class Comparison:
    """`gemmprof compare-nsys`: the kernels of one or more reports side by side; saved with -o FILE.json and loaded
    back (gemmprof.load, `gemmprof show`, `compare-nsys --from`) as the same type."""
    rows: list[CompareRow]
    inputs: list[dict]  # per report: path, format, GPU, nsys version, profile, grouping, baseline, error
    activity: list[dict]  # CUDA API time by category and GPU memory operations, per report
    notes: list[str] = field(default_factory=list)
    title: str = "Nsight Systems kernels"

    def to_dict(self) -> dict:
        """The document `compare-nsys -o FILE.json` writes: its table's JSON (title, columns, rows, notes) with the
        kind, the reports and the API/memory summary beside the rows."""
        return {"title": self.title, "kind": COMPARE_KIND, "schema": COMPARE_SCHEMA, "inputs": self.inputs,
                "activity": self.activity, "rows": [r.to_dict() for r in self.rows], "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, doc, source: str = "comparison") -> Comparison:
        if not isinstance(doc, dict) or doc.get("kind") != COMPARE_KIND:
            raise InputError(f"{source}: not a saved `gemmprof compare-nsys` (kind is "
                             f"{doc.get('kind') if isinstance(doc, dict) else None!r})")
        f = Fields(doc, source)
        check_keys(doc, source, {"title", "kind", "schema", "inputs", "activity", "columns", "rows", "notes"})
        for key in ("rows", "inputs", "activity"):
            if not isinstance(doc.get(key, []), list) or not all(isinstance(x, dict) for x in doc.get(key, [])):
                f._bad(key, "a list of objects")
        rows = [CompareRow.from_dict(r, f"{source}: rows[{i}]") for i, r in enumerate(doc.get("rows", []))]
        return cls(rows, list(doc.get("inputs", [])), list(doc.get("activity", [])), f.strs("notes"),
                   f.str("title") or "Nsight Systems kernels")

    def save(self, path) -> None:
        save_json(path, self.to_dict())

    @classmethod
    def load(cls, path) -> Comparison:
        return cls.from_dict(load_json(path), str(path))
