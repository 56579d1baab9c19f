"""Nsight Systems reports in, typed kernel statistics out, compared side by side.

Readers: SQLite exports (sqlite.py), .nsys-rep through `nsys export`, and the `nsys stats` CSV and the text tables
`nsys profile --stats=true` prints (text.py); the records they fill live in gemmprof.results.nsys. `profile_live` runs `gemmprof run` under `nsys profile`.
gemmprof.adapters.nsys.compare turns reports into rows with speedups and TFLOP/s; gemmprof.render.nsys_tables renders them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from gemmprof.adapters.nsys.errors import ReportError
from gemmprof.adapters.nsys.sqlite import read_sqlite
from gemmprof.adapters.nsys.text import parse_stats
from gemmprof.errors import InputError, ToolNotFoundError
from gemmprof.measure.child import ChildRun
from gemmprof.model.traffic import GemmShape
from gemmprof.results.files import read_text, unpacked_name
from gemmprof.results.nsys import NsysReport

NSYS_PLACES = "/opt/nvidia/nsight-systems/<version>/bin or inside Nsight Compute's host/target-linux-x64"
NSYS_HINT = "the .sqlite, .csv and text inputs still work"
REPORT_SUFFIXES = {".nsys-rep": "nsys-rep", ".qdrep": "nsys-rep", ".sqlite": "sqlite", ".sqlite3": "sqlite",
                   ".db": "sqlite", ".csv": "csv", ".txt": "text", ".log": "text", ".out": "text"}
SQLITE_MAGIC = b"SQLite format 3\x00"


# reading files ------------------------------------------------------------------------------------------------

def detect_format(path: Path) -> str:
    from gemmprof.results.files import not_a_file

    why = not_a_file(path)  # a FIFO would block the open below until something writes to it
    if why:
        raise ReportError(f"{path}: {why}" if why.startswith("is") else f"{path}: cannot read ({why})")
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise ReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if head == SQLITE_MAGIC:
        return "sqlite"
    name = unpacked_name(path).lower()  # stats.csv.gz holds stats.csv
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
        return read_sqlite(path, label)
    if fmt == "nsys-rep":
        return _read_nsys_rep(path, label)
    try:
        text = read_text(path, "nsys report")
    except InputError as exc:
        raise ReportError(str(exc).replace(str(path), label, 1)) from None
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
        return read_sqlite(out, label, "nsys-rep")


def profile_command(nsys: str, prefix: Path, variants, shape: GemmShape, no_cublas: bool,
                    dtype: str | None = None) -> list[str]:
    """nsys profile around a child `gemmprof run`: CUDA and NVTX only, no CPU sampling, exported to SQLite.
    dtype "bf16" has the child build the rungs whose source also serves bf16 (h4-h13) for it."""
    child = ChildRun(tuple(variants), shape, no_cublas=no_cublas, dtype=dtype if dtype == "bf16" else None).argv()
    return [nsys, "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--export=sqlite",
            "--force-overwrite=true", "-o", str(prefix), *child]


def profile_live(variants, shape: GemmShape, *, no_cublas: bool = False, save_prefix=None,
                 dtype: str | None = None) -> NsysReport:
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
        proc = _run(profile_command(nsys, prefix, variants, shape, no_cublas, dtype), env=env)
        if not sqlite_path.exists():
            raise ReportError(f"nsys profile wrote no SQLite export (exit {proc.returncode}): {_tail(proc)}")
        label = str(prefix.with_name(prefix.name + ".nsys-rep")) if save_prefix else "live"
        report = read_sqlite(sqlite_path, label, "live")
    if proc.returncode != 0:
        report.problem = f"gemmprof run under nsys exited with status {proc.returncode}: {_tail(proc)}"
    return report


