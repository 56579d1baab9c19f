"""gemmprof show: re-render a saved results file (run, profile, Nsight Systems comparison, sweep) on any machine."""

from __future__ import annotations

import click

from gemmprof.commands._options import WholeNumber, output_options, refuse_overwrite
from gemmprof.commands.run import view_options


@click.command("show")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--top", type=WholeNumber(1, 10), default=3, show_default=True,
              help="Profile results: how many warp stall reasons per launch.")
@view_options
@output_options
def command(results, top, wide, columns, fmt, output):
    """Print a saved results file again: the tables `gemmprof run`, `profile` or `compare-nsys` printed.

    The file's "kind" says which: run results (`gemmprof run -o FILE.json`), profile results
    (`gemmprof profile --save FILE.json`), an Nsight Systems comparison (`gemmprof compare-nsys -o FILE.json`)
    or a shape sweep's summary.json; plain or gzipped (.json.gz). No GPU needed. JSON output is the full results
    document (run) or the document with its flat rows (the others); CSV the table's rows.

    \b
    Examples:
      gemmprof show results.json
      gemmprof show results.json --wide           # every column that fits the terminal
      gemmprof show results.json --format csv -o results.csv
      gemmprof show profile.json --top 5
    """
    refuse_overwrite({"-o": output}, [results])
    from gemmprof.results.loading import load
    from gemmprof.results.run import RunResult

    loaded = load(results)
    if isinstance(loaded, RunResult):
        from gemmprof.render.run_tables import run_table, terminal_view
        from gemmprof.render.table import choose_format, emit

        if choose_format(fmt, output) == "json":
            import json

            from gemmprof.results.files import json_safe, write_atomic

            text = json.dumps(json_safe(loaded.to_dict()), indent=1) + "\n"
            click.echo(text, nl=False) if output is None else write_atomic(output, text)
            return
        full = run_table(loaded)
        view = terminal_view(full, tuple(c for c in columns.split(",") if c.strip()) if columns else None, wide)
        emit(view if choose_format(fmt, output) == "table" else full, fmt, output)
        return
    from gemmprof.results.nsys import Comparison
    from gemmprof.results.sweep import SweepSummary

    if isinstance(loaded, Comparison):
        from gemmprof.render.nsys_tables import tables
        from gemmprof.render.table import choose_format, emit_many

        emit_many(tables(loaded, choose_format(fmt, output)), fmt, output)
        return
    if isinstance(loaded, SweepSummary):
        from gemmprof.render.sweep_tables import sweep_table
        from gemmprof.render.table import emit

        emit(sweep_table(loaded), fmt, output)
        return
    from gemmprof.render.profile_tables import emit_tables

    emit_tables(loaded, fmt, output, top)
