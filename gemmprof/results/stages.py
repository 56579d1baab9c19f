"""The records of a variant's stages: launch configuration and compiler resources (build), the check against the
float64 reference (verification), the timing (measurement), the model's figures, and what a planning entry chose
(plan). A run's row (gemmprof.results.run.VariantResult) is assembled from them."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from gemmprof.errors import InputError
from gemmprof.results.fields import Fields

STABLE_SPREAD = 0.02  # a relative spread (IQR / median) above 2% is flagged as unstable, as nsight-python does
TURN_DRIFT = 0.05  # late launches of a turn this much slower (or faster) than early ones: the figure is the turn's
TURN_DRIFT_MIN_CALLS = 12  # turns shorter than this are not judged (a third of a turn is then too few launches)


def turn_thirds(samples: list[float] | tuple[float, ...], sizes: list[int] | tuple[int, ...]
                ) -> tuple[float, float] | None:
    """The median launch of the first third and of the last third of a variant's turns, pooled over its turns of
    at least TURN_DRIFT_MIN_CALLS launches: its samples split into turns by `sizes`, as gemmprof timed them in
    turns. None where no turn is long enough."""
    early: list[float] = []
    late: list[float] = []
    at = 0
    for n in sizes:
        turn = samples[at:at + n]
        at += n
        if n >= TURN_DRIFT_MIN_CALLS:
            early += turn[: n // 3]
            late += turn[n - n // 3:]
    return (statistics.median(early), statistics.median(late)) if early else None


def beyond_turn_drift(change: float | None) -> bool:
    """Late launches of the turns this much off early ones (late / early - 1) make the figure the turn length's."""
    return change is not None and abs(change) > TURN_DRIFT


@dataclass(frozen=True)
class Measurement:
    """Per-repetition kernel times in milliseconds, kept raw; statistics are derived. A variant timed in turns
    (`run --interleave`) keeps where its turns are: samples from `turns_from` on, `turns` launches each in order."""

    samples_ms: tuple[float, ...]
    turns_from: int = 0
    turns: tuple[int, ...] = ()

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return min(self.samples_ms)

    @property
    def max_ms(self) -> float:
        return max(self.samples_ms)

    @property
    def spread(self) -> float:
        """Interquartile range over the median (robust to one slow outlier)."""
        s = sorted(self.samples_ms)
        if len(s) < 4:
            return (s[-1] - s[0]) / statistics.median(s)
        q = statistics.quantiles(s, n=4, method="inclusive")
        return (q[2] - q[0]) / statistics.median(s)

    @property
    def stable(self) -> bool:
        return self.spread <= STABLE_SPREAD

    @property
    def median_ci(self) -> float:
        """Half the width of a distribution-free 95% confidence interval of the median, over the median: the
        order statistics n/2 -+ 0.98 sqrt(n) of the sorted samples (the binomial's normal approximation).
        Below 6 samples the interval is the whole range."""
        s = sorted(self.samples_ms)
        n = len(s)
        if n < 6:
            lo, hi = 0, n - 1
        else:
            half = 0.98 * math.sqrt(n)
            lo, hi = max(0, math.floor(n / 2 - half)), min(n - 1, math.ceil(n / 2 + half))
        med = statistics.median(s)
        return (s[hi] - s[lo]) / (2 * med) if med > 0 else 0.0

    @property
    def turn_thirds(self) -> tuple[float, float] | None:
        """The median launch early and late in its turns (turn_thirds), or None where it was not timed in turns
        long enough to judge."""
        return turn_thirds(self.samples_ms[self.turns_from:], self.turns) if self.turns else None

    @property
    def turn_drift(self) -> float | None:
        """How much slower (> 0) or faster its launches ran late in its turns than early in them."""
        thirds = self.turn_thirds
        return thirds[1] / thirds[0] - 1 if thirds else None

    @classmethod
    def from_dict(cls, d: dict, where: str) -> Measurement:
        f = Fields(d, where)
        samples, turns, start = f.times("samples_ms"), tuple(f.whole_numbers("turns")), f.int("turns_from", 0)
        if start + sum(turns) > len(samples):
            raise InputError(f"{where}.turns: {sum(turns)} launches from sample {start} on, past its "
                             f"{len(samples)} samples")
        return cls(samples, start if turns else 0, turns)

    def to_dict(self):
        turns = {"turns_from": self.turns_from, "turns": list(self.turns)} if self.turns else {}
        return {"samples_ms": list(self.samples_ms), "median_ms": self.median_ms, "min_ms": self.min_ms,
                "max_ms": self.max_ms, "spread": self.spread, "stable": self.stable, "median_ci": self.median_ci,
                **turns}


def with_params(rung: str, params: dict) -> str:
    """A rung and the parameters a plan's rule sets for it: "h12", "h12 CLUSTER_M=1"."""
    return " ".join([rung, *(f"{k}={v}" for k, v in params.items())])


@dataclass(frozen=True)
class PlanChoice:
    """What a planning entry (a spec with `plan:`) chose at the run's shape: the rung that ran, with which
    parameters (the rest are the rung's defaults), and why: the first rule of its plan whose condition held."""

    entry: str  # the planning entry's name ("plan")
    rung: str  # the chosen rung's id ("h12")
    rung_name: str  # and its name ("tma_store_epilogue")
    rule: int  # which rule of the plan held, from 1
    when: str  # its condition ("" for the last rule, which holds where no other does)
    why: str  # its reason, as the spec states it
    params: dict[str, int] = field(default_factory=dict)  # the rule's parameters for the rung

    def note(self, launch: str = "") -> str:
        """The run's note: "plan: h12 (TN=256, CM=2) by rule 7: <why>"."""
        return f"plan: {self.rung}{f' ({launch})' if launch else ''} by rule {self.rule}: {self.why}"

    def to_dict(self) -> dict:
        return {"entry": self.entry, "rung": self.rung, "rung_name": self.rung_name, "rule": self.rule,
                "when": self.when, "why": self.why, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, d: dict, where: str) -> PlanChoice:
        f = Fields(d, where)
        return cls(f.name("entry"), f.name("rung"), f.name("rung_name"), f.int("rule", minimum=1) or 1,
                   f.str("when", "") or "", f.str("why", "") or "", f.ints("params"))


@dataclass(frozen=True)
class LaunchConfig:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int  # bytes

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Resources:
    """What the compiler (ptxas) or the driver says one kernel uses."""

    registers: int
    static_smem: int  # bytes
    spill_stores: int = 0  # bytes
    spill_loads: int = 0
    stack_frame: int = 0
    local_bytes: int | None = None


@dataclass(frozen=True)
class BuildInfo:
    """Which compiler built the binary that was measured, with every flag, and a hash of the cubin."""

    compiler: str  # nvcc | nvrtc
    version: str
    flags: tuple[str, ...]
    arch: str
    cubin_sha256: str | None = None
    symbol: str | None = None  # the mangled entry that was launched
    reason: str = ""  # why this compiler: default, --compiler, the spec's compiler_reason, a fallback
    sass: dict[str, int] | None = None  # instruction counts by class (gemmprof.measure.sass)
    compile_s: float | None = None  # the compiler's wall time in this run; None: read from a cache, or NVRTC
    # seconds from the run asking for this binary to having it loaded: waiting for its build (compiled ahead in a
    # pool, or now) included; None where not timed
    load_s: float | None = None

    @property
    def label(self) -> str:
        return f"{self.compiler} {self.version}"


READS_C_FINDING = "reads C with beta=0 (BLAS forbids)"


@dataclass(frozen=True)
class Verification:
    """The output against the float64 reference, from two launches when beta == 0: one over NaN-poisoned C
    (NaN left = never written, or C read) and one over a finite sentinel (which tells the two apart).

    unwritten: elements still equal to the sentinel after the second launch (the kernel never stored them);
    reads_c: elements that came out NaN over the poison but were written over the sentinel (0 * NaN = NaN:
    the kernel read C although beta == 0); wrong: elements outside the tolerance once C was finite.
    """

    rel_error: float
    tolerance: float
    unwritten: int = 0
    reads_c: int = 0
    wrong: int = 0
    first_bad: tuple[int, int] | None = None  # (row, column) of the first element of the worst finding
    reads_c_declared: bool = False  # the spec says `reads_c: true`

    @property
    def passed(self) -> bool:
        """Right values everywhere C was finite; reading C with beta = 0 is a finding, not a failure."""
        return self.unwritten == 0 and self.wrong == 0 and self.rel_error == self.rel_error \
            and self.rel_error <= self.tolerance

    @property
    def findings(self) -> list[str]:
        out = []
        if self.reads_c:
            out.append(READS_C_FINDING + (" (declared)" if self.reads_c_declared else ""))
        return out

    def describe(self) -> str:
        at = f", first at [{self.first_bad[0]}, {self.first_bad[1]}]" if self.first_bad else ""
        if self.unwritten:
            return f"{self.unwritten} elements of C never written{at}"
        if self.wrong:
            return f"{self.wrong} wrong values (relative error {self.rel_error:.2e}, tolerance " \
                   f"{self.tolerance:.0e}){at}"
        if not self.rel_error < float("inf"):
            return "output contains NaN or infinity"
        if self.rel_error > self.tolerance:
            return f"relative error {self.rel_error:.2e} exceeds tolerance {self.tolerance:.0e}"
        return "; ".join(f + at for f in self.findings)


@dataclass(frozen=True)
class TimingChecks:
    """What was checked of a variant's timed calls (not only its first, verified call): which timed calls were
    verified (chosen at random) and which of them were wrong; what the host clock and the device said of the
    events (work outside them); a persisting-L2 carve-out or a replaced timing function found afterwards."""

    calls: int  # timed calls, warm-up included
    checked: tuple[int, ...]  # the timed calls verified (their numbers)
    wrong: tuple[str, ...] = ()  # one description per wrong checked call
    findings: tuple[str, ...] = ()
    tail_ms: float = 0.0  # the longest the device stayed busy after a batch's closing event
    persisting_l2: str = ""  # whether the carve-out was reset before timing
    cost_s: float = 0.0  # what these checks cost the variant in time (TimedVariant.checks_s: an upper bound)

    @property
    def passed(self) -> bool:
        return not self.wrong and not self.findings

    def describe(self) -> str:
        """What the timer saw first (the cause), then the wrong checked calls (the effect)."""
        parts = list(self.findings)
        if self.wrong:
            parts.append(f"right on its verified call but wrong on {len(self.wrong)} of {len(self.checked)} timed "
                         f"calls checked: {self.wrong[0]}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"calls": self.calls, "checked": list(self.checked), "wrong": list(self.wrong),
                "findings": list(self.findings), "tail_ms": self.tail_ms, "persisting_l2": self.persisting_l2,
                "cost_s": self.cost_s, "passed": self.passed}

    @classmethod
    def from_dict(cls, d: dict) -> TimingChecks:
        from gemmprof.results import cells

        def strs(key):
            v = d.get(key) or []
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError(f"checks.{key}: expected a list of strings")
            return tuple(v)

        checked = d.get("checked") or []
        if not isinstance(checked, list):
            raise ValueError("checks.checked: expected a list of call numbers")
        try:
            return cls(cells.count(d.get("calls", 0)), tuple(cells.count(x) for x in checked), strs("wrong"),
                       strs("findings"), cells.real(d.get("tail_ms", 0.0)), str(d.get("persisting_l2") or ""),
                       cells.real(d.get("cost_s", 0.0)))
        except cells.CellError as exc:
            raise ValueError(f"checks: {exc}") from None


@dataclass(frozen=True)
class ModelFigures:
    """What the analytic model says of a variant at the run's shape, and the peak it is held against."""

    flops: int
    min_arithmetic_intensity: float  # FLOP/byte of the minimum traffic
    model_arithmetic_intensity: float | None = None  # FLOP/byte of the rung's traffic model
    peak_kind: str | None = None
    peak_flops: float | None = None
    peak_clock_mhz: float | None = None  # the SM clock the datasheet's peak assumes
