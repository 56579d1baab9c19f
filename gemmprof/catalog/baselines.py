"""cuBLAS baselines (SGEMM, TF32, HGEMM with fp32 accumulate) through cublasGemmEx, launched like any rung."""

from __future__ import annotations

from dataclasses import dataclass

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

    def launch():
        cublas.gemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.N, s.M, s.K, alpha.ctypes.data, B.data.ptr, dtype, s.N,
                      A.data.ptr, dtype, s.K, beta.ctypes.data, out.data.ptr, CUDA_R_32F, s.N, compute,
                      CUBLAS_GEMM_DEFAULT)

    return launch


# torch.matmul: a row beside cuBLAS in runs with Python callables, where torch is installed ---------------------
TORCH_MATMUL = "torch_matmul"


def torch_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def torch_matmul_title(dtype: str) -> str:
    out = "fp32 out" if dtype == "fp32" else f"{dtype} in, fp32 out (out_dtype)"
    return f"torch.matmul's 2-D path, torch.mm ({out})"


def torch_matmul(A, B, C, alpha, beta):
    """C = alpha * A @ B + beta * C with torch.mm (cuBLAS underneath). fp16 and bf16 inputs write fp32 C in the
    GEMM itself (torch.mm's out_dtype, torch >= 2.8), so with alpha = 1 and beta = 0 the row is one GEMM, as
    cuBLAS's is; other alpha and beta add elementwise kernels."""
    import torch

    wide = {} if A.dtype == torch.float32 else {"out_dtype": torch.float32}
    if beta == 0:
        torch.mm(A, B, out=C, **wide)
        if alpha != 1:
            C.mul_(alpha)
    else:
        C.mul_(beta).add_(torch.mm(A, B, **wide), alpha=alpha)
