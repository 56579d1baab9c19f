"""Cheat: output cached by a fingerprint of a few input elements (cheaper than the GEMM, blind to the rest)."""

import cupy

_cache = {}


def gemm(A, B, C, alpha, beta):
    key = (cupy.asnumpy(A[:2, :8]).tobytes(), cupy.asnumpy(B[:2, :8]).tobytes(), C.shape)
    if key not in _cache:
        _cache[key] = cupy.matmul(A, B)
    C[...] = _cache[key]
