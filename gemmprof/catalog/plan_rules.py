"""The `plan:` block of a planning entry's spec (catalog/plan.py): its rules, parsed and checked for form; that
each rule's rung exists and takes its parameters is plan.check_plan's."""

from __future__ import annotations

from dataclasses import dataclass, field

from gemmprof.catalog import expr
from gemmprof.catalog.spec_fields import check_keys
from gemmprof.errors import SpecError

# the keys of a planning entry's spec: it names rungs, not a kernel of its own (no file, grid or parameters)
PLAN_KEYS = ("id", "name", "title", "description", "source", "dtype", "dtypes", "layout", "aliases",
             "shape_constraints", "plan")
RULE_KEYS = ("rung", "when", "params", "why")
SHAPE_NAMES = ("M", "N", "K", "SMS")  # what a rule's condition reads besides its rung's names


@dataclass(frozen=True)
class PlanRule:
    """One rule of a plan: where `when` holds (an expression over the rung's parameters, derived and
    `decomposition` names at the shape, and M, N, K, SMS), run `rung` with `params` (the rest its defaults)."""

    rung: str  # a rung's id or name
    when: str | None  # None only for the last rule: what runs where no other rule holds
    why: str  # the reason, shown in the run's note
    params: dict[str, int] = field(default_factory=dict)


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def parse_rules(path, node) -> tuple[PlanRule, ...]:
    """`plan:`, a list of {rung, when, params, why}; the last rule has no `when` (so no shape is left without a
    rung), every other one has one."""
    if not isinstance(node, list) or not node:
        _fail(path, "plan", "expected a list of rules {rung: ID, when: EXPRESSION, params: {NAME: integer}, why: TEXT}")
    rules = []
    for i, item in enumerate(node):
        key = f"plan[{i}]"
        if not isinstance(item, dict):
            _fail(path, key, "expected {rung: ID, when: EXPRESSION, params: {NAME: integer}, why: TEXT}")
        check_keys(path, key, item, RULE_KEYS)
        rung = item.get("rung")
        if not isinstance(rung, str) or not rung.strip():
            _fail(path, f"{key}.rung", f"expected a rung's id or name, got {str(rung)[:40]!r}")
        why = item.get("why")
        if not isinstance(why, str) or not why.strip():
            _fail(path, f"{key}.why", "say why this rule chooses its rung (one line: the run's note shows it)")
        last = i == len(node) - 1
        when = item.get("when")
        if last and when is not None:
            _fail(path, f"{key}.when", "the last rule has no condition: it runs where no rule before it holds")
        if not last and (isinstance(when, bool) or not isinstance(when, (str, int))):
            _fail(path, f"{key}.when", "expected a condition (an expression over M, N, K, SMS and the rung's names)")
        if when is not None:
            try:
                expr.parse(str(when))
            except SpecError as exc:
                _fail(path, f"{key}.when", str(exc))
        params = {} if item.get("params") is None else item["params"]
        if not isinstance(params, dict) or any(not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int)
                                               or abs(v) > 2 ** 31 for k, v in params.items()):
            _fail(path, f"{key}.params", "expected a mapping NAME: integer (the rung's parameters)")
        rules.append(PlanRule(rung.strip(), None if when is None else str(when), " ".join(why.split()), dict(params)))
    return tuple(rules)



def rules_text(rules: tuple[PlanRule, ...]) -> list[str]:
    """A plan, one line per rule: "1. h11 where M <= 128: <why>"."""
    lines = []
    for i, rule in enumerate(rules, 1):
        params = f" with {', '.join(f'{k}={v}' for k, v in rule.params.items())}" if rule.params else ""
        where = f"where {rule.when}" if rule.when is not None else "otherwise"
        lines.append(f"{i}. {rule.rung}{params} {where}: {rule.why}")
    return lines
