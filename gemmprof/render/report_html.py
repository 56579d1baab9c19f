"""One self-contained HTML page for a run: header, results, clocks, roofline (inline SVG), ncu findings, SASS mix.

Nothing is fetched when the page opens: the CSS is inline, the roofline is an SVG drawn by matplotlib with its
text as paths (no fonts), and there is no script. Every piece of text from a results file is escaped.
"""

from __future__ import annotations

import io
from html import escape

from gemmprof.render.table import Table, format_value
from gemmprof.results.profile import LaunchFindings, ProfileResults
from gemmprof.results.run import RunResult

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #3b6fb6}
h3{font-size:15px;margin:18px 0 6px} .muted{color:#5b6475;font-size:13px}
table{border-collapse:collapse;font-size:12.5px;margin:6px 0 10px}
th,td{border:1px solid #c9d1de;padding:3px 7px;text-align:right;vertical-align:top}
th{background:#e8eef8;text-align:center} td.s{text-align:left}
tr:nth-child(even) td{background:#f6f8fc}
.bad{color:#b00020;font-weight:600} .ok{color:#1b7d32} .warn{background:#fff3cd !important}
.kv td:first-child{text-align:left;color:#5b6475} .kv td{text-align:left}
.cards{display:flex;flex-wrap:wrap;gap:12px} .card{border:1px solid #c9d1de;border-radius:6px;padding:8px 12px;
  min-width:330px;flex:1 1 360px} .bar{display:inline-block;height:9px;background:#3b6fb6;vertical-align:middle}
.roofline svg{max-width:100%;height:auto} ul{margin:4px 0;padding-left:20px} li{font-size:13px}
"""


def e(value) -> str:
    return escape(str(value), quote=True)


def table_html(table: Table, row_class=None) -> str:
    """A render.Table as an HTML table (numbers formatted as the terminal table formats them)."""
    head = "".join(f"<th>{e(c.header)}{'<br>(' + e(c.unit) + ')' if c.unit else ''}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cls = f' class="{e(row_class(row))}"' if row_class and row_class(row) else ""
        cells = []
        for c in table.columns:
            text = format_value(row.get(c.key), "" if c.fmt == "s" else c.fmt)
            kind = "s" if c.fmt == "s" else "n"
            if c.key == "status" and text not in ("ok", "PASS"):
                kind += " bad"
            cells.append(f'<td class="{kind}">{e(text)}</td>')
        body.append(f"<tr{cls}>{''.join(cells)}</tr>")
    notes = "".join(f'<p class="muted">{e(n)}</p>' for n in table.notes)
    return (f'<h3>{e(table.title)}</h3><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            f"{notes}")


def kv_html(pairs) -> str:
    rows = "".join(f"<tr><td>{e(k)}</td><td>{e(format_value(v))}</td></tr>" for k, v in pairs if v not in (None, ""))
    return f'<table class="kv"><tbody>{rows}</tbody></table>'


def value_html(value) -> str:
    """Any JSON value (a build or SASS record whose layout this renderer does not know): numbers of a flat
    object as a sorted table, nested objects as nested tables."""
    if isinstance(value, dict):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
            ordered = sorted(value.items(), key=lambda kv: -kv[1])
            return kv_html(ordered)
        rows = "".join(f"<tr><td>{e(k)}</td><td>{value_html(v)}</td></tr>" for k, v in value.items())
        return f'<table class="kv"><tbody>{rows}</tbody></table>'
    if isinstance(value, list):
        return "<ul>" + "".join(f"<li>{value_html(v)}</li>" for v in value) + "</ul>"
    return e(format_value(value))


def roofline_svg(data) -> str:
    """The roofline figure as an inline <svg> element (text drawn as paths: no fonts needed)."""
    from gemmprof.render.roofline_plot import figure

    fig = figure(data)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.15, metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML declaration and DOCTYPE: not allowed inside HTML


def _pct(x):
    return None if x is None else f"{100 * x:.0f}%"


def _launch_card(f: LaunchFindings, common: set[str] = frozenset()) -> str:
    oc, sm = f.occupancy, f.smem
    facts = [("time", f"{f.duration_ns / 1e3:.1f} us" if f.duration_ns else None),
             ("speed of light SM / memory", f"{format_value(f.sol_compute_pct, '.1f')}% / "
                                            f"{format_value(f.sol_memory_pct, '.1f')}%"),
             ("occupancy achieved", f"{oc.achieved_pct:.1f}%" if oc.achieved_pct is not None else None),
             ("theoretical (ncu / gemmprof)", f"{format_value(oc.theoretical_pct_ncu, '.0f')}% / "
                                              f"{format_value(oc.theoretical_pct_gemmprof, '.0f')}%"),
             ("limiter (ncu)", ", ".join(oc.limiters_ncu) or None),
             ("warp cycles per issue", format_value(f.warp_cycles_per_issue, ".1f")
              if f.warp_cycles_per_issue is not None else None),
             ("smem ld conflicts per request", format_value(sm.per("ld", "requests"), ".2f")
              if sm.per("ld", "requests") is not None else None),
             ("smem st conflicts per request", format_value(sm.per("st", "requests"), ".2f")
              if sm.per("st", "requests") is not None else None)]
    stalls = "".join(f'<li>{e(reason)} <span class="bar" style="width:{max(1, round(160 * share))}px"></span> '
                     f"{e(_pct(share))}</li>" for reason, share in list(f.stalls.items())[:6])
    advice = "".join(f"<li>{e(line)}</li>" for line in [a for a in _advice(f) if a not in common][:4])
    notes = "".join(f"<li>{e(n)}</li>" for n in _notes(f) if n not in common)
    return (f'<div class="card"><h3>{e(f.variant)}</h3>{kv_html(facts)}'
            + (f"<b>warp stalls (share of stall cycles)</b><ul>{stalls}</ul>" if stalls else "")
            + (f"<b>ncu's advice</b><ul>{advice}</ul>" if advice else "")
            + (f"<b>notes</b><ul>{notes}</ul>" if notes else "") + "</div>")


def _launch_cards(launches: list[LaunchFindings]) -> str:
    """The cards, with what ncu says of several launches alike (its rule texts, shared notes) said once above them
    with the launches it concerns, and each card keeping what is its own."""
    said: dict[str, list[str]] = {}
    for f in launches:
        for line in dict.fromkeys(_advice(f) + _notes(f)):
            said.setdefault(line, []).append(f.variant)
    common = {line: who for line, who in said.items() if len(who) > 1}
    shared = "".join(f'<li>{e(line)} <span class="muted">({e(", ".join(who))})</span></li>'
                     for line, who in common.items())
    head = (f"<b>Said of several launches</b><ul>{shared}</ul>" if shared else "")
    return head + '<div class="cards">' + "".join(_launch_card(f, set(common)) for f in launches) + "</div>"


def _advice(f: LaunchFindings) -> list[str]:
    return [f"{r.type} {r.name}: {r.summary}" for r in f.rules]


def _notes(f: LaunchFindings) -> list[str]:
    return list(f.occupancy.disagreements + f.occupancy.notes + f.notes)


def _clock_rows(run: RunResult):
    rows = []
    for v in run.variants:
        c = v.clocks
        if c is None:
            continue
        rows.append(f'<tr class="{"warn" if v.clock_fell else ""}"><td class="s">{e(v.name)}</td>'
                    f"<td>{c.sm_clock_mhz_before:.0f}</td><td>{c.sm_clock_mhz_after:.0f}</td>"
                    f"<td>{e(format_value(c.temperature_c_before, '.0f'))}</td>"
                    f"<td>{e(format_value(c.temperature_c_after, '.0f'))}</td>"
                    f'<td class="s{" bad" if v.clock_fell else ""}">{"FELL" if v.clock_fell else "steady"}</td>'
                    f'<td class="s">{e(", ".join(c.throttle_reasons) or "-")}</td></tr>')
    if not rows:
        return ""
    head = "".join(f"<th>{h}</th>" for h in ("variant", "SM clock before (MHz)", "after (MHz)", "temp before (C)",
                                             "after (C)", "clock", "NVML clock-event reasons"))
    return (f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            '<p class="muted">Read through NVML right before and right after each variant\'s timed repetitions. '
            "FELL: the clock after is below 95% of the clock before, or below 90% of the maximum SM clock.</p>")


def page(run: RunResult, raw: dict, run_table: Table, *, profile: ProfileResults | None = None,
         svg: str | None = None, roofline_note: str = "", source: str = "", explain: Table | None = None,
         explain_note: str = "") -> str:
    """The whole page. `raw` is the results file as read (for records newer than this renderer's types:
    a top-level or per-variant `build`, and per-variant `sass`, rendered generically when present)."""
    d = run.device
    title = f"gemmprof: {run.shape.label} on {d.get('name', '?')}"
    header = [("device", d.get("name")), ("compute capability", d.get("compute_capability")),
              ("SMs", d.get("sm_count")), ("driver", d.get("smi_driver") or d.get("driver_version")),
              ("CUDA runtime", d.get("cuda_runtime_version")), ("CuPy", d.get("cupy_version")),
              ("compiler", _compiler(raw)), ("GPU spec (peaks)", run.gpu_spec),
              ("shape", run.shape.label), ("alpha / beta", f"{run.alpha:g} / {run.beta:g}"), ("seed", run.seed),
              ("created", run.created), ("command", run.command), ("gemmprof", run.gemmprof_version),
              ("timing", run.timing_method.get("method"))]
    clocks = [("max SM clock (MHz)", d.get("max_sm_clock_mhz")),
              ("SM clock at start (MHz, nvidia-smi)", d.get("smi_sm_clock_mhz_at_start")),
              ("memory clock at start (MHz)", d.get("smi_mem_clock_mhz_at_start")),
              ("temperature at start (C)", d.get("smi_temperature_c_at_start")),
              ("power limit (W)", d.get("smi_power_limit_w")), ("per-variant clocks", d.get("clocks_source"))]
    # the results first, the clocks they were measured at right after them
    parts = [f"<h1>{e(title)}</h1>", f'<p class="muted">{e(source)}</p>' if source else "",
             "<h2>Run</h2>", kv_html(header),
             "<h2>Results</h2>", table_html(run_table, lambda r: "warn" if r.get("stable") is False else ""),
             "<h2>Clocks</h2>", kv_html(clocks), _clock_rows(run)]
    parts.append('<h2>Roofline</h2><div class="roofline">' + (svg or "") + "</div>")
    if roofline_note:
        parts.append(f'<p class="muted">{e(roofline_note)}</p>')
    if profile is not None:
        parts.append(f"<h2>Nsight Compute findings per rung ({e(profile.gpu or profile.gpu_spec or '?')})</h2>")
        parts.append(_launch_cards(profile.launches))
    if explain is not None or explain_note:
        parts.append("<h2>What limits each rung</h2>" + (table_html(explain) if explain is not None else ""))
        if explain_note:
            parts.append(f'<p class="muted">{e(explain_note)}</p>')
    build_and_sass = build_sass_html(raw)
    if build_and_sass:
        parts += ["<h2>Build and SASS</h2>", build_and_sass]
    body = "\n".join(p for p in parts if p)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
            f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


def _compiler(raw: dict):
    build = raw.get("build")
    if isinstance(build, dict):
        return build.get("compiler") or build.get("nvcc") or build.get("nvrtc")
    return raw.get("compiler")


# SASS instruction classes in reading order (what `gemmprof build` shows); classes a newer record adds follow
_SASS_ORDER = ("FFMA", "HMMA", "HGMMA", "QGMMA", "LDS", "LDS.64", "LDS.128", "LDSM", "LDG", "LDG.64", "LDG.128", "LDGSTS",
               "STS", "STG", "BAR", "LDL", "STL", "total", "loop_instructions", "loop_FFMA", "loop_HMMA",
               "loop_HGMMA", "loop_mma_flops")


def build_sass_html(raw: dict) -> str:
    """One variant x instruction-class table of the SASS mix (columns no variant uses left out, and named), one
    table of per-variant build records, and the run's own build record: for records this renderer's types do not
    hold, read from the results file as it is."""
    out = []
    if isinstance(raw.get("build"), dict):
        out.append(f"<h3>run: build</h3>{value_html(raw['build'])}")
    variants = [v for v in raw.get("variants") or [] if isinstance(v, dict)]
    sass = [(str(v.get("name", "?")), v["sass"]) for v in variants if isinstance(v.get("sass"), dict) and v["sass"]]
    if sass:
        keys = [k for k in _SASS_ORDER if any(k in m for _, m in sass)]
        keys += sorted({k for _, m in sass for k in m} - set(keys))
        shown = [k for k in keys if any(m.get(k) not in (None, 0) for _, m in sass)]
        head = "".join(f"<th>{e(k)}</th>" for k in ["variant", *shown])
        rows = "".join(f'<tr><td class="s">{e(name)}</td>'
                       + "".join(f'<td class="n">{e(format_value(m.get(k)))}</td>' for k in shown) + "</tr>"
                       for name, m in sass)
        unused = [k for k in keys if k not in shown]
        out.append('<h3 id="sass">SASS instruction mix (static counts; loop_*: the innermost loop holding the '
                   f'math)</h3><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
                   + (f'<p class="muted">No variant has {e(", ".join(unused))}.</p>' if unused else ""))
    builds = [(str(v.get("name", "?")), v["build"]) for v in variants if isinstance(v.get("build"), dict)
              and v["build"]]
    if builds:
        keys = list(dict.fromkeys(k for _, b in builds for k in b if k != "sass"))
        head = "".join(f"<th>{e(k)}</th>" for k in ["variant", *keys])
        rows = "".join(f'<tr><td class="s">{e(name)}</td>'
                       + "".join(f'<td class="s">{e(_cell(b.get(k)))}</td>' for k in keys) + "</tr>"
                       for name, b in builds)
        out.append(f'<h3 id="build">Builds</h3><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>')
    return "\n".join(out)


def _cell(value) -> str:
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return format_value(value)
