"""cuBLASLt's best of N beside cuBLAS (`run --cublaslt-best N`), without a GPU: the real runner on the NumPy stand-in
for CuPy (tests/numpy_cupy.py) and a NumPy stand-in for nvmath-python's cuBLASLt binding (tests/fake_cublaslt.py)
whose algorithms compute from their operands' memory as cuBLASLt's column-major contract says, each at its own
speed, some wrong or failing. What is checked: the problem is described as cublasGemmEx describes it (B in either
layout, every C type), every candidate is verified and timed and the fastest passing one kept, wrong and failing ones
are dropped with their reason, and a run without nvmath-python, or with --cublaslt-best 0, has no such row."""

from __future__ import annotations

import json
import random
import re
import sys
from dataclasses import replace

import fake_cublaslt
import numpy as np
import numpy_cupy
import pytest
from click.testing import CliRunner
from clitools import invoke
from context import from_test_extra, needs_gpu
from fake_cublaslt import Algo, Binding

from gemmprof.catalog import baselines
from gemmprof.catalog.baselines import BASELINES, cublaslt_best, half_c, with_b_layout
from gemmprof.catalog.gpu_specs import get_gpu
from gemmprof.measure import cublas as cublas_mod
from gemmprof.measure import cublaslt
from gemmprof.measure.problem import from_bf16_bits, store_c
from gemmprof.measure.runner import Runner, RunOptions
from gemmprof.measure.timing import TimingConfig
from gemmprof.render.run_tables import run_table, terminal_view
from gemmprof.render.table import render_text
from gemmprof.results.run import RunResult, VariantResult, load_run
from gemmprof.results.shape import GemmShape
from gemmprof.results.stages import Measurement

SHAPE = GemmShape(40, 24, 16)  # M, N, K all different: a swapped dimension or leading dimension shows


@pytest.fixture
def gpu(monkeypatch):
    """CuPy replaced by NumPy, nvmath's cuBLASLt binding by the stand-in; the binding's state."""
    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy.make([]))
    state = Binding()
    fake_cublaslt.install(monkeypatch, state)
    return state


def _runner(beta=0.0, budget=0.01, interleave=0, launch_once=False):
    timing = TimingConfig(budget_s=budget, interleave_rounds=interleave)
    return Runner(get_gpu("h100"), RunOptions(shape=SHAPE, seed=3, beta=beta, timing=timing, launch_once=launch_once))


def _base(name="cublas_hgemm", b_layout="row", c_half=False, n=4):
    base = half_c(BASELINES[name]) if c_half else BASELINES[name]
    return cublaslt_best(with_b_layout(base, b_layout), n)


# the description: cublasGemmEx's, candidate by candidate -----------------------------------------------------------
@pytest.mark.parametrize("name, b_layout, c_half, beta", [
    ("cublas_sgemm", "row", False, 0.0), ("cublas_tf32", "col", False, 0.5), ("cublas_hgemm", "row", False, 0.0),
    ("cublas_hgemm", "col", True, 0.0), ("cublas_bf16", "col", False, 1.5), ("cublas_bf16", "row", True, 0.0)])
def test_every_candidate_computes_a_at_b_as_cublas_describes_it(gpu, name, b_layout, c_half, beta):
    gpu.offer = [Algo(7), Algo(9, workspace=4096)]
    base = _base(name, b_layout, c_half)
    runner = _runner(beta)
    problem = runner.problem(base.storage, base.c_dtype)
    plan = cublaslt.plan(base, problem, base.candidates)
    (call,) = gpu.heuristic_calls
    s, op_b = SHAPE, 1 if b_layout == "col" else 0
    assert call["desc"][fake_cublaslt.MatmulDescAttribute.TRANSA] == op_b  # as cublas.make_launcher's gemmEx
    assert call["desc"]["compute"] == (cublas_mod.CUBLAS_COMPUTE_32F_FAST_TF32 if name == "cublas_tf32" else
                                       cublas_mod.CUBLAS_COMPUTE_32F)
    data = cublaslt.DATA_TYPES[base.storage]
    b_stored = (s.K, s.N, s.K) if b_layout == "col" else (s.N, s.K, s.N)
    c_layout = (cublaslt.DATA_TYPES[base.c_dtype], s.N, s.M, s.N)
    assert call["layouts"] == ((data, *b_stored), (data, s.K, s.M, s.K), c_layout, c_layout)
    assert call["pref"] == {fake_cublaslt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES: 32 << 20}
    assert plan.candidates == [0, 1] and plan.workspace.nbytes == 4096
    for i in plan.candidates:
        out = problem.fresh_output()  # NaN where beta is 0 (never read), else C0
        plan.launcher(i, out)()
        got = from_bf16_bits(out) if base.c_dtype == "bf16" else out.astype(np.float64)
        assert np.abs(got - problem.ref).max() <= 0.02 * np.abs(problem.ref).max(), (i, name)


def test_more_descriptor_attributes_can_be_set(gpu):
    """An fp8 GEMM's scale pointers go through the same descriptor: `attributes` names them."""
    gpu.offer = [Algo(1)]
    cublaslt.prepare(_runner(), _base(n=1), attributes=[("A_SCALE_POINTER", 1234), ("B_SCALE_POINTER", 5678)])
    desc, attr = gpu.heuristic_calls[0]["desc"], fake_cublaslt.MatmulDescAttribute
    assert (desc[attr.A_SCALE_POINTER], desc[attr.B_SCALE_POINTER]) == (1234, 5678)


# choosing: every candidate verified and timed, the fastest passing one kept --------------------------------------
def _offers(seed: int, n: int) -> list[Algo]:
    """n algorithms of distinct speeds in a random order; one wrong and one failing, both faster than any other.
    The fastest is 2.5 ms ahead of the next on the events' clock."""
    rng = random.Random(seed)
    times = [0.0005] + [0.003 + 0.0015 * k for k in range(n - 1)]
    rng.shuffle(times)
    algos = [Algo(100 + i, time_s=s, tile=rng.choice([18, 24]), split_k=rng.choice([1, 2, 4])) for i, s in
             enumerate(times)]
    wrong, failing = rng.sample(range(n), 2)
    algos[wrong] = replace(algos[wrong], wrong=True, time_s=0.0)
    algos[failing] = replace(algos[failing], fails=True, time_s=0.0)
    return algos


@pytest.mark.parametrize("seed", range(3))
def test_the_fastest_verified_candidate_is_kept_and_wrong_or_failing_ones_are_dropped(gpu, seed):
    gpu.offer = _offers(seed, 6)
    good = [i for i, a in enumerate(gpu.offer) if not (a.wrong or a.fails)]
    fastest = min(good, key=lambda i: gpu.offer[i].time_s)
    assert len(good) == 4 and fastest != next(i for i, a in enumerate(gpu.offer) if a.wrong)  # the class generated
    row = cublaslt.run(_runner(), _base(n=6))
    assert row.status == "ok" and row.kind == "baseline" and row.id == "cuBLASLt" and row.timing is not None, row.message
    assert row.params["rank"] == fastest + 1 and row.params["algo_id"] == gpu.offer[fastest].algo_id, row.message
    assert row.params["split_k"] == gpu.offer[fastest].split_k and row.params["tile_id"] == gpu.offer[fastest].tile
    assert (row.params["requested"], row.params["offered"], row.params["verified"]) == (6, 6, 4)
    launched = [gpu.launches.count(a.algo_id) for a in gpu.offer]
    # verified by two launches (C poisoned, then a sentinel); the good ones then warmed up, probed three times and
    # timed; a wrong one is never timed, a failing one stops at its first launch
    assert [n for n, a in zip(launched, gpu.offer, strict=True) if a.wrong] == [2]
    assert [n for n, a in zip(launched, gpu.offer, strict=True) if a.fails] == [1]
    assert all(launched[i] >= 2 + 1 + 3 + 1 for i in good)
    for i, algo in enumerate(gpu.offer):
        if algo.wrong:
            assert f"#{i + 1} dropped (FAIL: 1 wrong values" in row.message
        elif algo.fails:
            assert f"#{i + 1} dropped (error: cuBLASLt: CUBLAS_STATUS_NOT_SUPPORTED)" in row.message
        else:  # its median, and whether it was kept
            timed = re.search(rf"#{i + 1} [0-9.]+ ms( \(kept\))?(;|$)", row.message)
            assert timed and bool(timed[1]) == (i == fastest), (i, row.message)
    assert f"#{fastest + 1} (algo {gpu.offer[fastest].algo_id}, tile " in row.message


def test_the_kept_candidate_is_timed_again_not_reported_at_its_choosing_time(gpu):
    gpu.offer = [Algo(1, time_s=0.001), Algo(2, time_s=0.002)]
    runner = _runner()
    row, prepared = cublaslt.prepare(runner, _base(n=2))
    assert row.timing is None and prepared is not None  # the winner, ready to time, untimed yet
    before = gpu.launches.count(1)
    problem = runner.problem(prepared.storage, prepared.c_dtype)
    prepared.launch_for(problem, problem.sentinel_output())()
    assert gpu.launches.count(1) == before + 1
    assert runner._time(row, prepared).timing is not None
    assert row.nvtx_range.startswith("gemmprof cublaslt_best2_hgemm ")


def test_a_single_candidate_is_verified_and_kept_without_choosing(gpu):
    gpu.offer = [Algo(5), Algo(6, state=15)]  # the second one the heuristic offers but marks unusable
    row = cublaslt.run(_runner(), _base(n=2))
    assert row.status == "ok" and row.params["rank"] == 1 and row.params["offered"] == 2
    assert "#1 not timed (kept)" in row.message and "#2 not usable (status 15)" in row.message


def test_when_every_candidate_fails_the_row_fails_and_says_why(gpu):
    gpu.offer = [Algo(1, wrong=True), Algo(2, fails=True)]
    row = cublaslt.run(_runner(), _base(n=2))
    assert row.status == "FAIL" and row.timing is None and row.verification is not None
    assert row.message.startswith("none of the 2 algorithms cuBLASLt's heuristic offered passed: #1 dropped (FAIL")


@pytest.mark.parametrize("offer, error, said", [
    ([], None, "cuBLASLt's heuristic offered no usable algorithm for 40x24x16 (fp16 in, fp32 C)"),
    ([Algo(1)], "CUBLAS_STATUS_NOT_SUPPORTED", "cuBLASLt's heuristic: cuBLASLtError: CUBLAS_STATUS_NOT_SUPPORTED"),
])
def test_a_heuristic_with_nothing_to_offer_is_the_rows_error_not_a_crash(gpu, offer, error, said):
    gpu.offer, gpu.heuristic_error = offer, error
    row = cublaslt.run(_runner(), _base())
    assert (row.status, row.message, row.timing) == ("error", said, None)
    assert len(gpu.destroyed) == 6  # what it made is freed: handle, descriptor, three layouts, preference


def test_launch_once_chooses_nothing(gpu):
    gpu.offer = [Algo(1)]
    row = cublaslt.run(_runner(launch_once=True), _base())
    assert row.status == "skipped" and "--launch-once times nothing" in row.message and not gpu.launches


def test_without_nvmath_the_reason_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvmath", None)  # import nvmath raises ImportError
    why = cublaslt.unavailable()
    assert why.startswith("nvmath-python is not installed (pip install 'gemmprof[cublaslt]'") and "\n" not in why


# the command ---------------------------------------------------------------------------------------------------
GOOD = '''
def gemm(A, B, C, alpha, beta):
    """NumPy GEMM."""
    C[...] = alpha * (A.astype("float32") @ B.astype("float32"))
'''


def _numpy_cublas(baseline, problem, out):
    """cuBLAS's row on the stand-in: the reference's formula into `out`."""
    def launch():
        x, y = (from_bf16_bits(v) if problem.dtype == "bf16" else v.astype(np.float32) for v in (problem.A, problem.B))
        out[...] = store_c(problem.alpha * (x @ y), baseline.c_dtype, "row")
    return launch


@pytest.fixture
def cli(gpu, monkeypatch, tmp_path):
    """`gemmprof run --callable` with cuBLAS on the stand-in: (run(*args) -> (exit code, output, results), state)."""
    from gemmprof.measure import runner as runner_mod

    monkeypatch.setattr(runner_mod, "make_launcher", _numpy_cublas)
    monkeypatch.setattr(baselines, "torch_installed", lambda: False)
    (tmp_path / "mine.py").write_text(GOOD)

    def run(*args):
        out = tmp_path / "results.json"
        out.unlink(missing_ok=True)
        res = invoke(CliRunner(), ["run", "--callable", f"{tmp_path / 'mine.py'}:gemm", "--dtype", "fp16", "-m", "40",
                                   "-n", "24", "-k", "16", "--budget", "0.01", "-o", str(out), *args])
        return res.exit_code, res.output, load_run(out) if out.exists() else None

    return run, gpu


@pytest.mark.parametrize("interleave", [False, True])
def test_a_run_has_cublaslt_beside_cublas_and_says_which_row_each_percentage_is_against(cli, interleave):
    run, gpu = cli
    gpu.offer = [Algo(1, time_s=0.006), Algo(2, time_s=0.0005), Algo(3, time_s=0.003)]
    code, output, result = run("--cublaslt-best", "3", *(["--interleave"] if interleave else []))
    assert code == 0, output
    names = [v.name for v in result.variants]
    assert names == ["cublas_hgemm", "cublaslt_best3_hgemm", "mine.gemm"]
    lt = result.cublaslt_for("fp16")
    assert lt is result.variants[1] and lt.params["rank"] == 2 and lt.timing and not result.notes
    assert gpu.heuristic_calls[0]["requested"] == 3
    table = run_table(result)
    rows = {r["name"]: r for r in table.rows}
    assert rows["mine.gemm"]["pct_cublas_of"] == "cublas_hgemm"
    assert rows["mine.gemm"]["pct_cublaslt_of"] == "cublaslt_best3_hgemm"
    assert rows["cublaslt_best3_hgemm"]["pct_cublaslt"] == pytest.approx(100)
    assert rows["cublaslt_best3_hgemm"]["compiler"] == "cuBLASLt"
    assert "% cuBLAS is against cublas_hgemm" in table.notes and "% cuBLASLt is against cublaslt_best3_hgemm" in \
        table.notes
    text = render_text(terminal_view(table), width=200)
    assert "% cuBLASLt" in text and "fastest of the cuBLASLt heuristic's top N" in text
    doc = json.loads(json.dumps(result.to_dict()))  # the results file: the winner's configuration is there
    assert doc["variants"][1]["params"]["algo_id"] == 2 and "notes" not in doc


def test_without_nvmath_the_run_has_no_cublaslt_row_and_its_notes_say_why(cli, monkeypatch):
    run, gpu = cli
    for name in ("nvmath", "nvmath.bindings", "nvmath.bindings.cublasLt"):
        monkeypatch.setitem(sys.modules, name, None)
    code, output, result = run("--cublaslt-best", "8")
    assert code == 0, output
    assert [v.name for v in result.variants] == ["cublas_hgemm", "mine.gemm"]
    (note,) = result.notes
    assert note.startswith("no cuBLASLt best-of-8 rows: nvmath-python is not installed") and "\n" not in note
    assert f"note: {note}" in output and note in run_table(result).notes
    assert load_run_roundtrip(result).notes == [note]


def load_run_roundtrip(result: RunResult) -> RunResult:
    return RunResult.from_dict(json.loads(json.dumps(result.to_dict())))


def test_cublaslt_best_0_adds_no_row(cli):
    run, gpu = cli
    gpu.offer = [Algo(1)]
    for args in ((), ("--cublaslt-best", "0")):
        code, output, result = run(*args)
        assert code == 0, output
        assert [v.name for v in result.variants] == ["cublas_hgemm", "mine.gemm"] and not result.notes
    assert not gpu.heuristic_calls and "% cuBLASLt" not in render_text(terminal_view(run_table(result)), width=200)


@pytest.mark.parametrize("args, said", [
    (["--no-cublas"], "--cublaslt-best 8 and --no-cublas: it is a baseline beside cuBLAS, give one"),
    (["--launch-once"], "--cublaslt-best 8 and --launch-once: it chooses by timing and --launch-once times nothing"),
])
def test_cublaslt_best_with_an_option_that_excludes_it_is_one_line(cli, args, said):
    run, _ = cli
    code, output, _ = run("--cublaslt-best", "8", *args)
    assert code != 0 and said in output and "Traceback" not in output


# results and their reading back -------------------------------------------------------------------------------
def _timed(name, dtype="fp16", ms=1.0, c_dtype="fp32", status="ok"):
    from gemmprof.results.stages import ModelFigures

    return VariantResult(id="x", name=name, title=name, dtype=dtype, kind="baseline", status=status, c_dtype=c_dtype,
                         timing=Measurement((ms,) * 5), model=ModelFigures(flops=10 ** 12, min_arithmetic_intensity=1))


def test_cublaslt_for_matches_dtype_and_c_but_any_n():
    result = RunResult(shape=SHAPE, alpha=1, beta=0, device={}, gpu_spec="h100", seed=0, timing_method={}, variants=[
        _timed("cublaslt_best8_hgemm"), _timed("cublaslt_best16_hgemm_cfp16", c_dtype="fp16"),
        _timed("cublaslt_best8_bf16", dtype="bf16", status="FAIL"), _timed("cublas_hgemm")])
    assert result.cublaslt_for("fp16").name == "cublaslt_best8_hgemm"
    assert result.cublaslt_for("fp16", "fp16").name == "cublaslt_best16_hgemm_cfp16"
    assert result.cublaslt_for("bf16") is None and result.cublaslt_for("int8") is None  # failed; no such dtype
    assert result.baseline_for("fp16").name == "cublas_hgemm"


def test_the_baseline_is_named_after_its_cublas_row_and_keeps_its_problem():
    base = half_c(with_b_layout(BASELINES["cublas_bf16"], "col"))
    lt = cublaslt_best(base, 8)
    assert (lt.name, lt.library, lt.candidates) == ("cublaslt_best8_bf16_cbf16", "cublaslt", 8)
    assert (lt.dtype, lt.storage, lt.c_dtype, lt.b_layout, lt.tolerance_key) == ("bf16", "bf16", "bf16", "col", "bf16")
    assert lt.title.startswith("cuBLASLt best of 8: GEMM (bf16 in") and "B col-major" in lt.title
    with pytest.raises(ValueError):
        cublaslt_best(base, 0)


# nvmath-python itself: the binding has every name and call shape gemmprof uses (no GPU needed) -------------------
def test_the_real_binding_has_what_gemmprof_calls():
    lt = from_test_extra("nvmath.bindings.cublasLt")
    def arity(fn):  # the compiled module's signature is the first line of its docstring
        head = fn.__doc__.strip().splitlines()[0]
        return head.count(",") + 1 if "()" not in head else 0

    calls = {"create": 0, "destroy": 1, "matmul_desc_create": 2, "matmul_desc_set_attribute": 4,
             "matrix_layout_create": 4, "matmul_preference_create": 0, "matmul_preference_set_attribute": 4,
             "matmul_algo_get_heuristic": 10, "matmul": 16, "matmul_algo_config_get_attribute": 5,
             "matmul_desc_destroy": 1, "matrix_layout_destroy": 1, "matmul_preference_destroy": 1}
    assert {name: arity(getattr(lt, name)) for name in calls} == calls
    assert lt.get_matmul_desc_attribute_dtype(lt.MatmulDescAttribute.TRANSA) == np.int32
    assert lt.get_matmul_preference_attribute_dtype(lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES) == np.uint64
    for _, name in cublaslt.CONFIG:
        assert hasattr(lt.MatmulAlgoConfigAttribute, name), name
    assert hasattr(lt.MatmulDescAttribute, "A_SCALE_POINTER") and issubclass(lt.cuBLASLtError, Exception)
    for enum, prefix in ((lt.MatmulTile, "TILE_"), (lt.MatmulStages, "STAGES_"), (lt.ClusterShape, "SHAPE_")):
        assert all(m.startswith(prefix) for m in enum.__members__), enum
    results = lt.MatmulHeuristicResult(3)  # the algorithm is the first field of each 96-byte result
    assert lt.matmul_heuristic_result_dtype.fields["algo"][1] == 0
    assert results[2].ptr - results.ptr == 2 * lt.matmul_heuristic_result_dtype.itemsize
    assert (cublaslt.DATA_TYPES["bf16"], cublaslt.DATA_TYPES["fp16"]) == (14, 2)


# on the GPU (marker gpu; nvmath-python carried there as a wheel) ---------------------------------------------------
def _gpu_run(tmp_path, *args):
    from_test_extra("nvmath.bindings.cublasLt")
    out = tmp_path / "r.json"
    res = invoke(CliRunner(), ["run", *args, "--budget", "0.2", "-o", str(out)])
    assert out.exists(), res.output
    return load_run(out)


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_gpu_cublaslt_best_of_8_verifies_and_keeps_pace_with_cublas(tmp_path, dtype):
    """h12 (B column-major) beside both baselines: every offered algorithm verified, the kept one no slower than
    cuBLAS's own choice by more than noise (cuBLAS's choice is usually among the heuristic's top 8)."""
    result = _gpu_run(tmp_path, "h12", "--dtype", dtype, "--size", "2048", "--cublaslt-best", "8", "--interleave")
    lt, cublas = result.cublaslt_for(dtype), result.baseline_for(dtype)
    assert lt is not None and cublas is not None, [(v.name, v.status, v.message) for v in result.variants]
    assert lt.name == f"cublaslt_best8_{cublas.name.removeprefix('cublas_')}" and "B col-major" in lt.title
    p = lt.params
    assert p["requested"] == 8 and 1 <= p["rank"] <= p["offered"] <= 8 and p["verified"] >= 1, p
    assert "algo_id" in p and "tile_id" in p and lt.rel_error < 2e-3
    assert lt.achieved_flops > 0.9 * cublas.achieved_flops, (lt.message, lt.achieved_flops, cublas.achieved_flops)


@needs_gpu
def test_gpu_cublaslt_reads_row_major_b_and_honours_alpha_and_beta(tmp_path):
    result = _gpu_run(tmp_path, "15", "-m", "1000", "-n", "776", "-k", "520", "--alpha", "1.5", "--beta", "-0.75",
                      "--cublaslt-best", "4")
    rows = {v.name: v for v in result.variants}
    for name in ("cublaslt_best4_sgemm", "cublaslt_best4_tf32"):
        v = rows[name]  # beta != 0: C0 read and scaled, checked against the float64 reference like every row
        assert v.status == "ok" and v.rel_error < v.verification.tolerance and v.timing, (name, v.message)
        assert v.params["rank"] <= v.params["offered"] and "row" not in v.title  # B as rung 15 stores it: row-major
