"""A stand-in for nvmath-python's cuBLASLt binding (`nvmath.bindings.cublasLt`), made of NumPy: only the calls
gemmprof.measure.cublaslt makes, with cuBLASLt's contract. Descriptors keep what was set on them; the heuristic
offers the test's algorithms; `matmul` reads A, B and C from their addresses as column-major matrices described by
their layouts (transposed as TRANSA/TRANSB say), computes D = alpha op(A) op(B) + beta C in float64 and writes it
in D's type. Each algorithm may be slow (it moves the clock that `install`'s CUDA events read forward: no sleep,
so a busy machine does not reorder them), wrong (it adds 1 to one element) or failing (cublasLtMatmul returns an
error). The memory behind every address is real: the tests' arrays are NumPy arrays and gemmprof's `_address` is
pointed at `.ctypes.data`.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
import sys
import time
import types
from dataclasses import dataclass, field

import numpy as np

from gemmprof.measure.problem import from_bf16_bits, to_bf16_bits

DTYPES = {0: np.float32, 2: np.float16, 14: np.uint16}  # cudaDataType: R_32F, R_16F, R_16BF (bit patterns)


class MatmulDescAttribute(enum.IntEnum):
    COMPUTE_TYPE = 0
    SCALE_TYPE = 1
    TRANSA = 3
    TRANSB = 4
    A_SCALE_POINTER = 17
    B_SCALE_POINTER = 18


class MatmulPreferenceAttribute(enum.IntEnum):
    MAX_WORKSPACE_BYTES = 1


class MatmulAlgoConfigAttribute(enum.IntEnum):
    ID = 0
    TILE_ID = 1
    SPLITK_NUM = 2
    REDUCTION_SCHEME = 3
    CTA_SWIZZLING = 4
    CUSTOM_OPTION = 5
    STAGES_ID = 6
    INNER_SHAPE_ID = 7
    CLUSTER_SHAPE_ID = 8


class MatmulTile(enum.IntEnum):
    TILE_UNDEFINED = 0
    TILE_64x64 = 18
    TILE_128x256 = 24


class MatmulStages(enum.IntEnum):
    STAGES_UNDEFINED = 0
    STAGES_64x4 = 20


class ClusterShape(enum.IntEnum):
    SHAPE_AUTO = 0
    SHAPE_2x1x1 = 3


class cuBLASLtError(Exception):
    pass


@dataclass
class Algo:
    """One algorithm the heuristic offers."""

    algo_id: int
    time_s: float = 0.0  # what one launch adds to the events' clock
    wrong: bool = False
    fails: bool = False
    state: int = 0  # the heuristic's status for it (0: usable)
    workspace: int = 0
    tile: int = 24
    stages: int = 20
    cluster: int = 3
    split_k: int = 1


@dataclass
class Binding:
    """The module's state: what the heuristic offers and everything gemmprof created and called."""

    offer: list[Algo] = field(default_factory=list)
    heuristic_error: str | None = None
    objects: dict = field(default_factory=dict)  # id -> descriptor dict, layout tuple, result array
    destroyed: list = field(default_factory=list)
    heuristic_calls: list = field(default_factory=list)
    launches: list = field(default_factory=list)  # algo_id of every matmul
    elapsed_s: float = 0.0  # the launches' time so far, added to the host clock the CUDA events read
    ids: itertools.count = field(default_factory=lambda: itertools.count(1000))

    def new(self, value) -> int:
        key = next(self.ids)
        self.objects[key] = value
        return key


def _read(ptr: int, dtype, count: int) -> np.ndarray:
    """`count` elements of `dtype` at address `ptr` (writable: the memory is a NumPy array's)."""
    size = np.dtype(dtype).itemsize * count
    return np.frombuffer((ctypes.c_char * size).from_address(ptr), dtype=dtype, count=count)


def _col_major(ptr: int, layout, transposed: bool) -> np.ndarray:
    dtype_code, rows, cols, ld = layout
    assert ld >= rows, f"ld {ld} < rows {rows}"
    flat = _read(ptr, DTYPES[dtype_code], ld * (cols - 1) + rows)
    full = np.concatenate([flat, np.zeros(ld * cols - flat.size, flat.dtype)])
    values = full.reshape(cols, ld)[:, :rows].T
    values = from_bf16_bits(values) if dtype_code == 14 else values
    values = values.astype(np.float64)
    return values.T if transposed else values


def make(state: Binding) -> types.ModuleType:
    """A module with the binding's names, its calls recorded in `state`."""
    lt = types.ModuleType("nvmath.bindings.cublasLt")
    for cls in (MatmulDescAttribute, MatmulPreferenceAttribute, MatmulAlgoConfigAttribute, MatmulTile,
                MatmulStages, ClusterShape, cuBLASLtError):
        setattr(lt, cls.__name__, cls)

    class Element:
        def __init__(self, ptr):
            self.ptr = ptr

        @property
        def _algo(self) -> Algo | None:
            return state.objects.get(self.ptr)

        workspace_size = property(lambda self: self._algo.workspace if self._algo else 0)
        state = property(lambda self: self._algo.state if self._algo else 0)

    class MatmulHeuristicResult:
        def __init__(self, size=1):
            self.elements = [Element(state.new(None)) for _ in range(size)]
            self.ptr = state.new(self)

        def __len__(self):
            return len(self.elements)

        def __getitem__(self, i):
            return self.elements[i]

    lt.MatmulHeuristicResult = MatmulHeuristicResult
    lt.create = lambda: state.new("handle")
    lt.destroy = lambda h: state.destroyed.append(h)
    lt.matmul_desc_create = lambda compute, scale: state.new({"compute": compute, "scale": scale,
                                                              MatmulDescAttribute.TRANSA: 0,
                                                              MatmulDescAttribute.TRANSB: 0})
    lt.matmul_desc_destroy = lt.matrix_layout_destroy = lt.matmul_preference_destroy = lt.destroy
    lt.get_matmul_desc_attribute_dtype = lambda attr: np.int32 if attr in (3, 4) else np.uint64
    lt.get_matmul_preference_attribute_dtype = lambda attr: np.uint64
    lt.get_matmul_algo_config_attribute_dtype = lambda attr: np.int32 if attr == 0 else np.uint32

    def set_attribute(obj, attr, buf, size):
        dtype = {4: np.int32, 8: np.uint64}[size]
        state.objects[obj][attr] = int(_read(buf, dtype, 1)[0])

    lt.matmul_desc_set_attribute = lt.matmul_preference_set_attribute = set_attribute
    lt.matrix_layout_create = lambda dtype, rows, cols, ld: state.new((dtype, rows, cols, ld))
    lt.matmul_preference_create = lambda: state.new({})

    def get_heuristic(handle, desc, adesc, bdesc, cdesc, ddesc, pref, requested, results_ptr, count_ptr):
        state.heuristic_calls.append({"desc": dict(state.objects[desc]), "layouts": tuple(
            state.objects[d] for d in (adesc, bdesc, cdesc, ddesc)), "pref": dict(state.objects[pref]),
            "requested": requested})
        if state.heuristic_error:
            raise cuBLASLtError(state.heuristic_error)
        results = state.objects[results_ptr]
        offered = state.offer[:requested]
        for element, algo in zip(results.elements, offered, strict=False):  # as many as were asked for, or fewer
            state.objects[element.ptr] = algo
        _read(count_ptr, np.int32, 1)[0] = len(offered)

    lt.matmul_algo_get_heuristic = get_heuristic

    def config_get(algo_ptr, attr, buf, size, written):
        algo = state.objects[algo_ptr]
        value = {0: algo.algo_id, 1: algo.tile, 2: algo.split_k, 3: 0, 4: 1, 5: 0, 6: algo.stages, 7: 0,
                 8: algo.cluster}[int(attr)]
        _read(buf, np.int32 if attr == 0 else np.uint32, 1)[0] = value
        _read(written, np.uint64, 1)[0] = size

    lt.matmul_algo_config_get_attribute = config_get

    def matmul(handle, desc_id, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc, algo_ptr, ws, ws_size, stream):
        algo: Algo = state.objects[algo_ptr]
        state.launches.append(algo.algo_id)
        state.elapsed_s += algo.time_s
        if algo.fails:
            raise cuBLASLtError("CUBLAS_STATUS_NOT_SUPPORTED")
        assert ws_size >= algo.workspace and (ws or not algo.workspace)
        desc = state.objects[desc_id]
        x = _col_major(a, state.objects[adesc], desc[MatmulDescAttribute.TRANSA] == 1)
        y = _col_major(b, state.objects[bdesc], desc[MatmulDescAttribute.TRANSB] == 1)
        al, be = (float(_read(p, np.float32, 1)[0]) for p in (alpha, beta))
        out = al * (x @ y)
        if be != 0:  # cuBLASLt reads C only when beta is not zero
            out += be * _col_major(c, state.objects[cdesc], False)
        if algo.wrong:
            out[0, 0] += 1.0
        dtype_code, rows, cols, ld = state.objects[ddesc]
        assert (rows, cols) == out.shape
        stored = _read(d, DTYPES[dtype_code], ld * (cols - 1) + rows)
        for j in range(cols):
            column = out[:, j].astype(np.float32)
            stored[j * ld: j * ld + rows] = to_bf16_bits(column) if dtype_code == 14 else column

    lt.matmul = matmul
    return lt


def install(monkeypatch, state: Binding) -> types.ModuleType:
    """The stand-in importable as nvmath.bindings.cublasLt, gemmprof reading NumPy arrays' addresses, and the
    stand-in CuPy's CUDA events (tests/numpy_cupy.py, installed first) reading the host clock plus the time the
    launches added; gemmprof's own host clock reads the same (a device where launches take time on both clocks,
    as a real one's do: the timer's host-clock checks must not call it tampered)."""
    from gemmprof.measure import cublaslt, timing

    class Event:
        def __init__(self):
            self.t = None

        def record(self, stream=None):
            self.t = time.perf_counter() + state.elapsed_s

        def synchronize(self):
            pass

    monkeypatch.setattr(sys.modules["cupy"].cuda, "Event", Event)
    monkeypatch.setattr(timing, "_perf_ns", lambda: time.perf_counter_ns() + int(state.elapsed_s * 1e9))
    timing.capture()  # the events above, as `gemmprof run` takes them before user code
    lt = make(state)
    nvmath, bindings = types.ModuleType("nvmath"), types.ModuleType("nvmath.bindings")
    nvmath.bindings, bindings.cublasLt = bindings, lt
    for name, module in (("nvmath", nvmath), ("nvmath.bindings", bindings), ("nvmath.bindings.cublasLt", lt)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(cublaslt, "_address", lambda array: array.ctypes.data)
    return lt
