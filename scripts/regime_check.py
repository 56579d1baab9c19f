"""gemmprof's sustained figure beside the two ways people time a GEMM under load: a plain 3-second loop and
triton.testing.do_bench, for one or more Python GEMMs, in one process.

    python3 scripts/regime_check.py --size 4096 --dtype fp16 -o regime_4096.json

For each function (by default the Triton example writing fp32 C and torch.matmul writing fp16 C, which is cuBLAS):
  1. burst: gemmprof.bench(regime="burst") after --cool-down seconds idle (the card as a short run finds it);
  2. sustained: gemmprof.bench(regime="sustained"): warmed until NVML's SM clock and power settle, then timed;
  3. loop: the same function called back to back for --loop-s seconds, the L2 flushed before each call (a 256 MB
     write, as do_bench does), each call between two CUDA events: the median of the calls;
  4. do_bench: triton.testing.do_bench's median (it flushes L2 the same way), right after the loop (the card hot),
     over as long as the loop (rep = --loop-s: under a power cap the clock swings with a period of a few tenths of
     a second, and do_bench's default 100 ms catches one phase of it), and with its defaults (five times).
All four on uniform [-1, 1) inputs. Prints a table and, with -o, the JSON (each figure, its ratio to the loop's
and to do_bench's, whether sustained is within 3% of both, the clocks). Needs a GPU, CuPy, torch and triton.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = ("examples/triton_matmul/triton_matmul.py:matmul:fp32", "examples/torch_matmul/torch_matmul.py:matmul:fp16")
FLUSH_BYTES = 256 << 20
WITHIN = 0.03


def parse_target(text: str, default_c: str) -> tuple[str, str]:
    """FILE.py:function[:C_DTYPE] -> (FILE.py:function, C dtype)."""
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[2] in ("fp32", "fp16", "bf16"):
        return f"{parts[0]}:{parts[1]}", parts[2]
    return text, default_c


def ratios(sustained: float, loop: float, do_bench: float) -> dict:
    """Sustained against the loop and do_bench: the ratios, and whether both are within 3%."""
    r_loop, r_bench = sustained / loop, sustained / do_bench
    return {"sustained_over_loop": r_loop, "sustained_over_do_bench": r_bench,
            "within_3pct": abs(r_loop - 1) <= WITHIN and abs(r_bench - 1) <= WITHIN}


def loop_median(fn, seconds: float) -> dict:
    """fn called back to back for `seconds`, a 256 MB flush before each call, events around each call."""
    import torch

    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    times = []
    start_wall = time.perf_counter()
    while time.perf_counter() - start_wall < seconds:
        batch = []
        for _ in range(20):
            flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            batch.append((s, e))
        torch.cuda.synchronize()
        times += [s.elapsed_time(e) for s, e in batch]
    return {"median_ms": statistics.median(times), "calls": len(times), "seconds": seconds,
            "median_last_two_thirds_ms": statistics.median(times[len(times) // 3:])}


def row_figures(run) -> dict:
    row = run.variants[0]
    if not row.passed:
        sys.exit(f"gemmprof: {row.name} {row.status}: {row.message}")
    c = row.clocks
    return {"median_ms": row.timing.median_ms, "reps": len(row.timing.samples_ms),
            "held_mhz": c.clock_mhz if c else None, "clock_range_mhz": [c.held_min_mhz, c.held_max_mhz] if c else None,
            "warm_up": row.warm_up.to_dict() if row.warm_up else None,
            "energy": row.energy.to_dict() if row.energy else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--callable", action="append", default=None, metavar="FILE.py:function[:C_DTYPE]",
                    help="a GEMM fn(A, B, C, alpha, beta) and the C it writes (repeatable; default: the Triton "
                         "example, fp32 C, and torch.matmul, fp16 C)")
    ap.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    ap.add_argument("--dtype", choices=["fp16", "bf16", "fp32"], default="fp16")
    ap.add_argument("--loop-s", type=float, default=3.0, help="seconds of the plain loop (default 3)")
    ap.add_argument("--cool-down", type=float, default=10.0, help="idle seconds before the burst run (default 10)")
    ap.add_argument("-o", "--output", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    import torch
    import triton
    from triton import testing

    import gemmprof
    from gemmprof.measure import callables

    n = args.size
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    A = (torch.rand(n, n, device="cuda") * 2 - 1).to(dtypes[args.dtype])
    B = (torch.rand(n, n, device="cuda") * 2 - 1).to(dtypes[args.dtype])
    out = []
    for text in args.callable or DEFAULTS:
        ref, c_dtype = parse_target(text, "fp32")
        call = callables.load(callables.parse_ref(ref))
        fn = call.fn
        C = torch.empty(n, n, device="cuda", dtype=dtypes[c_dtype])
        common = {"m": n, "n": n, "k": n, "dtype": args.dtype, "c_dtype": c_dtype, "arrays": "torch",
                  "baselines": False, "name": call.name}
        time.sleep(args.cool_down)
        burst = row_figures(gemmprof.bench(fn, regime="burst", **common))
        sustained = row_figures(gemmprof.bench(fn, regime="sustained", **common))
        loop = loop_median(lambda: fn(A, B, C, 1.0, 0.0), args.loop_s)  # noqa: B023 - called before the next one
        call_once = lambda: fn(A, B, C, 1.0, 0.0)  # noqa: B023, E731 - used before the next one
        bench_ms = float(testing.do_bench(call_once, rep=int(args.loop_s * 1e3), return_mode="median"))
        short = [float(testing.do_bench(call_once, return_mode="median")) for _ in range(5)]
        out.append({"callable": ref, "c_dtype": c_dtype, "burst": burst, "sustained": sustained, "loop": loop,
                    "do_bench_median_ms": bench_ms, "do_bench_rep_ms": int(args.loop_s * 1e3),
                    "do_bench_default_medians_ms": short,
                    **ratios(sustained["median_ms"], loop["median_ms"], bench_ms)})
    doc = {"shape": [n, n, n], "dtype": args.dtype, "torch": torch.__version__, "triton": triton.__version__,
           "gemmprof": gemmprof.__version__, "fill": "uniform [-1, 1) everywhere",
           "flush": "gemmprof: 2x L2 before each call; loop and do_bench: 256 MB before each call",
           "targets": out}
    print(f"{'callable':<52} {'burst':>8} {'sustained':>9} {'loop':>8} {'do_bench':>8}  within 3%")
    for t in out:
        print(f"{t['callable'] + ' (' + t['c_dtype'] + ' C)':<52} {t['burst']['median_ms']:8.4f} "
              f"{t['sustained']['median_ms']:9.4f} {t['loop']['median_ms']:8.4f} {t['do_bench_median_ms']:8.4f}  "
              f"{t['within_3pct']}")
    if args.output:
        Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # this checkout's gemmprof, run from anywhere
    sys.exit(main())
