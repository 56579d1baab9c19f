"""A kernel's calling convention (`args:`, layouts, C's dtype, the workspace), packed and checked without a GPU:
argument order and types, leading dimensions, and the check of every layout and C dtype against a float64
reference computed with NumPy."""

import ctypes
from pathlib import Path

import numpy as np
import pytest

from gemmprof.catalog import abi
from gemmprof.catalog import spec as specmod
from gemmprof.errors import SpecError
from gemmprof.measure.problem import Problem, logical_c, store_c, tolerance, verify
from gemmprof.measure.verify import sentinel
from gemmprof.model.traffic import GemmShape

SHAPE = GemmShape(5, 7, 3)
PATH = Path("k.yaml")


def parse(**doc):
    return abi.parse_abi(PATH, doc, launcher=doc.pop("_launcher", False))


def test_the_default_abi_packs_exactly_what_rungs_always_got():
    A, B, C = np.zeros((5, 3), np.float32), np.zeros((3, 7), np.float32), np.zeros((5, 7), np.float32)
    layout = {"A": "row", "B": "row", "C": "row"}
    problem = Problem(SHAPE, "fp32", 1.5, 0.25, 0, A, B, None, None, _layouts={("A", "row"): A, ("B", "row"): B})
    got = abi.kernel_values(parse(), SHAPE, layout, 1.5, 0.25, {"A": A, "B": B, "C": C})
    s = SHAPE  # the eight-argument ABI: (M, N, K, alpha, A, B, beta, C) as int32, float32 and the arrays
    want = (np.int32(s.M), np.int32(s.N), np.int32(s.K), np.float32(1.5), problem.operand("A", "row"),
            problem.operand("B", "row"), np.float32(0.25), C)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert all(g is w if isinstance(w, np.ndarray) else g == w for g, w in zip(got, want, strict=True))
    assert parse().is_default and not parse(args=["A", "B", "C", "M", "N", "K"]).is_default


def test_any_order_with_leading_dimensions_literals_and_workspace():
    a = parse(args=["A", "lda", "B", "ldb", "C", "ldc", "M", "N", "K", "beta", "alpha", 0, "1.0f", "workspace"],
              workspace="4 * M * N")
    layout = {"A": "col", "B": "row", "C": "col"}
    got = abi.kernel_values(a, SHAPE, layout, 2.0, 0.5, {"A": "a", "B": "b", "C": "c", "workspace": "w"})
    assert got == ("a", 5, "b", 7, "c", 5, 5, 7, 3, 0.5, 2.0, 0, 1.0, "w")
    assert [type(v).__name__ for v in got[1:2] + got[9:13]] == ["int32", "float32", "float32", "int32", "float32"]
    assert a.workspace_bytes({"M": 5, "N": 7, "K": 3}) == 140


@pytest.mark.parametrize("layout,lds", [
    ({"A": "row", "B": "row", "C": "row"}, (3, 7, 7)),
    ({"A": "col", "B": "col", "C": "col"}, (5, 3, 5)),
    ({"A": "row", "B": "col", "C": "col"}, (3, 3, 5)),
])
def test_leading_dimensions_default_to_the_packed_ones(layout, lds):
    assert tuple(abi.leading_dims(SHAPE, layout).values()) == lds


def test_a_launchers_call_is_typed_for_ctypes():
    a = parse(args=["M", "N", "K", "alpha", "A", "B", "beta", "C", "workspace", 4, "stream"], workspace="M",
              _launcher=True)
    types, values = abi.ctypes_call(a, SHAPE, {"A": "row", "B": "row", "C": "row"}, 1.0, 0.0,
                                    {"A": 16, "B": 32, "C": 48, "workspace": 64, "stream": 0})
    assert types == [ctypes.c_int] * 3 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float,
                                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    assert [v.value for v in values] == [5, 7, 3, 1.0, 16, 32, 0.0, 48, 64, 4, None]  # c_void_p(0).value is None


@pytest.mark.parametrize("doc,match", [
    ({"args": ["M", "N", "K", "alpha", "A", "B", "beta", "C", "ldd"]}, r"args\[8\]: 'ldd' .*did you mean ldc"),
    ({"args": ["A", "B", "C", True]}, r"args\[3\]: True"),
    ({"args": ["A", "B", "C", "C"]}, "C given twice"),
    ({"args": ["A", "B", "M"]}, "no C: a GEMM kernel takes"),
    ({"args": ["A", "B", "C", "stream"]}, "`stream` is a launcher's parameter"),
    ({"args": ["A", "B", "C"], "_launcher": True}, "a launcher takes `stream`"),
    ({"args": ["A", "B", "C", "workspace"]}, "workspace: give both"),
    ({"workspace": "M * N"}, "workspace: the kernel takes no workspace"),
    ({"args": ["A", "B", "C", "workspace"], "workspace": "open(M)"}, "workspace: "),
    ({"c_dtype": "fp8"}, "c_dtype: 'fp8' is not one of fp32, fp16, bf16"),
    ({"args": "M N K"}, "args: expected a list"),
])
def test_bad_args_are_one_line_naming_the_key(doc, match):
    with pytest.raises(SpecError, match=match):
        parse(**doc)


def test_a_kernel_without_alpha_or_beta_refuses_runs_it_cannot_check():
    a = parse(args=["A", "B", "C", "M", "N", "K"])
    assert a.refuses(1.0, 0.0) is None
    assert "run with --alpha 1" in a.refuses(2.0, 0.0)
    assert "run with --beta 0" in a.refuses(1.0, 0.5)


def _problem(c_dtype, beta, rng):
    A = rng.uniform(-1, 1, (SHAPE.M, SHAPE.K)).astype(np.float32)
    B = rng.uniform(-1, 1, (SHAPE.K, SHAPE.N)).astype(np.float32)
    C0 = logical_c(store_c(rng.uniform(-1, 1, (SHAPE.M, SHAPE.N)).astype(np.float32), c_dtype, "row"), c_dtype,
                   "row")
    ref = 1.5 * (A.astype(np.float64) @ B.astype(np.float64)) + beta * C0.astype(np.float64)
    return Problem(SHAPE, "fp32", 1.5, beta, 0, A, B, C0, ref, c_dtype)


def _fake_kernel(problem, c, layout):
    """What a correct kernel writes into the stored C `c`: alpha*A@B + beta*C, in c's dtype and layout."""
    old = logical_c(c, problem.c_dtype, layout).astype(np.float64)
    value = 1.5 * (problem.A.astype(np.float64) @ problem.B.astype(np.float64)) + problem.beta * np.nan_to_num(old)
    c[...] = store_c(value.astype(np.float32), problem.c_dtype, layout)


@pytest.mark.parametrize("c_dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("c_layout", ["row", "col"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_every_layout_and_c_dtype_is_checked_against_float64(c_dtype, c_layout, beta):
    rng = np.random.default_rng(7)
    problem = _problem(c_dtype, beta, rng)
    stored = {"fp32": np.float32, "fp16": np.float16, "bf16": np.uint16}[c_dtype]
    poisoned, second = problem.fresh_output(c_layout), problem.sentinel_output(c_layout)
    assert poisoned.dtype == stored and poisoned.shape == ((5, 7) if c_layout == "row" else (7, 5))
    for c in (poisoned, second):
        _fake_kernel(problem, c, c_layout)
    check = verify(poisoned, second if beta == 0 else None, problem, tolerance("fp32", c_dtype), layout=c_layout)
    assert check.passed, check.describe()
    # read back in the other layout, the same memory is wrong (C is not symmetric): the check can fail
    other = "col" if c_layout == "row" else "row"
    flipped = np.ascontiguousarray(poisoned.reshape(poisoned.shape[::-1]))
    if beta != 0:
        assert not verify(flipped, None, problem, tolerance("fp32", c_dtype), layout=other).passed


@pytest.mark.parametrize("c_dtype", ["fp32", "fp16", "bf16"])
def test_unwritten_elements_are_found_in_every_c_dtype(c_dtype):
    problem = _problem(c_dtype, 0.0, np.random.default_rng(3))
    poisoned, second = problem.fresh_output("col"), problem.sentinel_output("col")
    assert logical_c(second, c_dtype, "col")[0, 0] == np.float32(sentinel(c_dtype))  # stored exactly
    for c in (poisoned, second):
        _fake_kernel(problem, c, "col")
        c[2, :] = store_c(np.full((1, 5), sentinel(c_dtype), np.float32), c_dtype, "row")  # column 2 skipped
    check = verify(poisoned, second, problem, tolerance("fp32", c_dtype), layout="col")
    assert check.unwritten == 5 and check.first_bad == (0, 2)


def test_the_tolerance_follows_the_output_type():
    assert tolerance("fp32") == 1e-4 and tolerance("fp16", "fp16") > tolerance("fp16") > tolerance("fp32")
    assert tolerance("bf16", "bf16") > tolerance("fp16", "fp16")


def test_a_spec_with_its_own_abi_loads(tmp_path):
    (tmp_path / "k.cu").write_text("")
    (tmp_path / "k.yaml").write_text("file: k.cu\nentry: k\ngrid: [1]\nblock: [1]\nlayout: {A: col, B: col, C: col}\n"
                                     "args: [M, N, K, alpha, A, lda, B, ldb, beta, C, ldc]\nc_dtype: fp16\n")
    s = specmod.load_spec(tmp_path / "k.yaml")
    assert [a.name for a in s.abi.args][5] == "lda" and s.abi.c_dtype == "fp16" and s.layout["C"] == "col"


def test_leading_dimensions_above_the_packed_ones():
    a = parse(args=["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"],
              ld={"lda": "M + 4", "ldc": "M + BM"})
    layout = {"A": "col", "B": "col", "C": "col"}
    assert a.leading(SHAPE, layout, {"BM": 8}) == {"lda": 9, "ldb": 3, "ldc": 13}
    with pytest.raises(SpecError, match=r"ld.ldc: M \+ BM is 3 at 5x7x3, below the packed 5"):
        a.leading(SHAPE, layout, {"BM": -2})
    with pytest.raises(SpecError, match=r"ld.ldd: unknown key \(did you mean ldd?"):
        parse(args=["A", "B", "C", "lda"], ld={"ldd": "M"})
    with pytest.raises(SpecError, match="ld.ldb: the kernel takes no ldb"):
        parse(args=["A", "B", "C", "lda"], ld={"ldb": "K"})


@pytest.mark.parametrize("c_dtype", ["fp32", "fp16", "bf16"])
def test_padded_operands_and_c_are_checked_on_their_logical_part(c_dtype):
    problem = _problem(c_dtype, 0.5, np.random.default_rng(5))
    a = problem.operand("A", "col", 9)
    assert a.shape == (3, 9) and np.isnan(a[:, 5:]).all() and (a[:, :5] == problem.A.T).all()
    assert problem.operand("A", "col", 5) is problem.operand("A", "col")  # packed: the same array as before
    c = problem.fresh_output("col", 8)
    assert c.shape == (7, 8)
    _fake_kernel(problem, c[:, :5], "col")  # a kernel honouring ldc writes the first M of each stored column
    assert verify(c, None, problem, tolerance("fp32", c_dtype), layout="col").passed
    wrong = problem.fresh_output("col", 8)
    _fake_kernel(problem, wrong.reshape(-1)[:35].reshape(7, 5), "col")  # a kernel that took ldc = M writes here
    check = verify(wrong, None, problem, tolerance("fp32", c_dtype), layout="col")
    assert not check.passed and check.wrong > 0
