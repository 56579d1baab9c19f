"""Where a tune candidate's time goes: compile each of a few configurations, then cProfile the GPU worker's
measure() over them (the first one, which pays for CUDA start-up, is timed but left out of the profile).

    python3 scripts/profile_tune_measure.py --rung 10 --size 4096 --count 6
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

from gemmprof.catalog import spec as specmod
from gemmprof.model.traffic import GemmShape
from gemmprof.tune.real import CupyFactory, compile_candidate, gpu_arch
from gemmprof.tune.space import enumerate_space


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rung", default="10")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--count", type=int, default=6)
    args = ap.parse_args(argv)
    chosen = specmod.select([args.rung])
    spec = chosen[0] if isinstance(chosen, list) else chosen
    n = args.size
    candidates = enumerate_space(spec, GemmShape(n, n, n)).valid[:args.count]
    for p in candidates:
        t = time.perf_counter()
        ok = compile_candidate(str(spec.path), gpu_arch(), None, p).ok
        print(f"compile {time.perf_counter() - t:.2f} s ok={ok}")
    t = time.perf_counter()
    m = CupyFactory(str(spec.path), n, n, n)(0)
    print(f"worker start {time.perf_counter() - t:.2f} s")
    t = time.perf_counter()
    status = m.measure(candidates[0], None).status
    print(f"first measure {time.perf_counter() - t:.2f} s {status}")
    prof = cProfile.Profile()
    prof.enable()
    for p in candidates[1:]:
        t = time.perf_counter()
        o = m.measure(p, None)
        print(f"measure {time.perf_counter() - t:.2f} s {o.status} samples={len(o.samples_ms)}")
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(40)
    print(out.getvalue()[:9000])


if __name__ == "__main__":
    main()
