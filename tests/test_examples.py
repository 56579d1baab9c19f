"""examples/: every spec loads and binds, and every example compiles with nvcc offline (the CI compile check;
a launcher's shared library is built and loaded with ctypes, which needs no GPU)."""

import shutil
from pathlib import Path

import pytest
from clitools import invoke

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.measure import nvcc as nvccmod
from gemmprof.measure.compile_pool import nvcc_build_all

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SPECS = {
    "sgemm_colmajor": "colmajor_ld/sgemm_colmajor.yaml",
    "hgemm_half_c": "hgemm_half_c/hgemm_half_c.yaml",
    "splitk_launcher": "splitk_launcher/splitk.yaml",
    "sgemm_tiled_include": "multifile_include/sgemm_tiled.yaml",
}


def bound(name):
    return bind(specmod.load_spec(EXAMPLES / SPECS[name]))


def test_every_example_spec_loads_binds_and_has_a_readme_command():
    readme = (EXAMPLES / "README.md").read_text()
    for name, rel in SPECS.items():
        assert bound(name).spec.name == name
        assert f"--spec examples/{rel}" in readme, rel
    assert sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/*.yaml")) == sorted(SPECS.values())


def test_the_examples_say_what_they_take():
    col = bound("sgemm_colmajor").spec
    assert col.layout == {"A": "col", "B": "col", "C": "col"}
    assert [a.name for a in col.abi.args] == ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
    half = bound("hgemm_half_c").spec
    assert (half.dtype, half.abi.c_dtype, half.abi.refuses(1.0, 0.0)) == ("fp16", "fp16", None)
    splitk = bound("splitk_launcher")
    assert splitk.spec.launcher.name == "splitk.cu" and splitk.spec.abi.args[9].literal == 4
    assert splitk.spec.abi.workspace_bytes({"M": 64, "N": 32, "K": 8}) == 4 * 64 * 32 * 4
    tiled = bound("sgemm_tiled_include")
    assert tiled.define_flags == ("-DTILE=16",)
    assert tiled.spec.build_fields.include_dirs == (EXAMPLES / "multifile_include" / "include",)


def test_every_example_compiles_and_the_launcher_reports_each_kernel(nvcc):
    kernels = [bound(n) for n in SPECS]
    results = nvcc_build_all(kernels, ["sm_90"], jobs=2)
    assert all(r.ok for r in results), {r.name: r.log[-2000:] for r in results if not r.ok}
    names = sorted(r.name for r in results)
    assert names == sorted(["sgemm_colmajor", "hgemm_half_c", "sgemm_tiled_include",
                            "splitk_launcher:splitk_partial", "splitk_launcher:splitk_reduce"])
    by_name = {r.name: r for r in results}
    assert by_name["splitk_launcher:splitk_partial"].resources.static_smem > 0  # its tiles; the reduction has none
    assert by_name["splitk_launcher:splitk_reduce"].resources.static_smem == 0
    flags = by_name["sgemm_tiled_include"].build.flags
    assert {"-maxrregcount=64", "--use_fast_math", "-DTILE=16"} <= set(flags)
    assert f"-I{EXAMPLES / 'multifile_include' / 'include'}" in flags


def test_the_launchers_library_loads_and_exports_its_entry(nvcc):
    from gemmprof.measure.launcher import Launcher, build_library, missing_entry

    k = bound("splitk_launcher")
    built = build_library(k, "sm_90")
    assert built.ok, built.log
    assert {"-shared", "-fPIC"} <= set(built.flags)
    assert missing_entry(built.library, "splitk_sgemm") is None
    assert "did you mean splitk_sgemm?" in missing_entry(built.library, "splitk_gemm", k.spec.launcher.read_text())
    assert Launcher(built.library, "splitk_sgemm").entry == "splitk_sgemm"


def test_a_header_in_an_include_dir_is_part_of_the_cache_key(nvcc, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    shutil.copytree(EXAMPLES / "multifile_include", tmp_path / "ex")
    k = bind(specmod.load_spec(tmp_path / "ex" / "sgemm_tiled.yaml"))
    first = nvccmod.compile_cubin(k, "sm_90", nvcc)
    header = tmp_path / "ex" / "include" / "tile_load.cuh"
    header.write_text(header.read_text() + "\n// edited\n")
    second = nvccmod.compile_cubin(k, "sm_90", nvcc)
    assert first.ok and second.ok and not second.cached and first.cubin != second.cubin
    assert nvccmod.compile_cubin(k, "sm_90", nvcc).cached


def test_build_a_missing_launcher_entry_is_a_failed_row(nvcc, tmp_path, runner):
    shutil.copytree(EXAMPLES / "splitk_launcher", tmp_path / "ex")
    spec = tmp_path / "ex" / "splitk.yaml"
    spec.write_text(spec.read_text().replace("entry: splitk_sgemm", "entry: splitk_sgem"))
    r = invoke(runner, ["build", "--spec", str(spec), "--format", "csv"])
    assert r.exit_code == 1
    assert "no extern \"C\" function 'splitk_sgem'" in r.output and "did you mean splitk_sgemm?" in r.output


@pytest.mark.parametrize("edit,match", [
    (("entry: splitk_sgemm", "entry: splitk_sgemm\ngrid: [1]"), "grid: a launcher spec has none"),
    (("args: [M, N, K, alpha, A, B, beta, C, workspace, 4, stream]", "args: [M, N, K, alpha, A, B, beta, C, "
      "workspace, 4, strem]"), r"args\[10\]: 'strem' .*did you mean stream"),
    (("launcher: splitk.cu", "launcher: nowhere.cu"), "launcher: .*nowhere.cu does not exist"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\nlibs: [cu blas]"), "libs: expected a list of library names"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\nflags: [-o, x]"), r"flags\[0\]: '-o': gemmprof sets this"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\nflags: [-O3 -g]"), r"flags\[0\]: '-O3 -g': one option"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\ndefines: [USE_FAST]"), r"defines\[0\]: 'USE_FAST' is not a "),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\ninclude_dirs: [nope]"), r"include_dirs\[0\]: .*nope is not a"),
])
def test_bad_launcher_and_build_keys_are_one_line(tmp_path, edit, match):
    from gemmprof.errors import SpecError

    shutil.copytree(EXAMPLES / "splitk_launcher", tmp_path / "ex")
    spec = tmp_path / "ex" / "splitk.yaml"
    text = spec.read_text()
    assert edit[0] in text
    spec.write_text(text.replace(edit[0], edit[1]))
    with pytest.raises(SpecError, match=match):
        specmod.load_spec(spec)


def _run(runner, tmp_path, *args):
    import json

    out = tmp_path / "r.json"
    r = invoke(runner, ["run", *args, "-o", str(out), "--budget", "0.05", "--max-reps", "10"])
    return r, json.loads(out.read_text()) if out.exists() else None


@pytest.mark.gpu
@pytest.mark.parametrize("beta", ["0", "0.5"])
def test_every_example_verifies_on_the_gpu_beside_cublas_of_its_types(runner, tmp_path, beta):
    specs = [x for rel in SPECS.values() for x in ("--spec", str(EXAMPLES / rel))]
    r, doc = _run(runner, tmp_path, *specs, "-m", "301", "-n", "257", "-k", "95", "--alpha", "1", "--beta", beta)
    assert doc is not None, r.output
    rows = {v["name"]: v for v in doc["variants"]}
    for name in SPECS:
        want = "rejected" if name == "hgemm_half_c" and beta != "0" else "ok"  # it takes no beta
        assert rows[name]["status"] == want, (name, rows[name]["message"])
    assert rows["cublas_hgemm_cfp16"]["status"] == "ok" and rows["cublas_sgemm"]["status"] == "ok"


@pytest.mark.gpu
def test_a_failing_launcher_fails_its_variant_not_the_run(runner, tmp_path):
    shutil.copytree(EXAMPLES / "splitk_launcher", tmp_path / "ex")
    bad = tmp_path / "ex" / "splitk.yaml"
    bad.write_text(bad.read_text().replace("workspace, 4, stream]", "workspace, 0, stream]"))  # 0 slices: rc 1
    good = EXAMPLES / SPECS["sgemm_colmajor"]
    r, doc = _run(runner, tmp_path, "--spec", str(bad), "--spec", str(good), "--size", "256", "--no-cublas")
    rows = {v["name"]: v for v in doc["variants"]}
    assert rows["splitk_launcher"]["status"] == "error" and "returned 1" in rows["splitk_launcher"]["message"]
    assert rows["sgemm_colmajor"]["status"] == "ok" and r.exit_code == 1


@pytest.mark.gpu
def test_the_split_k_launchers_profile_shows_both_kernels(runner, tmp_path):
    import json

    from context import find_tool

    if find_tool("ncu", "/opt/nvidia/nsight-compute/*/ncu") is None:
        pytest.skip("ncu not installed")
    out = tmp_path / "p.json"
    r = invoke(runner, ["profile", "--spec", str(EXAMPLES / SPECS["splitk_launcher"]), "--size", "512",
                        "--save", str(out)])
    assert r.exit_code == 0, r.output
    launches = json.loads(out.read_text())["launches"]
    kernels = {launch["kernel_name"].split("(")[0].split()[-1] for launch in launches
               if launch["variant"] == "splitk_launcher"}
    assert kernels == {"splitk_partial", "splitk_reduce"}, launches
