"""Issue 29's named regressions, each built from a real fixture with one damaged cell: the reader leaves the cell's
row out with a warning naming row and column, or stops with one error naming the file; never a traceback."""

from __future__ import annotations

import csv
import io
import json

import pytest
from clitools import invoke
from conftest import FIXTURES

from gemmprof.adapters.ncu.findings import analyse
from gemmprof.adapters.ncu.report import parse_csv, to_base
from gemmprof.catalog.gpu_specs import get_gpu
from gemmprof.results import cells
from gemmprof.results.cells import CellError

NCU = FIXTURES / "ncu"
FULL_SET = NCU / "h100_cupy_full_set_details.csv"  # has Launch Statistics rows and rules with speedups
RAW = NCU / "h100_gemmprof_run_raw_4096.csv"
HUGE = "9" * 5000


def edited(path, match, column: str, value: str) -> str:
    """The fixture with `column` set to `value` in the first table row for which match(row) holds."""
    return edited_text(path.read_text(encoding="utf-8"), match, column, value)


def edited_text(text, match, column: str, value: str) -> str:
    """A CSV's text with `column` set to `value` in the first table row for which match(row) holds."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    header = next(csv.reader([lines[start]]))
    for i in range(start + 1, len(lines)):
        row = next(csv.reader([lines[i]]))
        named = dict(zip(header, row, strict=False))
        if match(named):
            row[header.index(column)] = value
            buf = io.StringIO()
            csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="").writerow(row)
            lines[i] = buf.getvalue()
            return "\n".join(lines) + "\n"
    raise AssertionError("no row matches")


def block_size_row(row):
    return row.get("Metric Name") == "Block Size" and row.get("ID") == "2"


def speedup_row(row):
    return bool(row.get("Rule Name")) and row.get("Estimated Speedup", "").strip() not in ("", "n/a")


def profile_from(runner, tmp_path, text: str, *extra):
    path = tmp_path / "damaged.csv"
    path.write_text(text, encoding="utf-8")
    return invoke(runner, ["profile", "--from", str(path), "--format", "json", *extra])


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", HUGE, "1e400", "²", "٣٢", "１２８"])
def test_ncu_block_size_damaged_is_left_out_with_a_warning(runner, tmp_path, value):
    text = edited(FULL_SET, block_size_row, "Metric Value", value)
    report = parse_csv(text)
    assert len(report.warnings) == 1 and "'Metric Value'" in report.warnings[0] and "row " in report.warnings[0]
    launch = next(launch for launch in report.launches if launch.id == 2)
    assert launch.find("Block Size", "Launch Statistics") is None
    analyse(report, get_gpu("h100"))  # the occupancy check runs without the left-out figure
    r = profile_from(runner, tmp_path, text)
    assert r.exit_code == 0, r.output
    note = next(n for n in json.loads(r.stdout)["notes"] if "left out" in n)
    assert note.startswith(f"{tmp_path / 'damaged.csv'}: row ") and "column 'Metric Value'" in note, note


def test_ncu_block_size_negative_or_fractional_is_a_note_not_a_crash():
    for value in ("0.5", "-128"):
        report = parse_csv(edited(FULL_SET, block_size_row, "Metric Value", value))
        findings = analyse(report, get_gpu("h100"))
        occ = next(f for f in findings if f.id == 2).occupancy
        if value == "0.5":  # a number, but no count of threads: the occupancy check says so
            assert any("Block Size" in n and "whole" in n for n in occ.notes), occ.notes
        else:  # ncu prints no negative figure: the row is left out as it is read
            assert any("negative" in w for w in report.warnings)
        assert occ.threads == 128  # from the identity column "(128, 1, 1)" instead


@pytest.mark.parametrize("value", [HUGE, "1e400", "9" * 40])
def test_ncu_estimated_speedup_damaged(runner, tmp_path, value):
    text = edited(FULL_SET, speedup_row, "Estimated Speedup", value)
    report = parse_csv(text)
    assert any("'Estimated Speedup'" in w for w in report.warnings)
    r = profile_from(runner, tmp_path, text)
    assert r.exit_code == 0, r.output


def test_ncu_units_that_overflow_when_scaled():
    with pytest.raises(CellError, match="out of range"):
        to_base(cells.parse_number("9" * 60), "Pbyte")
    with pytest.raises(CellError):
        to_base(9e299, "Pbyte")
    text = edited(RAW, lambda row: row["ID"] == "0", "dram__bytes_read.sum", "9" * 60)
    report = parse_csv(text)
    assert report.launches  # the launch stays; its damaged cell is left out
    assert any("'dram__bytes_read.sum'" in w for w in report.warnings)


def test_ncu_scaled_unit_overflow_from_the_fixture(tmp_path):
    """A details row whose unit scales (Kbyte) and whose value is near the float limit: to_base overflowed."""
    text = FULL_SET.read_text(encoding="utf-8")
    header = next(csv.reader([next(line for line in text.splitlines() if line.startswith('"ID",'))]))
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith('"') and not line.startswith('"ID"'):
            row = next(csv.reader([line]))
            named = dict(zip(header, row, strict=False))
            if named.get("Metric Unit", "").startswith("K") and named.get("Metric Value"):
                row[header.index("Metric Value")] = "9" * 60
                buf = io.StringIO()
                csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="").writerow(row)
                lines[i] = buf.getvalue()
                break
    else:
        raise AssertionError("no scaled unit in the fixture")
    report = parse_csv("\n".join(lines))
    assert any("out of range" in w for w in report.warnings)


@pytest.mark.parametrize("value", ["²", "٣", "１", HUGE])
def test_ncu_id_damaged(runner, tmp_path, value):
    text = edited(FULL_SET, lambda row: row.get("ID") == "2", "ID", value)
    report = parse_csv(text)
    assert any("'ID'" in w for w in report.warnings)
    assert all(launch.id in (0, 1, 2, 3, 4, 5, 6, 7) for launch in report.launches)
    r = profile_from(runner, tmp_path, text)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("value", ["²", HUGE, "nan"])
def test_ncu_raw_id_damaged(value):
    report = parse_csv(edited(RAW, lambda row: row["ID"] == "0", "ID", value))
    good = parse_csv(RAW.read_text(encoding="utf-8"))
    assert len(report.launches) == len(good.launches) - 1
    assert any("'ID'" in w for w in report.warnings)


# --- nsys --------------------------------------------------------------------------------------------------------

def test_nsys_sqlite_with_a_flipped_byte_in_its_schema(tmp_path):
    """A byte of the kernel table's CREATE statement set to 0xff: sqlite_master's text is not UTF-8, which Python
    decoded strictly (UnicodeDecodeError) before the reader named the file."""
    from gemmprof.adapters.nsys.errors import ReportError
    from gemmprof.adapters.nsys.report import load_report

    data = bytearray((FIXTURES / "nsys" / "h100_cupy_nvtx.sqlite").read_bytes())
    data[data.find(b"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL") + 2] = 0xFF
    path = tmp_path / "flipped.sqlite"
    path.write_bytes(bytes(data))
    with pytest.raises(ReportError, match=r"flipped\.sqlite: .*not UTF-8"):
        load_report(path)


NSYS_TEXT = FIXTURES / "nsys" / "h100_cupy_nvtx_profile_stats_stdout.txt"


@pytest.mark.parametrize("value", ["²", "٣٢", "１２", HUGE, "nan", "inf", "1e400", "-5"])
def test_nsys_stats_damaged_count(value):
    """The kernel summary's Instances cell replaced: one error naming the file, line and column."""
    from gemmprof.adapters.nsys.errors import ReportError
    from gemmprof.adapters.nsys.text import parse_stats, parse_text

    text = NSYS_TEXT.read_text(encoding="utf-8")
    table = next(t for t in parse_text(text) if t.kind == "kernels")
    lines = text.splitlines()
    first = table.line + 1  # table.line counts from 1 and names the header; a line of dashes follows it
    assert set(lines[table.line].strip()) <= {"-", " "}
    cells_ = lines[first].split(" ")
    count = [i for i, c in enumerate(cells_) if c][table.headers.index("Instances")]
    cells_[count] = value
    lines[first] = " ".join(cells_)
    with pytest.raises(ReportError, match=r"stats\.txt: line \d+: Instances"):
        parse_stats("\n".join(lines) + "\n", "stats.txt", "text")


# --- results JSON ------------------------------------------------------------------------------------------------

RUN = FIXTURES / "results" / "h100_fix_4096.json"


def _damaged_run(tmp_path, field: str, raw_value: str):
    """The fixture with variants[0][field] replaced by raw JSON text (which json.dumps could not write)."""
    import json

    doc = json.loads(RUN.read_text(encoding="utf-8"))
    doc["variants"][0][field] = "@@HERE@@"
    path = tmp_path / "damaged.json"
    path.write_text(json.dumps(doc).replace('"@@HERE@@"', raw_value), encoding="utf-8")
    return path


@pytest.mark.parametrize("raw", ["1" + "0" * 5000, "-" + "9" * 4400])
def test_results_with_an_integer_over_4300_digits(runner, tmp_path, raw):
    import gemmprof
    from gemmprof.errors import InputError

    path = _damaged_run(tmp_path, "registers", raw)
    with pytest.raises(InputError, match=r"damaged\.json: an integer of \d+ digits"):
        gemmprof.load(path)
    r = invoke(runner, ["show", str(path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "damaged.json" in r.output, r.output


def test_results_with_a_float_beyond_the_float_range_is_named(tmp_path):
    import gemmprof
    from gemmprof.errors import InputError

    with pytest.raises(InputError, match=r"registers: expected a finite number"):
        gemmprof.load(_damaged_run(tmp_path, "registers", "1e400"))


def test_report_of_a_deeply_nested_sass_field(runner, tmp_path):
    path = _damaged_run(tmp_path, "sass", "[" * 100_000 + "]" * 100_000)
    r = invoke(runner, ["report", str(path), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 2 and "nested" in r.output and "Traceback" not in r.output, r.output
    shallow = _damaged_run(tmp_path, "sass", '{"a": ' * 40 + "1" + "}" * 40)
    r = invoke(runner, ["report", str(shallow), "-o", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output


# --- outputs -----------------------------------------------------------------------------------------------------

def test_show_refuses_to_rewrite_its_input(runner, tmp_path):
    import shutil

    path = tmp_path / "run.json"
    shutil.copyfile(RUN, path)
    before = path.read_bytes()
    r = invoke(runner, ["show", str(path), "-o", str(path)])
    assert r.exit_code == 2 and "also an input" in r.output and path.read_bytes() == before, r.output


def test_outputs_never_replace_a_device_node_or_fifo(tmp_path):
    import os

    from gemmprof.errors import InputError
    from gemmprof.results.files import write_atomic

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    for target in (fifo, link):
        with pytest.raises(InputError, match="not a regular file"):
            write_atomic(target, "x")
    assert link.is_symlink() and os.path.realpath(link) == str(fifo)
    assert not list(tmp_path.glob(".*"))  # no temporary file left behind
    with pytest.raises(InputError, match="a directory"):
        write_atomic(tmp_path, "x")


def test_show_to_a_fifo_is_refused_not_replaced(runner, tmp_path):
    """As `-o /dev/null` run as root (not tried here: a regression would replace the real node)."""
    import os

    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    r = invoke(runner, ["show", str(RUN), "-o", str(fifo), "--format", "csv"])
    assert r.exit_code == 2 and "not a regular file" in r.output and not fifo.is_file(), r.output


def test_an_output_through_a_symlink_writes_its_target(tmp_path):
    from gemmprof.results.files import write_atomic

    target = tmp_path / "real.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_diff_refuses_a_nan_regression_threshold(runner):
    for bad in ("nan", "inf"):
        r = invoke(runner, ["diff", str(RUN), str(RUN), "--fail-on-regression", bad])
        assert r.exit_code == 2 and "--fail-on-regression" in r.output and r.output.count("\n") == 1, r.output


# --- the access model that `profile --from` runs -----------------------------------------------------------------

ACCESS = NCU / "h100_access_sass_raw_4096.csv"


def _without_column(path, name: str) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    column = None
    for line in lines:
        if line.startswith('"'):
            row = next(csv.reader([line]))
            if row[0] == "ID":
                column = row.index(name)
            if column is not None and column < len(row):
                del row[column]
            buf = io.StringIO()
            csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="").writerow(row)
            line = buf.getvalue()
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("counter", ["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"])
def test_profile_from_without_a_shared_memory_counter(runner, tmp_path, counter):
    """KeyError in model/access_explain.py: requests were present, one of the two counters divided by them not."""
    r = profile_from(runner, tmp_path, _without_column(ACCESS, counter))
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("grid", ["(32, 32)", "(0, 32, 1)", "(32, 32, 1, 1)"])
def test_profile_from_with_a_truncated_grid_size(runner, tmp_path, grid):
    """IndexError in model/access.py: a grid of two sizes reached grid[2]."""
    text = edited(ACCESS, lambda row: row["ID"].strip().isdecimal(), "Grid Size", grid)
    report = parse_csv(text)
    assert any("'Block Size/Grid Size'" in w for w in report.warnings)
    r = profile_from(runner, tmp_path, text)
    assert r.exit_code in (0, 2) and "Traceback" not in r.output, r.output


# --- tune --------------------------------------------------------------------------------------------------------

def test_tune_without_gpus_honours_cuda_visible_devices(monkeypatch):
    """`--gpus` left out with CUDA_VISIBLE_DEVICES set was "--gpus: None is not a number or 'all'"."""
    from gemmprof.errors import InputError
    from gemmprof.tune.measure import visible_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert visible_gpus(None) == ["3"]
    for bad in ("²", "0", "-1", "x"):
        with pytest.raises(InputError, match="--gpus"):
            visible_gpus(bad)


def test_a_tune_space_of_10_to_the_12_is_refused_before_enumerating(tmp_path):
    import time

    from tune_helpers import SHAPE, toy_spec

    from gemmprof.errors import SpecError
    from gemmprof.tune.space import MAX_SPACE, enumerate_space

    values = list(range(8, 10_008))  # 10**4 candidates on each of three axes: 10**12 configurations
    spec = toy_spec(tmp_path, tune=f"tune:\n  BM: {values}\n  BN: {values}\n  BK: {values[:10_000]}\n")
    started = time.monotonic()
    with pytest.raises(SpecError, match=r"tune: 1,000,000,000,000 configurations .* more than"):
        enumerate_space(spec, SHAPE)
    assert time.monotonic() - started < 5
    small = toy_spec(tmp_path / "small")
    assert enumerate_space(small, SHAPE).total == 64 <= MAX_SPACE


# --- kernel specs ------------------------------------------------------------------------------------------------

BOMB = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x]"] + [
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]) + "\n"


def test_a_yaml_alias_bomb_in_a_spec_is_refused_at_once(runner, tmp_path):
    import time

    from tune_helpers import write_spec

    spec = write_spec(tmp_path, extra=BOMB.replace("a: &a", "bomb: &a", 1))
    assert len(spec.read_bytes()) < 2000
    started = time.monotonic()
    r = invoke(runner, ["list", "--spec", str(spec)])
    assert time.monotonic() - started < 5
    assert r.exit_code == 2 and "anchors and aliases" in r.output and "toy.yaml: line" in r.output, r.output


def test_a_gpu_file_with_an_alias_is_refused(tmp_path):
    from gemmprof.catalog.gpu_specs import parse_gpu_spec
    from gemmprof.errors import GpuSpecError

    with pytest.raises(GpuSpecError, match=r"line 1: YAML anchors and aliases \(&x\)"):
        parse_gpu_spec(tmp_path / "g.yaml", "name: &x H100\nkey: *x\n")


def test_a_spec_source_outside_its_folder_is_refused(runner, tmp_path, monkeypatch):
    from tune_helpers import SPEC

    from gemmprof.catalog.spec import load_spec
    from gemmprof.catalog.spec_fields import SOURCES_ANYWHERE
    from gemmprof.errors import SpecError

    outside = tmp_path / "secret.cu"
    outside.write_text("// not the spec's\n")
    folder = tmp_path / "specs"
    folder.mkdir()
    spec = folder / "toy.yaml"
    spec.write_text(SPEC.replace("TUNE\n", "").replace("file: toy.cu", "file: ../secret.cu"))
    monkeypatch.delenv(SOURCES_ANYWHERE, raising=False)
    with pytest.raises(SpecError, match=r"toy\.yaml: file: '\.\./secret\.cu' is outside the spec's folder"):
        load_spec(spec)
    r = invoke(runner, ["list", "--spec", str(spec)])
    assert r.exit_code == 2 and "outside the spec's folder" in r.output, r.output
    monkeypatch.setenv(SOURCES_ANYWHERE, "1")  # the explicit way to allow it
    assert load_spec(spec).file == outside.resolve()
    (folder / "src").mkdir()
    (folder / "src" / "toy.cu").write_text("// below the spec: fine\n")
    spec.write_text(SPEC.replace("TUNE\n", "").replace("file: toy.cu", "file: src/toy.cu"))
    monkeypatch.delenv(SOURCES_ANYWHERE)
    assert load_spec(spec).file == (folder / "src" / "toy.cu").resolve()


STALLS = NCU / "h100_naive_smem_raw_stalls.csv"


@pytest.mark.parametrize("value", ["1.7e308", "9e299"])
def test_stall_ratios_near_the_float_limit(runner, tmp_path, value):
    """Every stall ratio of a launch at the float limit: their sum overflowed to inf and the shares became nan in
    the tables. Past 1e300 a cell is refused as it is read; below, the shares still add up to one."""
    from gemmprof.adapters.ncu.findings import stall_shares

    text = STALLS.read_text(encoding="utf-8")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    header = next(csv.reader([lines[start]]))
    for i in range(start + 1, len(lines)):
        row = next(csv.reader([lines[i]]))
        if row and row[0].strip() == "0":
            for j, name in enumerate(header):
                if name.startswith("smsp__average_warp_latency_issue_stalled") or "warp_issue_stalled" in name:
                    row[j] = value
            buf = io.StringIO()
            csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="").writerow(row)
            lines[i] = buf.getvalue()
    report = parse_csv("\n".join(lines) + "\n")
    launch = next(launch for launch in report.launches if launch.id == 0)
    shares = stall_shares(launch)
    if value == "1.7e308":
        assert report.warnings and not shares
    else:
        assert not report.warnings and shares and abs(sum(shares.values()) - 1) < 1e-9
    r = profile_from(runner, tmp_path, "\n".join(lines) + "\n")
    assert r.exit_code == 0 and "NaN" not in r.stdout and "nan" not in r.stdout.replace("nanosec", ""), r.output


def test_list_explain_refuses_unicode_digits_in_a_param(runner):
    r = invoke(runner, ["list", "--explain", "8", "--param", "BM=٣٢"])
    assert r.exit_code == 2 and "--param" in r.output and r.output.count("\n") == 1, r.output


# --- the parser itself -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "value"), [("8,394,496", 8394496), ("12.50", 12.5), ("-0", 0), ("+7", 7),
                                             ("1e3", 1000.0), ("n/a", None), ("", None), ("1.2.3", None),
                                             ("(64, 1, 1)", None), ("PolicySpread", None)])
def test_cells_read_numbers_and_leave_text(text, value):
    assert cells.parse_number(text) == value


@pytest.mark.parametrize("text", ["nan", "-inf", "Infinity", "1e400", "9" * 5000, "9" * 30, "²", "٣٢", "１２８",
                                  "1,2³"])
def test_cells_refuse_damaged_numbers(text):
    with pytest.raises(CellError):
        cells.parse_number(text)


def test_cells_counts_and_scaling():
    assert cells.count("4,096") == 4096 and cells.count(64.0) == 64
    for bad in (-1, 0.5, True, "x", 2 ** 62, float("nan")):
        with pytest.raises(CellError):
            cells.count(bad)
    assert cells.scaled(3, 1) == 3 and cells.scaled(2.5, 1e3) == 2500.0
    with pytest.raises(CellError, match="out of range"):
        cells.scaled(9e299, 1e9)
    assert cells.integers("(64, 64, 1)") == (64, 64, 1)
    with pytest.raises(CellError):
        cells.integers("(６４, 1, 1)")
    with pytest.raises(CellError, match="5000 digits"):
        cells.json_int("9" * 5000)


DETAILS_8192 = NCU / "h100_gemmprof_profile_h3_cublas_details_8192.csv"  # raw metrics of two launches, ID 0 cuBLAS


def _metric_row(name):
    return lambda row: row.get("Metric Name") == name and row.get("ID") == "0"


@pytest.mark.parametrize("metrics,what", [
    (["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"], "fp32 FLOPs"),  # 2 x 9e299
    (["dram__bytes_read.sum", "dram__bytes_write.sum"], "DRAM bytes read and written"),
    (["sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum"],
     "tensor FLOPs"),
])
def test_ncu_figures_each_in_range_whose_sum_is_not_are_refused_naming_the_launch(runner, tmp_path, metrics, what):
    """Found by the fuzzing of ncu CSVs: every cell below the largest figure a results file holds (1e300), their sum
    past it; the profile was analysed and rendered, then its own results file refused to load. Now one error."""
    text = DETAILS_8192.read_text(encoding="utf-8")
    for m in metrics:
        text = edited_text(text, _metric_row(m), "Metric Value", "9e299")
    assert 9e299 < cells.MAX_FIGURE < 2 * 9e299
    with pytest.raises(CellError, match=f"launch 0 .*its {what} come to 1.8e\\+300, past any real figure"):
        analyse(parse_csv(text), get_gpu("h100_sxm"))
    res = profile_from(runner, tmp_path, text)
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "damaged.csv: launch 0 " in res.output and f"its {what} come to 1.8e+300" in res.output
    assert len(res.output.strip().splitlines()) == 1
