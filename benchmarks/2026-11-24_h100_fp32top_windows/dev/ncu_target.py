"""One launch target for ncu: python3 ncu_target.py BUILD KERNEL M N K [OFFB] (KERNEL: configs.py name or cublas).
Runs the kernel twice on random inputs (profile the second: --launch-skip 1 --launch-count 1)."""
import sys

import cupy as cp
import harness as h

name = sys.argv[2]
M, N, K = (int(x) for x in sys.argv[3:6])
offs = (0, int(sys.argv[6]) if len(sys.argv) > 6 else 0, 0)
A, B, C = h.operands(M, N, K, offs)
run = h.cublas if name == "cublas" else h.launcher(name)
for _ in range(2):
    run(M, N, K, 1.0, A, B, 0.0, C)
cp.cuda.runtime.deviceSynchronize()
print("ok", name, M, N, K, offs)
