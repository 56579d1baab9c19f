"""show, diff, the notebook API and the clock record, on real saved results (tests/fixtures)."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from clitools import invoke

import gemmprof
from gemmprof.errors import GemmprofError, InputError
from gemmprof.measure.nvml import open_reader
from gemmprof.render.run_tables import run_table
from gemmprof.results.clocks import ClockRecord, WarmUpRecord
from gemmprof.results.diff import diff_runs, mismatches, regressions
from gemmprof.results.profile import ProfileResults
from gemmprof.results.run import RunResult, load_run

ROOT = Path(__file__).resolve().parent.parent
LADDER = ROOT / "tests/fixtures/records/2026-11-22_h100_run/ladder_4096.json"
BETA = ROOT / "tests/fixtures/records/2026-11-22_h100_run/beta_1024.json"
PROFILE = ROOT / "tests/fixtures/records/2026-11-22_h100_profile/profile_4096.json"
FIRST = ROOT / "tests/fixtures/results/h100_ladder_4096_first.json"
AB1, AB2 = (ROOT / f"tests/fixtures/records/2026-11-22_h100_tuning/ab12_{i}.json" for i in (1, 2))
RUNS = sorted((ROOT / "tests/fixtures/records").glob("*/*.json")) + sorted((ROOT / "tests/fixtures/results").glob("*.json"))
RUN_FILES = [p for p in RUNS if json.loads(p.read_text()).get("kind") == "gemmprof.run"]
PROFILE_FILES = [p for p in RUNS if json.loads(p.read_text()).get("kind") == "gemmprof.profile"]


# -- gemmprof.load and to_dataframe ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", RUN_FILES + PROFILE_FILES, ids=lambda p: p.name)
def test_load_returns_the_typed_result_by_kind(path):
    loaded = gemmprof.load(path)
    kind = json.loads(path.read_text())["kind"]
    assert isinstance(loaded, RunResult if kind == "gemmprof.run" else ProfileResults)


def test_a_records_compare_nsys_file_loads_as_a_comparison():
    from gemmprof.results.nsys import Comparison

    cmp = gemmprof.load(ROOT / "tests/fixtures/records/2026-11-22_h100_nsys/nsys_4096.json")
    assert isinstance(cmp, Comparison) and cmp.rows and all(r.stats.avg_ns > 0 for r in cmp.rows)


def test_load_refuses_other_kinds_naming_the_kind():
    with pytest.raises(InputError, match="gemmprof.tune"):
        gemmprof.load(ROOT / "tests/fixtures/results/h100_tune_16_1000.json.gz")


def test_import_gemmprof_stays_light():
    code = "import sys, gemmprof; print([m for m in ('pandas', 'matplotlib', 'numpy', 'yaml') if m in sys.modules])"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"


def test_run_dataframe_has_units_in_names_and_the_saved_figures():
    pd = pytest.importorskip("pandas")
    df = gemmprof.to_dataframe(gemmprof.load(LADDER))
    assert isinstance(df, pd.DataFrame)
    assert {"median_ms", "tflops", "spread_pct", "static_smem_bytes", "sm_clock_mhz_before", "clock_fell"} <= set(df)
    naive = df[df.name == "naive"].iloc[0]
    saved = next(v for v in json.loads(LADDER.read_text())["variants"] if v["name"] == "naive")
    assert naive.median_ms == pytest.approx(saved["timing"]["median_ms"])
    assert naive.tflops == pytest.approx(saved["achieved_tflops"])
    assert len(df) == len(json.loads(LADDER.read_text())["variants"])


def test_profile_dataframe():
    pytest.importorskip("pandas")
    df = gemmprof.to_dataframe(gemmprof.load(PROFILE))
    assert {"variant", "duration_us", "dram_mb", "achieved_occupancy_pct"} <= set(df)
    assert len(df) == len(json.loads(PROFILE.read_text())["launches"])


def test_to_dataframe_without_pandas_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(GemmprofError, match=r"gemmprof\[pandas\]"):
        gemmprof.to_dataframe(gemmprof.load(LADDER))


def test_to_dataframe_refuses_what_load_does_not_return():
    with pytest.raises(GemmprofError, match="expected a RunResult or ProfileResults"):
        gemmprof.to_dataframe({"kind": "gemmprof.run"})


# -- show -------------------------------------------------------------------------------------------------------
def test_show_run_table_and_csv(runner, tmp_path):
    r = invoke(runner, ["show", str(LADDER)])
    assert r.exit_code == 0, r.output
    assert "h3_mma_ldmatrix_swizzle" in r.output and "447.4" in r.output
    r = invoke(runner, ["show", str(LADDER), "-o", str(tmp_path / "t.csv")])
    assert r.exit_code == 0, r.output
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert len(lines) == 1 + len(load_run(LADDER).variants)


def test_show_run_json_is_the_results_document(runner):
    r = invoke(runner, ["show", str(LADDER), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["kind"] == "gemmprof.run" and RunResult.from_dict(doc).shape.label == "4096x4096x4096"


def test_show_profile(runner):
    r = invoke(runner, ["show", str(PROFILE), "--format", "csv"])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].startswith("variant") and "sgemm_naive" in r.output


def test_show_wrong_file_is_one_line(runner, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"kind": "something"}')
    r = invoke(runner, ["show", str(bad)])
    assert r.exit_code == 2 and "kind is 'something'" in r.output and "Traceback" not in r.output


# -- diff -------------------------------------------------------------------------------------------------------
def test_diff_of_the_fix_finds_real_changes():
    rows = {r.key: r for r in diff_runs(load_run(FIRST), load_run(LADDER))}
    assert rows["double_buffering"].verdict == "faster"  # 11.28 ms -> 3.19 ms after the fix
    assert rows["double_buffering"].time_change == pytest.approx(3.18749 / 11.27536 - 1, rel=1e-4)
    assert rows["gmem_coalescing"].verdict == "within noise"
    assert rows["naive"].verdict.startswith("not timed")
    assert rows["cublas_hgemm"].verdict == "only in new"
    # tf32 moved 4.3% but its spread is 7.4%: not a change
    assert rows["cublas_tf32"].verdict == "within noise" and rows["cublas_tf32"].noise > 0.043


def test_diff_regression_threshold_is_outside_noise_only():
    old, new = load_run(LADDER), load_run(FIRST)  # reversed: double buffering got 254% slower
    slow = regressions(diff_runs(old, new), 5)
    assert sorted(r.key for r in slow) == ["double_buffering", "warptiling"]
    assert regressions(diff_runs(old, new), 300) == []


def test_diff_keys_repeated_names_by_the_parameters_that_vary():
    rows = diff_runs(load_run(AB1), load_run(AB2))
    assert rows[0].key == "double_buffering_async[ACHUNK=4,BCHUNK=4,BK=16]"
    assert all(r.verdict == "within noise" for r in rows)


def test_diff_refuses_different_shapes_and_dtypes(runner, tmp_path):
    r = invoke(runner, ["diff", str(LADDER), str(BETA)])
    assert r.exit_code == 2 and "shape: 4096x4096x4096 vs 1024x1024x1024" in r.output and "--force" in r.output
    doc = json.loads(LADDER.read_text())
    other = copy.deepcopy(doc)
    other["device"]["name"] = "NVIDIA A100-SXM4-80GB"
    next(v for v in other["variants"] if v["name"] == "naive")["dtype"] = "fp16"
    (tmp_path / "other.json").write_text(json.dumps(other))
    named = [m.what for m in mismatches(RunResult.from_dict(doc), RunResult.from_dict(other))]
    assert named == ["device", "dtype of naive"]
    r = invoke(runner, ["diff", str(LADDER), str(tmp_path / "other.json"), "--force", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert "device: NVIDIA H100 80GB HBM3 vs NVIDIA A100-SXM4-80GB" in json.loads(r.output)["mismatches"]


def test_diff_fail_on_regression_exit_code(runner):
    r = invoke(runner, ["diff", str(LADDER), str(FIRST), "--fail-on-regression", "5"])
    assert r.exit_code == 3 and "double_buffering +253.7%" in r.output
    r = invoke(runner, ["diff", str(FIRST), str(LADDER), "--fail-on-regression", "5"])
    assert r.exit_code == 0, r.output


# -- clocks -----------------------------------------------------------------------------------------------------
def test_clock_record_flags_a_fall_and_a_low_clock():
    assert not ClockRecord(1980, 1980, 40, 55, 1980).clock_fell
    assert ClockRecord(1980, 1860, 40, 55, 1980).clock_fell  # -6% during the loop
    assert ClockRecord(1700, 1700, 40, 55, 1980).clock_fell  # steady, but held below 90% of max
    assert not ClockRecord(1800, 1785, 40, 55, 1980).clock_fell


def test_clock_record_round_trips_flat_in_the_variant_row():
    run = load_run(LADDER)
    assert all(v.clocks is None for v in run.variants)  # recorded before clocks existed
    v = run.variants[0]
    v.clocks = ClockRecord(1980, 1755, 41, 60, 1980, ("sw_power_cap",))
    d = v.to_dict()
    assert d["sm_clock_mhz_after"] == 1755 and d["clock_fell"] is True and d["throttle_reasons"] == ["sw_power_cap"]
    again = RunResult.from_dict(json.loads(json.dumps(run.to_dict())))
    assert again.variants[0].clocks == v.clocks
    table = run_table(again)
    assert any("CLOCK FELL" in n and "cublas_sgemm (1980->1755 MHz, 41->60 C)" in n for n in table.notes)
    assert table.rows[0]["clock"] == "1980->1755 FELL"


def test_a_settled_sustained_clock_under_the_maximum_is_the_state_measured_not_a_fall():
    """The sustained regime warms the card until its clock settles (1470 MHz on a power-capped H200, 74% of its
    1980 MHz maximum): that is what is measured, so only a drop during the timed calls is a fall. A burst (or a
    warm-up that never settled) at the same clock is flagged as before."""
    run = load_run(LADDER)
    v = run.variants[0]
    v.clocks = ClockRecord(1515, 1470, 63, 61, 1980, ("sw_power_cap",), 1470, 1425, 1500)
    for verdict in ("settled", "oscillating"):
        v.warm_up = WarmUpRecord("sustained", 2.4, 1400, verdict, 1470, 690)
        assert not v.clock_fell and v.to_dict()["clock_fell"] is False
    assert not any("CLOCK FELL" in n for n in run_table(run).notes)
    v.warm_up = WarmUpRecord("sustained", 20, 9000, "not settled", 1470, 690)
    assert v.clock_fell
    v.warm_up = WarmUpRecord("burst", 0.01, 3, "")
    assert v.clock_fell and any("CLOCK FELL" in n for n in run_table(run).notes)
    v.warm_up = WarmUpRecord("sustained", 2.4, 1400, "settled", 1470, 690)
    v.clocks = ClockRecord(1530, 1395, 63, 61, 1980, (), 1470, 1395, 1530)  # -9% during the timed calls
    assert v.clock_fell and run_table(run).rows[0]["clock"] == "1530->1395 FELL"
    again = RunResult.from_dict(json.loads(json.dumps(run.to_dict())))
    assert again.variants[0].clock_fell


class FakeNvml:
    """pynvml's names, scripted readings: the SM clock falls by 100 MHz per reading."""

    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU = 1, 0
    nvmlClocksEventReasonSwPowerCap, nvmlClocksEventReasonHwSlowdown = 0x4, 0x8

    def __init__(self):
        self.clock, self.bus = 1980, None

    def nvmlInit(self):
        pass

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        self.bus = bus
        return "dev"

    def nvmlDeviceGetMaxClockInfo(self, dev, kind):
        return 1980

    def nvmlDeviceGetClockInfo(self, dev, kind):
        assert kind == self.NVML_CLOCK_SM
        self.clock -= 100
        return self.clock + 100

    def nvmlDeviceGetTemperature(self, dev, kind):
        return 50

    def nvmlDeviceGetCurrentClocksEventReasons(self, dev):
        return 0x4 if self.clock < 1900 else 0


def test_nvml_reader_with_a_fake():
    fake = FakeNvml()
    reader, why = open_reader("0000:19:00.0", nvml=fake)
    assert why == "" and fake.bus == "0000:19:00.0" and reader.max_sm_clock_mhz == 1980
    before, after = reader.read(), reader.read()
    rec = ClockRecord.from_samples(before, after, reader.max_sm_clock_mhz)
    assert (rec.sm_clock_mhz_before, rec.sm_clock_mhz_after, rec.throttle_reasons) == (1980, 1880, ("sw_power_cap",))
    assert rec.clock_fell


def test_nvml_unavailable_is_a_reason_not_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    reader, why = open_reader()
    assert reader is None and "nvidia-ml-py" in why
