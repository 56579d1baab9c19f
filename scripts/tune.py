"""Sweep a rung's tunable parameters on the GPU: every valid combination is verified and timed like `gemmprof run`.

    python3 scripts/tune.py autotuned --size 4096 BM=64,128,256 BN=64,128,256 BK=8,16,32 TM=4,8 TN=4,8 -o out.json

Combinations that the spec's constraints reject are skipped (and counted). Results are saved as a gemmprof run
results file (one variant per combination, parameters in each row); the fastest verified ones are printed last.
"""

from __future__ import annotations

import argparse
import itertools
import sys

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.gpu_specs import current_device_gpu, get_gpu
from gemmprof.errors import SpecError
from gemmprof.measure.runner import Runner, RunOptions, new_result
from gemmprof.measure.timing import TimingConfig
from gemmprof.model.traffic import GemmShape


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variant")
    ap.add_argument("grid", nargs="+", help="NAME=v1,v2,...")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--budget", type=float, default=0.15)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)

    spec = specmod.select([args.variant])[0]
    axes = {}
    for item in args.grid:
        name, values = item.split("=", 1)
        axes[name] = [int(v) for v in values.split(",")]
    kernels, skipped = [], 0
    for combo in itertools.product(*axes.values()):
        try:
            kernels.append(specmod.bind(spec, dict(zip(axes, combo, strict=True))))
        except SpecError:
            skipped += 1
    shape = GemmShape(args.size, args.size, args.size)
    profile = current_device_gpu() or get_gpu("h100")
    options = RunOptions(shape=shape, baselines=False, seed=1234,
                         timing=TimingConfig(budget_s=args.budget, min_reps=5, max_reps=50))
    runner = Runner(profile, options)
    result = new_result(profile, options, runner, "python3 scripts/tune.py " + " ".join(sys.argv[1:]))
    print(f"{spec.name}: {len(kernels)} valid combinations, {skipped} rejected by the spec's constraints", flush=True)
    for i, k in enumerate(kernels):
        row = runner.run_kernel(k)
        result.variants.append(row)
        t = f"{row.achieved_flops / 1e12:7.2f} TFLOP/s" if row.achieved_flops else row.status
        print(f"[{i + 1}/{len(kernels)}] {k.params} regs={row.registers} {t} {row.message[:100]}", flush=True)
    result.save(args.output)
    ok = sorted((v for v in result.variants if v.achieved_flops), key=lambda v: -v.achieved_flops)
    print(f"\nfastest {min(args.top, len(ok))} of {len(ok)} verified:")
    for v in ok[: args.top]:
        print(f"  {v.achieved_flops / 1e12:7.2f} TFLOP/s  spread {v.timing.spread * 100:4.1f}%  regs {v.registers:3d}  {v.params}")


if __name__ == "__main__":
    main()
