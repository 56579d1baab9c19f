"""torch.matmul as most code calls it, for gemmprof: fp16 in, fp16 out (or bf16 in, bf16 out), written into C.

    gemmprof run --callable examples/torch_matmul/torch_matmul.py:matmul --dtype fp16 --c-dtype fp16 --size 4096

torch.matmul returns the inputs' dtype, so C is declared as that dtype (--c-dtype fp16, or bf16 with --dtype bf16):
gemmprof then checks it with a half-precision C's tolerance, beside cuBLAS and torch.mm writing the same C. With
alpha = 1 and beta = 0 the product goes straight into C (out=C), one GEMM; other alpha and beta add elementwise
kernels, in C's dtype. fp32 inputs work with the default fp32 C.
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
    """torch.matmul in the inputs' dtype, written into C of that dtype."""
    A, B, C = _torch(A), _torch(B), _torch(C)
    if C.dtype != A.dtype:  # casting a half product into fp32 C would be a second kernel and a half-precision C
        raise TypeError(f"C is {C.dtype} but A is {A.dtype}: run with --c-dtype of --dtype (torch.matmul writes "
                        "the inputs' dtype)")
    if alpha == 1 and beta == 0:
        torch.matmul(A, B, out=C)
    elif beta == 0:  # C holds NaN: it must not be read (0 * NaN is NaN)
        torch.mul(torch.matmul(A, B), alpha, out=C)
    else:
        C.mul_(beta).add_(torch.matmul(A, B), alpha=alpha)
