"""Kernels the dev harness (each call ran a subset: harness.py BUILD NAME,NAME or all) builds and sweeps: name -> (source, entry, template params, cubin tag).
Template params: (BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M, MINBLOCKS) for rungs 14 and 15."""

R15 = ("r15_realigned_copies.cu", "sgemm_realigned_copies_any_shape")
R14 = ("r14w.cu", "sgemm_multistage_any_shape")  # calls 1-3: the chunked-B kernel before the orientation rule
R14X = ("r14x.cu", "sgemm_multistage_any_shape")
R13 = ("13_pipelined_any_shape.cu", "sgemm_pipelined_any_shape")
DEFINES = {"str": ["-DSTRIDED=1"], "epi": ["-DSMEMEPI=1"], "r14": [], "r13": [], "r15": [], "l2": ["-DL2HINT=1"], "immb": ["-DIMMB=1"], "nodb": ["-DNODB=1"],
           "all3": ["-DNODB=1", "-DIMMB=1", "-DL2HINT=1"]}
T128x256 = (128, 256, 8, 2, 4, 8, 256, 3, 8, 1)
T256x128 = (256, 128, 8, 2, 4, 4, 256, 3, 8, 1)


def r15_smem(p):
    bm, bn, bk, stages = p[0], p[1], p[2], p[7]
    ra, lda, ldb = bk + 4, bm + 4, bn + 4
    return 4 * (stages * (bm * ra + bk * ldb) + 2 * bk * lda + 2 * bk * ldb)


R14OLD = ("r14_old.cu", "sgemm_multistage_any_shape")
DEFINES["old"] = []
R14W = ("r14w.cu", "sgemm_multistage_any_shape")
DEFINES.update({"vec": ["-DONLY_VEC"], "w0": ["-DONLY_WIN=0"], "w1": ["-DONLY_WIN=0x55"], "w2": ["-DONLY_WIN=0xAA"], "w3": ["-DONLY_WIN=0xFF"]})
KERNELS = {"r13": (*R13, (128, 128, 8, 2, 2, 256, 8, 2), "r13"),
           "r14_128x256": (*R14, T128x256, "r14"), "r14_256x128": (*R14, T256x128, "r14"),
           "old_128x256": (*R14OLD, T128x256, "old"), "old_256x128": (*R14OLD, T256x128, "old")}
DEFINES.update({"oldpre": [], "newpre": [], "oldo": [], "newo": []})
ORIENT = {"oldo", "newo"}  # kernels whose grid picks the orientation (launcher: wave rule)
for tag in ("oldo", "newo"):
    KERNELS[f"{tag}_128x256"] = (f"r14_{tag}.cu", "sgemm_multistage_any_shape", T128x256, tag)
    KERNELS[f"{tag}_256x128"] = (f"r14_{tag}.cu", "sgemm_multistage_any_shape", T256x128, tag)


def smem(name):
    return 0
def block(name):
    src, entry, p, tag = KERNELS[name]
    return (p[0], p[1], p[5]) if entry == R13[1] else (p[0], p[1], p[6])


def mangled(params, entry):
    args = "".join(f"Lj{p}E" for p in params)
    return f"_Z{len(entry)}{entry}I{args}EviiifPKfS1_fPf"


def instantiation(params, entry):
    args = ", ".join(str(p) for p in params)
    return f"template __global__ void {entry}<{args}>(int, int, int, float, const float*, const float*, float, float*);"
