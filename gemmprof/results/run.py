"""Typed results: what `gemmprof run` measured, saved as JSON so every other command can use it without a GPU.

A variant's row is assembled from one record per stage: the launch configuration and the compiler's resource
usage (build), the occupancy calculation (model), the check against the float64 reference (verification), the
timing (measurement) and the roofline figures (model). The file keeps the flat layout of schema 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gemmprof.errors import InputError
from gemmprof.results import clocks as _clocks
from gemmprof.results.clocks import SETTLED, ClockRecord, EnergyRecord, WarmUpRecord
from gemmprof.results.fields import MAX_COUNT, Fields, check_keys
from gemmprof.results.files import check_schema, load_json, save_json
from gemmprof.results.shape import GemmShape
from gemmprof.results.stages import (  # noqa: F401 - the per-stage records, imported from here by callers
    STABLE_SPREAD,
    BuildInfo,
    LaunchConfig,
    Measurement,
    ModelFigures,
    PlanChoice,
    Resources,
    TimingChecks,
    Verification,
)

RUN_KIND = "gemmprof.run"
SCHEMA_VERSION = 1
CUBLASLT_PREFIX = "cublaslt_best"  # cuBLASLt's best of N beside a cuBLAS row: cublaslt_best8_hgemm
FP8_DTYPES = ("e4m3", "e5m2")  # A and B as fp8 bit patterns with float32 scales (gemmprof.measure.fp8)
CUBLASLT_FP8 = "cublaslt"  # cuBLASLt's fp8 GEMM (torch._scaled_mm), the baseline of fp8 variants: cublaslt_e4m3_cbf16


# every key a run results file has (schema 1; gpu_profile: the older name of gpu_spec): anything else is a typo, a
# hand edit or a newer layout, refused naming it rather than silently dropped (device and timing_method are the
# records of the machine and the timing as found, free-form; `build`, run-wide or per variant, is a build record
# `report` shows as it is)
RUN_KEYS = frozenset(("kind", "schema", "gemmprof_version", "created", "command", "device", "gpu_spec", "gpu_profile",
                      "shape", "alpha", "beta", "seed", "timing_method", "variants", "notes", "build", "elapsed_s"))
VARIANT_KEYS = frozenset((
    "id", "name", "title", "dtype", "kind", "status", "message", "params", "grid", "block", "registers",
    "static_smem", "dynamic_smem", "local_bytes", "occupancy", "rel_error", "tolerance", "unwritten", "reads_c",
    "wrong", "first_bad", "reads_c_declared", "spill_stores", "spill_loads", "compiler", "compiler_version",
    "compiler_flags", "compiler_arch", "compiler_reason", "cubin_sha256", "symbol", "sass", "compile_s", "load_s",
    "timing", "flops", "model_arithmetic_intensity", "min_arithmetic_intensity", "peak_kind", "peak_flops",
    "peak_clock_mhz", "nvtx_range", "params_source", "achieved_tflops", *_clocks.empty_dict(), "clock_fell",
    "c_dtype", "scales", "warm_up", "energy", "joules_per_gemm", "tflop_per_joule", "checks", "plan", "build"))
NESTED_KEYS = {"shape": frozenset("MNK"), "timing": frozenset(("samples_ms", "median_ms", "min_ms", "max_ms", "spread",
                                                               "stable", "median_ci", "turns_from", "turns")),
               "plan": frozenset(("entry", "rung", "rung_name", "rule", "when", "why", "params"))}


def _check_nested(d: dict, where: str) -> None:
    for key, known in NESTED_KEYS.items():
        if isinstance(d.get(key), dict):
            check_keys(d[key], f"{where}.{key}" if where else key, known)


def cublaslt_name(cublas_name: str, n: int) -> str:
    """The name of cuBLASLt's best-of-n row beside the cuBLAS row `cublas_name` (cublas_hgemm_cfp16 ->
    cublaslt_best8_hgemm_cfp16): the routine and C stay in the name, so two runs compare like with like."""
    return f"{CUBLASLT_PREFIX}{n}_{cublas_name.removeprefix('cublas_')}"


@dataclass
class VariantResult:
    id: str
    name: str
    title: str
    dtype: str
    kind: str = "ladder"  # ladder | user | baseline
    status: str = "ok"  # ok | FAIL | error | rejected | skipped (e.g. a Hopper rung on another GPU)
    message: str = ""
    params: dict[str, int] = field(default_factory=dict)
    nvtx_range: str | None = None
    params_source: str = ""  # "": the spec's defaults (and --param); else e.g. "tuned on DEVICE at MxNxK (FILE)"
    launch: LaunchConfig | None = None
    resources: Resources | None = None
    build: BuildInfo | None = None
    occupancy: dict[str, Any] | None = None  # gemmprof.model.occupancy.Occupancy.to_dict()
    verification: Verification | None = None
    timing: Measurement | None = None
    model: ModelFigures | None = None
    clocks: ClockRecord | None = None  # SM clock, temperature and power around and during the timing (NVML)
    c_dtype: str = "fp32"  # the type C is written in (a kernel's `c_dtype:`, --c-dtype, a half-C baseline)
    scales: str = ""  # fp8 inputs: how A and B are scaled (tensor, 1x128, 128x128); "" for other dtypes
    warm_up: WarmUpRecord | None = None  # how the card was brought to the regime before timing
    energy: EnergyRecord | None = None  # NVML's energy counter around calls back to back
    checks: TimingChecks | None = None  # the timed calls checked, and what the timer's own checks found
    plan: PlanChoice | None = None  # a planning entry's row: the rung it chose at this shape, and why

    @property
    def joules_per_gemm(self) -> float | None:
        return self.energy.joules_per_call if self.energy and self.passed else None

    @property
    def tflop_per_joule(self) -> float | None:
        j = self.joules_per_gemm
        return self.flops / j / 1e12 if j and self.flops else None

    @property
    def clock_fell(self) -> bool:
        """The SM clock fell during the timed calls (ClockRecord.fell; a settled sustained warm-up's clock under
        the maximum is not a fall)."""
        if self.clocks is None:
            return False
        w = self.warm_up
        return self.clocks.fell(settled=bool(w and w.regime == "sustained" and w.verdict in SETTLED))

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    @property
    def median_s(self) -> float | None:
        return self.timing.median_ms * 1e-3 if self.timing and self.passed else None

    @property
    def flops(self) -> int | None:
        return self.model.flops if self.model else None

    @property
    def achieved_flops(self) -> float | None:
        """FLOP/s at the median time; None unless verified and timed."""
        s = self.median_s
        return self.flops / s if s and self.flops else None

    @property
    def peak_flops(self) -> float | None:
        return self.model.peak_flops if self.model else None

    @property
    def rel_error(self) -> float | None:
        return self.verification.rel_error if self.verification else None

    def to_dict(self):
        """The flat layout of schema 1."""
        launch, res, ver, mod = self.launch, self.resources, self.verification, self.model
        return {
            "id": self.id, "name": self.name, "title": self.title, "dtype": self.dtype, "kind": self.kind,
            "status": self.status, "message": self.message, "params": dict(self.params),
            "grid": list(launch.grid) if launch else None, "block": list(launch.block) if launch else None,
            "registers": res.registers if res else None, "static_smem": res.static_smem if res else None,
            "dynamic_smem": launch.dynamic_smem if launch else None, "local_bytes": res.local_bytes if res else None,
            "occupancy": self.occupancy,
            "rel_error": ver.rel_error if ver else None, "tolerance": ver.tolerance if ver else None,
            "unwritten": ver.unwritten if ver else None,
            "reads_c": ver.reads_c if ver else None, "wrong": ver.wrong if ver else None,
            "first_bad": list(ver.first_bad) if ver and ver.first_bad else None,
            "reads_c_declared": ver.reads_c_declared if ver else None,
            "spill_stores": res.spill_stores if res else None, "spill_loads": res.spill_loads if res else None,
            **_build_keys(self.build),
            "timing": self.timing.to_dict() if self.timing else None,
            "flops": mod.flops if mod else None,
            "model_arithmetic_intensity": mod.model_arithmetic_intensity if mod else None,
            "min_arithmetic_intensity": mod.min_arithmetic_intensity if mod else None,
            "peak_kind": mod.peak_kind if mod else None, "peak_flops": mod.peak_flops if mod else None,
            "peak_clock_mhz": mod.peak_clock_mhz if mod else None,
            "nvtx_range": self.nvtx_range, "params_source": self.params_source,
            "achieved_tflops": self.achieved_flops / 1e12 if self.achieved_flops else None,
            **(self.clocks.to_dict() | {"clock_fell": self.clock_fell} if self.clocks else _clocks.empty_dict()),
            **({"c_dtype": self.c_dtype} if self.c_dtype != "fp32" else {}),  # files of fp32 C stay as they were
            **({"scales": self.scales} if self.scales else {}),
            "warm_up": self.warm_up.to_dict() if self.warm_up else None,
            "energy": self.energy.to_dict() if self.energy else None,
            "joules_per_gemm": self.joules_per_gemm, "tflop_per_joule": self.tflop_per_joule,
            "checks": self.checks.to_dict() if self.checks else None,
            **({"plan": self.plan.to_dict()} if self.plan else {}),  # only a planning entry's row has one
        }

    @classmethod
    def from_dict(cls, d: dict, where: str = "variant") -> VariantResult:
        """Every field checked once, here: wrong types, NaN, infinities and negative times are InputErrors."""
        f = Fields(d, where)
        check_keys(d, where, VARIANT_KEYS)
        _check_nested(d, where)
        launch = res = ver = mod = timing = None
        grid, block = f.dims("grid"), f.dims("block")
        if grid is not None and block is not None:
            launch = LaunchConfig(grid, block, f.int("dynamic_smem", 0))
        if f.int("registers") is not None:
            res = Resources(f.int("registers"), f.int("static_smem", 0), f.int("spill_stores", 0),
                            f.int("spill_loads", 0), local_bytes=f.int("local_bytes"))
        rel, tol = f.num("rel_error", minimum=0), f.num("tolerance", minimum=0)
        if rel is not None or tol is not None:
            fb = d.get("first_bad")
            if fb is not None and (not isinstance(fb, list) or not all(
                    isinstance(x, int) and not isinstance(x, bool) for x in fb)):
                raise InputError(f"{where}.first_bad: expected a list of indices, got {str(fb)[:40]}")
            ver = Verification(float("nan") if rel is None else rel, tol or 0.0, f.int("unwritten", 0),
                               f.int("reads_c", 0), f.int("wrong", 0), tuple(fb) if fb else None,
                               bool(d.get("reads_c_declared")))
        if f.num("flops", minimum=1) is not None:
            mod = ModelFigures(f.num("flops"), f.num("min_arithmetic_intensity", minimum=0),
                               f.num("model_arithmetic_intensity", minimum=0), f.str("peak_kind"),
                               f.num("peak_flops", minimum=0), f.num("peak_clock_mhz", minimum=0))
        occupancy = f.mapping("occupancy")
        if occupancy is not None:
            if "theoretical_occupancy" in occupancy and Fields(occupancy, f"{where}.occupancy").num(
                    "theoretical_occupancy", minimum=0) is None:
                raise InputError(f"{where}.occupancy.theoretical_occupancy: expected a number, got null")
        if f.mapping("timing"):
            timing = Measurement.from_dict(d["timing"], f"{where}.timing")
        return cls(id=f.name("id"), name=f.name("name"), title=f.str("title", "") or "", dtype=f.name("dtype"),
                   kind=f.str("kind", "ladder") or "ladder", status=f.str("status", "ok") or "ok",
                   message=f.str("message") or "", params=f.ints("params"), nvtx_range=f.str("nvtx_range"),
                   params_source=f.str("params_source") or "",
                   launch=launch, resources=res, build=_checked_build(d, where), occupancy=occupancy,
                   verification=ver, timing=timing, model=mod, clocks=_checked_clocks(d, where),
                   c_dtype=_c_dtype(d, where), warm_up=_record(d, "warm_up", WarmUpRecord, where),
                   energy=_record(d, "energy", EnergyRecord, where), checks=_record(d, "checks", TimingChecks, where),
                   plan=PlanChoice.from_dict(d["plan"], f"{where}.plan") if d.get("plan") is not None else None,
                   scales=_scales(d, where))


def _record(d: dict, key: str, kind, where: str):
    """An optional nested record (files from before it existed have none)."""
    value = d.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputError(f"{where}.{key}: expected an object, got {type(value).__name__}")
    try:
        return kind.from_dict(value)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}.{key}: {exc}") from None


SCALE_MODES = ("tensor", "1x128", "128x128")  # as catalog.launch_fields (results import nothing above them)


def _scales(d: dict, where: str) -> str:
    s = d.get("scales", "")
    if s not in ("", *SCALE_MODES):
        raise InputError(f"{where}.scales: expected {', '.join(SCALE_MODES)}, got {str(s)[:20]!r}")
    return s


def _c_dtype(d: dict, where: str) -> str:
    c = d.get("c_dtype", "fp32")
    if c not in ("fp32", "fp16", "bf16"):
        raise InputError(f"{where}.c_dtype: expected fp32, fp16 or bf16, got {str(c)[:20]!r}")
    return c


def _checked_build(d: dict, where: str) -> BuildInfo | None:
    f = Fields(d, where)
    for key in ("compiler", "compiler_version", "compiler_arch", "compiler_reason", "cubin_sha256", "symbol"):
        f.str(key)
    f.strs("compiler_flags")
    f.mapping("sass")
    f.num("compile_s", minimum=0)
    f.num("load_s", minimum=0)
    return _build_from(d)


def _checked_clocks(d: dict, where: str):
    try:
        return ClockRecord.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise InputError(f"{where}: malformed clock fields ({type(exc).__name__}: {exc})") from None


def _build_keys(b: BuildInfo | None) -> dict:
    if b is None:
        return {"compiler": None}
    return {"compiler": b.compiler, "compiler_version": b.version, "compiler_flags": list(b.flags),
            "compiler_arch": b.arch, "compiler_reason": b.reason, "cubin_sha256": b.cubin_sha256,
            "symbol": b.symbol, "sass": dict(b.sass) if b.sass is not None else None, "compile_s": b.compile_s,
            "load_s": b.load_s}


def _build_from(d: dict) -> BuildInfo | None:
    if not d.get("compiler"):
        return None
    return BuildInfo(d["compiler"], d.get("compiler_version") or "", tuple(d.get("compiler_flags") or ()),
                     d.get("compiler_arch") or "", d.get("cubin_sha256"), d.get("symbol"),
                     d.get("compiler_reason") or "", d.get("sass"), d.get("compile_s"), d.get("load_s"))


@dataclass
class RunResult:
    shape: GemmShape
    alpha: float
    beta: float
    device: dict[str, Any]
    gpu_spec: str
    seed: int
    timing_method: dict[str, Any]
    variants: list[VariantResult] = field(default_factory=list)
    created: str = ""
    gemmprof_version: str = ""
    command: str = ""
    notes: list[str] = field(default_factory=list)  # what the run left out and why (e.g. no cuBLASLt row)
    elapsed_s: float | None = None  # gemmprof's time from its start to the run's last variant

    def baseline_for(self, dtype: str, c_dtype: str = "fp32", scales: str = "") -> VariantResult | None:
        """The cuBLAS row a kernel of `dtype` inputs writing a `c_dtype` C is compared with (SGEMM for fp32, HGEMM
        for fp16; cublas_hgemm_cfp16 for a kernel that writes half C): cublasGemmEx's own choice of algorithm;
        for fp8 inputs cuBLASLt's fp8 GEMM of the same C and scales, cublaslt_e4m3_cbf16 or
        cublaslt_e4m3_cbf16_1x128."""
        name = cublaslt_fp8_name(dtype, c_dtype, scales) if dtype in FP8_DTYPES else _cublas_name(dtype, c_dtype)
        for v in self.variants:
            if v.kind == "baseline" and v.name == name and v.passed:
                return v
        return None

    @property
    def checks_cost_s(self) -> float:
        """What the checks of the timed calls cost the run, in seconds (TimingChecks.cost_s summed)."""
        return sum(v.checks.cost_s for v in self.variants if v.checks is not None)

    def cublaslt_for(self, dtype: str, c_dtype: str = "fp32") -> VariantResult | None:
        """cuBLASLt's best-of-N row beside baseline_for's cuBLAS row (`run --cublaslt-best N`), or None."""
        name = _cublas_name(dtype, c_dtype)
        if name is None:
            return None
        pattern = re.compile(rf"{CUBLASLT_PREFIX}\d+_{re.escape(name.removeprefix('cublas_'))}")
        for v in self.variants:
            if v.kind == "baseline" and v.passed and pattern.fullmatch(v.name):
                return v
        return None

    def to_dict(self):
        return {"kind": RUN_KIND, "schema": SCHEMA_VERSION, "gemmprof_version": self.gemmprof_version,
                "created": self.created, "command": self.command, "device": self.device,
                "gpu_spec": self.gpu_spec, "shape": self.shape.to_dict(), "alpha": self.alpha, "beta": self.beta,
                "seed": self.seed, "timing_method": self.timing_method,
                "variants": [v.to_dict() for v in self.variants],
                **({"notes": list(self.notes)} if self.notes else {}),
                **({"elapsed_s": self.elapsed_s} if self.elapsed_s is not None else {})}

    def save(self, path) -> None:
        save_json(path, self.to_dict())

    @classmethod
    def from_dict(cls, doc: dict, source: str = "results") -> RunResult:
        if not isinstance(doc, dict):
            raise InputError(f"{source}: malformed run results (expected a JSON object, got {type(doc).__name__})")
        if doc.get("kind") != RUN_KIND:
            kind = doc.get("kind")
            raise InputError(f"{source}: not a gemmprof run results file (kind is {kind!r})")
        check_schema(doc, source, SCHEMA_VERSION)
        try:
            return cls._checked(doc)
        except InputError as exc:
            raise InputError(f"{source}: malformed run results: {exc}") from None

    @classmethod
    def _checked(cls, doc: dict) -> RunResult:
        check_keys(doc, "", RUN_KEYS)
        _check_nested(doc, "")
        f = Fields(doc, "")
        shape = f.shape("shape")
        if shape is None:
            raise InputError("no shape")
        variants = doc.get("variants")
        if not isinstance(variants, list):
            raise InputError(f"variants: expected a list, got {type(variants).__name__}")
        alpha, beta = f.num("alpha"), f.num("beta")
        return cls(shape=shape, alpha=1.0 if alpha is None else alpha, beta=0.0 if beta is None else beta,
                   device=f.mapping("device") or {}, gpu_spec=f.str("gpu_spec") or f.str("gpu_profile"),
                   seed=f.int("seed", minimum=-MAX_COUNT), timing_method=f.mapping("timing_method") or {},
                   variants=[VariantResult.from_dict(v, f"variants[{i}]") for i, v in enumerate(variants)],
                   created=f.str("created", "") or "", gemmprof_version=f.str("gemmprof_version", "") or "",
                   command=f.str("command", "") or "", notes=f.strs("notes"),
                   elapsed_s=f.num("elapsed_s", minimum=0))


def _cublas_name(dtype: str, c_dtype: str) -> str | None:
    names = {"fp32": "cublas_sgemm", "fp16": "cublas_hgemm", "bf16": "cublas_bf16", "tf32": "cublas_tf32"}
    name = names.get(dtype)
    return f"{name}_c{c_dtype}" if name and c_dtype != "fp32" else name


def cublaslt_fp8_name(dtype: str, c_dtype: str, scales: str = "tensor", fast_accum: bool = False) -> str:
    """cublaslt_e4m3_cbf16, with the scale mode added where it is not per tensor (cublaslt_e4m3_cbf16_1x128), and
    _fastacc for the row that accumulates all of K in the tensor cores."""
    return f"{CUBLASLT_FP8}_{dtype}_c{c_dtype}" + ("" if scales in ("", "tensor") else f"_{scales}") + \
        ("_fastacc" if fast_accum else "")


def load_run(path) -> RunResult:
    return RunResult.from_dict(load_json(path), str(path))
