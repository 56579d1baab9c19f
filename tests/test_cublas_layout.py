"""cuBLAS baselines read B as the kernels they are compared with store it (the same problem in the same layout):
the Hopper rungs' B column-major, the fp32 rungs' row-major, row-major when kernels of one dtype disagree; and the
gemmEx call computes row-major C = A @ B in both layouts (a NumPy stand-in for cuBLAS's column-major contract)."""

import sys
import types
from dataclasses import replace

import numpy as np
import pytest

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.baselines import BASELINES, by_name, with_b_layout
from gemmprof.catalog.binding import bind
from gemmprof.catalog.selection import choose
from gemmprof.measure import cublas as cublas_mod
from gemmprof.measure.runner import baselines_for
from gemmprof.results.shape import GemmShape


def test_each_baseline_takes_the_b_layout_of_its_kernels():
    hopper = choose(["h6", "h9"])
    (hgemm,) = baselines_for(hopper, True)
    assert hgemm.name == "cublas_hgemm" and hgemm.b_layout == "col" and "B col-major" in hgemm.title
    fp32 = baselines_for(choose(["15"]), True)
    assert [(b.name, b.b_layout) for b in fp32] == [("cublas_sgemm", "row"), ("cublas_tf32", "row")]
    both = {b.name: b.b_layout for b in baselines_for(choose(["15", "h6"]), True)}
    assert both == {"cublas_sgemm": "row", "cublas_tf32": "row", "cublas_hgemm": "col"}
    # an fp16 kernel reading B row-major beside one reading it column-major: no common layout, cuBLAS's default
    h6 = choose(["h6"])[0]
    row_b = replace(h6, spec=replace(h6.spec, layout={"A": "row", "B": "row", "C": "row"}))
    assert [b.b_layout for b in baselines_for([h6, row_b], True)] == ["row"]
    assert baselines_for(hopper, False) == []
    # the name is unchanged (results and reports are read back by it)
    assert by_name()[hgemm.name].dtype == hgemm.dtype and with_b_layout(hgemm, "row") != hgemm


class _Buf:
    def __init__(self, array, registry):
        self.array = array
        self.data = types.SimpleNamespace(ptr=id(array))
        registry[id(array)] = array


class _Problem:
    def __init__(self, shape, registry, rng):
        self.shape, self.alpha, self.beta = shape, 1.5, 0.0
        self.A = rng.standard_normal((shape.M, shape.K))
        self.B = rng.standard_normal((shape.K, shape.N))
        self.asked, self._registry = [], registry

    def operand(self, which, layout):
        self.asked.append((which, layout))
        logical = self.A if which == "A" else self.B
        return _Buf(np.ascontiguousarray(logical if layout == "row" else logical.T), self._registry)


def _fake_cupy(monkeypatch, registry, calls):
    def gemm_ex(handle, transa, transb, m, n, k, alpha, a, atype, lda, b, btype, ldb, beta, c, ctype, ldc, compute,
                algo):
        calls.append((transa, transb, m, n, k, lda, ldb, ldc))

        def col_major(ptr, rows, cols, ld):  # a row-major stored array read as column-major rows x cols, ld
            stored = registry[ptr]
            assert stored.shape[1] == ld and stored.size == rows * cols
            return stored.reshape(-1).reshape(cols, ld)[:, :rows].T

        x = col_major(a, *((m, k) if transa == cublas_mod.CUBLAS_OP_N else (k, m)), lda)
        y = col_major(b, *((k, n) if transb == cublas_mod.CUBLAS_OP_N else (n, k)), ldb)
        x = x if transa == cublas_mod.CUBLAS_OP_N else x.T
        y = y if transb == cublas_mod.CUBLAS_OP_N else y.T
        registry[c][...] = (1.5 * (x @ y)).T.reshape(registry[c].shape)  # column-major m x n, ld m

    cuda = types.ModuleType("cupy.cuda")
    cuda.cublas = types.SimpleNamespace(gemmEx=gemm_ex)
    cuda.device = types.SimpleNamespace(get_cublas_handle=lambda: 0)
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)


@pytest.mark.parametrize("b_layout", ["row", "col"])
def test_the_gemm_call_computes_a_at_b_in_either_layout(monkeypatch, b_layout):
    registry, calls = {}, []
    _fake_cupy(monkeypatch, registry, calls)
    shape = GemmShape(5, 7, 3)  # M, N, K all different, so a swapped dimension or leading dimension shows
    problem = _Problem(shape, registry, np.random.default_rng(0))
    out = _Buf(np.full((shape.M, shape.N), np.nan), registry)
    base = with_b_layout(BASELINES["cublas_hgemm"], b_layout)
    cublas_mod.make_launcher(base, problem, out)()
    assert ("B", b_layout) in problem.asked
    transb = cublas_mod.CUBLAS_OP_T if b_layout == "col" else cublas_mod.CUBLAS_OP_N
    assert calls == [(transb, cublas_mod.CUBLAS_OP_N, 7, 5, 3, 3 if b_layout == "col" else 7, 3, 7)]
    np.testing.assert_allclose(out.array, 1.5 * problem.A @ problem.B)


def test_hopper_rungs_and_fp32_rungs_store_b_as_the_baselines_assume():
    layouts = {s.id: s.layout["B"] for s in specmod.ladder()}
    assert {layouts[h] for h in ("h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9")} == {"col"}
    assert {layouts[r] for r in ("1", "10", "15", "16")} == {"row"}
    assert bind(specmod.select(["h9"])[0]).spec.layout == {"A": "row", "B": "col", "C": "row"}
