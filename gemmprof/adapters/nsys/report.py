"""Nsight Systems reports in, typed kernel statistics out, compared side by side.

Readers: SQLite exports (nsys_sqlite), .nsys-rep through `nsys export`, and the `nsys stats` CSV and the text tables
`nsys profile --stats=true` prints (nsys_text). `profile_live` runs `gemmprof run` under `nsys profile`.
gemmprof.adapters.nsys.compare turns reports into rows with speedups and TFLOP/s; gemmprof.render.nsys_tables renders them.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gemmprof.errors import InputError, ToolNotFoundError
from gemmprof.measure import nvtx
from gemmprof.model.traffic import GemmShape

NSYS_PLACES = "/opt/nvidia/nsight-systems/<version>/bin or inside Nsight Compute's host/target-linux-x64"
NSYS_HINT = "the .sqlite, .csv and text inputs still work"
REPORT_SUFFIXES = {".nsys-rep": "nsys-rep", ".qdrep": "nsys-rep", ".sqlite": "sqlite", ".sqlite3": "sqlite",
                   ".db": "sqlite", ".csv": "csv", ".txt": "text", ".log": "text", ".out": "text"}
SQLITE_MAGIC = b"SQLite format 3\x00"


class ReportError(InputError):
    """An Nsight Systems report that cannot be read: truncated, not a report, or without kernels."""


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


def is_gemmprof_range(text: str) -> bool:
    return parse_range(text) is not None


def parse_range(text: str | None):
    if not text:
        return None
    try:
        return nvtx.parse_range_name(text)
    except InputError:  # "gemmprof x 0x4x4": not a shape
        return None


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


# reading files ------------------------------------------------------------------------------------------------

def detect_format(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head == SQLITE_MAGIC:
        return "sqlite"
    name = path.name.lower()
    for suffix, fmt in REPORT_SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    return "text"


def load_report(path: str | os.PathLike) -> NsysReport:
    """Read one report; every failure is a ReportError (or ToolNotFoundError) naming the file."""
    label = str(path)
    path = Path(path)
    fmt = detect_format(path)
    if fmt == "sqlite":
        from gemmprof.adapters.nsys.sqlite import read_sqlite

        return read_sqlite(path, label)
    if fmt == "nsys-rep":
        return _read_nsys_rep(path, label)
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise ReportError(f"{label}: cannot read ({exc.strerror or exc})") from None
    from gemmprof.adapters.nsys.text import parse_stats

    return parse_stats(text, label, fmt)


# running nsys -------------------------------------------------------------------------------------------------

def find_nsys() -> str:
    found = shutil.which("nsys")
    if not found:
        raise ToolNotFoundError("nsys", NSYS_PLACES, NSYS_HINT)
    return found


def _run(cmd: list[str], env=None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env)
    except OSError as exc:
        raise ToolNotFoundError("nsys", NSYS_PLACES, f"{cmd[0]} could not be started ({exc.strerror or exc})") from None


def _tail(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (proc.stderr or proc.stdout or "").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no message"


def export_command(nsys: str, report: Path, sqlite_path: Path) -> list[str]:
    return [nsys, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(sqlite_path), str(report)]


def _read_nsys_rep(path: Path, label: str) -> NsysReport:
    if not path.is_file():
        raise ReportError(f"{label}: cannot read (no such file)")
    nsys = find_nsys()
    with tempfile.TemporaryDirectory(prefix="gemmprof-nsys-") as tmp:
        out = Path(tmp) / (path.stem + ".sqlite")
        proc = _run(export_command(nsys, path, out))
        if proc.returncode != 0 or not out.exists():
            raise ReportError(f"{label}: nsys export failed (exit {proc.returncode}): {_tail(proc)}")
        from gemmprof.adapters.nsys.sqlite import read_sqlite

        return read_sqlite(out, label, "nsys-rep")


def profile_command(nsys: str, prefix: Path, variants, shape: GemmShape, no_cublas: bool) -> list[str]:
    """nsys profile around a child `gemmprof run`: CUDA and NVTX only, no CPU sampling, exported to SQLite."""
    child = [sys.executable, "-m", "gemmprof", "run", *variants, "-m", str(shape.M), "-n", str(shape.N),
             "-k", str(shape.K)]
    if no_cublas:
        child.append("--no-cublas")
    return [nsys, "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--export=sqlite",
            "--force-overwrite=true", "-o", str(prefix), *child]


def profile_live(variants, shape: GemmShape, *, no_cublas: bool = False, save_prefix=None) -> NsysReport:
    """Profile `gemmprof run VARIANTS` under nsys and read the SQLite export it writes."""
    nsys = find_nsys()
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # so the child imports this gemmprof
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    with tempfile.TemporaryDirectory(prefix="gemmprof-nsys-") as tmp:
        prefix = Path(str(save_prefix).removesuffix(".nsys-rep").removesuffix(".sqlite")) if save_prefix \
            else Path(tmp) / "gemmprof"
        sqlite_path = prefix.with_name(prefix.name + ".sqlite")
        try:
            prefix.parent.mkdir(parents=True, exist_ok=True)
            sqlite_path.unlink(missing_ok=True)  # never read an export left by an earlier run
        except OSError as exc:
            raise InputError(f"--save-report: cannot write {sqlite_path} ({exc.strerror or exc})") from None
        proc = _run(profile_command(nsys, prefix, variants, shape, no_cublas), env=env)
        if not sqlite_path.exists():
            raise ReportError(f"nsys profile wrote no SQLite export (exit {proc.returncode}): {_tail(proc)}")
        from gemmprof.adapters.nsys.sqlite import read_sqlite

        label = str(prefix.with_name(prefix.name + ".nsys-rep")) if save_prefix else "live"
        report = read_sqlite(sqlite_path, label, "live")
    if proc.returncode != 0:
        report.problem = f"gemmprof run under nsys exited with status {proc.returncode}: {_tail(proc)}"
    return report


# comparing ----------------------------------------------------------------------------------------------------
