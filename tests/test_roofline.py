"""gemmprof roofline: the figure checked through its objects (Agg, no pixels), the table against the plot, every
input kind (run results, run + profile results, a faked live run, --model-only) and the errors."""

import json
import math
import subprocess
import sys

import pytest
import yaml
from click.testing import CliRunner
from clitools import invoke
from conftest import FIXTURES
from matplotlib.text import Text

from gemmprof.catalog.gpu_specs import get_gpu
from gemmprof.catalog.paths import PROFILES_DIR
from gemmprof.catalog.spec import ladder
from gemmprof.commands import roofline as roofline_cmd  # noqa: F401
from gemmprof.measure import child as child_mod
from gemmprof.model.roofline import Point, Rung, build
from gemmprof.model.traffic import GemmShape
from gemmprof.render import roofline_plot
from gemmprof.results.run import load_run

RESULTS = FIXTURES / "results"
FIX = RESULTS / "h100_fix_4096.json"
FIRST = RESULTS / "h100_ladder_4096_first.json"
FP16 = RESULTS / "h100_fp16_8192.json"
NCU_RUN = FIXTURES / "ncu" / "h100_gemmprof_run_raw_4096.csv"
H100 = get_gpu("h100")
FP32_RUNGS = sum(s.dtype == "fp32" for s in ladder())


@pytest.fixture
def drawn(monkeypatch):
    """Every figure the command saves, kept for inspection."""
    figs = []
    real = roofline_plot.save

    def keep(fig, path, dpi=150):
        figs.append(fig)
        real(fig, path, dpi)

    monkeypatch.setattr(roofline_plot, "save", keep)
    return figs


@pytest.fixture(scope="session")
def profile_results(tmp_path_factory):
    """A real `gemmprof profile` results file, made from the H100 ncu capture of rungs 2-6, 10 and h3 at 4096."""
    path = tmp_path_factory.mktemp("ncu") / "profile.json"
    r = invoke(CliRunner(), ["profile", "--from", str(NCU_RUN), "--save", str(path), "--format", "json"])
    assert r.exit_code == 0, r.output
    return path


def plot(runner, drawn, tmp_path, *args, ext="png"):
    image = tmp_path / f"roofline.{ext}"
    r = invoke(runner, ["roofline", *map(str, args), "-o", str(image), "--format", "json"])
    assert r.exit_code == 0, r.output
    assert image.stat().st_size > 1000
    return drawn[-1], json.loads(r.stdout)


def by_gid(fig, prefix):
    return {a.get_gid(): a for a in fig.axes[0].get_children() if (a.get_gid() or "").startswith(prefix)}


def log_slope(line):
    (x0, y0), (x1, y1) = line.get_xydata()
    return (math.log10(y1) - math.log10(y0)) / (math.log10(x1) - math.log10(x0))


def texts(fig, prefix):
    return [a.get_text() for a in by_gid(fig, prefix).values()]


def test_run_results_roofs_points_labels_and_title(runner, drawn, tmp_path):
    fig, table = plot(runner, drawn, tmp_path, FIX)
    roofs = by_gid(fig, "roof:")
    fp32, dram = roofs["roof:compute:fp32:datasheet"], roofs["roof:memory:dram:datasheet"]
    assert log_slope(fp32) == 0 and list(fp32.get_ydata()) == pytest.approx([66.9e12] * 2)
    assert log_slope(dram) == pytest.approx(1.0)
    assert all(y / x == pytest.approx(3350e9) for x, y in dram.get_xydata())
    assert roofs["roof:compute:tf32_tensor:datasheet"].get_ydata()[0] == pytest.approx(494.7e12)  # cuBLAS TF32 is plotted
    assert not any("fp16" in g or "sparse" in g for g in roofs)
    measured = roofs["roof:compute:fp32:measured"]
    assert measured.get_linestyle() == "--" and measured.get_ydata()[0] == pytest.approx(51.1e12)
    assert roofs["roof:memory:dram:measured"].get_xydata()[0][1] / roofs["roof:memory:dram:measured"].get_xydata()[0][
        0] == pytest.approx(2948e9)
    ridges = by_gid(fig, "ridge:")
    assert ridges["ridge:fp32:datasheet:dram"].get_xdata()[0] == pytest.approx(66.9e12 / 3350e9)

    run = load_run(FIX)
    points = by_gid(fig, "point:")
    assert len(points) == len(run.variants) == 8
    for v in run.variants:
        (x, y), = points[f"point:{v.name}:{'min' if v.kind == 'baseline' else 'model'}"].get_xydata()
        assert x == pytest.approx(v.model.model_arithmetic_intensity or v.model.min_arithmetic_intensity)
        assert y == pytest.approx(v.achieved_flops)
    labelled = {s for t in texts(fig, "label:") for s in t.split(", ")}
    assert labelled == {"1", "1b", "3b", "3c", "5b", "12", "cuBLAS sgemm", "cuBLAS tf32"}
    roof_texts = texts(fig, "roof-label:")
    assert "fp32 SIMT 66.9 TFLOP/s" in roof_texts and "DRAM 3.35 TB/s" in roof_texts
    assert any(t.startswith("measured 51.1") for t in roof_texts)
    title = fig.axes[0].get_title(loc="left")
    assert "H100 SXM" in title and "fp32" in title and "4096x4096x4096" in title

    # the table holds the same points
    rows = {r["name"]: r for r in table["rows"]}
    assert set(rows) == {v.name for v in run.variants}
    for gid, artist in points.items():
        (x, y), = artist.get_xydata()
        row = rows[gid.split(":")[1]]
        assert (row["ai"], row["tflops"] * 1e12) == pytest.approx((x, y))
    sgemm = rows["cublas_sgemm"]
    assert sgemm["basis"] == "min traffic" and sgemm["bound"] == "compute"
    assert sgemm["roof_tflops"] == pytest.approx(66.9) and sgemm["pct_roof"] == pytest.approx(100 * 51.656 / 66.9, 1e-3)
    assert sgemm["headroom_x"] == pytest.approx(66.9 / 51.656, 1e-3)
    naive = rows["naive"]
    assert naive["bound"] == "memory" and naive["roof_tflops"] == pytest.approx(0.25 * 3.35, 1e-3)
    assert any("1b" in n and "above the roof" in n for n in table["notes"])
    assert table["estimate"] is False and table["gpu_spec"] == "h100_sxm"


def test_the_roof_labels_lie_along_their_lines_and_no_labels_overlap(runner, drawn, tmp_path):
    fig, _ = plot(runner, drawn, tmp_path, FIRST, FIX)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    line = by_gid(fig, "roof:")["roof:memory:dram:datasheet"]
    (x0, y0), (x1, y1) = ax.transData.transform(line.get_xydata())
    label = by_gid(fig, "roof-label:")["roof-label:dram:datasheet"]
    assert label.get_rotation() == pytest.approx(math.degrees(math.atan2(y1 - y0, x1 - x0)), abs=0.5)
    flat = [a for a in by_gid(fig, "label:").values()] + [a for a in by_gid(fig, "roof-label:").values()
                                                          if a.get_rotation() == 0]
    boxes = [Text.get_window_extent(a, renderer) for a in flat]  # the text alone, not its leader line
    for i, a in enumerate(boxes):
        assert ax.bbox.contains(a.x0, a.y0) and ax.bbox.contains(a.x1, a.y1), flat[i].get_text()
        for j in range(i):
            assert not a.overlaps(boxes[j]), (flat[i].get_text(), flat[j].get_text())
    major = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert {"1", "10", "100"} <= set(major)
    assert {"1", "10", "100"} <= {t.get_text() for t in ax.get_yticklabels()}


def test_failed_rows_are_listed_not_drawn_and_merged_files_prefer_verified_rows(runner, drawn, tmp_path):
    fig, table = plot(runner, drawn, tmp_path, FIRST)
    points = by_gid(fig, "point:")
    assert "point:naive:model" not in points and "point:warptiling:model" in points
    note = next(n for n in table["notes"] if n.startswith("not plotted"))
    assert "1 naive (error)" in note and "5b blocktiling_2d_float4_seed002 (error)" in note
    fig, table = plot(runner, drawn, tmp_path, FIRST, FIX)
    assert "point:naive:model" in by_gid(fig, "point:")
    assert not any(n.startswith("not plotted") for n in table["notes"])
    assert len(table["rows"]) == 16 + 2  # every fp32 rung the fixtures hold (16 then) and cuBLAS SGEMM/TF32


def test_run_and_profile_results_join_each_rungs_points(runner, drawn, tmp_path, profile_results):
    fig, table = plot(runner, drawn, tmp_path, FIRST, "--profile-results", profile_results, "--dtype", "fp32")
    doc = json.loads(profile_results.read_text())
    launches = {launch["variant"]: launch for launch in doc["launches"]}
    points, joins = by_gid(fig, "point:"), by_gid(fig, "join:")
    flops = 2 * 4096**3
    for name in ("gmem_coalescing", "smem_caching", "blocktiling_1d", "blocktiling_2d", "vectorized", "warptiling"):
        launch = launches[name]
        (xd, yd), = points[f"point:{name}:dram"].get_xydata()
        (xl, _), = points[f"point:{name}:l2"].get_xydata()
        assert xd == pytest.approx(flops / launch["dram_bytes"]) and xl == pytest.approx(flops / launch["l2_bytes"])
        assert yd == pytest.approx(launch["achieved_flops_per_s"])
        assert len(joins[f"join:{name}"].get_xydata()) == 3  # model, L2 and DRAM points of one rung, joined
    rows = {r["name"]: r for r in table["rows"]}
    assert rows["warptiling"]["ai_dram"] == pytest.approx(flops / launches["warptiling"]["dram_bytes"])
    assert rows["double_buffering"]["ai_dram"] is None  # not in the capture
    assert "point:h3_mma_ldmatrix_swizzle:dram" not in points  # --dtype fp32


def test_profile_results_alone_and_a_rung_known_only_to_ncu(runner, drawn, tmp_path, profile_results):
    fig, table = plot(runner, drawn, tmp_path, "--profile-results", profile_results, ext="svg")
    assert (tmp_path / "roofline.svg").read_text().lstrip().startswith("<?xml")
    points = by_gid(fig, "point:")
    # h3 has no run row: its model point sits at ncu's time; tensor FLOPs missing from the capture are noted
    (x, y), = points["point:h3_mma_ldmatrix_swizzle:model"].get_xydata()
    assert x == pytest.approx(81.92, 1e-3) and y > 4e14
    assert "roof:compute:fp16_tensor_fp32_acc:datasheet" in by_gid(fig, "roof:")
    assert any("h3_mma_ldmatrix_swizzle" in n and "2*M*N*K" in n for n in table["notes"])
    assert {r["id"] for r in table["rows"]} == {"2", "3", "4", "5", "6", "10", "h3"}


def test_fp16_results_get_the_fp16_tensor_roof(runner, drawn, tmp_path):
    fig, table = plot(runner, drawn, tmp_path, FP16, ext="pdf")
    assert (tmp_path / "roofline.pdf").read_bytes().startswith(b"%PDF")
    roofs = by_gid(fig, "roof:")
    assert roofs["roof:compute:fp16_tensor_fp32_acc:datasheet"].get_ydata()[0] == pytest.approx(989.4e12)
    assert "roof:compute:tf32_tensor:datasheet" not in roofs
    hgemm = next(r for r in table["rows"] if r["name"] == "cublas_hgemm")
    assert hgemm["ai"] == pytest.approx(2048) and hgemm["roof_tflops"] == pytest.approx(989.4)


def test_model_only_ladder(runner, drawn, tmp_path):
    fig, table = plot(runner, drawn, tmp_path, "--model-only", "--gpu", "h100", "--size", "4096")
    points = by_gid(fig, "point:")
    assert len(points) == len(table["rows"]) == FP32_RUNGS  # the fp32 ladder
    for artist in points.values():
        (x, y), = artist.get_xydata()
        assert y == pytest.approx(min(66.9e12, x * 3350e9))
        assert artist.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0))  # hollow: an estimate
    assert "model estimate" in fig.axes[0].get_title(loc="left")
    legend_texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert any(t.startswith("model estimate") for t in legend_texts)
    assert table["estimate"] is True and {"time_ms", "bound"} <= set(table["rows"][0])


def test_model_only_selection_rejections_and_both_dtypes(runner, drawn, tmp_path):
    _, table = plot(runner, drawn, tmp_path, "--model-only", "-m", "4095", "-n", "4096", "-k", "4096", "1-3", "h3")
    assert [r["id"] for r in table["rows"]] == ["1", "1b", "2", "3", "3b", "3c"]
    assert any("h3 mma_ldmatrix_swizzle (rejected" in n for n in table["notes"])
    fig, table = plot(runner, drawn, tmp_path, "--model-only", "--size", "4096", "--dtype", "all")
    assert len(table["rows"]) == len(ladder())
    assert {"roof:compute:fp32:datasheet", "roof:compute:fp16_tensor_fp32_acc:datasheet"} <= set(by_gid(fig, "roof:"))


def test_live_runs_gemmprof_run_in_a_child_process(runner, drawn, tmp_path, monkeypatch):
    calls = []

    def fake_spawn(cmd):
        calls.append(cmd)
        out = cmd[cmd.index("-o") + 1]
        with open(out, "w") as fh:
            fh.write(FIX.read_text())
        return subprocess.CompletedProcess(cmd, 1, "table", None)  # rc 1: a row failed; results still saved

    monkeypatch.setattr(child_mod, "spawn", fake_spawn)
    fig, table = plot(runner, drawn, tmp_path, "1", "1b", "3b", "--size", "4096", "--gpu", "h100")
    cmd = calls[0]
    assert cmd[:4] == [sys.executable, "-m", "gemmprof", "run"] and cmd[4:7] == ["1", "1b", "3b"]
    assert cmd[cmd.index("-k") + 1] == "4096" and cmd[cmd.index("--gpu") + 1] == "h100"
    assert len(by_gid(fig, "point:")) == len(table["rows"]) == 8

    monkeypatch.setattr(child_mod, "spawn", lambda cmd: subprocess.CompletedProcess(cmd, 3, "", None))
    r = invoke(runner, ["roofline", "1", "--size", "64"])
    assert r.exit_code == 1 and "gemmprof run exited with status 3" in r.output


def test_table_to_a_file_and_no_image_without_o(runner, tmp_path):
    out = tmp_path / "t.csv"
    r = invoke(runner, ["roofline", str(FIX), "--table", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().splitlines()[0].startswith("rung,name,dtype")
    assert list(tmp_path.iterdir()) == [out]


def test_help_and_table_only_runs_do_not_import_matplotlib():
    code = ("import sys; from gemmprof.cli import main\n"
            "for argv in (['roofline', '--help'], ['roofline', '--model-only', '--size', '256', '--format', 'csv']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('MPL', 'matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "Examples:" in out and "MPL False" in out


def test_l2_and_shared_memory_roofs_when_the_profile_gives_them(runner, drawn, tmp_path):
    doc = yaml.safe_load((PROFILES_DIR / "h100_sxm.yaml").read_text())
    doc["l2"]["bandwidth_gbs"] = {"value": 10000, "source": "datasheet"}
    doc["smem_bandwidth_gbs"] = {"value": 30000, "source": "datasheet"}
    del doc["measured"]
    mine = tmp_path / "card.yaml"
    mine.write_text(yaml.safe_dump(doc))
    fig, _ = plot(runner, drawn, tmp_path, FIX, "--gpu-file", mine)
    roofs = by_gid(fig, "roof:")
    assert {g for g in roofs if g.startswith("roof:memory")} == {"roof:memory:dram:datasheet",
                                                                  "roof:memory:l2:datasheet",
                                                                  "roof:memory:smem:datasheet"}
    assert log_slope(roofs["roof:memory:l2:datasheet"]) == pytest.approx(1.0)
    assert not any(g.endswith(":measured") for g in roofs)
    assert "L2 10 TB/s" in texts(fig, "roof-label:")


def test_build_uses_only_the_roofs_the_rungs_need():
    shape = GemmShape(64, 64, 64)
    data = build(H100, shape, [Rung("h1", "h1_wmma_seed001", "fp16", "ladder", "fp16_tensor_fp32_acc",
                                    [Point("model", 10.0, 1e13)])], measured=False)
    assert {(c.kind, c.key) for c in data.ceilings} == {("compute", "fp32"), ("compute", "fp16_tensor_fp32_acc"),
                                                        ("memory", "dram"), ("memory", "l2")}  # L2: the spec's
    assert sorted(r.intensity for r in data.ridges) == pytest.approx(sorted(
        [66.9e12 / 3350e9, 989.4e12 / 3350e9, 66.9e12 / 10138e9, 989.4e12 / 10138e9]))
    rung = data.rungs[0]
    assert data.attainable(rung, 10.0) == pytest.approx(10 * 3350e9)
    assert data.attainable(rung, 1000.0) == pytest.approx(989.4e12)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("make,message", [
    (lambda t: str(t / "missing.json"), "missing.json: cannot read"),
    (lambda t: _write(t, "bad.json", "{not json"), "bad.json: line 1: not valid JSON"),
    (lambda t: _write(t, "list.json", "[1, 2]"), "list.json: malformed run results"),
    (lambda t: _write(t, "other.json", '{"kind": "gemmprof.profile"}'), "other.json: not a gemmprof run results"),
    (lambda t: _write(t, "cut.json", '{"kind": "gemmprof.run", "shape": {}}'), "cut.json: malformed run results"),
    (lambda t: _write(t, "rows.json", FIX.read_text().replace('"variants": [', '"variants": ["x", ')),
     "rows.json: malformed run results"),
])
def test_unreadable_or_malformed_results(runner, tmp_path, make, message):
    r = invoke(runner, ["roofline", make(tmp_path), "-o", str(tmp_path / "x.png")])
    assert r.exit_code == 2 and message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not (tmp_path / "x.png").exists()


def test_malformed_profile_results(runner, tmp_path):
    bad = _write(tmp_path, "p.json", json.dumps({"kind": "gemmprof.profile", "schema": 1, "launches": [
        {"variant": "naive", "shape": {"M": 4096, "N": 4096, "K": 4096}, "dram_bytes": "many"}]}))
    r = invoke(runner, ["roofline", str(FIX), "--profile-results", bad])
    assert r.exit_code == 2 and "p.json: launches[0].dram_bytes: expected a finite number" in r.output
    r = invoke(runner, ["roofline", str(FIX), "--profile-results", str(FIX)])
    assert r.exit_code == 2 and "not a gemmprof profile results file" in r.output


@pytest.mark.parametrize("args,message", [
    ([str(FIX), "-o", "plot.txt"], "cannot draw a .txt image (use .png, .svg or .pdf"),
    ([str(FIX), "--plot", "plot"], "cannot draw a extension-less image"),
    ([str(FIX), "--dtype", "fp16"], "nothing to plot: no verified, timed variant of fp16"),
    ([str(FIX), "--no-cublas", "--dtype", "tf32"], "nothing to plot"),
    ([], "nothing to plot: give RESULTS.json"),
    ([str(FIX), "5"], "give results files or variants, not both"),
    (["--model-only", str(FIX)], "--model-only draws from the model alone"),
    (["--model-only", "--dtype", "tf32"], "the ladder has no tf32 rungs"),
    (["--model-only", "nope", "--size", "64"], "unknown variant 'nope'"),
    (["--model-only", "10", "-m", "100", "-n", "128", "-k", "128"], "nothing to plot: every selected rung rejects"),
    ([str(FIX), str(FP16)], "differs from 4096x4096x4096"),
    ([str(FIX), "--gpu", "nope"], "unknown GPU 'nope'"),
])
def test_errors_are_one_line(runner, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    r = invoke(runner, ["roofline", *args])
    assert r.exit_code == 2, r.output
    assert message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert list(tmp_path.iterdir()) == []


def test_model_only_bf16_places_the_hopper_rungs_as_their_bf16_builds(runner, drawn, tmp_path):
    fig, table = plot(runner, drawn, tmp_path, "--model-only", "--gpu", "h100", "--size", "4096", "--dtype", "bf16")
    assert [(r["id"], r["name"], r["dtype"]) for r in table["rows"]] == [
        ("h4", "wgmma_tma_bf16", "bf16"), ("h5", "warp_specialized_bf16", "bf16"), ("h6", "persistent_bf16", "bf16"),
        ("h7", "cluster_multicast_bf16", "bf16"), ("h8", "hopper_split_k_bf16", "bf16"),
        ("h9", "pingpong_bf16", "bf16"), ("h10", "stream_k_tail_bf16", "bf16"),
        ("h11", "skinny_swap_ab_bf16", "bf16"), ("h12", "tma_store_epilogue_bf16", "bf16"),
        ("h13", "cluster_split_k_bf16", "bf16")]
    assert set(by_gid(fig, "roof:")) >= {"roof:compute:bf16_tensor_fp32_acc:datasheet"}
    assert "roof:compute:fp16_tensor_fp32_acc:datasheet" not in by_gid(fig, "roof:")


def test_a_bf16_profile_launch_finds_its_rung_and_model():
    from gemmprof.model.roofline import _rung_for_launch

    shape = GemmShape(4096, 4096, 4096)
    rung = _rung_for_launch("persistent_bf16", None, shape, get_gpu("h100"), 0.0, 6e14)
    assert (rung.id, rung.dtype, rung.kind, rung.peak_kind) == ("h6", "bf16", "ladder", "bf16_tensor_fp32_acc")
    fp16 = _rung_for_launch("persistent", None, shape, get_gpu("h100"), 0.0, 6e14)
    assert rung.points[0].intensity == pytest.approx(fp16.points[0].intensity) and fp16.dtype == "fp16"  # both 2-byte inputs


LADDER_2311 = FIXTURES / "explain" / "run_ladder_4096.json"
PROFILE_2211 = FIXTURES / "records" / "2026-11-22_h100_profile" / "profile_4096.json"


def _leaders(fig):
    """(point, label anchor) in display space of every point label drawn with a leader line."""
    ax = fig.axes[0]
    out = []
    for a in by_gid(fig, "label:").values():
        if a.arrow_patch is None:
            continue
        start = ax.transData.transform(a.xy)
        end = start + [v * fig.dpi / 72 for v in a.get_position()]
        out.append((a.get_text(), start, end))
    return out


def _cross(p1, p2, q1, q2) -> bool:
    def side(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    return side(p1, p2, q1) * side(p1, p2, q2) < 0 and side(q1, q2, p1) * side(q1, q2, p2) < 0


def test_a_crowd_of_rungs_gets_ordered_labels_whose_leaders_never_cross(runner, drawn, tmp_path):
    """The ladder at 4096 with ncu's points: rungs 5b-13 sit at intensity 31.5, one above another."""
    fig, _ = plot(runner, drawn, tmp_path, LADDER_2311, "--profile-results", PROFILE_2211)
    leaders = _leaders(fig)
    crowd = [(t, s, e) for t, s, e in leaders if abs(s[0] - fig.axes[0].transData.transform((31.5, 1))[0]) < 20]
    assert len(crowd) >= 3, [t for t, _, _ in leaders]
    by_point = [t for t, s, _ in sorted(crowd, key=lambda c: -c[1][1])]
    by_label = [t for t, _, e in sorted(crowd, key=lambda c: -c[2][1])]
    assert by_point == by_label  # the column keeps the markers' top-to-bottom order
    for i, (ti, si, ei) in enumerate(leaders):
        for tj, sj, ej in leaders[:i]:
            assert not _cross(si, ei, sj, ej), (ti, tj)
    labelled = {s for t in texts(fig, "label:") for s in t.split(", ")}
    assert {"5b", "6", "7", "8", "9", "10", "11", "12", "13"} <= labelled


def test_baselines_have_their_own_markers_and_the_legend_is_grouped(runner, drawn, tmp_path):
    fig, _ = plot(runner, drawn, tmp_path, LADDER_2311, "--dtype", "all")
    points = by_gid(fig, "point:")
    cublas = {g.split(":")[1]: a for g, a in points.items() if ":cublas_" in g}
    assert set(cublas) == {"cublas_sgemm", "cublas_tf32", "cublas_hgemm"}
    assert len({a.get_marker() for a in cublas.values()}) == 3
    assert len({tuple(a.get_markeredgecolor()) if not isinstance(a.get_markeredgecolor(), str)
                else a.get_markeredgecolor() for a in cublas.values()}) == 3
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend.index("fp32: naive and coalescing") < legend.index("1  naive") < legend.index(
        "fp16: WMMA and mma.sync") < legend.index("cuBLAS") < legend.index("cuBLAS sgemm")
    from matplotlib.colors import to_hex

    looks, families, family = {}, {}, None
    for text in fig.legends[0].get_texts():
        label = text.get_text()
        if text.get_fontweight() == "bold":
            family = label
        elif "  " in label:  # "ID  NAME": a rung of the current family
            a = points[f"point:{label.split()[1]}:model"]
            looks[label] = (to_hex(a.get_markeredgecolor()), a.get_marker())
            families.setdefault(family, []).append(label)
    assert len(looks) >= 20 and len(set(looks.values())) == len(looks)  # no two rungs look alike
    assert len({looks[rs[0]][0] for rs in families.values()}) == len(families) >= 6  # a colour per family
    for rs in families.values():  # which its rungs share, each with its own marker
        assert len({looks[r][0] for r in rs}) == 1 and len({looks[r][1] for r in rs}) == len(rs)


def test_a_run_that_held_a_lower_clock_gets_a_roof_at_that_clock_beside_the_datasheets(tmp_path):
    """Rows timed at 1500 MHz under the power cap: the fp16 tensor roof is drawn twice, the datasheet's 989.5
    TFLOP/s (at the 1830 MHz it assumes) and 811 TFLOP/s at 1500 MHz; the notes say which clock each assumes."""
    import dataclasses

    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.model import roofline as rl
    from gemmprof.results.clocks import ClockRecord
    from gemmprof.results.run import Measurement, ModelFigures, VariantResult
    from gemmprof.results.shape import GemmShape

    gpu, shape = get_gpu("h200"), GemmShape(8192, 8192, 8192)
    clocks = ClockRecord(1980, 1500, held_mhz=1500, held_min_mhz=1455, held_max_mhz=1605, samples=90)
    from gemmprof.results.clocks import EnergyRecord

    row = VariantResult(id="h12", name="h12", title="", dtype="fp16", timing=Measurement((1.6,) * 5), clocks=clocks,
                        model=ModelFigures(2 * 8192 ** 3, 100.0, None, "fp16_tensor_fp32_acc", 989.5e12, 1830),
                        energy=EnergyRecord(1200.0, 1000, 1.7, 700.0))
    held = rl.held_clocks([row, dataclasses.replace(row, clocks=dataclasses.replace(clocks, samples=0))])
    assert held == {"fp16_tensor_fp32_acc": 1500}  # rows without samples do not count
    rungs, _ = rl.rungs_from_variants([row], shape, gpu)
    data = rl.build(gpu, shape, rungs, held=held)
    roofs = {c.source: c for c in data.ceilings if c.kind == "compute" and c.key == "fp16_tensor_fp32_acc"}
    assert roofs["datasheet"].value == pytest.approx(989.5e12) and roofs["datasheet"].clock_mhz == 1830
    assert roofs["held"].value == pytest.approx(989.5e12 * 1500 / 1830) and "1500 MHz held" in roofs["held"].name
    assert any("at the SM clock each assumes" in n and "1830 MHz" in n for n in data.notes)
    from gemmprof.render.roofline_plot import render

    out = tmp_path / "r.svg"
    render(data, out)
    assert "roof:compute:fp16_tensor_fp32_acc:held" in out.read_text()
    from gemmprof.render.roofline_table import roofline_table

    table = roofline_table(data).rows[0]
    assert table["held_mhz"] == 1500 and table["tflop_per_joule"] == pytest.approx(2 * 8192 ** 3 / 1.2 / 1e12)


