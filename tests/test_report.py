"""gemmprof report: one self-contained HTML page, checked as text and in a real headless browser (Chromium)."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from clitools import invoke

from gemmprof.render.report_html import page
from gemmprof.render.run_tables import run_table
from gemmprof.results.run import RunResult

ROOT = Path(__file__).resolve().parent.parent
LADDER = ROOT / "tests/fixtures/records/2026-11-22_h100_run/ladder_4096.json"
PROFILE = ROOT / "tests/fixtures/records/2026-11-22_h100_profile/profile_4096.json"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from click.testing import CliRunner

    out = tmp_path_factory.mktemp("report") / "report.html"
    r = invoke(CliRunner(), ["report", str(LADDER), "--profile-results", str(PROFILE), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_report_is_self_contained(report):
    text = report.read_text()
    assert "<svg" in text and "<?xml" not in text
    # nothing to fetch: no scripts, stylesheets, images or fonts (url(#id) is the SVG clipping its own paths)
    assert not re.search(r"<script|<link|<img|<iframe|@import|url\((?!#)|src=", text, re.I)
    assert not re.search(r'(href|src)="(https?:)?//', text)


def test_report_has_header_table_clocks_and_ncu_findings(report):
    text = report.read_text()
    for expected in ("NVIDIA H100 80GB HBM3", "580.159.04", "max SM clock (MHz)", "1980",
                     "h3_mma_ldmatrix_swizzle", "447.42", "Nsight Compute findings per rung", "long_scoreboard"):
        assert expected in text, expected


def test_report_escapes_text_and_renders_build_and_sass_when_present():
    doc = json.loads(LADDER.read_text())
    doc["command"] = "gemmprof run <script>alert(1)</script>"
    doc["build"] = {"compiler": "nvcc 13.0 <x>", "flags": ["-O3"]}
    doc["variants"][3]["sass"] = {"FFMA": 1024, "LDS": 512, "<op>": 3}
    run = RunResult.from_dict(doc)
    html = page(run, doc, run_table(run))
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "nvcc 13.0 &lt;x&gt;" in html and "&lt;op&gt;" in html
    assert html.index("FFMA") < html.index("LDS")  # the mix, largest first
    assert "Build and SASS" not in page(RunResult.from_dict(json.loads(LADDER.read_text())),
                                        json.loads(LADDER.read_text()), run_table(run))


def test_report_refuses_other_extensions(runner, tmp_path):
    r = invoke(runner, ["report", str(LADDER), "-o", str(tmp_path / "r.png")])
    assert r.exit_code == 2 and ".html" in r.output


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install -y chromium; .ci/run "
                                                "installs it)")
def test_report_in_a_headless_browser(report, tmp_path):
    base = [_chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--window-size=1280,2000",
            f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0"]
    url = report.resolve().as_uri()
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "CONSOLE" not in dom.stderr and "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    html = dom.stdout
    rows = re.findall(r"<tr[^>]*>\s*<td[^>]*>(?:cuBLAS|h?\d+[a-z]?)</td>", html)
    assert len(rows) == len(json.loads(LADDER.read_text())["variants"])
    assert re.search(r"<svg[^>]*>", html) and "<path" in html  # the roofline, drawn in the page
    shot = tmp_path / "shot.png"
    r = subprocess.run(base + [f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    import matplotlib.image
    import numpy as np

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (2000, 1280)
    colours = np.unique((pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 200, len(colours)  # text, table shading and the roofline's coloured points
    # the roofline's lines and markers: saturated pixels (the page's text and tables are grey and pale blue)
    rgb = pixels[..., :3]
    saturated = (rgb.max(axis=2) - rgb.min(axis=2)) > 0.4
    assert saturated.sum() > 2000


NEW_LADDER = ROOT / "tests/fixtures/explain/run_ladder_4096.json"  # every variant carries its SASS mix


def _section(html: str, title: str) -> str:
    start = html.index(f"<h2>{title}</h2>")
    end = html.find("<h2>", start + 1)
    return html[start:] if end < 0 else html[start:end]


def test_build_and_sass_is_one_variant_by_instruction_class_table():
    doc = json.loads(NEW_LADDER.read_text())
    run = RunResult.from_dict(doc)
    sass = _section(page(run, doc, run_table(run)), "Build and SASS")
    assert sass.count("<table") == 1
    with_mix = [v for v in doc["variants"] if v.get("sass")]
    assert len(with_mix) > 15
    assert len(re.findall(r"<tr><td class=\"s\">", sass)) == len(with_mix)  # one row per variant
    head = re.findall(r"<th>(.*?)</th>", sass)
    assert head[:3] == ["variant", "FFMA", "HMMA"]  # the same column order in every row, not sorted per variant
    unused = [k for k in with_mix[0]["sass"] if all(not v["sass"].get(k) for v in with_mix)]
    assert unused and not set(unused) & set(head)  # classes no variant uses are named once, not as columns
    assert "No variant has " + ", ".join(unused) in sass.replace("&#x27;", "'")


def test_clocks_come_after_the_results():
    doc = json.loads(NEW_LADDER.read_text())
    run = RunResult.from_dict(doc)
    html = page(run, doc, run_table(run))
    assert html.index("<h2>Run</h2>") < html.index("<h2>Results</h2>") < html.index("<h2>Clocks</h2>")
    assert html.index("<h2>Clocks</h2>") < html.index("<h2>Roofline</h2>")


def test_ncu_text_said_of_several_launches_is_said_once():
    from gemmprof.results.profile import ProfileResults

    profile = ProfileResults.load(PROFILE)
    doc = json.loads(LADDER.read_text())
    run = RunResult.from_dict(doc)
    html = page(run, doc, run_table(run), profile=profile)
    repeated = "The optional metric smsp__pcsamp_sample_count could not be found."
    with_it = [f.variant for f in profile.launches if any(repeated in r.summary for r in f.rules)]
    assert len(with_it) > 5  # ncu says it of most launches
    assert html.count(repeated) == 1
    assert "Said of several launches" in html and ", ".join(with_it) in html
