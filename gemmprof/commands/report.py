"""gemmprof report: one self-contained HTML page from a saved run (and optionally its ncu profile)."""

from __future__ import annotations

import click

from gemmprof.commands._options import refuse_overwrite
from gemmprof.errors import GemmprofError, InputError


@click.command("report")
@click.argument("results", type=click.Path(dir_okay=False))
@click.option("--profile-results", "profile_results", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.json", help="ncu findings from `gemmprof profile --save FILE.json`: stalls, conflicts, "
                                        "occupancy per rung, and measured intensities on the roofline.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True, metavar="FILE.html",
              help="Where to write the page.")
def command(results, profile_results, output):
    """Write one HTML page to keep or send: the run's header (device, driver, compiler, clocks), the results
    table, the roofline as inline SVG, the ncu findings per rung and the SASS mix when the results have them.

    The page needs no network and no other file: CSS inline, the roofline drawn into the page, no scripts.
    No GPU needed.

    \b
    Examples:
      gemmprof report results.json -o report.html
      gemmprof report results.json --profile-results profile.json -o report.html
    """
    refuse_overwrite({"-o": output}, [results, profile_results])
    from gemmprof.model.roofline_sources import ProfileInput, RooflineChoice, from_results
    from gemmprof.render.report_html import page, roofline_svg
    from gemmprof.render.run_tables import run_table
    from gemmprof.results.files import load_json, write_atomic
    from gemmprof.results.profile import ProfileResults
    from gemmprof.results.run import RunResult

    if not output.lower().endswith((".html", ".htm")):
        raise InputError(f"-o {output}: the report is HTML; name the file .html")
    raw = load_json(results)
    run = RunResult.from_dict(raw, str(results))
    profile = ProfileResults.load(profile_results) if profile_results else None
    svg, note = None, ""
    try:
        data = from_results([(str(results), run)], ProfileInput(profile, profile_results) if profile else None,
                            RooflineChoice(), _gpu_spec)
        svg = roofline_svg(data)
    except GemmprofError as exc:  # e.g. nothing verified to plot, or an unknown GPU spec: the page still helps
        note = f"roofline not drawn: {exc}"
    explain, explain_note = _explain_section(run, profile)
    text = page(run, raw, run_table(run), profile=profile, svg=svg, roofline_note=note,
                source=f"from {results}" + (f" and {profile_results}" if profile_results else ""),
                explain=explain, explain_note=explain_note)
    write_atomic(output, text)
    click.echo(f"report written to {output}", err=True)


def _explain_section(run, profile):
    """`gemmprof explain`'s top limiters of each rung, or why there are none; never stops the page."""
    from gemmprof.measure.explain_inputs import explain_run
    from gemmprof.render.explain_table import summary_table

    try:
        explanations = explain_run(run, profile, _gpu_spec(run.gpu_spec))
    except GemmprofError as exc:
        return None, f"explain: {exc}"
    if not explanations:
        return None, ""
    return summary_table(explanations), ("gemmprof explain RUNG --results RESULTS.json for every limiter; "
                                         "with --profile-results, latency is named by ncu's stalls")


def _gpu_spec(named):
    from gemmprof.catalog import gpu_specs

    if not named:
        raise InputError("the results name no GPU spec sheet, so there are no ceilings to draw")
    return gpu_specs.get_gpu(named)
