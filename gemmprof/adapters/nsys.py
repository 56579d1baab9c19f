"""Nsight Systems reports in, typed kernel statistics out, compared side by side.

Readers: SQLite exports (nsys_sqlite), .nsys-rep through `nsys export`, and the `nsys stats` CSV and the text tables
`nsys profile --stats=true` prints (nsys_text). `profile_live` runs `gemmprof run` under `nsys profile`. `compare`
turns reports into rows (per NVTX range or per kernel) with speedups and TFLOP/s; `tables` renders them.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from gemmprof import nvtx
from gemmprof.errors import GemmprofError, InputError, ProfileError, ToolNotFoundError
from gemmprof.model import GemmShape, gemm_flops, get_dtype, tflops

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
    return _parse_range(text) is not None


def _parse_range(text: str | None):
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
        from gemmprof.adapters.nsys_sqlite import read_sqlite

        return read_sqlite(path, label)
    if fmt == "nsys-rep":
        return _read_nsys_rep(path, label)
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise ReportError(f"{label}: cannot read ({exc.strerror or exc})") from None
    from gemmprof.adapters.nsys_text import parse_stats

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
        from gemmprof.adapters.nsys_sqlite import read_sqlite

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
        from gemmprof.adapters.nsys_sqlite import read_sqlite

        label = str(prefix.with_name(prefix.name + ".nsys-rep")) if save_prefix else "live"
        report = read_sqlite(sqlite_path, label, "live")
    if proc.returncode != 0:
        report.problem = f"gemmprof run under nsys exited with status {proc.returncode}: {_tail(proc)}"
    return report


# comparing ----------------------------------------------------------------------------------------------------

_CUBLAS_KERNEL = re.compile(r"cublas|cutlass|xmma|(^|\s)(sm\d+|ampere|volta|turing|maxwell|kepler|hopper|ada|blackwell)_",
                            re.IGNORECASE)
_TEMPLATE_WORD = re.compile(r"^[\w:]+$")


def looks_like_cublas_gemm(name: str) -> bool:
    """cuBLAS's own GEMM kernels: sm80_xmma_gemm_..., ampere_sgemm_..., cutlass::Kernel2<cutlass_80_simt_sgemm_...>."""
    return "gemm" in name.lower() and bool(_CUBLAS_KERNEL.search(name))


def short_kernel_name(name: str, width: int = 64) -> str:
    """For display: drop the return type and parameters; past `width`, elide template arguments, then cut.

    "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)" keeps its one template word;
    "void gen_sequenced<curandStateXORWOW, float, ...>(T1 *, ...)" becomes "gen_sequenced<…>".
    """
    depth, cut, space = 0, len(name), -1
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0 and ch == "(" and i > 0 and not name.startswith("(anonymous namespace)", i):
            cut = i
            break
        elif depth == 0 and ch == " ":
            space = i
    head = name[space + 1:cut].strip() or name.strip()
    if len(head) <= width:
        return head
    out, depth, start = [], 0, 0
    for i, ch in enumerate(head):
        if ch == "<":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
            if depth == 0:
                inner = head[start + 1:i]
                out.append(f"<{inner}>" if _TEMPLATE_WORD.match(inner) else "<…>")
        elif depth == 0:
            out.append(ch)
    if depth:  # nsys cut the name inside a template argument list
        out.append("<…>")
    short = "".join(out)
    return short if len(short) <= width else short[:width - 1] + "…"


@dataclass
class CompareRow:
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

    @property
    def label(self) -> str:
        return self.variant or self.stats.range or short_kernel_name(self.stats.name)

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


@dataclass
class Comparison:
    rows: list[CompareRow]
    inputs: list[dict]  # per report: path, format, GPU, nsys version, profile, grouping, baseline, error
    activity: list[dict]  # CUDA API time by category and GPU memory operations, per report
    notes: list[str] = field(default_factory=list)


_API_CATEGORIES = (("launch", ("launch",)), ("synchronize", ("synchronize",)), ("memcpy/memset", ("memcpy", "memset")),
                   ("alloc/free", ("malloc", "free", "alloc")),
                   ("module load", ("moduleload", "libraryload", "getfunction", "unload")))


def api_category(name: str) -> str:
    low = name.lower()
    return next((cat for cat, words in _API_CATEGORIES if any(w in low for w in words)), "other")


def _variant_dtype(variant: str) -> str:
    """The dtype of a cuBLAS baseline or ladder rung by name; fp32 when unknown."""
    try:
        from gemmprof.baselines import BASELINES
        from gemmprof.spec import ladder

        if variant in BASELINES:
            return BASELINES[variant].dtype
        return next((s.dtype for s in ladder() if s.name == variant), "fp32")
    except (GemmprofError, ImportError):
        return "fp32"


def _profile_for(report: NsysReport, explicit):
    """The profile of the GPU the report names; else --gpu/--profile; else H100 SXM as elsewhere; else None."""
    from gemmprof import profiles

    try:
        own = profiles.profile_for_device_name(report.gpu_name) if report.gpu_name else None
        return own or explicit or (None if report.gpu_name else profiles.get_profile("h100"))
    except ProfileError:
        return explicit


def _match(row: CompareRow, needle: str) -> int:
    fields = [row.variant, row.stats.range, row.stats.name, short_kernel_name(row.stats.name)]
    if needle in fields:
        return 2
    return 1 if any(f and needle.lower() in f.lower() for f in fields) else 0


def _baselines(rows: list[CompareRow], wanted: str | None) -> dict[str | None, CompareRow]:
    """Baseline rows of one report, keyed by dtype (None: for every row)."""
    def biggest(cands):
        return max(cands, key=lambda r: r.stats.total_ns) if cands else None

    if wanted:
        scores = [(_match(r, wanted), r) for r in rows]
        best = max((s for s, _ in scores), default=0)
        found = biggest([r for s, r in scores if s == best and s > 0])
        return {None: found} if found else {}
    cublas = [r for r in rows if r.variant and r.variant.startswith("cublas")]
    if cublas:
        by_dtype = {}
        for r in sorted(cublas, key=lambda r: -r.stats.total_ns):
            by_dtype.setdefault(r.dtype, r)
        by_dtype[None] = by_dtype.get("fp32") or biggest(cublas)
        return by_dtype
    found = biggest([r for r in rows if looks_like_cublas_gemm(r.stats.name)])
    return {None: found} if found else {}


@dataclass
class _Part:
    """One report's share of a comparison."""

    report: NsysReport
    rows: list[CompareRow]
    bases: dict[str | None, CompareRow]
    profile: object
    by_range: bool


def compare(reports: list[NsysReport], *, baseline: str | None = None, shape: GemmShape | None = None,
            dtype: str | None = None, profile=None, group_by: str = "auto",
            failed: dict[str, str] | None = None) -> Comparison:
    """Rows per NVTX range (or kernel) per report, with speedup against a baseline and TFLOP/s where the shape is known.

    Speedups are against the baseline row of the same report (per dtype for gemmprof's cublas_* ranges); a report
    without one uses the first report's. `failed` names inputs that could not be read, for the record.
    """
    notes: list[str] = []
    parts = []
    for rep in reports:
        by_range = group_by != "kernel" and rep.has_ranges
        if group_by == "range" and not rep.has_ranges:
            notes.append(f"{rep.path}: no kernel was launched inside an NVTX range; grouped by kernel name")
        prof = _profile_for(rep, profile)
        if profile is not None and prof is not profile:
            notes.append(f"{rep.path}: peaks of its own GPU ({prof.name}), not of --gpu/--profile")
        rows = _rows(rep, by_range, shape, dtype, prof, notes)
        if prof is None and any(r.shape for r in rows):
            notes.append(f"{rep.path}: no GPU profile for {rep.gpu_name or 'its GPU'}: no % of peak "
                         "(pass --gpu or --profile)")
        parts.append(_Part(rep, rows, _baselines(rows, baseline), prof, by_range))
    fallback = next((p.bases[None] for p in parts if p.bases.get(None)), None)
    if baseline and fallback is None:
        labels = sorted({r.label for p in parts for r in p.rows})
        raise InputError(f"--baseline: no row matches {baseline!r} (rows: {', '.join(labels)})")
    if fallback is None:
        notes.append("no cuBLAS row found (a gemmprof cublas_* range or a cuBLAS gemm kernel): no speedups; "
                     "pick a row with --baseline NAME")
    inputs = []
    for p in parts:
        if fallback is not None and not p.bases:
            notes.append(f"{p.report.path}: no baseline row of its own; speedups are against {fallback.label} "
                         f"in {fallback.input}")
        for row in p.rows:
            own = None if (row.variant or "").startswith("cublas") else p.bases.get(row.dtype)
            base = own or p.bases.get(None) or fallback
            if base is not None and row.stats.avg_ns:
                row.speedup = base.stats.avg_ns / row.stats.avg_ns
                base.baseline = True
        rep = p.report
        inputs.append({"input": rep.path, "format": rep.format, "gpu": rep.gpu_name, "nsys_version": rep.nsys_version,
                       "profile": p.profile.name if p.profile else None,
                       "grouped_by": "range" if p.by_range else "kernel",
                       "baseline": next((r.label for r in p.rows if r.baseline), None), "error": rep.problem})
        notes.extend(rep.notes)
    inputs += [{"input": path, "error": message} for path, message in (failed or {}).items()]
    return Comparison(_interleave(parts), inputs, _activity(reports), notes)


def _rows(rep: NsysReport, by_range: bool, shape, dtype, prof, notes: list[str]) -> list[CompareRow]:
    stats = rep.kernels(by_range)
    total = sum(s.total_ns for s in stats)
    if by_range:
        outside = [s for s in stats if s.range is None]
        if outside:
            notes.append(f"{rep.path}: {sum(s.instances for s in outside)} launches outside NVTX ranges "
                         f"({sum(s.total_ns for s in outside) / 1e6:.3g} ms: setup, verification) are not shown; "
                         "--group-by kernel lists every kernel")
        stats = [s for s in stats if s.range is not None]
        ours = [s for s in stats if is_gemmprof_range(s.range)]
        if ours and len(ours) < len(stats):
            # a gemmprof run: its ranges are the comparison; CuPy's own (CCCL:cub::...) belong to verification
            others = [s for s in stats if not is_gemmprof_range(s.range)]
            notes.append(f"{rep.path}: {sum(s.instances for s in others)} launches in other NVTX ranges "
                         f"({', '.join(sorted({s.range for s in others}))}) are not shown; --group-by kernel lists all")
            stats = ours
        stats = sorted(stats, key=lambda s: (not is_gemmprof_range(s.range), s.first_start_ns or 0))
    else:
        stats = sorted(stats, key=lambda s: -s.total_ns)
    if any(is_gemmprof_range(s.range) for s in stats):
        shape = None  # gemmprof's ranges carry their shapes; -m/-n/-k would only mislabel other ranges' kernels
    rows = []
    for s in stats:
        variant, rshape = _parse_range(s.range) or (None, None)
        row = CompareRow(rep.path, s, variant=variant, shape=rshape or shape,
                         gpu_time_pct=100 * s.total_ns / total if total else None,
                         dtype=dtype or (_variant_dtype(variant) if variant else "fp32"))
        if row.shape:
            row.flops = gemm_flops(row.shape)
            row.tflops = tflops(row.flops, s.avg_ns * 1e-9)
            try:
                row.peak_tflops = prof.peak_flops(get_dtype(row.dtype).peak_kind) / 1e12 if prof else None
            except ProfileError:  # the profile gives no peak for this dtype
                row.peak_tflops = None
            if row.peak_tflops:
                row.pct_of_peak = 100 * row.tflops / row.peak_tflops
        rows.append(row)
    per_range: dict[str, set] = {}
    for row in rows:
        if row.stats.range:
            per_range.setdefault(row.stats.range, set()).add(row.stats.name)
    notes += [f"{rep.path}: range {rng!r} ran {len(names)} different kernels; each row's TFLOP/s counts the whole "
              "GEMM for that kernel alone" for rng, names in per_range.items() if len(names) > 1]
    return rows


def _interleave(parts: list[_Part]) -> list[CompareRow]:
    """Rows of the same range and kernel from every report next to each other, in first-seen order."""
    order: dict[tuple, int] = {}
    for p in parts:
        for r in p.rows:
            order.setdefault((r.label, r.stats.name), len(order))
    ranked = [(order[(r.label, r.stats.name)], i, j, r) for i, p in enumerate(parts) for j, r in enumerate(p.rows)]
    return [r for *_, r in sorted(ranked, key=lambda t: t[:3])]


def _activity(reports: list[NsysReport]) -> list[dict]:
    out = []
    for rep in reports:
        cats: dict[str, list] = {}
        for call in rep.api:
            acc = cats.setdefault(api_category(call.name), [0, 0, []])
            acc[0] += call.calls
            acc[1] += call.total_ns
            acc[2].append(call.name)
        api_total = sum(c[1] for c in cats.values())
        order = [c for c, _ in _API_CATEGORIES] + ["other"]
        for cat in sorted(cats, key=order.index):
            calls, total, names = cats[cat]
            out.append({"input": rep.path, "source": "CUDA API", "category": cat, "calls": calls, "total_ns": total,
                        "avg_ns": total / calls if calls else None,
                        "share_pct": 100 * total / api_total if api_total else None, "bytes": None,
                        "names": sorted(names)})
        ops_total = sum(op.total_ns or 0 for op in rep.memops)
        for op in rep.memops:
            out.append({"input": rep.path, "source": "GPU memory", "category": op.operation, "calls": op.count,
                        "total_ns": op.total_ns, "avg_ns": op.total_ns / op.count if op.total_ns and op.count else None,
                        "share_pct": 100 * op.total_ns / ops_total if op.total_ns and ops_total else None,
                        "bytes": op.bytes, "names": []})
    return out


# rendering ----------------------------------------------------------------------------------------------------

KIND = "gemmprof.nsys-compare"
SCHEMA_VERSION = 1
_MS = ("total", "avg", "med", "min", "max", "stddev")
_DATA_COLUMNS = ("input", "range", "variant", "shape", "kernel", "instances", *(f"{k}_ns" for k in _MS), "grid",
                 "block", "registers", "static_smem_bytes", "dynamic_smem_bytes", "gpu_time_pct", "baseline",
                 "speedup", "dtype", "flops", "tflops", "peak_tflops", "pct_of_peak")


def tables(cmp: Comparison, fmt: str) -> list:
    """For JSON and CSV one table of raw figures (full kernel names, ns) with the reports and the CUDA API/memory
    summary in its metadata; for the terminal, times, launch configuration and the API/memory summary (ms, µs)."""
    from gemmprof.render import Column, Table

    title = "Nsight Systems kernels" + (f" from {len(cmp.inputs)} reports" if len(cmp.inputs) > 1 else "")
    if fmt != "table":
        meta = {"kind": KIND, "schema": SCHEMA_VERSION, "inputs": cmp.inputs, "activity": cmp.activity}
        cols = [Column(k, k.removesuffix("_ns"), "ns" if k.endswith("_ns") else "") for k in _DATA_COLUMNS]
        return [Table(title, cols, [r.to_dict() for r in cmp.rows], list(cmp.notes), meta)]
    tags = _input_tags(cmp)
    shapes = {r.shape.label if r.shape else None for r in cmp.rows}
    if len(shapes) == 1 and None not in shapes:
        title += f" at {shapes.pop()}"
    rows = []
    for r in cmp.rows:
        s = r.stats
        smem = None if s.static_smem is None and s.dynamic_smem is None else (s.static_smem or 0) + (s.dynamic_smem or 0)
        rows.append({
            "input": tags.get(r.input), "group": r.variant or s.range, "kernel": short_kernel_name(s.name, 40),
            "shape": r.shape.label if r.shape and " at " not in title else None, "instances": s.instances,
            **{f"{k}_ms": getattr(s, f"{k}_ns") / 1e6 if getattr(s, f"{k}_ns") is not None else None for k in _MS},
            "grid": _dims(s.grid), "block": _dims(s.block), "registers": s.registers, "smem": smem,
            "gpu_time_pct": r.gpu_time_pct, "tflops": r.tflops, "pct_of_peak": r.pct_of_peak,
            "speedup": None if r.speedup is None else f"{r.speedup:.3g}x" + (" base" if r.baseline else "")})
    which = [Column("input", "In", fmt="s"), Column("group", "Range", fmt="s"), Column("kernel", "Kernel", fmt="s")]
    times = which + [
        Column("shape", "Shape", fmt="s"), Column("instances", "Launches", fmt=","),
        Column("total_ms", "Total", "ms", ".4g"), Column("avg_ms", "Avg", "ms", ".4g"),
        Column("med_ms", "Med", "ms", ".4g"), Column("min_ms", "Min", "ms", ".4g"), Column("max_ms", "Max", "ms", ".4g"),
        Column("stddev_ms", "StdDev", "ms", ".2g"), Column("gpu_time_pct", "GPU", "%", ".1f"),
        Column("speedup", "Speedup"), Column("tflops", "TFLOP/s", fmt=".3g"), Column("pct_of_peak", "Peak", "%", ".1f")]
    launch = which + [Column("grid", "Grid"), Column("block", "Block"), Column("registers", "Registers"),
                      Column("smem", "Shared memory", "B", ",")]
    gpus = {i["input"]: i.get("gpu") for i in cmp.inputs}
    legend = [f"{tag} {path}" + (f" ({gpus[path]})" if gpus.get(path) else "") for path, tag in tags.items()]
    out = [Table(title, _used(times, rows), rows, legend + list(cmp.notes))]
    if any(r[k] is not None for r in rows for k in ("grid", "block", "registers", "smem")):
        out.append(Table("Launch configuration", _used(launch, rows), rows))
    if cmp.activity:
        act = [{**a, "input": tags.get(a["input"]), "total_ms": _scaled(a["total_ns"], 1e6),
                "avg_us": _scaled(a["avg_ns"], 1e3), "mb": _scaled(a["bytes"], 1e6)} for a in cmp.activity]
        cols = [Column("input", "In", fmt="s"), Column("source", "Source", fmt="s"),
                Column("category", "Category", fmt="s"), Column("calls", "Calls", fmt=","),
                Column("total_ms", "Total", "ms", ".4g"), Column("avg_us", "Avg", "µs", ".4g"),
                Column("share_pct", "Share", "%", ".1f"), Column("mb", "Size", "MB", ".4g")]
        out.append(Table("CUDA API time and GPU memory operations", _used(cols, act), act))
    return out


def _used(cols, rows):
    return [c for c in cols if any(row.get(c.key) is not None for row in rows)]


def _scaled(value, unit):
    return None if value is None else value / unit


def _dims(triple) -> str | None:
    """(128, 1, 1) -> "128", (32, 32, 1) -> "32x32": launch dimensions as people write them."""
    if triple is None:
        return None
    x, y, z = triple
    return str(x) if (y, z) == (1, 1) else f"{x}x{y}" if z == 1 else f"{x}x{y}x{z}"


def _input_tags(cmp: Comparison) -> dict[str, str]:
    """[1], [2], ... for the reports that gave rows, when there are several (a note under the table names them)."""
    paths = list(dict.fromkeys(r.input for r in cmp.rows))
    return {p: f"[{n}]" for n, p in enumerate(paths, 1)} if len(paths) > 1 else {}
