"""The table beside the roofline: per rung its intensity, achieved FLOP/s, roof, % of roof, bound and headroom."""

from __future__ import annotations

from gemmprof.render.table import Column, Table


def roofline_table(data) -> Table:
    """One row per rung: the numbers behind its plotted points, its roof, bound and headroom."""
    from gemmprof.model.roofline import LEVELS
    from gemmprof.model.traffic import gemm_flops

    ncu = any(r.point("dram") or r.point("l2") for r in data.rungs)
    rows, above = [], []
    for r in data.rungs:
        p = r.main
        compute, dram = data.roof(r)
        roof = data.attainable(r, p.intensity)
        row = {"id": r.id, "name": r.name, "dtype": r.dtype, "basis": LEVELS[p.level], "ai": p.intensity,
               "tflops": p.flops_per_s / 1e12, "roof_name": compute.name if compute else None,
               "roof_tflops": roof / 1e12 if roof else None, "pct_roof": 100 * p.flops_per_s / roof if roof else None,
               "bound": ("memory" if p.intensity < compute.value / dram.value else "compute") if roof else None,
               "headroom_tflops": (roof - p.flops_per_s) / 1e12 if roof else None,
               "headroom_x": roof / p.flops_per_s if roof else None}
        row.update(held_mhz=r.held_mhz, tflop_per_joule=r.tflop_per_joule)
        if ncu:
            d, l2 = r.point("dram"), r.point("l2")
            row.update(ai_dram=d.intensity if d else None, ai_l2=l2.intensity if l2 else None,
                       ncu_tflops=(d or l2).flops_per_s / 1e12 if d or l2 else None)
        if roof and p.flops_per_s > roof * 1.001:
            above.append(r.short)
        rows.append(row)
    cols = [Column("id", "rung", fmt="s"), Column("name", "name", fmt="s"), Column("dtype", "dtype", fmt="s"),
            Column("basis", "AI from", fmt="s"), Column("ai", "AI", "FLOP/B", ".3g"),
            Column("tflops", "attainable TFLOP/s" if data.estimate else "TFLOP/s", fmt=".2f"),
            Column("roof_tflops", "roof", "TFLOP/s", ".1f"),
            Column("pct_roof", "% roof", fmt=".1f"), Column("bound", "bound", fmt="s"),
            Column("headroom_tflops", "headroom", "TFLOP/s", ".1f"), Column("headroom_x", "headroom", "x", ".2f")]
    if data.estimate:  # on the roof by construction: no headroom to show, but the time the roof allows
        for row in rows:
            row["time_ms"] = gemm_flops(data.shape) / (row["tflops"] * 1e12) * 1e3
        keep = ("id", "name", "dtype", "ai", "tflops", "bound")
        cols = [c for c in cols if c.key in keep] + [Column("time_ms", "time at roof", "ms", ".4g")]
    if any(r.held_mhz for r in data.rungs):
        cols.append(Column("held_mhz", "clock held", "MHz", ".0f"))
    if any(r.tflop_per_joule for r in data.rungs):
        cols.append(Column("tflop_per_joule", "TFLOP/J", fmt=".3f"))
    if ncu:
        cols += [Column("ai_dram", "AI DRAM", "FLOP/B", ".3g"), Column("ai_l2", "AI L2", "FLOP/B", ".3g"),
                 Column("ncu_tflops", "ncu TFLOP/s", fmt=".2f")]
    return Table(data.title, cols, rows, _notes(data, above), meta=_meta(data))


def _notes(data, above: list[str]) -> list[str]:
    from gemmprof.model.roofline import ROOF_NAMES

    src = "measured" if data.source == "measured" else "datasheet"
    kinds = ", ".join(f"{d} -> {ROOF_NAMES[k]}" for d, k in dict.fromkeys((r.dtype, r.peak_kind) for r in data.rungs))
    notes = [f"roof: the ceiling at the rung's AI, min(peak of its dtype ({kinds}), AI x DRAM bandwidth), {src} "
             f"ceilings of {data.gpu_spec.name} (dense rates); bound: memory below the ridge point, compute above it."]
    if data.estimate:
        notes.append("model only: each rung sits on the roof at its traffic model's intensity (A and B re-read per "
                     "block tile, no cache hits); the heights are estimates, not measurements.")
    if any(r.main.level == "min" for r in data.rungs):
        notes.append("cuBLAS has no traffic model: its intensity is the minimum-traffic one (A and B read once, C "
                     "written once), the most any kernel could reach.")
    if above:
        notes.append("above the roof at their model intensity (the caches served reuse that the no-cache traffic "
                     "model does not count): " + ", ".join(above))
    notes += data.notes
    if data.excluded:
        notes.append("not plotted: " + "; ".join(data.excluded))
    return notes


def _meta(data) -> dict:
    return {"gpu": data.gpu, "gpu_spec": data.gpu_spec.key, "shape": data.shape.to_dict(), "estimate": data.estimate,
            "ceilings": [c.to_dict() for c in data.ceilings], "ridges": [r.to_dict() for r in data.ridges],
            "points": [{"id": r.id, "name": r.name, "level": p.level, "intensity": p.intensity,
                        "flops_per_s": p.flops_per_s} for r in data.rungs for p in r.points]}
