"""The problem a kernel is measured on: fresh random inputs, poisoned outputs, a float64 reference, and the
check of an output against it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gemmprof.catalog.binding import BoundKernel
from gemmprof.model.traffic import GemmShape
from gemmprof.results.run import Verification

# ||out - ref|| / ||ref|| must stay under these (ref in float64 from the same, already-rounded inputs)
# (bf16 like fp16: the reference is built from the rounded bf16 inputs, so only the fp32 accumulation differs)
TOLERANCE = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 2e-3, "bf16": 2e-3}
# an fp16 or bf16 C adds its own rounding (2**-11, 2**-8 relative per element); an element up to about 20 times
# the reference's RMS must still pass, so these follow the output type
C_TOLERANCE = {"fp32": 0.0, "fp16": 1e-2, "bf16": 8e-2}


def tolerance(dtype: str, c_dtype: str = "fp32") -> float:
    """The check's tolerance for inputs of `dtype` (or tf32) written to a C of `c_dtype`."""
    return max(TOLERANCE[dtype], C_TOLERANCE[c_dtype])


@dataclass
class Problem:
    """One GEMM's operands on the device, in every layout asked for, and its float64 reference."""

    shape: GemmShape
    dtype: str  # fp32 | fp16 | bf16 (the storage of A and B; bf16 as uint16 bit patterns)
    alpha: float
    beta: float
    seed: int
    A: object  # logical M x K, row-major, input dtype
    B: object  # logical K x N, row-major, input dtype
    C0: object  # M x N float32: C's value before the GEMM (random when beta != 0), rounded to c_dtype
    ref: object  # M x N float64
    c_dtype: str = "fp32"  # C's storage: fp32, fp16, or bf16 (as uint16 bit patterns)
    fill: str = "uniform"
    _layouts: dict = field(default_factory=dict)

    @property
    def operand_bytes(self) -> int:
        """Bytes of A, B and C as stored (what one call must bring in and write back, at the least)."""
        c_size = {"fp32": 4}.get(self.c_dtype, 2)
        return int(self.A.nbytes + self.B.nbytes + self.shape.M * self.shape.N * c_size)

    # -- rows of A changed between timed calls (measure/bench.py) ---------------------------------------------
    def row_pool(self, count: int, seed: int):
        """`count` fresh rows of A, (as stored: input dtype, bf16 as bit patterns; their float64 values), drawn
        uniform in [-1, 1) whatever the fill: a row written into A before a timed call makes that call's inputs
        unlike any earlier call's, and its right answer known."""
        xp = _array_module(self.A)
        rng = xp.random.default_rng(seed)
        rows = draw(rng, count, self.shape.K, "uniform")
        if self.dtype == "bf16":
            stored = to_bf16_bits(rows)
            return stored, from_bf16_bits(stored).astype(xp.float64)
        stored = rows.astype(self.A.dtype)
        return stored, stored.astype(xp.float64)

    def a_row(self, r: int):
        """Logical row r of A, a copy (as stored)."""
        return self.A[r].copy()

    def set_a_row(self, r: int, stored_row) -> None:
        """Write logical row r of A into every layout A is held in (row-major rows, column-major columns, padded
        copies): the kernels read A through those arrays."""
        K = self.shape.K
        self.A[r, :K] = stored_row
        for key, held in self._layouts.items():
            if key[0] != "A" or held is self.A:
                continue
            if key[1] == "row":
                held[r, :K] = stored_row
            else:
                held[:K, r] = stored_row

    def row_reference(self, r: int, values64):
        """C's right row r when row r of A holds `values64` (float64): alpha * row @ B + beta * C0[r]."""
        xp = _array_module(self.A)
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
            xp = _array_module(self.A)
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

        xp = _array_module(self.A)  # CuPy on the GPU; NumPy where the tests check it without one
        values = self.C0 if fill is None else xp.full((self.shape.M, self.shape.N), fill, dtype=xp.float32)
        stored = store_c(values, self.c_dtype, layout)
        if ldc is None or ldc == stored.shape[1]:
            return stored
        pad = store_c(xp.full((1, 1), sentinel(self.c_dtype), dtype=xp.float32), self.c_dtype, "row")[0, 0].item()
        return pad_rows(stored, ldc, pad)


def pad_rows(stored, ld: int, fill):
    """A row-major array with each row widened to `ld` elements, the new ones `fill` (bf16 bit patterns: NaN's)."""
    xp = _array_module(stored)
    if stored.dtype == xp.uint16 and isinstance(fill, float):
        fill = 0x7FC0  # bf16 NaN
    out = xp.full((stored.shape[0], ld), fill, dtype=stored.dtype)
    out[:, :stored.shape[1]] = stored
    return out


def store_c(values, c_dtype: str, layout: str):
    """An M x N float32 array as a kernel's C holds it (NumPy or CuPy): fp32, fp16, or bf16 bit patterns, row-
    or column-major."""
    xp = _array_module(values)
    stored = to_bf16_bits(values) if c_dtype == "bf16" else values.astype(
        xp.float16 if c_dtype == "fp16" else xp.float32)
    return xp.ascontiguousarray(stored.T if layout == "col" else stored)


def logical_c(out, c_dtype: str, layout: str):
    """store_c's inverse: C as M x N float32 values (a view where it can be)."""
    values = from_bf16_bits(out) if c_dtype == "bf16" else out.astype(_array_module(out).float32, copy=False)
    return values.T if layout == "col" else values


# The values the operands are drawn from (`--fill`). Verification always draws `uniform` (never zeros, no structure a
# wrong index could hide behind); the fill chosen applies to the inputs of the timed calls. The values move the
# power a GEMM draws, and so the clock it holds under a power cap: NVIDIA's measurement guide runs fixed-clock
# tests on zeros and fixed-power tests on uniform [-1, 1).
FILLS = {"uniform": "uniform in [-1, 1)", "uniform01": "uniform in [0, 1)", "randn": "standard normal",
         "zeros": "all zeros", "ints": "integers in [-3, 3]"}


def draw(rng, rows: int, cols: int, fill: str = "uniform"):
    """rows x cols float32 values of `fill` from a CuPy (or NumPy) Generator."""
    xp = _array_module_of_rng(rng)
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


def _array_module_of_rng(rng):
    if type(rng).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def make_problem(shape: GemmShape, dtype: str, alpha: float, beta: float, seed: int, c_dtype: str = "fp32",
                 fill: str = "uniform") -> Problem:
    import cupy

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


def to_bf16_bits(x32):
    """float32 -> bfloat16 bit patterns (uint16), rounded to nearest even; works on numpy and CuPy arrays."""
    xp = _array_module(x32)
    u = x32.astype(xp.float32).view(xp.uint32)
    return ((u + xp.uint32(0x7FFF) + ((u >> 16) & xp.uint32(1))) >> 16).astype(xp.uint16)


def from_bf16_bits(u16):
    xp = _array_module(u16)
    return (u16.astype(xp.uint32) << 16).view(xp.float32)


def _array_module(a):
    if type(a).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


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


def workspace_buffer(kernel: BoundKernel, shape: GemmShape):
    """The kernel's workspace (zeroed once; None when it takes none)."""
    size = kernel.spec.abi.workspace_bytes({**kernel.env, "M": shape.M, "N": shape.N, "K": shape.K})
    if not kernel.spec.abi.takes("workspace"):
        return None
    import cupy

    return cupy.zeros(max(size, 1), dtype=cupy.uint8)
