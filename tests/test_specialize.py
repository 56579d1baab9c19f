"""Builds for one shape (the spec's `specialize`): rung 14 compiles only the tile orientation and the class of N % 4
its launch runs, rung 16 the split or the unsplit half (rung 15 stays general). The defines are checked against the kernel's own rule (gridDim.x read back, L = N % 4); the
pool and the runner agree on the build; nvcc builds the specialized binary smaller, with the same main loops."""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.measure import compile_pool
from gemmprof.measure.build import BuildResult
from gemmprof.model.traffic import GemmShape

H100_SMS = 132


def _rung(rid, params=None):
    return bind(next(s for s in specmod.ladder() if s.id == rid), params)


def _cdiv(a, b):
    return -(-a // b)


def _kernel_rule(k, shape, sms):
    """What rung 14's kernel does at this launch: BN x BM tiles when CAN_SWAP and gridDim.x is not the BM x BN
    count, and L = N % 4 (sgemm_multistage_any_shape and ms14::blockTile)."""
    grid = k.launch_config(shape, sms)[0]
    wide = _cdiv(shape.M, k.params["BM"]) * _cdiv(shape.N, k.params["BN"])
    return {"MS14_TALL": int(bool(k.env["CAN_SWAP"]) and grid[0] != wide), "MS14_NMOD4": shape.N % 4}


@pytest.mark.parametrize(("shape", "tall", "nmod4"), [
    ((4096, 4096, 4096), 0, 0),
    ((4095, 4097, 1023), 1, 1),  # 528 tiles of 256 x 128 fill 4 waves; 544 of 128 x 256 make 4.12
    ((4096, 4098, 4096), 1, 2),
    ((1000, 1027, 999), 0, 3),
])
def test_rung14_defines_at_the_runs_shapes(shape, tall, nmod4):
    k = _rung("14")
    built = k.for_shape(GemmShape(*shape), H100_SMS)
    assert dict(built.shape_defines) == {"MS14_TALL": tall, "MS14_NMOD4": nmod4}
    assert built.define_flags[-2:] == (f"-DMS14_TALL={tall}", f"-DMS14_NMOD4={nmod4}")
    assert (built.params, built.variant_name, built.template_args) == (k.params, k.variant_name, k.template_args)
    assert built.binary_key != k.binary_key


@pytest.mark.parametrize("params", [None, {"BM": 256, "BN": 128}, {"BM": 128, "BN": 128, "THREADS": 128}])
@pytest.mark.parametrize("sms", [132, 114, 66, 7])
def test_the_defines_always_hold_the_path_the_kernel_takes(params, sms):
    k = _rung("14", params)
    sizes = (1, 2, 3, 5, 127, 128, 129, 255, 256, 257, 1000, 1027, 2048, 4095, 4096, 4097, 4098, 8191)
    for m in sizes:
        for n in sizes:
            shape = GemmShape(m, n, 64)
            assert dict(k.for_shape(shape, sms).shape_defines) == _kernel_rule(k, shape, sms), (params, sms, m, n)
    if params and params["BM"] == params["BN"]:  # one orientation only
        assert not k.env["CAN_SWAP"]


def test_rung_16_builds_the_half_its_launch_runs_and_rung_15_stays_general():
    """Rung 16: the split half when gridDim.z > 1, rung 15's block otherwise (its default tiles are square: one
    orientation). Rung 15 is not specialized: built for one orientation its main loop got 220 registers instead of
    215 and ran 0.9-1.0% slower on the H100 (benchmarks/2026-11-25_h100_startup, specialize_perf.json)."""
    k = _rung("16")
    for m, n, kk in ((4096, 4096, 4096), (4095, 4097, 1023), (1000, 1000, 1000), (128, 4096, 4096), (33, 2, 19)):
        shape = GemmShape(m, n, kk)
        grid = k.launch_config(shape, H100_SMS)[0]
        assert k.for_shape(shape, H100_SMS).shape_defines == (("SK16_SPLIT", int(grid[2] > 1)),)
    assert k.for_shape(GemmShape(1000, 1000, 1000), H100_SMS).shape_defines == (("SK16_SPLIT", 1),)
    r15 = _rung("15")
    assert r15.for_shape(GemmShape(4095, 4097, 1023), H100_SMS) is r15


def test_without_specialize_or_without_the_sm_count_the_kernel_is_itself():
    shape = GemmShape(4096, 4096, 4096)
    plain = _rung("10")
    assert plain.for_shape(shape, H100_SMS) is plain
    k = _rung("14")
    assert k.for_shape(shape) is k  # the orientation needs SMS: an offline build keeps every path
    assert k.shape_defines == () and not any("MS14" in f for f in k.define_flags)


def _spec(tmp_path, extra):
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    p = tmp_path / "k.yaml"
    p.write_text(f"file: k.cu\nentry: k\nparams: {{BM: 32}}\ndefines: [BM]\n"
                 f"grid: [\"cdiv(N, BM)\", \"cdiv(M, BM)\"]\nblock: [32]\n{extra}")
    return specmod.load_spec(p)


def test_specialize_reads_the_grid_and_the_shape(tmp_path):
    k = bind(_spec(tmp_path, "specialize: {ROWS: GRID_Y, ODD_K: K % 2, BIG: \"1 if M * N > 10000 else 0\"}\n"))
    assert k.for_shape(GemmShape(100, 70, 5)).define_flags == ("-DBM=32", "-DROWS=4", "-DODD_K=1", "-DBIG=0")


@pytest.mark.parametrize(("extra", "match"), [
    ("specialize: [A]\n", "specialize: expected a mapping MACRO: expression"),
    ("specialize: {2x: N}\n", "specialize: '2x' is not a macro name"),
    ("specialize: {BM: N}\n", "specialize.BM: is already a macro"),
    ("specialize: {X: N %}\n", "specialize.X: cannot parse"),
    ("specialize: {X: N}\nspecialise: {Y: M}\n", "specialise"),
])
def test_malformed_specialize_names_file_and_key(tmp_path, extra, match):
    with pytest.raises(SpecError, match=re.escape(match)):
        _spec(tmp_path, extra)


def test_a_specialize_that_fails_at_the_shape_names_its_key(tmp_path):
    k = bind(_spec(tmp_path, "specialize: {X: N // (M - 100)}\n"))
    with pytest.raises(SpecError, match=re.escape("specialize.X: ")):
        k.for_shape(GemmShape(100, 70, 5))


class _Recorder:
    def __init__(self):
        self.flags = []

    def __call__(self, kernel, arch):
        self.flags.append(kernel.define_flags)
        return BuildResult(kernel.variant_name, arch, True, None, " ".join(kernel.define_flags))


def test_the_pool_builds_what_the_runner_will_ask_for(monkeypatch):
    """for_run specializes at the run's shape; the runner's own for_shape (a new object) finds that build."""
    from gemmprof.measure import build as buildmod

    monkeypatch.setattr(buildmod.nvccmod, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    shape = GemmShape(4095, 4097, 1023)
    k14, k13 = _rung("14"), _rung("13")  # rung 13 takes any shape and has no `specialize`
    fake = _Recorder()
    with compile_pool.for_run([(k14, None), (k13, None)], shape, None, arch="sm_90", build=fake,
                              sms=H100_SMS) as ahead:
        ahead.wait_all()
        got = ahead.get(k14.for_shape(shape, H100_SMS))
        assert got is not None and got.log == "-DMS14_TALL=1 -DMS14_NMOD4=1"
        assert ahead.get(k14) is None  # the general build was never made: nothing to hand out for it
    assert sorted(fake.flags) == sorted([(), ("-DMS14_TALL=1", "-DMS14_NMOD4=1")])


def test_kernels_that_build_the_same_binary_are_built_once():
    shape = GemmShape(4096, 4096, 4096)
    fake = _Recorder()
    a, b = _rung("14").for_shape(shape, H100_SMS), _rung("14").for_shape(shape, H100_SMS)
    with compile_pool.CompileAhead([a, b, _rung("14")], "sm_90", build=fake) as ahead:
        ahead.wait_all()
    assert len(fake.flags) == 2


# nvcc: the specialized build at 4096 is a fraction of the general one, and its main loops are the general's -------
def _main_loops(cubin: Path) -> list[Counter]:
    """The opcodes (with modifiers) of every loop holding a k-tile's FFMAs (2 * 4 * 4 * 128 per thread)."""
    from gemmprof.measure import sass

    listing = sass.disassemble(cubin)
    insns, labels = sass.instructions(listing), sass._labels(listing)
    loops = []
    for addr, op, args in insns:
        target = args.strip().split()[-1].strip("`()") if op.startswith("BRA") and args.strip() else ""
        dest = labels.get(target) if target.startswith(".L") else int(target, 16) if target.startswith("0x") else None
        if dest is not None and dest <= addr:
            body = Counter(o for a, o, _ in insns if dest <= a <= addr)
            if body["FFMA"] >= 1024:
                loops.append(body)
    return loops


@pytest.mark.parametrize(("rid", "shape", "loops", "ratio"), [
    ("14", (4096, 4096, 4096), (16, 4), 1 / 3),  # 2 orientations x 8 ways to copy B; the 4 shifts of B of N % 4 == 0
    ("16", (1000, 1000, 1000), (4, 2), 0.6),  # unsplit and split x 2 ways to copy B; split
])
def test_the_build_for_a_shape_holds_fewer_copies_of_the_same_main_loop(nvcc, disassembler, rid, shape, loops,
                                                                             ratio):
    from gemmprof.measure.build import nvcc_build

    k = _rung(rid)  # the cubin cache as test_build_nvcc leaves it: the general builds are usually there already
    general, special = (nvcc_build(x, "sm_90", nvcc) for x in (k, k.for_shape(GemmShape(*shape), H100_SMS)))
    assert general.ok and special.ok, (general.log[-2000:], special.log[-2000:])
    shape_flags = {f"-D{n}={v}" for n, v in special.kernel.shape_defines}
    assert shape_flags and shape_flags <= set(special.build.flags) and not shape_flags & set(general.build.flags)
    # ptxas allocates over the whole kernel: the count may move a little (rung 16: 236 -> 218), never into spills or
    # below one block of THREADS * MINBLOCKS per SM
    regs = special.resources.registers
    assert special.resources.spill_stores == 0 and regs * k.params["THREADS"] * k.params["MINBLOCKS"] <= 65536, regs
    size_general, size_special = general.cubin.stat().st_size, special.cubin.stat().st_size
    assert size_special < size_general * ratio, (size_special, size_general)
    loops_general, loops_special = _main_loops(general.cubin), _main_loops(special.cubin)
    assert (len(loops_general), len(loops_special)) == loops
    # ptxas allocates registers over the whole kernel: the same instructions, register moves aside
    for loop in loops_special:
        def differs(other, loop=loop):
            return {op: n for op, n in ((loop - other) + (other - loop)).items() if op != "MOV"}

        closest = min(loops_general, key=lambda other: sum(differs(other).values()))
        assert not differs(closest), differs(closest)
        assert abs(loop["MOV"] - closest["MOV"]) <= 8, (loop["MOV"], closest["MOV"])


@pytest.mark.parametrize(("args", "flags", "title"), [
    (["14"], set(), "build: sm_90"),
    (["14", "-m", "4095", "-n", "4097", "-k", "1023", "--gpu", "h100"], {"-DMS14_TALL=1", "-DMS14_NMOD4=1"},
     "for 4095x4097x1023 on 132 SMs"),
    (["14", "15", "--size", "4096", "--gpu", "h100_pcie"], {"-DMS14_TALL=0", "-DMS14_NMOD4=0"},
     "on 114 SMs"),
])
def test_build_builds_for_a_shape_only_when_given_one(runner, monkeypatch, args, flags, title):
    from clitools import invoke

    import gemmprof.measure.compile_pool as poolmod
    from gemmprof.measure import build as buildmod
    from gemmprof.results.run import BuildInfo, Resources

    built = []

    def fake_build_all(kernels, archs, jobs=None, **_):
        built.extend(kernels)
        return [buildmod.BuildResult(k.variant_name, a, True, Resources(32, 0, 0, 0, 0), "",
                                     BuildInfo("nvcc", "13.0", k.define_flags, a)) for a in archs for k in kernels]

    monkeypatch.setattr(poolmod, "nvcc_build_all", fake_build_all)
    res = invoke(runner, ["build", *args, "--format", "json"])
    assert res.exit_code == 0, res.output
    assert {f for k in built for f in k.define_flags} == flags
    doc = json.loads(res.output[res.output.index("{"):])
    assert doc["title"].endswith(title), doc["title"]


def test_build_refuses_a_gpu_without_a_shape(runner):
    from clitools import invoke

    res = invoke(runner, ["build", "14", "--gpu", "h100"])
    assert res.exit_code != 0 and "give a shape too" in res.output and "Traceback" not in res.output
