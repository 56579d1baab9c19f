"""Issue 30: rungs 14-16 built for one shape (their spec's `specialize`) against their general build, on one GPU.

    python3 scripts/specialize_perf.py -o DIR/specialize_perf.json

Dropping the code a launch cannot run leaves the executed main loop's instructions as they were, but ptxas
allocates registers over the whole kernel, so its registers and moves may change (rung 14's aligned loop: 4 MOVs
more; rung 16 unsplit: 236 -> 218 registers; rung 15 is not specialized: 1% slower so). This times both builds of each rung at each shape interleaved (both verified
against a float64 matmul first, L2 flushed before each launch) and prints the specialized build's median over
the general one's. Needs a GPU and nvcc.
"""

from __future__ import annotations

import argparse
import json
import sys

CASES = (("14", (4096, 4096, 4096)), ("14", (4095, 4097, 1023)), ("14", (8192, 8192, 8192)),
         ("16", (1000, 1000, 1000)), ("16", (4096, 4096, 4096)))


def launcher(kernel, shape, sms, operands):
    """(launch, registers) of `kernel`'s nvcc build, launched as `run` launches it (the spec's grid at `shape`)."""
    import numpy as np

    from gemmprof.measure.build import nvcc_load

    compiled = nvcc_load(kernel)
    grid, block, smem = kernel.launch_config(shape, sms)
    func = compiled.function
    if smem > 48 * 1024:
        func.max_dynamic_shared_size_bytes = smem
    a, b, c = operands
    args = (np.int32(shape.M), np.int32(shape.N), np.int32(shape.K), np.float32(1.0), a, b, np.float32(0.0), c)
    return (lambda: func(grid, block, args, shared_mem=smem)), compiled.resources.registers


def measure(rung: str, dims: tuple[int, int, int], budget_s: float) -> list[dict]:
    import cupy

    from gemmprof.catalog.binding import bind
    from gemmprof.catalog.spec import select
    from gemmprof.measure import timing
    from gemmprof.measure.build import device_sms
    from gemmprof.measure.problem import tolerance
    from gemmprof.results.shape import GemmShape

    shape, sms = GemmShape(*dims), device_sms()
    general = bind(select([rung])[0])
    cupy.random.seed(30)
    a = cupy.random.standard_normal((shape.M, shape.K)).astype(cupy.float32)
    b = cupy.random.standard_normal((shape.K, shape.N)).astype(cupy.float32)
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    config = timing.TimingConfig(budget_s=budget_s, max_reps=400, precision=0.0, interleave_rounds=8)
    flush = timing.L2Flusher(cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"])
    rows, timers, warm_ups = [], [], []
    for kernel in (general, general.for_shape(shape, sms)):
        c = cupy.full((shape.M, shape.N), cupy.nan, dtype=cupy.float32)
        launch, regs = launcher(kernel, shape, sms, (a, b, c))
        launch()
        error = float(cupy.linalg.norm(c - ref) / cupy.linalg.norm(ref))
        rows.append({"rung": rung, "shape": list(dims), "build": "specialized" if kernel.shape_defines else "general",
                     "defines": [f"{n}={v}" for n, v in kernel.shape_defines], "registers": regs,
                     "rel_error": error, "verified": error < tolerance("fp32")})
        timers.append(timing.event_timer(launch, flush))
        warm_ups.append(lambda launch=launch: timing.warm_up(launch, config))
    for row, m in zip(rows, timing.time_interleaved(timers, warm_ups, config), strict=True):
        row.update(median_ms=m.median_ms, spread=m.spread, reps=len(m.samples_ms))
    rows[1]["median_vs_general"] = rows[1]["median_ms"] / rows[0]["median_ms"]
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] + " (scripts/specialize_perf.py)")
    parser.add_argument("-o", "--output", help="write the rows as JSON here")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of kernel time per build (default 2)")
    args = parser.parse_args(argv)
    rows = [r for rung, dims in CASES for r in measure(rung, dims, args.budget)]
    for r in rows:
        ratio = f"{r['median_vs_general']:.4f}" if "median_vs_general" in r else ""
        print(f"rung {r['rung']:>2} {'x'.join(map(str, r['shape'])):>16} {r['build']:<11} regs {r['registers']:>3} "
              f"{r['median_ms']:9.4f} ms +-{100 * r['spread']:.1f}% {ratio} {' '.join(r['defines'])}"
              f"{'' if r['verified'] else ' FAILED VERIFICATION'}")
    if args.output:
        with open(args.output, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["verified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
