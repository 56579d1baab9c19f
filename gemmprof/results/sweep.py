"""A shape sweep: one `gemmprof run` per shape (scripts/shape_sweep.py), summarised per rung.

The summary keeps, per shape and variant, the status, TFLOP/s and % of cuBLAS of the same dtype in that shape's run;
everything else is derived from those cells: per rung the geometric mean and the minimum of % of cuBLAS over the
shapes it ran, and the same for the best rung of each shape.
A shape where a rung did not run (rejected, FAIL, error, skipped) is left out of that rung's mean and named as missing.

A sweep may also hold confirmations: per shape, its contenders (the first run's best and the rungs close to it)
timed again, each in turns with cuBLAS (`gemmprof run RUNG --interleave`), the two alone. The best of that shape is
then the highest confirmed cell: picking the highest of many noisy figures favours the luckiest, and a run that
interleaves many variants hands each one the clocks its predecessor left (under the power cap a variant timed after
a light one starts faster).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from gemmprof.errors import InputError
from gemmprof.results import cells
from gemmprof.results.fields import Fields
from gemmprof.results.files import load_json, save_json
from gemmprof.results.run import RunResult
from gemmprof.results.shape import GemmShape

SWEEP_KIND = "gemmprof.sweep"
BEST = "best rung per shape"

# Square sizes; LLM layers (M tokens from 16 to 16384 against the projections of 7B-class models: 4096 x 4096,
# 4096 -> 11008 and 11008 -> 4096 (Llama), 4096 -> 14336 and back (Mistral)); a long K; sizes off the tiles.
DEFAULT_SHAPES = """
1024 2048 4096 8192
16x4096x4096 128x4096x4096 1024x4096x4096 4096x4096x4096 16384x4096x4096
16x11008x4096 128x11008x4096 1024x11008x4096 4096x11008x4096 16384x11008x4096
16x4096x11008 128x4096x11008 1024x4096x11008 4096x4096x11008 16384x4096x11008
16x14336x4096 128x14336x4096 1024x14336x4096 4096x14336x4096 16384x14336x4096
16x4096x14336 128x4096x14336 1024x4096x14336 4096x4096x14336 16384x4096x14336
4096x4096x16384
4095x4097x1024 1000x1000x1000 2000x4100x1024
"""

_ITEM = re.compile(r"^(\d+)(?:x(\d+)x(\d+))?$")


def parse_shapes(text: str, where: str = "--shapes") -> tuple[GemmShape, ...]:
    """Shapes separated by commas, spaces or lines: N (square) or MxNxK; `#` starts a comment. Repeats are kept once."""
    shapes: list[GemmShape] = []
    for line_no, line in enumerate(str(text).splitlines(), 1):
        for item in re.split(r"[,\s]+", line.split("#", 1)[0].strip()):
            if not item:
                continue
            m = _ITEM.match(item.lower())
            if not m:
                raise InputError(f"{where}: line {line_no}: {item[:40]!r} is not a shape (N for N x N x N, or MxNxK)")
            try:
                dims = cells.integers(item)  # ASCII digits, bounded: the one cell parser (GemmShape checks >= 1)
                shape = GemmShape(*(dims * 3 if m[2] is None else dims))
            except (InputError, cells.CellError) as exc:
                raise InputError(f"{where}: line {line_no}: {item}: {exc}") from None
            if shape not in shapes:
                shapes.append(shape)
    if not shapes:
        raise InputError(f"{where}: no shapes given")
    return tuple(shapes)


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


@dataclass(frozen=True)
class SweepCell:
    """One variant at one shape, from that shape's run."""

    shape: GemmShape
    variant: str
    status: str  # the run's: ok | FAIL | error | rejected | skipped
    tflops: float | None = None
    pct_cublas: float | None = None  # against cuBLAS of the same dtype in the same run

    def to_dict(self) -> dict[str, Any]:
        return {"shape": self.shape.label, "variant": self.variant, "status": self.status, "tflops": self.tflops,
                "pct_cublas": self.pct_cublas}

    @classmethod
    def from_dict(cls, d: dict, where: str) -> SweepCell:
        f = Fields(d, where)
        return cls(parse_shapes(f.str("shape") or "", f"{where}.shape")[0], f.name("variant"), f.name("status"),
                   f.num("tflops", minimum=0), f.num("pct_cublas", minimum=0))


@dataclass(frozen=True)
class RungSummary:
    """% of cuBLAS over the shapes a variant ran: geometric mean and minimum, and the shapes it did not run."""

    variant: str
    shapes: int  # shapes with a % of cuBLAS
    geomean_pct: float | None
    min_pct: float | None
    min_shape: str | None
    missing: tuple[str, ...]  # shape labels without a % of cuBLAS

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "shapes": self.shapes, "geomean_pct": self.geomean_pct,
                "min_pct": self.min_pct, "min_shape": self.min_shape, "missing": list(self.missing)}


def _summary(variant: str, by_shape: dict[GemmShape, float | None]) -> RungSummary:
    measured = {s: p for s, p in by_shape.items() if p is not None}
    worst = min(measured, key=measured.get, default=None)
    return RungSummary(variant, len(measured), _geomean(list(measured.values())),
                       measured[worst] if worst else None, worst.label if worst else None,
                       tuple(s.label for s, p in by_shape.items() if p is None))


@dataclass(frozen=True)
class SweepSummary:
    dtype: str
    shapes: tuple[GemmShape, ...]
    cells: tuple[SweepCell, ...]
    files: tuple[str, ...] = ()  # the per-shape results files, in the order of `shapes`, then the confirmations'
    device: str = ""
    confirmed: tuple[SweepCell, ...] = ()  # per shape its contenders, each beside cuBLAS alone, in turns

    @property
    def variants(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.variant for c in self.cells))

    def pct(self, variant: str, shape: GemmShape) -> float | None:
        return next((c.pct_cublas for c in self.cells if c.variant == variant and c.shape == shape), None)

    def rung(self, variant: str) -> RungSummary:
        return _summary(variant, {s: self.pct(variant, s) for s in self.shapes})

    @property
    def rungs(self) -> tuple[RungSummary, ...]:
        return tuple(self.rung(v) for v in self.variants)

    def confirmations(self, shape: GemmShape) -> tuple[SweepCell, ...]:
        return tuple(c for c in self.confirmed if c.shape == shape)

    def best_at(self, shape: GemmShape) -> tuple[str | None, float | None]:
        """The variant of the highest % of cuBLAS at `shape` (the first listed on a tie), and that %; where the shape
        has confirmations, the highest of them (None where no confirming run timed its rung)."""
        confirmed = self.confirmations(shape)
        if confirmed:
            timed = [c for c in confirmed if c.pct_cublas is not None]
            if not timed:
                return confirmed[0].variant, None
            pct = max(c.pct_cublas for c in timed)
            return next(c.variant for c in timed if c.pct_cublas == pct), pct
        ran = [(self.pct(v, shape), v) for v in self.variants if self.pct(v, shape) is not None]
        if not ran:
            return None, None
        pct = max(p for p, _ in ran)
        return next(v for p, v in ran if p == pct), pct

    @property
    def best(self) -> RungSummary:
        return _summary(BEST, {s: self.best_at(s)[1] for s in self.shapes})

    def to_dict(self) -> dict[str, Any]:
        """The cells, and the figures derived from them for readers of the file (recomputed on loading)."""
        return {"kind": SWEEP_KIND, "dtype": self.dtype, "device": self.device,
                "shapes": [s.label for s in self.shapes], "files": list(self.files),
                "cells": [c.to_dict() for c in self.cells], "confirmed": [c.to_dict() for c in self.confirmed],
                "rungs": [r.to_dict() for r in self.rungs], "best": self.best.to_dict(),
                "best_per_shape": [{"shape": s.label, "variant": v, "pct_cublas": p}
                                   for s in self.shapes for v, p in [self.best_at(s)]]}

    @classmethod
    def from_dict(cls, doc: dict, source: str = "sweep") -> SweepSummary:
        if not isinstance(doc, dict) or doc.get("kind") != SWEEP_KIND:
            raise InputError(f"{source}: not a gemmprof sweep summary (kind is "
                             f"{doc.get('kind') if isinstance(doc, dict) else None!r})")
        f = Fields(doc, "")
        shapes = parse_shapes(" ".join(f.strs("shapes") or ()), f"{source}: shapes")
        found = {}
        for key in ("cells", "confirmed"):
            items = doc.get(key, [] if key == "confirmed" else None)  # files before confirmations have none
            if not isinstance(items, list):
                raise InputError(f"{source}: {key}: expected a list")
            found[key] = tuple(SweepCell.from_dict(c, f"{source}: {key}[{i}]") for i, c in enumerate(items))
        return cls(f.name("dtype"), shapes, found["cells"], tuple(f.strs("files") or ()), f.str("device") or "",
                   found["confirmed"])

    def save(self, path) -> None:
        save_json(path, self.to_dict())


def load_sweep(path) -> SweepSummary:
    return SweepSummary.from_dict(load_json(path), str(path))


def _cells(run: RunResult, dtype: str) -> list[SweepCell]:
    """Every non-baseline variant of `dtype` in `run`, against that run's cuBLAS of the same dtype."""
    base = run.baseline_for(dtype)
    cells = []
    for v in run.variants:
        if v.kind == "baseline" or v.dtype != dtype:
            continue
        ach = v.achieved_flops
        pct = 100 * ach / base.achieved_flops if ach and base and base.achieved_flops else None
        cells.append(SweepCell(run.shape, v.name, v.status, ach / 1e12 if ach else None, pct))
    return cells


def summarize(runs: list[tuple[str, RunResult]], dtype: str,
              confirmations: list[tuple[str, RunResult]] = ()) -> SweepSummary:
    """One run per shape (file name, run) -> the sweep: every non-baseline variant of `dtype`, against that run's
    cuBLAS of the same dtype. `confirmations`: runs of one variant of `dtype` beside cuBLAS (a shape's contenders),
    at shapes of those runs, at most one per shape and variant."""
    shapes: list[GemmShape] = []
    cells: list[SweepCell] = []
    devices: list[str] = []
    for name, run in runs:
        if run.shape in shapes:
            raise InputError(f"{name}: a second run at {run.shape.label} (one run per shape)")
        shapes.append(run.shape)
        devices.append(str(run.device.get("name", "?")))
        cells += _cells(run, dtype)
    confirmed: list[SweepCell] = []
    for name, run in confirmations:
        if run.shape not in shapes:
            raise InputError(f"{name}: confirms {run.shape.label}, a shape the sweep has no run of")
        found = _cells(run, dtype)
        if len(found) != 1:
            raise InputError(f"{name}: a confirmation runs one {dtype} variant beside cuBLAS, this one {len(found)}")
        if any(c.shape == run.shape and c.variant == found[0].variant for c in confirmed):
            raise InputError(f"{name}: a second confirmation of {found[0].variant} at {run.shape.label}")
        confirmed += found
    return SweepSummary(dtype, tuple(shapes), tuple(cells), tuple(n for n, _ in (*runs, *confirmations)),
                        ", ".join(dict.fromkeys(devices)), tuple(confirmed))
