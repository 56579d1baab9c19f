"""What Nsight Compute says about each launch, set beside gemmprof's model and occupancy calculator.

Pure functions: an `NcuReport` (gemmprof.adapters.ncu.report) plus a GPU spec and, where known, the GEMM shape and the
variants' dtypes and tile sizes in; one `LaunchFindings` per profiled launch out. Every figure is None when the
CSV does not hold the metrics it needs, so a partial CSV (only some sections) still gives what it can.
The results file `gemmprof profile --save` writes is described in gemmprof.results.profile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gemmprof.adapters.ncu.occupancy import check_occupancy, lookup
from gemmprof.adapters.ncu.report import Launch, NcuReport, Rule
from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.measure import nvtx
from gemmprof.model.traffic import DTYPES, GemmShape, Tiles, gemm_flops, min_bytes, tiled_traffic
from gemmprof.results import cells
from gemmprof.results.profile import LaunchFindings, RuleAdvice, SharedMemory

SOL = "GPU Speed Of Light Throughput"
WARP_STATE = "Warp State Statistics"

# (raw metric name, details-page label, details-page section): the raw name wins when both are present.
DURATION = ("gpu__time_duration.sum", "Duration", SOL)
SOL_COMPUTE = ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "Compute (SM) Throughput", SOL)
SOL_MEMORY = ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "Memory Throughput", SOL)
SOL_DRAM = ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "DRAM Throughput", SOL)
CYCLES_PER_ISSUE = ("smsp__average_warp_latency_per_inst_issued.ratio", "Warp Cycles Per Issued Instruction",
                    WARP_STATE)

STALL_PREFIX = "smsp__average_warp_latency_issue_stalled_"
PCSAMP_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
# "selected" is left out of the stall shares. The Nsight Compute Profiling Guide lists it among the warp states as
# "warp was selected by the micro scheduler and issued an instruction": it is the issue cycle itself, not a stall
# (its ratio is ~1 cycle per issued instruction), so shares here are fractions of the cycles a warp spent *not*
# issuing. "not_selected" (eligible, but another warp issued) stays: from the warp's side it is a stall, and a large
# share of it means there are more eligible warps than issue slots. ncu's CPIStall rule divides by all cycles
# between two issues (selected included), so its percentages are a few percent lower than ours for the same run.
EXCLUDED_STALLS = ("selected",)

FFMA = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
FADD = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum"
FMUL = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum"
# Math ops in the tensor path; ncu counts 2 per multiply-add, so they are FLOPs. Only these exact names are summed
# (the _sparsity_on/_off and per-instruction-kind variants are subsets of them).
TENSOR_OPS = ("sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16.sum",
              "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum", "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum",
              "sm__ops_path_tensor_op_hgmma_src_fp16.sum", "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum",
              "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum")
# Busy cycles of the tensor pipe. On the H100 it counts warpgroup MMAs (HGMMA) too: 93-95% for h5, h6 and cuBLAS at
# 8192 (benchmarks/2026-11-23_h100_hopper/ncu_hopper_8192.csv), 0 for SIMT rungs.
TENSOR_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
DRAM_READ, DRAM_WRITE, DRAM_TOTAL = "dram__bytes_read.sum", "dram__bytes_write.sum", "dram__bytes.sum"
L2_BYTES, L1_BYTES = "lts__t_bytes.sum", "l1tex__t_bytes.sum"
SMEM = {
    "ld_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
    "st_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
    "ld_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",),
    "st_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
    "ld_requests": ("smsp__inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_ld.sum",
                    "l1tex__t_requests_pipe_lsu_mem_shared_op_ld.sum"),
    "st_requests": ("smsp__inst_executed_op_shared_st.sum", "smsp__sass_inst_executed_op_shared_st.sum",
                    "l1tex__t_requests_pipe_lsu_mem_shared_op_st.sum"),
    "ld_wavefronts_addressed": ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",),
    "ldsm_wavefronts_addressed": ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",),
    "st_wavefronts_addressed": ("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
}


@dataclass(frozen=True)
class VariantInfo:
    """What gemmprof knows about a variant: its dtype and, for a ladder rung, the tiles of its traffic model."""

    dtype: str | None = None
    tiles: Tiles | None = None


def gemmprof_range(launch: Launch) -> tuple[str, str, GemmShape] | None:
    """The innermost `gemmprof VARIANT MxNxK` range a launch ran in: (range text, variant, shape)."""
    pattern = re.compile(rf"{nvtx.PREFIX} [A-Za-z0-9_.\-]+ \d+x\d+x\d+")
    for candidate in reversed(launch.nvtx_ranges + tuple(launch.nvtx.values())):
        for text in reversed(pattern.findall(candidate)):
            parsed = nvtx.parse_range_name(text)
            if parsed:
                return text, parsed[0], parsed[1]
    return None


def stall_shares(launch: Launch, prefix: str = STALL_PREFIX, suffix: str = ".ratio") -> dict[str, float]:
    values = {}
    for name, m in launch.matching(prefix, suffix).items():
        reason = name[len(prefix):len(name) - len(suffix)] if suffix else name[len(prefix):]
        if reason.endswith("_not_issued") or reason in EXCLUDED_STALLS or m.number is None:
            continue
        values[reason] = cells.real(m.number)
    total = sum(values.values())
    if total <= 0:
        return {}
    return dict(sorted(((k, v / total) for k, v in values.items()), key=lambda kv: -kv[1]))


def tensor_flops(launch: Launch) -> float | None:
    """Tensor-path FLOPs: the sum of TENSOR_OPS; where ncu gave only a counter's _sparsity_off/_on parts (a regex
    asks for bf16's, whose plain name the H100's ncu (2025.3.1) was not seen to list), their sum stands for it."""
    total = None
    for name in TENSOR_OPS:
        value = launch.number(name)
        if value is None:
            stem = name.removesuffix(".sum")
            parts = [p for s in ("_sparsity_off", "_sparsity_on") if (p := launch.number(f"{stem}{s}.sum")) is not None]
            value = sum(parts) if parts else None
        if value is not None:
            total = (total or 0) + value
    return total


def summarise_rule(rule: Rule, width: int = 160) -> RuleAdvice:
    """One line of advice: the first sentence that carries a figure (else the first), without links."""
    text = re.sub(r"\s*\((?:see )?https?://[^)]*\)", "", rule.description)
    text = re.sub(r"https?://\S+", "", text).strip()
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text) if s.strip()]
    pick = next((s for s in sentences if re.search(r"\d", s)), sentences[0] if sentences else "")
    if len(pick) > width:
        pick = pick[:width - 1].rstrip() + "…"
    return RuleAdvice(rule.section, rule.name, rule.type, pick, rule.speedup, rule.speedup_type, rule.description)


def _bounded(launch: Launch, what: str, total):
    """A sum of ncu's figures, refused where it runs past any real figure (only a damaged CSV gets there): a results
    file could not hold it."""
    if total is not None and not abs(total) < cells.MAX_FIGURE:
        raise cells.CellError(f"launch {launch.id} ({launch.kernel_name[:40]}): its {what} come to {total:.3g}, past "
                              f"any real figure (the CSV's figures are damaged)")
    return total


def analyse_launch(launch: Launch, gpu_spec: GpuSpec | None, shape: GemmShape | None = None,
                   variants: dict[str, VariantInfo] | None = None, default_dtype: str | None = None
                   ) -> LaunchFindings:
    found = gemmprof_range(launch)
    variant = found[1] if found else launch.kernel_name
    if found:
        shape = found[2]
    info = (variants or {}).get(variant, VariantInfo())
    dtype = info.dtype or default_dtype
    f = LaunchFindings(id=launch.id, variant=variant, kernel_name=launch.kernel_name,
                       nvtx_range=found[0] if found else None, dtype=dtype, shape=shape,
                       grid=launch.grid, block=launch.block)
    f.duration_ns = lookup(launch, DURATION)
    f.sol_compute_pct, f.sol_memory_pct, f.sol_dram_pct = (lookup(launch, s) for s in (SOL_COMPUTE, SOL_MEMORY,
                                                                                      SOL_DRAM))
    f.occupancy = check_occupancy(launch, gpu_spec)
    f.stalls = stall_shares(launch)
    f.stalls_sampled = stall_shares(launch, PCSAMP_PREFIX, "")
    f.warp_cycles_per_issue = lookup(launch, CYCLES_PER_ISSUE)
    f.smem = SharedMemory(**{k: launch.number(*names) for k, names in SMEM.items()})
    f.dram_read_bytes, f.dram_write_bytes = launch.number(DRAM_READ), launch.number(DRAM_WRITE)
    if f.dram_read_bytes is not None and f.dram_write_bytes is not None:
        f.dram_bytes = _bounded(launch, "DRAM bytes read and written", f.dram_read_bytes + f.dram_write_bytes)
    else:
        f.dram_bytes = launch.number(DRAM_TOTAL)
    f.l2_bytes, f.l1_bytes = launch.number(L2_BYTES), launch.number(L1_BYTES)
    fp = [launch.number(n) for n in (FFMA, FADD, FMUL)]
    if any(v is not None for v in fp):
        f.flops_fp32 = _bounded(launch, "fp32 FLOPs", 2 * (fp[0] or 0) + (fp[1] or 0) + (fp[2] or 0))
    f.flops_tensor = _bounded(launch, "tensor FLOPs", tensor_flops(launch))
    f.tensor_pipe_pct = launch.number(TENSOR_PIPE)
    if shape is not None:
        f.flops_model = gemm_flops(shape)
        dt = DTYPES.get(dtype or "")
        if dt is not None:
            f.model_min_bytes = min_bytes(shape, dt).total
            if info.tiles is not None:
                f.model_tiled_bytes = tiled_traffic(shape, dt, info.tiles).gmem_bytes
        else:
            f.notes.append("dtype unknown (pass --dtype): no byte model")
    f.rules = sorted((summarise_rule(r) for r in launch.rules),
                     key=lambda r: ({"OPT": 0, "WRN": 1, "ERR": 1}.get(r.type, 2), -(r.speedup or 0)))
    return f


def choose_gpu(report: NcuReport, explicit: GpuSpec | None, all_gpus, prefer: str = "h100"
                   ) -> tuple[GpuSpec | None, str]:
    """The GPU spec for the occupancy calculation: given, else by device name, else by compute capability
    (`prefer` first among GPU specs of the same compute capability: their SM limits are the same)."""
    if explicit is not None:
        return explicit, ""
    gpu = report.gpu
    for p in all_gpus:
        if gpu and gpu in p.cuda_names:
            return p, ""
    ccs = {launch.cc for launch in report.launches if launch.cc}
    if len(ccs) == 1:
        cc = ccs.pop()
        same = sorted((p for p in all_gpus if p.compute_capability == cc), key=lambda p: not p.matches(prefer))
        if same:
            return same[0], f"occupancy computed with the SM limits of {same[0].name} (compute capability {cc})"
        return None, f"no GPU spec for compute capability {cc}: pass --gpu or --gpu-file to compute occupancy"
    return None, "the CSV does not say which GPU: pass --gpu or --gpu-file to compute occupancy"


def analyse(report: NcuReport, gpu_spec: GpuSpec | None, shape: GemmShape | None = None,
            variants: dict[str, VariantInfo] | None = None, default_dtype: str | None = None
            ) -> list[LaunchFindings]:
    return [analyse_launch(launch, gpu_spec, shape, variants, default_dtype) for launch in report.launches]
