"""h7, the Hopper rung in thread-block clusters (TMA multicast of the shared operand): its spec, grid and cluster
shape at every kind of shape, its tensor-map boxes, the cluster launch the runner makes (CPU), what nvcc builds
from it (multicast copies, no GPU-wide fence on the releases), and a verified run on an H100 (marker gpu)."""


import numpy as np
import pytest
from context import needs_gpu
from hopper_runs import needs_hopper, verified
from test_hopper_rungs import _FakeProblem, _Operand  # the stand-ins the h4-h6 runner tests use

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.catalog.selection import choose
from gemmprof.errors import SpecError
from gemmprof.measure import tma_launch
from gemmprof.model.traffic import get_dtype, tiled_traffic
from gemmprof.results.shape import GemmShape

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (1000, 1030, 520), (4095, 4097, 1024), (384, 1024, 128),
          (100, 300, 64), (128, 256, 8)]


# the staged epilogue's slices after the stages: 2 consumer warpgroups x 4 warps x 16 rows x 40 floats
EPILOGUE_SMEM = 2 * 4 * 16 * 40 * 4


def _cdiv(a, b):
    return -(-a // b)


def h7(**params):
    return bind(specmod.select(["h7"])[0], params)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("sms", [132, 114, 133])
def test_the_grid_is_whole_clusters_at_most_one_per_two_sms(shape, sms):
    k = h7()
    grid, block, smem = k.launch_config(GemmShape(*shape), sms=sms)
    M, N, _ = shape
    pairs = _cdiv(_cdiv(M, 128), 2) * _cdiv(N, 256)  # pairs of tile rows of 128, times tile columns of 256
    assert k.cluster_dims() == (2, 1, 1)
    assert grid == (2 * min(sms // 2, pairs), 1, 1) and grid[0] % 2 == 0 and grid[0] <= sms
    assert block == (384, 1, 1) and smem == 4 * (128 + 256) * 64 * 2 + 1024 + EPILOGUE_SMEM


def test_an_odd_number_of_tile_rows_gives_the_last_pair_an_empty_half():
    # M = 384: three tile rows of 128, so two pairs; the second pair's rank-1 CTA computes rows 384-511, past M
    grid, _, _ = h7().launch_config(GemmShape(384, 1024, 128), sms=132)
    assert grid == (2 * 2 * 4, 1, 1)  # 2 pairs of rows x 4 tile columns, 2 CTAs each


def test_cluster_1_is_h6s_launch_and_a_cluster_along_n_shares_a():
    h6 = bind(specmod.select(["h6"])[0])
    one = h7(CLUSTER_M=1)
    for shape in SHAPES:
        assert one.launch_config(GemmShape(*shape), sms=132) == h6.launch_config(GemmShape(*shape), sms=132)
    assert one.cluster_dims() is None  # a plain launch, no cuLaunchKernelEx
    along_n = h7(CLUSTER_M=1, CLUSTER_N=2)
    assert along_n.cluster_dims() == (2, 1, 1)
    # 1000 x 1030: 8 tile rows, 5 tile columns -> 3 column pairs (the last with an empty half)
    assert along_n.launch_config(GemmShape(1000, 1030, 520), sms=132)[0] == (2 * 8 * 3, 1, 1)


@pytest.mark.parametrize("params, message", [
    ({"CLUSTER_M": 2, "CLUSTER_N": 2}, "a cluster is 1 x 1"),
    ({"CLUSTER_M": 4}, "a cluster is 1 x 1"),
    ({"GROUP_M": 3}, "whole clusters"),
    ({"RELEASE_CLUSTER": 2}, "RELEASE_CLUSTER is 0"),
    ({"STAGES": 5}, "227 KiB"),
])
def test_constraints_name_what_is_wrong(params, message):
    with pytest.raises(SpecError, match=message):
        h7(**params)


@pytest.mark.parametrize("params, a_box, b_box", [({}, (128, 64), (128, 64)),
                                                  ({"CLUSTER_M": 1, "CLUSTER_N": 2}, (64, 64), (256, 64)),
                                                  ({"CLUSTER_M": 1}, (128, 64), (256, 64))])
def test_the_shared_operands_box_is_the_half_one_cta_loads(params, a_box, b_box):
    seen = []

    def fake_encode(address, tmap):
        seen.append((tmap.rows, tmap.cols, tmap.box_rows, tmap.box_cols, tmap.swizzle))
        return np.void(bytes(128))

    k = bind(specmod.select(["h7"])[0], params, dtype="bf16")
    tma_launch.encode_maps(tma_launch.tiled_maps(k, GemmShape(4095, 4097, 1024)),
                           {"A": _Operand(1 << 20), "B": _Operand(2 << 20)}, encode=fake_encode)
    assert seen == [(4095, 1024, *a_box, 128), (4097, 1024, *b_box, 128)]


def test_the_traffic_model_reads_the_shared_tile_once_per_cluster():
    shape, fp16 = GemmShape(4096, 4096, 4096), get_dtype("fp16")
    h6 = tiled_traffic(shape, fp16, bind(specmod.select(["h6"])[0]).tiles())
    b_shared = tiled_traffic(shape, fp16, h7().tiles())
    a_shared = tiled_traffic(shape, fp16, h7(CLUSTER_M=1, CLUSTER_N=2).tiles())
    alone = tiled_traffic(shape, fp16, h7(CLUSTER_M=1).tiles())
    # per k-tile and CTA: A 16 KiB + B 32 KiB = 48 KiB alone; 16 + 16 with B shared; 8 + 32 with A shared
    assert alone.gmem_element_reads == h6.gmem_element_reads
    assert b_shared.gmem_element_reads * 48 == h6.gmem_element_reads * 32
    assert a_shared.gmem_element_reads * 48 == h6.gmem_element_reads * 40


def test_explain_counts_each_cta_of_a_cluster_as_a_tile():
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure.explain_inputs import facts_for

    gpu, shape = get_gpu("h100"), GemmShape(4096, 4096, 4096)
    h6 = facts_for(bind(specmod.select(["h6"])[0]), shape, gpu, sass={}, resources=None)
    clustered = facts_for(h7(), shape, gpu, sass={}, resources=None)
    assert (clustered.tiles, clustered.tile_bytes_c) == (h6.tiles, h6.tile_bytes_c) == (512, 128 * 256 * 4)
    assert clustered.l2_bytes_model * 3 == h6.l2_bytes_model * 2 + 4096 * 4096 * 4  # A and B 2/3, C the same


class _FakeFunction:
    ptr = 0xC0DE

    def __init__(self):
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, *args, **kwargs):
        raise AssertionError("a kernel in clusters is launched through cuLaunchKernelEx, not CuPy's call")


def _cluster_runner(monkeypatch, shape, func, launches, fit=None):
    """A Runner whose compile, tensor maps and launches are stand-ins (the launches recorded), verification calling
    the launch once; `fit`: the driver's count of co-resident clusters (None: the driver cannot say)."""
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure import hopper_host
    from gemmprof.measure import runner as runmod
    from gemmprof.measure.build import CompiledKernel
    from gemmprof.measure.runner import Runner, RunOptions
    from gemmprof.results.run import Resources

    def co_resident(ptr, grid, block, smem, cluster):
        if fit is None:
            raise hopper_host.DriverError("cuOccupancyMaxActiveClusters failed")
        return fit

    monkeypatch.setattr(runmod, "compile_for_launch", lambda k, c: CompiledKernel(k, func, Resources(168, 64)))
    monkeypatch.setattr(hopper_host, "encode_tiled", lambda address, tmap: np.void(bytes(128)))
    monkeypatch.setattr(hopper_host, "prepare_launch", lambda ptr, grid, block, args, shared_mem=0, cluster=None:
                        lambda: launches.append((ptr, grid, block, len(args), shared_mem, cluster)))
    monkeypatch.setattr(hopper_host, "co_resident_clusters", co_resident)
    r = Runner(get_gpu("h100"), RunOptions(shape=shape, seed=1))
    r._device = {"compute_capability": "9.0", "sm_count": 132}
    r.problem = lambda dtype, c_dtype="fp32": _FakeProblem(shape)

    def fake_verify(row, prepared):
        prepared.launch_for(r.problem(prepared.storage), _Operand(3 << 20))()
        return row, None

    r._verify = fake_verify
    return r


def test_the_runner_launches_whole_clusters_through_the_driver(monkeypatch):
    shape, func, launches = GemmShape(384, 1024, 128), _FakeFunction(), []
    r = _cluster_runner(monkeypatch, shape, func, launches)
    row = r.run_kernel(choose(["h7"], dtype="bf16")[0])
    assert row.status == "ok", row.message
    smem = 4 * (128 + 256) * 64 * 2 + 1024 + EPILOGUE_SMEM
    assert launches == [(0xC0DE, (16, 1, 1), (384, 1, 1), 10, smem, (2, 1, 1))]
    assert func.max_dynamic_shared_size_bytes == smem


def _sass(kernel, nvcc):
    from gemmprof.measure import sass
    from gemmprof.measure.build import parse_ptxas
    from gemmprof.measure.nvcc import compile_cubin

    out = compile_cubin(kernel, "sm_90", nvcc=nvcc, use_cache=False)
    assert out.ok and out.arch == "sm_90a", out.log[-2000:]
    res = parse_ptxas(out.log)
    assert res.spill_stores == res.spill_loads == 0 and res.registers == 168, out.log[-2000:]
    listing = sass.disassemble(out.cubin)
    assert listing is not None, "the disassembler found nothing to list"
    ops = [op for _addr, op, _args in sass.instructions(listing)]
    return {name: sum(op.startswith(name) for op in ops)
            for name in ("UTMALDG.2D.MULTICAST", "UTMALDG", "MEMBAR.ALL.GPU", "UCGABAR_ARV", "HGMMA")}


def test_what_nvcc_builds_multicasts_and_fences_nowhere(nvcc, disassembler):
    b_shared, fenced, alone = _sass(h7(), nvcc), _sass(h7(RELEASE_CLUSTER=1), nvcc), _sass(h7(CLUSTER_M=1), nvcc)
    # one cluster barrier, after the set-up (.relaxed); the exit waits on the producer's empty barriers instead of a
    # closing one (hopper.cuh, producer_tail)
    assert b_shared["UTMALDG.2D.MULTICAST"] > 0 and b_shared["HGMMA"] > 0 and b_shared["UCGABAR_ARV"] == 1
    # no GPU-wide fence: not at the barrier, not on the per-k-tile releases (RELEASE_CLUSTER=1 fences those)
    assert b_shared["MEMBAR.ALL.GPU"] == 0 < fenced["MEMBAR.ALL.GPU"]
    assert alone["UTMALDG.2D.MULTICAST"] == alone["UCGABAR_ARV"] == alone["MEMBAR.ALL.GPU"] == 0
    assert alone["UTMALDG"] > 0


# -- on the H100 --------------------------------------------------------------------------------------------------
GPU_SHAPES = [["--size", "1024"], ["-m", "1000", "-n", "1030", "-k", "520"], ["-m", "4095", "-n", "4097", "-k", "1024"],
              ["-m", "384", "-n", "1000", "-k", "128"]]  # 3 tile rows: the second pair's lower CTA is past M


def _verified(runner, tmp_path, args):
    return verified(runner, tmp_path, "h7", args)


@needs_gpu
@pytest.mark.parametrize("cluster", [["--param", "CLUSTER_M=2"], ["--param", "CLUSTER_M=1"]])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_h7_verifies_on_the_gpu(runner, tmp_path, dtype, cluster):
    needs_hopper()
    for shape in GPU_SHAPES:
        _verified(runner, tmp_path, ["--dtype", dtype, *shape, *cluster])


@needs_gpu
def test_h7_sharing_a_reading_c_and_fenced_verify_on_the_gpu(runner, tmp_path):
    needs_hopper()
    along_n = ["--param", "CLUSTER_M=1", "--param", "CLUSTER_N=2"]
    for shape in (["-m", "1000", "-n", "1030", "-k", "520"], ["-m", "300", "-n", "768", "-k", "136"]):  # 5, 3 columns
        _verified(runner, tmp_path, [*shape, *along_n])
    _verified(runner, tmp_path, ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.5"])
    _verified(runner, tmp_path, ["--size", "1024", "--param", "RELEASE_CLUSTER=1"])


@pytest.mark.parametrize(("fit", "note"), [
    (31, "32 clusters of 4, 31 co-resident: 2 rounds of clusters"),  # one cluster waits for a second round
    (32, None), (33, None),  # all fit: no note
    (None, None),  # the driver cannot say: no note, the row still runs
])
def test_the_note_says_when_a_grids_clusters_do_not_all_fit_at_once(monkeypatch, fit, note):
    # h8 at 1000^3 in 2 x 2 clusters: 128 CTAs, 32 clusters of 4, one wave only where the GPCs hold all 32 at once
    # (on the H200 they ran 1.4x slower than pairs of two: 2026-11-29_h200_small44)
    shape, launches = GemmShape(1000, 1000, 1000), []
    r = _cluster_runner(monkeypatch, shape, _FakeFunction(), launches, fit)
    row = r.run_kernel(choose(["h8"], dtype="fp16", params=["CLUSTER_M=2"])[0])
    assert row.status == "ok", row.message
    assert launches[0][1] == (128, 1, 1) and launches[0][5] == (4, 1, 1)
    assert row.message.startswith("TILES=128, CM=2, SPLIT_K=1, CN=2, CTILES=32")
    assert (note in row.message) if note else ("co-resident" not in row.message)
