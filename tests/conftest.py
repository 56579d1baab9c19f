"""Test setup: GPU tests carry the `gpu` marker and are skipped where CuPy finds no device (CI has none)."""

import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def nvcc():
    """nvcc, which CI has: there a missing nvcc fails instead of skipping."""
    path = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc is required in CI to compile-check the kernels")
        pytest.skip("nvcc not installed")
    return path


@pytest.fixture
def runner():
    from click.testing import CliRunner

    return CliRunner()

