"""The model's figures attached to a measured row, in one place, after measurement: FLOPs, intensities, the peak
it is held against (and the clock that peak assumes), theoretical occupancy, and the physical floor.

The floor: no GEMM finishes faster than its FLOPs at the tensor or SIMT peak of the fastest clock it held (the
highest SM clock sampled while it was timed, plus 5%; the card's boost clock where none was sampled), nor than
the bytes it must read from DRAM (A and B, and C when beta != 0) at the DRAM bandwidth plus 5%, where the L2 was
flushed or rotated before each call. A median below the floor is impossible: the row fails and says so, with
both figures (a timer fooled, work left outside the events, or output served from a cache).
"""

from __future__ import annotations

from gemmprof.catalog.baselines import by_name
from gemmprof.catalog.binding import BoundKernel
from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.errors import GemmprofError
from gemmprof.model.occupancy import occupancy
from gemmprof.model.traffic import gemm_flops, get_dtype, min_arithmetic_intensity, min_bytes, tiled_traffic
from gemmprof.results.run import ModelFigures, VariantResult
from gemmprof.results.shape import GemmShape

FLOOR_MARGIN = 1.05  # the floor is 5% under the physical bound: sampled clocks and datasheet bandwidths are rough


def peak_kind(row: VariantResult) -> str:
    base = by_name().get(row.name) if row.kind == "baseline" else None
    return base.peak_kind if base else get_dtype(row.dtype).peak_kind


def model_figures(row: VariantResult, shape: GemmShape, beta: float, gpu: GpuSpec, kernel: BoundKernel | None = None,
                  sm_count: int | None = None) -> ModelFigures:
    dt = get_dtype(row.dtype)
    kind = peak_kind(row)
    # only a spec with a traffic: block has a model; without one, no figure (never the naive tiles' default)
    has_model = kernel is not None and bool(kernel.spec.traffic)
    tiled = tiled_traffic(shape, dt, kernel.tiles(shape, sm_count or gpu.sm_count), beta).arithmetic_intensity \
        if has_model else None
    peak = gpu.peak_tflops.get(kind)
    return ModelFigures(flops=gemm_flops(shape), min_arithmetic_intensity=min_arithmetic_intensity(shape, dt, beta),
                        model_arithmetic_intensity=tiled, peak_kind=kind, peak_flops=peak * 1e12 if peak else None,
                        peak_clock_mhz=gpu.peak_clock(kind) if peak else None)


def floor_s(row: VariantResult, shape: GemmShape, beta: float, gpu: GpuSpec, l2_policy: str = "flush"
            ) -> tuple[float, str] | None:
    """(the shortest time the GEMM can take on this GPU, how it is reckoned), or None where the spec has no peak for
    its dtype."""
    kind = peak_kind(row)
    if kind not in gpu.peak_tflops:
        return None
    clocks = row.clocks
    fastest = max(filter(None, (clocks.held_max_mhz, clocks.sm_clock_mhz_before, clocks.sm_clock_mhz_after))) \
        if clocks else gpu.boost_clock_mhz
    rate = gpu.peak_flops_at(kind, fastest) * FLOOR_MARGIN
    flops = gemm_flops(shape)
    compute = flops / rate
    parts = [f"{flops:.3g} FLOPs at {rate / 1e12:.0f} TFLOP/s ({kind} peak at {fastest:.0f} MHz, +5%) take "
             f"{compute * 1e3:.4f} ms"]
    best = compute
    if l2_policy in ("flush", "rotate"):
        bytes_read = min_bytes(shape, get_dtype(row.dtype), beta).read
        bandwidth = gpu.dram_bandwidth * FLOOR_MARGIN
        memory = bytes_read / bandwidth
        parts.append(f"reading {bytes_read / 1e6:.3g} MB at {bandwidth / 1e12:.2f} TB/s takes {memory * 1e3:.4f} ms")
        best = max(best, memory)
    return best, "; ".join(parts)


def annotate(row: VariantResult, shape: GemmShape, beta: float, gpu: GpuSpec, kernel: BoundKernel | None = None,
             sm_count: int | None = None, l2_policy: str = "flush") -> VariantResult:
    """The row with its model figures and occupancy; a verified time below the physical floor fails it."""
    row.model = model_figures(row, shape, beta, gpu, kernel, sm_count)
    if row.launch is not None and row.resources is not None:
        try:
            occ = occupancy(gpu, row.launch.threads_per_block, row.resources.registers, row.resources.static_smem,
                            row.launch.dynamic_smem)
            row.occupancy = occ.to_dict()
        except GemmprofError as exc:
            row.message = f"{row.message}; occupancy: {exc}" if row.message else f"occupancy: {exc}"
    if row.passed and row.timing is not None:
        floor = floor_s(row, shape, beta, gpu, l2_policy)
        median = row.timing.median_ms * 1e-3
        if floor and median < floor[0]:
            row.status = "FAIL"
            row.message = (f"impossible: its median {median * 1e3:.4f} ms is below the physical floor of "
                           f"{floor[0] * 1e3:.4f} ms ({floor[1]})")
    return row
