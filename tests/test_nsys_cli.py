"""gemmprof compare-nsys from the command line: formats, several inputs with one broken, and nsys itself faked
(missing, `nsys export` of a .nsys-rep, `nsys profile` of a live run) with a script on PATH."""

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from clitools import invoke

FIX = Path(__file__).parent / "fixtures" / "nsys"
SQLITE = FIX / "h100_cupy_nvtx.sqlite"
REP = FIX / "h100_cupy_nvtx.nsys-rep"
A100_4096 = FIX / "a100_seed003_gpukernsum_4096.txt"
CUTLASS = "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)"
NSYS_MISSING = ("error: nsys was not found on PATH (it usually lives in /opt/nvidia/nsight-systems/<version>/bin or "
                "inside Nsight Compute's host/target-linux-x64); the .sqlite, .csv and text inputs still work")

FAKE_NSYS = """#!{python}
import json, os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NSYS_LOG"], "a") as fh:
    fh.write(json.dumps(args) + "\\n")
if os.environ.get("FAKE_NSYS_FAIL"):
    sys.exit("cannot open report")
if args[0] == "export":
    shutil.copy(os.environ["FAKE_NSYS_SQLITE"], args[args.index("--output") + 1])
elif args[0] == "profile":
    shutil.copy(os.environ["FAKE_NSYS_SQLITE"], args[args.index("-o") + 1] + ".sqlite")
    sys.stderr.write("child said: something went wrong\\n")
    sys.exit(int(os.environ.get("FAKE_NSYS_RC", "0")))
"""


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    """An `nsys` on PATH that logs its arguments and writes the real SQLite export where nsys would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "nsys"
    script.write_text(FAKE_NSYS.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "nsys.log"
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.setenv("FAKE_NSYS_SQLITE", str(SQLITE))
    return lambda: [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture
def no_nsys(tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_json_keeps_full_names_raw_numbers_and_kind(runner):
    r = invoke(runner, ["compare-nsys", str(SQLITE), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["kind"] == "gemmprof.nsys-compare" and doc["schema"] == 1
    rows = doc["rows"]
    assert [(x["range"], x["kernel"], x["instances"], x["total_ns"]) for x in rows] == [
        ("variantA", CUTLASS, 5, 1_690_721), ("variantB", CUTLASS, 5, 1_683_073)]
    a = rows[0]
    assert (a["grid"], a["block"], a["registers"], a["dynamic_smem_bytes"]) == ([128, 1, 1], [256, 1, 1], 202, 49152)
    assert a["baseline"] is True and a["speedup"] == 1  # cuBLAS's cutlass kernel is the default baseline
    assert rows[1]["speedup"] == pytest.approx(1_690_721 / 1_683_073)
    assert a["gpu_time_pct"] == pytest.approx(100 * 1_690_721 / 3_568_421)
    assert a["tflops"] is None  # variantA is not a gemmprof range and no -m/-n/-k was given
    (inp,) = doc["inputs"]
    assert inp["gpu"] == "NVIDIA H100 80GB HBM3" and inp["grouped_by"] == "range" and inp["baseline"] == "variantA"
    launch = next(x for x in doc["activity"] if x["category"] == "launch")
    assert (launch["calls"], launch["total_ns"]) == (13, 3_724_390 + 213_168)


def test_shape_from_options_gives_tflops_and_peak(runner):
    r = invoke(runner, ["compare-nsys", str(SQLITE), "--size", "2048", "--format", "json"])
    doc = json.loads(r.output)
    a = doc["rows"][0]
    assert a["shape"] == "2048x2048x2048" and a["flops"] == 2 * 2048**3
    assert a["tflops"] == pytest.approx(2 * 2048**3 / (1_690_721 / 5 * 1e-9) / 1e12)
    assert doc["inputs"][0]["gpu_spec"] == "H100 SXM"  # the report's own GPU
    assert a["pct_of_peak"] == pytest.approx(100 * a["tflops"] / a["peak_tflops"])


def test_group_by_kernel_and_explicit_baseline(runner):
    r = invoke(runner, ["compare-nsys", str(SQLITE), "--group-by", "kernel", "--baseline", "cupy_random",
                        "--format", "json"])
    rows = {x["kernel"]: x for x in json.loads(r.output)["rows"]}
    assert rows[CUTLASS]["instances"] == 10 and rows[CUTLASS]["range"] is None
    assert rows["cupy_random_x_mod_1"]["baseline"] is True
    assert rows[CUTLASS]["speedup"] == pytest.approx(21_024 / 337_379.4)


def test_unknown_baseline_is_one_line_error(runner):
    r = invoke(runner, ["compare-nsys", str(SQLITE), "--baseline", "nothing_like_this"])
    assert r.exit_code == 2
    assert r.output.startswith("error: --baseline: no row matches 'nothing_like_this' (rows: variantA, variantB)")


def test_two_reports_side_by_side_table_to_file(runner, tmp_path):
    out = tmp_path / "cmp.txt"
    r = invoke(runner, ["compare-nsys", str(SQLITE), str(A100_4096), "-m", "4096", "-n", "4096", "-k", "4096",
                        "--gpu", "a100", "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "Nsight Systems kernels from 2 reports at 4096x4096x4096" in text
    assert "a100_seed003_gpukernsum_4096.txt" in text and "h100_cupy_nvtx.sqlite" in text
    assert "CUDA API time and GPU memory operations" in text


def test_csv_output(runner):
    r = invoke(runner, ["compare-nsys", str(A100_4096), "--size", "4096", "--format", "csv"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].startswith("input,range,variant,shape,kernel,instances,total (ns),avg (ns)")
    assert '"mm_cuda_naive(float *, float *, float *, int, int, int)",1,470706229,470706229.0' in lines[1]


def test_one_broken_report_among_several(runner, tmp_path):
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(SQLITE.read_bytes()[:1000])
    r = invoke(runner, ["compare-nsys", str(cut), str(A100_4096), "--format", "json"])
    assert r.exit_code == 2
    err = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert err[0].startswith(f"error: {cut}: not a readable Nsight Systems SQLite export")
    assert err[-1] == "error: 1 of 2 inputs failed (see above)"
    doc = json.loads(r.output[r.output.index("{"):r.output.rindex("}") + 1])
    assert {x["kernel"] for x in doc["rows"]} >= {"ampere_sgemm_128x64_nn"}
    assert doc["inputs"][-1]["input"] == str(cut) and "not a readable" in doc["inputs"][-1]["error"]


def test_single_broken_report_is_one_line(runner, tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    r = invoke(runner, ["compare-nsys", str(empty)])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [f"error: {empty}: the file is empty (an interrupted export?); re-export "
                                             "it with `nsys export --type sqlite --force-overwrite true "
                                             "REPORT.nsys-rep`"]


def test_nsys_rep_without_nsys(runner, no_nsys, tmp_path):
    r = invoke(runner, ["compare-nsys", str(REP)])
    assert r.exit_code == 1 and r.output.strip() == NSYS_MISSING
    # the other inputs are still compared
    r = invoke(runner, ["compare-nsys", str(REP), str(SQLITE), "--format", "json"])
    assert r.exit_code == 1 and r.output.startswith(NSYS_MISSING)
    assert "variantA" in r.output


def test_nsys_rep_through_nsys_export(runner, fake_nsys):
    r = invoke(runner, ["compare-nsys", str(REP), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["inputs"][0]["format"] == "nsys-rep"
    (call,) = fake_nsys()
    assert call[:7] == ["export", "--type", "sqlite", "--force-overwrite", "true", "--output", call[6]]
    assert call[6].endswith("h100_cupy_nvtx.sqlite") and call[7] == str(REP)


def test_nsys_export_failure_names_the_file(runner, fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    r = invoke(runner, ["compare-nsys", str(REP)])
    assert r.exit_code == 2
    assert r.output.strip() == f"error: {REP}: nsys export failed (exit 1): cannot open report"


def test_live_without_nsys(runner, no_nsys):
    r = invoke(runner, ["compare-nsys", "naive", "--size", "1024"])
    assert r.exit_code == 1 and r.output.strip() == NSYS_MISSING


def test_live_runs_gemmprof_under_nsys_profile(runner, fake_nsys, tmp_path):
    prefix = tmp_path / "keep" / "run1"
    r = invoke(runner, ["compare-nsys", "naive", "5", "-m", "256", "-n", "512", "-k", "128", "--no-cublas",
                        "--save-report", str(prefix), "--format", "json"])
    assert r.exit_code == 0, r.output
    (call,) = fake_nsys()
    assert call == ["profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--export=sqlite",
                    "--force-overwrite=true", "-o", str(prefix), sys.executable, "-m", "gemmprof", "run", "naive", "5",
                    "-m", "256", "-n", "512", "-k", "128", "--no-cublas"]
    doc = json.loads(r.output)
    assert doc["inputs"][0]["input"] == f"{prefix}.nsys-rep" and doc["inputs"][0]["format"] == "live"
    assert (prefix.parent / "run1.sqlite").exists()


def test_live_bf16_builds_the_hopper_rungs_for_bf16(runner, fake_nsys, tmp_path):
    r = invoke(runner, ["compare-nsys", "h4-h6", "--size", "1024", "--dtype", "bf16", "--save-report",
                        str(tmp_path / "bf16"), "--format", "json"])
    assert r.exit_code == 0, r.output
    (call,) = fake_nsys()
    assert call[call.index("run"):] == ["run", "h4-h6", "-m", "1024", "-n", "1024", "-k", "1024", "--dtype", "bf16"]


def test_live_failure_of_the_child_is_reported_after_the_table(runner, fake_nsys, monkeypatch):
    monkeypatch.setenv("FAKE_NSYS_RC", "3")
    r = invoke(runner, ["compare-nsys", "naive", "--format", "json"])
    assert r.exit_code == 1
    assert "error: live: gemmprof run under nsys exited with status 3: child said: something went wrong" in r.output
    assert '"kind": "gemmprof.nsys-compare"' in r.output


def test_files_and_variants_do_not_mix(runner):
    r = invoke(runner, ["compare-nsys", str(SQLITE), "naive"])
    assert r.exit_code == 2 and r.output.startswith("error: naive: no such report file")


def test_read_only_fixture_is_left_untouched(runner, tmp_path):
    copy = tmp_path / "ro.sqlite"
    shutil.copy(SQLITE, copy)
    os.chmod(copy, 0o444)
    before = copy.read_bytes()
    assert invoke(runner, ["compare-nsys", str(copy), "--format", "csv"]).exit_code == 0
    assert copy.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["ro.sqlite"]
