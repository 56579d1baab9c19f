"""Reading the real H100 Nsight Systems SQLite export (tests/fixtures/nsys/PROVENANCE.md), checked against the
`--stats=true` tables the same nsys run printed, and the schema differences and damage nsys users will meet."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from gemmprof.adapters.nsys import report as nsys
from gemmprof.adapters.nsys.report import ReportError, load_report

FIX = Path(__file__).parent / "fixtures" / "nsys"
SQLITE = FIX / "h100_cupy_nvtx.sqlite"
STATS = FIX / "h100_cupy_nvtx_profile_stats_stdout.txt"
CUTLASS = "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)"


@pytest.fixture(scope="module")
def report():
    return load_report(SQLITE)


def edited_copy(tmp_path, *statements):
    """A copy of the real export changed by SQL, as an older or damaged export would be."""
    path = tmp_path / "edited.sqlite"
    shutil.copy(SQLITE, path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        for s in statements:
            con.execute(s)
    con.close()
    return path


def test_kernels_by_nvtx_range_five_per_variant(report):
    assert report.has_ranges and report.range_names == ["variantA", "variantB"]
    ranged = [s for s in report.kernels(by_range=True) if s.range]
    assert [(s.range, s.name, s.instances) for s in ranged] == [("variantA", CUTLASS, 5), ("variantB", CUTLASS, 5)]
    a, b = ranged
    assert (a.total_ns, b.total_ns) == (1_690_721, 1_683_073)
    # together they are the stats table's row: 3,373,794 ns over 10 instances
    assert a.total_ns + b.total_ns == 3_373_794


def test_kernel_belongs_to_the_range_of_its_launch_call_not_of_its_execution(report):
    # correlationId 2058 is launched (cuLaunchKernel at 1436132467) inside variantA but runs until 1436499601,
    # after variantB has started on the CPU (1436463270): it stays in variantA
    late = [la for la in report.launches if la.start_ns == 1_436_159_787]
    assert len(late) == 1 and late[0].range == "variantA" and late[0].end_ns > 1_436_463_270


def test_by_kernel_reproduces_the_stats_table_exactly(report):
    stats = {s.name: s for s in report.kernels(by_range=False)}
    k = stats[CUTLASS]
    # " 94.5  3,373,794  10  337,379.4  336,823.0  336,327  340,167  1,400.5  void cutlass::Kernel2<...>"
    assert (k.instances, k.total_ns, k.avg_ns, k.med_ns, k.min_ns, k.max_ns) == (
        10, 3_373_794, 337_379.4, 336_823.0, 336_327, 340_167)
    assert round(k.stddev_ns, 1) == 1_400.5
    assert (k.grid, k.block, k.registers, k.static_smem, k.dynamic_smem) == ((128, 1, 1), (256, 1, 1), 202, 0, 49152)
    assert stats["cupy_random_x_mod_1"].total_ns == 21_024


def test_sqlite_and_text_tables_agree_on_every_kernel_and_api_call(report):
    text = load_report(STATS)
    by_sql = {s.name: s for s in report.kernels(by_range=False)}
    for t in text.summary:
        full = next(n for n in by_sql if n == t.name or (t.name.endswith("…") and n.startswith(t.name[:-1])))
        s = by_sql[full]
        assert (s.instances, s.total_ns, s.avg_ns, s.med_ns, s.min_ns, s.max_ns) == (
            t.instances, t.total_ns, t.avg_ns, t.med_ns, t.min_ns, t.max_ns)
        assert round(s.stddev_ns, 1) == t.stddev_ns
    assert {c.name: (c.calls, c.total_ns) for c in report.api} == {c.name: (c.calls, c.total_ns) for c in text.api}


def test_api_summary_and_report_metadata(report):
    api = {c.name: c for c in report.api}
    assert (api["cudaLaunchKernel"].calls, api["cudaLaunchKernel"].total_ns) == (2, 3_724_390)  # _v7000 stripped
    assert "cuGetProcAddress_v2" in api and "cudaStreamIsCapturing_v10000" in api  # as cuda_api_sum prints them
    assert report.memops == []  # "SKIPPED: ... does not contain GPU memory data."
    assert report.gpu_name == "NVIDIA H100 80GB HBM3" and report.nsys_version == "2025.3.2.0"


def test_missing_short_name_column_changes_nothing(tmp_path, report):
    path = edited_copy(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN shortName")
    assert load_report(path).kernels(True) == report.kernels(True)


def test_missing_demangled_name_falls_back_to_short_name(tmp_path):
    path = edited_copy(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN demangledName")
    names = {s.name for s in load_report(path).kernels(False)}
    assert names == {"Kernel2", "generate_seed_pseudo", "gen_sequenced", "cupy_random_x_mod_1"}


def test_missing_registers_column_leaves_registers_blank(tmp_path):
    path = edited_copy(tmp_path, "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN registersPerThread")
    stats = load_report(path).kernels(False)
    assert all(s.registers is None for s in stats)
    assert {s.dynamic_smem for s in stats} == {0, 49152}


def test_without_runtime_table_kernels_are_not_tied_to_ranges(tmp_path):
    path = edited_copy(tmp_path, "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME")
    rep = load_report(path)
    assert not rep.has_ranges and rep.api == []
    assert any("cannot be tied to NVTX ranges" in n for n in rep.notes)


def test_no_kernel_table(tmp_path):
    path = edited_copy(tmp_path, "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    with pytest.raises(ReportError, match=r"edited\.sqlite: no CUDA kernels: the report has no CUPTI_ACTIVITY_KIND_KERNEL"):
        load_report(path)


def test_empty_kernel_table(tmp_path):
    path = edited_copy(tmp_path, "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL")
    with pytest.raises(ReportError, match=r"edited\.sqlite: no CUDA kernels: CUPTI_ACTIVITY_KIND_KERNEL is empty"):
        load_report(path)


@pytest.mark.parametrize("nbytes", [1000, 100_000])
def test_truncated_export(tmp_path, nbytes):
    path = tmp_path / "cut.sqlite"
    path.write_bytes(SQLITE.read_bytes()[:nbytes])
    with pytest.raises(ReportError, match=r"cut\.sqlite: not a readable Nsight Systems SQLite export \(.+\); "
                                          r"a truncated copy\? re-export it with `nsys export --type sqlite"):
        load_report(path)


def test_empty_file_and_not_a_database(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(ReportError, match=r"empty\.sqlite: the file is empty"):
        load_report(empty)
    text = tmp_path / "notes.sqlite"
    text.write_text("these are not the tables you are looking for\n" * 50)
    with pytest.raises(ReportError, match=r"notes\.sqlite: not a readable .*file is not a database"):
        load_report(text)


def test_missing_file():
    with pytest.raises(ReportError, match=r"nope\.sqlite: cannot read"):
        load_report("nope.sqlite")


def test_sqlite_detected_by_content_whatever_the_name(tmp_path):
    path = tmp_path / "report.bin"
    shutil.copy(SQLITE, path)
    assert nsys.detect_format(path) == "sqlite" and load_report(path).format == "sqlite"
