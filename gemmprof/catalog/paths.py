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


def cache_root() -> Path:
    """gemmprof's cache folder: $GEMMPROF_CACHE, else ~/.cache/gemmprof. It holds the cubin and launcher caches
    (gemmprof.measure.nvcc), the tune caches and what a spec's `${GEMMPROF_CACHE}` include folder names (a public
    kernel fetched at the moment of use)."""
    return Path(os.environ.get("GEMMPROF_CACHE") or Path.home() / ".cache" / "gemmprof")


def default_cache_dir() -> Path:
    """$GEMMPROF_CACHE/tune, else ~/.cache/gemmprof/tune: the tune caches and tuned defaults, beside the cubin cache
    (gemmprof.measure.nvcc)."""
    return cache_root() / "tune"


def data_dir() -> Path:
    """$GEMMPROF_DATA, else $XDG_DATA_HOME/gemmprof, else ~/.local/share/gemmprof: what gemmprof measured about
    this machine and keeps (the ceilings `gemmprof ceiling` stores), unlike the caches, which can be rebuilt."""
    if os.environ.get("GEMMPROF_DATA"):
        return Path(os.environ["GEMMPROF_DATA"])
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "gemmprof"
