"""Facts about the CUDA device, read through CuPy (imported only when called)."""

from __future__ import annotations

from gemmprof.catalog.gpu_specs import GpuSpec, gpu_for_device_name


def device_name(props: dict | None = None, index: int = 0) -> str:
    """The device's name as CUDA reports it (CuPy gives bytes on some versions, str on others)."""
    if props is None:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(index)
    name = props["name"]
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name)


def current_device_gpu() -> GpuSpec | None:
    """The GPU spec of CUDA device 0, when CuPy and a device are present."""
    try:
        import cupy
        props = cupy.cuda.runtime.getDeviceProperties(0)
    except Exception:  # no CuPy, no driver, no device: the caller falls back
        return None
    return gpu_for_device_name(device_name(props))
