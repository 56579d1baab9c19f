"""The problem a kernel is measured on: fresh random inputs, poisoned outputs, a float64 reference, and the
check of an output against it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gemmprof.catalog.binding import BoundKernel
from gemmprof.catalog.launch_fields import FP8_DTYPES
from gemmprof.measure.arrays import array_module
from gemmprof.model.traffic import GemmShape
from gemmprof.results.run import Verification

# ||out - ref|| / ||ref|| must stay under these (ref in float64 from the same, already-rounded inputs)
# (bf16 like fp16: the reference is built from the rounded bf16 inputs, so only the fp32 accumulation differs)
# fp8 (e4m3, e5m2): not here, it grows with K (gemmprof.measure.fp8, accumulation_tolerance, derives it)
TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 2e-3, "bf16": 2e-3}
# an fp16 or bf16 C adds its own rounding (2**-11, 2**-8 relative per element); an element up to about 20 times
# the reference's RMS must still pass, so these follow the output type
C_TOLERANCE = {"fp32": 0.0, "fp16": 1e-2, "bf16": 8e-2}


def tolerance(dtype: str, c_dtype: str = "fp32", k: int = 0) -> float:
    """The check's tolerance for inputs of `dtype` (or tf32) written to a C of `c_dtype`; fp8 inputs' grows with K
    (`k`: fp8.accumulation_tolerance)."""
    if dtype in FP8_DTYPES:
        from gemmprof.measure.fp8 import accumulation_tolerance

        return max(accumulation_tolerance(k), C_TOLERANCE[c_dtype])
    return max(TOLERANCE[dtype], C_TOLERANCE[c_dtype])


@dataclass
class Problem:
    """One GEMM's operands on the device, in every layout asked for, and its float64 reference."""

    shape: GemmShape
    dtype: str  # fp32 | fp16 | bf16 | e4m3 | e5m2 (the storage of A and B; bf16 and fp8 as their bit patterns)
    alpha: float
    beta: float
    seed: int
    A: object  # logical M x K, row-major, input dtype
    B: object  # logical K x N, row-major, input dtype
    C0: object  # M x N float32: C's value before the GEMM (random when beta != 0), rounded to c_dtype
    ref: object  # M x N float64
    c_dtype: str = "fp32"  # C's storage: fp32, fp16, or bf16 (as uint16 bit patterns)
    fill: str = "uniform"
    scales: str = ""  # fp8 only: tensor | 1x128 | 128x128 (gemmprof.measure.fp8)
    scale_a: object = None  # fp8 only: float32 scales as a kernel reads them (fp8.scale_shapes)
    scale_b: object = None
    _layouts: dict = field(default_factory=dict)

    def scale_view(self, which: str):
        """A's or B's scales as a callable sees them, in the operand's logical orientation: the (1,) array of a
        tensor scale; per block, A's (M blocks x K blocks) and B's (K blocks x N blocks), views of the stored arrays
        (first index contiguous, as torch._scaled_mm takes them)."""
        stored = self.scale_a if which == "A" else self.scale_b
        return stored if stored.ndim == 1 else stored.T

    @property
    def operand_bytes(self) -> int:
        """Bytes of A, B and C as stored (what one call must bring in and write back, at the least)."""
        c_size = {"fp32": 4}.get(self.c_dtype, 2)
        return int(self.A.nbytes + self.B.nbytes + self.shape.M * self.shape.N * c_size)

    # -- rows of A changed between timed calls (measure/bench.py) ---------------------------------------------
    def row_pool(self, count: int, seed: int):
        """`count` fresh rows of A, (as stored: input dtype, bf16 and fp8 as bit patterns; their float64 values, fp8's
        before A's scales), drawn uniform in [-1, 1) whatever the fill (fp8: over the format's range): a row written
        into A before a timed call makes that call's inputs unlike any earlier call's, and its right answer known."""
        xp = array_module(self.A)
        rng = xp.random.default_rng(seed)
        rows = draw(rng, count, self.shape.K, "uniform")
        if self.dtype in FP8_DTYPES:  # codes over the format's range; their values before A's scales (row_reference)
            from gemmprof.measure import fp8

            fmt = fp8.fp8_format(self.dtype)
            stored = fp8.to_bits(rows * xp.float32(fmt.max), fmt)
            return stored, fp8.from_bits(stored, fmt).astype(xp.float64)
        if self.dtype == "bf16":
            stored = to_bf16_bits(rows)
            return stored, from_bf16_bits(stored).astype(xp.float64)
        stored = rows.astype(self.A.dtype)
        return stored, stored.astype(xp.float64)

    def a_row(self, r: int):
        """Logical row r of A, a copy (as stored)."""
        if array_module(self.A) is np:
            return self.A[r].copy()
        import cupy

        out = cupy.empty(self.shape.K, dtype=self.A.dtype)
        _device_copy(out.data.ptr, 0, self.A.data.ptr + r * self.A.strides[0], 0, out.nbytes, 1)
        return out

    def set_a_row(self, r: int, stored_row) -> None:
        """Write logical row r of A into every layout A is held in (row-major rows, column-major columns, padded
        copies): the kernels read A through those arrays. On the device, one cudaMemcpy2DAsync per layout (a row
        or a strided column): a few microseconds of the host per call, where indexing CuPy arrays takes tens."""
        K = self.shape.K
        copies = [(self.A, "row")] + [(held, key[1]) for key, held in self._layouts.items()
                                      if key[0] == "A" and held is not self.A]
        if array_module(self.A) is np:
            for held, layout in copies:
                if layout == "row":
                    held[r, :K] = stored_row
                else:
                    held[:K, r] = stored_row
            return
        size = stored_row.itemsize
        for held, layout in copies:
            if layout == "row":
                _device_copy(held.data.ptr + r * held.strides[0], 0, stored_row.data.ptr, 0, K * size, 1)
            else:  # column r of K rows: one element per row, each a row's pitch apart
                _device_copy(held.data.ptr + r * size, held.strides[0], stored_row.data.ptr, size, size, K)

    def row_reference(self, r: int, values64):
        """C's right row r when row r of A holds `values64` (float64; fp8: the codes' values, row r's scales of A
        applied here): alpha * row @ B + beta * C0[r]."""
        xp = array_module(self.A)
        if self.dtype in FP8_DTYPES:  # the row's codes' values times row r's scales of A; B dequantized
            from gemmprof.measure import fp8

            fmt = fp8.fp8_format(self.dtype)
            a_block, b_block = fp8.operand_blocks(self.scales)
            a_scales = self.scale_view("A")
            if a_block is None:
                values64 = values64 * float(a_scales[0])
            else:
                values64 = values64 * xp.repeat(a_scales[r // a_block[0]], a_block[1])[:self.shape.K].astype(
                    xp.float64)
            B64 = fp8.dequantize(self.B, self.scale_view("B").reshape(1, 1) if b_block is None
                                 else self.scale_view("B"), fmt, b_block)
        else:
            B64 = (from_bf16_bits(self.B) if self.dtype == "bf16" else self.B).astype(xp.float64)
        row = self.alpha * (values64 @ B64)
        if self.beta != 0:
            row = row + self.beta * self.C0[r].astype(xp.float64)
        return row

    def operand(self, which: str, layout: str, ld: int | None = None):
        """A or B stored row- or column-major (column-major A is stored as K rows of M); with a leading dimension
        `ld` above the packed one, each stored row is padded to `ld` elements with NaN (a read of the padding
        spoils the result)."""
        key = (which, layout)
        if key not in self._layouts:
            xp = array_module(self.A)
            logical = self.A if which == "A" else self.B
            self._layouts[key] = logical if layout == "row" else xp.ascontiguousarray(logical.T)
        packed = self._layouts[key]
        if ld is None or ld == packed.shape[1]:
            return packed
        if (which, layout, ld) not in self._layouts:
            self._layouts[(which, layout, ld)] = pad_rows(packed, ld, float("nan"))
        return self._layouts[(which, layout, ld)]

    def sentinel_output(self, layout: str = "row", ldc: int | None = None):
        """C filled with a finite sentinel (beta == 0) or C0: the second launch of a verification."""
        from gemmprof.measure.verify import sentinel

        return self._output(sentinel(self.c_dtype) if self.beta == 0 else None, layout, ldc)

    def fresh_output(self, layout: str = "row", ldc: int | None = None):
        """C as the kernel must find it: NaN when beta == 0 (it must not be read), else C0."""
        return self._output(np.nan if self.beta == 0 else None, layout, ldc)

    def _output(self, fill, layout: str, ldc: int | None):
        """C stored as the kernel writes it: in c_dtype, row-major M x N or column-major (N rows of M), each row
        padded to `ldc` elements (with the sentinel) where ldc is above the packed one."""
        from gemmprof.measure.verify import sentinel

        xp = array_module(self.A)  # CuPy on the GPU; NumPy where the tests check it without one
        values = self.C0 if fill is None else xp.full((self.shape.M, self.shape.N), fill, dtype=xp.float32)
        stored = store_c(values, self.c_dtype, layout)
        if ldc is None or ldc == stored.shape[1]:
            return stored
        pad = store_c(xp.full((1, 1), sentinel(self.c_dtype), dtype=xp.float32), self.c_dtype, "row")[0, 0].item()
        return pad_rows(stored, ldc, pad)


def _device_copy(dst: int, dpitch: int, src: int, spitch: int, width: int, height: int) -> None:
    """`height` rows of `width` bytes from src to dst (device pointers; pitches in bytes) on CuPy's current stream."""
    import cupy

    rt = cupy.cuda.runtime
    stream = cupy.cuda.get_current_stream().ptr
    if height == 1:
        rt.memcpyAsync(dst, src, width, rt.memcpyDeviceToDevice, stream)
    else:
        rt.memcpy2DAsync(dst, dpitch, src, spitch, width, height, rt.memcpyDeviceToDevice, stream)


def pad_rows(stored, ld: int, fill):
    """A row-major array with each row widened to `ld` elements, the new ones `fill` (bf16 bit patterns: NaN's)."""
    xp = array_module(stored)
    if stored.dtype == xp.uint16 and isinstance(fill, float):
        fill = 0x7FC0  # bf16 NaN
    if stored.dtype == xp.uint8 and isinstance(fill, float):
        fill = 0x7F  # a NaN of e4m3fn and of e5m2
    out = xp.full((stored.shape[0], ld), fill, dtype=stored.dtype)
    out[:, :stored.shape[1]] = stored
    return out


def store_c(values, c_dtype: str, layout: str):
    """An M x N float32 array as a kernel's C holds it (NumPy or CuPy): fp32, fp16, or bf16 bit patterns, row-
    or column-major."""
    xp = array_module(values)
    stored = to_bf16_bits(values) if c_dtype == "bf16" else values.astype(
        xp.float16 if c_dtype == "fp16" else xp.float32)
    return xp.ascontiguousarray(stored.T if layout == "col" else stored)


def logical_c(out, c_dtype: str, layout: str):
    """store_c's inverse: C as M x N float32 values (a view where it can be)."""
    values = from_bf16_bits(out) if c_dtype == "bf16" else out.astype(array_module(out).float32, copy=False)
    return values.T if layout == "col" else values


# The values the operands are drawn from (`--fill`). Verification always draws `uniform` (never zeros, no structure a
# wrong index could hide behind); the fill chosen applies to the inputs of the timed calls. The values move the
# power a GEMM draws, and so the clock it holds under a power cap: NVIDIA's measurement guide runs fixed-clock
# tests on zeros and fixed-power tests on uniform [-1, 1).
FILLS = {"uniform": "uniform in [-1, 1)", "uniform01": "uniform in [0, 1)", "randn": "standard normal",
         "zeros": "all zeros", "ints": "integers in [-3, 3]"}


def draw(rng, rows: int, cols: int, fill: str = "uniform"):
    """rows x cols float32 values of `fill` from a CuPy (or NumPy) Generator."""
    xp = array_module(rng)
    if fill == "uniform":
        return rng.random((rows, cols), dtype=xp.float32) * 2 - 1
    if fill == "uniform01":
        return rng.random((rows, cols), dtype=xp.float32)
    if fill == "randn":
        return rng.standard_normal((rows, cols), dtype=xp.float32)
    if fill == "zeros":
        return xp.zeros((rows, cols), dtype=xp.float32)
    if fill == "ints":
        return rng.integers(-3, 4, size=(rows, cols)).astype(xp.float32)
    raise ValueError(f"unknown fill {fill!r}")


def make_problem(shape: GemmShape, dtype: str, alpha: float, beta: float, seed: int, c_dtype: str = "fp32",
                 fill: str = "uniform", scales: str = "tensor") -> Problem:
    import cupy

    if dtype in FP8_DTYPES:
        return fp8_problem(shape, dtype, alpha, beta, seed, c_dtype, scales, cupy, fill)
    rng = cupy.random.default_rng(seed)
    store = {"fp16": cupy.float16}.get(dtype, cupy.float32)

    def rand(rows, cols):
        return draw(rng, rows, cols, fill).astype(store)

    A, B = rand(shape.M, shape.K), rand(shape.K, shape.N)
    C0 = logical_c(store_c(rand(shape.M, shape.N).astype(cupy.float32), c_dtype, "row"), c_dtype, "row")
    if dtype == "bf16":  # CuPy has no bfloat16: the operands are its bit patterns, the reference their values
        A, B = to_bf16_bits(A), to_bf16_bits(B)
        ref = alpha * (from_bf16_bits(A).astype(cupy.float64) @ from_bf16_bits(B).astype(cupy.float64))
    else:
        ref = alpha * (A.astype(cupy.float64) @ B.astype(cupy.float64))
    if beta != 0:
        ref += beta * C0.astype(cupy.float64)
    return Problem(shape, dtype, alpha, beta, seed, A, B, C0, ref, c_dtype, fill=fill)


def fp8_problem(shape: GemmShape, dtype: str, alpha: float, beta: float, seed: int, c_dtype: str = "bf16",
                scales: str = "tensor", xp=np, fill: str = "uniform") -> Problem:
    """fp8 operands (uint8 codes) with their scales (docs/fp8.md). Values are drawn as `fill` says like every
    dtype's (uniform in [-1, 1) for verification), times a power of two: per tensor, 2**3 for A and 2**-5 for B; per scale block, 2**e with e drawn from
    -4 .. 4 for each block. The codes are the plain draw's (a power of two passes exactly through the scale), but the
    scales then differ, so a kernel that applies A's scale twice, or a block's neighbour's, fails the check. The
    reference is float64 of the dequantized values (fp8 value times scale, exact). `xp`: CuPy on the GPU, NumPy in
    the tests."""
    from gemmprof.measure import fp8

    rng = xp.random.default_rng(seed)
    fmt = fp8.fp8_format(dtype)
    fp8.check_scales(scales, dtype, shape.K)
    a_block, b_block = fp8.operand_blocks(scales)

    def values(rows, cols, block, tensor_exponent):
        drawn = draw(rng, rows, cols, fill)
        if block is None:
            return drawn * xp.float32(2.0 ** tensor_exponent)
        exps = rng.integers(-4, 5, size=(-(-rows // block[0]), -(-cols // block[1])))
        return drawn * fp8.expand(xp.exp2(exps).astype(xp.float32), block, (rows, cols))

    A, sa = fp8.quantize(values(shape.M, shape.K, a_block, 3), fmt, a_block)
    B, sb = fp8.quantize(values(shape.K, shape.N, b_block, -5), fmt, b_block)
    C0 = logical_c(store_c(draw(rng, shape.M, shape.N, fill), c_dtype, "row"), c_dtype, "row")
    ref = alpha * (fp8.dequantize(A, sa, fmt, a_block) @ fp8.dequantize(B, sb, fmt, b_block))
    if beta != 0:
        ref += beta * C0.astype(xp.float64)
    scale_a, scale_b = fp8.stored_scales(sa, sb, scales)
    return Problem(shape, dtype, alpha, beta, seed, A, B, C0, ref, c_dtype, fill, scales, scale_a, scale_b)


def to_bf16_bits(x32):
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even; works on numpy and CuPy arrays."""
    xp = array_module(x32)
    u = x32.astype(xp.float32).view(xp.uint32)
    return ((u + xp.uint32(0x7FFF) + ((u >> 16) & xp.uint32(1))) >> 16).astype(xp.uint16)


def from_bf16_bits(u16):
    xp = array_module(u16)
    return (u16.astype(xp.uint32) << 16).view(xp.float32)


def verify(poisoned, second, problem: Problem, tolerance: float, reads_c_declared: bool = False,
           layout: str = "row") -> Verification:
    """poisoned: C after a launch over fresh_output(layout); second: C after a launch over sentinel_output(layout)
    (beta == 0), or None (then `poisoned` started from C0, which is finite)."""
    from gemmprof.measure.verify import classify, sentinel

    inner = problem.shape.N if layout == "row" else problem.shape.M  # C's padding past ldc's packed value: unread
    poisoned = logical_c(poisoned[:, :inner], problem.c_dtype, layout)
    if problem.beta == 0:
        return classify(logical_c(second[:, :inner], problem.c_dtype, layout), problem.ref, tolerance,
                        initial=sentinel(problem.c_dtype), poisoned=poisoned, reads_c_declared=reads_c_declared)
    return classify(poisoned, problem.ref, tolerance, initial=problem.C0, reads_c_declared=reads_c_declared)


def scale_buffers(problem: Problem, pointers: bool = False) -> dict:
    """{scale_a, scale_b}: the fp8 problem's scale arrays as a kernel reads them (their device addresses with
    `pointers`); empty for other dtypes."""
    if getattr(problem, "scale_a", None) is None:  # not fp8 (or a stand-in problem without the field)
        return {}
    arrays = {"scale_a": problem.scale_a, "scale_b": problem.scale_b}
    return {k: v.data.ptr for k, v in arrays.items()} if pointers else arrays


def workspace_buffer(kernel: BoundKernel, shape: GemmShape):
    """The kernel's workspace (zeroed once; None when it takes none)."""
    size = kernel.spec.abi.workspace_bytes({**kernel.env, "M": shape.M, "N": shape.N, "K": shape.K})
    if not kernel.spec.abi.takes("workspace"):
        return None
    import cupy

    return cupy.zeros(max(size, 1), dtype=cupy.uint8)
