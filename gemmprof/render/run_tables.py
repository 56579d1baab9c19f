"""Typed results -> render.Table: the views `run`, `list` and `build` print."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.results.run import RunResult


def _first_line(message: str, width: int = 120) -> str:
    line = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def run_table(result: RunResult) -> Table:
    shape = result.shape
    rows = []
    for v in result.variants:
        base = result.baseline_for(v.dtype)
        ach = v.achieved_flops
        occ = v.occupancy or {}
        rows.append({
            "id": v.id, "name": v.name, "dtype": v.dtype, "status": v.status,
            "compiler": v.build.compiler if v.build else _library(v),
            "median_ms": v.timing.median_ms if v.timing and v.passed else None,
            "min_ms": v.timing.min_ms if v.timing and v.passed else None,
            "spread_pct": v.timing.spread * 100 if v.timing and v.passed else None,
            "stable": v.timing.stable if v.timing and v.passed else None,
            "reps": len(v.timing.samples_ms) if v.timing else None,
            "tflops": ach / 1e12 if ach else None,
            "pct_peak": 100 * ach / v.peak_flops if ach and v.peak_flops else None,
            "pct_cublas": 100 * ach / base.achieved_flops if ach and base and base.achieved_flops else None,
            "ai_model": v.model.model_arithmetic_intensity if v.model else None,
            "registers": v.resources.registers if v.resources else None,
            "smem_bytes": v.resources.static_smem + (v.launch.dynamic_smem if v.launch else 0)
            if v.resources else None,
            "occupancy_pct": 100 * occ["theoretical_occupancy"] if "theoretical_occupancy" in occ else None,
            "rel_error": v.rel_error,
            "message": _first_line(v.message),
            "clock": _clock_cell(v),
        })
    cols = [Column("id", "rung", fmt="s"), Column("name", "name", fmt="s"), Column("compiler", "compiler", fmt="s"),
            Column("status", "status", fmt="s"), Column("median_ms", "median", "ms", ".3f"), Column("min_ms", "min", "ms", ".3f"),
            Column("spread_pct", "spread", "%", ".1f"), Column("tflops", "TFLOP/s", fmt=".2f"),
            Column("pct_peak", "% peak", fmt=".1f"), Column("pct_cublas", "% cuBLAS", fmt=".1f"),
            Column("ai_model", "AI model", "FLOP/B", ".1f"), Column("registers", "regs"),
            Column("smem_bytes", "smem", "B"), Column("occupancy_pct", "occ", "%", ".0f"),
            Column("rel_error", "rel err", fmt=".1e"), Column("message", "note", fmt="s")]
    if any(v.clocks for v in result.variants):
        cols.insert(-1, Column("clock", "SM clock before->after", "MHz", "s"))
    dev = result.device.get("name", "?")
    title = (f"gemmprof run: {shape.label}, alpha={result.alpha:g} beta={result.beta:g} "
             f"on {dev} (peaks from GPU spec {result.gpu_spec})")
    built = sorted({v.build.label for v in result.variants if v.build})
    if built:
        title += "; built by " + ", ".join(built)
    notes = ["% peak is against the GPU spec's datasheet peak for the rung's dtype; % cuBLAS against the cuBLAS row "
             "of the same dtype measured in this run. Spread = IQR/median; above 2% the timing is flagged unstable."]
    tuned = [f"{v.name} ({v.params_source})" for v in result.variants if v.params_source]
    if tuned:
        notes.append("parameters from `gemmprof tune --keep`, not the spec's defaults: " + "; ".join(tuned)
                     + " (--spec-defaults ignores them)")
    unstable = [r["name"] for r in rows if r["stable"] is False]
    if unstable:
        notes.append("unstable timing (spread > 2%): " + ", ".join(unstable))
    fell = [f"{v.name} ({v.clocks.describe()})" for v in result.variants if v.clocks and v.clocks.clock_fell]
    if fell:
        notes.append("CLOCK FELL during timing (SM clock after < 95% of before, or < 90% of max): " + "; ".join(fell))
    return Table(title, cols, rows, notes)


def _library(v) -> str | None:
    """What ran a row that gemmprof did not compile: cuBLAS, torch (torch.matmul) or a Python callable."""
    if v.kind == "callable":
        return "python"
    if v.kind == "baseline":
        return "torch" if v.name == "torch_matmul" else "cuBLAS"
    return None


def _clock_cell(v) -> str | None:
    c = v.clocks
    if c is None:
        return None
    text = f"{c.sm_clock_mhz_before:.0f}->{c.sm_clock_mhz_after:.0f}"
    return text + " FELL" if c.clock_fell else text
