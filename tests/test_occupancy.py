"""The occupancy calculator agrees with Nsight Compute and with seed 004 section 3.1."""

import csv
import math
import re
from pathlib import Path

import pytest

from gemmprof.catalog.gpu_specs import get_gpu
from gemmprof.errors import InputError
from gemmprof.model.occupancy import occupancy

FIXTURE = Path(__file__).parent / "fixtures" / "ncu" / "h100_naive_smem_details.csv"


def _ncu_launches():
    """Launch statistics and occupancy rows per launch from a real ncu --page details CSV."""
    lines = FIXTURE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    launches = {}
    for row in csv.DictReader(lines[start:]):
        if row["Metric Name"]:
            launches.setdefault(row["ID"], {"Block Size": row["Block Size"]})[row["Metric Name"]] = \
                row["Metric Value"].replace(",", "")
    return launches


@pytest.mark.parametrize("launch_id", ["0", "1"])
def test_agrees_with_ncu_on_h100(launch_id):
    rows = _ncu_launches()[launch_id]
    threads = math.prod(int(x) for x in re.findall(r"\d+", rows["Block Size"]))  # "(1024, 1, 1)"
    occ = occupancy(get_gpu("h100"), threads, int(rows["Registers Per Thread"]),
                    int(rows["Static Shared Memory Per Block"]), int(rows["Dynamic Shared Memory Per Block"]))
    assert occ.block_limit_registers == int(rows["Block Limit Registers"])
    assert occ.block_limit_warps == int(rows["Block Limit Warps"])
    assert occ.block_limit_shared_mem == int(rows["Block Limit Shared Mem"])
    assert occ.block_limit_sm == int(rows["Block Limit SM"])
    assert occ.carveout_kib * 1024 == int(rows["Shared Memory Configuration Size"])
    assert occ.active_warps == int(rows["Theoretical Active Warps per SM"])
    assert 100 * occ.theoretical_occupancy == pytest.approx(float(rows["Theoretical Occupancy"]))


def test_seed004_kernel3_on_a6000():
    # seed 004 section 3.1: 37 regs -> 1280 regs per warp -> 1 block; 1024 threads -> 1 block;
    # 8 KiB + 1 KiB reservation in 100 KiB -> 11 blocks at most
    occ = occupancy(get_gpu("a6000"), 1024, 37, 8192, 0)
    assert occ.block_limit_registers == 1
    assert occ.block_limit_warps == 1
    assert occ.block_limit_shared_mem_max_carveout == 11
    assert occ.shared_memory_per_block == 9216
    assert occ.active_blocks == 1
    assert occ.theoretical_occupancy == pytest.approx(32 / 48)


def test_register_heavy_kernel_is_register_limited():
    occ = occupancy(get_gpu("h100"), 256, 255, 0, 0)
    # 255*32 = 8160 -> 8192 regs per warp; 16384 per sub-partition -> 2 warps each -> 8 warps -> 1 block
    assert occ.block_limit_registers == 1 and occ.limiters == ("registers",)


def test_rejects_impossible_launches():
    h100 = get_gpu("h100")
    with pytest.raises(InputError):
        occupancy(h100, 2048, 32)
    with pytest.raises(InputError):
        occupancy(h100, 256, 300)
    with pytest.raises(InputError):
        occupancy(h100, 256, 32, 0, 300 * 1024)
