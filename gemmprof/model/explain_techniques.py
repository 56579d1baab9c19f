"""The techniques explain recommends, the rungs that teach them, and what each rung of the ladders applies.

What a rung applies is read from its spec's description (kernels/*/*.yaml); a kernel that is not a rung applies
what its SASS and access model show (explain_inputs.detect_applied).
"""

from __future__ import annotations

# key -> (what it does, rungs that teach it, in ladder order)
TECHNIQUES: dict[str, tuple[str, tuple[str, ...]]] = {
    "coalescing": ("consecutive threads on consecutive addresses: a warp request touches 4 sectors of one line",
                   ("2",)),
    "smem_tiling": ("stage block tiles in shared memory so each global load feeds a whole tile row or column",
                    ("3",)),
    "register_tiling": ("several results per thread from one operand held in a register (1D blocktiling: fewer "
                        "shared loads per FMA)", ("4",)),
    "register_tiling_2d": ("a TM x TN register tile per thread: each loaded value feeds TN or TM FMAs",
                           ("5",)),
    "vectorized": ("128-bit loads (LDG.128, LDS.128), A transposed while staging", ("6",)),
    "bank_conflicts": ("a conflict-free shared layout: linearize, pad or swizzle", ("7", "8", "h2", "h3")),
    "larger_tiles": ("larger, tuned block and thread tiles: more reuse per byte and per instruction",
                     ("9", "14", "h5")),
    "warptiling": ("warp tiles: each warp owns a sub-tile, fragments reused across its sub-tiles", ("10",)),
    "latency_hiding": ("keep the next tile's loads in flight during the math: double buffering, cp.async, "
                       "multi-stage pipelines", ("11", "12", "13", "14", "h2")),
    "register_pipeline": ("fragments of step k+1 read from shared memory while step k's math runs (register "
                          "double buffering)", ("13", "h3")),
    "issue_efficiency": ("fewer non-FMA instructions: fixed per-thread offsets instead of pointer updates, copies "
                         "spread through the math", ("15",)),
    "epilogue": ("an epilogue that overlaps the next tile's loads or stores wide rows", ("15", "h6")),
    "tensor_cores": ("tensor cores (TF32, or fp16/bf16 inputs with fp32 accumulate): a peak 7-15x the FFMA pipe's",
                     ("h1",)),
    "ldmatrix": ("ldmatrix fragments from swizzled shared memory, double-buffered in registers", ("h3",)),
    "wgmma": ("wgmma reading shared memory through descriptors, fed by TMA (sm_90a): the full Hopper tensor rate",
              ("h4",)),
    "warp_specialization": ("producer and consumer warpgroups: loads never wait for the math", ("h5",)),
    "persistent": ("a persistent grid with a tile scheduler: no partial wave, epilogue overlapped with the next "
                   "tile's loads", ("h6",)),
    "fewer_registers": ("fewer live registers (smaller thread tile, __launch_bounds__) so nothing spills", ()),
    "multicast": ("thread-block clusters with TMA multicast: one L2 read of a shared tile feeds several SMs",
                  ("h7",)),
    "pingpong": ("two consumer warpgroups taking turns on tiles of their own: one's epilogue runs under the "
                 "other's MMAs", ("h9",)),
    "stream_k": ("a stream-K tail: the last partial round's tiles shared by k-iterations, so every SM ends together",
                 ("h10",)),
    "swap_ab": ("a skinny problem computed transposed (C^T = B^T A^T), so its few rows are the wgmma's N and no "
                "row of a 64-row wgmma is wasted", ("h11",)),
    "tma_store": ("the epilogue through shared memory and TMA stores: whole lines of C, clipped at the edges by the "
                  "copy engine, left in flight under the next tile's main loop", ("h12",)),
    "wave_fit": ("a tile width fitted to the SM count: of the widths wgmma takes, the one whose tiles fill their "
                 "last round (1024 x 11008 on 132 SMs: 66 columns of 168, 4 whole rounds, not 2.6 of 256)", ("h12",)),
    "split_k": ("split-K: K divided among several blocks per tile when the tiles are fewer than the SMs, reduced "
                "in a fixed order", ("16", "h8")),
    "dsmem_reduction": ("split-K inside a thread-block cluster: the partial tiles summed in the CTAs' distributed "
                        "shared memory (st.async), never through C or a workspace in global memory", ("h13",)),
}

FP32 = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15")
FP16 = ("h1", "h2", "h3", "h4", "h5", "h6", "h7")

# what each rung applies that the rung before it did not (its spec's description)
RUNG_TECHNIQUES: dict[str, tuple[str, ...]] = {
    "1": (), "2": ("coalescing",), "3": ("smem_tiling",), "4": ("register_tiling",), "5": ("register_tiling_2d",),
    "6": ("vectorized",), "7": ("bank_conflicts",), "8": ("bank_conflicts",), "9": ("larger_tiles",),
    "10": ("warptiling",), "11": ("latency_hiding",), "12": ("latency_hiding",),
    "13": ("latency_hiding", "register_pipeline", "bank_conflicts"), "14": ("latency_hiding", "larger_tiles"),
    "15": ("issue_efficiency", "latency_hiding", "epilogue"),
    "h1": ("tensor_cores",), "h2": ("smem_tiling", "latency_hiding", "bank_conflicts"), "h3": ("ldmatrix", "register_pipeline", "bank_conflicts"),
    "h4": ("wgmma",), "h5": ("warp_specialization", "larger_tiles"), "h6": ("persistent", "epilogue"),
    "h7": ("multicast",),
    "16": ("split_k",), "h8": ("split_k", "multicast"), "h9": ("pingpong",), "h10": ("stream_k",), "h11": ("swap_ab", "split_k"),
    "h12": ("tma_store", "wave_fit"), "h13": ("split_k", "dsmem_reduction"),
}
# rungs beside a ladder's line: what they apply is their base rung's, plus their own (RUNG_TECHNIQUES)
BRANCHES = {"16": "15", "h8": "h6", "h9": "h6", "h10": "h6", "h11": "h5", "h12": "h7", "h13": "h6"}
# the fp32 rungs a tensor-core rung builds on (h1 starts from a tiled, coalesced, vectorized kernel)
_FP16_BASE = ("coalescing", "smem_tiling", "register_tiling", "vectorized", "tensor_cores")


def ladder_of(rung: str) -> tuple[str, ...] | None:
    return FP32 if rung in FP32 else FP16 if rung in FP16 else None


def applied_by(rung: str) -> tuple[str, ...]:
    """Everything rung `rung` applies: its own techniques and those of every rung before it on its ladder (7 and 8
    are alternatives, as are 11 and 12: a rung after both applies either)."""
    if rung in BRANCHES:
        base = applied_by(BRANCHES[rung])
        return base + tuple(t for t in RUNG_TECHNIQUES[rung] if t not in base)
    ladder = ladder_of(rung)
    if ladder is None:
        return ()
    out = list(_FP16_BASE) if ladder is FP16 else []
    for r in ladder[:ladder.index(rung) + 1]:
        out += [t for t in RUNG_TECHNIQUES[r] if t not in out]
    return tuple(out)


def teaching_rung(technique: str, after: str | None, again: bool = False) -> str | None:
    """The first rung teaching `technique`, after rung `after` on its ladder when it is a rung (`again`: a
    technique applied once already, taken further only by a later rung of the same ladder)."""
    rungs = TECHNIQUES[technique][1]
    ladder = ladder_of(after) if after else None
    if ladder is None:
        return None if again else (rungs[0] if rungs else None)
    later = [r for r in rungs if r in ladder and ladder.index(r) > ladder.index(after)]
    other = [] if again else [r for r in rungs if r not in ladder and r.startswith("h") == (ladder is FP16)]
    rungs = tuple(later or other)
    return rungs[0] if rungs else None


# a technique that can be applied again while the registers allow it (a larger thread tile needs more accumulators)
REPEATABLE = {"larger_tiles"}
REGISTER_ROOM = 200  # registers per thread below which a larger thread tile still fits under the 255 limit


def pick_technique(choices, applied, kernel: str | None, registers: int | None = None
                   ) -> tuple[str | None, str | None, str]:
    """The first of `choices` the kernel does not apply yet: (technique, rung that teaches it, text)."""
    for t in choices:
        again = t in applied
        if again and not (t in REPEATABLE and registers is not None and registers < REGISTER_ROOM):
            continue
        rung = teaching_rung(t, kernel, again)
        if again and rung is None:
            continue
        text = ("further than now: " if again else "") + TECHNIQUES[t][0] + (f" (rung {rung})" if rung else "")
        return t, rung, text
    done = [t for t in choices if t in applied]
    if done:
        return None, None, f"already applied ({', '.join(done)}): nothing left in the ladder for this limiter"
    return None, None, "nothing in the ladder lifts it"
