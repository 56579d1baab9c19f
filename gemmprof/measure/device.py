"""Facts about the CUDA device, read through CuPy (imported only when called)."""

from __future__ import annotations


def device_name(props: dict | None = None, index: int = 0) -> str:
    """The device's name as CUDA reports it (CuPy gives bytes on some versions, str on others)."""
    if props is None:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(index)
    name = props["name"]
    return name.decode(errors="replace") if isinstance(name, bytes) else str(name)
