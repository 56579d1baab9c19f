"""A shape sweep as tables: a row per shape (% of the baseline per variant, the best), then the geometric mean and the
minimum of each column; and the headline: per dtype and variant the geometric mean and minimum with and without the
shapes where the baseline collapsed, and fast_p."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.results.stages import TURN_DRIFT
from gemmprof.results.sweep import BEST, COLLAPSE, CUBLAS, SweepSummary


def baseline_words(sweep: SweepSummary) -> str:
    if sweep.baseline == CUBLAS:
        return f"cuBLAS ({sweep.dtype} inputs, the variant's C dtype)"
    return sweep.baseline


def sweep_table(sweep: SweepSummary) -> Table:
    variants = sweep.variants
    layered = bool(sweep.layers)
    rows = []
    for s in sweep.shapes:
        best, best_pct = sweep.best_at(s)
        rows.append({"shape": s.label, **({"layer": sweep.layer(s)} if layered else {}),
                     **{v: sweep.pct(v, s) for v in variants}, "best_pct": best_pct, "best_rung": best,
                     "base_tflops": sweep.base_tflops(s)})
    summaries = {r.variant: r for r in sweep.rungs}
    n = len(sweep.shapes)
    rows.append({"shape": "geometric mean", **{v: summaries[v].geomean_pct for v in variants},
                 "best_pct": sweep.best.geomean_pct, "best_rung": None})
    rows.append({"shape": "minimum", **{v: summaries[v].min_pct for v in variants}, "best_pct": sweep.best.min_pct,
                 "best_rung": None})
    unit = "% base"
    cols = [Column("shape", "shape", fmt="s"), *([Column("layer", "layer", fmt="s")] if layered else []),
            *(Column(v, v, unit, ".1f") for v in variants), Column("best_pct", "best", unit, ".1f"),
            Column("best_rung", "best variant", fmt="s"), Column("base_tflops", "baseline", "TFLOP/s", ".1f")]
    notes = [f"% of {baseline_words(sweep)} in the same run, one `gemmprof run` per shape, on {sweep.device or '?'}; "
             f"means and minima over the shapes each variant ran ({n} shapes in all)"
             + (f"; the shapes of {sweep.model}'s layers" if sweep.model else "") + ".",
             "minimum at: " + "; ".join(f"{r.variant} {r.min_shape}" for r in (*sweep.rungs, sweep.best) if r.min_shape)]
    if sweep.confirmed:
        shapes = len({c.shape for c in sweep.confirmed})
        notes.append(f"best: at {shapes} of {n} shapes the highest of the contenders (the first run's best and the "
                     "variants close to it), each timed again beside the baseline alone, in turns (the columns before "
                     "it are the first run's)")
    for r in (*sweep.rungs, sweep.best):
        if r.missing:
            why = {c.shape.label: c.status for c in sweep.cells if c.variant == r.variant}
            notes.append(f"{r.variant}: no % of the baseline at " + ", ".join(f"{m} ({why.get(m, 'no result')})"
                                                                           for m in r.missing))
    return Table(f"gemmprof shape sweep: {len(variants)} variants x {n} shapes ({sweep.dtype})", cols, rows, notes)


HEADLINE_COLUMNS = [
    Column("dtype", "dtype", fmt="s"), Column("variant", "variant", fmt="s", drop=0), Column("shapes", "shapes"),
    Column("geomean_pct", "geomean", "% base", ".1f"), Column("min_pct", "min", "% base", ".1f"),
    Column("min_shape", "min at", fmt="s"), Column("fast_p", "fast_p", "share", ".2f"),
    Column("sound_geomean_pct", "geomean excl", "% base", ".1f"),
    Column("sound_min_pct", "min excl", "% base", ".1f"),
]


def _drift_range(cells) -> str:
    """'5.5-12.9% slower late', or with some faster late: '-5.7% to +8.0% late'."""
    lo, hi = min(c.drift for c in cells), max(c.drift for c in cells)
    if lo > 0:
        return f"{lo:.1%}-{hi:.1%} slower late" if hi > lo else f"{lo:.1%} slower late"
    if hi < 0:
        return f"{-hi:.1%}-{-lo:.1%} faster late" if hi > lo else f"{-lo:.1%} faster late"
    return f"{lo:+.1%} to {hi:+.1%} late"


def headline_table(sweeps: list[SweepSummary]) -> Table:
    """The honest summary of one or more sweeps (one per dtype, kept apart): the best variant per shape, the
    highlighted variants, then the rest; each with and without the shapes where the baseline collapsed."""
    rows, notes = [], []
    for sweep in sweeps:
        for r in sweep.headline():
            mark = " (highlight)" if r.variant in sweep.highlight else ""
            rows.append({"dtype": sweep.dtype, "variant": r.variant + mark, "shapes": r.shapes,
                         "geomean_pct": r.geomean_pct, "min_pct": r.min_pct, "min_shape": r.min_shape,
                         "fast_p": r.fast_p, "fast": r.fast, "judged": r.judged,
                         "sound_shapes": r.sound_shapes, "sound_geomean_pct": r.sound_geomean_pct,
                         "sound_min_pct": r.sound_min_pct, "sound_min_shape": r.sound_min_shape})
        collapsed = sweep.collapsed
        notes.append(f"{sweep.dtype}: " + (
            f"the baseline collapsed (below 1/{COLLAPSE:g} of the best variant) at {len(collapsed)} of "
            f"{len(sweep.shapes)} shapes: " + ", ".join(f"{s.label} (best {sweep.best_at(s)[1]:.0f}%)"
                                                         for s in collapsed)
            if collapsed else f"the baseline ran at least 1/{COLLAPSE:g} of the best variant at every shape"))
        drifted = sweep.drifted()
        if drifted:
            notes.append(f"{sweep.dtype}: figures that depend on how long a turn lasted (launches late in a turn more "
                         f"than {TURN_DRIFT:.0%} off early ones; each run's note names them): " + ", ".join(
                             f"{name} at {len(cs)} of {len(sweep.shapes)} shapes ({_drift_range(cs)})"
                             for name, cs in drifted.items()) + "; time such a variant again with a longer --budget "
                         "before trusting its order")
        for name in sweep.highlight:
            if name not in sweep.variants:
                notes.append(f"{sweep.dtype}: highlight {name}: no such variant in the sweep "
                             f"(it has {', '.join(sweep.variants) or 'none'})")
    p = sweeps[0].p if sweeps else 1.0
    bases = ", ".join(dict.fromkeys(baseline_words(s) for s in sweeps))
    notes.insert(0, f"% of {bases}; fast_p: the share of the shapes where the baseline ran at which the variant is "
                    f"correct and at least {p:g}x the baseline (p = {p:g}); excl: excluding the shapes where the "
                    f"baseline collapsed (ran below 1/{COLLAPSE:g} of the best variant); '{BEST}': the highest at each shape")
    return Table("gemmprof sweep: headline per dtype (geometric mean, minimum, fast_p)", HEADLINE_COLUMNS, rows, notes)
