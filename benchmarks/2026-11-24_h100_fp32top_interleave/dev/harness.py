"""Verify, then time, the configs.py kernels (nvcc cubins from build.py) beside cuBLAS SGEMM in one process (GPU).

Usage: python3 harness.py BUILD_DIR [NAME,NAME,...] [--shapes M,N,K[,offB];...]
Verification, before any timing: inputs uniform in [-1, 1), fresh for every check; C poisoned with NaN when beta == 0
(else random C); float64 reference; pass when ||out - ref|| / ||ref|| < 1e-4. The checks cover odd K and N, tiny
shapes, fewer K tiles than stages, A, B, C offset by 1-3 floats (misaligned), every N % 4, and shapes where the wave
rule swaps the tile orientation. A kernel that fails any check is reported and not timed.
Timing: CUDA events around each launch, L2 flushed (256 MB memset) before each, 5 warm-up launches per variant; the
variants of a shape are timed interleaved, ROUNDS rounds of REPS launches each, so that clock and power drift
falls on all alike; each figure is the median of ROUNDS * REPS launches. One JSON line per measurement, a table last.
"""
import json
import math
import sys
from pathlib import Path

import cupy as cp
import numpy as np
from configs import ALIGNED_ONLY, KERNELS, block, mangled, orients, smem

ROUNDS, REPS = 6, 5
TOL = 1e-4
rng = cp.random.RandomState(20261124)
flush_buf = cp.empty(256 * 1024 * 1024, dtype=cp.uint8)


def emit(**row):
    print(json.dumps(row), flush=True)


def launcher(name, build):
    _src, entry, params, tag = KERNELS[name]
    fn = cp.RawModule(path=str(Path(build) / f"{tag}.cubin")).get_function(mangled(params, entry))
    bm, bn, threads = block(name)
    shm = smem(name)
    if shm > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = shm
    orient = orients(name)
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    minblocks = params[-1]

    def run(M, N, K, alpha, A, B, beta, C):
        wide, tall = math.ceil(M / bm) * math.ceil(N / bn), math.ceil(M / bn) * math.ceil(N / bm)
        wave = sms * minblocks
        swap = orient and bm != bn and tall * math.ceil(wide / wave) > wide * math.ceil(tall / wave)
        fn(((tall if swap else wide), 1, 1), (threads, 1, 1),
           (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B, np.float32(beta), C), shared_mem=shm)
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


def tflops(M, N, K, ms):
    return 2.0 * M * N * K / (ms * 1e-3) / 1e12


def time_interleaved(runs, shape):
    """{label: samples}: every (label -> (run, offsets)) timed in ROUNDS interleaved rounds of REPS launches."""
    M, N, K = shape
    ops = {lab: operands(M, N, K, offs) for lab, (_run, offs) in runs.items()}
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for lab, (run, _offs) in runs.items():
        for _ in range(5):
            run(M, N, K, 1.0, *ops[lab][:2], 0.0, ops[lab][2])
    samples = {lab: [] for lab in runs}
    for _ in range(ROUNDS):
        for lab, (run, _offs) in runs.items():
            A, B, C = ops[lab]
            for _ in range(REPS):
                flush_buf.fill(0)
                start.record()
                run(M, N, K, 1.0, A, B, 0.0, C)
                stop.record()
                stop.synchronize()
                samples[lab].append(cp.cuda.get_elapsed_time(start, stop))
    return samples


CHECKS = [  # (M, N, K), alpha, beta, (offset of A, B, C in floats)
    ((4095, 4097, 1023), 1.0, 0.0, (0, 0, 0)), ((1, 1, 1), 1.0, 0.0, (0, 0, 0)), ((17, 33, 5), 1.0, 0.0, (0, 0, 0)),
    ((1000, 1000, 999), 1.0, 0.0, (0, 0, 0)), ((1000, 1000, 999), 1.5, -0.75, (0, 0, 0)),
    ((1001, 1000, 1000), 1.0, 0.0, (0, 0, 0)), ((1001, 1000, 1000), 1.5, -0.75, (1, 0, 1)),
    ((512, 512, 512), 1.0, 0.0, (1, 0, 0)), ((512, 512, 512), 1.0, 0.0, (0, 1, 0)),
    ((512, 512, 512), 1.0, 0.0, (0, 0, 1)), ((300, 260, 20), 1.0, 0.0, (0, 0, 0)),
    ((300, 260, 16), 0.5, 2.0, (0, 0, 0)), ((2048, 2048, 2048), 1.0, 0.0, (0, 0, 0)),
    ((4096, 4096, 4096), 1.0, 0.0, (0, 0, 0)), ((256, 256, 256), 2.0, 0.5, (0, 0, 0)), ((3, 4, 4), 1.0, 0.0, (0, 0, 0)),
    ((130, 4, 9), 1.0, 0.0, (0, 0, 0)), ((257, 129, 33), 1.0, 0.0, (0, 1, 0)),
    ((300, 260, 17), 1.0, 0.0, (1, 1, 1)), ((300, 260, 18), 1.0, 0.0, (3, 2, 0)), ((64, 1, 40), 1.0, 0.0, (0, 1, 0)),
    ((33, 2, 19), 1.0, 0.0, (1, 1, 0)), ((70, 3, 25), 1.0, 0.0, (1, 3, 1)), ((129, 257, 8), 1.0, 0.0, (2, 2, 2)),
    ((129, 257, 16), 1.0, 0.0, (0, 0, 0)), ((129, 257, 24), 1.0, 0.0, (1, 0, 0)), ((129, 257, 1), 1.0, 0.0, (3, 1, 0)),
    ((4096, 4096, 4096), 1.0, 0.0, (0, 1, 0)), ((4096, 4096, 4096), 1.0, 0.0, (1, 0, 0)),
    ((1024, 1027, 1021), 1.25, 0.5, (3, 3, 3)), ((520, 300, 4095), 1.0, 0.0, (0, 0, 0)),
    ((300, 260, 17), 1.0, 0.0, (0, 3, 0)), ((1000, 1026, 1000), 1.0, 0.0, (0, 0, 0)),
    ((1000, 1026, 999), 1.0, 0.0, (0, 1, 0)), ((70, 6, 33), 1.0, 0.0, (0, 2, 0)), ((513, 771, 77), 0.5, 1.5, (2, 3, 1)),
    ((257, 1025, 300), 1.0, 0.0, (0, 2, 0)), ((257, 1027, 301), 1.0, 0.0, (0, 1, 3)),
    # shapes where the wave rule swaps the tile orientation (128 x 256 -> 256 x 128)
    ((2000, 4100, 64), 1.0, 0.0, (0, 1, 0)), ((4095, 4097, 1023), 1.5, -0.75, (1, 2, 3)), ((2000, 4098, 37), 1.0, 0.0, (0, 0, 0)),
    # K of 1 to 5 tiles (fewer tiles than stages), odd M and N
    ((257, 263, 9), 1.0, 0.0, (0, 0, 0)), ((257, 263, 33), 1.0, 0.0, (1, 1, 1)), ((640, 640, 40), 1.0, 0.0, (0, 0, 0)),
]
SHAPES = [(2048, 2048, 2048, 0), (4096, 4096, 4096, 0), (8192, 8192, 8192, 0), (4095, 4097, 1023, 0),
          (4096, 4096, 4096, 1)]


def launch_twice(build, name, M, N, K, offb=0):
    """One target for ncu (profile the second launch: --launch-skip 1 --launch-count 1)."""
    A, B, C = operands(M, N, K, (0, offb, 0))
    run = cublas if name == "cublas" else launcher(name, build)
    for _ in range(2):
        run(M, N, K, 1.0, A, B, 0.0, C)
    cp.cuda.runtime.deviceSynchronize()
    print("launched", name, M, N, K, offb)


def main():
    build = sys.argv[1]
    if sys.argv[2] == "--launch":
        return launch_twice(build, sys.argv[3], *(int(x) for x in sys.argv[4:]))
    only = sys.argv[2].split(",") if len(sys.argv) > 2 and sys.argv[2] != "all" else list(KERNELS)
    shapes = SHAPES
    if "--shapes" in sys.argv:
        shapes = [tuple(int(x) for x in s.split(",")) + (0,) * (4 - len(s.split(",")))
                  for s in sys.argv[sys.argv.index("--shapes") + 1].split(";")]
    dev = cp.cuda.runtime.getDeviceProperties(0)
    emit(kind="env", device=dev["name"].decode(), sms=dev["multiProcessorCount"],
         cuda_runtime=cp.cuda.runtime.runtimeGetVersion(), driver=cp.cuda.runtime.driverGetVersion(),
         cupy=cp.__version__)
    kernels, wrong = {}, []
    for name in only:
        run = launcher(name, build)
        bad = 0
        checks = [c for c in CHECKS if c[0][1] % 4 == 0 and c[3][1:] == (0, 0)] if name in ALIGNED_ONLY else CHECKS
        for (M, N, K), alpha, beta, offs in checks:
            err = verify(run, M, N, K, alpha, beta, offs)
            bad += not err < TOL
            emit(kind="verify", kernel=name, shape=[M, N, K], alpha=alpha, beta=beta, offsets=offs, rel_err=err,
                 ok=err < TOL)
        if bad:
            wrong.append(name)
            print(f"VERIFICATION FAILED: {name}: {bad} of {len(checks)} checks; not timed", flush=True)
        else:
            kernels[name] = run
    print(f"verification: {len(kernels)} kernels passed all their checks ({len(CHECKS)} cases, aligned ones only for "
          f"{sorted(ALIGNED_ONLY & set(only)) or 'none'}); failed: {wrong or 'none'}", flush=True)

    table = {}
    for M, N, K, offb in shapes:
        shape = (M, N, K)
        runs = {"cublas": (cublas, (0, 0, 0)), **{n: (r, (0, offb, 0)) for n, r in kernels.items()}}
        samples = time_interleaved(runs, shape)
        for lab, s in samples.items():
            ms = float(np.median(s))
            table[(shape + (offb,), lab)] = ms
            q1, q3 = np.percentile(s, [25, 75])
            emit(kind="time", kernel=lab, shape=list(shape), offset_b=offb, median_ms=ms, tflops=tflops(*shape, ms),
                 iqr_rel=float((q3 - q1) / ms), samples=s)
    cols = [s[:3] + (s[3],) for s in shapes]
    print("\n| kernel | " + " | ".join("x".join(map(str, c[:3])) + (" Boff1" if c[3] else "") for c in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for lab in ["cublas", *kernels]:
        cells = []
        for c in cols:
            ms, cb = table.get((c, lab)), table[(c, "cublas")]
            cells.append("" if ms is None else f"{tflops(*c[:3], ms):.1f} ({100 * cb / ms:.1f}%)")
        print(f"| {lab} | " + " | ".join(cells) + " |")
    print("TFLOP/s (percent of cuBLAS SGEMM timed interleaved in this process; B offset columns: cuBLAS aligned)")


if __name__ == "__main__":
    main()
