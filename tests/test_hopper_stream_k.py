"""h10, h6 with a stream-K tail: its spec (one CTA per SM with the tail, h6's grid without), its constraints, the
workspace the kernel declares against the spec's slots, what nvcc builds, and on an H100 (marker gpu) verified runs
at shapes whose tail is cut between CTAs (pieces spanning tiles), fewer tail iterations than CTAs (CTAs with none),
edges, beta and bf16, plus identical bits launch after launch."""

import json
import re

import pytest
from clitools import invoke
from context import needs_gpu
from test_hopper_clusters import EPILOGUE_SMEM, _cdiv, _hopper

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.results.shape import GemmShape


def h10(**params):
    return bind(specmod.select(["h10"])[0], params)


@pytest.mark.parametrize("shape", [(1024, 11008, 4096), (4096, 4096, 4096), (8192, 8192, 8192), (1024, 1024, 1024),
                                   (128, 256, 64), (4095, 4097, 1024)])
@pytest.mark.parametrize("sms", [132, 114])
def test_the_grid_is_one_cta_per_sm_with_the_tail_and_h6s_without(shape, sms):
    tiles = _cdiv(shape[0], 128) * _cdiv(shape[1], 256)
    k, h6 = h10(), bind(specmod.select(["h6"])[0])
    grid, block, smem = k.launch_config(GemmShape(*shape), sms=sms)
    assert grid == (sms, 1, 1) and block == (384, 1, 1) and smem == 4 * (128 + 256) * 64 * 2 + 1024 + EPILOGUE_SMEM
    assert k.decomposition(GemmShape(*shape), sms) == {"TILES": tiles, "CTAS": sms, "TAIL": tiles % sms}
    assert h10(STREAM_K=0).launch_config(GemmShape(*shape), sms=sms) == h6.launch_config(GemmShape(*shape), sms=sms)


def test_the_workspace_slots_bound_the_grid():
    k = h10()
    source = k.spec.file.read_text()
    assert f"SK_SLOTS = {k.env['SK_SLOTS']};" in source
    assert k.launch_config(GemmShape(4096, 4096, 4096), sms=1000)[0] == (k.env["SK_SLOTS"], 1, 1)
    for name in k.spec.defines:  # every define the spec passes has a default in the kernel
        assert re.search(rf"#ifndef {name}\n#define {name} {k.params[name]}\n", source), name


@pytest.mark.parametrize("params, message", [({"STREAM_K": 2}, "STREAM_K is 1"), ({"STAGES": 5}, "227 KiB"),
                                             ({"BN": 64}, "BN is the consumers")])
def test_constraints_name_what_is_wrong(params, message):
    with pytest.raises(SpecError, match=message):
        h10(**params)


def test_what_nvcc_builds_keeps_the_accumulators_in_registers(nvcc):
    from gemmprof.measure.compile_pool import nvcc_build_all

    results = nvcc_build_all([h10(), h10(STREAM_K=0), bind(specmod.select(["h10"])[0], dtype="bf16")], ["sm_90"],
                             jobs=2)
    assert all(r.ok and r.arch == "sm_90a" for r in results), [r.log[-2000:] for r in results if not r.ok]
    for r in results:
        assert r.resources.spill_stores == 0 and r.resources.spill_loads == 0 and r.resources.registers == 168


def test_explain_places_h10_beside_h6():
    from gemmprof.model.explain_techniques import BRANCHES, RUNG_TECHNIQUES, applied_by

    assert BRANCHES["h10"] == "h6" and RUNG_TECHNIQUES["h10"] == ("stream_k",)
    assert {"persistent", "wgmma", "stream_k"} <= set(applied_by("h10"))


# -- on the H100 --------------------------------------------------------------------------------------------------
# 1024 x 11008 x 4096: 344 tiles, a tail of 80 (5120 iterations, ~39 per CTA: pieces cut inside tiles and spanning
# two); 1024^3: 32 tiles, all tail (4 CTAs per tile); 128 x 256 x 64: one tile of one iteration for 132 CTAs (131
# with none); 4095 x 4097 x 1024: 528 tiles, a tail of 0 (no piece); 1000 x 1030 x 520: edges, 40 tiles all tail
GPU_SHAPES = [["-m", "1024", "-n", "11008", "-k", "4096"], ["--size", "1024"], ["-m", "128", "-n", "256", "-k", "64"],
              ["-m", "4095", "-n", "4097", "-k", "1024"], ["-m", "1000", "-n", "1030", "-k", "520"],
              ["-m", "2048", "-n", "4096", "-k", "2048"]]


def _verified(runner, tmp_path, args):
    out = tmp_path / "h10.json"
    r = invoke(runner, ["run", "h10", *args, "--no-cublas", "--budget", "0.05", "--max-reps", "3", "-o", str(out)])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(out.read_text())["variants"]
    assert row["status"] == "ok" and row["rel_error"] < 1e-3, (args, row)
    return row


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_h10_verifies_on_the_gpu(runner, tmp_path, dtype):
    _hopper()
    for shape in GPU_SHAPES:
        _verified(runner, tmp_path, ["--dtype", dtype, *shape])


@needs_gpu
def test_h10_applies_beta_once_and_runs_h6s_schedule(runner, tmp_path):
    _hopper()
    _verified(runner, tmp_path, ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.75"])
    _verified(runner, tmp_path, ["-m", "1024", "-n", "11008", "-k", "4096", "--beta", "1"])
    _verified(runner, tmp_path, ["-m", "1024", "-n", "11008", "-k", "4096", "--param", "STREAM_K=0"])


@needs_gpu
def test_h10_gives_the_same_bits_launch_after_launch():
    """The finisher adds the pieces in CTA order: every launch writes identical bits (beta = 0, so C's old
    contents, NaN or sentinel, do not matter), and the flags each launch clears let the next one run."""
    import cupy

    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure.runner import Runner, RunOptions

    _hopper()
    shape = GemmShape(1024, 11008, 4096)  # a tail of 80 tiles cut between CTAs
    runner = Runner(get_gpu("h100"), RunOptions(shape=shape, seed=7, baselines=False))
    outs, verify = [], runner._verify

    def keeping_outputs(row, problem, launch_into, *args, **kwargs):
        def launch_and_keep(out):
            outs.append(out)
            return launch_into(out)
        return verify(row, problem, launch_and_keep, *args, **kwargs)

    runner._verify = keeping_outputs
    row, launch = runner.prepare_kernel(h10())
    assert row.status == "ok" and launch is not None, (row.status, row.message)
    first, second = outs[0].copy(), outs[1].copy()  # over NaN, then over the sentinel
    for _ in range(3):
        launch()
    cupy.cuda.Device().synchronize()
    bits = [a.view(cupy.uint32) for a in (first, second, outs[1])]
    assert bool((bits[0] == bits[1]).all()) and bool((bits[1] == bits[2]).all())
