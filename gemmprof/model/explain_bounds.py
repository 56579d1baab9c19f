"""The bounds and overheads explain weighs (gemmprof.model.explain ranks them), and the facts they read.

Rates are per SM and clock at the GPU spec's boost clock; each constant says where its figure comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

ISSUE_PER_CLOCK = 4  # warp instructions per SM and clock: 4 schedulers (sm_70 and later)
WAVEFRONTS_PER_CLOCK = 1  # L1 data-pipe wavefronts (128 B) per SM and clock
# L2 bandwidth when the GPU spec gives none: the A100 whitepaper's 5120 B/clk (NVIDIA publishes no H100 figure;
# at 1980 MHz it is 10.1 TB/s, consistent with h4's 9.0 TB/s of L2 traffic at 86% of ncu's memory SOL,
# benchmarks/2026-11-23_h100_hopper/fin)
L2_BYTES_PER_CLOCK = 5120
# The share of a unit's peak that kernels attain: ncu's speed-of-light rule calls >80% saturated; on the H100 the
# shared-memory-bound rung 3 reaches 84.8% of memory throughput (benchmarks/2026-11-23_h100_access/ladder) and
# cuBLAS SGEMM 87.2% of SM throughput (benchmarks/2026-11-24_h100_fp32top_interleave)
ATTAINABLE = 0.85
# mma.sync (HMMA) on sm_90 has a ceiling below the dense tensor peak that wgmma reaches: in ncu's profile of h3 at
# 4096 (benchmarks/2026-11-23_h100_access/ladder) 463 TFLOP/s keep the tensor pipe 79.85% busy: 580 TFLOP/s when
# busy, 0.586 of 989.4
HMMA_FRACTION_SM90 = 0.586
# stall reasons that are waiting on a result or an event; the others (not_selected, dispatch, *_throttle) mean
# the warp was ready and a unit was busy
LATENCY_STALLS = ("long_scoreboard", "short_scoreboard", "barrier", "wait", "membar", "branch_resolving",
                  "no_instruction", "drain", "imc_miss", "sleeping", "gmma")


@dataclass(frozen=True)
class KernelFacts:
    """Everything explain reads about one kernel at one shape (measure/explain_inputs.py gathers it)."""

    kernel: str
    name: str
    dtype: str
    ladder: str | None  # "fp32" or "fp16" for ladder rungs
    shape: tuple[int, int, int]
    flops: int
    peak_flops: float  # the dtype's peak on this GPU
    blocks: int  # blocks launched
    tiles: int  # output tiles (blocks, unless the grid is persistent)
    tile_bytes_c: int  # bytes of C one tile writes
    blocks_per_sm: int  # resident blocks per SM (theoretical occupancy)
    warps_per_sm: int
    registers: int | None
    spill_bytes: int  # spill stores + loads per thread (ptxas)
    sass: dict | None  # gemmprof.measure.sass facts (loop_* keys included), None without a disassembler
    shared_wavefronts: int | None  # access model, per launch
    shared_ideal_wavefronts: int | None
    global_lines: float | None  # lines the warps' global requests touch (L1 wavefronts), per launch
    global_ideal_lines: float | None  # the same if every request were coalesced
    l2_bytes_model: int | None  # tiled traffic model (staged kernels only: unstaged ones hit L1, unmodelled)
    dram_bytes_model: int  # minimum bytes
    c_bytes: int  # C written once
    applied: tuple[str, ...]
    measured_s: float | None = None
    profile: object | None = None  # gemmprof.results.profile.LaunchFindings of this kernel at this shape
    clock_mhz: float | None = None  # the SM clock the run held (None: no run; the datasheet peak's own clock)
    # this GPU's measured ceiling of the dtype (`gemmprof ceiling`), FLOP/s: the compute bound's rate where stored
    ceiling_flops: float | None = None
    ceiling_note: str = ""  # which compute ceiling the bound used, or why the stored one was not


@dataclass(frozen=True)
class Machine:
    name: str
    sms: int
    clock_hz: float
    dram_bandwidth: float  # bytes/s
    l2_bandwidth: float
    sm90: bool  # wgmma exists; mma.sync has its own ceiling
    tf32_peak: float | None  # FLOP/s of fp32 inputs on tensor cores, what lifts the FFMA pipe's ceiling

    @classmethod
    def of(cls, gpu, clock_mhz: float | None = None) -> Machine:
        """The GPU at `clock_mhz` (the clock a run held), or at its boost clock."""
        clock = (clock_mhz or gpu.boost_clock_mhz) * 1e6
        l2 = gpu.l2_bandwidth_gbs * 1e9 if gpu.l2_bandwidth_gbs else L2_BYTES_PER_CLOCK * clock
        dram = gpu.measured.get("dram_bandwidth_gbs", gpu.dram_bandwidth_gbs) * 1e9
        tf32 = gpu.peak_flops_at("tf32_tensor", clock_mhz) if clock_mhz and "tf32_tensor" in gpu.peak_tflops \
            else (gpu.peak_flops("tf32_tensor") if "tf32_tensor" in gpu.peak_tflops else None)
        return cls(gpu.name, gpu.sm_count, clock, dram, l2, gpu.compute_capability.startswith("9"), tf32)


def _bound(f: KernelFacts, kind: str, seconds: float, lifted, evidence: str, source: str, choices):
    """`lifted`: what is left of the bound once its technique is applied, in seconds; a dict when it depends on
    the technique (key None: any other)."""
    return {"kind": kind, "bound_s": seconds, "lifted_s": lifted, "evidence": evidence, "source": source,
            "choices": choices}


def _math(f: KernelFacts, m: Machine) -> dict:
    """At this GPU's measured ceiling where one is stored (the rate cuBLAS reaches here), else the datasheet peak."""
    t = f.flops / (f.ceiling_flops or f.peak_flops)
    tensor = f.dtype != "fp32"
    at = f" at the {f.clock_mhz:.0f} MHz the run held" if f.clock_mhz else ""
    ev = (f"{f.flops / 1e9:.0f} GFLOP at the {'tensor' if tensor else 'FFMA'} peak {f.peak_flops / 1e12:.1f} "
          f"TFLOP/s{at}")
    if f.ceiling_flops:
        ev = f"{f.flops / 1e9:.0f} GFLOP at this GPU's measured ceiling {f.ceiling_flops / 1e12:.1f} TFLOP/s"
    lifted = f.flops / m.tf32_peak if not tensor and m.tf32_peak else t
    return _bound(f, "math_pipe", t, lifted, ev, "model", () if tensor else ("tensor_cores",))


def _tensor_pipe(f: KernelFacts, m: Machine) -> dict | None:
    """The tensor pipe's busy time when ncu measured it (HMMA, HGMMA and fp8's QGMMA); offline, mma.sync's own
    ceiling."""
    s = f.sass or {}
    hmma_only = bool(s.get("HMMA")) and not (s.get("HGMMA") or s.get("QGMMA")) and m.sm90
    choices = ("wgmma",) if hmma_only else ()  # busy with wgmma: the pipe itself is the limit
    p = f.profile
    if (s.get("HMMA") or s.get("HGMMA") or s.get("QGMMA")) and p is not None and p.tensor_pipe_pct and p.duration_ns:
        t = p.duration_ns * 1e-9 * p.tensor_pipe_pct / 100  # the pipe's busy time: all of it at its own peak
        what = "HMMA: mma.sync's own ceiling" if hmma_only else "its whole time at the pipe's peak"
        return _bound(f, "tensor_pipe", t, f.flops / f.peak_flops, f"ncu: tensor pipe {p.tensor_pipe_pct:.1f}% "
                      f"busy ({what})", "ncu", choices)
    if hmma_only:
        t = f.flops / (f.peak_flops * HMMA_FRACTION_SM90)
        ev = (f"mma.sync (HMMA) on sm_90 reaches about {HMMA_FRACTION_SM90:.2f} of the {f.peak_flops / 1e12:.0f} "
              "TFLOP/s wgmma peak")
        return _bound(f, "tensor_pipe", t, f.flops / f.peak_flops, ev, "sass", choices)
    return None


def _issue(f: KernelFacts, m: Machine) -> dict | None:
    s = f.sass or {}
    insns, ffma = s.get("loop_instructions"), s.get("loop_FFMA")
    if not insns or not ffma or f.dtype != "fp32":
        return None
    warp_ffma = f.flops / 2 / 32
    t = warp_ffma * insns / ffma / (ISSUE_PER_CLOCK * m.sms * m.clock_hz)
    narrow = (s.get("LDS", 0) or 0) + (s.get("LDS.64", 0) or 0)
    ev = (f"inner loop: {ffma} FFMA of {insns} instructions ({100 * ffma / insns:.0f}% FFMA); "
          f"{narrow} narrow and {s.get('LDS.128', 0)} LDS.128 shared loads in the binary")
    # loads and address arithmetic per FFMA shrink with the thread tile; what is left is addressing
    if insns - ffma > 0.25 * ffma:
        choices = ("register_tiling", "register_tiling_2d", "larger_tiles", "issue_efficiency", "tensor_cores")
    elif narrow > (s.get("LDS.128", 0) or 0) and narrow > 0.1 * ffma:
        choices = ("vectorized", "larger_tiles", "issue_efficiency", "tensor_cores")
    else:
        choices = ("larger_tiles", "issue_efficiency", "tensor_cores")
    return _bound(f, "issue", t, f.flops / f.peak_flops, ev, "sass", choices)


def _l1(f: KernelFacts, m: Machine) -> dict | None:
    if f.shared_wavefronts is None and f.global_lines is None:
        return None
    shared = f.shared_wavefronts or 0
    ideal = f.shared_ideal_wavefronts or 0
    lines, ideal_lines = f.global_lines or 0, f.global_ideal_lines or 0
    src = "model"
    p = f.profile
    if p is not None and p.smem.ld_wavefronts is not None:
        shared = (p.smem.ld_wavefronts or 0) + (p.smem.st_wavefronts or 0)
        conflicts = (p.smem.ld_conflicts or 0) + (p.smem.st_conflicts or 0)
        ideal = shared - conflicts
        src = "ncu"
    total = shared + lines
    t = total / (WAVEFRONTS_PER_CLOCK * m.sms * m.clock_hz)
    per_fma = total / (f.flops / 2 / 32)
    ev = (f"{total / 1e9:.2f} G wavefronts ({per_fma:.2f} per warp FMA): shared {shared / 1e9:.2f} G "
          f"({shared - ideal:,.0f} from bank conflicts), global lines {lines / 1e9:.2f} G"
          f" ({lines - ideal_lines:,.0f} from uncoalesced requests)")
    uncoalesced, conflicts = lines - ideal_lines, shared - ideal
    # wavefronts left by each technique: coalescing and conflict-free layouts remove the excess; 32 x 32 tiles
    # serve each global line to 32 FMAs; a register per B value turns 2 shared loads per FMA into 1 + 1/TM (1D),
    # a TM x TN tile into (TM + TN) / (TM * TN) (2D, 8 x 8: a quarter); a larger tile halves them again
    left = {"coalescing": total - uncoalesced, "smem_tiling": shared + lines / 32, "bank_conflicts": total - conflicts,
            "register_tiling": total / 2, "register_tiling_2d": total / 4, None: total / 2}
    if uncoalesced > 0.5 * total:
        choices = ("coalescing",)
    elif lines > shared:
        choices = ("smem_tiling",)
    elif conflicts > 0.25 * shared:
        choices = ("bank_conflicts",) + (("ldmatrix",) if f.dtype != "fp32" else ("register_tiling_2d", "larger_tiles"))
    else:
        more = ("ldmatrix", "wgmma") if f.dtype != "fp32" else ("tensor_cores",)
        choices = ("register_tiling", "register_tiling_2d", "larger_tiles") + more
    lifted = {k: v / total * t if total else 0.0 for k, v in left.items()}
    return _bound(f, "l1_wavefronts", t, lifted, ev, src, choices)


def _l2(f: KernelFacts, m: Machine) -> dict | None:
    p = f.profile
    nbytes, src = (p.l2_bytes, "ncu") if p is not None and p.l2_bytes else (f.l2_bytes_model, "model")
    if not nbytes:
        return None
    t = nbytes / m.l2_bandwidth
    ev = f"{nbytes / 1e9:.2f} GB through L2 at {m.l2_bandwidth / 1e12:.1f} TB/s"
    return _bound(f, "l2", t, t / 2, ev, src, ("larger_tiles", "multicast"))


def _dram(f: KernelFacts, m: Machine) -> dict:
    p = f.profile
    nbytes, src = (p.dram_bytes, "ncu") if p is not None and p.dram_bytes else (f.dram_bytes_model, "model")
    t = nbytes / m.dram_bandwidth
    ev = f"{nbytes / 1e9:.2f} GB from DRAM at {m.dram_bandwidth / 1e12:.2f} TB/s"
    return _bound(f, "dram", t, f.dram_bytes_model / m.dram_bandwidth, ev, src, ("larger_tiles", "persistent"))


BOUNDS = (_math, _tensor_pipe, _issue, _l1, _l2, _dram)
THROUGHPUT = ("math_pipe", "tensor_pipe", "issue", "l1_wavefronts", "l2", "dram")


def waves(f: KernelFacts, m: Machine, base_s: float) -> dict | None:
    """The last round of tiles leaves SMs idle: tiles over (resident slots), rounded up. Of a time `base_s` that
    includes the tail, 1 - efficiency is idle SM time, so lifting it gains 1 / efficiency."""
    slots = max(1, min(f.blocks, m.sms * f.blocks_per_sm))
    rounds = -(-f.tiles // slots)
    efficiency = f.tiles / (rounds * slots)
    if efficiency >= 0.999:
        return None
    overhead = base_s * (1 - efficiency)
    persistent = f.blocks < f.tiles
    ev = (f"{f.tiles} tiles over {slots} resident {'blocks (persistent grid)' if persistent else 'block slots'} "
          f"({m.sms} SMs x {f.blocks_per_sm}): {f.tiles / slots:.2f} waves, the last {100 * (f.tiles / slots % 1 or 1):.0f}% "
          f"full, {100 * efficiency:.1f}% of SM time used")
    return {"kind": "waves", "overhead_s": overhead, "evidence": ev, "source": "model",
            "choices": ("persistent", "wave_fit", "split_k")}


def epilogue(f: KernelFacts, m: Machine) -> dict | None:
    """C's stores after the main loop, exposed when one block per SM has nothing else to do meanwhile: each SM
    writes its tiles at its share of L2 bandwidth."""
    if "epilogue" in f.applied and "persistent" in f.applied:
        return None  # overlapped with the next tile's loads
    slots = max(1, min(f.blocks, m.sms * f.blocks_per_sm))
    rounds = -(-f.tiles // slots)
    per_sm = m.l2_bandwidth / m.sms
    # co-resident blocks run their main loops while one stores: 1/blocks_per_sm of it is exposed
    t = rounds * f.tile_bytes_c / per_sm / f.blocks_per_sm
    ev = (f"{rounds} rounds of {f.tile_bytes_c / 1024:.0f} KiB of C per block at {per_sm / 1e9:.0f} GB/s per SM, "
          f"{f.blocks_per_sm} block(s) per SM ({f.c_bytes / 1e6:.0f} MB of C)")
    return {"kind": "epilogue", "overhead_s": t, "evidence": ev, "source": "model", "choices": ("epilogue",)}


def spills(f: KernelFacts) -> dict | None:
    if not f.spill_bytes:
        return None
    return {"kind": "spills", "overhead_s": None, "evidence": f"ptxas: {f.spill_bytes} bytes of spill stores and "
            f"loads per thread ({f.registers} registers)", "source": "sass", "choices": ("fewer_registers",)}


def latency(f: KernelFacts, m: Machine, top_s: float) -> dict | None:
    if f.measured_s is None:
        return None
    p = f.profile
    parts = [f"measured {f.measured_s * 1e3:.3f} ms against {top_s / ATTAINABLE * 1e3:.3f} ms at "
             f"{100 * ATTAINABLE:.0f}% of the largest throughput bound"]
    # without stalls: pipelining, then what the ladder does next for this kind of kernel
    choices = ("latency_hiding", "warp_specialization" if f.dtype != "fp32" else "register_pipeline")
    warps = f.warps_per_sm / ISSUE_PER_CLOCK
    if p is not None and p.stalls:
        lat = {k: v for k, v in p.stalls.items() if k in LATENCY_STALLS}
        occ = p.occupancy.achieved_pct
        achieved = f"{occ:.1f}% occupancy achieved, " if occ is not None else ""
        parts.append(f"{achieved}{warps:.1f} warps per scheduler by theoretical occupancy, "
                     f"{p.warp_cycles_per_issue or 0:.2f} cycles per issue")
        if lat:
            worst = max(lat, key=lat.get)
            parts.append("stalls: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in
                                                 sorted(lat.items(), key=lambda kv: -kv[1])[:3] if v >= 0.01))
            choices = _latency_choices(worst, f)
            g = f.sass or {}
            if choices[0] == "vectorized" and worst == "long_scoreboard":
                parts.append(f"global loads mostly narrow ({g.get('LDG', 0)} LDG, {g.get('LDG.128', 0)} LDG.128)")
    else:
        parts.append(f"{warps:.1f} warps per scheduler by theoretical occupancy (stalls need a profile)")
    return {"kind": "latency", "evidence": "; ".join(parts), "source": "ncu" if p is not None else "timing",
            "choices": choices}


def _latency_choices(stall: str, f: KernelFacts) -> tuple[str, ...]:
    hgmma = bool((f.sass or {}).get("HGMMA") or (f.sass or {}).get("QGMMA"))
    hmma = bool((f.sass or {}).get("HMMA"))
    s = f.sass or {}
    if stall in ("long_scoreboard", "barrier"):
        if hgmma:
            return ("warp_specialization", "persistent")
        narrow = stall == "long_scoreboard" and (s.get("LDG", 0) or 0) > (s.get("LDG.128", 0) or 0)
        return (("vectorized",) if narrow else ()) + ("latency_hiding", "issue_efficiency")
    if stall == "short_scoreboard":  # waiting on shared loads: wider ones, or fragments read a step ahead
        return ("ldmatrix", "register_pipeline", "wgmma") if hmma else ("vectorized", "register_tiling",
                                                                        "register_pipeline")
    if stall in ("wait", "gmma"):
        return ("wgmma", "warp_specialization") if hmma or hgmma else ("warptiling", "register_tiling")
    return ("latency_hiding",)


