"""NVML (through nvidia-ml-py, module `pynvml`): read the SM clock, temperature and clock-event reasons.

Read only: nothing here sets a clock, a power limit or an application clock. `open_reader` returns None (and a
reason) when pynvml is missing or NVML cannot start, so a run goes on without clock records.
"""

from __future__ import annotations

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

    def read(self) -> ClockSample | None:
        nvml = self.nvml
        try:
            clock = float(nvml.nvmlDeviceGetClockInfo(self.device, nvml.NVML_CLOCK_SM))
        except Exception:
            return None
        try:
            temp = float(nvml.nvmlDeviceGetTemperature(self.device, nvml.NVML_TEMPERATURE_GPU))
        except Exception:
            temp = None
        return ClockSample(clock, temp, tuple(self._reasons()))

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

