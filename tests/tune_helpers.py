"""Shared pieces of the tune tests: a small spec on disk, and a sweep wired with stand-ins."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gemmprof.catalog.spec import load_spec
from gemmprof.model.traffic import GemmShape
from gemmprof.tune.cache import CacheKey, TuneCache
from gemmprof.tune.engine import SweepOptions, run_sweep
from gemmprof.tune.measure import InlineMeasurer
from gemmprof.tune.space import enumerate_space
from gemmprof.tune.standin import StandInCompiler, StandInFactory
from gemmprof.tune.strategies import make_strategy

SPEC = """\
id: "99"
name: toy
title: Toy
description: a spec for the tune tests
source: {document: tests}
dtype: fp32
layout: {A: row, B: row, C: row}
file: toy.cu
entry: toy
template: [BM, BN, BK]
params: {BM: 64, BN: 64, BK: 8}
derived:
  THREADS: BM * BN // 64
TUNE
constraints:
  - check: THREADS <= 1024
    message: at most 1024 threads
  - check: BK <= BM
    message: BK at most BM
shape_constraints:
  - check: M % BM == 0
    message: M must be a multiple of BM
grid: [cdiv(N, BN), cdiv(M, BM), 1]
block: [THREADS, 1, 1]
"""
TOY_TUNE = "tune:\n  BM: [32, 64, 128, 256]\n  BN: [32, 64, 128, 256]\n  BK: [8, 16, 32, 64]\n"
SHAPE = GemmShape(1024, 1024, 1024)
FLOPS = 2 * 1024**3


def write_spec(tmp_path: Path, tune: str = TOY_TUNE, extra: str = "") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "toy.cu").write_text("// toy\n")
    p = tmp_path / "toy.yaml"
    p.write_text(SPEC.replace("TUNE\n", tune + extra))
    return p


def toy_spec(tmp_path, **kw):
    return load_spec(write_spec(tmp_path, **kw))


def sweep(spec, cache_dir, *, strategy="exhaustive", factory=None, compiler=None, measurer=None, pool_workers=3,
          serial=False, progress=None, seed=0, shape=SHAPE, clock=None, **options):
    space = enumerate_space(spec, shape)
    factory = factory or StandInFactory(flops=FLOPS)
    measurer = measurer or InlineMeasurer(factory)
    if not measurer.device_name:
        measurer.start()
    key = CacheKey(measurer.device_name, measurer.compiler, spec.name, "test", spec.dtype, shape.label)
    cache = TuneCache.open(cache_dir, key)
    kwargs = {"clock": clock} if clock else {}
    pool = None if serial else ThreadPoolExecutor(max_workers=pool_workers)
    try:
        return run_sweep(kernel=spec.name, dtype=spec.dtype, shape=shape, space=space,
                         strategy=make_strategy(strategy, space, seed), cache=cache,
                         compile_fn=compiler or StandInCompiler(), compile_pool=pool, measurer=measurer,
                         options=SweepOptions(serial=serial, **options), flops=FLOPS, progress=progress, **kwargs)
    finally:
        if pool is not None:
            pool.shutdown()
        cache.close()
