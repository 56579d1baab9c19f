"""GPU evidence for issue 11: every rung built by nvcc and by NVRTC and timed in one process, and gemmprof's
median under --compiler nvcc next to a plain CUDA-events loop outside gemmprof's timing code.

The plain loop: the same translation unit built by `nvcc -O3 -arch=sm_XX -cubin` (no other flags), loaded with
cupy.RawModule(path=...), 50 back-to-back launches between two events, median of 5. gemmprof's median comes from
its own Runner (L2 flushed between repetitions by default: pass --no-flush to compare like with like).

Run from the repo root on the GPU machine:  PYTHONPATH=$PWD python3 scripts/compiler_check.py [RUNGS...] --size 4096
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def plain_events_ms(kernel, shape, problem, launches=50, repeats=5) -> tuple[float, list[float]]:
    import cupy

    from gemmprof.catalog.abi import kernel_values
    from gemmprof.measure.cubin import entry_symbol, function_symbols
    from gemmprof.measure.nvcc import nvcc_path, wrapper_source

    cc = cupy.cuda.Device().compute_capability
    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = Path(tmp) / "k.cu", Path(tmp) / "k.cubin"
        src.write_text(wrapper_source(kernel))
        cmd = [nvcc_path(), "-O3", "-std=c++17", f"-arch=sm_{cc}", "-cubin", *kernel.define_flags,
               *kernel.spec.compile_options, f"-I{kernel.spec.file.parent}", "-o", str(cubin), str(src)]
        subprocess.run(cmd, check=True, capture_output=True)
        symbol = entry_symbol(function_symbols(cubin.read_bytes()), kernel.spec.entry, kernel.template_args)
        func = cupy.RawModule(path=str(cubin)).get_function(symbol)
        grid, block, smem = kernel.launch_config(shape)
        if smem > 48 * 1024:
            func.max_dynamic_shared_size_bytes = smem
        out = problem.sentinel_output()
        layout = kernel.spec.layout
        buffers = {"A": problem.operand("A", layout["A"]), "B": problem.operand("B", layout["B"]), "C": out}
        args = kernel_values(kernel.spec.abi, shape, layout, problem.alpha, problem.beta, buffers)
        func(grid, block, args, shared_mem=smem)  # warm-up
        cupy.cuda.Device().synchronize()
        times = []
        for _ in range(repeats):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            for _ in range(launches):
                func(grid, block, args, shared_mem=smem)
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) / launches)
        return statistics.median(times), times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rungs", nargs="*", help="rung ids or names (default: every rung)")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--no-flush", action="store_true", help="gemmprof without L2 flushes (like the plain loop)")
    ap.add_argument("-o", "--output", default=None, help="JSON record")
    a = ap.parse_args(argv)

    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.catalog.gpu_specs import all_gpus
    from gemmprof.measure.device import current_device_gpu
    from gemmprof.measure.runner import Runner, RunOptions
    from gemmprof.measure.timing import TimingConfig
    from gemmprof.model.traffic import GemmShape

    shape = GemmShape(a.size, a.size, a.size)
    specs = specmod.select(a.rungs) if a.rungs else list(specmod.ladder())
    opts = RunOptions(shape=shape, baselines=False,
                      timing=TimingConfig(budget_s=a.budget, max_reps=200, flush_l2=not a.no_flush))
    runner = Runner(current_device_gpu() or all_gpus()[0], opts)  # peaks unused here
    records = []
    print(f"{'rung':<32}{'nvcc ms':>9}{'nvrtc ms':>10}{'nvrtc/nvcc':>11}{'plain ms':>10}{'gp/plain':>10}  status")
    for s in specs:
        kernel = bind(s)
        rows = {c: runner.run_kernel(kernel, c) for c in ("nvcc", "nvrtc")}
        med = {c: r.timing.median_ms if r.timing and r.passed else None for c, r in rows.items()}
        rec = {"id": s.id, "name": s.name, "nvcc": rows["nvcc"].to_dict(), "nvrtc": rows["nvrtc"].to_dict()}
        plain = None
        if med["nvcc"] is not None:
            plain, samples = plain_events_ms(kernel, shape, runner.problem(s.dtype))
            rec["plain_events"] = {"median_ms": plain, "samples_ms": samples, "launches": 50, "repeats": 5}
            rec["gemmprof_vs_plain_pct"] = 100 * (med["nvcc"] - plain) / plain
        ratio = med["nvrtc"] / med["nvcc"] if med["nvcc"] and med["nvrtc"] else None
        rec["nvrtc_over_nvcc"] = ratio
        records.append(rec)
        status = " ".join(f"{c}:{r.status}" for c, r in rows.items())
        f = lambda v, w, p=3: f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"  # noqa: E731
        pct = rec.get("gemmprof_vs_plain_pct")
        print(f"{s.name:<32}{f(med['nvcc'], 9)}{f(med['nvrtc'], 10)}{f(ratio, 11)}{f(plain, 10)}"
              f"{(f'{pct:+.1f}%' if pct is not None else '-'):>10}  {status}", flush=True)
    within = [r for r in records if r.get("gemmprof_vs_plain_pct") is not None]
    ok = [r for r in within if abs(r["gemmprof_vs_plain_pct"]) <= 3]
    print(f"\ngemmprof --compiler nvcc within 3% of the plain events loop: {len(ok)}/{len(within)} kernels")
    if a.output:
        doc = {"size": a.size, "flush_l2": not a.no_flush, "records": records}
        Path(a.output).write_text(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
