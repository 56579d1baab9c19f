"""A shape sweep (`gemmprof sweep`): one `gemmprof run` per shape, summarised per variant against a baseline.

The summary keeps, per shape and variant, the status, TFLOP/s, the baseline row it is compared with (by default
the cuBLAS row of the variant's dtype and C in the same run; or torch.matmul's row, or another variant) with that
row's TFLOP/s, and the % of it; everything else is derived from those cells: per variant the geometric mean and the
minimum of that % over the shapes it ran, and fast_p (KernelBench's: the share of the shapes where the baseline
ran at which the variant is correct and at least p times as fast), and the same for the best variant of each shape.
A shape where a variant did not run (rejected, FAIL, error, skipped) is left out of its mean, named as missing, and
counts as not fast.

Shapes where the baseline itself collapses (it runs below half the best variant's speed, e.g. cuBLAS at 4095 x 4097
x 1024) lift a geometric mean by themselves: every figure is also given without them, and they are named.

A sweep may also hold confirmations: per shape, its contenders (the first run's best and the variants close to it)
timed again, each in turns with the baseline (`gemmprof run VARIANT --interleave`), the two alone. The best of that
shape is then the highest confirmed cell: picking the highest of many noisy figures favours the luckiest, and a run
that interleaves many variants hands each one the clocks its predecessor left (under the power cap a variant timed
after a light one starts faster).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from gemmprof.errors import InputError
from gemmprof.results import cells
from gemmprof.results.fields import Fields, check_keys
from gemmprof.results.files import check_schema, load_json, save_json
from gemmprof.results.run import RunResult, VariantResult
from gemmprof.results.shape import GemmShape
from gemmprof.results.stages import beyond_turn_drift

SWEEP_KIND = "gemmprof.sweep"
BEST = "best variant per shape"
CUBLAS = "cuBLAS"  # the default baseline: the cuBLAS row of each variant's input dtype and C dtype
TORCH = "torch.matmul"  # torch.matmul's row (runs with --callable, where torch is installed)
COLLAPSE = 2.0  # a shape where the best variant runs more than this many times the baseline: the baseline collapsed

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


def chosen_shapes(shapes: str | None, shapes_file: str | None) -> tuple[GemmShape, ...]:
    """The shapes of --shapes TEXT or --shapes-file FILE (one of them), else DEFAULT_SHAPES. Given but empty
    (--shapes '', a file of comments) is an error, never the built-in list."""
    from gemmprof.results.files import read_text

    if shapes is not None and shapes_file is not None:
        raise InputError("--shapes and --shapes-file: give one of them")
    if shapes_file is not None:
        try:
            text = read_text(shapes_file, "file of shapes", limit=1 << 20, strict=True)
        except InputError as exc:
            raise InputError(f"--shapes-file {exc}") from None
        return parse_shapes(text, f"--shapes-file {shapes_file}")
    return parse_shapes(DEFAULT_SHAPES if shapes is None else shapes, "--shapes")


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


@dataclass(frozen=True)
class SweepCell:
    """One variant at one shape, from that shape's run, beside the baseline row it is compared with."""

    shape: GemmShape
    variant: str
    status: str  # the run's: ok | FAIL | error | rejected | skipped
    tflops: float | None = None
    pct: float | None = None  # % of the baseline's TFLOP/s, both in the same run
    baseline: str = ""  # the row compared with (cublas_bf16, torch_matmul, a variant), "" where the run had none
    base_tflops: float | None = None  # that row's TFLOP/s; None: the baseline did not run (nothing to judge by)
    drift: float | None = None  # timed in turns: late launches of its turns over early ones, - 1 (Measurement)

    @property
    def drifted(self) -> bool:
        """Its figure depends on how long a turn lasted, as the run's note said (beyond_turn_drift)."""
        return beyond_turn_drift(self.drift)

    def to_dict(self) -> dict[str, Any]:
        return {"shape": self.shape.label, "variant": self.variant, "status": self.status, "tflops": self.tflops,
                "pct": self.pct, "baseline": self.baseline, "base_tflops": self.base_tflops,
                **({"drift": self.drift} if self.drift is not None else {})}

    @classmethod
    def from_dict(cls, d: dict, where: str) -> SweepCell:
        f = Fields(d, where)
        check_keys(d, where, CELL_KEYS)
        pct = f.num("pct", minimum=0) if "pct" in d else f.num("pct_cublas", minimum=0)  # files before --baseline
        tflops = f.num("tflops", minimum=0)
        base = f.num("base_tflops", minimum=0)
        if base is None and pct and tflops:  # older files kept only the %: the baseline's figure follows from it
            base = 100 * tflops / pct
        drift = f.num("drift", minimum=-1)
        return cls(parse_shapes(f.str("shape") or "", f"{where}.shape")[0], f.name("variant"), f.name("status"),
                   tflops, pct, f.str("baseline") or "", base, drift)


# every key of a sweep summary and of its cells (rungs: the older name of variants; pct_cublas: of pct, before
# --baseline); anything else is refused, naming it
SWEEP_KEYS = frozenset(("kind", "schema", "dtype", "device", "baseline", "model", "p", "highlight", "shapes", "layers",
                        "files", "cells", "confirmed", "collapsed", "variants", "rungs", "best", "best_per_shape"))
CELL_KEYS = frozenset(("shape", "variant", "status", "tflops", "pct", "pct_cublas", "baseline", "base_tflops",
                       "drift"))


@dataclass(frozen=True)
class RungSummary:
    """% of the baseline over the shapes a variant ran: geometric mean and minimum, the same without the shapes where
    the baseline collapsed, fast_p, and the shapes it did not run."""

    variant: str
    shapes: int  # shapes with a % of the baseline
    geomean_pct: float | None
    min_pct: float | None
    min_shape: str | None
    missing: tuple[str, ...]  # shape labels without a % of the baseline
    fast: int = 0  # shapes at which it is correct and at least p times the baseline
    judged: int = 0  # shapes at which the baseline ran (fast_p's denominator)
    sound_shapes: int = 0  # shapes with a % of the baseline where the baseline did not collapse
    sound_geomean_pct: float | None = None
    sound_min_pct: float | None = None
    sound_min_shape: str | None = None

    @property
    def fast_p(self) -> float | None:
        return self.fast / self.judged if self.judged else None

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "shapes": self.shapes, "geomean_pct": self.geomean_pct,
                "min_pct": self.min_pct, "min_shape": self.min_shape, "missing": list(self.missing),
                "fast": self.fast, "judged": self.judged, "fast_p": self.fast_p,
                "without_collapse": {"shapes": self.sound_shapes, "geomean_pct": self.sound_geomean_pct,
                                     "min_pct": self.sound_min_pct, "min_shape": self.sound_min_shape}}


def _summary(variant: str, by_shape: dict[GemmShape, float | None], judged: set[GemmShape], collapsed: set[GemmShape],
             p: float) -> RungSummary:
    measured = {s: v for s, v in by_shape.items() if v is not None}
    sound = {s: v for s, v in measured.items() if s not in collapsed}
    worst = min(measured, key=measured.get, default=None)
    worst_sound = min(sound, key=sound.get, default=None)
    fast = sum(1 for s, v in measured.items() if s in judged and v >= 100 * p * (1 - 1e-12))
    return RungSummary(variant, len(measured), _geomean(list(measured.values())),
                       measured[worst] if worst else None, worst.label if worst else None,
                       tuple(s.label for s, v in by_shape.items() if v is None),
                       fast, len(judged & set(by_shape)), len(sound), _geomean(list(sound.values())),
                       sound[worst_sound] if worst_sound else None, worst_sound.label if worst_sound else None)


@dataclass(frozen=True)
class SweepSummary:
    dtype: str
    shapes: tuple[GemmShape, ...]
    cells: tuple[SweepCell, ...]
    files: tuple[str, ...] = ()  # the per-shape results files, in the order of `shapes`, then the confirmations'
    device: str = ""
    confirmed: tuple[SweepCell, ...] = ()  # per shape its contenders, each beside the baseline alone, in turns
    baseline: str = CUBLAS  # what every % is of: CUBLAS, TORCH or a variant's name
    layers: tuple[str, ...] = ()  # per shape (as `shapes`) the model layer(s) it is, "" where none
    model: str = ""  # the model config the shapes came from, "" for a list of shapes
    p: float = 1.0  # fast_p's threshold: at least p times the baseline
    highlight: tuple[str, ...] = ()  # variants the headline names beside the best (a planning entry)

    @property
    def variants(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.variant for c in self.cells))

    def cell(self, variant: str, shape: GemmShape) -> SweepCell | None:
        return next((c for c in self.cells if c.variant == variant and c.shape == shape), None)

    def pct(self, variant: str, shape: GemmShape) -> float | None:
        c = self.cell(variant, shape)
        return c.pct if c else None

    def layer(self, shape: GemmShape) -> str:
        return self.layers[self.shapes.index(shape)] if self.layers else ""

    def drifted(self) -> dict[str, tuple[SweepCell, ...]]:
        """Per variant, its cells (first runs, in shape order) whose figure depended on how long a turn lasted
        (SweepCell.drifted); variants with none are left out."""
        out: dict[str, tuple[SweepCell, ...]] = {}
        for v in self.variants:
            cells_ = tuple(c for s in self.shapes if (c := self.cell(v, s)) is not None and c.drifted)
            if cells_:
                out[v] = cells_
        return out

    def confirmations(self, shape: GemmShape) -> tuple[SweepCell, ...]:
        return tuple(c for c in self.confirmed if c.shape == shape)

    def best_at(self, shape: GemmShape) -> tuple[str | None, float | None]:
        """The variant of the highest % of the baseline at `shape` (the first listed on a tie), and that %; where
        the shape has confirmations, the highest of them (None where no confirming run timed its variant)."""
        confirmed = self.confirmations(shape)
        if confirmed:
            timed = [c for c in confirmed if c.pct is not None]
            if not timed:
                return confirmed[0].variant, None
            pct = max(c.pct for c in timed)
            return next(c.variant for c in timed if c.pct == pct), pct
        ran = [(self.pct(v, shape), v) for v in self.variants if self.pct(v, shape) is not None]
        if not ran:
            return None, None
        pct = max(p for p, _ in ran)
        return next(v for p, v in ran if p == pct), pct

    def base_tflops(self, shape: GemmShape) -> float | None:
        """The baseline's TFLOP/s at `shape` (the first variant's row; rows of another C dtype may differ)."""
        return next((c.base_tflops for c in (*self.cells, *self.confirmed) if c.shape == shape
                     and c.base_tflops is not None), None)

    @property
    def collapsed(self) -> tuple[GemmShape, ...]:
        """Shapes where the baseline runs below 1/COLLAPSE of the best variant: they lift any mean by themselves."""
        return tuple(s for s in self.shapes if (self.best_at(s)[1] or 0) > 100 * COLLAPSE)

    def _judged(self, variant: str | None) -> set[GemmShape]:
        """Shapes where the baseline of `variant` (None: of any variant, the best's) ran."""
        return {c.shape for c in (*self.cells, *self.confirmed) if c.base_tflops is not None
                and (variant is None or c.variant == variant)}

    def rung(self, variant: str) -> RungSummary:
        return _summary(variant, {s: self.pct(variant, s) for s in self.shapes}, self._judged(variant),
                        set(self.collapsed), self.p)

    @property
    def rungs(self) -> tuple[RungSummary, ...]:
        return tuple(self.rung(v) for v in self.variants)

    @property
    def best(self) -> RungSummary:
        return _summary(BEST, {s: self.best_at(s)[1] for s in self.shapes}, self._judged(None), set(self.collapsed),
                        self.p)

    def headline(self) -> tuple[RungSummary, ...]:
        """The best variant per shape, the highlighted variants, then every other variant."""
        named = [v for v in self.highlight if v in self.variants]
        return (self.best, *(self.rung(v) for v in named), *(self.rung(v) for v in self.variants if v not in named))

    def to_dict(self) -> dict[str, Any]:
        """The cells, and the figures derived from them for readers of the file (recomputed on loading)."""
        return {"kind": SWEEP_KIND, "dtype": self.dtype, "device": self.device, "baseline": self.baseline,
                "model": self.model, "p": self.p, "highlight": list(self.highlight),
                "shapes": [s.label for s in self.shapes], "layers": list(self.layers), "files": list(self.files),
                "cells": [c.to_dict() for c in self.cells], "confirmed": [c.to_dict() for c in self.confirmed],
                "collapsed": [s.label for s in self.collapsed],
                "variants": [r.to_dict() for r in self.rungs], "best": self.best.to_dict(),
                "best_per_shape": [{"shape": s.label, "variant": v, "pct": p}
                                   for s in self.shapes for v, p in [self.best_at(s)]]}

    @classmethod
    def from_dict(cls, doc: dict, source: str = "sweep") -> SweepSummary:
        if not isinstance(doc, dict) or doc.get("kind") != SWEEP_KIND:
            raise InputError(f"{source}: not a gemmprof sweep summary (kind is "
                             f"{doc.get('kind') if isinstance(doc, dict) else None!r})")
        check_schema(doc, source, 1)
        check_keys(doc, source, SWEEP_KEYS)
        f = Fields(doc, "")
        shapes = parse_shapes(" ".join(f.strs("shapes") or ()), f"{source}: shapes")
        found = {}
        for key in ("cells", "confirmed"):
            items = doc.get(key, [] if key == "confirmed" else None)  # files before confirmations have none
            if not isinstance(items, list):
                raise InputError(f"{source}: {key}: expected a list")
            found[key] = tuple(SweepCell.from_dict(c, f"{source}: {key}[{i}]") for i, c in enumerate(items))
        layers = tuple(f.strs("layers") or ())
        if layers and len(layers) != len(shapes):
            raise InputError(f"{source}: layers: {len(layers)} for {len(shapes)} shapes")
        p = f.num("p", minimum=0)
        return cls(f.name("dtype"), shapes, found["cells"], tuple(f.strs("files") or ()), f.str("device") or "",
                   found["confirmed"], f.str("baseline") or CUBLAS, layers, f.str("model") or "",
                   1.0 if p is None else p, tuple(f.strs("highlight") or ()))

    def save(self, path) -> None:
        save_json(path, self.to_dict())


def load_sweep(path) -> SweepSummary:
    return SweepSummary.from_dict(load_json(path), str(path))


def baseline_row(run: RunResult, v: VariantResult, baseline: str = CUBLAS) -> VariantResult | None:
    """The row of `run` that variant `v` is compared with: cuBLAS of its input and C dtypes, torch.matmul writing
    the same C, or the variant named `baseline` (by name, or a rung's id); None where it did not pass."""
    if baseline == CUBLAS:
        return run.baseline_for(v.dtype, v.c_dtype)
    if baseline == TORCH:
        return next((x for x in run.variants if x.kind == "baseline" and x.id == "torch" and x.c_dtype == v.c_dtype
                     and x.passed), None)
    return next((x for x in run.variants if is_variant(x, baseline) and x.passed), None)


def is_variant(v: VariantResult, name: str) -> bool:
    """`name` names `v`: its name, or a ladder rung's id."""
    return v.name == name or (v.kind == "ladder" and v.id == name)


def _cells(run: RunResult, dtype: str, baseline: str = CUBLAS) -> list[SweepCell]:
    """Every variant of `dtype` in `run` that is not a baseline, against its baseline row in that run."""
    out = []
    for v in run.variants:
        if v.kind == "baseline" or v.dtype != dtype or (baseline not in (CUBLAS, TORCH) and is_variant(v, baseline)):
            continue
        base = baseline_row(run, v, baseline)
        ach, base_ach = v.achieved_flops, base.achieved_flops if base else None
        pct = 100 * ach / base_ach if ach and base_ach else None
        drift = v.timing.turn_drift if v.timing is not None and v.passed else None
        out.append(SweepCell(run.shape, v.name, v.status, ach / 1e12 if ach else None, pct,
                             base.name if base else "", base_ach / 1e12 if base_ach else None, drift))
    return out


def summarize(runs: list[tuple[str, RunResult]], dtype: str, confirmations: list[tuple[str, RunResult]] = (),
              baseline: str = CUBLAS, layers: dict[GemmShape, str] | None = None, model: str = "", p: float = 1.0,
              highlight: tuple[str, ...] = ()) -> SweepSummary:
    """One run per shape (file name, run) -> the sweep: every variant of `dtype` that is not a baseline, against
    its baseline in that run. `confirmations`: runs of one variant of `dtype` beside the baseline (a shape's
    contenders), at shapes of those runs, at most one per shape and variant. `layers`: the model layer of shapes."""
    if not p > 0 or not math.isfinite(p):
        raise InputError(f"fast_p: p = {p}: expected a number above 0")
    shapes: list[GemmShape] = []
    found: list[SweepCell] = []
    devices: list[str] = []
    for name, run in runs:
        if run.shape in shapes:
            raise InputError(f"{name}: a second run at {run.shape.label} (one run per shape)")
        shapes.append(run.shape)
        devices.append(str(run.device.get("name", "?")))
        found += _cells(run, dtype, baseline)
    confirmed: list[SweepCell] = []
    for name, run in confirmations:
        if run.shape not in shapes:
            raise InputError(f"{name}: confirms {run.shape.label}, a shape the sweep has no run of")
        again = _cells(run, dtype, baseline)
        if len(again) != 1:
            raise InputError(f"{name}: a confirmation runs one {dtype} variant beside the baseline, this one "
                             f"{len(again)}")
        if any(c.shape == run.shape and c.variant == again[0].variant for c in confirmed):
            raise InputError(f"{name}: a second confirmation of {again[0].variant} at {run.shape.label}")
        confirmed += again
    labels = tuple((layers or {}).get(s, "") for s in shapes) if layers else ()
    return SweepSummary(dtype, tuple(shapes), tuple(found), tuple(n for n, _ in (*runs, *confirmations)),
                        ", ".join(dict.fromkeys(devices)), tuple(confirmed), baseline, labels, model, p,
                        tuple(highlight))
