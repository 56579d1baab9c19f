"""Does gemmprof's L2 policy leave the operands cold? Reads one operand-sized buffer three ways and times each read:

    python3 scripts/l2_cold_check.py --mib 32 -o l2_cold.json

  warm:    right after the buffer was written (it sits in L2: the read runs at L2 bandwidth);
  flush:   after gemmprof's flush (measure/l2.Flusher: a write of twice the L2);
  rotate:  after the other input sets of a rotation were read (measure/l2.rotation_sets of them, each as large);
a read of a buffer that was never touched since a flush of the whole memory it shares is the cold reference
(`cold`). A policy leaves the operand cold when its read takes as long as the cold one (within 10%) and clearly
longer than the warm one. Each read is a sum over the buffer (CuPy), median of --reps. The persisting-L2 carve-out
is reset to 0 first (measure/l2.PersistingL2). Needs a GPU and CuPy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def verdict(times: dict[str, float]) -> dict:
    """Each policy's read against the cold and warm reads: cold when within 10% of `cold` and 1.2x `warm`."""
    out = {}
    for policy in ("flush", "rotate"):
        t = times[policy]
        out[policy] = {"ms": t, "over_cold": t / times["cold"], "over_warm": t / times["warm"],
                       "cold": t >= 0.9 * times["cold"] and t >= 1.2 * times["warm"]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=32, help="the operand's size in MiB (default 32: under the L2)")
    ap.add_argument("--reps", type=int, default=20, help="reads of each kind (default 20)")
    ap.add_argument("-o", "--output", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    import cupy

    from gemmprof.measure.l2 import Flusher, PersistingL2, rotation_sets

    l2 = cupy.cuda.runtime.getDeviceProperties(0)["l2CacheSize"]
    persist = PersistingL2()
    persist.reset()
    n = args.mib << 18  # float32 elements
    sets = [cupy.ones(n, dtype=cupy.float32) for _ in range(rotation_sets(l2, n * 4))]
    flush = Flusher(l2)
    big = cupy.zeros(max(4 * l2, 1 << 28) // 4, dtype=cupy.float32)

    def read(buf) -> float:
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        buf.sum()
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end)

    times: dict[str, list[float]] = {k: [] for k in ("warm", "flush", "rotate", "cold")}
    target = sets[0]
    for _ in range(args.reps):
        target.fill(1.0)  # written: in L2
        times["warm"].append(read(target))
        flush()
        times["flush"].append(read(target))
        target.fill(1.0)
        for other in sets[1:]:  # the rest of the rotation, as the calls between two uses of a set read them
            other.sum()
        times["rotate"].append(read(target))
        big.fill(0.0)  # four times the L2, a bigger sweep than any policy
        times["cold"].append(read(target))
    medians = {k: statistics.median(v) for k, v in times.items()}
    doc = {"device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), "l2_bytes": l2,
           "operand_bytes": n * 4, "rotation_sets": len(sets), "persisting_l2": persist.status,
           "median_ms": medians, "gbs": {k: n * 4 / (v * 1e-3) / 1e9 for k, v in medians.items()},
           "verdict": verdict(medians)}
    persist.restore()
    print(json.dumps(doc, indent=1))
    if args.output:
        Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")
    return 0 if all(v["cold"] for v in doc["verdict"].values()) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
