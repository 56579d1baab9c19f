"""h8, split-K on the Hopper rungs: its rule (the spec's `decomposition`) at the sweep's shapes, its launches and its
build without a GPU; verification, beta applied once, and identical bits launch after launch on an H100 (marker gpu)."""

import itertools
import json
import re

import numpy as np
import pytest
from clitools import invoke
from context import needs_gpu
from hopper_runs import VERIFY_ONLY, needs_hopper, same_bits_launch_after_launch
from test_hopper_rungs import _Operand as Operand

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.measure import tma_launch
from gemmprof.model.traffic import GemmShape

H100_SMS = 132
H6_PARAMS = {"CONSUMERS": 2, "BN": 256, "STAGES": 4}  # h6's tile and ring, as --param overrides of h8


def _h8(params=None, dtype=None):
    return bind(specmod.select(["h8"])[0], params, dtype=dtype)


def _boxes(kernel, shape) -> list[tuple[int, int]]:
    """The (rows, cols) of each tensor map's box the launch at `shape` encodes, in operand order (A, B, C)."""
    seen = []

    def fake_encode(address, tmap):
        seen.append((tmap.box_rows, tmap.box_cols))
        return np.void(bytes(128))

    tma_launch.encode_maps(tma_launch.tiled_maps(kernel, shape, H100_SMS),
                           {"A": Operand(1 << 20), "B": Operand(2 << 20), "C": Operand(3 << 20)}, encode=fake_encode)
    return seen


@pytest.mark.parametrize(("shape", "tiles", "split"), [
    (GemmShape(16, 4096, 4096), 64, 2),  # skinny: one row of 64 tiles of 64 x 64, 2 slices of 32 k-tiles
    (GemmShape(128, 4096, 4096), 128, 1),  # two rows of 64 x 64 tiles fill 128 of 132 SMs: no split
    (GemmShape(1024, 1024, 1024), 128, 1),  # 8 x 16 tiles of 128 x 64 already fill 128 of 132 SMs
    (GemmShape(1000, 1000, 1000), 128, 1),  # the same tiles, the edges zero-filled
    (GemmShape(4096, 4096, 4096), 2048, 1),  # many waves: h6's persistent grid
    (GemmShape(4095, 4097, 1024), 32 * 65, 1),
    (GemmShape(16, 64, 16384), 1, 4),  # one tile: SPLIT_MAX slices
    (GemmShape(16, 4096, 96), 64, 1),  # 2 k-tiles: no slice of SPLIT_MIN_KTILES (4)
])
def test_h8_split_rule_at_the_sweep_shapes(shape, tiles, split):
    k = _h8()
    grid, block, smem = k.launch_config(shape, sms=H100_SMS)
    consumers = 1 if shape.M <= 256 else 2  # SKINNY_CONSUMERS up to SKINNY_M rows, CONSUMERS above; 64 columns
    assert (k.decomposition(shape, H100_SMS)["TC"], k.decomposition(shape, H100_SMS)["TN"]) == (consumers, 64)
    # 8 stages of A and B, 1 KiB to align them, then two 8 KiB staging buffers of TMA stores per consumer warpgroup
    # (also the staged epilogue's slices: 4 warps x 16 rows x 40 floats)
    assert block == (128 * (consumers + 1), 1, 1)
    assert smem == 8 * (64 * consumers + 64) * 64 * 2 + 1024 + consumers * 2 * 64 * 32 * 4
    # unsplit, in pairs along N where the rows of A and B are off 128-byte lines (1000^3), alone elsewhere
    pairs = 2 if split == 1 and shape.K % 64 and shape.M > 256 else 1
    ctiles = tiles // pairs  # these shapes have an even number of tile columns
    assert grid == ((tiles, 1, split) if split > 1 else (pairs * min(H100_SMS // pairs, ctiles), 1, 1))
    # the note: the tiles, the slices, the cluster and its tiles
    assert k.decomposition_note(shape, H100_SMS) == f"TILES={tiles}, CM=1, SPLIT_K={split}, CN={pairs}, CTILES={ctiles}"
    assert k.cluster_dims(shape, H100_SMS) == ((2, 1, 1) if pairs == 2 else None)
    # the build compiles that tile, the split only where it splits, the staged epilogue only for rows off sectors
    assert k.for_shape(shape, H100_SMS).shape_defines == (("H8_BN", 64), ("H8_CONSUMERS", consumers),
                                                          ("H8_SPLIT", int(split > 1)), ("H8_CLUSTER_N", pairs),
                                                          ("H8_CLUSTER_M", 1),
                                                          ("ROWS_ON_SECTORS", int(shape.N % 8 == 0)))


@pytest.mark.parametrize(("n", "ctiles"), [(4096, 32), (4032, 32)])  # 64 tile columns; 63, the last pair half past N
def test_a_split_launch_runs_in_pairs_along_n_where_cluster_n_asks(n, ctiles):
    # 128 rows, long K: 128 x 64 tiles (SKINNY_CONSUMERS = 2) split in two, as cuBLAS's split-K kernel there, in
    # pairs sharing A's box; one CTA (and one flag) per tile of each pair, the pair past N included
    shape = GemmShape(128, n, 14336)
    k = _h8({"SKINNY_CONSUMERS": 2, "CLUSTER_N": 2})
    assert k.launch_config(shape, sms=H100_SMS)[0] == (2 * ctiles, 1, 2)
    assert k.cluster_dims(shape, H100_SMS) == (2, 1, 1)
    assert k.decomposition_note(shape, H100_SMS) == f"TILES={n // 64}, CM=1, SPLIT_K=2, CN=2, CTILES={ctiles}"
    assert dict(k.for_shape(shape, H100_SMS).shape_defines)["H8_SPLIT"] == 1
    # CLUSTER_N = 0 (the default) leaves split launches alone, and pairs only unsplit ones by the rows' alignment
    alone = _h8({"SKINNY_CONSUMERS": 2})
    assert alone.launch_config(shape, sms=H100_SMS)[0] == (n // 64, 1, 2)
    assert alone.cluster_dims(shape, H100_SMS) is None


def test_the_skinny_width_is_a_parameter():
    shape = GemmShape(128, 4096, 4096)
    assert _h8({"SKINNY_BN": 128}).launch_config(shape, sms=H100_SMS)[0] == (64, 1, 2)  # the earlier default
    assert _h8({"SKINNY_M": 64, "BN": 128, "STAGES": 6}).decomposition(shape, H100_SMS)["TN"] == 128
    assert _h8({"SKINNY_CONSUMERS": 2}).launch_config(shape, sms=H100_SMS)[:2] == ((64, 1, 2), (384, 1, 1))
    with pytest.raises(SpecError, match="SKINNY_CONSUMERS"):
        _h8({"SKINNY_CONSUMERS": 3})
    with pytest.raises(SpecError, match="SKINNY_BN"):
        _h8({"SKINNY_BN": 68})  # not a wgmma N
    # a wgmma N whose pieces of B (5 atoms of 9 in pairs along M) overlap
    assert _h8({"SKINNY_BN": 72, "CLUSTER_M": 2}).decomposition(GemmShape(150, 1000, 4096), H100_SMS)["BPIECE"] == 40


def test_a_split_launch_is_one_wave_of_one_unit_per_cta_and_never_persistent():
    """The kernel's deadlock rule: with SPLIT_K > 1 the grid is exactly TILES x SPLIT_K CTAs, at most one per SM,
    and every slice keeps at least SPLIT_MIN_KTILES k-tiles; unsplit, h6's grid of min(SMS, TILES)."""
    for params in (None, H6_PARAMS, {"CONSUMERS": 2, "BN": 64, "SPLIT_MIN_KTILES": 2, "SPLIT_MAX": 8}):
        k = _h8(params)
        split_seen = paired_seen = 0
        for m, n, kk in itertools.product([1, 16, 100, 128, 1000, 4095, 8192], [8, 300, 4096, 14336],
                                          [8, 1024, 4096, 16384]):
            shape = GemmShape(m, n, kk)
            skinny = m <= k.params["SKINNY_M"]
            width = k.params["SKINNY_BN"] if skinny else k.params["BN"]
            rows = 64 * (k.params["SKINNY_CONSUMERS"] if skinny else k.params["CONSUMERS"])
            tiles = -(-m // rows) * -(-n // width)
            grid, _, _ = k.launch_config(shape, sms=H100_SMS)
            if grid[2] > 1:
                split_seen += 1
                assert grid[0] == tiles and grid[0] * grid[2] <= H100_SMS, (params, shape)
                assert -(-kk // 64) // grid[2] >= k.params["SPLIT_MIN_KTILES"], (params, shape)
                assert grid[2] <= k.params["SPLIT_MAX"]
            else:  # alone, or in pairs along N by the rule (rows off 128-byte lines, two tile columns or more)
                cols = -(-n // width)
                pairs = 2 if kk % 64 and not skinny and cols >= 2 else 1
                ctiles = -(-m // rows) * -(-cols // pairs)
                assert grid == (pairs * min(H100_SMS // pairs, ctiles), 1, 1), (params, shape)
                paired_seen += pairs == 2
        assert split_seen > 10 and paired_seen >= 5  # the generator draws both rules


def test_h8_with_h6s_parameters_launches_as_h6_where_it_does_not_split():
    h6 = bind(specmod.select(["h6"])[0])
    k = _h8(H6_PARAMS)
    for shape in (GemmShape(4096, 4096, 4096), GemmShape(8192, 8192, 8192), GemmShape(4095, 4097, 1024)):
        grid, block, smem = k.launch_config(shape, sms=H100_SMS)
        h6_grid, h6_block, h6_smem = h6.launch_config(shape, sms=H100_SMS)
        # h6's grid and block; the epilogue's shared memory is h8's TMA staging (2 x 8 KiB per warpgroup), which
        # also holds h6's 20 KiB of slices
        assert (grid, block) == (h6_grid, h6_block) and smem - 2 * 16384 == h6_smem - 20480
    # where h6 leaves SMs idle, h8 splits: 32 tiles of 128 x 256 at 1024^3 in 4 slices
    assert k.launch_config(GemmShape(1024, 1024, 1024), sms=H100_SMS)[0] == (32, 1, 4)


def test_h8_split_follows_the_wave_and_its_parameters():
    shape = GemmShape(320, 1024, 4096)  # 3 x 16 = 48 tiles of 128 x 64, 64 k-tiles
    assert _h8().launch_config(shape, sms=48)[0] == (48, 1, 1)  # one tile per SM: no room for a second slice
    assert _h8().launch_config(shape, sms=H100_SMS)[0] == (48, 1, 2)
    assert _h8().launch_config(shape, sms=264)[0] == (48, 1, 4)  # many SMs: SPLIT_MAX slices
    assert _h8({"SPLIT_MAX": 1}).launch_config(shape, sms=H100_SMS)[0] == (48, 1, 1)
    assert _h8({"SPLIT_MIN_KTILES": 64}).launch_config(shape, sms=H100_SMS)[0] == (48, 1, 1)
    assert _h8({"BN": 128, "CONSUMERS": 1}).launch_config(shape, sms=H100_SMS)[0] == (40, 1, 3)  # 5 x 8 of 64 x 128
    assert _h8(H6_PARAMS).launch_config(shape, sms=H100_SMS)[0] == (12, 1, 4)  # 3 x 4 tiles of 128 x 256
    with pytest.raises(SpecError, match="stages .* must fit in 227 KiB"):
        _h8({"CONSUMERS": 2, "BN": 256, "STAGES": 8})
    for bn in (68, 24, 272):  # off the steps of 8 (not a wgmma N), below 32, past 256
        with pytest.raises(SpecError, match="BN is the consumers' wgmma N"):
            _h8({"BN": bn, "STAGES": 4})
    assert _h8({"BN": 80, "STAGES": 7}).decomposition(GemmShape(1000, 1000, 1000), H100_SMS)["TILES"] == 8 * 13


def test_h8_flag_count_and_defines_match_its_kernel():
    k = _h8()
    source = k.spec.file.read_text()
    assert f"SPLIT_FLAGS = {k.env['SPLIT_FLAGS']};" in source
    assert '#include "hopper.cuh"' in source
    for name in k.spec.defines:  # every define the spec passes has a default in the kernel
        assert re.search(rf"#ifndef {name}\n#define {name} {k.params[name]}\n", source), name
    grid, _, _ = _h8({"BN": 64}).launch_config(GemmShape(8192, 8192, 4096), sms=100_000)  # 8192 tiles
    assert grid[2] == 1  # more tiles than flags never split, however many SMs


def test_h8_tensor_maps_box_its_tile_even_past_a_small_m():
    """A's box is the tile's rows at the shape (64 per consumer warpgroup): at M = 16 the TMA zero-fills rows 16-63."""
    seen = []
    for params, shape in ((None, GemmShape(16, 4096, 4096)), (H6_PARAMS, GemmShape(16, 4096, 4096)),
                          (None, GemmShape(1024, 4096, 4096))):
        tma_launch.encode_maps(tma_launch.tiled_maps(_h8(params, dtype="bf16"), shape, H100_SMS),
                               {"A": Operand(1 << 20), "B": Operand(2 << 20), "C": Operand(3 << 20)},
                               encode=lambda address, tmap: seen.append((tmap.rows, tmap.cols, tmap.box_rows,
                                                                         tmap.box_cols, tmap.dtype)))
    # the boxes are the tile at the shape: 64 x SKINNY_BN (64) at M = 16, whatever CONSUMERS and BN; 128 x BN
    # (64) at M = 1024; then C's, fp32, one 64-row by 32-column staged store
    c = [(16, 4096, 64, 32, "fp32"), (16, 4096, 64, 32, "fp32"), (1024, 4096, 64, 32, "fp32")]
    assert seen == [(16, 4096, 64, 64, "bf16"), (4096, 4096, 64, 64, "bf16"), c[0],
                    (16, 4096, 64, 64, "bf16"), (4096, 4096, 64, 64, "bf16"), c[1],
                    (1024, 4096, 128, 64, "bf16"), (4096, 4096, 64, 64, "bf16"), c[2]]


def test_h8_builds_for_fp16_and_bf16_with_h6s_tile_too(nvcc):
    from gemmprof.measure.compile_pool import nvcc_build_all

    kernels = [_h8(), _h8(dtype="bf16"), _h8(H6_PARAMS), _h8({"BN": 64, "CONSUMERS": 2, "STAGES": 6}),
               _h8().for_shape(GemmShape(16, 4096, 4096), H100_SMS),  # the skinny build: -DH8_BN=64
               _h8().for_shape(GemmShape(1024, 1024, 1024), H100_SMS)]  # unsplit, rows on sectors
    results = nvcc_build_all(kernels, ["sm_90"], jobs=2)
    assert all(r.ok and r.arch == "sm_90a" for r in results), [r.log[-2000:] for r in results if not r.ok]
    assert "-DELEM_BF16=1" in results[1].build.flags and "-DELEM_BF16=1" not in results[0].build.flags
    assert "-DH8_BN=64" in results[4].build.flags and results[4].cubin.read_bytes() != results[0].cubin.read_bytes()
    # the build for 1024^3 leaves out the split's reduction and the staged epilogue: a third of the general code
    assert "-DH8_SPLIT=0" in results[5].build.flags and "-DROWS_ON_SECTORS=1" in results[5].build.flags
    assert 3 * len(results[5].cubin.read_bytes()) < 2 * len(results[0].cubin.read_bytes())
    for r in results:  # the accumulators stay in registers
        assert r.resources.spill_stores == 0 and r.resources.spill_loads == 0, (r.name, r.resources)


# -- on an H100 ----------------------------------------------------------------------------------------------------
SHAPES = [("16", "4096", "4096"), ("128", "4096", "4096"), ("1000", "1000", "1000"), ("1024", "1024", "1024"),
          ("4095", "4097", "1024")]


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_h8_verifies_on_the_gpu(runner, tmp_path, dtype):
    needs_hopper()
    for m, n, k in SHAPES:
        out = tmp_path / f"{dtype}_{m}x{n}x{k}.json"
        r = invoke(runner, ["run", "h8", "--dtype", dtype, "-m", m, "-n", n, "-k", k, *VERIFY_ONLY, "-o", str(out)])
        assert r.exit_code == 0, r.output
        row = json.loads(out.read_text())["variants"][0]
        assert row["status"] == "ok" and row["rel_error"] < 1e-3, row
        assert "SPLIT_K=" in row["message"], row["message"]


@needs_gpu
@pytest.mark.parametrize("shape", [("16", "4096", "4096"), ("320", "1024", "4096")])  # 2 slices each
def test_h8_applies_beta_once_where_it_splits(runner, tmp_path, shape):
    """Slice 0 scales the old C by beta, the later slices add to the running sum: beta applied once, C read."""
    needs_hopper()
    m, n, k = shape
    out = tmp_path / "beta.json"
    r = invoke(runner, ["run", "h8", "--dtype", "fp16", "-m", m, "-n", n, "-k", k, "--alpha", "1.5", "--beta",
                        "-0.75", *VERIFY_ONLY, "-o", str(out)])
    assert r.exit_code == 0, r.output
    row = json.loads(out.read_text())["variants"][0]
    assert row["status"] == "ok" and row["rel_error"] < 1e-3, row
    assert row["grid"][2] > 1 and f"SPLIT_K={row['grid'][2]}" in row["message"], row


@needs_gpu
def test_h8_gives_the_same_bits_launch_after_launch_where_it_splits():
    """The serial reduction adds the slices in a fixed order: every launch writes identical bits, and the flags each
    launch leaves let the next one run."""
    needs_hopper()
    row = same_bits_launch_after_launch(_h8(), GemmShape(320, 1024, 4096))  # 48 tiles of 128 x 64 in 2 slices
    assert row.launch.grid[2] > 1


def test_threads_per_block_is_the_binarys():
    """h8's block depends on the shape: the build for a skinny shape has one consumer warpgroup (256 threads), the
    general binary and the builds for other shapes two (384)."""
    k = _h8()
    assert k.threads_per_block == 384
    assert k.for_shape(GemmShape(16, 4096, 4096), H100_SMS).threads_per_block == 256
    assert k.for_shape(GemmShape(1024, 1024, 1024), H100_SMS).threads_per_block == 384
    assert bind(specmod.select(["h6"])[0]).threads_per_block == 384


@pytest.mark.parametrize("width", [0, 64, 128, 256])
def test_h8_tensor_maps_take_the_l2_request_width_of_its_parameter(width):
    maps = tma_launch.tiled_maps(_h8({"L2_PROMOTION": width}), GemmShape(1000, 1000, 1000), 132)
    assert [(op, t.l2_promotion) for op, t in maps] == [("A", width), ("B", width), ("C", 256)]


def test_build_reports_the_rungs_whose_tile_comes_from_the_shape(runner, nvcc, tmp_path):
    # h8's and h11's traffic tiles are decomposition names (TBM, TN, MW): `build` read them from the parameters
    # alone and stopped with "unknown name 'TBM'"; it takes the tile the binary was built for
    out = tmp_path / "build.json"
    r = invoke(runner, ["build", "h8", "h11", "--arch", "sm_90a", "--format", "json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = {row["name"]: row for row in json.loads(out.read_text())["rows"]}
    assert rows["hopper_split_k"]["status"] == rows["skinny_swap_ab"]["status"] == "ok"
    # one k-tile of h8's general build: a 128 x 64 tile (2 x 64 rows by BN = 64) times BK = 64
    assert rows["hopper_split_k"]["ktile_flops"] == 2 * 128 * 64 * 64


@pytest.mark.parametrize(("shape", "grid"), [
    (GemmShape(1024, 1024, 1024), 128),  # 8 x 16 tiles of 128 x 64: 64 pairs
    (GemmShape(1000, 1000, 1000), 128),
    (GemmShape(1000, 900, 520), 128),  # 15 tile columns: each row's last pair has a CTA past N
    (GemmShape(128, 4096, 4096), 128),  # skinny, unsplit: 64 x 64 tiles, pairs of A's 64 rows
    (GemmShape(4096, 4096, 4096), 132),  # persistent: 66 pairs walk 1024 cluster tiles
    (GemmShape(16, 4096, 4096), 64),  # split K: one unit per CTA, 32 pairs per slice
])
def test_clusters_of_two_share_a(shape, grid):  # CLUSTER_N = 2: every launch in pairs along N
    k = _h8({"CLUSTER_N": 2})
    g, _, _ = k.launch_config(shape, H100_SMS)
    assert g[0] == grid and g[0] % 2 == 0
    assert k.cluster_dims(shape, H100_SMS) == (2, 1, 1)
    assert dict(k.for_shape(shape, H100_SMS).shape_defines)["H8_CLUSTER_N"] == 2
    seen = _boxes(k, shape)
    tbm = 64 if shape.M <= 256 else 128
    # each CTA of a pair loads half of A's box; C's map for the TMA stores (N % 4 == 0 at all these shapes)
    assert seen == [(tbm // 2, 64), (64, 64), (64, 32)]
    # the traffic model's tile is the pair's: A read once for two tiles side by side, split or not
    assert k.tiles(shape).BN == 128
    # by default (CLUSTER_N = 0) in pairs only where the rows are off 128-byte lines and the problem is not skinny
    by_rule = shape.K % 64 != 0 and shape.M > 256
    assert _h8().tiles(shape).BN == (128 if by_rule else 64)
    assert _h8({"CLUSTER_N": 1}).tiles(shape).BN == 64 and _h8({"CLUSTER_N": 1}).cluster_dims(shape, H100_SMS) is None
    assert _h8().cluster_dims(shape, H100_SMS) == ((2, 1, 1) if by_rule else None)


@pytest.mark.parametrize(("shape", "cn", "grid", "ctiles"), [
    (GemmShape(1000, 1000, 1000), 2, 128, 32),  # 2 x 2: 4 x 8 cluster tiles of 256 x 128
    (GemmShape(1024, 1024, 1024), 1, 128, 64),  # 2 x 1 (rows on lines: no pairs along N)
    (GemmShape(600, 1000, 1000), 2, 96, 24),  # 5 tile rows: the last cluster row half past M
    (GemmShape(150, 1000, 4096), 2, 64, 16),  # skinny 64 x 64 tiles, 3 rows, K split in two, in clusters
    (GemmShape(4096, 4096, 4096), 1, 132, 1024),  # persistent: 66 clusters walk 1024 cluster tiles
])
def test_clusters_along_m_share_b(shape, cn, grid, ctiles):  # CLUSTER_M = 2: B's box in halves, CM x CN CTAs
    params = {"CLUSTER_M": 2, "CLUSTER_N": 2} if shape.M < 256 else {"CLUSTER_M": 2}
    k = _h8(params)
    d = k.decomposition(shape, H100_SMS)
    assert (d["CM"], d["CN"], d["CTILES"]) == (2, cn, ctiles)
    assert k.launch_config(shape, H100_SMS)[0][0] == grid and k.cluster_dims(shape, H100_SMS) == (2 * cn, 1, 1)
    assert dict(k.for_shape(shape, H100_SMS).shape_defines)["H8_CLUSTER_M"] == 2
    seen = _boxes(k, shape)
    tbm = 64 if shape.M <= 256 else 128
    assert seen[:2] == [(tbm // cn, 64), (32, 64)]  # A's box split along the cluster row, B's along its column
    # the traffic model's tile is the cluster's: A read once per cluster row, B once per cluster column
    assert (k.tiles(shape).BM, k.tiles(shape).BN) == (2 * tbm, 64 * cn)
    # one tile row: a second cluster row would lie wholly past M, so none
    assert _h8({"CLUSTER_M": 2}).decomposition(GemmShape(64, 4096, 14336), H100_SMS)["CM"] == 1


@pytest.mark.parametrize(("shape", "cm", "cn", "ctiles", "piece"), [
    (GemmShape(1000, 1000, 1000), 4, 2, 14, 24),  # cuBLAS's decomposition: 8 x 14 tiles, 2 x 7 clusters of 8
    (GemmShape(1024, 1024, 1024), 4, 1, 30, 24),  # rows on lines: no pairs along N, 4 x 1
    (GemmShape(600, 1000, 1000), 4, 2, 14, 24),  # 5 tile rows: the second cluster row three CTAs past M
    (GemmShape(150, 1000, 4096), 4, 1, 16, 16),  # skinny 64 x 64 tiles (SKINNY_BN): pieces of 16 rows
])
def test_clusters_of_four_along_m_load_b_in_pieces(shape, cm, cn, ctiles, piece):
    k = _h8({"BN": 72, "CLUSTER_M": 4, "STAGES": 7})
    d = k.decomposition(shape, H100_SMS)
    assert (d["CM"], d["CN"], d["CTILES"], d["BPIECE"]) == (cm, cn, ctiles, piece)
    assert k.cluster_dims(shape, H100_SMS) == (cm * cn, 1, 1)
    assert dict(k.for_shape(shape, H100_SMS).shape_defines)["H8_CLUSTER_M"] == 4
    seen = _boxes(k, shape)
    tbm = 64 if shape.M <= 256 else 128
    assert seen[:2] == [(tbm // cn, 64), (piece, 64)]  # A's box split along the cluster row, B's in pieces


@pytest.mark.parametrize(("params", "piece", "rows"), [
    ({"BN": 72, "CLUSTER_M": 4, "STAGES": 7}, 24, [0, 24, 48]),  # three pieces make up 72, the fourth CTA loads none
    ({"BN": 72, "CLUSTER_M": 2, "STAGES": 7}, 40, [0, 32]),  # 9 atoms in pieces of 5: the second over rows 32-39
    ({"BN": 80, "CLUSTER_M": 4, "STAGES": 7}, 24, [0, 24, 48, 56]),  # 10 atoms in pieces of 3: the last over 56-71
    ({"BN": 40, "CLUSTER_M": 4, "STAGES": 7}, 16, [0, 16, 24]),  # 5 atoms in pieces of 2, the fourth CTA none
])
def test_b_pieces_cover_the_tile_width_the_last_ending_at_it(params, piece, rows):
    """Each CTA of a cluster column loads B_PIECE rows of B's box at the kernel's row: rm * B_PIECE, the last piece
    ending at the box's end where the pieces do not make it up (min(rm * B_PIECE, BN - B_PIECE)), none where the
    pieces before cover the box. The rows so loaded cover the width, each piece inside it."""
    d = _h8(params).decomposition(GemmShape(1000, 1000, 1000), H100_SMS)
    tn, cm = d["TN"], d["CM"]
    assert d["BPIECE"] == piece and cm == params["CLUSTER_M"]
    loaded = [rm * piece if tn % piece == 0 else min(rm * piece, tn - piece) for rm in range(cm) if rm * piece < tn]
    assert loaded == rows
    covered = {r for start in loaded for r in range(start, start + piece)}
    assert covered == set(range(tn))
    assert (tn % piece != 0) == (len(loaded) * piece > tn)  # rows arrive twice only where pieces overlap


def test_a_clustered_build_multicasts_a_and_releases_on_its_peer(nvcc, disassembler):
    from gemmprof.measure import sass
    from gemmprof.measure.nvcc import compile_cubin

    def ops(kernel):
        out = compile_cubin(kernel, "sm_90", nvcc=nvcc, use_cache=False)
        assert out.ok, out.log[-2000:]
        return [op for _a, op, _args in sass.instructions(sass.disassemble(out.cubin))]

    shape = GemmShape(1000, 1000, 1000)
    pair, alone = (ops(_h8(p).for_shape(shape, H100_SMS)) for p in ({"CLUSTER_N": 2}, {"CLUSTER_N": 1}))
    assert any(op.startswith("UTMALDG.2D.MULTICAST") for op in pair)
    assert not any(op.startswith("UTMALDG.2D.MULTICAST") for op in alone)
    assert sum(op.startswith("UCGABAR_ARV") for op in pair) == 1 and not any(op.startswith("UCGABAR") for op in alone)
    assert not any(op.startswith("MEMBAR.ALL.GPU") for op in pair)  # the set-up's barrier is .relaxed, no closing one
    # 2 x 2: A and B both multicast, each release on the CTA itself, its row peer and its column peer
    square = ops(_h8({"CLUSTER_M": 2}).for_shape(shape, H100_SMS))
    multicasts = [sum(op.startswith("UTMALDG.2D.MULTICAST") for op in o) for o in (pair, square)]
    assert 0 < multicasts[0] < multicasts[1], multicasts
    # B's pieces overlapping (128 x 72 in 2 x 2) build the same loads as pieces that make up the box (128 x 64)
    overlap = ops(_h8({"BN": 72, "CLUSTER_M": 2, "STAGES": 7}).for_shape(shape, H100_SMS))
    assert sum(op.startswith("UTMALDG.2D.MULTICAST") for op in overlap) == multicasts[1]


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_h8_in_clusters_verifies_on_the_gpu(runner, tmp_path, dtype):
    """Pairs sharing A, at shapes with a CTA past N (15 tile columns), odd M and N, a skinny unsplit shape, a
    persistent walk over many cluster tiles, beta, and a split shape (launched without clusters)."""
    needs_hopper()
    for args in (["--size", "1024"], ["--size", "1000"], ["-m", "1000", "-n", "900", "-k", "520"],
                 ["-m", "4095", "-n", "4097", "-k", "1024"], ["-m", "128", "-n", "4096", "-k", "4096"],
                 ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.5"],
                 ["-m", "16", "-n", "4096", "-k", "4096"]):
        out = tmp_path / "pair.json"
        r = invoke(runner, ["run", "h8", "--param", "CLUSTER_N=2", "--dtype", dtype, *args, *VERIFY_ONLY, "-o",
                            str(out)])
        assert r.exit_code == 0, r.output
        row = json.loads(out.read_text())["variants"][0]
        assert row["status"] == "ok" and row["rel_error"] < 1e-3, (args, row)
    # 2 x 2 (CLUSTER_M = 2): an odd count of tile rows (600), a split with a cluster row past M (150), beta
    for args in (["--size", "1000"], ["-m", "600", "-n", "1000", "-k", "1000"], ["-m", "150", "-n", "1000", "-k",
                 "4096"], ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.5"]):
        out = tmp_path / "square.json"
        r = invoke(runner, ["run", "h8", "--param", "CLUSTER_M=2", "--param", "CLUSTER_N=2", "--param", "SPLIT_MAX=2",
                            "--dtype", dtype, *args, *VERIFY_ONLY, "-o", str(out)])
        assert r.exit_code == 0, r.output
        row = json.loads(out.read_text())["variants"][0]
        assert row["status"] == "ok" and row["rel_error"] < 1e-3, (args, row)


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("tile", [["BN=72", "CLUSTER_M=4"], ["BN=72", "CLUSTER_M=2"], ["BN=80", "CLUSTER_M=4"]])
def test_h8_with_b_in_pieces_verifies_on_the_gpu(runner, tmp_path, dtype, tile):
    """B's box in pieces: 4 x 2 clusters of 128 x 72 tiles (three pieces of 24, the fourth CTA of a column loading
    none), 2 x 2 of 128 x 72 (pieces of 40, the second over rows 32-39 of the first) and 4 x 2 of 128 x 80 (pieces
    of 24, the last over rows 56-71): 1000^3, cluster rows past M (600 rows), a persistent walk over many cluster
    tiles (4095 x 4097), alpha and beta (C read, h6's epilogue), no pairs along N where the rows are on lines
    (1024^3), and skinny 64 x 64 tiles with K split in two (pieces of 16 rows, cluster rows past M)."""
    needs_hopper()
    tile = [arg for p in tile for arg in ("--param", p)]
    for args in (["--size", "1000"], ["-m", "600", "-n", "1000", "-k", "1000"], ["-m", "4095", "-n", "4097", "-k",
                 "1024"], ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.5"],
                 ["--size", "1024"], ["-m", "150", "-n", "1000", "-k", "4096"]):
        out = tmp_path / "pieces.json"
        r = invoke(runner, ["run", "h8", *tile, "--param", "STAGES=7", "--param", "SPLIT_MAX=2", "--dtype", dtype,
                            *args, *VERIFY_ONLY, "-o", str(out)])
        assert r.exit_code == 0, r.output
        row = json.loads(out.read_text())["variants"][0]
        assert row["status"] == "ok" and row["rel_error"] < 1e-3, (args, row)


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_h8_with_its_epilogue_from_the_registers_verifies_on_the_gpu(runner, tmp_path, dtype):
    """Every epilogue from the registers (EPI_DIRECT, no staging buffers), in rule 3's 2 x 2 clusters of 128 x 80,
    pairs along N alone and 4 x 2 of 128 x 72: 1000^3, a persistent walk over rows of C of odd length (4095 x 4097:
    element by element), cluster rows past M (600), alpha and beta (300 x 520 x 136: C read), and K split in two
    (the serial reduction's slices add into C)."""
    needs_hopper()
    tiles = (["BN=80", "CLUSTER_M=2", "STAGES=7"], ["BN=64", "CLUSTER_M=1"], ["BN=72", "CLUSTER_M=4", "STAGES=7"])
    for tile in tiles:
        tile = [arg for p in tile for arg in ("--param", p)]
        for args in (["--size", "1000"], ["-m", "600", "-n", "1000", "-k", "1000"],
                     ["-m", "4095", "-n", "4097", "-k", "1024"],
                     ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.5"],
                     ["-m", "150", "-n", "1000", "-k", "4096"]):
            out = tmp_path / "direct.json"
            r = invoke(runner, ["run", "h8", *tile, "--param", "EPI_DIRECT=1", "--param", "CLUSTER_N=2", "--param",
                                "SPLIT_MAX=2", "--dtype", dtype, *args, *VERIFY_ONLY, "-o", str(out)])
            assert r.exit_code == 0, r.output
            row = json.loads(out.read_text())["variants"][0]
            assert row["status"] == "ok" and row["rel_error"] < 1e-3, (tile, args, row)


def test_explain_counts_multicast_among_h8s_techniques():
    # h8 pairs its CTAs by TMA multicast where rows are off 128-byte lines: explain must not propose multicast as
    # the next step from h8, and counts it among what h8 applies (beside h6's techniques and split-K)
    from gemmprof.model.explain_techniques import RUNG_TECHNIQUES, applied_by

    assert RUNG_TECHNIQUES["h8"] == ("split_k", "multicast")
    assert {"persistent", "split_k", "multicast"} <= set(applied_by("h8"))
    assert dict(_h8().for_shape(GemmShape(1000, 1000, 1000), H100_SMS).shape_defines)["H8_CLUSTER_N"] == 2
