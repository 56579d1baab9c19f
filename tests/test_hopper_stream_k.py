"""h10, h6 with a stream-K tail: its spec (one CTA per SM with the tail, h6's grid without), its constraints, the
workspace the kernel declares against the spec's slots, what nvcc builds, and on an H100 (marker gpu) verified runs
at shapes whose tail is cut between CTAs (pieces spanning tiles), fewer tail iterations than CTAs (CTAs with none),
edges, beta and bf16, plus identical bits launch after launch."""

import re

import pytest
from context import needs_gpu
from hopper_runs import needs_hopper, same_bits_launch_after_launch, verified
from test_hopper_clusters import EPILOGUE_SMEM, _cdiv

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.results.shape import GemmShape


def h10(**params):
    return bind(specmod.select(["h10"])[0], params)


# (shape, tiles, tail cut): 8192^3 and 16384 x 4096 x 4096 leave 68 of 132 tiles (52%) for the last round, ~66 and
# ~33 k-iterations per CTA: cut. 1024 x 11008 x 4096 (80, 61%) and 4096^3 (116, 88%): too large a tail; 1024^3:
# no whole round; 4095 x 4097 x 1024 (16 tiles of 16 iterations: 2 per CTA): too few iterations.
@pytest.mark.parametrize(("shape", "tiles", "tail"), [((8192, 8192, 8192), 2048, 68), ((16384, 4096, 4096), 2048, 68),
                                                      ((1024, 11008, 4096), 344, 0), ((4096, 4096, 4096), 512, 0),
                                                      ((4096, 4096, 14336), 512, 0), ((1024, 1024, 1024), 32, 0),
                                                      ((4095, 4097, 1024), 544, 0)])
def test_the_tail_is_cut_only_where_the_rule_says_and_h6s_schedule_runs_elsewhere(shape, tiles, tail):
    assert tiles == _cdiv(shape[0], 128) * _cdiv(shape[1], 256)
    k, h6, g = h10(), bind(specmod.select(["h6"])[0]), GemmShape(*shape)
    grid, block, smem = k.launch_config(g, sms=132)
    assert block == (384, 1, 1) and smem == 4 * (128 + 256) * 64 * 2 + 1024 + EPILOGUE_SMEM
    assert k.decomposition(g, 132) == {"TILES": tiles, "ROUND": 132, "TAIL": tail}
    assert k.decomposition_note(g, 132) == f"TILES={tiles}, ROUND=132, TAIL={tail}"
    assert k.for_shape(g, 132).shape_defines == (("H10_TAIL", int(tail > 0)),)  # the build runs that schedule
    if tail:
        assert grid == (132, 1, 1)
    else:
        assert (grid, block, smem) == h6.launch_config(g, sms=132)
    # STREAM_K=0: h6's schedule at every shape; SK_TAIL_MAX_PCT=100 and SK_MIN_ITERS=1 cut every tail after a round
    assert h10(STREAM_K=0).decomposition(g, 132)["TAIL"] == 0
    loose = h10(SK_TAIL_MAX_PCT=100, SK_MIN_ITERS=1).decomposition(g, 132)["TAIL"]
    assert loose == (tiles % 132 if tiles >= 132 else 0)


def test_the_workspace_slots_bound_the_grid():
    k = h10()
    source = k.spec.file.read_text()
    assert f"SK_SLOTS = {k.env['SK_SLOTS']};" in source
    # on a GPU of more SMs than workspace slots a cut tail runs on SK_SLOTS CTAs (1024 x 11008 x 8192: 344 tiles,
    # a tail of 88 of 256, 44 k-iterations per CTA); h6's schedule may use every SM (4096^3: 512 tiles, no tail), and
    # the kernel traps only in a build that cuts
    assert k.launch_config(GemmShape(1024, 11008, 8192), sms=1000)[0] == (k.env["SK_SLOTS"], 1, 1)
    assert k.decomposition(GemmShape(1024, 11008, 8192), 1000)["TAIL"] == 88
    assert k.launch_config(GemmShape(4096, 4096, 4096), sms=1000)[0] == (512, 1, 1)
    assert "if (STREAM_K && gridDim.x > (unsigned)h10::SK_SLOTS)" in source
    for name in k.spec.defines:  # every define the spec passes has a default in the kernel
        assert re.search(rf"#ifndef {name}\n#define {name} {k.params[name]}\n", source), name


@pytest.mark.parametrize("params, message", [({"STREAM_K": 2}, "STREAM_K is 1"), ({"STAGES": 5}, "227 KiB"),
                                             ({"BN": 64}, "BN is the consumers"), ({"SK_TAIL_MAX_PCT": 101}, "0 to 100"),
                                             ({"SK_MIN_ITERS": 0}, "at least 1")])
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
# Every tail cut (CUT) at the first three shapes; the default rule cuts 1280 x 5120 x 4096's (200 tiles, 68 in the
# tail, ~33 k-iterations per CTA).
# 1024 x 11008 x 4096: 344 tiles, a tail of 80 (5120 iterations, ~39 per CTA: pieces cut inside tiles and spanning
# two); 4095 x 4097 x 1024: 544 tiles, a tail of 16 tiles of 16 iterations (~2 per CTA: up to 9 pieces per tile),
# edges; 2048 x 4096 x 2048: 256 tiles, a tail of 124.
CUT = ["--param", "SK_TAIL_MAX_PCT=100", "--param", "SK_MIN_ITERS=1"]
GPU_SHAPES = [["-m", "1024", "-n", "11008", "-k", "4096", *CUT], ["-m", "4095", "-n", "4097", "-k", "1024", *CUT],
              ["-m", "2048", "-n", "4096", "-k", "2048", *CUT], ["-m", "1280", "-n", "5120", "-k", "4096"]]


def _verified(runner, tmp_path, args):
    return verified(runner, tmp_path, "h10", args)


@needs_gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_h10_verifies_on_the_gpu(runner, tmp_path, dtype):
    needs_hopper()
    for shape in GPU_SHAPES:
        _verified(runner, tmp_path, ["--dtype", dtype, *shape])


@needs_gpu
def test_h10_applies_beta_once_and_runs_h6s_schedule(runner, tmp_path):
    needs_hopper()
    row = _verified(runner, tmp_path, ["-m", "1024", "-n", "11008", "-k", "4096", "--alpha", "1.5", "--beta", "-0.75",
                                       *CUT])
    assert "TAIL=80" in row["message"], row["message"]
    _verified(runner, tmp_path, ["-m", "300", "-n", "520", "-k", "136", "--alpha", "1.5", "--beta", "-0.75"])
    row = _verified(runner, tmp_path, ["-m", "1024", "-n", "11008", "-k", "4096", "--param", "STREAM_K=0"])
    assert "TAIL=0" in row["message"], row["message"]


@needs_gpu
def test_h10_gives_the_same_bits_launch_after_launch():
    """The finisher adds the pieces in CTA order: every launch writes identical bits, and the flags each launch
    clears let the next one run (a tail of 80 tiles cut between CTAs)."""
    needs_hopper()
    same_bits_launch_after_launch(h10(SK_TAIL_MAX_PCT=100, SK_MIN_ITERS=1), GemmShape(1024, 11008, 4096))
