"""The analytic model: FLOPs, minimum bytes, arithmetic intensity, lower-bound times, per-rung traffic.

Conventions follow the documents: FLOPs are 2*M*N*K (an FMA counts twice); seed 004 adds the epilogue's M*N;
seed 003 counts M*(2K-1)*N (K multiplies, K-1 adds). Minimum bytes read A and B once, C once when beta != 0,
and write C once.
"""

from __future__ import annotations

from dataclasses import dataclass

from gemmprof.errors import InputError
from gemmprof.results.shape import GemmShape, Tiles


@dataclass(frozen=True)
class DType:
    name: str
    input_bytes: int  # bytes per element of A and B
    output_bytes: int  # bytes per element of C
    peak_kind: str  # which GPU spec peak bounds it
    description: str


DTYPES = {
    "fp32": DType("fp32", 4, 4, "fp32", "fp32 inputs, fp32 accumulate (SIMT)"),
    "tf32": DType("tf32", 4, 4, "tf32_tensor", "fp32 inputs rounded to tf32 on tensor cores, fp32 accumulate"),
    "fp16": DType("fp16", 2, 4, "fp16_tensor_fp32_acc", "fp16 inputs, fp32 accumulate and fp32 C (tensor cores)"),
    "bf16": DType("bf16", 2, 4, "bf16_tensor_fp32_acc", "bf16 inputs, fp32 accumulate and fp32 C (tensor cores)"),
    # fp8: one byte per element (the scales' bytes are left out: at most 1/32 of A's in the 1x128 mode); C is bf16 by
    # default, so 2 bytes (an fp32 C writes twice as many: the figure's C is the default one)
    "e4m3": DType("e4m3", 1, 2, "fp8_tensor_fp32_acc", "fp8 e4m3 inputs with scales, fp32 accumulate, bf16 C"),
    "e5m2": DType("e5m2", 1, 2, "fp8_tensor_fp32_acc", "fp8 e5m2 inputs with scales, fp32 accumulate, bf16 C"),
}


def get_dtype(name: str) -> DType:
    try:
        return DTYPES[name]
    except KeyError:
        raise InputError(f"--dtype: unknown dtype {name!r} (choose from {', '.join(DTYPES)})") from None


def gemm_flops(shape: GemmShape) -> int:
    """2*M*N*K: the count every TFLOP/s figure in gemmprof uses."""
    return 2 * shape.M * shape.N * shape.K


def gemm_flops_with_epilogue(shape: GemmShape) -> int:
    """Seed 004's count: the FMAs plus M*N for the alpha/beta epilogue."""
    return gemm_flops(shape) + shape.M * shape.N


def gemm_flops_seed003(shape: GemmShape) -> int:
    """Seed 003's count: K multiplies and K-1 adds per element of C."""
    return shape.M * (2 * shape.K - 1) * shape.N


@dataclass(frozen=True)
class Bytes:
    read: int
    written: int

    @property
    def total(self) -> int:
        return self.read + self.written


def min_bytes(shape: GemmShape, dtype: DType, beta: float = 0.0) -> Bytes:
    """A and B read once, C read once when beta != 0, C written once."""
    read = (shape.M * shape.K + shape.K * shape.N) * dtype.input_bytes
    if beta != 0:
        read += shape.M * shape.N * dtype.output_bytes
    return Bytes(read=read, written=shape.M * shape.N * dtype.output_bytes)


@dataclass(frozen=True)
class Bounds:
    flops: int
    bytes: Bytes
    arithmetic_intensity: float  # FLOP per byte of DRAM traffic
    peak_flops: float  # FLOP/s used
    bandwidth: float  # bytes/s used
    compute_time_s: float
    memory_time_s: float

    @property
    def bound(self) -> str:
        return "compute" if self.compute_time_s >= self.memory_time_s else "memory"

    @property
    def lower_bound_s(self) -> float:
        return max(self.compute_time_s, self.memory_time_s)

    @property
    def ridge_point(self) -> float:
        return self.peak_flops / self.bandwidth


def min_arithmetic_intensity(shape: GemmShape, dtype: DType, beta: float = 0.0) -> float:
    """2MNK over the minimum bytes: the most intensity any kernel of this GEMM can have at DRAM."""
    return gemm_flops(shape) / min_bytes(shape, dtype, beta).total


def lower_bounds(flops: int, nbytes: Bytes, peak_flops: float, bandwidth: float) -> Bounds:
    if peak_flops <= 0 or bandwidth <= 0:
        raise InputError("--peak-tflops/--bandwidth: ceilings must be positive")
    return Bounds(flops=flops, bytes=nbytes, arithmetic_intensity=flops / nbytes.total, peak_flops=peak_flops,
                  bandwidth=bandwidth, compute_time_s=flops / peak_flops, memory_time_s=nbytes.total / bandwidth)


@dataclass(frozen=True)
class Traffic:
    """Global- and shared-memory traffic of a tiled kernel, with no help from caches (the documents' worst case)."""

    gmem_element_reads: int  # reads of A and B elements: M*N*K*(1/BM + 1/BN)
    gmem_read_bytes: int  # A/B reads plus C when beta != 0
    gmem_write_bytes: int
    gmem_accesses_per_result: float  # K*(1/BM + 1/BN): seed 004's "memory accesses per result"
    smem_accesses_per_result: float | None  # K*(TM+TN)/(TM*TN) when operands are staged in shared memory
    arithmetic_intensity: float  # FLOPs (2MNK) per byte of this traffic
    # Bytes of the 32-byte sectors the warps' global requests touch (the access analysis of the rung's `accesses:`
    # block, gemmprof.model.access): traffic between the SMs and L1 with every sector counted, so a warp reading 32
    # floats of one column costs 32 sectors where a row costs 4. None without a description. Not DRAM bytes.
    gmem_sector_bytes: int | None = None

    @property
    def gmem_bytes(self) -> int:
        return self.gmem_read_bytes + self.gmem_write_bytes


def tiled_traffic(shape: GemmShape, dtype: DType, tiles: Tiles, beta: float = 0.0,
                  gmem_sector_bytes: int | None = None) -> Traffic:
    """Each BM x BN block tile reads BM rows of A and BN columns of B once: M*N*K*(1/BM + 1/BN) element reads.

    With BM = BN = 1 this is the naive kernel's 2*M*N*K (seed 000); adding C gives seed 004's 4*(2K+1)*M*N bytes.
    Each thread computing TM x TN results reads TM + TN operands from shared memory per step of K.
    `gmem_sector_bytes` (from gemmprof.model.access_explain.sector_bytes) is carried as given.
    """
    M, N, K = shape.M, shape.N, shape.K
    # exact integer arithmetic: M*N*K/BM + M*N*K/BN
    reads_num = M * N * K * (tiles.BN + tiles.BM)
    element_reads = -(-reads_num // (tiles.BM * tiles.BN))
    read_bytes = element_reads * dtype.input_bytes + (M * N * dtype.output_bytes if beta != 0 else 0)
    write_bytes = M * N * dtype.output_bytes
    per_result = K * (1 / tiles.BM + 1 / tiles.BN)
    smem = K * (tiles.TM + tiles.TN) / (tiles.TM * tiles.TN) if tiles.smem else None
    return Traffic(element_reads, read_bytes, write_bytes, per_result, smem,
                   gemm_flops(shape) / (read_bytes + write_bytes), gmem_sector_bytes)


def seed003_memory_time_s(shape: GemmShape, dtype: DType, bandwidth_gbs: float) -> float:
    """Seed 003's arithmetic: matrix sizes in MiB divided by GB/s read as MB/ms (it mixes MiB and MB)."""
    mib = (shape.M * shape.K + shape.K * shape.N) * dtype.input_bytes + shape.M * shape.N * dtype.output_bytes
    return (mib / 2**20) / bandwidth_gbs * 1e-3  # MiB / (MB/ms) = ms


def tflops(flops: float, seconds: float) -> float:
    return flops / seconds / 1e12 if seconds > 0 else float("nan")
