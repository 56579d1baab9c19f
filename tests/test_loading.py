"""Everything gemmprof saves loads back: gzipped CSVs and JSON wherever a file is read (records keep `.csv.gz` and
`.json.gz`), a saved compare-nsys comparison through `show`, `compare-nsys --from` and `gemmprof.load`, and
`diff` names what changed besides the code's speed (compiler, dtype, a renamed rung matched by its id, the timing
regime)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from clitools import invoke

import gemmprof
from gemmprof.errors import InputError
from gemmprof.results.diff import diff_runs, mismatches
from gemmprof.results.nsys import Comparison
from gemmprof.results.run import load_run

FIX = Path(__file__).parent / "fixtures"
RUN = FIX / "explain" / "run_ladder_4096.json"
NCU = sorted((FIX / "ncu").glob("h100_gemmprof_*.csv")) + sorted((FIX / "records").glob("*/*.csv"))
NSYS_TEXT = [FIX / "nsys" / "a100_seed003_gpukernsum_4096.txt", FIX / "nsys" / "h100_gemmprof_run_4096_stats_stdout.txt"]


def _gz(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / (src.name + ".gz")
    out.write_bytes(gzip.compress(src.read_bytes()))
    return out


@pytest.mark.parametrize("csv", NCU, ids=lambda p: p.name)
def test_profile_from_reads_a_gzipped_ncu_csv_as_the_plain_one(runner, tmp_path, csv):
    plain = invoke(runner, ["profile", "--from", str(csv), "--format", "json"])
    packed = invoke(runner, ["profile", "--from", str(_gz(csv, tmp_path)), "--format", "json"])
    assert plain.exit_code == 0, plain.output
    assert packed.exit_code == 0, packed.output
    rows = [t["rows"] for t in json.loads(plain.stdout).get("tables", [json.loads(plain.stdout)])]
    assert rows and rows[0]
    assert [t["rows"] for t in json.loads(packed.stdout).get("tables", [json.loads(packed.stdout)])] == rows


def test_a_damaged_gzip_is_one_line(runner, tmp_path):
    bad = tmp_path / "ncu.csv.gz"
    bad.write_bytes(gzip.compress(b"x" * 100)[:20])
    r = invoke(runner, ["profile", "--from", str(bad)])
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1 and "gzip" in r.output


@pytest.mark.parametrize("stats", NSYS_TEXT, ids=lambda p: p.name)
def test_compare_nsys_reads_gzipped_stats(runner, tmp_path, stats):
    plain = json.loads(invoke(runner, ["compare-nsys", str(stats), "--size", "4096", "--format", "json"]).stdout)
    packed = json.loads(invoke(runner, ["compare-nsys", str(_gz(stats, tmp_path)), "--size", "4096",
                                        "--format", "json"]).stdout)
    assert [r["kernel"] for r in packed["rows"]] == [r["kernel"] for r in plain["rows"]] and plain["rows"]
    assert [r["avg_ns"] for r in packed["rows"]] == [r["avg_ns"] for r in plain["rows"]]


def test_a_saved_comparison_loads_back_everywhere(runner, tmp_path):
    saved = tmp_path / "kernels.json"
    sqlite = FIX / "nsys" / "h100_gemmprof_run_4096.sqlite"
    r = invoke(runner, ["compare-nsys", str(sqlite), "-o", str(saved)])
    assert r.exit_code == 0, r.output
    doc = json.loads(saved.read_text())
    cmp = gemmprof.load(saved)
    assert isinstance(cmp, Comparison) and len(cmp.rows) == len(doc["rows"]) > 3
    assert {r.variant for r in cmp.rows} >= {"cublas_sgemm", "warptiling"}
    assert json.loads(json.dumps(cmp.to_dict(), default=list))["rows"] == doc["rows"]  # the same document again
    packed = _gz(saved, tmp_path)
    table = invoke(runner, ["compare-nsys", "--from", str(saved)])
    assert table.exit_code == 0 and "warptiling" in table.output and "Launch configuration" in table.output
    for args in (["show", str(saved)], ["show", str(packed)], ["compare-nsys", "--from", str(packed)]):
        again = invoke(runner, args)
        assert again.exit_code == 0, again.output
        assert again.output == table.output
    as_json = json.loads(invoke(runner, ["show", str(saved), "--format", "json"]).stdout)
    assert as_json["rows"] == doc["rows"] and as_json["kind"] == "gemmprof.nsys-compare"
    # a saved comparison given where a report belongs says how to read it
    r = invoke(runner, ["compare-nsys", str(saved)])
    assert r.exit_code != 0 and f"--from {saved}" in r.output


def test_a_damaged_comparison_names_the_field(tmp_path):
    saved = tmp_path / "kernels.json"
    doc = {"kind": "gemmprof.nsys-compare", "rows": [{"kernel": "k", "instances": 2, "avg_ns": "fast"}]}
    saved.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"rows\[0\].avg_ns: expected a finite number"):
        gemmprof.load(saved)
    doc["rows"][0] = {"kernel": "k", "instances": 2, "colour": "red"}
    saved.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="unknown key 'colour'"):
        gemmprof.load(saved)


def test_a_sweep_summary_shows_again(runner):
    r = invoke(runner, ["show", str(FIX / "results" / "h100_sweep_fp32_summary.json")])
    assert r.exit_code == 0 and "geometric mean" in r.output


# --- diff: what changed besides the speed ---------------------------------------------------------------------

def _edited(tmp_path, name, edit) -> Path:
    doc = json.loads(RUN.read_text())
    edit(doc)
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


def _variant(doc, vid):
    return next(v for v in doc["variants"] if v["id"] == vid)


def test_diff_names_a_compiler_change(runner, tmp_path):
    def nvrtc(doc):
        v = _variant(doc, "13")
        v["compiler"], v["compiler_version"] = "nvrtc", "13.0"
        v["timing"]["samples_ms"] = [x * 1.067 for x in v["timing"]["samples_ms"]]

    old = _edited(tmp_path, "old.json", nvrtc)
    r = invoke(runner, ["diff", str(old), str(RUN), "--format", "json"])
    row = next(x for x in json.loads(r.stdout)["rows"] if x["id"] == "13")
    assert row["verdict"] == "faster" and row["changed"] == "compiler nvrtc 13.0 -> nvcc 13.0.88"
    text = invoke(runner, ["diff", str(old), str(RUN)]).output
    assert "compiler nvrtc 13.0 -> nvcc 13.0.88" in " ".join(text.split())
    unchanged = [x for x in json.loads(r.stdout)["rows"] if x["id"] != "13"]
    assert all(x["changed"] == "" for x in unchanged)


def test_diff_matches_a_renamed_rung_through_its_id(tmp_path):
    old = load_run(_edited(tmp_path, "old.json", lambda d: _variant(d, "h1").update(name="h1_wmma_seed001")))
    new = load_run(RUN)
    rows = {r.id: r for r in diff_runs(old, new)}
    h1 = rows["h1"]
    assert h1.key == "wmma_seed001" and h1.changed == "renamed h1_wmma_seed001 -> wmma_seed001"
    assert h1.verdict == "within noise" and h1.old_median_ms == h1.new_median_ms
    assert not any(r.verdict.startswith("only in") for r in rows.values())
    # ids shared by several variants (the cuBLAS rows) are never paired by id
    cublas = load_run(_edited(tmp_path, "c.json", lambda d: d["variants"][0].update(name="cublas_old")))
    verdicts = {r.key: r.verdict for r in diff_runs(cublas, new)}
    assert verdicts["cublas_old"] == "only in old" and verdicts["cublas_sgemm"] == "only in new"


def test_diff_refuses_another_regime_and_names_a_dtype_change(runner, tmp_path):
    burst = _edited(tmp_path, "burst.json", lambda d: d["timing_method"].update(regime="burst"))
    sustained = _edited(tmp_path, "sustained.json", lambda d: d["timing_method"].update(regime="sustained"))
    r = invoke(runner, ["diff", str(burst), str(sustained)])
    assert r.exit_code != 0 and "regime: burst vs sustained" in r.output
    assert invoke(runner, ["diff", str(burst), str(RUN)]).exit_code == 0  # a file from before regimes: no claim
    bf16 = _edited(tmp_path, "bf16.json", lambda d: _variant(d, "h3").update(dtype="bf16"))
    described = [m.describe() for m in mismatches(load_run(RUN), load_run(bf16))]
    assert described == ["dtype of mma_ldmatrix_swizzle: fp16 vs bf16"]
    forced = json.loads(invoke(runner, ["diff", str(RUN), str(bf16), "--force", "--format", "json"]).stdout)
    assert next(x for x in forced["rows"] if x["id"] == "h3")["changed"] == "dtype fp16 -> bf16"


def test_run_results_load_gzipped(tmp_path):
    packed = _gz(RUN, tmp_path)
    assert gemmprof.load(packed).to_dict() == gemmprof.load(RUN).to_dict()
    named_plain = tmp_path / "looks_plain.json"  # gzip bytes under a plain name read too
    shutil.copy(packed, named_plain)
    assert gemmprof.load(named_plain).shape == gemmprof.load(RUN).shape

