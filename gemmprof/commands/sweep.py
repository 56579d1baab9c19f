"""gemmprof sweep: rungs, your own kernels or Python callables over many shapes (a list, or a model's layers), one
`gemmprof run` per shape, summarised against a baseline: geometric mean, minimum and fast_p, a plot, JSON and CSV."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from gemmprof.commands._options import FiniteFloat, WholeNumber, c_dtype_option
from gemmprof.commands.run import command as run_command
from gemmprof.errors import GemmprofError, InputError
from gemmprof.measure.arrays import ARRAY_KINDS
from gemmprof.render.table import FORMATS

# what the sweep itself sets on each child run: not for --run-option
SET_BY_SWEEP = ("-o", "--output", "--child-results", "-m", "-n", "-k", "--size", "--dtype", "--interleave",
                "--launch-once", "--format", "--columns", "--wide", "--spec", "--callable", "--c-dtype", "--arrays",
                "--budget", "--precision", "--max-reps")
PASSED = (("--regime", "regime"), ("--fill", "fill"), ("--l2", "l2"))  # run's measurement options, passed as given


def _run_dtypes() -> tuple[str, ...]:
    return tuple(next(p for p in run_command.params if p.name == "dtype").type.choices)


@click.command("sweep")
@click.argument("variants", nargs=-1)
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False),
              help="Your own kernel from its YAML spec (repeatable), as `gemmprof run --spec` takes it.")
@click.option("--callable", "callables", multiple=True, metavar="FILE.py:FUNCTION",
              help="A Python function fn(A, B, C, alpha, beta) that fills C (repeatable), as `gemmprof run "
                   "--callable` takes it (a torch.matmul row comes beside it where torch is installed).")
@c_dtype_option
@click.option("--arrays", type=click.Choice(ARRAY_KINDS), default=None,
              help="What --callable functions receive (default: CuPy arrays).")
@click.option("--dtype", "dtypes", required=True, metavar="DTYPE[,DTYPE]",
              help="Input dtype of the sweep (fp32, fp16, bf16 ...); several, comma-separated, make one sweep each, "
                   "in a folder of their own under --out-dir, summarised apart.")
@click.option("--shapes", default=None, metavar="LIST",
              help="Shapes: N or MxNxK, separated by spaces or commas (default: the built-in list of squares, LLM "
                   "layers of 7B-class models, a long K and sizes off the tiles).")
@click.option("--shapes-file", type=click.Path(dir_okay=False), default=None,
              help="A file of shapes, as --shapes; `#` starts a comment.")
@click.option("--model", "model_file", type=click.Path(), default=None, metavar="CONFIG.json",
              help="A Hugging Face-style config.json (hidden_size, intermediate_size, num_attention_heads, "
                   "num_key_value_heads, head_dim, vocab_size): its QKV, attention output, gate/up, down and LM-head "
                   "GEMMs at each of --tokens (see docs/sweep.md; examples/models/ has some).")
@click.option("--tokens", default=None, metavar="T,T,...",
              help="Token counts (M) of the --model GEMMs [default: 1,16,128,1024,8192].")
@click.option("--budget", type=FiniteFloat(positive=True, maximum=3600), default=1.0, show_default=True,
              help="Seconds of timed launches per variant and shape (gemmprof run --budget, the same default). "
                   "Shorter turns in --interleave can catch a kernel before it slows (docs/sweep.md).")
@click.option("--precision", type=FiniteFloat(minimum=0, maximum=100), default=None, metavar="PCT",
              help="gemmprof run --precision: stop timing a variant once its median is known to +-PCT percent.")
@click.option("--max-reps", type=WholeNumber(1, 10 ** 6), default=None,
              help="Launches per variant at most (gemmprof run --max-reps; small shapes reach it first).")
@click.option("--regime", default=None, metavar="NAME", help="gemmprof run --regime, passed to each run as given.")
@click.option("--fill", default=None, metavar="NAME", help="gemmprof run --fill, passed to each run as given.")
@click.option("--l2", default=None, metavar="NAME", help="gemmprof run --l2, passed to each run as given.")
@click.option("--run-option", "run_options", multiple=True, metavar="'--OPTION VALUE'",
              help="Any other `gemmprof run` option for every run, split as a shell splits it (repeatable), e.g. "
                   "--run-option '--seed 1' --run-option --no-flush.")
@click.option("--interleave", is_flag=True,
              help="Each shape's run times its variants and the baseline in turns (gemmprof run --interleave): one "
                   "warm-up for them all, so a sustained sweep takes a fraction of the time, and the clock's drift "
                   "reaches every variant alike.")
@click.option("--confirm", is_flag=True,
              help="After each shape's run, time each variant within 5 percent of its best again beside the baseline "
                   "alone, the two in turns (confirm_MxNxK_VARIANT.json); the best column takes the highest of those.")
@click.option("--baseline", default="cuBLAS", show_default=True, metavar="cuBLAS|torch.matmul|VARIANT",
              help="What each figure is a percentage of: the cuBLAS row of the variant's dtype and C, torch.matmul's "
                   "row (with --callable), or another variant of the sweep (a rung id or a variant's name).")
@click.option("--fast-p", "p", type=FiniteFloat(positive=True, maximum=1000), default=1.0, show_default=True,
              metavar="P", help="fast_p's threshold: the share of shapes where a variant is correct and at least P "
                                "times the baseline.")
@click.option("--highlight", multiple=True, metavar="VARIANT",
              help="Name this variant in the headline beside the best variant per shape (repeatable).")
@click.option("--gpus", default=None, metavar="N|all",
              help="Run shapes on N GPUs of this host at once, one child per GPU (CUDA_VISIBLE_DEVICES honoured) "
                   "[default: 1; with --ray: every GPU of the cluster].")
@click.option("--ray", "ray_address", default=None, metavar="auto|local|ADDRESS",
              help="Run shapes on a Ray cluster, one actor per GPU (pip install 'gemmprof[ray]'); every node needs "
                   "gemmprof and the kernel files at the same paths.")
@click.option("--out-dir", type=click.Path(file_okay=False), default=None,
              help="Folder of the per-shape results, logs and summaries (made if missing) [default: "
                   "sweep-MODEL-DTYPE, or sweep-shapes-DTYPE]. Finished runs there are kept, not run again.")
@click.option("--summarize-only", is_flag=True,
              help="Run nothing: summarise the results files in --out-dir again, into a new summary beside the old "
                   "(refused where a shape's results file is missing).")
@click.option("--no-plot", is_flag=True, help="Write no plot (the plot needs matplotlib).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default=None, help="Format of the terminal tables.")
@click.option("--stand-in", is_flag=True, hidden=True, help="Invented runs instead of the GPU (tests, dry runs).")
def command(variants, spec_files, callables, c_dtype, arrays, dtypes, shapes, shapes_file, model_file, tokens, budget,
            precision, max_reps, regime, fill, l2, run_options, interleave, confirm, baseline, p, highlight, gpus, ray_address,
            out_dir, summarize_only, no_plot, fmt, stand_in):
    """Time variants over many shapes, one `gemmprof run` per shape, and summarise each against a baseline.

    Each shape runs in a process of its own (a fault costs that shape only), beside cuBLAS of the same dtype in the
    same run; shapes are dealt out to every GPU given (--gpus, --ray). The summary has, per variant and for the best
    variant of each shape, the geometric mean and minimum of % of the baseline and fast_p, each also without the
    shapes where the baseline collapsed (below half the best); in turns (--interleave), the variants whose late
    launches in a turn ran more than 5% off their early ones; a plot by layer and token count; JSON and CSV.
    A sweep resumes: finished runs in --out-dir are kept.

    \b
    Examples:
      gemmprof sweep --callable examples/triton_matmul/triton_matmul.py:matmul --model examples/models/llama3_8b.json --dtype bf16
      gemmprof sweep h12 h13 --dtype fp16,bf16 --shapes "4096 8192 64x10240x8192" --confirm --gpus all
      gemmprof sweep h6 h8 h9 h11 h12 h13 plan --dtype fp16 --interleave --confirm --run-option --no-energy
      gemmprof sweep --spec my_kernel.yaml --dtype fp16 --model config.json --tokens 1,64,4096 --baseline cuBLAS
      gemmprof sweep h6 h12 --dtype fp16 --highlight h12 --fast-p 0.95 --run-option '--seed 1'
      gemmprof sweep --dtype fp16 --out-dir sweep-shapes-fp16 --summarize-only    # no GPU: the files again
    """
    from gemmprof.tune import shape_sweep as lib

    dtype_list = _dtypes(dtypes)
    shape_list, layers, model = _shapes(shapes, shapes_file, model_file, tokens)
    base = _baseline(baseline)
    from gemmprof.measure import python_jobs

    refs = python_jobs.refs(callables)
    where = (lambda p: str(Path(p).resolve())) if ray_address else str  # a Ray node's child runs in another folder
    selectors = (*variants, *(x for f in spec_files for x in ("--spec", where(f))),
                 *(x for r in refs for x in ("--callable", f"{where(r.path)}:{r.function}")))
    if not summarize_only and not selectors:
        raise InputError("name what to sweep: rungs (e.g. h12 or 13-16), --spec FILE or --callable FILE.py:function "
                         "(or pass --summarize-only)")
    if c_dtype and not refs:
        raise InputError(f"--c-dtype {c_dtype}: only for --callable functions")
    if arrays and not refs:
        raise InputError(f"--arrays {arrays}: only for --callable functions")
    if gpus is not None and summarize_only:
        raise InputError("--gpus with --summarize-only: nothing runs")
    extra = _run_args(run_options, {flag: v for (flag, _), v in zip(PASSED, (regime, fill, l2), strict=True)
                                    if v is not None})
    root = Path(out_dir or f"sweep-{model or 'shapes'}-{'-'.join(dtype_list)}")
    if root.exists() and not root.is_dir():
        from gemmprof.results.files import file_kind

        raise InputError(f"--out-dir {root}: {file_kind(root)}, not a folder")
    requests = []
    for dt in dtype_list:
        folder = root if len(dtype_list) == 1 else root / dt
        names, expected = _names(variants, spec_files, refs, dt, where) if selectors and not summarize_only else ({}, ())
        req = lib.SweepRequest(dtype=dt, shapes=shape_list, out_dir=folder, selectors=tuple(selectors), names=names,
                               layers=layers, model=model, budget_s=budget, precision=precision, max_reps=max_reps,
                               c_dtype=c_dtype, arrays=arrays, run_args=extra, interleave=interleave, confirm=confirm, baseline=base, p=p,
                               highlight=tuple(highlight))
        requests.append((req, expected))
    if not summarize_only:
        _check_baseline(base, refs, variants, spec_files, confirm, requests)
        _check_child(requests[0][0])
    if summarize_only:
        _refuse_incomplete([req for req, _ in requests])
    else:
        slots, pool = _workers(lib, gpus, ray_address, stand_in)  # a bad --gpus or no GPU: before any folder is made
        try:
            for req, expected in requests:
                req.out_dir.mkdir(parents=True, exist_ok=True)
                lib.check_kept(req, expected)
            failed = _run(lib, [req for req, _ in requests], slots)
        finally:
            if pool is not None:
                pool.close()
    sweeps = _summaries(lib, [req for req, _ in requests], root, not no_plot, fmt)
    if not summarize_only and any(failed.values()):
        shown = "; ".join(f"{dt}: {', '.join(labels)}" for dt, labels in failed.items() if labels)
        raise GemmprofError(f"no results file at {shown} (see run_MxNxK.log there; the summary leaves them out)")
    return sweeps


def _dtypes(text: str) -> list[str]:
    known = _run_dtypes()
    out = []
    for d in (x.strip() for x in text.split(",")):
        if d not in known:
            raise InputError(f"--dtype {text!r}: {d!r} is not a dtype `gemmprof run` takes ({', '.join(known)})")
        if d not in out:
            out.append(d)
    return out


def _shapes(shapes, shapes_file, model_file, tokens):
    """(shapes, {shape: layer}, model name) from --shapes, --shapes-file or --model and --tokens."""

    given = [n for n, v in (("--shapes", shapes), ("--shapes-file", shapes_file), ("--model", model_file))
             if v is not None]
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)}: give one of them")
    if tokens is not None and model_file is None:
        raise InputError("--tokens: only with --model (the token counts are M of the model's GEMMs)")
    if model_file is not None:
        from gemmprof.catalog.model_config import (
            DEFAULT_TOKENS,
            load_model_config,
            model_shapes,
            parse_tokens,
        )

        config = load_model_config(model_file)
        found = model_shapes(config, parse_tokens(tokens) if tokens is not None else DEFAULT_TOKENS)
        for note in config.notes:
            click.echo(f"note: --model {model_file}: {note}", err=True)
        return tuple(x.shape for x in found), {x.shape: x.layer for x in found}, config.name
    from gemmprof.results.sweep import chosen_shapes

    return chosen_shapes(shapes, shapes_file), {}, ""  # a file: a regular one, bounded; given but empty: refused


def _baseline(text: str) -> str:
    from gemmprof.results.sweep import CUBLAS, TORCH

    t = text.strip()
    if not t:
        raise InputError("--baseline: empty (cuBLAS, torch.matmul or a variant's name)")
    if t.lower() == "cublas":
        return CUBLAS
    if t.lower() in ("torch.matmul", "torch_matmul", "torch"):
        return TORCH
    return t


def _names(variants, spec_files, refs, dtype, where=str):
    """Each variant this sweep's runs will hold -> its selector, and their names (to check a folder's runs)."""
    from gemmprof.catalog.selection import choose

    names: dict[str, tuple[str, ...]] = {}
    if variants:
        for k in choose(variants, dtype=dtype):
            names[k.variant_name] = (k.spec.id,)
    for f in spec_files:
        for k in choose(spec_files=[f], dtype=dtype):
            names[k.variant_name] = ("--spec", where(f))
    for r in refs:
        names[r.name] = ("--callable", f"{where(r.path)}:{r.function}")
    return names, tuple(names)


def _check_baseline(base, refs, variants, spec_files, confirm, requests):
    from gemmprof.results.sweep import CUBLAS, TORCH

    if base == TORCH:
        if not refs:
            raise InputError("--baseline torch.matmul: its row comes with --callable runs only")
        if confirm and (variants or spec_files):
            raise InputError("--confirm with --baseline torch.matmul: a confirmation runs one variant beside the "
                             "baseline, and only --callable runs have that row: sweep rungs and specs against cuBLAS")
    elif base != CUBLAS:
        for req, expected in requests:
            ids = {sel[0] for sel in req.names.values() if len(sel) == 1}
            if base not in expected and base not in ids:
                raise InputError(f"--baseline {base}: not a variant of this sweep ({', '.join(expected)}), nor "
                                 "cuBLAS or torch.matmul")
    for req, expected in requests:
        for name in req.highlight:
            ids = {sel[0] for sel in req.names.values() if len(sel) == 1}
            if name not in expected and name not in ids:
                raise InputError(f"--highlight {name}: not a variant of this sweep ({', '.join(expected)})")


def _run_args(run_options, passed: dict[str, str]) -> tuple[str, ...]:
    out: list[str] = []
    for flag, value in passed.items():
        out += [flag, value]
    for text in run_options:
        try:
            words = shlex.split(text)
        except ValueError as exc:
            raise InputError(f"--run-option {text!r}: {exc}") from None
        if not words:
            raise InputError("--run-option: empty")
        for w in words:
            if w.split("=", 1)[0] in SET_BY_SWEEP:
                raise InputError(f"--run-option {text!r}: the sweep sets {w.split('=', 1)[0]} itself (use the "
                                 "sweep's own option where it has one)")
        out += words
    return tuple(out)


def _check_child(req) -> None:
    """The child command line is one `gemmprof run` takes: a bad pass-through option fails now, not per shape."""
    argv = req.child(req.shapes[0], req.out_dir / "check.json")
    try:
        run_command.make_context("run", argv[argv.index("run") + 1:])
    except click.UsageError as exc:
        raise InputError(f"gemmprof run refuses the sweep's options: {exc.format_message()}") from None


def _refuse_incomplete(requests) -> None:
    from gemmprof.tune.shape_sweep import missing_runs

    for req in requests:
        if not req.out_dir.is_dir():
            raise InputError(f"--out-dir {req.out_dir}: not an existing folder (nothing to summarise)")
        missing = missing_runs(req.shapes, req.out_dir)
        if missing:
            shown = ", ".join(f"run_{m}.json" for m in missing[:6]) + (f" and {len(missing) - 6} more"
                                                                         if len(missing) > 6 else "")
            raise InputError(f"--summarize-only: {req.out_dir} lacks {shown} ({len(missing)} of "
                             f"{len(req.shapes)} shapes): a summary of part of the sweep is not written; give the "
                             "shapes that ran (--shapes), or run the sweep to finish them")


def _workers(lib, gpus, ray_address, stand_in):
    """(the workers, the Ray pool to close or None): one per GPU of this host, or one Ray actor per GPU."""
    execute = lib.run_process
    if stand_in:
        from gemmprof.tune.sweep_standin import execute
    elif not ray_address:
        from gemmprof.errors import require_cupy

        require_cupy()
    if not ray_address:
        return lib.local_slots(gpus, execute), None
    from gemmprof.results import cells

    try:
        count = None if gpus in (None, "all") else cells.count(gpus, minimum=1)
    except cells.CellError:
        raise InputError(f"--gpus: {gpus!r} is not a number >= 1 or 'all'") from None
    pool = lib.RayPool(ray_address, count, stand_in=stand_in)
    return pool.start(), pool


def _run(lib, requests, slots) -> dict[str, list[str]]:
    say = lambda text: click.echo(text, err=True)  # noqa: E731
    say(f"sweep: {len(requests[0].shapes)} shapes x {len(requests)} dtype(s) on {len(slots)} worker(s): "
        + ", ".join(s.label for s in slots))
    return {req.dtype: lib.run_sweep(req, slots, say) for req in requests}


def _summaries(lib, requests, root: Path, plot: bool, fmt):
    from gemmprof.render.sweep_files import fresh_stem, write_summary
    from gemmprof.render.sweep_tables import headline_table, sweep_table
    from gemmprof.render.table import emit

    say = lambda text: click.echo(text, err=True)  # noqa: E731
    sweeps = []
    for req in requests:
        sweep = lib.summarize_dir(req)
        from gemmprof.results.sweep import CUBLAS, TORCH

        if req.baseline not in (CUBLAS, TORCH) and not any(c.baseline for c in sweep.cells):
            raise InputError(f"--baseline {req.baseline}: no run in {req.out_dir} holds a variant of that name")
        written = write_summary(sweep, req.out_dir, plot, say)
        say(f"{req.dtype}: summary in {', '.join(str(w) for w in written)}")
        if len(sweep.device.split(", ")) > 1:
            say(f"warning: {req.dtype}: the runs ran on different GPUs ({sweep.device}); a sweep is per device model")
        emit(sweep_table(sweep), fmt)
        sweeps.append(sweep)
    headline = headline_table(sweeps)
    if len(sweeps) > 1:
        stem = fresh_stem(root, "headline")
        for ext in ("csv", "txt"):
            emit(headline, output=root / f"{stem}.{ext}")
        say(f"headline of {len(sweeps)} dtypes in {root / stem}.csv and .txt")
    emit(headline, fmt)
    return sweeps
