"""The roofline as data (no drawing): a GPU's ceilings, the ridge points, and one point per rung.

Points come from `gemmprof run` results (each verified, timed rung at its traffic model's intensity; cuBLAS, which
has no traffic model, at the minimum-traffic intensity), from `gemmprof profile` results (the intensities ncu
measured at DRAM and L2, matched to the rungs by variant name) or from the model alone (each rung at the attainable
roof min(peak, AI * DRAM bandwidth) of its model intensity: an estimate, not a measurement).
Every height is 2*M*N*K over a time, so every intensity uses 2*M*N*K too: a point's height over its intensity is the
bandwidth it achieved at that level, and a point above a memory roof means that level moved fewer bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.model.traffic import (
    DTYPES,
    GemmShape,
    gemm_flops,
    get_dtype,
    min_arithmetic_intensity,
    tiled_traffic,
)
from gemmprof.results.profile import LaunchFindings

ROOF_NAMES = {"fp32": "fp32 SIMT", "tf32_tensor": "tf32 tensor", "fp16_tensor_fp32_acc": "fp16 tensor",
              "fp16_tensor_fp16_acc": "fp16 tensor (fp16 acc)", "bf16_tensor_fp32_acc": "bf16 tensor",
              "fp8_tensor_fp32_acc": "fp8 tensor", "fp64": "fp64"}
MEMORY_NAMES = {"dram": "DRAM", "l2": "L2", "smem": "shared memory"}
LEVELS = {"model": "model", "min": "min traffic", "dram": "DRAM (ncu)", "l2": "L2 (ncu)"}
DTYPE_ORDER = ("fp32", "tf32", "fp16")


@dataclass(frozen=True)
class Ceiling:
    kind: str  # compute | memory
    key: str  # a peak kind (fp32, tf32_tensor, ...) or a memory level (dram, l2, smem)
    source: str  # datasheet | held (the datasheet's scaled to the clock a run held) | measured
    value: float  # FLOP/s (compute) or bytes/s (memory)
    clock_mhz: float | None = None  # compute: the SM clock the figure is at
    regime: str = ""  # measured on this GPU by `gemmprof ceiling`: burst | sustained ("": the GPU spec's figure)
    origin: str = ""  # such a ceiling's measurement, in words

    @property
    def name(self) -> str:
        base = ROOF_NAMES.get(self.key, self.key) if self.kind == "compute" else MEMORY_NAMES.get(self.key, self.key)
        if self.source == "held":
            return f"{base} at {self.clock_mhz:.0f} MHz held"
        if self.source != "measured":
            return base
        return f"{base} measured ({self.regime})" if self.regime else f"{base} measured"

    @property
    def value_text(self) -> str:
        if self.kind == "compute":
            return f"{self.value / 1e12:.4g} TFLOP/s"
        return f"{self.value / 1e12:.3g} TB/s" if self.value >= 1e12 else f"{self.value / 1e9:.3g} GB/s"

    @property
    def label(self) -> str:
        return f"{self.name} {self.value_text}"

    def at(self, intensity: float) -> float:
        return self.value if self.kind == "compute" else intensity * self.value

    def to_dict(self) -> dict:
        d = {"kind": self.kind, "key": self.key, "source": self.source, "value": self.value, "label": self.label,
             "clock_mhz": self.clock_mhz}
        if self.regime:
            d.update(regime=self.regime, origin=self.origin)
        return d


@dataclass(frozen=True)
class Ridge:
    compute: Ceiling
    memory: Ceiling

    @property
    def intensity(self) -> float:
        return self.compute.value / self.memory.value

    def to_dict(self) -> dict:
        return {"compute": self.compute.key, "memory": self.memory.key, "source": self.compute.source,
                "intensity": self.intensity, "flops_per_s": self.compute.value}


@dataclass(frozen=True)
class Point:
    level: str  # model | min | dram | l2 (see LEVELS)
    intensity: float  # FLOP/byte
    flops_per_s: float


@dataclass
class Rung:
    id: str
    name: str
    dtype: str
    kind: str  # ladder | user | baseline
    peak_kind: str
    points: list[Point] = field(default_factory=list)
    tflop_per_joule: float | None = None  # from the run's energy window, where it had one
    held_mhz: float | None = None  # the SM clock it held while timed

    @property
    def main(self) -> Point:
        return self.points[0]

    def point(self, level: str) -> Point | None:
        return next((p for p in self.points if p.level == level), None)

    @property
    def short(self) -> str:
        """The label on the plot: the rung id, or cuBLAS's routine."""
        if self.kind != "baseline":
            return self.id
        return re.sub(r"^cublaslt_best(\d+)_", r"cuBLASLt best-of-\1 ", self.name).replace("cublas_", "cuBLAS ")


@dataclass
class RooflineData:
    gpu_spec: GpuSpec
    shape: GemmShape
    ceilings: list[Ceiling]
    ridges: list[Ridge]
    rungs: list[Rung]
    excluded: list[str] = field(default_factory=list)  # "name (why)": never plotted
    notes: list[str] = field(default_factory=list)
    estimate: bool = False  # model only: heights are the attainable roof, not measurements
    device: str = ""  # the device the results came from, when known
    source: str = "datasheet"  # which ceilings the table's roof columns use

    def ceiling(self, kind: str, key: str, source: str = "datasheet") -> Ceiling | None:
        return next((c for c in self.ceilings if (c.kind, c.key, c.source) == (kind, key, source)), None)

    def roof(self, rung: Rung, source: str | None = None) -> tuple[Ceiling | None, Ceiling | None]:
        """The compute and DRAM ceilings a rung is held against (measured ones fall back to the datasheet's)."""
        source = source or self.source
        compute = self.ceiling("compute", rung.peak_kind, source) or self.ceiling("compute", rung.peak_kind)
        dram = self.ceiling("memory", "dram", source) or self.ceiling("memory", "dram")
        return compute, dram

    def attainable(self, rung: Rung, intensity: float, source: str | None = None) -> float | None:
        compute, dram = self.roof(rung, source)
        return min(compute.value, dram.at(intensity)) if compute and dram else None

    @property
    def dtypes(self) -> list[str]:
        found = {r.dtype for r in self.rungs}
        return [d for d in DTYPE_ORDER if d in found] + sorted(found - set(DTYPE_ORDER))

    @property
    def gpu(self) -> str:
        if self.device and self.device not in self.gpu_spec.cuda_names and self.device != self.gpu_spec.name:
            return f"{self.gpu_spec.name} ceilings, run on {self.device}"
        return self.gpu_spec.name

    @property
    def title(self) -> str:
        what = "model estimate, no measurement" if self.estimate else "measured"
        return f"Roofline: {self.gpu}, {' + '.join(self.dtypes)}, {self.shape.label} ({what})"


def peak_kind_for(dtype: str, given: str | None, gpu_spec: GpuSpec) -> str:
    """The dense peak a rung of `dtype` is held against (never a *_sparse rate)."""
    if given and not given.endswith("_sparse") and given in gpu_spec.peak_tflops:
        return given
    return DTYPES[dtype].peak_kind if dtype in DTYPES else "fp32"


def held_clocks(variants) -> dict[str, float]:
    """The SM clock each peak kind's rows held while timed (the median over verified rows whose clocks were sampled):
    the clock their compute roof is drawn at beside the datasheet's."""
    import statistics

    by_kind: dict[str, list[float]] = {}
    for v in variants:
        c, m = v.clocks, v.model
        if v.passed and c is not None and c.samples and c.held_mhz and m is not None and m.peak_kind:
            by_kind.setdefault(m.peak_kind, []).append(c.held_mhz)
    return {k: statistics.median(v) for k, v in by_kind.items()}


def build(gpu_spec: GpuSpec, shape: GemmShape, rungs: list[Rung], *, measured: bool = True,
          source: str = "datasheet", estimate: bool = False, device: str = "", excluded=(), notes=(),
          held: dict[str, float] | None = None, regime: str | None = None) -> RooflineData:
    """Ceilings for the compute kinds the rungs use (fp32 SIMT always), the memory levels the GPU spec gives. Compute
    roofs: the datasheet's (at the clock it assumes), that peak scaled to the clock the run held (`held`, by peak
    kind), and with `measured` the GPU spec's measured ceilings, or this GPU's where `gemmprof ceiling` stored them
    (in `regime`, the timing regime of the figures plotted; None: sustained), which take their place."""
    notes, rungs = list(notes), sorted(rungs, key=_order)
    kinds = ["fp32"] + [k for k in dict.fromkeys(r.peak_kind for r in rungs) if k != "fp32"]
    ceilings = []
    for k in kinds:
        if k in gpu_spec.peak_tflops:
            ceilings.append(Ceiling("compute", k, "datasheet", gpu_spec.peak_flops(k), gpu_spec.peak_clock(k)))
            if held and held.get(k):
                ceilings.append(Ceiling("compute", k, "held", gpu_spec.peak_flops_at(k, held[k]), held[k]))
        else:
            who = ", ".join(r.short for r in rungs if r.peak_kind == k)
            notes.append(f"{gpu_spec.name} gives no peak_tflops.{k}: {who} have no compute roof")
        if measured and gpu_spec.measured.get(f"{k}_tflops"):
            ceilings.append(Ceiling("compute", k, "measured", gpu_spec.measured[f"{k}_tflops"] * 1e12))
    levels = {"dram": gpu_spec.dram_bandwidth_gbs, "l2": gpu_spec.l2_bandwidth_gbs, "smem": gpu_spec.smem_bandwidth_gbs}
    for level, gbs in levels.items():
        if gbs:
            ceilings.append(Ceiling("memory", level, "datasheet", gbs * 1e9))
        if measured and gpu_spec.measured.get(f"{level}_bandwidth_gbs"):
            ceilings.append(Ceiling("memory", level, "measured", gpu_spec.measured[f"{level}_bandwidth_gbs"] * 1e9))
    if measured:
        stored, stored_notes = stored_roofs(gpu_spec, kinds, device, regime)
        mine = {(c.kind, c.key) for c in stored}
        ceilings = [c for c in ceilings if c.source != "measured" or (c.kind, c.key) not in mine] + stored
        notes += stored_notes
    sheet = [c for c in ceilings if c.kind == "compute" and c.source == "datasheet"]
    if sheet:
        notes.append("datasheet compute roofs at the SM clock each assumes: " + ", ".join(
            f"{c.name} {c.clock_mhz:.0f} MHz" for c in sheet)
            + ("; dash-dot: the same peaks at the clock the run held" if held else ""))
    ridges = []
    for c in (c for c in ceilings if c.kind == "compute" and c.source != "held"):
        mems = [m for m in ceilings if m.kind == "memory" and m.source == c.source]
        ridges += [Ridge(c, m) for m in (mems or [m for m in ceilings if m.kind == "memory" and
                                                  m.source == "datasheet"])]
    if source == "measured" and not any(c.source == "measured" for c in ceilings):
        notes.append(f"--ceiling measured: {gpu_spec.name} has no measured ceilings; the table uses the datasheet's")
    return RooflineData(gpu_spec, shape, ceilings, ridges, rungs, list(excluded), notes, estimate, device, source)


def stored_roofs(gpu_spec: GpuSpec, kinds: list[str], device: str = "", regime: str | None = None
                 ) -> tuple[list[Ceiling], list[str]]:
    """This GPU's ceilings stored by `gemmprof ceiling` (catalog/ceilings.py) for the compute kinds drawn and for
    DRAM, in `regime` (None: sustained): measured roofs, the real 100% lines, and a note saying which were used.
    Looked up by the device the results came from, else by the GPU spec's CUDA names. A damaged store is a note."""
    from gemmprof.catalog import ceilings as store

    regime = regime or "sustained"
    who = device or gpu_spec
    try:
        found = [(k, store.measured(who, k, regime)) for k in [*kinds, "dram"]]
        others = {c.regime for c in store.stored(who)} - {regime}
    except store.CeilingStoreError as exc:
        return [], [f"measured ceilings not used: {exc}"]
    roofs = [Ceiling(c.kind, k if c.kind == "compute" else "dram", "measured", c.per_s, regime=c.regime, origin=c.describe())
             for k, c in found if c is not None]
    if roofs:
        on = next(c.device for _, c in found if c is not None)
        return roofs, [f"measured ceilings ({regime}), by gemmprof ceiling on {on}: "
                       + "; ".join(c.origin for c in roofs)]
    if others:
        return [], [f"this GPU has measured ceilings only for the {', '.join(sorted(others))} regime; the figures "
                    f"here are {regime}: gemmprof ceiling --regime {regime} measures them"]
    return [], []


def rungs_from_variants(variants, shape: GemmShape, gpu_spec: GpuSpec, *, beta: float = 0.0,
                        dtype: str | None = None, baselines: bool = True) -> tuple[list[Rung], list[str]]:
    """One rung per verified, timed row of run results; the rest are named in the second list (not plotted)."""
    rungs, excluded = [], []
    for v in variants:
        if (dtype and v.dtype != dtype) or (v.kind == "baseline" and not baselines):
            continue
        who = v.name if v.kind == "baseline" else f"{v.id} {v.name}"
        if not v.passed:
            excluded.append(f"{who} ({v.status})")
            continue
        if not v.achieved_flops:
            excluded.append(f"{who} (not timed)")
            continue
        m = v.model
        if m and m.model_arithmetic_intensity and v.kind != "baseline":
            point = Point("model", m.model_arithmetic_intensity, v.achieved_flops)
        else:
            point = Point("min", (m.min_arithmetic_intensity if m else None) or min_intensity(shape, v.dtype, beta),
                          v.achieved_flops)
        rungs.append(Rung(v.id, v.name, v.dtype, v.kind, peak_kind_for(v.dtype, m.peak_kind if m else None, gpu_spec),
                          [point], v.tflop_per_joule, v.clocks.held_mhz if v.clocks and v.clocks.samples else None))
    return rungs, excluded


def min_intensity(shape: GemmShape, dtype: str, beta: float = 0.0) -> float:
    return min_arithmetic_intensity(shape, get_dtype(dtype), beta)


def model_intensity(spec, shape: GemmShape, beta: float = 0.0, dtype: str | None = None, sms: int | None = None
                    ) -> float:
    """A ladder spec's traffic-model intensity at `shape` (SpecError when its constraints reject the shape), for
    `dtype` when the spec's source also builds for it (h4-h13 for bf16), on a GPU of `sms` multiprocessors (h12's
    tile width is fitted to them). A planning entry's is the model of the rung it chooses there."""
    from gemmprof.catalog.binding import bind
    from gemmprof.catalog.plan import resolve
    from gemmprof.errors import SpecError

    kernel = resolve(bind(spec, dtype=dtype if dtype in spec.dtypes else None), shape, sms)
    if not kernel.spec.traffic:
        raise SpecError(f"{spec.name}: no traffic model (its spec has no traffic: block)")
    kernel.check_shape(shape)
    return tiled_traffic(shape, get_dtype(kernel.run_dtype), kernel.tiles(shape, sms), beta).arithmetic_intensity


def rungs_from_model(specs, shape: GemmShape, gpu_spec: GpuSpec, *, beta: float = 0.0, source: str = "datasheet",
                     dtype: str | None = None) -> tuple[list[Rung], list[str]]:
    """Each rung at the attainable roof of its model intensity (an estimate); rejected shapes are named. A rung
    whose source also builds for `dtype` (h4-h13 for bf16) is placed as that build, named as its run names it."""
    from gemmprof.errors import SpecError

    rungs, excluded = [], []
    dram = (gpu_spec.measured.get("dram_bandwidth_gbs") if source == "measured" else None) or gpu_spec.dram_bandwidth_gbs
    for s in specs:
        run = dtype if dtype in s.dtypes else s.dtype
        name = s.name if run == s.dtype else f"{s.name}_{run}"  # binding.BoundKernel.variant_name
        try:
            ai = model_intensity(s, shape, beta, run, gpu_spec.sm_count)
        except SpecError as exc:
            excluded.append(f"{s.id} {name} (rejected: {str(exc).split(': ', 2)[-1].split(' (')[0]})")
            continue
        kind = peak_kind_for(run, None, gpu_spec)
        if kind not in gpu_spec.peak_tflops:
            excluded.append(f"{s.id} {name} ({gpu_spec.name} gives no peak_tflops.{kind})")
            continue
        peak = (gpu_spec.measured.get(f"{kind}_tflops") if source == "measured" else None) or gpu_spec.peak_tflops[kind]
        rungs.append(Rung(s.id, name, run, "ladder", kind, [Point("model", ai, min(peak * 1e12, ai * dram * 1e9))]))
    return rungs, excluded


def attach_profile(rungs: list[Rung], launches: list[LaunchFindings], shape: GemmShape, gpu_spec: GpuSpec, *,
                   beta: float = 0.0, dtype: str | None = None, baselines: bool = True, origin: str = "") -> list[str]:
    """Add ncu's DRAM and L2 intensities (2*M*N*K over the bytes it counted) to the rungs, matched by variant name.

    A launch with no rung of its name becomes one (ladder rungs get their model point at ncu's time). Launches of
    another or an unknown shape are skipped. Returns notes.
    """
    notes, skipped, off = [], [], []
    by_name = {r.name: r for r in rungs}
    seen: set[str] = set()
    flops = gemm_flops(shape)
    for launch in launches:
        name = launch.variant or launch.kernel_name
        if launch.shape != shape:
            skipped.append(name)
            continue
        if (dtype and launch.dtype != dtype) or name in seen:
            continue
        seen.add(name)
        ach = launch.achieved_flops_per_s
        nbytes = {"dram": launch.dram_bytes, "l2": launch.l2_bytes}
        points = [Point(lvl, flops / b, ach) for lvl, b in nbytes.items() if b]
        if not ach or not points:
            notes.append(f"{origin}: {name} has no duration or no DRAM/L2 bytes: not plotted")
            continue
        rung = by_name.get(name) or _rung_for_launch(name, launch.dtype, shape, gpu_spec, beta, ach)
        if rung is None or (rung.kind == "baseline" and not baselines):
            continue
        if name not in by_name:
            rungs.append(rung)
            by_name[name] = rung
        rung.points += points
        executed = launch.flops_executed
        if executed and abs(executed / flops - 1) > 0.1:
            off.append(f"{name} ({executed / flops:.2g}x)")
    if skipped:
        notes.append(f"{origin}: not plotted, profiled at another (or an unknown) shape than {shape.label}: "
                     + ", ".join(dict.fromkeys(skipped)))
    if off:
        notes.append("ncu's executed FLOP count differs from 2*M*N*K for " + ", ".join(off) + " (e.g. no tensor-pipe "
                     "metric in the capture): the measured intensities here use 2*M*N*K, not the file's ai_dram/ai_l2")
    return notes


def _rung_for_launch(name, launch_dtype, shape, gpu_spec, beta, ach) -> Rung | None:
    from gemmprof.catalog.spec import ladder
    from gemmprof.errors import SpecError

    spec, dtype = next(((s, s.dtype) for s in ladder() if s.answers_to(name)), (None, launch_dtype))
    if spec is None:  # a rung built for another of its dtypes runs as NAME_DTYPE (persistent_bf16)
        spec, dtype = next(((s, d) for s in ladder() for d in s.dtypes if name == f"{s.name}_{d}"), (None, dtype))
    if dtype not in DTYPES:
        return None
    kind = "baseline" if name.startswith("cublas_") else ("ladder" if spec else "user")
    rung = Rung(spec.id if spec else "-", name, dtype, kind, peak_kind_for(dtype, None, gpu_spec))
    if kind == "baseline":
        rung.points.append(Point("min", min_intensity(shape, dtype, beta), ach))
    elif spec:
        try:
            rung.points.append(Point("model", model_intensity(spec, shape, beta, dtype, gpu_spec.sm_count), ach))
        except SpecError:
            pass
    return rung


def _order(r: Rung):
    m = re.match(r"^(h?)(\d{1,9})([a-z]?)$", r.id)  # a rung's number; a 5000-digit id of a damaged file is no rung
    dt = DTYPE_ORDER.index(r.dtype) if r.dtype in DTYPE_ORDER else 9
    if r.kind == "baseline":
        return (3, dt, 0, r.name)
    return (1 if m[1] else 0, int(m[2]), m[3], r.name) if m else (2, dt, 0, r.name)

