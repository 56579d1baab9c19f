"""Nsight Systems summary tables as text: `nsys profile --stats=true` / `nsys stats` output, and `nsys stats --format csv`.

Both print the same reports (cuda_gpu_kern_sum, older gpukernsum, cuda_api_sum, the memory reports); only the layout
differs. Headers change between versions ("Avg (ns)", "Average (ns)", "Average"; "Time (%)", "Time(%)"), so columns
are read by a normalised key with a unit scale, never by position.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from gemmprof.adapters.nsys.errors import ReportError
from gemmprof.results import cells
from gemmprof.results.nsys import ApiCall, KernelStats, MemOp, NsysReport

KERNELS, API, MEMTIME, MEMSIZE, NVTX = "kernels", "api", "memtime", "memsize", "nvtx"

# report names -> table kind; a table under any other report title (osrt_sum, nvtx_kern_sum, ...) is skipped
_REPORTS = {
    "cuda_gpu_kern_sum": KERNELS, "gpukernsum": KERNELS,
    "cuda_api_sum": API, "cudaapisum": API,
    "cuda_gpu_mem_time_sum": MEMTIME, "gpumemtimesum": MEMTIME,
    "cuda_gpu_mem_size_sum": MEMSIZE, "gpumemsizesum": MEMSIZE,
    "nvtx_sum": NVTX, "nvtxsum": NVTX, "nvtxppsum": NVTX,
}
_TITLE = re.compile(r"Executing '([\w:]+)' stats report|\*\*.*\((\w+)\):|with \[[^\]]*?(\w+)\.py\]")
_KEYS = {
    "time": "time_pct", "totaltime": "total", "total": "total",
    "instances": "count", "numcalls": "count", "calls": "count", "count": "count", "operations": "count",
    "avg": "avg", "average": "avg", "mean": "avg", "med": "med", "median": "med",
    "min": "min", "minimum": "min", "max": "max", "maximum": "max", "stddev": "stddev", "stdev": "stddev",
    "gridxyz": "grid", "blockxyz": "block", "name": "name", "kernelname": "name", "operation": "name",
    "range": "name", "style": "style",
}
_SCALES = {"ns": 1, "us": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9,
           "b": 1, "kb": 1e3, "kib": 1024, "mb": 1e6, "mib": 2**20, "gb": 1e9, "gib": 2**30}
_TRIPLES = ("grid", "block")
_TEXT = ("name", "style")
_NUMBERS = ("time_pct", "total", "count", "avg", "med", "min", "max", "stddev")


class StatsFormatError(ValueError):
    """A table row that cannot be read: the caller names the file."""


@dataclass
class StatsTable:
    kind: str
    headers: list[str]  # as printed
    rows: list[dict] = field(default_factory=list)  # normalised keys; times in ns, sizes in bytes
    line: int = 0  # 1-based line of the header


def _column(header: str) -> tuple[str, float]:
    """("Avg (ns)" -> ("avg", 1)), ("Total (MB)" -> ("total", 1e6)), ("Time(%)" -> ("time_pct", 1))."""
    m = re.match(r"^(.*?)\s*(?:\(([^)]*)\))?$", header.strip())
    base = re.sub(r"[\s_]", "", m[1]).lower()
    return _KEYS.get(base, base), _SCALES.get((m[2] or "").strip().lower(), 1)


def _kind(headers: list[str], title: str | None) -> str | None:
    if title is not None:
        return _REPORTS.get(title.split(":")[0])
    keys = {_column(h)[0] for h in headers}
    last = headers[-1].strip().lower() if headers else ""
    if "style" in keys and last == "range":
        return NVTX
    if last == "operation":
        return MEMTIME if any("time" in h.lower() for h in headers) else MEMSIZE
    if last == "name" and any(h.strip().lower() == "num calls" for h in headers):
        return API
    if last == "name" and any(h.strip().lower() == "instances" for h in headers):
        return KERNELS
    return None


def _number(text: str, header: str = "value"):
    """A time, count or size: a finite, non-negative number of sane size (no nan, inf or 110-digit values)."""
    try:
        n = cells.number(text, minimum=0)
    except cells.CellError as exc:
        raise StatsFormatError(f"{header}: {exc}") from None
    if not n < 1e30:
        raise StatsFormatError(f"{header}: {text.strip()!r} is not a finite, non-negative number")
    return n


def _instances(value, label: str) -> int:
    """A count column (Instances, Num Calls, Count) read as a number: it must be whole."""
    try:
        return cells.count(value)
    except cells.CellError as exc:
        raise ReportError(f"{label}: a count column holds {exc}") from None


def _count(text: str, header: str):
    try:
        return cells.count(_number(text, header))
    except cells.CellError as exc:
        raise StatsFormatError(f"{header}: {exc}") from None


def _record(headers: list[str], values: list[str]) -> dict:
    row = {}
    for header, value in zip(headers, values, strict=True):
        key, scale = _column(header)
        if key in _TRIPLES:
            row[key] = tuple(_count(v, header) for v in value.split())
            if len(row[key]) != 3:
                raise StatsFormatError(f"{header}: expected three numbers, got {value.strip()!r}")
        elif key in _TEXT:
            row[key] = value.strip()
        elif value.strip() in ("", "-"):
            row[key] = None
        elif key in _NUMBERS:
            n = _number(value, header)
            try:
                row[key] = cells.scaled(n, scale)
            except cells.CellError as exc:
                raise StatsFormatError(f"{header}: {exc}") from None
        else:  # a column this reader does not use: keep it as printed
            row[key] = value.strip()
    return row


def _split_text_row(headers: list[str], line: str) -> list[str]:
    """Split a fixed-width row: every column but the last is one token (GridXYZ/BlockXYZ three), the last keeps its spaces."""
    widths = [3 if _column(h)[0] in _TRIPLES else 1 for h in headers[:-1]]
    parts = line.split(None, sum(widths))
    if len(parts) != sum(widths) + 1:
        raise StatsFormatError(f"expected {len(headers)} columns, found fewer (a truncated row?): {line.strip()!r}")
    values, i = [], 0
    for w in widths:
        values.append(" ".join(parts[i:i + w]))
        i += w
    return values + [parts[-1].rstrip()]


_DASHES = re.compile(r"^\s*-{3,}(\s+-{3,})*\s*$")
_SKIPPED = re.compile(r"\s*SKIPPED: .*$")  # stderr lines nsys interleaves with the stdout tables
_ROW_START = re.compile(r"^\s*-?\d")


def parse_text(text: str) -> list[StatsTable]:
    """Every summary table in what `nsys profile --stats=true` or `nsys stats` printed (progress bars and all)."""
    lines = text.splitlines()
    tables, title, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        t = _TITLE.search(line)
        if t:
            title = next(g for g in t.groups() if g)
        nxt = i + 1
        while nxt < len(lines) and not lines[nxt].strip():
            nxt += 1
        if "Total" in line and nxt < len(lines) and _DASHES.match(lines[nxt]):
            headers = re.split(r"\s{2,}", line.strip())
            kind = _kind(headers, title)
            title = None
            table = StatsTable(kind or "", headers, line=i + 1)
            i = nxt + 1
            while i < len(lines):
                row = _SKIPPED.sub("", lines[i]) if not lines[i].startswith("SKIPPED:") else ""
                if row.strip():
                    if not _ROW_START.match(row):
                        break
                    if kind:
                        try:
                            table.rows.append(_record(headers, _split_text_row(headers, row)))
                        except (StatsFormatError, ValueError) as exc:
                            raise StatsFormatError(f"line {i + 1}: {exc}") from None
                i += 1
            if kind:
                tables.append(table)
            continue
        i += 1
    return tables


def parse_csv(text: str) -> list[StatsTable]:
    """Every summary table in `nsys stats --format csv` output: a header row naming the columns, then rows."""
    lines = text.splitlines()
    tables, title, i = [], None, 0
    while i < len(lines):
        t = _TITLE.search(lines[i])
        if t:
            title = next(g for g in t.groups() if g)
        fields = next(csv.reader([lines[i]]), [])
        if len(fields) >= 3 and any("Total" in f for f in fields) and _kind(fields, None) is not None:
            kind = _kind(fields, title)
            title = None
            table = StatsTable(kind or "", [f.strip() for f in fields], line=i + 1)
            i += 1
            while i < len(lines) and lines[i].strip() and not _TITLE.search(lines[i]):
                values = next(csv.reader([lines[i]]))
                if len(values) != len(fields):
                    break  # the next report's header, or a message line
                if kind:
                    try:
                        table.rows.append(_record(table.headers, values))
                    except (StatsFormatError, ValueError) as exc:
                        raise StatsFormatError(f"line {i + 1}: {exc}") from None
                i += 1
            if kind:
                tables.append(table)
            continue
        i += 1
    return tables


def looks_like_csv(text: str) -> bool:
    """True when some line is a CSV header of a summary report (quoted or comma-separated column names)."""
    for line in text.splitlines()[:200]:
        if "," in line and "Total" in line:
            fields = next(csv.reader([line]), [])
            if len(fields) >= 3 and _kind(fields, None) is not None:
                return True
    return False


def parse_stats(text: str, label: str, fmt: str = "text") -> NsysReport:
    if not text.strip():
        raise ReportError(f"{label}: the file is empty")
    csv_like = fmt == "csv" or looks_like_csv(text)
    try:
        tables = parse_csv(text) if csv_like else parse_text(text)
    except StatsFormatError as exc:
        raise ReportError(f"{label}: {exc}") from None
    kernel_tables = [t for t in tables if t.kind == KERNELS]
    if not kernel_tables:
        raise ReportError(f"{label}: no CUDA GPU kernel summary found (expected the cuda_gpu_kern_sum or gpukernsum "
                          "table of `nsys stats` or `nsys profile --stats=true`)")
    if len(kernel_tables) > 1:
        lines = ", ".join(str(t.line) for t in kernel_tables)
        raise ReportError(f"{label}: holds {len(kernel_tables)} kernel summaries (lines {lines}); "
                          "give each run its own file")
    summary = []
    for r in kernel_tables[0].rows:
        if r.get("total") is None or not r.get("count"):
            raise ReportError(f"{label}: line {kernel_tables[0].line}: kernel table without Total Time/Instances")
        summary.append(KernelStats(
            name=r.get("name") or "?", instances=_instances(r["count"], label), total_ns=r["total"],
            avg_ns=r["avg"] if r.get("avg") is not None else r["total"] / r["count"], med_ns=r.get("med"),
            min_ns=r.get("min"), max_ns=r.get("max"), stddev_ns=r.get("stddev"), grid=r.get("grid"),
            block=r.get("block")))
    if not summary:
        raise ReportError(f"{label}: the kernel summary has no rows (no kernels were captured)")
    by_kind = {t.kind: t.rows for t in tables}
    named = {kind: [r for r in rows if isinstance(r.get("name"), str)] for kind, rows in by_kind.items()}
    api = [ApiCall(r["name"], _instances(r["count"], label), r["total"]) for r in named.get(API, [])
           if r.get("count") is not None and r.get("total") is not None]
    sizes = {_memop_name(r["name"]): r.get("total") for r in named.get(MEMSIZE, [])}
    memops = [MemOp(_memop_name(r["name"]), _instances(r["count"], label), r.get("total"), sizes.get(_memop_name(r["name"])))
              for r in named.get(MEMTIME, []) if r.get("count") is not None]
    ranges = [r["name"].removeprefix(":") for r in named.get(NVTX, []) if r.get("name")]  # ":name": no domain
    notes = []
    if ranges:
        notes.append(f"{label}: summary tables cannot tie kernels to NVTX ranges ({', '.join(ranges)}); "
                     "grouped by kernel name (the .sqlite export can)")
    if any(k.name.endswith("…") for k in summary):
        notes.append(f"{label}: nsys cut long kernel names to its column width (ending in …)")
    return NsysReport(path=label, format="csv" if csv_like else "text", summary=summary, range_names=ranges,
                      api=api, memops=memops, notes=notes)


def _memop_name(text: str) -> str:
    """"[CUDA memcpy HtoD]" and "[CUDA memcpy Host-to-Device]" -> "memcpy HtoD"; "[CUDA memset]" -> "memset"."""
    t = text.strip().strip("[]").strip().removeprefix("CUDA ")
    return re.sub(r"(Host|Device|Array|Peer)-to-(Host|Device|Array|Peer)", lambda m: f"{m[1][0]}to{m[2][0]}", t)
