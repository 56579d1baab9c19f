"""Stand-ins for the compiler and the GPU: deterministic, picklable, for tests and dry runs on a CPU.

The stand-in GPU's speed is a smooth function of the parameters (fastest at `targets`, default 128 for every
parameter) with seeded noise, so strategies have something to find and results repeat exactly.
"""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from gemmprof.tune.measure import Measure
from gemmprof.tune.records import FAILED_VERIFICATION, TIMED, CompileOutcome, Outcome
from gemmprof.tune.space import config_key


def standin_tflops(params: dict[str, int], targets: dict[str, int] | None = None) -> float:
    targets = targets or {}
    dist = sum((math.log2(max(v, 1)) - math.log2(targets.get(k, 128))) ** 2 for k, v in params.items())
    return 40.0 / (1.0 + 0.05 * dist)


@dataclass(frozen=True)
class StandInCompiler:
    delay_s: float = 0.0
    fail_keys: frozenset[str] = frozenset()

    def __call__(self, params: dict[str, int]) -> CompileOutcome:
        t0 = time.perf_counter()
        time.sleep(self.delay_s)
        if config_key(params) in self.fail_keys:
            return CompileOutcome(False, "kernel.cu(12): error: stand-in compile failure",
                                  seconds=time.perf_counter() - t0)
        return CompileOutcome(True, info={"registers": 64 + params.get("TM", 0)}, seconds=time.perf_counter() - t0)


@dataclass(frozen=True)
class StandInFactory:
    flops: int = 2 * 4096**3
    delay_s: float = 0.0
    noise: float = 0.01
    reps: int = 10
    targets: dict[str, int] = field(default_factory=dict)
    fail_verify_keys: frozenset[str] = frozenset()
    device_names: tuple[str, ...] = ("Stand-in GPU",)  # per device index (the last one repeats)
    die_once_dir: str | None = None  # with die_keys: the first worker to meet such a key exits at once
    die_keys: frozenset[str] = frozenset()

    def __call__(self, device_index: int) -> StandInMeasure:
        return StandInMeasure(self, device_index)


class StandInMeasure(Measure):
    compiler = "stand-in compiler 1.0"

    def __init__(self, cfg: StandInFactory, device_index: int):
        self.cfg, self.index = cfg, device_index
        self.device_name = cfg.device_names[min(device_index, len(cfg.device_names) - 1)]
        self.calls: list[str] = []

    def _times(self, params, n, salt):
        ms = self.cfg.flops / (standin_tflops(params, self.cfg.targets) * 1e12) * 1e3
        rng = random.Random(f"{config_key(params)}/{salt}")
        return [ms * (1 + abs(rng.gauss(0, self.cfg.noise))) for _ in range(n)]

    def measure(self, params, compiled) -> Outcome:
        key = config_key(params)
        self.calls.append(key)
        if self.cfg.die_once_dir and key in self.cfg.die_keys:
            marker = Path(self.cfg.die_once_dir) / ("died-" + key.replace(",", "_").replace("=", "-"))
            if not marker.exists():
                marker.write_text(str(os.getpid()))
                os._exit(7)
        time.sleep(self.cfg.delay_s)
        if key in self.cfg.fail_verify_keys:
            return Outcome(FAILED_VERIFICATION, message="relative error 3.1e-01 exceeds tolerance 1e-04")
        return Outcome(TIMED, tuple(self._times(params, self.cfg.reps, "sweep")),
                       info={"pid": os.getpid(), "device_index": self.index})

    def sample(self, params, reps):
        self.calls.append("sample:" + config_key(params))
        return self._times(params, reps, f"retime{len(self.calls)}")
