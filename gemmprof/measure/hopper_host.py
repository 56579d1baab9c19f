"""Host side of the Hopper rungs: TMA tensor maps and cluster launches through the CUDA driver's Python binding,
`cuda.bindings.driver` (the package cuda-bindings, which the `cuda12` and `cuda13` extras install).

Three driver calls that CuPy does not wrap:
  * cuTensorMapEncodeTiled builds the 128-byte CUtensorMap a kernel takes as `const __grid_constant__ CUtensorMap`;
    `encode_tiled` returns its bytes as a 128-byte numpy.void scalar, passed by value at launch.
  * cuLaunchKernelEx launches with a cluster shape (`prepare_launch`); CuPy's RawKernel call cannot.
  * cuOccupancyMaxActiveClusters counts the clusters of a launch the GPU holds at once (`co_resident_clusters`).
Every enum (data type, swizzle, L2 promotion, interleave, out-of-bounds fill, launch attribute) is the binding's
own member, looked up by its cuda.h name, and the launch configuration is the binding's CUlaunchConfig: no enum
value or struct layout is written here. A launch's arguments are packed once into host buffers and handed to the
driver as the address of their void*[] (the binding's `kernelParams` as an int), so a timed launch is one driver
call. All checks that need no GPU run before the driver is touched.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gemmprof.errors import GemmprofError, GpuUnavailableError, InputError

TENSOR_MAP_BYTES = 128  # sizeof(CUtensorMap): the by-value kernel argument
ELEMENT_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "e4m3": 1, "e5m2": 1}
# The binding's enum members, by their cuda.h names; fp8 is copied as bytes (UINT8)
DATA_TYPE = {"fp16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "fp32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
             "bf16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", "e4m3": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
             "e5m2": "CU_TENSOR_MAP_DATA_TYPE_UINT8"}
SWIZZLE = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B", 64: "CU_TENSOR_MAP_SWIZZLE_64B",
           128: "CU_TENSOR_MAP_SWIZZLE_128B"}  # by the swizzle's width in bytes
L2_PROMOTION = {0: "CU_TENSOR_MAP_L2_PROMOTION_NONE", 64: "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
                128: "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", 256: "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"}
MAX_BOX = 256
MAX_PORTABLE_CLUSTER = 8
INSTALL = "pip install cuda-bindings (or gemmprof[cuda12] / gemmprof[cuda13])"


class DriverError(GemmprofError):
    """A CUDA driver call returned an error code."""


# ---------------------------------------------------------------- the driver binding

class Driver:
    """`cuda.bindings.driver` (tests pass a stand-in module); every call goes through `call`, which turns a result
    other than CUDA_SUCCESS into a DriverError naming the call and the error."""

    def __init__(self, module=None):
        if module is None:
            try:
                from cuda.bindings import driver as module
            except ImportError as exc:
                raise GpuUnavailableError(f"the CUDA driver's Python binding cuda.bindings is not installed "
                                          f"({exc}): {INSTALL}") from exc
        self.cu = module

    def enum(self, enum_type: str, member: str):
        return getattr(getattr(self.cu, enum_type), member)

    def error_text(self, code) -> str:
        cu = self.cu
        try:
            label = cu.CUresult(code).name
        except (ValueError, TypeError):
            label = f"CUresult {int(code)}"
        try:
            err, text = cu.cuGetErrorString(code)
            if err == cu.CUresult.CUDA_SUCCESS and text:
                return f"{label}: {text.decode() if isinstance(text, bytes) else text}"
        except Exception:  # noqa: BLE001 - the name alone still says what failed
            pass
        return label

    def call(self, what: str, fn, *args) -> tuple:
        """fn(*args) -> (CUresult, outputs...): the outputs, or DriverError."""
        try:
            err, *outputs = fn(*args)
        except RuntimeError as exc:  # the binding could not load libcuda (no driver on this machine)
            raise GpuUnavailableError(f"{what}: the CUDA driver could not be loaded ({exc})") from exc
        if err != self.cu.CUresult.CUDA_SUCCESS:
            raise DriverError(f"{what} failed with {self.error_text(err)}")
        return tuple(outputs)

    def caller(self, what: str, fn, *args) -> Callable[[], None]:
        """A callable making the call fn(*args) alone, as `call` checks it (the launch of a timed loop)."""
        success = self.cu.CUresult.CUDA_SUCCESS

        def run() -> None:
            try:
                err = fn(*args)[0]
            except RuntimeError as exc:
                raise GpuUnavailableError(f"{what}: the CUDA driver could not be loaded ({exc})") from exc
            if err != success:
                raise DriverError(f"{what} failed with {self.error_text(err)}")

        return run


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
        if self.dtype not in DATA_TYPE:
            raise InputError(f"TMA dtype {self.dtype!r} is not one of {', '.join(DATA_TYPE)}")
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

    def encode_arguments(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """cuTensorMapEncodeTiled's arrays: global dims, global strides (bytes, all but the innermost), box, element
        strides; innermost dimension first."""
        esize = ELEMENT_BYTES[self.dtype]
        return [self.cols, self.rows], [self.cols * esize], [self.box_cols, self.box_rows], [1, 1]


def unused_map() -> np.void:
    """128 zero bytes in a CUtensorMap's place: the argument of a map the kernel does not use at this shape."""
    return np.zeros(1, dtype=np.dtype((np.void, TENSOR_MAP_BYTES)))[0]


def map_bytes(tensor_map) -> bytes:
    """The 128 bytes of the binding's CUtensorMap (its `opaque` field: sixteen 64-bit words)."""
    words = [int(w) for w in tensor_map.opaque]
    data = np.array(words, dtype="<u8").tobytes()
    if len(data) != TENSOR_MAP_BYTES:
        raise DriverError(f"cuTensorMapEncodeTiled returned a CUtensorMap of {len(data)} bytes, not "
                          f"{TENSOR_MAP_BYTES}")
    return data


def encode_tiled(address: int, tmap: TiledMap, drv: Driver | None = None) -> np.void:
    """The CUtensorMap of `tmap` over device memory at `address`, as a 128-byte numpy.void for a kernel argument."""
    tmap.validate()
    if not isinstance(address, (int, np.integer)) or address <= 0:
        raise InputError(f"TMA global address must be a device pointer, got {address!r}")
    if address % 16:
        raise InputError(f"TMA global address must be 16-byte aligned, got {address:#x}")
    drv = drv or driver()
    cu = drv.cu
    dims, strides, box, elem_strides = tmap.encode_arguments()
    (tensor_map,) = drv.call(
        f"cuTensorMapEncodeTiled ({tmap.rows} x {tmap.cols} {tmap.dtype}, box {tmap.box_rows} x {tmap.box_cols}, "
        f"swizzle {tmap.swizzle})",
        cu.cuTensorMapEncodeTiled,
        drv.enum("CUtensorMapDataType", DATA_TYPE[tmap.dtype]), 2, int(address),
        [cu.cuuint64_t(d) for d in dims], [cu.cuuint64_t(s) for s in strides],
        [cu.cuuint32_t(b) for b in box], [cu.cuuint32_t(e) for e in elem_strides],
        drv.enum("CUtensorMapInterleave", "CU_TENSOR_MAP_INTERLEAVE_NONE"),
        drv.enum("CUtensorMapSwizzle", SWIZZLE[tmap.swizzle]),
        drv.enum("CUtensorMapL2promotion", L2_PROMOTION[tmap.l2_promotion]),
        drv.enum("CUtensorMapFloatOOBfill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"))
    return np.frombuffer(map_bytes(tensor_map), dtype=np.dtype((np.void, TENSOR_MAP_BYTES)))[0]


# ---------------------------------------------------------------- extended launch (clusters)

def _dims(value, what: str) -> tuple[int, int, int]:
    dims = tuple(int(v) for v in value) if isinstance(value, (tuple, list)) else (int(value),)
    dims = dims + (1,) * (3 - len(dims))
    if len(dims) != 3 or any(d < 1 for d in dims):
        raise InputError(f"{what} must be one to three positive integers, got {value!r}")
    return dims


def check_geometry(grid, block, shared_mem: int = 0, cluster=None):
    """(grid, block, cluster or None) as three positive integers each, checked before any driver call."""
    g, b = _dims(grid, "grid"), _dims(block, "block")
    if b[0] * b[1] * b[2] > 1024:
        raise InputError(f"block {b} has more than 1024 threads")
    if shared_mem < 0:
        raise InputError(f"dynamic shared memory must be >= 0 bytes, got {shared_mem}")
    c = None
    if cluster is not None:
        c = _dims(cluster, "cluster")
        if any(gd % cd for gd, cd in zip(g, c, strict=True)):
            raise InputError(f"cluster {c} must divide the grid {g} in every dimension")
        if c[0] * c[1] * c[2] > MAX_PORTABLE_CLUSTER:
            raise InputError(f"cluster {c} has more than {MAX_PORTABLE_CLUSTER} blocks (the portable limit)")
    return g, b, c


def launch_config(grid, block, shared_mem: int = 0, stream: int = 0, cluster=None, drv: Driver | None = None):
    """The binding's CUlaunchConfig, checked, with the cluster-dimension attribute when `cluster` is given."""
    g, b, c = check_geometry(grid, block, shared_mem, cluster)
    drv = drv or driver()
    cu = drv.cu
    cfg = cu.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = g
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = b
    cfg.sharedMemBytes = int(shared_mem)
    cfg.hStream = cu.CUstream(int(stream or 0))
    attrs = []
    if c is not None:
        attr = cu.CUlaunchAttribute()
        attr.id = drv.enum("CUlaunchAttributeID", "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION")
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = c
        attrs.append(attr)
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    return cfg


def co_resident_clusters(function_ptr: int, grid, block, shared_mem: int, cluster, drv: Driver | None = None) -> int:
    """How many clusters of shape `cluster` of this kernel the device holds at once, at this block size and shared
    memory (cuOccupancyMaxActiveClusters): clusters must fit inside one GPC, so on an H100 or H200 fewer clusters of
    4 fit than a quarter of the SMs."""
    g, b, c = check_geometry(grid, block, shared_mem, cluster)
    drv = drv or driver()
    cfg = launch_config(g, b, shared_mem, 0, c, drv)
    (fit,) = drv.call(f"cuOccupancyMaxActiveClusters(cluster {c}, block {b}, {shared_mem} bytes of shared memory)",
                      drv.cu.cuOccupancyMaxActiveClusters, drv.cu.CUfunction(int(function_ptr)), cfg)
    return int(fit)


def rounds_note(grid, cluster, fit: int) -> str:
    """The run's note where a grid has more clusters than the device holds at once (`fit`): the rest wait for a
    cluster to finish, a second round that a persistent or one-wave launch does not expect. Empty where they fit (or
    where `fit` is unknown, 0)."""
    g, c = _dims(grid, "grid"), _dims(cluster, "cluster")
    clusters = (g[0] * g[1] * g[2]) // (c[0] * c[1] * c[2])
    if fit <= 0 or clusters <= fit:
        return ""
    return (f"{clusters} clusters of {c[0] * c[1] * c[2]}, {fit} co-resident: {-(-clusters // fit)} rounds of "
            "clusters")


def _aligned(nbytes: int, align: int = 64) -> np.ndarray:
    """A zeroed host buffer of `nbytes` starting on an `align`-byte boundary (CUtensorMap is 64-byte aligned)."""
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    start = (-raw.__array_interface__["data"][0]) % align
    return raw[start:start + nbytes]


def address(buffer: np.ndarray) -> int:
    return int(buffer.__array_interface__["data"][0])


def pack_params(args) -> tuple[int, list]:
    """kernelParams: (the address of a void*[] pointing at one host copy of each argument, what keeps them alive).
    Arguments: numpy int32/uint32/int64/uint64/float32 scalars, CuPy arrays (their device pointer), 128-byte
    numpy.void tensor maps. Python ints and floats are refused: their C type would be a guess."""
    holders = []
    for i, a in enumerate(args):
        if isinstance(a, np.void):
            data = bytes(a)
        elif isinstance(a, np.generic) and a.dtype in (np.int32, np.uint32, np.int64, np.uint64, np.float32):
            data = a.tobytes()
        elif hasattr(a, "data") and hasattr(a.data, "ptr"):
            data = np.uint64(int(a.data.ptr)).tobytes()
        else:
            raise InputError(f"kernel argument {i} has type {type(a).__name__}: pass a numpy scalar (np.int32, "
                             "np.float32, ...), a CuPy array or a numpy.void tensor map")
        buf = _aligned(len(data))
        buf[:] = np.frombuffer(data, dtype=np.uint8)
        holders.append(buf)
    pointers = np.array([address(h) for h in holders] or [0], dtype=np.uint64)
    return address(pointers), [pointers, *holders]


def prepare_launch(function_ptr: int, grid, block, args, shared_mem: int = 0, stream: int = 0, cluster=None,
                   drv: Driver | None = None) -> Callable[[], None]:
    """A launch of a CUfunction (CuPy: `RawKernel(...).kernel.ptr` or `RawModule.get_function(name).ptr`) through
    cuLaunchKernelEx, with a cluster shape when `cluster` is given, checked and packed once: the returned callable
    makes the driver call alone. Timed launches use it: the timer records its start event before the launch call,
    and a call that packed eleven arguments each time left the GPU idle inside the timed interval after the
    L2 flush (clustered rungs at 1024^3 read 39 us by events against 26 us in ncu). Call it once for one launch."""
    if not function_ptr:
        raise InputError("a launch needs a CUfunction pointer, got a null one")
    check_geometry(grid, block, shared_mem, cluster)
    params, holders = pack_params(args)
    drv = drv or driver()
    cfg = launch_config(grid, block, shared_mem, stream, cluster, drv)
    func = drv.cu.CUfunction(int(function_ptr))
    what = (f"cuLaunchKernelEx(grid {tuple(_dims(grid, 'grid'))}, block {tuple(_dims(block, 'block'))}, "
            f"cluster {cluster}, {shared_mem} bytes of shared memory)")
    launch = drv.caller(what, drv.cu.cuLaunchKernelEx, cfg, func, params, 0)
    launch.keep = holders  # the argument buffers the driver reads, alive with the callable
    return launch
