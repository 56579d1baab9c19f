"""Kernel specs: the shipped ladder loads; selection, binding and shape constraints behave."""

from pathlib import Path

import pytest

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind, parse_param_overrides
from gemmprof.errors import SpecError
from gemmprof.model.traffic import GemmShape

SEED004_RUNGS = [str(i) for i in range(1, 13)]
SPEC_TEXT = """
id: "7x"
name: my_kernel
title: Mine
description: A tiled kernel of my own.
source: {document: me}
dtype: fp32
layout: {A: row, B: row, C: row}
file: my_kernel.cu
entry: my_kernel
template: [BM, BN]
params: {BM: 64, BN: 32}
derived: {THREADS: BM * BN / 16}
constraints:
  - {check: BM % 16 == 0, message: BM must be a multiple of 16}
shape_constraints:
  - {check: M % BM == 0, message: M must be a multiple of BM}
grid: [cdiv(N, BN), cdiv(M, BM), 1]
block: [THREADS]
smem_dynamic: BM * 4
traffic: {BM: BM, BN: BN, TM: 4, TN: 4, smem: true}
"""


@pytest.fixture
def my_spec(tmp_path):
    (tmp_path / "my_kernel.cu").write_text("// kernel\n")
    path = tmp_path / "my_kernel.yaml"
    path.write_text(SPEC_TEXT)
    return specmod.load_spec(path)


def test_ladder_has_every_seed004_rung_in_order():
    ids = [s.id for s in specmod.ladder()]
    for rung in SEED004_RUNGS:
        assert rung in ids
    fp32 = [s for s in specmod.ladder() if s.dtype == "fp32"]
    assert [s.rung_number for s in fp32] == sorted(s.rung_number for s in fp32)


def test_every_spec_binds_with_its_defaults_and_cites_a_document():
    for s in specmod.ladder():
        k = bind(s)
        assert k.threads_per_block <= 1024, s.name
        doc = s.source.get("document", "")
        # the seeds' rungs cite them; the Hopper rungs go beyond them and say so
        assert doc.startswith("seed") or (doc.startswith("beyond the seeds") and s.tma_args), s.name
        assert s.file.name.split("_")[0].lstrip("0") in (s.id, s.id.lstrip("h"), s.id + "b") or s.file.name.startswith(
            s.id.zfill(2)) or s.file.name.startswith(s.id), s.name


def test_selection_by_id_range_name_and_dtype():
    assert [s.id for s in specmod.select(["5"])] == ["5"]  # an id is exact
    assert {s.id for s in specmod.select(["5-5"])} == {"5", "5b"}  # a range takes the side variants too
    ids = [s.id for s in specmod.select(["1-3"])]
    assert ids[0] == "1" and "3b" in ids and "4" not in ids
    assert specmod.select(["warptiling"])[0].id == "10"
    assert all(s.dtype == "fp16" for s in specmod.select([], all_=True, dtype="fp16"))
    with pytest.raises(SpecError, match="unknown variant 'nope'"):
        specmod.select(["nope"])
    with pytest.raises(SpecError, match="no variants selected"):
        specmod.select([])


def test_user_spec_binds_and_launch_config(my_spec):
    k = bind(my_spec)
    assert k.name_expression == "my_kernel<64, 32>"
    grid, block, smem = k.launch_config(GemmShape(128, 100, 7))
    assert grid == (4, 2, 1) and block == (128, 1, 1) and smem == 256
    assert k.tiles().BM == 64 and k.tiles().TM == 4


def test_parameter_constraint_message(my_spec):
    with pytest.raises(SpecError, match="BM must be a multiple of 16"):
        bind(my_spec, {"BM": 40})
    with pytest.raises(SpecError, match="has no parameter XX"):
        bind(my_spec, {"XX": 1})


def test_shape_constraint_names_nearest_valid_sizes(my_spec):
    k = bind(my_spec)
    with pytest.raises(SpecError, match=r"M must be a multiple of BM.*nearest valid M: 4032 or 4096"):
        k.check_shape(GemmShape(4095, 4097, 1023))
    k.check_shape(GemmShape(4096, 4097, 1023))


@pytest.mark.parametrize("edit,match", [
    (("dtype: fp32", "dtype: int8"), "dtype: 'int8' is not one of fp32, fp16, bf16"),
    (("file: my_kernel.cu", "file: missing.cu"), "file: .*does not exist"),
    (("grid: [cdiv(N, BN), cdiv(M, BM), 1]", "grid: [open('x')]"), "grid\\[0\\]"),
    (("id: \"7x\"", "id: \"my kernel\""), "id: 'my kernel': use letters"),  # any id, but no spaces
    (("params: {BM: 64, BN: 32}", "params: {BM: 64.5, BN: 32}"), "params.BM: expected an integer"),
    (("layout: {A: row, B: row, C: row}", "layout: {A: row, B: row, C: diag}"), "layout: expected {A: row|col"),
    (("layout: {A: row, B: row, C: row}", "layout: {A: row, B: row, C: row, D: row}"), "layout.D: unknown key"),
    (("block: [", "blok: ["), r"blok: unknown key \(did you mean block\?\)"),
])
def test_malformed_specs_name_file_and_key(tmp_path, edit, match):
    (tmp_path / "my_kernel.cu").write_text("")
    path = tmp_path / "bad.yaml"
    path.write_text(SPEC_TEXT.replace(*edit))
    with pytest.raises(SpecError, match=match):
        specmod.load_spec(path)


def test_param_overrides_parse():
    assert parse_param_overrides(["BK=16", "TM = 4"]) == {"BK": 16, "TM": 4}
    with pytest.raises(SpecError):
        parse_param_overrides(["BK"])


def _rung(rid):
    return next(s for s in specmod.ladder() if s.id == rid)


@pytest.mark.parametrize(("shape", "params", "blocks"), [
    # 4095 x 4097: 32 x 17 = 544 blocks of 128 x 256 (4.12 waves of 132), 16 x 33 = 528 of 256 x 128 (4.00): swap
    (GemmShape(4095, 4097, 1023), {}, 16 * 33),
    (GemmShape(2000, 4100, 64), {}, 8 * 33),  # 272 blocks (2.06 waves) against 264 (2.00)
    (GemmShape(4096, 4096, 4096), {}, 32 * 16),  # equal counts: BM x BN
    (GemmShape(4096, 4352, 256), {}, 32 * 17),  # 544 wide against 16 * 34 = 544 tall: BM x BN
    (GemmShape(4095, 4097, 1023), {"BM": 128, "BN": 128, "WTY": 8, "THREADS": 128, "MINBLOCKS": 2}, 32 * 33),
])
@pytest.mark.parametrize("rung", ["14", "15"])
def test_rungs_14_15_grid_picks_the_orientation_that_fills_the_last_wave(shape, params, blocks, rung):
    k = bind(_rung(rung), params)
    grid, block, _ = k.launch_config(shape, sms=132)
    assert grid == (blocks, 1, 1) and block == (k.env["THREADS"], 1, 1)


def test_rung15_shared_memory_is_dynamic_and_sized_by_its_stages():
    k = bind(_rung("15"))
    _, _, smem = k.launch_config(GemmShape(4096, 4096, 4096), sms=132)
    assert smem == 3 * 8 * (128 + 256 + 4) * 4  # 37,248 bytes: under 48 KiB, no opt-in
    _, _, smem = bind(_rung("15"), {"STAGES": 5}).launch_config(GemmShape(64, 64, 64), sms=132)
    assert smem == 5 * 8 * 388 * 4 > 48 * 1024  # above 48 KiB: the runner opts in


def test_rung15_refuses_shapes_whose_tile_offsets_overflow_32_bits():
    k = bind(_rung("15"))
    k.check_shape(GemmShape(4095, 4097, 1023))
    with pytest.raises(SpecError, match=r"K must be below 2\^30 .*nearest valid K: 4194303"):
        k.check_shape(GemmShape(64, 64, 2**22))


def test_rung14_swaps_only_non_square_tiles():
    k = bind(_rung("14"), {"BM": 128, "BN": 256})
    assert k.env["CAN_SWAP"]
    k = bind(_rung("14"), {"BM": 128, "BN": 128, "THREADS": 128, "MINBLOCKS": 2})
    assert not k.env["CAN_SWAP"]  # square tiles: nothing to swap


def test_rung14_grid_needs_the_sm_count():
    k = bind(_rung("14"))
    with pytest.raises(SpecError, match="unknown name .SMS."):
        k.launch_config(GemmShape(64, 64, 64))


def test_rung14_access_analysis_takes_the_launch_grid_or_the_default_sm_count():
    from gemmprof.model.access_explain import analyse_kernel

    k = bind(_rung("14"))
    shape = GemmShape(4095, 4097, 1023)
    offline = analyse_kernel(k, shape)  # no --gpu, no launch: the H100 SXM's 132 SMs pick 256 x 128 (528 blocks)
    profiled = analyse_kernel(k, shape, grid=(544, 1, 1))  # the grid ncu reported wins
    per_block = offline.results[0].requests_per_launch / 528
    assert per_block == int(per_block) > 0
    assert profiled.results[0].requests_per_launch == per_block * 544


@pytest.mark.parametrize("edit,match", [
    (("source: {document: test}", "source: {document: test, sectoin: x}"), r"source.sectoin: unknown key \(did you mean section\?\)"),
    (("entry: my_kernel", "entry: my_kernel\nc_dtyp: fp16"), r"c_dtyp: unknown key \(did you mean c_dtype\?\)"),
    (("entry: my_kernel", "entry: my_kernel\nzzz_future_key: 1"), r"zzz_future_key: unknown key \(known keys: "),
    (("entry: my_kernel", "entry: my_kernel\ntma_args: [{operand: A, rows: M, cols: K, box: [64, 64], swizle: 128}]"),
     r"tma_args\[0\].swizle: unknown key \(did you mean swizzle\?\)"),
])
def test_every_mapping_of_a_spec_is_strict(tmp_path, edit, match):
    (tmp_path / "my_kernel.cu").write_text("")
    path = tmp_path / "bad.yaml"
    text = SPEC_TEXT.replace("source: {document: me}", "source: {document: test}")
    assert edit[0] in text, edit[0]
    path.write_text(text.replace(*edit))
    with pytest.raises(SpecError, match=match):
        specmod.load_spec(path)


def test_an_access_entry_with_a_typo_names_the_key_meant():
    from gemmprof.catalog.accesses import parse_accesses

    block = {"loop": {"var": "bk", "trips": "K"}, "list": [{"array": "As", "space": "shared", "op": "load",
                                                           "bytes": 4, "index": "lane", "predicted": True}]}
    with pytest.raises(SpecError, match=r"accesses.list\[0\].predicted: unknown key \(did you mean predicated\?\)"):
        parse_accesses(Path("k.yaml"), block)
    block["list"][0].pop("predicted")
    block["loop"]["strat"] = 0
    with pytest.raises(SpecError, match=r"accesses.loop.strat: unknown key \(did you mean start\?\)"):
        parse_accesses(Path("k.yaml"), block)
