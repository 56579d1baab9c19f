"""What limits a kernel gemmprof has no model of (a Python callable: Triton, torch, CuTe DSL), from ncu's measurement
of its launch alone: how busy each unit was, the grid it launched, the occupancy it achieved and where its warps
stalled; and the evidence that is missing for the rest.

Each throughput limiter is the time its unit needed at its peak: the tensor pipe's busy share of the duration (the
SM's busiest unit for a kernel without tensor cores), DRAM's throughput share, and the bytes ncu saw through L2 at
the GPU spec's L2 bandwidth. Overheads: the launched grid's partial wave (blocks over the SMs times the blocks that
fit on one, from ncu's occupancy limits) and math on padding (tensor FLOPs executed beyond the GEMM's 2*M*N*K).
Latency: the measured time beyond the largest throughput bound at the share of peak kernels attain, with the stall
reasons. Ranked by the speedup lifting each predicts, as gemmprof.model.explain ranks a modelled kernel's.

Without the kernel's binary and source gemmprof has no SASS (no issue-slot limiter; mma.sync and wgmma look alike),
no access model (bank conflicts and coalescing only as ncu counted them) and no traffic model beyond the minimum:
the explanation says so, with every ncu figure the profile lacks.
"""

from __future__ import annotations

from gemmprof.model.explain import ATTAINABLE, Explanation, Limiter
from gemmprof.model.explain_bounds import L2_BYTES_PER_CLOCK, LATENCY_STALLS
from gemmprof.model.traffic import GemmShape, gemm_flops, get_dtype, min_bytes

PADDING = 1.05  # executed tensor FLOPs beyond this many times 2*M*N*K: padding rows or columns were computed

LIFTS = {
    "tensor_pipe": "more of the time in MMAs: deeper pipelining or warp specialization so loads never stall the "
                   "math (the pipe at its peak is the end)",
    "sm_throughput": "tensor cores, or fewer instructions per FMA (larger register tiles)",
    "dram": "more reuse per byte: larger tiles, or a block order that keeps shared tiles in L2 (grouped rows)",
    "l2": "larger tiles, or clusters with TMA multicast: one L2 read of a shared tile feeds several SMs",
    "waves": "fill the SMs: smaller tiles, split-K or stream-K, or a persistent grid with a tile scheduler",
    "padding": "tiles that fit the shape: a smaller tile along the short side, or swap A and B so the few rows are "
               "the MMA's N",
}


def _stall_lift(stall: str | None) -> str:
    if stall in ("long_scoreboard", "barrier"):
        return "keep more loads in flight during the math: more pipeline stages, or producer warps (TMA)"
    if stall in ("wait", "gmma"):
        return "fewer waits on the MMAs' results: asynchronous MMAs (wgmma) over several stages, or two consumer " \
               "warpgroups taking turns"
    if stall in ("short_scoreboard", "mio_throttle"):
        return "fewer, wider shared-memory loads (ldmatrix, TMA into swizzled tiles)"
    if stall in ("dispatch_stall", "math_pipe_throttle", "not_selected"):
        return "the warps were ready and a unit was busy: more independent work per warp, or fewer warps"
    return "more warps or more independent work per warp (occupancy, pipelining)"


def _blocks_per_sm(launch) -> int | None:
    limits = launch.occupancy.limits_ncu or launch.occupancy.limits_gemmprof
    return min(limits.values()) if limits else None


def explain_launch(launch, shape: GemmShape, dtype: str, gpu, name: str, others=()) -> Explanation:
    """Rank what limits `launch` (a LaunchFindings of the callable at `shape`, its longest kernel); `others`: the
    callable's other launches at that shape (their share of the time is named)."""
    dt = get_dtype(dtype)
    flops = gemm_flops(shape)
    peak = gpu.peak_flops(dt.peak_kind)
    sms = gpu.sm_count
    l2_bw = gpu.l2_bandwidth_gbs * 1e9 if gpu.l2_bandwidth_gbs else L2_BYTES_PER_CLOCK * gpu.boost_clock_mhz * 1e6
    dram_bw = gpu.measured.get("dram_bandwidth_gbs", gpu.dram_bandwidth_gbs) * 1e9
    lacks: list[str] = ["SASS (gemmprof does not see the callable's binary: no issue-slot limiter, mma.sync and "
                        "wgmma alike)", "an access or traffic model (no spec: bank conflicts and coalescing only as "
                        "ncu counted them)"]
    d = launch.duration_ns * 1e-9 if launch.duration_ns else None
    if d is None:
        lacks.append("the duration (SpeedOfLight section): nothing is ranked without it")
        return Explanation("py", name, dtype, (shape.M, shape.N, shape.K), gpu.name, None, flops / peak / ATTAINABLE,
                           (), (), ("latency",), (f"evidence it lacks: {'; '.join(lacks)}",))
    bounds: list[tuple[str, float, str]] = []  # (kind, seconds, evidence)
    math_s = flops / peak
    tp = launch.tensor_pipe_pct
    if tp:
        bounds.append(("tensor_pipe", d * tp / 100,
                       f"ncu: tensor pipe {tp:.1f}% busy: {d * tp / 100 * 1e3:.3f} ms of the {d * 1e3:.3f} ms at its "
                       f"peak (the GEMM's {flops / 1e9:.0f} GFLOP at the {peak / 1e12:.0f} TFLOP/s {dtype} peak: "
                       f"{math_s * 1e3:.3f} ms)"))
    elif launch.sol_compute_pct:
        if dtype != "fp32":
            lacks.append("tensor-pipe utilisation (sm__pipe_tensor_op_hmma_cycles_active): SM throughput stands in")
        bounds.append(("sm_throughput", d * launch.sol_compute_pct / 100,
                       f"ncu: SM throughput {launch.sol_compute_pct:.1f}% of peak (its busiest unit)"))
    else:
        lacks.append("compute throughput (tensor pipe or SM %): no compute limiter")
    mb = min_bytes(shape, dt).total
    if launch.sol_dram_pct:
        moved = f"{launch.dram_bytes / 1e9:.2f} GB" if launch.dram_bytes else "bytes not counted"
        bounds.append(("dram", d * launch.sol_dram_pct / 100,
                       f"ncu: DRAM {launch.sol_dram_pct:.1f}% of peak ({moved}; A, B read and C written once: "
                       f"{mb / 1e9:.2f} GB)"))
    elif launch.dram_bytes:
        bounds.append(("dram", launch.dram_bytes / dram_bw, f"ncu: {launch.dram_bytes / 1e9:.2f} GB from DRAM at "
                       f"{dram_bw / 1e12:.2f} TB/s (A, B read and C written once: {mb / 1e9:.2f} GB)"))
    else:
        lacks.append("DRAM throughput or bytes (dram__bytes): no DRAM limiter")
    if launch.l2_bytes:
        t = launch.l2_bytes / l2_bw
        bounds.append(("l2", t, f"ncu: {launch.l2_bytes / 1e9:.2f} GB through L2, {launch.l2_bytes / d / 1e12:.1f} "
                       f"TB/s of {l2_bw / 1e12:.1f} TB/s ({100 * t / d:.0f}%)"))
    else:
        lacks.append("L2 bytes (lts__t_bytes): no L2 limiter")
    top_s = max((b for _, b, _ in bounds), default=math_s)
    limiters = []
    for kind, b, ev in bounds:
        others_s = max([o for k, o, _ in bounds if k != kind] + [math_s])  # lifted, no unit beats the peak
        gain = max(1.0, b / others_s) if others_s else None
        limiters.append(Limiter(kind, ev, "ncu", b, flops / b / 1e12, gain, None, None, LIFTS[kind]))
    # the launched grid against the SMs: a partial wave leaves SMs idle
    bps = _blocks_per_sm(launch)
    if launch.grid:
        blocks = launch.grid[0] * launch.grid[1] * launch.grid[2]
        per_sm = bps or 1
        if bps is None:
            lacks.append("occupancy limits (Occupancy section): one block per SM assumed for the waves")
        slots = sms * per_sm
        rounds = -(-blocks // slots)
        eff = blocks / (rounds * slots)
        if eff < 0.999:
            ev = (f"{blocks} blocks launched on {sms} SMs x {per_sm} block(s) each: {blocks / slots:.2f} waves, "
                  f"{100 * eff:.0f}% of the SMs' time used" + (f" ({slots - blocks} SM slots idle)"
                                                              if blocks < slots else ""))
            floor = max(math_s, mb / dram_bw)  # what the whole GPU would need, every SM busy
            gain = min(1 / eff, d / floor) if floor else 1 / eff
            limiters.append(Limiter("waves", ev, "ncu", d * (1 - eff), None, max(1.0, gain), None, None,
                                    LIFTS["waves"]))
    else:
        lacks.append("the launched grid (LaunchStats section): no waves")
    executed = launch.flops_tensor
    if executed and executed > PADDING * flops:
        ratio = executed / flops
        limiters.append(Limiter("padding", f"ncu: {executed / 1e9:.0f} GFLOP executed on tensor cores, {ratio:.2f}x "
                                f"the GEMM's {flops / 1e9:.0f} GFLOP (rows or columns of padding computed)", "ncu",
                                d * (1 - 1 / ratio), None, ratio if tp and tp > 50 else None, None, None,
                                LIFTS["padding"]))
    # latency: the time beyond the largest throughput bound, with what the warps waited on
    occ = launch.occupancy
    parts = [f"measured {d * 1e3:.3f} ms against {top_s / ATTAINABLE * 1e3:.3f} ms at {100 * ATTAINABLE:.0f}% of "
             "the largest throughput bound"]
    if occ.achieved_pct is not None:
        theo = f" of {occ.theoretical_pct_ncu:.1f}% theoretical" if occ.theoretical_pct_ncu is not None else ""
        why = f", limited by {', '.join(occ.limiters_ncu)}" if occ.limiters_ncu else ""
        parts.append(f"occupancy {occ.achieved_pct:.1f}% achieved{theo}{why}")
    else:
        lacks.append("achieved occupancy (Occupancy section)")
    lat = {k: v for k, v in launch.stalls.items() if k in LATENCY_STALLS or k in ("dispatch_stall", "mio_throttle",
                                                                                 "math_pipe_throttle")}
    worst = max(lat, key=lat.get) if lat else None
    if launch.stalls:
        parts.append("stalls: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in sorted(
            launch.stalls.items(), key=lambda kv: -kv[1])[:3] if v >= 0.01))
    else:
        lacks.append("stall reasons (WarpStateStats section)")
    limiters.append(Limiter("latency", "; ".join(parts), "ncu", d, flops / d / 1e12,
                            max(1.0, d / (top_s / ATTAINABLE)), None, None, _stall_lift(worst)))
    limiters.sort(key=lambda lim: -(lim.gain or 0.0))
    notes = [f"no model of this kernel: every limiter rests on ncu's measurement of its launch "
             f"({launch.kernel_name or '?'}, grid {launch.grid}, block {launch.block}, "
             f"{occ.registers if occ.registers is not None else '?'} registers)"]
    total = d + sum((o.duration_ns or 0) * 1e-9 for o in others)
    if others:
        notes.append(f"{len(others)} more kernel(s) of this callable at this shape take "
                     f"{100 * (total - d) / total:.0f}% of its GPU time: "
                     + ", ".join(f"{o.kernel_name} {(o.duration_ns or 0) / 1e3:.1f} us" for o in others))
    notes.append(f"evidence it lacks: {'; '.join(lacks)}")
    return Explanation("py", name, dtype, (shape.M, shape.N, shape.K), gpu.name, d, top_s / ATTAINABLE,
                       tuple(limiters), (), (), tuple(notes), None, occ.registers)
