"""gemmprof tune: search a rung's parameter space on the GPU; resumable, on every GPU of a host or through Ray."""

from __future__ import annotations

import click

from gemmprof.commands._options import POSITIVE, FiniteFloat, WholeNumber, resolve_shape, shape_options
from gemmprof.errors import InputError
from gemmprof.render.table import FORMATS, emit


@click.command("tune")
@click.argument("rung", required=False)
@click.option("--spec", "spec_file", type=click.Path(dir_okay=False), help="Tune your own kernel (its `tune:` space).")
@shape_options
@click.option("--strategy", type=click.Choice(["exhaustive", "random", "optuna"]), default="exhaustive",
              show_default=True, help="optuna needs the extra: pip install 'gemmprof[tune]'.")
@click.option("--budget-configs", type=WholeNumber(1, 10 ** 9), default=None, help="Stop after this many configurations.")
@click.option("--budget-minutes", type=FiniteFloat(positive=True, maximum=525600), default=None,
              help="Stop proposing new configurations after this long.")
@click.option("--seed", type=WholeNumber(0, 2 ** 32 - 1), default=0, show_default=True, help="Seed of the random and optuna strategies.")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where sweeps are cached (default: $GEMMPROF_CACHE/tune or ~/.cache/gemmprof/tune).")
@click.option("--top", type=WholeNumber(1, 100), default=5, show_default=True,
              help="Re-time this many of the fastest, interleaved, to pick the winner.")
@click.option("--rounds", type=WholeNumber(0, 100), default=5, show_default=True, help="Rounds of that re-timing.")
@click.option("--keep", is_flag=True, help="Keep the winner as this device's tuned defaults (run/profile/roofline).")
@click.option("--gpus", default=None, metavar="N|all",
              help="Measure on N GPUs of this host (CUDA_VISIBLE_DEVICES honoured), one worker process each "
                   "[default: 1; with --ray: every GPU of the cluster].")
@click.option("--ray", "ray_address", default=None, metavar="auto|local|ADDRESS",
              help="Measure on a Ray cluster, one actor per GPU (pip install 'gemmprof[ray]'); local: a private "
                   "one-host instance.")
@click.option("--jobs", type=WholeNumber(1, 256), default=None,
              help="Compile processes (default: the CPU cores less two, 1 to 16).")
@click.option("--serial", is_flag=True, help="Compile, verify and time one configuration after another (no overlap).")
@click.option("--budget", "timing_budget", type=POSITIVE, default=0.15, show_default=True,
              help="Seconds of timed launches per configuration.")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False), default=None, help="Plot TFLOP/s per parameter.")
@click.option("--all-configs", is_flag=True, help="List every configuration evaluated, not only the fastest.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Output format for the terminal.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Write the result (.json: everything, with raw samples; .csv/.txt: the table).")
@click.option("--compiler", type=click.Choice(["nvcc", "nvrtc"]), default=None,
              help="Build with this compiler (default: what `gemmprof run` uses, nvcc where it is found).")
@click.option("--stand-in", is_flag=True, hidden=True, help="Fake compiler and GPU (tests and dry runs).")
def command(rung, spec_file, size, m, n, k, strategy, budget_configs, budget_minutes, seed, cache_dir, top, rounds,
            keep, gpus, ray_address, jobs, serial, timing_budget, plot_file, all_configs, fmt, output, compiler,
            stand_in):
    """Search a kernel's parameter space (the `tune:` of its spec) on the GPU.

    Combinations the spec's constraints reject are pruned before anything compiles; the rest are compiled in
    parallel on the CPU while the GPU verifies and times earlier ones. Every result goes into a cache, so an
    interrupted sweep (Ctrl-C) resumes where it stopped and a finished one replays at once. The fastest are
    re-timed interleaved, and the winner is reported with its margin over the runner-up.

    \b
    Examples:
      gemmprof tune 10 --size 4096
      gemmprof tune 9 --strategy optuna --budget-configs 40 --keep
      gemmprof tune --spec my_kernel.yaml --size 2048 --gpus all -o sweep.json --plot sweep.png
      gemmprof tune 10 --size 4096 --gpus all    # one worker process per GPU of this host
      gemmprof tune 10 --size 4096 --ray auto    # one actor per GPU of a running Ray cluster
      gemmprof tune 10 --size 4096 --serial      # compile, verify, time one after another (the slow baseline)
    """
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.tuned_defaults import keep_winner
    from gemmprof.render.tune_table import to_table
    from gemmprof.tune.progress import RichProgress
    from gemmprof.tune.session import TuneRequest, run_tune

    if bool(rung) == bool(spec_file):
        raise InputError("give one rung (e.g. 10 or warptiling) or --spec FILE")
    chosen = specmod.load_user_specs([spec_file]) if spec_file else specmod.select([rung])
    if isinstance(chosen, list):
        if len(chosen) != 1:
            raise InputError(f"{rung!r} selects {len(chosen)} rungs; tune one at a time")
        chosen = chosen[0]
    _check_outputs(output, fmt, plot_file, cache_dir)  # before the sweep, not after it
    if chosen.plan:  # a planning entry has no parameters of its own: it picks a rung's per shape
        raise InputError(f"{chosen.name} chooses a rung and its parameters per shape and has nothing to tune: tune "
                         f"the rung it runs at your shape (`gemmprof run {chosen.name} --size ...` names it in its "
                         f"note), e.g. gemmprof tune h12 --size 4096")
    if not stand_in and not ray_address:
        from gemmprof.errors import require_cupy

        require_cupy()
    req = TuneRequest(spec=chosen, shape=resolve_shape(size, m, n, k), strategy=strategy, seed=seed,
                      budget_configs=budget_configs, budget_minutes=budget_minutes, cache_dir=cache_dir, top=top,
                      rounds=rounds, gpus=gpus, ray=ray_address, jobs=jobs, serial=serial,
                      timing_budget_s=timing_budget, stand_in=stand_in, compiler=compiler)
    with RichProgress(console=_stderr_console()) as bar:
        result = run_tune(req, progress=bar, announce=lambda t: click.echo(t, err=True))
    if result.interrupted:
        click.echo("interrupted: the cache keeps every finished result; best so far below (the same command "
                   "resumes)", err=True)
    if output and output.lower().endswith(".json"):
        import json

        from gemmprof.results.files import write_atomic

        write_atomic(output, json.dumps(result.to_dict(), indent=1) + "\n")
        click.echo(f"results saved to {output}", err=True)
        output = None
    emit(to_table(result, top=None if all_configs else 10, all_configs=all_configs), fmt, output)
    if plot_file:
        from gemmprof.tune.plot import plot_sweep

        click.echo(f"plot saved to {plot_sweep(result, plot_file)}", err=True)
    if keep and not result.interrupted:
        from gemmprof.catalog.sources import source_hash

        entry = keep_winner(req.cache_path, result, source_hash(chosen))
        click.echo(f"kept as {entry.describe()}", err=True)
    if result.interrupted:
        raise SystemExit(130)  # what a shell expects after Ctrl-C; the output above is complete


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)


def _check_outputs(output, fmt, plot_file, cache_dir) -> None:
    """Before the sweep, not after it: -o's format, --plot's image format, each a regular file (or none yet) in a
    folder that exists, and --cache-dir a folder if it exists."""
    import os

    from gemmprof.render.table import choose_format
    from gemmprof.results.files import file_kind

    if output and not output.lower().endswith(".json"):
        choose_format(fmt, output)
    if plot_file and os.path.splitext(plot_file)[1].lower() not in (".png", ".svg", ".pdf"):
        raise InputError(f"--plot {plot_file}: cannot draw a {os.path.splitext(plot_file)[1] or 'extension-less'} "
                         "image (use .png, .svg or .pdf)")
    for option, path in (("-o", output), ("--plot", plot_file)):
        if not path:
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InputError(f"{option} {path}: the folder {folder} does not exist")
        kind = file_kind(path)
        if kind not in ("file", "does not exist"):
            raise InputError(f"{option} {path}: it is {'a folder' if kind == 'folder' else kind}; gemmprof writes "
                             "only regular files")
    if cache_dir and os.path.exists(cache_dir) and not os.path.isdir(cache_dir):
        raise InputError(f"--cache-dir {cache_dir}: not a folder ({file_kind(cache_dir)})")
