"""`gemmprof sweep` as a library call: variants over a set of shapes, one child `gemmprof run` per shape.

Each shape runs in a process of its own (a fault at one shape costs only that shape), beside the baseline of its
dtype in the same run. The children are dealt out to workers: one per GPU of this host (CUDA_VISIBLE_DEVICES set
for each child), or one Ray actor per GPU of a cluster (the actor runs the child on its node and sends the results
file back; each node needs gemmprof and the kernel files at the same paths). A child writes into `partial/` and its
file moves into the sweep's folder only once the run has ended by itself (exit 0, or 1: a variant failed), so a
file there is always a finished run: the next sweep into the folder keeps it (resumable), and refuses a folder whose
files hold other variants than it asks for. --confirm times each shape's contenders (every variant within 5% of the
first run's best) again beside the baseline alone, in turns.

Summaries (render/sweep_files.py) never replace one another: the first is summary.json (.csv, .txt, -headline.csv,
.png), later ones summary-UTCTIME.* beside it.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from gemmprof.errors import GemmprofError, InputError
from gemmprof.measure.child import ChildRun
from gemmprof.results.run import RunResult, load_run
from gemmprof.results.shape import GemmShape
from gemmprof.results.sweep import CUBLAS, SweepSummary, summarize

CONTENDERS = 0.05  # --confirm times again every variant within 5% of the first run's best (its noise at small shapes)
FINISHED = (0, 1)  # `gemmprof run` ended by itself: 1 says a variant failed, its file is complete
PARTIAL = "partial"  # where a child writes; a file moves out of it once its run has finished


@dataclass(frozen=True)
class SweepRequest:
    dtype: str
    shapes: tuple[GemmShape, ...]
    out_dir: Path
    selectors: tuple[str, ...] = ()  # `gemmprof run` selectors: rungs, ("--spec", FILE), ("--callable", REF) pairs
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)  # each variant's name -> its selector(s)
    layers: dict[GemmShape, str] = field(default_factory=dict)  # the model layer(s) of each shape (--model)
    model: str = ""
    budget_s: float = 0.3
    precision: float | None = None
    max_reps: int | None = None
    c_dtype: str | None = None
    arrays: str | None = None
    run_args: tuple[str, ...] = ()  # every other `gemmprof run` argument, passed through as it is
    interleave: bool = False  # each shape's run times its variants in turns (a confirmation always does)
    confirm: bool = False
    baseline: str = CUBLAS
    p: float = 1.0
    highlight: tuple[str, ...] = ()

    def child(self, shape: GemmShape, output: Path, selectors: tuple[str, ...] | None = None,
              interleave: bool = False) -> list[str]:
        """The child `gemmprof run` of one shape, an argument list (no shell)."""
        return ChildRun(self.selectors if selectors is None else selectors, shape, dtype=self.dtype,
                        budget_s=self.budget_s, max_reps=self.max_reps, output=str(output), interleave=interleave,
                        precision=self.precision, c_dtype=self.c_dtype, arrays=self.arrays,
                        extra=self.run_args).argv()


def results_file(out_dir: Path, shape: GemmShape) -> Path:
    return Path(out_dir) / f"run_{shape.label}.json"


def confirmation_file(out_dir: Path, shape: GemmShape, variant: str) -> Path:
    return Path(out_dir) / f"confirm_{shape.label}_{variant}.json"


def kept(path: Path) -> Path | None:
    """The results file as written, or gzipped as a record keeps it (`.json.gz`); None where neither is there."""
    return next((p for p in (path, path.with_name(path.name + ".gz")) if p.is_file()), None)


def confirmation_files(out_dir: Path, shape: GemmShape) -> list[Path]:
    """The shape's confirmations as written or gzipped (and a record's older single `confirm_MxNxK.json`)."""
    found = {}
    for pattern in (f"confirm_{shape.label}.json", f"confirm_{shape.label}_*.json"):
        for p in (*Path(out_dir).glob(pattern), *Path(out_dir).glob(pattern + ".gz")):
            found.setdefault(p.name.removesuffix(".gz"), p)
    return [found[name] for name in sorted(found)]


def missing_runs(shapes, out_dir: Path) -> list[str]:
    return [s.label for s in shapes if not kept(results_file(out_dir, s))]


# -- the workers: one per GPU of this host, or one Ray actor per GPU of a cluster -------------------------------------
Execute = Callable[[list[str], Path, dict | None], int]


def run_process(argv: list[str], log_path: Path, env: dict | None = None) -> int:
    """The child, its output in the log (no shell); its exit status."""
    with open(log_path, "w", encoding="utf-8") as log:
        return subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env, check=False).returncode


@dataclass
class LocalSlot:
    """A GPU of this host: the child sees only it (CUDA_VISIBLE_DEVICES), or what this process sees (None)."""

    gpu: str | None
    execute: Execute = run_process

    @property
    def label(self) -> str:
        return "this host" if self.gpu is None else f"GPU {self.gpu}"

    def run(self, argv: list[str], output: Path, log_path: Path) -> int:
        env = None if self.gpu is None else {**os.environ, "CUDA_VISIBLE_DEVICES": str(self.gpu)}
        return self.execute(argv, log_path, env)


def local_slots(gpus: str | None, execute: Execute = run_process) -> list[LocalSlot]:
    from gemmprof.tune.measure import visible_gpus

    return [LocalSlot(g, execute) for g in visible_gpus(gpus)]


class _RayChild:
    """A Ray actor's body (wrapped by ray.remote at run time, so importing this module needs no Ray): it runs the
    child on its node, on the GPU Ray gave it, and sends back the exit status, the log and the results file."""

    def __init__(self, stand_in: bool):
        self.stand_in = stand_in

    def node(self) -> str:
        import socket

        return socket.gethostname()

    def run(self, argv: list[str]):
        import sys
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            out, log = Path(tmp) / "run.json", Path(tmp) / "run.log"
            argv = [sys.executable, *argv[1:]]  # this node's Python
            argv[argv.index("-o") + 1] = str(out)
            if self.stand_in:
                from gemmprof.tune.sweep_standin import execute
            else:
                execute = run_process
            rc = execute(argv, log, None)
            return (rc, log.read_text(encoding="utf-8", errors="replace") if log.is_file() else "",
                    out.read_bytes() if out.is_file() else None)


@dataclass
class RaySlot:
    actor: object
    index: int
    ray: object

    @property
    def label(self) -> str:
        return f"Ray actor {self.index}"

    def run(self, argv: list[str], output: Path, log_path: Path) -> int:
        from gemmprof.results.files import write_atomic

        try:
            rc, log, data = self.ray.get(self.actor.run.remote(argv))
        except Exception as exc:  # the actor died (RayActorError) or the task failed
            write_atomic(log_path, f"Ray actor {self.index} failed: {exc}\n")
            return 1000
        write_atomic(log_path, log)
        if data is not None:
            Path(output).write_bytes(data)
        return rc


class RayPool:
    """One actor per GPU of a Ray cluster (num_gpus=1 each): `address` is auto, ray://..., host:port or local."""

    def __init__(self, address: str, gpus: int | None = None, stand_in: bool = False):
        from gemmprof.tune.ray_pool import import_ray

        self.ray = import_ray()
        self.address, self.gpus, self.stand_in = address, gpus, stand_in
        self.started = False
        self.slots: list[RaySlot] = []

    def start(self) -> list[RaySlot]:
        ray = self.ray
        if not ray.is_initialized():
            try:
                if self.address == "local":  # a private one-node instance; the stand-in declares its GPUs
                    ray.init(num_cpus=2, num_gpus=(self.gpus or 1) if self.stand_in else self.gpus,
                             include_dashboard=False, log_to_driver=False)
                else:
                    ray.init(address=self.address, log_to_driver=False)
            except Exception as exc:  # ConnectionError, ValueError, RuntimeError ... from Ray
                raise GemmprofError(f"--ray {self.address}: cannot start or reach Ray: "
                                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}") from None
            self.started = True
        n = int(ray.cluster_resources().get("GPU", 0))
        n = min(n, self.gpus) if self.gpus is not None else n
        if n < 1:
            self.close()
            raise GemmprofError(f"--ray {self.address}: the cluster has no GPU to place an actor on")
        actor = ray.remote(num_gpus=1, max_restarts=1)(_RayChild)
        self.slots = [RaySlot(actor.remote(self.stand_in), i, ray) for i in range(n)]
        return self.slots

    def close(self) -> None:
        for s in self.slots:
            try:
                self.ray.kill(s.actor)
            except Exception:  # noqa: BLE001 - an actor that is gone already
                pass
        if self.started:
            self.ray.shutdown()


# -- one shape, then the sweep ---------------------------------------------------------------------------------------
def _finish(slot, argv: list[str], final: Path) -> tuple[int, float]:
    """Run one child into partial/, then move its file to `final` if its run finished by itself."""
    work = final.parent / PARTIAL
    work.mkdir(exist_ok=True)
    tmp = work / final.name
    tmp.unlink(missing_ok=True)
    argv = list(argv)
    argv[argv.index("-o") + 1] = str(tmp)
    t0 = time.perf_counter()
    rc = slot.run(argv, tmp, final.with_suffix(".log"))
    if rc in FINISHED and tmp.is_file():
        os.replace(tmp, final)
    return rc, time.perf_counter() - t0


def contenders(run: RunResult, req: SweepRequest, margin: float = CONTENDERS) -> list[str]:
    """The variants of one shape's run within `margin` of its highest % of the baseline, best first."""
    sweep = summarize([("run", run)], req.dtype, baseline=req.baseline)
    ranked = sorted(((sweep.pct(v, run.shape), v) for v in sweep.variants if sweep.pct(v, run.shape) is not None),
                    key=lambda pv: -pv[0])
    return [v for p, v in ranked if p >= (1 - margin) * ranked[0][0]] if ranked else []


def _selector(run: RunResult, variant: str, req: SweepRequest) -> tuple[str, ...]:
    if variant in req.names:
        return req.names[variant]
    v = next(x for x in run.variants if x.name == variant)
    return (v.id,) if v.kind == "ladder" else (variant,)


def _confirm_selectors(run: RunResult, variant: str, req: SweepRequest) -> tuple[str, ...]:
    """The contender, and the baseline beside it where the baseline is another variant."""
    sel = _selector(run, variant, req)
    from gemmprof.results.sweep import TORCH, is_variant

    if req.baseline in (CUBLAS, TORCH):
        return sel
    base = next((x for x in run.variants if is_variant(x, req.baseline)), None)
    return sel + (_selector(run, base.name, req) if base is not None else ())


def run_shape(req: SweepRequest, shape: GemmShape, slot, say: Callable[[str], None], tag: str) -> bool:
    """The shape's run (kept where a finished one is there) and, with `confirm`, its contenders again; True where
    the shape has a results file."""
    out = results_file(req.out_dir, shape)
    if kept(out):
        say(f"{tag} {shape.label}: kept {kept(out).name}")
    else:
        rc, secs = _finish(slot, req.child(shape, out, interleave=req.interleave), out)
        state = "" if kept(out) else f", no results file (see {out.with_suffix('.log').name})"
        say(f"{tag} {shape.label}: rc={rc} {secs:.1f} s on {slot.label}{state}")
    found = kept(out)
    if found is None:
        return False
    if req.confirm:
        run = load_run(found)
        for variant in contenders(run, req):
            again = confirmation_file(req.out_dir, shape, variant)
            if kept(again):
                continue
            argv = req.child(shape, again, _confirm_selectors(run, variant, req), interleave=True)
            rc, secs = _finish(slot, argv, again)
            say(f"{tag} {shape.label}: {variant} again beside the baseline, in turns: rc={rc} {secs:.1f} s")
    return True


def run_sweep(req: SweepRequest, slots: list, say: Callable[[str], None] = print) -> list[str]:
    """Every shape, dealt out to the workers (`slots`) as each comes free; the labels of shapes left without a
    results file."""
    free: queue.Queue = queue.Queue()
    for s in slots:
        free.put(s)
    lock = threading.Lock()
    n = len(req.shapes)

    def locked(text):
        with lock:
            say(text)

    def one(i, shape):
        slot = free.get()
        try:
            return None if run_shape(req, shape, slot, locked, f"[{i}/{n}]") else shape.label
        finally:
            free.put(slot)

    pool = ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="gemmprof-sweep")
    try:
        futures = [pool.submit(one, i, s) for i, s in enumerate(req.shapes, 1)]
        failed = [f.result() for f in futures]
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)  # the children got Ctrl-C too; nothing half-written is kept
        raise
    pool.shutdown(wait=True)
    try:
        (Path(req.out_dir) / PARTIAL).rmdir()  # only where no child left a file there
    except OSError:
        pass
    return [label for label in failed if label]


def check_kept(req: SweepRequest, expected: tuple[str, ...]) -> None:
    """A folder's finished runs are kept only where they hold every variant this sweep asks for."""
    for shape in req.shapes:
        found = kept(results_file(req.out_dir, shape))
        if found is None:
            continue
        run = load_run(found)
        names = {v.name for v in run.variants}
        lacking = [e for e in expected if e not in names]
        if run.shape != shape or lacking:
            what = f"holds no {', '.join(lacking)}" if lacking else f"is a run at {run.shape.label}"
            raise InputError(f"--out-dir {req.out_dir}: {found.name} {what} (a run of another sweep): sweep into "
                             "another --out-dir, or move that file away")


# -- the summary -----------------------------------------------------------------------------------------------------
def summarize_dir(req: SweepRequest) -> SweepSummary:
    """The summary of the folder's runs at the request's shapes (and their confirmations)."""
    files = [kept(results_file(req.out_dir, s)) for s in req.shapes]
    runs = [(f.name, load_run(f)) for f in files if f]
    if not runs:
        raise InputError(f"--out-dir {req.out_dir}: no results file of these shapes (run_MxNxK.json)")
    ran = {run.shape for _, run in runs}
    again = [f for s in req.shapes if s in ran for f in confirmation_files(req.out_dir, s)]
    highlight = tuple(_name_of(h, [r for _, r in runs], req.dtype) for h in req.highlight)
    return summarize(runs, req.dtype, [(f.name, load_run(f)) for f in again], baseline=req.baseline,
                     layers=req.layers, model=req.model, p=req.p, highlight=highlight)


def _name_of(name: str, runs: list[RunResult], dtype: str) -> str:
    """A variant named by its name or, for a rung, its id (h12): its name in the runs of `dtype`."""
    from gemmprof.results.sweep import is_variant

    return next((v.name for r in runs for v in r.variants if v.dtype == dtype and is_variant(v, name)), name)


def for_dtype(req: SweepRequest, dtype: str, out_dir: Path) -> SweepRequest:
    return replace(req, dtype=dtype, out_dir=out_dir)
