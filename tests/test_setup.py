"""Setting up to contribute: `.[test]` installs what CI runs and leaves Ray out (its tests skip with a reason, in CI
too), and the optional extras exist under the names the README gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
ROOT = Path(__file__).resolve().parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _names(extra: str) -> set[str]:
    return {req.split(">")[0].split("=")[0].split("[")[0].strip().lower() for req in EXTRAS[extra]}


def test_the_test_extra_leaves_ray_to_its_own():
    assert "ray" not in _names("test") and "ray" in _names("ray")
    assert {"pytest", "ruff", "hypothesis", "optuna", "pandas"} <= _names("test")


def test_the_readme_names_extras_that_exist():
    readme = (ROOT / "README.md").read_text()
    for extra in ("cuda12", "cuda13", "test", "ray", "torch", "tune", "pandas"):
        assert extra in EXTRAS, extra
        assert f"'.[{extra}]'" in readme or f"'.[test,{extra}]'" in readme, extra
    assert "torch" in _names("torch")


def test_without_ray_its_tests_skip_and_say_how_to_run_them(request, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as where Ray is not installed
    monkeypatch.setenv("CI", "true")  # in CI too: no failure, a skip with its reason
    with pytest.raises(pytest.skip.Exception, match=r"pip install -e '\.\[ray\]' runs these tests"):
        request.getfixturevalue("ray")
