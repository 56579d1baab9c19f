"""Reading Nsight Compute CSV (details and raw pages) from real H100 output, and what gemmprof makes of it."""

import csv
import io
import json

import pytest
from conftest import FIXTURES

from gemmprof.adapters.kernel_names import base_kernel_name
from gemmprof.adapters.ncu.findings import (
    VariantInfo,
    analyse,
    analyse_launch,
    choose_gpu,
    gemmprof_range,
    stall_shares,
    summarise_rule,
)
from gemmprof.adapters.ncu.occupancy import check_occupancy
from gemmprof.adapters.ncu.report import merge, parse_csv, parse_number, range_names, read_csv_file, to_base
from gemmprof.catalog.gpu_specs import all_gpus, get_gpu
from gemmprof.errors import InputError
from gemmprof.model.traffic import GemmShape, Tiles
from gemmprof.results.profile import PROFILE_KIND, ProfileResults

NCU = FIXTURES / "ncu"
NVTX_HEADER = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def text(name):
    return (NCU / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def details():
    return parse_csv(text("h100_naive_smem_details.csv"))


@pytest.fixture(scope="module")
def stalls():
    return parse_csv(text("h100_naive_smem_raw_stalls.csv"))


@pytest.fixture(scope="module")
def cublas_raw():
    return parse_csv(text("h100_cublas_nvtx_raw_base_units.csv"))


@pytest.fixture(scope="module")
def full_set():
    return parse_csv(text("h100_cupy_full_set_details.csv"))


@pytest.fixture(scope="module")
def h100():
    return get_gpu("h100")


def with_nvtx(csv_text: str, ranges: dict[int, str]) -> str:
    """A copy of real ncu output with the NVTX column `ncu --nvtx` adds (after Host Name), one range per launch."""
    lines = csv_text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith('"ID",'))
    rows = list(csv.reader(lines[at:]))
    col = rows[0].index("Host Name") + 1
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for i, row in enumerate(rows):
        if i == 0:
            cell = NVTX_HEADER
        elif row[0].isdigit():
            cell = f'1  "<default domain>:{ranges[int(row[0])]}:none:none:none:none:none:none" '
        else:
            cell = ""
        writer.writerow(row[:col] + [cell] + row[col:])
    return "\n".join(lines[:at]) + "\n" + out.getvalue()


# --- numbers and units -----------------------------------------------------------------------------------------

def test_numbers_with_thousands_separators_and_na():
    assert parse_number("8,394,496") == 8394496
    assert parse_number("2,618,936,583.64") == pytest.approx(2618936583.64)
    assert parse_number("12.50") == 12.5
    assert parse_number("n/a") is None
    assert parse_number("(1024, 1, 1)") is None
    assert parse_number("PolicySpread") is None


def test_scaled_units_become_base_units_and_are_marked_inexact():
    assert to_base(59.01, "us") == (pytest.approx(59010), "ns", False)
    assert to_base(362304, "ns") == (362304, "ns", True)
    assert to_base(102.4, "Kbyte") == (pytest.approx(102400), "byte", False)
    assert to_base(18.82, "Kbyte/block")[1] == "byte/block"
    assert to_base(2.62, "Ghz")[0] == pytest.approx(2.62e9)
    assert to_base(71.1, "%") == (71.1, "%", True)


# --- the details page ------------------------------------------------------------------------------------------

def test_details_page_launches_program_output_and_messages(details):
    assert details.layout == "details"
    assert [(launch.id, launch.kernel_name) for launch in details.launches] == [(0, "sgemm_naive"), (1, "sgemm_smem")]
    assert any(m.startswith("==WARNING== Note: Running with unmodified GPU clocks") for m in details.messages)
    assert "==PROF== Disconnected from process 950" in details.messages
    assert details.other_lines == ["sgemm_naive regs 32 smem 0 err 0.0", "sgemm_smem regs 32 smem 8192 err 0.0"]
    naive = details.launches[0]
    assert naive.block == (1024, 1, 1) and naive.grid == (32, 32, 1) and naive.cc == "9.0"


def test_details_page_figures_match_the_file(details):
    naive, smem = details.launches
    assert naive.number("dram__bytes_read.sum") == 8_394_496
    assert naive.number("dram__bytes_write.sum") == 256
    assert naive.number("gpu__time_duration.sum") == 362_304
    assert naive.number("Duration", section="GPU Speed Of Light Throughput") == 362_304
    assert naive.number("Theoretical Occupancy", section="Occupancy") == 100
    assert naive.number("Block Limit Registers", section="Occupancy") == 2
    assert naive.number("Achieved Occupancy", section="Occupancy") == 95.65
    assert naive.find("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum").unit == ""
    assert smem.number("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum") == 278_465
    assert smem.number("Static Shared Memory Per Block", section="Launch Statistics") == 8192
    assert smem.number("Block Limit Shared Mem", section="Occupancy") == 3
    assert naive.find("Cluster Scheduling Policy").value == "PolicySpread"
    # the same label in two sections is kept apart
    assert naive.number("Memory Throughput", section="GPU Speed Of Light Throughput") == 71.11


def test_details_page_rules(details):
    naive = details.launches[0]
    assert [(r.name, r.type) for r in naive.rules] == [("SOLBottleneck", "INF"), ("CPIStall", "WRN"),
                                                       ("CPIStall", "OPT"), ("CPIStall", "INF"),
                                                       ("LaunchConfiguration", "OPT")]
    cpi = naive.rules[2]
    assert cpi.section == "WarpStateStats" and cpi.speedup == 39.89 and cpi.speedup_type == "local"
    advice = summarise_rule(naive.rules[4])
    assert advice.summary == "This kernel launch results in 3 full waves and a partial wave of 233 thread blocks."
    assert "\n" not in advice.summary and "http" not in summarise_rule(naive.rules[3]).summary


def test_scaled_units_of_an_imported_report(full_set):
    assert full_set.layout == "details" and len(full_set.launches) == 5
    gemm = full_set.launches[3]
    assert gemm.kernel_name.startswith("sm80_xmma_gemm_f32f32")
    duration = gemm.find("Duration", "GPU Speed Of Light Throughput")
    assert (duration.text, duration.unit, duration.value, duration.exact) == ("59.01", "us", 59010, False)
    dyn = gemm.find("Dynamic Shared Memory Per Block", "Launch Statistics")
    assert (dyn.value, dyn.base_unit) == (18820, "byte/block")
    assert gemm.number("Shared Memory Configuration Size", section="Launch Statistics") == 102_400
    assert any(r.name == "UncoalescedSharedAccess" and r.speedup == 16.38 for r in gemm.rules)
    assert full_set.gpu is None  # the details page does not name the device


def test_short_kernel_names():
    assert base_kernel_name("void gen_sequenced<curandStateXORWOW, float>(T1 *, unsigned long)") == "gen_sequenced"
    assert base_kernel_name("sgemm_naive") == "sgemm_naive"


# --- the raw page ----------------------------------------------------------------------------------------------

def test_raw_page_with_base_units(cublas_raw):
    assert cublas_raw.layout == "raw" and len(cublas_raw.launches) == 5
    assert cublas_raw.gpu == "NVIDIA H100 80GB HBM3"
    assert cublas_raw.other_lines == ["done"]
    gemm_a, gemm_b = cublas_raw.launches[3:]
    assert gemm_a.kernel_name == gemm_b.kernel_name
    assert gemm_a.kernel_name.startswith("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x64x8")
    assert gemm_a.find("dram__bytes.sum").unit == "byte" and gemm_a.number("dram__bytes.sum") == 4_264_960
    assert gemm_b.number("gpu__time_duration.sum") == 59_072 and gemm_b.find("gpu__time_duration.sum").unit == "ns"
    assert gemm_a.number("launch__registers_per_thread") == 224
    assert gemm_a.number("launch__shared_mem_per_block_dynamic") == 18_816
    assert gemm_a.block == (128, 1, 1) and gemm_a.grid == (8, 16, 1)
    assert gemm_a.nvtx == {}  # made without --nvtx, whatever the file name says


def test_raw_stalls_largest_reason(stalls):
    naive, smem = stalls.launches
    assert naive.number("gpu__time_duration.sum") == 362_880
    naive_shares, smem_shares = stall_shares(naive), stall_shares(smem)
    assert next(iter(naive_shares)) == "long_scoreboard"
    assert next(iter(smem_shares)) == "mio_throttle"
    assert "selected" not in naive_shares and "not_selected" in naive_shares
    assert sum(naive_shares.values()) == pytest.approx(1.0)
    ratios = {n.split("stalled_")[1][:-6]: m.number
              for n, m in naive.matching("smsp__average_warp_latency_issue_stalled_", ".ratio").items()}
    expected = ratios["long_scoreboard"] / (sum(ratios.values()) - ratios["selected"])
    assert naive_shares["long_scoreboard"] == pytest.approx(expected)


def test_pc_sampling_shares(stalls):
    naive, smem = stalls.launches
    f = analyse_launch(naive, None)
    assert next(iter(f.stalls_sampled)) == "long_scoreboard"
    assert not any(k.endswith("_not_issued") for k in f.stalls_sampled)
    assert next(iter(analyse_launch(smem, None).stalls_sampled)) == "mio_throttle"


def test_several_tables_in_one_file():
    both = parse_csv(text("h100_naive_smem_details.csv") + "\n" + text("h100_naive_smem_raw_stalls.csv"))
    assert both.layout == "mixed"
    assert [(launch.table, launch.id) for launch in both.launches] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_merge_adds_raw_metrics_to_details(stalls):
    merged = merge(parse_csv(text("h100_naive_smem_details.csv")), stalls)
    naive = merged.launches[0]
    assert naive.rules and naive.number("smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio")


def test_a_file_without_a_table():
    report = parse_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")
    assert report.layout == "empty" and report.launches == []
    assert report.messages[-1] == "==WARNING== No kernels were profiled."


def test_unreadable_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read"):
        read_csv_file(tmp_path / "missing.csv")


# --- NVTX ------------------------------------------------------------------------------------------------------

def test_range_names():
    assert range_names('1  "<default domain>:gemmprof naive 1024x1024x1024:none:none:none:none:none:none" ') == \
        ["gemmprof naive 1024x1024x1024"]
    assert range_names('1  "<default domain>:outer:none:none:none:none:none:none"  '
                       '"<default domain>:inner:none:none:none:none:none:none"') == ["outer", "inner"]
    assert range_names("") == []


def test_nvtx_columns_map_launches_to_variants():
    """A real `ncu --nvtx` capture of `gemmprof run` (rawprof stage): each launch's range names its variant."""
    tagged = read_csv_file(NCU / "h100_gemmprof_run_raw_4096.csv")
    coalescing = tagged.launches[0]
    assert "gemmprof gmem_coalescing 4096x4096x4096" in coalescing.nvtx[NVTX_HEADER]  # the push/pop column
    assert set(coalescing.nvtx.values()) - {coalescing.nvtx[NVTX_HEADER]} <= {""}  # start/stop ranges: none
    assert NVTX_HEADER not in {n for (_, n) in coalescing.metrics}
    shape = GemmShape(4096, 4096, 4096)
    assert gemmprof_range(tagged.launches[1]) == ("gemmprof smem_caching 4096x4096x4096", "smem_caching", shape)
    findings = analyse(tagged, get_gpu("h100"), variants={"gmem_coalescing": VariantInfo("fp32", Tiles())})
    assert [f.variant for f in findings] == ["gmem_coalescing", "smem_caching", "blocktiling_1d", "blocktiling_2d",
                                             "vectorized", "warptiling", "h3_mma_ldmatrix_swizzle"]
    assert findings[0].shape == shape and findings[0].flops_model == 2 * 4096**3
    assert findings[0].model_min_bytes == 3 * 4096 * 4096 * 4
    assert findings[0].model_tiled_bytes == (2 * 4096**3 + 4096**2) * 4  # untiled: 2MNK element reads + C
    assert findings[1].dtype is None and findings[1].model_min_bytes is None  # unknown variant, no --dtype


def test_h3_and_cublas_hgemm_details_at_8192():
    """`gemmprof profile h3 --cublas --size 8192` on the H100: the HGMMA counters of cuBLAS and h3's HMMA ones."""
    report = read_csv_file(NCU / "h100_gemmprof_profile_h3_cublas_details_8192.csv")
    infos = {"cublas_hgemm": VariantInfo("fp16"), "h3_mma_ldmatrix_swizzle": VariantInfo("fp16")}
    cublas, h3 = analyse(report, get_gpu("h100"), variants=infos)
    assert (cublas.variant, h3.variant) == ("cublas_hgemm", "h3_mma_ldmatrix_swizzle")
    assert cublas.kernel_name.startswith("nvjet_sm90") and cublas.shape == h3.shape == GemmShape(8192, 8192, 8192)
    assert h3.flops_tensor == pytest.approx(2 * 8192**3, rel=1e-3)  # mma.sync: the HMMA ops counter is 2*M*N*K
    # cuBLAS issues wgmma (HGMMA): the HMMA ops counter stays 0 although its tensor pipe was busy; this capture
    # predates the hgmma metrics in gemmprof's list, so its executed tensor FLOPs read 0, not 2*M*N*K
    assert cublas.flops_tensor == 0 and cublas.flops_model == 2 * 8192**3
    for f in (cublas, h3):
        assert f.duration_ns and f.achieved_flops_per_s > 3e14
    assert h3.duration_ns > cublas.duration_ns  # h3 reached ~63% of cuBLAS HGEMM in that run


def test_ranges_that_are_not_gemmprofs_fall_back_to_the_kernel_name(cublas_raw):
    tagged = parse_csv(with_nvtx(text("h100_cublas_nvtx_raw_base_units.csv"),
                                 {i: ("variantA" if i < 4 else "variantB") for i in range(5)}))
    assert tagged.launches[4].nvtx_ranges == ("variantB",)
    assert gemmprof_range(tagged.launches[4]) is None
    assert analyse(tagged, None)[4].variant == tagged.launches[4].kernel_name


# --- occupancy: gemmprof's calculation against ncu's -----------------------------------------------------------

def test_gemmprof_occupancy_agrees_with_ncu(details, h100):
    expected_smem_limit = {0: 8, 1: 3}
    for launch in details.launches:
        oc = check_occupancy(launch, h100)
        assert oc.theoretical_pct_ncu == 100 and oc.theoretical_pct_gemmprof == pytest.approx(100)
        assert oc.limits_ncu["registers"] == oc.limits_gemmprof["registers"] == 2
        assert oc.limits_ncu["warps"] == oc.limits_gemmprof["warps"] == 2
        assert oc.limits_ncu["blocks"] == oc.limits_gemmprof["blocks"] == 32
        assert oc.limits_ncu["shared memory"] == oc.limits_gemmprof["shared memory"] == expected_smem_limit[launch.id]
        assert oc.agrees is True and oc.disagreements == [] and oc.notes == []
        assert set(oc.limiters_ncu) == set(oc.limiters_gemmprof) == {"registers", "warps"}


def test_a_larger_driver_carveout_is_a_note_not_a_disagreement(cublas_raw, h100):
    oc = check_occupancy(cublas_raw.launches[3], h100)
    assert oc.theoretical_pct_ncu == 12.5 and oc.theoretical_pct_gemmprof == pytest.approx(12.5)
    assert oc.limits_ncu["shared memory"] == 5 and oc.limits_gemmprof["shared memory"] == 3
    assert oc.agrees is True and "100 KiB carveout" in oc.notes[0]


def test_a_disagreement_is_flagged(details):
    bad = get_gpu("t4")  # Turing: 32 warps and 16 blocks per SM, not the H100 ncu measured
    oc = check_occupancy(details.launches[0], bad)
    assert oc.agrees is False
    assert "block limit warps: ncu 2, gemmprof 1" in oc.disagreements


def test_rounded_launch_figures_are_noted(full_set, h100):
    oc = check_occupancy(full_set.launches[3], h100)
    assert any("--print-units base" in n for n in oc.notes)


def test_profile_choice(details, cublas_raw, h100):
    profiles = all_gpus()
    assert choose_gpu(cublas_raw, None, profiles)[0].key == "h100_sxm"  # by device name
    chosen, note = choose_gpu(details, None, profiles)  # by compute capability 9.0
    assert chosen.compute_capability == "9.0" and "compute capability 9.0" in note
    assert choose_gpu(details, h100, profiles) == (h100, "")


# --- the analysis and the results file -------------------------------------------------------------------------

def test_flops_traffic_and_intensity(details, h100):
    shape = GemmShape(1024, 1024, 1024)
    naive, smem = analyse(details, h100, shape, default_dtype="fp32")
    assert naive.duration_ns == 362_304 and naive.sol_compute_pct == 71.08 and naive.sol_memory_pct == 71.11
    assert naive.flops_fp32 == 2 * 1_073_741_824 == naive.flops_model and naive.flops_tensor is None
    assert naive.dram_bytes == 8_394_496 + 256
    assert naive.ai_dram == pytest.approx(2 * 1024**3 / (8_394_496 + 256))
    assert naive.ai_l2 is None  # no lts__t_bytes.sum in this file
    assert naive.achieved_flops_per_s == pytest.approx(2 * 1024**3 / 362_304e-9)
    assert smem.smem.st_conflicts == 278_465 and smem.smem.per("st", "requests") is None
    assert naive.warp_cycles_per_issue == 36.12
    assert naive.rules[0].type == "OPT" and naive.rules[0].speedup == 39.89  # largest advice first


def test_no_shape_no_model(details):
    naive = analyse(details, None)[0]
    assert naive.flops_model is None and naive.model_min_bytes is None
    assert naive.achieved_flops_per_s == pytest.approx(2 * 1_073_741_824 / 362_304e-9)  # executed FLOPs


def test_results_file_round_trip(tmp_path, details, h100):
    findings = analyse(details, h100, GemmShape(1024, 1024, 1024), default_dtype="fp32")
    path = tmp_path / "profile.json"
    ProfileResults(findings, gpu=None, gpu_spec="h100_sxm", shape=GemmShape(1024, 1024, 1024),
                   source={"csv": "x.csv", "layout": "details"}).save(path)
    doc = json.loads(path.read_text())
    assert ProfileResults.load(path).to_dict()["launches"] == doc["launches"]  # loads back as the same types
    assert doc["kind"] == PROFILE_KIND and doc["schema"] == 1 and doc["shape"] == {"M": 1024, "N": 1024, "K": 1024}
    naive = doc["launches"][0]
    assert naive["variant"] == "sgemm_naive" and naive["dram_read_bytes"] == 8_394_496
    assert naive["duration_ns"] == 362_304 and naive["flops_executed_vs_model"] == 1.0
    assert naive["occupancy"]["agrees"] is True and naive["occupancy"]["limits_ncu"]["registers"] == 2
    assert naive["rules"][0]["name"] == "CPIStall"
    (tmp_path / "other.json").write_text(json.dumps({"kind": "gemmprof.run"}))
    with pytest.raises(InputError, match="not a gemmprof profile results file"):
        ProfileResults.load(tmp_path / "other.json")


def test_hopper_rungs_and_cublas_details_at_8192():
    """`gemmprof profile h5 h6 --cublas --size 8192` on the H100: wgmma's HGMMA FLOPs and the tensor pipe's busy
    cycles, which ncu's HMMA-named pipe counter also reports for warpgroup MMAs."""
    report = read_csv_file(NCU / "h100_gemmprof_profile_h5_h6_cublas_details_8192.csv")
    infos = {n: VariantInfo("fp16") for n in ("cublas_hgemm", "warp_specialized", "persistent")}
    cublas, h5, h6 = analyse(report, get_gpu("h100"), variants=infos)
    assert [f.variant for f in (cublas, h5, h6)] == ["cublas_hgemm", "warp_specialized", "persistent"]
    assert h5.flops_tensor == h6.flops_tensor == 2 * 8192**3  # exactly the model: no padding at 8192
    assert cublas.flops_tensor == pytest.approx(2 * 8192**3, rel=0.02)  # its 320x128 tiles pad N (1.6% more)
    assert [f.tensor_pipe_pct for f in (cublas, h5, h6)] == [95.04, 93.27, 94.38]
    assert [next(iter(f.stalls)) for f in (cublas, h5, h6)] == ["gmma", "barrier", "barrier"]
    from gemmprof.results.profile import launch_from_dict, launch_to_dict
    assert launch_from_dict(launch_to_dict(h6)).tensor_pipe_pct == 94.38


def test_tensor_flops_take_the_sparsity_parts_when_the_plain_counter_is_missing():
    from gemmprof.adapters.ncu.findings import tensor_flops

    class _L:
        def __init__(self, values):
            self.values = values

        def number(self, *names):
            return next((self.values[n] for n in names if n in self.values), None)

    stem = "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32"
    assert tensor_flops(_L({f"{stem}_sparsity_off.sum": 10.0, f"{stem}_sparsity_on.sum": 0.0})) == 10.0
    # the plain rollup wins: its parts are never added on top of it
    assert tensor_flops(_L({f"{stem}.sum": 7.0, f"{stem}_sparsity_off.sum": 7.0})) == 7.0
    assert tensor_flops(_L({})) is None
