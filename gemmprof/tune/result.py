"""The typed result of a sweep (gemmprof.render.tune_table renders it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gemmprof.tune.records import TIMED, Record, median, quartiles, spread

TUNE_KIND = "gemmprof.tune"


@dataclass(frozen=True)
class ConfigResult:
    params: dict[str, int]
    status: str
    message: str = ""
    samples_ms: tuple[float, ...] = ()
    tflops: float | None = None
    median_ms: float | None = None
    spread: float | None = None
    info: dict[str, Any] = field(default_factory=dict)
    worker: str = ""

    @classmethod
    def from_record(cls, rec: Record, flops: int) -> ConfigResult:
        timed = rec.status == TIMED
        return cls(params=dict(rec.params), status=rec.status, message=rec.message, samples_ms=rec.samples_ms,
                   tflops=rec.tflops(flops), median_ms=rec.median_ms, spread=spread(rec.samples_ms) if timed else None,
                   info=dict(rec.info), worker=rec.worker)

    def to_dict(self):
        d = asdict(self)
        d["samples_ms"] = list(self.samples_ms)
        return d

    @classmethod
    def from_dict(cls, d):
        return cls(**{**d, "samples_ms": tuple(d.get("samples_ms", ()))})


@dataclass(frozen=True)
class Contender:
    params: dict[str, int]
    samples_ms: tuple[float, ...]
    tflops: float
    spread: float

    def to_dict(self):
        return {**asdict(self), "samples_ms": list(self.samples_ms)}

    @classmethod
    def from_dict(cls, d):
        return cls(**{**d, "samples_ms": tuple(d["samples_ms"])})


@dataclass(frozen=True)
class Verdict:
    """The winner of the interleaved re-timing, its margin over the runner-up, and whether that margin is noise."""

    rounds: int
    contenders: tuple[Contender, ...]  # fastest first
    margin: float | None  # runner-up's median time / winner's - 1
    within_noise: bool | None  # the interquartile ranges of winner and runner-up overlap

    @property
    def winner(self) -> Contender:
        return self.contenders[0]

    @property
    def runner_up(self) -> Contender | None:
        return self.contenders[1] if len(self.contenders) > 1 else None

    def sentence(self, axes) -> str:
        w = self.winner
        text = f"winner {short_params(w.params, axes)}: {w.tflops:.2f} TFLOP/s (spread {w.spread * 100:.1f}%)"
        r = self.runner_up
        if r is None:
            return text
        text += (f", {self.margin * 100:.1f}% ahead of {short_params(r.params, axes)} at {r.tflops:.2f} TFLOP/s "
                 f"(spread {r.spread * 100:.1f}%)")
        return text + (": within noise (their interquartile ranges overlap)" if self.within_noise else "")

    def to_dict(self):
        return {"rounds": self.rounds, "contenders": [c.to_dict() for c in self.contenders], "margin": self.margin,
                "within_noise": self.within_noise}

    @classmethod
    def from_dict(cls, d):
        return cls(d["rounds"], tuple(Contender.from_dict(c) for c in d["contenders"]), d["margin"],
                   d["within_noise"])


def make_verdict(samples: dict[str, list[float]], params_by_key: dict[str, dict], flops: int, rounds: int) -> Verdict:
    contenders = sorted((Contender(dict(params_by_key[k]), tuple(s), flops / (median(s) * 1e-3) / 1e12, spread(s))
                         for k, s in samples.items() if s), key=lambda c: -c.tflops)
    if len(contenders) < 2:
        return Verdict(rounds, tuple(contenders), None, None)
    w, r = contenders[0], contenders[1]
    margin = median(r.samples_ms) / median(w.samples_ms) - 1
    within = quartiles(w.samples_ms)[1] >= quartiles(r.samples_ms)[0]
    return Verdict(rounds, tuple(contenders), margin, within)


@dataclass(frozen=True)
class TuneResult:
    kernel: str
    dtype: str
    shape: dict[str, int]
    device: str
    compiler: str
    strategy: str
    axes: dict[str, tuple[int, ...]]
    space_total: int
    space_valid: int
    configs: tuple[ConfigResult, ...]  # every configuration evaluated (replayed or measured now), in order
    measured_now: int
    replayed: int
    elapsed_s: float
    interrupted: bool = False
    verdict: Verdict | None = None
    cache_file: str = ""

    @property
    def timed(self) -> list[ConfigResult]:
        return sorted((c for c in self.configs if c.tflops), key=lambda c: -c.tflops)

    @property
    def best(self) -> ConfigResult | None:
        t = self.timed
        return t[0] if t else None

    @property
    def winner_params(self) -> dict[str, int] | None:
        if self.verdict is not None and self.verdict.contenders:
            return dict(self.verdict.winner.params)
        return dict(self.best.params) if self.best else None

    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.configs:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    def to_dict(self):
        return {"kind": TUNE_KIND, "kernel": self.kernel, "dtype": self.dtype, "shape": dict(self.shape),
                "device": self.device, "compiler": self.compiler, "strategy": self.strategy,
                "axes": {k: list(v) for k, v in self.axes.items()}, "space_total": self.space_total,
                "space_valid": self.space_valid, "measured_now": self.measured_now, "replayed": self.replayed,
                "elapsed_s": self.elapsed_s, "interrupted": self.interrupted, "cache_file": self.cache_file,
                "verdict": self.verdict.to_dict() if self.verdict else None,
                "configs": [c.to_dict() for c in self.configs]}

    @classmethod
    def from_dict(cls, d):
        return cls(kernel=d["kernel"], dtype=d["dtype"], shape=dict(d["shape"]), device=d["device"],
                   compiler=d["compiler"], strategy=d["strategy"], axes={k: tuple(v) for k, v in d["axes"].items()},
                   space_total=d["space_total"], space_valid=d["space_valid"],
                   configs=tuple(ConfigResult.from_dict(c) for c in d["configs"]), measured_now=d["measured_now"],
                   replayed=d["replayed"], elapsed_s=d["elapsed_s"], interrupted=d.get("interrupted", False),
                   verdict=Verdict.from_dict(d["verdict"]) if d.get("verdict") else None,
                   cache_file=d.get("cache_file", ""))

    def summary_lines(self) -> list[str]:
        counts = ", ".join(f"{n} {s}" for s, n in self.status_counts().items())
        lines = [f"{self.kernel} at {self.shape['M']}x{self.shape['N']}x{self.shape['K']} on {self.device}: "
                 f"{self.space_total} configurations, {self.space_valid} after pruning; {len(self.configs)} evaluated "
                 f"({self.measured_now} measured now, {self.replayed} from the cache): {counts}"]
        if self.interrupted:
            lines.append("interrupted: the cache keeps every finished result; run the same command to resume")
        if self.verdict is not None and self.verdict.contenders:
            lines.append(f"re-timed the top {len(self.verdict.contenders)} interleaved over {self.verdict.rounds} "
                         f"rounds; {self.verdict.sentence(self.axes)}")
        elif self.best is not None:
            lines.append(f"best so far {short_params(self.best.params, self.axes)}: {self.best.tflops:.2f} TFLOP/s")
        if self.cache_file:
            lines.append(f"cache: {self.cache_file}")
        return lines


def short_params(params, axes) -> str:
    """A configuration's parameters along the sweep's axes, as "BM=128 BN=64"."""
    return " ".join(f"{k}={params[k]}" for k in axes if k in params)
