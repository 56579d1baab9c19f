"""ncu's occupancy figures for a launch beside gemmprof's own calculation (gemmprof.model.occupancy), with differences.

They must agree: the theoretical occupancy and each block limit are compared. The one known, harmless difference is
the shared-memory carveout: gemmprof assumes the smallest carveout that keeps the occupancy, the driver may pick a
larger one (cuBLAS kernels often run in 100 KiB), which raises ncu's shared-memory block limit but not the
occupancy; that is reported as a note, not a disagreement.
"""

from __future__ import annotations

from gemmprof.adapters.ncu.report import Launch
from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.errors import InputError
from gemmprof.model.occupancy import occupancy
from gemmprof.results import cells
from gemmprof.results.profile import OccupancyCheck

LAUNCH_STATS = "Launch Statistics"
OCCUPANCY = "Occupancy"
# (raw metric name, details-page label, details-page section): the raw name wins when both are present.
ACHIEVED = ("sm__warps_active.avg.pct_of_peak_sustained_active", "Achieved Occupancy", OCCUPANCY)
THEORETICAL = ("sm__maximum_warps_per_active_cycle_pct", "Theoretical Occupancy", OCCUPANCY)
BLOCK_LIMITS = {  # gemmprof.model.occupancy's limiter names -> where ncu reports the block limit
    "registers": ("launch__occupancy_limit_registers", "Block Limit Registers", OCCUPANCY),
    "shared memory": ("launch__occupancy_limit_shared_mem", "Block Limit Shared Mem", OCCUPANCY),
    "warps": ("launch__occupancy_limit_warps", "Block Limit Warps", OCCUPANCY),
    "blocks": ("launch__occupancy_limit_blocks", "Block Limit SM", OCCUPANCY),
    "barriers": ("launch__occupancy_limit_barriers", "Block Limit Barriers", OCCUPANCY),
}
BLOCK_SIZE = ("launch__block_size", "Block Size", LAUNCH_STATS)
REGISTERS = ("launch__registers_per_thread", "Registers Per Thread", LAUNCH_STATS)
STATIC_SMEM = ("launch__shared_mem_per_block_static", "Static Shared Memory Per Block", LAUNCH_STATS)
DYNAMIC_SMEM = ("launch__shared_mem_per_block_dynamic", "Dynamic Shared Memory Per Block", LAUNCH_STATS)
SMEM_CONFIG = ("launch__shared_mem_config_size", "Shared Memory Configuration Size", LAUNCH_STATS)
THEORETICAL_TOLERANCE_PCT = 0.05  # ncu prints two decimals


def lookup(launch: Launch, spec: tuple[str, str, str]) -> float | int | None:
    """A figure by its raw metric name, else by its details-page label in its section."""
    raw, label, section = spec
    v = launch.number(raw)
    return v if v is not None else launch.number(label, section=section)


def _count(launch: Launch, spec: tuple[str, str, str], oc: OccupancyCheck) -> int | None:
    """A figure that must be a whole, non-negative count (threads, registers, bytes, blocks); anything else is
    noted and left out, so one damaged cell does not stop the check."""
    v = lookup(launch, spec)
    if v is None:
        return None
    try:
        return cells.count(v)
    except cells.CellError as exc:
        oc.notes.append(f"{spec[1]}: {exc}; left out")
        return None


def check_occupancy(launch: Launch, gpu_spec: GpuSpec | None) -> OccupancyCheck:
    oc = OccupancyCheck()
    threads = _count(launch, BLOCK_SIZE, oc)
    if threads is None and launch.block:
        threads = 1
        for d in launch.block:
            threads *= d
        threads = threads if threads < cells.MAX_COUNT else None
    oc.threads = threads
    for attr, spec in (("registers", REGISTERS), ("static_smem", STATIC_SMEM), ("dynamic_smem", DYNAMIC_SMEM)):
        setattr(oc, attr, _count(launch, spec, oc))
    oc.achieved_pct = lookup(launch, ACHIEVED)
    oc.theoretical_pct_ncu = lookup(launch, THEORETICAL)
    oc.limits_ncu = {k: v for k, spec in BLOCK_LIMITS.items() if (v := _count(launch, spec, oc)) is not None}
    if oc.limits_ncu:
        low = min(oc.limits_ncu.values())
        oc.limiters_ncu = tuple(k for k, v in oc.limits_ncu.items() if v == low)
    if gpu_spec is None or oc.threads is None or oc.registers is None:
        if gpu_spec is not None:
            oc.notes.append("no launch configuration in the CSV (add --section LaunchStats): occupancy not computed")
        return oc
    for spec in (STATIC_SMEM, DYNAMIC_SMEM):
        m = launch.find(spec[0]) or launch.find(spec[1], spec[2])
        if m is not None and not m.exact:
            oc.notes.append(f"{spec[1]} was printed as {m.text} {m.unit}, rounded: rerun ncu with --print-units base")
    try:
        occ = occupancy(gpu_spec, oc.threads, oc.registers, oc.static_smem or 0, oc.dynamic_smem or 0)
    except InputError as exc:
        oc.notes.append(f"gemmprof's occupancy calculation failed: {exc}")
        return oc
    oc.theoretical_pct_gemmprof = occ.theoretical_occupancy * 100
    oc.limits_gemmprof = {"registers": occ.block_limit_registers, "shared memory": occ.block_limit_shared_mem,
                          "warps": occ.block_limit_warps, "blocks": occ.block_limit_sm}
    oc.limiters_gemmprof = occ.limiters
    if oc.theoretical_pct_ncu is not None and abs(oc.theoretical_pct_ncu - oc.theoretical_pct_gemmprof) > \
            THEORETICAL_TOLERANCE_PCT:
        oc.disagreements.append(f"theoretical occupancy: ncu {oc.theoretical_pct_ncu:g}%, "
                                f"gemmprof {oc.theoretical_pct_gemmprof:g}%")
    config = _count(launch, SMEM_CONFIG, oc)
    for key, ours in oc.limits_gemmprof.items():
        theirs = oc.limits_ncu.get(key)
        if theirs is None or theirs == ours:
            continue
        if key == "shared memory" and config and occ.shared_memory_per_block and \
                config // occ.shared_memory_per_block == theirs:
            oc.notes.append(f"shared-memory block limit: ncu {theirs} with the {config / 1024:g} KiB carveout the "
                            f"driver chose, gemmprof {ours} with the smallest sufficient one "
                            f"({occ.carveout_kib:g} KiB); same calculation")
            continue
        oc.disagreements.append(f"block limit {key}: ncu {theirs}, gemmprof {ours}")
    return oc
