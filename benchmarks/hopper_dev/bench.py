"""Standalone harness for the Hopper rungs: load cubins, verify against a float64 reference, time with CUDA events
(L2 flushed between repetitions) beside cuBLAS in the same process. Run from the repository root:
    python3 .dev/hopper/bench.py [--sizes 4096,8192] [--reps 30] [--only h5,h6]
"""
import argparse
import json
import os
import platform
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))  # the repo root, for gemmprof.errors

import cupy as cp  # noqa: E402
import numpy as np  # noqa: E402
from cupy.cuda import cublas  # noqa: E402

try:
    import hopper_host as hh  # the copy beside this script (.dev/hopper on the GPU machine)
except ImportError:
    from gemmprof.measure import hopper_host as hh
from variants import VARIANTS, smem_bytes  # noqa: E402

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
TOL = {"fp16": 2e-3, "bf16": 1e-2}



def random_operands(M, N, K, dt, seed):
    rng = cp.random.default_rng(seed)
    a32 = rng.random((M, K), dtype=cp.float32) * 2 - 1
    b32 = rng.random((N, K), dtype=cp.float32) * 2 - 1  # B column-major: N rows of K
    if dt == "fp16":
        a, b = a32.astype(cp.float16), b32.astype(cp.float16)
        a64, b64 = a.astype(cp.float64), b.astype(cp.float64)
    else:  # bf16 as raw uint16 (round to nearest even from fp32)
        a, b = to_bf16(a32), to_bf16(b32)
        a64, b64 = from_bf16(a).astype(cp.float64), from_bf16(b).astype(cp.float64)
    return a, b, a64, b64


def to_bf16(x32):
    u = x32.view(cp.uint32)
    r = (u + cp.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16
    return r.astype(cp.uint16)


def from_bf16(u16):
    return (u16.astype(cp.uint32) << 16).view(cp.float32)


class Rung:
    def __init__(self, spec, dt, sms):
        name, src, entry, defs, bm, bn, threads, stages, persistent = spec[:9]
        self.cluster = spec[9] if len(spec) > 9 else None
        self.cm = self.cluster[0] if self.cluster else 1
        self.name, self.entry, self.bm, self.bn, self.threads, self.persistent = name, entry, bm, bn, threads, persistent
        self.dt, self.sms = dt, sms
        self.smem = smem_bytes(bm, bn, stages)
        self.mod = cp.RawModule(path=os.path.join(HERE, "cubins", f"{name}_{dt}.cubin"))
        self.kern = self.mod.get_function(entry)
        self.kern.max_dynamic_shared_size_bytes = self.smem
        self.fptr = self.kern.kernel.ptr

    def grid(self, M, N):
        tiles = -(-M // (self.bm * self.cm)) * -(-N // self.bn)  # cluster tiles
        return self.cm * (min(tiles, self.sms // self.cm) if self.persistent else tiles)

    def prepare(self, M, N, K, a, b, c, alpha, beta):
        tdt = self.dt
        ta = hh.encode_tiled(a.data.ptr, hh.TiledMap(tdt, M, K, self.bm, 64, 128))
        tb = hh.encode_tiled(b.data.ptr, hh.TiledMap(tdt, N, K, self.bn // self.cm, 64, 128))
        args = (np.int32(M), np.int32(N), np.int32(K), np.float32(alpha), a, b, np.float32(beta), c, ta, tb)
        grid = self.grid(M, N)

        def launch_ex():
            hh.launch_ex(self.fptr, (grid, 1, 1), (self.threads, 1, 1), args, shared_mem=self.smem,
                         cluster=self.cluster)

        def launch_cupy():
            self.kern((grid,), (self.threads,), args, shared_mem=self.smem)

        return launch_ex, launch_cupy


def cublas_launcher(M, N, K, a, b, c, dt, layout):
    handle = cp.cuda.device.get_cublas_handle()
    t = CUDA_R_16F if dt == "fp16" else CUDA_R_16BF
    alpha, beta = np.array(1.0, np.float32), np.array(0.0, np.float32)
    if layout == "TN":  # B as stored for the rungs (N rows of K): C^T = B^T A^T
        def run():
            cublas.gemmEx(handle, 1, 0, N, M, K, alpha.ctypes.data, b.data.ptr, t, K, a.data.ptr, t, K,
                          beta.ctypes.data, c.data.ptr, CUDA_R_32F, N, 68, -1)
    else:  # NN: B row-major K x N, as gemmprof's baseline runs it
        bt = cp.ascontiguousarray(b.T)

        def run():
            cublas.gemmEx(handle, 0, 0, N, M, K, alpha.ctypes.data, bt.data.ptr, t, N, a.data.ptr, t, K,
                          beta.ctypes.data, c.data.ptr, CUDA_R_32F, N, 68, -1)
        run.keep = bt
    return run


def rel_err(out, ref):
    if not bool(cp.isfinite(out).all()):
        return float("nan")
    return float(cp.linalg.norm(out.astype(cp.float64) - ref) / cp.linalg.norm(ref))


def time_ms(fn, reps, flush):
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(reps):
        flush.fill(1)  # memset of a buffer larger than L2
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e))
    return statistics.median(times), min(times), max(times)


def verify(rung, M, N, K, dt, alpha, beta, seed, via="ex"):
    a, b, a64, b64 = random_operands(M, N, K, dt, seed)
    c = cp.full((M, N), cp.nan, dtype=cp.float32)
    ref = alpha * (a64 @ b64.T)
    if beta != 0.0:
        c0 = cp.random.default_rng(seed + 1).random((M, N), dtype=cp.float32) * 2 - 1
        c[...] = c0
        ref += beta * c0.astype(cp.float64)
    ex, cpy = rung.prepare(M, N, K, a, b, c, alpha, beta)
    (ex if via == "ex" else cpy)()
    cp.cuda.Device().synchronize()
    return rel_err(c, ref)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", default="")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    sms = props["multiProcessorCount"]
    info = {"device": props["name"].decode(), "sms": sms, "cupy": cp.__version__, "python": platform.python_version(),
            "driver": cp.cuda.runtime.driverGetVersion(), "runtime": cp.cuda.runtime.runtimeGetVersion()}
    print("INFO", json.dumps(info), flush=True)
    flush = cp.empty(256 * 2**20 // 4, dtype=cp.float32)
    only = set(args.only.split(",")) if args.only else None
    results = {"info": info, "verify": [], "timing": []}
    for dt in args.dtypes.split(","):
        rungs = [Rung(v, dt, sms) for v in VARIANTS if only is None or v[0] in only]
        # ---- correctness: odd shapes, beta != 0, small K, both launch paths ----
        checks = [(4095, 4097, 1024, 1.0, 0.0, "ex"), (300, 520, 136, 1.5, -0.5, "ex"), (129, 257, 8, 1.0, 0.0, "ex"),
                  (100, 300, 64, 1.0, 0.0, "ex"), (1000, 1000, 1000, 1.0, 0.0, "cupy")]
        for r in rungs:
            for i, (M, N, K, al, be, via) in enumerate(checks):
                if via == "cupy" and r.cluster:
                    via = "ex"  # RawKernel's call has no cluster launch
                try:
                    err = verify(r, M, N, K, dt, al, be, 100 + i, via)
                except Exception as exc:  # report and go on: one broken rung must not hide the others
                    err = f"ERROR {type(exc).__name__}: {exc}"
                ok = isinstance(err, float) and err < TOL[dt]
                results["verify"].append(dict(rung=r.name, dtype=dt, M=M, N=N, K=K, alpha=al, beta=be, via=via,
                                              rel_err=err, ok=ok))
                print(f"VERIFY {r.name:6s} {dt} {M}x{N}x{K} a={al} b={be} {via}: {err} {'ok' if ok else 'FAIL'}",
                      flush=True)
        # ---- timing at square sizes, verified first on the same data ----
        for S in [int(x) for x in args.sizes.split(",")]:
            a, b, a64, b64 = random_operands(S, S, S, dt, 7 + S)
            ref = a64 @ b64.T
            del a64, b64
            c = cp.empty((S, S), dtype=cp.float32)
            flops = 2.0 * S**3
            for layout in ("TN", "NN"):
                fn = cublas_launcher(S, S, S, a, b, c, dt, layout)
                c.fill(cp.nan)
                fn()
                err = rel_err(c, ref)
                med, lo, hi = time_ms(fn, args.reps, flush)
                row = dict(kernel=f"cublas_{layout}", dtype=dt, size=S, ms=med, min_ms=lo, max_ms=hi,
                           tflops=flops / med / 1e9, rel_err=err)
                results["timing"].append(row)
                print(f"TIME {row['kernel']:10s} {dt} {S}: {med:.4f} ms ({lo:.4f}-{hi:.4f}) "
                      f"{row['tflops']:.1f} TFLOP/s err {err:.2e}", flush=True)
            for r in rungs:
                try:
                    ex, _ = r.prepare(S, S, S, a, b, c, 1.0, 0.0)
                    c.fill(cp.nan)
                    ex()
                    cp.cuda.Device().synchronize()
                    err = rel_err(c, ref)
                    if not err < TOL[dt]:
                        print(f"TIME {r.name} {dt} {S}: not timed, rel err {err}", flush=True)
                        continue
                    med, lo, hi = time_ms(ex, args.reps, flush)
                except Exception as exc:
                    print(f"TIME {r.name} {dt} {S}: ERROR {type(exc).__name__}: {exc}", flush=True)
                    continue
                row = dict(kernel=r.name, dtype=dt, size=S, ms=med, min_ms=lo, max_ms=hi, tflops=flops / med / 1e9,
                           rel_err=err)
                results["timing"].append(row)
                print(f"TIME {r.name:10s} {dt} {S}: {med:.4f} ms ({lo:.4f}-{hi:.4f}) "
                      f"{row['tflops']:.1f} TFLOP/s err {err:.2e}", flush=True)
            del a, b, c, ref
            cp.get_default_memory_pool().free_all_blocks()
    # ---- summary: % of cuBLAS (TN, the rungs' own layout) ----
    print("\nSUMMARY (TFLOP/s, % of cuBLAS TN in this process)")
    base = {(t["dtype"], t["size"]): t["tflops"] for t in results["timing"] if t["kernel"] == "cublas_TN"}
    for t in results["timing"]:
        pct = 100 * t["tflops"] / base[(t["dtype"], t["size"])]
        print(f"  {t['kernel']:10s} {t['dtype']} {t['size']:5d} {t['tflops']:7.1f} {pct:6.1f}%")
    bad = [v for v in results["verify"] if not v["ok"]]
    print(f"verify: {len(results['verify']) - len(bad)} ok, {len(bad)} failed")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
