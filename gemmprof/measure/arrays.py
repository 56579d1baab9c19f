"""How a Python callable sees the problem's arrays: CuPy arrays as they are, or torch tensors sharing their memory.

torch tensors come through DLPack (torch.from_dlpack on the CuPy array), zero-copy: the tensor's data pointer
must be the array's. Where it is not (a DLPack that copies, or fails), the tensor is a copy made with a
device-to-device memcpy, C is copied in before each call and back after it, and the row says so: its times then
include those two copies. Neither CuPy nor torch is imported here until an adapter is used.
"""

from __future__ import annotations

import contextlib
import sys

from gemmprof.errors import InputError

ARRAY_KINDS = ("cupy", "torch")


def array_module(a):
    """cupy for a CuPy array (or generator), else numpy: the module whose functions suit `a`. Imports CuPy only for
    CuPy's own objects."""
    if type(a).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    import numpy

    return numpy


FP8_TORCH = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}  # the torch dtypes of gemmprof's fp8 dtypes


def bf16_note(dtype: str, c_dtype: str = "fp32") -> str:
    """What a CuPy callable gets instead of bfloat16 (or float8) arrays, for the row's note ("" when nothing is)."""
    if dtype in FP8_TORCH:
        c = "; C is a uint16 array of bf16 bit patterns" if c_dtype == "bf16" else ""
        return (f"A and B are uint8 arrays of {dtype} bit patterns{c} (CuPy has no float8; --arrays torch gives "
                f"torch.{FP8_TORCH[dtype]})")
    held = {(True, True): "A, B and C are uint16 arrays", (True, False): "A and B are uint16 arrays",
            (False, True): "C is a uint16 array"}.get((dtype == "bf16", c_dtype == "bf16"))
    if held is None:
        return ""
    return f"{held} of bf16 bit patterns (CuPy has no bfloat16; --arrays torch gives bfloat16)"


def require_torch(what: str = "--arrays torch"):
    try:
        import torch
    except ImportError:
        raise InputError(f"{what}: torch is not installed (pip install torch, or use the default CuPy arrays)") \
            from None
    return torch


def adapter(kind: str):
    if kind == "cupy":
        return CupyArrays()
    if kind == "torch":
        return TorchArrays(require_torch())
    raise InputError(f"--arrays {kind!r}: give one of {', '.join(ARRAY_KINDS)}")


def is_fp8(problem) -> bool:
    return problem.dtype in FP8_TORCH


class CupyArrays:
    """The problem's own arrays (bf16 operands as uint16 bit patterns, fp8 as uint8: CuPy has neither type)."""

    kind = "cupy"
    note = ""
    copied: list[str] = []  # never: the problem's own arrays

    def operands(self, problem):
        """A (M x K row-major) and B (K x N); fp8's B is column-major, a view of N rows of K, as fp8 tensor cores
        read it (docs/fp8.md)."""
        if is_fp8(problem):
            return problem.A, problem.operand("B", "col").T
        return problem.A, problem.B

    def scales(self, problem) -> dict:
        """fp8: {scale_a, scale_b} as the callable sees them (Problem.scale_view); {} for other dtypes."""
        if not is_fp8(problem):
            return {}
        return {"scale_a": problem.scale_view("A"), "scale_b": problem.scale_view("B")}

    def output(self, out, c_dtype: str = "fp32"):
        """(C as the callable sees it, what to do before the call, after it): nothing to do for CuPy (a bf16 C is
        uint16 bit patterns, as the operands are)."""
        return out, None, None

    def stream(self):
        # torch imported by the callable's module (None: an import of it failed): it may launch on torch's stream
        return _torch_follows_cupy() if sys.modules.get("torch") is not None else contextlib.nullcontext()


class TorchArrays:
    """torch tensors over the problem's memory (bf16 operands and C as torch.bfloat16)."""

    kind = "torch"

    def __init__(self, torch):
        self.torch = torch
        self.copied: list[str] = []
        self._operands: dict[int, tuple] = {}

    @property
    def note(self) -> str:
        if not self.copied:
            return ""
        return (f"torch tensors are copies ({', '.join(self.copied)}: DLPack did not share CuPy's memory); "
                "times include copying C in and out")

    def operands(self, problem):
        key = id(problem)
        if key not in self._operands:
            if is_fp8(problem):  # uint8 bit patterns viewed as torch's float8; B column-major (N rows of K)
                fp8 = getattr(self.torch, FP8_TORCH[problem.dtype])
                a = self.share(problem.A, "A")[0].view(fp8)
                b = self.share(problem.operand("B", "col"), "B")[0].view(fp8).t()
                self._operands[key] = (a, b)
            else:
                bf16 = problem.dtype == "bf16"
                self._operands[key] = (self.share(problem.A, "A", bf16)[0], self.share(problem.B, "B", bf16)[0])
        return self._operands[key]

    def scales(self, problem) -> dict:
        """fp8: {scale_a, scale_b} as float32 tensors over the stored scales, viewed as Problem.scale_view."""
        if not is_fp8(problem):
            return {}
        out = {}
        for name, stored in (("scale_a", problem.scale_a), ("scale_b", problem.scale_b)):
            tensor = self.share(stored, name)[0]
            out[name] = tensor if tensor.dim() == 1 else tensor.t()
        return out

    def output(self, out, c_dtype: str = "fp32"):
        tensor, shared = self.share(out, "C", c_dtype == "bf16")
        if shared:
            return tensor, None, None
        ptr, nbytes = _pointer(out), out.nbytes
        return (tensor, lambda: _device_copy(tensor.data_ptr(), ptr, nbytes),
                lambda: _device_copy(ptr, tensor.data_ptr(), nbytes))

    def share(self, array, label: str, bf16: bool = False):
        """(a torch tensor over `array`, whether it shares its memory). bf16 bit patterns go as int16, which
        DLPack carries everywhere, and are viewed as torch.bfloat16."""
        torch = self.torch
        source = array.view("int16") if bf16 else array
        try:
            tensor = torch.from_dlpack(source)
        except Exception:  # a DLPack torch cannot read: copy instead
            tensor = None
        if tensor is not None and tensor.data_ptr() == _pointer(array):
            return (tensor.view(torch.bfloat16) if bf16 else tensor), True
        dtype = torch.bfloat16 if bf16 else getattr(torch, str(array.dtype))
        copy = torch.empty(tuple(array.shape), dtype=dtype, device="cuda")
        _device_copy(copy.data_ptr(), _pointer(array), array.nbytes)
        self.copied.append(label)
        return copy, False

    def stream(self):
        return _torch_follows_cupy()


def _pointer(array) -> int:
    return array.data.ptr


def _device_copy(dst: int, src: int, nbytes: int) -> None:
    """cudaMemcpyAsync device to device on CuPy's current stream."""
    import cupy

    cupy.cuda.runtime.memcpyAsync(dst, src, nbytes, cupy.cuda.runtime.memcpyDeviceToDevice,
                                  cupy.cuda.get_current_stream().ptr)


def _torch_follows_cupy():
    """Make CuPy's current stream torch's current stream for the variant, so torch (and Triton, which launches
    on torch's stream) enqueue where gemmprof's events are recorded. Both default to the legacy default stream."""
    import cupy
    import torch

    ptr = cupy.cuda.get_current_stream().ptr
    if torch.cuda.current_stream().cuda_stream == ptr:
        return contextlib.nullcontext()
    return torch.cuda.stream(torch.cuda.ExternalStream(ptr))
