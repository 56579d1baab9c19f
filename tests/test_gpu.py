"""End-to-end checks on a real GPU (marker `gpu`: skipped where CuPy finds no device, so CI skips them)."""

import json
import subprocess
import sys

import pytest
from clitools import invoke
from context import needs_gpu, needs_ncu

pytestmark = needs_gpu


def _run(runner, tmp_path, *args):
    out = tmp_path / "r.json"
    r = invoke(runner, ["run", *args, "-o", str(out), "--budget", "0.05", "--max-reps", "10"])
    return r, json.loads(out.read_text()) if out.exists() else None


def test_every_rung_verifies_at_a_tile_multiple(runner, tmp_path):
    r, doc = _run(runner, tmp_path, "--all", "--size", "512")
    assert doc is not None, r.output
    bad = {v["name"]: v["message"] for v in doc["variants"] if v["status"] != "ok"}
    assert not bad, bad


def test_beta_and_alpha_are_honoured(runner, tmp_path):
    r, doc = _run(runner, tmp_path, "--all", "--size", "256", "--alpha", "-0.5", "--beta", "2")
    bad = {v["name"]: v["message"] for v in doc["variants"] if v["status"] != "ok"}
    assert not bad, bad


def test_odd_shape_runs_or_is_rejected_never_wrong(runner, tmp_path):
    r, doc = _run(runner, tmp_path, "--all", "-m", "123", "-n", "77", "-k", "45")
    for v in doc["variants"]:
        assert v["status"] in ("ok", "rejected"), (v["name"], v["message"])
        if v["status"] == "rejected":
            assert "nearest valid" in v["message"] or "multiple" in v["message"]


def test_a_wrong_kernel_is_reported_as_fail(runner, tmp_path):
    src = tmp_path / "wrong.cu"
    src.write_text("extern \"C\" __global__ void wrong(int M, int N, int K, float alpha, const float* A, const float* B,"
                   " float beta, float* C) { int i = blockIdx.x * blockDim.x + threadIdx.x;"
                   " if (i < M * N && i % 7) C[i] = 1.0f; }\n")
    spec = tmp_path / "wrong.yaml"
    spec.write_text("id: '99'\nname: wrong\ntitle: wrong\ndescription: writes ones, skips some\nsource: {document: test}\n"
                    "dtype: fp32\nlayout: {A: row, B: row, C: row}\nfile: wrong.cu\nentry: wrong\n"
                    "grid: ['cdiv(M * N, 256)']\nblock: [256]\n")
    r, doc = _run(runner, tmp_path, "--spec", str(spec), "--size", "128", "--no-cublas")
    row = doc["variants"][0]
    assert row["status"] == "FAIL" and "never written" in row["message"] and row["timing"] is None
    assert r.exit_code == 1


@needs_ncu
def test_profile_live(runner, tmp_path):
    out = tmp_path / "p.json"
    r = invoke(runner, ["profile", "3", "--size", "1024", "--save", str(out)])
    assert r.exit_code == 0, r.output
    launches = json.loads(out.read_text())["launches"]
    assert [lc["variant"] for lc in launches] == ["smem_caching"]


def test_a_faulting_kernel_loses_no_other_result(runner, tmp_path):
    # an illegal address kills the CUDA context; the variants after it must still run (in a fresh process)
    (tmp_path / "fault.cu").write_text(
        "extern \"C\" __global__ void fault(int M, int N, int K, float alpha, const float* A, const float* B,"
        " float beta, float* C) { C[(1ull << 40) + threadIdx.x] = 1.0f; }\n")
    (tmp_path / "fault.yaml").write_text(
        "id: '98'\nname: fault\ntitle: fault\ndescription: writes far out of bounds\nsource: {document: test}\n"
        "dtype: fp32\nlayout: {A: row, B: row, C: row}\nfile: fault.cu\nentry: fault\ngrid: [1]\nblock: [32]\n")
    from gemmprof.catalog.paths import KERNELS_DIR

    smem = KERNELS_DIR / "fp32" / "03_smem_caching.yaml"
    out = tmp_path / "r.json"
    # a process of its own: after a fault gemmprof leaves without CuPy's (noisy) teardown
    proc = subprocess.run([sys.executable, "-m", "gemmprof", "run", "--spec", str(tmp_path / "fault.yaml"), "--spec",
                           str(smem), "--size", "256", "--no-cublas", "--budget", "0.05", "-o", str(out)],
                          capture_output=True, text=True, check=False)
    rows = {v["name"]: v for v in json.loads(out.read_text())["variants"]}
    assert rows["fault"]["status"] == "error" and "CUDA" in rows["fault"]["message"]
    assert rows["smem_caching"]["status"] == "ok" and rows["smem_caching"]["timing"], rows["smem_caching"]
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr


def test_every_timed_variant_records_its_clocks(runner, tmp_path):
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    r, doc = _run(runner, tmp_path, "1", "5", "--size", "1024")
    assert doc is not None, r.output
    assert doc["device"]["clocks_source"] == "NVML"
    for v in doc["variants"]:
        assert v["status"] == "ok", v["message"]
        assert v["sm_clock_mhz_before"] > 0 and v["sm_clock_mhz_after"] > 0, v["name"]
        assert v["temperature_c_after"] > 0 and isinstance(v["clock_fell"], bool)


@pytest.mark.parametrize("shape", [("1000", "1027", "999"), ("257", "263", "33"), ("33", "2", "19"), ("130", "4", "9"),
                                   ("2000", "4100", "64"), ("300", "301", "77"), ("500", "515", "999")])
def test_top_fp32_rungs_verify_at_odd_shapes(runner, tmp_path, shape):
    """Rungs 13-16 take any M, N, K >= 1: N % 4 in 0..3 (16- and 4-byte copies of B, float4 or staged stores of C),
    K shorter than the pipeline, N < 4, a shape whose grid swaps the tile orientation (2000 x 4100; not rung 16's
    square default tiles), and shapes that rung 16 splits along K (257 x 263 x 33 in 2 slices, 300 x 301 x 77 in 5,
    500 x 515 x 999 in 6 of about 21 k-tiles)."""
    m, n, k = shape
    r, doc = _run(runner, tmp_path, "13-16", "-m", m, "-n", n, "-k", k, "--alpha", "1.5", "--beta", "-0.75",
                  "--no-cublas")
    assert doc is not None, r.output
    bad = {v["name"]: v["message"] for v in doc["variants"] if v["status"] != "ok"}
    assert not bad and len(doc["variants"]) == 4, bad


@pytest.mark.parametrize(("shape", "beta"), [(("33", "2", "19"), "-0.75"), (("257", "263", "33"), "0"),
                                             (("1000", "1000", "1000"), "0"), (("130", "4", "9"), "2")])
def test_rung16_verifies_with_slices_one_k_tile_deep(runner, tmp_path, shape, beta):
    """SPLIT_MIN_KTILES=1 splits K into as many slices as the wave and SPLIT_MAX allow, down to one k-tile each,
    the partial one alone in slice 0. With beta = 0 the second verified launch (over the sentinel) checks that the
    first left every flag reset; the timed launches after it would hang otherwise."""
    m, n, k = shape
    r, doc = _run(runner, tmp_path, "16", "--param", "SPLIT_MIN_KTILES=1", "-m", m, "-n", n, "-k", k,
                  "--alpha", "1.5", "--beta", beta, "--no-cublas")
    assert doc is not None, r.output
    v = doc["variants"][0]
    assert v["status"] == "ok" and v["timing"], v["message"]
    assert v["grid"][2] > 1 and f"SPLIT_K={v['grid'][2]}" in v["message"], (v["grid"], v["message"])


@pytest.mark.parametrize(("shape", "defines"), [(("4096", "4096", "4096"), ("-DMS14_TALL=0", "-DMS14_NMOD4=0")),
                                                (("4095", "4097", "1023"), ("-DMS14_TALL=1", "-DMS14_NMOD4=1")),
                                                (("4096", "4098", "512"), ("-DMS14_TALL=1", "-DMS14_NMOD4=2"))])
def test_rung14_verifies_with_the_build_for_its_shape(runner, tmp_path, shape, defines):
    """The binary run builds holds only the orientation and the N % 4 class of the launch (the spec's `specialize`)."""
    m, n, k = shape
    r, doc = _run(runner, tmp_path, "14", "-m", m, "-n", n, "-k", k, "--beta", "0.5", "--no-cublas")
    assert doc is not None, r.output
    v = doc["variants"][0]
    assert v["status"] == "ok", v["message"]
    assert set(defines) <= set(v["compiler_flags"]), v["compiler_flags"]
