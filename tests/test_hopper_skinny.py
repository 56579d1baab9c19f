"""h11, skinny problems computed transposed: its rule (the tile's rows MW and the ring at each M, split-K as h8's),
the builds for a shape, its constraints, and on an H100 (marker gpu) verified runs at M from 1 to 100 (each MW, a
tile row past M, more than one tile row), odd N, K not a multiple of 64, beta, bf16, split and unsplit."""

import csv
from pathlib import Path

import pytest
from context import needs_gpu
from hopper_runs import needs_hopper, pct_by_split_k, verified

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.results.shape import GemmShape


def h11(**params):
    return bind(specmod.select(["h11"])[0], params)


@pytest.mark.parametrize(("shape", "mw", "stages", "tiles", "split"), [
    ((16, 4096, 4096), 16, 16, 64, 1),   # decode-like: 64 tiles of 64 columns, unsplit (half a wave: no split)
    ((1, 4096, 4096), 16, 16, 64, 1),
    ((16, 2048, 4096), 16, 16, 32, 1),   # a quarter of a wave: still unsplit
    ((16, 1024, 8192), 16, 16, 16, 4),   # 16 tiles, an eighth of a wave: 4 slices (SPLIT_MAX) of 32 k-tiles
    ((8, 512, 4096), 16, 16, 8, 4),      # 8 tiles: 4 slices (SPLIT_MAX), not SMS // 8
    ((17, 4096, 4096), 16, 16, 128, 1),  # two rows of 16 fill the wave that one of 32 would split in two
    ((64, 4096, 4096), 32, 16, 128, 1),  # two rows of 32, not one of 64 split in two
    ((64, 14336, 4096), 64, 6, 224, 1),  # MW = 64 (16 KiB stages): 224 tiles, past a wave: 6 stages, two CTAs per SM
    ((100, 4096, 4096), 64, 12, 128, 1),  # two tile rows of 64
    ((16, 14336, 4096), 16, 8, 224, 1),  # more tiles than SMs: no split; 8 stages, two CTAs per SM, one wave
    ((16, 11008, 4096), 16, 8, 172, 1),
    ((32, 11008, 4096), 32, 8, 172, 1),  # rows of 32 past a wave: 8 stages of 12 KiB, two CTAs per SM
    ((16, 4096, 96), 16, 16, 64, 1),     # 2 k-tiles: no slice of SPLIT_MIN_KTILES
])
def test_the_tile_ring_and_split_at_each_shape(shape, mw, stages, tiles, split):
    k, g = h11(), GemmShape(*shape)
    grid, block, smem = k.launch_config(g, sms=132)
    assert grid == (tiles, 1, split) and block == (256, 1, 1)
    assert smem == stages * (64 + mw) * 64 * 2 + 1024 <= 232448
    assert k.decomposition_note(g, 132) == f"TILES={tiles}, SPLIT_K={split}"
    assert k.for_shape(g, 132).shape_defines == (("H11_MW", mw), ("H11_STAGES", stages))


@pytest.mark.parametrize(("shape", "mw", "shared", "alone"), [
    ((16, 11008, 4096), 16, 8, 16),  # 172 tiles: 8 stages of 10 KiB (SHARED_STAGES)
    ((32, 27648, 5120), 32, 8, 16),  # 432 tiles: 8 of 12 KiB (96 KiB)
    ((64, 10240, 8192), 64, 6, 12),  # 160 tiles: 6 of 16 KiB (SHARED_RING: 96 KiB)
    ((48, 28672, 8192), 64, 6, 12),  # 448 tiles, 48 rows in a tile row of 64
])
def test_two_ctas_share_an_sm_where_the_tiles_take_more_than_one_wave(shape, mw, shared, alone):
    """A ring of SHARED_STAGES at most and 96 KiB at most lets two CTAs share an SM, so twice the tiles stream at
    once; SHARED_STAGES = 0 gives the one-CTA ring back (16 stages, or 12 at rows of 64)."""
    g = GemmShape(*shape)
    assert h11().decomposition(g, 132)["TILES"] > 132
    _, _, smem = h11().launch_config(g, sms=132)
    assert smem == shared * (64 + mw) * 64 * 2 + 1024 and 2 * smem <= 232448
    assert h11().for_shape(g, 132).shape_defines == (("H11_MW", mw), ("H11_STAGES", shared))
    _, _, smem = h11(SHARED_STAGES=0).launch_config(g, sms=132)
    assert smem == alone * (64 + mw) * 64 * 2 + 1024 and 2 * smem > 232448


def test_one_wave_of_tiles_keeps_the_deep_ring():
    # 16 x 4096 x 4096: 64 tiles; 1 x 8192 x 8192: 128 tiles; 128 x 4096 x 4096: 128 tiles of 64 rows
    for shape, mw, stages in (((16, 4096, 4096), 16, 16), ((1, 8192, 8192), 16, 16), ((128, 4096, 4096), 64, 12)):
        g = GemmShape(*shape)
        assert h11().decomposition(g, 132)["TILES"] <= 132
        assert h11().for_shape(g, 132).shape_defines == (("H11_MW", mw), ("H11_STAGES", stages))


@pytest.mark.parametrize(("shape", "part", "split"), [
    ((16, 4096, 4096), 1, 2),   # SPLIT_WAVE_PART = 1: split wherever the tiles leave SMs idle (h11 before it)
    ((16, 4096, 4096), 2, 2),   # 64 tiles fill at most half a wave
    ((16, 4096, 4096), 4, 1),
    ((16, 2048, 4096), 4, 4),   # 32 tiles: a quarter of a wave
    ((16, 1024, 8192), 8, 4),
    ((16, 1024, 8192), 9, 1),   # 16 * 9 > 132
    ((16, 1024, 96), 8, 1),     # 2 k-tiles: no slice of SPLIT_MIN_KTILES, whatever the tiles
])
def test_k_is_split_only_where_the_tiles_fill_at_most_a_part_of_a_wave(shape, part, split):
    """A slice waits for the one before it to have written C: h11 splits K only where TILES * SPLIT_WAVE_PART <= SMS
    (default 8: 16 tiles on 132 SMs; at 32 and 64 tiles the unsplit launch led on the H200)."""
    k, g = h11(SPLIT_WAVE_PART=part), GemmShape(*shape)
    assert k.launch_config(g, sms=132)[0][2] == split
    assert k.decomposition(g, 132)["SPLIT_K"] == split


def test_shared_stages_is_refused_past_two_ctas_per_sm():
    with pytest.raises(SpecError, match="SHARED_STAGES"):
        h11(SHARED_STAGES=12)


def test_constraints_name_what_is_wrong():
    with pytest.raises(SpecError, match="227 KiB"):
        h11(STAGES=19)
    with pytest.raises(SpecError, match="SPLIT_MIN_KTILES and SPLIT_MAX"):
        h11(SPLIT_MAX=0)
    with pytest.raises(SpecError, match="SPLIT_WAVE_PART"):
        h11(SPLIT_WAVE_PART=0)


def test_every_tile_of_the_builds_for_a_shape_compiles_without_spills(nvcc):
    from gemmprof.measure.compile_pool import nvcc_build_all

    kernels = [h11().for_shape(GemmShape(m, 4096, 4096), 132) for m in (16, 32, 64)]
    kernels.append(bind(specmod.select(["h11"])[0], dtype="bf16").for_shape(GemmShape(16, 4096, 4096), 132))
    results = nvcc_build_all(kernels, ["sm_90"], jobs=2)
    assert all(r.ok and r.arch == "sm_90a" for r in results), [r.log[-2000:] for r in results if not r.ok]
    for r in results:
        assert r.resources.spill_stores == 0 and r.resources.spill_loads == 0 and "C7515" not in r.log


def test_explain_places_h11_beside_h5():
    """h11 is warp-specialized as h5 (one CTA per tile and slice, not h6's persistent grid) and splits K as h8."""
    from gemmprof.model.explain_techniques import BRANCHES, RUNG_TECHNIQUES, applied_by

    assert BRANCHES["h11"] == "h5" and RUNG_TECHNIQUES["h11"] == ("swap_ab", "split_k")
    assert {"split_k", "swap_ab", "wgmma", "warp_specialization"} <= set(applied_by("h11"))
    assert "persistent" not in applied_by("h11")


# -- on the H100 --------------------------------------------------------------------------------------------------
GPU_SHAPES = [("16", "4096", "4096"), ("1", "4096", "4096"), ("17", "4097", "520"), ("64", "1000", "1024"),
              ("100", "4100", "136"), ("16", "14336", "4096"), ("5", "300", "64"),
              ("3", "520", "1032")]  # 9 tiles: K split in 4 uneven slices (17 k-tiles)


def _verified(runner, tmp_path, args):
    return verified(runner, tmp_path, "h11", args)


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_h11_verifies_on_the_gpu(runner, tmp_path, dtype):
    needs_hopper()
    for m, n, k in GPU_SHAPES:
        _verified(runner, tmp_path, ["--dtype", dtype, "-m", m, "-n", n, "-k", k])


@needs_gpu
def test_h11_applies_beta_once_where_it_splits(runner, tmp_path):
    needs_hopper()
    row = _verified(runner, tmp_path, ["-m", "16", "-n", "1024", "-k", "8192", "--alpha", "1.5", "--beta", "-0.75"])
    assert row["grid"][2] == 4, row["grid"]
    _verified(runner, tmp_path, ["-m", "33", "-n", "1030", "-k", "520", "--alpha", "1.5", "--beta", "-0.75"])


def test_the_traffic_model_takes_the_tile_at_the_shape():
    """h11's and h8's tiles depend on M: the model reads the tile their rules pick (MW x 64; TBM x TN), at the shape
    it is asked about, at the shape a build is for, or, with neither, at a problem too large for any shape rule."""
    h8 = bind(specmod.select(["h8"])[0])
    t16 = h11().tiles(GemmShape(16, 4096, 4096), 132)
    assert (t16.BM, t16.BN) == (16, 64)
    assert h11().tiles(GemmShape(40, 4096, 4096), 132).BM == 32  # two rows of 32 fill the wave one of 64 would split
    assert h11().tiles(GemmShape(40, 4096, 14336), 132).BM == 32
    assert h11().tiles(GemmShape(40, 14336, 4096), 132).BM == 64  # 224 tiles of 64 rows: more than a wave already
    assert h11().tiles(GemmShape(32, 4096, 4096), 132).BM == 16
    assert h11().for_shape(GemmShape(16, 4096, 4096), 132).tiles().BM == 16
    assert h11().tiles().BM == 64  # no shape: the large-problem tile
    # without an SM count the row the rule picks is unknown (it fills a wave): the large-problem tile
    assert h11().tiles(GemmShape(32, 4096, 4096)).BM == 64
    skinny, square = GemmShape(16, 4096, 4096), GemmShape(1024, 1024, 1024)
    assert (h8.tiles(skinny).BM, h8.tiles(skinny).BN) == (64, 64)   # one consumer warpgroup, 64 columns
    assert (h8.tiles(square).BM, h8.tiles(square).BN) == (128, 64)  # two
    assert (h8.tiles().BM, h8.tiles().BN) == (128, 64) == (h8.env["BM"], h8.params["BN"])
    # the model's intensity follows: at M = 16 h11 reads A's 16 rows once per 64 columns, h8 a 64-row box
    from gemmprof.model.roofline import model_intensity

    spec11, spec8 = specmod.select(["h11"])[0], specmod.select(["h8"])[0]
    assert model_intensity(spec11, skinny, sms=132) != model_intensity(spec8, skinny, sms=132)



SHARED_RUNS = sorted((Path(__file__).resolve().parent / "fixtures" / "plan" / "h200_shared_ring").glob("*.csv"))
SHARED_LIMIT = 98304 + 2048  # a shared ring's stages, their alignment and the barriers: under this, two CTAs per SM


@pytest.mark.parametrize("path", SHARED_RUNS, ids=lambda p: p.stem)
def test_the_shared_ring_was_not_slower_where_the_rule_takes_it(path):
    """Each H200 run (in turns with cuBLAS) has one h11 build with the shared ring and one with the one-CTA ring,
    told apart by their shared memory; the rule takes the shared ring at the run's shape, and it was ahead or within
    noise (3%); at 64 x 10240 x 8192 (160 tiles, 1.2 waves) 20 points ahead in both calls."""
    label = path.stem.rsplit("_", 1)[1]
    g = GemmShape(*map(int, label.split("x")))
    assert h11().launch_config(g, 132)[2] < SHARED_LIMIT  # the rule shares at this shape
    with open(path, newline="") as f:
        rows = [row for row in csv.DictReader(f) if not row["name"].startswith("cublas")]
    shared = [float(r["% cuBLAS"]) for r in rows if int(r["smem (B)"]) < SHARED_LIMIT]
    alone = [float(r["% cuBLAS"]) for r in rows if int(r["smem (B)"]) >= SHARED_LIMIT]
    assert len(shared) == len(alone) == 1, rows
    assert shared[0] >= 0.97 * alone[0]
    if label == "64x10240x8192":
        assert shared[0] > alone[0] + 15


SPLIT_RUNS = sorted((Path(__file__).resolve().parent / "fixtures" / "plan" / "h200_h11_split").glob("*.csv"))


@pytest.mark.parametrize("path", SPLIT_RUNS, ids=lambda p: p.stem)
def test_the_split_rule_takes_the_launch_that_led_in_turns_on_the_h200(path):
    """Each H200 run (in turns with cuBLAS) has h11 split and unsplit at one shape, told apart by their notes
    (SPLIT_K); the rule (SPLIT_WAVE_PART) takes the one that ran faster: unsplit at 32-64 tiles, split at 16."""
    dtype, label = path.stem.split("_")[-2:]
    g = GemmShape(*map(int, label.split("x")))
    split_k = pct_by_split_k(path)
    assert len(split_k) == 2 and 1 in split_k, split_k
    faster = max(split_k, key=split_k.get)
    ruled = bind(specmod.select(["h11"])[0], dtype=dtype).decomposition(g, 132)["SPLIT_K"]
    assert ruled == faster, f"{label} {dtype}: the rule splits {ruled}, the faster launch split {faster}: {split_k}"


def test_the_split_runs_cover_both_sides_of_the_rule():
    tiles = {bind(specmod.select(["h11"])[0]).decomposition(GemmShape(*map(int, p.stem.split("_")[-1].split("x"))),
                                                            132)["TILES"] for p in SPLIT_RUNS}
    assert min(tiles) == 16 and {32, 56, 64} <= tiles  # the split side (16 tiles) and the unsplit side (32 to 64)
