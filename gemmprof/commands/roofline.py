"""gemmprof roofline: where every rung sits against the GPU's ceilings, as a plot (-o) and a table."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import click

from gemmprof.commands._options import gpu_options, resolve_profile, resolve_shape, shape_options
from gemmprof.errors import GemmprofError, InputError
from gemmprof.model.traffic import GemmShape
from gemmprof.render.table import FORMATS, emit


@click.command("roofline")
@click.argument("inputs", nargs=-1, metavar="[RESULTS.json ... | VARIANTS ...]")
@click.option("--profile-results", "profile_results", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.json", help="Measured DRAM and L2 intensities from `gemmprof profile --save FILE.json`.")
@click.option("--model-only", is_flag=True, help="Place the rungs by the model alone: no GPU, no results needed.")
@click.option("--all", "all_", is_flag=True, help="Every rung of the ladder (live or --model-only).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "tf32", "all"]), default=None,
              help="Only rows of this dtype (--model-only without VARIANTS: the ladder of this dtype, default fp32).")
@shape_options
@click.option("--beta", type=float, default=0.0, show_default=True, help="--model-only: C is read when beta != 0.")
@gpu_options
@click.option("--ceiling", type=click.Choice(["datasheet", "measured"]), default="datasheet", show_default=True,
              help="Which ceilings the table's roof, bound and headroom use (the plot shows both).")
@click.option("--no-measured", is_flag=True, help="Leave the profile's measured ceilings off the plot.")
@click.option("--no-cublas", is_flag=True, help="Leave the cuBLAS baselines out.")
@click.option("-o", "--output", "--plot", "image", type=click.Path(dir_okay=False), default=None,
              metavar="FILE.png|svg|pdf", help="Draw the roofline into this image (the extension picks the format).")
@click.option("--dpi", type=click.IntRange(50, 600), default=150, show_default=True, help="PNG resolution.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Table format (default: table).")
@click.option("--table", "table_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write the table to FILE instead of the terminal (.json/.csv/.txt pick the format).")
def command(**o):
    """Draw the roofline: each rung's arithmetic intensity against the GPU's compute and memory ceilings.

    \b
    Inputs (one of):
      RESULTS.json ...     results of `gemmprof run` (several files of one shape merge; a verified row wins
                           over a failed one, then the later file wins); no GPU needed
      VARIANTS ...         rung ids, ranges or names: run them first with `gemmprof run` (needs a GPU)
      --model-only         each rung on the roof at its traffic model's intensity: an estimate (hollow markers)
      --profile-results    alone or with the above: ncu's DRAM and L2 intensities, joined to each rung's point

    The image is drawn only with -o FILE.png|.svg|.pdf; the table always goes to the terminal (--format) or to
    --table FILE. Ceilings come from the GPU profile (the one named in the results, else --gpu/--profile, else
    the current device, else H100 SXM): fp32 SIMT always, tf32 and fp16 tensor roofs when rungs use them (dense
    rates), measured ceilings dashed beside datasheet ones, DRAM, and L2 or shared memory when the profile gives them.
    cuBLAS has no traffic model: it sits at the minimum-traffic intensity. Rows that failed are listed, not drawn.

    \b
    Examples:
      gemmprof roofline results.json -o roofline.png
      gemmprof roofline results.json --profile-results ncu.json -o roofline.svg --format json
      gemmprof roofline --model-only --gpu h100 --size 4096 --dtype all -o model.png
      gemmprof roofline 1-6 10 --size 4096 -o live.png --table live.csv
    """
    image, inputs, presults = o["image"], o["inputs"], o["profile_results"]
    if image:
        from gemmprof.render.roofline_plot import image_format

        image_format(image)
    files = [a for a in inputs if a.lower().endswith(".json") or Path(a).is_file()]
    if files and len(files) != len(inputs):
        raise InputError("give results files or variants, not both: " + " ".join(inputs))
    if o["model_only"] and files:
        raise InputError("--model-only draws from the model alone: it takes variants, not results files")
    if o["no_measured"] and o["ceiling"] == "measured":
        raise InputError("--no-measured and --ceiling measured: give one, not both")
    if not (inputs or o["all_"] or o["model_only"] or presults):
        raise InputError("nothing to plot: give RESULTS.json, VARIANTS (with --size), --model-only or "
                         "--profile-results FILE.json")
    pdoc = _load_profile_results(presults) if presults else None
    if o["model_only"]:
        data = _model_only(o, pdoc)
    else:
        runs = [(f, _load_run(f)) for f in files]
        if not files and (inputs or o["all_"]):
            runs = [("the live run", _run_live(o))]
        data = _measured(o, runs, pdoc)
    from gemmprof.render.roofline_table import roofline_table

    emit(roofline_table(data), o["fmt"], o["table_file"])
    if image:
        from gemmprof.render.roofline_plot import render

        render(data, image, o["dpi"])
        click.echo(f"roofline drawn to {image}", err=True)


def _only(o) -> str | None:
    return None if o["dtype"] in (None, "all") else o["dtype"]


def _measured(o, runs, pdoc):
    """Run results (merged: a verified row beats a failed one, then the later file wins) and profile results."""
    from gemmprof.model import roofline as rl

    shape = beta = named = None
    variants, device = {}, ""
    for f, run in runs:
        s = GemmShape(run.shape["M"], run.shape["N"], run.shape["K"])
        if shape is not None and (s, run.beta) != (shape, beta):
            raise InputError(f"{f}: shape {s.label}, beta={run.beta:g} differs from {shape.label}, beta={beta:g} "
                             "of the files before it; plot one shape at a time")
        shape, beta, device, named = s, run.beta, run.device.get("name", device), named or run.gpu_profile
        for v in run.variants:
            old = variants.get(v.name)
            if old is None or v.passed or not old.passed:
                variants[v.name] = v
    if pdoc is not None and shape is None:
        shape = _profile_shape(o, pdoc)
        named, device, beta = pdoc.get("gpu_profile"), pdoc.get("gpu") or "", 0.0
    profile = _profile(o, named)
    keep = {"dtype": _only(o), "baselines": not o["no_cublas"]}
    rungs, excluded = rl.rungs_from_variants(list(variants.values()), shape, profile, beta=beta, **keep)
    notes = rl.attach_profile(rungs, pdoc["launches"], shape, profile, origin=o["profile_results"], beta=beta,
                              **keep) if pdoc is not None else []
    if not rungs:
        what = ", ".join(f for f, _ in runs) or o["profile_results"]
        raise InputError(f"nothing to plot: no verified, timed variant{' of ' + _only(o) if _only(o) else ''} in "
                         f"{what}" + (f" (not plotted: {'; '.join(excluded)})" if excluded else ""))
    return rl.build(profile, shape, rungs, measured=not o["no_measured"], source=o["ceiling"], device=device,
                    excluded=excluded, notes=notes)


def _model_only(o, pdoc):
    from gemmprof.catalog import spec as specmod
    from gemmprof.model import roofline as rl

    dtype, inputs = o["dtype"], o["inputs"]
    if dtype == "tf32":
        raise InputError("--model-only --dtype tf32: the ladder has no tf32 rungs (only cuBLAS runs tf32)")
    shape = resolve_shape(o["size"], o["m"], o["n"], o["k"], default=None)
    profile = resolve_profile(o["gpu"], o["profile_file"])
    pool = None if dtype == "all" or (inputs and not dtype) else dtype or "fp32"
    specs = specmod.select(inputs, all_=not inputs, dtype=pool)
    rungs, excluded = rl.rungs_from_model(specs, shape, profile, beta=o["beta"], source=o["ceiling"])
    notes = rl.attach_profile(rungs, pdoc["launches"], shape, profile, origin=o["profile_results"],
                              beta=o["beta"]) if pdoc else []
    if not rungs:
        raise InputError(f"nothing to plot: every selected rung rejects {shape.label} ({'; '.join(excluded)})")
    return rl.build(profile, shape, rungs, measured=not o["no_measured"], source=o["ceiling"], estimate=True,
                    excluded=excluded, notes=notes)


def _profile(o, named):
    """--gpu/--profile; else the profile the results name; else the current device's, else H100 SXM."""
    from gemmprof.catalog import gpu_specs as profiles

    if o["gpu"] or o["profile_file"] or not named:
        return resolve_profile(o["gpu"], o["profile_file"], prefer_current_device=True)
    try:
        return profiles.get_profile(named)
    except GemmprofError:
        raise InputError(f"the results name GPU profile {named!r}, which is not installed: pass --gpu NAME or "
                         "--profile FILE.yaml") from None


def _load_run(path):
    from gemmprof.results.run import load_run

    try:
        run = load_run(path)
        GemmShape(run.shape["M"], run.shape["N"], run.shape["K"])
        return run
    except (ValueError, AttributeError, TypeError, KeyError) as exc:
        raise InputError(f"{path}: malformed run results ({type(exc).__name__}: {exc})") from None


def _load_profile_results(path) -> dict:
    from gemmprof.results.profile import load_profile_results

    return load_profile_results(path)


def _profile_shape(o, doc) -> GemmShape:
    if o["size"] or o["m"] or o["n"] or o["k"]:
        return resolve_shape(o["size"], o["m"], o["n"], o["k"])
    shape = doc.get("shape")
    if not isinstance(shape, dict):
        raise InputError(f"{o['profile_results']}: its launches have no common shape: pick one with --size or "
                         "-m/-n/-k")
    return resolve_shape(None, shape.get("M"), shape.get("N"), shape.get("K"))


def _spawn(cmd):
    """Run `gemmprof run` in a child process (its CUDA context ends with it); its table is not shown."""
    return subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)


def _run_live(o):
    from gemmprof.results.run import load_run

    shape = resolve_shape(o["size"], o["m"], o["n"], o["k"])
    with tempfile.TemporaryDirectory(prefix="gemmprof-roofline-") as tmp:
        out = Path(tmp) / "results.json"
        cmd = [sys.executable, "-m", "gemmprof", "run", *o["inputs"], "-m", str(shape.M), "-n", str(shape.N),
               "-k", str(shape.K), "-o", str(out)]
        cmd += ["--all"] * o["all_"] + (["--dtype", o["dtype"]] if o["dtype"] in ("fp32", "fp16") else [])
        cmd += ["--gpu", o["gpu"]] if o["gpu"] else []
        cmd += ["--profile", o["profile_file"]] if o["profile_file"] else []
        cmd += ["--no-cublas"] * o["no_cublas"]
        proc = _spawn(cmd)
        if not out.exists():
            raise GemmprofError(f"gemmprof run exited with status {proc.returncode} and saved no results "
                                "(its error is above)")
        return load_run(out)
