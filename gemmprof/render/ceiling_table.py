"""The views of measured ceilings: each beside the datasheet's figure (also at the clock it held), and every point
of the scans behind them."""

from __future__ import annotations

from gemmprof.catalog.ceilings import datasheet
from gemmprof.render.table import Column, Table
from gemmprof.results.ceilings import CeilingScan, MeasuredCeiling

NAMES = {"fp32": "fp32 SIMT (SGEMM)", "tf32": "tf32 tensor", "fp16": "fp16 tensor, fp32 acc",
         "bf16": "bf16 tensor, fp32 acc", "dram": "DRAM (read + write)"}


def beside_datasheet(c: MeasuredCeiling, spec) -> dict:
    """A ceiling's row: its figure, the datasheet's, and the share it is of the datasheet (at the datasheet's clock
    and at the clock it held: a GEMM's rate follows the SM clock, so the second says how well the held clock
    was used)."""
    sheet, clock = datasheet(spec, c) if spec is not None else (None, None)
    at_held = sheet * c.held_mhz / clock if sheet and clock and c.held_mhz else None
    return {"ceiling": NAMES.get(c.key, c.key), "key": c.key, "regime": c.regime, "value": c.value, "unit": c.unit,
            "datasheet": sheet, "pct_datasheet": 100 * c.value / sheet if sheet else None,
            "datasheet_at_held": at_held, "pct_at_held": 100 * c.value / at_held if at_held else None,
            "where": c.where, "source": c.source, "held_mhz": c.held_mhz, "power_w": c.power_w,
            "warm_up": c.warm_up, "measured_at": c.measured_at, "device": c.device}


COLUMNS = [Column("ceiling", "ceiling", fmt="s"), Column("regime", "regime", fmt="s"),
           Column("value", "measured", fmt=".1f"), Column("unit", "unit", fmt="s"),
           Column("datasheet", "datasheet", fmt=".1f"), Column("pct_datasheet", "% datasheet", fmt=".1f"),
           Column("pct_at_held", "% at held clock", fmt=".1f"), Column("held_mhz", "held", "MHz", ".0f"),
           Column("power_w", "power", "W", ".0f"), Column("where", "best at", fmt="s"),
           Column("warm_up", "warm-up", fmt="s")]


def ceiling_table(scans: list[CeilingScan], spec, device: str) -> Table:
    rows = []
    for s in scans:
        if s.ceiling is not None:
            row = beside_datasheet(s.ceiling, spec)
            if s.failed:
                row["warm_up"] = f"{row['warm_up']}; {len(s.failed)} of {len(s.points)} points failed".lstrip("; ")
            rows.append(row)
        else:
            rows.append({"ceiling": NAMES.get(s.key, s.key), "key": s.key, "regime": s.regime, "value": None,
                         "warm_up": f"not measured: every point failed ({s.points[0].message})"})
    notes = ["burst: a cold card's first calls (its boost clock); sustained: the card warmed until NVML's SM clock "
             "and power settled, then timed (what it holds under load, at its power cap).",
             "% at held clock: the datasheet's figure scaled to the SM clock held while timed (the DRAM figure "
             "counts the bytes read plus the bytes written)."]
    if spec is not None and device and device not in spec.cuda_names:
        notes.append(f"datasheet figures of {spec.name}; measured on {device}")
    return Table(f"Measured ceilings of {device}" + (f" beside the {spec.name} datasheet" if spec else ""),
                 COLUMNS, rows, notes, meta={"device": device, "gpu_spec": spec.key if spec else None})


def scan_table(scans: list[CeilingScan]) -> Table:
    rows = [{"ceiling": NAMES.get(s.key, s.key), "regime": s.regime, "source": s.source, **p.to_dict(),
             "unit": s.ceiling.unit if s.ceiling else ("GB/s" if s.kind == "memory" else "TFLOP/s"),
             "best": s.ceiling is not None and p is _best(s)} for s in scans for p in s.points]
    cols = [Column("ceiling", "ceiling", fmt="s"), Column("regime", "regime", fmt="s"),
            Column("what", "shape", fmt="s"), Column("value", "measured", fmt=".1f"), Column("unit", "unit", fmt="s"),
            Column("median_ms", "median", "ms", ".4f"), Column("spread", "spread", fmt=".1%"),
            Column("held_mhz", "held", "MHz", ".0f"), Column("power_w", "power", "W", ".0f"),
            Column("best", "best", fmt=""), Column("status", "status", fmt="s"), Column("message", "note", fmt="s")]
    return Table("Every point of the scans (cuBLAS per shape; the copy)", cols, rows)


def _best(s: CeilingScan):
    return next((p for p in s.points if p.passed and p.value == s.ceiling.value and p.what == s.ceiling.where), None)
