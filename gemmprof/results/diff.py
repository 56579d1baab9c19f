"""Compare two runs variant by variant: the change in median time and TFLOP/s, and whether it is outside the noise.

Noise, defined: a variant's relative time change is `new_median / old_median - 1`. It is outside the noise when
its size exceeds `max(spread_old, spread_new, 1%)`, where a spread is the run's IQR / median of that variant's
samples: a change smaller than the scatter of either measurement, or under 1%, is "within noise".

A variant is matched by name, or, when a rung was renamed between the runs, by its id. What changed besides the
code's speed is named beside the verdict: the compiler, the dtype; runs timed in different regimes are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmprof.results.run import RunResult, VariantResult

MIN_NOISE = 0.01  # changes under 1% are never called faster or slower


@dataclass(frozen=True)
class Mismatch:
    """A header field that differs between the runs (they measure different things)."""

    what: str
    old: str
    new: str

    def describe(self) -> str:
        return f"{self.what}: {self.old} vs {self.new}"


@dataclass(frozen=True)
class DiffRow:
    key: str  # the variant's name, with its parameters when a name appears more than once in a file
    id: str
    dtype: str
    old_median_ms: float | None
    new_median_ms: float | None
    old_tflops: float | None
    new_tflops: float | None
    noise: float | None  # the threshold (fraction) the time change is held against
    verdict: str  # faster | slower | within noise | only in old | only in new | not timed (status)
    changed: str = ""  # what differs besides the code's speed: "compiler nvrtc 13.0 -> nvcc 13.0.88", "dtype ...",
    # "renamed old_name -> new_name" (matched through its id)

    @property
    def time_change(self) -> float | None:
        """new / old - 1 of the median time: positive is slower."""
        if self.old_median_ms and self.new_median_ms is not None:
            return self.new_median_ms / self.old_median_ms - 1
        return None

    @property
    def tflops_change(self) -> float | None:
        if self.old_tflops and self.new_tflops is not None:
            return self.new_tflops / self.old_tflops - 1
        return None

    @property
    def outside_noise(self) -> bool:
        return self.verdict in ("faster", "slower")

    def to_dict(self) -> dict:
        return {"variant": self.key, "id": self.id, "dtype": self.dtype, "old_median_ms": self.old_median_ms,
                "new_median_ms": self.new_median_ms,
                "time_change_pct": _pct(self.time_change), "old_tflops": self.old_tflops,
                "new_tflops": self.new_tflops, "tflops_change_pct": _pct(self.tflops_change),
                "noise_pct": _pct(self.noise), "verdict": self.verdict, "changed": self.changed}


def _pct(x):
    return None if x is None else 100 * x


# how a figure was taken: files from before these were recorded were burst, uniform [-1, 1), L2 flushed
METHOD_KEYS = {"regime": "burst", "fill": "uniform", "l2": "flush"}


def method(run: RunResult, key: str) -> str:
    t = run.timing_method or {}
    value = t.get(key)
    if key == "l2" and value is None and "L2 flushed" not in str(t.get("method", "L2 flushed")):
        return "warm"
    return str(value) if value is not None else METHOD_KEYS[key]


def mismatches(old: RunResult, new: RunResult) -> list[Mismatch]:
    """Shape, beta, device model and the dtype of any variant present in both: what makes a diff meaningless."""
    out = []
    if old.shape != new.shape:
        out.append(Mismatch("shape", old.shape.label, new.shape.label))
    if old.beta != new.beta:
        out.append(Mismatch("beta", f"{old.beta:g}", f"{new.beta:g}"))
    dev_old, dev_new = old.device.get("name", "?"), new.device.get("name", "?")
    if dev_old != dev_new:
        out.append(Mismatch("device", str(dev_old), str(dev_new)))
    for key in METHOD_KEYS:  # a burst figure against a sustained one measures the clock, not the change
        a, b = method(old, key), method(new, key)
        if a != b:
            out.append(Mismatch(f"timing {key}", str(a), str(b)))
    olds, news = _by_key(old), _by_key(new)
    pairs = [(key, key) for key in olds.keys() & news.keys()] + _renamed(olds, news)
    for ko, kn in pairs:
        if olds[ko].dtype != news[kn].dtype:
            out.append(Mismatch(f"dtype of {kn}", olds[ko].dtype, news[kn].dtype))
    return out


def regime(run: RunResult) -> str | None:
    """How the run timed its launches, where its results say (timing_method's "regime": "burst", "sustained");
    older files do not."""
    value = (run.timing_method or {}).get("regime")
    return str(value) if value else None


def _renamed(olds: dict[str, VariantResult], news: dict[str, VariantResult]) -> list[tuple[str, str]]:
    """(old key, new key) of kernels only in one run each by name whose id is the same and held once on each side:
    a rung renamed between the runs (h1_wmma_seed001 -> wmma_seed001)."""
    def ids(side, others):
        found: dict[str, list[str]] = {}
        for key, v in side.items():
            if key not in others and v.kind == "ladder" and v.id:
                found.setdefault(v.id, []).append(key)
        return {i: keys[0] for i, keys in found.items() if len(keys) == 1}

    old_ids, new_ids = ids(olds, news), ids(news, olds)
    return [(old_ids[i], new_ids[i]) for i in old_ids.keys() & new_ids.keys()]


def _changes(o: VariantResult, n: VariantResult, ko: str, kn: str) -> str:
    """What differs between the two measurements of a variant besides its speed: its name, compiler, dtype."""
    out = []
    if ko != kn:
        out.append(f"renamed {ko} -> {kn}")
    bo, bn = o.build, n.build
    if bo and bn and (bo.compiler, bo.version) != (bn.compiler, bn.version):
        out.append(f"compiler {bo.label} -> {bn.label}")
    if o.dtype != n.dtype:
        out.append(f"dtype {o.dtype} -> {n.dtype}")
    if o.c_dtype != n.c_dtype:
        out.append(f"C {o.c_dtype} -> {n.c_dtype}")
    return "; ".join(out)


def _label(v: VariantResult, varying: dict[str, set[str]]) -> str:
    """The name, and for a name held more than once, the parameters that tell its variants apart."""
    keys = varying.get(v.name)
    if not keys:
        return v.name
    return v.name + "[" + ",".join(f"{k}={v.params.get(k)}" for k in sorted(keys)) + "]"


def _by_key(run: RunResult, varying: dict[str, set[str]] | None = None) -> dict[str, VariantResult]:
    if varying is None:
        varying = _varying(run)
    return {_label(v, varying): v for v in run.variants}


def _varying(*runs: RunResult) -> dict[str, set[str]]:
    """name -> the parameters whose values differ among its variants, for names a run holds more than once."""
    repeated = set()
    for run in runs:
        names = [v.name for v in run.variants]
        repeated |= {n for n in names if names.count(n) > 1}
    out = {}
    for name in repeated:
        params = [v.params for run in runs for v in run.variants if v.name == name]
        keys = set().union(*params)
        out[name] = {k for k in keys if len({repr(p.get(k)) for p in params}) > 1}
    return out


def _timed(v: VariantResult | None):
    return v.timing if v is not None and v.passed and v.timing else None


def diff_runs(old: RunResult, new: RunResult) -> list[DiffRow]:
    """One row per variant in either run, in the new run's order, then those only in the old one."""
    varying = _varying(old, new)
    olds, news = _by_key(old, varying), _by_key(new, varying)
    was = {kn: ko for ko, kn in _renamed(olds, news)}  # new key -> its old key, for renamed rungs
    keys = list(news) + [k for k in olds if k not in news and k not in was.values()]
    rows = []
    for key in keys:
        o, n = olds.get(was.get(key, key)), news.get(key)
        to, tn = _timed(o), _timed(n)
        noise = max(to.spread, tn.spread, MIN_NOISE) if to and tn else None
        if o is None or n is None:
            verdict = "only in new" if o is None else "only in old"
        elif not (to and tn):
            verdict = f"not timed ({o.status} -> {n.status})"
        else:
            change = tn.median_ms / to.median_ms - 1
            verdict = "within noise" if abs(change) <= noise else ("slower" if change > 0 else "faster")
        ref = n or o
        changed = _changes(o, n, was.get(key, key), key) if o is not None and n is not None else ""
        rows.append(DiffRow(key, ref.id, ref.dtype, to.median_ms if to else None, tn.median_ms if tn else None,
                            _tflops(o), _tflops(n), noise, verdict, changed))
    return rows


def _tflops(v: VariantResult | None) -> float | None:
    ach = v.achieved_flops if v is not None else None
    return ach / 1e12 if ach else None


def regressions(rows: list[DiffRow], threshold_pct: float) -> list[DiffRow]:
    """Variants slower by more than `threshold_pct` percent of their old median time, outside the noise."""
    return [r for r in rows if r.verdict == "slower" and r.time_change is not None
            and 100 * r.time_change > threshold_pct]
