"""Issue 25's check of callable timing: the Triton example timed by gemmprof and by triton.testing.do_bench.

    python3 scripts/callable_vs_do_bench.py --size 4096 --dtype fp16 -o benchmarks/DATE_h100_every_py/do_bench.json

One process, one function (examples/triton_matmul/triton_matmul.py:matmul, or --callable), the same shape and dtypes:
gemmprof.bench (CUDA events around each call, torch tensors, no L2 flush) and do_bench (its events around each
call) in alternating rounds. do_bench flushes L2 before every repetition by zeroing a 256 MB buffer
(driver.active.clear_cache in Triton 3); that flush is replaced by a no-op here, so neither side flushes, and the
signature do_bench had is recorded.

Both sides time the same regime. do_bench warms up for `warmup` ms (25) and then launches for `rep` ms (100) back
to back; gemmprof's default stops once its median is known to 0.5%, often after tens of calls, before fp16 at full
load has drawn the GPU to its power cap (within ~100 ms on the H100). So gemmprof gets do_bench's warm-up as a count
of calls (from do_bench's own estimate: five calls timed), precision 0 (no stopping early) and a budget of
do_bench's rep. Prints (and with -o saves) both medians, the median of the rounds' paired ratios (the verdict's
figure: a clock that drifts between rounds cancels within a round), whether it is within 3%, and what each side
did, as JSON. Needs a GPU, CuPy, torch and triton.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = "examples/triton_matmul/triton_matmul.py:matmul"
DO_BENCH_MS = {"warmup": 25, "rep": 100}  # do_bench's defaults where its signature does not say


def do_bench_defaults(signature) -> dict[str, float]:
    """do_bench's warm-up and timed milliseconds, as its signature gives them."""
    out = {}
    for name, fallback in DO_BENCH_MS.items():
        param = signature.parameters.get(name)
        default = param.default if param is not None else fallback
        out[name] = float(default) if isinstance(default, (int, float)) and default > 0 else float(fallback)
    return out


def gemmprof_timing(estimate_ms: float, warmup_ms: float, budget_s: float) -> dict:
    """bench()'s timing arguments that match do_bench's: as many warm-up calls as do_bench makes of its warm-up
    time (max(1, warmup / estimate), its own rule), no early stop, the timed budget of its rep, and repetitions
    bounded by that budget only."""
    per_ms = max(estimate_ms, 1e-6)
    return {"warmup": max(1, int(warmup_ms / per_ms)), "precision": 0.0, "budget_s": budget_s,
            "max_reps": max(1000, 4 * int(budget_s * 1e3 / per_ms))}


def estimate_ms(fn) -> float:
    """do_bench's estimate of one call: one call, then five timed together with CUDA events."""
    import torch

    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 5


def no_flush_do_bench():
    """do_bench with its L2 flush made a no-op, and how to ask it for the median; says why not where it can't."""
    import triton
    from triton import testing

    sig = inspect.signature(testing.do_bench)
    driver = triton.runtime.driver.active
    if not hasattr(driver, "clear_cache"):
        sys.exit(f"this triton ({triton.__version__}) flushes inside do_bench{sig} with no hook to turn it off")
    driver.clear_cache = lambda cache: None  # the instance attribute shadows the driver's method

    def median_ms(fn):
        if "return_mode" in sig.parameters:
            return float(testing.do_bench(fn, return_mode="median"))
        return float(testing.do_bench(fn, quantiles=[0.5]))

    return median_ms, f"do_bench{sig}", do_bench_defaults(sig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--callable", default=DEFAULT, help=f"FILE.py:function (default {DEFAULT})")
    ap.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    ap.add_argument("--dtype", choices=["fp16", "bf16", "fp32"], default="fp16")
    ap.add_argument("--c-dtype", choices=["fp32", "fp16", "bf16"], default="fp32",
                    help="C's dtype, for a function writing half C (default fp32)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of each (default 3)")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds of gemmprof's timed calls per round (default: do_bench's rep, 0.1)")
    ap.add_argument("-o", "--output", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    import torch

    import gemmprof
    from gemmprof.measure import callables

    call = callables.load(callables.parse_ref(args.callable))
    fn = call.fn
    do_bench, signature, theirs_ms = no_flush_do_bench()
    n = args.size
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    A = (torch.rand(n, n, device="cuda") * 2 - 1).to(dtypes[args.dtype])
    B = (torch.rand(n, n, device="cuda") * 2 - 1).to(dtypes[args.dtype])
    C = torch.empty(n, n, device="cuda", dtype=dtypes[args.c_dtype])
    estimate = estimate_ms(lambda: fn(A, B, C, 1.0, 0.0))
    timing = gemmprof_timing(estimate, theirs_ms["warmup"],
                             args.budget if args.budget is not None else theirs_ms["rep"] / 1e3)
    rounds = []
    for _ in range(args.rounds):
        run = gemmprof.bench(fn, m=n, n=n, k=n, dtype=args.dtype, c_dtype=args.c_dtype, arrays="torch",
                             baselines=False, flush_l2=False, name=call.name, **timing)
        row = run.variants[0]
        if not row.passed:
            sys.exit(f"gemmprof: {row.name} {row.status}: {row.message}")
        ours = row.timing.median_ms
        theirs = do_bench(lambda: fn(A, B, C, 1.0, 0.0))
        rounds.append({"gemmprof_median_ms": ours, "gemmprof_reps": len(row.timing.samples_ms),
                       "gemmprof_spread": row.timing.spread, "do_bench_median_ms": theirs, "ratio": ours / theirs})
    ours = statistics.median(r["gemmprof_median_ms"] for r in rounds)
    theirs = statistics.median(r["do_bench_median_ms"] for r in rounds)
    paired = statistics.median(r["ratio"] for r in rounds)
    import triton

    doc = {"callable": args.callable, "shape": [n, n, n], "dtype": args.dtype, "c_dtype": args.c_dtype,
           "device": run.device.get("name"), "torch": torch.__version__, "triton": triton.__version__,
           "do_bench": signature,
           "flush": "none on either side: gemmprof flush_l2=False; do_bench's clear_cache replaced by a no-op",
           "timing": {  # what each side did; do_bench's counts follow from its rule and the estimate
               "estimate_ms": estimate,
               "do_bench": {**{f"{k}_ms": v for k, v in theirs_ms.items()},
                            **{f"{k}_calls_at_estimate": max(1, int(v / max(estimate, 1e-6)))
                               for k, v in theirs_ms.items()},
                            "calls": "max(1, int(warmup_ms / estimate)) warm-up calls, then max(1, int(rep_ms / "
                                     "estimate)) timed calls back to back (its own estimate, inside each do_bench)"},
               "gemmprof": {**timing, "flush_l2": False,
                            "calls": "`warmup` calls, then timed calls in batches doubling from 10 until budget_s "
                                     "of call time (precision 0: no early stop) or max_reps",
                            "timed_calls": [r["gemmprof_reps"] for r in rounds]}},
           "gemmprof_median_ms": ours, "do_bench_median_ms": theirs, "ratio_of_medians": ours / theirs,
           "ratio_paired": paired, "within_3pct": abs(paired - 1) <= 0.03,
           "verdict": "on the median of the rounds' ratios: each round times both sides back to back, so a clock "
                      "that moves between rounds (fp16 at full load draws the power cap) cancels within a pair",
           "rounds": rounds}
    text = json.dumps(doc, indent=1)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # this checkout's gemmprof, run from anywhere
    sys.exit(main())
