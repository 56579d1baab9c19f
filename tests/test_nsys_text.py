"""Reading the text tables nsys prints (the H100 `--stats=true` stdout, seed 003's older A100 tables) and
`nsys stats --format csv` output, and comparing them: figures checked against the files as printed."""

import csv
import io
import statistics
from pathlib import Path

import pytest

from gemmprof.adapters.kernel_names import short_kernel_name
from gemmprof.adapters.nsys.compare import compare
from gemmprof.adapters.nsys.report import ReportError, load_report
from gemmprof.adapters.nsys.text import parse_stats
from gemmprof.catalog import gpu_specs
from gemmprof.model.traffic import GemmShape

FIX = Path(__file__).parent / "fixtures" / "nsys"
H100_STATS = FIX / "h100_cupy_nvtx_profile_stats_stdout.txt"
A100_STATS = FIX / "a100_seed003_profile_stats_stdout.txt"
A100_4096 = FIX / "a100_seed003_gpukernsum_4096.txt"
NAIVE = "mm_cuda_naive(float *, float *, float *, int, int, int)"


def test_h100_stats_stdout_kernels_through_progress_bars():
    rep = load_report(H100_STATS)
    assert rep.format == "text"
    k = rep.summary[0]
    assert k.name == "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)"
    assert (k.instances, k.total_ns, k.avg_ns, k.med_ns, k.min_ns, k.max_ns, k.stddev_ns) == (
        10, 3_373_794, 337_379.4, 336_823.0, 336_327, 340_167, 1_400.5)
    assert [s.total_ns for s in rep.summary] == [3_373_794, 156_675, 21_024, 16_928]
    assert rep.summary[1].name.endswith("(unsigned long long, u…")  # nsys cut it at its column width
    assert rep.range_names == ["variantA", "variantB"]


def test_h100_api_table_survives_interleaved_skipped_lines():
    api = {c.name: (c.calls, c.total_ns) for c in load_report(H100_STATS).api}
    assert len(api) == 22
    # the row that "SKIPPED: ... does not contain GPU memory data." was printed into, and the row after it
    assert api["cuModuleGetLoadingMode"] == (4, 2_529)
    assert api["cuKernelGetName"] == (2, 1_867)
    assert api["cuGetProcAddress_v2"] == (1_320, 451_555)


def test_seed003_older_layout_grid_block_and_memory_tables():
    rep = load_report(A100_STATS)
    rows = {s.name: s for s in rep.summary}
    assert list(rows) == ["ampere_sgemm_32x32_sliced1x4_nn", NAIVE,
                          "mm_cuda_memory_coalescing(float *, float *, float *, int, int, int)",
                          "mm_cuda_sub_shared_memory(float *, float *, float *, int, int, int)"]
    sgemm = rows["ampere_sgemm_32x32_sliced1x4_nn"]
    assert (sgemm.instances, sgemm.total_ns, sgemm.avg_ns, sgemm.stddev_ns) == (11, 114_495, 10_408.6, 202.4)
    assert (sgemm.grid, sgemm.block) == ((4, 4, 1), (128, 1, 1))
    assert (rows[NAIVE].grid, rows[NAIVE].block) == ((4, 4, 1), (32, 32, 1))
    ops = {m.operation: (m.count, m.total_ns, m.bytes) for m in rep.memops}
    assert ops == {"memcpy HtoD": (8, 43_904, 320_000), "memcpy DtoH": (4, 16_767, 160_000)}
    assert {c.name: c.calls for c in rep.api}["cudaMemcpy"] == 12
    assert rep.range_names == ["cuBLAS:cublasCreate_v2", "cuBLAS:cublasSgemm_v2"]


def test_seed003_4096_table_figures_and_throughput():
    rep = load_report(A100_4096)
    naive, sgemm = rep.summary[0], rep.summary[1]
    assert (naive.name, naive.instances, naive.total_ns) == (NAIVE, 1, 470_706_229)
    assert (sgemm.name, sgemm.instances, sgemm.avg_ns) == ("ampere_sgemm_128x64_nn", 11, 8_810_508.2)
    assert (naive.grid, naive.block) == ((128, 128, 1), (32, 32, 1))
    a100 = gpu_specs.get_gpu("a100")
    cmp = compare([rep], shape=GemmShape(4096, 4096, 4096), gpu_spec=a100)
    rows = {r.stats.name: r for r in cmp.rows}
    assert round(rows[NAIVE].tflops, 2) == 0.29  # 2*4096^3 FLOP in 470.7 ms
    assert round(rows["ampere_sgemm_128x64_nn"].tflops, 1) == 15.6  # in 8.81 ms
    assert rows["ampere_sgemm_128x64_nn"].baseline and rows["ampere_sgemm_128x64_nn"].speedup == 1
    assert rows[NAIVE].speedup == pytest.approx(8_810_508.2 / 470_706_229)
    assert rows[NAIVE].gpu_time_pct == pytest.approx(72.5, abs=0.05)  # the table's Time (%)
    assert rows["ampere_sgemm_128x64_nn"].pct_of_peak == pytest.approx(
        100 * rows["ampere_sgemm_128x64_nn"].tflops / a100.peak_tflops["fp32"])


def test_two_summaries_in_one_file_are_refused(tmp_path):
    both = tmp_path / "both.txt"
    both.write_text(A100_STATS.read_text() + "\n" + A100_4096.read_text())
    with pytest.raises(ReportError, match=r"both\.txt: holds 2 kernel summaries \(lines 47, 72\)"):
        load_report(both)


def test_truncated_text_row(tmp_path):
    lines = A100_4096.read_text().splitlines()
    cut = tmp_path / "cut.txt"
    cut.write_text("\n".join(lines[:3] + [lines[3][:60]]) + "\n")
    with pytest.raises(ReportError, match=r"cut\.txt: line 4: expected 11 columns, found fewer \(a truncated row\?\)"):
        load_report(cut)


def test_text_without_kernel_table(tmp_path):
    other = tmp_path / "program.log"
    other.write_text("\n".join(A100_STATS.read_text().splitlines()[:20]) + "\n")  # warnings and program output only
    with pytest.raises(ReportError, match=r"program\.log: no CUDA GPU kernel summary found"):
        load_report(other)


# nsys stats --format csv: no real CSV output was available, so these check the reader on the column headers of
# the report scripts nsys ships (cuda_gpu_kern_sum: "Time (%)", "Total Time (ns)", "Instances", "Avg (ns)",
# "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Name"; gpukernsum adds "GridXYZ", "BlockXYZ") and on the older
# "Time(%)", "Average", "Minimum", "Maximum" headers, filled with the real per-launch times of the SQLite fixture.

def _real_durations():
    import sqlite3

    con = sqlite3.connect(f"{(FIX / 'h100_cupy_nvtx.sqlite').resolve().as_uri()}?mode=ro", uri=True)
    rows = con.execute("SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                       "JOIN StringIds s ON s.id = k.demangledName").fetchall()
    con.close()
    out: dict[str, list[int]] = {}
    for name, d in rows:
        out.setdefault(name, []).append(d)
    return out


def _csv(headers, values_of, preamble=""):
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(headers)
    for name, d in sorted(_real_durations().items(), key=lambda kv: -sum(kv[1])):
        w.writerow(values_of(name, d))
    return preamble + buf.getvalue()


def _current(name, d):
    return [f"{100 * sum(d) / 3_568_421:.1f}", sum(d), len(d), f"{statistics.mean(d):.1f}",
            f"{statistics.median(d):.1f}", min(d), max(d), f"{statistics.stdev(d) if len(d) > 1 else 0:.1f}", name]


CURRENT = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)",
           "Name"]


def test_csv_current_headers_after_processing_lines():
    pre = ("Generating SQLite file report.sqlite from report.nsys-rep\n"
           "Processing [report.sqlite] with [/opt/nvidia/nsight-systems/2025.3.2/host-linux-x64/reports/"
           "cuda_gpu_kern_sum.py]... \n\n ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\n")
    rep = parse_stats(_csv(CURRENT, _current, pre), "kern.csv", "csv")
    k = rep.summary[0]
    assert rep.format == "csv"
    assert (k.name, k.instances, k.total_ns, k.avg_ns, k.med_ns, k.min_ns, k.max_ns, k.stddev_ns) == (
        "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)", 10, 3_373_794,
        337_379.4, 336_823.0, 336_327, 340_167, 1_400.5)
    # a name with commas stays whole
    assert any(s.name.startswith("void gen_sequenced<curandStateXORWOW, float, int,") for s in rep.summary)


def test_csv_gpukernsum_headers_with_grid_and_block():
    headers = CURRENT[:-1] + ["GridXYZ", "BlockXYZ", "Name"]
    rep = parse_stats(_csv(headers, lambda n, d: _current(n, d)[:-1] + ["128    1    1", " 256    1    1", n]),
                      "old.csv", "csv")
    assert (rep.summary[0].grid, rep.summary[0].block) == ((128, 1, 1), (256, 1, 1))


@pytest.mark.parametrize("headers", [
    ["Time(%)", "Total Time (ns)", "Instances", "Average", "Minimum", "Maximum", "Name"],
    ["Time(%)", "Total Time (ns)", "Instances", "Average (ns)", "Minimum (ns)", "Maximum (ns)", "Name"],
])
def test_csv_older_headers(headers):
    def values(name, d):
        return [f"{100 * sum(d) / 3_568_421:.1f}", sum(d), len(d), f"{statistics.mean(d):.1f}", min(d), max(d), name]

    k = parse_stats(_csv(headers, values), "older.csv").summary[0]
    assert (k.instances, k.total_ns, k.avg_ns, k.min_ns, k.max_ns, k.med_ns) == (
        10, 3_373_794, 337_379.4, 336_327, 340_167, None)


def test_csv_time_unit_other_than_ns():
    headers = [h.replace("(ns)", "(us)") for h in CURRENT]

    def values(name, d):
        return [0, sum(d) / 1e3, len(d), statistics.mean(d) / 1e3, statistics.median(d) / 1e3, min(d) / 1e3,
                max(d) / 1e3, 0, name]

    k = parse_stats(_csv(headers, values), "us.csv").summary[0]
    assert k.total_ns == pytest.approx(3_373_794) and k.avg_ns == pytest.approx(337_379.4)


@pytest.mark.parametrize("name,short", [
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)",
     "cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>"),
    ("void gen_sequenced<curandStateXORWOW, float, int, &curand_uniform_noargs<curandStateXORWOW>, rng_config<"
     "curandStateXORWOW, (curandOrdering)101>>(T1 *, T2 *, unsigned long, unsigned long, T3)", "gen_sequenced<…>"),
    ("void gen_sequenced<curandStateXORWOW, float, int, &curand_uniform_noargs<curandStateXORWOW>, rng_co…",
     "gen_sequenced<…>"),
    (NAIVE, "mm_cuda_naive"),
    ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
])
def test_short_kernel_names(name, short):
    assert short_kernel_name(name) == short
