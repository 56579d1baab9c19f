"""What this machine has, probed in one place, and the named skip markers built on it (as kernel_tuner's
test/context.py does): `needs_gpu`, `needs_ncu`, `needs_nsys`, `needs_nvcc`, `needs_cuobjdump`.

CI has nvcc but no GPU, ncu or nsys: GPU and profiler tests skip there; an nvcc test fails there instead of
skipping (the `nvcc` fixture in conftest.py), because compile checks of every kernel belong in CI.
"""

from __future__ import annotations

import glob
import shutil
from functools import lru_cache
from pathlib import Path

import pytest


@lru_cache(maxsize=1)
def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def find_tool(name: str, *fallback_globs: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for pattern in (f"/usr/local/cuda/bin/{name}", *fallback_globs):
        hits = sorted(glob.glob(pattern))
        if hits and Path(hits[-1]).exists():
            return hits[-1]
    return None


needs_gpu = pytest.mark.gpu  # skipped by conftest.py's collection hook where CuPy finds no device
needs_ncu = pytest.mark.skipif(find_tool("ncu", "/opt/nvidia/nsight-compute/*/ncu") is None,
                               reason="ncu not installed")
needs_nsys = pytest.mark.skipif(find_tool("nsys", "/opt/nvidia/nsight-systems/*/bin/nsys") is None,
                                reason="nsys not installed")
needs_cuobjdump = pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump not installed")


def from_test_extra(module: str):
    """A module the `test` extra installs (cuda-bindings, nvmath-python, ncu-report): imported; where it is missing
    the test skips, but in CI (CI set), which installs the extra, it fails, so a broken install cannot pass as
    skipped tests."""
    import importlib
    import os

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is required in CI (pip install -e '.[test]'): {exc}")
        pytest.skip(f"{module} not installed (pip install -e '.[test]')")
