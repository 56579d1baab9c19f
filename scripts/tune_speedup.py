"""Issue 15's performance record: a sweep of a rung's space, serial vs pipelined, from cold caches, both timed.

    python3 scripts/tune_speedup.py --rung 10 --size 4096 -o benchmarks/DATE_h100_tune/speedup_10.json

Each sweep runs `gemmprof tune` in a fresh process with its own empty tune cache and its own empty kernel
caches (GEMMPROF_CACHE for nvcc's cubins, CUPY_CACHE_DIR for NVRTC), so neither gets compiled kernels from the other. --serial compiles, verifies and times one
configuration after another; the default compiles in a pool of processes while the GPU measures. The final
re-timing is off in both (--rounds 0) so the two do the same work. The record says whether both sweeps
evaluated the same configurations with the same statuses.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sweep(rung: str, size: int, serial: bool, jobs: int | None, workdir: Path, stand_in: bool = False) -> dict:
    out = workdir / ("serial.json" if serial else "pipelined.json")
    # empty kernel caches of its own: CuPy's (NVRTC) and gemmprof's cubins (nvcc)
    env = {**os.environ, "CUPY_CACHE_DIR": str(workdir / "cupy_cache"), "GEMMPROF_CACHE": str(workdir / "gemmprof")}
    cmd = [sys.executable, "-m", "gemmprof", "tune", rung, "--size", str(size), "--strategy", "exhaustive",
           "--rounds", "0", "--cache-dir", str(workdir / "tune_cache"), "-o", str(out)]
    if serial:
        cmd.append("--serial")
    if jobs:
        cmd += ["--jobs", str(jobs)]
    if stand_in:
        cmd.append("--stand-in")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"{'serial' if serial else 'pipelined'} sweep failed ({proc.returncode}):\n"
                         f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    doc = json.loads(out.read_text())
    return {"command": cmd, "wall_s": round(wall, 2), "result": doc}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rung", default="10")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--jobs", type=int, default=None, help="compile processes of the pipelined sweep")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--stand-in", action="store_true", help="gemmprof tune's fake compiler and GPU: checks the script "
                    "on a CPU (its timings mean nothing)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tune_speedup_") as tmp:
        runs = {}
        for mode in ("serial", "pipelined"):
            wd = Path(tmp) / mode
            wd.mkdir()
            runs[mode] = sweep(args.rung, args.size, mode == "serial", args.jobs, wd, args.stand_in)
            print(f"{mode}: {runs[mode]['wall_s']:.1f} s", flush=True)
    statuses = {m: {",".join(f"{k}={v}" for k, v in sorted(c["params"].items())): c["status"]
                    for c in r["result"]["configs"]} for m, r in runs.items()}
    record = {
        "kind": "gemmprof.tune-speedup", "rung": args.rung, "size": args.size, "stand_in": args.stand_in,
        "device": runs["pipelined"]["result"]["device"], "compiler": runs["pipelined"]["result"]["compiler"],
        "serial_s": runs["serial"]["wall_s"], "pipelined_s": runs["pipelined"]["wall_s"],
        "speedup": round(runs["serial"]["wall_s"] / runs["pipelined"]["wall_s"], 2),
        "configurations": len(statuses["pipelined"]), "same_configurations_and_statuses":
            statuses["serial"] == statuses["pipelined"], "cpu_count": os.cpu_count(), "runs": runs,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(record, indent=1) + "\n")
    best = {m: max((c for c in r["result"]["configs"] if c["tflops"]), key=lambda c: c["tflops"], default=None)
            for m, r in runs.items()}
    for m, b in best.items():
        if b:
            print(f"{m}: best {b['tflops']:.2f} TFLOP/s {b['params']}")
    print(f"serial {record['serial_s']:.1f} s, pipelined {record['pipelined_s']:.1f} s: "
          f"{record['speedup']:.2f}x over {record['configurations']} configurations "
          f"(same configurations and statuses: {record['same_configurations_and_statuses']})")


if __name__ == "__main__":
    main()
