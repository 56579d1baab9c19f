"""gemmprof run: compile, verify and time rungs of the ladder (or your own kernel) on the GPU."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

import click

from gemmprof.commands._options import (
    FINITE,
    FiniteFloat,
    gpu_options,
    refuse_overwrite,
    resolve_gpu,
    resolve_shape,
    shape_options,
)
from gemmprof.errors import InputError, require_cupy
from gemmprof.render.table import FORMATS, choose_format, emit


@click.command("run")
@click.argument("variants", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every rung of the ladder (with --dtype, every rung of that dtype).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default=None,
              help="Only rungs of this dtype (bf16: the rungs whose source also builds for bf16, h4-h6).")
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False),
              help="Run your own kernel or host launcher from its YAML spec (repeatable). See docs/kernel-spec.md "
                   "and examples/.")
@shape_options
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Override a tunable parameter of the selected rungs (repeatable), e.g. --param BK=16.")
@click.option("--alpha", type=FINITE, default=1.0, show_default=True)
@click.option("--beta", type=FINITE, default=0.0, show_default=True, help="With beta=0, C is poisoned, never read.")
@gpu_options
@click.option("--compiler", "compiler", default=None, metavar="nvcc|nvrtc|nvcc,nvrtc",
              help="Compiler of the kernels (default: the spec's pin, else nvcc where found, else NVRTC). "
                   "Two, comma-separated, time both builds of every kernel and compare them.")
@click.option("--spec-defaults", is_flag=True,
              help="Use the specs' default parameters even where `gemmprof tune --keep` kept tuned ones for this GPU.")
@click.option("--no-cublas", is_flag=True, help="Skip the cuBLAS baselines (then no % of cuBLAS).")
@click.option("--seed", type=click.IntRange(0, 2 ** 32 - 1), default=None, help="Seed for the random inputs (default: fresh every run).")
@click.option("--budget", type=FiniteFloat(positive=True, maximum=3600), default=1.0, show_default=True, help="Seconds of timed launches per variant.")
@click.option("--max-reps", type=click.IntRange(1, 10 ** 6), default=200, show_default=True)
@click.option("--no-flush", is_flag=True, help="Do not flush L2 between repetitions.")
@click.option("--launch-once", is_flag=True, help="Verify, then launch each variant once in its NVTX range (for ncu).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format for the terminal.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Save the full results (JSON: device, versions, clocks, raw samples) or a table (.csv/.txt).")
@click.option("--child-results", type=click.Path(dir_okay=False), hidden=True)
def command(variants, all_, dtype, spec_files, size, m, n, k, params, alpha, beta, gpu, gpu_file, compiler,
            spec_defaults, no_cublas, seed,
            budget, max_reps, no_flush, launch_once, fmt, output, child_results):
    """Compile, verify against cuBLAS and time rungs of the GEMM ladder on the GPU.

    VARIANTS are rung ids (5, 3b, h2), ranges (1-6), or names (warptiling); several may be given.
    Every launch runs inside an NVTX range "gemmprof NAME MxNxK" so nsys and ncu can find it.

    \b
    Examples:
      gemmprof run --all --size 4096 -o results.json
      gemmprof run 1-6 10 --size 4096
      gemmprof run 10 --param BK=16 --param TM=8 -m 4095 -n 4097 -k 1023
      gemmprof run --spec my_kernel.yaml --size 2048 --format json
      gemmprof run 9-12 --compiler nvcc,nvrtc
    """
    from gemmprof.catalog.selection import choose
    from gemmprof.measure.runner import Runner, RunOptions, baselines_for, new_result
    from gemmprof.measure.timing import TimingConfig
    from gemmprof.render.compiler_tables import compiler_table
    from gemmprof.render.run_tables import run_table

    refuse_overwrite({"-o": output, "--child-results": child_results}, [*spec_files, gpu_file])
    shape = resolve_shape(size, m, n, k)
    kernels = choose(variants, all_=all_, dtype=dtype, spec_files=spec_files, params=params)
    compilers = _compilers(compiler)
    require_cupy()
    device = None if spec_defaults else _device_name()
    if device:  # the device's tuned defaults (`gemmprof tune --keep`) are kept per device model
        kernels = choose(variants, all_=all_, dtype=dtype, spec_files=spec_files, params=params, tuned_for=device)
    profile = resolve_gpu(gpu, gpu_file, prefer_current_device=True)
    options = RunOptions(shape=shape, alpha=alpha, beta=beta, seed=seed, baselines=not no_cublas,
                         launch_once=launch_once, compiler=compilers[0] if len(compilers) == 1 else None,
                         timing=TimingConfig(budget_s=budget, max_reps=max_reps, flush_l2=not no_flush))
    runner = Runner(profile, options)
    result = new_result(profile, options, runner, "gemmprof " + shlex.join(sys.argv[1:]))
    jobs = [("baseline", b) for b in baselines_for(kernels, options.baselines)] + [("kernel", (kk, c)) for kk in kernels for c in compilers]
    # Nothing lost: the results file is written before the first variant (an unwritable path fails now, not after
    # the GPU work) and rewritten atomically after each one, so Ctrl-C or a late error keeps every finished variant.
    save_to = child_results or (output if output and Path(output).suffix.lower() == ".json" else None)
    save = (lambda: result.save(save_to)) if save_to else (lambda: None)
    if output and not save_to:
        choose_format(fmt, output)  # an unknown extension is an error before the run, not after it
    save()
    try:
        context_lost = _run_jobs(runner, result, jobs, options, profile, params, save)
    except (KeyboardInterrupt, Exception):
        if save_to:
            click.echo(f"\nstopped: the {len(result.variants)} finished variants are saved in {save_to}", err=True)
        raise
    if child_results:
        _finish(context_lost, 0)
        return
    if save_to:
        click.echo(f"results saved to {output}", err=True)
        output = None
    if fmt == "json" and not output:
        import json

        click.echo(json.dumps(result.to_dict(), indent=1, default=str))
    else:
        emit(run_table(result), fmt, output)
        if len(compilers) > 1 and not output:
            emit(compiler_table(result, compilers), fmt, None)
    for v in result.variants:  # compiler logs and long messages do not fit the table's note column
        if v.status in ("FAIL", "error") and "\n" in v.message.strip():
            click.echo(f"\n{v.name} ({v.status}):\n{v.message}", err=True)
    _finish(context_lost, 1 if any(v.status in ("FAIL", "error") for v in result.variants) else 0)


def _compilers(text):
    if not text:
        return [None]
    names = [c.strip() for c in text.split(",") if c.strip()]
    bad = [c for c in names if c not in ("nvcc", "nvrtc")]
    if bad or not names or len(set(names)) != len(names):
        raise InputError(f"--compiler {text!r}: give nvcc, nvrtc or nvcc,nvrtc")
    return names


def _device_name() -> str | None:
    """Device 0's name, or None where it cannot be read (then no tuned defaults apply)."""
    from gemmprof.measure.device import device_name

    try:
        return device_name()
    except Exception:  # CuPy's driver and runtime errors, or no CuPy: the run itself reports those
        return None


def _finish(context_lost: bool, code: int):
    """Exit with `code`. After a kernel fault the dead CUDA context makes CuPy's teardown print tracebacks for
    every module it unloads: everything is written by now, so leave without that teardown."""
    if context_lost:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if code:
        sys.exit(code)


def _run_jobs(runner, result, jobs, options, profile, params, save):
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from gemmprof.measure.runner import ContextLost

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), transient=True, console=_stderr_console()) as bar:
        task = bar.add_task("running", total=len(jobs))
        for i, (kind, item) in enumerate(jobs):
            name = item.name if kind == "baseline" else item[0].spec.name
            bar.update(task, description=f"{name:<28}")
            try:
                row = runner.run_baseline(item) if kind == "baseline" else runner.run_kernel(*item)
            except ContextLost as exc:
                result.variants.append(_lost_row(item, kind, str(exc)))
                save()
                result.variants.extend(_continue_in_child(jobs[i + 1:], options, profile, runner.seed, params))
                save()
                return True
            result.variants.append(row)
            save()
            bar.advance(task)
    return False


def _lost_row(item, kind, message):
    from gemmprof.results.run import VariantResult

    if kind == "baseline":
        return VariantResult(id="cuBLAS", name=item.name, title=item.title, dtype=item.dtype, kind="baseline",
                             status="error", message=message)
    item = item[0] if isinstance(item, tuple) else item
    s = item.spec
    return VariantResult(id=s.id, name=s.name, title=s.title, dtype=s.dtype, status="error", message=message,
                         params=dict(item.params))


def _continue_in_child(rest, options, profile, seed, params):
    """A faulting kernel kills the CUDA context: finish the remaining variants in a fresh process (same inputs)."""
    from gemmprof.measure.child import ChildRun, run_child

    # baselines run first, so none are left here; with two compilers the child finishes with the first of them
    kernels = list({id(item[0]): item[0] for kind, item in rest if kind == "kernel"}.values())
    compiler = next((item[1] for kind, item in rest if kind == "kernel" and item[1]), options.compiler)
    if not kernels:
        return []
    names = {n for k in kernels for n in k.spec.params}  # --param NAME=V still meant for a remaining rung
    selectors = []
    for k in kernels:
        selectors += [k.spec.name] if k.spec.is_ladder_rung else ["--spec", str(k.spec.path)]
    with tempfile.TemporaryDirectory() as tmp:
        child = ChildRun(tuple(selectors), options.shape, alpha=options.alpha, beta=options.beta, seed=seed,
                         budget_s=options.timing.budget_s, max_reps=options.timing.max_reps, gpu_file=profile.path,
                         params=tuple(p for p in params if p.split("=")[0].strip() in names), no_cublas=True,
                         launch_once=options.launch_once, compiler=compiler, no_flush=not options.timing.flush_l2,
                         dtype="bf16" if any(k.run_dtype == "bf16" for k in kernels) else None,
                         child_results=str(Path(tmp) / "child.json"))
        result, _ = run_child(child)
    if result is None:
        return [_lost_row(k, "kernel", "not run: the CUDA context was lost and the retry failed") for k in kernels]
    return result.variants


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)
