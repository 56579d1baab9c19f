"""Every tool under scripts/ runs against the current code: CPU runs where the tool has a CPU path, otherwise its
--help and the gemmprof names it imports; gpu_batch.sh parses and names only stages, files, commands and options
that exist."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

import gemmprof
from gemmprof.cli import cli

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
BATCH = SCRIPTS / "gpu_batch.sh"
RECORDS = ROOT / "tests" / "fixtures" / "records"
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def run_script(*args, timeout=120, env=None):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          env=env or ENV, timeout=timeout)


def test_every_script_is_covered_here():
    """A new script needs a test in this file; a removed one leaves its test behind as a failure."""
    covered = {"gpu_batch.sh", "compiler_check.py", "ncu_vs_events.py", "record.py", "tune_speedup.py",
               "tune_multigpu.py", "startup_times.py", "specialize_perf.py", "l2_cold_check.py",  # --help below
               "readme_roofline.py", "phase_clock.py"}
    elsewhere = {"shape_sweep.py": "test_shape_sweep.py", "regime_check.py": "test_callables.py",
                 "fetch_public_kernel.py": "test_examples.py"}  # scripts with a test file of their own
    for script, test in elsewhere.items():
        assert script in (ROOT / "tests" / test).read_text(), f"{test} does not exercise {script}"
    assert {p.name for p in SCRIPTS.iterdir() if p.is_file()} == covered | set(elsewhere)


# -- the gemmprof names each Python script imports exist (also those imported inside functions) ----------------
@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_script_imports_resolve(script):
    tree = ast.parse((SCRIPTS / script).read_text())
    imported = [(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and (n.module or "").startswith("gemmprof") for a in n.names]
    for module, name in imported:
        mod = importlib.import_module(module)
        assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}"), f"{script}: {module}.{name}"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS.glob("*.py")))
def test_script_help_needs_no_gpu(script):
    code = ("import runpy, sys; sys.modules['cupy'] = None; sys.argv = [sys.argv[1], '--help']\n"
            "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit as e:\n"
            "    sys.exit(e.code)")
    res = run_script("-c", code, SCRIPTS / script)
    assert res.returncode == 0, res.stderr
    assert "scripts/" in res.stdout + res.stderr or "usage" in (res.stdout + res.stderr).lower()


# -- phase_clock.py: a real gemmprof run split into start-up, main and exit ---------------------------------------
def test_phase_clock_splits_a_real_run_and_its_phases_add_up():
    res = run_script(SCRIPTS / "phase_clock.py", "--", "list", "--format", "json")
    assert res.returncode == 0, res.stderr
    fields = res.stdout.split()
    phases = dict(zip(fields[::2], map(float, fields[1::2]), strict=True))
    assert set(phases) == {"wall_ms", "start_ms", "main_ms", "exit_ms"}
    assert all(v >= 0 for v in phases.values()) and phases["main_ms"] > 0
    assert abs(phases["start_ms"] + phases["main_ms"] + phases["exit_ms"] - phases["wall_ms"]) <= 2


def test_phase_clock_names_a_run_that_printed_no_marker():
    sys.path.insert(0, str(SCRIPTS))
    try:
        import phase_clock
    finally:
        sys.path.remove(str(SCRIPTS))
    assert phase_clock.split(0, 10, "no marker here") is None
    assert phase_clock.split(0, 9_000_000, "x\nphase_clock 2000000 7000000\n") == \
        {"wall_ms": 9.0, "start_ms": 2.0, "main_ms": 5.0, "exit_ms": 2.0}
    res = run_script(SCRIPTS / "phase_clock.py")
    assert res.returncode == 2 and "no gemmprof arguments" in res.stderr


# -- ncu_vs_events.py and record.py on real records ---------------------------------------------------------------
def test_ncu_vs_events_on_a_real_run_and_profile():
    run_path = RECORDS / "2026-11-22_h100_run" / "ladder_4096.json"
    prof_path = RECORDS / "2026-11-22_h100_profile" / "profile_4096.json"
    res = run_script(SCRIPTS / "ncu_vs_events.py", run_path, prof_path)
    assert res.returncode == 0, res.stderr
    rows = [ln.split(" | ") for ln in res.stdout.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    run, prof = gemmprof.load(run_path), gemmprof.load(prof_path)
    medians = {v.name: v.timing.median_ms for v in run.variants if v.timing and v.passed}
    expected = {la.variant: (la.duration_ns / 1e6 - medians[la.variant]) / medians[la.variant]
                for la in prof.launches if la.variant in medians and la.duration_ns}
    assert {r[0].strip("| ") for r in rows} == set(expected)
    worst = max(abs(d) for d in expected.values())
    assert f"largest difference: {100 * worst:.2f}%" in res.stdout


def test_ncu_vs_events_without_arguments_says_how_to_call_it():
    res = run_script(SCRIPTS / "ncu_vs_events.py")
    assert res.returncode == 2 and "RUN_RESULTS.json PROFILE_RESULTS.json" in res.stderr


def test_record_writes_the_command_device_and_table():
    path = RECORDS / "2026-11-24_h100_fp32top_interleave" / "fp32_8192.json"
    res = run_script(SCRIPTS / "record.py", "A title", path)
    assert res.returncode == 0, res.stderr
    run = gemmprof.load(path)
    assert res.stdout.startswith("# A title")
    assert f"## `{run.command}`" in res.stdout and run.device["name"] in res.stdout
    assert f"GPU spec {run.gpu_spec}" in res.stdout
    assert all(v.name in res.stdout for v in run.variants)


# -- readme_roofline.py: the README's picture, drawn from the records, checked against them -----------------------
def test_the_readme_roofline_shows_the_records_variants():
    """CI: the picture in docs/ holds every verified row of the records it is drawn from, and nothing else."""
    res = run_script(SCRIPTS / "readme_roofline.py", "--check")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "variants are the records'" in res.stdout
    assert "docs/roofline_h100_4096.png" in (ROOT / "README.md").read_text()


def test_readme_roofline_draws_what_it_says_and_check_catches_a_stale_picture(tmp_path):
    sys.path.insert(0, str(SCRIPTS))
    try:
        script = importlib.import_module("readme_roofline")
    finally:
        sys.path.remove(str(SCRIPTS))
    out = tmp_path / "roof.png"
    drawn = script.draw(out, dpi=50)
    assert drawn == script.records_variants() == script.picture_variants(out)
    assert len(drawn) >= 30 and {"fp32 split_k_small_problems", "fp16 cluster_split_k", "fp16 wmma_seed001"} <= set(drawn)
    stale = tmp_path / "stale.png"  # a picture of fewer runs: what the old README picture was
    script.draw(stale, runs=script.RUNS[:1], dpi=50)
    res = run_script(SCRIPTS / "readme_roofline.py", "--check", "-o", stale)
    assert res.returncode == 1 and "only in the records" in res.stderr and "cluster_split_k" in res.stderr


# -- tune_speedup.py and tune_multigpu.py through gemmprof tune's stand-in compiler and GPU ------------------------
def test_tune_speedup_on_stand_ins(tmp_path):
    out = tmp_path / "speedup.json"
    res = run_script(SCRIPTS / "tune_speedup.py", "--rung", "10", "--size", "1024", "--stand-in", "-o", out,
                     timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    rec = json.loads(out.read_text())
    assert rec["kind"] == "gemmprof.tune-speedup" and rec["stand_in"] is True
    assert rec["same_configurations_and_statuses"] is True
    assert rec["configurations"] == len(rec["runs"]["serial"]["result"]["configs"]) > 0
    assert rec["speedup"] == round(rec["serial_s"] / rec["pipelined_s"], 2)
    assert f"{rec['speedup']:.2f}x over {rec['configurations']} configurations" in res.stdout


def test_tune_multigpu_on_two_stand_in_gpus(tmp_path):
    env = {**ENV, "CUDA_VISIBLE_DEVICES": "0,1"}
    res = run_script(SCRIPTS / "tune_multigpu.py", "--rung", "10", "--size", "1024", "--out", tmp_path,
                     "--stand-in", "--skip", "ray,ray_kill", timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["gpus_visible"] == 2 and summary["stand_in"] is True
    assert set(summary["runs"]) == {"cold_1", "warm_1", "warm_2", "kill", "sigint"}
    for name, checks in summary["checks_against_single_gpu"].items():
        assert all(checks.values()), (name, checks)
    kill, sigint = summary["runs"]["kill"], summary["runs"]["sigint"]
    assert kill["lines_before_kill_kept"] == kill["lines_before_kill"] > 0
    assert sigint["lines_before_kept"] == sigint["lines_at_interrupt"] and sigint["resumed_measured_only_missing"]
    assert (tmp_path / "summary.md").read_text().startswith("# tune 10 --size 1024 on 2 GPU(s) (stand-in)")


# -- gpu_batch.sh and its stages ------------------------------------------------------------------------------------
STAGES = sorted((SCRIPTS / "gpu_stages").glob("*.sh"))
BATCH_TEXT = BATCH.read_text() + "".join(p.read_text() for p in STAGES)


def test_startup_times_sums_the_cold_runs_builds(tmp_path):
    """startup_times' build table: nvcc rows only, the longest build first, sums of compile and load seconds."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        startup_times = importlib.import_module("startup_times")
    finally:
        sys.path.remove(str(SCRIPTS))
    doc = json.loads((ROOT / "tests" / "fixtures" / "explain" / "run_ladder_4096.json").read_text())
    nvcc_rows = [v for v in doc["variants"] if v.get("compiler") == "nvcc"][:3]
    assert len(nvcc_rows) == 3
    for v, (c, w) in zip(nvcc_rows, [(2.0, 2.5), (11.25, 0.75), (None, 0.25)], strict=True):
        v["compile_s"], v["load_s"] = c, w
    path = tmp_path / "cold.json"
    path.write_text(json.dumps(doc))
    got = startup_times.build_times(path)
    assert [r["name"] for r in got["kernels"][:3]] == [nvcc_rows[1]["name"], nvcc_rows[0]["name"], nvcc_rows[2]["name"]]
    assert got["compile_s_sum"] == 13.25 and got["load_s_sum"] == 3.5
    assert all(r["name"] != "cublas_sgemm" for r in got["kernels"])
    assert "error" in startup_times.build_times(tmp_path / "missing.json")


@pytest.mark.parametrize("script", [BATCH, *STAGES], ids=lambda p: p.name)
def test_gpu_batch_and_its_stages_parse(script):
    res = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_every_stage_says_what_it_runs_on_its_first_line():
    assert STAGES
    for path in STAGES:
        assert path.read_text().startswith(f"# stage {path.stem}"), path.name


def test_gpu_batch_lists_its_stages_and_refuses_an_unknown_one_before_running_anything(tmp_path):
    res = subprocess.run(["bash", str(BATCH)], capture_output=True, text=True, env={**ENV, "OUT": str(tmp_path)})
    assert all(f"  {p.stem}" in res.stdout for p in STAGES)
    res = subprocess.run(["bash", str(BATCH), "env", "no_such_stage"], capture_output=True, text=True,
                         env={**ENV, "OUT": str(tmp_path)})
    assert res.returncode == 2 and "no stage no_such_stage" in res.stdout
    assert not any(tmp_path.iterdir())


def test_gpu_batch_without_a_stage_prints_its_usage(tmp_path):
    res = subprocess.run(["bash", str(BATCH)], capture_output=True, text=True, env={**ENV, "OUT": str(tmp_path)})
    assert res.returncode == 2 and "bash scripts/gpu_batch.sh STAGE [STAGE ...]" in res.stdout
    assert not any(tmp_path.iterdir())  # nothing made, nothing tarred


def test_gpu_batch_names_files_that_exist():
    named = set(re.findall(r"\b((?:scripts|benchmarks|tests)/[\w./-]+\.(?:py|json(?:\.gz)?|sh))", BATCH_TEXT))
    assert named
    assert [p for p in sorted(named) if not (ROOT / p).is_file()] == []


def _gemmprof_calls():
    """(command, [options]) of every `"${GP[@]}" COMMAND ...` in the script (to the end of its shell command)."""
    for m in re.finditer(r'(?:"\$\{GP\[@\]\}"|\$\{GP\[\*\]\}) ([a-z][a-z-]*)([^;\n]*)', BATCH_TEXT):
        words = [w.strip("\"'") for w in m[2].split()]  # inside `bash -c "..."` too: quotes are not options
        yield m[1], [w.split("=")[0] for w in words if re.fullmatch(r"--?[a-zA-Z][\w-]*(=.*)?", w)]


def test_gpu_batch_uses_only_gemmprof_commands_and_options_that_exist():
    calls = list(_gemmprof_calls())
    assert len(calls) >= 20
    ctx = click.Context(cli)
    for name, options in calls:
        command = cli.get_command(ctx, name)
        assert command is not None, f"gpu_batch.sh runs `gemmprof {name}`, which does not exist"
        known = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
        assert [o for o in options if o not in known] == [], f"gemmprof {name}"


def test_l2_cold_check_calls_a_policy_cold_only_near_the_cold_read_and_well_above_the_warm_one():
    sys.path.insert(0, str(SCRIPTS))
    try:
        check = importlib.import_module("l2_cold_check")
    finally:
        sys.path.remove(str(SCRIPTS))
    cold = check.verdict({"warm": 0.010, "flush": 0.026, "rotate": 0.025, "cold": 0.027})
    assert cold["flush"]["cold"] and cold["rotate"]["cold"]
    warm = check.verdict({"warm": 0.010, "flush": 0.011, "rotate": 0.020, "cold": 0.027})
    assert not warm["flush"]["cold"] and not warm["rotate"]["cold"]  # 1.1x warm; 0.74x cold
