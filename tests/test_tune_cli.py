"""`gemmprof tune` through the CLI, with the hidden stand-in compiler and GPU (no CUDA needed)."""

import json

from clitools import invoke
from tune_helpers import write_spec

from gemmprof.catalog.tuned_defaults import load_tuned_defaults


def test_help_lists_the_options(runner):
    res = invoke(runner, ["tune", "--help"])
    assert res.exit_code == 0
    for opt in ("--strategy", "--budget-configs", "--budget-minutes", "--cache-dir", "--top", "--keep", "--gpus",
                "--ray", "--serial", "--format", "--plot"):
        assert opt in res.output
    assert "--stand-in" not in res.output


def test_tune_a_rung_keep_and_replay(runner, tmp_path):
    cache = tmp_path / "cache"
    args = ["tune", "10", "--size", "4096", "--stand-in", "--serial", "--cache-dir", str(cache),
            "--budget-configs", "6", "--top", "2"]
    res = invoke(runner, [*args, "-o", str(tmp_path / "r.json"), "--keep", "--plot", str(tmp_path / "p.png")])
    assert res.exit_code == 0, res.output
    assert "256 configurations in the space, 56 left after pruning" in res.output
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["kind"] == "gemmprof.tune" and doc["measured_now"] == 6 and len(doc["configs"]) == 6
    assert (tmp_path / "p.png").stat().st_size > 1000
    kept = load_tuned_defaults(cache, "Stand-in GPU", "warptiling")
    assert kept is not None and kept.params == doc["verdict"]["contenders"][0]["params"]
    res = invoke(runner, [*args, "--format", "csv"])
    assert res.exit_code == 0 and "#,TFLOP/s,median (ms)" in res.output
    res = invoke(runner, [*args, "-o", str(tmp_path / "again.json")])
    again = json.loads((tmp_path / "again.json").read_text())
    assert res.exit_code == 0 and again["measured_now"] == 0 and again["replayed"] == 6
    assert again["verdict"] == doc["verdict"]  # the re-timing is replayed too


def test_bad_input_is_one_line(runner, tmp_path):
    spec = write_spec(tmp_path, tune="tune:\n  NOPE: [1]\n")
    res = invoke(runner, ["tune", "--spec", str(spec), "--stand-in", "--cache-dir", str(tmp_path)])
    assert res.exit_code == 2 and "tune.NOPE: not a parameter" in res.output and "Traceback" not in res.output
    res = invoke(runner, ["tune", "--stand-in", "--cache-dir", str(tmp_path)])
    assert res.exit_code == 2 and "give one rung" in res.output
    res = invoke(runner, ["tune", "10", "--size", "4000", "--stand-in", "--cache-dir", str(tmp_path)])
    assert res.exit_code == 2 and "all 256 configurations are rejected at 4000x4000x4000" in res.output
