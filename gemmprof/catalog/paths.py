"""Where the project's data lives: the kernel ladder (kernels/) and the GPU spec sheets (profiles/).

Looked for, in order: $GEMMPROF_HOME (a checkout of your own); the checkout this package sits in (an editable
install, or running from the repository); the copy a wheel or `pip install .` carries inside the package
(gemmprof/_data, made by setup.py)."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
CHECKOUT = _PACKAGE.parent
PACKAGED = _PACKAGE / "_data"


def _root() -> Path:
    if os.environ.get("GEMMPROF_HOME"):
        return Path(os.environ["GEMMPROF_HOME"])
    if (CHECKOUT / "kernels").is_dir() and (CHECKOUT / "profiles").is_dir():
        return CHECKOUT
    return PACKAGED


ROOT = _root()
KERNELS_DIR = ROOT / "kernels"
PROFILES_DIR = ROOT / "profiles"


def default_cache_dir() -> Path:
    """$GEMMPROF_CACHE/tune, else ~/.cache/gemmprof/tune: the tune caches and tuned defaults, beside the cubin cache
    (gemmprof.measure.nvcc)."""
    root = os.environ.get("GEMMPROF_CACHE") or Path.home() / ".cache" / "gemmprof"
    return Path(root) / "tune"


def data_dir() -> Path:
    """$GEMMPROF_DATA, else $XDG_DATA_HOME/gemmprof, else ~/.local/share/gemmprof: what gemmprof measured about
    this machine and keeps (the ceilings `gemmprof ceiling` stores), unlike the caches, which can be rebuilt."""
    if os.environ.get("GEMMPROF_DATA"):
        return Path(os.environ["GEMMPROF_DATA"])
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "gemmprof"
