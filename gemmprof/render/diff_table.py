"""The table `gemmprof diff` prints."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.results.diff import DiffRow, Mismatch
from gemmprof.results.run import RunResult


def diff_table(old: RunResult, new: RunResult, rows: list[DiffRow], old_name: str, new_name: str,
               forced: list[Mismatch] = ()) -> Table:
    cols = [Column("variant", "variant", fmt="s"), Column("dtype", "dtype", fmt="s", drop=1),
            Column("old_median_ms", "old median", "ms", ".4g"), Column("new_median_ms", "new median", "ms", ".4g"),
            Column("time_change_pct", "time change", "%", "+.1f", drop=-1), Column("old_tflops", "old", "TFLOP/s", ".2f"),
            Column("new_tflops", "new", "TFLOP/s", ".2f"), Column("tflops_change_pct", "TFLOP/s change", "%", "+.1f"),
            Column("noise_pct", "noise", "%", ".1f"), Column("verdict", "verdict", fmt="s", drop=-2)]
    if any(r.changed for r in rows):
        cols.append(Column("changed", "also changed", fmt="s"))
    title = f"gemmprof diff: {old_name} -> {new_name} ({new.shape.label} on {new.device.get('name', '?')})"
    notes = ["time change = new median / old median - 1 (positive: slower). noise = max(old spread, new spread, 1%), "
             "spread = IQR / median; a change within it is 'within noise'."]
    changed = [r for r in rows if r.changed]
    if changed:
        notes.append(f"{len(changed)} variant(s) changed more than their code's speed (compiler, dtype, name): "
                     + "; ".join(f"{r.key}: {r.changed}" for r in changed))
    if forced:
        notes.append("compared with --force although they differ: " + "; ".join(m.describe() for m in forced))
    meta = {"old": old_name, "new": new_name, "shape": new.shape.to_dict(),
            "mismatches": [m.describe() for m in forced]}
    return Table(title, cols, [r.to_dict() for r in rows], notes, meta)
