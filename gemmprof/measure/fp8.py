"""fp8 operands on arrays that have no float8 dtype (CuPy, NumPy): the two formats, conversion to and from their bit
patterns (uint8), quantization with scales per tensor or per block, and the layouts the scales are handed over in.

A value x of an operand is held as a code q (its fp8 bit pattern) and a float32 scale s of its tensor or block:
x ~ decode(q) * s. Quantizing divides each value by its block's scale s = amax / fp8_max (amax: the largest |x| of
the block; a block of zeros gets s = 1) and rounds the quotient to the nearest fp8 value, ties to even, saturating
at +-fp8_max. Every function takes NumPy or CuPy arrays and returns the same kind; nothing here needs a GPU.

Scales (`--scales`), in the operands' logical orientation (A: M x K, B: K x N):
  * tensor:  one scale for A and one for B;
  * 1x128:   A: one per row and 128 elements of K (DeepGEMM's activations); B: one per 128 x 128 block (its weights);
  * 128x128: A and B: one per 128 x 128 block.
How they are stored for a kernel and viewed by a callable: `stored_scales` and docs/fp8.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gemmprof.catalog.launch_fields import FP8_DTYPES, SCALE_MODES
from gemmprof.errors import InputError
from gemmprof.measure.arrays import array_module

SCALE_BLOCK = 128  # K elements per scale block in the block modes (and rows or columns of a 128 x 128 block)


@dataclass(frozen=True)
class Fp8Format:
    """An 8-bit float: 1 sign bit, `exponent_bits`, `mantissa_bits`, exponent `bias`; its largest finite value."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    max: float
    has_inf: bool  # e5m2 has infinities (IEEE-like); e4m3fn has none, and one NaN per sign

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def nan_code(self) -> int:
        return 0x7F  # e4m3fn: S.1111.111; e5m2: S.11111.11 (one of its NaNs)


E4M3 = Fp8Format("e4m3", 4, 3, 7, 448.0, False)
E5M2 = Fp8Format("e5m2", 5, 2, 15, 57344.0, True)
FORMATS = {"e4m3": E4M3, "e5m2": E5M2}
assert tuple(FORMATS) == FP8_DTYPES


def fp8_format(dtype: str) -> Fp8Format:
    try:
        return FORMATS[dtype]
    except KeyError:
        raise InputError(f"{dtype!r} is not an fp8 dtype ({', '.join(FORMATS)})") from None


def decode_table(fmt: Fp8Format) -> np.ndarray:
    """The float32 value of each of the 256 codes (NaN codes NaN; e5m2's infinities inf)."""
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    m_bits = fmt.mantissa_bits
    exp = (codes >> m_bits) & ((1 << fmt.exponent_bits) - 1)
    man = codes & ((1 << m_bits) - 1)
    subnormal = man * fmt.min_subnormal
    normal = (1 + man / (1 << m_bits)) * np.exp2(exp.astype(np.float64) - fmt.bias)
    values = sign * np.where(exp == 0, subnormal, normal)
    top = exp == (1 << fmt.exponent_bits) - 1
    if fmt.has_inf:  # e5m2: exponent all ones is inf (mantissa 0) or NaN
        values = np.where(top & (man == 0), sign * np.inf, np.where(top, np.nan, values))
    else:  # e4m3fn: only S.1111.111 is NaN; the rest of the top exponent are finite (up to 448)
        values = np.where(top & (man == (1 << m_bits) - 1), np.nan, values)
    return values.astype(np.float32)


def from_bits(codes, fmt: Fp8Format):
    """uint8 codes -> their float32 values (an array of the codes' kind)."""
    xp = array_module(codes)
    return xp.asarray(decode_table(fmt))[codes.astype(xp.intp)]


def to_bits(x, fmt: Fp8Format):
    """float32 values -> uint8 codes: round to nearest, ties to even; finite values beyond +-max saturate to +-max
    (the conversion of torch's clamp-then-cast and cuDNN's saturating mode); NaN -> the NaN code."""
    xp = array_module(x)
    x = x.astype(xp.float32)
    sign = ((x.view(xp.uint32) >> 31).astype(xp.uint8) << 7).astype(xp.uint8)
    a = xp.minimum(xp.abs(x), xp.float32(fmt.max))
    m = fmt.mantissa_bits
    shift = 23 - m
    # normal range: float32's exponent and mantissa bits rounded to m mantissa bits (ties to even; a carry moves into
    # the exponent), then the exponent rebiased from 127 to the format's bias
    u = a.view(xp.uint32).astype(xp.int64)
    rounded = (u + ((1 << (shift - 1)) - 1) + ((u >> shift) & 1)) >> shift
    normal = rounded - ((127 - fmt.bias) << m)
    # subnormal range: multiples of min_subnormal (the scaling by a power of two is exact); a value rounding up to
    # 2**m multiples is the smallest normal, whose code is that same number
    with np.errstate(invalid="ignore"):
        k = xp.rint(a * xp.float32(2.0 ** (fmt.bias - 1 + m))).astype(xp.int64)
        code = xp.where(a < xp.float32(fmt.min_normal), k, normal)
        code = xp.where(xp.isnan(a), fmt.nan_code, code)
    return (code.astype(xp.uint8) | sign).astype(xp.uint8)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _blocks(x, block):
    """x (R x C) zero-padded to whole blocks and viewed as (R blocks, rows, C blocks, cols)."""
    xp = array_module(x)
    rows, cols = x.shape
    br, bc = block
    padded = xp.zeros((_cdiv(rows, br) * br, _cdiv(cols, bc) * bc), dtype=x.dtype)
    padded[:rows, :cols] = x
    return padded.reshape(_cdiv(rows, br), br, _cdiv(cols, bc), bc)


def expand(scales, block, shape):
    """Per-block scales (R blocks x C blocks) as one value per element of an array of `shape`; block None: the one
    scale (a 1 x 1 array) broadcast."""
    xp = array_module(scales)
    if block is None:
        return xp.broadcast_to(scales.reshape(1, 1), shape)
    return xp.repeat(xp.repeat(scales, block[0], axis=0), block[1], axis=1)[:shape[0], :shape[1]]


def block_scales(x, fmt: Fp8Format, block):
    """float32 scales amax / fp8_max per block of x (block None: one, as a 1 x 1 array); 1 where a block is all
    zeros (its codes are zeros whatever the scale, and a scale of 0 would divide by zero)."""
    xp = array_module(x)
    mag = xp.abs(x.astype(xp.float32))
    amax = mag.max().reshape(1, 1) if block is None else _blocks(mag, block).max(axis=(1, 3))
    scales = (amax / xp.float32(fmt.max)).astype(xp.float32)
    return xp.where(amax == 0, xp.float32(1.0), scales).astype(xp.float32)


def quantize(x, fmt: Fp8Format, block=None):
    """(codes, scales): x (R x C, float32) divided by its block's scale and rounded to fp8 (to_bits), with the scales
    of block_scales (R blocks x C blocks; 1 x 1 for block None)."""
    xp = array_module(x)
    scales = block_scales(x, fmt, block)
    quotient = x.astype(xp.float32) / expand(scales, block, x.shape)
    return to_bits(quotient, fmt), scales


def dequantize(codes, scales, fmt: Fp8Format, block=None):
    """The values the codes and scales stand for, in float64 (the reference's inputs: exact, as fp8 times a float32
    scale is exact in float64)."""
    xp = array_module(codes)
    return from_bits(codes, fmt).astype(xp.float64) * expand(scales, block, codes.shape).astype(xp.float64)


# ---------------------------------------------------------------- scale modes and their layouts

def operand_blocks(mode: str) -> tuple:
    """(A's block over M x K, B's block over K x N) of a scale mode; None: one scale for the operand."""
    if mode == "tensor":
        return None, None
    if mode == "1x128":
        return (1, SCALE_BLOCK), (SCALE_BLOCK, SCALE_BLOCK)
    if mode == "128x128":
        return (SCALE_BLOCK, SCALE_BLOCK), (SCALE_BLOCK, SCALE_BLOCK)
    raise InputError(f"--scales {mode!r}: give one of {', '.join(SCALE_MODES)}")


def scale_shapes(mode: str, M: int, N: int, K: int) -> dict[str, tuple[int, ...]]:
    """The stored shape of each scale array a kernel reads (row-major): tensor: (1,) each; block modes: A's as
    (K / 128, M) for 1x128 or (K / 128, ceil(M / 128)) for 128x128 (rows of A contiguous for each block of K, so a
    tile's rows read one line), B's as (ceil(N / 128), K / 128) (the K blocks of a column block contiguous)."""
    a_block, b_block = operand_blocks(mode)
    if a_block is None:
        return {"scale_a": (1,), "scale_b": (1,)}
    kb = _cdiv(K, SCALE_BLOCK)
    return {"scale_a": (kb, _cdiv(M, a_block[0])), "scale_b": (_cdiv(N, SCALE_BLOCK), kb)}


def stored_scales(scales_a, scales_b, mode: str):
    """A's and B's per-block scales (logical: A's over M x K blocks, B's over K x N blocks) in the arrays a kernel
    reads (scale_shapes): the transposes, made contiguous, in the block modes."""
    xp = array_module(scales_a)
    if operand_blocks(mode)[0] is None:
        return scales_a.reshape(1).copy(), scales_b.reshape(1).copy()
    return xp.ascontiguousarray(scales_a.T), xp.ascontiguousarray(scales_b.T)


def check_scales(mode: str, dtype: str, K: int) -> None:
    """Block scales cover K in whole blocks of 128: one clear error otherwise (and for a dtype that is not fp8)."""
    if dtype not in FP8_DTYPES:
        raise InputError(f"--scales {mode}: only for fp8 inputs (--dtype {' or '.join(FP8_DTYPES)}), not {dtype}")
    if operand_blocks(mode)[0] is not None and K % SCALE_BLOCK:
        lo, hi = K - K % SCALE_BLOCK, K + SCALE_BLOCK - K % SCALE_BLOCK
        near = f"{lo} or {hi}" if lo else f"{hi}"
        raise InputError(f"--scales {mode}: K = {K} is not a multiple of {SCALE_BLOCK} (one scale per {SCALE_BLOCK} "
                         f"elements of K; nearest valid K: {near})")


# ---------------------------------------------------------------- the check's tolerance

# ||out - ref|| / ||ref|| (and each element against the reference's RMS) for fp8 inputs with an fp32 C. The products
# of two fp8 values are exact in fp32 (4 x 4 significand bits at most, exponents well inside fp32's range), and a
# plain fp32 sum of them would stay near 1e-6 at K = 16384; but Hopper's fp8 tensor cores add into the fp32
# accumulator keeping about 14 bits (DeepSeek-V3 technical report, section 3.3.2), so a kernel that accumulates all
# of K in the tensor core (h14 with per-tensor scales, a Triton fp8 dot) is off by up to 2**-14 of the running sum at
# each k32 instruction. Norm-wise that is small (5e-4 at K = 4096 on the H200), but the bits are dropped, not
# rounded, so an element's errors add up with one sign: K / 32 * 2**-14 of its size, and an element 6 times the RMS
# (the largest of 10**7 Gaussian sums) may be off by 6 * K / 32 * 2**-14 of the RMS. The H200 found one such element
# in 16.8 million at 4096^3 (and one at 4095 x 4097 x 1024) over 1e-2. So the tolerance is that bound, 1e-2 at least:
# 1.2e-2 at K = 1024, 4.7e-2 at 4096, 0.19 at 16384. An fp16 or bf16 C adds its own rounding (problem.C_TOLERANCE:
# 1e-2 and 8e-2, per element). A wrong block or scale is off by the order of the values themselves, far above it.
FP32_C_TOLERANCE = 1e-2


def accumulation_tolerance(k: int) -> float:
    """The fp8 check's tolerance at depth K (FP32_C_TOLERANCE at the least): the truncating accumulation's bound."""
    return max(FP32_C_TOLERANCE, 6 * -(-k // 32) * 2.0 ** -14)


def check_scale_shapes(kernel, shape, run_scales: str) -> None:
    """A SpecError (the row is rejected) where an fp8 kernel is built for another scale mode than the run's problem
    has, or its spec's `scale_shapes` for the mode disagree with the arrays gemmprof hands over (scale_shapes)."""
    from gemmprof.catalog import expr
    from gemmprof.errors import SpecError

    if kernel.run_dtype not in FP8_DTYPES:
        return
    mode = kernel.run_scales
    if mode != run_scales:
        raise SpecError(f"{kernel.spec.name}: built for --scales {mode}, but the run's fp8 inputs have {run_scales} "
                        "scales")
    declared = kernel.spec.scale_shapes.get(mode)
    if not declared:
        return
    env = {**kernel.env, "M": shape.M, "N": shape.N, "K": shape.K}
    given = scale_shapes(mode, shape.M, shape.N, shape.K)
    for name, dims in declared.items():
        want = tuple(int(expr.evaluate(e, env)) for e in dims)
        if want != given[name]:
            raise SpecError(f"{kernel.spec.name}: scale_shapes.{mode}.{name} is {list(want)} at {shape.label}, but "
                            f"--scales {mode} hands over {name} as {list(given[name])} (float32, row-major; "
                            "docs/fp8.md)")
