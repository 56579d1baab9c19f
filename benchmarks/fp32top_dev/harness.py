"""Verify and time rung 13 (nvcc cubins from build.py) against cuBLAS SGEMM in one process (GPU machine).

Usage: python3 harness.py BUILD_DIR [--quick]
Verification: inputs uniform in [-1, 1), C poisoned with NaN when beta == 0, float64 reference (cupy),
||out - ref|| / ||ref|| < 1e-4. Timing: CUDA events around each launch, L2 flushed by a memset of a 256 MB buffer
before every repetition, 5 warm-up launches, median of REPS. Prints one JSON line per measurement, a table last.
"""
import json
import math
import sys
from pathlib import Path

import cupy as cp
import numpy as np
from configs import CONFIGS, mangled

REPS = 30
TOL = 1e-4
BUILD = Path(sys.argv[1])
QUICK = "--quick" in sys.argv
rng = cp.random.RandomState(12345)
flush_buf = cp.empty(256 * 1024 * 1024, dtype=cp.uint8)
results = []


def emit(**row):
    results.append(row)
    print(json.dumps(row), flush=True)


def load(cubin, name):
    return cp.RawModule(path=str(BUILD / cubin)).get_function(name)


def launcher(fn, params):
    bm, bn, _, _, _, threads, _, _ = params

    def run(M, N, K, alpha, A, B, beta, C):
        grid = (math.ceil(M / bm) * math.ceil(N / bn), 1, 1)
        fn(grid, (threads, 1, 1), (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B,
                                   np.float32(beta), C))
    return run


def r09_launcher():
    fn = load("r09.cubin", "_Z15sgemm_autotunedILj128ELj128ELj16ELj4ELj4ELj256EEviiifPKfS1_fPf")

    def run(M, N, K, alpha, A, B, beta, C):
        fn((N // 128, M // 128, 1), (256, 1, 1), (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), A, B,
                                                  np.float32(beta), C))
    return run


def cublas(M, N, K, alpha, A, B, beta, C):
    assert alpha == 1.0 and beta == 0.0
    cp.matmul(A, B, out=C)


def operands(M, N, K, offset=0):
    """A (M x K), B (K x N), C (M x N) float32; offset > 0 shifts A by that many floats (misaligned pointer)."""
    a_store = rng.uniform(-1, 1, M * K + offset).astype(cp.float32)
    A = a_store[offset:].reshape(M, K)
    B = rng.uniform(-1, 1, (K, N)).astype(cp.float32)
    C = cp.full((M, N), cp.nan, dtype=cp.float32)
    return A, B, C


def verify(run, M, N, K, alpha=1.0, beta=0.0, offset=0):
    A, B, C = operands(M, N, K, offset)
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


def time_ms(run, M, N, K, offset=0, reps=REPS):
    A, B, C = operands(M, N, K, offset)
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


def main():
    dev = cp.cuda.runtime.getDeviceProperties(0)
    emit(kind="env", device=dev["name"].decode(), sms=dev["multiProcessorCount"],
         cuda_runtime=cp.cuda.runtime.runtimeGetVersion(), driver=cp.cuda.runtime.driverGetVersion(),
         cupy=cp.__version__)
    r13 = {n: launcher(load("r13.cubin", mangled(p)), p) for n, p in CONFIGS.items()}
    r13a = {n: launcher(load("r13_aligned.cubin", mangled(p)), p) for n, p in CONFIGS.items()}
    checks = [((4095, 4097, 1023), 1.0, 0.0, 0), ((1, 1, 1), 1.0, 0.0, 0), ((17, 33, 5), 1.0, 0.0, 0),
              ((1000, 1000, 999), 1.0, 0.0, 0), ((1000, 1000, 999), 1.5, -0.75, 0), ((1001, 1000, 1000), 1.0, 0.0, 0),
              ((1001, 1000, 1000), 1.5, -0.75, 0), ((512, 512, 512), 1.0, 0.0, 1), ((2048, 2048, 2048), 1.0, 0.0, 0),
              ((4096, 4096, 4096), 1.0, 0.0, 0), ((256, 256, 256), 2.0, 0.5, 0), ((3, 4, 4), 1.0, 0.0, 0),
              ((130, 4, 9), 1.0, 0.0, 0)]
    bad = 0
    for name, run in r13.items():
        for (M, N, K), alpha, beta, off in checks:
            err = verify(run, M, N, K, alpha, beta, off)
            ok = err < TOL
            bad += not ok
            emit(kind="verify", kernel=f"r13_{name}", shape=[M, N, K], alpha=alpha, beta=beta, a_offset=off,
                 rel_err=err, ok=ok)
    for name in ("r09",):
        err = verify(r09_launcher(), 2048, 2048, 2048)
        bad += not err < TOL
        emit(kind="verify", kernel=name, shape=[2048] * 3, rel_err=err, ok=err < TOL)
    for name, run in r13a.items():
        err = verify(run, 2048, 2048, 2048)
        bad += not err < TOL
        emit(kind="verify", kernel=f"r13aligned_{name}", shape=[2048] * 3, rel_err=err, ok=err < TOL)
    if bad:
        print(f"VERIFICATION FAILED: {bad} checks; not timing")
        sys.exit(1)

    shapes = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 1023)]
    table = {}
    for shape in shapes:
        M, N, K = shape
        rows = {"cublas": cublas, **{f"r13_{n}": r for n, r in r13.items()}}
        if M % 128 == 0 and N % 128 == 0 and K % 16 == 0:
            rows["r09"] = r09_launcher()
            rows.update({f"r13aligned_{n}": r for n, r in r13a.items() if not QUICK})
        if shape == (4096, 4096, 4096):
            rows.update({f"r13scalarpath_{n}": r for n, r in r13.items()})
        for label, run in rows.items():
            off = 1 if label.startswith("r13scalarpath_") else 0
            ms, samples = time_ms(run, M, N, K, offset=off)
            table[(shape, label)] = ms
            emit(kind="time", kernel=label, shape=list(shape), median_ms=ms, tflops=tflops(M, N, K, ms),
                 spread=(max(samples) - min(samples)) / ms, samples=samples)
    # cuBLAS again at the end: how stable is the baseline within the process
    for shape in shapes[1:3]:
        ms, samples = time_ms(cublas, *shape)
        emit(kind="time", kernel="cublas_again", shape=list(shape), median_ms=ms, tflops=tflops(*shape, ms),
             samples=samples)
        table[(shape, "cublas_again")] = ms

    print("\n| kernel | " + " | ".join("x".join(map(str, s)) for s in shapes) + " |")
    print("|---|" + "---|" * len(shapes))
    labels = sorted({lab for (_, lab) in table}, key=lambda s: (not s.startswith("cublas"), s))
    for lab in labels:
        cells = []
        for s in shapes:
            ms = table.get((s, lab))
            cb = table.get((s, "cublas"))
            cells.append("" if ms is None else f"{tflops(*s, ms):.1f} ({100 * cb / ms:.1f}%)")
        print(f"| {lab} | " + " | ".join(cells) + " |")
    print("TFLOP/s (percent of cuBLAS SGEMM in this process)")


if __name__ == "__main__":
    main()
