"""Theoretical occupancy, worked out as CUDA's occupancy calculator and Nsight Compute do (seed 004, section 3.1).

Registers are allocated per warp in units of `register_allocation_unit`, and each of the SM's sub-partitions holds
its own share of the register file. Shared memory per block includes the driver's per-block reservation and is
rounded to the allocation unit; the driver picks the smallest carveout that keeps the occupancy the other limits
allow, which is the "Shared Memory Configuration Size" Nsight Compute reports.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.errors import InputError

WARP_SIZE = 32


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    threads_per_block: int
    registers_per_thread: int
    shared_memory_per_block: int  # bytes the block occupies: static + dynamic + reservation, rounded
    block_limit_warps: int
    block_limit_registers: int
    block_limit_shared_mem: int  # with the carveout the driver picks
    block_limit_shared_mem_max_carveout: int  # with the largest carveout (the documents' upper limit)
    block_limit_sm: int
    carveout_kib: float  # the shared-memory configuration the driver would pick
    active_blocks: int
    active_warps: int
    max_warps: int
    limiters: tuple[str, ...]

    @property
    def theoretical_occupancy(self) -> float:
        """Active warps over the SM's maximum, as a fraction."""
        return self.active_warps / self.max_warps

    def to_dict(self):
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["theoretical_occupancy"] = self.theoretical_occupancy
        return d


def occupancy(gpu_spec: GpuSpec, threads_per_block: int, registers_per_thread: int,
              static_smem: int = 0, dynamic_smem: int = 0) -> Occupancy:
    lim = gpu_spec.sm_limits
    if not 1 <= threads_per_block <= lim.max_threads_per_block:
        raise InputError(f"--threads: {threads_per_block} is outside 1..{lim.max_threads_per_block} on {gpu_spec.name}")
    if not 0 <= registers_per_thread <= lim.max_registers_per_thread:
        raise InputError(f"--registers: {registers_per_thread} is outside 0..{lim.max_registers_per_thread}")
    if static_smem < 0 or dynamic_smem < 0:
        raise InputError("--static-smem/--dynamic-smem: shared memory cannot be negative")
    optin = int(lim.shared_memory_per_block_optin_kib * 1024)
    if static_smem + dynamic_smem > optin:
        raise InputError(f"--static-smem/--dynamic-smem: {static_smem + dynamic_smem} bytes per block exceed "
                         f"{gpu_spec.name}'s opt-in limit of {optin} bytes")

    warps = -(-threads_per_block // WARP_SIZE)
    by_warps = lim.max_warps // warps

    if registers_per_thread == 0:
        by_regs = lim.max_blocks
    else:
        regs_per_warp = _round_up(registers_per_thread * WARP_SIZE, lim.register_allocation_unit)
        parts = lim.warp_allocation_granularity
        assumed = regs_per_warp * _round_up(warps, parts)
        if assumed > lim.max_registers_per_block or regs_per_warp * warps > lim.max_registers_per_block:
            by_regs = 0
        else:
            warps_per_part = (lim.registers // parts) // regs_per_warp
            by_regs = (warps_per_part * parts) // warps

    by_sm = lim.max_blocks
    reserved = int(lim.reserved_shared_memory_per_block_kib * 1024)
    smem_block = _round_up(static_smem + dynamic_smem + reserved, lim.shared_memory_allocation_unit)
    carveouts = sorted(int(c * 1024) for c in lim.shared_memory_carveouts_kib)
    largest = max(carveouts[-1], int(lim.shared_memory_kib * 1024))
    by_smem_max = largest // smem_block if smem_block else lim.max_blocks
    others = min(by_warps, by_regs, by_sm)
    needed = others * smem_block
    carveout = next((c for c in carveouts if c >= needed and (c >= smem_block or others == 0)), largest)
    by_smem = carveout // smem_block if smem_block else lim.max_blocks

    limits = {"warps": by_warps, "registers": by_regs, "shared memory": by_smem, "blocks": by_sm}
    active = min(limits.values())
    limiters = tuple(k for k, v in limits.items() if v == active)
    return Occupancy(
        threads_per_block=threads_per_block, registers_per_thread=registers_per_thread,
        shared_memory_per_block=smem_block, block_limit_warps=by_warps, block_limit_registers=by_regs,
        block_limit_shared_mem=by_smem, block_limit_shared_mem_max_carveout=by_smem_max, block_limit_sm=by_sm,
        carveout_kib=carveout / 1024, active_blocks=active, active_warps=active * warps, max_warps=lim.max_warps,
        limiters=limiters,
    )
