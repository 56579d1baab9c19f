"""Planning entries: a spec whose `plan:` chooses, from the shape and the SM count, which rung of the ladder runs and
with which parameters, by rules it states in order (the first whose condition holds), as cuBLAS's heuristic picks a
kernel per problem (docs/kernel-spec.md, "Planning entries").

A planning entry is selected by name like a rung (`gemmprof run plan`). Before anything is built it is resolved, at
the shape and the device's SM count, into the chosen rung's BoundKernel (`resolve`), which carries the choice
(`BoundKernel.plan`: the rung, its parameters and the rule that held), shown in the run's note and results file.
Every rule's rung must exist and accept the rule's parameters (`check_plan`): checked wherever a plan is chosen
(catalog/selection.py), listed or resolved, one clear error otherwise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gemmprof.catalog import expr
from gemmprof.catalog.binding import BoundKernel, bind
from gemmprof.catalog.plan_rules import SHAPE_NAMES, PlanRule
from gemmprof.catalog.spec import KernelSpec, ladder
from gemmprof.errors import SpecError
from gemmprof.results.stages import PlanChoice

if TYPE_CHECKING:
    from gemmprof.results.shape import GemmShape


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def entries() -> list[KernelSpec]:
    """The ladder's planning entries, each checked against the rungs."""
    from gemmprof.catalog.spec import plans

    for s in plans():
        _checked(s)
    return list(plans())


def check_plan(spec: KernelSpec, rungs) -> None:
    """Every rule's rung is a rung of `rungs` (not a plan) of the plan's dtypes and layout, takes the rule's
    parameters (its constraints hold, for every dtype), and the condition reads only names the rung has."""
    for i, rule in enumerate(spec.plan):
        key = f"plan[{i}]"
        rung = _find(rule.rung, rungs)
        if rung is None:
            known = ", ".join(f"{s.id}:{s.name}" for s in rungs if spec.dtype in (s.dtype, *s.dtypes))
            _fail(spec.path, f"{key}.rung", f"{rule.rung!r} is not a rung of the ladder ({spec.dtype} rungs: {known})")
        if rung.dtype != spec.dtype or any(d not in (rung.dtype, *rung.dtypes) for d in spec.dtypes):
            _fail(spec.path, f"{key}.rung", f"{rung.id} is built for {', '.join(rung.dtypes or (rung.dtype,))}; "
                                            f"the plan is for {', '.join(spec.dtypes)} (dtype {spec.dtype} first)")
        if rung.layout != spec.layout:
            _fail(spec.path, f"{key}.rung", f"{rung.id} stores A, B, C as {rung.layout}, the plan as {spec.layout}")
        unknown = sorted(set(rule.params) - set(rung.params))
        if unknown:
            _fail(spec.path, f"{key}.params", f"{rung.id} has no parameter {', '.join(unknown)} (it has "
                                              f"{', '.join(rung.params) or 'none'})")
        for d in spec.dtypes:
            try:
                bind(rung, rule.params, dtype=None if d == rung.dtype else d)
            except SpecError as exc:
                _fail(spec.path, f"{key}.params", str(exc))
        if rule.when is not None:
            known = {*rung.params, *rung.derived, *rung.decomposition, *SHAPE_NAMES}
            unknown = sorted(expr.names(rule.when) - known)
            if unknown:
                names = ", ".join([*rung.params, *rung.derived, *rung.decomposition])
                _fail(spec.path, f"{key}.when", f"unknown name {', '.join(unknown)} (it may read M, N, K, SMS and "
                                                f"{rung.id}'s names: {names})")


_CHECKED: dict[int, KernelSpec] = {}  # id -> the spec itself (kept, so that its id is not reused)


def _checked(spec: KernelSpec) -> None:
    """check_plan once per spec object (resolve runs at every shape)."""
    if _CHECKED.get(id(spec)) is not spec:
        check_plan(spec, ladder())
        _CHECKED[id(spec)] = spec


def _find(name: str, rungs) -> KernelSpec | None:
    return next((s for s in rungs if not s.plan and s.answers_to(name)), None)


def rule_kernel(spec: KernelSpec, rule: PlanRule, dtype: str = "") -> BoundKernel:
    """A rule's rung bound to the rule's parameters, for `dtype` ("": the plan's own)."""
    key = (id(spec), id(rule), dtype)
    kept = _RULE_KERNELS.get(key)
    if kept is None or kept[0] is not spec:  # bound once per plan, rule and dtype (resolve runs at every shape)
        rung = _find(rule.rung, ladder())
        if rung is None:  # check_plan says so first; a spec built by hand may not have been checked
            raise SpecError(f"{spec.path}: plan: {rule.rung!r} is not a rung of the ladder")
        kept = _RULE_KERNELS[key] = (spec, bind(rung, rule.params, dtype=dtype if dtype and dtype != rung.dtype
                                                 else None))
    return kept[1]


_RULE_KERNELS: dict[tuple[int, int, str], tuple[KernelSpec, BoundKernel]] = {}


def resolve(kernel: BoundKernel, shape: GemmShape, sms: int | None) -> BoundKernel:
    """A planning entry's choice at `shape` on a device of `sms` multiprocessors: the rung of the first rule whose
    condition holds, bound to its parameters, with the choice in `.plan`. Any other kernel is returned as it is.
    SpecError where the plan's own shape constraints reject the shape, or its rung does (a wrong plan)."""
    spec = kernel.spec
    if not spec.plan:  # a rung (or a plan already resolved: its spec is its rung's)
        return kernel
    if not sms:
        raise SpecError(f"{spec.name}: chooses its rung from the SM count too: needs a device (or a GPU spec)")
    _checked(spec)
    kernel.check_shape(shape)
    for i, rule in enumerate(spec.plan, 1):
        chosen = rule_kernel(spec, rule, kernel.run_dtype)
        if rule.when is not None:
            try:
                holds = expr.evaluate(rule.when, chosen.shape_names(shape, sms))
            except SpecError as exc:
                raise SpecError(f"{spec.name}: rule {i} ({chosen.spec.id}): {exc}") from None
            if not holds:
                continue
        try:
            chosen.check_shape(shape)
        except SpecError as exc:
            raise SpecError(f"{spec.name}: rule {i} chose {chosen.spec.id}, which cannot run {shape.label}: {exc}") \
                from None
        return replace(chosen, plan=PlanChoice(spec.name, chosen.spec.id, chosen.spec.name, i, rule.when or "",
                                               rule.why, dict(rule.params)))
    raise SpecError(f"{spec.name}: no rule of its plan holds at {shape.label}")  # the last rule has no condition


def rule_kernels(kernel: BoundKernel) -> list[BoundKernel]:
    """Every rung a planning entry may choose, each bound to its rule's parameters, once each (a build without a
    shape builds them all); [kernel] for any other kernel."""
    if not kernel.spec.plan:
        return [kernel]
    out: dict[tuple, BoundKernel] = {}
    for i, rule in enumerate(kernel.spec.plan, 1):
        k = rule_kernel(kernel.spec, rule, kernel.run_dtype)
        out.setdefault((k.spec.id, tuple(sorted(rule.params.items()))),
                       replace(k, plan=PlanChoice(kernel.spec.name, k.spec.id, k.spec.name, i, rule.when or "",
                                                  rule.why, dict(rule.params))))
    return list(out.values())
