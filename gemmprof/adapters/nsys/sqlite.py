"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`, or `nsys profile --export=sqlite`).

Kernels come from CUPTI_ACTIVITY_KIND_KERNEL, their names from StringIds. NVTX ranges are CPU-side, so a kernel
belongs to the innermost range that contains the CUDA API call that launched it (CUPTI_ACTIVITY_KIND_RUNTIME, joined
on correlationId, same thread), as Nsight Systems' own nvtx_kern_sum report does, not to the range its execution
overlaps. Columns are looked up by name because the schema changes between nsys versions.
"""

from __future__ import annotations

import bisect
import sqlite3
from contextlib import closing
from pathlib import Path

from gemmprof.adapters.nsys.errors import ReportError
from gemmprof.measure.nvtx import is_gemmprof_range
from gemmprof.results import cells
from gemmprof.results.nsys import ApiCall, Launch, MemOp, NsysReport

KERNEL, RUNTIME, NVTX, STRINGS = "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "StringIds"
MEMCPY, MEMSET = "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"
NVTX_RANGE_TYPES = (59, 60, 70, 71)  # NvtxPushPopRange, NvtxStartEndRange and their NVTXT twins
NVTX_DOMAIN_CREATE = 75
COPY_KINDS = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD",
              9: "HtoH", 10: "PtoP", 11: "Unified HtoD", 12: "Unified DtoH", 13: "Unified DtoD"}
_OPTIONAL = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
             "dynamicSharedMemory")
EXPORT_HINT = "re-export it with `nsys export --type sqlite --force-overwrite true REPORT.nsys-rep`"


def read_sqlite(path: Path, label: str, fmt: str = "sqlite") -> NsysReport:
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ReportError(f"{label}: cannot read ({exc.strerror or exc})") from None
    if size == 0:
        raise ReportError(f"{label}: the file is empty (an interrupted export?); {EXPORT_HINT}")
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        con.text_factory = _text  # a damaged string must not escape as UnicodeDecodeError
        with closing(con):
            return _read(con, label, fmt)
    except BadCell as exc:
        raise ReportError(f"{label}: {exc}; {EXPORT_HINT}") from None
    except sqlite3.DatabaseError as exc:  # "file is not a database", "database disk image is malformed", ...
        raise ReportError(f"{label}: not a readable Nsight Systems SQLite export ({exc}); a truncated copy? "
                          f"{EXPORT_HINT}") from None
    except UnicodeDecodeError as exc:  # a damaged schema: Python decodes column names strictly, not via text_factory
        raise ReportError(f"{label}: not a readable Nsight Systems SQLite export (its schema holds bytes that are "
                          f"not UTF-8, at {exc.start} of a name); a damaged copy? {EXPORT_HINT}") from None


class BadCell(ValueError):
    """A cell of the wrong type or out of range: the caller names the file."""


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _int(value, where: str, *, optional: bool = False, minimum: int = 0):
    """An integer cell within [minimum, 2**62), or None where the column may be empty. Text, even digits, is
    refused: nsys stores integers, so a text cell is damage."""
    if value is None and optional:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return cells.count(value, minimum=minimum)
        except cells.CellError:
            pass
    raise BadCell(f"{where} holds {str(value)[:40]!r} where an integer >= {minimum} is expected")


def _total(value, where: str):
    """A SUM() of durations or sizes: a finite, non-negative number, or None."""
    if value is None:
        return None
    try:
        if cells.figure(value, minimum=0) < 1e30:
            return value
    except cells.CellError:
        pass
    raise BadCell(f"{where} adds up to {str(value)[:40]!r}, not a non-negative number")


def _name(value) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _triple(values, where: str):
    if all(v is None for v in values):
        return None
    return tuple(_int(v, where) for v in values)


def _columns(con, table: str) -> set[str]:
    return {row[1] for row in con.execute(f'PRAGMA table_info("{table}")')}


class _Strings:
    """StringIds, looked up lazily: names in the activity tables are ids (older exports may hold the text)."""

    def __init__(self, con, present: bool):
        self.con, self.present, self.cache = con, present, {}

    def load(self, ids) -> None:
        if not self.present:  # names stay "<string ID>"
            return
        wanted = sorted({i for i in ids if isinstance(i, int) and i not in self.cache})
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            marks = ",".join("?" * len(chunk))
            self.cache.update(self.con.execute(f"SELECT id, value FROM {STRINGS} WHERE id IN ({marks})", chunk))

    def __call__(self, value):
        if value is None or isinstance(value, (str, bytes)):
            return _name(value)
        return _name(self.cache.get(value, f"<string {value}>"))


def _read(con, label: str, fmt: str) -> NsysReport:
    tables = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    if KERNEL not in tables:
        raise ReportError(f"{label}: no CUDA kernels: the report has no {KERNEL} table (profile with `-t cuda`, "
                          "and check that the program launched kernels inside the capture)")
    strings = _Strings(con, STRINGS in tables)
    kcols = _columns(con, KERNEL)
    names = [c for c in ("demangledName", "shortName", "mangledName") if c in kcols]
    if not {"start", "end"} <= kcols or not names:
        raise ReportError(f"{label}: {KERNEL} lacks start/end or a kernel name column; {EXPORT_HINT}")
    name_expr = f"coalesce({', '.join('k.' + c for c in names)})"
    optional = ", ".join(f"k.{c}" if c in kcols else "NULL" for c in _OPTIONAL)
    launch_cols, join = "NULL, NULL, NULL", ""
    rcols = _columns(con, RUNTIME) if RUNTIME in tables else set()
    if "correlationId" in kcols and {"correlationId", "start", "end", "globalTid"} <= rcols:
        launch_cols = "r.start, r.end, r.globalTid"
        join = f"LEFT JOIN {RUNTIME} AS r ON r.correlationId = k.correlationId"
        if "globalPid" in kcols:  # correlation ids are unique per process only
            join += " AND k.globalPid = (r.globalTid & 0xFFFFFFFFFF000000)"
    rows = con.execute(f"SELECT k.start, k.end, {name_expr}, {optional}, {launch_cols} FROM {KERNEL} AS k {join} "
                       "ORDER BY k.start").fetchall()
    if not rows:
        raise ReportError(f"{label}: no CUDA kernels: {KERNEL} is empty (did the program launch kernels while "
                          "nsys was capturing?)")
    strings.load(r[2] for r in rows)
    ranges = _Ranges(con, strings, tables)
    launches = []
    for start, end, name, gx, gy, gz, bx, by, bz, regs, ssmem, dsmem, r_start, r_end, tid in rows:
        start, end = _int(start, f"{KERNEL}.start"), _int(end, f"{KERNEL}.end")
        if end < start:
            raise BadCell(f"{KERNEL}: a kernel ends ({end}) before it starts ({start})")
        r_start = _int(r_start, f"{RUNTIME}.start", optional=True)
        r_end = _int(r_end, f"{RUNTIME}.end", optional=True)
        launches.append(Launch(
            name=strings(name) or "?", start_ns=start, end_ns=end,
            range=ranges.innermost(tid, r_start, r_end) if None not in (r_start, r_end) else None,
            grid=_triple((gx, gy, gz), f"{KERNEL}.grid"), block=_triple((bx, by, bz), f"{KERNEL}.block"),
            registers=_int(regs, f"{KERNEL}.registersPerThread", optional=True),
            static_smem=_int(ssmem, f"{KERNEL}.staticSharedMemory", optional=True),
            dynamic_smem=_int(dsmem, f"{KERNEL}.dynamicSharedMemory", optional=True)))
    notes = []
    if not join:
        notes.append(f"{label}: no CUDA API launch records ({RUNTIME}): kernels cannot be tied to NVTX ranges")
    return NsysReport(path=label, format=fmt, launches=launches, range_names=ranges.names,
                      api=_api_calls(con, strings, tables), memops=_memops(con, tables),
                      gpu_name=_gpu_name(con, tables), nsys_version=_version(con, tables), notes=notes)


class _Ranges:
    """NVTX push/pop and start/end ranges per thread, with each range's enclosing range for nested lookups."""

    def __init__(self, con, strings: _Strings, tables: set[str]):
        self.by_tid: dict[int, tuple[list[int], list[tuple]]] = {}
        self.names: list[str] = []
        if NVTX not in tables:
            return
        cols = _columns(con, NVTX)
        if not {"start", "end", "eventType", "globalTid"} <= cols:
            return
        pick = ", ".join(c if c in cols else "NULL" for c in ("text", "textId", "domainId", "endGlobalTid"))
        types = ",".join(str(t) for t in (*NVTX_RANGE_TYPES, NVTX_DOMAIN_CREATE))
        events = con.execute(f"SELECT start, end, eventType, globalTid, {pick} FROM {NVTX} "
                             f"WHERE eventType IN ({types}) ORDER BY start").fetchall()
        strings.load(e[5] for e in events)
        domains = {e[6]: _name(e[4]) for e in events if e[2] == NVTX_DOMAIN_CREATE and e[4]}
        per_tid: dict[int, list[tuple]] = {}
        for start, end, etype, tid, text, text_id, domain, end_tid in events:
            if etype == NVTX_DOMAIN_CREATE or end_tid is not None:  # ranges ended on another thread are skipped
                continue
            name = _name(text) if text is not None else strings(text_id)
            if name is None:
                continue
            start = _int(start, f"{NVTX}.start")
            end = _int(end, f"{NVTX}.end", optional=True)
            if end is not None and end < start:
                raise BadCell(f"{NVTX}: a range ends ({end}) before it starts ({start})")
            if domains.get(domain):
                name = f"{domains[domain]}:{name}"
            per_tid.setdefault(tid, []).append((start, end if end is not None else float("inf"), name))
            if name not in self.names:
                self.names.append(name)
        for tid, items in per_tid.items():
            items.sort(key=lambda r: (r[0], -r[1]))
            parents, stack = [], []
            for idx, (start, end, _) in enumerate(items):
                while stack and items[stack[-1]][1] < start:
                    stack.pop()
                parents.append(next((j for j in reversed(stack) if items[j][1] >= end), None))
                stack.append(idx)
            self.by_tid[tid] = ([r[0] for r in items], [(*r, p) for r, p in zip(items, parents, strict=True)])

    def innermost(self, tid, t0: int, t1: int) -> str | None:
        """The innermost range containing [t0, t1] on thread tid; a gemmprof range wins over ranges nested in it."""
        found = self.by_tid.get(tid)
        if not found:
            return None
        starts, items = found
        j = bisect.bisect_right(starts, t0) - 1
        containing = []
        while j is not None and j >= 0:
            start, end, name, parent = items[j]
            if start <= t0 and end >= t1:
                containing.append(name)
            j = parent if (containing or end < t0) else j - 1
        return next((n for n in containing if is_gemmprof_range(n)), containing[0] if containing else None)


def _api_calls(con, strings: _Strings, tables: set[str]) -> list[ApiCall]:
    if RUNTIME not in tables or not {"nameId", "start", "end"} <= _columns(con, RUNTIME):
        return []
    rows = con.execute(f"SELECT nameId, count(*), sum(end - start) FROM {RUNTIME} GROUP BY nameId").fetchall()
    strings.load(r[0] for r in rows)
    merged: dict[str, list] = {}
    for name_id, calls, total in rows:
        name = strings(name_id) or "?"
        if name[-6:-4] == "_v":  # cudaLaunchKernel_v7000 -> cudaLaunchKernel, as nsys's cuda_api_sum prints it
            name = name[:-6]
        acc = merged.setdefault(name, [0, 0])
        acc[0] += calls
        acc[1] += _total(total, f"{RUNTIME}: the durations of {name}") or 0
    return [ApiCall(name, calls, total) for name, (calls, total) in merged.items()]


def _memops(con, tables: set[str]) -> list[MemOp]:
    ops = []
    if MEMCPY in tables and {"copyKind", "bytes", "start", "end"} <= _columns(con, MEMCPY):
        for kind, count, total, nbytes in con.execute(
                f"SELECT copyKind, count(*), sum(end - start), sum(bytes) FROM {MEMCPY} GROUP BY copyKind"):
            ops.append(MemOp(f"memcpy {COPY_KINDS.get(kind, kind)}", count, _total(total, f"{MEMCPY}.end - start"),
                             _total(nbytes, f"{MEMCPY}.bytes")))
    if MEMSET in tables and {"bytes", "start", "end"} <= _columns(con, MEMSET):
        count, total, nbytes = con.execute(f"SELECT count(*), sum(end - start), sum(bytes) FROM {MEMSET}").fetchone()
        if count:
            ops.append(MemOp("memset", count, _total(total, f"{MEMSET}.end - start"), _total(nbytes, f"{MEMSET}.bytes")))
    return ops


def _gpu_name(con, tables: set[str]) -> str | None:
    if "TARGET_INFO_GPU" not in tables or "name" not in _columns(con, "TARGET_INFO_GPU"):
        return None
    names = sorted({_name(n) for (n,) in con.execute("SELECT name FROM TARGET_INFO_GPU") if n})
    return " + ".join(names) or None


def _version(con, tables: set[str]) -> str | None:
    if "META_DATA_EXPORT" not in tables:
        return None
    row = con.execute("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'").fetchone()
    return _name(row[0]) if row else None
