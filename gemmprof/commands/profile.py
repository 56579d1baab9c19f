"""gemmprof profile: run Nsight Compute on rungs (or read a CSV or report it made) and say what limits each."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from gemmprof.commands._options import (
    WholeNumber,
    c_dtype_option,
    callable_c_dtype,
    gpu_options,
    output_options,
    refuse_directories,
    refuse_overwrite,
    resolve_gpu,
    resolve_shape,
    shape_options,
)
from gemmprof.errors import GemmprofError, InputError
from gemmprof.measure.arrays import ARRAY_KINDS


@click.command("profile")
@click.argument("variants", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every rung of the ladder (with --dtype, every rung of that dtype).")
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False),
              help="Profile your own kernel or host launcher (every kernel it launches) from its YAML spec "
                   "(repeatable). See docs/kernel-spec.md.")
@click.option("--callable", "callables", multiple=True, metavar="FILE.py:FUNCTION",
              help="Profile every kernel a Python function fn(A, B, C, alpha, beta) launches (repeatable; "
                   "inputs in --dtype, default fp32; C in --c-dtype). See docs/callables.md.")
@c_dtype_option
@click.option("--arrays", type=click.Choice(ARRAY_KINDS), default="cupy", show_default=True,
              help="What --callable functions receive: CuPy arrays or torch tensors.")
@shape_options
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a rung parameter (repeatable).")
@click.option("--cublas", is_flag=True, help="Also profile the cuBLAS baselines of the selected rungs' dtypes.")
@click.option("--from", "from_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Read an ncu CSV (details or raw page; plain or .csv.gz) or an .ncu-rep report instead of "
                   "running ncu (a report through the ncu-report wheel where installed, else through ncu --import; "
                   "--ncu forces ncu).")
@click.option("--dtype", type=click.Choice(["fp32", "tf32", "fp16", "bf16"]), default=None,
              help="Only rungs of this dtype; with --from, the dtype of kernels gemmprof does not know.")
@click.option("--section", "sections", multiple=True, metavar="NAME",
              help="ncu section to collect (repeatable; default: SpeedOfLight, Occupancy, LaunchStats, "
                   "WarpStateStats, MemoryWorkloadAnalysis).")
@click.option("--pc-sampling", is_flag=True, help="Also collect PC-sampling stall counts.")
@click.option("--skip-metric", "skip_metrics", multiple=True, metavar="NAME",
              help="Leave out a metric your ncu or GPU does not have (repeatable).")
@click.option("--clock-control", type=click.Choice(["none", "base"]), default="none", show_default=True,
              help="ncu --clock-control: none keeps the GPU's own clocks (as `gemmprof run` times it).")
@click.option("--ncu", "ncu_path", default=None, metavar="PATH", help="The ncu executable (default: found on PATH).")
@click.option("--save-csv", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Keep ncu's raw CSV output (read it again later with --from).")
@click.option("--save", "save_json", type=click.Path(dir_okay=False), default=None, metavar="FILE.json",
              help="Write the profile results file that `gemmprof roofline` reads.")
@click.option("--top", type=WholeNumber(1, 10), default=3, show_default=True, help="Stall reasons shown per launch.")
@gpu_options
@output_options
def command(variants, all_, spec_files, callables, c_dtype, arrays, size, m, n, k, params, cublas, from_file, dtype, sections, pc_sampling, skip_metrics,
            clock_control, ncu_path, save_csv, save_json, top, gpu, gpu_file, fmt, output):
    """Profile one verified launch of each variant with Nsight Compute, or read ncu output you already have.

    ncu runs `gemmprof run VARIANTS --launch-once` in a child process and profiles only the launches inside the
    NVTX ranges "gemmprof NAME MxNxK". Per launch you get duration, speed-of-light %, achieved and theoretical
    occupancy (ncu's beside gemmprof's own calculation), the top warp-stall reasons, shared-memory bank conflicts
    per request (ncu's beside the access model's, for rungs with an accesses: block), DRAM/L2 bytes and executed FLOPs against the model, arithmetic intensity, and ncu's advice.

    \b
    Examples:
      gemmprof profile 1 3 10 --size 4096 --save-csv ncu.csv --save profile.json
      gemmprof profile warptiling --size 4096 --cublas --pc-sampling
      gemmprof profile --spec my_kernel.yaml --size 2048  # your own kernel, beside its access model if it has one
      gemmprof profile --callable examples/triton_matmul/triton_matmul.py:matmul --dtype fp16 --size 4096 --cublas
      gemmprof profile --from ncu.csv                     # a CSV made earlier (any machine, no GPU)
      gemmprof profile --from mine.csv --size 1024 --dtype fp32 --gpu h100
      gemmprof profile --from report.ncu-rep --format json -o profile.json
    """
    from gemmprof.adapters.ncu.findings import analyse, choose_gpu
    from gemmprof.catalog import gpu_specs
    from gemmprof.render.profile_tables import emit_tables
    from gemmprof.results.cells import CellError
    from gemmprof.results.profile import ProfileResults

    notes: list[str] = []
    c_dtype = callable_c_dtype(c_dtype, callables)
    refuse_directories([from_file], "an ncu CSV or .ncu-rep file")
    refuse_overwrite({"-o": output, "--save": save_json, "--save-csv": save_csv},
                     [from_file, gpu_file, *(c.rpartition(":")[0] for c in callables)])
    if from_file:
        if variants or all_ or spec_files or callables:
            raise InputError("give VARIANTS (or --spec) to profile, or --from FILE to read, not both")
        if save_csv:  # it would be silently ignored: the CSV read is already on disk
            raise InputError("--save-csv keeps the CSV of an ncu run; with --from FILE there is none (FILE is it)")
        shape = resolve_shape(size, m, n, k, default=None) if any(v is not None for v in (size, m, n, k)) else None
        report, infos, kernels = _read(from_file, ncu_path), _known_variants(notes), None
        source = {"csv": str(from_file), "layout": report.layout}
    else:
        shape = resolve_shape(size, m, n, k)
        report, infos, csv_text, kernels = _live(variants, all_, spec_files, dtype, params, cublas, shape,
                                                 sections, pc_sampling, skip_metrics, clock_control, ncu_path,
                                                 callables, arrays, c_dtype)
        source = {"csv": str(save_csv) if save_csv else None, "layout": report.layout}
    explicit = resolve_gpu(gpu, gpu_file) if (gpu or gpu_file) else None
    gpu_spec, note = choose_gpu(report, explicit, gpu_specs.all_gpus())
    if note:
        notes.append(note)
    default_dtype = dtype if from_file else None
    try:
        findings = analyse(report, gpu_spec, shape, infos, default_dtype)
    except CellError as exc:  # figures that each parse but sum past any real one: say which file (or ncu's run)
        raise exc.at(str(from_file) if from_file else "ncu's output") from None
    from gemmprof.model.access_profile import attach

    attach(findings, kernels, notes)  # the access model's conflicts and sectors beside ncu's
    if not from_file:
        seen = {f.variant for f in findings}
        notes += [f"{name}: no launch was profiled (rejected shape or failed verification? see `gemmprof run`)"
                  for name in infos if name not in seen]
    notes += _multi_kernel_notes(findings)
    notes += [f"ncu: {line}" for line in report.errors()]
    notes += [f"{from_file or 'ncu CSV'}: {line}" for line in report.warnings]  # damaged cells left out
    results = ProfileResults(findings, gpu=report.gpu, gpu_spec=gpu_spec.key if gpu_spec else None,
                             shape=shape, source=source, notes=notes,
                             command="gemmprof " + shlex.join(sys.argv[1:]))
    if not from_file and save_csv:
        from gemmprof.render.table import write_atomic

        write_atomic(save_csv, csv_text)
        click.echo(f"ncu output saved to {save_csv}", err=True)
    if save_json:
        results.save(save_json)
        click.echo(f"profile results saved to {save_json}", err=True)
    emit_tables(results, fmt, output, top)


def _multi_kernel_notes(findings) -> list[str]:
    """A variant that launched several kernels (a host launcher's split-K, a library call) gets a row per kernel;
    say so, since each row's model figures are the whole GEMM's."""
    from gemmprof.adapters.kernel_names import base_kernel_name

    kernels: dict[str, list[str]] = {}
    for f in findings:
        if f.nvtx_range:
            kernels.setdefault(f.variant, []).append(base_kernel_name(f.kernel_name))
    return [f"{v}: {len(set(ks))} kernels under one variant ({', '.join(dict.fromkeys(ks))}): one row each; the "
            "FLOP, byte and TFLOP/s figures of each row are against the whole GEMM" for v, ks in kernels.items()
            if len(set(ks)) > 1]


def _read(path: str, ncu_path: str | None):
    from gemmprof.adapters.ncu import report as ncu
    from gemmprof.adapters.ncu import run as ncu_run
    from gemmprof.results.files import not_a_file

    why = not_a_file(path)
    if why:
        raise InputError(f"--from: {path} {why}")
    if path.endswith((".ncu-rep", ".ncu-repz")):
        return _read_report(path, ncu_path)
    report = ncu.read_csv_file(path)
    if not any(launch.metrics for launch in report.launches) and report.warnings:  # every row left out
        raise InputError(f"--from: {path}: nothing to show: every row is damaged ({len(report.warnings)} left out, "
                         f"the first: {report.warnings[0]})")
    if not report.launches:  # say why when the file is ncu output that explains it (permissions, no kernel)
        from gemmprof.results.files import read_text

        text = read_text(path)
        try:
            ncu_run.diagnose(ncu_run.Completed(0, text, ""), f"--from {path}")
        except (ncu_run.NcuPermissionError, ncu_run.NoKernelsProfiledError):
            raise
        except ncu_run.NcuError:
            pass
        if report.layout != "empty":
            raise InputError(f"--from: {path}: nothing to show: its table has no launch rows (none with a launch "
                             "ID in its first column)")
        raise InputError(f"--from: {path} holds no Nsight Compute CSV table (make one with ncu --csv ..., "
                         "or let gemmprof profile run ncu)")
    if not any(launch.metrics for launch in report.launches):
        raise InputError(f"--from: {path}: nothing to show: its launches hold no metric values")
    return report


def _read_report(path: str, ncu_path: str | None):
    """An .ncu-rep through the ncu-report wheel; where it is not installed, through `ncu --import` (its details and
    raw pages merged); with neither, one line saying what to install."""
    from gemmprof.adapters.ncu import rep
    from gemmprof.adapters.ncu import report as ncu
    from gemmprof.adapters.ncu import run as ncu_run
    from gemmprof.errors import ToolNotFoundError

    module = rep.load_module()
    if module is not None and ncu_path is None:
        return rep.read_report(path, module)
    try:
        exe = ncu_run.find_ncu(ncu_path)
    except ToolNotFoundError:
        raise InputError(f"--from {path}: reading .ncu-rep files needs NVIDIA's ncu-report wheel ({rep.INSTALL}) "
                         f"or Nsight Compute's ncu (in {ncu_run.USUAL_PLACE})") from None
    details = ncu_run.diagnose(ncu_run.execute(ncu_run.import_command(exe, path, "details")), f"ncu --import {path}")
    raw = ncu_run.diagnose(ncu_run.execute(ncu_run.import_command(exe, path, "raw")), f"ncu --import {path}")
    return ncu.merge(details, raw)


def _known_variants(notes: list[str]) -> dict:
    """dtype and traffic tiles of every ladder rung (default parameters) and cuBLAS baseline, by name."""
    from gemmprof.adapters.ncu.findings import VariantInfo
    from gemmprof.catalog.baselines import by_name

    infos = {b.name: VariantInfo(dtype=b.dtype) for b in by_name().values()}
    try:
        from gemmprof.catalog import spec as specmod
        from gemmprof.catalog.binding import bind

        for s in specmod.ladder():
            infos[s.name] = VariantInfo(dtype=s.dtype, tiles=bind(s).tiles())
    except GemmprofError as exc:
        notes.append(f"ladder specs not read ({exc}): no tiled traffic model")
    return infos


def _live(variants, all_, spec_files, dtype, params, cublas, shape, sections, pc_sampling, skip_metrics,
          clock_control, ncu_path, callables=(), arrays="cupy", c_dtype="fp32"):

    from gemmprof.adapters.ncu import run as ncu_run
    from gemmprof.adapters.ncu.findings import VariantInfo
    from gemmprof.catalog.baselines import (
        for_kernels,
        torch_installed,
        torch_matmul_name,
        torch_matmul_writes,
    )
    from gemmprof.catalog.selection import choose
    from gemmprof.commands.run import _device_name
    from gemmprof.measure import python_jobs

    refs = python_jobs.refs(callables)  # the child imports the files; their variant names are known from the text
    if not variants and not all_ and not spec_files and not refs:
        raise InputError("no variants selected: name rungs (e.g. 1-6, 10, warptiling), pass --all, --spec FILE or "
                         "--callable FILE.py:function, or read a CSV with --from FILE")
    if dtype == "tf32":
        raise InputError("--dtype tf32 selects no rungs (the ladder is fp32 and fp16; cublas_tf32 comes with --cublas)")
    metrics = ncu_run.metric_list(pc_sampling, tuple(skip_metrics), dtype)
    bound = choose(variants, all_=all_, dtype=dtype, spec_files=spec_files, params=params) \
        if variants or all_ or spec_files else []
    exe = ncu_run.find_ncu(ncu_path)  # bad options and a missing ncu are said before anything is compiled
    device = _device_name() if bound else None
    if device:  # the tuned defaults the child `gemmprof run` will use (`tune --keep`): build and model those
        bound = choose(variants, all_=all_, dtype=dtype, spec_files=spec_files, params=params, tuned_for=device)
    _compile_first(bound, shape)
    chosen = [b.spec for b in bound]
    sms = _device_sms() if device else None  # tiles fitted to the SM count (h12) are modelled as the child runs them
    modelled = [_planned(b, shape, sms) for b in bound]  # a planning entry: the rung it chooses, as the child runs it
    infos: dict[str, VariantInfo] = {b.variant_name: VariantInfo(dtype=b.run_dtype,
                                                                 tiles=b.tiles(shape, sms) if b.spec.traffic else None)
                                     for b in modelled}  # no traffic: block, no model bytes
    infos.update({r.name: VariantInfo(dtype=dtype or "fp32") for r in refs})
    if cublas:
        pairs = {(k.run_dtype, k.spec.abi.c_dtype) for k in bound} | ({(dtype or "fp32", c_dtype)} if refs else set())
        infos.update({b.name: VariantInfo(dtype=b.dtype) for b in for_kernels(pairs)})
        if refs and torch_installed() and torch_matmul_writes(dtype or "fp32", c_dtype):
            infos[torch_matmul_name(c_dtype)] = VariantInfo(dtype=dtype or "fp32")  # the range a child opens
    run_args = tuple(f"--param={p}" for p in params) + (() if cublas else ("--no-cublas",))
    run_args += ("--dtype", "bf16") if dtype == "bf16" else ()  # the child builds the same rungs for bf16
    run_args += ("--dtype", dtype) if refs and dtype and dtype != "bf16" else ()  # the callables' input dtype
    run_args += ("--arrays", arrays) if refs and arrays != "cupy" else ()
    run_args += ("--c-dtype", c_dtype) if refs and c_dtype != "fp32" else ()
    names = [s.name for s in chosen] + [r.name for r in refs]
    own = {Path(f).resolve() for f in spec_files}  # the child loads the user's specs again from their files
    selectors = tuple(s.name for s in chosen if Path(s.path).resolve() not in own)
    selectors += tuple(x for f in spec_files for x in ("--spec", str(f)))
    selectors += tuple(x for r in refs for x in ("--callable", r.text))
    cmd = ncu_run.build_command(exe, sys.executable, names, shape, selectors=selectors,
                                sections=tuple(sections) or ncu_run.DEFAULT_SECTIONS, metrics=metrics,
                                clock_control=clock_control, run_args=run_args,
                                also_profile=tuple(b for b in infos if b not in names))
    click.echo(f"running: {shlex.join(cmd)}", err=True)
    done = ncu_run.execute(cmd)
    ranges = ", ".join(f'"gemmprof {name} {shape.label}"' for name in infos)
    report = ncu_run.diagnose(done, "ncu", f": no launch ran inside {ranges} (did the variants pass verification? "
                                          f"try `gemmprof run {' '.join(infos)} --size ...` first)")
    return report, infos, done.stdout, {b.variant_name: b for b in bound}


def _planned(kernel, shape, sms):
    """A planning entry as the rung it chooses at `shape` (its own entry where the SM count is unknown or it
    rejects the shape: the child's row says why)."""
    from gemmprof.catalog.plan import resolve
    from gemmprof.errors import SpecError

    try:
        return resolve(kernel, shape, sms)
    except SpecError:
        return kernel


def _device_sms() -> int | None:
    """Device 0's multiprocessor count, or None where it cannot be read."""
    from gemmprof.measure.build import device_sms

    try:
        return device_sms()
    except Exception:  # CuPy's driver and runtime errors: the child run reports those
        return None


def _compile_first(bound, shape) -> None:
    """Build every kernel in the parallel pool before ncu starts: the child `gemmprof run` under ncu (which follows
    every process it starts) then loads cubins from the cache instead of running nvcc one kernel at a time."""
    from gemmprof.measure import compile_pool

    with compile_pool.for_run([(b, None) for b in bound], shape, None) as ahead:
        if len(ahead):
            click.echo(compile_pool.announce(ahead), err=True)
            ahead.wait_all()
    launchers = [b for b in bound if b.spec.launcher is not None]
    if launchers:  # their shared libraries too: nvcc would otherwise run under ncu, which follows every process
        from gemmprof.measure.build import device_arch
        from gemmprof.measure.launcher import build_library

        try:
            arch = device_arch()
        except Exception:  # noqa: BLE001 - no device to read: the child builds them and reports what fails
            return
        for b in launchers:
            build_library(b, arch)
