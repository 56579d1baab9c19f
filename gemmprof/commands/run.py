"""gemmprof run: compile, verify and time rungs of the ladder (or your own kernel) on the GPU."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

import click

from gemmprof._started import elapsed_s
from gemmprof.commands._options import (
    FINITE,
    FiniteFloat,
    WholeNumber,
    c_dtype_option,
    fp8_scales,
    gpu_options,
    method_config,
    method_options,
    refuse_overwrite,
    resolve_gpu,
    resolve_shape,
    run_c_dtype,
    scales_option,
    shape_options,
)
from gemmprof.errors import InputError, require_cupy
from gemmprof.measure.arrays import ARRAY_KINDS
from gemmprof.render.table import FORMATS, choose_format, emit

INTERLEAVE_ROUNDS = 10  # batches per variant with --interleave: enough turns to spread drift, few enough to size


def view_options(f):
    """--wide and --columns: which columns the terminal table shows (JSON and CSV always keep every field)."""
    f = click.option("--columns", default=None, metavar="A,B,...",
                     help="Table columns to show, by key or header (e.g. rung,name,median_ms,regs,occ,note).")(f)
    return click.option("--wide", is_flag=True,
                        help="Show every column (min, spread, % peak, model intensity, registers, shared memory, "
                             "occupancy, error, clocks) that fits the terminal; the default shows the main ones.")(f)


@click.command("run")
@click.argument("variants", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every rung of the ladder (with --dtype, every rung of that dtype).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16", "e4m3", "e5m2"]), default=None,
              help="Only rungs of this dtype (bf16: the rungs whose source also builds for bf16, h4-h13; e4m3: "
                   "h14); also the input dtype of --callable functions (default fp32). fp8 (e4m3, e5m2): see "
                   "--scales and docs/fp8.md.")
@scales_option
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False),
              help="Run your own kernel or host launcher from its YAML spec (repeatable). See docs/kernel-spec.md "
                   "and examples/.")
@click.option("--callable", "callables", multiple=True, metavar="FILE.py:FUNCTION",
              help="Verify and time a Python function fn(A, B, C, alpha, beta) that fills C in place (repeatable): "
                   "A and B in --dtype (default fp32), C in --c-dtype (default fp32). See docs/callables.md.")
@c_dtype_option
@click.option("--arrays", type=click.Choice(ARRAY_KINDS), default="cupy", show_default=True,
              help="What --callable functions receive: CuPy arrays, or torch tensors over the same memory (DLPack).")
@shape_options
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Override a tunable parameter of the selected rungs (repeatable), e.g. --param BK=16.")
@click.option("--alpha", type=FINITE, default=1.0, show_default=True, help="C = alpha * A @ B + beta * C.")
@click.option("--beta", type=FINITE, default=0.0, show_default=True, help="With beta=0, C is poisoned, never read.")
@gpu_options
@click.option("--compiler", "compiler", default=None, metavar="nvcc|nvrtc|nvcc,nvrtc",
              help="Compiler of the kernels (default: the spec's pin, else nvcc where found, else NVRTC). "
                   "Two, comma-separated, time both builds of every kernel and compare them.")
@click.option("--spec-defaults", is_flag=True,
              help="Use the specs' default parameters even where `gemmprof tune --keep` kept tuned ones for this GPU.")
@click.option("--no-cublas", is_flag=True,
              help="Skip the baselines: cuBLAS, and torch.matmul beside --callable (then no % of cuBLAS).")
@click.option("--cublaslt-best", "cublaslt_best", type=WholeNumber(0, 64), default=0, show_default=True,
              metavar="N",
              help="Beside each cuBLAS row, cuBLASLt's best of its heuristic's top N algorithms (8 is usual): each "
                   "verified, all timed round-robin, the fastest kept as its own row and timed again like every "
                   "row; 0: none. Costs N verifications and timings more per cuBLAS row. Needs nvmath-python "
                   "(pip install 'gemmprof[cublaslt]').")
@click.option("--seed", type=WholeNumber(0, 2 ** 32 - 1), default=None, help="Seed for the random inputs (default: fresh every run).")
@click.option("--budget", type=FiniteFloat(positive=True, maximum=3600), default=1.0, show_default=True,
              help="Seconds of timed launches per variant, at most (see --precision).")
@click.option("--precision", type=FiniteFloat(minimum=0, maximum=100), default=0.5, show_default=True, metavar="PCT",
              help="Stop timing a variant once the 95% confidence interval of its median is within +-PCT% of it "
                   "(at least 10 launches); 0 spends the whole --budget. --interleave always spends it.")
@click.option("--max-reps", type=WholeNumber(1, 10 ** 6), default=200, show_default=True,
              help="At most this many timed launches per variant (--budget decides how many: at least 10 where "
                   "this allows).")
@click.option("--no-flush", is_flag=True, help="Do not flush L2 between repetitions (the same as --l2 warm).")
@method_options()
@click.option("--interleave", is_flag=True,
              help=f"Verify every variant first, then time them together: each one's launches in "
                   f"{INTERLEAVE_ROUNDS} batches taken in turns, so clock drift reaches all alike. Under "
                   "the power cap a batch starts at the clock the one before it left (a light one lends the next "
                   "a faster clock): each round runs in a row of a balanced Latin square, so every variant "
                   "follows every other one equally often. A variant whose late launches in its turns ran more "
                   "than 5% off its early ones says so in its note: its figure depends on the turn's length.")
@click.option("--launch-once", is_flag=True, help="Verify, then launch each variant once in its NVTX range (for ncu).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format for the terminal.")
@view_options
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Save the full results (JSON: device, versions, clocks, raw samples) or a table (.csv/.txt).")
@click.option("--child-results", type=click.Path(dir_okay=False), hidden=True)
def command(variants, all_, dtype, scales, spec_files, callables, c_dtype, arrays, size, m, n, k, params, alpha, beta,
            gpu, gpu_file, compiler, spec_defaults, no_cublas, cublaslt_best, seed,
            budget, precision, max_reps, no_flush, regime, fill, l2, cool_down, expect_clock, energy, checks,
            interleave, launch_once, fmt, wide, columns, output, child_results):
    """Compile, verify against cuBLAS and time rungs of the GEMM ladder on the GPU.

    VARIANTS are rung ids (5, 3b, h2), ranges (1-6), or names (warptiling); several may be given. `plan` runs the
    Hopper rung its rules choose for the shape and this GPU's SM count, and says which and why in its note.
    --callable FILE.py:function adds a Python function fn(A, B, C, alpha, beta) that fills C (fp32, or the half C
    --c-dtype names), verified and timed the same way (and a torch.matmul row where torch is installed).
    Every launch runs inside an NVTX range "gemmprof NAME MxNxK" so nsys and ncu can find it. Every nvcc build
    starts first, in a pool of processes; each kernel is verified and timed as soon as its own build is done.
    The table fits the terminal (COLUMNS when piped, else 80); --wide or --columns show more, JSON and CSV (-o)
    keep every field.

    \b
    Examples:
      gemmprof run --all --size 4096 -o results.json
      gemmprof run 1-6 10 --size 4096
      gemmprof run 10 --param BK=16 --param TM=8 -m 4095 -n 4097 -k 1023
      gemmprof run 13 14 15 --interleave --budget 3    # close variants, timed in turns
      gemmprof run --spec my_kernel.yaml --size 2048 --format json
      gemmprof run 9-12 --compiler nvcc,nvrtc
      gemmprof run --all --wide                    # every column; --columns rung,name,regs,occ,note picks them
      gemmprof run --callable examples/triton_matmul/triton_matmul.py:matmul --dtype fp16 --size 4096
      gemmprof run 15 --callable my_gemm.py:gemm --arrays torch   # torch tensors instead of CuPy arrays
      gemmprof run --callable examples/torch_matmul/torch_matmul.py:matmul --dtype fp16 --c-dtype fp16
      gemmprof run h12 --size 8192 --cublaslt-best 8   # beside cuBLAS: cuBLASLt's fastest of its top 8
      gemmprof run h14 --dtype e4m3 --scales 1x128 --size 4096   # fp8, block scales, beside cuBLASLt fp8
      gemmprof run --callable examples/triton_fp8/triton_fp8.py:matmul --dtype e4m3 --scales tensor
    """
    from gemmprof.catalog.selection import choose
    from gemmprof.measure import python_jobs
    from gemmprof.measure import timing as timing_module
    from gemmprof.measure.runner import Runner, RunOptions, baselines_for, new_result
    from gemmprof.measure.timing import TimingConfig
    from gemmprof.render.compiler_tables import compiler_table
    from gemmprof.render.run_tables import run_table, terminal_view

    timing_module.capture()  # CuPy's timing functions, taken before any --callable file is imported
    refs = python_jobs.refs(callables)
    if arrays != "cupy" and not refs:
        raise InputError(f"--arrays {arrays}: only for --callable functions")
    refuse_overwrite({"-o": output, "--child-results": child_results}, [*spec_files, gpu_file, *(r.path for r in refs)])
    if interleave and launch_once:
        raise InputError("--interleave and --launch-once: --launch-once times nothing, give one")
    if no_flush and l2 not in (None, "warm"):
        raise InputError(f"--no-flush and --l2 {l2}: --no-flush is --l2 warm, give one")
    if cublaslt_best and (no_cublas or launch_once):
        raise InputError(f"--cublaslt-best {cublaslt_best} and {'--no-cublas' if no_cublas else '--launch-once'}: "
                         + ("it is a baseline beside cuBLAS" if no_cublas else
                            "it chooses by timing and --launch-once times nothing") + ", give one")
    shape = resolve_shape(size, m, n, k)
    run_scales = fp8_scales(scales, dtype, shape.K)  # fp8: how A and B are scaled (docs/fp8.md)
    fp8 = {"c_dtype": c_dtype, "scales": scales}  # --c-dtype and --scales for the fp8 rungs (bound like --dtype)
    any_kernels = bool(variants or all_ or spec_files or not refs)  # --callable alone chooses no rungs
    kernels = choose(variants, all_=all_, dtype=dtype, spec_files=spec_files, params=params, **fp8) if any_kernels else []
    c_dtype = run_c_dtype(c_dtype, refs, dtype, kernels, scales)
    compilers = _compilers(compiler)
    py_jobs = python_jobs.load_all(refs, dtype or "fp32", arrays, c_dtype, run_scales)  # a bad file or function fails before the GPU
    if gpu or gpu_file:
        resolve_gpu(gpu, gpu_file)  # so does a bad GPU spec
    require_cupy()
    device = None if spec_defaults or not any_kernels else _device_name()
    if device:  # the device's tuned defaults (`gemmprof tune --keep`) are kept per device model
        kernels = choose(variants, all_=all_, dtype=dtype, spec_files=spec_files, params=params, tuned_for=device, **fp8)
    gpu_spec = resolve_gpu(gpu, gpu_file, prefer_current_device=True)
    options = RunOptions(shape=shape, alpha=alpha, beta=beta, seed=seed, baselines=not no_cublas,
                         launch_once=launch_once, compiler=compilers[0] if len(compilers) == 1 else None, scales=run_scales,
                         timing=TimingConfig(budget_s=budget, max_reps=max_reps, flush_l2=not no_flush, precision=precision / 100,
                                             interleave_rounds=INTERLEAVE_ROUNDS if interleave else 0,
                                             **method_config(regime, fill, "warm" if no_flush and not l2 else l2,
                                                             cool_down, expect_clock, energy, checks)))
    runner = Runner(gpu_spec, options)
    result = new_result(gpu_spec, options, runner, "gemmprof " + shlex.join(sys.argv[1:]))
    jobs = [("baseline", b) for b in baselines_for(kernels, options.baselines)]
    jobs += python_jobs.baseline_jobs(py_jobs, options.baselines, lambda note: click.echo(f"note: {note}", err=True),
                                      [b for _, b in jobs])
    jobs += python_jobs.fp8_baseline_jobs(kernels, py_jobs, options.baselines,
                                          lambda note: click.echo(f"note: {note}", err=True), shape, run_scales)
    jobs += _cublaslt_jobs(jobs, cublaslt_best, result)
    jobs += [("kernel", (kk, c)) for kk in kernels for c in compilers] + py_jobs
    # Nothing lost: the results file is written before the first variant (an unwritable path fails now, not after
    # the GPU work) and rewritten atomically after each one, so Ctrl-C or a late error keeps every finished variant.
    save_to = child_results or (output if output and Path(output).suffix.lower() == ".json" else None)
    save = (lambda: result.save(save_to)) if save_to else (lambda: None)
    if output and not save_to:
        choose_format(fmt, output)  # an unknown extension is an error before the run, not after it
    save()
    runner.ahead = _compile_ahead(jobs, options)
    try:
        context_lost = _run_jobs(runner, result, jobs, options, gpu_spec, params, save, dtype)
        result.elapsed_s = elapsed_s()  # gemmprof's time so far: the checks' cost is shown against it
        save()
    except (KeyboardInterrupt, Exception):
        if save_to:
            click.echo(f"\nstopped: the {len(result.variants)} finished variants are saved in {save_to}", err=True)
        raise
    finally:
        runner.ahead.close()
        runner.close()
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
        full = run_table(result)
        emit(terminal_view(full, _column_list(columns), wide) if choose_format(fmt, output) == "table" else full,
             fmt, output)
        if len(compilers) > 1 and not output:
            emit(compiler_table(result, compilers), fmt, None)
    for v in result.variants:  # compiler logs and long messages do not fit the table's note column
        if v.status in ("FAIL", "error") and "\n" in v.message.strip():
            click.echo(f"\n{v.name} ({v.status}):\n{v.message}", err=True)
    _finish(context_lost, 1 if any(v.status in ("FAIL", "error") for v in result.variants) else 0)


def _cublaslt_jobs(jobs, n, result):
    """cuBLASLt's best of n beside each cuBLAS row; without nvmath-python none, and the run's notes say why."""
    if not n:
        return []
    from gemmprof.catalog.baselines import cublaslt_best
    from gemmprof.measure import cublaslt

    why = cublaslt.unavailable()
    if why:
        note = f"no cuBLASLt best-of-{n} rows: {why}"
        click.echo(f"note: {note}", err=True)
        result.notes.append(note)
        return []
    return [("cublaslt", cublaslt_best(b, n)) for kind, b in jobs if kind == "baseline"]


def _prepare(runner, kind, item):
    """A job verified, its launch ready to be timed (with --interleave)."""
    if kind == "cublaslt":
        from gemmprof.measure import cublaslt

        return cublaslt.prepare(runner, item)
    return runner.prepare_baseline(item) if kind == "baseline" else runner.prepare_kernel(*item)


def _column_list(text):
    return tuple(c for c in text.split(",") if c.strip()) if text else None


def _compile_ahead(jobs, options):
    """Every nvcc build of the run starts now, in the pool; the GPU takes each kernel as soon as it is built."""
    from gemmprof.measure import compile_pool

    ahead = compile_pool.for_run([item for kind, item in jobs if kind == "kernel"], options.shape, options.compiler)
    if len(ahead):
        click.echo(compile_pool.announce(ahead), err=True)
    return ahead


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


def _annotated(runner, options, gpu_spec):
    """Each row, once measured, gets the model's figures (measure first, annotate after, in one place)."""
    from gemmprof.model.annotate import annotate

    def mark(row, kind, item):
        kernel = item[0] if kind == "kernel" else None
        try:
            sms = runner.device["sm_count"]
        except Exception:  # a stand-in runner or no device: the GPU spec's count
            sms = None
        return annotate(row, options.shape, options.beta, gpu_spec, kernel, sms, options.timing.l2_policy)

    return mark


def _run_jobs(runner, result, jobs, options, gpu_spec, params, save, dtype):
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from gemmprof.measure.callables import run_callable
    from gemmprof.measure.runner import ContextLost

    annotate = _annotated(runner, options, gpu_spec)

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), transient=True, console=_stderr_console()) as bar:
        interleave = bool(options.timing.interleave_rounds)
        task = bar.add_task("running", total=len(jobs) + interleave)
        prepared = []  # with --interleave: (row, launch) of every variant, timed together after the last
        try:
            for i, (kind, item) in enumerate(jobs):
                name = item.name if kind in ("baseline", "cublaslt") else item[0].spec.name if kind == "kernel" \
                    else item[0].name
                bar.update(task, description=f"verifying/timing {name:<28}")
                try:
                    if kind == "callable":  # a Python function is verified and timed at once, also with --interleave
                        row = run_callable(runner, *item)
                    elif interleave:
                        row, launch = _prepare(runner, kind, item)
                        prepared.append((row, launch, kind, item))
                    elif kind == "cublaslt":
                        row = runner._time(*_prepare(runner, kind, item))
                    else:
                        row = runner.run_baseline(item) if kind == "baseline" else runner.run_kernel(*item)
                    if not interleave or kind == "callable":
                        annotate(row, kind, item)
                except ContextLost as exc:
                    _untimed([p[:2] for p in prepared], "not timed: a later variant faulted and lost the CUDA "
                                                        "context before the interleaved timing")
                    result.variants.append(_lost_row(item, kind, str(exc)))
                    save()
                    result.variants.extend(_continue_in_child(jobs[i + 1:], options, gpu_spec, runner.seed, params,
                                                              dtype))
                    save()
                    return True
                result.variants.append(row)
                save()
                bar.advance(task)
            if interleave:
                bar.update(task, description=f"{'timing, interleaved':<28}")
                try:
                    runner.time_together([p[:2] for p in prepared])
                except ContextLost:  # the rows say so; nothing is left to run
                    save()
                    return True
                for row, _, kind, item in prepared:
                    annotate(row, kind, item)
                save()
                bar.advance(task)
        except BaseException:  # Ctrl-C or an error: verified rows without a time must not read as finished
            _untimed([(r, la) for r, la, *_ in prepared if r.timing is None], "not timed: the run stopped before or "
                                                                               "during the interleaved timing")
            save()
            raise
    return False


def _untimed(prepared, message):
    for row, launch in prepared:
        if launch is not None:
            row.status, row.message = "error", message


def _lost_row(item, kind, message):
    from gemmprof.results.run import VariantResult

    if kind in ("baseline", "cublaslt"):
        return VariantResult(id="cuBLASLt" if kind == "cublaslt" else "cuBLAS", name=item.name, title=item.title,
                             dtype=item.dtype, kind="baseline", status="error", message=message,
                             c_dtype=item.c_dtype)
    if kind == "callable":
        from gemmprof.measure.callables import lost_row

        return lost_row(item, message)
    item = item[0] if isinstance(item, tuple) else item
    s = item.spec
    return VariantResult(id=s.id, name=s.name, title=s.title, dtype=s.dtype, status="error", message=message,
                         params=dict(item.params))


def _continue_in_child(rest, options, gpu_spec, seed, params, dtype=None):
    """A faulting kernel kills the CUDA context: finish the remaining variants in a fresh process (same inputs)."""
    from gemmprof.measure import python_jobs
    from gemmprof.measure.child import ChildRun, run_child

    # baselines run first, so none are left here; with two compilers the child finishes with the first of them
    kernels = list({id(item[0]): item[0] for kind, item in rest if kind == "kernel"}.values())
    compiler = next((item[1] for kind, item in rest if kind == "kernel" and item[1]), options.compiler)
    py_rest, py_args = python_jobs.child_selectors(rest)
    if not kernels and not py_rest:
        return []
    names = {n for k in kernels for n in k.spec.params}  # --param NAME=V still meant for a remaining rung
    selectors = []
    for k in kernels:
        selectors += [k.spec.name] if k.spec.is_ladder_rung else ["--spec", str(k.spec.path)]
    selectors += py_args
    if py_rest and dtype and dtype != "bf16":  # the callables' input dtype (bf16 is passed below)
        selectors += ["--dtype", dtype]
    with tempfile.TemporaryDirectory() as tmp:
        child = ChildRun(tuple(selectors), options.shape, alpha=options.alpha, beta=options.beta, seed=seed,
                         budget_s=options.timing.budget_s, max_reps=options.timing.max_reps, gpu_file=gpu_spec.path,
                         params=tuple(p for p in params if p.split("=")[0].strip() in names), no_cublas=True,
                         launch_once=options.launch_once, compiler=compiler, no_flush=not options.timing.flush_l2,
                         scales=None if options.scales == "tensor" else options.scales,
                         dtype="bf16" if dtype == "bf16" or any(k.run_dtype == "bf16" for k in kernels) else None,
                         child_results=str(Path(tmp) / "child.json"))
        result, _ = run_child(child)
    if result is None:
        lost = "not run: the CUDA context was lost and the retry failed"
        return [_lost_row(k, "kernel", lost) for k in kernels] + [_lost_row(j, "callable", lost) for j in py_rest]
    return result.variants


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)
