"""torch.matmul as most code calls it, for gemmprof: the product in the inputs' dtype, then cast into fp32 C.

    gemmprof run --callable examples/torch_matmul/torch_matmul.py:matmul --dtype fp16 --size 4096 --arrays torch

With fp16 or bf16 inputs torch.matmul returns fp16 or bf16, so filling gemmprof's fp32 C takes a second kernel
(the cast, and the scaling when alpha != 1 or beta != 0). gemmprof's own torch_matmul row beside it calls torch.mm
with out_dtype=float32 instead, one GEMM: the difference between the two rows is what the cast costs.
"""

import torch


def _torch(x):
    """A torch tensor over x's memory: gemmprof passes CuPy arrays unless --arrays torch (bf16 as uint16 bits)."""
    if isinstance(x, torch.Tensor):
        return x
    if str(x.dtype) == "uint16":
        return torch.from_dlpack(x.view("int16")).view(torch.bfloat16)
    return torch.from_dlpack(x)


def matmul(A, B, C, alpha, beta):
    """torch.matmul in the inputs' dtype, cast into fp32 C."""
    A, B, C = _torch(A), _torch(B), _torch(C)
    product = torch.matmul(A, B)
    if beta == 0:  # C holds NaN: it must not be read (0 * NaN is NaN)
        torch.mul(product, alpha, out=C)
    else:
        C.mul_(beta).add_(product, alpha=alpha)
