"""The Hopper rungs (h4-h13) as gemmprof runs them: specs, bf16, tensor-map arguments, arch gating (CPU), and a
verified run on an H100 (marker gpu)."""

import numpy as np
import pytest
from clitools import invoke
from context import needs_gpu
from hopper_runs import VERIFY_ONLY, needs_hopper

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.catalog.selection import choose, dtype_of
from gemmprof.measure import tma_launch
from gemmprof.measure.problem import from_bf16_bits, to_bf16_bits
from gemmprof.model.traffic import GemmShape

HOPPER = ["wgmma_tma", "warp_specialized", "persistent", "cluster_multicast", "hopper_split_k", "pingpong",
          "stream_k_tail", "skinny_swap_ab", "tma_store_epilogue", "cluster_split_k"]


def test_specs_serve_fp16_and_bf16_and_need_sm90a():
    specs = specmod.select(["h4-h13"])
    assert [s.name for s in specs] == HOPPER
    for s in specs:  # maps of A and B (h8, h12, h13: and of C for TMA stores)
        assert s.dtypes == ("fp16", "bf16") and s.targets == ("sm_90a",)
        assert [a.operand for a in s.tma_args] == ["A", "B"] + (["C"] if s.id in ("h8", "h12", "h13") else [])
    bf16 = choose(["h4-h13"], dtype="bf16")
    assert [k.variant_name for k in bf16] == [f"{n}_bf16" for n in HOPPER]
    assert all(k.run_dtype == "bf16" and "-DELEM_BF16=1" in k.define_flags for k in bf16)
    assert all("-DELEM_BF16=1" not in k.define_flags for k in choose(["h4-h13"]))
    assert [k.spec.id for k in choose(all_=True, dtype="bf16")] == ["h4", "h5", "h6", "h7", "h8", "h9", "h10", "h11",
                                                                     "h12", "h13"]  # only build for bf16
    assert dtype_of("persistent_bf16") == "bf16" and dtype_of("persistent") == "fp16"
    # the baselines that write half C are of their inputs' dtype (compare-nsys reads a report's ranges by name)
    assert dtype_of("cublas_hgemm_cfp16") == "fp16" and dtype_of("cublas_bf16_cbf16") == "bf16"
    assert dtype_of("cublas_sgemm_cfp8") is None and dtype_of("naive_cfp16") is None
    from gemmprof.catalog.baselines import by_name, for_kernels

    half = [b for b in for_kernels({("fp16", "fp16"), ("bf16", "bf16")}) if b.c_dtype != "fp32"]
    assert half and all(by_name()[b.name] == b for b in half)  # the names a run writes are the names read back


def test_persistent_grid_uses_the_multiprocessor_count():
    k = bind(specmod.select(["h6"])[0])
    grid, block, smem = k.launch_config(GemmShape(4096, 4096, 4096), sms=132)
    assert grid == (132, 1, 1) and block == (384, 1, 1)
    # 4 stages of 128 x 64 A and 256 x 64 B, 1 KiB to align them, the staged epilogue's 8 warps x 16 x 40 floats
    assert smem == 4 * (128 + 256) * 64 * 2 + 1024 + 8 * 16 * 40 * 4 <= 232448
    assert k.launch_config(GemmShape(256, 256, 64), sms=132)[0] == (2, 1, 1)  # fewer tiles than SMs


def test_skipped_off_hopper_with_a_reason():
    k = bind(specmod.select(["h5"])[0])
    assert tma_launch.skip_reason(k, "9.0") is None
    assert "sm_90a only" in tma_launch.skip_reason(k, "8.0") and "sm_80" in tma_launch.skip_reason(k, "8.0")
    assert tma_launch.skip_reason(bind(specmod.select(["10"])[0]), "8.0") is None


class _Operand:
    def __init__(self, ptr):
        self.data = type("D", (), {"ptr": ptr})()


def test_tensor_maps_describe_the_operands_as_the_kernel_reads_them():
    seen = []

    def fake_encode(address, tmap):
        seen.append((address, tmap))
        return np.void(bytes(128))

    k = choose(["h5"], dtype="bf16")[0]
    maps = tma_launch.encode_maps(tma_launch.tiled_maps(k, GemmShape(4095, 4097, 1024)),
                                  {"A": _Operand(1 << 20), "B": _Operand(2 << 20)}, encode=fake_encode)
    assert len(maps) == 2 and all(m.dtype.itemsize == 128 for m in maps)
    (a_ptr, a), (b_ptr, b) = seen
    assert (a_ptr, a.dtype, a.rows, a.cols, a.box_rows, a.box_cols, a.swizzle) == (1 << 20, "bf16", 4095, 1024, 128, 64,
                                                                                   128)
    assert (b_ptr, b.rows, b.cols, b.box_rows, b.box_cols) == (2 << 20, 4097, 1024, 256, 64)  # B: N rows of K
    assert k.cluster_dims() is None


def test_bf16_rounding_is_to_nearest_even():
    x = np.array([1.0, 1.00390625, 1.01171875, -2.5, 3.14159265], dtype=np.float32)
    bits = to_bf16_bits(x)
    assert bits.dtype == np.uint16
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0); 1 + 3*2^-8 rounds up
    assert list(from_bf16_bits(bits)) == [1.0, 1.0, 1.015625, -2.5, 3.140625]


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_hopper_rungs_verify_on_the_gpu(runner, tmp_path, dtype):
    needs_hopper()
    for shape in (["--size", "1024"], ["-m", "1000", "-n", "1030", "-k", "520"], ["-m", "4095", "-n", "4097", "-k", "1024"]):
        out = tmp_path / f"{dtype}.json"
        r = invoke(runner, ["run", "h4-h13", "--dtype", dtype, *shape, *VERIFY_ONLY, "-o", str(out)])
        assert r.exit_code == 0, r.output
        import json

        rows = {v["name"]: v for v in json.loads(out.read_text())["variants"]}
        for name in HOPPER:
            row = rows[name if dtype == "fp16" else f"{name}_{dtype}"]
            assert row["status"] == "ok" and row["rel_error"] < 1e-3, row


@needs_gpu
@pytest.mark.parametrize("shape", [("300", "4098", "128"), ("257", "4097", "64"), ("130", "4100", "64"),
                                   ("16", "4098", "4096")])
def test_staged_epilogue_verifies_rows_off_the_sector_grid_with_beta(runner, tmp_path, shape):
    """h6-h10 write rows of C that do not start on a 32-byte sector (N % 8 = 2, odd, 4) through shared memory, reading
    C there when beta != 0. 16 x 4098 x 4096 is an h8 split launch: slices after the first add to C in that path."""
    import json

    needs_hopper()
    m, n, k = shape
    out = tmp_path / "staged.json"
    r = invoke(runner, ["run", "h6-h10", "--dtype", "fp16", "-m", m, "-n", n, "-k", k, "--alpha", "1.5",
                        "--beta", "-0.75", *VERIFY_ONLY, "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = {v["name"]: v for v in json.loads(out.read_text())["variants"]}
    for name in ("persistent", "cluster_multicast", "hopper_split_k", "pingpong", "stream_k_tail"):
        assert rows[name]["status"] == "ok" and rows[name]["rel_error"] < 1e-3, rows[name]
    if m == "16":
        assert rows["hopper_split_k"]["grid"][2] == 2, rows["hopper_split_k"]["grid"]


def test_a_rung_not_built_for_the_dtype_is_named_not_unknown():
    from gemmprof.errors import SpecError

    with pytest.raises(SpecError, match=r"'h3' is not built for bf16: h3:mma_ldmatrix_swizzle \(fp16\); bf16 rungs: h4"):
        choose(["h3"], dtype="bf16")
    with pytest.raises(SpecError, match="unknown variant 'h99'"):
        choose(["h99"], dtype="bf16")


def test_list_shows_every_dtype_a_rung_builds_for(runner):
    import json

    r = invoke(runner, ["list", "--dtype", "bf16", "--format", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["rows"]
    assert [(row["id"], row["dtype"], row["dtypes"]) for row in rows] == [(h, "fp16", "fp16, bf16")
                                                                          for h in ("h4", "h5", "h6", "h7", "h8", "h9", "h10", "h11",
                                                                                        "h12", "h13", "hp")]


def _cpu_runner(shape, compute_capability="9.0"):
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure.runner import Runner, RunOptions

    r = Runner(get_gpu("h100"), RunOptions(shape=shape, seed=1))
    r._device = {"compute_capability": compute_capability, "sm_count": 132}  # what device 0 would report
    return r


def _no_compile(*a, **k):
    raise AssertionError("nothing may be compiled for a rung that cannot run here")


def test_runner_skips_hopper_rungs_elsewhere_and_rejects_k_off_eight(monkeypatch):
    from gemmprof.measure import runner as runmod

    monkeypatch.setattr(runmod, "compile_for_launch", _no_compile)
    k = choose(["h6"], dtype="bf16")[0]
    row = _cpu_runner(GemmShape(256, 256, 256), "8.9").run_kernel(k)
    assert row.status == "skipped" and "sm_90a only" in row.message and "sm_89" in row.message
    row = _cpu_runner(GemmShape(4095, 4097, 1023)).run_kernel(k)
    assert row.status == "rejected" and "nearest valid K: 1016 or 1024" in row.message, row.message


class _FakeFunction:
    ptr = 0xC0DE

    def __init__(self):
        self.calls, self.max_dynamic_shared_size_bytes = [], 0

    def __call__(self, grid, block, args, shared_mem=0):  # CuPy's call: kernels without tensor maps
        self.calls.append((grid, block, args, shared_mem))


class _FakeProblem:
    alpha, beta = 1.0, 0.0

    def __init__(self, shape):
        self.shape = shape

    def operand(self, which, layout, ld=None):
        return _Operand({"A": 1 << 20, "B": 2 << 20}[which])


def test_runner_appends_tensor_maps_and_opts_into_large_shared_memory(monkeypatch):
    from gemmprof.measure import hopper_host
    from gemmprof.measure import runner as runmod
    from gemmprof.measure.build import CompiledKernel
    from gemmprof.results.run import Resources

    func, encoded = _FakeFunction(), []

    def fake_encode(address, tmap):
        encoded.append((address, tmap.rows, tmap.cols, tmap.box_rows, tmap.box_cols))
        return np.void(bytes([len(encoded)]) * 128)

    shape = GemmShape(1000, 1030, 520)
    monkeypatch.setattr(runmod, "compile_for_launch", lambda k, c: CompiledKernel(k, func, Resources(168, 0)))
    monkeypatch.setattr(hopper_host, "encode_tiled", fake_encode)
    launches = []  # a kernel with tensor maps goes through the driver, its arguments packed once
    monkeypatch.setattr(hopper_host, "prepare_launch", lambda ptr, grid, block, args, shared_mem=0, cluster=None:
                        launches.append((ptr, cluster)) or (lambda: func(grid, block, args, shared_mem)))
    r = _cpu_runner(shape)
    r.problem = lambda dtype, c_dtype="fp32": _FakeProblem(shape)
    seen = {}

    def fake_verify(row, prepared):
        prepared.launch_for(r.problem(prepared.storage), "C")()
        seen["tolerance"] = prepared.tolerance
        return row, None  # verified, nothing to time

    r._verify = fake_verify
    k = choose(["h5"], dtype="bf16")[0]
    row = r.run_kernel(k)
    assert row.status == "ok", row.message
    assert launches == [(0xC0DE, None)]
    grid, block, args, smem = func.calls[0]
    assert grid == (8 * 5, 1, 1) and block == (384, 1, 1) and smem == func.max_dynamic_shared_size_bytes > 48 * 1024
    assert [int(a) for a in args[:3]] == [1000, 1030, 520] and args[7] == "C"  # the eight standard arguments
    assert len(args) == 10 and [bytes(a)[0] for a in args[8:]] == [1, 2]  # then A's map, B's map, by value
    assert encoded == [(1 << 20, 1000, 520, 128, 64), (2 << 20, 1030, 520, 256, 64)]
    assert seen["tolerance"] == 2e-3


# Each rung's build at a shape its records measured, and the most instructions allowed, on average over its k-tiles,
# between a k-tile's first wgmma and its last (the one that commits the group, `gsb0`). Descriptors rebuilt from the
# addresses at every k-tile put 34-60 there (four wgmmas; 74 for h9's eight); made once and advanced by addition
# (hopper.cuh, StageDescs) 15-37 (52-59). benchmarks/2026-11-29_h200_descriptors: h11 1-5% faster with them. And no
# R2UR among them: with the warpgroup index known warp-uniform (hopper.cuh, warpgroup_index) the descriptors are in
# uniform registers already; from threadIdx.x / 128 every wgmma waited on two R2UR moves
# (benchmarks/2026-11-29_h200_uniform).
@pytest.mark.parametrize(("rung", "params", "shape", "most"), [
    ("h6", {}, (4096, 4096, 4096), 32),
    ("h7", {}, (4096, 4096, 4096), 32),
    ("h8", {}, (1024, 1024, 1024), 32),
    ("h8", {"BN": 80, "CLUSTER_M": 2, "STAGES": 7}, (1000, 1000, 1000), 32),
    ("h9", {}, (4096, 4096, 4096), 64),  # two 64-row halves: eight wgmmas per k-tile
    ("h10", {}, (4096, 4096, 4096), 32),
    ("h11", {}, (128, 4096, 4096), 32),
    ("h11", {}, (16, 4096, 4096), 32),
    ("h12", {}, (4096, 4096, 4096), 32),
    ("h12", {"BN": 128}, (1024, 11008, 4096), 32),
    ("h13", {}, (128, 11008, 4096), 32),
    ("h14", {}, (4096, 4096, 4096), 32),
])
def test_each_rungs_consumers_issue_a_k_tiles_wgmmas_from_uniform_descriptors_made_once(nvcc, disassembler, rung, params,
                                                                                       shape, most):
    from gemmprof.measure import sass
    from gemmprof.measure.nvcc import compile_cubin

    kernel = bind(specmod.select([rung])[0], params or None)
    out = compile_cubin(kernel.for_shape(GemmShape(*shape), 132), "sm_90", nvcc=nvcc, use_cache=False)
    assert out.ok, out.log[-2000:]
    spans, moves, first = [], 0, None
    for i, (_address, op, args) in enumerate(sass.instructions(sass.disassemble(out.cubin))):
        if op.startswith(("HGMMA", "QGMMA")):  # fp16/bf16, fp8
            first = i if first is None else first
            if "gsb0" in args:  # the k-tile's last wgmma
                spans.append(i - first)
                first = None
        elif op.startswith("R2UR") and first is not None:
            moves += 1
    assert len(spans) >= 3 and first is None, spans
    assert sum(spans) / len(spans) <= most, spans
    assert moves == 0, f"{moves} R2UR between a k-tile's wgmmas"
