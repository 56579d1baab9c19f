"""A sweep's result as a table: ranked configurations, their re-timing, and the verdict in the notes."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.tune.result import TuneResult, short_params


def to_table(result: TuneResult, top: int | None = 10, all_configs: bool = False) -> Table:
    rows_src = list(result.configs) if all_configs else result.timed[:top] if top else result.timed
    retimed = {}
    if result.verdict is not None:
        retimed = {short_params(c.params, result.axes): c for c in result.verdict.contenders}
    cols = [Column("rank", "#", fmt="d"), Column("tflops", "TFLOP/s", fmt=".2f"),
            Column("median_ms", "median", "ms", ".4f"), Column("spread", "spread", "%", ".1f"),
            Column("retimed_tflops", "re-timed", "TFLOP/s", ".2f"), Column("registers", "regs"),
            Column("status", "status", fmt="s"), *[Column(k, k) for k in result.axes],
            Column("message", "note", fmt="s")]
    rows = []
    for i, c in enumerate(rows_src, start=1):
        again = retimed.get(short_params(c.params, result.axes))
        rows.append({"rank": i, "tflops": c.tflops, "median_ms": c.median_ms,
                     "spread": None if c.spread is None else c.spread * 100,
                     "retimed_tflops": again.tflops if again else None, "registers": c.info.get("registers"),
                     "status": c.status, **{k: c.params.get(k) for k in result.axes}, "message": c.message})
    title = f"gemmprof tune: {result.kernel} ({result.strategy})"
    return Table(title, cols, rows, notes=result.summary_lines(), meta={"tune": {
        k: v for k, v in result.to_dict().items() if k not in ("configs",)}})
