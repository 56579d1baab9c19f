"""The profile results file `gemmprof profile --save FILE.json` writes and `gemmprof roofline` reads.

Format (JSON; numbers in base units; null wherever the CSV lacked the metric or the model lacked the shape)::

    {
      "kind": "gemmprof.profile", "schema": 1,
      "gemmprof_version": "0.1.0", "created": "2026-11-22T10:00:00+00:00", "command": "gemmprof profile ...",
      "source": {"csv": "run.csv" | null, "layout": "details" | "raw" | "mixed"},
      "gpu": "NVIDIA H100 80GB HBM3" | null,         # device name from the CSV, if it has one
      "gpu_profile": "h100_sxm" | null,              # profile used for the occupancy calculation
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
        "notes": []
      }]
    }
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from gemmprof import __version__
from gemmprof.adapters.ncu.findings import LaunchFindings
from gemmprof.errors import InputError
from gemmprof.model.traffic import GemmShape
from gemmprof.render.table import json_safe, write_atomic
from gemmprof.results.run import load_json

PROFILE_KIND = "gemmprof.profile"
SCHEMA_VERSION = 1


def _ratio(a, b):
    return a / b if a is not None and b else None


def launch_to_dict(f: LaunchFindings) -> dict:
    oc, sm = f.occupancy, f.smem
    return {
        "id": f.id, "variant": f.variant, "nvtx_range": f.nvtx_range, "kernel_name": f.kernel_name,
        "dtype": f.dtype, "shape": f.shape.to_dict() if f.shape else None,
        "grid": list(f.grid) if f.grid else None, "block": list(f.block) if f.block else None,
        "duration_ns": f.duration_ns, "sol_compute_pct": f.sol_compute_pct, "sol_memory_pct": f.sol_memory_pct,
        "sol_dram_pct": f.sol_dram_pct,
        "dram_read_bytes": f.dram_read_bytes, "dram_write_bytes": f.dram_write_bytes, "dram_bytes": f.dram_bytes,
        "l2_bytes": f.l2_bytes, "l1_bytes": f.l1_bytes,
        "model_min_bytes": f.model_min_bytes, "model_tiled_bytes": f.model_tiled_bytes,
        "dram_vs_min": _ratio(f.dram_bytes, f.model_min_bytes), "dram_vs_tiled": _ratio(f.dram_bytes,
                                                                                         f.model_tiled_bytes),
        "l2_vs_min": _ratio(f.l2_bytes, f.model_min_bytes), "l2_vs_tiled": _ratio(f.l2_bytes, f.model_tiled_bytes),
        "flops_fp32": f.flops_fp32, "flops_tensor": f.flops_tensor, "flops_executed": f.flops_executed,
        "flops_model": f.flops_model, "flops_executed_vs_model": _ratio(f.flops_executed, f.flops_model),
        "ai_dram": f.ai_dram, "ai_l2": f.ai_l2, "achieved_flops_per_s": f.achieved_flops_per_s,
        "occupancy": {
            "threads": oc.threads, "registers": oc.registers, "static_smem": oc.static_smem,
            "dynamic_smem": oc.dynamic_smem, "achieved_pct": oc.achieved_pct,
            "theoretical_pct_ncu": oc.theoretical_pct_ncu, "theoretical_pct_gemmprof": oc.theoretical_pct_gemmprof,
            "limits_ncu": oc.limits_ncu, "limits_gemmprof": oc.limits_gemmprof,
            "limiters_ncu": list(oc.limiters_ncu), "limiters_gemmprof": list(oc.limiters_gemmprof),
            "agrees": oc.agrees, "disagreements": oc.disagreements, "notes": oc.notes},
        "warp_cycles_per_issue": f.warp_cycles_per_issue,
        "stalls": f.stalls, "stalls_sampled": f.stalls_sampled,
        "shared_memory": {
            **{k: getattr(sm, k) for k in ("ld_conflicts", "ld_requests", "ld_wavefronts",
                                            "st_conflicts", "st_requests", "st_wavefronts")},
            "ld_conflicts_per_request": sm.per("ld", "requests"), "ld_conflicts_per_wavefront": sm.per("ld",
                                                                                                       "wavefronts"),
            "st_conflicts_per_request": sm.per("st", "requests"), "st_conflicts_per_wavefront": sm.per("st",
                                                                                                       "wavefronts")},
        "rules": [{"section": r.section, "name": r.name, "type": r.type, "speedup": r.speedup,
                   "speedup_type": r.speedup_type, "summary": r.summary, "description": r.description}
                  for r in f.rules],
        "notes": f.notes,
    }


@dataclass
class ProfileResults:
    launches: list[LaunchFindings]
    gpu: str | None = None
    gpu_profile: str | None = None
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
                "command": self.command, "source": self.source, "gpu": self.gpu, "gpu_profile": self.gpu_profile,
                "shape": shape.to_dict() if shape else None, "notes": self.notes,
                "launches": [launch_to_dict(f) for f in self.launches]}

    def save(self, path) -> None:
        write_atomic(path, json.dumps(json_safe(self.to_dict()), indent=1) + "\n")


def load_profile_results(path) -> dict:
    """Read a profile results file, checking its kind and schema; returns the document."""
    p = Path(path)
    doc = load_json(p)
    if not isinstance(doc, dict) or doc.get("kind") != PROFILE_KIND:
        kind = doc.get("kind") if isinstance(doc, dict) else None
        raise InputError(f"{p}: not a gemmprof profile results file (kind is {kind!r})")
    if doc.get("schema") != SCHEMA_VERSION:
        raise InputError(f"{p}: profile results schema {doc.get('schema')!r} is not supported (expected "
                         f"{SCHEMA_VERSION})")
    if not isinstance(doc.get("launches"), list):
        raise InputError(f"{p}: malformed profile results (no launches list)")
    return doc
