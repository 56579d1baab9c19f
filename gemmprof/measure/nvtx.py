"""NVTX range names: every launch gemmprof makes runs inside `gemmprof VARIANT MxNxK`, so ncu and nsys can pick it out."""

from __future__ import annotations

import re

from gemmprof.errors import InputError
from gemmprof.results.shape import GemmShape

PREFIX = "gemmprof"
_RANGE = re.compile(rf"^{PREFIX} (?P<variant>[A-Za-z0-9_.\-]+) (?P<m>\d+)x(?P<n>\d+)x(?P<k>\d+)$")


def range_name(variant: str, shape: GemmShape) -> str:
    return f"{PREFIX} {variant} {shape.label}"


def parse_range_name(text: str) -> tuple[str, GemmShape] | None:
    """The variant and shape of a gemmprof range, or None for any other range."""
    m = _RANGE.match(text.strip())
    if not m:
        return None
    return m["variant"], GemmShape(int(m["m"]), int(m["n"]), int(m["k"]))


def parse_range(text: str | None) -> tuple[str, GemmShape] | None:
    """As parse_range_name, for any range text a profiler recorded: None for empty text and for a gemmprof
    prefix without a valid shape ("gemmprof x 0x4x4")."""
    if not text:
        return None
    try:
        return parse_range_name(text)
    except InputError:
        return None


def is_gemmprof_range(text: str | None) -> bool:
    return parse_range(text) is not None


def push(name: str) -> None:
    import cupy

    cupy.cuda.nvtx.RangePush(name)


def pop() -> None:
    import cupy

    cupy.cuda.nvtx.RangePop()
