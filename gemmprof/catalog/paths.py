"""Where the project's data lives: kernels/ and profiles/ beside the package (an editable install or a checkout)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(os.environ.get("GEMMPROF_HOME", Path(__file__).resolve().parents[2]))
KERNELS_DIR = ROOT / "kernels"
PROFILES_DIR = ROOT / "profiles"
