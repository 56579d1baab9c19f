"""Measurement: the per-device callable the engine is given, and the in-process measurer for one device.

A `Measure` is built inside the process that owns a GPU by a picklable factory, `factory(device_index)`.
It verifies before it times (`measure` returns a typed Outcome) and re-times verified configurations
round-robin (`retime`), so slow drifts of clock or temperature hit every candidate alike.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor

from gemmprof.errors import GemmprofError, InputError
from gemmprof.tune.records import CompileOutcome, Outcome
from gemmprof.tune.space import config_key


class RestartWorker(Exception):  # noqa: N818 - a signal, not a failure of the caller
    """Raised by a Measure after a fault that leaves its process unusable (a lost CUDA context): the worker
    reports `outcome` and is replaced by a fresh process."""

    def __init__(self, outcome: Outcome):
        super().__init__(outcome.message)
        self.outcome = outcome


class Measure:
    device_name: str = "unknown device"
    compiler: str = "unknown compiler"

    def measure(self, params: dict[str, int], compiled: CompileOutcome) -> Outcome:
        raise NotImplementedError

    def sample(self, params: dict[str, int], reps: int) -> list[float]:
        """`reps` fresh timings (ms) of a configuration this process has verified (or verifies now)."""
        raise NotImplementedError

    def retime(self, candidates: list[dict[str, int]], rounds: int, reps: int = 5) -> dict[str, list[float]]:
        """Interleaved: round after round, each candidate gets `reps` timed launches in turn."""
        samples: dict[str, list[float]] = {config_key(p): [] for p in candidates}
        for _ in range(rounds):
            for p in candidates:
                samples[config_key(p)].extend(self.sample(p, reps))
        return samples

    def close(self) -> None:
        pass


def visible_gpus(count: int | str | None = 1) -> list[str | None]:
    """The GPUs a sweep may use, as CUDA_VISIBLE_DEVICES entries (None: leave the variable alone).

    `count` is a number or "all". CUDA_VISIBLE_DEVICES, when set, is honoured; otherwise nvidia-smi counts the
    devices (without creating a CUDA context in this process)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        ids = [x.strip() for x in env.split(",") if x.strip()]
        if "-1" in ids:
            ids = ids[:ids.index("-1")]
    else:
        ids = [str(i) for i in range(_count_devices())]
    count = 1 if count is None else count  # no --gpus: one GPU, the first visible one
    if count in (1, "1") and env is None:
        return [None]  # one GPU: exactly what a plain run would use
    if count == "all":
        n = len(ids)
    else:
        from gemmprof.results import cells

        try:
            n = cells.count(str(count), minimum=1)
        except cells.CellError:
            raise InputError(f"--gpus: {count!r} is not a number >= 1 or 'all'") from None
    if n > len(ids):
        raise InputError(f"--gpus {n}: only {len(ids)} GPU(s) visible"
                         + (f" (CUDA_VISIBLE_DEVICES={env})" if env is not None else ""))
    return ids[:n]


def _count_devices() -> int:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 1
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return 1
    return max(1, sum(1 for ln in out.splitlines() if ln.startswith("GPU ")))


class InlineMeasurer:
    """One device, measured in this process on one background thread (the compile pool runs beside it)."""

    capacity = 1

    def __init__(self, factory, device_index: int = 0):
        self._factory, self._index = factory, device_index
        self._measure: Measure | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gemmprof-measure")

    def start(self) -> str:
        self._measure = self._pool.submit(self._factory, self._index).result()
        return self._measure.device_name

    @property
    def device_name(self) -> str:
        return self._measure.device_name if self._measure else ""

    @property
    def compiler(self) -> str:
        return self._measure.compiler if self._measure else ""

    def _run(self, params, compiled):
        try:
            return self._measure.measure(params, compiled), "gpu0"
        except RestartWorker as exc:
            raise GemmprofError(f"{exc.outcome.message}; this process cannot measure any more: run the same "
                                "command again to resume (the cache keeps every finished result)") from None

    def submit(self, params, compiled) -> Future:
        return self._pool.submit(self._run, params, compiled)

    def measure_now(self, params, compiled) -> tuple[Outcome, str]:
        return self._run(params, compiled)

    def retime(self, candidates, rounds: int) -> dict[str, list[float]]:
        return self._pool.submit(self._measure.retime, candidates, rounds).result()

    def close(self) -> None:
        if self._measure is not None:
            self._pool.submit(self._measure.close).result()
        self._pool.shutdown(wait=True, cancel_futures=True)

