"""Running Nsight Compute: the command line, the subprocess, and what its output says went wrong.

`build_command` is pure (tested without ncu); `execute` is the one place a process is started (tests replace it);
`diagnose` turns ncu's exit status and output into one GemmprofError with what the user can do.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from gemmprof.adapters.ncu.report import NcuReport, parse_csv
from gemmprof.errors import GemmprofError, InputError, ToolNotFoundError
from gemmprof.measure import nvtx
from gemmprof.measure.child import ChildRun
from gemmprof.model.traffic import GemmShape

DEFAULT_SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "MemoryWorkloadAnalysis")
STALL_METRICS = (r"regex:smsp__average_warp_latency_issue_stalled_.*\.ratio",)
PC_SAMPLING_METRICS = ("regex:smsp__pcsamp_warps_issue_stalled_.*",)
METRICS = (
    "gpu__time_duration.sum",
    "device__attribute_display_name",  # the details page has no device name otherwise
    # occupancy (also in the Occupancy and LaunchStats sections; asked for by name so they survive --section)
    "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__maximum_warps_per_active_cycle_pct",
    "launch__occupancy_limit_registers", "launch__occupancy_limit_shared_mem", "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks", "launch__block_size", "launch__registers_per_thread",
    "launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic", "launch__shared_mem_config_size",
    # shared-memory bank conflicts and the wavefronts and requests they come from
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    # the same wavefronts as ncu derives them from each instruction's addresses (SASS counters): what the access
    # model computes; the hardware counters above can be higher (benchmarks/2026-11-23_h100_access)
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    # traffic at each level
    "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
    # executed FLOPs: SIMT fp32 (an FFMA counts twice) and tensor-path math ops (already 2 per multiply-add)
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32.sum", "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32.sum",
    # Hopper's warpgroup MMA (cuBLAS's sm90 kernels use it): names as `ncu --query-metrics --chip gh100` lists them
    "sm__ops_path_tensor_op_hgmma_src_fp16.sum", "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
)
# bf16 tensor-path FLOPs (HMMA and Hopper's HGMMA), asked for only when profiling bf16 so fp16/fp32 profiles ask for
# exactly what they did before. A regex because the name ncu gives them (a plain rollup, or only _sparsity_off/_on
# parts) was not seen on the H100; findings.tensor_flops takes either.
BF16_TENSOR_METRICS = (r"regex:sm__ops_path_tensor_op_hg?mma_src_bf16_dst_fp32.*\.sum$",)
USUAL_PLACE = "/usr/local/cuda/bin or /opt/nvidia/nsight-compute/<version>"
FALLBACK_GLOBS = ["/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu"]
PERMISSION_HELP = (
    "the GPU performance counters are restricted to administrators (ERR_NVGPUCTRPERM). Run gemmprof profile as "
    "root (e.g. sudo -E env PATH=\"$PATH\" gemmprof profile ...), or let every user profile: load the nvidia kernel "
    "module with NVreg_RestrictProfilingToAdminUsers=0 (a file in /etc/modprobe.d, then reboot or reload the "
    "driver). NVIDIA's page 'ERR_NVGPUCTRPERM - Permission issue with Performance Counters' "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM) has the details for each platform")


class NcuError(GemmprofError):
    """Nsight Compute ran but did not produce a profile."""


class NcuPermissionError(NcuError):
    """ERR_NVGPUCTRPERM: performance counters are restricted to admin users."""


class NoKernelsProfiledError(NcuError):
    """ncu matched no kernel launch."""


class NcuFailedError(NcuError):
    """ncu (or the profiled program) exited with an error."""


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str

    @property
    def combined(self) -> str:
        return self.stdout + ("\n" if self.stdout and self.stderr else "") + self.stderr


def find_ncu(explicit: str | None = None) -> str:
    """The ncu executable: --ncu PATH, else PATH, else the usual install places."""
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        found = shutil.which(explicit)
        if found:
            return found
        raise InputError(f"--ncu: {explicit} is not an executable file")
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in FALLBACK_GLOBS:
        hits = sorted(p for p in glob.glob(pattern) if os.access(p, os.X_OK))
        if hits:
            return hits[-1]
    raise ToolNotFoundError("ncu", USUAL_PLACE, "`gemmprof profile --from FILE.csv` still works")


def metric_list(pc_sampling: bool = False, skip: tuple[str, ...] = (), dtype: str | None = None) -> list[str]:
    metrics = [*METRICS, *(BF16_TENSOR_METRICS if dtype == "bf16" else ()), *STALL_METRICS,
               *(PC_SAMPLING_METRICS if pc_sampling else ())]
    unknown = [s for s in skip if s not in metrics]
    if unknown:
        raise InputError(f"--skip-metric: {', '.join(unknown)} is not among the metrics gemmprof asks for")
    return [m for m in metrics if m not in skip]


def build_command(ncu: str, python: str, variant_names: list[str], shape: GemmShape, *,
                  sections: tuple[str, ...] = DEFAULT_SECTIONS, metrics: list[str] | None = None,
                  clock_control: str = "none", run_args: tuple[str, ...] = (),
                  also_profile: tuple[str, ...] = (), selectors: tuple[str, ...] | None = None) -> list[str]:
    """One ncu invocation profiling the single verified launch of each variant, found by its NVTX range.

    `variant_names` go to the child `gemmprof run`; `also_profile` names more ranges the child opens by itself
    (the cuBLAS baselines); `selectors`, when given, are what the child is asked to run instead of the names
    (rung ids, --all, "--spec", PATH pairs). ncu ORs repeated --nvtx-include options; "NAME/" selects push/pop
    ranges called NAME.
    """
    if not variant_names:
        raise InputError("no variants to profile")
    cmd = [ncu, "--csv", "--page", "details", "--print-units", "base", "--clock-control", clock_control,
           "--target-processes", "all", "--nvtx"]
    for name in (*variant_names, *also_profile):
        cmd += ["--nvtx-include", f"{nvtx.range_name(name, shape)}/"]
    for section in sections:
        cmd += ["--section", section]
    metrics = metric_list() if metrics is None else metrics
    if metrics:
        cmd += ["--metrics", ",".join(metrics)]
    child = ChildRun(tuple(variant_names) if selectors is None else tuple(selectors), shape, launch_once=True)
    return cmd + child.argv(python) + list(run_args)


def import_command(ncu: str, report_path: str, page: str) -> list[str]:
    return [ncu, "--import", str(report_path), "--csv", "--page", page, "--print-units", "base"]


def execute(cmd: list[str]) -> Completed:
    """Run a command (an argument list, never a shell) and capture what it prints."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    except OSError as exc:
        raise NcuFailedError(f"cannot run {cmd[0]}: {exc.strerror or exc}") from None
    return Completed(proc.returncode, proc.stdout or "", proc.stderr or "")


def _last(pattern: str, text: str) -> str | None:
    hits = [ln.strip() for ln in text.splitlines() if re.search(pattern, ln)]
    return hits[-1] if hits else None


def diagnose(done: Completed, what: str = "ncu", no_kernels_hint: str = "") -> NcuReport:
    """The parsed report of a finished ncu run, or the one error that explains why there is none."""
    text = done.combined
    if "ERR_NVGPUCTRPERM" in text:
        raise NcuPermissionError(f"{what}: {PERMISSION_HELP}")
    error_line = _last(r"^\s*==ERROR==", text)
    if done.returncode != 0:
        detail = error_line or ""
        child = _last(r"^error: ", text)
        if child:
            detail += ("; " if detail else "") + f"the profiled program said: {child}"
        if not detail:
            tail = [ln.strip() for ln in text.splitlines() if ln.strip()]
            detail = f"last output: {tail[-1]}" if tail else "no output"
        hint = ""
        if error_line and "Failed to find metric" in error_line:
            hint = " (this ncu or GPU lacks that metric: leave it out with --skip-metric NAME)"
        raise NcuFailedError(f"{what} failed with exit status {done.returncode}: {detail}{hint}")
    report = parse_csv(done.stdout)
    if not report.launches and done.stderr:
        report = parse_csv(text)
    if not report.launches:
        if re.search(r"No kernels were profiled", text):
            raise NoKernelsProfiledError(f"{what}: no kernel was profiled (ncu: ==WARNING== No kernels were "
                                         f"profiled){no_kernels_hint or ''}")
        raise NcuFailedError(f"{what} printed no CSV table" + (f": {error_line}" if error_line else ""))
    return report
