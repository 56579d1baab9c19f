"""A stand-in for CuPy made of NumPy, so the real runner (problem, poisoned and sentinel outputs, verification,
the timing loop, NVTX ranges) runs a Python callable on the CPU: arrays are NumPy arrays, CUDA events read the
host clock, NVTX ranges are recorded in `ranges`. Only what gemmprof's runner touches is there."""

from __future__ import annotations

import time
import types

import numpy as np

PROPS = {"name": "Stand-in GPU (NumPy)", "major": 9, "minor": 0, "multiProcessorCount": 132, "l2CacheSize": 1 << 16,
         "clockRate": 1_980_000, "memoryClockRate": 2_619_000}


class _Event:
    def __init__(self):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass


class _Device:
    pci_bus_id = None

    def synchronize(self):
        pass


def make(ranges: list) -> types.ModuleType:
    """A module named cupy: NumPy's names, plus the cuda namespace; NVTX pushes and pops go into `ranges`."""
    cupy = types.ModuleType("cupy")
    cupy.__getattr__ = lambda name: getattr(np, name)  # PEP 562: cupy.float32, cupy.full, ... are NumPy's
    cupy.__version__ = "stand-in"
    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1, getDeviceProperties=lambda index: dict(PROPS), deviceSynchronize=lambda: None,
        driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13000,
        CUDARuntimeError=type("CUDARuntimeError", (RuntimeError,), {}))
    cupy.cuda = types.SimpleNamespace(
        runtime=runtime, driver=types.SimpleNamespace(CUDADriverError=type("CUDADriverError", (RuntimeError,), {})),
        Device=_Device, Event=_Event, get_elapsed_time=lambda s, e: (e.t - s.t) * 1e3,
        get_current_stream=lambda: types.SimpleNamespace(ptr=0),
        nvtx=types.SimpleNamespace(RangePush=lambda name: ranges.append(("push", name)),
                                   RangePop=lambda: ranges.append(("pop", None))))
    return cupy
