"""Beyond one host: one Ray actor per GPU (num_gpus=1), each building its own Measure.

Ray is an optional extra. `address` is "auto" (a running cluster), "ray://..." or "host:port"; tests pass
"local" to start a private single-node instance with stand-in GPU resources. Actors whose device names differ
are refused: a sweep is per device model. Compilation still runs in the parent's pool on its host; an actor on
another host compiles again on its own (CuPy's kernel cache is per host).
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from concurrent.futures import Future

from gemmprof.errors import GemmprofError
from gemmprof.tune.measure import RestartWorker
from gemmprof.tune.records import ERROR, Outcome, first_line


def import_ray():
    try:
        import ray
    except ImportError:
        raise GemmprofError("--ray needs Ray: pip install 'gemmprof[ray]' (or pip install ray)") from None
    return ray


class _GpuWorker:
    """The actor's body (wrapped by ray.remote at run time, so importing this module needs no Ray)."""

    def __init__(self, factory, index: int):
        self.measure = factory(index)

    def hello(self):
        return self.measure.device_name, self.measure.compiler

    def run_measure(self, params, compiled):
        try:
            return self.measure.measure(params, compiled), False
        except RestartWorker as exc:
            return exc.outcome, True

    def run_retime(self, candidates, rounds):
        return self.measure.retime(candidates, rounds)


class RayMeasurer:
    def __init__(self, factory, address: str, gpus: int | None = None, local_gpus: int | None = None):
        self._ray = import_ray()
        self._factory, self._address, self._gpus, self._local_gpus = factory, address, gpus, local_gpus
        self._actors: list = []
        self._idle: deque[int] = deque()
        self._pending: deque = deque()
        self._events: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self.deaths = 0
        self._started_ray = False
        self.device_name = self.compiler = ""

    @property
    def capacity(self) -> int:
        return len(self._actors)

    def start(self) -> str:
        ray = self._ray
        if not ray.is_initialized():
            try:
                self._init(ray)
            except Exception as exc:  # ConnectionError, ValueError, RuntimeError ... from Ray
                raise GemmprofError(f"--ray {self._address}: cannot start or reach Ray: {first_line(str(exc))}"
                                    ) from None
            self._started_ray = True
        n = int(ray.cluster_resources().get("GPU", 0))
        if self._gpus is not None:
            n = min(n, self._gpus)
        if n < 1:
            raise GemmprofError(f"--ray {self._address}: the cluster has no GPU to place an actor on")
        actor = ray.remote(num_gpus=1, max_restarts=0)(_GpuWorker)
        self._actors = [actor.remote(self._factory, i) for i in range(n)]
        try:
            infos = ray.get([a.hello.remote() for a in self._actors])
        except Exception as exc:
            raise GemmprofError(f"--ray: a GPU actor could not start: {exc}") from None
        if len({i[0] for i in infos}) > 1:
            shown = ", ".join(f"actor {k}: {v[0]}" for k, v in enumerate(infos))
            raise GemmprofError(f"--ray: the GPUs differ ({shown}); a sweep is per device model")
        self.device_name, self.compiler = infos[0]
        self._idle.extend(range(n))
        self._thread = threading.Thread(target=self._loop, name="gemmprof-tune-ray", daemon=True)
        self._thread.start()
        return self.device_name

    def _init(self, ray):
        if self._address == "local":
            ray.init(num_cpus=max(2, self._local_gpus) if self._local_gpus else None, num_gpus=self._local_gpus,
                     include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=self._address, log_to_driver=False)

    def submit(self, params, compiled) -> Future:
        fut: Future = Future()
        self._events.put(("submit", (params, compiled, fut, 0)))
        return fut

    # Every Ray call after start() is made on this one thread: a callback of a Ray future runs on Ray's own
    # thread, and killing or creating an actor from there can hang (seen with Ray 2.60 after an actor died).
    def _loop(self):
        while True:
            kind, payload = self._events.get()
            if kind == "stop":
                return
            if kind == "submit":
                self._pending.append(payload)
            else:
                self._done(*payload)
            self._dispatch()

    def _dispatch(self):
        while self._idle and self._pending:
            i = self._idle.popleft()
            params, compiled, fut, attempts = job = self._pending.popleft()
            ref = self._actors[i].run_measure.remote(params, compiled)
            ref.future().add_done_callback(lambda f, i=i, job=job: self._events.put(("done", (i, job, f))))

    def _done(self, i, job, f):
        params, compiled, fut, attempts = job
        try:
            outcome, restart = f.result()
        except Exception as exc:  # the actor died (RayActorError) or the task failed
            self._replace(i)
            if attempts == 0:
                self._pending.appendleft((params, compiled, fut, 1))
            else:
                fut.set_result((Outcome(ERROR, message=f"Ray actor failed twice: {exc}"[:300]), f"ray{i}"))
            return
        if restart:
            self._replace(i)
        else:
            self._idle.append(i)
        fut.set_result((outcome, f"ray{i}"))

    def _replace(self, i):
        ray = self._ray
        self.deaths += 1
        try:
            ray.kill(self._actors[i])
        except Exception:
            pass
        actor = ray.remote(num_gpus=1, max_restarts=0)(_GpuWorker)
        self._actors[i] = actor.remote(self._factory, i)
        self._idle.append(i)

    def retime(self, candidates, rounds: int) -> dict[str, list[float]]:
        return self._ray.get(self._actors[0].run_retime.remote(candidates, rounds))

    def close(self) -> None:
        ray = self._ray
        if self._thread is not None:
            self._events.put(("stop", None))
            self._thread.join(timeout=10)
        for _params, _compiled, fut, _attempts in self._pending:
            fut.cancel()
        for a in self._actors:
            try:
                ray.kill(a)
            except Exception:
                pass
        if self._started_ray:
            ray.shutdown()
