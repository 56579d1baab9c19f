"""Test setup: GPU tests carry the `gpu` marker and are skipped where CuPy finds no device (CI has none);
the probes and the other named markers live in context.py."""

import os
from pathlib import Path

import pytest
from context import find_tool, gpu_available

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(config, items):
    for item in items:  # property tests are the `slow` ones: `pytest -m slow` runs them at the slow profile
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.slow)
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _own_data_dir(monkeypatch, tmp_path_factory):
    """No test reads or writes the ceilings stored on this machine: each test gets a data directory of its own
    (made only where a test writes to it)."""
    import uuid

    monkeypatch.setenv("GEMMPROF_DATA", str(tmp_path_factory.getbasetemp() / "data" / uuid.uuid4().hex))


@pytest.fixture
def nvcc():
    """nvcc, which CI has: there a missing nvcc fails instead of skipping."""
    path = find_tool("nvcc")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc is required in CI to compile-check the kernels")
        pytest.skip("nvcc not installed")
    return path


@pytest.fixture
def disassembler():
    """nvdisasm or cuobjdump, which the `test` extra installs (gemmprof[sass]'s packages): in CI a missing one fails
    instead of skipping."""
    from gemmprof.measure.sass import find_disassembler

    found = find_disassembler()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nvdisasm or cuobjdump is required in CI (pip install -e '.[test]')")
        pytest.skip("no nvdisasm or cuobjdump (pip install 'gemmprof[sass]')")
    return found


RAY_SKIP = "Ray is an optional extra, not in [test]: pip install -e '.[ray]' runs these tests"


@pytest.fixture
def ray():
    """Ray, the `ray` extra: its tests skip with that reason where it is not installed, in CI too (CI installs
    `.[test]`, which leaves out Ray's 240 MB)."""
    try:
        import ray as module
    except ImportError:
        pytest.skip(RAY_SKIP)
    return module


@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()



# Property tests (hypothesis): `ci` (default) runs 1000 examples per reader inside CI's time; `slow` runs more.
# Choose with HYPOTHESIS_PROFILE=slow, or run `pytest -m slow`.
try:
    from hypothesis import HealthCheck, settings

    _quiet = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
    settings.register_profile("ci", max_examples=1000, deadline=None, suppress_health_check=_quiet,
                              print_blob=True)
    settings.register_profile("slow", max_examples=10000, deadline=None, suppress_health_check=_quiet)
    settings.register_profile("quick", max_examples=50, deadline=None, suppress_health_check=_quiet)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
except ImportError:  # the property tests import hypothesis themselves and fail loudly without it
    pass


def pytest_configure(config):
    """`pytest -m slow` runs the property tests with the `slow` profile (10,000 examples per reader)."""
    if "slow" in (config.option.markexpr or "") and "not slow" not in config.option.markexpr:
        from hypothesis import settings

        settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "slow"))
