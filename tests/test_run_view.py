"""The run table a terminal shows: fits 120 characters with no wrapped row, long notes as footnotes, every field
still in JSON/CSV, and no model figure for a kernel that has no model."""

import dataclasses
import json
from pathlib import Path

import pytest

from gemmprof.catalog.binding import bind
from gemmprof.render.run_tables import DEFAULT_COLUMNS, run_table, terminal_view
from gemmprof.render.table import render_text, to_csv
from gemmprof.results.run import load_run

ROOT = Path(__file__).resolve().parents[1]
LADDER = ROOT / "tests/fixtures/explain/run_ladder_4096.json"  # a real H100 run: cuBLAS rows, 20 rungs
ODD = ROOT / "tests/fixtures/records/2026-11-23_h100_ladder/odd_4095x4097x1023.json"  # rejected rungs with ~450-char notes

COMPILE_LOG = ("my_extremely_descriptive_kernel_name_v2.cu(14): error: identifier \"acc2\" is undefined\n"
               "1 error detected in the compilation of \"/tmp/x/my_extremely_descriptive_kernel_name_v2.cu\".")


def realistic_run():
    """Every rung of a real run, its cuBLAS rows, the odd shape's rejected rungs, and users' kernels with long
    names that failed verification or did not compile."""
    run = load_run(LADDER)
    odd = load_run(ODD)
    rejected = [dataclasses.replace(v, id=v.id + "x") for v in odd.variants if v.status == "rejected"]
    naive = next(v for v in run.variants if v.name == "naive")
    users = [
        dataclasses.replace(naive, id="u1_experiment_tiles", kind="user",
                            name="my_extremely_descriptive_kernel_name_v2_with_tiles",
                            status="error", message=COMPILE_LOG),
        dataclasses.replace(naive, id="u2", kind="user", name="another_users_kernel_that_writes_the_wrong_rows",
                            status="FAIL", message="rel error 3.1e-01 > 1e-04; 4194304 elements never written "
                            "(first at [0, 1]); C read although beta = 0: 16777216 elements changed by the "
                            "sentinel (first at [0, 0])"),
        dataclasses.replace(naive, id="u3", kind="user", name="short_user_kernel", message="C read although beta=0"),
    ]
    run.variants.extend(rejected + users)
    return run


def test_default_table_fits_120_columns_without_a_wrapped_row():
    run = realistic_run()
    text = render_text(terminal_view(run_table(run), width=120), width=120)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 120
    header = [line for line in lines if line.startswith("┃")]
    body = [line for line in lines if line.startswith("│")]
    assert len(header) == 1, header  # no header cell wrapped either
    assert len(body) == len(run.variants), "a row wrapped onto a second line"
    assert len([line for line in lines if line[:1] in "┏┡└"]) == 3  # top, under the header, bottom
    for v in run.variants:  # every variant's row is there, by its id (a long one cut)
        assert any(line.startswith(f"│ {v.id[:7]}") for line in body), v.id


def test_long_notes_become_numbered_footnotes_with_the_whole_text():
    run = realistic_run()
    view = terminal_view(run_table(run), width=120)
    text = render_text(view, width=120)
    fail_note = next(v.message for v in run.variants if v.status == "FAIL")
    row = next(r for r in view.rows if r["id"] == "u2")
    mark = row["message"].split()[0]
    assert mark.startswith("[") and mark.endswith("]")
    footnote = next(n for n in view.notes if n.startswith(mark + " "))
    assert footnote == f"{mark} another_users_kernel_that_writes_the_wrong_rows: {fail_note}"
    assert "sentinel (first at [0, 0])" in " ".join(text.split())
    short = next(r for r in view.rows if r["id"] == "u3")
    assert short["message"] == "C read although beta=0"  # short notes stay in their cell


def test_json_and_csv_keep_every_field():
    run = realistic_run()
    full = run_table(run)
    view = terminal_view(full, width=120)
    assert [c.key for c in view.columns] == list(DEFAULT_COLUMNS)
    header = to_csv(full).splitlines()[0]
    for col in ("min (ms)", "% peak", "AI model (FLOP/B)", "regs", "occ (%)", "rel err"):
        assert col in header
    long_name = "my_extremely_descriptive_kernel_name_v2_with_tiles"
    assert long_name in to_csv(full)
    assert any(r["name"].startswith(long_name[:20]) and r["name"].endswith("…") for r in view.rows)


def test_wide_and_columns_choose_what_is_shown():
    full = run_table(load_run(LADDER))
    assert [c.key for c in terminal_view(full, wide=True).columns] == [c.key for c in full.columns]
    picked = terminal_view(full, columns=("rung", "name", "regs", "occupancy_pct", "AI MODEL"))
    assert [c.key for c in picked.columns] == ["id", "name", "registers", "occupancy_pct", "ai_model"]
    assert "model (AI model" in picked.notes[0] and "compiler (regs" in picked.notes[0]


def test_cli_view_options(tmp_path):
    from click.testing import CliRunner
    from clitools import invoke

    cli = CliRunner()
    wide = invoke(cli, ["show", str(LADDER), "--wide"])
    narrow = invoke(cli, ["show", str(LADDER)])
    assert wide.exit_code == narrow.exit_code == 0
    assert "regs" in wide.output and "regs" not in narrow.output.split("Where")[0]
    bad = invoke(cli, ["show", str(LADDER), "--columns", "rung,nonsense"])
    assert bad.exit_code != 0 and "--columns: no column 'nonsense'" in bad.output
    assert "Traceback" not in bad.output
    out = tmp_path / "t.csv"
    assert invoke(cli, ["show", str(LADDER), "-o", str(out)]).exit_code == 0
    assert "AI model (FLOP/B)" in out.read_text()  # CSV keeps every column whatever the view


def test_legend_says_where_each_number_comes_from():
    notes = run_table(load_run(LADDER)).notes
    assert notes[0].startswith("Where the numbers come from: measured in this run")
    assert "model (AI model" in notes[0] and "'-' where the kernel has none" in notes[0]


MINIMAL_SPEC = """\
file: k.cu
entry: my_sgemm
grid: ["cdiv(N, 32)", "cdiv(M, 32)"]
block: [32, 32]
"""


def test_a_kernel_without_a_traffic_model_has_no_model_figure(tmp_path):
    from gemmprof.catalog import gpu_specs
    from gemmprof.catalog import spec as specmod
    from gemmprof.errors import SpecError
    from gemmprof.model.annotate import model_figures
    from gemmprof.model.roofline import model_intensity
    from gemmprof.model.traffic import GemmShape
    from gemmprof.results.run import VariantResult

    (tmp_path / "k.cu").write_text("extern \"C\" __global__ void my_sgemm() {}\n")
    (tmp_path / "k.yaml").write_text(MINIMAL_SPEC)
    mine = bind(specmod.load_spec(tmp_path / "k.yaml"))
    naive = bind(next(s for s in specmod.ladder() if s.name == "naive"))
    shape, gpu = GemmShape(4096, 4096, 4096), gpu_specs.get_gpu("h100")
    row = VariantResult(id="x", name="x", title="x", dtype="fp32")
    assert model_figures(row, shape, 0.0, gpu, mine).model_arithmetic_intensity is None
    assert model_figures(row, shape, 0.0, gpu, naive).model_arithmetic_intensity == pytest.approx(0.25, abs=0.1)
    with pytest.raises(SpecError, match="no traffic model"):
        model_intensity(mine.spec, shape)
    run = load_run(LADDER)
    v = dataclasses.replace(run.variants[3], id="u1", kind="user", name="mine",
                            model=model_figures(row, shape, 0.0, gpu, mine))
    run.variants.append(v)
    row = run_table(run).rows[-1]
    assert row["ai_model"] is None
    text = render_text(terminal_view(run_table(run), columns=("rung", "AI model")), width=120)
    assert json.dumps(text)  # renders
    assert any(line.startswith("│ u1 ") and line.rstrip(" │").endswith("-") for line in text.splitlines())


def test_a_run_without_variants_says_so_instead_of_an_empty_table_alone():
    """A run writes its results file before its first variant; one that died there leaves a file with none."""
    run = dataclasses.replace(load_run(LADDER), variants=[])
    text = render_text(terminal_view(run_table(run), width=120), width=120)
    assert "no variants in this results file" in text
    assert to_csv(run_table(run)).strip().count("\n") == 0  # scripts get the header alone
    full = load_run(LADDER)
    assert "no variants" not in render_text(terminal_view(run_table(full), width=120), width=120)
