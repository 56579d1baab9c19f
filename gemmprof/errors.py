"""The error hierarchy: every user-facing failure is a GemmprofError, printed as one line by the CLI."""


class GemmprofError(Exception):
    """A failure the user can act on; its message is one line and names what went wrong."""

    exit_code = 1


class InputError(GemmprofError):
    """Bad input: an option, a file, a value."""

    exit_code = 2


class GpuSpecError(InputError):
    """A GPU spec (profiles/*.yaml, --gpu NAME, --gpu-file FILE) is unknown or malformed."""


class SpecError(InputError):
    """A kernel spec is malformed or its constraints reject the parameters or the shape."""


class ToolNotFoundError(GemmprofError):
    """An external tool (nvcc, ncu, nsys) is missing."""

    def __init__(self, tool: str, usual_place: str, hint: str = ""):
        msg = f"{tool} was not found on PATH (it usually lives in {usual_place})"
        if hint:
            msg += f"; {hint}"
        super().__init__(msg)
        self.tool = tool


class GpuUnavailableError(GemmprofError):
    """CuPy or a CUDA device is missing."""


def require_cupy():
    """Import CuPy, or explain how to get it."""
    try:
        import cupy  # noqa: F401
    except ImportError as exc:
        raise GpuUnavailableError(
            "this command needs CuPy and a CUDA GPU: pip install 'gemmprof[cuda12]' (or [cuda13] for CUDA 13 drivers)"
        ) from exc
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError, or a RuntimeError when libcuda.so itself cannot be loaded
        text = str(exc)
        if "InsufficientDriver" in text or "driver" in text.lower() or "libcuda" in text:
            raise GpuUnavailableError(f"no CUDA driver found (or it is older than this CuPy needs): install the "
                                      f"NVIDIA driver, or run on a machine with a GPU ({text})") from exc
        if "NoDevice" in text:
            raise GpuUnavailableError("no CUDA GPU found: the driver sees no device") from exc
        raise GpuUnavailableError(f"CuPy found no usable CUDA device ({text})") from exc
    if count < 1:
        raise GpuUnavailableError("no CUDA GPU found: the driver sees no device")
    return cupy
