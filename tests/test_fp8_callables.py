"""fp8 callables and the cuBLASLt fp8 baseline without a GPU: the torch tensors an fp8 callable gets (float8 views,
B column-major, the scales' views), the two examples' contract (scale_a/scale_b, the modes they declare), the
cuBLASLt rows beside fp8 variants and the notes where there is none, torch._scaled_mm's call, a child's --scales,
the run table's tolerance and fp8 note, and results files carrying the scale mode; on the GPU (marker gpu), both
examples verified beside cuBLASLt."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from clitools import invoke
from context import needs_gpu

from gemmprof.catalog import baselines
from gemmprof.measure import arrays as arrays_mod
from gemmprof.measure import callables, python_jobs
from gemmprof.measure.child import ChildRun
from gemmprof.measure.problem import fp8_problem
from gemmprof.render.run_tables import run_table
from gemmprof.results.run import RunResult, VariantResult, cublaslt_fp8_name
from gemmprof.results.shape import GemmShape
from gemmprof.results.stages import Verification

ROOT = Path(__file__).resolve().parents[1]
TRITON = f"{ROOT}/examples/triton_fp8/triton_fp8.py:matmul"
TORCH = f"{ROOT}/examples/torch_scaled_mm/torch_scaled_mm.py:matmul"


class _Tensor:
    """Just enough of a torch tensor over a NumPy array: views, transposes, shapes."""

    def __init__(self, array, dtype=None):
        self.array, self.dtype = array, dtype or str(array.dtype)

    def data_ptr(self):
        return self.array.__array_interface__["data"][0]

    def view(self, dtype):
        return _Tensor(self.array, dtype)

    def t(self):
        return _Tensor(self.array.T, self.dtype)

    def dim(self):
        return self.array.ndim

    @property
    def shape(self):
        return self.array.shape

    def reshape(self, shape):
        return _Tensor(self.array.reshape(shape), self.dtype)


def _fake_torch():
    return types.SimpleNamespace(from_dlpack=lambda a: _Tensor(a), float8_e4m3fn="float8_e4m3fn",
                                 float8_e5m2="float8_e5m2", bfloat16="bfloat16")


@pytest.mark.parametrize("mode", ["tensor", "1x128"])
def test_torch_arrays_give_float8_views_b_column_major_and_the_scales(monkeypatch, mode):
    monkeypatch.setattr(arrays_mod, "_pointer", lambda a: a.__array_interface__["data"][0])
    problem = fp8_problem(GemmShape(256, 384, 512), "e4m3", 1.0, 0.0, 1, "bf16", mode)
    adapter = arrays_mod.TorchArrays(_fake_torch())
    A, B = adapter.operands(problem)
    assert (A.dtype, B.dtype) == ("float8_e4m3fn", "float8_e4m3fn") and adapter.note == ""  # shared, not copied
    assert A.shape == (256, 512) and B.shape == (512, 384) and B.array.strides == (1, 512)  # K x N, column-major
    assert np.array_equal(B.array, problem.B)
    scales = adapter.scales(problem)
    if mode == "tensor":
        assert scales["scale_a"].shape == scales["scale_b"].shape == (1,)
    else:  # A's M x K/128 with stride (1, M) and B's K/128 x N/128 with stride (1, K/128), in float32 bytes
        assert scales["scale_a"].shape == (256, 4) and scales["scale_a"].array.strides == (4, 4 * 256)
        assert scales["scale_b"].shape == (4, 3) and scales["scale_b"].array.strides == (4, 4 * 4)
    # CuPy arrays the same way (uint8 bit patterns), with the note saying so
    cp = arrays_mod.CupyArrays()
    a, b = cp.operands(problem)
    assert a.dtype == np.uint8 and b.shape == (512, 384) and b.strides == (1, 512)
    assert set(cp.scales(problem)) == {"scale_a", "scale_b"}
    assert "uint8 arrays of e4m3 bit patterns; C is a uint16 array" in arrays_mod.bf16_note("e4m3", "bf16")


def _stub_torch_and_triton(monkeypatch):
    """Modules named torch and triton with what the examples touch at import (their decorators and dtypes)."""
    torch = types.ModuleType("torch")
    torch.Tensor = _Tensor
    triton = types.ModuleType("triton")
    triton.jit = lambda fn=None, **kw: fn if fn is not None else (lambda f: f)
    triton.cdiv = lambda a, b: -(-a // b)
    language = types.ModuleType("triton.language")
    language.constexpr = int
    language.float32 = "float32"
    triton.language = language
    for name, module in (("torch", torch), ("triton", triton), ("triton.language", language)):
        monkeypatch.setitem(sys.modules, name, module)


@pytest.mark.parametrize("ref, modes", [(TRITON, ("tensor", "1x128", "128x128")), (TORCH, ("tensor", "1x128"))])
def test_the_examples_take_the_scales_and_declare_their_modes(monkeypatch, ref, modes):
    _stub_torch_and_triton(monkeypatch)
    loaded = callables.load(callables.parse_ref(ref), scales="tensor")
    assert loaded.fn.gemmprof_scales == modes
    callables.check_arity(loaded.fn, "x", fp8=True)
    for mode in ("tensor", "1x128", "128x128"):
        if mode in modes:
            callables.check_scales_taken(loaded.fn, "x", mode)
        else:
            with pytest.raises(callables.CallableError, match=f"takes --scales tensor, 1x128 .*not {mode}"):
                callables.check_scales_taken(loaded.fn, "x", mode)


def test_the_torch_example_refuses_128x128_in_one_line(runner, monkeypatch):
    _stub_torch_and_triton(monkeypatch)
    res = invoke(runner, ["run", "--callable", TORCH, "--dtype", "e4m3", "--scales", "128x128", "--size", "256"])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert "takes --scales tensor, 1x128 (gemmprof_scales), not 128x128" in res.output


# the cuBLASLt fp8 rows ---------------------------------------------------------------------------------------------
SQUARE = GemmShape(4096, 4096, 4096)


def _jobs(monkeypatch, kernels=(), py=(), shape=SQUARE, scales="tensor", torch=True):
    notes = []
    monkeypatch.setattr(baselines, "torch_installed", lambda: torch)
    monkeypatch.setattr(arrays_mod, "adapter", lambda kind: types.SimpleNamespace(kind=kind))
    jobs = python_jobs.fp8_baseline_jobs(list(kernels), list(py), True, notes.append, shape, scales)
    return [(item[0].name, item[0].title, item[0].c_dtype, item[1]) for _, item in jobs], notes


def _kernel(dtype, c_dtype):
    return types.SimpleNamespace(run_dtype=dtype, run_c_dtype=c_dtype)


def test_a_cublaslt_row_for_each_fp8_input_and_c_dtype(monkeypatch):
    call = callables.PyCallable(name="mine.gemm", title="", fn=print, c_dtype="fp32")
    rows, notes = _jobs(monkeypatch, [_kernel("e4m3", "bf16"), _kernel("e4m3", "bf16"), _kernel("fp16", "fp32")],
                        [("callable", (call, "e4m3", None))])
    assert [(n, c, d) for n, _, c, d in rows] == [("cublaslt_e4m3_cbf16", "bf16", "e4m3"),
                                                  ("cublaslt_e4m3_cbf16_fastacc", "bf16", "e4m3"),
                                                  ("cublaslt_e4m3_cfp32", "fp32", "e4m3"),
                                                  ("cublaslt_e4m3_cfp32_fastacc", "fp32", "e4m3")]
    assert "torch._scaled_mm" in rows[0][1] and "per-tensor scales" in rows[0][1] and notes == []
    assert "use_fast_accum=False" in rows[0][1] and "use_fast_accum=True" in rows[1][1]
    rows, _ = _jobs(monkeypatch, [_kernel("e4m3", "bf16")], scales="1x128")
    assert [r[0] for r in rows] == ["cublaslt_e4m3_cbf16_1x128"] and "A 1x128, B 128x128" in rows[0][1]
    rows, _ = _jobs(monkeypatch, [_kernel("e4m3", "bf16")], scales="128x128")
    assert "cuBLASLt takes no 128x128 pair" in rows[0][1]


@pytest.mark.parametrize("kernel, shape, torch, said", [
    (_kernel("e4m3", "bf16"), GemmShape(4096, 4096, 4096), False, "torch is not installed"),
    (_kernel("e5m2", "bf16"), GemmShape(4096, 4096, 4096), True, "cuBLASLt has no e5m2 x e5m2 GEMM"),
    (_kernel("e4m3", "bf16"), GemmShape(4095, 4097, 1024), True, "multiples of 16 (M = 4095, N = 4097)"),
])
def test_no_cublaslt_row_says_why(monkeypatch, kernel, shape, torch, said):
    rows, notes = _jobs(monkeypatch, [kernel], shape=shape, torch=torch)
    assert rows == [] and len(notes) == 1 and said in notes[0], notes


def test_no_fp8_variant_no_cublaslt_row(monkeypatch):
    assert _jobs(monkeypatch, [_kernel("fp16", "fp32")]) == ([], [])


def test_torch_scaled_mm_writes_c_in_one_gemm_with_the_scales_as_given(monkeypatch):
    calls = []

    def scaled_mm(a, b, sa, sb, out_dtype=None, out=None):
        calls.append((a, b, sa.shape, sb.shape, out_dtype, out))
        return out

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(_scaled_mm=scaled_mm))
    A, B = _Tensor(np.zeros((256, 512), np.uint8)), _Tensor(np.zeros((384, 512), np.uint8)).t()
    C = _Tensor(np.zeros((256, 384), np.uint16), "bfloat16")
    baselines.torch_scaled_mm(A, B, C, 1.0, 0.0, scale_a=_Tensor(np.ones(1, np.float32)),
                              scale_b=_Tensor(np.ones(1, np.float32)))
    assert calls[-1] == (A, B, (), (), "bfloat16", C)  # per tensor: one-element scales, out=C in C's dtype
    sa = _Tensor(np.ones((4, 256), np.float32)).t()
    sb = _Tensor(np.ones((3, 4), np.float32)).t()
    baselines.torch_scaled_mm(A, B, C, 1.0, 0.0, scale_a=sa, scale_b=sb)
    assert calls[-1][2:4] == ((256, 4), (4, 3))  # 1x128 x 128x128: handed through as torch takes them
    seen = {}

    def fast(a, b, sa, sb, out_dtype=None, out=None, use_fast_accum=False):
        seen["fast"] = use_fast_accum

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(_scaled_mm=fast))
    baselines.torch_scaled_mm(A, B, C, 1.0, 0.0, scale_a=_Tensor(np.ones(1, np.float32)),
                              scale_b=_Tensor(np.ones(1, np.float32)), fast_accum=True)
    assert seen == {"fast": True}


# a child, the table, the results file --------------------------------------------------------------------------------
def test_a_child_gets_the_scales():
    argv = ChildRun(("h14",), GemmShape(256, 256, 256), scales="1x128").argv()
    assert argv[argv.index("--scales") + 1] == "1x128"
    assert "--scales" not in ChildRun(("h14",), GemmShape(256, 256, 256)).argv()


def _row(name, kind, ms, c_dtype="bf16", scales="1x128", tol=8e-2):
    from gemmprof.results.run import Measurement, ModelFigures

    return VariantResult(id="h14" if kind == "ladder" else "cuBLAS", name=name, title="", dtype="e4m3", kind=kind,
                         c_dtype=c_dtype, scales=scales, verification=Verification(2e-3, tol, 0, 0, 0, None),
                         timing=Measurement([ms] * 10), model=ModelFigures(2 * 4096 ** 3, 1.0, None,
                                                                           "fp8_tensor_fp32_acc", 1.9789e15))


def test_pct_cublas_is_against_cublaslt_of_the_same_c_and_scales_and_the_table_says_the_tolerance():
    run = RunResult(GemmShape(4096, 4096, 4096), 1.0, 0.0, {"name": "H200"}, "h200", 1, {},
                    [_row("cublaslt_e4m3_cbf16", "baseline", 0.2, scales="tensor"),
                     _row("cublaslt_e4m3_cbf16_1x128", "baseline", 0.1),
                     _row("fp8_scaled_1x128", "ladder", 0.125)])
    table = run_table(run)
    rows = {r["name"]: r for r in table.rows}
    assert rows["fp8_scaled_1x128"]["pct_cublas"] == pytest.approx(80.0)  # against the 1x128 row, not tensor's
    assert rows["fp8_scaled_1x128"]["tolerance"] == 8e-2 and rows["cublaslt_e4m3_cbf16"]["compiler"] == "cuBLASLt"
    assert any("e4m3 with 1x128 scales" in n and "e4m3 with tensor scales" in n for n in table.notes)
    back = RunResult.from_dict(json.loads(json.dumps(run.to_dict())))
    assert [v.scales for v in back.variants] == ["tensor", "1x128", "1x128"]


def test_a_results_file_with_an_unknown_scale_mode_is_one_error():
    from gemmprof.errors import InputError

    d = _row("x", "ladder", 0.1).to_dict()
    d["scales"] = "rows"
    with pytest.raises(InputError, match="scales: expected tensor, 1x128, 128x128"):
        VariantResult.from_dict(d, "variants[0]")


# on the GPU -----------------------------------------------------------------------------------------------------
@needs_gpu
@pytest.mark.parametrize("ref, mode", [(TRITON, "tensor"), (TRITON, "1x128"), (TRITON, "128x128"), (TORCH, "tensor"),
                                       (TORCH, "1x128")])
@pytest.mark.parametrize("arrays", ["cupy", "torch"])
def test_the_fp8_examples_verify_beside_cublaslt(runner, tmp_path, ref, mode, arrays):
    pytest.importorskip("torch")
    if ref == TRITON:
        pytest.importorskip("triton")
    out = tmp_path / "r.json"
    res = invoke(runner, ["run", "--callable", ref, "--dtype", "e4m3", "--scales", mode, "-m", "1024", "-n", "768",
                          "-k", "512", "--arrays", arrays, "--budget", "0.05", "-o", str(out)])
    rows = {v["name"]: v for v in json.loads(out.read_text())["variants"]}
    mine = rows[callables.parse_ref(ref).name]
    assert mine["status"] == "ok" and mine["rel_error"] < 5e-3, (res.output, mine)
    base = rows[cublaslt_fp8_name("e4m3", "bf16", mode)]
    assert base["status"] == "ok" and base["kind"] == "baseline", base
