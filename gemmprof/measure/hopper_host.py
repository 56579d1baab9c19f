"""Host side of the Hopper rungs: TMA tensor maps and cluster launches through the CUDA driver (ctypes, libcuda).

Two driver calls that CuPy does not wrap:
  * cuTensorMapEncodeTiled builds the 128-byte CUtensorMap a kernel takes as `const __grid_constant__ CUtensorMap`;
    `encode_tiled` returns it as a 128-byte numpy.void scalar, which CuPy's RawKernel passes by value.
  * cuLaunchKernelEx launches with a cluster shape (`prepare_launch`); CuPy's RawKernel call cannot.
ctypes on libcuda.so.1 needs no package beyond numpy (cuda-bindings is not a gemmprof dependency, and CuPy's own
driver module does not expose these two calls). All checks that need no GPU run before the driver is touched.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gemmprof.errors import GemmprofError, GpuUnavailableError, InputError

TENSOR_MAP_BYTES = 128
ELEMENT_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "e4m3": 1, "e5m2": 1}
# CUtensorMapDataType, CUtensorMapSwizzle and CUtensorMapL2promotion values (cuda.h); fp8 is copied as bytes (UINT8)
TENSOR_DTYPE = {"fp16": 6, "fp32": 7, "bf16": 9, "e4m3": 0, "e5m2": 0}
SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
L2_PROMOTION = {0: 0, 64: 1, 128: 2, 256: 3}
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
MAX_BOX = 256
MAX_PORTABLE_CLUSTER = 8


class DriverError(GemmprofError):
    """A CUDA driver call returned an error code."""


# ---------------------------------------------------------------- the driver library

class Driver:
    """libcuda.so.1 through ctypes; every call goes through `check`, which turns a non-zero CUresult into a DriverError."""

    def __init__(self, lib=None):
        if lib is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
            except OSError as exc:
                raise GpuUnavailableError(f"the CUDA driver library libcuda.so.1 could not be loaded ({exc})") from exc
        self.lib = lib

    def error_text(self, code: int) -> str:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        try:
            self.lib.cuGetErrorName(code, ctypes.byref(name))
            self.lib.cuGetErrorString(code, ctypes.byref(text))
        except Exception:  # a partial library still gets the number reported
            pass
        label = name.value.decode() if name.value else f"CUresult {code}"
        return f"{label}: {text.value.decode()}" if text.value else label

    def check(self, code: int, what: str) -> None:
        if code != 0:
            raise DriverError(f"{what} failed with {self.error_text(code)}")


_driver: Driver | None = None


def driver() -> Driver:
    global _driver
    if _driver is None:
        _driver = Driver()
    return _driver


# ---------------------------------------------------------------- TMA tensor maps

@dataclass(frozen=True)
class TiledMap:
    """A row-major 2D tensor of rows x cols elements, copied in boxes of box_rows x box_cols (innermost: cols)."""

    dtype: str
    rows: int
    cols: int
    box_rows: int
    box_cols: int
    swizzle: int = 128
    l2_promotion: int = 256

    def validate(self) -> None:
        if self.dtype not in TENSOR_DTYPE:
            raise InputError(f"TMA dtype {self.dtype!r} is not one of {', '.join(TENSOR_DTYPE)}")
        esize = ELEMENT_BYTES[self.dtype]
        for name in ("rows", "cols", "box_rows", "box_cols"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise InputError(f"TMA {name} must be a positive integer, got {v!r}")
        if self.rows >= 2**32 or self.cols >= 2**32:
            raise InputError(f"TMA tensor {self.rows} x {self.cols} exceeds 2^32 - 1 elements per dimension")
        per_row = 16 // esize
        if self.cols % per_row:
            lo = self.cols - self.cols % per_row
            hi = lo + per_row
            near = f"{lo} or {hi}" if lo else f"{hi}"
            raise InputError(f"TMA rows must be a multiple of 16 bytes: {self.cols} {self.dtype} elements per row "
                             f"is not a multiple of {per_row} (nearest valid: {near})")
        if self.box_rows > MAX_BOX or self.box_cols > MAX_BOX:
            raise InputError(f"TMA box {self.box_rows} x {self.box_cols} exceeds {MAX_BOX} in a dimension")
        inner = self.box_cols * esize
        if inner % 16:
            raise InputError(f"TMA box rows must be a multiple of 16 bytes, got {inner} ({self.box_cols} x {esize})")
        if self.swizzle not in SWIZZLE:
            raise InputError(f"TMA swizzle must be one of {sorted(SWIZZLE)} bytes, got {self.swizzle!r}")
        if self.swizzle and inner > self.swizzle:
            raise InputError(f"a {self.swizzle}-byte swizzle needs box rows of at most {self.swizzle} bytes, "
                             f"got {inner}")
        if self.l2_promotion not in L2_PROMOTION:
            raise InputError(f"TMA L2 promotion must be one of {sorted(L2_PROMOTION)}, got {self.l2_promotion!r}")

    def encode_arguments(self) -> tuple:
        """cuTensorMapEncodeTiled's arrays: global dims, global strides (bytes, all but the innermost), box, element
        strides; innermost dimension first."""
        esize = ELEMENT_BYTES[self.dtype]
        dims = (ctypes.c_uint64 * 2)(self.cols, self.rows)
        strides = (ctypes.c_uint64 * 1)(self.cols * esize)
        box = (ctypes.c_uint32 * 2)(self.box_cols, self.box_rows)
        elem_strides = (ctypes.c_uint32 * 2)(1, 1)
        return dims, strides, box, elem_strides


def unused_map() -> np.void:
    """128 zero bytes in a CUtensorMap's place: the argument of a map the kernel does not use at this shape."""
    return np.zeros(1, dtype=np.dtype((np.void, TENSOR_MAP_BYTES)))[0]


def encode_tiled(address: int, tmap: TiledMap, drv: Driver | None = None) -> np.void:
    """The CUtensorMap of `tmap` over device memory at `address`, as a 128-byte numpy.void for a kernel argument."""
    tmap.validate()
    if not isinstance(address, (int, np.integer)) or address <= 0:
        raise InputError(f"TMA global address must be a device pointer, got {address!r}")
    if address % 16:
        raise InputError(f"TMA global address must be 16-byte aligned, got {address:#x}")
    drv = drv or driver()
    raw = (ctypes.c_uint8 * (TENSOR_MAP_BYTES + 64))()  # CUtensorMap is 64-byte aligned in cuda.h
    offset = (-ctypes.addressof(raw)) % 64
    out = ctypes.c_void_p(ctypes.addressof(raw) + offset)
    dims, strides, box, elem_strides = tmap.encode_arguments()
    code = drv.lib.cuTensorMapEncodeTiled(
        out, ctypes.c_int(TENSOR_DTYPE[tmap.dtype]), ctypes.c_uint32(2), ctypes.c_void_p(int(address)), dims, strides,
        box, elem_strides, ctypes.c_int(0), ctypes.c_int(SWIZZLE[tmap.swizzle]),
        ctypes.c_int(L2_PROMOTION[tmap.l2_promotion]), ctypes.c_int(0))
    drv.check(code, f"cuTensorMapEncodeTiled ({tmap.rows} x {tmap.cols} {tmap.dtype}, box {tmap.box_rows} x "
                    f"{tmap.box_cols}, swizzle {tmap.swizzle})")
    data = bytes(raw)[offset:offset + TENSOR_MAP_BYTES]
    return np.frombuffer(data, dtype=np.dtype((np.void, TENSOR_MAP_BYTES)))[0]


# ---------------------------------------------------------------- extended launch (clusters)

class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union."""

    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint8 * 64)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


def cluster_attribute(cluster: tuple[int, int, int]) -> LaunchAttribute:
    attr = LaunchAttribute()
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    ctypes.memmove(attr.value, (ctypes.c_uint * 3)(*cluster), 12)
    return attr


def _dims(value, what: str) -> tuple[int, int, int]:
    dims = tuple(int(v) for v in value) if isinstance(value, (tuple, list)) else (int(value),)
    dims = dims + (1,) * (3 - len(dims))
    if len(dims) != 3 or any(d < 1 for d in dims):
        raise InputError(f"{what} must be one to three positive integers, got {value!r}")
    return dims


def launch_config(grid, block, shared_mem: int = 0, stream: int = 0, cluster=None):
    """The CUlaunchConfig (and the attributes it points to, kept alive with it), checked."""
    g, b = _dims(grid, "grid"), _dims(block, "block")
    if b[0] * b[1] * b[2] > 1024:
        raise InputError(f"block {b} has more than 1024 threads")
    if shared_mem < 0:
        raise InputError(f"dynamic shared memory must be >= 0 bytes, got {shared_mem}")
    attrs = []
    if cluster is not None:
        c = _dims(cluster, "cluster")
        if any(gd % cd for gd, cd in zip(g, c, strict=True)):
            raise InputError(f"cluster {c} must divide the grid {g} in every dimension")
        if c[0] * c[1] * c[2] > MAX_PORTABLE_CLUSTER:
            raise InputError(f"cluster {c} has more than {MAX_PORTABLE_CLUSTER} blocks (the portable limit)")
        attrs.append(cluster_attribute(c))
    arr = (LaunchAttribute * max(1, len(attrs)))(*attrs)
    cfg = LaunchConfig(*g, *b, shared_mem, ctypes.c_void_p(stream or None),
                       ctypes.cast(arr, ctypes.POINTER(LaunchAttribute)), len(attrs))
    return cfg, arr


def pack_params(args) -> tuple[ctypes.Array, list]:
    """kernelParams: a void*[] pointing at one host copy of each argument (kept alive in the returned list).
    Arguments: numpy int32/uint32/int64/uint64/float32 scalars, CuPy arrays (their device pointer), 128-byte
    numpy.void tensor maps. Python ints and floats are refused: their C type would be a guess."""
    holders = []
    for i, a in enumerate(args):
        if isinstance(a, np.void):
            buf = ctypes.create_string_buffer(bytes(a), len(bytes(a)))
        elif isinstance(a, np.generic) and a.dtype in (np.int32, np.uint32, np.int64, np.uint64, np.float32):
            buf = ctypes.create_string_buffer(a.tobytes(), a.nbytes)
        elif hasattr(a, "data") and hasattr(a.data, "ptr"):
            buf = ctypes.c_void_p(int(a.data.ptr))
        else:
            raise InputError(f"kernel argument {i} has type {type(a).__name__}: pass a numpy scalar (np.int32, "
                             "np.float32, ...), a CuPy array or a numpy.void tensor map")
        holders.append(buf)
    params = (ctypes.c_void_p * max(1, len(holders)))(*[ctypes.addressof(h) for h in holders])
    return params, holders


def set_max_dynamic_smem(function_ptr: int, nbytes: int, drv: Driver | None = None) -> None:
    drv = drv or driver()
    drv.check(drv.lib.cuFuncSetAttribute(ctypes.c_void_p(function_ptr),
                                         ctypes.c_int(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
                                         ctypes.c_int(nbytes)),
              f"cuFuncSetAttribute(max dynamic shared memory = {nbytes} bytes)")


def prepare_launch(function_ptr: int, grid, block, args, shared_mem: int = 0, stream: int = 0, cluster=None,
                   drv: Driver | None = None) -> Callable[[], None]:
    """A launch of a CUfunction (CuPy: `RawKernel(...).kernel.ptr` or `RawModule.get_function(name).ptr`) through
    cuLaunchKernelEx, with a cluster shape when `cluster` is given, checked and packed once: the returned callable
    makes the driver call alone. Timed launches use it: the timer records its start event before the launch call,
    and a call that packed eleven ctypes arguments each time left the GPU idle inside the timed interval after the
    L2 flush (clustered rungs at 1024^3 read 39 us by events against 26 us in ncu). Call it once for one launch."""
    if not function_ptr:
        raise InputError("a launch needs a CUfunction pointer, got a null one")
    cfg, attrs = launch_config(grid, block, shared_mem, stream, cluster)
    params, holders = pack_params(args)
    drv = drv or driver()
    func = ctypes.c_void_p(function_ptr)
    what = (f"cuLaunchKernelEx(grid {tuple(_dims(grid, 'grid'))}, block {tuple(_dims(block, 'block'))}, "
            f"cluster {cluster}, {shared_mem} bytes of shared memory)")
    cfg_ref = ctypes.byref(cfg)

    def launch(_keep=(cfg, attrs, params, holders)) -> None:  # _keep: what the driver reads, alive with the callable
        drv.check(drv.lib.cuLaunchKernelEx(cfg_ref, func, params, None), what)

    return launch

