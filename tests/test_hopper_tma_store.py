"""h12, h7 with a TMA-store epilogue on a balanced persistent grid: its grid (the fewest clusters that keep the rounds
of tiles), the tensor map of C (and the unused one where C's rows are off 16 bytes), the spec's `when` on a tensor
map, what nvcc builds (bulk tensor stores, swizzled staging, no spills), and verified runs on an H100 (marker gpu)
through both epilogues: TMA stores (N % 4 == 0, beta == 0) clipped at odd M and N, and h6's where N % 4 != 0 or
beta != 0."""

import numpy as np
import pytest
from context import needs_gpu
from hopper_runs import needs_hopper, verified
from test_hopper_clusters import _cdiv, _sass
from test_hopper_rungs import _Operand

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.catalog.launch_fields import launch_fields
from gemmprof.errors import SpecError
from gemmprof.measure import hopper_host, tma_launch
from gemmprof.results.shape import GemmShape

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (1024, 1024, 1024), (1000, 1000, 1000), (4095, 4097, 1024),
          (1024, 11008, 4096), (16384, 4096, 4096), (384, 1000, 128), (128, 128, 8), (8192, 4096, 4096)]


def h12(**params):
    return bind(specmod.select(["h12"])[0], params)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("cm", [1, 2])
@pytest.mark.parametrize("bn", [256, 0])
def test_the_balanced_grid_keeps_the_rounds_with_the_fewest_clusters(shape, cm, bn):
    M, N, _ = shape
    k = h12(CLUSTER_M=cm, BN=bn)
    tn = k.decomposition(GemmShape(*shape), 132)["TN"]  # bn = 0: the width fitted to the shape
    assert tn == bn or bn == 0
    ctiles = _cdiv(_cdiv(M, 128), cm) * _cdiv(N, tn)
    room = 132 // cm
    h7_rounds = _cdiv(ctiles, min(room, ctiles))
    grid, block, smem = k.launch_config(GemmShape(*shape), sms=132)
    clusters = grid[0] // cm
    assert grid[0] % cm == 0 and grid[0] <= 132 and block == (384, 1, 1)
    assert _cdiv(ctiles, clusters) == h7_rounds  # as many rounds as h7's grid needs
    assert _cdiv(ctiles, clusters - 1) > h7_rounds if clusters > 1 else True  # and no cluster fewer keeps them
    # 4 stages of 128 x 64 A and tn x 64 B, 1 KiB to align them, 2 x 2 staging buffers of 8 KiB
    assert smem == 4 * (128 + tn) * 64 * 2 + 1024 + 32768 <= 232448
    h7_grid, _, _ = h12(CLUSTER_M=cm, BN=bn, BALANCED=0).launch_config(GemmShape(*shape), sms=132)
    assert h7_grid == (cm * min(room, ctiles), 1, 1)


def test_the_balanced_grid_at_the_sizes_it_was_built_for():
    # 4096^2: 256 cluster tiles, 4 rounds on 66 clusters or on 64; 8192^2: 1024, 16 rounds, 64 clusters
    assert h12().launch_config(GemmShape(4096, 4096, 4096), sms=132)[0] == (128, 1, 1)
    assert h12().launch_config(GemmShape(8192, 8192, 8192), sms=132)[0] == (128, 1, 1)
    d = h12().decomposition(GemmShape(4096, 4096, 4096), 132)
    assert (d["TN"], d["CM"], d["CTILES"], d["ROUNDS"]) == (256, 2, 256, 4)
    assert h12().decomposition_note(GemmShape(4096, 4096, 4096), 132) == "CM=2, TN=256, CTILES=256, ROUNDS=4"


def test_the_tile_width_fitted_to_the_rounds_of_tiles():
    # 1024 x 11008 x 4096: 43 columns of 256 are 2.6 rounds (3); alone, 66 columns of 168 are 4 rounds exactly
    # (cuBLAS's tile there is 168 wide); in pairs (CLUSTER_M=2) 66 columns of 168 are 4 rounds of 66 pairs, cuBLAS's
    # decomposition there (168 x 128 tiles in 1 x 2 clusters, column-major terms), B's box in two pieces of 88 rows
    llm = GemmShape(1024, 11008, 4096)
    assert h12().decomposition_note(llm, 132) == "CM=1, TN=168, CTILES=528, ROUNDS=4"
    assert h12(CLUSTER_M=2).decomposition_note(llm, 132) == "CM=2, TN=168, CTILES=264, ROUNDS=4"
    assert h12().cluster_dims(llm, 132) is None and h12(CLUSTER_M=2).cluster_dims(llm, 132) == (2, 1, 1)
    # the width and cluster are what the build for the shape compiles, the B box a pair's piece of the width (21
    # atoms: two pieces of 11, overlapping by one), the traffic model's tile the cluster's
    assert h12().for_shape(llm, 132).shape_defines == (("H12_BN", 168), ("H12_CLUSTER_M", 1))
    assert h12(CLUSTER_M=2).for_shape(llm, 132).shape_defines == (("H12_BN", 168), ("H12_CLUSTER_M", 2))
    for cm, rows in ((0, 168), (2, 88)):
        b_box = [t for op, t in tma_launch.tiled_maps(h12(CLUSTER_M=cm), llm, 132) if op == "B"][0]
        assert (b_box.box_rows, b_box.box_cols) == (rows, 64)
    def tile(kernel, *at):
        t = kernel.tiles(*at)
        return t.BM, t.BN

    assert tile(h12(), llm, 132) == (128, 168) and tile(h12(CLUSTER_M=2), llm, 132) == (256, 168)
    # without an SM count, the general binary's tile (256 in pairs, as its build without a shape compiles BN = 0)
    assert tile(h12(), llm) == tile(h12()) == (256, 256)
    # a width given is kept at every shape, in pairs where they can split it
    assert h12(BN=128).decomposition(llm, 132)["TN"] == 128 and h12(BN=128).decomposition(llm, 132)["CM"] == 2
    assert h12(BN=168, CLUSTER_M=0).decomposition(llm, 132)["CM"] == 1
    # the squares and the long-K shapes of the sweep keep 256 in pairs: their SASS is the one measured before
    for shape in ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 4096, 14336), (16384, 4096, 4096)):
        assert h12().for_shape(GemmShape(*shape), 132).shape_defines == (("H12_BN", 256), ("H12_CLUSTER_M", 2))


def test_fitted_widths_over_generated_shapes_are_wgmma_widths_whose_pieces_cover_them():
    # every fitted width is a multiple of 8 within 128-256; in pairs each CTA loads a piece of B of whole 8-row
    # swizzle atoms, the two pieces covering the width (its halves at a multiple of 16, overlapping by one atom off
    # it); by default pairs exactly where the width is 256; the grid draws fitted and kept widths, both kinds in pairs
    seen = {0: set(), 2: set()}
    for m in (128, 1000, 1024, 2048, 3072, 4096, 8192):
        for n in (1000, 4096, 5120, 11008, 13824, 14336):
            for cm in (0, 2):
                d = h12(CLUSTER_M=cm).decomposition(GemmShape(m, n, 4096), 132)
                assert 128 <= d["TN"] <= 256 and d["TN"] % 8 == 0 and d["BPIECE"] % 8 == 0
                assert d["CM"] * d["BPIECE"] - d["TN"] == (8 if d["CM"] == 2 and d["TN"] % 16 else 0)
                assert d["CM"] == (2 if cm == 2 or d["TN"] == 256 else 1)
                seen[cm].add(d["TN"])
    assert 256 in seen[0] and 256 in seen[2] and len(seen[0]) >= 3 and len(seen[2]) >= 3
    assert any(w % 16 for w in seen[0]) and any(w % 16 for w in seen[2])  # 168 alone and in pairs


def _maps(kernel, shape):
    seen = []

    def fake_encode(address, tmap):
        seen.append((address, tmap.dtype, tmap.rows, tmap.cols, tmap.box_rows, tmap.box_cols, tmap.swizzle))
        return np.void(bytes(128))

    maps = tma_launch.encode_maps(tma_launch.tiled_maps(kernel, shape, 132),
                                  {"A": _Operand(1 << 20), "B": _Operand(2 << 20), "C": _Operand(3 << 20)},
                                  encode=fake_encode)
    return maps, seen


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_c_has_a_tensor_map_of_fp32_boxes_one_staged_store_each(dtype):
    k = bind(specmod.select(["h12"])[0], {}, dtype=dtype)
    maps, seen = _maps(k, GemmShape(4095, 4096, 1024))
    assert len(maps) == 3
    assert seen == [(1 << 20, dtype, 4095, 1024, 128, 64, 128), (2 << 20, dtype, 4096, 1024, 128, 64, 128),
                    (3 << 20, "fp32", 4095, 4096, 64, 32, 128)]


@pytest.mark.parametrize("n", [4097, 4098, 4099, 1030])
def test_rows_of_c_off_16_bytes_get_an_unused_map_of_zeros(n):
    assert n % 4 != 0
    maps, seen = _maps(h12(), GemmShape(4096, n, 1024))
    assert [s[0] for s in seen] == [1 << 20, 2 << 20]  # C is not encoded
    assert bytes(maps[2]) == bytes(128) == bytes(hopper_host.unused_map())
    assert [op for op, tmap in tma_launch.tiled_maps(h12(), GemmShape(4096, n, 1024), 132)] == ["A", "B", "C"]


def test_a_tensor_map_condition_is_checked_and_c_is_an_operand():
    base = {"dtype": "fp16"}
    item = {"operand": "C", "rows": "M", "cols": "N", "box": [64, 32], "when": "N % 4 == 0"}
    (arg,) = launch_fields("x.yaml", {**base, "tma_args": [item]})["tma_args"]
    assert arg.operand == "C" and arg.when == "N % 4 == 0" and arg.l2_promotion == 256
    (arg,) = launch_fields("x.yaml", {**base, "tma_args": [{**item, "l2_promotion": "L2P"}]})["tma_args"]
    assert arg.l2_promotion == "L2P"  # an expression, e.g. h8's parameter L2_PROMOTION
    with pytest.raises(SpecError, match=r"tma_args\[0\].when"):
        launch_fields("x.yaml", {**base, "tma_args": [{**item, "when": "N %% 4"}]})
    with pytest.raises(SpecError, match="operand: A|B|C"):
        launch_fields("x.yaml", {**base, "tma_args": [{**item, "operand": "D"}]})
    with pytest.raises(SpecError, match="whenn"):
        launch_fields("x.yaml", {**base, "tma_args": [{**item, "whenn": "1"}]})


@pytest.mark.parametrize("params, message", [({"CLUSTER_M": 4}, "2 x 1"), ({"GROUP_M": 3}, "whole clusters"),
                                             ({"STAGES": 5}, "227 KiB"), ({"EPI_BUFS": 4}, "227 KiB"),
                                             ({"EPI_BUFS": 3}, "EPI_BUFS"), ({"BALANCED": 2}, "BALANCED"),
                                             ({"BN": 260}, "multiple of 8"), ({"BN": 100}, "multiple of 8"),
                                             ({"GROUP_M": 5}, "whole clusters")])
def test_constraints_name_what_is_wrong(params, message):
    with pytest.raises(SpecError, match=message):
        h12(**params)


def test_explain_places_h12_after_h7():
    from gemmprof.model.explain_techniques import BRANCHES, RUNG_TECHNIQUES, applied_by

    assert BRANCHES["h12"] == "h7" and RUNG_TECHNIQUES["h12"] == ("tma_store", "wave_fit")
    assert {"persistent", "multicast", "tma_store", "wave_fit"} <= set(applied_by("h12"))


def test_what_nvcc_builds_bulk_tensor_stores_beside_h7s_main_loop(nvcc, disassembler):
    from gemmprof.measure import sass
    from gemmprof.measure.nvcc import compile_cubin

    counts = _sass(h12(), nvcc)  # 168 registers, no spills (asserted there)
    h7 = _sass(bind(specmod.select(["h7"])[0]), nvcc)
    # h7's main loop (as many wgmmas as nvcc makes of it there), its multicast loads, and no GPU-wide fence (none
    # at its one, relaxed cluster barrier, none on the releases, none in the epilogue)
    assert counts["HGMMA"] == h7["HGMMA"] > 0 and counts["UTMALDG.2D.MULTICAST"] > 0
    assert counts["MEMBAR.ALL.GPU"] == h7["MEMBAR.ALL.GPU"] == 0
    out = compile_cubin(h12(), "sm_90", nvcc=nvcc, use_cache=False)
    ops = [op for _a, op, _args in sass.instructions(sass.disassemble(out.cubin))]
    # one bulk tensor store per 32 columns of a 256-column tile, unrolled; the staging writes are 64-bit
    assert sum(op.startswith("UTMASTG") for op in ops) == 8
    assert sum(op == "STS.64" for op in ops) >= 8 * 8
    # fitted widths (1024 x 11008 x 4096): 168 columns alone in 6 stores (the last one the tile's last 32 columns,
    # overlapping the fifth), in pairs too (B's two pieces multicast), 240 in pairs in 8; no spills (_sass)
    llm = GemmShape(1024, 11008, 4096)
    for params, stores, multicast in (({}, 6, False), ({"CLUSTER_M": 2}, 6, True), ({"BN": 240}, 8, True)):
        built = h12(**params).for_shape(llm, 132)
        assert _sass(built, nvcc)["HGMMA"] > 0
        out = compile_cubin(built, "sm_90", nvcc=nvcc, use_cache=False)
        ops = [op for _a, op, _args in sass.instructions(sass.disassemble(out.cubin))]
        assert sum(op.startswith("UTMASTG") for op in ops) == stores
        assert any(op.startswith("UTMALDG.2D.MULTICAST") for op in ops) == multicast


# -- on the H100 --------------------------------------------------------------------------------------------------
# TMA stores: 4096 (aligned), 4095 x 4096 (the last tile row clipped), 1000^3 (clipped at both edges), 384 x 1000
# (3 tile rows: a cluster's second tile past M), 2048 (several tiles per cluster); h6's epilogue: N % 4 != 0, beta
TMA_SHAPES = [["--size", "4096"], ["-m", "4095", "-n", "4096", "-k", "1024"], ["--size", "1000"],
              ["-m", "384", "-n", "1000", "-k", "128"], ["--size", "2048"], ["-m", "128", "-n", "128", "-k", "8"]]
DIRECT_SHAPES = [["-m", "4095", "-n", "4097", "-k", "1024"], ["-m", "1000", "-n", "1030", "-k", "520"],
                 ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.5"]]


@needs_gpu
@pytest.mark.parametrize("params", [[], ["--param", "CLUSTER_M=1"], ["--param", "CLUSTER_M=2"],
                                    ["--param", "BALANCED=0"], ["--param", "STAGES=3", "--param", "EPI_BUFS=4"]])
def test_h12_verifies_on_the_gpu(runner, tmp_path, params):
    needs_hopper()
    for shape in TMA_SHAPES + DIRECT_SHAPES:
        verified(runner, tmp_path, "h12", ["--dtype", "fp16", *shape, *params])


@needs_gpu
@pytest.mark.parametrize("params", [["--param", "BN=240"], ["--param", "BN=168", "--param", "CLUSTER_M=1"],
                                    ["--param", "BN=168", "--param", "CLUSTER_M=2"],
                                    ["--param", "BN=232", "--param", "CLUSTER_M=2"],
                                    ["--param", "BN=200", "--param", "CLUSTER_M=1"],
                                    ["--param", "BN=136", "--param", "CLUSTER_M=1", "--param", "STAGES=5"],
                                    ["--param", "BN=32"]])
def test_h12_widths_off_32_columns_verify_on_the_gpu(runner, tmp_path, params):
    # widths whose last TMA store overlaps the one before (and the direct epilogue's last chunk, beta != 0, which
    # must not add beta * C twice), at aligned, clipped and odd shapes
    needs_hopper()
    for shape in TMA_SHAPES + DIRECT_SHAPES:
        verified(runner, tmp_path, "h12", ["--dtype", "fp16", *shape, *params])


@needs_gpu
def test_h12_fitted_widths_verify_on_the_gpu(runner, tmp_path):
    # the default (BN = 0) at shapes whose fitted width is not 256: 168 alone, 168 in pairs (B's box in two pieces
    # of 88 rows overlapping by 8), bf16, beta
    needs_hopper()
    for extra in ([], ["--param", "CLUSTER_M=2"], ["--dtype", "bf16"], ["--beta", "0.5", "--alpha", "2"],
                  ["--param", "CLUSTER_M=2", "--dtype", "bf16", "--beta", "0.5"]):
        verified(runner, tmp_path, "h12", ["--dtype", "fp16", "-m", "1024", "-n", "11008", "-k", "4096", *extra])
    verified(runner, tmp_path, "h12", ["--dtype", "fp16", "-m", "2000", "-n", "5120", "-k", "520"])


@needs_gpu
def test_h12_bf16_and_alpha_verify_on_the_gpu(runner, tmp_path):
    needs_hopper()
    verified(runner, tmp_path, "h12", ["--dtype", "bf16", "-m", "4095", "-n", "4096", "-k", "1024"])
    verified(runner, tmp_path, "h12", ["--dtype", "bf16", "-m", "4095", "-n", "4097", "-k", "1024"])
    verified(runner, tmp_path, "h12", ["-m", "1000", "-n", "1000", "-k", "520", "--alpha", "-2.5"])


def test_four_staging_buffers_fit_beside_three_stages():
    _, _, smem = h12(STAGES=3, EPI_BUFS=4).launch_config(GemmShape(4096, 4096, 4096), sms=132)
    assert smem == 3 * (128 + 256) * 64 * 2 + 1024 + 2 * 4 * 8192 <= 232448


def _staging_banks(t, h, lane, reorder):
    """The two banks one lane's 64-bit staging write covers in write (t, h) of hopper.cuh's store_acc_tma: row r of
    the 128-byte swizzled buffer, 16-byte chunk (2 jj + lane % 4 / 2) ^ (r % 8), half (lane % 2)."""
    r0 = lane >> 2
    jj = t ^ 2 if reorder and r0 & 1 else t
    chunk = (2 * jj + ((lane & 3) >> 1)) ^ ((r0 + 8 * h) & 7)
    word = chunk * 4 + (lane & 1) * 2  # the row's 128 bytes are the 32 banks once
    return {word % 32, (word + 1) % 32}


@pytest.mark.parametrize("t", range(4))
@pytest.mark.parametrize("h", range(2))
def test_the_staging_writes_of_a_half_warp_cover_the_32_banks_once(t, h):
    # a warp's 64-bit shared stores go out a half-warp (256 bytes) at a time: conflict-free when each half-warp's
    # 16 lanes cover the 32 banks once; in the plain order rows r and r ^ 1 share four chunks (2-way, as ncu counted:
    # 2.40 conflicts per request at 4096)
    for lanes in (range(16), range(16, 32)):
        ordered = [b for lane in lanes for b in _staging_banks(t, h, lane, reorder=True)]
        plain = [b for lane in lanes for b in _staging_banks(t, h, lane, reorder=False)]
        assert sorted(ordered) == list(range(32))
        assert len(set(plain)) == 16  # the layout before: half the banks, each twice


def test_every_thread_writes_each_of_its_blocks_once():
    # the reordering permutes a thread's four n8 blocks of a 32-column store: all four written, none twice
    for lane in range(32):
        seen = sorted((t ^ 2 if (lane >> 2) & 1 else t) for t in range(4))
        assert seen == [0, 1, 2, 3]
