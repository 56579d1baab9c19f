"""Issue 12: bad input ends in one clear line and a non-zero exit, never a traceback; nothing is lost or
overwritten. One row per class of failure found by trying gemmprof as a careless new user would."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES

from gemmprof.cli import main
from gemmprof.errors import InputError
from gemmprof.results.files import write_with
from gemmprof.results.run import load_run

ROOT = Path(__file__).resolve().parents[1]
RESULTS = FIXTURES / "results" / "h100_ladder_4096_first.json"
NCU_CSV = FIXTURES / "ncu" / "h100_naive_smem_details.csv"


def _spec(tmp_path, **changes) -> Path:
    doc = yaml.safe_load((ROOT / "kernels/fp32/01_naive.yaml").read_text())
    doc["file"] = str(ROOT / "kernels/fp32/01_naive.cu")
    doc.update(changes)
    path = tmp_path / f"spec{len(list(tmp_path.glob('spec*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _gpu_file(tmp_path, value) -> Path:
    text = (ROOT / "profiles/h100_sxm.yaml").read_text()
    doc = yaml.safe_load(text)
    doc["dram_bandwidth_gbs"]["value"] = value
    path = tmp_path / f"gpu{len(list(tmp_path.glob('gpu*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _results_with(tmp_path, edit) -> Path:
    doc = json.loads(RESULTS.read_text())
    edit(doc)
    path = tmp_path / f"edited{len(list(tmp_path.glob('edited*.json')))}.json"
    path.write_text(json.dumps(doc))
    return path


def _negative_time(doc):
    doc["variants"][0]["timing"]["samples_ms"][0] = -1.0


def _cases(tmp: Path):
    binary = tmp / "binary.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    mine = tmp / "mine.json"
    shutil.copy(RESULTS, mine)
    n_csv = tmp / "n.csv"
    shutil.copy(NCU_CSV, n_csv)
    return [
        (["model", "--size", "9" * 110], "--size"),
        (["model", "-m", "0"], "-m"),
        (["model", "-k", str(2 ** 31)], "-k"),
        (["model", "--peak-tflops", "nan"], "--peak-tflops"),
        (["model", "--peak-tflops", "0"], "--peak-tflops"),
        (["model", "--bandwidth", "inf"], "--bandwidth"),
        (["model", "--bandwidth", "-3"], "--bandwidth"),
        (["model", "--alpha", "nan"], "--alpha"),
        (["model", "--gpu", ""], "--gpu"),
        (["model", "--gpu-file", str(_gpu_file(tmp, float("nan")))], "dram_bandwidth_gbs"),
        (["model", "--gpu-file", str(_gpu_file(tmp, float("inf")))], "dram_bandwidth_gbs"),
        (["model", "--gpu-file", str(binary)], "binary.yaml"),
        (["model", "--gpu-file", str(tmp)], "directory"),
        (["model", "-o", str(tmp / "out.xyz")], "unknown extension"),
        (["model", "-o", str(tmp / "no" / "such" / "out.json")], "does not exist"),
        (["run", "1", "--budget", "nan"], "--budget"),
        (["run", "1", "--max-reps", "0"], "--max-reps"),
        (["run", "1", "--seed", "-1"], "--seed"),
        (["occupancy", "-t", "9" * 50, "-r", "32"], "--threads"),
        (["build", "10", "--param", "BOGUS=3"], "BOGUS"),
        (["build", "10", "--param", "BK=" + "9" * 60], "--param"),
        (["list", "--spec", str(binary)], "binary.yaml"),
        (["list", "--spec", str(tmp)], "directory"),
        (["list", "--spec", str(_spec(tmp, derived={"T": "min()"}))], "min()"),
        (["list", "--spec", str(_spec(tmp, derived={"T": "(" * 3000 + "1" + ")" * 3000}))], "derived.T"),
        (["list", "--spec", str(_spec(tmp, derived={"T": "-" * 900 + "1"}))], "derived.T"),
        (["list", "--spec", str(_spec(tmp, template=5))], "template"),
        (["list", "--spec", str(_spec(tmp, template=[["BM"]]))], "template"),
        (["list", "--spec", str(_spec(tmp, file="x" * 300 + ".cu"))], "file"),
        (["roofline", str(tmp)], "directory"),
        (["roofline", "--profile-results", str(binary)], "binary.yaml"),
        (["roofline", str(_results_with(tmp, _negative_time))], "samples_ms"),
        (["roofline", str(_results_with(tmp, lambda d: d["variants"][0].update(id=5)))], "variants[0].id"),
        (["roofline", str(_results_with(tmp, lambda d: d["shape"].update(N="4096")))], "shape"),
        (["roofline", str(_results_with(tmp, lambda d: d["variants"][0]["timing"].update(samples_ms=[])))],
         "samples_ms"),
        (["roofline", str(mine), "--table", str(mine)], "--table"),
        (["compare-nsys", str(tmp)], "directory"),
        (["diff", str(mine), str(RESULTS), "-o", str(mine)], "-o"),
        (["report", str(mine), "-o", str(mine)], "-o"),
        (["profile", "--from", str(n_csv), "-o", str(n_csv)], "-o"),
        (["profile", "--from", str(tmp)], "directory"),
    ]


def test_bad_command_lines_fail_with_one_clear_line(tmp_path, capsys):
    """Every row: non-zero exit, one `error:`/`Error:` line naming the option, file or field; no traceback."""
    for argv, named in _cases(tmp_path):
        before = {p: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.is_file()}
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code not in (0, None), argv
        assert "Traceback" not in err, argv
        assert named in err, (argv, err)
        after = {p: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.is_file()}
        assert {p: t for p, t in after.items() if p in before} == before, f"{argv} changed an input file"


def test_failed_atomic_write_leaves_no_temporary_file(tmp_path):
    def boom(fh):
        fh.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(InputError, match="No space left"):
        write_with(tmp_path / "out.json", boom)
    assert list(tmp_path.iterdir()) == []


def test_no_directories_created_unasked(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_with(tmp_path / "new" / "dir" / "x.json", lambda fh: fh.write(b"{}"))
    assert list(tmp_path.iterdir()) == []


class _StandInRunner:
    """Times nothing: returns a verified-looking row per kernel and is interrupted (Ctrl-C) at the third."""

    calls = 0

    clock_status = "stand-in: no clocks"

    def __init__(self, profile, options, progress=None, **kwargs):
        self.seed = 1

    def clock_reader(self):
        return None

    def close(self):
        pass

    def run_kernel(self, kernel, compiler=None):
        from gemmprof.results.run import Measurement, VariantResult

        type(self).calls += 1
        if type(self).calls == 3:
            raise KeyboardInterrupt
        s = kernel.spec
        return VariantResult(id=s.id, name=s.name, title=s.title, dtype=s.dtype, status="ok",
                             timing=Measurement((1.0, 1.1, 1.2)))


def test_interrupted_run_keeps_the_finished_variants(tmp_path, monkeypatch, capsys):
    import gemmprof.commands.run as run_cmd
    import gemmprof.measure.runner as runner

    monkeypatch.setattr(run_cmd, "require_cupy", lambda: None)
    monkeypatch.setattr(runner, "Runner", _StandInRunner)
    monkeypatch.setattr(runner, "device_info", lambda: {"name": "stand-in"})
    out = tmp_path / "results.json"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "1", "2", "3", "4", "--no-cublas", "--size", "256", "-o", str(out)])
    assert exit_.value.code == 130
    assert "2 finished variants are saved" in capsys.readouterr().err
    saved = load_run(out)
    assert [v.name for v in saved.variants] == ["naive", "gmem_coalescing"]
    assert len(saved.variants) == 2
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]  # no temporary file left behind


def test_run_to_a_missing_folder_fails_before_running(tmp_path, monkeypatch):
    import gemmprof.commands.run as run_cmd
    import gemmprof.measure.runner as runner

    _StandInRunner.calls = -100
    monkeypatch.setattr(run_cmd, "require_cupy", lambda: None)
    monkeypatch.setattr(runner, "Runner", _StandInRunner)
    monkeypatch.setattr(runner, "device_info", lambda: {})
    with pytest.raises(SystemExit) as exit_:
        main(["run", "1", "--no-cublas", "--size", "256", "-o", str(tmp_path / "no" / "r.json")])
    assert exit_.value.code == 2 and _StandInRunner.calls == -100  # nothing ran


@pytest.mark.parametrize("text, problem", [
    ("cdiv(T, 0)", "cdiv by zero"), ("T / 0", "division by zero"), ("T % 0", "division by zero"),
    ("min()", "takes 1 or more"), ("cdiv(T)", "takes 2"), ("max(" * 45 + "1" + ")" * 45, "nested"),
    ("-" * 3000 + "1", "longer than"), ("(" * 3000 + "1" + ")" * 3000, "longer than"), ("T * 1e400", "out of range"),
    ("T ** 2", "not allowed"), ("'a'", "not a number"), ("T" * 2000, "longer than"), (["T"], "expected an expression"),
])
def test_expression_errors(text, problem):
    from gemmprof.catalog import expr

    with pytest.raises(expr.ExprError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        expr.evaluate(text, {"T": 4})


@pytest.mark.parametrize("raised, said", [
    ("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version",
     "no CUDA driver found"),
    ("cudaErrorNoDevice: no CUDA-capable device is detected", "no CUDA GPU found"),
])
def test_missing_driver_is_said_as_such(monkeypatch, raised, said):
    import sys
    import types

    from gemmprof.errors import GpuUnavailableError, require_cupy

    def count():
        raise RuntimeError(raised)

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=count))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(GpuUnavailableError, match=said):
        require_cupy()


@pytest.mark.gpu
def test_interrupted_gpu_run_keeps_the_verified_variants(tmp_path, monkeypatch, capsys):
    """On the GPU: two rungs really verified and timed, Ctrl-C at the third; the file holds the two, readable."""
    import gemmprof.measure.runner as runner

    real = runner.Runner.run_kernel
    calls = []

    def interrupted(self, kernel, compiler=None):
        calls.append(kernel.spec.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, kernel, compiler)

    monkeypatch.setattr(runner.Runner, "run_kernel", interrupted)
    out = tmp_path / "results.json"
    with pytest.raises(SystemExit) as exit_:
        main(["run", "1", "2", "3", "--no-cublas", "--size", "512", "--budget", "0.05", "-o", str(out)])
    assert exit_.value.code == 130
    saved = load_run(out)
    assert [v.name for v in saved.variants] == calls[:2]
    assert all(v.passed and v.timing and v.timing.median_ms > 0 for v in saved.variants)
