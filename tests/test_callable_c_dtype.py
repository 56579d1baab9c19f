"""A callable's C dtype (`--c-dtype fp16|bf16`, `bench(c_dtype=...)`): the option's refusal, the C array the function
receives, the tolerance, the baselines of the same input and output types, % cuBLAS, and the child processes'
arguments; on the NumPy stand-in for CuPy (no GPU, no torch), and the torch example on the GPU."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest
from clitools import invoke
from context import needs_gpu
from test_callables import GOOD, _file, _run, ranges  # noqa: F401 - ranges is a fixture
from test_ncu_parse import with_nvtx
from test_nsys_cli import fake_nsys  # noqa: F401 - a fixture
from test_profile_cmd import DETAILS, fake_ncu  # noqa: F401 - a fixture

import gemmprof
from gemmprof.catalog import baselines
from gemmprof.errors import InputError
from gemmprof.measure import arrays as arrays_mod
from gemmprof.measure import callables, python_jobs
from gemmprof.results.run import RunResult, VariantResult, load_run

ROOT = Path(__file__).resolve().parents[1]

# the product rounded to fp16, as torch.matmul on fp16 inputs returns it, written into whatever C is given
HALF_PRODUCT = '''
def gemm(A, B, C, alpha, beta):
    C[...] = (alpha * (A.astype("float32") @ B.astype("float32"))).astype("float16")
'''
# the product in bf16, written as bit patterns into a CuPy-style bf16 C (uint16)
BF16_C = '''
from gemmprof.measure.problem import from_bf16_bits, to_bf16_bits
SEEN = []

def gemm(A, B, C, alpha, beta):
    SEEN.append((str(C.dtype), C.shape))
    a = from_bf16_bits(A) if str(A.dtype) == "uint16" else A.astype("float32")
    b = from_bf16_bits(B) if str(B.dtype) == "uint16" else B.astype("float32")
    C[...] = to_bf16_bits(alpha * (a @ b))
'''


# the option ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["run", "1"], ["profile", "1"], ["compare-nsys", "1"]])
def test_c_dtype_without_a_callable_is_refused_in_one_line(runner, command):
    res = invoke(runner, [*command, "--c-dtype", "fp16", "--size", "64"])
    assert res.exit_code == 2 and "--c-dtype fp16: only for --callable functions" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_c_dtype_takes_only_the_three_types(runner, tmp_path):
    res = invoke(runner, ["run", "--callable", f"{_file(tmp_path, GOOD)}:gemm", "--c-dtype", "fp8"])
    assert res.exit_code == 2 and "--c-dtype" in res.output and "'fp8' is not one of" in res.output


# what the callable gets, and how it is checked (the real runner on the NumPy stand-in) ---------------------------
def test_a_half_product_fails_fp32_c_and_passes_as_fp16_c(tmp_path, runner, ranges):  # noqa: F811
    """The H100's torch-example failure, on the stand-in: a product rounded to fp16 in fp32 C has elements off by
    more than an fp32 C may be; declared as fp16 C it is checked as one (this seed has such an element)."""
    path, out = _file(tmp_path, HALF_PRODUCT, "half.py"), tmp_path / "r.json"
    args = ["run", "--callable", f"{path}:gemm", "--dtype", "fp16", "--seed", "1", "-m", "256", "-n", "192", "-k",
            "128", "--no-cublas", "--budget", "0.01", "-o", str(out)]
    res = invoke(runner, args)
    (row,) = load_run(out).variants
    assert res.exit_code == 1 and row.status == "FAIL" and "wrong values" in row.message
    assert (row.c_dtype, row.verification.tolerance) == ("fp32", 2e-3)
    res = invoke(runner, [*args, "--c-dtype", "fp16"])
    (row,) = load_run(out).variants  # saved and loaded back
    assert res.exit_code == 0 and row.status == "ok", row.message
    assert (row.c_dtype, row.verification.tolerance, row.verification.wrong) == ("fp16", 1e-2, 0)


def test_an_fp16_c_still_catches_a_wrong_value(tmp_path, runner, ranges):  # noqa: F811
    path = _file(tmp_path, "def gemm(A, B, C, alpha, beta):\n    C[:] = A @ B\n    C[3, 5] += 1\n", "wrong.py")
    res, saved = _run(runner, tmp_path, "--callable", f"{path}:gemm", "--dtype", "fp16", "--c-dtype", "fp16")
    assert res.exit_code == 1 and saved.variants[0].status == "FAIL" and "1 wrong values" in saved.variants[0].message


@pytest.mark.parametrize("dtype, note", [("bf16", "A, B and C are uint16 arrays"), ("fp16", "C is a uint16 array")])
def test_a_bf16_c_comes_as_bit_patterns_and_is_checked_as_bf16(tmp_path, runner, ranges, dtype, note):  # noqa: F811
    path = _file(tmp_path, BF16_C, f"bf16c_{dtype}.py")
    res, saved = _run(runner, tmp_path, "--callable", f"{path}:gemm", "--dtype", dtype, "--c-dtype", "bf16")
    (row,) = saved.variants
    assert res.exit_code == 0 and row.status == "ok", row.message
    assert (row.c_dtype, row.verification.tolerance) == ("bf16", 8e-2) and note in row.message
    module = sys.modules[next(n for n in sys.modules if n.startswith("gemmprof_callable_") and f"bf16c_{dtype}" in n)]
    assert set(module.SEEN) == {("uint16", (64, 48))}  # poisoned, sentinel and timed calls alike


def test_bench_takes_c_dtype_and_warmup(ranges):  # noqa: F811
    seen = []

    def gemm(A, B, C, alpha, beta):
        seen.append(C.dtype)
        C[...] = alpha * (A.astype(np.float32) @ B.astype(np.float32)) + beta * C

    result = gemmprof.bench(gemm, m=32, n=16, k=8, dtype="fp16", c_dtype="fp16", beta=0.5, baselines=False,
                            budget_s=0.01, warmup=7)
    (row,) = result.variants
    assert (row.status, row.c_dtype, row.verification.tolerance) == ("ok", "fp16", 1e-2)
    assert set(seen) == {np.dtype(np.float16)} and result.timing_method["warmup"] == 7
    assert "c_dtype='fp16'" in result.command
    for bad, said in (({"c_dtype": "fp8"}, "bench: c_dtype 'fp8'"), ({"warmup": -1}, "bench: warmup -1")):
        with pytest.raises(InputError, match=said):
            gemmprof.bench(gemm, m=8, n=8, k=8, **bad)


# baselines and % cuBLAS ------------------------------------------------------------------------------------------
def _jobs(monkeypatch, dtype, c_dtype, torch=True):
    notes = []
    monkeypatch.setattr(baselines, "torch_installed", lambda: torch)
    monkeypatch.setattr(arrays_mod, "adapter", lambda kind: types.SimpleNamespace(kind=kind))
    call = callables.PyCallable("f", "", fn=print, c_dtype=c_dtype)
    jobs = python_jobs.baseline_jobs([("callable", (call, dtype, arrays_mod.CupyArrays()))], True, notes.append)
    return jobs, notes


@pytest.mark.parametrize("dtype, c_dtype, cublas, torch_name, torch_out", [
    ("fp16", "fp32", ["cublas_hgemm"], "torch_matmul", "fp16 in, fp32 out"),
    ("fp16", "fp16", ["cublas_hgemm", "cublas_hgemm_cfp16"], "torch_matmul_cfp16", "(fp16 out)"),
    ("bf16", "bf16", ["cublas_bf16", "cublas_bf16_cbf16"], "torch_matmul_cbf16", "(bf16 out)"),
    ("fp32", "fp32", ["cublas_sgemm", "cublas_tf32"], "torch_matmul", "(fp32 out)"),
])
def test_baselines_write_the_callables_c(monkeypatch, dtype, c_dtype, cublas, torch_name, torch_out):
    jobs, notes = _jobs(monkeypatch, dtype, c_dtype)
    assert [b.name for kind, b in jobs if kind == "baseline"] == cublas and notes == []
    assert all(b.c_dtype in ("fp32", c_dtype) for kind, b in jobs if kind == "baseline")
    ((kind, (row, row_dtype, adapter)),) = [j for j in jobs if j[0] == "callable"]
    assert (row.name, row.c_dtype, row_dtype, adapter.kind) == (torch_name, c_dtype, dtype, "torch")
    assert torch_out in row.title


@pytest.mark.parametrize("dtype, c_dtype", [("fp32", "fp16"), ("bf16", "fp16")])
def test_no_torch_row_where_torch_mm_cannot_write_that_c(monkeypatch, dtype, c_dtype):
    jobs, notes = _jobs(monkeypatch, dtype, c_dtype)
    assert [j for j in jobs if j[0] == "callable"] == [] and "torch.mm writes fp16 C only from fp16" in notes[0]
    assert all(b.c_dtype == "fp32" for _, b in jobs)  # cuBLAS has no GEMM into that C either


def test_pct_cublas_is_against_the_cublas_row_of_the_same_c():
    from gemmprof.model.traffic import GemmShape
    from gemmprof.render.run_tables import run_table
    from gemmprof.results.stages import Measurement, ModelFigures

    def row(name, kind, c_dtype, ms):
        return VariantResult(id="x", name=name, title="", dtype="fp16", kind=kind, c_dtype=c_dtype,
                             timing=Measurement((ms,) * 10), model=ModelFigures(2 * 4096 ** 3, 1.0))

    result = RunResult(GemmShape(4096, 4096, 4096), 1.0, 0.0, {}, "h100_sxm", 1, {}, [
        row("cublas_hgemm", "baseline", "fp32", 0.25), row("cublas_hgemm_cfp16", "baseline", "fp16", 0.2),
        row("torch_matmul.matmul", "callable", "fp16", 0.2)])
    pct = {r["name"]: r["pct_cublas"] for r in run_table(result).rows}
    assert pct["torch_matmul.matmul"] == pytest.approx(100.0)  # not 125% of the fp32-C row


# the torch side, with a stand-in torch --------------------------------------------------------------------------
def test_torch_arrays_give_c_in_its_dtype(monkeypatch):
    from test_callables import _fake_torch

    monkeypatch.setattr(arrays_mod, "_pointer", lambda a: a.ctypes.data)
    torch, _ = _fake_torch(shares=True)
    adapter = arrays_mod.TorchArrays(torch)
    assert adapter.output(np.zeros((4, 3), dtype=np.uint16), "bf16")[0].dtype == "bfloat16"
    assert adapter.output(np.zeros((4, 3), dtype=np.float16), "fp16")[0].dtype == "float16"
    assert adapter.output(np.zeros((4, 3), dtype=np.float32))[0].dtype == "float32"


@pytest.mark.parametrize("a, c, out_dtype", [("float16", "float16", None), ("bfloat16", "bfloat16", None),
                                             ("float16", "float32", "float32"), ("float32", "float32", None)])
def test_torch_matmul_writes_c_in_its_own_dtype_in_one_gemm(monkeypatch, a, c, out_dtype):
    calls = []
    fake = types.SimpleNamespace(mm=lambda A, B, out=None, **kw: calls.append(kw.get("out_dtype")))
    monkeypatch.setitem(sys.modules, "torch", fake)
    baselines.torch_matmul(types.SimpleNamespace(dtype=a), None, types.SimpleNamespace(dtype=c), 1.0, 0.0)
    assert calls == [out_dtype]


# child processes --------------------------------------------------------------------------------------------------
def test_a_child_gets_the_c_dtype():
    mine = callables.PyCallable("a.fn", "", fn=print, ref="x/a.py:fn", c_dtype="bf16")
    rest = [("callable", (python_jobs.torch_baseline("bf16"), "bf16", types.SimpleNamespace(kind="torch"))),
            ("callable", (mine, "bf16", types.SimpleNamespace(kind="cupy")))]
    left, args = python_jobs.child_selectors(rest)
    assert [c.name for c, _, _ in left] == ["a.fn"] and args == ["--callable", "x/a.py:fn", "--c-dtype", "bf16"]
    fp32 = callables.PyCallable("a.fn", "", fn=print, ref="x/a.py:fn")
    assert python_jobs.child_selectors([("callable", (fp32, "fp16", arrays_mod.CupyArrays()))])[1] == \
        ["--callable", "x/a.py:fn"]


def test_after_a_fault_the_child_fills_the_same_c(tmp_path, runner, ranges, monkeypatch):  # noqa: F811
    import gemmprof.commands.run as run_cmd
    import gemmprof.measure.child as child_mod
    import gemmprof.measure.runner as runner_mod
    from gemmprof.model.traffic import GemmShape

    bad = _file(tmp_path, "def gemm(A, B, C, alpha, beta):\n    raise RuntimeError('illegal memory access')\n",
                "fault.py")
    good = _file(tmp_path, GOOD)
    monkeypatch.setattr(runner_mod, "_context_alive", lambda: False)
    seen = []

    def spawn(cmd):
        seen.append(cmd)
        RunResult(GemmShape(64, 48, 32), 1.0, 0.0, {}, "h100_sxm", 1, {}, [VariantResult(
            id="py", name="mine.gemm", title="", dtype="fp16", kind="callable", c_dtype="fp16")]).save(
            cmd[cmd.index("--child-results") + 1])
        return types.SimpleNamespace(returncode=0)

    def finish(context_lost, code):
        sys.exit(code)

    monkeypatch.setattr(child_mod, "spawn", spawn)
    monkeypatch.setattr(run_cmd, "_finish", finish)
    res, saved = _run(runner, tmp_path, "--callable", f"{bad}:gemm", "--callable", f"{good}:gemm", "--dtype", "fp16",
                      "--c-dtype", "fp16")
    assert [(v.name, v.c_dtype) for v in saved.variants] == [("fault.gemm", "fp16"), ("mine.gemm", "fp16")]
    (cmd,) = seen
    assert cmd[cmd.index("--c-dtype") + 1] == "fp16" and cmd[cmd.index("--dtype") + 1] == "fp16"


def test_profile_passes_the_c_dtype_and_profiles_the_same_c_baselines(fake_ncu, runner, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(baselines, "torch_installed", lambda: True)
    path = _file(tmp_path, GOOD)
    fake_ncu.prints(with_nvtx(DETAILS.read_text(), {0: "gemmprof mine.gemm 1024x1024x1024",
                                                    1: "gemmprof cublas_hgemm_cfp16 1024x1024x1024"}))
    r = invoke(runner, ["profile", "--callable", f"{path}:gemm", "--dtype", "fp16", "--c-dtype", "fp16", "--cublas",
                        "--size", "1024", "--format", "json"])
    assert r.exit_code == 0, r.output
    [argv] = fake_ncu.calls()
    includes = {argv[i + 1].split()[1] for i, a in enumerate(argv) if a == "--nvtx-include"}
    assert includes == {"mine.gemm", "cublas_hgemm", "cublas_hgemm_cfp16", "torch_matmul_cfp16"}
    child = argv[argv.index(sys.executable):]
    assert child[child.index("--c-dtype") + 1] == "fp16" and "--no-cublas" not in child


def test_compare_nsys_passes_the_c_dtype(fake_nsys, runner, tmp_path):  # noqa: F811
    path = _file(tmp_path, GOOD)
    invoke(runner, ["compare-nsys", "--callable", f"{path}:gemm", "--dtype", "bf16", "--c-dtype", "bf16",
                    "--size", "1024", "--format", "json"])
    profile = next(args for args in fake_nsys() if args[0] == "profile")
    child = profile[profile.index("gemmprof") + 1:]
    assert child[child.index("--c-dtype") + 1] == "bf16" and child[child.index("--dtype") + 1] == "bf16", child


# on the GPU -------------------------------------------------------------------------------------------------------
@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_the_torch_example_passes_writing_half_c(tmp_path, runner, dtype):
    pytest.importorskip("torch")
    example = f"{ROOT}/examples/torch_matmul/torch_matmul.py:matmul"
    out = tmp_path / "r.json"
    res = invoke(runner, ["run", "--callable", example, "-m", "1000", "-n", "1030", "-k", "520", "--dtype", dtype,
                          "--c-dtype", dtype, "--budget", "0.05", "-o", str(out)])
    assert res.exit_code == 0, res.output
    run = load_run(out)
    cublas = {"fp16": "cublas_hgemm", "bf16": "cublas_bf16"}[dtype]
    assert {v.name: (v.status, v.c_dtype) for v in run.variants} == {
        cublas: ("ok", "fp32"), f"{cublas}_c{dtype}": ("ok", dtype), f"torch_matmul_c{dtype}": ("ok", dtype),
        "torch_matmul.matmul": ("ok", dtype)}
    row = next(v for v in run.variants if v.name == "torch_matmul.matmul")
    assert run.baseline_for(row.dtype, row.c_dtype).name == f"{cublas}_c{dtype}"
    res = invoke(runner, ["run", "--callable", example, "--size", "256", "--dtype", dtype, "--no-cublas",
                          "--budget", "0.01", "-o", str(out)])  # fp32 C: the example says what to do
    assert res.exit_code == 1 and "run with --c-dtype of --dtype" in load_run(out).variants[0].message


@needs_gpu
def test_torch_matmul_verifies_for_every_c_it_writes():
    pytest.importorskip("torch")
    for dtype, c_dtype in (("fp16", "fp16"), ("bf16", "bf16"), ("fp16", "fp32")):
        for beta in (0.0, 0.5):
            result = gemmprof.bench(baselines.torch_matmul, m=300, n=200, k=100, dtype=dtype, c_dtype=c_dtype,
                                    arrays="torch", baselines=False, budget_s=0.02, beta=beta)
            (row,) = result.variants
            assert row.status == "ok" and row.c_dtype == c_dtype, (dtype, c_dtype, beta, row.message)


# C's dtype inferred by gemmprof.bench (no c_dtype given) -----------------------------------------------------------
def _attempts(**outcomes):
    """A stand-in for one call over each C: the Attempt per C dtype, and the C dtypes tried, in order."""
    tried = []

    def attempt(c):
        tried.append(c)
        return outcomes[c]

    return attempt, tried


@pytest.mark.parametrize("first, second, want, said, tries", [
    (callables.Attempt("ok"), None, "fp32", "C: fp32, inferred", ["fp32"]),
    (callables.Attempt("raised", "TypeError: C is float32"), callables.Attempt("ok"), "fp16",
     "C: fp16, inferred (over fp32 C it raised TypeError: C is float32", ["fp32", "fp16"]),
    (callables.Attempt("wrong", "3 wrong values", half_values=True), callables.Attempt("ok"), "fp16",
     "it wrote only fp16 numbers into fp32 C", ["fp32", "fp16"]),
    (callables.Attempt("wrong", "3 wrong values", half_values=False), None, "fp32",
     "not inferred (its fp32 C was wrong (3 wrong values)", ["fp32"]),
    (callables.Attempt("raised", "ValueError: bad"), callables.Attempt("raised", "ValueError: bad"), "fp32",
     "not inferred (over fp32 C it raised ValueError: bad", ["fp32", "fp16"]),
    (callables.Attempt("unwritten", "it returned a float16 array and left C unwritten"), None, "fp32",
     "it returned a float16 array", ["fp32"]),
])
def test_choose_c_dtype_decides_from_what_the_calls_did(first, second, want, said, tries):
    attempt, tried = _attempts(fp32=first, fp16=second)
    c_dtype, why = callables.choose_c_dtype("fp16", attempt)
    assert (c_dtype, tried) == (want, tries) and said in why, why


def test_fp32_inputs_take_fp32_c_without_a_trial():
    attempt, tried = _attempts()
    assert callables.choose_c_dtype("fp32", attempt) == ("fp32", "") and tried == []


TORCH_LIKE = '''
import numpy as np

def gemm(A, B, C, alpha, beta):
    """Like torch.matmul(A, B, out=C): the inputs' dtype or an error."""
    if C.dtype != A.dtype:
        raise TypeError(f"expected out to have dtype {A.dtype}, got {C.dtype}")
    C[...] = (alpha * (A.astype(np.float32) @ B.astype(np.float32))).astype(C.dtype)
'''
RETURNS = '''
def gemm(A, B, C, alpha, beta):
    return (A.astype("float32") @ B.astype("float32")).astype("float16")
'''
FP32_C = '''
def gemm(A, B, C, alpha, beta):
    C[...] = alpha * (A.astype("float32") @ B.astype("float32"))
'''


@pytest.mark.parametrize("body, want, status, said", [
    (TORCH_LIKE, "fp16", "ok", "C: fp16, inferred (over fp32 C it raised TypeError: expected out to have dtype"),
    (HALF_PRODUCT, "fp16", "ok", "C: fp16, inferred (it wrote only fp16 numbers into fp32 C"),
    (FP32_C, "fp32", "ok", "C: fp32, inferred (it filled fp32 C from fp16 inputs)"),
    (RETURNS, "fp32", "FAIL", "C: fp32, not inferred (it returned a float16 array and left C unwritten"),
])
def test_bench_infers_c_from_what_the_function_writes(tmp_path, ranges, body, want, status, said):  # noqa: F811
    fn = callables.load(callables.parse_ref(f"{_file(tmp_path, body, f'infer_{want}_{status}.py')}:gemm")).fn
    result = gemmprof.bench(fn, m=256, n=192, k=128, dtype="fp16", seed=1, baselines=False, budget_s=0.01)
    (row,) = result.variants
    assert (row.c_dtype, row.status) == (want, status), row.message
    assert row.message.startswith(said), row.message
    assert f"c_dtype={want!r}" in result.command or want == "fp32"
    if status == "ok":
        assert row.verification.tolerance == (1e-2 if want == "fp16" else 2e-3)


def test_bench_with_c_dtype_given_tries_nothing(ranges):  # noqa: F811
    calls = []

    def gemm(A, B, C, alpha, beta):
        calls.append(str(C.dtype))
        C[...] = alpha * (A.astype(np.float32) @ B.astype(np.float32))

    (row,) = gemmprof.bench(gemm, m=32, n=16, k=8, dtype="fp16", c_dtype="fp32", baselines=False,
                            budget_s=0.01).variants
    assert row.status == "ok" and "inferred" not in row.message and set(calls) == {"float32"}


@needs_gpu
def test_bench_infers_the_torch_examples_half_c_on_the_gpu():
    """The torch example refuses fp32 C (torch.matmul writes the inputs' dtype): bench takes fp16 C and says why."""
    pytest.importorskip("torch")
    fn = callables.load(callables.parse_ref(str(ROOT / "examples/torch_matmul/torch_matmul.py") + ":matmul")).fn
    (row,) = gemmprof.bench(fn, m=1024, n=1024, k=1024, dtype="fp16", baselines=False, budget_s=0.05).variants
    assert (row.status, row.c_dtype) == ("ok", "fp16"), row.message
    assert row.message.startswith("C: fp16, inferred (over fp32 C it raised TypeError: C is torch.float32")
