"""The sweep: propose, compile on the CPU in parallel while the GPU(s) measure earlier candidates, record, re-time.

Everything that touches a compiler or a GPU is injected: `compile_fn(params) -> CompileOutcome` runs in
`compile_pool` (a process or thread pool), and `measurer` (InlineMeasurer, ProcessMeasurer, RayMeasurer)
verifies then times. So the whole pipeline runs on a CPU with stand-ins, and replays a recorded cache.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass

from gemmprof.tune.cache import TuneCache
from gemmprof.tune.records import COMPILE_ERROR, INVALID, TIMED, Outcome, Record
from gemmprof.tune.result import ConfigResult, TuneResult, make_verdict
from gemmprof.tune.space import SearchSpace, config_key
from gemmprof.tune.strategies import Strategy


@dataclass(frozen=True)
class SweepOptions:
    budget_configs: int | None = None
    budget_s: float | None = None
    top: int = 5  # candidates re-timed at the end
    retime_rounds: int = 5
    serial: bool = False  # compile, verify, time one after another (the baseline the pipeline is measured against)


@dataclass(frozen=True)
class ProgressEvent:
    done: int
    total: int
    record: Record | None
    best: ConfigResult | None
    eta_s: float | None
    phase: str = "sweep"  # sweep | retime | done


class _Sweep:
    def __init__(self, space, strategy, cache, compile_fn, compile_pool, measurer, options, flops, progress,
                 clock):
        self.space, self.strategy, self.cache, self.opt = space, strategy, cache, options
        self.compile_fn, self.pool, self.measurer, self.flops = compile_fn, compile_pool, measurer, flops
        self.progress, self.clock = progress or (lambda _e: None), clock
        self.evaluated: dict[str, ConfigResult] = {}
        self.measured_now = 0
        self.started = clock()
        self.best: ConfigResult | None = None
        self.total = len(space.valid) if options.budget_configs is None else min(options.budget_configs,
                                                                                 len(space.valid))

    # bookkeeping --------------------------------------------------------------------------------------------
    def answer(self, rec: Record, new: bool):
        if new:
            self.cache.add(rec)
            self.measured_now += 1
        res = ConfigResult.from_record(rec, self.flops)
        self.evaluated[config_key(rec.params)] = res
        self.strategy.tell(rec.params, res.tflops or 0.0)
        if res.tflops and (self.best is None or res.tflops > self.best.tflops):
            self.best = res
        self.progress(ProgressEvent(len(self.evaluated), self.total, rec, self.best, self.eta()))

    def eta(self) -> float | None:
        left = self.total - len(self.evaluated)
        if left <= 0:
            return 0.0
        elapsed = self.clock() - self.started
        eta = elapsed / self.measured_now * left if self.measured_now else None
        if self.opt.budget_s is not None:
            rest = max(0.0, self.opt.budget_s - elapsed)
            eta = rest if eta is None else min(eta, rest)
        return eta

    def may_propose(self, in_flight: int) -> bool:
        if self.opt.budget_configs is not None and len(self.evaluated) + in_flight >= self.opt.budget_configs:
            return False
        return self.opt.budget_s is None or self.clock() - self.started < self.opt.budget_s

    def next_new(self, in_flight: int):
        """The strategy's next configuration not yet in the cache (cached ones are answered on the way)."""
        while self.may_propose(in_flight):
            batch = self.strategy.ask(1)
            if not batch:
                return None
            params = batch[0]
            cached = self.cache.get(params)
            if cached is not None:
                self.answer(cached, new=False)
                continue
            return params
        return None

    # the two loops ------------------------------------------------------------------------------------------
    def run_serial(self):
        while (params := self.next_new(0)) is not None:
            compiled = self.compile_fn(params)
            if not compiled.ok:
                self.answer(Record.from_outcome(params, Outcome(COMPILE_ERROR, message=compiled.message), compiled),
                            new=True)
                continue
            outcome, worker = self.measurer.measure_now(params, compiled)
            self.answer(Record.from_outcome(params, outcome, compiled, worker), new=True)

    def run_pipelined(self):
        compiling: dict = {}  # future -> params
        measuring: dict = {}  # future -> (params, compiled)
        ready: deque = deque()
        lookahead = getattr(self.pool, "_max_workers", 4) + 2 * self.measurer.capacity
        exhausted = False
        while True:
            while not exhausted and len(compiling) + len(ready) + len(measuring) < lookahead:
                params = self.next_new(len(compiling) + len(ready) + len(measuring))
                if params is None:
                    exhausted = True
                    break
                compiling[self.pool.submit(self.compile_fn, params)] = params
            while ready and len(measuring) < 2 * self.measurer.capacity:  # one queued per GPU: it never idles
                params, compiled = ready.popleft()
                measuring[self.measurer.submit(params, compiled)] = (params, compiled)
            if not (compiling or measuring or ready):
                if exhausted or not self.may_propose(0):
                    return
                continue
            done, _ = wait([*compiling, *measuring], return_when=FIRST_COMPLETED)
            for fut in done:
                if fut in compiling:
                    params = compiling.pop(fut)
                    compiled = fut.result()
                    if compiled.ok:
                        ready.append((params, compiled))
                    else:
                        rec = Record.from_outcome(params, Outcome(COMPILE_ERROR, message=compiled.message), compiled)
                        self.answer(rec, new=True)
                else:
                    params, compiled = measuring.pop(fut)
                    outcome, worker = fut.result()
                    self.answer(Record.from_outcome(params, outcome, compiled, worker), new=True)

    def retime(self):
        timed = sorted((c for c in self.evaluated.values() if c.status == TIMED), key=lambda c: c.median_ms)
        top = timed[: self.opt.top]
        if len(top) < 2 or self.opt.retime_rounds < 1:
            return None
        keys = [config_key(c.params) for c in top]
        params_by_key = {config_key(c.params): c.params for c in top}
        self.progress(ProgressEvent(len(self.evaluated), self.total, None, self.best, None, "retime"))
        doc = self.cache.find_retime(keys)
        if doc is None:
            samples = self.measurer.retime([c.params for c in top], self.opt.retime_rounds)
            doc = self.cache.add_retime(keys, samples, self.opt.retime_rounds)
        return make_verdict(doc["samples_ms"], params_by_key, self.flops, doc["rounds"])


def run_sweep(*, kernel: str, dtype: str, shape, space: SearchSpace, strategy: Strategy, cache: TuneCache,
              compile_fn: Callable, compile_pool, measurer, options: SweepOptions, flops: int,
              progress: Callable[[ProgressEvent], None] | None = None, clock=time.monotonic) -> TuneResult:
    """Run (or resume, or replay) a sweep; Ctrl-C stops it and returns what is finished, marked interrupted.
    `measurer` must be started (its device name is in the cache key) and is not closed here."""
    for rej in space.rejected:  # pruned combinations are recorded once, so the cache holds the whole space
        if cache.get(rej.params) is None:
            cache.add(Record(rej.params, INVALID, rej.reason))
    sweep = _Sweep(space, strategy, cache, compile_fn, compile_pool, measurer, options, flops, progress, clock)
    known = {config_key(p): sweep.cache.get(p) for p in space.valid if cache.get(p) is not None}
    if strategy.name == "optuna":  # seed the model with what is cached; those count against the budget
        for rec in list(known.values())[: options.budget_configs]:
            res = ConfigResult.from_record(rec, flops)
            sweep.evaluated[config_key(rec.params)] = res
            if res.tflops and (sweep.best is None or res.tflops > sweep.best.tflops):
                sweep.best = res
        strategy.warm_start({k: (sweep.evaluated[k].tflops or 0.0) for k in sweep.evaluated})
    interrupted, verdict = False, None
    try:
        sweep.run_serial() if options.serial or compile_pool is None else sweep.run_pipelined()
        verdict = sweep.retime()
    except KeyboardInterrupt:
        interrupted = True
    sweep.progress(ProgressEvent(len(sweep.evaluated), sweep.total, None, sweep.best, 0.0, "done"))
    return TuneResult(kernel=kernel, dtype=dtype, shape={"M": shape.M, "N": shape.N, "K": shape.K},
                      device=measurer.device_name, compiler=measurer.compiler, strategy=strategy.name,
                      axes=dict(space.axes), space_total=space.total, space_valid=len(space.valid),
                      configs=tuple(sweep.evaluated.values()), measured_now=sweep.measured_now,
                      replayed=len(sweep.evaluated) - sweep.measured_now, elapsed_s=round(clock() - sweep.started, 3),
                      interrupted=interrupted, verdict=verdict, cache_file=str(cache.path))
