"""h9, ping-pong consumers in thread-block clusters: its spec, grid and cluster shape, the tensor-map boxes of each
cluster shape, its constraints, what nvcc builds from it (two m64 wgmmas per k-step, multicast copies, no GPU-wide
fence on the releases), and verified runs on an H100 (marker gpu) at shapes where a CTA has one tile, an odd count
of tiles, tiles past the edges, and with beta."""


import numpy as np
import pytest
from context import needs_gpu
from hopper_runs import needs_hopper, verified
from test_hopper_clusters import EPILOGUE_SMEM, _cdiv, _sass
from test_hopper_rungs import _Operand

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.measure import tma_launch
from gemmprof.model.traffic import get_dtype, tiled_traffic
from gemmprof.results.shape import GemmShape

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (1000, 1030, 520), (4095, 4097, 1024), (384, 1024, 128),
          (100, 300, 64), (128, 128, 8)]


def h9(**params):
    return bind(specmod.select(["h9"])[0], params)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("cm, cn", [(2, 2), (2, 1), (1, 2), (1, 1)])
def test_the_grid_is_whole_clusters_over_cluster_tiles(shape, cm, cn):
    k = h9(CLUSTER_M=cm, CLUSTER_N=cn)
    grid, block, smem = k.launch_config(GemmShape(*shape), sms=132)
    M, N, _ = shape
    ctiles = _cdiv(_cdiv(M, 128), cm) * _cdiv(_cdiv(N, 128), cn)
    cluster = cm * cn
    assert k.cluster_dims() == (None if cluster == 1 else (cluster, 1, 1))
    assert grid == (cluster * min(132 // cluster, ctiles), 1, 1) and grid[0] <= 132
    # 6 stages of a 128 x 128 tile's A and B, 1 KiB to align them, the staged epilogue's slices
    assert block == (384, 1, 1) and smem == 6 * (128 + 128) * 64 * 2 + 1024 + EPILOGUE_SMEM <= 232448


@pytest.mark.parametrize("params, message", [
    ({"CLUSTER_M": 4}, "a cluster is 1 or 2 CTAs"),
    ({"GROUP_M": 3}, "whole clusters"),
    ({"BM": 128, "BN": 256}, "128 registers"),
    ({"BM": 96}, "BM"),
    ({"STAGES": 7}, "227 KiB"),
])
def test_constraints_name_what_is_wrong(params, message):
    with pytest.raises(SpecError, match=message):
        h9(**params)


@pytest.mark.parametrize("params, a_box, b_box", [({"CLUSTER_N": 2}, (64, 64), (64, 64)),
                                                  ({}, (128, 64), (64, 64)),
                                                  ({"CLUSTER_M": 1, "CLUSTER_N": 2}, (64, 64), (128, 64)),
                                                  ({"CLUSTER_M": 1, "CLUSTER_N": 1}, (128, 64), (128, 64))])
def test_each_cta_loads_its_slice_of_the_shared_boxes(params, a_box, b_box):
    seen = []

    def fake_encode(address, tmap):
        seen.append((tmap.rows, tmap.cols, tmap.box_rows, tmap.box_cols, tmap.swizzle))
        return np.void(bytes(128))

    k = bind(specmod.select(["h9"])[0], params, dtype="bf16")
    tma_launch.encode_maps(tma_launch.tiled_maps(k, GemmShape(4095, 4097, 1024)),
                           {"A": _Operand(1 << 20), "B": _Operand(2 << 20)}, encode=fake_encode)
    assert seen == [(4095, 1024, *a_box, 128), (4097, 1024, *b_box, 128)]


def test_the_traffic_model_reads_each_operand_once_per_cluster_tile():
    shape, fp16 = GemmShape(4096, 4096, 4096), get_dtype("fp16")
    h6 = tiled_traffic(shape, fp16, bind(specmod.select(["h6"])[0]).tiles())
    alone = tiled_traffic(shape, fp16, h9(CLUSTER_M=1, CLUSTER_N=1).tiles())
    pair = tiled_traffic(shape, fp16, h9().tiles())
    square = tiled_traffic(shape, fp16, h9(CLUSTER_N=2).tiles())
    # per k-tile: h6 reads 48 KiB for a 128 x 256 tile; h9 alone 32 KiB for 128 x 128 (4/3 of h6's per FLOP); the
    # default 2 x 1 cluster tile is 256 x 128, 48 KiB for two CTAs (h6's); 2 x 2 is 256 x 256, 64 KiB for four (2/3)
    assert alone.gmem_element_reads * 3 == h6.gmem_element_reads * 4
    assert pair.gmem_element_reads == h6.gmem_element_reads
    assert square.gmem_element_reads * 3 == h6.gmem_element_reads * 2


def test_explain_places_h9_beside_h6():
    from gemmprof.model.explain_techniques import BRANCHES, RUNG_TECHNIQUES, applied_by

    assert BRANCHES["h9"] == "h6" and RUNG_TECHNIQUES["h9"] == ("pingpong",)
    assert {"persistent", "wgmma", "pingpong"} <= set(applied_by("h9"))


def test_what_nvcc_builds_two_wgmmas_per_k_step_multicast_and_no_fenced_release(nvcc, disassembler):
    square, alone = _sass(h9(CLUSTER_N=2), nvcc), _sass(h9(CLUSTER_M=1, CLUSTER_N=1), nvcc)
    # 4 k-steps of 16 in a k-tile of 64, two m64n128 wgmmas each (one per 64 rows of the consumer's tile): 8 per
    # k-tile, the main loop unrolled into whole k-tiles (three since the descriptors are made once)
    assert square["HGMMA"] == alone["HGMMA"] and square["HGMMA"] in (8, 16, 24)
    # one cluster barrier (.relaxed, after the set-up), no GPU-wide fence (the exit waits in producer_tail)
    assert square["UTMALDG.2D.MULTICAST"] > 0 and square["UCGABAR_ARV"] == 1 and square["MEMBAR.ALL.GPU"] == 0
    assert alone["UTMALDG.2D.MULTICAST"] == alone["UCGABAR_ARV"] == alone["MEMBAR.ALL.GPU"] == 0


# -- on the H100 --------------------------------------------------------------------------------------------------
# 1024^3: 64 tiles, one per CTA, so the second consumer has none; 4095 x 4097: tiles past
# both edges; 384 x 1000: 3 tile rows (a cluster row half past M); 1000 x 1030 x 520: K not a multiple of 64
GPU_SHAPES = [["--size", "1024"], ["-m", "1000", "-n", "1030", "-k", "520"], ["-m", "4095", "-n", "4097", "-k", "1024"],
              ["-m", "384", "-n", "1000", "-k", "128"], ["-m", "2048", "-n", "2048", "-k", "2048"]]


def _verified(runner, tmp_path, args):
    return verified(runner, tmp_path, "h9", args)


@needs_gpu
@pytest.mark.parametrize("cluster", [[], ["--param", "CLUSTER_M=2", "--param", "CLUSTER_N=2"],
                                     ["--param", "CLUSTER_M=1", "--param", "CLUSTER_N=2"],
                                     ["--param", "CLUSTER_M=1", "--param", "CLUSTER_N=1"]])
def test_h9_verifies_on_the_gpu(runner, tmp_path, cluster):
    needs_hopper()
    for shape in GPU_SHAPES:
        _verified(runner, tmp_path, ["--dtype", "fp16", *shape, *cluster])


@needs_gpu
def test_h9_bf16_other_tiles_and_beta_verify_on_the_gpu(runner, tmp_path):
    needs_hopper()
    _verified(runner, tmp_path, ["--dtype", "bf16", "-m", "4095", "-n", "4097", "-k", "1024"])
    _verified(runner, tmp_path, ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.5"])
    _verified(runner, tmp_path, ["--size", "1024", "--param", "BM=64", "--param", "BN=256", "--param", "STAGES=5"])
