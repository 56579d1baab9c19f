"""nvcc builds, SASS facts and the verification verdicts (CPU), and the three failure kinds on a GPU."""

import gzip
import json

import numpy as np
import pytest

from gemmprof.catalog.binding import bind
from gemmprof.catalog.spec import load_spec, parse_spec
from gemmprof.errors import SpecError
from gemmprof.measure import sass
from gemmprof.measure.verify import SENTINEL, classify
from gemmprof.results.run import BuildInfo, VariantResult, Verification
from tests.conftest import FIXTURES

KERNELS = FIXTURES.parent / "kernels_verify"


def _ref(m=6, n=5, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-1, 1, (m, 7)), rng.uniform(-1, 1, (7, n))
    return (a @ b), (a @ b).astype(np.float32)


def test_correct_output_passes_with_nothing_to_report():
    ref, out = _ref()
    v = classify(out.copy(), ref, 1e-4, initial=SENTINEL, poisoned=out.copy())
    assert v.passed and (v.unwritten, v.reads_c, v.wrong) == (0, 0, 0) and v.first_bad is None


def test_unwritten_elements_are_counted_with_the_first_index():
    ref, out = _ref()
    sentinel, poisoned = out.copy(), out.copy()
    sentinel[2, 3:] = SENTINEL
    poisoned[2, 3:] = np.nan
    v = classify(sentinel, ref, 1e-4, initial=SENTINEL, poisoned=poisoned)
    assert not v.passed and v.unwritten == 2 and v.reads_c == 0 and v.first_bad == (2, 3)
    assert "2 elements of C never written, first at [2, 3]" in v.describe()


def test_reading_c_with_beta_zero_is_a_finding_not_a_failure():
    ref, out = _ref()
    poisoned = np.full_like(out, np.nan)  # 0 * NaN everywhere
    v = classify(out.copy(), ref, 1e-4, initial=SENTINEL, poisoned=poisoned)
    assert v.passed and v.reads_c == out.size and v.unwritten == 0 and v.wrong == 0
    assert v.findings == ["reads C with beta=0 (BLAS forbids)"] and v.first_bad == (0, 0)


def test_wrong_values_are_counted_apart_from_unwritten():
    ref, out = _ref()
    bad = out.copy()
    bad[4, 1] += 0.5
    bad[5, 0] = np.nan
    v = classify(bad, ref, 1e-4, initial=SENTINEL, poisoned=bad.copy())
    assert not v.passed and v.wrong == 2 and v.unwritten == 0 and v.first_bad == (4, 1)
    assert v.describe().startswith("2 wrong values")


def test_beta_nonzero_unwritten_means_c_kept_its_value():
    ref, out = _ref()
    c0 = np.random.default_rng(1).uniform(-1, 1, out.shape).astype(np.float32)
    bad = out.copy()
    bad[0, :2] = c0[0, :2]
    v = classify(bad, ref, 1e-4, initial=c0)
    assert v.unwritten == 2 and not v.passed


def test_verification_and_build_round_trip_through_the_flat_json():
    build = BuildInfo("nvcc", "13.0.88", ("-O3", "-std=c++17"), "sm_90", "ab" * 32, "_Z1kv", "default",
                      {"FFMA": 4, "total": 10})
    row = VariantResult(id="k", name="k", title="k", dtype="fp32", build=build,
                        verification=Verification(1e-7, 1e-4, 0, 12, 0, (0, 1), True))
    d = json.loads(json.dumps(row.to_dict()))
    assert d["compiler"] == "nvcc" and d["compiler_flags"] == ["-O3", "-std=c++17"] and d["reads_c"] == 12
    back = VariantResult.from_dict(d)
    assert back.build == build and back.verification == row.verification


def test_minimal_spec_needs_file_entry_grid_block(tmp_path):
    (tmp_path / "k.cu").write_text("")
    s = parse_spec(tmp_path / "My-Kernel.yaml", "file: k.cu\nentry: k\ngrid: [1]\nblock: [32]\n")
    assert (s.id, s.name, s.dtype, s.layout["A"], s.title) == ("My-Kernel", "My-Kernel", "fp32", "row", "My-Kernel")
    with pytest.raises(SpecError, match="compiler_reason"):
        parse_spec(tmp_path / "k.yaml", "file: k.cu\nentry: k\ngrid: [1]\nblock: [32]\ncompiler: nvrtc\n")


@pytest.mark.parametrize("name", ["warptiling_sm90_nvdisasm.sass.gz", "h3_mma_sm90_cuobjdump.sass.gz"])
def test_sass_counts_from_real_listings(name):
    listing = gzip.decompress((FIXTURES / "sass" / name).read_bytes()).decode()
    c, loop = sass.counts(listing), sass.inner_loop(listing)
    if name.startswith("warptiling"):  # BM=BN=128, BK=16, 256 threads: one K-tile per trip of the main loop
        assert c["LDG.128"] == 20 and c["LDS.128"] == 64 and c["LDL"] == c["STL"] == 0
        assert sass.flops_per_trip(loop, 256) == 2 * 128 * 128 * 16
    else:
        assert c["HMMA"] == 64 and c["LDSM"] > 0 and c["LDGSTS"] > 0
        assert sass.flops_per_trip(loop, 256) > 0


def test_sass_facts_kept_beside_a_cached_cubin_are_read_back(tmp_path, monkeypatch):
    from gemmprof.measure import sass

    listing = gzip.decompress((FIXTURES / "sass" / "warptiling_sm90_nvdisasm.sass.gz").read_bytes()).decode()
    calls = []
    monkeypatch.setattr(sass, "disassemble", lambda cubin: calls.append(cubin) or listing)
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"\x7fELF one")
    first = sass.facts(cubin, keep=True)
    assert first and first["FFMA"] > 0 and len(calls) == 1
    assert sass.facts(cubin, keep=True) == first and len(calls) == 1  # read back, not disassembled again
    assert sass.facts(cubin) == first and len(calls) == 2  # keep=False never reads or writes the memo
    cubin.write_bytes(b"\x7fELF two, longer")  # another cubin under the same name: computed afresh
    sass.facts(cubin, keep=True)
    assert len(calls) == 3


def test_sass_classes():
    assert [sass.classify(o) for o in ("LDG.E.128.CONSTANT", "LDG.E", "LDS.64", "BAR.SYNC.DEFER_BLOCKING",
                                       "HMMA.16816.F32", "IMAD")] == ["LDG.128", "LDG", "LDS.64", "BAR", "HMMA", None]


def test_build_spec_with_non_const_pointers_and_any_name(nvcc, runner, tmp_path, monkeypatch):
    from gemmprof.cli import cli

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    args = ["build", "--spec", str(KERNELS / "reads_c_always.yaml"), "--spec", str(KERNELS / "wrong_values.yaml"),
            "--format", "json"]
    res = runner.invoke(cli, args)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)  # stderr has the compile phase line
    rows = doc["rows"]
    assert [r["name"] for r in rows] == ["Reads-C.always", "wrong_values"]
    assert all(r["status"] == "ok" and r["registers"] > 0 for r in rows)


def test_nvcc_cache_and_symbol(nvcc, tmp_path, monkeypatch):
    from gemmprof.measure.build import nvcc_build

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path))
    kernel = bind(load_spec(KERNELS / "reads_c_always.yaml"))
    first, second = nvcc_build(kernel, "sm_90"), nvcc_build(kernel, "sm_90")
    assert first.ok and first.build.symbol.startswith("_Z14reads_c_alwaysILi0EE")
    assert first.build.cubin_sha256 == second.build.cubin_sha256 and second.cubin == first.cubin
    assert "-O3" in first.build.flags and "-gencode=arch=compute_90,code=sm_90" in first.build.flags
    assert first.build.compile_s > 0 and second.build.compile_s is None  # nvcc's time; a cache read has none


def test_compile_and_load_seconds_round_trip_through_results():
    from gemmprof.results.run import _build_from, _build_keys, _checked_build
    from gemmprof.results.stages import BuildInfo

    b = BuildInfo("nvcc", "13.0", ("-O3",), "sm_90", compile_s=12.5, load_s=3.25)
    keys = _build_keys(b)
    assert (keys["compile_s"], keys["load_s"]) == (12.5, 3.25) and _build_from(keys) == b
    with pytest.raises(Exception, match="compile_s"):
        _checked_build({**keys, "compile_s": -1.0}, "variants[0]")


@pytest.mark.gpu
@pytest.mark.parametrize("compiler", ["nvcc", "nvrtc"])
def test_the_three_failure_kinds_on_the_gpu(runner, tmp_path, compiler):
    from gemmprof.cli import cli

    out = tmp_path / "r.json"
    args = ["run", "--size", "64", "--no-cublas", "--budget", "0.05", "--compiler", compiler, "-o", str(out)]
    for k in ("skips_last_column", "reads_c_always", "wrong_values"):
        args += ["--spec", str(KERNELS / f"{k}.yaml")]
    runner.invoke(cli, args)
    rows = {v["name"]: v for v in json.loads(out.read_text())["variants"]}
    skip, reads, wrong = rows["skips_last_column"], rows["Reads-C.always"], rows["wrong_values"]
    assert skip["status"] == "FAIL" and skip["unwritten"] == 64 and skip["first_bad"] == [0, 63]
    assert reads["status"] == "ok" and reads["reads_c"] == 64 * 64 and reads["timing"] is not None
    assert "reads C with beta=0" in reads["message"]
    assert wrong["status"] == "FAIL" and wrong["wrong"] > 0 and wrong["unwritten"] == 0
