"""cuBLAS baselines launched through cublasGemmEx, like any rung (CuPy imported only when a launcher is made)."""

from __future__ import annotations

import numpy as np

from gemmprof.catalog.baselines import Baseline
from gemmprof.measure.problem import Problem

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_GEMM_DEFAULT = -1


def make_launcher(baseline: Baseline, problem: Problem, out):
    """A no-argument callable running C = alpha*A@B + beta*C (row-major) with cuBLAS into `out` (of the
    baseline's C dtype)."""
    from cupy.cuda import cublas, device

    s = problem.shape
    handle = device.get_cublas_handle()
    # row-major C = A @ B is column-major C^T = B^T @ A^T: swap the operands. Stored row-major (K x N), B is B^T
    # column-major (N x K, ld N), taken as it is; stored column-major (N rows of K) it is column-major K x N with
    # ld K, which cuBLAS transposes (the tensor-core rungs' layout).
    A = problem.operand("A", "row")
    B = problem.operand("B", baseline.b_layout)
    op_b, ld_b = (CUBLAS_OP_T, s.K) if baseline.b_layout == "col" else (CUBLAS_OP_N, s.N)
    dtype = {"fp16": CUDA_R_16F, "bf16": CUDA_R_16BF}.get(baseline.storage, CUDA_R_32F)
    compute = CUBLAS_COMPUTE_32F_FAST_TF32 if baseline.name == "cublas_tf32" else CUBLAS_COMPUTE_32F
    alpha = np.array(problem.alpha, dtype=np.float32)
    beta = np.array(problem.beta, dtype=np.float32)
    ctype = {"fp16": CUDA_R_16F, "bf16": CUDA_R_16BF}.get(baseline.c_dtype, CUDA_R_32F)

    def launch():
        cublas.gemmEx(handle, op_b, CUBLAS_OP_N, s.N, s.M, s.K, alpha.ctypes.data, B.data.ptr, dtype, ld_b,
                      A.data.ptr, dtype, s.K, beta.ctypes.data, out.data.ptr, ctype, s.N, compute,
                      CUBLAS_GEMM_DEFAULT)

    return launch
