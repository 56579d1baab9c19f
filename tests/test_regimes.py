"""How a figure was taken, as a user sees it: every table and results file names the regime, fill, L2 policy and
the clock held; diff refuses to compare unlike measurements; --expect-clock refuses figures taken at another clock;
the NVML sampler and the energy window read power and the energy counter. No GPU: saved fixtures and stand-ins."""

import copy
import json
import types
from pathlib import Path

import pytest
from clitools import invoke

from gemmprof.measure import timing
from gemmprof.measure.nvml import NvmlReader, Sampler
from gemmprof.render.run_tables import method_line, run_table
from gemmprof.results.clocks import ClockRecord, ClockSample, EnergyRecord, WarmUpRecord
from gemmprof.results.diff import mismatches
from gemmprof.results.run import Measurement, RunResult, VariantResult

FIX = Path(__file__).parent / "fixtures"
LADDER = FIX / "records" / "2026-11-22_h100_run" / "ladder_4096.json"


def _sustained(doc: dict) -> dict:
    """The same run, as if timed in the sustained regime (the timing_method a run writes now)."""
    other = copy.deepcopy(doc)
    other["timing_method"] = timing.TimingConfig(regime="sustained").to_dict()
    return other


def test_the_timing_method_names_regime_fill_and_l2_policy():
    d = timing.TimingConfig(regime="sustained", fill="zeros", l2="rotate").to_dict()
    assert (d["regime"], d["fill"], d["l2"]) == ("sustained", "zeros", "rotate")
    assert "settle" in d and "whole budget" in d["stopping"]
    assert "settle" not in timing.TimingConfig().to_dict()  # burst: no warm-up rule to state


def test_diff_refuses_a_burst_run_against_a_sustained_one(runner, tmp_path):
    doc = json.loads(LADDER.read_text())  # recorded before regimes: burst, uniform, L2 flushed
    (tmp_path / "sustained.json").write_text(json.dumps(_sustained(doc)))
    named = [m.describe() for m in mismatches(RunResult.from_dict(doc), RunResult.from_dict(_sustained(doc)))]
    assert named == ["timing regime: burst vs sustained"]
    r = invoke(runner, ["diff", str(LADDER), str(tmp_path / "sustained.json")])
    assert r.exit_code == 2 and "timing regime: burst vs sustained" in r.output and "Traceback" not in r.output
    fills = _sustained(doc)
    fills["timing_method"]["fill"] = "zeros"
    named = [m.describe() for m in mismatches(RunResult.from_dict(_sustained(doc)), RunResult.from_dict(fills))]
    assert named == ["timing fill: uniform vs zeros"]


def _row(name, held=None, energy=None):
    clocks = ClockRecord(1980, held or 1980, held_mhz=held, held_min_mhz=held and held - 30,
                         held_max_mhz=held and held + 40, samples=50 if held else 0)
    return VariantResult(id=name, name=name, title=name, dtype="fp16", timing=Measurement((1.0,) * 5), clocks=clocks,
                         warm_up=WarmUpRecord("sustained", 2.9, 1500, "oscillating", 1550, 690, 0.1),
                         energy=energy)


def test_every_run_table_names_how_its_figures_were_taken():
    doc = _sustained(json.loads(LADDER.read_text()))
    run = RunResult.from_dict(doc)
    run.variants = [_row("a", 1515, EnergyRecord(1200.0, 1000, 1.7, 700.0)), _row("b", 1560)]
    line = method_line(run)
    assert "regime sustained" in line and "fill uniform" in line and "L2 flush" in line
    assert "SM clock held 1485-1600 MHz" in line and "warm-up oscillating after 2.9 s" in line
    table = run_table(run)
    assert line in table.notes
    run.variants[1] = _row("b", 1515)
    run.variants[1].warm_up = WarmUpRecord("sustained", 3.4, 1500, "settled", 1515, 690)
    assert "after 2.9-3.4 s" in method_line(run)
    keys = {c.key for c in table.columns}
    assert {"held_mhz", "pct_peak_held", "pct_cublas_equal_clock", "joules_per_gemm", "tflop_per_joule"} <= keys
    old = RunResult.from_dict(json.loads(LADDER.read_text()))
    assert "regime burst (files from before regimes were recorded)" in method_line(old)


def test_percent_of_cublas_at_equal_clock_scales_each_rate_by_its_clock():
    from gemmprof.render.run_tables import equal_clock_pct

    mine, cublas = _row("mine", 1600), _row("cublas_hgemm", 1400)
    mine.timing, cublas.timing = Measurement((1.0,) * 5), Measurement((1.0,) * 5)
    for v in (mine, cublas):
        v.model = __import__("gemmprof.results.run", fromlist=["ModelFigures"]).ModelFigures(2 * 4096 ** 3, 100.0)
    # equal times, but mine held a higher clock: per MHz it did less
    assert equal_clock_pct(mine, cublas) == pytest.approx(100 * 1400 / 1600)


def test_expect_clock_refuses_a_figure_taken_at_another_clock():
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure import runner as runner_mod
    from gemmprof.results.shape import GemmShape

    def runner(expected):
        opts = runner_mod.RunOptions(shape=GemmShape(64, 64, 64), timing=timing.TimingConfig(expect_clock_mhz=expected))
        r = runner_mod.Runner(get_gpu("h100"), opts)
        r._persist = types.SimpleNamespace(status="stand-in")
        return r

    bench = types.SimpleNamespace(verify_checked=lambda: [], host_ns=0)
    for expected, status in ((1500, "ok"), (1755, "rejected")):
        row = _row("v")
        timed = timing.TimedVariant(Measurement((1.0,) * 5), ClockRecord(1500, 1500, held_mhz=1500, held_min_mhz=1485,
                                                                          held_max_mhz=1515, samples=40))
        runner(expected)._record(row, bench, timed)
        assert row.status == status, row.message
        if status == "rejected":
            assert "held 1500 MHz (1485-1515) where --expect-clock said 1755" in row.message


def test_the_run_command_takes_the_method_options(runner):
    r = invoke(runner, ["run", "--help"])
    for option in ("--regime", "--fill", "--l2", "--cool-down", "--expect-clock", "--energy", "--checks"):
        assert option in r.output
    r = invoke(runner, ["run", "1", "--no-flush", "--l2", "rotate"])
    assert r.exit_code != 0 and "--no-flush and --l2 rotate" in r.output


class _Nvml:
    """pynvml's names for one device whose power and energy counter move as a loaded card's do."""

    NVML_CLOCK_SM, NVML_TEMPERATURE_GPU = 1, 0

    def __init__(self):
        self.t = 0

    def nvmlDeviceGetMaxClockInfo(self, dev, kind):
        return 1980

    def nvmlDeviceGetClockInfo(self, dev, kind):
        self.t += 1
        return 1500

    def nvmlDeviceGetTemperature(self, dev, kind):
        return 60

    def nvmlDeviceGetPowerUsage(self, dev):
        return 700_000  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, dev):
        return 1_000_000 + 70_000 * (self.t // 10)  # mJ, a step every tenth read


def test_the_reader_reads_power_and_energy_and_the_sampler_keeps_them_in_order():
    reader = NvmlReader(_Nvml(), "dev")
    sample = reader.read(0.5)
    assert (sample.sm_clock_mhz, sample.power_w, sample.t_s) == (1500, 700, 0.5) and sample.energy_mj >= 1e6
    clock = iter(i * 0.01 for i in range(10_000))
    s = Sampler(reader, period_s=0.001, clock=lambda: next(clock))
    with s:
        import time

        time.sleep(0.05)
    got = s.snapshot()
    assert len(got) >= 3 and [x.t_s for x in got] == sorted(x.t_s for x in got)


def test_energy_is_taken_between_the_counters_steps():
    # a counter stepping 70 J every 0.1 s: 700 W whatever the window's edges
    samples = [ClockSample(1500, 60, (), 700.0, 1_000_000 + 70_000 * int(t / 0.1), t) for t in
               (i * 0.01 for i in range(200))]
    (ta, ea), (tb, eb), powers = timing._counter_steps(samples)
    assert (eb - ea) / 1e3 / (tb - ta) == pytest.approx(700, rel=1e-6) and powers and tb - ta >= 1.5
    assert timing._counter_steps(samples[:40]) is None  # under half a second between steps: not enough
    rec = EnergyRecord(700 * 1.7, 1000, 1.7, 700.0, "counter steps")
    assert rec.joules_per_call == pytest.approx(1.19) and rec.power_w == pytest.approx(700)
    assert EnergyRecord.from_dict(json.loads(json.dumps(rec.to_dict()))) == rec


def test_the_legend_names_held_and_energy_only_where_their_columns_are_shown():
    from gemmprof.render.run_tables import legend

    base = legend(["median_ms", "tflops"])
    assert "CUDA events" in base and "held:" not in base and "energy:" not in base
    assert "held: median SM clock" in legend(["median_ms", "held_mhz"])
    both = legend(["median_ms", "held_mhz", "joules_per_gemm"])
    assert "held: median SM clock" in both and "energy: NVML's counter" in both
