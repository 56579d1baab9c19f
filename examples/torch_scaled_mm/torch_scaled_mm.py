"""torch._scaled_mm (cuBLASLt's fp8 GEMM) as fp8 code calls it, for gemmprof: e4m3 A and B with their scales, C in
bf16 (or fp16 or fp32), written into C by the GEMM itself.

    gemmprof run --callable examples/torch_scaled_mm/torch_scaled_mm.py:matmul --dtype e4m3 --scales tensor --c-dtype bf16
    gemmprof run --callable examples/torch_scaled_mm/torch_scaled_mm.py:matmul --dtype e4m3 --scales 1x128

Per-tensor scales are torch._scaled_mm's first form; block scales (1x128 for A, 128 x 128 for B, DeepSeek's
recipe) need torch built with CUDA 12.9 or later and an sm_90 GPU, and gemmprof hands them over in the layouts
torch takes them (A's M x K/128 with stride (1, M), B's K/128 x N/128 with stride (1, K/128)). cuBLASLt has no
128x128 x 128x128 pair, so this function declares tensor and 1x128 only (`--scales 128x128` is refused before the
GPU is touched). torch._scaled_mm takes M, N and K that are multiples of 16. With CuPy arrays A and B are uint8 bit
patterns taken as e4m3; `--arrays torch` hands over typed tensors.
"""

import torch


def _torch(x, fp8=False):
    """A torch tensor over x's memory (fp8 as uint8 bits, bf16 C as uint16 bits, when gemmprof passes CuPy)."""
    if isinstance(x, torch.Tensor):
        return x
    if str(x.dtype) == "uint8" and fp8:
        return torch.from_dlpack(x).view(torch.float8_e4m3fn)
    if str(x.dtype) == "uint16":
        return torch.from_dlpack(x.view("int16")).view(torch.bfloat16)
    return torch.from_dlpack(x)


def matmul(A, B, C, alpha, beta, *, scale_a, scale_b):
    """torch._scaled_mm into C: alpha * (A * scale_a) @ (B * scale_b) + beta * C."""
    A, B, C = _torch(A, fp8=True), _torch(B, fp8=True), _torch(C)
    sa, sb = _torch(scale_a), _torch(scale_b)
    if sa.dim() == 1:  # per tensor: torch takes one-element scales
        sa, sb = sa.reshape(()), sb.reshape(())
    if beta == 0:
        torch._scaled_mm(A, B, sa, sb, out_dtype=C.dtype, out=C)
        if alpha != 1:
            C.mul_(alpha)
    else:  # C holds values to keep: the product first, then C = beta * C + alpha * product
        C.mul_(beta).add_(torch._scaled_mm(A, B, sa, sb, out_dtype=C.dtype), alpha=alpha)


matmul.gemmprof_scales = ("tensor", "1x128")  # cuBLASLt has no 128x128 x 128x128 recipe (docs/fp8.md)
