"""Run kernels on the small checks under compute-sanitizer: python3 sanitize.py BUILD KERNEL[,KERNEL]"""
import sys

import harness as h

build, names = sys.argv[1], sys.argv[2].split(",")
small = [c for c in h.CHECKS if max(c[0]) <= 1100]
for n in names:
    run = h.launcher(n, build)
    for (M, N, K), alpha, beta, offs in small:
        err = h.verify(run, M, N, K, alpha, beta, offs)
        print(n, M, N, K, offs, f"{err:.2e}", "ok" if err < h.TOL else "FAIL", flush=True)
