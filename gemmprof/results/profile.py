"""The profile results file `gemmprof profile --save FILE.json` writes and `gemmprof roofline` reads.

Format (JSON; numbers in base units; null wherever the CSV lacked the metric or the model lacked the shape)::

    {
      "kind": "gemmprof.profile", "schema": 1,
      "gemmprof_version": "0.1.0", "created": "2026-11-22T10:00:00+00:00", "command": "gemmprof profile ...",
      "source": {"csv": "run.csv" | null, "layout": "details" | "raw" | "mixed"},
      "gpu": "NVIDIA H100 80GB HBM3" | null,         # device name from the CSV, if it has one
      "gpu_spec": "h100_sxm" | null,                 # GPU spec sheet of the occupancy calculation
                                                     # (files before 0.2 call it "gpu_profile")
      "shape": {"M": 4096, "N": 4096, "K": 4096} | null,   # shared by all launches, else null
      "notes": ["..."],
      "launches": [{
        "id": 0,                                     # ncu's launch ID
        "variant": "naive",                          # from the `gemmprof NAME MxNxK` NVTX range, else the kernel name
        "nvtx_range": "gemmprof naive 4096x4096x4096" | null,
        "kernel_name": "sgemm_naive", "dtype": "fp32" | null,
        "shape": {"M":..., "N":..., "K":...} | null, "grid": [x, y, z], "block": [x, y, z],
        "duration_ns": 362304,
        "sol_compute_pct": 71.08, "sol_memory_pct": 71.11, "sol_dram_pct": 0.69,
        "dram_read_bytes": 8394496, "dram_write_bytes": 256, "dram_bytes": 8394752,
        "l2_bytes": ..., "l1_bytes": ...,
        "model_min_bytes": ...,                      # gemmprof.model.traffic.min_bytes (A, B read once, C written once)
        "model_tiled_bytes": ... | null,             # gemmprof.model.traffic.tiled_traffic, for ladder rungs
        "dram_vs_min": ..., "dram_vs_tiled": ..., "l2_vs_min": ..., "l2_vs_tiled": ...,   # measured / model
        "flops_fp32": 2*FFMA+FADD+FMUL, "flops_tensor": tensor-path ops, "flops_executed": their sum,
        "flops_model": 2*M*N*K, "flops_executed_vs_model": ...,
        "ai_dram": FLOPs / dram_bytes, "ai_l2": FLOPs / l2_bytes,   # FLOPs: executed if measured, else model
        "achieved_flops_per_s": 2*M*N*K / duration (executed FLOPs when the shape is unknown),
        "occupancy": {"threads": 1024, "registers": 32, "static_smem": 0, "dynamic_smem": 0,
                      "achieved_pct": 95.65, "theoretical_pct_ncu": 100, "theoretical_pct_gemmprof": 100,
                      "limits_ncu": {"registers": 2, "shared memory": 8, "warps": 2, "blocks": 32, "barriers": 32},
                      "limits_gemmprof": {"registers": 2, "shared memory": 8, "warps": 2, "blocks": 32},
                      "limiters_ncu": ["registers", "warps"], "limiters_gemmprof": ["warps", "registers"],
                      "agrees": true | false | null, "disagreements": [], "notes": []},
        "warp_cycles_per_issue": 36.12,
        "stalls": {"long_scoreboard": 0.40, ...},    # share of stall cycles ("selected" excluded), largest first
        "stalls_sampled": {...},                     # the same from PC sampling, when collected
        "shared_memory": {"ld_conflicts": ..., "ld_requests": ..., "ld_wavefronts": ...,
                          "ld_conflicts_per_request": ..., "ld_conflicts_per_wavefront": ...,
                          "st_conflicts": ..., "st_requests": ..., "st_wavefronts": ...,
                          "st_conflicts_per_request": ..., "st_conflicts_per_wavefront": ...},
        "rules": [{"section": "WarpStateStats", "name": "CPIStall", "type": "OPT", "speedup": 39.89,
                   "speedup_type": "local", "summary": "one line", "description": "ncu's full text"}],
        "notes": [],
        "accesses": {"check": "ok", "comparisons": [{"quantity": "smem_ld_conflicts_per_request",
                     "predicted": 2.0, "ncu": 2.0, "check": "ok", "why": null}]} | null   # results/access_check.py
      }]
    }
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field

from gemmprof._version import __version__
from gemmprof.errors import InputError
from gemmprof.results.access_check import AccessCheck
from gemmprof.results.fields import FieldReader, check_keys
from gemmprof.results.files import json_safe, load_json, write_atomic
from gemmprof.results.shape import GemmShape

PROFILE_KIND = "gemmprof.profile"
SCHEMA_VERSION = 1


def _ratio(a, b):
    return a / b if a is not None and b else None


@dataclass
class OccupancyCheck:
    threads: int | None = None
    registers: int | None = None
    static_smem: int | None = None
    dynamic_smem: int | None = None
    achieved_pct: float | None = None
    theoretical_pct_ncu: float | None = None
    theoretical_pct_gemmprof: float | None = None
    limits_ncu: dict[str, int] = field(default_factory=dict)
    limits_gemmprof: dict[str, int] = field(default_factory=dict)
    limiters_ncu: tuple[str, ...] = ()
    limiters_gemmprof: tuple[str, ...] = ()
    disagreements: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool | None:
        """True/False once both sides were computed; None when either is missing."""
        if self.theoretical_pct_ncu is None or self.theoretical_pct_gemmprof is None:
            return None
        return not self.disagreements




@dataclass
class SharedMemory:
    ld_conflicts: float | None = None
    st_conflicts: float | None = None
    ld_wavefronts: float | None = None
    st_wavefronts: float | None = None
    ld_requests: float | None = None
    st_requests: float | None = None
    # ncu's SASS counters: wavefronts as each instruction's addresses need them (ldmatrix apart), no hardware extras
    ld_wavefronts_addressed: float | None = None
    ldsm_wavefronts_addressed: float | None = None
    st_wavefronts_addressed: float | None = None

    def per(self, op: str, denominator: str) -> float | None:
        c, d = getattr(self, f"{op}_conflicts"), getattr(self, f"{op}_{denominator}")
        return c / d if c is not None and d else None


@dataclass(frozen=True)
class RuleAdvice:
    section: str
    name: str
    type: str
    summary: str  # one line
    speedup: float | None
    speedup_type: str
    description: str


@dataclass
class LaunchFindings:
    id: int
    variant: str
    kernel_name: str
    nvtx_range: str | None
    dtype: str | None
    shape: GemmShape | None
    grid: tuple[int, ...] | None
    block: tuple[int, ...] | None
    duration_ns: float | None = None
    sol_compute_pct: float | None = None
    sol_memory_pct: float | None = None
    sol_dram_pct: float | None = None
    occupancy: OccupancyCheck = field(default_factory=OccupancyCheck)
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> share of stall cycles, largest first
    stalls_sampled: dict[str, float] = field(default_factory=dict)  # from PC sampling, same convention
    warp_cycles_per_issue: float | None = None
    smem: SharedMemory = field(default_factory=SharedMemory)
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    dram_bytes: float | None = None
    l2_bytes: float | None = None
    l1_bytes: float | None = None
    model_min_bytes: int | None = None
    model_tiled_bytes: int | None = None
    flops_fp32: float | None = None  # 2*FFMA + FADD + FMUL, thread-level
    flops_tensor: float | None = None
    tensor_pipe_pct: float | None = None  # the tensor pipe's busy cycles, % of peak (HMMA and HGMMA)
    flops_model: int | None = None  # 2*M*N*K
    rules: list[RuleAdvice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    accesses: AccessCheck | None = None  # the access model beside ncu (ladder rungs with an accesses: block)

    @property
    def flops_executed(self) -> float | None:
        parts = [x for x in (self.flops_fp32, self.flops_tensor) if x is not None]
        return sum(parts) if parts else None

    @property
    def flops(self) -> float | None:
        """The FLOPs intensities are computed with: executed when measured, else the model's."""
        return self.flops_executed if self.flops_executed else self.flops_model

    def ratio(self, a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    @property
    def ai_dram(self) -> float | None:
        return self.ratio(self.flops, self.dram_bytes)

    @property
    def ai_l2(self) -> float | None:
        return self.ratio(self.flops, self.l2_bytes)

    @property
    def achieved_flops_per_s(self) -> float | None:
        """2*M*N*K over the duration (gemmprof's convention for every FLOP/s figure), else executed FLOPs."""
        seconds = self.duration_ns * 1e-9 if self.duration_ns else None
        return self.ratio(self.flops_model or self.flops_executed, seconds)


def _occupancy_to_dict(oc: OccupancyCheck) -> dict:
    return {"threads": oc.threads, "registers": oc.registers, "static_smem": oc.static_smem,
            "dynamic_smem": oc.dynamic_smem, "achieved_pct": oc.achieved_pct,
            "theoretical_pct_ncu": oc.theoretical_pct_ncu, "theoretical_pct_gemmprof": oc.theoretical_pct_gemmprof,
            "limits_ncu": oc.limits_ncu, "limits_gemmprof": oc.limits_gemmprof,
            "limiters_ncu": list(oc.limiters_ncu), "limiters_gemmprof": list(oc.limiters_gemmprof),
            "agrees": oc.agrees, "disagreements": oc.disagreements, "notes": oc.notes}


def _occupancy_from(r: FieldReader) -> OccupancyCheck:
    return OccupancyCheck(
        threads=r.int("threads"), registers=r.int("registers"), static_smem=r.int("static_smem"),
        dynamic_smem=r.int("dynamic_smem"), achieved_pct=r.num("achieved_pct"),
        theoretical_pct_ncu=r.num("theoretical_pct_ncu"), theoretical_pct_gemmprof=r.num("theoretical_pct_gemmprof"),
        limits_ncu=r.counts("limits_ncu"), limits_gemmprof=r.counts("limits_gemmprof"),
        limiters_ncu=tuple(r.strs("limiters_ncu")), limiters_gemmprof=tuple(r.strs("limiters_gemmprof")),
        disagreements=r.strs("disagreements"), notes=r.strs("notes"))


_SMEM_KEYS = ("ld_conflicts", "ld_requests", "ld_wavefronts", "st_conflicts", "st_requests", "st_wavefronts",
              "ld_wavefronts_addressed", "ldsm_wavefronts_addressed", "st_wavefronts_addressed")
_PLAIN = ("duration_ns", "sol_compute_pct", "sol_memory_pct", "sol_dram_pct", "dram_read_bytes", "dram_write_bytes",
          "dram_bytes", "l2_bytes", "l1_bytes", "warp_cycles_per_issue", "flops_fp32", "flops_tensor",
          "tensor_pipe_pct")
_INTS = ("model_min_bytes", "model_tiled_bytes", "flops_model")


def launch_to_dict(f: LaunchFindings) -> dict:
    sm = f.smem
    return {
        "id": f.id, "variant": f.variant, "nvtx_range": f.nvtx_range, "kernel_name": f.kernel_name,
        "dtype": f.dtype, "shape": f.shape.to_dict() if f.shape else None,
        "grid": list(f.grid) if f.grid else None, "block": list(f.block) if f.block else None,
        **{k: getattr(f, k) for k in _PLAIN + _INTS},
        "dram_vs_min": _ratio(f.dram_bytes, f.model_min_bytes), "dram_vs_tiled": _ratio(f.dram_bytes,
                                                                                         f.model_tiled_bytes),
        "l2_vs_min": _ratio(f.l2_bytes, f.model_min_bytes), "l2_vs_tiled": _ratio(f.l2_bytes, f.model_tiled_bytes),
        "flops_executed": f.flops_executed, "flops_executed_vs_model": _ratio(f.flops_executed, f.flops_model),
        "ai_dram": f.ai_dram, "ai_l2": f.ai_l2, "achieved_flops_per_s": f.achieved_flops_per_s,
        "occupancy": _occupancy_to_dict(f.occupancy),
        "stalls": f.stalls, "stalls_sampled": f.stalls_sampled,
        "shared_memory": {
            **{k: getattr(sm, k) for k in _SMEM_KEYS},
            **{f"{op}_conflicts_per_{den[:-1]}": sm.per(op, den) for op in ("ld", "st")
               for den in ("requests", "wavefronts")}},
        "rules": [{"section": r.section, "name": r.name, "type": r.type, "speedup": r.speedup,
                   "speedup_type": r.speedup_type, "summary": r.summary, "description": r.description}
                  for r in f.rules],
        "notes": f.notes,
        "accesses": f.accesses.to_dict() if f.accesses else None,
    }


# every key of a profile results file and of its launches (gpu_profile: the older name of gpu_spec); anything else
# is refused, naming it
PROFILE_KEYS = frozenset(("kind", "schema", "gemmprof_version", "created", "command", "source", "gpu", "gpu_spec",
                          "gpu_profile", "shape", "notes", "launches"))
LAUNCH_KEYS = frozenset((
    "id", "variant", "nvtx_range", "kernel_name", "dtype", "shape", "grid", "block", "duration_ns", "sol_compute_pct",
    "sol_memory_pct", "sol_dram_pct", "dram_read_bytes", "dram_write_bytes", "dram_bytes", "l2_bytes", "l1_bytes",
    "warp_cycles_per_issue", "flops_fp32", "flops_tensor", "tensor_pipe_pct", "model_min_bytes", "model_tiled_bytes",
    "flops_model", "dram_vs_min", "dram_vs_tiled", "l2_vs_min", "l2_vs_tiled", "flops_executed",
    "flops_executed_vs_model", "ai_dram", "ai_l2", "achieved_flops_per_s", "occupancy", "stalls", "stalls_sampled",
    "shared_memory", "rules", "notes", "accesses"))


def launch_from_dict(d, where: str = "launch") -> LaunchFindings:
    """The inverse of launch_to_dict: derived figures (ratios, intensities) are recomputed, not read."""
    r = FieldReader(d, where)
    check_keys(d, where, LAUNCH_KEYS)
    ident = r.int("id")
    f = LaunchFindings(id=ident if ident is not None else 0, variant=r.str("variant") or r.str("kernel_name") or "?",
                       kernel_name=r.str("kernel_name") or "", nvtx_range=r.str("nvtx_range"), dtype=r.str("dtype"),
                       shape=r.shape("shape"), grid=r.dims("grid"), block=r.dims("block"))
    for k in _PLAIN:  # durations, percentages, bytes, cycles, FLOPs: none is negative
        setattr(f, k, r.num(k, minimum=0))
    for k in _INTS:
        setattr(f, k, r.int(k))
    f.occupancy = _occupancy_from(r.sub("occupancy"))
    f.stalls, f.stalls_sampled = r.numbers("stalls"), r.numbers("stalls_sampled")
    sm = r.sub("shared_memory")
    f.smem = SharedMemory(**{k: sm.num(k) for k in _SMEM_KEYS})
    rules = d.get("rules") or []
    if not isinstance(rules, list):
        raise InputError(f"{where}.rules: expected a list")
    for i, item in enumerate(rules):
        rr = FieldReader(item, f"{where}.rules[{i}]")
        f.rules.append(RuleAdvice(rr.str("section", ""), rr.str("name", ""), rr.str("type", ""),
                                  rr.str("summary", ""), rr.num("speedup"), rr.str("speedup_type", ""),
                                  rr.str("description", "")))
    f.notes = r.strs("notes")
    f.accesses = AccessCheck.from_dict(d.get("accesses"), f"{where}.accesses")
    return f


@dataclass
class ProfileResults:
    launches: list[LaunchFindings]
    gpu: str | None = None
    gpu_spec: str | None = None
    shape: GemmShape | None = None
    source: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    command: str = ""
    created: str = ""

    @property
    def common_shape(self) -> GemmShape | None:
        shapes = {f.shape for f in self.launches}
        if len(shapes) == 1:
            return shapes.pop()
        return self.shape if not shapes else None

    def to_dict(self) -> dict:
        shape = self.common_shape
        return {"kind": PROFILE_KIND, "schema": SCHEMA_VERSION, "gemmprof_version": __version__,
                "created": self.created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "command": self.command, "source": self.source, "gpu": self.gpu, "gpu_spec": self.gpu_spec,
                "shape": shape.to_dict() if shape else None, "notes": self.notes,
                "launches": [launch_to_dict(f) for f in self.launches]}

    def save(self, path) -> None:
        write_atomic(path, json.dumps(json_safe(self.to_dict()), indent=1) + "\n")

    @classmethod
    def from_dict(cls, doc, source: str = "profile results") -> ProfileResults:
        if not isinstance(doc, dict) or doc.get("kind") != PROFILE_KIND:
            kind = doc.get("kind") if isinstance(doc, dict) else None
            raise InputError(f"{source}: not a gemmprof profile results file (kind is {kind!r})")
        if doc.get("schema") != SCHEMA_VERSION:
            raise InputError(f"{source}: profile results schema {doc.get('schema')!r} is not supported (expected "
                             f"{SCHEMA_VERSION})")
        if not isinstance(doc.get("launches"), list):
            raise InputError(f"{source}: malformed profile results (no launches list)")
        check_keys(doc, source, PROFILE_KEYS)
        r = FieldReader(doc, source)
        src = doc.get("source") or {}
        if not isinstance(src, dict):
            raise InputError(f"{source}.source: expected an object")
        return cls([launch_from_dict(x, f"{source}: launches[{i}]") for i, x in enumerate(doc["launches"])],
                   gpu=r.str("gpu"), gpu_spec=r.str("gpu_spec") or r.str("gpu_profile"), shape=r.shape("shape"), source=dict(src),
                   notes=r.strs("notes"), command=r.str("command", "") or "", created=r.str("created", "") or "")

    @classmethod
    def load(cls, path) -> ProfileResults:
        return cls.from_dict(load_json(path), str(path))
