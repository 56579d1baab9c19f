"""gemmprof ceiling: this GPU's measured ceilings, their store, and the consumers that use them as the real 100% line.

CPU only, with stand-ins: a Runner that times nothing (figures made up per dtype, regime and shape, the clocks it
would have held), the copy run by the real timing core over NumPy (tests/numpy_cupy.py). The store's files are
written and damaged here; the roofline and explain read them with and without a stored ceiling. The GPU test
measures a small scan for real."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest
from click.testing import CliRunner
from clitools import invoke
from conftest import FIXTURES

from gemmprof.catalog import ceilings as store
from gemmprof.catalog.gpu_specs import get_gpu
from gemmprof.errors import InputError
from gemmprof.measure import ceiling as ceiling_mod
from gemmprof.measure import runner as runner_mod
from gemmprof.measure import timing
from gemmprof.measure.settle import SettleRule
from gemmprof.results.ceilings import MeasuredCeiling, ScanPoint
from gemmprof.results.clocks import ClockRecord, WarmUpRecord
from gemmprof.results.run import Measurement, VariantResult
from gemmprof.results.shape import GemmShape

H200, H100 = get_gpu("h200"), get_gpu("h100")
H100_NAME = "NVIDIA H100 80GB HBM3"
QUICK_SETTLE = SettleRule(window_s=0.02, min_s=0.02, max_s=0.05)  # no NVML in the stand-in: a fixed short warm-up


def ceiling(key="fp16", regime="sustained", value=700.0, device="NVIDIA H200", **kw) -> MeasuredCeiling:
    kind = "memory" if key == "dram" else "compute"
    scan = (ScanPoint("8192x8192x8192" if kind == "compute" else "1024 MiB", value, 1.5, 0.01, 1455.0, 690.0,
                      "settled after 3.0 s at 1455 MHz"),)
    fields = dict(kind=kind, key=key, regime=regime, value=value, where=scan[0].what, source="cublas_hgemm",
                  device=device, measured_at="2026-11-28T12:00:00+00:00", held_mhz=1455.0, held_min_mhz=1395.0,
                  held_max_mhz=1545.0, power_w=690.0, throttle_reasons=("sw_power_cap",),
                  warm_up="settled after 3.0 s at 1455 MHz", fill="uniform", l2="flush", gemmprof_version="0.test",
                  driver="580.159.04", scan=scan)
    fields.update(kw)
    return MeasuredCeiling(**fields)


def one_line(exc) -> str:
    text = str(exc)
    assert "\n" not in text and "Traceback" not in text
    return text


# -- the store ---------------------------------------------------------------------------------------------------
def test_the_store_gives_back_the_same_typed_ceilings():
    saved = [ceiling("fp16"), ceiling("fp32", "burst", 51.0), ceiling("dram", value=4100.0, source="copy")]
    path = store.save(saved, "NVIDIA H200")
    assert path.name == "nvidia-h200.json" and path.parent.name == "ceilings"
    assert sorted(store.load("NVIDIA H200"), key=lambda c: c.ident) == sorted(saved, key=lambda c: c.ident)
    assert store.load("NVIDIA H100 80GB HBM3") == []  # another device model: its own file, none yet


def test_storing_again_replaces_only_the_same_dtype_and_regime():
    store.save([ceiling("fp16", "sustained", 650.0), ceiling("fp16", "burst", 850.0), ceiling("bf16")],
               "NVIDIA H200")
    store.save([ceiling("fp16", "sustained", 660.0)], "NVIDIA H200")
    got = {c.ident: c.value for c in store.load("NVIDIA H200")}
    assert got == {("compute", "fp16", "sustained"): 660.0, ("compute", "fp16", "burst"): 850.0,
                   ("compute", "bf16", "sustained"): 700.0}


def test_measured_answers_by_device_name_or_gpu_spec_in_the_regime_asked():
    store.save([ceiling("fp16", "sustained", 650.0), ceiling("fp16", "burst", 850.0),
                ceiling("dram", value=4100.0, source="copy")], "NVIDIA H200")
    for who in ("NVIDIA H200", H200):  # the spec answers through its CUDA names
        assert store.measured(who, "fp16").value == 650.0  # sustained unless asked
        assert store.measured(who, "fp16", "burst").value == 850.0
        assert store.measured(who, "fp16_tensor_fp32_acc", "sustained").value == 650.0  # a spec's peak kind
        assert store.measured(who, "dram").per_s == 4100.0e9
    assert store.measured(H200, "bf16") is None and store.measured(H200, "dram", "burst") is None
    assert store.measured(H200, "fp64") is None  # no ceiling is measured for it
    assert store.measured(H100, "fp16") is None  # another device


# every level of the file, each with a key nothing reads
UNKNOWN_KEYS = [("top level", lambda d: d.update(extra=1), "'extra'"),
                ("a ceiling", lambda d: d["ceilings"][0].update(clock=1980), "ceilings[0]: unknown key 'clock'"),
                ("a scan point", lambda d: d["ceilings"][0]["scan"][0].update(TFLOPS=1),
                 "ceilings[0].scan[0]: unknown key 'TFLOPS'")]
# damage a reader must name in one line
DAMAGE = [("not JSON", "{not json", "cannot read the stored ceilings"),
          ("a list", "[]", "not a gemmprof ceilings file"),
          ("another kind", lambda d: d.update(kind="gemmprof.run"), "not a gemmprof ceilings file"),
          ("a later version", lambda d: d.update(version=2), "version 2"),
          ("another device", lambda d: d.update(device="NVIDIA H100 80GB HBM3"), "holds the ceilings of"),
          ("a negative figure", lambda d: d["ceilings"][0].update(value=-5), "ceilings[0].value"),
          ("an unknown regime", lambda d: d["ceilings"][0].update(regime="warm"), "ceilings[0].regime"),
          ("a wrong unit", lambda d: d["ceilings"][0].update(unit="GB/s"), "ceilings[0].unit"),
          ("a dtype as memory", lambda d: d["ceilings"][0].update(kind="memory"), "ceilings[0].key"),
          ("a bad status", lambda d: d["ceilings"][0]["scan"][0].update(status="great"), "scan[0].status"),
          ("twice the same", lambda d: d["ceilings"].append(dict(d["ceilings"][0])), "stored twice")]


def ceiling_doc() -> dict:
    return {"kind": store.STORE_KIND, "version": 1, "device": "NVIDIA H200", "ceilings": [ceiling("fp16").to_dict()]}


def _damage(how) -> str:
    store.save([ceiling("fp16")], "NVIDIA H200")
    path = store.store_path("NVIDIA H200")
    if isinstance(how, str):
        path.write_text(how)
    else:
        doc = json.loads(path.read_text())
        how(doc)
        path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("what, how, said", UNKNOWN_KEYS + DAMAGE, ids=[c[0] for c in UNKNOWN_KEYS + DAMAGE])
def test_a_damaged_store_is_one_line_naming_the_file(what, how, said):
    path = _damage(how)
    with pytest.raises(store.CeilingStoreError) as caught:
        store.measured(H200, "fp16")
    text = one_line(caught.value)
    assert path in text and said in text and "move it away" in text


def test_the_damage_cases_damage_every_level_of_the_file():
    """The generator above reaches the file, a ceiling and a scan point (so each level's reader is tried)."""
    for _, how, _ in UNKNOWN_KEYS:
        doc = ceiling_doc()
        before = json.dumps(doc)
        how(doc)
        assert json.dumps(doc) != before
    assert {c[2].split(":")[0] for c in UNKNOWN_KEYS} == {"'extra'", "ceilings[0]", "ceilings[0].scan[0]"}


def test_storing_over_a_damaged_store_keeps_the_new_ceilings_beside_it():
    path = _damage("{not json")
    with pytest.raises(store.CeilingStoreError) as caught:
        store.save([ceiling("bf16")], "NVIDIA H200")
    beside = caught.value.kept_beside
    assert beside.name == "nvidia-h200.new.json" and str(beside) in one_line(caught.value)
    assert open(path).read() == "{not json"  # the damaged file is left as it was
    beside.replace(path)
    assert store.measured(H200, "bf16").value == 700.0


# -- measuring: the scan, with a stand-in runner ----------------------------------------------------------------
RATES = {"fp32": (52.0, 48.0), "tf32": (420.0, 360.0), "fp16": (850.0, 660.0), "bf16": (840.0, 650.0)}  # burst, sust.
SHAPE_FACTOR = {"4096x4096x4096": {"fp32": 1.0}, "8192x8192x8192": {}, "8192x8192x4096": {}}  # fp32 best at 4096
DEFAULT_FACTOR = {"4096x4096x4096": 0.9, "8192x8192x8192": 1.0, "8192x8192x4096": 0.97}


class _StandInRunner:
    """Times nothing: each baseline gets the figure RATES and SHAPE_FACTOR give, at the clock the regime would hold;
    rows named in `failing` fail their check. The copy gets no clocks and no flush."""

    made: list = []
    failing: set = set()
    interrupt_at: tuple | None = None

    def __init__(self, gpu_spec, options):
        self.opt = options
        type(self).made.append((options.timing.regime, options.shape.label))

    def run_baseline(self, base):
        shape, regime = self.opt.shape, self.opt.timing.regime
        if (base.dtype, shape.label, regime) == type(self).interrupt_at:
            raise KeyboardInterrupt
        row = VariantResult(id="cuBLAS", name=base.name, title=base.title, dtype=base.dtype, kind="baseline")
        if (base.dtype, shape.label) in type(self).failing:
            row.status, row.message = "FAIL", "timed call 2: wrong"
            return row
        tflops = RATES[base.dtype][regime == "sustained"] * SHAPE_FACTOR[shape.label].get(
            base.dtype, DEFAULT_FACTOR[shape.label])
        ms = 2 * shape.M * shape.N * shape.K / (tflops * 1e12) * 1e3
        row.timing = Measurement((ms * 0.99, ms, ms, ms * 1.01))
        held = 1455.0 if regime == "sustained" else 1980.0
        row.clocks = ClockRecord(1980.0, held, 40.0, 60.0, 1980.0, ("sw_power_cap",), held, held - 60, held + 90,
                                 690.0 if regime == "sustained" else 520.0, 40)
        row.warm_up = WarmUpRecord(regime, 3.0 if regime == "sustained" else 0.0, 100, "settled" if
                                   regime == "sustained" else "", held, 690.0)
        return row

    def flush(self):
        return None

    def clock_reader(self):
        return None

    def persisting_l2(self):
        return None

    def close(self):
        pass


@pytest.fixture
def stand_in(monkeypatch):
    import numpy_cupy

    _StandInRunner.made, _StandInRunner.failing, _StandInRunner.interrupt_at = [], set(), None
    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy.make([]))
    timing.capture()
    monkeypatch.setattr(runner_mod, "Runner", _StandInRunner)
    monkeypatch.setattr(runner_mod, "device_info", lambda: {"name": "NVIDIA H200", "smi_driver": "580.159.04"})
    real = ceiling_mod.CeilingRequest
    monkeypatch.setattr(ceiling_mod, "CeilingRequest", lambda **kw: real(**{"settle": QUICK_SETTLE, **kw}))
    import gemmprof.commands.ceiling as command_mod

    monkeypatch.setattr(command_mod, "require_cupy", lambda: None)
    return _StandInRunner


def _request(**kw):
    return ceiling_mod.CeilingRequest(**{"copy_mib": 16, "budget_s": 0.0, "settle": QUICK_SETTLE, **kw})


def test_the_ceiling_is_the_best_of_the_scan_and_every_shape_is_kept(stand_in):
    scans = ceiling_mod.measure(H200, _request(), "NVIDIA H200")
    by = {(s.key, s.regime): s for s in scans}
    assert set(by) == {(d, r) for d in ("fp32", "tf32", "fp16", "bf16", "dram") for r in ("burst", "sustained")}
    for dtype, (burst, sustained) in RATES.items():
        for regime, rate in (("burst", burst), ("sustained", sustained)):
            s = by[dtype, regime]
            assert [p.what for p in s.points] == ["4096x4096x4096", "8192x8192x8192", "8192x8192x4096"]
            assert s.ceiling.value == pytest.approx(max(p.value for p in s.points))
            assert s.ceiling.value == pytest.approx(rate)
            assert s.ceiling.where == ("4096x4096x4096" if dtype == "fp32" else "8192x8192x8192")
            held = 1455.0 if regime == "sustained" else 1980.0
            assert s.ceiling.held_mhz == held and s.ceiling.held_max_mhz == held + 90
            assert s.ceiling.source == ceiling_mod.BASELINE_OF[dtype] and s.ceiling.fill == "uniform"


def test_burst_runs_first_and_each_runner_times_in_its_regime(stand_in):
    ceiling_mod.measure(H200, _request(regimes=("sustained", "burst"), bandwidth=False), "NVIDIA H200")
    regimes = [r for r, _ in stand_in.made]
    assert regimes == ["burst"] * 3 + ["sustained"] * 3  # burst first whatever the order asked: the card as found


def test_a_failed_point_is_kept_and_a_dtype_that_never_passed_has_no_ceiling(stand_in):
    stand_in.failing = {("fp16", "8192x8192x8192"), ("bf16", "4096x4096x4096"), ("bf16", "8192x8192x8192"),
                        ("bf16", "8192x8192x4096")}
    scans = ceiling_mod.measure(H200, _request(regimes=("burst",), bandwidth=False), "NVIDIA H200")
    fp16 = next(s for s in scans if s.key == "fp16")
    assert [p.status for p in fp16.points] == ["ok", "FAIL", "ok"]
    assert fp16.ceiling.where == "8192x8192x4096"  # the best of those that passed
    assert fp16.points[1].value is None and "wrong" in fp16.points[1].message
    bf16 = next(s for s in scans if s.key == "bf16")
    assert bf16.ceiling is None and len(bf16.failed) == 3


def test_a_stop_keeps_what_was_measured(stand_in):
    """Ctrl-C during the sustained regime: the burst ceilings and the sustained points taken so far are stored."""
    stand_in.interrupt_at = ("fp16", "8192x8192x8192", "sustained")
    stored = []
    with pytest.raises(KeyboardInterrupt):
        ceiling_mod.measure(H200, _request(bandwidth=False), "NVIDIA H200", on_regime=stored.append)
    burst, sustained = stored
    assert {s.key for s in burst} == {"fp32", "tf32", "fp16", "bf16"}
    assert {s.key: [p.what for p in s.points] for s in sustained} == {
        "fp32": ["4096x4096x4096", "8192x8192x8192"], "tf32": ["4096x4096x4096", "8192x8192x8192"],
        "fp16": ["4096x4096x4096"], "bf16": ["4096x4096x4096"]}


def test_the_real_runner_verifies_and_times_each_point_as_it_does_every_variant(monkeypatch):
    """The Runner itself over NumPy (tests/numpy_cupy.py), cuBLAS replaced by a NumPy GEMM: each point verified, its
    timed calls checked, the physical floor applied. A GEMM right only on its verified call fails its point."""
    import numpy_cupy

    monkeypatch.setitem(sys.modules, "cupy", numpy_cupy.make([]))
    monkeypatch.setattr(runner_mod.Runner, "clock_reader", lambda self: None)
    timing.capture()
    calls = []

    def numpy_gemm(baseline, problem, out):
        def launch():
            calls.append(baseline.name)
            out[...] = problem.alpha * (problem.A @ problem.B)
        return launch

    monkeypatch.setattr(runner_mod, "make_launcher", numpy_gemm)
    request = _request(dtypes=("fp32", "tf32"), regimes=("burst",), shapes=(GemmShape(64, 48, 32),), bandwidth=False)
    scans = ceiling_mod.measure(H200, request, "NVIDIA H200")
    assert [s.points[0].status for s in scans] == ["ok", "ok"] and all(s.ceiling for s in scans)
    assert calls.count("cublas_sgemm") > 10  # verified, warmed, timed

    def stale(baseline, problem, out):  # computes once, then leaves C as the poisoning left it
        done = []

        def launch():
            if not done:
                out[...] = problem.alpha * (problem.A @ problem.B)
                done.append(1)
        return launch

    monkeypatch.setattr(runner_mod, "make_launcher", stale)
    scans = ceiling_mod.measure(H200, request, "NVIDIA H200")
    assert all(s.ceiling is None and s.points[0].status == "FAIL" for s in scans), [s.points for s in scans]


# -- the copy: the real timing core over NumPy -------------------------------------------------------------------
def test_the_copy_is_timed_checked_and_counts_bytes_read_and_written(stand_in):
    config = _request().timing("burst")
    t = ceiling_mod.copy_point(H200, _request(), config)
    assert t.point.status == "ok", t.point.message
    assert t.point.value == pytest.approx(2 * 16 * 2 ** 20 / (t.point.median_ms * 1e-3) / 1e9)


def test_a_copy_that_does_nothing_fails_its_checks(stand_in, monkeypatch):
    monkeypatch.setattr(ceiling_mod.CopyBench, "launch", lambda self: None)
    t = ceiling_mod.copy_point(H200, _request(), _request().timing("burst"))
    assert t.point.status == "FAIL" and t.point.value is None
    assert "the destination differs from the source" in t.point.message


def test_a_copy_faster_than_the_datasheet_allows_is_impossible(stand_in):
    slow_card = dataclasses.replace(H200, dram_bandwidth_gbs=0.001)  # NumPy copies far faster than 1 MB/s
    t = ceiling_mod.copy_point(slow_card, _request(), _request().timing("burst"))
    assert t.point.status == "FAIL" and "impossible" in t.point.message


def test_the_copy_bench_changes_the_source_before_every_call():
    import random

    import numpy as np

    src, dst = np.arange(4, dtype=np.uint32), np.zeros(4, dtype=np.uint32)  # few words: indices drawn again
    bench = ceiling_mod.CopyBench(src, dst, np, rng=random.Random(3))
    last = src.copy()
    for i in range(20):
        bench.prepare(i)
        assert (src != last).sum() == 1  # one word, never the previous call's source
        last = src.copy()
        bench.launch()
        bench.finish(i, checked=i % 5 == 0)
    assert bench.verify_checked() == ((0, 5, 10, 15), ())


# -- the command -------------------------------------------------------------------------------------------------
def test_the_command_measures_stores_and_shows(stand_in, tmp_path):
    out = tmp_path / "ceilings.json"
    r = invoke(CliRunner(), ["ceiling", "--gpu", "h200", "--copy-mib", "16", "--budget", "0.001", "-o", str(out)])
    assert r.exit_code == 0, r.output
    tables = json.loads(out.read_text())["tables"]
    rows = {(row["key"], row["regime"]): row for row in tables[0]["rows"]}
    assert rows["fp16", "sustained"]["value"] == pytest.approx(660.0)
    assert rows["fp16", "sustained"]["pct_datasheet"] == pytest.approx(100 * 660.0 / 989.5)
    assert rows["fp16", "sustained"]["pct_at_held"] == pytest.approx(100 * 660.0 / (989.5 * 1455 / 1830))
    assert len(tables[1]["rows"]) == 2 * (4 * 3 + 1)  # every point of both regimes
    assert "[1/26] burst fp32 4096x4096x4096: cublas_sgemm" in r.output  # progress (stderr, mixed in here)
    stored = {c.ident: c for c in store.load("NVIDIA H200")}
    assert len(stored) == 10 and stored["compute", "bf16", "burst"].value == pytest.approx(840.0)
    assert stored["memory", "dram", "sustained"].source == ceiling_mod.COPY_SOURCE

    sheet = json.loads(invoke(CliRunner(), ["gpus", "h200", "--format", "json"]).output)["rows"]
    mine = {row["figure"]: row for row in sheet if row["figure"].startswith("ceiling.")}
    assert mine["ceiling.fp16.sustained"]["value"] == 660.0
    assert "67% of peak_tflops.fp16_tensor_fp32_acc" in mine["ceiling.fp16.sustained"]["source"]
    listing = json.loads(invoke(CliRunner(), ["gpus", "--format", "json"]).output)
    h200 = next(row for row in listing["rows"] if row["key"] == "h200")
    assert h200["measured_fp16"] == pytest.approx(660.0)


def test_a_second_scan_replaces_only_its_own_ceilings(stand_in, tmp_path):
    args = ["ceiling", "--gpu", "h200", "--no-bandwidth", "--budget", "0.001", "--format", "json"]
    assert invoke(CliRunner(), args).exit_code == 0
    RATES["fp16"], saved = (900.0, 700.0), RATES["fp16"]
    try:
        r = invoke(CliRunner(), [*args, "--dtype", "fp16", "--regime", "burst", "--shapes", "8192"])
    finally:
        RATES["fp16"] = saved
    assert r.exit_code == 0, r.output
    got = {c.ident: c.value for c in store.load("NVIDIA H200")}
    assert got["compute", "fp16", "burst"] == pytest.approx(900.0)
    assert got["compute", "fp16", "sustained"] == pytest.approx(660.0)  # not measured again: kept
    assert got["compute", "fp32", "burst"] == pytest.approx(52.0)


def test_no_save_keeps_nothing_and_a_failed_point_exits_non_zero(stand_in):
    stand_in.failing = {("tf32", "4096x4096x4096")}
    r = invoke(CliRunner(), ["ceiling", "--gpu", "h200", "--no-bandwidth", "--regime", "burst", "--budget", "0.001",
                             "--no-save", "--format", "csv"])
    assert r.exit_code == 1 and "timed call 2: wrong" in r.output
    assert store.load("NVIDIA H200") == []


@pytest.mark.parametrize("args, said", [
    (["--shapes", "4096,81x"], "--shapes: line 1: '81x' is not a shape"),
    (["--shapes", ",".join(str(256 * i) for i in range(1, 18))], "at most 16"),
    (["--dtype", "fp8"], "Invalid value for '--dtype'"),
    (["--regime", "warm"], "Invalid value for '--regime'"),
    (["-o", "out.xlsx"], "unknown extension '.xlsx'"),
])
def test_bad_options_are_one_line_before_any_gpu_work(stand_in, args, said):
    r = invoke(CliRunner(), ["ceiling", *args])
    assert r.exit_code == 2 and said in r.output and stand_in.made == []


def test_a_damaged_store_stops_the_command_before_any_gpu_work(stand_in):
    _damage("{not json")
    r = invoke(CliRunner(), ["ceiling", "--gpu", "h200", "--budget", "0.001"])
    assert r.exit_code == 2 and "cannot read the stored ceilings" in r.output and stand_in.made == []
    assert len(r.output.strip().splitlines()) == 1


# -- the consumers: the roofline ---------------------------------------------------------------------------------
def _fp16_roofs(data):
    return [c for c in data.ceilings if c.kind == "compute" and c.key == "fp16_tensor_fp32_acc"]


def test_the_roofline_draws_this_gpus_ceiling_in_the_regime_of_the_figures():
    from gemmprof.model.roofline import Point, Rung, build

    rung = Rung("h3", "h3_mma", "fp16", "ladder", "fp16_tensor_fp32_acc", [Point("model", 300.0, 4e14)])
    shape = GemmShape(8192, 8192, 8192)
    plain = build(H100, shape, [rung], device=H100_NAME)  # nothing stored: the GPU spec's own measured figure
    assert [(c.source, c.value, c.regime) for c in _fp16_roofs(plain)] == [("datasheet", 989.4e12, ""),
                                                                           ("measured", 783e12, "")]
    store.save([ceiling("fp16", "sustained", 640.0, H100_NAME), ceiling("fp16", "burst", 780.5, H100_NAME),
                ceiling("dram", "sustained", 2900.0, H100_NAME, source="copy")], H100_NAME)
    for regime, value in (("sustained", 640.0), (None, 640.0), ("burst", 780.5)):
        data = build(H100, shape, [rung], device=H100_NAME, regime=regime)
        measured = [c for c in _fp16_roofs(data) if c.source == "measured"]
        assert [(c.value, c.regime) for c in measured] == [(value * 1e12, regime or "sustained")]  # replaces 783
        assert measured[0].name == f"fp16 tensor measured ({regime or 'sustained'})"
        assert any(n.startswith(f"measured ceilings ({regime or 'sustained'}), by gemmprof ceiling") for n in data.notes)
    dram = [c for c in build(H100, shape, [rung], device=H100_NAME).ceilings if c.key == "dram"]
    assert sorted(c.value for c in dram) == [2900e9, 3350e9]
    assert not [c for c in build(H100, shape, [rung], device=H100_NAME, measured=False).ceilings
                if c.source == "measured"]  # --no-measured leaves them off


def test_the_roofline_of_results_uses_their_regime_and_says_when_none_is_stored(drawn_figures, tmp_path):
    fp16 = FIXTURES / "results" / "h100_fp16_8192.json"  # timed before regimes were named: burst
    store.save([ceiling("fp16", "sustained", 640.0, H100_NAME)], H100_NAME)
    r = invoke(CliRunner(), ["roofline", str(fp16), "--gpu", "h100", "--format", "json"])
    notes = json.loads(r.output)["notes"]
    assert any("only for the sustained regime" in n for n in notes), notes
    store.save([ceiling("fp16", "burst", 780.5, H100_NAME)], H100_NAME)
    image = tmp_path / "roofline.png"
    table_file = tmp_path / "table.json"
    r = invoke(CliRunner(), ["roofline", str(fp16), "--gpu", "h100", "--ceiling", "measured", "-o", str(image),
                             "--table", str(table_file)])
    assert r.exit_code == 0, r.output
    table = json.loads(table_file.read_text())
    cublas = next(row for row in table["rows"] if row["name"] == "cublas_hgemm")
    assert cublas["roof_name"] == "fp16 tensor measured (burst)" and cublas["roof_tflops"] == pytest.approx(780.5)
    fig = drawn_figures[-1]
    lines = {ln.get_gid(): ln for ln in fig.axes[0].get_lines() if ln.get_gid()}
    assert lines["roof:compute:fp16_tensor_fp32_acc:measured"].get_ydata()[0] == pytest.approx(780.5e12)
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")) if t.get_text()]
    assert any(t.startswith("measured (burst) 780.5") for t in texts), texts


def test_a_damaged_store_does_not_stop_the_roofline(tmp_path):
    _damage("{not json")
    store_path = store.store_path("NVIDIA H200")
    r = invoke(CliRunner(), ["roofline", "--model-only", "h4", "--gpu", "h200", "--dtype", "fp16", "--size", "4096",
                             "--format", "json"])
    assert r.exit_code == 0, r.output
    assert any(n.startswith("measured ceilings not used") and str(store_path) in n
               for n in json.loads(r.output)["notes"])


@pytest.fixture
def drawn_figures(monkeypatch):
    from gemmprof.render import roofline_plot

    figs, real = [], roofline_plot.save

    def keep(fig, path, dpi=150):
        figs.append(fig)
        real(fig, path, dpi)

    monkeypatch.setattr(roofline_plot, "save", keep)
    return figs


def test_the_report_draws_the_stored_ceiling(tmp_path):
    """The report's roofline takes this GPU's ceilings in the run's regime (burst); its explain section goes through
    explain_run, tested below."""
    run = FIXTURES / "explain" / "run_ladder_4096.json"
    store.save([ceiling("fp32", "burst", 51.5, H100_NAME, source="cublas_sgemm"),
                ceiling("fp16", "burst", 780.5, H100_NAME)], H100_NAME)
    out = tmp_path / "report.html"
    r = invoke(CliRunner(), ["report", str(run), "-o", str(out)])
    assert r.exit_code == 0, r.output
    html = out.read_text()
    assert "measured (burst) 51.5" in html  # a roof's label (SVG keeps it in a comment); crowded ones are shorter
    assert 'id="roof:compute:fp16_tensor_fp32_acc:measured"' in html and "780.5" in html  # long or short label


# -- the consumers: explain --------------------------------------------------------------------------------------
def _math_bound(explanation):
    return next(lim for lim in explanation.limiters if lim.kind == "math_pipe")


def test_explains_compute_bound_is_this_gpus_ceiling_where_one_is_stored():
    import gemmprof
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.measure.explain_inputs import explain_run, facts_for
    from gemmprof.model.explain import explain

    shape = GemmShape(4096, 4096, 4096)
    kernel = bind(specmod.select(["5"])[0])
    flops = 2 * 4096 ** 3
    offline = explain(facts_for(kernel, shape, H100), H100)
    assert _math_bound(offline).bound_s == pytest.approx(flops / H100.peak_flops("fp32"))
    assert "FFMA peak" in _math_bound(offline).evidence and not any("ceiling" in n for n in offline.notes)

    store.save([ceiling("fp32", "sustained", 48.0, H100_NAME, source="cublas_sgemm"),
                ceiling("fp32", "burst", 51.5, H100_NAME, source="cublas_sgemm")], H100_NAME)
    e = explain(facts_for(kernel, shape, H100), H100)  # no run: the GPU spec's device, sustained
    assert _math_bound(e).bound_s == pytest.approx(flops / 48e12)
    assert "this GPU's measured ceiling 48.0 TFLOP/s" in _math_bound(e).evidence
    note = next(n for n in e.notes if n.startswith("compute bound at this GPU's measured sustained ceiling"))
    assert "not the datasheet's 66.9 TFLOP/s (at 1980 MHz)" in note

    run = gemmprof.load(FIXTURES / "explain" / "run_ladder_4096.json")  # timed burst, on the H100
    five = next(x for x in explain_run(run, None, H100) if x.kernel == "5")
    assert _math_bound(five).bound_s == pytest.approx(flops / 51.5e12)  # the run's regime


def test_a_damaged_store_is_a_note_in_explain():
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.measure.explain_inputs import facts_for
    from gemmprof.model.explain import explain

    store.save([ceiling("fp32", device=H100_NAME)], H100_NAME)
    store.store_path(H100_NAME).write_text("[]")
    e = explain(facts_for(bind(specmod.select(["5"])[0]), GemmShape(4096, 4096, 4096), H100), H100)
    assert any(n.startswith("measured ceilings not used") for n in e.notes)
    assert _math_bound(e).bound_s == pytest.approx(2 * 4096 ** 3 / H100.peak_flops("fp32"))


def test_a_ceiling_file_reads_back_only_as_written():
    """The typed result refuses what it cannot stand behind (each case one line naming the field)."""
    good = ceiling().to_dict()
    assert MeasuredCeiling.from_dict(good, "f") == ceiling()
    for key, bad in (("value", 0), ("value", "fast"), ("held_mhz", -1), ("throttle_reasons", "power"),
                     ("scan", {"what": 1}), ("where", "")):
        with pytest.raises(InputError) as caught:
            MeasuredCeiling.from_dict({**good, key: bad}, "f")
        assert key in one_line(caught.value)


# -- on the GPU --------------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_ceiling_on_the_gpu(tmp_path):
    """A small scan for real: fp16 burst at 2048 and a 256 MiB copy; the figures stored, physically possible, at
    the clock NVML saw."""
    from gemmprof.cli import main
    from gemmprof.measure.device import current_device_gpu, device_name

    out = tmp_path / "ceilings.json"
    main(["ceiling", "--dtype", "fp16", "--regime", "burst", "--shapes", "2048", "--copy-mib", "256", "--budget",
          "0.2", "-o", str(out)])  # exits only on failure
    device, spec = device_name(), current_device_gpu()
    fp16, dram = store.measured(device, "fp16", "burst"), store.measured(device, "dram", "burst")
    assert fp16 is not None and dram is not None and fp16.held_mhz > 0
    if spec is not None:
        peak = spec.peak_flops_at("fp16_tensor_fp32_acc", fp16.held_max_mhz or fp16.held_mhz) / 1e12
        assert 0.2 * peak < fp16.value < 1.05 * peak
        assert 0.3 * spec.dram_bandwidth_gbs < dram.value < 1.05 * spec.dram_bandwidth_gbs
    assert json.loads(out.read_text())["tables"][0]["rows"]


def test_a_device_name_of_any_length_has_a_file_the_file_system_takes():
    # a results file may name any device: a name past the file system's 255 bytes once raised OSError (found by
    # test_fuzz_readers' run results); long names are cut and end with a hash of the whole name, short ones are kept
    long_a, long_b = "9" * 5000, "9" * 4999 + "8"
    a, b = store.store_path(long_a), store.store_path(long_b)
    assert len(a.name) <= store.SLUG_MAX + len(".json") and a != b
    assert store.load(long_a) == []  # nothing stored for it yet, and reading does not raise
    assert store.store_path("NVIDIA H200").name == "nvidia-h200.json"
    store.save([ceiling("fp16")], long_a)
    assert [c.key for c in store.load(long_a)] == ["fp16"]
