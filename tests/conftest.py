"""Test setup: GPU tests carry the `gpu` marker and are skipped where CuPy finds no device (CI has none);
the probes and the other named markers live in context.py."""

import os
from pathlib import Path

import pytest
from context import find_tool, gpu_available

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


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
def runner():
    from click.testing import CliRunner

    return CliRunner()

