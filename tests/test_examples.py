"""examples/: every spec loads and binds, and every example compiles with nvcc offline (the CI compile check;
a launcher's shared library is built and loaded with ctypes, which needs no GPU)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from clitools import invoke

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.errors import SpecError
from gemmprof.measure import nvcc as nvccmod
from gemmprof.measure.compile_pool import nvcc_build_all
from gemmprof.results.shape import GemmShape

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SPECS = {
    "sgemm_colmajor": "colmajor_ld/sgemm_colmajor.yaml",
    "hgemm_half_c": "hgemm_half_c/hgemm_half_c.yaml",
    "splitk_launcher": "splitk_launcher/splitk.yaml",
    "sgemm_tiled_include": "multifile_include/sgemm_tiled.yaml",
}
PUBLIC = "public_fastcu12/fastcu12.yaml"  # a public Hopper kernel, fetched unchanged, behind a launcher of ours


def bound(name):
    return bind(specmod.load_spec(EXAMPLES / SPECS[name]))


def test_every_example_spec_loads_binds_and_has_a_readme_command():
    readme = (EXAMPLES / "README.md").read_text()
    for name, rel in SPECS.items():
        assert bound(name).spec.name == name
        assert f"--spec examples/{rel}" in readme, rel
    assert sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/*.yaml")) == sorted([*SPECS.values(), PUBLIC])
    assert f"--spec examples/{PUBLIC}" in readme


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
    (("entry: splitk_sgemm", "entry: splitk_sgemm\ninclude_dirs: [\"${HOME}/x\"]"),
     r"include_dirs\[0\]: '\$\{HOME\}/x': only a leading \$\{GEMMPROF_CACHE\}/ is expanded"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\ninclude_dirs: [\"${GEMMPROF_CACHE}x\"]"), "only a leading"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\ninclude_dirs: [\"${GEMMPROF_CACHE}/nothing\"]"),
     r"nothing is not there: it is fetched, not shipped \(fetch what it holds first\)"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\nfetch: get.sh"), r"fetch: names how to fetch .* has none"),
    (("entry: splitk_sgemm", "entry: splitk_sgemm\nfetch: [a]"), "fetch: expected one line"),
])
def test_bad_launcher_and_build_keys_are_one_line(tmp_path, monkeypatch, edit, match):
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
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


# -- the public kernel: fast.cu's kernel 12, fetched at the moment of use, never in this tree ------------------------
def _fetch_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("fetch_public_kernel", ROOT / "scripts" / "fetch_public_kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FETCH = _fetch_script()


def _fetched_header() -> Path | None:
    """The header in gemmprof's cache ($GEMMPROF_CACHE, else ~/.cache/gemmprof), if fetched and intact."""
    header = FETCH.folder(FETCH.cache_root()) / FETCH.NAME
    return header if header.is_file() and FETCH.git_blob(header.read_bytes()) == FETCH.BLOB else None


def _needs_fetched_header():
    if _fetched_header() is None:
        pytest.skip("fast.cu's matmul_12.cuh is not fetched (python3 scripts/fetch_public_kernel.py; it downloads "
                    "from GitHub, which CI does not reach)")


def _public():
    return bind(specmod.load_spec(EXAMPLES / PUBLIC))


@pytest.fixture
def empty_fetch_folder(tmp_path, monkeypatch):
    """gemmprof's cache in tmp_path with the spec's include folder made, empty: the spec loads, nothing builds."""
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    folder = FETCH.folder(tmp_path / "cache")
    folder.mkdir(parents=True)
    return folder


def test_no_public_kernel_source_is_in_the_tree():
    assert sorted(p.name for p in (EXAMPLES / "public_fastcu12").iterdir()) == [
        "README.md", "fastcu12.yaml", "fastcu12_launcher.cu"]  # ours: the launcher, the spec, the README
    # in the files a checkout holds (a fetched copy in an ignored folder, as the GPU batch carries, is not the tree)
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    names = tracked.stdout.split() if tracked.returncode == 0 else [str(p) for p in ROOT.glob("**/*")]
    assert not [n for n in names if n.endswith("matmul_12.cuh")]


def test_the_spec_reads_the_header_from_the_folder_the_fetch_script_fills(empty_fetch_folder):
    assert _public().spec.build_fields.include_dirs == (empty_fetch_folder,)
    assert f"/public/fastcu/{FETCH.COMMIT}" in (EXAMPLES / PUBLIC).read_text()


def test_without_the_fetched_header_every_command_says_to_run_the_fetch_script(tmp_path, monkeypatch, runner):
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "empty"))
    with pytest.raises(SpecError, match=r"include_dirs\[0\]: .*empty/public/fastcu/38eb642.* is not there: it is "
                                        r"fetched, not shipped \(run `python3 scripts/fetch_public_kernel.py`\)"):
        _public()
    r = invoke(runner, ["build", "--spec", str(EXAMPLES / PUBLIC)])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1 and "scripts/fetch_public_kernel.py" in r.output


def test_the_public_kernels_spec_states_its_types_and_its_shape_limits(empty_fetch_folder):
    k = _public()
    assert (k.spec.dtype, k.spec.abi.c_dtype) == ("bf16", "bf16")
    assert k.spec.layout == {"A": "row", "B": "col", "C": "col"}
    assert [a.name for a in k.spec.abi.args] == ["M", "N", "K", "A", "B", "C", "stream"]
    for ok in [(4096, 4096, 4096), (8192, 8192, 8192), (768, 640, 192), (1024, 1024, 1024)]:
        k.check_shape(GemmShape(*ok))
    for bad, what in [((1000, 1000, 1000), "K must be a multiple of 64"), ((4096, 4096, 4000), "K must"),
                      ((384, 4096, 4096), "M / 128 must be even"), ((256, 256, 256), "at least 2 cluster tiles"),
                      ((32768, 32768, 64), "at most 8192")]:
        with pytest.raises(SpecError, match=what):
            k.check_shape(GemmShape(*bad))


def _git_clone_with(tmp_path, data: bytes) -> tuple[Path, str]:
    """A git repository holding `data` at fast.cu's path, committed: (its folder, the commit)."""
    import subprocess

    if shutil.which("git") is None:
        if os.environ.get("CI"):
            pytest.fail("git is required in CI")
        pytest.skip("git not installed")
    repo = tmp_path / "clone"
    (repo / "examples" / "matmul").mkdir(parents=True)
    (repo / FETCH.PATH).write_bytes(data)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"]):
        subprocess.run(git + args, check=True, capture_output=True)
    (repo / FETCH.PATH).write_bytes(b"// the work tree moved on\n")  # the commit's file is read, not the tree's
    head = subprocess.run(git + ["rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    return repo, head


def test_the_fetch_script_writes_only_a_file_of_the_pinned_blob(tmp_path, monkeypatch, capsys):
    data = b"// a stand-in for fast.cu's header\n"
    clone, commit = _git_clone_with(tmp_path, data)
    monkeypatch.setattr(FETCH, "COMMIT", commit)
    dest = tmp_path / "dest"
    assert FETCH.main(["--from", str(clone), "--dest", str(dest)]) == 1  # the real BLOB: refused
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"git blob {FETCH.git_blob(data)}, expected {FETCH.BLOB}" in err
    assert not dest.exists()
    with pytest.raises(FETCH.FetchError, match="git blob .*refused"):
        FETCH.fetch(dest, get=lambda: b"<html>a proxy's error page</html>")  # a download is checked the same way
    monkeypatch.setattr(FETCH, "BLOB", FETCH.git_blob(data))
    assert FETCH.main(["--from", str(clone), "--dest", str(dest)]) == 0
    where = FETCH.folder(dest)
    assert capsys.readouterr().out.strip() == str(where.resolve())
    assert (where / FETCH.NAME).read_bytes() == data and where.name == commit
    assert FETCH.fetch(dest, get=lambda: pytest.fail("downloaded again")) == where  # a checked file is kept


def test_the_fetch_script_reads_a_clone_without_git_history_by_its_hash(tmp_path, monkeypatch):
    data = b"// fast.cu's header, as a tarball would unpack it\n"
    tree = tmp_path / "unpacked"
    (tree / "examples" / "matmul").mkdir(parents=True)
    (tree / FETCH.PATH).write_bytes(data)
    monkeypatch.setattr(FETCH, "BLOB", FETCH.git_blob(data))
    assert (FETCH.fetch(tmp_path / "dest", tree) / FETCH.NAME).read_bytes() == data
    with pytest.raises(FETCH.FetchError, match="--from: .* has neither commit"):
        FETCH.fetch(tmp_path / "dest2", tmp_path / "dest")


def test_the_fetched_header_is_upstreams_file():
    _needs_fetched_header()
    header = _fetched_header()
    assert FETCH.git_blob(header.read_bytes()) == "c7766a7b989d153b5cf8d269444fd97b1286ce16"  # fast.cu 38eb642
    assert "wgmma" in header.read_text()


def test_the_public_kernels_launcher_builds_without_libcuda(nvcc):
    from gemmprof.measure.launcher import build_library, missing_entry

    _needs_fetched_header()
    built = build_library(_public(), "sm_90")
    assert built.ok, built.log[-2000:]
    assert missing_entry(built.library, "fastcu12") is None


@pytest.mark.gpu
def test_the_public_kernel_verifies_on_the_gpu(runner, tmp_path):
    from hopper_runs import needs_hopper

    needs_hopper()
    _needs_fetched_header()
    for shape in (["--size", "1024"], ["-m", "768", "-n", "640", "-k", "192"]):  # 640: C's last tile clipped
        r, doc = _run(runner, tmp_path, "--spec", str(EXAMPLES / PUBLIC), *shape)
        assert doc is not None, r.output
        rows = {v["name"]: v for v in doc["variants"]}
        assert rows["fastcu12"]["status"] == "ok" and rows["fastcu12"]["rel_error"] < 1e-2, rows["fastcu12"]
        assert rows["cublas_bf16_cbf16"]["status"] == "ok"
