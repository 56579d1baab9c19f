"""The command line: help everywhere, the no-GPU commands, and one-line errors with non-zero exits."""

import json
import subprocess
import sys

import pytest
from clitools import invoke

from gemmprof.cli import COMMANDS


def test_help_lists_every_command_without_importing_heavy_modules():
    code = ("import sys; from gemmprof.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "bad = [m for m in ('cupy', 'matplotlib', 'numpy', 'yaml') if m in sys.modules]\n"
            "print('IMPORTED', bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    for name in COMMANDS:
        assert name in out
    assert "IMPORTED []" in out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help_with_examples(runner, name):
    r = invoke(runner, [name, "--help"])
    assert r.exit_code == 0, r.output
    assert "Usage:" in r.output and "gemmprof" in r.output


def test_model_json_reproduces_seed004(runner):
    r = invoke(runner, ["model", "--size", "4092", "--beta", "1", "--peak-tflops", "30", "--bandwidth", "768",
                        "--flop-convention", "seed004", "--tiles", "1,1,1,1", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    summary = {row["quantity"]: row["value"] for row in doc["tables"][0]["rows"]}
    assert round(summary["FLOPs"]) == 137
    assert round(summary["bytes read (minimum)"]) == 201
    assert round(summary["bytes written (minimum)"]) == 67
    assert round(doc["tables"][1]["rows"][0]["gmem_gb"]) == 548


def test_model_ladder_table_for_h100(runner):
    r = invoke(runner, ["model", "--size", "4096", "--gpu", "h100", "--ladder", "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert "naive" in r.output and "warptiling" in r.output


def test_occupancy_json(runner, tmp_path):
    out = tmp_path / "occ.json"
    r = invoke(runner, ["occupancy", "-t", "1024", "-r", "32", "--static-smem", "8192", "--gpu", "h100", "-o", str(out)])
    assert r.exit_code == 0, r.output
    occ = json.loads(out.read_text())["occupancy"]
    assert occ["theoretical_occupancy"] == 1.0 and occ["block_limit_shared_mem"] == 3


def test_gpus_list_and_detail(runner):
    r = invoke(runner, ["gpus", "--format", "csv"])
    assert r.exit_code == 0 and "H100 SXM" in r.output
    r = invoke(runner, ["gpus", "h100", "--format", "json"])
    rows = json.loads(r.output)["rows"]
    assert all(row["source"] for row in rows)


def test_list_shows_the_ladder(runner):
    r = invoke(runner, ["list", "--format", "json"])
    rows = json.loads(r.output)["rows"]
    assert [row["id"] for row in rows][:2] == ["1", "1b"]
    assert any(row["dtype"] == "fp16" for row in rows)


@pytest.mark.parametrize("args,message", [
    (["model", "--size", "0"], "--size': 0 is not in the range 1<=x<=2147483647"),
    (["model", "--size", "64", "--gpu", "nope"], "unknown GPU 'nope'"),
    (["occupancy", "-t", "4096", "-r", "32"], "--threads: 4096 is outside"),
    (["gpus", "--gpu-file", "/no/such.yaml"], "/no/such.yaml: cannot read"),
    (["model", "--tiles", "1,2", "--size", "8"], "--tiles '1,2'"),
    (["run", "nope", "--size", "64"], "unknown variant 'nope'"),
    (["run", "5", "--param", "BK=x"], "expected NAME=INTEGER"),
    (["model", "--size", "64", "-o", "/proc/no/x.json"], "cannot write"),
])
def test_errors_are_one_line_and_non_zero(runner, args, message):
    r = invoke(runner, args)
    assert r.exit_code != 0
    err = r.output.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], r.output
    assert "Traceback" not in r.output


def test_malformed_profile_file_names_file_and_line(runner, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    r = invoke(runner, ["gpus", "--gpu-file", str(bad)])
    assert r.exit_code == 2 and "bad.yaml: line" in r.output


@pytest.mark.parametrize("args", [["gpus", "--profile"], ["model", "--size", "64", "--profile"],
                                  ["occupancy", "-t", "256", "-r", "32", "--profile"]])
def test_old_profile_spelling_of_gpu_file_still_works_and_says_so(runner, args):
    """`--profile FILE.yaml` was the GPU spec sheet's option before "profile" came to mean Nsight Compute's: scripts
    keep working, and stderr names the new spelling."""
    from gemmprof.catalog.paths import ROOT

    r = invoke(runner, [*args, str(ROOT / "profiles" / "h200.yaml")])
    assert r.exit_code == 0, r.output
    assert "--profile FILE.yaml is the old spelling of --gpu-file" in r.stderr and "H200" in r.stdout
    both = invoke(runner, [*args, "x.yaml", "--gpu-file", "y.yaml"])
    assert both.exit_code != 0 and "--gpu-file and --profile (its old name): give one" in both.output


def test_run_without_cupy_says_how_to_get_it(runner, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    r = invoke(runner, ["run", "1", "--size", "64"])
    assert r.exit_code != 0 and "pip install 'gemmprof[cuda12]'" in r.output
