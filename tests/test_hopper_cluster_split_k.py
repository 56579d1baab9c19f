"""h13, split-K across the CTAs of a thread-block cluster with the partials summed in distributed shared memory: the
decomposition's rule (how many CTAs per cluster at each shape), the launch it gives, the constraints, the exchange's
shared-memory layout (every partial in its own place, conflict-free), what nvcc builds (remote stores, the cluster
barrier, no spills), and verified runs on an H100 (marker gpu) with 1, 2 and 4 CTAs per cluster, both epilogues,
bf16, alpha and beta, and the same bits launch after launch."""

import itertools

import pytest
from context import needs_gpu
from hopper_runs import needs_hopper, same_bits_launch_after_launch, verified
from test_hopper_clusters import _cdiv

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.results.shape import GemmShape


def h13(**params):
    return bind(specmod.select(["h13"])[0], params)


def _rule(M, N, K, bn=128, bm=128, ks_max=4, min_ktiles=4, sms=132, quads=30):
    """The spec's rule, written out: the most slices (4, then 2) whose CTAs fit one wave, each slice at least
    min_ktiles deep and owning whole 32-column stores."""
    tiles, ktiles = _cdiv(M, bm) * _cdiv(N, bn), _cdiv(K, 64)
    for ks in (4, 2):
        fits = tiles <= quads if ks == 4 else True  # clusters of 4: only as many as the GPCs hold at once
        if ks <= ks_max and tiles * ks <= sms and fits and ktiles >= ks * min_ktiles and bn // ks >= 32:
            return ks
    return 1


SHAPES = [(1000, 1000, 1000), (1024, 1024, 1024), (128, 4096, 4096), (16, 4096, 4096), (2048, 2048, 2048),
          (4096, 4096, 4096), (1000, 900, 520), (640, 640, 128), (128, 128, 8), (384, 1000, 4096), (4095, 4097, 1024),
          (512, 1024, 8192), (384, 1408, 4096)]  # 32 and 33 tiles: room for 4 slices, but not 32 clusters of 4


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bn, stages", [(64, 6), (128, 6), (256, 4)])
def test_the_cluster_holds_as_many_slices_of_k_as_one_wave_has_room_for(shape, bn, stages):
    k = h13(BN=bn, STAGES=stages)
    d = k.decomposition(GemmShape(*shape), 132)
    ks = _rule(*shape, bn=bn)
    assert d["KS"] == ks and d["TILES"] == _cdiv(shape[0], 128) * _cdiv(shape[1], bn)
    grid, block, smem = k.launch_config(GemmShape(*shape), sms=132)
    assert grid == (d["TILES"] * ks, 1, 1) and block == (384, 1, 1)
    assert k.cluster_dims(GemmShape(*shape), 132) == ((ks, 1, 1) if ks > 1 else None)  # None: a plain launch
    assert smem == stages * (128 + bn) * 64 * 2 + 1024 + 2 * 16384 <= 232448
    if ks > 1:
        assert grid[0] <= 132  # one wave


def test_the_rule_draws_every_cluster_size():
    # the shapes above reach 1, 2 and 4 slices, so the GPU tests below run each exchange
    seen = {_rule(*s) for s in SHAPES}
    assert seen == {1, 2, 4}
    assert h13().decomposition(GemmShape(1000, 1000, 1000), 132) == {"TILES": 64, "KTILES": 16, "KS": 2}
    assert h13().decomposition(GemmShape(128, 3840, 4096), 132)["KS"] == 4  # 30 tiles: 30 clusters of 4
    assert h13(KS_MAX=2).decomposition(GemmShape(128, 4096, 4096), 132)["KS"] == 2
    assert h13(KS_MAX=1).decomposition(GemmShape(1000, 1000, 1000), 132)["KS"] == 1
    # too few k-tiles for two slices of SPLIT_MIN_KTILES each: no split
    assert h13().decomposition(GemmShape(1000, 1000, 448), 132)["KS"] == 1
    # 32 tiles: 128 CTAs fit 132 SMs, but the H200 holds 30 clusters of 4 at once (QUADS_AT_ONCE): 2 slices
    assert h13().decomposition(GemmShape(512, 1024, 8192), 132)["KS"] == 2
    assert h13(QUADS_AT_ONCE=33).decomposition(GemmShape(512, 1024, 8192), 132)["KS"] == 4
    assert any(_cdiv(m, 128) * _cdiv(n, 128) in (31, 32, 33) for m, n, _k in SHAPES)  # the generator draws them


def test_the_build_for_a_shape_compiles_its_cluster_size():
    def defines(shape):
        return dict(h13().for_shape(GemmShape(*shape), 132).shape_defines)

    assert defines((1000, 1000, 1000)) == {"H13_KS": 2, "ROWS_ON_SECTORS": 1}
    assert defines((128, 3840, 4096))["H13_KS"] == 4
    assert defines((4096, 4096, 4096))["H13_KS"] == 1
    assert defines((1000, 1022, 1000)) == {"H13_KS": 2, "ROWS_ON_SECTORS": 0}  # 8 x 8 tiles, rows off sectors


@pytest.mark.parametrize("params, message", [({"KS_MAX": 3}, "KS_MAX"), ({"BN": 96}, "wgmma N"),
                                             ({"STAGES": 7}, "227 KiB"), ({"CONSUMERS": 3}, "CONSUMERS"),
                                             ({"STAGES": 1}, "at least two"), ({"L2_PROMOTION": 32}, "L2_PROMOTION")])
def test_constraints_name_what_is_wrong(params, message):
    with pytest.raises(SpecError, match=message):
        h13(**params)


def _slot_offsets(ks, consumers, bn):
    """Byte offsets the exchange writes in one receiving rank: (slot, warpgroup, float4 v, thread t), as the kernel
    computes them (slot * CONSUMERS + c) * (OWN / 4) * 2048 + v * 2048 + t * 16."""
    own = bn // (2 * ks)
    return {(slot, c, v, t): ((slot * consumers + c) * (own // 4) + v) * 2048 + t * 16
            for slot in range(ks - 1) for c in range(consumers) for v in range(own // 4) for t in range(128)}


@pytest.mark.parametrize("ks, bn", [(2, 64), (2, 128), (2, 256), (4, 128), (4, 256)])
def test_every_partial_has_its_own_place_inside_the_drained_stages(ks, bn):
    offsets = _slot_offsets(ks, 2, bn)
    starts = sorted(offsets.values())
    assert len(set(starts)) == len(starts)  # no two float4s overlap (16 bytes each, starts 16 apart at least)
    assert all(b - a >= 16 for a, b in itertools.pairwise(starts))
    assert starts[-1] + 16 == (ks - 1) * 128 * bn * 4 // ks  # exactly (KS - 1) / KS of the fp32 tile
    stages = 4 if bn == 256 else 6
    assert starts[-1] + 16 <= stages * (128 + bn) * 64 * 2
    # each sender rank r lands in a different slot of receiver q: (r - q - 1) mod KS covers 0 .. KS - 2
    for q in range(ks):
        assert sorted((r + ks - q - 1) % ks for r in range(ks) if r != q) == list(range(ks - 1))


def test_a_warps_float4s_cover_the_banks_without_conflicts():
    # one v4 access of a warp: 32 threads x 16 bytes = 512 contiguous bytes, four 128-byte wavefronts, each bank once
    # per wavefront (the minimum for 16-byte accesses)
    offsets = _slot_offsets(2, 2, 128)
    for v in range(8):
        warp = [offsets[(0, 0, v, t)] for t in range(32)]
        assert warp == list(range(warp[0], warp[0] + 512, 16))


def test_what_nvcc_builds_remote_stores_between_two_cluster_barriers(nvcc, disassembler):
    from gemmprof.measure import sass
    from gemmprof.measure.build import parse_ptxas
    from gemmprof.measure.nvcc import compile_cubin

    def ops(kernel):
        out = compile_cubin(kernel, "sm_90", nvcc=nvcc, use_cache=False)
        assert out.ok and out.arch == "sm_90a", out.log[-2000:]
        res = parse_ptxas(out.log)
        assert res.spill_stores == res.spill_loads == 0, out.log[-2000:]
        return [op for _a, op, _args in sass.instructions(sass.disassemble(out.cubin))]

    two = ops(h13().for_shape(GemmShape(1000, 1000, 1000), 132))  # KS = 2: the build for this shape
    # the exchange: 8 asynchronous 16-byte stores into the peer per other rank, unrolled over both ranks (one branch
    # runs), after one cluster barrier (.relaxed: no GPU-wide fence anywhere); completion is counted on mbarriers
    assert sum(op == "STAS.128" for op in two) == 2 * 8
    assert sum(op.startswith("UCGABAR_ARV") for op in two) == 2  # one barrier, in the producer's and consumers' code
    assert not any(op.startswith("MEMBAR.ALL.GPU") or op.startswith("MEMBAR.SC") for op in two)
    assert sum(op.startswith("UTMASTG") for op in two) == 2  # 64 columns a rank: two 32-column TMA stores
    one = ops(h13().for_shape(GemmShape(4096, 4096, 4096), 132))
    assert not any(op.startswith("UCGABAR") or op == "STAS.128" for op in one)  # KS = 1: no exchange
    assert sum(op.startswith("UTMASTG") for op in one) == 4


# -- on the H100 --------------------------------------------------------------------------------------------------
# KS = 2: 1000^3 (clipped at both edges), 1024^3, 1000 x 900 x 520, 128 x 4096 x 4096 (32 tiles: more clusters of 4
# than fit at once); KS = 4: 128 x 3840 x 4096, 16 x 3840 x 4096;
# KS = 1: 2048^3, 640^2 x 128 (too few k-tiles); h6's epilogue with KS = 2: N % 4 != 0 (1000 x 1022 x 1000) and
# beta (300 x 520 x 1032, whose K also ends in a short k-tile)
SHAPES_GPU = [["--size", "1000"], ["--size", "1024"], ["-m", "1000", "-n", "900", "-k", "520"],
              ["-m", "128", "-n", "4096", "-k", "4096"], ["-m", "128", "-n", "3840", "-k", "4096"],
              ["-m", "16", "-n", "3840", "-k", "4096"],
              ["--size", "2048"], ["-m", "640", "-n", "640", "-k", "128"],
              ["-m", "1000", "-n", "1022", "-k", "1000"], ["-m", "300", "-n", "520", "-k", "1032", "--alpha", "1.5",
                                                            "--beta", "-0.5"]]


@needs_gpu
@pytest.mark.parametrize("params", [[], ["--param", "BN=256", "--param", "STAGES=4"], ["--param", "BN=64"],
                                    ["--param", "CONSUMERS=1"]])
def test_h13_verifies_on_the_gpu(runner, tmp_path, params):
    needs_hopper()
    for shape in SHAPES_GPU:
        verified(runner, tmp_path, "h13", ["--dtype", "fp16", *shape, *params])


@needs_gpu
def test_h13_bf16_verifies_and_repeats_its_bits(runner, tmp_path):
    needs_hopper()
    verified(runner, tmp_path, "h13", ["--dtype", "bf16", "--size", "1000"])
    verified(runner, tmp_path, "h13", ["--dtype", "bf16", "-m", "128", "-n", "3840", "-k", "4096"])
    for shape in (GemmShape(1000, 1000, 1000), GemmShape(128, 3840, 4096)):  # KS = 2 and 4
        same_bits_launch_after_launch(h13().for_shape(shape, 132), shape)
