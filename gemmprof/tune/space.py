"""The search space of a sweep: the spec's `tune:` candidates, enumerated and pruned by its constraints.

Pruning happens before anything is compiled: every combination is bound like `bind` does (parameters, derived
values, constraints in order) and then checked against the shape constraints for the chosen shape.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass

from gemmprof.catalog import expr
from gemmprof.errors import SpecError

MAX_SPACE = 100_000  # configurations checked before a sweep; each is bound and pruned here, in memory

def config_key(params: dict[str, int]) -> str:
    """A configuration's identity in caches and strategies: every parameter, sorted by name."""
    return ",".join(f"{k}={params[k]}" for k in sorted(params))


@dataclass(frozen=True)
class Rejected:
    params: dict[str, int]
    reason: str


@dataclass(frozen=True)
class SearchSpace:
    kernel: str
    axes: dict[str, tuple[int, ...]]  # the tuned parameters and their candidates
    fixed: dict[str, int]  # the other parameters, at the spec's defaults
    valid: tuple[dict[str, int], ...]  # in enumeration order
    rejected: tuple[Rejected, ...]

    @property
    def total(self) -> int:
        return len(self.valid) + len(self.rejected)

    def contains(self, params: dict[str, int]) -> bool:
        return config_key(params) in self._valid_keys

    @property
    def _valid_keys(self) -> frozenset[str]:
        cached = self.__dict__.get("_keys")
        if cached is None:
            cached = frozenset(config_key(p) for p in self.valid)
            object.__setattr__(self, "_keys", cached)
        return cached

    def rejection_summary(self, most: int = 3) -> list[tuple[str, int]]:
        return Counter(r.reason for r in self.rejected).most_common(most)

    def describe(self) -> str:
        return (f"{self.kernel}: {self.total} configurations in the space, {len(self.valid)} left after pruning by "
                f"the spec's constraints ({len(self.rejected)} rejected)")


def tune_axes(spec, override: dict[str, list[int]] | None = None) -> dict[str, tuple[int, ...]]:
    if spec.launcher is not None:
        raise SpecError(f"{spec.path}: tune: a host launcher is not tuned (it chooses its own launches); tune the "
                        "kernels it launches through their own specs")
    axes = {k: tuple(v) for k, v in (override if override is not None else spec.tune).items()}
    if not axes:
        raise SpecError(f"{spec.path}: tune: this spec has no `tune:` space (candidate values per parameter); "
                        f"add one, e.g. tune: {{{next(iter(spec.params), 'BK')}: [8, 16]}}")
    for k, values in axes.items():
        if k not in spec.params:
            raise SpecError(f"{spec.path}: tune.{k}: not a parameter (the parameters are {', '.join(spec.params)})")
        if not values:
            raise SpecError(f"{spec.path}: tune.{k}: no candidate values")
    size = math.prod(len(v) for v in axes.values())
    if size > MAX_SPACE:  # refused before enumerating: 10**12 combinations would grow memory without bound
        sizes = " x ".join(f"{len(v)} {k}" for k, v in axes.items())
        raise SpecError(f"{spec.path}: tune: {size:,} configurations ({sizes}) is more than the {MAX_SPACE:,} a "
                        "sweep checks; drop candidates or tune fewer parameters at once")
    return axes


def enumerate_space(spec, shape, axes: dict[str, list[int]] | None = None) -> SearchSpace:
    """Every combination of the candidates, split into valid ones and rejected ones (with the first failed check)."""
    axes = tune_axes(spec, axes)
    fixed = {k: v for k, v in spec.params.items() if k not in axes}
    valid, rejected = [], []
    for combo in itertools.product(*axes.values()):
        params = {**spec.params, **dict(zip(axes, combo, strict=True))}
        reason = _first_failure(spec, params, shape)
        if reason is None:
            valid.append(params)
        else:
            rejected.append(Rejected(params, reason))
    space = SearchSpace(spec.name, axes, fixed, tuple(valid), tuple(rejected))
    if not valid:
        reasons = "; ".join(f"{n}x {r}" for r, n in space.rejection_summary())
        raise SpecError(f"{spec.path}: tune: all {space.total} configurations are rejected at {shape.label} "
                        f"({reasons})")
    return space


def _first_failure(spec, params: dict[str, int], shape) -> str | None:
    env: dict[str, int] = dict(params)
    for name, e in spec.derived.items():
        env[name] = _evaluate(spec, f"derived.{name}", e, env, params)
    for c in spec.constraints:
        if not _evaluate(spec, "constraint", c.check, env, params):
            return c.message
    env.update(M=shape.M, N=shape.N, K=shape.K)
    for c in spec.shape_constraints:
        if not _evaluate(spec, "shape constraint", c.check, env, params):
            return f"{c.message} (at {shape.label})"
    return None


def _evaluate(spec, what: str, text, env, params):
    try:
        return expr.evaluate(text, env)
    except SpecError as exc:
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        raise SpecError(f"{spec.path}: {what} {text!r} cannot be evaluated with {shown}: {exc}") from None
