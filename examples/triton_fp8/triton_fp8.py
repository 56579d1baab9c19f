"""An fp8 Triton matmul for gemmprof: e4m3 (or e5m2) A and B with their scales, fp32 accumulate, C in bf16 (or the
fp16 or fp32 C gemmprof hands over).

    gemmprof run --callable examples/triton_fp8/triton_fp8.py:matmul --dtype e4m3 --scales tensor --c-dtype bf16
    gemmprof run --callable examples/triton_fp8/triton_fp8.py:matmul --dtype e4m3 --scales 1x128 --size 4096

Two kernels, one configuration each (no autotuning, so every call runs the same kernel):
  * per-tensor scales: 128 x 256 tiles of C, 128-deep steps along K (one 128-byte row of fp8 per tile row), three
    pipeline stages, eight warps; tl.dot accumulates every step into one fp32 accumulator, and alpha * scale_a *
    scale_b multiplies it once before the store;
  * block scales (1x128: A per row and 128 of K, B per 128 x 128 block; 128x128: A per 128 x 128 block too): 128 x
    128 tiles, one scale block of B wide; each 128 of K is its own tl.dot from zero, scaled by its rows' A scales and
    its block's B scale and added into the fp32 accumulator (the per-block promotion DeepGEMM does on Hopper).
A is M x K row-major and B K x N column-major (a view of N rows of K), both K-major as fp8 tensor cores read them;
loads and stores are masked, so any M and N work (K: a multiple of 16, and of 128 with block scales).
With CuPy arrays (gemmprof's default) A and B are uint8 bit patterns and taken as e4m3 (CuPy has no float8);
`--arrays torch` hands over torch.float8_e4m3fn or torch.float8_e5m2 tensors.
"""

import torch
import triton
import triton.language as tl

GROUP_M = 8
# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)
TENSOR_CONFIG = (128, 256, 128, 8, 3)
BLOCK_CONFIG = (128, 128, 128, 8, 3)  # BLOCK_K and BLOCK_N: one scale block


@triton.jit
def _tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """Program pid's tile, groups of GROUP_M tile rows walked down M before N (neighbours share B in L2)."""
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * blocks_n
    first_m = (pid // in_group) * GROUP_M
    group_rows = min(blocks_m - first_m, GROUP_M)
    return first_m + (pid % in_group) % group_rows, (pid % in_group) // group_rows


@triton.jit
def _store(acc, c_ptr, offs_m, offs_n, M, N, stride_cm, stride_cn, beta, BETA_IS_ZERO: tl.constexpr):
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if not BETA_IS_ZERO:  # with beta = 0, C is never read (gemmprof poisons it with NaN)
        acc += beta * tl.load(c_ptrs, mask=c_mask, other=0.0).to(tl.float32)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


@triton.jit
def fp8_tensor_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, alpha, beta, BETA_IS_ZERO: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - step * BLOCK_K
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    acc = acc * (alpha * tl.load(sa_ptr) * tl.load(sb_ptr))
    _store(acc, c_ptr, offs_m, offs_n, M, N, stride_cm, stride_cn, beta, BETA_IS_ZERO)


@triton.jit
def fp8_block_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                     stride_cm, stride_cn, stride_sa_row, stride_sa_k, stride_sb_k, stride_sb_n, alpha, beta,
                     A_ROWS: tl.constexpr, BETA_IS_ZERO: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    # A's scales: one per row (A_ROWS = 1) or per 128 rows; rows past M read the last row's (they are not stored)
    sa_ptrs = sa_ptr + (tl.minimum(offs_m, M - 1) // A_ROWS) * stride_sa_row
    sb_ptr += pid_n * stride_sb_n  # this tile's column block of B (BLOCK_N = 128)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, K // BLOCK_K):  # K % 128 == 0 (gemmprof checks it for block scales)
        a = tl.load(a_ptrs, mask=offs_m[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=offs_n[None, :] < N, other=0.0)
        part = tl.dot(a, b)  # this block of K alone, in fp32
        sa = tl.load(sa_ptrs + kb * stride_sa_k)
        sb = tl.load(sb_ptr + kb * stride_sb_k)
        acc += part * (sa * sb)[:, None]
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    _store(acc * alpha, c_ptr, offs_m, offs_n, M, N, stride_cm, stride_cn, beta, BETA_IS_ZERO)


def _torch(x, fp8=False):
    """A torch tensor over x's memory: gemmprof passes CuPy arrays unless --arrays torch (fp8 as uint8 bits, bf16 C
    as uint16 bits)."""
    if isinstance(x, torch.Tensor):
        return x
    if str(x.dtype) == "uint8" and fp8:
        return torch.from_dlpack(x).view(torch.float8_e4m3fn)  # CuPy's uint8 bits: taken as e4m3
    if str(x.dtype) == "uint16":
        return torch.from_dlpack(x.view("int16")).view(torch.bfloat16)
    return torch.from_dlpack(x)


def matmul(A, B, C, alpha, beta, *, scale_a, scale_b):
    """Triton fp8 matmul: 128 x 256 x 128 tiles per tensor, 128 x 128 x 128 with per-block promotion."""
    A, B, C = _torch(A, fp8=True), _torch(B, fp8=True), _torch(C)
    sa, sb = _torch(scale_a), _torch(scale_b)
    M, K = A.shape
    N = B.shape[1]
    common = dict(BETA_IS_ZERO=beta == 0, GROUP_M=GROUP_M)
    if sa.dim() == 1:  # one scale per tensor
        bm, bn, bk, warps, stages = TENSOR_CONFIG
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        fp8_tensor_kernel[grid](A, B, C, sa, sb, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                C.stride(0), C.stride(1), alpha, beta, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                num_warps=warps, num_stages=stages, **common)
        return
    bm, bn, bk, warps, stages = BLOCK_CONFIG
    a_rows = 1 if sa.shape[0] == M else 128  # 1x128: a scale per row; 128x128: per 128 rows
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    # sa: (M or M / 128) x (K / 128); sb: (K / 128) x (N / 128), gemmprof's views (docs/fp8.md)
    fp8_block_kernel[grid](A, B, C, sa, sb, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                           C.stride(0), C.stride(1), sa.stride(0), sa.stride(1), sb.stride(0), sb.stride(1), alpha,
                           beta, A_ROWS=a_rows, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=warps,
                           num_stages=stages, **common)


matmul.gemmprof_scales = ("tensor", "1x128", "128x128")  # the --scales modes it takes (docs/fp8.md)
