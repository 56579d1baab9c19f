"""What limits a kernel, ranked: each limiter's evidence, the time bound it implies, and what would lift it.

Throughput limiters are lower bounds on time from one unit of the SM at its peak rate (per SM and clock, at the
GPU spec's boost clock): the FMA or tensor pipe, the issue slots (4 schedulers, one warp instruction each per
clock), the L1 data pipe (one 128-byte wavefront per clock: shared-memory wavefronts and the cache lines of
global requests share it), L2 and DRAM bandwidth. Overheads add to the time: the last partial wave of blocks
(waves), the epilogue's stores when nothing overlaps them, spills. Latency is what a measurement shows beyond
the largest throughput bound, named by ncu's stall reasons.

A limiter's gain is the speedup that lifting it predicts: for a throughput limiter, its bound over the larger of
what the technique leaves of it and the next bound; for an overhead, the time with it over the time without;
for latency, the measured time over the largest throughput bound at the fraction of peak kernels attain
(ATTAINABLE). Limiters are ranked by gain.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from gemmprof.model.explain_bounds import (  # noqa: F401 - THROUGHPUT and KernelFacts re-exported
    ATTAINABLE,
    BOUNDS,
    THROUGHPUT,
    KernelFacts,
    Machine,
    epilogue,
    latency,
    spills,
    waves,
)
from gemmprof.model.explain_techniques import pick_technique

KINDS = {
    "math_pipe": "FMA / tensor pipe peak",
    "tensor_pipe": "tensor-pipe utilization (HMMA or HGMMA)",
    "issue": "issue slots",
    "l1_wavefronts": "L1 data pipe (shared wavefronts + global lines)",
    "l2": "L2 bandwidth",
    "dram": "DRAM bandwidth",
    "latency": "latency (occupancy)",
    "waves": "wave quantization and tail",
    "epilogue": "epilogue",
    "spills": "register spills",
    "sm_throughput": "SM throughput (its busiest unit)",
    "padding": "math on padding (tiles past the shape)",
}


@dataclass(frozen=True)
class Limiter:
    kind: str  # a key of KINDS
    evidence: str  # the numbers, in words
    source: str  # "model", "sass", "ncu", "timing" (what the evidence rests on)
    bound_s: float | None  # the time this limiter alone forces; for an overhead, the time it adds
    bound_tflops: float | None  # 2*M*N*K over bound_s (None for an overhead)
    gain: float | None  # predicted speedup if lifted
    technique: str | None  # a key of TECHNIQUES the kernel does not apply yet, or one a later rung of its ladder
    # takes further (larger tiles, while registers allow: the lift then starts "further than now")
    rung: str | None  # the rung that teaches it, when the ladder has one
    lift: str  # what would lift it, in words

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Limiter:
        return cls(**{k: d.get(k) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class Explanation:
    kernel: str  # rung id or spec name
    name: str
    dtype: str
    shape: tuple[int, int, int]
    gpu: str
    measured_s: float | None  # the time explained (ncu's duration or gemmprof run's median), None offline
    model_s: float  # the largest throughput bound over ATTAINABLE
    limiters: tuple[Limiter, ...]  # ranked, the top first
    applied: tuple[str, ...]  # techniques the kernel already uses (never recommended)
    needs_measurement: tuple[str, ...]  # limiter kinds left out for want of a measurement
    notes: tuple[str, ...] = field(default_factory=tuple)
    warps_per_sm: int | None = None  # resident warps per SM by theoretical occupancy
    registers: int | None = None

    @property
    def top(self) -> Limiter | None:
        return self.limiters[0] if self.limiters else None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        d["limiters"] = [lim.to_dict() for lim in self.limiters]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Explanation:
        return cls(kernel=d["kernel"], name=d["name"], dtype=d["dtype"], shape=tuple(d["shape"]), gpu=d["gpu"],
                   measured_s=d.get("measured_s"), model_s=d["model_s"],
                   limiters=tuple(Limiter.from_dict(x) for x in d["limiters"]), applied=tuple(d.get("applied", ())),
                   needs_measurement=tuple(d.get("needs_measurement", ())), notes=tuple(d.get("notes", ())),
                   warps_per_sm=d.get("warps_per_sm"), registers=d.get("registers"))


def explain(f: KernelFacts, gpu) -> Explanation:
    """Rank what limits kernel `f` on `gpu` (a GpuSpec)."""
    m = Machine.of(gpu, f.clock_mhz)
    bounds = [b for b in (fn(f, m) for fn in BOUNDS) if b is not None]
    top_s = max(b["bound_s"] for b in bounds)
    model_s = top_s / ATTAINABLE
    ref_s = f.measured_s or model_s
    limiters = []
    for b in bounds:
        others = max((o["bound_s"] for o in bounds if o is not b), default=0.0)
        technique = pick_technique(b["choices"], f.applied, f.kernel, f.registers)[0]
        lifted = b["lifted_s"]
        if isinstance(lifted, dict):
            lifted = lifted.get(technique, lifted[None])
        gain = max(1.0, b["bound_s"] / max(lifted, others, 1e-30))  # below the largest bound, lifting buys nothing
        limiters.append(_limiter(f, b, b["bound_s"], gain))
    lat = latency(f, m, top_s)
    if lat is not None:
        limiters.append(_limiter(f, lat, f.measured_s, max(1.0, f.measured_s / model_s)))
    for o in (waves(f, m, ref_s), epilogue(f, m), spills(f)):
        if o is not None:
            gain = ref_s / (ref_s - o["overhead_s"]) if o["overhead_s"] else None
            limiters.append(_limiter(f, o, o["overhead_s"], gain, ceiling=False))
    limiters.sort(key=lambda lim: (-(lim.gain or 0.0), -(lim.bound_s or 0.0) if lim.kind in THROUGHPUT else 0.0))
    missing = () if f.measured_s is not None else ("latency",)
    notes = () if f.sass else ("no SASS facts (give --results of a run, or install nvdisasm beside nvcc): no issue-slot "
                                     "limiter",)
    if f.ceiling_note:
        notes += (f.ceiling_note,)
    return Explanation(f.kernel, f.name, f.dtype, f.shape, m.name, f.measured_s, model_s, tuple(limiters),
                       f.applied, missing, notes, f.warps_per_sm, f.registers)


def _limiter(f: KernelFacts, d: dict, seconds: float | None, gain: float | None, ceiling: bool = True) -> Limiter:
    """`ceiling`: the seconds bound the whole kernel (a throughput bound, latency's measured time), so 2*M*N*K
    over them is a ceiling; an overhead's seconds are only what it adds."""
    technique, rung, lift = pick_technique(d["choices"], f.applied, f.kernel, f.registers)
    tflops = f.flops / seconds / 1e12 if seconds and ceiling else None
    return Limiter(d["kind"], d["evidence"], d["source"], seconds, tflops, gain, technique, rung, lift)
