"""gemmprof roofline: where every rung sits against the GPU's ceilings, as a plot (-o) and a table."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from gemmprof.commands._options import (
    FINITE,
    WholeNumber,
    gpu_options,
    refuse_directories,
    refuse_overwrite,
    resolve_gpu,
    resolve_shape,
    shape_options,
)
from gemmprof.errors import GemmprofError, InputError
from gemmprof.render.table import FORMATS, emit


@click.command("roofline")
@click.argument("inputs", nargs=-1, metavar="[RESULTS.json ... | VARIANTS ...]")
@click.option("--profile-results", "profile_results", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.json", help="Measured DRAM and L2 intensities from `gemmprof profile --save FILE.json`.")
@click.option("--model-only", is_flag=True, help="Place the rungs by the model alone: no GPU, no results needed.")
@click.option("--all", "all_", is_flag=True, help="Every rung of the ladder (live or --model-only).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16", "tf32", "all"]), default=None,
              help="Only rows of this dtype (--model-only without VARIANTS: the ladder of this dtype, default fp32).")
@shape_options
@click.option("--beta", type=FINITE, default=0.0, show_default=True, help="--model-only: C is read when beta != 0.")
@gpu_options
@click.option("--ceiling", type=click.Choice(["datasheet", "measured"]), default="datasheet", show_default=True,
              help="Which ceilings the table's roof, bound and headroom use (the plot shows both).")
@click.option("--no-measured", is_flag=True, help="Leave the GPU spec's measured ceilings off the plot.")
@click.option("--no-cublas", is_flag=True, help="Leave the cuBLAS baselines out.")
@click.option("-o", "--output", "--plot", "image", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.png|svg|pdf", help="Draw the roofline into this image (the extension picks the format).")
@click.option("--dpi", type=WholeNumber(50, 600), default=150, show_default=True, help="PNG resolution.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Table format (default: table).")
@click.option("--table", "table_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write the table to FILE instead of the terminal (.json/.csv/.txt pick the format).")
def command(inputs, profile_results, model_only, all_, dtype, size, m, n, k, beta, gpu, gpu_file, ceiling,
            no_measured, no_cublas, image, dpi, fmt, table_file):
    """Draw the roofline: each rung's arithmetic intensity against the GPU's compute and memory ceilings.

    \b
    Inputs (one of):
      RESULTS.json ...     results of `gemmprof run` (several files of one shape merge; a verified row wins
                           over a failed one, then the later file wins); no GPU needed
      VARIANTS ...         rung ids, ranges or names: run them first with `gemmprof run` (needs a GPU)
      --model-only         each rung on the roof at its traffic model's intensity: an estimate (hollow markers)
      --profile-results    alone or with the above: ncu's DRAM and L2 intensities, joined to each rung's point

    The image is drawn only with -o FILE.png|.svg|.pdf; the table always goes to the terminal (--format) or to
    --table FILE. Ceilings come from the GPU spec sheet (the one named in the results, else --gpu/--gpu-file, else
    the current device, else H100 SXM): fp32 SIMT always, tf32 and fp16 tensor roofs when rungs use them (dense
    rates), measured ceilings dashed beside datasheet ones, DRAM, and L2 or shared memory when the sheet gives them.
    cuBLAS has no traffic model: it sits at the minimum-traffic intensity. Rows that failed are listed, not drawn.

    \b
    Examples:
      gemmprof roofline results.json -o roofline.png
      gemmprof roofline results.json --profile-results ncu.json -o roofline.svg --format json
      gemmprof roofline --model-only --gpu h100 --size 4096 --dtype all -o model.png
      gemmprof roofline 1-6 10 --size 4096 -o live.png --table live.csv
    """
    from gemmprof.model import roofline_sources as sources
    from gemmprof.render.roofline_table import roofline_table

    if image:
        from gemmprof.render.roofline_plot import image_format

        image_format(image)
    refuse_directories([*inputs, profile_results], "a results file (RESULTS.json) or variant names")
    files = [a for a in inputs if a.lower().endswith(".json") or Path(a).is_file()]
    refuse_overwrite({"-o": image, "--table": table_file}, [*files, profile_results, gpu_file])
    if files and len(files) != len(inputs):
        raise InputError("give results files or variants, not both: " + " ".join(inputs))
    if model_only and files:
        raise InputError("--model-only draws from the model alone: it takes variants, not results files")
    if no_measured and ceiling == "measured":
        raise InputError("--no-measured and --ceiling measured: give one, not both")
    if not (inputs or all_ or model_only or profile_results):
        raise InputError("nothing to plot: give RESULTS.json, VARIANTS (with --size), --model-only or "
                         "--profile-results FILE.json")
    choice = sources.RooflineChoice(dtype=None if dtype in (None, "all") else dtype, baselines=not no_cublas,
                                    measured=not no_measured, ceiling=ceiling)
    profile = _profile_input(profile_results)
    given_shape = resolve_shape(size, m, n, k, default=None) if any(x is not None for x in (size, m, n, k)) else None
    if model_only:
        from gemmprof.catalog import spec as specmod

        if dtype == "tf32":
            raise InputError("--model-only --dtype tf32: the ladder has no tf32 rungs (only cuBLAS runs tf32)")
        pool = None if dtype == "all" or (inputs and not dtype) else dtype or "fp32"
        specs = specmod.select(inputs, all_=not inputs, dtype=pool)
        shape = given_shape or resolve_shape(None, None, None, None)
        data = sources.from_model(specs, shape, resolve_gpu(gpu, gpu_file), profile, choice, beta)
    else:
        from gemmprof.results.run import load_run

        runs = [(f, load_run(f)) for f in files]
        if not files and (inputs or all_):
            runs = [("the live run", _run_live(inputs, all_, dtype, given_shape, gpu, gpu_file, no_cublas))]
        data = sources.from_results(runs, profile, choice, lambda named: _gpu_for(gpu, gpu_file, named),
                                    given_shape)
    emit(roofline_table(data), fmt, table_file)
    if image:
        from gemmprof.render.roofline_plot import render

        render(data, image, dpi)
        click.echo(f"roofline drawn to {image}", err=True)


def _profile_input(path):
    if not path:
        return None
    from gemmprof.model.roofline_sources import ProfileInput
    from gemmprof.results.profile import ProfileResults

    return ProfileInput(ProfileResults.load(path), str(path))


def _gpu_for(gpu, gpu_file, named):
    """--gpu/--gpu-file; else the GPU spec the results name; else the current device's, else H100 SXM."""
    from gemmprof.catalog import gpu_specs

    if gpu or gpu_file or not named:
        return resolve_gpu(gpu, gpu_file, prefer_current_device=True)
    try:
        return gpu_specs.get_gpu(named)
    except GemmprofError:
        raise InputError(f"the results name GPU spec {named!r}, which is not installed: pass --gpu NAME or "
                         "--gpu-file FILE.yaml") from None


def _run_live(inputs, all_, dtype, shape, gpu, gpu_file, no_cublas):
    from gemmprof.measure.child import ChildRun, run_child

    with tempfile.TemporaryDirectory(prefix="gemmprof-roofline-") as tmp:
        out = str(Path(tmp) / "results.json")
        child = ChildRun(tuple(inputs), shape or resolve_shape(None, None, None, None), all_=all_,
                         dtype=dtype if dtype in ("fp32", "fp16") else None, gpu=gpu, gpu_file=gpu_file,
                         no_cublas=no_cublas, output=out)
        result, status = run_child(child)
        if result is None:
            raise GemmprofError(f"gemmprof run exited with status {status} and saved no results (its error is above)")
        return result
