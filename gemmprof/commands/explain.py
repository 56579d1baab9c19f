"""gemmprof explain: what limits a kernel, ranked, with what would lift it; --ladder: that chain checked on the ladder."""

from __future__ import annotations

import click

from gemmprof.commands._options import (
    c_dtype_option,
    callable_c_dtype,
    output_options,
    refuse_directories,
    refuse_overwrite,
    resolve_gpu,
    resolve_shape,
    shape_options,
)
from gemmprof.errors import GemmprofError, InputError


@click.command("explain")
@click.argument("variants", nargs=-1)
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False),
              help="Explain your own kernel from its YAML spec (repeatable).")
@click.option("--callable", "callables", multiple=True, metavar="FILE.py:FUNCTION",
              help="Explain a Python function (Triton, torch ...) from ncu's measurement of its launch alone: with "
                   "--profile-results (saved by `gemmprof profile --callable ... --save`) or --measure (repeatable).")
@c_dtype_option
@shape_options
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default=None,
              help="Only rungs of this dtype (bf16 builds h4-h13 for bf16).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a rung parameter (repeatable).")
@click.option("--profile-results", "profile_files", multiple=True, type=click.Path(dir_okay=False),
              metavar="FILE.json", help="Nsight Compute's findings saved by `gemmprof profile --save` (repeatable): "
                                        "stalls, pipes, sectors, conflicts.")
@click.option("--profile", "profile_files_old", multiple=True, type=click.Path(dir_okay=False), hidden=True)
@click.option("--results", "results_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE.json",
              help="A saved `gemmprof run` (repeatable): SASS mix, registers and median time, no compile needed.")
@click.option("--measure", is_flag=True, help="Profile the kernels now with Nsight Compute (GPU and ncu needed).")
@click.option("--ladder", type=click.Choice(["fp32", "fp16"]), default=None,
              help="The ladder check: each rung's top limiter against the next rung's technique and speedup "
                   "(needs --results; --profile-results makes it better).")
@click.option("--gpu", "gpu", default=None, metavar="NAME",
              help="GPU spec name (see `gemmprof gpus`); default: the GPU that --measure profiles, else the one the "
                   "saved files name, else the current device, else H100 SXM.")
@click.option("--gpu-file", "gpu_file", type=click.Path(dir_okay=False), default=None, metavar="FILE.yaml",
              help="A GPU spec sheet of your own instead of --gpu (docs/gpu-spec-format.md).")
@click.option("-v", "--verbose", is_flag=True,
              help="Each limiter's evidence and remedy in full (the default table gives one line per limiter; "
                   "JSON and CSV always hold everything).")
@output_options
def command(variants, spec_files, callables, c_dtype, size, m, n, k, dtype, params, profile_files, profile_files_old,
            results_files, measure, ladder, gpu, gpu_file, verbose, fmt, output):
    """Rank what limits each kernel: the evidence (model, SASS, ncu), the time bound each limiter forces, the
    speedup lifting it predicts, and the technique that lifts it with the rung that teaches it.

    Offline it reads the analytic model and the SASS (from --results, else compiled here with nvcc); latency needs
    a measurement (--results, --profile-results or --measure). A technique the kernel already applies is never
    recommended.

    \b
    Examples:
      gemmprof explain 5 --size 4096                                  # offline: model + nvcc's SASS
      gemmprof explain 15 --results run.json --profile-results profile.json   # the run's time, ncu's stalls
      gemmprof explain --spec my_kernel.yaml --size 2048
      gemmprof explain --ladder fp32 --results run.json --profile-results profile.json
      gemmprof explain --callable examples/triton_matmul/triton_matmul.py:matmul --dtype bf16 -m 64 -n 4096 -k 4096 --measure
      gemmprof explain --callable my_gemm.py:gemm --profile-results profile.json   # saved by profile --callable --save
    """
    from gemmprof.measure import explain_inputs as inputs
    from gemmprof.render.explain_table import explanation_table, ladder_table
    from gemmprof.render.table import emit_many
    from gemmprof.results.loading import load
    from gemmprof.results.profile import ProfileResults
    from gemmprof.results.run import RunResult

    if profile_files_old:
        from gemmprof.commands._options import deprecated_alias

        deprecated_alias("--profile FILE.json", "--profile-results", "Nsight Compute's saved findings")
        profile_files = (*profile_files, *profile_files_old)
    files = [*profile_files, *results_files]
    refuse_directories(files, "a results file")
    if gpu_file:  # a GPU spec file is read now: a bad one is one line before anything else runs
        resolve_gpu(gpu, gpu_file)
    refuse_overwrite({"-o": output}, [*files, gpu_file])
    if measure and profile_files:
        raise InputError("--profile-results and --measure: give one (--measure profiles now, --profile-results "
                         "reads a saved one)")
    c_dtype = callable_c_dtype(c_dtype, callables)
    runs = [_typed(load(f), RunResult, f, "--results", "gemmprof run -o") for f in results_files]
    profiles = [_typed(load(f), ProfileResults, f, "--profile-results", "gemmprof profile --save") for f in profile_files]
    if callables:
        _explain_callables(callables, c_dtype, variants, spec_files, size, m, n, k, dtype, params, profiles, runs,
                           measure, ladder, gpu, gpu_file, verbose, fmt, output)
        return
    if ladder:
        if variants or spec_files or measure:
            raise InputError("--ladder checks a whole ladder from saved files: give no VARIANTS, --spec or --measure")
        if any(x is not None for x in (size, m, n, k, dtype)) or params:
            raise InputError("--ladder takes the shape, dtype and parameters from the runs: give no --size, -m, -n, "
                             "-k, --dtype or --param")
        if not runs:
            raise InputError("--ladder: give the run(s) that timed the ladder with --results FILE.json")
        result, explained = inputs.explain_ladder(ladder, runs, profiles, _gpu_for(gpu, gpu_file, runs, profiles))
        if not result.steps:  # an empty check is no check: say what the runs lack
            found = (f"of its rungs only {', '.join(sorted(explained))} passed there, no step's two ends"
                     if explained else f"they hold no verified {ladder} rung")
            raise InputError(f"--ladder {ladder}: nothing to check in --results {', '.join(results_files)}: {found}")
        emit_many([ladder_table(result)], fmt, output)
        return
    from gemmprof.catalog.selection import choose

    shape = resolve_shape(size, m, n, k)
    kernels = choose(variants, dtype=dtype, spec_files=spec_files, params=params)
    if measure:
        import tempfile
        from pathlib import Path

        own = {Path(f).resolve() for f in spec_files}  # the child loads the user's specs from their files
        names = [kern.spec.name for kern in kernels if Path(kern.spec.path).resolve() not in own]
        with tempfile.TemporaryDirectory() as tmp:
            profiles = [inputs.measure_profile(names, spec_files, shape, dtype, tmp, params)]
    spec = _gpu_for(gpu, gpu_file, [] if measure else runs, profiles, measure)
    failures: list[str] = []
    explanations = inputs.explain_kernels(kernels, shape, spec, runs, profiles, failures)
    emit_many([explanation_table(e, verbose=_verbose(verbose, fmt, output)) for e in explanations], fmt, output)
    if failures:  # explained from the model without SASS, but the kernel as written does not build
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise GemmprofError(f"{failures[0]}{more}")


def _verbose(verbose: bool, fmt, output) -> bool:
    """A terminal table gives one line per limiter unless --verbose; JSON and CSV keep everything."""
    from gemmprof.render.table import choose_format

    return verbose or choose_format(fmt, output) != "table"


def _gpu_for(gpu, gpu_file, runs, profiles, measured: bool = False):
    """--gpu/--gpu-file; else the GPU the files name (with --measure: the profile just made on this machine), when
    they agree; else the current device's; else H100 SXM."""
    from gemmprof.catalog import gpu_specs

    if gpu or gpu_file:
        return resolve_gpu(gpu, gpu_file)
    named = {r.gpu_spec for r in runs if r.gpu_spec} | {p.gpu_spec for p in profiles if p.gpu_spec}
    devices = {p.gpu for p in profiles if p.gpu and not p.gpu_spec}
    found = [g for g in (gpu_specs.gpu_for_device_name(d) for d in devices) if g is not None]
    named |= {g.key for g in found}
    if len(named) == 1:
        key = named.pop()
        try:
            return gpu_specs.get_gpu(key)
        except GemmprofError:
            raise InputError(f"the saved files name GPU spec {key!r}, which is not installed: pass --gpu NAME or "
                             "--gpu-file FILE.yaml") from None
    if measured and devices and not found:
        raise InputError(f"--measure: no GPU spec for {', '.join(sorted(devices))} (see `gemmprof gpus`): pass "
                         "--gpu NAME or --gpu-file FILE.yaml")
    return resolve_gpu(None, None, prefer_current_device=True)


def _typed(doc, kind, path, option, made_by):
    if not isinstance(doc, kind):
        raise InputError(f"{option} {path}: not a file `{made_by}` writes")
    return doc


def _explain_callables(callables, c_dtype, variants, spec_files, size, m, n, k, dtype, params, profiles, runs,
                       measure, ladder, gpu, gpu_file, verbose, fmt, output):
    """Python callables have no spec to model: their limiters come from ncu's measurement of their launches."""
    from gemmprof.measure import explain_inputs as inputs
    from gemmprof.measure import python_jobs
    from gemmprof.render.explain_table import explanation_table
    from gemmprof.render.table import emit_many

    if ladder or variants or spec_files:
        raise InputError("--callable: explain Python callables on their own (no VARIANTS, --spec or --ladder beside "
                         "them): their evidence is ncu's alone")
    if runs or params:
        raise InputError(f"--callable with {'--results' if runs else '--param'}: a callable is explained from "
                         "ncu's measurement (--profile-results or --measure); a run's median or parameters are not used")
    if not profiles and not measure:
        raise InputError("--callable: explain needs ncu's measurement of it: --profile-results FILE.json (saved by "
                         "`gemmprof profile --callable FILE.py:function --save FILE.json`) or --measure")
    refs = python_jobs.refs(callables)
    given = any(x is not None for x in (size, m, n, k))
    shape = resolve_shape(size, m, n, k) if given or measure else None
    if measure:
        import tempfile

        extra = ["--c-dtype", c_dtype] if c_dtype != "fp32" else []
        with tempfile.TemporaryDirectory() as tmp:
            profiles = [inputs.measure_profile([x for r in refs for x in ("--callable", r.text)], [], shape,
                                               dtype, tmp, extra=extra)]
    spec = _gpu_of(gpu, gpu_file, profiles, measure)
    explanations = inputs.explain_callables(refs, shape, dtype, spec, profiles)
    emit_many([explanation_table(e, verbose=_verbose(verbose, fmt, output)) for e in explanations], fmt, output)


def _gpu_of(gpu, gpu_file, profiles, measure):
    """--gpu or --gpu-file; else the GPU spec the profile was made with; else the current device's (--measure)."""
    if gpu or gpu_file:
        return resolve_gpu(gpu, gpu_file)
    from gemmprof.catalog import gpu_specs
    from gemmprof.errors import GpuSpecError

    for p in profiles:
        if p.gpu_spec:
            try:
                return gpu_specs.get_gpu(p.gpu_spec)
            except GpuSpecError:
                pass
    return resolve_gpu(None, None, prefer_current_device=measure)
