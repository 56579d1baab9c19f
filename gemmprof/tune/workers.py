"""One measuring process per GPU of this host: candidates dealt out one at a time, results back to the parent.

Each worker sees only its GPU (CUDA_VISIBLE_DEVICES set before anything imports CUDA) and is given its index.
The parent alone writes the cache, from the results the workers send; a worker that dies loses only the
configuration it was measuring, which is dealt out again once (a second death marks it as an error).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field

from gemmprof.errors import GemmprofError
from gemmprof.tune.measure import RestartWorker
from gemmprof.tune.records import ERROR, Outcome

MAX_RESTARTS = 3
HELLO_TIMEOUT_S = 600.0


def worker_main(index: int, visible_id, factory, inbox, outbox) -> None:
    if visible_id is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(visible_id)
    try:
        m = factory(index)
        outbox.put(("hello", index, (m.device_name, m.compiler), None))
    except Exception as exc:
        outbox.put(("hello", index, None, f"{type(exc).__name__}: {exc}"))
        return
    while True:
        msg = inbox.get()
        if msg[0] == "stop":
            m.close()
            return
        kind, tid, args = msg
        try:
            res = m.measure(*args) if kind == "measure" else m.retime(*args)
            outbox.put(("done", index, tid, res))
        except RestartWorker as exc:
            outbox.put(("done", index, tid, exc.outcome))
            os._exit(3)
        except Exception as exc:
            if kind == "measure":
                outbox.put(("done", index, tid, Outcome(ERROR, message=f"{type(exc).__name__}: {exc}"[:300])))
            else:
                outbox.put(("failed", index, tid, f"{type(exc).__name__}: {exc}"))


@dataclass
class _Task:
    tid: int
    kind: str
    args: tuple
    future: Future
    attempts: int = 0


@dataclass
class _Slot:
    index: int
    visible_id: str | None
    proc: object = None
    inbox: object = None
    ready: bool = False
    task: _Task | None = None
    restarts: int = 0
    label: str = field(default="")


class ProcessMeasurer:
    def __init__(self, factory, gpus: list[str | None]):
        self._factory = factory
        self._ctx = mp.get_context("spawn")  # never fork a process that may hold a CUDA context
        self._outbox = self._ctx.Queue()
        self._slots = [_Slot(i, g, label=f"gpu{i}" if g is None else f"gpu{g}") for i, g in enumerate(gpus)]
        self._pending: deque[_Task] = deque()
        self._lock = threading.RLock()
        self._tids = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.device_name = ""
        self.compiler = ""
        self.deaths = 0

    @property
    def capacity(self) -> int:
        return len(self._slots)

    def _spawn(self, slot: _Slot):
        slot.inbox = self._ctx.Queue()
        slot.ready = False
        slot.proc = self._ctx.Process(target=worker_main, name=f"gemmprof-tune-{slot.label}", daemon=True,
                                      args=(slot.index, slot.visible_id, self._factory, slot.inbox, self._outbox))
        slot.proc.start()

    def start(self) -> str:
        for slot in self._slots:
            self._spawn(slot)
        names: dict[str, tuple] = {}
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        while len(names) < len(self._slots):
            try:
                kind, index, info, err = self._outbox.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.close()
                raise GemmprofError("tune: GPU workers did not start in time") from None
            if err:
                self.close()
                raise GemmprofError(f"tune: worker {self._slots[index].label} could not start: {err}")
            names[self._slots[index].label] = info
            self._slots[index].ready = True
        distinct = {info[0] for info in names.values()}
        if len(distinct) > 1:
            self.close()
            shown = ", ".join(f"{k}: {v[0]}" for k, v in sorted(names.items()))
            raise GemmprofError(f"tune: the GPUs differ ({shown}); a sweep is per device model: choose GPUs of "
                                "one model with CUDA_VISIBLE_DEVICES")
        self.device_name, self.compiler = next(iter(names.values()))
        self._thread = threading.Thread(target=self._listen, name="gemmprof-tune-listener", daemon=True)
        self._thread.start()
        return self.device_name

    def _submit(self, kind, args) -> Future:
        with self._lock:
            self._tids += 1
            task = _Task(self._tids, kind, args, Future())
            self._pending.append(task)
            self._dispatch()
        return task.future

    def submit(self, params, compiled) -> Future:
        """A future of (Outcome, worker label)."""
        return self._submit("measure", (params, compiled))

    def retime(self, candidates, rounds: int) -> dict[str, list[float]]:
        samples, _label = self._submit("retime", (candidates, rounds)).result()
        return samples

    def _dispatch(self):
        for slot in self._slots:
            if not self._pending:
                return
            if slot.ready and slot.task is None and slot.proc is not None and slot.proc.is_alive():
                task = self._pending.popleft()
                slot.task = task
                slot.inbox.put((task.kind, task.tid, task.args))

    def _listen(self):
        while not self._stop.is_set():
            try:
                kind, index, tid, payload = self._outbox.get(timeout=0.2)
            except queue.Empty:
                self._check_workers()
                continue
            except (EOFError, OSError):
                return
            with self._lock:
                slot = self._slots[index]
                if kind == "hello":  # a restarted worker: ("hello", index, (device, compiler) or None, error)
                    info, err = tid, payload
                    slot.ready = err is None and info is not None and info[0] == self.device_name
                elif slot.task is not None and slot.task.tid == tid:
                    task, slot.task = slot.task, None
                    if kind == "done":
                        task.future.set_result((payload, slot.label))
                    else:
                        task.future.set_exception(GemmprofError(f"tune: {slot.label}: {payload}"))
                self._check_workers()
                self._dispatch()

    def _check_workers(self):
        with self._lock:
            for slot in self._slots:
                if slot.proc is None or slot.proc.is_alive():
                    continue
                code = slot.proc.exitcode
                slot.proc = None
                if slot.task is not None:
                    task, slot.task = slot.task, None
                    self.deaths += 1
                    task.attempts += 1
                    if task.attempts >= 2:
                        msg = f"the worker died twice while measuring this configuration (exit code {code})"
                        if task.kind == "measure":
                            task.future.set_result((Outcome(ERROR, message=msg), slot.label))
                        else:
                            task.future.set_exception(GemmprofError(f"tune: re-timing failed: {msg}"))
                    else:
                        self._pending.appendleft(task)
                if slot.restarts < MAX_RESTARTS:
                    slot.restarts += 1
                    self._spawn(slot)
            if all(s.proc is None for s in self._slots):
                while self._pending:
                    self._pending.popleft().future.set_exception(
                        GemmprofError("tune: every GPU worker died (and was restarted too often)"))
            self._dispatch()

    def kill_worker(self, index: int) -> None:
        """For tests and Ctrl-C: end one worker's process at once."""
        proc = self._slots[index].proc
        if proc is not None:
            proc.kill()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for slot in self._slots:
            if slot.proc is not None and slot.proc.is_alive():
                try:
                    slot.inbox.put(("stop",))
                except (OSError, ValueError):
                    pass
        for slot in self._slots:
            if slot.proc is not None:
                slot.proc.join(timeout=10)
                if slot.proc.is_alive():
                    slot.proc.kill()
                    slot.proc.join(timeout=5)
        with self._lock:
            for task in [*self._pending, *(s.task for s in self._slots if s.task)]:
                if not task.future.done():
                    task.future.cancel()

