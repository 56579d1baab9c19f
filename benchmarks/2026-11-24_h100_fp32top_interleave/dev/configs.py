"""Kernels of the interleave record, per device call (CALL=N, default 11): name -> (source, entry, template params, tag).

Template params: (BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M, MINBLOCKS) for rungs 14 and 15,
(BM, BN, BK, MI, NI, THREADS, GROUP_M, MINBLOCKS) for rung 13. A tag is one cubin: one source and its -D defines.
"""
import os

R13 = ("13_pipelined_any_shape.cu", "sgemm_pipelined_any_shape")
R14 = ("14_multistage_any_shape.cu", "sgemm_multistage_any_shape")
R15 = ("15_interleaved_copies_any_shape.cu", "sgemm_interleaved_copies_any_shape")

# Sources: the committed rungs (kernels/fp32), or earlier versions of rung 15 that make_variants.sh recreates from
# variants/*.patch. A tag is one cubin: one source and its -D defines.
C1 = ("r15_call1.cu", R15[1])  # call 1's rung 15
BUNCH = ("r15_call1_bunch.cu", R15[1])  # call 1's rung 15, every copy of a tile at k-step 0 (made by make_variants.sh)
C7 = ("r15_call7.cu", R15[1])  # calls 5-7's rung 15 (-DIL15_VEC_STEPS=7: the committed kernel's SASS)
PLAIN = ("r15_call8_plain.cu", R15[1])  # call 8's "r15"
SERP = ("r15_call8_serpentine.cu", R15[1])  # call 8's "serp"
ALIGNED = ("r15_call13_aligned_only.cu", R15[1])  # call 13: rung 15 with only its aligned path, one orientation
DEFINES = {"r13": [], "r14": [], "r15": [], "c1": [], "bunch": [], "c7v1": [], "c7v2": ["-DIL15_VEC_STEPS=2"],
           "c7v7": ["-DIL15_VEC_STEPS=7"], "plain": [], "serp": [], "aligned": []}


def _p(bm=128, bn=256, wty=8, threads=256, stages=3, group_m=8, minblocks=1):
    return (bm, bn, 8, 2, 4, wty, threads, stages, group_m, minblocks)


R13_DEFAULT = (*R13, (128, 128, 8, 2, 2, 256, 8, 2), "r13")
R14_DEFAULT = (*R14, _p(), "r14")
# The kernels of each call that can be rebuilt (calls 2-4 used sources that were not kept; their logs stay).
CALLS = {
    1: {"r13": R13_DEFAULT, "r14": R14_DEFAULT, "r15_s3": (*C1, _p(), "c1"), "r15_s4": (*C1, _p(stages=4), "c1"),
        "r15_256x128_s4": (*C1, _p(256, 128, wty=4, stages=4), "c1"),
        "r15_128x128_s4": (*C1, _p(128, 128, threads=128, stages=4, minblocks=2), "c1"),
        "r15_128x128_s5": (*C1, _p(128, 128, threads=128, stages=5, minblocks=2), "c1"),
        "bunch_s4": (*BUNCH, _p(stages=4), "bunch")},
    5: {"r14": R14_DEFAULT, "c1_256x128_s4": (*C1, _p(256, 128, wty=4, stages=4), "c1"),
        "r15_s3": (*C7, _p(), "c7v1"), "r15_s4": (*C7, _p(stages=4), "c7v1"),
        "r15_128x128_s4": (*C7, _p(128, 128, threads=128, stages=4, minblocks=2), "c7v1"),
        "v7_s3": (*C7, _p(), "c7v7"), "v7_s4": (*C7, _p(stages=4), "c7v7"),
        "v2_s3": (*C7, _p(), "c7v2"), "v2_s4": (*C7, _p(stages=4), "c7v2")},
    6: {"r14": R14_DEFAULT, "v7_s3": (*C7, _p(), "c7v7"), "v7_s4": (*C7, _p(stages=4), "c7v7"),
        "v7_s3_g4": (*C7, _p(group_m=4), "c7v7"), "v7_s3_g16": (*C7, _p(group_m=16), "c7v7"),
        "v7_s3_g1": (*C7, _p(group_m=1), "c7v7"),
        "v7_128x128_s4": (*C7, _p(128, 128, threads=128, stages=4, minblocks=2), "c7v7"),
        "v7_128x128_s3": (*C7, _p(128, 128, threads=128, stages=3, minblocks=2), "c7v7")},
    7: {"r14": R14_DEFAULT, "v7_s3": (*C7, _p(), "c7v7"), "v7_s3_g16": (*C7, _p(group_m=16), "c7v7"),
        "v7_s3_g32": (*C7, _p(group_m=32), "c7v7"), "v7_s3_g64": (*C7, _p(group_m=64), "c7v7"),
        "v7_s4_g16": (*C7, _p(stages=4, group_m=16), "c7v7")},
    8: {"r14": R14_DEFAULT, "r15": (*PLAIN, _p(group_m=64), "plain"), "r15_s4": (*PLAIN, _p(stages=4, group_m=64), "plain"),
        "r15_g16": (*PLAIN, _p(group_m=16), "plain"), "serp": (*SERP, _p(group_m=64), "serp"),
        "c7_g64": (*C7, _p(group_m=64), "c7v7")},
    11: {"r13": R13_DEFAULT, "r14": R14_DEFAULT, "r15": (*R15, _p(group_m=64), "r15")},  # the committed rung 15
    13: {"r15": (*R15, _p(group_m=64), "r15"), "aligned_only": (*ALIGNED, _p(group_m=64), "aligned")},
}
# Kernels that assume N % 4 == 0 and 16-byte aligned B and C: verified only on the checks that meet that
ALIGNED_ONLY = {"aligned_only"}
KERNELS = CALLS[int(os.environ.get("CALL", "11"))]


def block(name):
    """(BM, BN, threads) of the launch (before any orientation swap)."""
    _src, entry, p, _tag = KERNELS[name]
    return (p[0], p[1], p[5]) if entry == R13[1] else (p[0], p[1], p[6])


def orients(name):
    """Whether the kernel's grid picks its tile orientation by waves (rungs 14 and 15)."""
    return KERNELS[name][1] != R13[1]


def smem(name):
    """Dynamic shared memory bytes of one launch."""
    _src, entry, p, _tag = KERNELS[name]
    if entry != R15[1]:
        return 0
    bm, bn, bk, stages = p[0], p[1], p[2], p[7]
    return stages * bk * (bm + bn + 4) * 4


def mangled(params, entry):
    return f"_Z{len(entry)}{entry}I{''.join(f'Lj{p}E' for p in params)}EviiifPKfS1_fPf"


def instantiation(params, entry):
    args = ", ".join(str(p) for p in params)
    return f"template __global__ void {entry}<{args}>(int, int, int, float, const float*, const float*, float, float*);"
