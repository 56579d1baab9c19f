"""The ladder check: for each step of a ladder, does explain's top limiter of rung i name the technique the next
rung applies, and how does the gain it predicts compare with the speedup the next rung measured?

A step's ends may be a pair of alternatives ("7/8": two ways to fix bank conflicts; "11/12": two ways to double
buffer); the faster of the pair in the results stands for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from gemmprof.model.explain import THROUGHPUT, Explanation
from gemmprof.model.explain_techniques import RUNG_TECHNIQUES

STEPS = {
    "fp32": ("1", "2", "3", "4", "5", "6", "7/8", "9", "10", "11/12", "13", "14", "15"),
    "fp16": ("h1", "h2", "h3", "h4", "h5", "h6"),
}
TOLERANCE = 0.30  # predicted within 30% of measured (the target)
TARGET_MATCH = 0.80  # share of steps whose top limiter names the next rung's technique
TARGET_WITHIN = 2 / 3  # share of steps predicted within TOLERANCE


@dataclass(frozen=True)
class LadderStep:
    step: str  # "6 -> 7/8"
    rung: str  # the rung explained (the faster of a pair)
    next_rung: str
    top_limiter: str | None
    technique: str | None  # what the top limiter recommends
    next_techniques: tuple[str, ...]  # what the next rung applies
    match: bool
    predicted_speedup: float | None  # the top limiter's gain
    measured_speedup: float | None  # rung's median over next rung's
    within: bool | None  # |predicted / measured - 1| <= TOLERANCE
    why: str  # when it misses: what changed between the two rungs

    def to_dict(self) -> dict:
        d = asdict(self)
        d["next_techniques"] = list(self.next_techniques)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> LadderStep:
        return cls(**{**{k: d.get(k) for k in cls.__dataclass_fields__},
                      "next_techniques": tuple(d.get("next_techniques", ()))})


@dataclass(frozen=True)
class LadderCheck:
    ladder: str
    shape: tuple[int, int, int]
    steps: tuple[LadderStep, ...]
    notes: tuple[str, ...] = ()

    @property
    def match_share(self) -> float:
        return sum(s.match for s in self.steps) / len(self.steps) if self.steps else 0.0

    @property
    def within_share(self) -> float:
        return sum(bool(s.within) for s in self.steps) / len(self.steps) if self.steps else 0.0

    @property
    def meets_targets(self) -> bool:
        return self.match_share >= TARGET_MATCH and self.within_share >= TARGET_WITHIN

    def to_dict(self) -> dict:
        return {"kind": "gemmprof.ladder_check", "ladder": self.ladder, "shape": list(self.shape),
                "match_share": self.match_share, "within_share": self.within_share,
                "meets_targets": self.meets_targets, "steps": [s.to_dict() for s in self.steps],
                "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: dict) -> LadderCheck:
        return cls(d["ladder"], tuple(d["shape"]), tuple(LadderStep.from_dict(s) for s in d["steps"]),
                   tuple(d.get("notes", ())))


def _faster(group: str, times: dict[str, float]) -> str | None:
    members = [r for r in group.split("/") if r in times]
    return min(members, key=lambda r: times[r]) if members else None


def _why(match: bool, within: bool | None, a: Explanation, b: Explanation | None, step: LadderStep) -> str:
    parts = []
    if not match:
        top = a.top
        named = f"{top.kind} ({top.technique or 'nothing left in the ladder'})" if top else "none"
        parts.append(f"{a.kernel}'s top limiter is {named}; {step.next_rung} applies "
                     f"{', '.join(step.next_techniques)}")
    if (within is False or not match) and b is not None:  # what changed between the two, as the model sees it
        by_kind = {lim.kind: lim.bound_s for lim in b.limiters if lim.bound_s and lim.kind in THROUGHPUT}
        changes = [(lim.kind, by_kind[lim.kind] / lim.bound_s) for lim in a.limiters if lim.kind in by_kind]
        changes = sorted(changes, key=lambda kv: -abs(kv[1] - 1))[:3]
        parts.append(f"{b.kernel}'s bounds against {a.kernel}'s: " + ", ".join(f"{k} x{r:.2f}" for k, r in changes))
        if a.warps_per_sm != b.warps_per_sm:
            parts.append(f"warps per SM {a.warps_per_sm} -> {b.warps_per_sm} (registers {a.registers} -> "
                         f"{b.registers})")
        if a.measured_s and b.measured_s:
            parts.append(f"{a.kernel} runs at {a.model_s / a.measured_s:.0%} of its model time, {b.kernel} at "
                         f"{b.model_s / b.measured_s:.0%}")
    return "; ".join(parts)


def _timing_for(here: str, there: str, timings) -> dict[str, float] | None:
    """The first run (latest first) that timed both ends of a step."""
    for t in timings:
        if _faster(here, t) and _faster(there, t):
            return t
    return None


def check(ladder: str, explanations: dict[str, Explanation], timings: list[dict[str, float]]) -> LadderCheck:
    """`explanations`: explain's result per rung id; `timings`: per run, latest first, each rung's median (s); a
    step's speedup comes from the first run that timed both its ends."""
    steps, notes, shape = [], [], None
    groups = STEPS[ladder]
    for here, there in zip(groups[:-1], groups[1:], strict=True):
        label = f"{here} -> {there}"
        times = _timing_for(here, there, timings)
        a_id, b_id = (_faster(here, times), _faster(there, times)) if times else (None, None)
        if a_id is None or a_id not in explanations:
            notes.append(f"{label}: left out (no run timed both ends, or no explanation of {here})")
            continue
        a, b = explanations[a_id], explanations.get(b_id)
        shape = shape or a.shape
        nxt = tuple(dict.fromkeys(t for r in there.split("/") for t in RUNG_TECHNIQUES[r]))
        top = a.top
        match = top is not None and top.technique in nxt
        measured = times[a_id] / times[b_id]
        predicted = top.gain if top else None
        within = abs(predicted / measured - 1) <= TOLERANCE if predicted else None
        step = LadderStep(label, a_id, b_id, top.kind if top else None, top.technique if top else None, nxt,
                          match, predicted, measured, within, "")
        steps.append(replace(step, why=_why(match, within, a, b, step)))
    return LadderCheck(ladder, tuple(shape or ()), tuple(steps), tuple(notes))
