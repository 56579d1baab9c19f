"""The rows of A changed around each timed call (measure/bench.py) are written on the device by cudaMemcpy(2D)Async:
the byte arithmetic (a row-major row, a padded row, a strided column of a column-major copy) checked here on host
memory, with the two copies played by ctypes.memmove over the same pointers and pitches."""

import ctypes
import sys
import types

import numpy as np
import pytest

from gemmprof.measure import problem as problem_mod
from gemmprof.results.shape import GemmShape


class _Held:
    """A NumPy array dressed as a CuPy one: data.ptr its address, strides, itemsize, nbytes, dtype."""

    __module__ = "cupy.fake"

    def __init__(self, array):
        self.a = array
        self.data = types.SimpleNamespace(ptr=array.ctypes.data)
        self.strides, self.itemsize, self.nbytes, self.dtype = array.strides, array.itemsize, array.nbytes, array.dtype
        self.shape = array.shape


def _memcpy2d(dst, dpitch, src, spitch, width, height):
    for i in range(height):
        ctypes.memmove(dst + i * dpitch, src + i * spitch, width)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8, np.uint16])
def test_a_row_goes_into_every_layout_of_a_and_comes_back(monkeypatch, dtype):
    M, K = 6, 5
    rng = np.random.default_rng(1)
    logical = (rng.random((M, K)) * 100).astype(dtype)
    padded = np.full((M, K + 3), 7, dtype=dtype)
    padded[:, :K] = logical
    col = np.ascontiguousarray(logical.T)
    A = _Held(logical)
    p = problem_mod.Problem(GemmShape(M, 4, K), "fp32", 1.0, 0.0, 0, A, None, None, None)
    p._layouts = {("A", "row"): A, ("A", "row", K + 3): _Held(padded), ("A", "col"): _Held(col)}
    monkeypatch.setattr(problem_mod, "_device_copy", _memcpy2d)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(empty=lambda n, dtype: _Held(np.empty(n, dtype))))
    new = _Held((np.arange(K) + 1).astype(dtype))
    saved = p.a_row(3)
    assert np.array_equal(saved.a, logical[3])
    p.set_a_row(3, new)
    assert np.array_equal(logical[3], new.a) and np.array_equal(padded[3, :K], new.a) and np.array_equal(col[:, 3], new.a)
    assert (padded[3, K:] == 7).all()  # the padding untouched
    others = [r for r in range(M) if r != 3]
    assert np.array_equal(col.T[others], logical[others]) and np.array_equal(padded[others, :K], logical[others])
    p.set_a_row(3, saved)
    assert np.array_equal(col[:, 3], saved.a) and np.array_equal(logical[3], saved.a)
