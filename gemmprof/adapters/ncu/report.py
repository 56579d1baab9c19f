"""Nsight Compute CSV: the text `ncu --csv` prints (details or raw page) in, typed launch records out (an .ncu-rep
report becomes the same records through rep.py).

Both layouts are read:

* `--page details` (the default): one row per metric, keyed by "Section Name" and a human label ("Duration",
  "Block Limit Registers"); metrics asked for with --metrics appear under "Command line profiler metrics" with their
  raw names; rule rows (empty metric, filled "Rule Name" ... "Estimated Speedup") carry ncu's advice.
* `--page raw`: one row per launch, one column per raw metric name, and a units row right after the header.

Around the table there may be program output and `==PROF==` / `==WARNING==` / `==ERROR==` lines (kept as messages),
numbers with thousands separators ("8,394,496"), "n/a" and empty units, scaled units ("us", "Kbyte"; converted to
base units), NVTX columns (with `--nvtx`), and many kernels, launches and even several tables in one file.
Numeric cells go through gemmprof.results.cells; a damaged one (NaN, 5000 digits, non-ASCII digits, a unit that
overflows) leaves its metric, rule or launch row out with a warning naming its row and column.
Everything here is pure: text in, dataclasses out.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from gemmprof.errors import InputError
from gemmprof.results import cells
from gemmprof.results.cells import CellError

IDENTITY_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                    "Block Size", "Grid Size", "Device", "CC")
COMMAND_LINE_SECTION = "Command line profiler metrics"
_MESSAGE = re.compile(r"^==(PROF|WARNING|ERROR|INFO)==")
_TIME_NS = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
_SI = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_SCALABLE = {"byte", "hz", "inst", "cycle", "sector", "request", "warp", "thread", "block", "wavefront", "flop",
             "register", "transaction", "pass", "branches", "ops", "op"}


@dataclass(frozen=True)
class Metric:
    name: str  # the label (details page) or the raw metric name (raw page, command-line metrics)
    section: str  # "" on the raw page
    unit: str  # as printed
    text: str  # the value as printed
    value: float | int | str | None  # numbers converted to `base_unit`; None for "n/a" or empty
    base_unit: str
    exact: bool = True  # False when a scaled unit (Kbyte, us) was printed with rounding

    @property
    def number(self) -> float | int | None:
        return self.value if isinstance(self.value, (int, float)) and not isinstance(self.value, bool) else None


@dataclass(frozen=True)
class Rule:
    section: str
    name: str
    type: str  # INF | OPT | WRN | ERR
    description: str
    speedup_type: str  # local | global | ""
    speedup: float | None  # estimated speedup in percent


@dataclass
class Launch:
    """One profiled kernel launch: its identity columns, NVTX ranges, metrics and rules."""

    id: int
    kernel_name: str
    process_id: str = ""
    process_name: str = ""
    device: str = ""
    cc: str = ""
    stream: str = ""
    block: tuple[int, ...] | None = None
    grid: tuple[int, ...] | None = None
    nvtx: dict[str, str] = field(default_factory=dict)  # NVTX column header -> cell
    push_pop: tuple[str, ...] = ()  # push/pop range names read from a report (rep.py), outermost first
    metrics: dict[tuple[str, str], Metric] = field(default_factory=dict)  # (section, name) -> metric
    rules: list[Rule] = field(default_factory=list)
    table: int = 0  # which CSV table of the file it came from
    _by_name: tuple[int, dict[str, Metric]] = field(default=(-1, {}), repr=False, compare=False)

    def find(self, name: str, section: str | None = None) -> Metric | None:
        if section is not None:
            return self.metrics.get((section, name))
        for key in (("", name), (COMMAND_LINE_SECTION, name)):
            if key in self.metrics:
                return self.metrics[key]
        if self._by_name[0] != len(self.metrics):  # an index by name: a raw page has ~1000 metrics per launch
            index: dict[str, Metric] = {}
            for (_, n), m in self.metrics.items():
                index.setdefault(n, m)
            self._by_name = (len(self.metrics), index)
        return self._by_name[1].get(name)

    def number(self, *names: str, section: str | None = None) -> float | int | None:
        """The first of `names` present with a numeric value (in base units)."""
        for n in names:
            m = self.find(n, section)
            if m is not None and m.number is not None:
                return m.number
        return None

    def text(self, *names: str) -> str | None:
        for n in names:
            m = self.find(n)
            if m is not None and m.text not in ("", "n/a"):
                return m.text
        return None

    def matching(self, prefix: str, suffix: str = "") -> dict[str, Metric]:
        """Metrics whose raw name starts with `prefix` and ends with `suffix`, by name."""
        return {n: m for (_, n), m in self.metrics.items() if n.startswith(prefix) and n.endswith(suffix)}

    @property
    def nvtx_ranges(self) -> tuple[str, ...]:
        """Push/pop range names, outermost first (from the CSV's cells, best effort: see `range_names`)."""
        out: list[str] = list(self.push_pop)
        for header, cell in self.nvtx.items():
            if "Push/Pop" in header or "Start/Stop" not in header:
                out.extend(range_names(cell))
        return tuple(out)


@dataclass
class NcuReport:
    layout: str  # details | raw | empty
    launches: list[Launch]
    messages: list[str]  # ==PROF== / ==WARNING== / ==ERROR== lines, in order
    other_lines: list[str]  # program output and anything else that is not the table
    warnings: list[str] = field(default_factory=list)  # damaged cells left out, each naming its row and column

    @property
    def gpu(self) -> str | None:
        for launch in self.launches:
            name = launch.text("device__attribute_display_name")
            if name:
                return name
        return None

    def errors(self) -> list[str]:
        return [m for m in self.messages if m.startswith("==ERROR==")]


def parse_number(text: str) -> float | int | None:
    """A cell's number; None for text that is no number; CellError for a damaged one (see results.cells)."""
    return cells.parse_number(text)


def to_base(value: float | int, unit: str) -> tuple[float | int, str, bool]:
    """Convert a number in ncu's (possibly scaled) unit to its base unit: (value, base unit, exact).
    A product past any real figure is a CellError."""
    u = unit.strip()
    if u in _TIME_NS:
        scale = _TIME_NS[u]
        return cells.scaled(value, scale), "ns", scale == 1
    head, slash, tail = u.partition("/")
    if len(head) > 1 and head[0] in _SI and head[1:].lower() in _SCALABLE:
        return cells.scaled(value, _SI[head[0]]), head[1:] + slash + tail, False
    return value, u, True


def _metric(name: str, section: str, unit: str, text: str) -> Metric:
    t = (text or "").strip()
    if t in ("", "n/a", "N/A"):
        return Metric(name, section, unit, t, None, unit.strip())
    num = parse_number(t)
    if num is None:
        return Metric(name, section, unit, t, t, unit.strip())
    if num < 0:  # ncu's figures are counts, sizes, times, rates and percentages: none is negative
        raise CellError(f"{t[:24]!r} is negative")
    value, base, exact = to_base(num, unit)
    if not exact:
        value = cells.parse_number(f"{value:.12g}")  # drop the float noise of scaling ("59.30" us -> 59300 ns)
        if isinstance(value, float) and value.is_integer() and abs(value) < cells.MAX_COUNT:
            value = cells.count(value, minimum=-cells.MAX_COUNT)
    return Metric(name, section, unit, t, value, base, exact)


def _triple(text: str) -> tuple[int, ...] | None:
    """"(64, 64, 1)" as three sizes >= 1; None for an empty cell; anything else is a CellError."""
    nums = cells.integers(text or "", minimum=1)
    if not nums and not (text or "").strip():
        return None
    if len(nums) != 3:
        raise CellError(f"{(text or '').strip()[:24]!r} is not three sizes >= 1")
    return nums


def is_nvtx_column(header: str) -> bool:
    return "_Range" in header or "nvtx" in header.lower()


def range_names(cell: str) -> list[str]:
    """Range names in an NVTX cell such as `1  "<default domain>:NAME:none:none:none:none:none:none"`.

    ncu prints, per range on the stack, Domain:Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg. The exact layout
    varies between versions, so the parts beyond the range name are dropped only when all six are present.
    """
    parts = re.findall(r'"([^"]*)"', cell) or ([cell.strip()] if cell.strip() else [])
    names = []
    for p in parts:
        fields = p.split(":")
        if len(fields) >= 8:
            names.append(":".join(fields[1:-6]))
        elif len(fields) >= 2:
            names.append(":".join(fields[1:]))
        else:
            names.append(p)
    return [n for n in names if n]


def _split_tables(lines: list[str]) -> tuple[list[list[str]], list[str], list[str]]:
    """Group the CSV lines of each table; messages and stray lines go aside."""
    tables: list[list[str]] = []
    messages: list[str] = []
    other: list[str] = []
    current: list[str] | None = None
    for line in lines:
        stripped = line.strip()
        if _MESSAGE.match(stripped):
            messages.append(stripped)
            continue
        if stripped.startswith('"ID",'):
            current = [line]
            tables.append(current)
            continue
        if current is not None and stripped and (stripped.startswith('"') or current[-1].count('"') % 2 == 1):
            current.append(line)  # a row, or the continuation of a quoted field spanning lines
            continue
        if stripped:
            other.append(line)
    return tables, messages, other


def parse_csv(text: str) -> NcuReport:
    """Parse everything `ncu --csv` printed (or a file a user saved). A file without a table gives no launches."""
    text = text.lstrip("\ufeff")
    tables, messages, other = _split_tables(text.splitlines())
    launches: list[Launch] = []
    warnings: list[str] = []
    layouts = set()
    for index, lines in enumerate(tables):
        rows = list(csv.reader(io.StringIO("\n".join(lines))))
        header = rows[0]
        where = _Where(index, len(tables), warnings)
        halves = [h for h in ("Metric Name", "Metric Value") if h in header]
        if len(halves) == 1:  # a details table whose other column was renamed or cut: no launch's value is known
            other = "Metric Value" if halves[0] == "Metric Name" else "Metric Name"
            warnings.append(f"{where.prefix}header: a {halves[0]!r} column without {other!r} (a details table "
                            "needs both); the table left out")
            continue
        if "Metric Name" in header and "Metric Value" in header:
            layouts.add("details")
            launches.extend(_parse_details(header, rows[1:], index, where))
        else:
            layouts.add("raw")
            launches.extend(_parse_raw(header, rows[1:], index, where))
    layout = "empty" if not layouts else (layouts.pop() if len(layouts) == 1 else "mixed")
    return NcuReport(layout, launches, messages, other, warnings)


class _Where:
    """Names a damaged cell by table, row (the header is row 1) and column, and keeps the warning."""

    def __init__(self, table: int, tables: int, warnings: list[str]):
        self.prefix = f"table {table + 1}, " if tables > 1 else ""
        self.warnings = warnings

    def left_out(self, row: int, column: str, exc: CellError, what: str) -> None:
        self.warnings.append(f"{self.prefix}row {row + 2}, column {column!r}: {exc}; {what} left out")


def _id(text: str) -> int | None:
    """A launch ID; None for a row that is no launch (units row, a stray line). A damaged ID is a CellError."""
    if not cells.looks_numeric(text):
        return None
    return cells.count(text)


def _launch(lid: int, row: dict[str, str], table: int) -> Launch:
    return Launch(id=lid, kernel_name=row.get("Kernel Name", ""),
                  process_id=row.get("Process ID", ""), process_name=row.get("Process Name", ""),
                  device=row.get("Device", ""), cc=row.get("CC", ""), stream=row.get("Stream", ""),
                  block=_triple(row.get("Block Size", "")), grid=_triple(row.get("Grid Size", "")),
                  nvtx={h: v for h, v in row.items() if is_nvtx_column(h)}, table=table)


def _parse_details(header: list[str], rows: list[list[str]], table: int, where: _Where) -> list[Launch]:
    by_id: dict[int, Launch] = {}
    for r, row in enumerate(rows):
        named = dict(zip(header, row, strict=False))  # metric rows end at "Metric Value"
        column = "ID"
        try:
            lid = _id(named.get("ID", ""))
            if lid is None:
                continue
            launch = by_id.get(lid)
            if launch is None:
                column = "Block Size/Grid Size"
                launch = by_id[lid] = _launch(lid, named, table)
            section = named.get("Section Name", "")
            if named.get("Rule Name"):
                column = "Estimated Speedup"
                speedup = parse_number(named.get("Estimated Speedup", ""))
                if speedup is not None and speedup < 0:
                    raise CellError(f"{speedup!r} is negative")
                launch.rules.append(Rule(section, named["Rule Name"], named.get("Rule Type", ""),
                                         " ".join(named.get("Rule Description", "").split()),
                                         named.get("Estimated Speedup Type", ""),
                                         None if speedup is None else cells.real(speedup)))
            elif named.get("Metric Name"):
                column = "Metric Value"
                m = _metric(named["Metric Name"], section, named.get("Metric Unit", ""), named.get("Metric Value", ""))
                launch.metrics[(section, m.name)] = m
        except CellError as exc:
            where.left_out(r, column, exc, "the row")
    return list(by_id.values())


def _parse_raw(header: list[str], rows: list[list[str]], table: int, where: _Where) -> list[Launch]:
    units: list[str] = [""] * len(header)
    launches = []
    for r, row in enumerate(rows):
        first = row[0].strip() if row else ""
        column = "ID"
        try:
            lid = _id(first)
            column = "Block Size/Grid Size"
            launch = _launch(lid, dict(zip(header, row, strict=False)), table) if lid is not None else None
        except CellError as exc:
            where.left_out(r, column, exc, "the launch")
            continue
        if launch is None:
            if not first and not launches and len(row) == len(header):
                units = row  # the units row right after the header
            continue
        for i, name in enumerate(header):
            if name in IDENTITY_COLUMNS or is_nvtx_column(name) or i >= len(row):
                continue
            try:
                launch.metrics[("", name)] = _metric(name, "", units[i] if i < len(units) else "", row[i])
            except CellError as exc:
                where.left_out(r, name, exc, "the cell")
        launches.append(launch)
    return launches


def merge(primary: NcuReport, secondary: NcuReport) -> NcuReport:
    """Add the metrics of `secondary` (e.g. the raw page of the same report) to the launches of `primary` by ID."""
    by_id = {(launch.table, launch.id): launch for launch in secondary.launches}
    for launch in primary.launches:
        other = by_id.get((launch.table, launch.id))
        if other is None:
            continue
        for key, m in other.metrics.items():
            launch.metrics.setdefault(key, m)
        for h, v in other.nvtx.items():
            launch.nvtx.setdefault(h, v)
    return primary


def read_csv_file(path) -> NcuReport:
    """Read a saved ncu CSV, plain or gzipped (`.csv.gz`, as records keep them), or raise InputError naming the
    file and the problem."""
    from gemmprof.results.files import read_text

    try:
        text = read_text(path, "ncu CSV")  # plain or gzipped; never a FIFO; bounded
    except InputError as exc:
        raise InputError(f"--from: {exc}") from None
    return parse_csv(text)
