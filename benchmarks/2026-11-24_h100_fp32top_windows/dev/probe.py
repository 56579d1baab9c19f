"""Time kernels (already verified by harness.py) at probe shapes: python3 probe.py BUILD K1,K2 M,N,K[,offB] ..."""
import sys

import harness as h

names = sys.argv[2].split(",")
runs = {n: h.launcher(n) for n in names}
for spec in sys.argv[3:]:
    v = [int(x) for x in spec.split(",")]
    shape, offs = tuple(v[:3]), (0, v[3] if len(v) > 3 else 0, 0)
    cb, _ = h.time_ms(h.cublas, *shape)
    cells = [f"cublas {h.tflops(*shape, cb):.1f}"]
    for n, r in runs.items():
        ms, _ = h.time_ms(r, *shape, offs=offs)
        cells.append(f"{n} {h.tflops(*shape, ms):.1f} ({100 * cb / ms:.1f}%)")
    print(spec, " | ".join(cells), flush=True)
