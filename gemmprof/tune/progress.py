"""A rich progress bar for a sweep: configurations done of planned, best so far, estimated time left."""

from __future__ import annotations

from gemmprof.tune.engine import ProgressEvent


class RichProgress:
    """Use as a context manager; pass the instance as run_tune's `progress` callback."""

    def __init__(self, console=None):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TimeElapsedColumn(), TextColumn("{task.fields[eta]}"), transient=True, console=console)
        self._task = None

    def __enter__(self):
        self._bar.__enter__()
        self._task = self._bar.add_task("tuning", total=None, eta="")
        return self

    def __exit__(self, *exc):
        return self._bar.__exit__(*exc)

    def __call__(self, e: ProgressEvent) -> None:
        best = f"best {e.best.tflops:.2f} TFLOP/s" if e.best is not None else "no timing yet"
        desc = {"retime": f"re-timing the top ({best})", "done": best}.get(e.phase, best)
        eta = "" if e.eta_s is None or e.phase != "sweep" else f"~{_clock(e.eta_s)} left"
        self._bar.update(self._task, completed=e.done, total=e.total, description=desc, eta=eta)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
