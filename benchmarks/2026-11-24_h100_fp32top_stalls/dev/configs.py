"""Kernels the dev harness (each call ran a subset: harness.py BUILD NAME,NAME or all) builds and sweeps: name -> (source, entry, template params, cubin tag).
Template params: (BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M, MINBLOCKS) for rungs 14 and 15."""

R15 = ("r15_realigned_copies.cu", "sgemm_realigned_copies_any_shape")
R14 = ("14_multistage_any_shape.cu", "sgemm_multistage_any_shape")
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


KERNELS = {"r13": (*R13, (128, 128, 8, 2, 2, 256, 8, 2), "r13"),
           "r14_128x256": (*R14, T128x256, "r14"), "r14_256x128": (*R14, T256x128, "r14")}
T128_S4 = (128, 128, 8, 2, 4, 8, 128, 4, 8, 2)
T128_S3 = (128, 128, 8, 2, 4, 8, 128, 3, 8, 2)
T128_W4S4 = (128, 128, 8, 2, 4, 4, 128, 4, 8, 2)
KERNELS["r14_128x128_s4"] = (*R14, T128_S4, "r14")
# call 1: the realigned-copies draft (r15_realigned_copies.cu)
for nm, t in (("128x256_s4", (128, 256, 8, 2, 4, 8, 256, 4, 8, 1)), ("128x256_s3", (128, 256, 8, 2, 4, 8, 256, 3, 8, 1)),
              ("128x256_s5", (128, 256, 8, 2, 4, 8, 256, 5, 8, 1)), ("256x128_s4", (256, 128, 8, 2, 4, 8, 256, 4, 8, 1)),
              ("256x128_w4_s4", (256, 128, 8, 2, 4, 4, 256, 4, 8, 1))):
    KERNELS[f"r15_{nm}"] = (*R15, t, "r15")
# call 2: r14 with the L2::128B hint, immediate-offset B copies, no fragment double buffering, all three
for tag in ("l2", "immb", "nodb", "all3"):
    KERNELS[f"{tag}_128x256"] = (*R14X, T128x256, tag)
    KERNELS[f"{tag}_256x128"] = (*R14X, T256x128, tag)
for nm, t in (("128x256", T128x256), ("256x128", T256x128), ("128x128_s4", T128_S4), ("128x128_s3", T128_S3),
              ("128x128_w4s4", T128_W4S4)):
    KERNELS[f"str_{nm}"] = (*R14X, t, "str")  # call 4: one base pointer and stride per operand
    KERNELS[f"epi_{nm}"] = (*R14X, t, "epi")  # call 6: C staged through shared memory when not float4-aligned


def smem(name):
    src, entry, p, tag = KERNELS[name]
    return r15_smem(p) if entry == R15[1] else 0


def block(name):
    src, entry, p, tag = KERNELS[name]
    return (p[0], p[1], p[5]) if entry == R13[1] else (p[0], p[1], p[6])


def mangled(params, entry):
    args = "".join(f"Lj{p}E" for p in params)
    return f"_Z{len(entry)}{entry}I{args}EviiifPKfS1_fPf"


def instantiation(params, entry):
    args = ", ".join(str(p) for p in params)
    return f"template __global__ void {entry}<{args}>(int, int, int, float, const float*, const float*, float, float*);"
