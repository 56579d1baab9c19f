"""h14, h12 on fp8 operands: its spec (C dtypes, scale modes and the scale arrays it reads), its launch at each mode,
the tensor maps of its one-byte operands and half C, what nvcc builds (QGMMA, no spills, the promotion's FMAs, the
TMA stores of half C), the bad inputs around it (one line each), and verified runs on a Hopper GPU (marker gpu):
per-tensor and block scales, bf16, fp16 and fp32 C, square, LLM-like and odd shapes, alpha and beta."""

from __future__ import annotations

import json

import numpy as np
import pytest
from clitools import invoke
from context import needs_gpu
from hopper_runs import needs_hopper
from test_hopper_rungs import _Operand

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.catalog.selection import choose, dtype_of
from gemmprof.errors import SpecError
from gemmprof.measure import fp8, tma_launch
from gemmprof.measure.problem import tolerance
from gemmprof.results.shape import GemmShape

MODES = ["tensor", "1x128", "128x128"]
C_DTYPES = ["bf16", "fp16", "fp32"]


def h14(c_dtype=None, scales=None, **params):
    return bind(specmod.select(["h14"])[0], params, c_dtype=c_dtype, scales=scales)


# the spec ------------------------------------------------------------------------------------------------------
def test_the_spec_takes_e4m3_three_c_dtypes_and_three_scale_modes():
    s = specmod.select(["h14"])[0]
    assert (s.dtype, s.dtypes, s.targets) == ("e4m3", ("e4m3",), ("sm_90a",))
    assert (s.abi.c_dtype, s.c_dtypes, s.scales) == ("bf16", ("bf16", "fp16", "fp32"), tuple(MODES))
    assert [a.name for a in s.abi.args][-2:] == ["scale_a", "scale_b"]
    assert [a.operand for a in s.tma_args] == ["A", "B", "C"]
    assert [k.spec.id for k in choose(all_=True, dtype="e4m3")] == ["h14"]
    assert "h14" not in [s.id for s in specmod.select([], all_=True, dtype="fp16")]


@pytest.mark.parametrize("c_dtype", C_DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_each_build_names_itself_and_its_macros(c_dtype, mode):
    k = h14(c_dtype, mode)
    suffix = ("" if c_dtype == "bf16" else f"_c{c_dtype}") + ("" if mode == "tensor" else f"_{mode}")
    assert k.variant_name == "fp8_scaled" + suffix and dtype_of(k.variant_name) == "e4m3"
    assert (k.run_dtype, k.run_c_dtype, k.run_scales) == ("e4m3", c_dtype, mode)
    flags = k.define_flags
    assert f"-DH14_C={ {'fp32': 0, 'fp16': 1, 'bf16': 2}[c_dtype] }" in flags
    assert f"-DH14_SCALES={MODES.index(mode)}" in flags
    assert k.env["C_BYTES"] == (4 if c_dtype == "fp32" else 2) and k.env["SCALES"] == MODES.index(mode)
    # the binary differs by both: three C dtypes x three modes are nine cubins
    assert len({h14(c, m).binary_key for c in C_DTYPES for m in MODES}) == 9


def test_the_launch_per_tensor_is_h12s_and_block_scales_take_128_columns():
    sq = GemmShape(4096, 4096, 4096)
    llm = GemmShape(8192, 8192, 4096)
    assert h14().decomposition_note(sq, 132) == "CM=2, TN=256, CTILES=256, ROUNDS=4"
    assert h14().launch_config(sq, 132) == ((128, 1, 1), (384, 1, 1), 4 * (128 + 256) * 128 + 1024 + 32768)
    assert h14().decomposition_note(llm, 132) == "CM=2, TN=256, CTILES=1024, ROUNDS=16"
    for mode in ("1x128", "128x128"):
        k = h14(scales=mode)
        assert k.decomposition_note(sq, 132) == "CM=2, TN=128, CTILES=512, ROUNDS=8"
        assert k.launch_config(sq, 132)[2] == 4 * (128 + 128) * 128 + 1024 + 32768
        assert k.for_shape(sq, 132).shape_defines == (("H14_BN", 128), ("H14_CLUSTER_M", 2))
    # per tensor, the width fitted as h12's (1024 x 11008: 168 alone)
    assert h14().decomposition_note(GemmShape(1024, 11008, 4096), 132) == "CM=1, TN=168, CTILES=528, ROUNDS=4"


def test_shared_memory_fits_for_every_mode_and_stage_count_the_spec_allows():
    for mode in MODES:
        for stages in (3, 4, 5, 6):
            try:
                k = h14(scales=mode, STAGES=stages)
            except SpecError as exc:  # per tensor, 5 and 6 stages of 48 KiB do not fit beside the staging
                assert mode == "tensor" and stages >= 5 and "227 KiB" in str(exc)
                continue
            for shape in ((4096, 4096, 4096), (1024, 11008, 4096), (300, 520, 256)):
                assert k.launch_config(GemmShape(*shape), 132)[2] <= 232448


@pytest.mark.parametrize("params, mode, message", [
    ({"BN": 200}, "1x128", "block scales take 128-column tiles"), ({"BK": 64}, "tensor", "128 fp8 elements"),
    ({"BN": 40}, "tensor", "64 to 256"), ({"STAGES": 5}, "tensor", "227 KiB"), ({"EPI_BUFS": 3}, "tensor", "EPI_BUFS")])
def test_constraints_name_what_is_wrong(params, mode, message):
    with pytest.raises(SpecError, match=message):
        h14(scales=mode, **params)


@pytest.mark.parametrize("shape", [(4096, 4096, 1008), (1000, 1000, 1040), (7, 9, 16)])
def test_block_scales_reject_k_off_128_and_per_tensor_takes_k_of_16(shape):
    assert shape[2] % 16 == 0 and shape[2] % 128 != 0
    for mode in ("1x128", "128x128"):
        with pytest.raises(SpecError, match="K a multiple of 128"):
            h14(scales=mode).check_shape(GemmShape(*shape))
    h14().check_shape(GemmShape(*shape))
    with pytest.raises(SpecError, match="multiple of 16"):
        h14().check_shape(GemmShape(64, 64, shape[2] + 4))


def _maps(kernel, shape):
    seen = []

    def fake_encode(address, tmap):
        seen.append((tmap.dtype, tmap.rows, tmap.cols, tmap.box_rows, tmap.box_cols, tmap.swizzle))
        return np.void(bytes(128))

    maps = tma_launch.encode_maps(tma_launch.tiled_maps(kernel, shape, 132),
                                  {"A": _Operand(1 << 20), "B": _Operand(2 << 20), "C": _Operand(3 << 20)},
                                  encode=fake_encode)
    return maps, seen


@pytest.mark.parametrize("c_dtype, c_box", [("bf16", 64), ("fp16", 64), ("fp32", 32)])
def test_tensor_maps_of_bytes_and_of_c_one_128_byte_row_per_store(c_dtype, c_box):
    maps, seen = _maps(h14(c_dtype), GemmShape(4095, 4096, 1024))
    assert len(maps) == 3
    assert seen == [("e4m3", 4095, 1024, 128, 128, 128), ("e4m3", 4096, 1024, 128, 128, 128),
                    (c_dtype, 4095, 4096, 64, c_box, 128)]
    _, seen = _maps(h14(c_dtype, "1x128"), GemmShape(4096, 4096, 1024))
    assert seen[1][3:5] == (64, 128)  # pairs: each CTA loads half of the 128 rows of B


@pytest.mark.parametrize("c_dtype, n", [("bf16", 4100), ("fp16", 4097), ("fp32", 4098)])
def test_rows_of_c_off_16_bytes_get_the_unused_map(c_dtype, n):
    assert n * {"bf16": 2, "fp16": 2, "fp32": 4}[c_dtype] % 16 != 0
    maps, seen = _maps(h14(c_dtype), GemmShape(4096, n, 1024))
    assert len(seen) == 2 and bytes(maps[2]) == bytes(128)


def test_the_scale_arrays_h14_reads_are_the_ones_handed_over():
    # the spec's scale_shapes against fp8.scale_shapes over generated shapes (odd M and N, K in blocks of 128)
    shapes = [GemmShape(m, n, k) for m in (1, 127, 128, 300, 4095, 8192) for n in (8, 129, 1000, 4096)
              for k in (128, 1024, 4096)]
    assert any(s.M % 128 for s in shapes) and any(s.N % 128 for s in shapes)
    for mode in MODES:
        k = h14(scales=mode)
        for shape in shapes:
            fp8.check_scale_shapes(k, shape, mode)  # raises where they disagree
    with pytest.raises(SpecError, match="built for --scales 1x128, but the run's fp8 inputs have tensor"):
        fp8.check_scale_shapes(h14(scales="1x128"), GemmShape(256, 256, 256), "tensor")


def test_a_spec_reading_scales_in_another_layout_is_rejected_in_one_line(tmp_path):
    spec = tmp_path / "mine.yaml"
    (tmp_path / "mine.cu").write_text("extern \"C\" __global__ void k() {}\n")
    spec.write_text("file: mine.cu\nentry: k\ngrid: [1]\nblock: [1]\ndtype: e4m3\nc_dtype: bf16\n"
                    "args: [M, N, K, alpha, A, B, beta, C, scale_a, scale_b]\nscales: [tensor, 1x128]\n"
                    "scales_define: MODE\nscale_shapes:\n  1x128: {scale_a: [M, K // 128], scale_b: [cdiv(N, 128), "
                    "K // 128]}\n")
    k = bind(specmod.load_spec(spec), scales="1x128")
    with pytest.raises(SpecError, match=r"scale_shapes.1x128.scale_a is \[256, 2\] at 256x256x256, but --scales "
                                        r"1x128 hands over scale_a as \[2, 256\]"):
        fp8.check_scale_shapes(k, GemmShape(256, 256, 256), "1x128")


@pytest.mark.parametrize("doc, message", [
    ({"dtype": "e4m3"}, "an fp8 kernel \\(e4m3\\) takes its operands' scales: add scale_a and scale_b"),
    ({"dtype": "fp16", "args": ["M", "N", "K", "alpha", "A", "B", "beta", "C", "scale_a", "scale_b"]},
     "only fp8 kernels"),
    ({"dtype": "fp16", "scales": ["tensor"]}, "scales: only fp8 kernels"),
    ({"dtype": "e4m3", "args": ["A", "B", "C", "scale_a", "scale_b"], "scales": ["tensor", "rows"]},
     "scales: expected a list of scale modes"),
    ({"dtype": "e4m3", "args": ["A", "B", "C", "scale_a", "scale_b"], "scales": ["tensor", "1x128"]},
     "scales_define: a spec with several scale modes"),
    ({"dtype": "e4m3", "args": ["A", "B", "C", "scale_a", "scale_b"], "c_dtype": "bf16", "c_dtypes": ["fp32", "bf16"]},
     "c_dtypes: expected a list of fp32, fp16, bf16 whose first is c_dtype"),
    ({"dtype": "e4m3", "args": ["A", "B", "C", "scale_a", "scale_b"], "scale_shapes": {"1x128": {"scale_a": [1]}}},
     "scale_shapes.1x128: not one of the spec's scales"),
    ({"dtype": "e4m3", "args": ["A", "B", "C", "scale_a", "scale_b"],
      "scale_shapes": {"tensor": {"scale_c": [1]}}}, "scale_shapes.tensor.scale_c: unknown key"),
])
def test_spec_errors_name_the_key(tmp_path, doc, message):
    import yaml

    (tmp_path / "k.cu").write_text("// nothing\n")
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump({"file": "k.cu", "entry": "k", "grid": [1], "block": [1], **doc}))
    with pytest.raises(SpecError, match=message):
        specmod.load_spec(path)


# bad input on the command line: one line each, before any GPU work -----------------------------------------------
def _one_line(res, *said):
    assert res.exit_code == 2, res.output  # gemmprof's exit status for a user's error
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output, res.output
    for s in said:
        assert s in res.output, res.output


@pytest.mark.parametrize("args, said", [
    (["run", "5", "--dtype", "e4m3"], ["'5' is not built for e4m3", "e4m3 rungs: h14:fp8_scaled"]),
    (["run", "h14", "--dtype", "e5m2"], ["'h14' is not built for e5m2: h14:fp8_scaled (e4m3)"]),
    (["run", "h14", "--scales", "1x128", "-k", "1000"], ["--scales 1x128: K = 1000 is not a multiple of 128",
                                                         "896 or 1024"]),
    (["run", "h14", "--scales", "128x128", "--size", "100"], ["K = 100 is not a multiple of 128"]),
    (["run", "5", "--scales", "1x128"], ["--scales 1x128: no fp8 variant in this run"]),
    (["run", "h12", "--dtype", "fp16", "--scales", "tensor"], ["--scales tensor: only for fp8 inputs", "not fp16"]),
    (["run", "h12", "--c-dtype", "bf16"], ["--c-dtype bf16: only for --callable functions and kernels that write"]),
])
def test_bad_fp8_input_is_one_line(runner, args, said):
    _one_line(invoke(runner, args), *said)


def test_an_fp8_spec_that_takes_one_scale_mode_refuses_another(runner, tmp_path):
    (tmp_path / "mine.cu").write_text("// nothing\n")
    spec = tmp_path / "mine.yaml"
    spec.write_text("file: mine.cu\nentry: k\ngrid: [1]\nblock: [1]\ndtype: e4m3\nc_dtype: bf16\n"
                    "args: [M, N, K, alpha, A, B, beta, C, scale_a, scale_b]\n")
    res = invoke(runner, ["run", "--spec", str(spec), "--scales", "1x128", "--size", "256"])
    _one_line(res, "mine: takes --scales tensor, not 1x128")
    res = invoke(runner, ["run", "--spec", str(spec), "--c-dtype", "fp32", "--size", "256"])
    _one_line(res, "mine: writes C as bf16, not fp32 (--c-dtype)")


FP8_CALLABLES = '''
def five(A, B, C, alpha, beta):
    pass


def tensor_only(A, B, C, alpha, beta, *, scale_a, scale_b):
    pass


tensor_only.gemmprof_scales = ("tensor",)
'''


@pytest.mark.parametrize("function, extra, said", [
    ("five", [], "with fp8 inputs gemmprof calls fn(A, B, C, alpha, beta, scale_a=..., scale_b=...): add the keyword "
                 "parameters scale_a and scale_b"),
    ("tensor_only", ["--scales", "1x128"], "takes --scales tensor (gemmprof_scales), not 1x128"),
])
def test_a_callable_that_cannot_take_the_scales_is_refused_in_one_line(runner, tmp_path, function, extra, said):
    path = tmp_path / "fp8_callables.py"
    path.write_text(FP8_CALLABLES)
    res = invoke(runner, ["run", "--callable", f"{path}:{function}", "--dtype", "e4m3", "--size", "256", *extra])
    _one_line(res, said)


# what nvcc builds --------------------------------------------------------------------------------------------------
def _built(kernel, nvcc):
    from collections import Counter

    from gemmprof.measure import sass
    from gemmprof.measure.build import parse_ptxas
    from gemmprof.measure.nvcc import compile_cubin

    out = compile_cubin(kernel, "sm_90", nvcc=nvcc, use_cache=False)
    assert out.ok and out.arch == "sm_90a", out.log[-2000:]
    res = parse_ptxas(out.log)
    assert res.spill_stores == res.spill_loads == 0, out.log[-2000:]
    assert "C7515" not in out.log and "C7508" not in out.log, out.log[-2000:]  # wgmma serialized; setmaxnreg ignored
    listing = sass.disassemble(out.cubin)
    ops = [op for _a, op, _x in sass.instructions(listing)]
    # build's and explain's classes: fp8 wgmma is its own class, counted in the inner loop as warpgroup MMA
    classes, loop = sass.counts(listing), sass.inner_loop(listing)
    assert classes["QGMMA"] == sum(op.startswith("QGMMA") for op in ops) > 0 and classes["HGMMA"] == 0
    (shape,) = {op.split(".")[1] for op in ops if op.startswith("QGMMA")}  # e.g. 64x256x32
    m, n, k = map(int, shape.split("x"))
    assert loop["QGMMA"] > 0 and loop["mma_flops"] == loop["QGMMA"] * 2 * m * n * k
    return Counter(ops), ops


@pytest.mark.parametrize("c_dtype, stores", [("bf16", 4), ("fp32", 8)])
def test_per_tensor_builds_qgmma_256_wide_and_tma_stores(nvcc, disassembler, c_dtype, stores):
    counts, ops = _built(h14(c_dtype).for_shape(GemmShape(4096, 4096, 4096), 132), nvcc)
    qgmma = {op for op in ops if op.startswith("QGMMA")}
    assert qgmma == {"QGMMA.64x256x32.F32.E4M3.E4M3"} and counts["QGMMA.64x256x32.F32.E4M3.E4M3"] >= 4
    assert not any(op.startswith("HGMMA") or op.startswith("HMMA") for op in ops)
    assert sum(n for op, n in counts.items() if op.startswith("UTMASTG")) == stores  # 64 (half) or 32 columns each
    assert sum(n for op, n in counts.items() if op.startswith("UTMALDG.2D.MULTICAST")) > 0
    assert not any(op.startswith("LDL") or op.startswith("STL") for op in ops)


def test_block_scales_build_qgmma_128_wide_and_the_promotion(nvcc, disassembler):
    counts, ops = _built(h14("bf16", "1x128").for_shape(GemmShape(4096, 4096, 4096), 132), nvcc)
    assert {op for op in ops if op.startswith("QGMMA")} == {"QGMMA.64x128x32.F32.E4M3.E4M3"}
    assert counts["QGMMA.64x128x32.F32.E4M3.E4M3"] >= 4  # four k32 steps per 128-deep block
    assert sum(n for op, n in counts.items() if op.startswith("FFMA")) >= 64  # the 64 accumulators promoted
    assert sum(n for op, n in counts.items() if op.startswith("UTMASTG")) == 2
    assert not any(op.startswith("LDL") or op.startswith("STL") for op in ops)


# on a Hopper GPU -------------------------------------------------------------------------------------------------
GPU_CASES = [  # (C dtype, scales, shape args)
    *[(c, "tensor", ["--size", "4096"]) for c in C_DTYPES],
    *[(c, "tensor", ["-m", "4095", "-n", "4097", "-k", "1024"]) for c in C_DTYPES],  # odd M and N: direct epilogue
    *[(c, "1x128", ["--size", "4096"]) for c in C_DTYPES],
    *[(c, "1x128", ["-m", "1000", "-n", "1000", "-k", "1024"]) for c in C_DTYPES],
    ("bf16", "tensor", ["-m", "8192", "-n", "8192", "-k", "4096"]),
    ("bf16", "1x128", ["-m", "8192", "-n", "8192", "-k", "4096"]),
    ("bf16", "128x128", ["-m", "4095", "-n", "4096", "-k", "2048"]),
    ("fp32", "128x128", ["-m", "384", "-n", "1000", "-k", "128"]),
    ("bf16", "tensor", ["-m", "1024", "-n", "11008", "-k", "4096"]),  # a fitted width (168, alone)
    ("bf16", "tensor", ["-m", "300", "-n", "520", "-k", "256", "--alpha", "1.5", "--beta", "-0.5"]),
    ("fp32", "1x128", ["-m", "300", "-n", "520", "-k", "256", "--alpha", "-2", "--beta", "0.5"]),
    ("fp16", "tensor", ["-m", "128", "-n", "128", "-k", "16"]),
]


def _shape_of(args):
    vals = dict(zip(args[::2], args[1::2], strict=False))
    if "--size" in vals:
        s = int(vals["--size"])
        return GemmShape(s, s, s)
    return GemmShape(int(vals["-m"]), int(vals["-n"]), int(vals["-k"]))


@pytest.fixture(scope="module")
def warm_builds():
    """Every build the GPU cases need, compiled at once in the pool (each run then finds its cubin cached)."""
    import cupy

    from gemmprof.measure.compile_pool import nvcc_build_all

    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    kernels = {}
    for c, m, args in GPU_CASES:
        k = h14(c, m).for_shape(_shape_of(args), sms)
        kernels[k.binary_key] = k
    nvcc_build_all(list(kernels.values()), ["sm_90"])


@needs_gpu
@pytest.mark.parametrize("c_dtype, mode, args", GPU_CASES, ids=lambda x: "_".join(x) if isinstance(x, list) else x)
def test_h14_verifies_on_the_gpu(runner, tmp_path, warm_builds, c_dtype, mode, args):
    needs_hopper()
    out = tmp_path / "h14.json"
    res = invoke(runner, ["run", "h14", "--c-dtype", c_dtype, "--scales", mode, *args, "--no-cublas", "--budget",
                          "0.05", "--max-reps", "3", "--regime", "burst", "-o", str(out)])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(out.read_text())["variants"]
    assert row["status"] == "ok", row
    assert (row["dtype"], row.get("c_dtype", "fp32"), row.get("scales")) == ("e4m3", c_dtype, mode)
    # the norm-wise error well inside the tolerance: C's own rounding (bf16: about 2**-9 of each element) and the
    # tensor cores' fp8 accumulation (about sqrt(K / 32) * 2**-14: 7e-4 at K = 4096, docs/fp8.md)
    limit = {"bf16": 5e-3, "fp16": 3e-3, "fp32": 3e-3}[c_dtype]
    assert row["rel_error"] < limit and row["tolerance"] == tolerance("e4m3", c_dtype, _shape_of(args).K), row
