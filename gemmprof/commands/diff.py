"""gemmprof diff: compare two saved runs variant by variant."""

from __future__ import annotations

import click

from gemmprof.commands._options import output_options, refuse_overwrite
from gemmprof.errors import GemmprofError, InputError


class RegressionFound(GemmprofError):
    """--fail-on-regression: a variant slowed down by more than the threshold."""

    exit_code = 3


def _finite_pct(value):
    """nan passes FloatRange (nan < 0 is false) and then no change is ever larger: the gate could never fire."""
    import math

    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite percentage")
    return value


@click.command("diff")
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Compare even when shape, beta, device model, timing regime or a variant's dtype differ.")
@click.option("--fail-on-regression", "fail_pct", type=click.FloatRange(min=0), default=None, metavar="PCT",
              callback=lambda _ctx, _param, v: _finite_pct(v),
              help="Exit with status 3 when any variant's median time grew by more than PCT percent, outside the "
                   "noise.")
@output_options
def command(old, new, force, fail_pct, fmt, output):
    """Compare two results files of `gemmprof run`: the change in median time and TFLOP/s per variant.

    Variants are matched by name (with their parameters when a file holds a name more than once), a rung renamed
    between the runs by its id; a change of compiler, dtype or name is said beside the verdict.
    A change is outside the noise when |new median / old median - 1| > max(old spread, new spread, 1%), with
    spread = IQR / median of that variant's samples in each run; otherwise the verdict is "within noise".
    Runs of different shapes, beta, device models, dtypes or timing regimes are refused (each difference named)
    unless --force.

    \b
    Examples:
      gemmprof diff baseline.json results.json
      gemmprof diff baseline.json results.json --fail-on-regression 5   # CI: exit 3 if a variant is >5% slower
      gemmprof diff old.json new.json --format csv -o diff.csv
    """
    refuse_overwrite({"-o": output}, [old, new])
    from gemmprof.render.diff_table import diff_table
    from gemmprof.render.table import emit
    from gemmprof.results.diff import diff_runs, mismatches, regressions
    from gemmprof.results.run import load_run

    a, b = load_run(old), load_run(new)
    differ = mismatches(a, b)
    if differ and not force:
        raise InputError("the runs measure different things (" + "; ".join(m.describe() for m in differ)
                         + "): pass --force to compare anyway")
    rows = diff_runs(a, b)
    emit(diff_table(a, b, rows, old, new, differ), fmt, output)
    if fail_pct is not None:
        slow = regressions(rows, fail_pct)
        if slow:
            names = ", ".join(f"{r.key} {100 * r.time_change:+.1f}%" for r in slow)
            raise RegressionFound(f"slower by more than {fail_pct:g}% (outside noise): {names}")
