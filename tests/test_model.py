"""The analytic model reproduces the numbers the documents print."""

import pytest

from gemmprof.errors import InputError
from gemmprof.model import traffic as m

FP32 = m.DTYPES["fp32"]


def test_seed004_lower_bounds_at_4092():
    # seed 004 section 1.1: 137 GFLOP, 201 MB read, 67 MB written; 4.5 ms compute, 0.34 ms memory at 30 TFLOP/s, 768 GB/s
    s = m.GemmShape(4092, 4092, 4092)
    flops = m.gemm_flops_with_epilogue(s)
    assert round(flops / 1e9) == 137
    b = m.min_bytes(s, FP32, beta=1.0)
    assert round(b.read / 1e6) == 201
    assert round(b.written / 1e6) == 67
    bounds = m.lower_bounds(flops, b, 30e12, 768e9)
    assert 4.5e-3 <= bounds.compute_time_s < 4.6e-3  # the document truncates 4.57 to 4.5
    assert 0.34e-3 <= bounds.memory_time_s < 0.35e-3  # and 0.349 to 0.34
    assert bounds.bound == "compute"


def test_seed004_naive_worst_case_is_548_gb():
    # 4 B * (2K + 1) * M * N: a row of A, a column of B and one element of C per thread
    s = m.GemmShape(4092, 4092, 4092)
    t = m.tiled_traffic(s, FP32, m.Tiles(1, 1, 1, 1), beta=1.0)
    assert t.gmem_read_bytes == 4 * (2 * 4092 + 1) * 4092 * 4092
    assert round(t.gmem_read_bytes / 1e9) == 548
    assert t.gmem_element_reads == 2 * 4092**3  # seed 000: 2KMN reads


def test_seed003_numbers_at_4096():
    # seed 003: 192 MiB, 137 GFLOP with M(2K-1)N, 0.094 ms and 0.878 ms at 2039 GB/s and 156 TFLOP/s
    s = m.GemmShape(4096, 4096, 4096)
    b = m.min_bytes(s, FP32, beta=0.0)
    assert b.total == 192 * 2**20
    flops = m.gemm_flops_seed003(s)
    assert round(flops / 1e9) == 137
    assert m.seed003_memory_time_s(s, FP32, 2039) == pytest.approx(0.09416e-3, rel=1e-4)
    # the document divides 137 (rounded) by 156 TFLOP/s: 0.878 ms; unrounded FLOPs give 0.881 ms
    assert flops / 156e12 == pytest.approx(0.878e-3, rel=5e-3)


@pytest.mark.parametrize("bm,bn,tm,tn,gmem,smem", [
    (32, 32, 1, 1, 4096 / 16, 2 * 4096),      # kernel 3: K/16 GMEM, 2K SMEM per result
    (64, 64, 8, 1, 4096 / 32, 4096 * 9 / 8),  # kernel 4: K/32 GMEM, 9K/8 SMEM
    (128, 128, 8, 8, 4096 / 64, 4096 / 4),    # kernel 5: K/64 GMEM, K/4 SMEM
])
def test_seed004_accesses_per_result(bm, bn, tm, tn, gmem, smem):
    t = m.tiled_traffic(m.GemmShape(4096, 4096, 4096), FP32, m.Tiles(bm, bn, tm, tn, smem=True))
    assert t.gmem_accesses_per_result == pytest.approx(gmem)
    assert t.smem_accesses_per_result == pytest.approx(smem)


def test_smem_tiling_reads_mnk_over_tiles():
    s = m.GemmShape(512, 256, 128)
    t = m.tiled_traffic(s, FP32, m.Tiles(128, 64, 8, 8, smem=True))
    assert t.gmem_element_reads == 512 * 256 * 128 // 128 + 512 * 256 * 128 // 64


def test_fp16_bytes_count_two_byte_inputs_and_fp32_output():
    s = m.GemmShape(8192, 8192, 8192)
    b = m.min_bytes(s, m.DTYPES["fp16"], beta=0.0)
    assert b.read == 2 * 8192 * 8192 * 2 and b.written == 8192 * 8192 * 4


def test_arithmetic_intensity_rises_with_tiles():
    s = m.GemmShape(4096, 4096, 4096)
    ais = [m.tiled_traffic(s, FP32, m.Tiles(t, t)).arithmetic_intensity for t in (1, 32, 64, 128)]
    assert ais == sorted(ais) and ais[0] == pytest.approx(0.25, rel=1e-3)


@pytest.mark.parametrize("dims", [(0, 1, 1), (1, -3, 1), (1, 1, 0)])
def test_bad_shapes_are_rejected(dims):
    with pytest.raises(InputError):
        m.GemmShape(*dims)


def test_ceilings_must_be_positive():
    with pytest.raises(InputError):
        m.lower_bounds(1, m.Bytes(1, 1), 0, 1)
