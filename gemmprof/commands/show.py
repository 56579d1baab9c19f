"""gemmprof show: re-render a saved results file (run or profile) on any machine."""

from __future__ import annotations

import click

from gemmprof.commands._options import output_options, refuse_overwrite
from gemmprof.commands.run import view_options


@click.command("show")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--top", type=click.IntRange(1, 10), default=3, show_default=True,
              help="Profile results: how many warp stall reasons per launch.")
@view_options
@output_options
def command(results, top, wide, columns, fmt, output):
    """Print a saved results file again: the tables `gemmprof run` or `gemmprof profile` printed.

    The file's "kind" says which: run results (`gemmprof run -o FILE.json`) or profile results
    (`gemmprof profile --save FILE.json`). No GPU needed. JSON output is the full results document
    (run) or the document with its flat per-launch rows (profile); CSV the table's rows.

    \b
    Examples:
      gemmprof show results.json
      gemmprof show results.json --wide           # every column; the default fits 120 characters
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
    from gemmprof.render.profile_tables import emit_tables

    emit_tables(loaded, fmt, output, top)
