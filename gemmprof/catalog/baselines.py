"""cuBLAS baselines (SGEMM, TF32, HGEMM with fp32 accumulate) through cublasGemmEx, launched like any rung; with
an fp16 or bf16 C where a kernel writes one (cuBLAS takes a C of the inputs' half type with fp32 compute)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gemmprof.measure.problem import Problem

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14
CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32 = 68, 77
CUBLAS_OP_N, CUBLAS_OP_T = 0, 1
CUBLAS_GEMM_DEFAULT = -1


@dataclass(frozen=True)
class Baseline:
    name: str
    title: str
    dtype: str  # dtype of the rungs it is compared with
    storage: str  # fp32 | fp16: the problem it runs on
    tolerance_key: str
    peak_kind: str
    c_dtype: str = "fp32"  # the output's type


BASELINES = {
    "cublas_sgemm": Baseline("cublas_sgemm", "cuBLAS SGEMM (fp32)", "fp32", "fp32", "fp32", "fp32"),
    "cublas_tf32": Baseline("cublas_tf32", "cuBLAS GEMM, TF32 tensor cores", "tf32", "fp32", "tf32", "tf32_tensor"),
    "cublas_bf16": Baseline("cublas_bf16", "cuBLAS GEMM (bf16 in, fp32 accumulate)", "bf16", "bf16", "bf16",
                            "bf16_tensor_fp32_acc"),
    "cublas_hgemm": Baseline("cublas_hgemm", "cuBLAS HGEMM (fp16 in, fp32 accumulate)", "fp16", "fp16", "fp16",
                             "fp16_tensor_fp32_acc"),
}


def for_dtypes(dtypes: set[str]) -> list[Baseline]:
    out = []
    if "fp32" in dtypes:
        out += [BASELINES["cublas_sgemm"], BASELINES["cublas_tf32"]]
    if "fp16" in dtypes:
        out.append(BASELINES["cublas_hgemm"])
    if "bf16" in dtypes:
        out.append(BASELINES["cublas_bf16"])
    return out


def for_kernels(pairs: set[tuple[str, str]]) -> list[Baseline]:
    """for_dtypes of the input dtypes, plus the baseline writing the same half-type C as a kernel that does (an
    fp32-input kernel writing half C has none: cuBLAS computes fp32 inputs into fp32 C only)."""
    out = for_dtypes({d for d, _ in pairs})
    for dtype, c_dtype in sorted(pairs):
        if c_dtype != "fp32" and c_dtype == dtype:
            base = next(b for b in out if b.dtype == dtype)
            out.append(replace(base, name=f"{base.name}_c{c_dtype}", c_dtype=c_dtype,
                               title=f"{base.title.rstrip(')')}, {c_dtype} C)"))
    return out


def make_launcher(baseline: Baseline, problem: Problem, out):
    """A no-argument callable running C = alpha*A@B + beta*C (row-major) with cuBLAS into `out`."""
    from cupy.cuda import cublas, device

    s = problem.shape
    handle = device.get_cublas_handle()
    # row-major C = A @ B is column-major C^T = B^T @ A^T: swap the operands, keep no transposes
    A = problem.operand("A", "row")
    B = problem.operand("B", "row")
    dtype = {"fp16": CUDA_R_16F, "bf16": CUDA_R_16BF}.get(baseline.storage, CUDA_R_32F)
    compute = CUBLAS_COMPUTE_32F_FAST_TF32 if baseline.name == "cublas_tf32" else CUBLAS_COMPUTE_32F
    alpha = np.array(problem.alpha, dtype=np.float32)
    beta = np.array(problem.beta, dtype=np.float32)
    ctype = {"fp16": CUDA_R_16F, "bf16": CUDA_R_16BF}.get(baseline.c_dtype, CUDA_R_32F)

    def launch():
        cublas.gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.N, s.M, s.K, alpha.ctypes.data, B.data.ptr, dtype, s.N,
                      A.data.ptr, dtype, s.K, beta.ctypes.data, out.data.ptr, ctype, s.N, compute,
                      CUBLAS_GEMM_DEFAULT)

    return launch
