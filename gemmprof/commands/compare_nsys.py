"""gemmprof compare-nsys: kernels from Nsight Systems reports (or a live nsys run of `gemmprof run`), side by side."""

from __future__ import annotations

from pathlib import Path

import click

from gemmprof.commands._options import (
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
from gemmprof.model.traffic import DTYPES


@click.command("compare-nsys")
@click.argument("inputs", nargs=-1, metavar="REPORT... | VARIANT...")
@click.option("--callable", "callables", multiple=True, metavar="FILE.py:FUNCTION",
              help="Live mode: also run a Python function fn(A, B, C, alpha, beta) under nsys (repeatable; inputs "
                   "in --dtype, default fp32; C in --c-dtype). See docs/callables.md.")
@c_dtype_option
@click.option("--arrays", type=click.Choice(ARRAY_KINDS), default="cupy", show_default=True,
              help="Live mode: what --callable functions receive, CuPy arrays or torch tensors.")
@shape_options
@click.option("--dtype", type=click.Choice(list(DTYPES)), default=None,
              help="dtype for TFLOP/s and % of peak (default: a gemmprof variant's own, else fp32); "
                   "bf16 with VARIANTS builds h4-h13 for bf16.")
@click.option("--baseline", default=None, metavar="NAME",
              help="Row to compute speedups against: a variant, NVTX range or kernel name (default: cuBLAS).")
@click.option("--group-by", type=click.Choice(["auto", "range", "kernel"]), default="auto", show_default=True,
              help="Group kernels by the NVTX range they were launched in, or by kernel name.")
@click.option("--no-cublas", is_flag=True, help="Live mode: pass --no-cublas to gemmprof run.")
@click.option("--save-report", type=click.Path(dir_okay=False), default=None, metavar="PREFIX",
              help="Live mode: keep PREFIX.nsys-rep and PREFIX.sqlite (default: a temporary directory).")
@click.option("--from", "from_file", type=click.Path(dir_okay=False), default=None, metavar="FILE.json",
              help="Print a comparison saved with -o FILE.json (or .json.gz) again, in any format; no nsys needed.")
@gpu_options
@output_options
def command(inputs, callables, c_dtype, arrays, size, m, n, k, dtype, baseline, group_by, no_cublas, save_report,
            from_file, gpu, gpu_file, fmt, output):
    """Compare the kernels of Nsight Systems reports side by side.

    Give report files (.nsys-rep, .sqlite, `nsys stats --format csv` output, or the text printed by
    `nsys profile --stats=true`), or give gemmprof VARIANTS to profile them now: gemmprof then runs
    `nsys profile -t cuda,nvtx -s none --cpuctxsw=none --export=sqlite` on `gemmprof run VARIANTS`.
    Kernels are grouped by the NVTX range they were launched in ("gemmprof NAME MxNxK" gives the variant
    and shape) when the report has ranges, else by kernel name. Speedups are against the cuBLAS row unless
    --baseline picks another; TFLOP/s needs the shape (from the range, or -m/-n/-k for other reports).
    % of peak uses the GPU a SQLite export names when gemmprof has its GPU spec, else --gpu/--gpu-file
    (default H100 SXM). .nsys-rep files and live runs need nsys on PATH; the other inputs do not.

    \b
    Examples:
      gemmprof compare-nsys 1-6 10 --size 4096              # profile rungs and cuBLAS under nsys now
      gemmprof compare-nsys before.sqlite after.sqlite      # two SQLite exports side by side
      gemmprof compare-nsys run.nsys-rep --baseline cublas_sgemm -o kernels.json
      gemmprof compare-nsys --from kernels.json --format csv   # the saved comparison again
      gemmprof compare-nsys stats.txt --size 4096 --gpu a100  # text tables of nsys profile --stats=true
      gemmprof compare-nsys --callable examples/torch_matmul/torch_matmul.py:matmul --dtype fp16 --size 4096
    """
    from gemmprof.adapters.nsys import compare as nsys_compare
    from gemmprof.adapters.nsys import report as nsys

    if from_file:
        if inputs or callables:
            raise InputError("--from: re-reads a saved comparison; give no reports, variants or --callable")
        refuse_overwrite({"-o": output}, [from_file])
        from gemmprof.results.nsys import Comparison

        _emit(Comparison.load(from_file), fmt, output)
        return
    if not inputs and not callables:
        raise InputError("give report files (.nsys-rep, .sqlite, stats .csv/.txt), variant names or "
                         "--callable FILE.py:function")
    c_dtype = callable_c_dtype(c_dtype, callables)
    refuse_directories(inputs, "report files (.nsys-rep, .sqlite, stats .csv/.txt) or variant names")
    saved = next((x for x in inputs if x.lower().endswith((".json", ".json.gz"))), None)
    if saved:
        raise InputError(f"{saved}: a comparison saved with -o? read it with --from {saved}")
    files = [x for x in inputs if Path(x).is_file() or x.lower().endswith(tuple(nsys.REPORT_SUFFIXES))]
    if files and callables:
        raise InputError("--callable: only for profiling variants now, not with report files")
    refuse_overwrite({"-o": output}, [*files, gpu_file])
    live = not files
    if files and len(files) != len(inputs):
        odd = next(x for x in inputs if x not in files)
        raise InputError(f"{odd}: no such report file (give report files or variant names, not both)")
    if not live and (no_cublas or save_report):
        raise InputError("--no-cublas/--save-report: only for profiling variants, not for report files")
    given = any(v is not None for v in (size, m, n, k))
    shape = resolve_shape(size, m, n, k) if live or given else None
    explicit = resolve_gpu(gpu, gpu_file) if gpu or gpu_file else None

    reports, failed = [], {}
    if live:
        reports.append(nsys.profile_live(tuple(inputs) + _callable_args(callables, arrays, dtype, c_dtype), shape,
                                         no_cublas=no_cublas, save_prefix=save_report,
                                         dtype=dtype))
    else:
        for path in files:
            try:
                reports.append(nsys.load_report(path))
            except GemmprofError as exc:
                if len(files) == 1:
                    raise
                click.echo(f"error: {exc}", err=True)
                failed[path] = (str(exc), exc.exit_code)
    if not reports:
        raise _failure(f"none of the {len(files)} reports could be read", failed)
    cmp = nsys_compare.compare(reports, baseline=baseline, shape=None if live else shape, dtype=dtype, gpu_spec=explicit,
                       group_by=group_by, failed={p: msg for p, (msg, _) in failed.items()})
    _emit(cmp, fmt, output)
    for rep in reports:
        if rep.problem:
            click.echo(f"error: {rep.path}: {rep.problem}", err=True)
            failed[rep.path] = (rep.problem, 1)
    if failed:
        raise _failure(f"{len(failed)} of {len(inputs) if not live else 1} inputs failed (see above)", failed)


def _callable_args(callables, arrays: str, dtype: str | None, c_dtype: str = "fp32") -> tuple[str, ...]:
    """What the child `gemmprof run` needs for the callables (it imports their files itself)."""
    from gemmprof.measure import python_jobs

    refs = python_jobs.refs(callables)
    args = tuple(x for r in refs for x in ("--callable", r.text))
    args += ("--arrays", arrays) if refs and arrays != "cupy" else ()
    args += ("--c-dtype", c_dtype) if refs and c_dtype != "fp32" else ()
    return args + (("--dtype", dtype) if refs and dtype and dtype != "bf16" else ())  # bf16: profile_live passes it


def _failure(message: str, failed: dict) -> GemmprofError:
    exc = GemmprofError(message)
    exc.exit_code = next(iter(failed.values()))[1] if failed else 1
    return exc


def _emit(cmp, fmt, output) -> None:
    from gemmprof.render.nsys_tables import tables
    from gemmprof.render.table import choose_format, emit_many

    fmt = choose_format(fmt, output)
    emit_many(tables(cmp, fmt), fmt, output)
