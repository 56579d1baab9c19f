"""The access model in the CLI (issue 17): `model` per rung, `list --explain`, `profile` beside ncu; the traffic
model's sector bytes; the typed prediction in the profile results file. CPU only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clitools import invoke

from gemmprof.model.traffic import DTYPES, GemmShape, Tiles, tiled_traffic
from gemmprof.render.profile_tables import tables
from gemmprof.results.access_check import AccessCheck, AccessComparison
from gemmprof.results.profile import LaunchFindings, ProfileResults, launch_from_dict, launch_to_dict

ROOT = Path(__file__).resolve().parents[1]
NCU_RUN = ROOT / "tests" / "fixtures" / "ncu" / "h100_gemmprof_run_raw_4096.csv"


def _json(result):
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_traffic_carries_sector_bytes_and_defaults_to_none():
    shape, tiles = GemmShape(64, 64, 64), Tiles()
    assert tiled_traffic(shape, DTYPES["fp32"], tiles).gmem_sector_bytes is None
    tr = tiled_traffic(shape, DTYPES["fp32"], tiles, gmem_sector_bytes=12345)
    assert tr.gmem_sector_bytes == 12345
    assert tr.gmem_bytes == tiled_traffic(shape, DTYPES["fp32"], tiles).gmem_bytes  # element traffic unchanged


def test_model_ladder_naive_and_coalesced_differ_in_sector_traffic(runner):
    doc = _json(invoke(runner, ["model", "--size", "1024", "--rung", "1", "--rung", "2", "--format", "json"]))
    traffic = {r["rung"]: r for r in doc["tables"][1]["rows"]}
    assert traffic["1"]["gmem_gb"] == traffic["2"]["gmem_gb"]  # the element model cannot tell them apart
    # per k a warp of rung 1 reads 32 sectors of A and 1 of B, rung 2 1 + 4; stores 32 and 4 sectors
    n = 1024
    assert traffic["1"]["gmem_sector_gb"] == pytest.approx((n * n * n // 32 * 33 + n * n // 32 * 32) * 32 / 1e9)
    assert traffic["2"]["gmem_sector_gb"] == pytest.approx((n * n * n // 32 * 5 + n * n // 32 * 4) * 32 / 1e9)
    accesses = {r["rung"]: r for r in doc["tables"][2]["rows"]}
    assert accesses["1"]["gld_sectors_per_request"] == pytest.approx(16.5)
    assert accesses["2"]["gst_efficiency"] == pytest.approx(100)


def test_model_shows_bank_conflict_degree_per_rung(runner):
    doc = _json(invoke(runner, ["model", "--size", "512", "--rung", "6", "--rung", "h3", "--format", "json"]))
    accesses = {r["rung"]: r for r in doc["tables"][2]["rows"]}
    assert accesses["6"]["sld_wavefronts_per_request"] == pytest.approx(5.0)
    assert accesses["6"]["sld_degree"] == pytest.approx(5 / 3)  # 2 conflicts over 3 ideal wavefronts
    assert accesses["h3"]["sld_wavefronts_per_request"] == 4 and accesses["h3"]["sld_degree"] == 1
    assert "L1 sectors (access model)" in invoke(runner, ["model", "--size", "256", "--rung", "3"]).output


def test_list_explain_kernel_8_says_where_the_seed_is_wrong(runner):
    r = invoke(runner, ["list", "--explain", "8"])
    assert r.exit_code == 0, r.output
    assert "4.00-way" in r.output and "16 banks" in r.output and "PAD = 0" in r.output
    assert "sectors and" in r.output and "% of sector bytes used" in r.output


def test_list_explain_h3_json_and_the_ldmatrix_note(runner):
    rows = _json(invoke(runner, ["list", "--explain", "h3", "--format", "json"]))["rows"]
    ldsm = [r for r in rows if "ldmatrix" in r["access"]]
    assert ldsm and all(r["wavefronts_per_request"] == 4 and r["conflicts_per_request"] == 0 for r in ldsm)
    text = " ".join(invoke(runner, ["list", "--explain", "h3", "--size", "1024"]).output.split())  # wrapped at 80
    assert "leave ldmatrix out" in text and "predicated off" in text


def test_list_explain_unknown_rung_is_one_line(runner):
    r = invoke(runner, ["list", "--explain", "no_such_rung"])
    assert r.exit_code != 0 and "Traceback" not in r.output


def test_profile_from_csv_puts_the_model_beside_ncu(runner, tmp_path):
    path = tmp_path / "p.json"
    r = invoke(runner, ["profile", "--from", str(NCU_RUN), "--save", str(path)])
    assert r.exit_code == 0, r.output
    assert "bank conflicts and global sectors: the access model" in r.output
    loaded = ProfileResults.load(path)
    by = {f.variant: f for f in loaded.launches}
    assert by["warptiling"].accesses.check == "ok"
    c = by["warptiling"].accesses.get("smem_st_conflicts_per_request")
    assert (c.predicted, round(c.ncu, 2)) == (pytest.approx(2.4), 2.51)
    assert by["smem_caching"].accesses.check == "explained"
    assert by["h3_mma_ldmatrix_swizzle"].accesses.get("gmem_sectors").ncu == 52428800


def test_a_disagreement_is_said_not_hidden():
    f = LaunchFindings(id=0, variant="x", kernel_name="k", nvtx_range="gemmprof x 8x8x8", dtype="fp32",
                       shape=GemmShape(8, 8, 8), grid=(1, 1, 1), block=(32, 1, 1))
    f.accesses = AccessCheck([AccessComparison("smem_ld_conflicts_per_request", 0.0, 3.0, "DIFFERS")])
    again = launch_from_dict(json.loads(json.dumps(launch_to_dict(f))))
    assert again.accesses == f.accesses and again.accesses.check == "DIFFERS"
    out = tables(ProfileResults([again]))
    access = next(t for t in out if "access model" in t.title)
    assert access.rows[0]["access_check"] == "DIFFERS"
    assert any("DIFFER on smem_ld_conflicts_per_request" in n for n in out[-1].notes)
