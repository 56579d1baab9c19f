"""Python callables (`run --callable FILE.py:function`, `gemmprof.bench`): loading, the arity check, the arrays
adapters, every error path, and whole runs through the real runner on a NumPy stand-in for CuPy (no GPU)."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import numpy_cupy
import pytest
from clitools import invoke
from context import needs_gpu
from test_ncu_parse import with_nvtx
from test_nsys_cli import fake_nsys  # noqa: F401 - a fixture
from test_profile_cmd import DETAILS, fake_ncu  # noqa: F401 - a fixture

from gemmprof.errors import InputError
from gemmprof.measure import arrays as arrays_mod
from gemmprof.measure import callables, python_jobs
from gemmprof.results.run import RunResult, VariantResult, load_run

ROOT = Path(__file__).resolve().parents[1]

GOOD = '''
def gemm(A, B, C, alpha, beta):
    """NumPy GEMM: the reference's own formula, in float32."""
    product = alpha * (A.astype("float32") @ B.astype("float32"))
    C[...] = product if beta == 0 else product + beta * C
'''


def _file(tmp_path, text: str, name: str = "mine.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def ranges(monkeypatch):
    """CuPy replaced by NumPy for this test; the NVTX pushes and pops it saw."""
    seen: list = []
    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy.make(seen))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    return seen


def _run(runner, tmp_path, *args):
    out = tmp_path / "results.json"
    res = invoke(runner, ["run", *args, "-m", "64", "-n", "48", "-k", "32", "--no-cublas", "--budget", "0.01",
                          "-o", str(out)])
    return res, (load_run(out) if out.exists() else None)


# loading and checking -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, said", [
    ("gemm.py", "give FILE.py:function"), ("gemm.py:", "give FILE.py:function"),
    ("gemm.py:1x", "'1x' is not a Python function name"),
])
def test_bad_callable_text(text, said):
    with pytest.raises(callables.CallableError, match=said):
        callables.parse_ref(text)


def test_ref_keeps_colons_in_the_path_and_names_the_variant():
    ref = callables.parse_ref("C:/my dir/tiled-gemm.py:run")
    assert (ref.path, ref.function, ref.name) == ("C:/my dir/tiled-gemm.py", "run", "tiled-gemm.run")


def test_two_callables_with_one_name_are_refused():
    with pytest.raises(callables.CallableError, match="both be named a.fn"):
        callables.refs(["x/a.py:fn", "y/a.py:fn"])  # named before the files are looked for


@pytest.mark.parametrize("body, said", [
    ("def gemm(A, B, C):\n    pass\n", "takes (A, B, C); gemmprof calls fn(A, B, C, alpha, beta)"),
    ("def gemm(A, B, C, alpha, beta, extra):\n    pass\n", "takes (A, B, C, alpha, beta, extra)"),
    ("gemm = 3\n", "a int is not callable"),
    ("def other(A, B, C, alpha, beta):\n    pass\n", "has no function 'gemm' (it defines: other)"),
    ("import gemmprof_no_such_module\n", "raised ModuleNotFoundError: No module named 'gemmprof_no_such_module'"),
    ("def gemm(A, B, C, alpha, beta)\n    pass\n", "line 1: syntax error"),
    ("raise RuntimeError('no GPU here')\n", "raised RuntimeError: no GPU here"),
])
def test_load_errors_name_the_file_and_the_problem(tmp_path, body, said):
    path = _file(tmp_path, body, f"m{abs(hash(body)) % 10**8}.py")
    with pytest.raises(callables.CallableError) as exc:
        callables.load(callables.parse_ref(f"{path}:gemm"))
    assert said in str(exc.value) and f"--callable {path}:gemm" in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(callables.CallableError, match="does not exist"):
        callables.load(callables.parse_ref(f"{tmp_path}/none.py:gemm"))


@pytest.mark.parametrize("fn", [
    lambda A, B, C, alpha, beta: None, lambda A, B, C, alpha=1.0, beta=0.0, *, out=None: None,
    lambda *args: None, lambda A, B, C, *rest: None,
])
def test_arity_accepts_what_binds_five_arguments(fn):
    callables.check_arity(fn, "t")


def test_arity_refuses_keyword_only_arguments():
    with pytest.raises(callables.CallableError, match="five arguments"):
        callables.check_arity(lambda A, B, C, *, alpha, beta: None, "t")


def test_loaded_callable_takes_its_docstring_as_title_and_imports_its_neighbours(tmp_path):
    _file(tmp_path, "SCALE = 1.0\n", "helper_mod_for_gemm.py")
    path = _file(tmp_path, "from helper_mod_for_gemm import SCALE\n" + GOOD, "neighbour.py")
    call = callables.load(callables.parse_ref(f"{path}:gemm"))
    assert (call.name, call.title, call.kind, call.ref) == ("neighbour.gemm", "NumPy GEMM: the reference's own "
                                                            "formula, in float32.", "callable", f"{path}:gemm")


# arrays ---------------------------------------------------------------------------------------------------------
def test_arrays_adapters(monkeypatch):
    assert arrays_mod.adapter("cupy").kind == "cupy"
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(InputError, match="--arrays torch: torch is not installed"):
        arrays_mod.adapter("torch")
    with pytest.raises(InputError, match="--arrays 'jax'"):
        arrays_mod.adapter("jax")


class _Tensor:
    def __init__(self, ptr, dtype="float32"):
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self):
        return self.ptr

    def view(self, dtype):
        return _Tensor(self.ptr, dtype)


def _fake_torch(shares: bool):
    made = []

    def from_dlpack(array):
        return _Tensor(array.ctypes.data if shares else 1, str(array.dtype))

    def empty(shape, dtype, device):
        made.append((shape, dtype, device))
        return _Tensor(1000 + len(made), dtype)

    return types.SimpleNamespace(from_dlpack=from_dlpack, empty=empty, bfloat16="bfloat16", float32="float32",
                                 float16="float16"), made


@pytest.mark.parametrize("shares", [True, False])
def test_torch_tensors_share_memory_or_are_copies_that_say_so(monkeypatch, shares):
    copies = []
    monkeypatch.setattr(arrays_mod, "_pointer", lambda a: a.ctypes.data)
    monkeypatch.setattr(arrays_mod, "_device_copy", lambda dst, src, n: copies.append((dst, src, n)))
    torch, made = _fake_torch(shares)
    adapter = arrays_mod.TorchArrays(torch)
    bits = np.zeros((4, 3), dtype=np.uint16)
    problem = types.SimpleNamespace(dtype="bf16", A=bits, B=bits.T.copy())
    A, B = adapter.operands(problem)
    assert A.dtype == "bfloat16" and adapter.operands(problem)[0] is A  # viewed as bf16; made once per problem
    C, before, after = adapter.output(np.zeros((4, 3), dtype=np.float32))
    if shares:
        assert (before, after, adapter.note, made, copies) == (None, None, "", [], [])
    else:
        assert [m[1] for m in made] == ["bfloat16", "bfloat16", "float32"] and len(copies) == 3  # A, B, C
        before()
        after()
        assert copies[-2][0] == C.data_ptr() and copies[-1][1] == C.data_ptr()  # C in before, out after
        assert "copies (A, B, C" in adapter.note and "times include copying C" in adapter.note


# whole runs on the NumPy stand-in ---------------------------------------------------------------------------------
def test_run_verifies_and_times_a_callable_inside_its_nvtx_range(tmp_path, runner, ranges):
    path = _file(tmp_path, GOOD)
    res, saved = _run(runner, tmp_path, "--callable", f"{path}:gemm", "--dtype", "fp16")
    assert res.exit_code == 0, res.output
    (row,) = saved.variants
    assert isinstance(saved, RunResult) and isinstance(row, VariantResult)
    assert (row.id, row.name, row.kind, row.dtype, row.status) == ("py", "mine.gemm", "callable", "fp16", "ok")
    assert row.verification.rel_error < row.verification.tolerance and row.verification.unwritten == 0
    assert len(row.timing.samples_ms) >= 10
    assert ("push", "gemmprof mine.gemm 64x48x32") in ranges and ranges[-1] == ("pop", None)
    assert load_run(tmp_path / "results.json").to_dict() == saved.to_dict()  # loads back as the same types


def test_a_callable_that_raises_fails_alone_and_the_run_goes_on(tmp_path, runner, ranges):
    bad = _file(tmp_path, "def gemm(A, B, C, alpha, beta):\n    raise ValueError('shapes do not match')\n", "bad.py")
    good = _file(tmp_path, GOOD)
    res, saved = _run(runner, tmp_path, "--callable", f"{bad}:gemm", "--callable", f"{good}:gemm")
    assert res.exit_code == 1
    assert [(v.name, v.status) for v in saved.variants] == [("bad.gemm", "error"), ("mine.gemm", "ok")]
    assert saved.variants[0].message == "raised ValueError: shapes do not match"
    assert "Traceback" not in res.output


@pytest.mark.parametrize("body, said", [
    ("def gemm(A, B, C, alpha, beta):\n    return A @ B\n", "did not write C (still poisoned)"),
    ("def gemm(A, B, C, alpha, beta):\n    C[:] = A @ B\n    C[3, 5] += 1\n", "1 wrong values"),
    ("def gemm(A, B, C, alpha, beta):\n    C[1:] = (A @ B)[1:]\n", "48 elements of C never written"),
])
def test_wrong_callables_fail_verification(tmp_path, runner, ranges, body, said):
    path = _file(tmp_path, body, "wrong.py")
    res, saved = _run(runner, tmp_path, "--callable", f"{path}:gemm")
    assert res.exit_code == 1 and saved.variants[0].status == "FAIL"
    assert said in saved.variants[0].message and saved.variants[0].timing is None


def test_reading_c_at_beta_zero_is_reported_as_for_kernels(tmp_path, runner, ranges):
    path = _file(tmp_path, "def gemm(A, B, C, alpha, beta):\n    C[...] = alpha * (A @ B) + beta * C\n", "reads.py")
    res, saved = _run(runner, tmp_path, "--callable", f"{path}:gemm")
    (row,) = saved.variants
    assert res.exit_code == 0 and row.status == "ok" and row.verification.reads_c == 64 * 48
    assert "reads C with beta=0" in row.message


def test_not_writing_c_with_beta_nonzero(tmp_path, runner, ranges):
    path = _file(tmp_path, "def gemm(A, B, C, alpha, beta):\n    pass\n", "idle.py")
    res, saved = _run(runner, tmp_path, "--callable", f"{path}:gemm", "--beta", "0.5")
    assert saved.variants[0].message.startswith("did not write C (still its values before the call)")


def test_beta_nonzero_reads_c(tmp_path, runner, ranges):
    path = _file(tmp_path, GOOD)
    res, saved = _run(runner, tmp_path, "--callable", f"{path}:gemm", "--alpha", "1.5", "--beta", "-0.75")
    assert res.exit_code == 0 and saved.variants[0].status == "ok" and saved.beta == -0.75


@pytest.mark.parametrize("args, said", [
    (["--callable", "nowhere.py:gemm"], "--callable nowhere.py:gemm: nowhere.py does not exist"),
    (["--callable", "x.py"], "give FILE.py:function"),
    (["--callable", "GOOD:gemm", "--arrays", "torch"], "--arrays torch: torch is not installed"),
    (["1", "--arrays", "torch"], "--arrays torch: only for --callable functions"),
])
def test_run_errors_are_one_line(tmp_path, runner, monkeypatch, args, said):
    monkeypatch.setitem(sys.modules, "torch", None)
    path = _file(tmp_path, GOOD)
    res, saved = _run(runner, tmp_path, *[a.replace("GOOD", str(path)) for a in args])
    assert res.exit_code == 2 and said in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_bench_returns_a_run_result(ranges):
    import gemmprof

    def gemm(A, B, C, alpha, beta):
        C[...] = alpha * (A @ B) + beta * C

    result = gemmprof.bench(gemm, m=32, n=16, k=8, beta=0.5, baselines=False, budget_s=0.01)
    (row,) = result.variants
    assert isinstance(result, RunResult) and (row.name, row.status, result.beta) == ("gemm", "ok", 0.5)
    assert "gemmprof.bench(gemm, m=32, n=16, k=8" in result.command
    with pytest.raises(callables.CallableError, match="bench: gemm: it takes"):
        gemmprof.bench(lambda A, B: None, m=8, n=8, k=8, name="gemm")


# jobs of a run --------------------------------------------------------------------------------------------------
def test_cublas_of_the_callables_dtype_and_torch_only_where_installed(monkeypatch):
    from gemmprof.catalog import baselines

    job = ("callable", (callables.from_function(lambda A, B, C, a, b: None, name="f"), "fp16",
                        arrays_mod.CupyArrays()))
    notes = []
    monkeypatch.setattr(baselines, "torch_installed", lambda: False)
    jobs = python_jobs.baseline_jobs([job], True, notes.append)
    assert jobs == [("baseline", baselines.BASELINES["cublas_hgemm"])] and "torch is not installed" in notes[0]
    assert python_jobs.baseline_jobs([job], True, notes.append, [baselines.BASELINES["cublas_hgemm"]]) == []
    monkeypatch.setattr(baselines, "torch_installed", lambda: True)
    monkeypatch.setattr(arrays_mod, "adapter", lambda kind: types.SimpleNamespace(kind=kind))
    (cublas, (kind, (row, dtype, adapter))) = python_jobs.baseline_jobs([job], True, notes.append)
    assert (row.name, row.kind, row.id, dtype, adapter.kind) == ("torch_matmul", "baseline", "torch", "fp16", "torch")
    assert "fp16 in, fp32 out" in row.title
    assert python_jobs.baseline_jobs([job], False, notes.append) == []  # --no-cublas


def test_a_child_gets_the_remaining_callables_from_their_files():
    mine = callables.PyCallable("a.fn", "", fn=print, ref="x/a.py:fn")
    torch_row = python_jobs.torch_baseline()
    rest = [("callable", (torch_row, "fp16", types.SimpleNamespace(kind="torch"))),
            ("callable", (mine, "fp16", types.SimpleNamespace(kind="torch")))]
    left, args = python_jobs.child_selectors(rest)
    assert [c.name for c, _, _ in left] == ["a.fn"] and args == ["--callable", "x/a.py:fn", "--arrays", "torch"]


def test_help_imports_no_array_library(tmp_path):
    """Stand-in torch, triton and cupy packages that announce an import: --help must not trigger one."""
    for name in ("torch", "triton", "cupy"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"import sys\nsys.stderr.write('IMPORTED {name}\\n')\n")
    code = ("from gemmprof.cli import main\nfor argv in (['--help'], ['run', '--help'], ['profile', '--help'], "
            "['compare-nsys', '--help']):\n    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "import gemmprof; gemmprof.bench\n")
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "--callable" in done.stdout and "IMPORTED" not in done.stderr
    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True, text=True, env=env)
    assert "IMPORTED torch" in probe.stderr  # the stand-ins do announce an import


# the child runs of profile and compare-nsys ----------------------------------------------------------------------
def test_profile_runs_the_callable_in_the_child_and_profiles_its_range(fake_ncu, runner, tmp_path):  # noqa: F811
    path = _file(tmp_path, GOOD)
    fake_ncu.prints(with_nvtx(DETAILS.read_text(), {0: "gemmprof mine.gemm 1024x1024x1024",
                                                    1: "gemmprof smem_caching 1024x1024x1024"}))
    r = invoke(runner, ["profile", "smem_caching", "--callable", f"{path}:gemm", "--arrays", "torch",
                        "--size", "1024", "--format", "json"])
    assert r.exit_code == 0, r.output
    [argv] = fake_ncu.calls()
    includes = [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"]
    assert includes == ["gemmprof smem_caching 1024x1024x1024/", "gemmprof mine.gemm 1024x1024x1024/"]
    child = argv[argv.index(sys.executable):]
    assert child[4:7] == ["smem_caching", "--callable", f"{path}:gemm"] and "--launch-once" in child
    assert child[child.index("--arrays") + 1] == "torch"
    import json

    assert [row["variant"] for row in json.loads(r.stdout)["rows"]] == ["mine.gemm", "smem_caching"]


def test_profile_of_a_missing_callable_fails_before_ncu(fake_ncu, runner, tmp_path):  # noqa: F811
    r = invoke(runner, ["profile", "--callable", f"{tmp_path}/none.py:gemm", "--size", "1024"])
    assert r.exit_code == 2 and "none.py does not exist" in r.output and fake_ncu.calls() == []


def test_compare_nsys_runs_the_callables_under_nsys(fake_nsys, runner, tmp_path):  # noqa: F811
    path = _file(tmp_path, GOOD)
    r = invoke(runner, ["compare-nsys", "--callable", f"{path}:gemm", "--dtype", "fp16", "--size", "1024",
                        "--format", "json"])
    profile = next(args for args in fake_nsys() if args[0] == "profile")
    child = profile[profile.index("gemmprof") + 1:]
    assert child[:4] == ["run", "--callable", f"{path}:gemm", "--dtype"] and child[4] == "fp16", child
    assert "Traceback" not in r.output
    r = invoke(runner, ["compare-nsys"])
    assert r.exit_code == 2 and "--callable FILE.py:function" in r.output


def test_regime_script_has_help_without_torch_or_triton():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "regime_check.py"), "--help"],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "do_bench" in done.stdout and "--size" in done.stdout and "--callable" in done.stdout


def _regime_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("regime_check", ROOT / "scripts" / "regime_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_regime_script_reads_targets_and_judges_within_three_percent():
    script = _regime_script()
    assert script.parse_target("a/b.py:fn:fp16", "fp32") == ("a/b.py:fn", "fp16")
    assert script.parse_target("a/b.py:fn", "fp32") == ("a/b.py:fn", "fp32")
    assert script.parse_target("C:/x/b.py:fn", "fp32") == ("C:/x/b.py:fn", "fp32")  # a drive letter is not a dtype
    assert script.ratios(1.0, 1.02, 0.98)["within_3pct"]
    assert not script.ratios(1.0, 1.05, 1.0)["within_3pct"] and not script.ratios(1.0, 1.0, 0.96)["within_3pct"]
    for default in script.DEFAULTS:  # the default targets exist
        ref, _ = script.parse_target(default, "fp32")
        assert (ROOT / ref.split(":")[0]).is_file()


# on the GPU ---------------------------------------------------------------------------------------------------------
@needs_gpu
def test_bench_a_cupy_callable_on_the_gpu():
    import cupy

    import gemmprof

    def gemm(A, B, C, alpha, beta):
        product = alpha * (A.astype(cupy.float32) @ B.astype(cupy.float32))
        C[...] = product if beta == 0 else product + beta * C

    result = gemmprof.bench(gemm, m=300, n=200, k=100, dtype="fp16", baselines=False, budget_s=0.05)
    (row,) = result.variants
    assert row.status == "ok" and row.verification.unwritten == 0 and row.timing.median_ms > 0, row.message


@needs_gpu
def test_torch_tensors_share_cupy_memory_and_torch_matmul_verifies():
    pytest.importorskip("torch")
    import gemmprof
    from gemmprof.catalog.baselines import torch_matmul

    for dtype in ("fp32", "fp16", "bf16"):
        result = gemmprof.bench(torch_matmul, m=300, n=200, k=100, dtype=dtype, arrays="torch", baselines=False,
                                budget_s=0.05)
        (row,) = result.variants
        assert row.status == "ok" and "copies" not in row.message, (dtype, row.message)


@needs_gpu
def test_the_triton_example_runs_any_shape(tmp_path, runner):
    """The Triton example writes fp32 C (the torch example, half C: test_callable_c_dtype.py)."""
    pytest.importorskip("triton")
    out = tmp_path / "r.json"
    res = invoke(runner, ["run", "--callable", f"{ROOT}/examples/triton_matmul/triton_matmul.py:matmul",
                          "-m", "1000", "-n", "1030", "-k", "520", "--dtype", "fp16", "--budget", "0.05", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = {v.name: v.status for v in load_run(out).variants}
    assert rows == {"cublas_hgemm": "ok", "torch_matmul": "ok", "triton_matmul.matmul": "ok"}


def test_a_callable_that_kills_the_context_hands_the_rest_to_a_child(tmp_path, runner, ranges, monkeypatch):
    import gemmprof.commands.run as run_cmd
    import gemmprof.measure.child as child_mod
    import gemmprof.measure.runner as runner_mod
    from gemmprof.model.traffic import GemmShape

    bad = _file(tmp_path, "def gemm(A, B, C, alpha, beta):\n    raise RuntimeError('illegal memory access')\n",
                "fault.py")
    good = _file(tmp_path, GOOD)
    monkeypatch.setattr(runner_mod, "_context_alive", lambda: False)
    seen = []

    def spawn(cmd):  # the child process: saves the row it would have measured where the parent reads it
        seen.append(cmd)
        RunResult(GemmShape(64, 48, 32), 1.0, 0.0, {}, "h100_sxm", 1, {}, [VariantResult(
            id="py", name="mine.gemm", title="", dtype="fp16", kind="callable")]).save(
            cmd[cmd.index("--child-results") + 1])
        return types.SimpleNamespace(returncode=0)

    def finish(context_lost, code):  # the real one leaves by os._exit after a lost context: not inside pytest
        assert context_lost
        sys.exit(code)

    monkeypatch.setattr(child_mod, "spawn", spawn)
    monkeypatch.setattr(run_cmd, "_finish", finish)
    res, saved = _run(runner, tmp_path, "--callable", f"{bad}:gemm", "--callable", f"{good}:gemm", "--dtype", "fp16")
    assert [(v.name, v.status) for v in saved.variants] == [("fault.gemm", "error"), ("mine.gemm", "ok")]
    assert "illegal memory access" in saved.variants[0].message
    (cmd,) = seen
    assert cmd[cmd.index("--callable") + 1] == f"{good}:gemm" and cmd[cmd.index("--dtype") + 1] == "fp16"
    assert cmd.count("--callable") == 1 and "--no-cublas" in cmd
