"""Typed results: what `gemmprof run` measured, saved as JSON so every other command can use it without a GPU."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gemmprof.errors import InputError
from gemmprof.render.table import json_safe, write_atomic

RUN_KIND = "gemmprof.run"
SCHEMA_VERSION = 1
STABLE_SPREAD = 0.02  # a relative spread (IQR / median) above 2% is flagged as unstable, as nsight-python does


@dataclass(frozen=True)
class Measurement:
    """Per-repetition kernel times in milliseconds, kept raw; statistics are derived."""

    samples_ms: tuple[float, ...]

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

    def to_dict(self):
        return {"samples_ms": list(self.samples_ms), "median_ms": self.median_ms, "min_ms": self.min_ms,
                "max_ms": self.max_ms, "spread": self.spread, "stable": self.stable}


@dataclass
class VariantResult:
    id: str
    name: str
    title: str
    dtype: str
    kind: str = "ladder"  # ladder | user | baseline
    status: str = "ok"  # ok | FAIL | error | rejected
    message: str = ""
    params: dict[str, int] = field(default_factory=dict)
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers: int | None = None
    static_smem: int | None = None
    dynamic_smem: int | None = None
    local_bytes: int | None = None
    occupancy: dict[str, Any] | None = None
    rel_error: float | None = None
    tolerance: float | None = None
    timing: Measurement | None = None
    flops: int | None = None
    model_arithmetic_intensity: float | None = None  # FLOP/byte of the rung's traffic model
    min_arithmetic_intensity: float | None = None  # FLOP/byte of the minimum traffic
    peak_kind: str | None = None
    peak_flops: float | None = None
    nvtx_range: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    @property
    def median_s(self) -> float | None:
        return self.timing.median_ms * 1e-3 if self.timing and self.passed else None

    @property
    def achieved_flops(self) -> float | None:
        """FLOP/s at the median time; None unless verified and timed."""
        s = self.median_s
        return self.flops / s if s and self.flops else None

    def to_dict(self):
        d = asdict(self)
        d["timing"] = self.timing.to_dict() if self.timing else None
        d["achieved_tflops"] = self.achieved_flops / 1e12 if self.achieved_flops else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> VariantResult:
        d = dict(d)
        d.pop("achieved_tflops", None)
        t = d.get("timing")
        d["timing"] = Measurement(tuple(t["samples_ms"])) if t else None
        for key in ("grid", "block"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class RunResult:
    shape: dict[str, int]
    alpha: float
    beta: float
    device: dict[str, Any]
    gpu_profile: str
    seed: int
    timing_method: dict[str, Any]
    variants: list[VariantResult] = field(default_factory=list)
    created: str = ""
    gemmprof_version: str = ""
    command: str = ""

    def baseline_for(self, dtype: str) -> VariantResult | None:
        """The cuBLAS row a rung of `dtype` is compared with (SGEMM for fp32, HGEMM for fp16)."""
        names = {"fp32": "cublas_sgemm", "fp16": "cublas_hgemm", "tf32": "cublas_tf32"}
        for v in self.variants:
            if v.kind == "baseline" and v.name == names.get(dtype) and v.passed:
                return v
        return None

    def to_dict(self):
        return {"kind": RUN_KIND, "schema": SCHEMA_VERSION, "gemmprof_version": self.gemmprof_version,
                "created": self.created, "command": self.command, "device": self.device,
                "gpu_profile": self.gpu_profile, "shape": self.shape, "alpha": self.alpha, "beta": self.beta,
                "seed": self.seed, "timing_method": self.timing_method,
                "variants": [v.to_dict() for v in self.variants]}

    def save(self, path) -> None:
        write_atomic(path, json.dumps(json_safe(self.to_dict()), indent=1) + "\n")

    @classmethod
    def from_dict(cls, doc: dict, source: str = "results") -> RunResult:
        if doc.get("kind") != RUN_KIND:
            raise InputError(f"{source}: not a gemmprof run results file (kind is {doc.get('kind')!r})")
        try:
            return cls(shape=doc["shape"], alpha=doc["alpha"], beta=doc["beta"], device=doc["device"],
                       gpu_profile=doc["gpu_profile"], seed=doc["seed"], timing_method=doc["timing_method"],
                       variants=[VariantResult.from_dict(v) for v in doc["variants"]],
                       created=doc.get("created", ""), gemmprof_version=doc.get("gemmprof_version", ""),
                       command=doc.get("command", ""))
        except (KeyError, TypeError) as exc:
            raise InputError(f"{source}: malformed run results ({exc})") from None


def load_json(path) -> dict:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None


def load_run(path) -> RunResult:
    return RunResult.from_dict(load_json(path), str(path))

