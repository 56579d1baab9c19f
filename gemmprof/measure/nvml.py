"""NVML (through nvidia-ml-py, module `pynvml`): read the SM clock, temperature, power, the total-energy counter
and clock-event reasons, once (`NvmlReader.read`) or every few milliseconds in a thread (`Sampler`).

Read only: nothing here sets a clock, a power limit or an application clock. `open_reader` returns None (and a
reason) when pynvml is missing or NVML cannot start, so a run goes on without clock records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from gemmprof.results.clocks import ClockSample

# NVML's clocks-event (throttle) reason bits, by their nvml.h names, written as short lowercase names
_REASONS = (("GpuIdle", "gpu_idle"), ("ApplicationsClocksSetting", "applications_clocks_setting"),
            ("SwPowerCap", "sw_power_cap"), ("HwSlowdown", "hw_slowdown"), ("SyncBoost", "sync_boost"),
            ("SwThermalSlowdown", "sw_thermal_slowdown"), ("HwThermalSlowdown", "hw_thermal_slowdown"),
            ("HwPowerBrakeSlowdown", "hw_power_brake_slowdown"), ("DisplayClockSetting", "display_clock_setting"))


class NvmlReader:
    """One device's readings. `device` is an NVML handle; `nvml` the pynvml module (or a fake with its names)."""

    def __init__(self, nvml, device):
        self.nvml, self.device = nvml, device
        try:
            self.max_sm_clock_mhz: float | None = float(nvml.nvmlDeviceGetMaxClockInfo(device, nvml.NVML_CLOCK_SM))
        except Exception:  # an NVML error on one query must not stop a run
            self.max_sm_clock_mhz = None

    def read(self, t_s: float = 0.0, full: bool = True) -> ClockSample | None:
        """One reading, stamped `t_s` (the sampler's clock); None when the SM clock cannot be read. `full`: power
        and the energy counter too (on the H200 a full reading takes about 5 ms, most of it those two)."""
        nvml = self.nvml
        try:
            clock = float(nvml.nvmlDeviceGetClockInfo(self.device, nvml.NVML_CLOCK_SM))
        except Exception:
            return None
        temp = self._number(lambda: nvml.nvmlDeviceGetTemperature(self.device, nvml.NVML_TEMPERATURE_GPU))
        milliwatts = self._number(lambda: nvml.nvmlDeviceGetPowerUsage(self.device)) if full else None
        energy = self._number(lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(self.device)) if full else None
        return ClockSample(clock, temp, tuple(self._reasons()), None if milliwatts is None else milliwatts / 1000,
                           energy, t_s)

    @staticmethod
    def _number(query) -> float | None:
        try:
            return float(query())
        except Exception:  # not supported on this GPU, or an NVML error: the figure is unknown, the run goes on
            return None

    def _reasons(self) -> Iterable[str]:
        nvml = self.nvml
        query = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        if query is None:
            return []
        try:
            mask = int(query(self.device))
        except Exception:
            return []
        found = []
        for nvml_name, short in _REASONS:
            bit = getattr(nvml, f"nvmlClocksEventReason{nvml_name}", None)
            if bit is None:
                bit = getattr(nvml, f"nvmlClocksThrottleReason{nvml_name}", None)
            if bit is not None and mask & int(bit):
                found.append(short)
        return found


def open_reader(pci_bus_id: str | None = None, nvml=None) -> tuple[NvmlReader | None, str]:
    """(reader, "") for the device with this PCI bus id (CUDA's numbering can differ from NVML's), else the
    first device; (None, why) when NVML is not available."""
    if nvml is None:
        try:
            import pynvml as nvml
        except ImportError:
            return None, "nvidia-ml-py is not installed (pip install 'gemmprof[cuda13]' or nvidia-ml-py)"
    try:
        nvml.nvmlInit()
        if pci_bus_id:
            device = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        else:
            device = nvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as exc:
        return None, f"NVML did not start ({type(exc).__name__}: {exc})"
    return NvmlReader(nvml, device), ""



class Sampler:
    """Reads the device every `period_s` in a background thread while the GPU works; the readings are kept in
    order, each stamped with seconds since the sampler started (time.monotonic). NVML calls release the GIL, so
    the thread costs the launching thread little. Use as a context manager, or start() and stop()."""

    def __init__(self, reader: NvmlReader, period_s: float = 0.01, clock=time.monotonic):
        self.reader, self.period_s, self.clock = reader, period_s, clock
        self.samples: list[ClockSample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._lock = threading.Lock()
        # held by the timer while it reads the host clock around a device-wide synchronization: a sample taken
        # then would keep the timer's thread from its interpreter and read as the device's time
        self.quiet = threading.Lock()

    def now(self) -> float:
        return self.clock() - self._t0

    def start(self) -> Sampler:
        self._t0 = self.clock()
        self._stop.clear()
        self._take()
        self._thread = threading.Thread(target=self._loop, name="gemmprof-nvml", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[ClockSample]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._take()
        return self.snapshot()

    def snapshot(self, since_s: float | None = None) -> list[ClockSample]:
        with self._lock:
            return [s for s in self.samples if since_s is None or s.t_s >= since_s]

    def _take(self) -> None:
        with self.quiet:
            sample = self.reader.read(self.now())
        if sample is not None:
            with self._lock:
                self.samples.append(sample)

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self._take()

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
