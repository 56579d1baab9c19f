"""`gemmprof sweep` from the command line, with the stand-in child run (`--stand-in`: invented, deterministic runs,
no GPU): a model's layers in one command, several dtypes kept apart, workers per GPU and through Ray,
--summarize-only that never replaces a summary, and each class of bad input as one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

from clitools import invoke
from test_model_config import LLAMA3_8B, _bad_token_lists

from gemmprof.catalog.model_config import NEEDED
from gemmprof.results.run import load_run
from gemmprof.results.sweep import load_sweep

ROOT = Path(__file__).resolve().parents[1]
TRITON = f"{ROOT}/examples/triton_matmul/triton_matmul.py:matmul"
LLAMA = str(ROOT / "examples" / "models" / "llama3_8b.json")


def sweep(runner, *args):
    return invoke(runner, ["sweep", *map(str, args), "--stand-in"])


def test_a_triton_kernel_over_llama3_8b_in_one_command(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default folder: sweep-MODEL-DTYPE
    r = sweep(runner, "--callable", TRITON, "--model", LLAMA, "--dtype", "bf16", "--tokens", "1,16")
    assert r.exit_code == 0, r.output
    out = tmp_path / "sweep-llama3_8b-bf16"
    s = load_sweep(out / "summary.json")
    assert len(s.shapes) == 10 and s.model == "llama3_8b" and s.dtype == "bf16"
    assert s.layers[:5] == ("qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head")
    assert [x.label for x in s.shapes[:5]] == ["1x6144x4096", "1x4096x4096", "1x28672x4096", "1x4096x14336",
                                               "1x128256x4096"]
    assert s.variants == ("triton_matmul.matmul",)
    assert {c.baseline for c in s.cells} == {"cublas_bf16"} and all(c.pct for c in s.cells)
    first = load_run(out / "run_1x6144x4096.json")
    assert "--callable" in first.command and "--dtype bf16" in first.command
    headline = (out / "summary-headline.csv").read_text().splitlines()
    assert headline[0].startswith("dtype,variant,shapes,geomean") and headline[1].startswith("bf16,best variant")
    assert "geometric mean" in (out / "summary.csv").read_text()
    if _has_matplotlib():
        assert (out / "summary.png").stat().st_size > 10_000
    # again: every run kept, a new summary beside the first
    again = sweep(runner, "--callable", TRITON, "--model", LLAMA, "--dtype", "bf16", "--tokens", "1,16")
    assert again.exit_code == 0 and again.output.count("kept run_") == 10
    assert len(list(out.glob("summary-*Z.json"))) == 1


def _has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_two_dtypes_are_two_sweeps_and_one_headline_keeps_them_apart(runner, tmp_path):
    r = sweep(runner, "h12", "h6", "--dtype", "fp16,bf16", "--shapes", "1024 2048x4096x1024", "--out-dir", tmp_path,
              "--highlight", "h12", "--no-plot", "--format", "csv")
    assert r.exit_code == 0, r.output
    fp16, bf16 = load_sweep(tmp_path / "fp16" / "summary.json"), load_sweep(tmp_path / "bf16" / "summary.json")
    assert fp16.dtype == "fp16" and bf16.dtype == "bf16" and all(v.endswith("_bf16") for v in bf16.variants)
    assert {c.baseline for c in fp16.cells} == {"cublas_hgemm"} and {c.baseline for c in bf16.cells} == {"cublas_bf16"}
    rows = (tmp_path / "headline.csv").read_text().splitlines()
    assert [row.split(",")[:2] for row in rows[1:]] == [
        ["fp16", "best variant per shape"], ["fp16", f"{fp16.variants[0]} (highlight)"], ["fp16", fp16.variants[1]],
        ["bf16", "best variant per shape"], ["bf16", f"{bf16.variants[0]} (highlight)"], ["bf16", bf16.variants[1]]]


def test_one_child_per_gpu_each_seeing_only_its_own(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    r = sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256 512 768 1024", "--gpus", "all", "--out-dir",
              tmp_path, "--no-plot")
    assert r.exit_code == 0, r.output
    assert "on 2 worker(s): GPU 4, GPU 5" in r.output
    seen = [load_run(p).device["cuda_visible_devices"] for p in tmp_path.glob("run_*.json")]
    assert len(seen) == 4 and set(seen) <= {"4", "5"}
    bad = sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256", "--gpus", "3", "--out-dir", tmp_path / "x")
    assert bad.exit_code == 2 and "--gpus 3: only 2 GPU(s) visible" in bad.output


def test_ray_actors_run_the_shapes_and_send_their_files_back(runner, tmp_path, monkeypatch, ray):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    r = sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256 512 768", "--ray", "local", "--gpus", "2",
              "--out-dir", tmp_path / "s", "--no-plot")
    assert r.exit_code == 0, r.output
    assert "on 2 worker(s): Ray actor 0, Ray actor 1" in r.output
    assert len(load_sweep(tmp_path / "s" / "summary.json").shapes) == 3
    assert "stand-in gemmprof run" in (tmp_path / "s" / "run_256x256x256.log").read_text()
    # a node runs its child in a folder of its own: the kernel files go to it as absolute paths
    monkeypatch.chdir(ROOT)
    r = sweep(runner, "--callable", "examples/triton_matmul/triton_matmul.py:matmul", "--dtype", "bf16", "--shapes",
              "256", "--ray", "local", "--gpus", "1", "--out-dir", tmp_path / "c", "--no-plot")
    assert r.exit_code == 0, r.output
    assert f"--callable {ROOT}/examples/triton_matmul/triton_matmul.py:matmul" in load_run(
        tmp_path / "c" / "run_256x256x256.json").command


def test_without_ray_the_ray_option_is_one_line(runner, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as where Ray is not installed
    r = sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256", "--ray", "auto", "--out-dir", tmp_path)
    assert r.exit_code == 1 and r.output.startswith("error: --ray needs Ray: pip install 'gemmprof[ray]'")
    assert not any(tmp_path.glob("run_*"))


def test_a_shape_whose_child_crashed_is_named_and_the_summary_holds_the_others(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMPROF_STANDIN_FAIL", "512x512x512")
    r = sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256 512", "--out-dir", tmp_path, "--no-plot")
    assert r.exit_code == 1
    assert "error: no results file at fp16: 512x512x512 (see run_MxNxK.log there" in r.output
    assert load_sweep(tmp_path / "summary.json").shapes[0].label == "256x256x256"
    assert not (tmp_path / "run_512x512x512.json").exists()
    monkeypatch.delenv("GEMMPROF_STANDIN_FAIL")
    assert sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256 512", "--out-dir", tmp_path,
                 "--no-plot").exit_code == 0


def test_summarize_only_writes_beside_the_old_summary_or_refuses_where_runs_are_missing(runner, tmp_path):
    assert sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256 512", "--out-dir", tmp_path,
                 "--no-plot").exit_code == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    # the record keeps 2 shapes; a summary of 3 would be a summary of part of the sweep: refused, nothing written
    r = invoke(runner, ["sweep", "--dtype", "fp16", "--shapes", "256 512 768 1024", "--out-dir", str(tmp_path),
                        "--summarize-only"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert (f"error: --summarize-only: {tmp_path} lacks run_768x768x768.json, run_1024x1024x1024.json (2 of 4 "
            "shapes)") in r.output
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # every run there: a new summary beside the old one, the old one as it was
    r = invoke(runner, ["sweep", "--dtype", "fp16", "--shapes", "256 512", "--out-dir", str(tmp_path),
                        "--summarize-only", "--baseline", "cuBLAS", "--fast-p", "0.8", "--no-plot"])
    assert r.exit_code == 0, r.output
    new = [p for p in tmp_path.iterdir() if p.name not in before]
    assert sorted(p.suffix for p in new) == [".csv", ".csv", ".json", ".txt"]
    assert all(p.name.startswith("summary-") for p in new)
    assert all((tmp_path / name).read_bytes() == data for name, data in before.items())
    summary = load_sweep(next(p for p in new if p.suffix == ".json"))
    assert summary.p == 0.8 and len(summary.shapes) == 2


def test_the_lead_options_of_run_pass_through(runner, tmp_path):
    """--regime, --fill and --l2 reach each child as given where `gemmprof run` has them; where it does not yet,
    one line says so before anything runs. --run-option passes any other option."""
    from gemmprof.commands.run import command as run_command

    known = {o for p in run_command.params for o in p.opts}
    for flag in ("--regime", "--fill", "--l2"):
        r = sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256", flag, "x", "--out-dir", tmp_path / flag[2:])
        if flag in known:  # the value is run's to judge
            assert "no such option" not in r.output
        else:
            assert r.exit_code == 2 and f"gemmprof run refuses the sweep's options: No such option '{flag}'" in r.output
            assert not (tmp_path / flag[2:] / "run_256x256x256.json").exists()
    r = sweep(runner, "h12", "--dtype", "fp16", "--shapes", "256", "--run-option", "--seed 7", "--run-option",
              "--no-flush", "--out-dir", tmp_path / "ok", "--no-plot")
    assert r.exit_code == 0, r.output
    assert load_run(tmp_path / "ok" / "run_256x256x256.json").command.endswith("--seed 7 --no-flush")


def _config(tmp_path, name, doc):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


def _bad_command_lines(tmp_path):
    """(arguments, the one line expected): every class of bad input of the command."""
    base = ["h12", "--dtype", "fp16"]
    for key in NEEDED:  # a config without each needed key
        path = _config(tmp_path, f"no_{key}", {k: v for k, v in LLAMA3_8B.items() if k != key})
        yield [*base, "--model", path], f"error: --model {path}: no {key} (a model config needs"
    for key, value in (("hidden_size", 0), ("vocab_size", -5), ("intermediate_size", 14336.5), ("head_dim", "128")):
        path = _config(tmp_path, f"bad_{key}", {**LLAMA3_8B, key: value})
        yield [*base, "--model", path], f"error: --model {path}: {key}: "
    path = _config(tmp_path, "groups", {**LLAMA3_8B, "num_key_value_heads": 6})
    yield [*base, "--model", path], "num_key_value_heads 6 does not divide num_attention_heads 32"
    path = _config(tmp_path, "nohead", {**{k: v for k, v in LLAMA3_8B.items() if k != "head_dim"},
                                        "num_attention_heads": 24, "num_key_value_heads": 8})
    yield [*base, "--model", path], "hidden_size 4096 is not a multiple of num_attention_heads 24: give head_dim"
    yield [*base, "--model", tmp_path / "missing.json"], "cannot read"
    for text, match in _bad_token_lists():  # a token list that is not positive integers
        yield [*base, "--model", LLAMA, "--tokens", text], match
    yield [*base, "--shapes", ""], "error: --shapes: no shapes given"
    yield [*base, "--shapes", " , "], "error: --shapes: no shapes given"
    yield [*base, "--shapes", "64x0x64"], "error: --shapes: line 1: 64x0x64: N"
    yield [*base, "--tokens", "16"], "error: --tokens: only with --model"
    yield [*base, "--shapes", "64", "--model", LLAMA], "error: --shapes and --model: give one of them"
    yield ["--dtype", "fp16", "--shapes", "64"], "error: name what to sweep"
    yield ["h12", "--dtype", "fp64"], "error: --dtype 'fp64': 'fp64' is not a dtype `gemmprof run` takes"
    yield ["h12", "--dtype", "fp16,"], "error: --dtype 'fp16,': '' is not a dtype"
    yield ["nope", "--dtype", "fp16", "--shapes", "64"], "unknown variant 'nope'"
    yield [*base, "--c-dtype", "fp16"], "error: --c-dtype fp16: only for --callable functions"
    yield [*base, "--shapes", "64", "--run-option", "-o x.json"], "error: --run-option '-o x.json': the sweep sets -o"
    yield [*base, "--shapes", "64", "--run-option", "--dtype=bf16"], "the sweep sets --dtype itself"
    yield [*base, "--shapes", "64", "--run-option", "--bogus 3"], "gemmprof run refuses the sweep's options: No such"
    yield [*base, "--shapes", "64", "--run-option", "'--seed"], "error: --run-option \"'--seed\": No closing quotation"
    yield [*base, "--shapes", "64", "--run-option", "  "], "error: --run-option: empty"
    yield [*base, "--shapes", "64", "--baseline", "torch.matmul"], "its row comes with --callable runs only"
    yield [*base, "--shapes", "64", "--baseline", "nope"], "error: --baseline nope: not a variant of this sweep"
    yield [*base, "--shapes", "64", "--baseline", " "], "error: --baseline: empty"
    yield [*base, "--shapes", "64", "--highlight", "h99"], "error: --highlight h99: not a variant of this sweep"
    yield [*base, "--shapes", "64", "--gpus", "x"], "error: --gpus: 'x' is not a number >= 1 or 'all'"
    yield [*base, "--shapes", "64", "--fast-p", "0"], "'0' must be greater than 0"
    yield ["h12", "--callable", TRITON, "--dtype", "fp16", "--shapes", "64", "--baseline", "torch.matmul",
           "--confirm"], "--confirm with --baseline torch.matmul"
    yield ["--dtype", "fp16", "--shapes", "64", "--summarize-only", "--gpus", "2"], "--gpus with --summarize-only"


def test_each_class_of_bad_input_is_one_line_and_runs_nothing(runner, tmp_path):
    cases = list(_bad_command_lines(tmp_path))
    # the generator covers each class: every needed key left out, every bad token list
    assert sum("no_" in str(a) for args, _ in cases for a in args if str(a).endswith(".json")) == len(NEEDED)
    assert sum("--tokens" in args and "--model" in args for args, _ in cases) == len(list(_bad_token_lists()))
    for args, expected in cases:
        out = tmp_path / "out"
        r = sweep(runner, *args, "--out-dir", out)
        assert r.exit_code == 2, (args, r.output)
        assert expected in r.output, (args, r.output)
        lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
        assert len(lines) == 1 and "Traceback" not in r.output, (args, r.output)
        assert not out.exists(), args


def test_help_has_no_literal_percent_signs(runner):
    r = invoke(runner, ["sweep", "--help"])
    assert r.exit_code == 0 and "%%" not in r.output and "gemmprof sweep --callable" in r.output
    assert os.path.basename(LLAMA) in r.output
