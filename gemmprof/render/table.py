"""Renderers: one typed Table goes out as a rich table, JSON or CSV, chosen by --format or -o's extension."""

from __future__ import annotations

import csv
import io
import json
import math
import os
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


def to_rich(table: Table):
    from rich.table import Table as RichTable

    rt = RichTable(title=table.title, title_justify="left", header_style="bold")
    for c in table.columns:
        rt.add_column(_header(c), justify="left" if c.fmt == "s" else "right", overflow="fold")
    for row in table.rows:
        rt.add_row(*[_styled(row, c) for c in table.columns])
    return rt


def _styled(row: dict, col: Column) -> str:
    text = format_value(row.get(col.key), "" if col.fmt == "s" else col.fmt)
    if col.key == "status":
        colour = {"ok": "green", "PASS": "green", "FAIL": "red", "error": "red", "rejected": "yellow", "skipped": "yellow"}.get(text)
        if colour:
            return f"[{colour}]{text}[/{colour}]"
    return text.replace("[", r"\[")


def _console():
    """The terminal's width when there is one; wide enough for the run table when output is captured."""
    import sys

    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=200)


def render_text(table: Table, width: int | None = None) -> str:
    from rich.console import Console

    console = Console(file=io.StringIO(), width=width or 160, force_terminal=False, color_system=None)
    console.print(to_rich(table))
    for note in table.notes:
        console.print(note, markup=False, highlight=False)
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
            console.print(to_rich(table))
            for note in table.notes:
                console.print(note, markup=False, highlight=False)
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
