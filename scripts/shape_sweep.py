"""Issue 26's shape sweep: rungs against cuBLAS over many shapes, one `gemmprof run` per shape, summarised.

    python3 scripts/shape_sweep.py 13-16 --dtype fp32 --out-dir sweep_fp32 [--shapes "1000 4096 4095x4097x1023"]
    python3 scripts/shape_sweep.py h4-h6 --dtype fp16 --out-dir sweep_fp16 --shapes-file shapes.txt --budget 0.2
    python3 scripts/shape_sweep.py h4-h13 --dtype fp16 --out-dir sweep_fp16 --confirm --max-reps 2000 --budget 0.5
    python3 scripts/shape_sweep.py --summarize-only --dtype fp32 --out-dir sweep_fp32      # no GPU: the files again

Each shape runs in a process of its own (`gemmprof run RUNGS -m M -n N -k K --dtype D -o OUT/run_MxNxK.json`, with
cuBLAS of that dtype in the same run), so a fault at one shape costs only that shape. --confirm then times each
contender of the shape (every rung within 5% of its best) again beside cuBLAS alone, the two in turns
(OUT/confirm_MxNxK_RUNG.json), and the best column takes the highest of those: the first run's small-shape figures
move by several points, the highest of many noisy figures favours the luckiest, and interleaving all the variants
would hand each the clocks its predecessor left under the power cap. The summary
(OUT/summary.json, a gemmprof.sweep file; OUT/summary.csv and .txt) has, per rung and shape, % of cuBLAS, per rung
the geometric mean and the minimum over the shapes it ran, and the same for the best rung of each shape. Without
--shapes or --shapes-file the built-in list runs (gemmprof.results.sweep.DEFAULT_SHAPES: squares 1024-8192, LLM
layers with M from 16 to 16384 and N, K of 4096, 11008 and 14336, K = 16384, sizes off the tiles). --resume keeps the
shapes whose results file exists. Exit status 1 when a shape has no results file (it is left out of the summary).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from gemmprof.errors import GemmprofError, InputError
from gemmprof.measure.child import ChildRun
from gemmprof.render.sweep_tables import sweep_table
from gemmprof.render.table import emit
from gemmprof.results.run import load_run
from gemmprof.results.shape import GemmShape
from gemmprof.results.sweep import chosen_shapes, summarize


def results_file(out_dir: Path, shape: GemmShape) -> Path:
    return out_dir / f"run_{shape.label}.json"


def confirmation_file(out_dir: Path, shape: GemmShape, variant: str) -> Path:
    return out_dir / f"confirm_{shape.label}_{variant}.json"


def confirmation_files(out_dir: Path, shape: GemmShape) -> list[Path]:
    """The shape's confirmations as written or gzipped (and a record's older single `confirm_MxNxK.json`)."""
    found = {}
    for pattern in (f"confirm_{shape.label}.json", f"confirm_{shape.label}_*.json"):
        for p in (*out_dir.glob(pattern), *out_dir.glob(pattern + ".gz")):
            found.setdefault(p.name.removesuffix(".gz"), p)
    return [found[name] for name in sorted(found)]


def run_command(rungs: list[str], shape: GemmShape, dtype: str, budget: float, out: Path, interleave: bool = False,
                max_reps: int | None = None) -> list[str]:
    """The child `gemmprof run` of one shape, an argument list (no shell)."""
    return ChildRun(tuple(rungs), shape, dtype=dtype, budget_s=budget, output=str(out), interleave=interleave,
                    max_reps=max_reps).argv()


def _child(cmd: list[str], log_path: Path, execute) -> int:
    with open(log_path, "w", encoding="utf-8") as log:
        return execute(cmd, stdout=log, stderr=subprocess.STDOUT, check=False).returncode


CONTENDERS = 0.05  # --confirm times again every rung within 5% of the first run's best (its noise at small shapes)


def contenders(out: Path, dtype: str, margin: float = CONTENDERS) -> list[str]:
    """The variants of one shape's results file within `margin` of its highest % of cuBLAS, best first."""
    run = load_run(out)
    sweep = summarize([(out.name, run)], dtype)
    ranked = sorted(((sweep.pct(v, run.shape), v) for v in sweep.variants if sweep.pct(v, run.shape) is not None),
                    key=lambda pv: -pv[0])
    return [v for p, v in ranked if p >= (1 - margin) * ranked[0][0]] if ranked else []


def run_shapes(rungs, shapes, dtype, budget, out_dir: Path, resume: bool, execute=subprocess.run,
               confirm: bool = False, max_reps: int | None = None) -> list[str]:
    """Run every shape (logs beside the results) and, with `confirm`, each of its contenders (rungs within
    CONTENDERS of its best) again beside cuBLAS alone, the two timed in turns; the shapes that left no results
    file. With `resume` a shape's run and confirmations already there are kept."""
    failed = []
    for i, shape in enumerate(shapes, 1):
        out = results_file(out_dir, shape)
        if not (resume and out.is_file()):
            t0 = time.perf_counter()
            rc = _child(run_command(rungs, shape, dtype, budget, out, max_reps=max_reps),
                        out_dir / f"run_{shape.label}.log", execute)
            print(f"[{i}/{len(shapes)}] {shape.label}: rc={rc} {time.perf_counter() - t0:.1f} s", flush=True)
        else:
            print(f"[{i}/{len(shapes)}] {shape.label}: kept {out.name}", flush=True)
        if not out.is_file():
            failed.append(shape.label)
            continue
        for variant in contenders(out, dtype) if confirm else ():
            again = confirmation_file(out_dir, shape, variant)
            if resume and again.is_file():
                continue
            t0 = time.perf_counter()
            rc = _child(run_command([variant], shape, dtype, budget, again, interleave=True, max_reps=max_reps),
                        again.with_suffix(".log"), execute)
            print(f"[{i}/{len(shapes)}] {shape.label}: {variant} again beside cuBLAS, in turns: rc={rc} "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    return failed


def _kept(path: Path) -> Path | None:
    """The results file as written, or gzipped as a record keeps it (`.json.gz`); None where neither is there."""
    return next((p for p in (path, path.with_name(path.name + ".gz")) if p.is_file()), None)


def summarize_dir(shapes, dtype: str, out_dir: Path):
    files = [_kept(results_file(out_dir, s)) for s in shapes]
    runs = [(f.name, load_run(f)) for f in files if f]
    if not runs:
        raise InputError(f"--out-dir {out_dir}: no results file of these shapes (run_MxNxK.json)")
    ran = {run.shape for _, run in runs}
    again = [f for s in shapes if s in ran for f in confirmation_files(out_dir, s)]
    sweep = summarize(runs, dtype, [(f.name, load_run(f)) for f in again])
    sweep.save(out_dir / "summary.json")
    table = sweep_table(sweep)
    for ext in ("csv", "txt"):
        emit(table, output=out_dir / f"summary.{ext}")
    emit(table)
    return sweep


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rungs", nargs="*", help="rung ids, ranges or names, as `gemmprof run` takes them")
    ap.add_argument("--dtype", choices=["fp32", "fp16", "bf16"], required=True)
    ap.add_argument("--shapes", help="shapes: N or MxNxK, separated by spaces or commas (default: the built-in list)")
    ap.add_argument("--shapes-file", help="a file of shapes, as --shapes, `#` comments")
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of timed launches per variant and shape")
    ap.add_argument("--confirm", action="store_true",
                    help="after each shape's run, time each rung within 5%% of its best again beside cuBLAS alone, "
                         "the two in turns (gemmprof run RUNG --interleave, OUT/confirm_MxNxK_RUNG.json): the best "
                         "column takes the highest of those")
    ap.add_argument("--max-reps", type=int, help="launches per variant at most (gemmprof run's default: 200; "
                                                  "small shapes reach it long before --budget)")
    ap.add_argument("--out-dir", required=True, help="an existing folder for the per-shape results and the summary")
    ap.add_argument("--resume", action="store_true", help="keep the shapes whose results file exists")
    ap.add_argument("--summarize-only", action="store_true", help="run nothing: summarise the results files there")
    args = ap.parse_args(argv)
    try:
        shapes = chosen_shapes(args.shapes, args.shapes_file)  # --shapes '' is an error, not the built-in list
        out_dir = Path(args.out_dir)
        if not out_dir.is_dir():
            raise InputError(f"--out-dir {out_dir}: not an existing folder")
        if not (0 < args.budget <= 3600):
            raise InputError(f"--budget {args.budget}: expected seconds above 0, at most 3600")
        if args.max_reps is not None and args.max_reps < 1:
            raise InputError(f"--max-reps {args.max_reps}: expected at least 1")
        if not args.summarize_only:
            if not args.rungs:
                raise InputError("name the rungs to run (e.g. 13-16, h4-h6), or pass --summarize-only")
            run_shapes(args.rungs, shapes, args.dtype, args.budget, out_dir, args.resume, confirm=args.confirm,
                       max_reps=args.max_reps)
        summarize_dir(shapes, args.dtype, out_dir)
    except GemmprofError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    missing = [s.label for s in shapes if not _kept(results_file(out_dir, s))]
    if missing:  # left out of the summary: say so, and fail
        print(f"no results file at {', '.join(missing)} (see run_MxNxK.log there)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
