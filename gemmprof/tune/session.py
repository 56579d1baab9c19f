"""One `gemmprof tune` invocation as a library call: space, strategy, cache, compile pool, measurer, sweep."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from gemmprof.catalog.paths import default_cache_dir
from gemmprof.catalog.sources import source_hash
from gemmprof.errors import GemmprofError
from gemmprof.measure.pools import process_pool, thread_pool
from gemmprof.tune.cache import CacheKey, TuneCache
from gemmprof.tune.engine import ProgressEvent, SweepOptions, run_sweep
from gemmprof.tune.measure import InlineMeasurer, visible_gpus
from gemmprof.tune.result import TuneResult
from gemmprof.tune.space import enumerate_space
from gemmprof.tune.strategies import make_strategy


@dataclass(frozen=True)
class TuneRequest:
    spec: object  # KernelSpec
    shape: object  # GemmShape
    strategy: str = "exhaustive"
    seed: int = 0
    budget_configs: int | None = None
    budget_minutes: float | None = None
    cache_dir: str | None = None
    top: int = 5
    rounds: int = 5
    gpus: str | None = None  # a number or "all"; None: 1 on this host, every GPU of a Ray cluster
    ray: str | None = None  # "auto" or an address
    jobs: int | None = None  # compile processes
    serial: bool = False
    timing_budget_s: float = 0.15
    stand_in: bool = False  # fake compiler and GPU (tests, dry runs)
    compiler: str | None = None  # nvcc | nvrtc; None: what `run` would use (nvcc where found)

    @property
    def cache_path(self) -> Path:
        return Path(self.cache_dir) if self.cache_dir else default_cache_dir()


def _callables(req: TuneRequest, flops: int):
    if req.stand_in:
        from gemmprof.tune.standin import StandInCompiler, StandInFactory

        delay = float(os.environ.get("GEMMPROF_STANDIN_DELAY_S", "0.002"))  # dry runs of scripts: a slower GPU
        return StandInFactory(flops=flops, delay_s=delay), StandInCompiler(delay_s=0.005)
    from gemmprof.tune.real import CupyFactory, compile_candidate, gpu_arch, gpu_sms

    s = req.shape
    factory = CupyFactory(str(req.spec.path), s.M, s.N, s.K, budget_s=req.timing_budget_s, compiler=req.compiler)
    sms = gpu_sms() if req.spec.specialize else None  # the workers build each configuration at the sweep's shape
    return factory, partial(compile_candidate, str(req.spec.path), gpu_arch(), req.compiler,
                            shape=(s.M, s.N, s.K), sms=sms)


def _measurer(req: TuneRequest, factory):
    if req.ray:
        from gemmprof.tune.ray_pool import RayMeasurer

        gpus = None if req.gpus in (None, "all") else int(req.gpus)
        # "local" on a GPU host lets Ray count the GPUs; the stand-in declares some for it
        return RayMeasurer(factory, req.ray, gpus=gpus, local_gpus=(gpus or 1) if req.stand_in else gpus)
    if req.serial:
        return InlineMeasurer(factory)
    from gemmprof.tune.workers import ProcessMeasurer

    return ProcessMeasurer(factory, visible_gpus(req.gpus))


def _compile_pool(req: TuneRequest):
    if req.serial:
        return None
    if req.stand_in:
        return thread_pool(req.jobs)
    return process_pool(req.jobs)  # its workers leave Ctrl-C to the parent (pools.ignore_sigint)


def run_tune(req: TuneRequest, progress: Callable[[ProgressEvent], None] | None = None,
             announce: Callable[[str], None] = lambda _t: None) -> TuneResult:
    space = enumerate_space(req.spec, req.shape)  # bad spaces fail here, before any process starts
    announce(space.describe())
    flops = 2 * req.shape.M * req.shape.N * req.shape.K
    factory, compile_fn = _callables(req, flops)
    strategy = make_strategy(req.strategy, space, req.seed)  # a missing Optuna fails here too
    measurer = _measurer(req, factory)
    pool = cache = None
    try:
        try:
            measurer.start()
        except KeyboardInterrupt:
            raise GemmprofError("interrupted before the sweep began; nothing was measured") from None
        key = CacheKey(measurer.device_name, measurer.compiler, req.spec.name, source_hash(req.spec),
                       req.spec.dtype, req.shape.label)
        cache = TuneCache.open(req.cache_path, key)
        for warning in cache.warnings:
            announce(warning)
        pool = _compile_pool(req)
        options = SweepOptions(budget_configs=req.budget_configs,
                               budget_s=None if req.budget_minutes is None else req.budget_minutes * 60,
                               top=req.top, retime_rounds=req.rounds, serial=req.serial)
        return run_sweep(kernel=req.spec.name, dtype=req.spec.dtype, shape=req.shape, space=space,
                         strategy=strategy, cache=cache, compile_fn=compile_fn, compile_pool=pool, measurer=measurer,
                         options=options, flops=flops, progress=progress)
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if cache is not None:
            cache.close()
        measurer.close()
