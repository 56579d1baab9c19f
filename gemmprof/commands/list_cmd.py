"""gemmprof list: the ladder."""

from __future__ import annotations

import click

from gemmprof.commands._options import output_options
from gemmprof.render.table import Column, Table, emit


@click.command("list")
@click.option("--dtype", type=click.Choice(["fp32", "fp16"]), default=None, help="Only rungs of this dtype.")
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False), help="Also show these specs.")
@output_options
def command(dtype, spec_files, fmt, output):
    """Show the kernel ladder: rung, name, technique, source document, dtype, parameters.

    \b
    Examples:
      gemmprof list
      gemmprof list --dtype fp16 --format json
    """
    from gemmprof.catalog import spec as specmod

    specs = [s for s in specmod.ladder() if dtype is None or s.dtype == dtype]
    specs += [specmod.load_spec(f) for f in spec_files]
    rows = [{"id": s.id, "name": s.name, "title": s.title, "description": s.description,
             "source": s.source_text(), "dtype": s.dtype, "layout": f"A {s.layout['A']}, B {s.layout['B']}",
             "backend": s.backend, "params": ", ".join(f"{k}={v}" for k, v in s.params.items()),
             "file": str(s.file.name)} for s in specs]
    cols = [Column("id", "rung", fmt="s"), Column("name", "name", fmt="s"), Column("title", "technique", fmt="s"),
            Column("source", "source", fmt="s"), Column("dtype", "dtype", fmt="s"),
            Column("params", "parameters", fmt="s")]
    if fmt in ("json", "csv"):
        cols += [Column("description", "description", fmt="s"), Column("layout", "layout", fmt="s"),
                 Column("backend", "backend", fmt="s"), Column("file", "file", fmt="s")]
    emit(Table("The GEMM ladder", cols, rows), fmt, output)
