"""gemmprof occupancy: theoretical occupancy of a launch configuration."""

from __future__ import annotations

import click

from gemmprof.commands._options import WholeNumber, gpu_options, output_options, resolve_gpu
from gemmprof.render.table import Column, Table, emit


@click.command("occupancy")
@click.option("-t", "--threads", type=WholeNumber(1, 2 ** 31 - 1), required=True, help="Threads per block.")
@click.option("-r", "--registers", type=WholeNumber(0, 2 ** 31 - 1), required=True, help="Registers per thread.")
@click.option("--static-smem", type=WholeNumber(0, 2 ** 31 - 1), default=0, show_default=True, help="Static shared memory per block (bytes).")
@click.option("--dynamic-smem", type=WholeNumber(0, 2 ** 31 - 1), default=0, show_default=True, help="Dynamic shared memory per block (bytes).")
@gpu_options
@output_options
def command(threads, registers, static_smem, dynamic_smem, gpu, gpu_file, fmt, output):
    """Blocks per SM allowed by each limit, the limiter, and the theoretical occupancy.

    Worked out as Simon Boehm's CUDA matmul article (seed 004, section 3.1) and Nsight Compute's Occupancy section
    do: registers are allocated per warp in units of 256, shared memory per block includes the driver's 1 KiB
    reservation, and the driver picks the smallest shared-memory carveout that keeps the occupancy the other limits
    allow.

    \b
    Examples:
      gemmprof occupancy --threads 1024 --registers 37 --static-smem 8192 --gpu a6000
      gemmprof occupancy -t 256 -r 128 --dynamic-smem 65536 --gpu h100 --format json
    """
    from gemmprof.model.occupancy import occupancy

    gpu_spec = resolve_gpu(gpu, gpu_file)
    occ = occupancy(gpu_spec, threads, registers, static_smem, dynamic_smem)
    rows = [
        {"limit": "warps", "blocks_per_sm": occ.block_limit_warps,
         "detail": f"{gpu_spec.sm_limits.max_warps} warps per SM / {-(-threads // 32)} warps per block"},
        {"limit": "registers", "blocks_per_sm": occ.block_limit_registers,
         "detail": f"{registers} regs x 32 threads rounded to {gpu_spec.sm_limits.register_allocation_unit} per warp"},
        {"limit": "shared memory", "blocks_per_sm": occ.block_limit_shared_mem,
         "detail": f"{occ.shared_memory_per_block} B per block (with reservation) in a {occ.carveout_kib:g} KiB "
                   f"carveout; {occ.block_limit_shared_mem_max_carveout} with the largest carveout"},
        {"limit": "blocks", "blocks_per_sm": occ.block_limit_sm, "detail": "resident blocks per SM"},
    ]
    for r in rows:
        r["limiting"] = r["limit"] in occ.limiters
    cols = [Column("limit", "limit", fmt="s"), Column("blocks_per_sm", "blocks/SM"), Column("limiting", "limiting"),
            Column("detail", "how", fmt="s")]
    notes = [f"active blocks per SM: {occ.active_blocks}, active warps: {occ.active_warps} of {occ.max_warps}, "
             f"theoretical occupancy {100 * occ.theoretical_occupancy:.1f}% on {gpu_spec.name}"]
    emit(Table(f"Occupancy: {threads} threads, {registers} regs, {static_smem}+{dynamic_smem} B smem on {gpu_spec.name}",
               cols, rows, notes, meta={"occupancy": occ.to_dict(), "gpu": gpu_spec.key}), fmt, output)
