"""gemmprof model: the analytic model of a GEMM on a GPU, with the ladder's traffic models."""

from __future__ import annotations

import re

import click

from gemmprof.commands._options import (
    FINITE,
    POSITIVE,
    gpu_options,
    output_options,
    resolve_gpu,
    resolve_shape,
    shape_options,
)
from gemmprof.errors import InputError
from gemmprof.render.table import Column, Table, emit_many


@click.command("model")
@shape_options
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16", "tf32"]), default="fp32", show_default=True,
              help="Element type: sizes and the peak used (bf16: with --ladder, the rungs built for bf16, h4-h13).")
@click.option("--alpha", type=FINITE, default=1.0, show_default=True,
              help="C = alpha * A @ B + beta * C (alpha costs no traffic; the epilogue's FLOPs: --flop-convention).")
@click.option("--beta", type=FINITE, default=0.0, show_default=True, help="C is read only when beta != 0.")
@gpu_options
@click.option("--peak-tflops", type=POSITIVE, default=None, help="Compute ceiling instead of the GPU spec's.")
@click.option("--bandwidth", type=POSITIVE, default=None, help="Memory ceiling in GB/s instead of the GPU spec's.")
@click.option("--ceiling", type=click.Choice(["datasheet", "measured"]), default="datasheet", show_default=True,
              help="Use the GPU spec's datasheet peaks or its measured ceilings.")
@click.option("--flop-convention", type=click.Choice(["2mnk", "seed004", "seed003"]), default="2mnk",
              show_default=True, help="2MNK; seed004 adds the epilogue's MN, as Boehm's CUDA matmul article counts; seed003 counts "
                   "M(2K-1)N, as the A100 notes of seed 003 do (the seeds: the study notes `gemmprof list` describes; "
                   "use one to compare with its figures).")
@click.option("--rung", "rungs", multiple=True, help="Show the traffic model of these rungs (ids, ranges, names).")
@click.option("--ladder", is_flag=True, help="Show the traffic model of every rung of --dtype.")
@click.option("--tiles", default=None, metavar="BM,BN,TM,TN", help="Traffic model of a tiling of your own.")
@output_options
def command(size, m, n, k, dtype, alpha, beta, gpu, gpu_file, peak_tflops, bandwidth, ceiling, flop_convention,
            rungs, ladder, tiles, fmt, output):
    """FLOPs, minimum bytes, arithmetic intensity and lower-bound times; per-rung memory traffic.

    Without a GPU. Ceilings come from the GPU spec (--gpu/--gpu-file, default H100 SXM) or from
    --peak-tflops/--bandwidth. The traffic models are the documents' worst case (no cache hits): a BM x BN block
    tile reads M*N*K*(1/BM + 1/BN) elements of A and B; BM = BN = 1 is the naive kernel.

    \b
    Examples:
      gemmprof model --size 4092 --beta 1 --peak-tflops 30 --bandwidth 768 --flop-convention seed004 --tiles 1,1,1,1
      gemmprof model --size 4096 --peak-tflops 156 --bandwidth 2039 --flop-convention seed003
      gemmprof model --size 4096 --gpu h100 --ladder
    """
    from gemmprof.model import traffic as mdl

    shape = resolve_shape(size, m, n, k)
    dt = mdl.get_dtype(dtype)
    gpu_spec = resolve_gpu(gpu, gpu_file) if (peak_tflops is None or bandwidth is None) else None
    peak, bw, peak_src, bw_src = _ceilings(gpu_spec, dt, peak_tflops, bandwidth, ceiling)
    flops = {"2mnk": mdl.gemm_flops, "seed004": mdl.gemm_flops_with_epilogue,
             "seed003": mdl.gemm_flops_seed003}[flop_convention](shape)
    nbytes = mdl.min_bytes(shape, dt, beta)
    b = mdl.lower_bounds(flops, nbytes, peak, bw)
    rows = [
        _row("FLOPs", flops / 1e9, "GFLOP", {"2mnk": "2*M*N*K", "seed004": "2*M*N*K + M*N (seed 004)",
                                              "seed003": "M*(2K-1)*N (seed 003)"}[flop_convention]),
        _row("bytes read (minimum)", nbytes.read / 1e6, "MB",
             f"{nbytes.read / 2**20:.1f} MiB: A, B" + (", C (beta != 0)" if beta else "")),
        _row("bytes written (minimum)", nbytes.written / 1e6, "MB", f"{nbytes.written / 2**20:.1f} MiB: C"),
        _row("bytes moved (minimum)", nbytes.total / 1e6, "MB", f"{nbytes.total / 2**20:.1f} MiB"),
        _row("arithmetic intensity (minimum traffic)", b.arithmetic_intensity, "FLOP/B", ""),
        _row("compute ceiling", peak / 1e12, "TFLOP/s", peak_src),
        _row("memory ceiling", bw / 1e9, "GB/s", bw_src),
        _row("ridge point", b.ridge_point, "FLOP/B", "intensity above which the ceiling is compute"),
        _row("compute-bound time", b.compute_time_s * 1e3, "ms", "FLOPs / compute ceiling"),
        _row("memory-bound time", b.memory_time_s * 1e3, "ms", "bytes / memory ceiling"),
    ]
    if flop_convention == "seed003":
        rows.append(_row("memory-bound time, seed 003's arithmetic",
                         mdl.seed003_memory_time_s(shape, dt, bw / 1e9) * 1e3, "ms",
                         "MiB divided by GB/s read as MB/ms, as seed 003 does"))
    rows.append(_row("lower bound", b.lower_bound_s * 1e3, "ms", f"{b.bound}-bound"))
    cols = [Column("quantity", "quantity", fmt="s"), Column("value", "value", fmt=".4g"),
            Column("unit", "unit", fmt="s"), Column("note", "note", fmt="s")]
    title = f"GEMM {shape.label}, {dt.name} ({dt.description}), alpha={alpha:g} beta={beta:g}"
    tables = [Table(title, cols, rows, meta={"shape": shape.to_dict(), "dtype": dtype, "bound": b.bound})]
    traffic, accesses = _traffic_rows(shape, dt, beta, peak, bw, rungs, ladder, tiles, dtype,
                                       gpu_spec.sm_count if gpu_spec else None)
    if traffic:
        tcols = [Column("rung", "rung", fmt="s"), Column("name", "name", fmt="s"),
                 Column("tiles", "BMxBN / TMxTN", fmt="s"),
                 Column("gmem_reads_g", "A+B element reads", "G", ".4g"),
                 Column("gmem_gb", "GMEM traffic", "GB", ".4g"),
                 Column("gmem_sector_gb", "L1 sectors (access model)", "GB", ".4g"),
                 Column("gmem_per_result", "GMEM accesses/result", fmt=".4g"),
                 Column("smem_per_result", "SMEM accesses/result", fmt=".4g"),
                 Column("ai", "AI", "FLOP/B", ".3g"), Column("memory_time_ms", "memory time", "ms", ".3g"),
                 Column("bound", "bound", fmt="s")]
        tables.append(Table("Traffic models (no cache hits; C read only when beta != 0)", tcols, traffic,
                            ["GMEM accesses per result: K*(1/BM + 1/BN); SMEM accesses per result: K*(TM+TN)/(TM*TN)"
                             " (seed 004 sections 4 and 5).",
                             "L1 sectors (access model): bytes of the 32-byte sectors the warps' global loads and "
                             "stores touch, from the rung's accesses: block (C's epilogue with beta = 0): traffic "
                             "between the SMs and L1, every sector counted, where GMEM traffic counts each element "
                             "once. Not DRAM bytes."]))
    if accesses:
        tables.append(Table("Memory accesses of one warp request (gemmprof.model.access; `gemmprof list --explain "
                            "RUNG` for each access)", ACCESS_COLUMNS, accesses,
                            ["sectors/req: 32-byte sectors per global request; efficiency: bytes used over sector "
                             "bytes; wavefronts/req: shared-memory wavefronts per request; n-way: wavefronts over "
                             "the conflict-free count (1 = no bank conflict)."]))
    emit_many(tables, fmt, output)


ACCESS_COLUMNS = [Column("rung", "rung", fmt="s"), Column("name", "name", fmt="s"),
                  Column("gld_sectors_per_request", "gld sectors/req", fmt=".2f"),
                  Column("gld_efficiency", "gld efficiency", "%", ".0f"),
                  Column("gst_sectors_per_request", "gst sectors/req", fmt=".2f"),
                  Column("gst_efficiency", "gst efficiency", "%", ".0f"),
                  Column("sld_wavefronts_per_request", "smem ld wavefronts/req", fmt=".2f"),
                  Column("sld_degree", "ld n-way", fmt=".2f"),
                  Column("sst_wavefronts_per_request", "smem st wavefronts/req", fmt=".2f"),
                  Column("sst_degree", "st n-way", fmt=".2f")]


def _row(q, v, unit, note):
    return {"quantity": q, "value": v, "unit": unit, "note": note}


def _ceilings(gpu_spec, dt, peak_tflops, bandwidth, ceiling):
    if peak_tflops is not None:
        peak, peak_src = peak_tflops * 1e12, "--peak-tflops"
    elif ceiling == "measured":
        key = f"{dt.peak_kind}_tflops"
        if key not in gpu_spec.measured:
            raise InputError(f"--ceiling measured: GPU spec {gpu_spec.key} has no measured.{key}")
        peak, peak_src = gpu_spec.measured[key] * 1e12, f"{gpu_spec.name} measured.{key}"
    else:
        peak, peak_src = gpu_spec.peak_flops(dt.peak_kind), f"{gpu_spec.name} peak_tflops.{dt.peak_kind} (dense)"
    if bandwidth is not None:
        bw, bw_src = bandwidth * 1e9, "--bandwidth"
    elif ceiling == "measured" and "dram_bandwidth_gbs" in gpu_spec.measured:
        bw, bw_src = gpu_spec.measured["dram_bandwidth_gbs"] * 1e9, f"{gpu_spec.name} measured DRAM bandwidth"
    else:
        bw, bw_src = gpu_spec.dram_bandwidth, f"{gpu_spec.name} DRAM bandwidth (datasheet)"
    return peak, bw, peak_src, bw_src


def _traffic_rows(shape, dt, beta, peak, bw, rungs, ladder, tiles, dtype, sms=None):
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.catalog.plan import resolve
    from gemmprof.model import traffic as mdl

    entries = []
    if tiles:
        parts = tiles.split(",")
        if len(parts) != 4 or not all(re.fullmatch(r"[0-9]+", x) and int(x) > 0 for x in parts):
            raise InputError(f"--tiles {tiles!r}: expected four whole numbers above 0, BM,BN,TM,TN")
        bm, bn, tm, tn = (int(x) for x in parts)
        entries.append(("-", "--tiles", mdl.Tiles(bm, bn, tm, tn, smem=(bm, bn) != (1, 1)), None))
    if rungs or ladder:
        chosen = specmod.select(rungs, all_=ladder, dtype=None if rungs else (dtype if dtype in ("fp16", "bf16")
                                                                              else "fp32"))
        for s in chosen:
            kernel = bind(s, dtype=dtype if dtype in s.dtypes else None)  # h4-h13 also build for bf16
            kernel = resolve(kernel, shape, sms)  # a planning entry: the rung it chooses here
            entries.append((kernel.spec.id, kernel.variant_name, kernel.tiles(shape, sms), kernel))
    rows, access_rows = [], []
    flops = mdl.gemm_flops(shape)
    for rid, name, t, kernel in entries:
        acc = _access_summary(kernel, shape, sms)
        if acc is not None:
            access_rows.append({"rung": rid, "name": name, **{k: 100 * v if k.endswith("efficiency") and v is not None
                                                              else v for k, v in acc.items()}})
        rdt = mdl.get_dtype(kernel.run_dtype) if kernel is not None else dt  # a rung's own element sizes
        tr = mdl.tiled_traffic(shape, rdt, t, beta, acc["gmem_sector_bytes"] if acc else None)
        mem_t = tr.gmem_bytes / bw
        rows.append({"rung": rid, "name": name, "tiles": f"{t.BM}x{t.BN} / {t.TM}x{t.TN}",
                     "gmem_reads_g": tr.gmem_element_reads / 1e9, "gmem_gb": tr.gmem_bytes / 1e9,
                     "gmem_sector_gb": tr.gmem_sector_bytes / 1e9 if tr.gmem_sector_bytes is not None else None,
                     "gmem_per_result": tr.gmem_accesses_per_result, "smem_per_result": tr.smem_accesses_per_result,
                     "ai": tr.arithmetic_intensity, "memory_time_ms": mem_t * 1e3,
                     "bound": "memory" if mem_t > flops / peak else "compute"})
    return rows, access_rows


def _access_summary(kernel, shape, sms):
    """The access analysis of a bound rung at `shape` (None without an accesses: block or a kernel); `sms`: the
    GPU spec's SM count (grids that depend on it), None for the default GPU's."""
    if kernel is None or kernel.spec.accesses is None:
        return None
    from gemmprof.model.access_explain import analyse_kernel, summary

    return summary(analyse_kernel(kernel, shape, sms=sms))
