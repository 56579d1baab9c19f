"""gemmprof's CUDA-event median beside Nsight Compute's gpu__time_duration for the same kernels and shape.

    python3 scripts/ncu_vs_events.py RUN_RESULTS.json PROFILE_RESULTS.json

Both flush the L2 before each measured launch (gemmprof by a memset, ncu by its default --cache-control all) and
neither changes the clocks (ncu runs with --clock-control none). Prints one markdown table row per variant.
"""

from __future__ import annotations

import sys

from gemmprof.results.profile import ProfileResults
from gemmprof.results.run import load_run


def main(run_path: str, profile_path: str) -> int:
    run = load_run(run_path)
    prof = ProfileResults.load(profile_path)
    medians = {v.name: v.timing.median_ms for v in run.variants if v.timing and v.passed}
    print("| variant | gemmprof median (ms) | ncu gpu__time_duration (ms) | difference |")
    print("| --- | --- | --- | --- |")
    worst = 0.0
    for launch in prof.launches:
        name, ns = launch.variant, launch.duration_ns
        if name not in medians or not ns or (launch.shape or prof.common_shape) != run.shape:
            continue  # another variant, or the same one at another shape
        ncu_ms = ns / 1e6
        diff = (ncu_ms - medians[name]) / medians[name]
        worst = max(worst, abs(diff))
        print(f"| {name} | {medians[name]:.4f} | {ncu_ms:.4f} | {100 * diff:+.2f}% |")
    print(f"\nlargest difference: {100 * worst:.2f}%")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
