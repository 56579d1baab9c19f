"""Typed results -> pandas DataFrames for notebooks; every column name carries its unit (median_ms, tflops).

pandas is an optional extra (`pip install 'gemmprof[pandas]'`), imported only here.
"""

from __future__ import annotations

from gemmprof.errors import GemmprofError
from gemmprof.results.profile import ProfileResults
from gemmprof.results.run import RunResult


def _pandas():
    try:
        import pandas
    except ImportError:
        raise GemmprofError("to_dataframe() needs pandas: pip install 'gemmprof[pandas]' (or pip install pandas)") \
            from None
    return pandas


def run_rows(result: RunResult) -> list[dict]:
    rows = []
    for v in result.variants:
        timed = v.timing if v.timing and v.passed else None
        base, best = result.baseline_for(v.dtype, v.c_dtype, v.scales), result.cublaslt_for(v.dtype, v.c_dtype)
        ach = v.achieved_flops
        res, launch, occ, clk = v.resources, v.launch, v.occupancy or {}, v.clocks
        rows.append({
            "id": v.id, "name": v.name, "title": v.title, "dtype": v.dtype, "kind": v.kind, "status": v.status,
            "params": dict(v.params),
            "M": result.shape.M, "N": result.shape.N, "K": result.shape.K,
            "median_ms": timed.median_ms if timed else None, "min_ms": timed.min_ms if timed else None,
            "max_ms": timed.max_ms if timed else None, "spread_pct": 100 * timed.spread if timed else None,
            "stable": timed.stable if timed else None, "reps": len(timed.samples_ms) if timed else None,
            "tflops": ach / 1e12 if ach else None,
            "pct_peak": 100 * ach / v.peak_flops if ach and v.peak_flops else None,
            "pct_cublas": 100 * ach / base.achieved_flops if ach and base and base.achieved_flops else None,
            "pct_cublas_of": base.name if ach and base and base.achieved_flops else None,
            "pct_cublaslt": 100 * ach / best.achieved_flops if ach and best and best.achieved_flops else None,
            "pct_cublaslt_of": best.name if ach and best and best.achieved_flops else None,
            "gflop": v.flops / 1e9 if v.flops else None,
            "model_ai_flop_per_byte": v.model.model_arithmetic_intensity if v.model else None,
            "min_ai_flop_per_byte": v.model.min_arithmetic_intensity if v.model else None,
            "registers_per_thread": res.registers if res else None,
            "static_smem_bytes": res.static_smem if res else None,
            "dynamic_smem_bytes": launch.dynamic_smem if launch else None,
            "threads_per_block": launch.threads_per_block if launch else None,
            "theoretical_occupancy_pct": 100 * occ["theoretical_occupancy"] if "theoretical_occupancy" in occ
            else None,
            "rel_error": v.rel_error,
            "sm_clock_mhz_before": clk.sm_clock_mhz_before if clk else None,
            "sm_clock_mhz_after": clk.sm_clock_mhz_after if clk else None,
            "temperature_c_before": clk.temperature_c_before if clk else None,
            "temperature_c_after": clk.temperature_c_after if clk else None,
            "clock_fell": v.clock_fell if clk else None,
            "message": v.message,
        })
    return rows


def run_dataframe(result: RunResult):
    return _pandas().DataFrame(run_rows(result))


def profile_dataframe(results: ProfileResults):
    from gemmprof.render.profile_tables import flat_row

    return _pandas().DataFrame([flat_row(f) for f in results.launches])


def to_dataframe(result: RunResult | ProfileResults):
    """`gemmprof.to_dataframe`: the DataFrame of either result type."""
    if isinstance(result, RunResult):
        return run_dataframe(result)
    if isinstance(result, ProfileResults):
        return profile_dataframe(result)
    raise GemmprofError(f"to_dataframe: expected a RunResult or ProfileResults (from gemmprof.load), "
                     f"not {type(result).__name__}")
