"""A shape sweep's summary written as files beside its runs, never over an earlier summary: the first is summary.json
(the SweepSummary), .csv and .txt (its table; the text also the headline), -headline.csv and .png (the plot, where
matplotlib is installed); later ones summary-UTCTIME.* (and -2, -3 within one second)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from pathlib import Path

from gemmprof.results.sweep import SweepSummary


def fresh_stem(out_dir: Path, stem: str = "summary") -> str:
    """`stem` where no file of that name is there yet, else stem-UTCTIME (and -2, -3 ... within one second)."""
    taken = lambda s: any(Path(out_dir).glob(f"{s}.*")) or any(Path(out_dir).glob(f"{s}-headline.*"))  # noqa: E731
    if not taken(stem):
        return stem
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name, i = f"{stem}-{now}", 2
    while taken(name):
        name, i = f"{stem}-{now}-{i}", i + 1
    return name


def write_summary(sweep: SweepSummary, out_dir: Path, plot: bool = True, say: Callable[[str], None] = print
                  ) -> list[Path]:
    """summary.json (the SweepSummary), .csv and .txt (its table and the headline), -headline.csv and .png (the
    plot, where matplotlib is installed), under a fresh name where a summary is there already."""
    from gemmprof.render.sweep_tables import headline_table, sweep_table
    from gemmprof.render.table import emit, emit_many

    stem = fresh_stem(out_dir)
    base = Path(out_dir) / stem
    written = [base.with_suffix(".json")]
    sweep.save(written[0])
    emit(sweep_table(sweep), output=base.with_suffix(".csv"))
    emit(headline_table([sweep]), output=Path(out_dir) / f"{stem}-headline.csv")
    emit_many([sweep_table(sweep), headline_table([sweep])], output=base.with_suffix(".txt"))
    written += [base.with_suffix(".csv"), Path(out_dir) / f"{stem}-headline.csv", base.with_suffix(".txt")]
    if plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            say("no plot: matplotlib is not installed (pip install matplotlib)")
        else:
            from gemmprof.render.sweep_plot import plot_sweep

            written.append(plot_sweep(sweep, base.with_suffix(".png")))
    return written
