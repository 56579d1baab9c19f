"""The shape sweep's summary and its runs (gemmprof.results.sweep, gemmprof.tune.shape_sweep; scripts/shape_sweep.py
passes its arguments to `gemmprof sweep`): shape lists, geometric means, minima, fast_p, the figures without the
shapes where the baseline collapsed, the best variant per shape, baselines other than cuBLAS, one child per shape
(resumed, confirmed, dealt out to workers), computed from stand-in run results built from the typed results classes
(no GPU)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import threading
from pathlib import Path

import pytest

from gemmprof.errors import InputError
from gemmprof.model.traffic import GemmShape
from gemmprof.render.sweep_files import write_summary
from gemmprof.render.sweep_tables import headline_table, sweep_table
from gemmprof.results.run import Measurement, ModelFigures, RunResult, VariantResult
from gemmprof.results.sweep import (
    BEST,
    COLLAPSE,
    CUBLAS,
    DEFAULT_SHAPES,
    TORCH,
    SweepSummary,
    load_sweep,
    parse_shapes,
    summarize,
)
from gemmprof.tune import shape_sweep as lib

ROOT = Path(__file__).resolve().parents[1]
A, B, C = GemmShape(1000, 1000, 1000), GemmShape(4096, 4096, 4096), GemmShape(4095, 4097, 1023)


def _variant(name, shape, ms, kind="ladder", status="ok", dtype="fp32", vid=None, c_dtype="fp32"):
    flops = 2 * shape.M * shape.N * shape.K
    return VariantResult(id=vid or ("cuBLAS" if kind == "baseline" else name), name=name, title=name, dtype=dtype,
                         kind=kind, status=status, c_dtype=c_dtype,
                         timing=Measurement((ms * 1.01, ms, ms, ms * 0.99, ms)) if ms else None,
                         model=ModelFigures(flops, 1.0))


def _run(shape, rungs: dict, cublas_ms=1.0, dtype="fp32", device="stand-in H100"):
    base = {"fp32": "cublas_sgemm", "fp16": "cublas_hgemm", "bf16": "cublas_bf16"}[dtype]
    variants = [_variant(n, shape, ms, status="ok" if ms else "rejected", dtype=dtype) for n, ms in rungs.items()]
    variants.append(_variant(base, shape, cublas_ms, kind="baseline", dtype=dtype,
                             status="ok" if cublas_ms else "FAIL"))
    return RunResult(shape=shape, alpha=1.0, beta=0.0, device={"name": device}, gpu_spec="h100", seed=1,
                     timing_method={}, variants=variants)


def _runs():
    # % of cuBLAS: at A 50 and 125, at B 200 and 80, at C rung 13 rejected and 100
    return [("a.json", _run(A, {"r13": 2.0, "r16": 0.8})), ("b.json", _run(B, {"r13": 0.5, "r16": 1.25}, 1.0)),
            ("c.json", _run(C, {"r13": None, "r16": 3.0}, 3.0))]


# -- the summary ---------------------------------------------------------------------------------------------------
def test_geomean_min_and_best_variant_per_shape():
    sweep = summarize(_runs(), "fp32")
    assert sweep.shapes == (A, B, C) and sweep.variants == ("r13", "r16") and sweep.device == "stand-in H100"
    assert sweep.pct("r13", A) == pytest.approx(50) and sweep.pct("r16", B) == pytest.approx(80)
    r13, r16 = sweep.rungs
    assert (r13.shapes, r13.geomean_pct, r13.min_pct, r13.min_shape, r13.missing) == (
        2, pytest.approx(100), pytest.approx(50), A.label, (C.label,))  # sqrt(50 * 200): C left out, named
    assert (r16.shapes, r16.geomean_pct, r16.min_pct, r16.min_shape) == (
        3, pytest.approx(100), pytest.approx(80), B.label)  # cbrt(125 * 80 * 100)
    assert [sweep.best_at(s)[0] for s in (A, B, C)] == ["r16", "r13", "r16"]
    best = sweep.best
    assert best.variant == BEST and best.geomean_pct == pytest.approx((125 * 200 * 100) ** (1 / 3))
    assert (best.min_pct, best.min_shape, best.missing) == (pytest.approx(100), C.label, ())
    assert sweep.base_tflops(A) == pytest.approx(2e9 / 1e-3 / 1e12)


def test_fast_p_counts_correct_shapes_at_least_p_times_the_baseline_where_the_baseline_ran():
    sweep = summarize(_runs(), "fp32")
    r13, r16 = sweep.rungs
    # r13: fast at B only (200%), A is 50%, C rejected (not fast, still judged: cuBLAS ran there)
    assert (r13.fast, r13.judged, r13.fast_p) == (1, 3, pytest.approx(1 / 3))
    assert (r16.fast, r16.judged) == (2, 3)  # 125% and 100%: "at least p times" includes equal
    assert (sweep.best.fast, sweep.best.judged) == (3, 3)
    strict = summarize(_runs(), "fp32", p=1.1)
    assert [r.fast for r in strict.rungs] == [1, 1] and strict.best.fast == 2
    # where the baseline failed, the shape judges nothing: out of the denominator
    no_base = summarize([*_runs()[:2], ("c.json", _run(C, {"r13": 1.0, "r16": 3.0}, cublas_ms=None))], "fp32")
    assert no_base.rung("r16").judged == 2 and no_base.pct("r16", C) is None
    with pytest.raises(InputError, match="p = 0"):
        summarize(_runs(), "fp32", p=0)


def test_shapes_where_the_baseline_collapsed_are_named_and_left_out_of_the_second_figures():
    # at D cuBLAS runs at a quarter of r16 (400%): the baseline collapsed there (as cuBLAS at 4095 x 4097 x 1024)
    D = GemmShape(4095, 4097, 1024)
    runs = [*_runs(), ("d.json", _run(D, {"r13": 2.0, "r16": 0.25}))]
    sweep = summarize(runs, "fp32")
    assert sweep.collapsed == (D,) and COLLAPSE == 2.0
    r16 = sweep.rung("r16")
    assert r16.geomean_pct == pytest.approx((125 * 80 * 100 * 400) ** 0.25)
    assert (r16.sound_shapes, r16.sound_geomean_pct) == (3, pytest.approx((125 * 80 * 100) ** (1 / 3)))
    assert sweep.best.sound_geomean_pct == pytest.approx((125 * 200 * 100) ** (1 / 3))
    doc = sweep.to_dict()
    assert doc["collapsed"] == [D.label] and doc["best"]["without_collapse"]["shapes"] == 3
    # a shape at exactly twice the baseline is not a collapse (below half the best, strictly)
    edge = summarize([("e.json", _run(A, {"r16": 0.5}))], "fp32")
    assert edge.collapsed == ()


def test_the_headline_keeps_dtypes_apart_and_names_the_highlighted_variant_and_the_collapse_shapes():
    D = GemmShape(4095, 4097, 1024)
    fp16 = summarize([("a.json", _run(A, {"h6": 1.0, "plan": 0.8}, dtype="fp16")),
                      ("d.json", _run(D, {"h6": 0.2, "plan": 0.25}, dtype="fp16"))], "fp16", highlight=("plan",))
    bf16 = summarize([("a.json", _run(A, {"h6": 1.25, "plan": 1.0}, dtype="bf16"))], "bf16", highlight=("plan",))
    table = headline_table([fp16, bf16])
    rows = [(r["dtype"], r["variant"]) for r in table.rows]
    assert rows == [("fp16", BEST), ("fp16", "plan (highlight)"), ("fp16", "h6"),
                    ("bf16", BEST), ("bf16", "plan (highlight)"), ("bf16", "h6")]
    fp16_plan = table.rows[1]
    assert fp16_plan["geomean_pct"] == pytest.approx(math.sqrt(125 * 400))
    assert fp16_plan["sound_geomean_pct"] == pytest.approx(125) and fp16_plan["fast_p"] == pytest.approx(1.0)
    assert table.rows[4]["geomean_pct"] == pytest.approx(100) and table.rows[4]["sound_geomean_pct"] == pytest.approx(100)
    assert any(n.startswith(f"fp16: the baseline collapsed (below 1/2 of the best variant) at 1 of 2 shapes: {D.label}")
               for n in table.notes)
    assert any(n.startswith("bf16: the baseline ran at least 1/2") for n in table.notes)
    missing = headline_table([summarize(_runs(), "fp32", highlight=("nope",))])
    assert any("highlight nope: no such variant" in n for n in missing.notes)


def test_the_headline_at_80_columns_keeps_the_variant_names():
    """On the H200 a model sweep of one callable printed two rows alike (the best per shape and the callable):
    the variant column had been left out to fit 80 columns."""
    from gemmprof.render.table import render_text

    shapes = {GemmShape(t, 4096, 4096): "o_proj" for t in (16, 128)}
    runs = [(s.label, _run(s, {"triton_matmul.matmul": 0.5, "h6": 0.4}, dtype="bf16")) for s in shapes]
    text = render_text(headline_table([summarize(runs, "bf16", layers=shapes, model="llama3_8b")]), 80)
    assert "triton_matmul.matmul" in text and "h6" in text and "best variant per" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def _callable_run(shape, ms, torch_ms, cublas_ms=1.0, c_dtype="fp32"):
    cub = "cublas_bf16" if c_dtype == "fp32" else f"cublas_bf16_c{c_dtype}"
    tor = "torch_matmul" if c_dtype == "fp32" else f"torch_matmul_c{c_dtype}"
    variants = [_variant(cub, shape, cublas_ms, kind="baseline", dtype="bf16", c_dtype=c_dtype),
                _variant(tor, shape, torch_ms, kind="baseline", dtype="bf16", vid="torch", c_dtype=c_dtype),
                _variant("triton_matmul.matmul", shape, ms, kind="callable", dtype="bf16", vid="py", c_dtype=c_dtype)]
    return RunResult(shape=shape, alpha=1.0, beta=0.0, device={"name": "x"}, gpu_spec="h100", seed=1,
                     timing_method={}, variants=variants)


def test_the_baseline_may_be_torch_matmul_or_another_variant_and_half_c_finds_its_own_cublas_row():
    runs = [("a.json", _callable_run(A, 1.0, 0.8)), ("b.json", _callable_run(B, 0.5, 0.5))]
    cub = summarize(runs, "bf16")
    assert cub.variants == ("triton_matmul.matmul",) and cub.pct("triton_matmul.matmul", A) == pytest.approx(100)
    tor = summarize(runs, "bf16", baseline=TORCH)
    assert tor.pct("triton_matmul.matmul", A) == pytest.approx(80) and tor.cell("triton_matmul.matmul", A).baseline \
        == "torch_matmul"
    half = summarize([("a.json", _callable_run(A, 1.0, 0.5, cublas_ms=2.0, c_dtype="bf16"))], "bf16")
    assert half.cell("triton_matmul.matmul", A).baseline == "cublas_bf16_cbf16" and half.pct(
        "triton_matmul.matmul", A) == pytest.approx(200)
    # another variant as the baseline: it leaves the columns, the others are % of it
    other = summarize(_runs(), "fp32", baseline="r16")
    assert other.variants == ("r13",) and other.pct("r13", A) == pytest.approx(40)
    assert other.cell("r13", A).baseline == "r16" and other.rung("r13").judged == 3
    assert CUBLAS == "cuBLAS"


def test_a_shape_no_variant_ran_counts_as_missing_for_the_best_too():
    sweep = summarize([*_runs()[:2], ("c.json", _run(C, {"r13": None, "r16": None}))], "fp32")
    assert sweep.best.missing == (C.label,) and sweep.best.shapes == 2
    assert sweep.best.geomean_pct == pytest.approx(math.sqrt(125 * 200))


def test_without_cublas_no_percentages_and_one_run_per_shape():
    run = _run(A, {"r13": 1.0})
    run.variants = [v for v in run.variants if v.kind != "baseline"]
    sweep = summarize([("a.json", run)], "fp32")
    assert sweep.pct("r13", A) is None and sweep.rung("r13").geomean_pct is None and sweep.rung("r13").judged == 0
    with pytest.raises(InputError, match="a second run at 1000x1000x1000"):
        summarize([("a.json", _run(A, {})), ("again.json", _run(A, {}))], "fp32")


def test_summary_loads_back_as_the_same_type_and_reads_files_before_the_baseline_option(tmp_path):
    sweep = summarize(_runs(), "fp32", layers={A: "qkv_proj", B: "o_proj", C: "lm_head"}, model="m", p=0.9,
                      highlight=("r16",))
    sweep.save(tmp_path / "s.json")
    back = load_sweep(tmp_path / "s.json")
    assert isinstance(back, SweepSummary) and back == sweep
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["best"]["geomean_pct"] == pytest.approx(sweep.best.geomean_pct)  # derived figures for readers
    assert [r["variant"] for r in doc["best_per_shape"]] == ["r16", "r13", "r16"]
    assert doc["layers"] == ["qkv_proj", "o_proj", "lm_head"] and doc["variants"][0]["fast"] == 1
    with pytest.raises(InputError, match="not a gemmprof sweep"):
        SweepSummary.from_dict({"kind": "gemmprof.run"})
    # a summary written before --baseline: cells with pct_cublas only; the baseline's figure follows from it
    old = {"kind": "gemmprof.sweep", "dtype": "fp32", "shapes": [A.label], "files": ["a.json"],
           "cells": [{"shape": A.label, "variant": "r16", "status": "ok", "tflops": 2.5, "pct_cublas": 125.0}]}
    read = SweepSummary.from_dict(old)
    assert read.baseline == CUBLAS and read.pct("r16", A) == 125.0 and read.base_tflops(A) == pytest.approx(2.0)
    assert read.rung("r16").fast == 1


def test_table_has_a_row_per_shape_then_mean_and_minimum():
    table = sweep_table(summarize(_runs(), "fp32"))
    rows = {r["shape"]: r for r in table.rows}
    assert list(rows) == [A.label, B.label, C.label, "geometric mean", "minimum"]
    assert rows[C.label]["r13"] is None and rows[C.label]["best_rung"] == "r16"
    assert rows["geometric mean"]["r16"] == pytest.approx(100) and rows["minimum"]["best_pct"] == pytest.approx(100)
    assert any("r13: no % of the baseline at 4095x4097x1023 (rejected)" in n for n in table.notes)
    layered = sweep_table(summarize(_runs(), "fp32", layers={A: "qkv_proj", B: "o_proj", C: "lm_head"}))
    assert [c.key for c in layered.columns][:2] == ["shape", "layer"] and layered.rows[2]["layer"] == "lm_head"


def test_shape_lists_parse_and_bad_items_are_named():
    assert parse_shapes("1024, 4095x4097x1024\n# a comment\n16X4096x4096  1024") == (
        GemmShape(1024, 1024, 1024), GemmShape(4095, 4097, 1024), GemmShape(16, 4096, 4096))
    for text, match in (("1024 x4096", "line 1: 'x4096' is not a shape"), ("1x2", "'1x2' is not a shape"),
                        ("64\n0x5x5", "line 2: 0x5x5: M"), ("# nothing", "no shapes given"), ("", "no shapes given"),
                        (" , ", "no shapes given")):
        with pytest.raises(InputError, match=match):
            parse_shapes(text)


def test_default_shapes_cover_the_llm_layers_squares_and_odd_sizes():
    shapes = parse_shapes(DEFAULT_SHAPES)
    assert {GemmShape(s, s, s) for s in (1024, 2048, 4096, 8192)} <= set(shapes)
    ms = {s.M for s in shapes if s.N in (4096, 11008, 14336) and s.K in (4096, 11008, 14336)}
    assert min(ms) == 16 and max(ms) == 16384
    assert max(s.K for s in shapes) == 16384
    assert any(s.M % 8 and s.N % 8 for s in shapes)  # off the tiles
    assert all(s.K % 8 == 0 for s in shapes)  # the Hopper rungs' TMA needs 16-byte rows of fp16


# -- the runs: one child per shape -----------------------------------------------------------------------------------
def _shape_of(cmd):
    rest = cmd[cmd.index("run"):]
    return GemmShape(*(int(rest[rest.index(flag) + 1]) for flag in ("-m", "-n", "-k")))


class Children:
    """A stand-in for the child `gemmprof run`: writes the run of `runs` at its shape (or, into a confirm_ file,
    the confirmation of its variant at `again_pct`) where the shape is not in `crash`."""

    def __init__(self, runs, again_pct=None, crash=(), selectors=None):
        self.runs, self.again_pct, self.crash = runs, again_pct or {}, set(crash)
        self.selectors = selectors or {}  # a selector (rung id) -> the variant's name in its run
        self.commands, self.envs = [], []
        self.lock = threading.Lock()

    def __call__(self, cmd, log_path, env):
        with self.lock:
            self.commands.append(cmd)
            self.envs.append(env)
        shape = _shape_of(cmd)
        out = cmd[cmd.index("-o") + 1]
        Path(log_path).write_text("child\n")
        if shape in self.crash:
            _run(shape, {}).save(out)  # what `run` saved before its first variant: a file, no variant
            return -9
        variant = self.selectors.get(cmd[cmd.index("run") + 1], cmd[cmd.index("run") + 1])
        again = Path(out).name.startswith("confirm_")  # a confirmation (always in turns)
        run = self.runs[shape] if not again else _run(shape, {variant: 1 / self.again_pct[variant]})
        run.save(out)
        return 0


def _request(tmp_path, shapes, selectors=("13-16",), **kw):
    return lib.SweepRequest(dtype="fp32", shapes=tuple(shapes), out_dir=tmp_path, selectors=tuple(selectors), **kw)


def test_one_child_per_shape_resumed_and_a_crashed_shape_leaves_nothing_to_keep(tmp_path):
    runs = {s: r for _, r in _runs() for s in [r.shape]}
    kids = Children(runs, crash={C})
    req = _request(tmp_path, (A, B, C), budget_s=0.2, precision=0.25, max_reps=500, run_args=("--seed", "3"))
    said = []
    failed = lib.run_sweep(req, [lib.LocalSlot(None, kids)], said.append)
    assert failed == [C.label] and len(kids.commands) == 3 and kids.envs == [None] * 3
    first = kids.commands[0]
    assert first[2:13] == ["gemmprof", "run", "13-16", "-m", "1000", "-n", "1000", "-k", "1000", "--dtype", "fp32"]
    for flag, value in (("--budget", "0.2"), ("--precision", "0.25"), ("--max-reps", "500"), ("--seed", "3")):
        assert first[first.index(flag) + 1] == value
    assert first[first.index("-o") + 1] == str(tmp_path / "partial" / "run_1000x1000x1000.json")
    assert (tmp_path / "run_1000x1000x1000.json").is_file() and (tmp_path / "run_1000x1000x1000.log").is_file()
    # the crashed child's file stays in partial/, never where a later sweep would keep it
    assert not (tmp_path / f"run_{C.label}.json").exists() and (tmp_path / "partial" / f"run_{C.label}.json").exists()
    assert any(f"{C.label}: rc=-9" in s and "no results file" in s for s in said)
    kids.crash.clear()
    assert lib.run_sweep(req, [lib.LocalSlot(None, kids)], said.append) == []
    assert len(kids.commands) == 4 and _shape_of(kids.commands[-1]) == C  # only the missing shape ran again
    assert sum("kept run_" in s for s in said) == 2 and not (tmp_path / "partial").exists()


def test_the_child_command_line_is_one_gemmprof_run_parses(tmp_path):
    import click

    from gemmprof.cli import cli

    req = _request(tmp_path, (A,), selectors=("h12", "--spec", "my.yaml", "--callable", "f.py:g"), c_dtype="bf16",
                   arrays="torch", precision=1.0, max_reps=9, run_args=("--no-flush", "--seed", "4"))
    argv = req.child(A, tmp_path / "x.json", interleave=True)
    run = cli.get_command(click.Context(cli), "run")
    ctx = run.make_context("run", argv[argv.index("run") + 1:])
    p = ctx.params
    assert p["variants"] == ("h12",) and p["spec_files"] == ("my.yaml",) and p["callables"] == ("f.py:g",)
    assert (p["c_dtype"], p["arrays"], p["precision"], p["max_reps"], p["no_flush"], p["seed"], p["interleave"]) == (
        "bf16", "torch", 1.0, 9, True, 4, True)


def test_confirmations_time_each_contender_beside_the_baseline_in_turns(tmp_path, capsys):
    # the first runs: at A r16 125% and r13 50% (one contender); at B r13 200% and r16 195% (two, within 5%)
    runs = {A: _run(A, {"r13": 2.0, "r16": 0.8}), B: _run(B, {"r13": 0.5, "r16": 1 / 1.95})}
    kids = Children(runs, again_pct={"r16": 1.04, "r13": 1.5}, selectors={"13": "r13", "16": "r16"})
    req = _request(tmp_path, (A, B), confirm=True, max_reps=2000, names={"r13": ("13",), "r16": ("16",)})
    assert lib.run_sweep(req, [lib.LocalSlot(None, kids)], print) == []
    first_a, again_a, first_b, again_b13, again_b16 = kids.commands
    assert "--interleave" not in first_a and first_a[4] == "13-16"
    assert again_a[2:5] == ["gemmprof", "run", "16"] and [again_b13[4], again_b16[4]] == ["13", "16"]
    assert "--interleave" in again_a and "--no-cublas" not in again_a
    assert all(c[c.index("--max-reps") + 1] == "2000" for c in kids.commands)
    assert (tmp_path / "confirm_1000x1000x1000_r16.json").is_file()
    sweep = lib.summarize_dir(req)
    assert sweep.best_at(A) == ("r16", pytest.approx(104)) and len(sweep.confirmed) == 3
    assert sweep.best_at(B) == ("r13", pytest.approx(150))  # the higher of its two confirmations
    # a resumed sweep keeps a shape's run and the confirmations there: here only the missing one runs again
    (tmp_path / "confirm_1000x1000x1000_r16.json").unlink()
    assert lib.run_sweep(req, [lib.LocalSlot(None, kids)], print) == []
    assert len(kids.commands) == 6 and "--interleave" in kids.commands[-1] and kids.commands[-1][4] == "16"
    assert "r16 again beside the baseline, in turns" in capsys.readouterr().out
    # a record keeps the files gzipped: the summary reads them as they are
    for f in tmp_path.glob("*.json"):
        f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    again = lib.summarize_dir(req)
    assert again.cells == sweep.cells and again.confirmed == sweep.confirmed
    assert again.files[0] == "run_1000x1000x1000.json.gz"


def test_a_confirmation_against_another_variant_runs_that_variant_beside_it(tmp_path):
    run = _run(A, {"r13": 1.0, "r16": 0.8, "r17": 0.81})
    req = _request(tmp_path, (A,), confirm=True, baseline="r13",
                   names={"r13": ("13",), "r16": ("16",), "r17": ("--spec", "r17.yaml")})
    assert lib.contenders(run, req) == ["r16", "r17"]
    assert lib._confirm_selectors(run, "r17", req) == ("--spec", "r17.yaml", "13")


def test_a_records_single_confirmation_file_still_reads(tmp_path):
    # records made before every contender was confirmed hold one confirm_MxNxK.json per shape
    _run(A, {"r13": 2.0, "r16": 0.8}).save(tmp_path / "run_1000x1000x1000.json")
    _run(A, {"r16": 1 / 1.04}).save(tmp_path / "confirm_1000x1000x1000.json")
    _run(A, {"r13": 1.0}).save(tmp_path / "confirm_1000x1000x10000_r13.json")  # another shape's name, not A's
    assert [f.name for f in lib.confirmation_files(tmp_path, A)] == ["confirm_1000x1000x1000.json"]
    assert lib.summarize_dir(_request(tmp_path, (A,))).best_at(A) == ("r16", pytest.approx(104))


def test_contenders_are_the_variants_within_five_percent_of_the_best(tmp_path):
    req = _request(tmp_path, (A,))
    assert lib.contenders(_run(A, {"r13": 1.0, "r16": 1.04, "r17": 1.06}), req) == ["r13", "r16"]  # 100, 96.2, 94.3%
    assert lib.contenders(_run(A, {"r13": None}), req) == []


def test_shapes_are_dealt_out_to_every_worker_at_once(tmp_path):
    shapes = [GemmShape(64 * i, 256, 256) for i in range(1, 7)]
    runs = {s: _run(s, {"r16": 1.0}) for s in shapes}
    both = threading.Barrier(2, timeout=10)  # the first two children wait for each other: they run at once

    entered = []  # the GPU each child saw, in the order they started (the stand-in's envs: the order they wrote)

    class Parallel(Children):
        def __call__(self, cmd, log_path, env):
            with self.lock:
                entered.append(env["CUDA_VISIBLE_DEVICES"])
                first_two = len(entered) <= 2
            if first_two:
                both.wait()
            return super().__call__(cmd, log_path, env)

    kids = Parallel(runs)
    slots = [lib.LocalSlot("0", kids), lib.LocalSlot("3", kids)]
    assert lib.run_sweep(_request(tmp_path, shapes), slots, print) == []
    assert len(kids.commands) == 6 and all(kept for s in shapes if (kept := lib.kept(lib.results_file(tmp_path, s))))
    assert set(entered[:2]) == {"0", "3"} and set(entered) == {"0", "3"}  # each child sees one GPU


def test_a_folder_of_another_sweep_is_refused_before_anything_runs(tmp_path):
    _run(A, {"r13": 1.0}).save(tmp_path / "run_1000x1000x1000.json")
    with pytest.raises(InputError, match=r"run_1000x1000x1000.json holds no r16 \(a run of another sweep\)"):
        lib.check_kept(_request(tmp_path, (A, B)), ("r13", "r16"))
    _run(B, {"r13": 1.0}).save(tmp_path / "run_1000x1000x1000.json")
    with pytest.raises(InputError, match="is a run at 4096x4096x4096"):
        lib.check_kept(_request(tmp_path, (A,)), ("r13",))
    _run(A, {"r13": 1.0}).save(tmp_path / "run_1000x1000x1000.json")
    lib.check_kept(_request(tmp_path, (A,)), ("r13",))  # the same sweep: kept


def test_summaries_never_replace_one_another(tmp_path):
    sweep = summarize(_runs(), "fp32")
    first = write_summary(sweep, tmp_path, plot=False)
    assert [p.name for p in first] == ["summary.json", "summary.csv", "summary-headline.csv", "summary.txt"]
    before = {p: p.read_bytes() for p in first}
    second = write_summary(summarize(_runs()[:1], "fp32"), tmp_path, plot=False)
    assert second[0].name.startswith("summary-") and second[0].name.endswith("Z.json")
    assert all(p.read_bytes() == b for p, b in before.items())  # the first is as it was
    third = write_summary(sweep, tmp_path, plot=False)
    assert len({p.name for p in (*first, *second, *third)}) == 12  # within one second too: -2
    assert load_sweep(second[0]).shapes == (A,)


def test_the_plot_draws_each_layer_against_the_tokens(tmp_path):
    from gemmprof.render.sweep_plot import plot_sweep

    shapes = {GemmShape(t, 6144, 4096): "qkv_proj" for t in (1, 16)} | {GemmShape(t, 4096, 4096): "o_proj"
                                                                     for t in (1, 16)}
    runs = [(s.label, _run(s, {"r13": 1.0, "r16": 0.9})) for s in shapes]
    path = plot_sweep(summarize(runs, "fp32", layers=shapes, model="m"), tmp_path / "p.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    flat = plot_sweep(summarize(_runs(), "fp32"), tmp_path / "q.png")
    assert flat.stat().st_size > 10_000


def test_a_long_title_is_wrapped_inside_the_figure():
    """One panel (a model's sweep of one callable) with a baseline named at length: on the H200 the title ran past
    both edges of the figure ("...mprof sweep (bf16, llama3_8b): % of torch.matmul on NVIDIA H...")."""
    from gemmprof.render.sweep_plot import figure

    shapes = {GemmShape(t, 4096, 4096): "o_proj" for t in (16, 128)}
    runs = [(s.label, _run(s, {"r13": 1.0})) for s in shapes]
    sweep = summarize(runs, "fp32", layers=shapes, model="llama3_8b_with_a_long_name")
    sweep = dataclasses.replace(sweep, device="NVIDIA H200 with a long marketing name")
    fig = figure(sweep)
    fig.canvas.draw()
    box = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    assert "\n" in fig._suptitle.get_text()
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1


# -- scripts/shape_sweep.py: the command's arguments, passed on -----------------------------------------------------
def _script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("shape_sweep", ROOT / "scripts" / "shape_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_passes_its_arguments_to_gemmprof_sweep(tmp_path, capsys):
    mod = _script()
    # gpu_batch.sh's sweep_fp16 command line, with --stand-in instead of the GPU
    args = ["h4", "h12", "--dtype", "fp16", "--shapes", "1024 4095x4097x1024", "--budget", "0.3", "--confirm",
            "--max-reps", "2000", "--out-dir", str(tmp_path / "s"), "--resume", "--stand-in", "--no-plot"]
    assert mod.main(args) == 0
    assert load_sweep(tmp_path / "s" / "summary.json").shapes == parse_shapes("1024 4095x4097x1024")
    assert mod.main(["--dtype", "fp16", "--out-dir", str(tmp_path / "none"), "--summarize-only"]) == 2
    assert mod.main(["13", "--dtype", "fp32", "--out-dir", str(tmp_path), "--shapes", "12x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2:] == [f"error: --out-dir {tmp_path / 'none'}: not an existing folder (nothing to summarise)",
                        "error: --shapes: line 1: '12x' is not a shape (N for N x N x N, or MxNxK)"]


def test_an_interleaved_sweep_times_each_shapes_variants_in_turns(tmp_path):
    from click.testing import CliRunner

    from gemmprof.cli import cli

    runs = {A: _run(A, {"r13": 2.0, "r16": 0.8})}
    kids = Children(runs, selectors={"13": "r13", "16": "r16"})
    req = _request(tmp_path, (A,), interleave=True, names={"r13": ("13",), "r16": ("16",)})
    assert lib.run_sweep(req, [lib.LocalSlot(None, kids)], print) == []
    (first,) = kids.commands
    assert "--interleave" in first and first[4] == "13-16"
    # the command line sets it; run has no --interleave of its own to pass through --run-option
    out = CliRunner().invoke(cli, ["sweep", "13", "--dtype", "fp16", "--run-option", "--interleave", "--stand-in",
                                   "--shapes", "1024", "--out-dir", str(tmp_path / "x")])
    assert out.exit_code != 0 and "sets --interleave itself" in str(out.exception)
    assert "--interleave" in CliRunner().invoke(cli, ["sweep", "--help"]).output


def test_the_sweeps_default_budget_is_runs_and_reaches_each_child(tmp_path):
    """A sweep times each variant as long as `gemmprof run` does by default (1 s): at 0.3 s, in turns of 0.03 s, h9
    read ahead of h12 where at 1 s it ran behind (benchmarks/2026-11-29_h200_sweep_1s)."""
    from click.testing import CliRunner

    from gemmprof.cli import cli
    from gemmprof.commands import run, sweep

    def default(command):
        return next(p.default for p in command.command.params if p.name == "budget")

    assert default(sweep) == default(run) == 1.0
    out = CliRunner().invoke(cli, ["sweep", "13", "--dtype", "fp32", "--stand-in", "--shapes", "1024", "--out-dir",
                                   str(tmp_path / "s"), "--no-plot"])
    assert out.exit_code == 0, out.output
    (path,) = (tmp_path / "s").glob("run_*.json")
    command = json.loads(path.read_text())["command"].split()  # the child's command line, as the stand-in ran it
    assert command[command.index("--budget") + 1] == "1.0"
