"""The shape sweep (scripts/shape_sweep.py, gemmprof.results.sweep): shape lists, and the geometric means, minima and
best rung per shape computed from stand-in run results built from the typed results classes (no GPU)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from gemmprof.errors import InputError
from gemmprof.model.traffic import GemmShape
from gemmprof.render.sweep_tables import sweep_table
from gemmprof.results.run import Measurement, ModelFigures, RunResult, VariantResult
from gemmprof.results.sweep import BEST, DEFAULT_SHAPES, SweepSummary, load_sweep, parse_shapes, summarize

ROOT = Path(__file__).resolve().parents[1]
A, B, C = GemmShape(1000, 1000, 1000), GemmShape(4096, 4096, 4096), GemmShape(4095, 4097, 1023)


def _script():
    spec = importlib.util.spec_from_file_location("shape_sweep", ROOT / "scripts" / "shape_sweep.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _variant(name, shape, ms, kind="ladder", status="ok", dtype="fp32"):
    flops = 2 * shape.M * shape.N * shape.K
    return VariantResult(id="cuBLAS" if kind == "baseline" else name, name=name, title=name, dtype=dtype, kind=kind,
                         status=status, timing=Measurement((ms * 1.01, ms, ms, ms * 0.99, ms)) if ms else None,
                         model=ModelFigures(flops, 1.0))


def _run(shape, rungs: dict, cublas_ms=1.0):
    variants = [_variant(n, shape, ms, status="ok" if ms else "rejected") for n, ms in rungs.items()]
    variants.append(_variant("cublas_sgemm", shape, cublas_ms, kind="baseline"))
    return RunResult(shape=shape, alpha=1.0, beta=0.0, device={"name": "stand-in H100"}, gpu_spec="h100", seed=1,
                     timing_method={}, variants=variants)


def _runs():
    # % of cuBLAS: at A 50 and 125, at B 200 and 80, at C rung 13 rejected and 100
    return [("a.json", _run(A, {"r13": 2.0, "r16": 0.8})), ("b.json", _run(B, {"r13": 0.5, "r16": 1.25}, 1.0)),
            ("c.json", _run(C, {"r13": None, "r16": 3.0}, 3.0))]


def test_geomean_min_and_best_rung_per_shape():
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


def test_a_shape_no_rung_ran_counts_as_missing_for_the_best_too():
    sweep = summarize([*_runs()[:2], ("c.json", _run(C, {"r13": None, "r16": None}))], "fp32")
    assert sweep.best.missing == (C.label,) and sweep.best.shapes == 2
    assert sweep.best.geomean_pct == pytest.approx(math.sqrt(125 * 200))


def test_without_cublas_no_percentages_and_one_run_per_shape():
    run = _run(A, {"r13": 1.0})
    run.variants = [v for v in run.variants if v.kind != "baseline"]
    sweep = summarize([("a.json", run)], "fp32")
    assert sweep.pct("r13", A) is None and sweep.rung("r13").geomean_pct is None
    with pytest.raises(InputError, match="a second run at 1000x1000x1000"):
        summarize([("a.json", _run(A, {})), ("again.json", _run(A, {}))], "fp32")


def test_summary_loads_back_as_the_same_type(tmp_path):
    sweep = summarize(_runs(), "fp32")
    sweep.save(tmp_path / "s.json")
    back = load_sweep(tmp_path / "s.json")
    assert isinstance(back, SweepSummary) and back == sweep
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["best"]["geomean_pct"] == pytest.approx(sweep.best.geomean_pct)  # derived figures for readers
    assert [r["variant"] for r in doc["best_per_shape"]] == ["r16", "r13", "r16"]
    with pytest.raises(InputError, match="not a gemmprof sweep"):
        SweepSummary.from_dict({"kind": "gemmprof.run"})


def test_table_has_a_row_per_shape_then_mean_and_minimum():
    table = sweep_table(summarize(_runs(), "fp32"))
    rows = {r["shape"]: r for r in table.rows}
    assert list(rows) == [A.label, B.label, C.label, "geometric mean", "minimum"]
    assert rows[C.label]["r13"] is None and rows[C.label]["best_rung"] == "r16"
    assert rows["geometric mean"]["r16"] == pytest.approx(100) and rows["minimum"]["best_pct"] == pytest.approx(100)
    assert any("r13: no % of cuBLAS at 4095x4097x1023 (rejected)" in n for n in table.notes)


def test_shape_lists_parse_and_bad_items_are_named():
    assert parse_shapes("1024, 4095x4097x1024\n# a comment\n16X4096x4096  1024") == (
        GemmShape(1024, 1024, 1024), GemmShape(4095, 4097, 1024), GemmShape(16, 4096, 4096))
    for text, match in (("1024 x4096", "line 1: 'x4096' is not a shape"), ("1x2", "'1x2' is not a shape"),
                        ("64\n0x5x5", "line 2: 0x5x5: M"), ("# nothing", "no shapes given")):
        with pytest.raises(InputError, match=match):
            parse_shapes(text)


def test_default_shapes_cover_the_issue():
    shapes = parse_shapes(DEFAULT_SHAPES)
    assert {GemmShape(s, s, s) for s in (1024, 2048, 4096, 8192)} <= set(shapes)
    ms = {s.M for s in shapes if s.N in (4096, 11008, 14336) and s.K in (4096, 11008, 14336)}
    assert min(ms) == 16 and max(ms) == 16384
    assert max(s.K for s in shapes) == 16384
    assert any(s.M % 8 and s.N % 8 for s in shapes)  # off the tiles
    assert all(s.K % 8 == 0 for s in shapes)  # the Hopper rungs' TMA needs 16-byte rows of fp16


def test_script_runs_one_child_per_shape_and_summarizes(tmp_path, capsys):
    mod = _script()
    runs = dict((r.shape, r) for _, r in _runs())
    commands = []

    def execute(cmd, **kwargs):  # the child `gemmprof run`: writes its results file, except at C
        commands.append(cmd)
        shape = GemmShape(*(int(cmd[cmd.index(flag, 4) + 1]) for flag in ("-m", "-n", "-k")))  # after python -m
        if shape != C:
            runs[shape].save(cmd[cmd.index("-o") + 1])
        return type("Done", (), {"returncode": 0 if shape != C else 1})()

    failed = mod.run_shapes(["13-16"], (A, B, C), "fp32", 0.2, tmp_path, resume=False, execute=execute)
    assert failed == [C.label] and len(commands) == 3
    assert commands[0][2:13] == ["gemmprof", "run", "13-16", "-m", "1000", "-n", "1000", "-k", "1000", "--dtype", "fp32"]
    assert commands[0][commands[0].index("--budget") + 1] == "0.2" and "--no-cublas" not in commands[0]
    assert commands[0][commands[0].index("-o") + 1] == str(tmp_path / "run_1000x1000x1000.json")
    assert (tmp_path / "run_1000x1000x1000.log").exists()
    again = mod.run_shapes(["13-16"], (A, B), "fp32", 0.2, tmp_path, resume=True, execute=execute)
    assert again == [] and len(commands) == 3  # --resume: both results files kept, nothing run
    sweep = mod.summarize_dir((A, B, C), "fp32", tmp_path)
    assert sweep.shapes == (A, B) and load_sweep(tmp_path / "summary.json") == sweep
    assert (tmp_path / "summary.csv").read_text().startswith("shape,")
    assert "geometric mean" in capsys.readouterr().out
    # a shape without a results file is left out of the summary, named, and fails the script
    assert mod.main(["--dtype", "fp32", "--out-dir", str(tmp_path), "--summarize-only", "--shapes", "1000 4095x4097x1023"]) == 1
    assert capsys.readouterr().err.startswith("no results file at 4095x4097x1023")


def test_confirmations_replace_the_best_of_their_shape_and_load_back(tmp_path):
    # A's first run: r16 best at 125%, r13 at 50%; r16 timed again beside cuBLAS alone makes 104%. B: r13 at 200%
    # and r16 at 80% in the first run, both confirmed: 150% and 160%, so r16 is B's best. C has no confirmation.
    again = ("confirm_a_r16.json", _run(A, {"r16": 1 / 1.04}))
    b13, b16 = ("confirm_b_r13.json", _run(B, {"r13": 1 / 1.5})), ("confirm_b_r16.json", _run(B, {"r16": 1 / 1.6}))
    sweep = summarize(_runs(), "fp32", [again, b13, b16])
    assert sweep.best_at(A) == ("r16", pytest.approx(104)) and sweep.best_at(B) == ("r16", pytest.approx(160))
    assert sweep.best_at(C) == ("r16", pytest.approx(100))  # unconfirmed: the first run's
    assert sweep.pct("r16", A) == pytest.approx(125)  # the first run's columns stay as they were
    assert len(sweep.confirmations(B)) == 2 and sweep.files[-1] == "confirm_b_r16.json"
    sweep.save(tmp_path / "s.json")
    assert load_sweep(tmp_path / "s.json") == sweep
    table = sweep_table(sweep)
    assert next(r for r in table.rows if r["shape"] == A.label)["best_pct"] == pytest.approx(104)
    assert any(n.startswith("best: at 2 of 3 shapes the highest of the contenders") for n in table.notes)
    # a confirmation of a shape without a run, a second one of a variant, or one with two variants: named errors
    for bad, match in (([("x.json", _run(GemmShape(8, 8, 8), {"r16": 1.0}))], "x.json: confirms 8x8x8"),
                       ([again, again], "a second confirmation of r16 at 1000x1000x1000"),
                       ([("two.json", _run(A, {"r13": 1.0, "r16": 1.0}))],
                        "one fp32 variant beside cuBLAS, this one 2")):
        with pytest.raises(InputError, match=match):
            summarize(_runs(), "fp32", bad)


def test_script_confirms_each_contender_beside_cublas_in_turns(tmp_path, capsys):
    mod = _script()
    # the first runs: at A r16 125% and r13 50% (one contender); at B r13 200% and r16 195% (two, within 5%)
    runs = {A: _run(A, {"r13": 2.0, "r16": 0.8}), B: _run(B, {"r13": 0.5, "r16": 1 / 1.95})}
    again_pct = {"r16": 1.04, "r13": 1.5}
    commands = []

    def execute(cmd, **kwargs):  # a first run writes `runs`; a confirmation its rung at again_pct
        commands.append(cmd)
        out = cmd[cmd.index("-o") + 1]
        shape = GemmShape(*(int(cmd[cmd.index(flag, 4) + 1]) for flag in ("-m", "-n", "-k")))
        (runs[shape] if "--interleave" not in cmd else _run(shape, {cmd[4]: 1 / again_pct[cmd[4]]})).save(out)
        return type("Done", (), {"returncode": 0})()

    assert mod.run_shapes(["13-16"], (A, B), "fp32", 0.5, tmp_path, resume=False, execute=execute, confirm=True,
                          max_reps=2000) == []
    first_a, again_a, first_b, again_b13, again_b16 = commands
    assert "--interleave" not in first_a and first_a[4] == "13-16"
    assert again_a[2:5] == ["gemmprof", "run", "r16"] and [again_b13[4], again_b16[4]] == ["r13", "r16"]
    assert "--interleave" in again_a and "--no-cublas" not in again_a
    assert all(c[c.index("--max-reps") + 1] == "2000" for c in commands)
    assert again_a[again_a.index("-o") + 1] == str(tmp_path / "confirm_1000x1000x1000_r16.json")
    # the child's command line is one `gemmprof run` parses, with these options
    import click

    from gemmprof.cli import cli

    run = cli.get_command(click.Context(cli), "run")
    ctx = run.make_context("run", again_a[again_a.index("run") + 1:])
    assert ctx.params["interleave"] is True and ctx.params["max_reps"] == 2000
    sweep = mod.summarize_dir((A, B), "fp32", tmp_path)
    assert sweep.best_at(A) == ("r16", pytest.approx(104)) and len(sweep.confirmed) == 3
    assert sweep.best_at(B) == ("r13", pytest.approx(150))  # the higher of its two confirmations
    # --resume keeps a shape's run and the confirmations there: here only the missing one runs again
    (tmp_path / "confirm_1000x1000x1000_r16.json").unlink()
    assert mod.run_shapes(["13-16"], (A, B), "fp32", 0.5, tmp_path, resume=True, execute=execute, confirm=True) == []
    assert len(commands) == 6 and "--interleave" in commands[-1] and commands[-1][4] == "r16"
    assert "r16 again beside cuBLAS, in turns" in capsys.readouterr().out
    # a record keeps the files gzipped: the summary reads them as they are
    import gzip

    for f in tmp_path.glob("*.json"):
        f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    again = mod.summarize_dir((A, B), "fp32", tmp_path)
    assert again.cells == sweep.cells and again.confirmed == sweep.confirmed
    assert again.files[0] == "run_1000x1000x1000.json.gz"


def test_a_records_single_confirmation_file_still_reads(tmp_path):
    # records made before every contender was confirmed hold one confirm_MxNxK.json per shape
    mod = _script()
    _run(A, {"r13": 2.0, "r16": 0.8}).save(tmp_path / "run_1000x1000x1000.json")
    _run(A, {"r16": 1 / 1.04}).save(tmp_path / "confirm_1000x1000x1000.json")
    _run(A, {"r13": 1.0}).save(tmp_path / "confirm_1000x1000x10000_r13.json")  # another shape's name, not A's
    assert [f.name for f in mod.confirmation_files(tmp_path, A)] == ["confirm_1000x1000x1000.json"]
    assert mod.summarize_dir((A,), "fp32", tmp_path).best_at(A) == ("r16", pytest.approx(104))


def test_contenders_are_the_rungs_within_five_percent_of_the_best(tmp_path):
    mod = _script()
    _run(A, {"r13": 1.0, "r16": 1.04, "r17": 1.06}).save(tmp_path / "a.json")  # 100%, 96.2%, 94.3% of cuBLAS
    assert mod.contenders(tmp_path / "a.json", "fp32") == ["r13", "r16"]
    _run(A, {"r13": None}).save(tmp_path / "none.json")
    assert mod.contenders(tmp_path / "none.json", "fp32") == []


def test_script_bad_input_is_one_line_and_an_exit_code(tmp_path, capsys):
    mod = _script()
    assert mod.main(["13", "--dtype", "fp32", "--out-dir", str(tmp_path / "none")]) == 2
    assert mod.main(["13", "--dtype", "fp32", "--out-dir", str(tmp_path), "--shapes", "12x"]) == 2
    assert mod.main(["--dtype", "fp32", "--out-dir", str(tmp_path), "--summarize-only"]) == 2  # no results there
    assert mod.main(["13", "--dtype", "fp32", "--out-dir", str(tmp_path), "--max-reps", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --out-dir {tmp_path / 'none'}: not an existing folder",
                   "error: --shapes: line 1: '12x' is not a shape (N for N x N x N, or MxNxK)",
                   f"error: --out-dir {tmp_path}: no results file of these shapes (run_MxNxK.json)",
                   "error: --max-reps 0: expected at least 1"]
