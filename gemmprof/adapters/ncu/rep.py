"""Nsight Compute reports (.ncu-rep) read in Python through NVIDIA's `ncu-report` wheel (module `ncu_report`; the
`ncu-report` extra), with no Nsight Compute installed: a report made on a cluster reads on a laptop.

The result is the NcuReport the CSV reader makes (gemmprof.adapters.ncu.report) from `ncu --import --csv`'s details
and raw pages merged, so findings and tables are the same: one Launch per profiled kernel (ranges, then actions, in
the report's order, numbered from 0 as ncu's ID column), every metric under its raw name in base units, the
identity ncu prints as columns (kernel name, block, grid, device, stream, compute capability) from the launch__ and
device__ metrics, the push/pop NVTX ranges, and the rules' advice. A metric without a number (NaN, infinite) is
kept without a value, so what needs it shows as unknown, and the report's warnings name it; a negative one is left
out, as the CSV reader leaves out a negative cell.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from gemmprof.adapters.ncu.report import Launch, Metric, NcuReport, Rule
from gemmprof.errors import InputError
from gemmprof.results import cells

INSTALL = "pip install ncu-report (or gemmprof[ncu-report])"
# The rule message types, as `ncu --csv` prints them in its Rule Type column
_MESSAGE_TYPES = (("MsgType_OK", "INF"), ("MsgType_OPTIMIZATION", "OPT"), ("MsgType_WARNING", "WRN"),
                  ("MsgType_ERR", "ERR"))
_SPEEDUP_TYPES = (("SpeedupType_LOCAL", "local"), ("SpeedupType_GLOBAL", "global"))
# Links in rule messages: @url:TEXT:LINK@ as ncu's CSV prints it, TEXT (LINK); @section/@sass/@source:...:TEXT@ as TEXT
_URL = re.compile(r"@url:([^:@]*):([^@]*)@")
_OTHER_LINK = re.compile(r"@(?:section|sass):[^:@]*:([^@]*)@|@source:[^:@]*:[^:@]*:([^@]*)@")
SHOWN_NAN = 5  # metric names listed per launch in the warning about values that are not numbers


def load_module():
    """The `ncu_report` module, or None where the wheel is not installed."""
    try:
        import ncu_report
    except ImportError:
        return None
    return ncu_report


def read_report(path, module=None) -> NcuReport:
    """Read an .ncu-rep file; InputError (one line naming the file) when it cannot be read or holds no launch."""
    mod = module or load_module()
    if mod is None:
        raise InputError(f"--from {path}: reading .ncu-rep files needs NVIDIA's ncu-report wheel: {INSTALL}")
    p = Path(path)
    try:
        context = mod.load_report(str(p))
    except FileNotFoundError:
        raise InputError(f"--from: {p} does not exist") from None
    except Exception as exc:  # noqa: BLE001 - the library's own error, whatever its type, in one line
        raise InputError(f"--from {p}: not a readable Nsight Compute report ({exc})") from None
    launches: list[Launch] = []
    warnings: list[str] = []
    for r in range(context.num_ranges()):
        rng = context.range_by_idx(r)
        for a in range(rng.num_actions()):
            launches.append(_launch(mod, rng.action_by_idx(a), len(launches), warnings))
    if not launches:
        raise InputError(f"--from {p}: no profiled kernel launch in this report (is it an Nsight Compute report, "
                         "made with ncu -o?)")
    return NcuReport("report", launches, [], [], warnings)


def _value(metric):
    """(value, text) of a metric: a finite number, a string, or None (no value, or not a finite number)."""
    if not metric.has_value():
        return None, ""
    value = metric.value()
    if isinstance(value, bool) or value is None:
        return None, "" if value is None else str(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return math.nan, str(value)
        return value, f"{value}"
    return str(value), str(value)


# ncu's CSV prints a template's integer arguments bare (`k<32>`); the report's demangler keeps their casts
# (`k<(unsigned int)32>`): the name is written as the CSV writes it, so both ways of reading give one name
_CAST = re.compile(r"\((?:(?:unsigned|signed) )?(?:char|short|int|long|long long)\)(-?\d+)")


def _launch(mod, action, lid: int, warnings: list[str]) -> Launch:
    name = _CAST.sub(r"\1", action.name(mod.IAction.NameBase_DEMANGLED))
    launch = Launch(id=lid, kernel_name=name)
    no_number: list[str] = []
    for metric_name in action.metric_names():
        metric = action.metric_by_name(metric_name)
        if metric is None:
            continue
        value, text = _value(metric)
        unit = metric.unit() or ""
        if isinstance(value, float) and math.isnan(value):
            no_number.append(metric_name)
            value = None
        elif isinstance(value, (int, float)) and -1 < value < 0:
            value = None  # a measurement a hair below zero (-0.1% of a pipe's peak): unknown, as the CSV reader has it
        elif isinstance(value, (int, float)):
            try:
                value = cells.figure(value, minimum=0)  # no ncu figure is negative; a huge one is damage
            except cells.CellError as exc:
                warnings.append(f"launch {lid} ({name[:60]}), metric {metric_name}: {exc}; left out")
                continue
        launch.metrics[("", metric_name)] = Metric(metric_name, "", unit, text, value, unit)
    if no_number:
        shown = ", ".join(no_number[:SHOWN_NAN]) + (f" and {len(no_number) - SHOWN_NAN} more"
                                                    if len(no_number) > SHOWN_NAN else "")
        warnings.append(f"launch {lid} ({name[:60]}): {len(no_number)} metric(s) with no number (NaN): {shown}; "
                        "shown as unknown")
    _identity(launch)
    launch.push_pop = _ranges(action.nvtx_state())
    launch.rules = [rule for r in action.rule_results() if (rule := _rule(mod, r)) is not None]
    return launch


def _identity(launch: Launch) -> None:
    """The columns ncu's CSV prints beside the metrics, from the metrics they come from."""
    def whole(name):
        v = launch.number(name)
        try:
            return None if v is None else cells.count(v)
        except cells.CellError:
            return None

    block = tuple(whole(f"launch__block_dim_{d}") for d in "xyz")
    grid = tuple(whole(f"launch__grid_dim_{d}") for d in "xyz")
    launch.block = block if all(b and b >= 1 for b in block) else None
    launch.grid = grid if all(g and g >= 1 for g in grid) else None
    major, minor = (whole(f"device__attribute_compute_capability_{p}") for p in ("major", "minor"))
    launch.cc = f"{major}.{minor}" if major is not None and minor is not None else ""
    launch.device = "" if (d := whole("launch__device_id")) is None else str(d)
    launch.stream = "" if (s := whole("launch__stream_id")) is None else str(s)


def _ranges(state) -> tuple[str, ...]:
    """Push/pop range names of every domain, outermost first."""
    if state is None:
        return ()
    names: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is not None:
            names.extend(str(n) for n in domain.push_pop_ranges())
    return tuple(n for n in names if n)


def _message(text: str) -> str:
    text = _URL.sub(lambda m: f"{m[1]} ({m[2]})", text)
    text = _OTHER_LINK.sub(lambda m: m[1] if m[1] is not None else m[2], text)
    return " ".join(text.split())


def _enum_name(mod, value, table) -> str:
    return next((label for attr, label in table if getattr(mod, attr, object()) == value), "")


def _rule(mod, result) -> Rule | None:
    """A rule result with a message, as one Rule (a row of the details page); None without a message."""
    if not result.has_rule_message():
        return None
    message = result.rule_message()
    rule_type = _enum_name(mod, message.get("type"), _MESSAGE_TYPES)
    if not rule_type:
        return None  # MsgType_NONE: nothing to say
    speedup, speedup_type = None, ""
    if result.has_speedup_estimation():
        estimate = result.speedup_estimation()
        speedup_type = _enum_name(mod, estimate.get("type"), _SPEEDUP_TYPES)
        try:
            speedup = cells.real(cells.figure(estimate.get("speedup"), minimum=0)) if speedup_type else None
        except cells.CellError:
            speedup = None
        if speedup is None:
            speedup_type = ""
    return Rule(result.section_identifier(), result.rule_identifier(), rule_type, _message(message.get("message", "")),
                speedup_type, speedup)
