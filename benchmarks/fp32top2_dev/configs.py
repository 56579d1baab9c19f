"""Rung-14 configurations the harness builds and sweeps:
(BM, BN, BK, MI, NI, WTY, THREADS, STAGES, GROUP_M, MINBLOCKS); rung 13's default for comparison."""

ENTRY = "sgemm_multistage_any_shape"
CONFIGS = {
    "256x128_8x16_w8_s3": (256, 128, 8, 2, 4, 8, 256, 3, 8, 1),
    "256x128_8x16_w4_s3": (256, 128, 8, 2, 4, 4, 256, 3, 8, 1),
    "128x256_8x16_w8_s3": (128, 256, 8, 2, 4, 8, 256, 3, 8, 1),
    "128x128_8x16_t128_s4_mb2": (128, 128, 8, 2, 4, 8, 128, 4, 8, 2),
    "128x128_8x8_t256_s4_mb2": (128, 128, 8, 2, 2, 4, 256, 4, 8, 2),
}
R13_ENTRY = "sgemm_pipelined_any_shape"
R13_DEFAULT = (128, 128, 8, 2, 2, 256, 8, 2)


def mangled(params, entry=ENTRY):
    args = "".join(f"Lj{p}E" for p in params)
    return f"_Z{len(entry)}{entry}I{args}EviiifPKfS1_fPf"


def instantiation(params, entry=ENTRY):
    args = ", ".join(str(p) for p in params)
    return f"template __global__ void {entry}<{args}>(int, int, int, float, const float*, const float*, float, float*);"
