"""A real `nsys profile ... gemmprof run 1 3 5 10 --size 4096` on the H100 (PROVENANCE.md): gemmprof's own NVTX
ranges give the variant and shape, cuBLAS is the baseline, and the SQLite export agrees with the stats tables."""

from pathlib import Path

import pytest

from gemmprof.adapters.nsys.compare import compare
from gemmprof.adapters.nsys.report import load_report
from gemmprof.catalog import gpu_specs

FIX = Path(__file__).parent / "fixtures" / "nsys"
SQLITE = FIX / "h100_gemmprof_run_4096.sqlite"
STATS = FIX / "h100_gemmprof_run_4096_stats_stdout.txt"
SGEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_e"


@pytest.fixture(scope="module")
def report():
    return load_report(SQLITE)


@pytest.fixture(scope="module")
def stats():
    return load_report(STATS)


def test_rows_per_gemmprof_range_with_variant_and_shape(report):
    cmp = compare([report])
    gemmprof_rows = [r for r in cmp.rows if r.variant]
    assert [(r.variant, r.shape.label, r.stats.instances) for r in gemmprof_rows] == [
        ("cublas_sgemm", "4096x4096x4096", 78), ("cublas_tf32", "4096x4096x4096", 203),
        ("smem_caching", "4096x4096x4096", 15), ("blocktiling_2d", "4096x4096x4096", 35),
        ("warptiling", "4096x4096x4096", 59)]
    # CuPy's own range from verification (domain CCCL, name through StringIds) is left out of a gemmprof run's rows
    assert len(cmp.rows) == 5
    assert any("other NVTX ranges (CCCL:cub::DeviceReduce::Sum)" in n for n in cmp.notes)
    every = compare([report], group_by="kernel")
    assert any(r.stats.name.startswith("void cub::") for r in every.rows)
    assert any("launches outside NVTX ranges" in n for n in cmp.notes)  # verification launches


def test_cublas_baseline_tflops_and_peak(report):
    h100 = gpu_specs.get_gpu("h100")
    cmp = compare([report])
    rows = {r.variant: r for r in cmp.rows if r.variant}
    sgemm, tf32, warp = rows["cublas_sgemm"], rows["cublas_tf32"], rows["warptiling"]
    assert sgemm.baseline and sgemm.speedup == 1 and sgemm.stats.name.startswith(SGEMM)
    assert sgemm.stats.total_ns == 207_228_742
    assert sgemm.tflops == pytest.approx(2 * 4096**3 / (207_228_742 / 78 * 1e-9) / 1e12)
    assert round(sgemm.tflops, 1) == 51.7  # the lent H100's cuBLAS SGEMM at 4096: 51.1 with CUDA events
    assert (sgemm.dtype, tf32.dtype) == ("fp32", "tf32")
    assert sgemm.pct_of_peak == pytest.approx(100 * sgemm.tflops / h100.peak_tflops["fp32"])
    assert tf32.pct_of_peak == pytest.approx(100 * tf32.tflops / h100.peak_tflops["tf32_tensor"])
    assert warp.speedup == pytest.approx(sgemm.stats.avg_ns / warp.stats.avg_ns)
    assert cmp.inputs[0]["baseline"] == "cublas_sgemm" and cmp.inputs[0]["gpu_spec"] == h100.name


def test_ranged_plus_unranged_launches_are_the_stats_table(report, stats):
    """Each kernel's launches inside and outside gemmprof ranges add up to the cuda_gpu_kern_sum row."""
    printed = {k.name: k for k in stats.summary}
    by_kernel = {}
    for s in report.kernels(by_range=True):
        acc = by_kernel.setdefault(s.name, [0, 0])
        acc[0] += s.instances
        acc[1] += s.total_ns
    for name, (instances, total) in by_kernel.items():
        row = printed.get(name) or next(v for k, v in printed.items() if k.endswith("…") and name.startswith(k[:-1]))
        assert (instances, total) == (row.instances, row.total_ns), name
    assert (printed["void sgemm_smem_caching<(unsigned int)32>(int, int, int, float, const float *, const float *, "
                    "float…"].instances) == 16  # 15 timed in the range + 1 verification launch


def test_memory_operations_and_api_agree_with_the_stats_tables(report, stats):
    sql = {m.operation: m for m in report.memops}
    txt = {m.operation: m for m in stats.memops}
    assert set(sql) == set(txt) == {"memset", "memcpy DtoH"}
    for op in sql:
        assert (sql[op].count, sql[op].total_ns) == (txt[op].count, txt[op].total_ns)
    assert (sql["memset"].count, sql["memset"].total_ns) == (580, 12_304_584)  # the L2 flushes between repetitions
    assert round(sql["memset"].bytes / 1e6, 3) == 39_334.577  # "Total (MB)" as printed
    assert {c.name: (c.calls, c.total_ns) for c in report.api} == {c.name: (c.calls, c.total_ns) for c in stats.api}
