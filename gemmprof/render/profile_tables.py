"""The tables `gemmprof profile` prints: speed of light and occupancy, traffic and FLOPs, stalls, ncu's advice.

As a table (the default) all four are printed; JSON is one document, the profile results file itself (see
gemmprof.results.profile) with the flat per-launch rows beside it; CSV is the flat per-launch rows.
"""

from __future__ import annotations

from gemmprof.adapters.kernel_names import base_kernel_name
from gemmprof.adapters.ncu.findings import LaunchFindings
from gemmprof.render.table import Column, Table, choose_format, emit, emit_many
from gemmprof.results.profile import ProfileResults

C = Column


def _r(a, b):
    return a / b if a is not None and b else None


def _mb(x):
    return x / 1e6 if x is not None else None


def _check(f: LaunchFindings) -> str | None:
    agrees = f.occupancy.agrees
    return None if agrees is None else ("ok" if agrees else "DIFFERS")


_SHORT = {"registers": "regs", "shared memory": "smem", "warps": "warps", "blocks": "blocks", "barriers": "barriers"}


def _limiters(names) -> str | None:
    return ", ".join(_SHORT.get(n, n) for n in names) or None


def flat_row(f: LaunchFindings, top: int = 3) -> dict:
    oc, sm = f.occupancy, f.smem
    row = {
        "variant": f.variant if f.nvtx_range else base_kernel_name(f.kernel_name),
        "kernel": base_kernel_name(f.kernel_name), "id": f.id,
        "shape": f.shape.label if f.shape else None, "dtype": f.dtype,
        "duration_us": f.duration_ns / 1e3 if f.duration_ns is not None else None,
        "sol_compute_pct": f.sol_compute_pct, "sol_memory_pct": f.sol_memory_pct, "tensor_pipe_pct": f.tensor_pipe_pct,
        "achieved_occupancy_pct": oc.achieved_pct, "theoretical_occupancy_pct_ncu": oc.theoretical_pct_ncu,
        "theoretical_occupancy_pct_gemmprof": oc.theoretical_pct_gemmprof,
        "limiter_ncu": _limiters(oc.limiters_ncu), "limiter_gemmprof": _limiters(oc.limiters_gemmprof),
        "occupancy_check": _check(f),
        "dram_mb": _mb(f.dram_bytes), "dram_vs_min": _r(f.dram_bytes, f.model_min_bytes),
        "dram_vs_tiled": _r(f.dram_bytes, f.model_tiled_bytes), "l2_mb": _mb(f.l2_bytes),
        "l2_vs_tiled": _r(f.l2_bytes, f.model_tiled_bytes), "l1_mb": _mb(f.l1_bytes),
        "gflop_executed": f.flops_executed / 1e9 if f.flops_executed is not None else None,
        "executed_vs_model": _r(f.flops_executed, f.flops_model), "ai_dram": f.ai_dram, "ai_l2": f.ai_l2,
        "tflops": f.achieved_flops_per_s / 1e12 if f.achieved_flops_per_s else None,
        "warp_cycles_per_issue": f.warp_cycles_per_issue,
        "ld_conflicts": sm.ld_conflicts, "st_conflicts": sm.st_conflicts,
        "ld_conflicts_per_request": sm.per("ld", "requests"), "st_conflicts_per_request": sm.per("st", "requests"),
        "ld_conflicts_per_wavefront": sm.per("ld", "wavefronts"),
        "st_conflicts_per_wavefront": sm.per("st", "wavefronts"),
    }
    for i, (reason, share) in enumerate(list(f.stalls.items())[:top], 1):
        row[f"stall_{i}"] = f"{reason} {100 * share:.0f}%"
    row.update(_access_cells(f))
    return row


_ACCESS_QUANTITIES = {"smem_ld_conflicts_per_request": "ld_conf", "smem_st_conflicts_per_request": "st_conf",
                      "smem_ld_wavefronts_per_request": "ld_wf", "smem_st_wavefronts_per_request": "st_wf",
                      "gmem_sectors": "sectors", "smem_ld_wavefronts_addressed": "ld_wf_addr",
                      "smem_st_wavefronts_addressed": "st_wf_addr"}


def _access_cells(f: LaunchFindings) -> dict:
    if f.accesses is None:
        return {}
    out: dict = {"access_check": f.accesses.check}
    for q, key in _ACCESS_QUANTITIES.items():
        c = f.accesses.get(q)
        if c is not None:
            scale = 1e6 if q == "gmem_sectors" or q.endswith("_addressed") else 1
            out[f"model_{key}"], out[f"ncu_{key}"] = c.predicted / scale, c.ncu / scale
    return out


def _access_notes(f: LaunchFindings) -> list[str]:
    out = []
    for c in f.accesses.comparisons if f.accesses else ():
        if c.check == "DIFFERS":
            out.append(f"{f.variant}: access model and ncu DIFFER on {c.quantity}: model {c.predicted:.4g}, "
                       f"ncu {c.ncu:.4g} (more than 10% apart, and the rung's spec has no note saying why)")
        elif c.check == "explained":
            out.append(f"{f.variant}: {c.quantity}: model {c.predicted:.4g}, ncu {c.ncu:.4g}: {c.why}")
    return out


ACCESS_COLUMNS = [C("variant", "variant", fmt="s"),
                  C("model_ld_conf", "ld conflicts/req model", fmt=".2f"), C("ncu_ld_conf", "ncu", fmt=".2f"),
                  C("model_st_conf", "st conflicts/req model", fmt=".2f"), C("ncu_st_conf", "ncu", fmt=".2f"),
                  C("model_ld_wf", "ld wavefronts/req model", fmt=".2f"), C("ncu_ld_wf", "ncu", fmt=".2f"),
                  C("model_st_wf", "st wavefronts/req model", fmt=".2f"), C("ncu_st_wf", "ncu", fmt=".2f"),
                  C("model_sectors", "L1 sectors model", "M", ".4g"), C("ncu_sectors", "ncu", "M", ".4g"),
                  C("model_ld_wf_addr", "ld wavefronts by address model", "M", ".4g"),
                  C("ncu_ld_wf_addr", "ncu SASS", "M", ".4g"),
                  C("model_st_wf_addr", "st wavefronts by address model", "M", ".4g"),
                  C("ncu_st_wf_addr", "ncu SASS", "M", ".4g"),
                  C("access_check", "check", fmt="s")]


SOL_COLUMNS = [C("variant", "variant", fmt="s"), C("kernel", "kernel", fmt="s"), C("duration_us", "time", "us", ".1f"),
               C("sol_compute_pct", "SOL SM", "%", ".1f"), C("sol_memory_pct", "SOL mem", "%", ".1f"),
               C("tensor_pipe_pct", "tensor pipe", "%", ".1f"), C("achieved_occupancy_pct", "occ. achieved", "%", ".1f"),
               C("theoretical_occupancy_pct_ncu", "theoretical ncu", "%", ".1f"),
               C("theoretical_occupancy_pct_gemmprof", "gemmprof", "%", ".1f"),
               C("limiter_ncu", "limiter (ncu)", fmt="s"), C("occupancy_check", "check", fmt="s")]
TRAFFIC_COLUMNS = [C("variant", "variant", fmt="s"), C("dram_mb", "DRAM", "MB", ".2f"),
                   C("dram_vs_min", "x min", fmt=".3g"), C("dram_vs_tiled", "x tiled", fmt=".3g"),
                   C("l2_mb", "L2", "MB", ".1f"), C("l2_vs_tiled", "L2 x tiled", fmt=".3g"),
                   C("l1_mb", "L1", "MB", ".1f"), C("gflop_executed", "executed", "GFLOP", ".3f"),
                   C("executed_vs_model", "x 2MNK", fmt=".4g"), C("ai_dram", "AI DRAM", "FLOP/B", ".1f"),
                   C("ai_l2", "AI L2", "FLOP/B", ".1f"), C("tflops", "achieved", "TFLOP/s", ".2f")]


def _stall_columns(top: int) -> list[Column]:
    return ([C("variant", "variant", fmt="s"), C("warp_cycles_per_issue", "cycles/issue", fmt=".1f")]
            + [C(f"stall_{i}", f"stall {i}", fmt="s", drop=i - top - 1) for i in range(1, top + 1)]  # kept longest
            + [C("ld_conflicts", "smem ld conflicts", fmt=",.0f"), C("ld_conflicts_per_request", "per req", fmt=".2f"),
               C("st_conflicts", "smem st conflicts", fmt=",.0f"), C("st_conflicts_per_request", "per req", fmt=".2f")])


def tables(results: ProfileResults, top: int = 3) -> list[Table]:
    rows = [flat_row(f, top) for f in results.launches]
    where = results.gpu or results.gpu_spec or "unknown GPU"
    notes = list(results.notes)
    for f in results.launches:
        notes += [f"{f.variant}: occupancy differs: {d}" for d in f.occupancy.disagreements]
        notes += [f"{f.variant}: {n}" for n in f.occupancy.notes + f.notes]
    sol = SOL_COLUMNS if any(f.nvtx_range for f in results.launches) else [c for c in SOL_COLUMNS if c.key != "kernel"]
    if all(f.tensor_pipe_pct is None for f in results.launches):  # CSVs from before the metric was asked for
        sol = [c for c in sol if c.key != "tensor_pipe_pct"]
    out = [Table(f"Nsight Compute on {where}: speed of light and occupancy", sol, rows)]
    if any(r.get(c.key) is not None for r in rows for c in TRAFFIC_COLUMNS[1:]):
        out.append(Table("Traffic and FLOPs against the model (x min: over A+B read and C written once; "
                         "x tiled: over the rung's tiling model)", TRAFFIC_COLUMNS, rows))
    stall_cols = _stall_columns(top)
    if any(r.get(c.key) is not None for r in rows for c in stall_cols[1:]):
        out.append(Table("Warp stalls (share of stall cycles) and shared-memory bank conflicts", stall_cols, rows))
    if any(f.accesses for f in results.launches):
        out.append(Table("Shared-memory bank conflicts and global sectors: the access model (the rung's accesses: "
                         "block) beside ncu (per request of ncu's shared-memory instructions, which leave ldmatrix "
                         "out; L1 sectors = l1tex__t_bytes / 32; wavefronts by address: launch totals, ncu's from "
                         "its SASS counters, which count what each instruction's addresses need and nothing the "
                         "hardware adds)", ACCESS_COLUMNS,
                         [r for r in rows if r.get("access_check")]))
        notes += [n for f in results.launches for n in _access_notes(f)]
    advice = [{"variant": f.variant, "type": r.type, "rule": r.name, "speedup": r.speedup, "advice": r.summary}
              for f in results.launches for r in f.rules]
    if advice:
        out.append(Table("ncu's advice", [C("variant", "variant", fmt="s"), C("type", "type", fmt="s"),
                                          C("rule", "rule", fmt="s"), C("speedup", "est. speedup", "%", ".1f"),
                                          C("advice", "advice", fmt="s")], advice))
    out[-1].notes = notes
    return out


def emit_tables(results: ProfileResults, fmt: str | None, output, top: int = 3) -> None:
    fmt_ = choose_format(fmt, output)
    rows = [flat_row(f, top) for f in results.launches]
    if fmt_ in ("json", "csv"):
        cols = list({c.key: c for c in SOL_COLUMNS + TRAFFIC_COLUMNS + _stall_columns(top) + ACCESS_COLUMNS}.values())
        meta = results.to_dict() if fmt_ == "json" else {}
        emit(Table("gemmprof profile", cols, rows, list(results.notes), meta), fmt_, output)
        return
    emit_many(tables(results, top), "table", output)

