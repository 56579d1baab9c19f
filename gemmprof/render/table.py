"""Renderers: one typed Table goes out as a rich table, JSON or CSV, chosen by --format or -o's extension."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gemmprof.errors import InputError
from gemmprof.results.files import finite, json_safe, write_atomic

FORMATS = ("table", "json", "csv")
_EXTENSIONS = {".json": "json", ".csv": "csv", ".txt": "table"}


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    unit: str = ""
    fmt: str = ""  # format spec for numbers in the table view, e.g. ".2f"; JSON/CSV keep full precision
    wrap: bool = True  # a text column ("s") that does not fit wraps; False: one line, cut with an ellipsis
    drop: int | None = None  # where a table is too wide, higher is left out first (default: 1 for prose, else 0)


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)  # goes into JSON beside the rows


def choose_format(fmt: str | None, output: str | os.PathLike | None) -> str:
    """--format wins; otherwise the output file's extension; otherwise a table."""
    if fmt:
        return fmt
    if output:
        ext = Path(output).suffix.lower()
        if ext in _EXTENSIONS:
            return _EXTENSIONS[ext]
        if ext:
            raise InputError(f"-o {output}: unknown extension {ext!r} (use .json, .csv or .txt, or give --format)")
    return "table"


def format_value(value: Any, fmt: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if fmt:
            return format(value, fmt)
        return f"{value:.4g}"
    if isinstance(value, int) and fmt:
        return format(value, fmt)
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return str(value)


def _header(col: Column) -> str:
    return f"{col.header} ({col.unit})" if col.unit else col.header


def to_json(table: Table) -> str:
    doc = {"title": table.title, **table.meta, "columns": [
        {"key": c.key, "header": c.header, "unit": c.unit} for c in table.columns],
        "rows": table.rows, "notes": table.notes}
    return json.dumps(doc, indent=2, default=_json_default, allow_nan=False)


def _json_default(obj):
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def to_csv(table: Table) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([_header(c) for c in table.columns])
    for row in table.rows:
        out = []
        for c in table.columns:
            v = finite(row.get(c.key))
            out.append("" if v is None else ("x".join(map(str, v)) if isinstance(v, (list, tuple)) else v))
        writer.writerow(out)
    return buf.getvalue()


# Text goes out at the terminal's width; piped or written to a file, at $COLUMNS, else at DEFAULT_WIDTH: the
# width of a standard terminal, of CI log viewers and of a pasted snippet (and rich's and click's own default).
# Tables fit it by wrapping text, never numbers, so a narrow default costs wrapped prose, not broken figures.
DEFAULT_WIDTH = 80
MIN_WIDTH = 20
TEXT_MIN = 10  # a text column shrinks (wrapping) to its longest word, at least this and at most WORD_MAX,
WORD_MAX = 20  # before it is left out
_BORDER = 3  # each column's padding and rule; one more for the table's left edge
# A number as a reader sees it: digits with their decimal point or thousands separators. Text is broken between
# numbers or between words, never inside one of these.
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def text_width() -> int:
    """The width to render text at: $COLUMNS where set, else the terminal's, else DEFAULT_WIDTH."""
    import shutil
    import sys

    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) > 0:
        return max(MIN_WIDTH, int(env))
    if sys.stdout.isatty():
        return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
    return DEFAULT_WIDTH


# a number column's header wraps between words, and inside "accesses/result" or "sectors/req" at the slash
_HEADER_PIECES = re.compile(r"\s+|(?<=[a-z]{3}/)(?=[a-z]{3})")
_SEPARATORS = "_-/,.:;=)"  # a long word is broken after one of these where it can


def _breaks(word: str) -> list[int]:
    """Positions where `word` may be broken: anywhere but inside a number."""
    inside = set()
    for m in NUMBER.finditer(word):
        inside.update(range(m.start() + 1, m.end()))
    return [i for i in range(1, len(word)) if i not in inside]


def _longest_number(text: str) -> int:
    return max((len(m.group()) for m in NUMBER.finditer(text)), default=0)


def _count_lines(word_lengths: list[int], width: int) -> int:
    """How many lines greedy wrapping at `width` takes for words of these lengths (a long word: its share)."""
    count, used = 1, 0
    for n in word_lengths:
        if used and used + 1 + n <= width:
            used += 1 + n
        elif not used and n <= width:
            used = n
        else:
            if used:
                count += 1
            count += (n - 1) // width
            used = n % width or width
    return count


def wrap_text(text: str, width: int) -> list[str]:
    """Lines of at most `width` characters, broken at spaces; a word longer than a line is broken between its
    numbers and letters, never inside a number (one longer than the line stays whole)."""
    width = max(1, width)
    lines: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in para.split():
            if len(line) + (1 if line else 0) + len(word) <= width:
                line = f"{line} {word}" if line else word
                continue
            if line:
                lines.append(line)
                line = ""
            while len(word) > width:
                allowed = [i for i in _breaks(word) if i <= width]
                after = [i for i in allowed if word[i - 1] in _SEPARATORS and i > width // 2]
                cut = max(after or allowed, default=None)
                if cut is None:  # a number wider than the line: whole, on a line of its own
                    m = NUMBER.match(word)
                    cut = m.end() if m and m.end() < len(word) else len(word)
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        lines.append(line)
    return lines


def ellipsize(text: str, width: int) -> str:
    """`text` on one line of at most `width` characters: cut at a space or between numbers, ending in an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    room = max(0, width - 1)
    spaces = [i for i, ch in enumerate(text) if ch == " " and i <= room]
    cuts = [i for i in _breaks(text) if i <= room]
    cut = max(spaces + cuts, default=0)
    return text[:cut].rstrip() + "…"


@dataclass
class Layout:
    """A table fitted to a width: the columns kept, each one's width, and those left out."""
    columns: list[Column]
    widths: list[int]
    left_out: list[Column]
    cells: list[list[str]]  # each kept column's cells as text, by row


def _is_text(col: Column) -> bool:
    return col.fmt == "s"


def cell_text(row: dict, col: Column) -> str:
    return format_value(row.get(col.key), "" if col.fmt == "s" else col.fmt)


def fit(table: Table, width: int) -> Layout:
    """Fit the table to `width` characters. Numbers never wrap: a number column is as wide as its widest cell.
    Text columns shrink first (wrapping between words, never inside a number), the widest first, down to their
    longest word (TEXT_MIN to WORD_MAX), after number columns' headers have wrapped; then columns are left out (named under
    the table): prose columns first, then the others, the rightmost first (a column's `drop` orders it), never the
    first; only then is the first column's text cut, with an ellipsis."""
    cols = list(table.columns)
    cells = {c.key: [cell_text(r, c) for r in table.rows] for c in cols}
    natural, least = {}, {}
    for c in cols:
        texts = cells[c.key]
        widest = max((len(line) for t in texts for line in t.split("\n")), default=0)
        header = _header(c)
        natural[c.key] = max(len(header), widest, 1)
        if _is_text(c):
            numbers = max([_longest_number(t) for t in texts] + [_longest_number(header)])
            words = max((len(w) for t in [header, *texts] for w in t.split()), default=0)
            least[c.key] = max(numbers, min(natural[c.key], max(TEXT_MIN, min(words, WORD_MAX))))
        else:
            # a number never wraps; a cell of several words (a list, a message) wraps between them
            tokens = max((len(w) for t in texts for w in t.split()), default=0)
            words = max(len(w) for w in _HEADER_PIECES.split(header) if w)
            least[c.key] = max(tokens, words, _longest_number(header), 1)
    kept = list(cols)
    left_out: list[Column] = []
    heights: dict[tuple[str, int], list[int]] = {}
    words = {c.key: [[len(w) for w in t.split()] for t in [*cells[c.key], _header(c)]] for c in cols}

    def lines(c: Column, w: int) -> list[int]:
        """About how many lines each cell of `c` (and, last, its header) takes at width `w` (a word wider than the
        line counts its share of lines); a cell cut with an ellipsis counts one more. A cost, so near is enough."""
        if (c.key, w) not in heights:
            if _is_text(c) and not c.wrap:
                out = [1 + (len(t) > w) for t in cells[c.key]] + [_count_lines(words[c.key][-1], w)]
            else:
                out = [_count_lines(ws, w) for ws in words[c.key]]
            heights[c.key, w] = out
        return heights[c.key, w]

    while True:
        widths = dict(natural)
        excess = sum(widths[c.key] for c in kept) + _BORDER * len(kept) + 1 - width
        # shrink the column whose narrowing adds the fewest lines to the table (a number column's header wraps
        # once; a text column wraps in every row), the widest of those, never below `least`: a character at a time
        # near the width, several far from it
        rows = [lines(c, widths[c.key]) for c in kept]
        while excess > 0:
            # each row's tallest cell, and the tallest but that column's: what a narrower column would change
            tallest = [max(col) for col in zip(*rows, strict=True)]
            shrinkable = [(i, c) for i, c in enumerate(kept) if widths[c.key] > least[c.key]]
            if not shrinkable:
                break
            step = max(1, excess // (4 * len(shrinkable)))  # far from fitting, several characters at a time
            best = None
            for i, c in shrinkable:
                by = min(step, widths[c.key] - least[c.key])
                narrower = lines(c, widths[c.key] - by)
                cost = sum(h if n <= h else n for n, h in zip(narrower, tallest, strict=True))
                key = (cost, -widths[c.key], -i)
                if best is None or key < best[0]:
                    best = (key, i, c, narrower, by)
            _, i, c, narrower, by = best
            rows[i] = narrower
            widths[c.key] -= by
            excess -= by
        if excess <= 0:
            break
        rank = {c.key: c.drop if c.drop is not None else int(_is_text(c) and natural[c.key] > TEXT_MIN)
                for c in kept}
        victim = max(kept[1:], key=lambda c: (rank[c.key], kept.index(c)), default=None)
        if victim is None:  # the first column alone is wider than the width: cut its text
            widths[kept[0].key] = max(1, width - _BORDER - 1)
            break
        kept.remove(victim)
        left_out.append(victim)
    return Layout(kept, [widths[c.key] for c in kept], left_out, [cells[c.key] for c in kept])


def to_rich(table: Table, width: int | None = None):
    """The rich table for `table` fitted to `width` (default: text_width()); every cell already broken into
    lines, so rich never wraps a number."""
    from rich.table import Table as RichTable
    from rich.text import Text

    layout = fit(table, width or text_width())
    rt = RichTable(header_style="bold")
    for c, w in zip(layout.columns, layout.widths, strict=True):
        rt.add_column(Text("\n".join(wrap_text(_header(c), w))), justify="left" if _is_text(c) else "right",
                      width=w, no_wrap=True, overflow="ellipsis")
    for i, row in enumerate(table.rows):
        out = []
        for c, w, texts in zip(layout.columns, layout.widths, layout.cells, strict=True):
            text = texts[i]
            if len(text) > w:
                text = "\n".join(wrap_text(text, w)) if c.wrap or not _is_text(c) else ellipsize(text, w)
            out.append(Text(text, style=_colour(row, c, text)))
        rt.add_row(*out)
    return rt, layout


def _colour(row: dict, col: Column, text: str) -> str:
    if col.key != "status":
        return ""
    return {"ok": "green", "PASS": "green", "FAIL": "red", "error": "red", "rejected": "yellow",
            "skipped": "yellow"}.get(text, "")


def _print(table: Table, console, width: int) -> None:
    """Title, table and notes, each wrapped to `width` without breaking a number."""
    rt, layout = to_rich(table, width)
    for line in wrap_text(table.title, width) if table.title else []:
        console.print(line, markup=False, highlight=False, style="italic", soft_wrap=True)
    console.print(rt)
    notes = list(table.notes)
    if layout.left_out:
        notes.append(f"Left out to fit {width} columns: " + ", ".join(_header(c) for c in layout.left_out)
                     + " (a wider terminal, COLUMNS=N, --format csv or --format json shows them).")
    for note in notes:
        for line in wrap_text(note, width):
            console.print(line, markup=False, highlight=False, soft_wrap=True)


def _console():
    """The terminal when there is one; otherwise plain text (no colour codes) for a pipe or a file."""
    import sys

    from rich.console import Console

    return Console(width=text_width()) if sys.stdout.isatty() else Console(width=text_width(), color_system=None)


def render_text(table: Table, width: int | None = None) -> str:
    from rich.console import Console

    width = width or text_width()
    console = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    _print(table, console, width)
    return console.file.getvalue()


def emit(table: Table, fmt: str | None = None, output: str | os.PathLike | None = None) -> None:
    """Print (or write to `output`) the table in the chosen format."""
    fmt = choose_format(fmt, output)
    if fmt not in FORMATS:
        raise InputError(f"--format: unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    if fmt == "json":
        text = to_json(_sanitised(table)) + "\n"
    elif fmt == "csv":
        text = to_csv(table)
    else:
        if output is None:
            console = _console()
            _print(table, console, console.width)
            return
        text = render_text(table)
    _deliver(text, output)


def _sanitised(table: Table) -> Table:
    """JSON has no NaN or infinity: write null instead."""
    rows = [{k: json_safe(v) for k, v in row.items()} for row in table.rows]
    return Table(table.title, table.columns, rows, table.notes, json_safe(table.meta))


def emit_many(tables: list[Table], fmt: str | None = None, output: str | os.PathLike | None = None) -> None:
    """Several tables: printed one after another; JSON as {"tables": [...]}; CSV separated by a blank line."""
    if len(tables) == 1:
        emit(tables[0], fmt, output)
        return
    fmt = choose_format(fmt, output)
    if fmt == "table" and output is None:
        for t in tables:
            emit(t, fmt, None)
        return
    if fmt == "json":
        docs = [json.loads(to_json(_sanitised(t))) for t in tables]
        text = json.dumps({"tables": docs}, indent=2) + "\n"
    elif fmt == "csv":
        text = "\n".join(to_csv(t) for t in tables)
    else:
        text = "\n".join(render_text(t) for t in tables)
    _deliver(text, output)


def _deliver(text: str, output) -> None:
    """To the terminal, or atomically to the file."""
    if output is None:
        import click

        click.echo(text, nl=False)
    else:
        write_atomic(output, text)
