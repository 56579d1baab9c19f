"""NVTX range names: every launch gemmprof makes runs inside `gemmprof VARIANT MxNxK`, so ncu and nsys can pick it out."""

from __future__ import annotations

import re

from gemmprof.model.traffic import GemmShape

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


def push(name: str) -> None:
    import cupy

    cupy.cuda.nvtx.RangePush(name)


def pop() -> None:
    import cupy

    cupy.cuda.nvtx.RangePop()
