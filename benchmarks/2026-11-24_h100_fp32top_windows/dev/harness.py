"""Verify and time rung 14 (nvcc cubins from build.py) against cuBLAS SGEMM in one process (GPU machine).

Usage: python3 harness.py BUILD_DIR
Verification: inputs uniform in [-1, 1), C poisoned with NaN when beta == 0 (else random C), float64 reference
(cupy), ||out - ref|| / ||ref|| < 1e-4; shapes include odd K and N, tiny shapes, fewer K tiles than stages and
A, B, C pointers offset by one float (misaligned). Timing: CUDA events around each launch, L2 flushed by a memset
of 256 MB before every repetition, 5 warm-up launches, median of REPS. One JSON line per measurement, a table last.
"""
import json
import math
import sys
from pathlib import Path

import cupy as cp
import numpy as np
from configs import KERNELS, ORIENT, block, mangled, smem

REPS = 30
TOL = 1e-4
BUILD = Path(sys.argv[1])
rng = cp.random.RandomState(20261124)
flush_buf = cp.empty(256 * 1024 * 1024, dtype=cp.uint8)


def emit(**row):
    print(json.dumps(row), flush=True)


def launcher(name):
    src, entry, params, tag = KERNELS[name]
    fn = cp.RawModule(path=str(BUILD / f"{tag}.cubin")).get_function(mangled(params, entry))
    bm, bn, threads = block(name)
    shm = smem(name)
    if shm:
        fn.max_dynamic_shared_size_bytes = shm

    orient = tag in ORIENT
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]

    def run(M, N, K, alpha, A, B, beta, C):
        wide, tall = math.ceil(M / bm) * math.ceil(N / bn), math.ceil(M / bn) * math.ceil(N / bm)
        swap = orient and tall * math.ceil(wide / sms) > wide * math.ceil(tall / sms)
        grid = (tall if swap else wide, 1, 1)
        fn(grid, (threads, 1, 1), (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B,
                                   np.float32(beta), C), shared_mem=shm)
    return run


def cublas(M, N, K, alpha, A, B, beta, C):
    assert alpha == 1.0 and beta == 0.0
    cp.matmul(A, B, out=C)


def shifted(shape, offset, fill=None):
    """A float32 array of `shape` starting `offset` floats into its allocation (offset 1: misaligned)."""
    n = int(np.prod(shape))
    store = cp.empty(n + offset, dtype=cp.float32)
    arr = store[offset:].reshape(shape)
    if fill is None:
        arr[...] = rng.uniform(-1, 1, shape).astype(cp.float32)
    else:
        arr.fill(fill)
    return arr


def operands(M, N, K, offs=(0, 0, 0)):
    return shifted((M, K), offs[0]), shifted((K, N), offs[1]), shifted((M, N), offs[2], fill=cp.nan)


def verify(run, M, N, K, alpha=1.0, beta=0.0, offs=(0, 0, 0)):
    A, B, C = operands(M, N, K, offs)
    C0 = None
    if beta != 0.0:
        C[...] = rng.uniform(-1, 1, (M, N)).astype(cp.float32)
        C0 = C.astype(cp.float64)
    run(M, N, K, alpha, A, B, beta, C)
    cp.cuda.runtime.deviceSynchronize()
    ref = alpha * (A.astype(cp.float64) @ B.astype(cp.float64))
    if C0 is not None:
        ref += beta * C0
    err = float(cp.linalg.norm(C.astype(cp.float64) - ref) / cp.linalg.norm(ref))
    return err if math.isfinite(err) else float("inf")


def time_ms(run, M, N, K, offs=(0, 0, 0), reps=REPS):
    A, B, C = operands(M, N, K, offs)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(5):
        run(M, N, K, 1.0, A, B, 0.0, C)
    samples = []
    for _ in range(reps):
        flush_buf.fill(0)
        start.record()
        run(M, N, K, 1.0, A, B, 0.0, C)
        stop.record()
        stop.synchronize()
        samples.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(samples)), samples


def tflops(M, N, K, ms):
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


CHECKS = [  # (M, N, K), alpha, beta, (offset of A, B, C in floats)
    ((4095, 4097, 1023), 1.0, 0.0, (0, 0, 0)), ((1, 1, 1), 1.0, 0.0, (0, 0, 0)), ((17, 33, 5), 1.0, 0.0, (0, 0, 0)),
    ((1000, 1000, 999), 1.0, 0.0, (0, 0, 0)), ((1000, 1000, 999), 1.5, -0.75, (0, 0, 0)),
    ((1001, 1000, 1000), 1.0, 0.0, (0, 0, 0)), ((1001, 1000, 1000), 1.5, -0.75, (1, 0, 1)),
    ((512, 512, 512), 1.0, 0.0, (1, 0, 0)), ((512, 512, 512), 1.0, 0.0, (0, 1, 0)),
    ((512, 512, 512), 1.0, 0.0, (0, 0, 1)), ((300, 260, 20), 1.0, 0.0, (0, 0, 0)),
    ((300, 260, 16), 0.5, 2.0, (0, 0, 0)), ((2048, 2048, 2048), 1.0, 0.0, (0, 0, 0)),
    ((4096, 4096, 4096), 1.0, 0.0, (0, 0, 0)), ((256, 256, 256), 2.0, 0.5, (0, 0, 0)), ((3, 4, 4), 1.0, 0.0, (0, 0, 0)),
    ((130, 4, 9), 1.0, 0.0, (0, 0, 0)), ((257, 129, 33), 1.0, 0.0, (0, 1, 0)),
    # windows that could start before A or B (misaligned pointers, K % 8 in 1..3, N < 4) or end after them
    ((300, 260, 17), 1.0, 0.0, (1, 1, 1)), ((300, 260, 18), 1.0, 0.0, (3, 2, 0)), ((64, 1, 40), 1.0, 0.0, (0, 1, 0)),
    ((33, 2, 19), 1.0, 0.0, (1, 1, 0)), ((70, 3, 25), 1.0, 0.0, (1, 3, 1)), ((129, 257, 8), 1.0, 0.0, (2, 2, 2)),
    ((129, 257, 16), 1.0, 0.0, (0, 0, 0)), ((129, 257, 24), 1.0, 0.0, (1, 0, 0)), ((129, 257, 1), 1.0, 0.0, (3, 1, 0)),
    ((4096, 4096, 4096), 1.0, 0.0, (0, 1, 0)), ((4096, 4096, 4096), 1.0, 0.0, (1, 0, 0)),
    ((1024, 1027, 1021), 1.25, 0.5, (3, 3, 3)), ((520, 300, 4095), 1.0, 0.0, (0, 0, 0)),
    # every row-shift pattern of B's windows: N % 4 == 0 with B offset 1..3, N % 4 == 2 (even and odd shifts), 1, 3
    ((300, 260, 17), 1.0, 0.0, (0, 3, 0)), ((1000, 1026, 1000), 1.0, 0.0, (0, 0, 0)),
    ((1000, 1026, 999), 1.0, 0.0, (0, 1, 0)), ((70, 6, 33), 1.0, 0.0, (0, 2, 0)), ((513, 771, 77), 0.5, 1.5, (2, 3, 1)),
    ((257, 1025, 300), 1.0, 0.0, (0, 2, 0)), ((257, 1027, 301), 1.0, 0.0, (0, 1, 3)),
    # shapes where the wave rule swaps the tile orientation (128 x 256 -> 256 x 128)
    ((2000, 4100, 64), 1.0, 0.0, (0, 1, 0)), ((4095, 4097, 1023), 1.5, -0.75, (1, 2, 3)), ((2000, 4098, 37), 1.0, 0.0, (0, 0, 0)),
]


def main():
    dev = cp.cuda.runtime.getDeviceProperties(0)
    emit(kind="env", device=dev["name"].decode(), sms=dev["multiProcessorCount"],
         cuda_runtime=cp.cuda.runtime.runtimeGetVersion(), driver=cp.cuda.runtime.driverGetVersion(),
         cupy=cp.__version__)
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(KERNELS)
    kernels = {n: launcher(n) for n in only}
    bad = 0
    for name, run in kernels.items():
        for (M, N, K), alpha, beta, offs in CHECKS:
            err = verify(run, M, N, K, alpha, beta, offs)
            bad += not err < TOL
            emit(kind="verify", kernel=name, shape=[M, N, K], alpha=alpha, beta=beta, offsets=offs, rel_err=err,
                 ok=err < TOL)
    if bad:
        print(f"VERIFICATION FAILED: {bad} checks; not timing")
        sys.exit(1)
    print(f"verification: all {len(kernels) * len(CHECKS)} checks passed", flush=True)

    shapes = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 1023)]
    table = {}
    for shape in shapes:
        rows = {"cublas": (cublas, (0, 0, 0)), **{n: (r, (0, 0, 0)) for n, r in kernels.items()}}
        if shape == (4096, 4096, 4096):  # misaligned B, misaligned A: the unaligned paths on an aligned shape
            rows.update({f"{n}_Bmis": (r, (0, 1, 0)) for n, r in kernels.items() if n != "r13"})
        for label, (run, offs) in rows.items():
            ms, samples = time_ms(run, *shape, offs=offs)
            table[(shape, label)] = ms
            emit(kind="time", kernel=label, shape=list(shape), median_ms=ms, tflops=tflops(*shape, ms),
                 spread=(max(samples) - min(samples)) / ms, samples=samples)
    for shape in shapes[1:]:
        ms, samples = time_ms(cublas, *shape)
        table[(shape, "cublas_again")] = ms
        emit(kind="time", kernel="cublas_again", shape=list(shape), median_ms=ms, tflops=tflops(*shape, ms),
             samples=samples)

    print("\n| kernel | " + " | ".join("x".join(map(str, s)) for s in shapes) + " |")
    print("|---|" + "---|" * len(shapes))
    labels = sorted({lab for (_, lab) in table}, key=lambda s: (not s.startswith("cublas"), s))
    for lab in labels:
        cells = []
        for s in shapes:
            ms, cb = table.get((s, lab)), table[(s, "cublas")]
            cells.append("" if ms is None else f"{tflops(*s, ms):.1f} ({100 * cb / ms:.1f}%)")
        print(f"| {lab} | " + " | ".join(cells) + " |")
    print("TFLOP/s (percent of cuBLAS SGEMM, first cuBLAS row, in this process)")


if __name__ == "__main__":
    main()
