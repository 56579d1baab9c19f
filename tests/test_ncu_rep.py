""".ncu-rep reports read through NVIDIA's ncu-report wheel (gemmprof.adapters.ncu.rep): the mapping onto the CSV
reader's records on a stand-in of the `ncu_report` module; the wheel itself on a file that is no report; and a real
report made on the H200 with `ncu -o`, whose findings must equal those of the CSV `ncu --import` made of it."""

from __future__ import annotations

import json
import math
import os
import types
from pathlib import Path

import pytest
from clitools import invoke
from context import from_test_extra

from gemmprof.adapters.ncu import rep
from gemmprof.adapters.ncu.findings import analyse, choose_gpu, gemmprof_range
from gemmprof.adapters.ncu.report import merge, parse_csv
from gemmprof.catalog import gpu_specs
from gemmprof.errors import InputError

FIXTURES = Path(os.environ.get("GEMMPROF_NCU_REP_FIXTURES") or Path(__file__).parent / "fixtures" / "ncu")
REPORT = FIXTURES / "h200_small.ncu-rep"
DETAILS = FIXTURES / "h200_small_details.csv"
RAW = FIXTURES / "h200_small_raw.csv"


# -- a stand-in of the ncu_report module -------------------------------------------------------------------------
class Metric:
    def __init__(self, value, unit=""):
        self._value, self._unit = value, unit

    def has_value(self):
        return self._value is not None

    def value(self):
        return self._value

    def unit(self):
        return self._unit


class Domain:
    def __init__(self, ranges):
        self.ranges = ranges

    def push_pop_ranges(self):
        return tuple(self.ranges)


class NvtxState:
    def __init__(self, domains):
        self._domains = domains

    def domains(self):
        return tuple(range(len(self._domains)))

    def domain_by_id(self, i):
        return self._domains[i]


class RuleResult:
    def __init__(self, section, ident, msg_type, message, speedup=None):
        self.section, self.ident, self.msg_type, self.message, self.speedup = section, ident, msg_type, message, speedup

    def has_rule_message(self):
        return self.message is not None

    def rule_message(self):
        return {"title": "", "message": self.message, "type": self.msg_type}

    def section_identifier(self):
        return self.section

    def rule_identifier(self):
        return self.ident

    def has_speedup_estimation(self):
        return self.speedup is not None

    def speedup_estimation(self):
        return {"type": self.speedup[0], "speedup": self.speedup[1]}


class Action:
    NameBase_DEMANGLED = 2

    def __init__(self, name, metrics, ranges=(), rules=()):
        self._name, self.metrics, self.ranges, self.rules = name, metrics, ranges, rules

    def name(self, base=0):
        assert base == self.NameBase_DEMANGLED  # ncu's CSV prints the demangled name
        return self._name

    def metric_names(self):
        return tuple(self.metrics)

    def metric_by_name(self, name):
        return self.metrics.get(name)

    def nvtx_state(self):
        return NvtxState([Domain(self.ranges)]) if self.ranges else None

    def rule_results(self):
        return list(self.rules)


class Range:
    def __init__(self, actions):
        self.actions = actions

    def num_actions(self):
        return len(self.actions)

    def action_by_idx(self, i):
        return self.actions[i]


def stand_in(ranges, fail=None):
    """The ncu_report module over `ranges` (lists of Actions); load_report raises `fail` when given."""
    def load_report(path):
        if fail is not None:
            raise fail
        return types.SimpleNamespace(num_ranges=lambda: len(ranges), range_by_idx=lambda i: Range(ranges[i]))

    return types.SimpleNamespace(load_report=load_report, IAction=Action, MsgType_NONE=0, MsgType_OK=1,
                                 MsgType_OPTIMIZATION=2, MsgType_WARNING=3, MsgType_ERR=4, SpeedupType_UNKNOWN=0,
                                 SpeedupType_LOCAL=1, SpeedupType_GLOBAL=2)


def smem_action(duration=21639968, **extra):
    metrics = {
        "gpu__time_duration.sum": Metric(duration, "nsecond"),
        "device__attribute_display_name": Metric("NVIDIA H200"),
        "device__attribute_compute_capability_major": Metric(9), "device__attribute_compute_capability_minor": Metric(0),
        "launch__block_dim_x": Metric(1024, "block"), "launch__block_dim_y": Metric(1), "launch__block_dim_z": Metric(1),
        "launch__grid_dim_x": Metric(32), "launch__grid_dim_y": Metric(32), "launch__grid_dim_z": Metric(1),
        "launch__device_id": Metric(0), "launch__stream_id": Metric(7),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": Metric(91.25, "%"),
        "dram__bytes_read.sum": Metric(12582912, "byte"), "dram__bytes_write.sum": Metric(4194304, "byte"),
        "smsp__average_warp_latency_issue_stalled_mio_throttle.ratio": Metric(6.0, "inst"),
        "smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio": Metric(2.0, "inst"),
        "smsp__average_warp_latency_issue_stalled_selected.ratio": Metric(1.0, "inst"),
        **{k: Metric(v) for k, v in extra.items()},
    }
    rules = [RuleResult("SpeedOfLight", "SOLBottleneck", 1, "Start by analyzing @section:MemoryWorkloadAnalysis:the "
                        "memory section@. See the @url:Profiling Guide:https://docs.nvidia.com/x.html#y@."),
             RuleResult("WarpStateStats", "CPIStall", 2, "On average, each warp spends 6.0 cycles stalled.",
                        speedup=(1, 33.06)),
             RuleResult("Occupancy", "Silent", 0, "no message type"), RuleResult("LaunchStats", "NoMessage", 1, None)]
    return Action("void sgemm_smem_caching<32>(int, int, int, float, const float *, const float *, float, float *)",
                  metrics, ranges=("gemmprof smem_caching 1024x1024x1024",), rules=rules)


def test_a_report_becomes_the_csv_readers_records():
    r = rep.read_report("x.ncu-rep", stand_in([[smem_action()], [smem_action()]]))
    assert r.layout == "report" and [launch.id for launch in r.launches] == [0, 1]  # numbered across ranges
    launch = r.launches[0]
    assert launch.kernel_name.startswith("void sgemm_smem_caching<32>(int")
    assert (launch.block, launch.grid, launch.cc, launch.device, launch.stream) == ((1024, 1, 1), (32, 32, 1), "9.0",
                                                                                    "0", "7")
    assert launch.number("gpu__time_duration.sum") == 21639968 and r.gpu == "NVIDIA H200"
    assert gemmprof_range(launch)[1:] == ("smem_caching", gemmprof_range(launch)[2])
    assert gemmprof_range(launch)[2].label == "1024x1024x1024"
    sol, cpi = launch.rules  # a rule without a message, or of no message type, is no row (as in the CSV)
    assert (sol.section, sol.name, sol.type, sol.speedup, sol.speedup_type) == ("SpeedOfLight", "SOLBottleneck", "INF",
                                                                                None, "")
    assert sol.description == ("Start by analyzing the memory section. See the Profiling Guide "
                               "(https://docs.nvidia.com/x.html#y).")
    assert (cpi.type, cpi.speedup_type, cpi.speedup) == ("OPT", "local", 33.06)


def test_findings_from_a_report():
    r = rep.read_report("x.ncu-rep", stand_in([[smem_action()]]))
    gpu, _ = choose_gpu(r, None, gpu_specs.all_gpus())
    (f,) = analyse(r, gpu)
    assert (f.variant, f.duration_ns, f.sol_compute_pct, f.dram_bytes) == ("smem_caching", 21639968, 91.25, 16777216)
    assert f.shape.label == "1024x1024x1024" and list(f.stalls) == ["mio_throttle", "long_scoreboard"]
    assert f.stalls["mio_throttle"] == pytest.approx(0.75) and f.rules[0].name == "CPIStall"  # OPT first


def test_a_nan_counter_is_unknown_and_named_a_negative_one_is_left_out():
    action = smem_action(duration=math.nan, **{"dram__bytes_write.sum": -5.0, "lts__t_bytes.sum": math.inf})
    r = rep.read_report("x.ncu-rep", stand_in([[action]]))
    (f,) = analyse(r, None)
    assert f.duration_ns is None and f.dram_write_bytes is None and f.l2_bytes is None and f.dram_read_bytes
    nan_warning, negative = sorted(r.warnings, key=lambda w: "NaN" not in w)
    assert "2 metric(s) with no number (NaN): gpu__time_duration.sum, lts__t_bytes.sum; shown as unknown" in nan_warning
    assert "metric dram__bytes_write.sum: " in negative and "below 0" in negative and "left out" in negative


def test_profile_from_a_report_prints_unknown_for_a_nan_counter(runner, tmp_path, monkeypatch):
    path = tmp_path / "small.ncu-rep"
    path.write_bytes(b"stand-in")
    monkeypatch.setattr(rep, "load_module", lambda: stand_in([[smem_action(duration=math.nan)]]))
    r = invoke(runner, ["profile", "--from", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (launch,) = doc["launches"]
    assert launch["variant"] == "smem_caching" and launch["duration_ns"] is None
    assert any("shown as unknown" in n for n in doc["notes"])
    text = invoke(runner, ["profile", "--from", str(path)])
    assert text.exit_code == 0 and "smem_caching" in text.output


@pytest.mark.parametrize("ranges, fail, match", [
    ([], None, "no profiled kernel launch in this report"),
    ([[]], None, "no profiled kernel launch"),
    ([], RuntimeError("Failed to load report: bad magic"), r"not a readable Nsight Compute report \(Failed to load"),
])
def test_a_file_that_is_no_report_is_one_line(ranges, fail, match):
    with pytest.raises(InputError, match=match):
        rep.read_report("x.ncu-rep", stand_in(ranges, fail))


def test_the_wheel_refuses_a_file_that_is_no_report(tmp_path):
    from_test_extra("ncu_report")
    junk = tmp_path / "junk.ncu-rep"
    junk.write_bytes(b"not a report" * 100)
    with pytest.raises(InputError, match=f"--from {junk}: (no profiled kernel launch|not a readable)"):
        rep.read_report(junk)


# -- a real report, made on the H200 (tests/fixtures/ncu/PROVENANCE.md) ------------------------------------------
def _real_report():
    assert REPORT.is_file() and DETAILS.is_file() and RAW.is_file(), f"{REPORT.name} and its CSVs belong in {FIXTURES}"
    return rep.read_report(REPORT, from_test_extra("ncu_report"))


def _csv_report():
    """What gemmprof reads where ncu imports the report: its details and raw pages, merged."""
    return merge(parse_csv(DETAILS.read_text(encoding="utf-8")), parse_csv(RAW.read_text(encoding="utf-8")))


def _findings(report):
    from gemmprof.commands.profile import _known_variants

    gpu, _ = choose_gpu(report, None, gpu_specs.all_gpus())
    return analyse(report, gpu, None, _known_variants([]), None)


def _close(a, b) -> bool:
    """Equal, numbers to the CSV's printed precision (two decimals of base units: ratios of such figures move by
    up to a few per mille, stall shares of two-decimal ratios by up to 2%)."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=0.02, abs_tol=0.01)
    return a == b


def test_the_real_report_reads_without_nsight_compute():
    report = _real_report()
    variants = {f.variant for f in _findings(report)}
    assert "smem_caching" in variants, variants
    assert report.gpu and "H200" in report.gpu and not report.warnings


def test_the_real_reports_findings_equal_those_of_its_csv():
    from gemmprof.render.profile_tables import flat_row

    from_rep, from_csv = _findings(_real_report()), _findings(_csv_report())
    assert [(f.id, f.variant, f.kernel_name) for f in from_rep] == [(f.id, f.variant, f.kernel_name) for f in from_csv]
    for a, b in zip(from_rep, from_csv, strict=True):
        row_a, row_b = flat_row(a), flat_row(b)
        stalls = [k for k in row_b if k.startswith("stall_")]
        assert set(row_a) == set(row_b)
        differ = {k: (row_a[k], row_b[k]) for k in row_b if k not in stalls and not _close(row_a[k], row_b[k])}
        assert differ == {}, (a.variant, differ)
        assert set(a.stalls) == set(b.stalls) and all(_close(a.stalls[k], b.stalls[k]) for k in b.stalls)
        assert [(r.section, r.name, r.type, r.speedup_type) for r in a.rules] == \
               [(r.section, r.name, r.type, r.speedup_type) for r in b.rules]
        assert all(_close(x.speedup, y.speedup) for x, y in zip(a.rules, b.rules, strict=True))
        assert a.duration_ns is not None and a.sol_compute_pct is not None  # the figures are there, not both None
