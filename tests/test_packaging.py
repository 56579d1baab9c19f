"""Kernels and GPU specs are found in a checkout, through GEMMPROF_HOME, and in the wheel's packaged copy."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _paths_root(env_home=None, package_dir=None):
    code = ("import importlib, sys; sys.path.insert(0, sys.argv[1]); import gemmprof.catalog.paths as p; "
            "print(p.ROOT)")
    env = {"PATH": "/usr/bin:/bin"}
    if env_home:
        env["GEMMPROF_HOME"] = str(env_home)
    out = subprocess.run([sys.executable, "-c", code, str(package_dir or ROOT)], env=env, capture_output=True,
                         text=True, check=True)
    return Path(out.stdout.strip())


def test_checkout_is_found():
    assert _paths_root() == ROOT


def test_gemmprof_home_wins(tmp_path):
    assert _paths_root(env_home=tmp_path) == tmp_path


def test_packaged_copy_when_not_in_a_checkout(tmp_path):
    """Installed without the checkout beside it (a wheel), paths.py takes gemmprof/_data."""
    import shutil

    shutil.copytree(ROOT / "gemmprof", tmp_path / "gemmprof", ignore=shutil.ignore_patterns("__pycache__", "_data"))
    assert _paths_root(package_dir=tmp_path) == tmp_path / "gemmprof" / "_data"


def test_missing_data_is_an_error_not_an_empty_ladder(tmp_path, monkeypatch):
    from gemmprof.catalog import spec as specmod
    from gemmprof.errors import SpecError

    monkeypatch.setattr(specmod, "KERNELS_DIR", tmp_path / "kernels")
    specmod.ladder.cache_clear()
    try:
        with pytest.raises(SpecError, match="no kernel specs"):
            specmod.ladder()
    finally:
        specmod.ladder.cache_clear()


@pytest.mark.skipif(not (ROOT / "setup.py").is_file(), reason="no setup.py")
def test_wheel_carries_kernels_and_gpu_specs(tmp_path):
    """Build the wheel the way CI does (no dependencies, no build isolation: offline) and look inside."""
    pytest.importorskip("setuptools")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    if done.returncode:
        pytest.skip(f"cannot build a wheel here: {done.stderr.strip()[-200:]}")
    names = zipfile.ZipFile(next(tmp_path.glob("*.whl"))).namelist()
    kernels = {Path(n).name for n in names if n.startswith("gemmprof/_data/kernels/")}
    profiles = {Path(n).name for n in names if n.startswith("gemmprof/_data/profiles/")}
    assert {p.name for p in (ROOT / "kernels").glob("*/*")} <= kernels
    assert {p.name for p in (ROOT / "profiles").glob("*.yaml")} == profiles


def test_sdist_manifest_covers_every_kernel_and_gpu_spec_file():
    """MANIFEST.in's patterns take every file setup.py copies (a header such as kernels/fp16/hopper.cuh included),
    so a wheel built from the sdist compiles the same rungs."""
    import fnmatch

    patterns: dict[str, list[str]] = {}
    for line in (ROOT / "MANIFEST.in").read_text().splitlines():
        words = line.split()
        if words[:1] == ["recursive-include"]:
            patterns.setdefault(words[1], []).extend(words[2:])
    for folder in ("kernels", "profiles"):
        files = [p for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        missed = [str(p.relative_to(ROOT)) for p in files
                  if not any(fnmatch.fnmatch(p.name, pat) for pat in patterns.get(folder, []))]
        assert files and not missed, f"MANIFEST.in leaves out {missed}"
