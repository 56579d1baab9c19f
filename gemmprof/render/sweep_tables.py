"""A shape sweep as one table: a row per shape (% of cuBLAS per variant, the best), then the geometric mean and the
minimum of each column."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.results.sweep import SweepSummary


def sweep_table(sweep: SweepSummary) -> Table:
    variants = sweep.variants
    rows = []
    for s in sweep.shapes:
        best, best_pct = sweep.best_at(s)
        rows.append({"shape": s.label, **{v: sweep.pct(v, s) for v in variants}, "best_pct": best_pct,
                     "best_rung": best})
    summaries = {r.variant: r for r in sweep.rungs}
    n = len(sweep.shapes)
    rows.append({"shape": "geometric mean", **{v: summaries[v].geomean_pct for v in variants},
                 "best_pct": sweep.best.geomean_pct, "best_rung": None})
    rows.append({"shape": "minimum", **{v: summaries[v].min_pct for v in variants}, "best_pct": sweep.best.min_pct,
                 "best_rung": None})
    cols = [Column("shape", "shape", fmt="s"), *(Column(v, v, "% cuBLAS", ".1f") for v in variants),
            Column("best_pct", "best", "% cuBLAS", ".1f"), Column("best_rung", "best rung", fmt="s")]
    notes = [f"% of cuBLAS ({sweep.dtype}) in the same run, one `gemmprof run` per shape, on {sweep.device or '?'}; "
             f"means and minima over the shapes each variant ran ({n} shapes in all).",
             "minimum at: " + "; ".join(f"{r.variant} {r.min_shape}" for r in (*sweep.rungs, sweep.best) if r.min_shape)]
    if sweep.confirmed:
        shapes = len({c.shape for c in sweep.confirmed})
        notes.append(f"best: at {shapes} of {n} shapes the highest of the contenders (the first run's best and the "
                     "rungs close to it), each timed again beside cuBLAS alone, in turns (the columns before it are "
                     "the first run's)")
    for r in (*sweep.rungs, sweep.best):
        if r.missing:
            why = {c.shape.label: c.status for c in sweep.cells if c.variant == r.variant}
            notes.append(f"{r.variant}: no % of cuBLAS at " + ", ".join(f"{m} ({why.get(m, 'no result')})"
                                                                        for m in r.missing))
    return Table(f"gemmprof shape sweep: {len(variants)} variants x {n} shapes ({sweep.dtype})", cols, rows, notes)
