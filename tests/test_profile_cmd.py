"""gemmprof profile: the ncu command line it builds, --from on real CSVs, and every error path, with a fake ncu."""

import json
import os
import stat
import sys

import pytest
from clitools import invoke
from conftest import FIXTURES
from test_ncu_parse import with_nvtx

from gemmprof.adapters.ncu import run as ncu_run
from gemmprof.errors import ToolNotFoundError
from gemmprof.model.traffic import GemmShape

NCU = FIXTURES / "ncu"
DETAILS = NCU / "h100_naive_smem_details.csv"
RAW_STALLS = NCU / "h100_naive_smem_raw_stalls.csv"
FAKE = f"""#!{sys.executable}
import os, sys
with open(os.environ["FAKE_NCU_ARGV"], "a") as fh:
    fh.write(repr(sys.argv) + "\\n")
page = sys.argv[sys.argv.index("--page") + 1] if "--page" in sys.argv else "details"
out = os.environ.get("FAKE_NCU_RAW") if page == "raw" and os.environ.get("FAKE_NCU_RAW") else os.environ["FAKE_NCU_OUT"]
sys.stdout.write(open(out, encoding="utf-8").read())
sys.stderr.write(os.environ.get("FAKE_NCU_STDERR", ""))
sys.exit(int(os.environ.get("FAKE_NCU_RC", "0")))
"""


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    """An `ncu` on PATH that records its arguments and prints what the test puts in `out`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "ncu"
    exe.write_text(FAKE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "ncu_stdout.txt"
    argv = tmp_path / "argv.txt"
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_NCU_OUT", str(out))
    monkeypatch.setenv("FAKE_NCU_ARGV", str(argv))

    class Fake:
        def prints(self, text, rc=0, stderr=""):
            out.write_text(text, encoding="utf-8")
            monkeypatch.setenv("FAKE_NCU_RC", str(rc))
            monkeypatch.setenv("FAKE_NCU_STDERR", stderr)

        def calls(self):
            return [eval(line) for line in argv.read_text().splitlines()] if argv.exists() else []

    return Fake()


def tagged_details(shape="1024x1024x1024"):
    return with_nvtx(DETAILS.read_text(), {0: f"gemmprof naive {shape}", 1: f"gemmprof smem_caching {shape}"})


# --- the command line ------------------------------------------------------------------------------------------

def test_build_command_profiles_each_variant_once_by_its_nvtx_range():
    cmd = ncu_run.build_command("/opt/ncu", "/usr/bin/python3", ["naive", "warptiling"], GemmShape(4096, 4096, 2048),
                                run_args=("--no-cublas",), also_profile=("cublas_sgemm",))
    assert cmd[:12] == ["/opt/ncu", "--csv", "--page", "details", "--print-units", "base", "--clock-control", "none",
                        "--target-processes", "all", "--nvtx", "--nvtx-include"]
    includes = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--nvtx-include"]
    assert includes == ["gemmprof naive 4096x4096x2048/", "gemmprof warptiling 4096x4096x2048/",
                        "gemmprof cublas_sgemm 4096x4096x2048/"]
    sections = [cmd[i + 1] for i, a in enumerate(cmd) if a == "--section"]
    assert sections == ["SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis"]
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    for m in ("regex:smsp__average_warp_latency_issue_stalled_.*\\.ratio", "dram__bytes_read.sum",
              "dram__bytes_write.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum", "gpu__time_duration.sum",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
              "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
              "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"):
        assert m in metrics
    assert not any("pcsamp" in m for m in metrics)
    assert cmd[cmd.index("/usr/bin/python3"):] == ["/usr/bin/python3", "-m", "gemmprof", "run", "naive", "warptiling",
                                                   "-m", "4096", "-n", "4096", "-k", "2048", "--launch-once",
                                                   "--no-cublas"]


def test_metric_list_options():
    assert "regex:smsp__pcsamp_warps_issue_stalled_.*" in ncu_run.metric_list(pc_sampling=True)
    assert "lts__t_bytes.sum" not in ncu_run.metric_list(skip=("lts__t_bytes.sum",))
    with pytest.raises(Exception, match="--skip-metric"):
        ncu_run.metric_list(skip=("no__such.sum",))
    # bf16's tensor counters are asked for only in a bf16 profile; fp16 and fp32 ask for what they always did
    bf16 = [m for m in ncu_run.metric_list(dtype="bf16") if "bf16" in m]
    assert bf16 == list(ncu_run.BF16_TENSOR_METRICS) and not any("bf16" in m for m in ncu_run.metric_list(dtype="fp16"))
    import re

    pattern = re.compile(bf16[0].removeprefix("regex:"))
    assert pattern.fullmatch("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum")
    assert pattern.fullmatch("sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum")
    assert not pattern.search("sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum.per_second")


def test_live_profile_runs_one_ncu_and_reads_its_csv(fake_ncu, runner, tmp_path):
    fake_ncu.prints(tagged_details())
    csv_out, json_out = tmp_path / "keep.csv", tmp_path / "profile.json"
    r = invoke(runner, ["profile", "naive", "smem_caching", "--size", "1024", "--save-csv", str(csv_out),
                        "--save", str(json_out), "--format", "json"])
    assert r.exit_code == 0, r.output
    [argv] = fake_ncu.calls()
    assert argv[argv.index("--clock-control") + 1] == "none"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"] == \
        ["gemmprof naive 1024x1024x1024/", "gemmprof smem_caching 1024x1024x1024/"]
    child = argv[argv.index(sys.executable):]
    assert child == [sys.executable, "-m", "gemmprof", "run", "naive", "smem_caching", "-m", "1024", "-n", "1024",
                     "-k", "1024", "--launch-once", "--no-cublas"]
    assert csv_out.read_text() == tagged_details()
    doc = json.loads(json_out.read_text())
    assert doc["kind"] == "gemmprof.profile" and doc["shape"] == {"M": 1024, "N": 1024, "K": 1024}
    naive, smem = doc["launches"]
    assert (naive["variant"], naive["dtype"], naive["kernel_name"]) == ("naive", "fp32", "sgemm_naive")
    assert naive["nvtx_range"] == "gemmprof naive 1024x1024x1024"
    assert naive["dram_read_bytes"] == 8_394_496 and naive["duration_ns"] == 362_304
    assert naive["model_min_bytes"] == 3 * 1024 * 1024 * 4 and naive["model_tiled_bytes"] is not None
    assert smem["variant"] == "smem_caching" and smem["model_tiled_bytes"] < naive["model_tiled_bytes"]
    assert naive["occupancy"]["agrees"] is True
    printed = json.loads(r.stdout)
    assert printed["kind"] == "gemmprof.profile" and [row["variant"] for row in printed["rows"]] == \
        ["naive", "smem_caching"]


def test_live_profile_of_a_users_own_spec(fake_ncu, runner, tmp_path):
    import shutil

    for suffix in ("cu", "yaml"):
        shutil.copy(FIXTURES.parents[1] / "kernels" / "fp32" / f"01_naive.{suffix}", tmp_path / f"mine.{suffix}")
    spec = tmp_path / "mine.yaml"
    text = spec.read_text().replace("name: naive", "name: my_naive").replace("file: 01_naive.cu", "file: mine.cu")
    spec.write_text(text.replace('id: "1"', 'id: "m1"'))
    fake_ncu.prints(with_nvtx(DETAILS.read_text(), {0: "gemmprof my_naive 1024x1024x1024",
                                                    1: "gemmprof smem_caching 1024x1024x1024"}))
    r = invoke(runner, ["profile", "--spec", str(spec), "smem_caching", "--size", "1024", "--format", "json"])
    assert r.exit_code == 0, r.output
    [argv] = fake_ncu.calls()
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"] == \
        ["gemmprof smem_caching 1024x1024x1024/", "gemmprof my_naive 1024x1024x1024/"]
    child = argv[argv.index(sys.executable):]
    assert child[4:8] == ["smem_caching", "--spec", str(spec), "-m"]  # the child loads the user's spec again
    rows = json.loads(r.stdout)["rows"]
    assert [row["variant"] for row in rows] == ["my_naive", "smem_caching"]


def test_live_profile_with_cublas_adds_its_ranges(fake_ncu, runner):
    fake_ncu.prints(tagged_details())
    r = invoke(runner, ["profile", "naive", "--size", "1024", "--cublas", "--pc-sampling", "--skip-metric",
                        "lts__t_bytes.sum"])
    assert r.exit_code == 0, r.output
    [argv] = fake_ncu.calls()
    includes = [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"]
    assert "gemmprof cublas_sgemm 1024x1024x1024/" in includes and "gemmprof cublas_tf32 1024x1024x1024/" in includes
    assert "--no-cublas" not in argv
    metrics = argv[argv.index("--metrics") + 1]
    assert "pcsamp" in metrics and "lts__t_bytes.sum" not in metrics


def test_live_bf16_profile_asks_for_bf16_counters_and_builds_the_rungs_for_bf16(fake_ncu, runner):
    fake_ncu.prints(tagged_details())
    r = invoke(runner, ["profile", "h5", "h6", "--size", "1024", "--cublas", "--dtype", "bf16"])
    assert r.exit_code == 0, r.output
    [argv] = fake_ncu.calls()
    includes = [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"]
    assert {"gemmprof warp_specialized_bf16 1024x1024x1024/", "gemmprof persistent_bf16 1024x1024x1024/",
            "gemmprof cublas_bf16 1024x1024x1024/"} <= set(includes)
    assert not any("cublas_hgemm" in i for i in includes)
    assert argv[argv.index("--dtype") + 1] == "bf16"  # the child run builds the rungs with their bf16 define
    assert ncu_run.BF16_TENSOR_METRICS[0] in argv[argv.index("--metrics") + 1].split(",")


def test_table_output_to_a_file(fake_ncu, runner, tmp_path):
    fake_ncu.prints(tagged_details())
    out = tmp_path / "profile.txt"
    r = invoke(runner, ["profile", "naive", "smem_caching", "--size", "1024", "-o", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "speed of light and occupancy" in text and "ncu's advice" in text and "CPIStall" in text


# --- errors: each one line, a non-zero exit, and no file half-written -------------------------------------------

def _no_files(tmp_path):
    return not (tmp_path / "keep.csv").exists() and not (tmp_path / "p.json").exists()


def _run_failing(runner, tmp_path, extra=()):
    return invoke(runner, ["profile", "naive", "--size", "1024", "--save-csv", str(tmp_path / "keep.csv"),
                           "--save", str(tmp_path / "p.json"), *extra])


def test_ncu_not_installed(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu_run, "FALLBACK_GLOBS", [])
    r = _run_failing(runner, tmp_path)
    assert r.exit_code == ToolNotFoundError.exit_code == 1
    assert "error: ncu was not found on PATH" in r.output and "gemmprof profile --from FILE.csv" in r.output
    assert "Traceback" not in r.output and _no_files(tmp_path)


def test_counters_not_permitted(fake_ncu, runner, tmp_path):
    fake_ncu.prints("==PROF== Connected to process 77\n==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                    "permission to access NVIDIA GPU Performance Counters on the target device 0.\n", rc=1)
    r = _run_failing(runner, tmp_path)
    assert r.exit_code == 1
    assert "ERR_NVGPUCTRPERM" in r.output and "root" in r.output
    assert "NVreg_RestrictProfilingToAdminUsers=0" in r.output and "Permission issue with Performance Counters" in r.output
    assert _no_files(tmp_path)


def test_no_kernel_matched(fake_ncu, runner, tmp_path):
    fake_ncu.prints("==PROF== Connected to process 77\nnaive PASS\n==PROF== Disconnected from process 77\n"
                    "==WARNING== No kernels were profiled.\n")
    r = _run_failing(runner, tmp_path)
    assert r.exit_code == 1
    assert "no kernel was profiled" in r.output and '"gemmprof naive 1024x1024x1024"' in r.output
    assert _no_files(tmp_path)


def test_ncu_failing_midway_shows_the_last_error(fake_ncu, runner, tmp_path):
    partial = DETAILS.read_text()[:3000]
    fake_ncu.prints(partial + "\n==ERROR== An error was reported by the driver\n"
                    "==ERROR== Failed to profile \"sgemm_naive\" in process 77\n", rc=9)
    r = _run_failing(runner, tmp_path)
    assert r.exit_code == 1
    assert 'exit status 9: ==ERROR== Failed to profile "sgemm_naive" in process 77' in r.output
    assert _no_files(tmp_path)


def test_unknown_metric_suggests_skipping_it(fake_ncu, runner, tmp_path):
    fake_ncu.prints("", rc=1, stderr="==ERROR== Failed to find metric sm__ops_path_tensor_src_tf32_dst_fp32.sum\n")
    r = _run_failing(runner, tmp_path)
    assert r.exit_code == 1 and "--skip-metric" in r.output and _no_files(tmp_path)


def test_the_profiled_program_failing(fake_ncu, runner, tmp_path):
    fake_ncu.prints("==PROF== Connected to process 77\n", rc=1,
                    stderr="error: this command needs CuPy and a CUDA GPU\n==PROF== Disconnected from process 77\n")
    r = _run_failing(runner, tmp_path)
    assert r.exit_code == 1
    assert "the profiled program said: error: this command needs CuPy" in r.output and _no_files(tmp_path)


def test_errors_through_a_replaced_runner(runner, tmp_path, monkeypatch):
    """The same diagnosis when the function that runs ncu is replaced instead of ncu itself."""
    monkeypatch.setattr(ncu_run, "find_ncu", lambda explicit=None: "/opt/nvidia/nsight-compute/2025.3.1/ncu")
    seen = []

    def fake_execute(cmd):
        seen.append(cmd)
        return ncu_run.Completed(0, "==WARNING== No kernels were profiled.\n", "")

    monkeypatch.setattr(ncu_run, "execute", fake_execute)
    r = _run_failing(runner, tmp_path)
    assert r.exit_code == 1 and "no kernel was profiled" in r.output
    assert seen[0][0] == "/opt/nvidia/nsight-compute/2025.3.1/ncu" and _no_files(tmp_path)


def test_bad_options(runner, tmp_path):
    r = invoke(runner, ["profile", "--size", "1024"])
    assert r.exit_code == 2 and "no variants selected" in r.output
    r = invoke(runner, ["profile", "naive", "--from", str(DETAILS)])
    assert r.exit_code == 2 and "not both" in r.output
    r = invoke(runner, ["profile", "naive", "--skip-metric", "no__such.sum"])
    assert r.exit_code == 2 and "--skip-metric" in r.output
    r = invoke(runner, ["profile", "no_such_rung"])
    assert r.exit_code == 2 and "unknown variant" in r.output


# --- --from -----------------------------------------------------------------------------------------------------

def test_from_details_csv(runner):
    r = invoke(runner, ["profile", "--from", str(DETAILS), "--size", "1024", "--dtype", "fp32", "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    naive = doc["launches"][0]
    assert naive["variant"] == "sgemm_naive" and naive["dtype"] == "fp32"
    assert naive["dram_read_bytes"] == 8_394_496 and naive["duration_ns"] == 362_304
    assert naive["occupancy"]["theoretical_pct_ncu"] == 100 and naive["occupancy"]["limits_ncu"]["registers"] == 2
    assert naive["flops_executed_vs_model"] == 1.0 and naive["model_min_bytes"] == 12_582_912
    assert doc["gpu_spec"] == "h100_sxm"


def test_from_raw_stalls_csv_table(runner):
    r = invoke(runner, ["profile", "--from", str(RAW_STALLS)])
    assert r.exit_code == 0, r.output
    assert "long_scoreboard" in r.stdout and "mio_throttle" in r.stdout


def test_from_without_shape_skips_the_model(runner):
    r = invoke(runner, ["profile", "--from", str(NCU / "h100_cublas_nvtx_raw_base_units.csv"), "--format", "csv"])
    assert r.exit_code == 0, r.output
    header, *rows = r.stdout.strip().splitlines()
    assert len(rows) == 5 and "DRAM (MB)" in header


def test_from_csv_errors(runner, tmp_path):
    r = invoke(runner, ["profile", "--from", str(tmp_path / "missing.csv")])
    assert r.exit_code == 2 and "does not exist" in r.output
    junk = tmp_path / "junk.csv"
    junk.write_text("hello\nworld\n")
    r = invoke(runner, ["profile", "--from", str(junk)])
    assert r.exit_code == 2 and "no Nsight Compute CSV table" in r.output
    empty = tmp_path / "empty.csv"
    empty.write_text("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")
    r = invoke(runner, ["profile", "--from", str(empty)])
    assert r.exit_code == 1 and "no kernel was profiled" in r.output


def test_from_ncu_rep_imports_details_and_raw(fake_ncu, runner, tmp_path, monkeypatch):
    """Without the ncu-report wheel, ncu reads the report: its details and raw pages, merged."""
    from gemmprof.adapters.ncu import rep as ncu_rep

    monkeypatch.setattr(ncu_rep, "load_module", lambda: None)
    rep = tmp_path / "report.ncu-rep"
    rep.write_bytes(b"binary")
    fake_ncu.prints(DETAILS.read_text())
    monkeypatch.setenv("FAKE_NCU_RAW", str(RAW_STALLS))
    r = invoke(runner, ["profile", "--from", str(rep), "--format", "json"])
    assert r.exit_code == 0, r.output
    calls = fake_ncu.calls()
    assert [c[1:] for c in calls] == [["--import", str(rep), "--csv", "--page", page, "--print-units", "base"]
                                      for page in ("details", "raw")]
    naive = json.loads(r.stdout)["launches"][0]
    assert next(iter(naive["stalls"])) == "long_scoreboard" and naive["rules"]


def test_from_ncu_rep_without_the_wheel_or_ncu_says_what_to_install(runner, tmp_path, monkeypatch):
    from gemmprof.adapters.ncu import rep as ncu_rep

    monkeypatch.setattr(ncu_rep, "load_module", lambda: None)
    rep = tmp_path / "report.ncu-rep"
    rep.write_bytes(b"binary")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(ncu_run, "FALLBACK_GLOBS", [])
    r = invoke(runner, ["profile", "--from", str(rep)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "pip install ncu-report (or gemmprof[ncu-report])" in r.output and "Nsight Compute's ncu" in r.output
