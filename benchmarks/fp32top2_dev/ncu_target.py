"""One launch target for ncu: python3 ncu_target.py BUILD_DIR KERNEL M N K (KERNEL: a configs.py name or cublas).

Runs the kernel twice on random inputs (profile the second launch: --launch-skip 1 --launch-count 1).
"""
import math
import sys
from pathlib import Path

import cupy as cp
import numpy as np
from configs import CONFIGS, mangled

build, name = Path(sys.argv[1]), sys.argv[2]
M, N, K = (int(x) for x in sys.argv[3:6])
rs = cp.random.RandomState(1)
A = rs.uniform(-1, 1, (M, K)).astype(cp.float32)
B = rs.uniform(-1, 1, (K, N)).astype(cp.float32)
C = cp.zeros((M, N), dtype=cp.float32)
for _ in range(2):
    if name == "cublas":
        cp.matmul(A, B, out=C)
    else:
        p = CONFIGS[name]
        fn = cp.RawModule(path=str(build / "r14.cubin")).get_function(mangled(p))
        fn((math.ceil(M / p[0]) * math.ceil(N / p[1]), 1, 1), (p[6], 1, 1),
           (np.int32(M), np.int32(N), np.int32(K), np.float32(1), A, B, np.float32(0), C))
cp.cuda.runtime.deviceSynchronize()
print("ok", name, M, N, K)
