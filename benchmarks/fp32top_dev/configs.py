"""The rung-13 configurations the harness builds and sweeps (BM, BN, BK, MI, NI, THREADS, GROUP_M, MINBLOCKS)."""

ENTRY = "sgemm_pipelined_any_shape"
CONFIGS = {
    "128x128_mb2_g8": (128, 128, 8, 2, 2, 256, 8, 2),
    "128x128_mb2_g4": (128, 128, 8, 2, 2, 256, 4, 2),
    "128x128_mb2_g16": (128, 128, 8, 2, 2, 256, 16, 2),
    "64x128_mb3_g8": (64, 128, 8, 2, 2, 128, 8, 3),
    "128x64_mb3_g8": (128, 64, 8, 2, 2, 128, 8, 3),
}


def mangled(params, entry=ENTRY):
    args = "".join(f"Lj{p}E" for p in params)
    return f"_Z{len(entry)}{entry}I{args}EviiifPKfS1_fPf"


def instantiation(params, entry=ENTRY):
    args = ", ".join(str(p) for p in params)
    return f"template __global__ void {entry}<{args}>(int, int, int, float, const float*, const float*, float, float*);"
