"""Rung-14 configurations the harness builds and sweeps:
(BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M, MINBLOCKS); rung 13's default for comparison."""

ENTRY = "sgemm_multistage_any_shape"
CONFIGS = {
    "128x256_8x16_w8_s3": (128, 256, 8, 2, 4, 8, 256, 3, 8, 1),
    "128x256_8x16_w4_s3": (128, 256, 8, 2, 4, 4, 256, 3, 8, 1),
    "128x256_8x16_w8_s3_g16": (128, 256, 8, 2, 4, 8, 256, 3, 16, 1),
    "128x256_8x16_w8_s3_g4": (128, 256, 8, 2, 4, 8, 256, 3, 4, 1),
    "128x256_8x16_w8_s2": (128, 256, 8, 2, 4, 8, 256, 2, 8, 1),
    "256x128_8x16_w8_s2": (256, 128, 8, 2, 4, 8, 256, 2, 8, 1),
    "256x128_8x16_w4_s3_g16": (256, 128, 8, 2, 4, 4, 256, 3, 16, 1),
}
R13_ENTRY = "sgemm_pipelined_any_shape"
R13_DEFAULT = (128, 128, 8, 2, 2, 256, 8, 2)


def mangled(params, entry=ENTRY):
    args = "".join(f"Lj{p}E" for p in params)
    return f"_Z{len(entry)}{entry}I{args}EviiifPKfS1_fPf"


def instantiation(params, entry=ENTRY):
    args = ", ".join(str(p) for p in params)
    return f"template __global__ void {entry}<{args}>(int, int, int, float, const float*, const float*, float, float*);"
