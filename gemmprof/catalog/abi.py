"""A kernel's calling convention (docs/kernel-spec.md): the `args:` list in order by name, C's dtype, the
workspace, the leading dimensions, and the packing of one launch's values in that order (pure: no CUDA needed).

The default is the eight-argument ABI `(M, N, K, alpha, A, B, beta, C)` every rung takes; a host launcher's
default adds `stream`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from gemmprof.catalog import expr
from gemmprof.errors import SpecError
from gemmprof.results.shape import GemmShape

SIZES = ("M", "N", "K", "lda", "ldb", "ldc")  # int
SCALARS = ("alpha", "beta")  # float
POINTERS = ("A", "B", "C", "workspace", "scale_a", "scale_b")  # device pointers (scales: fp8 kernels, float32)
SCALES = ("scale_a", "scale_b")
NAMES = SIZES + SCALARS + POINTERS + ("stream",)
DEFAULT_ARGS = ("M", "N", "K", "alpha", "A", "B", "beta", "C")
C_DTYPES = ("fp32", "fp16", "bf16")
_INT = re.compile(r"^[-+]?[0-9]+$")  # ASCII digits: int() also reads '٣٢'
_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]{1,4})?[fF]?$")


@dataclass(frozen=True)
class Arg:
    """One parameter: a name of NAMES, or a literal constant (`name` is "" then)."""

    name: str = ""
    literal: int | float | None = None

    @property
    def kind(self) -> str:
        """int | float | pointer | stream: the C type class it is passed as."""
        if not self.name:
            return "int" if isinstance(self.literal, int) else "float"
        if self.name in SIZES:
            return "int"
        if self.name in SCALARS:
            return "float"
        return "stream" if self.name == "stream" else "pointer"

    @property
    def label(self) -> str:
        return self.name or repr(self.literal)


@dataclass(frozen=True)
class Abi:
    args: tuple[Arg, ...] = tuple(Arg(n) for n in DEFAULT_ARGS)
    c_dtype: str = "fp32"
    workspace: Any = None  # bytes: an expression over the parameters and M, N, K (with `workspace` in args)
    ld: dict[str, Any] = field(default_factory=dict)  # lda/ldb/ldc: expressions; the packed ones by default

    def takes(self, name: str) -> bool:
        return any(a.name == name for a in self.args)

    @property
    def is_default(self) -> bool:
        return tuple(a.name for a in self.args) == DEFAULT_ARGS and self.c_dtype == "fp32"

    def refuses(self, alpha: float, beta: float) -> str | None:
        """Why a run at (alpha, beta) cannot check this kernel, or None: one without alpha computes alpha = 1,
        one without beta computes beta = 0."""
        if not self.takes("alpha") and alpha != 1:
            return f"takes no alpha (it computes alpha = 1): run with --alpha 1, not {alpha:g}"
        if not self.takes("beta") and beta != 0:
            return f"takes no beta (it computes beta = 0): run with --beta 0, not {beta:g}"
        return None

    def leading(self, shape: GemmShape, layout: dict, env: dict) -> dict[str, int]:
        """lda, ldb and ldc at `shape`: the spec's `ld:` where it gives one (at least the packed value), else packed."""
        out = leading_dims(shape, layout)
        env = {**env, "M": shape.M, "N": shape.N, "K": shape.K}
        for name, text in self.ld.items():
            value = int(expr.evaluate(text, env))
            if value < out[name]:
                raise SpecError(f"ld.{name}: {text} is {value} at {shape.label}, below the packed {out[name]}")
            out[name] = value
        return out

    def workspace_bytes(self, env: dict) -> int:
        if self.workspace is None:
            return 0
        value = int(expr.evaluate(self.workspace, env))
        if value < 0:
            raise SpecError(f"workspace: {self.workspace} is {value} bytes at this shape")
        return value


def leading_dims(shape: GemmShape, layout: dict) -> dict[str, int]:
    """The packed leading dimensions: a row-major M x K A has lda = K, a column-major one lda = M (and so on)."""
    return {"lda": shape.K if layout["A"] == "row" else shape.M,
            "ldb": shape.N if layout["B"] == "row" else shape.K,
            "ldc": shape.N if layout["C"] == "row" else shape.M}


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


INT_RANGE = (-(2 ** 31), 2 ** 31 - 1)  # a literal int is passed as a C int (np.int32, ctypes.c_int)
FLOAT_MAX = 3.4028234663852886e38  # and a literal float as a C float


def _literal(path, key, node) -> Arg:
    if isinstance(node, bool):
        _fail(path, key, f"{node!r}: write a number (0, 1, 1.0f) or a name")
    text = str(node).strip() if isinstance(node, (int, float, str)) else ""
    if isinstance(node, int) or (isinstance(node, str) and _INT.match(text)):
        value = node if isinstance(node, int) else (int(text) if len(text) <= 20 else None)
        lo, hi = INT_RANGE
        if value is None or not lo <= value <= hi:
            _fail(path, key, f"{text[:40]}{'...' if len(text) > 40 else ''} is out of range for the int it is "
                             f"passed as: {lo} to {hi}")
        return Arg(literal=int(value))
    if isinstance(node, float) or (isinstance(node, str) and _FLOAT.match(text)):
        value = node if isinstance(node, float) else float(text.rstrip("fF"))
        if not abs(value) <= FLOAT_MAX:  # NaN too
            _fail(path, key, f"{text[:40]} is out of range for the float it is passed as: a finite number of "
                             f"magnitude at most {FLOAT_MAX:.7g}")
        return Arg(literal=float(value))
    close = difflib.get_close_matches(text, NAMES, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    _fail(path, key, f"{text[:40]!r} is not a parameter gemmprof passes{hint}: give {' '.join(NAMES)}, "
                     "or a literal constant (0, 1.0f)")


def parse_abi(path, doc: dict, launcher: bool) -> Abi:
    """The spec's `args`, `c_dtype` and `workspace`, checked against each other."""
    node = doc.get("args")
    if node is None:
        node = [*DEFAULT_ARGS, "stream"] if launcher else list(DEFAULT_ARGS)
    if not isinstance(node, list) or not node:
        _fail(path, "args", "expected a list of parameter names in order, e.g. [M, N, K, alpha, A, lda, B, ldb, "
                            "beta, C, ldc]")
    args = tuple(Arg(n) if isinstance(n, str) and n in NAMES else _literal(path, f"args[{i}]", n)
                 for i, n in enumerate(node))
    names = [a.name for a in args if a.name]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        _fail(path, "args", f"{', '.join(twice)} given twice")
    missing = [n for n in ("A", "B", "C") if n not in names]
    if missing:
        _fail(path, "args", f"no {', '.join(missing)}: a GEMM kernel takes the pointers A, B and C")
    _check_scale_args(path, doc, names)
    if launcher and "stream" not in names:
        _fail(path, "args", "a launcher takes `stream` (the run's cudaStream_t, which its kernels must use so "
                            "the timing brackets them)")
    if not launcher and "stream" in names:
        _fail(path, "args", "`stream` is a launcher's parameter: a kernel is launched on the run's stream")
    c_dtype = doc.get("c_dtype", "fp32")
    if c_dtype not in C_DTYPES:
        _fail(path, "c_dtype", f"{str(c_dtype)[:40]!r} is not one of {', '.join(C_DTYPES)}")
    workspace = doc.get("workspace")
    if ("workspace" in names) != (workspace is not None):
        _fail(path, "workspace", "give both `workspace` in args and `workspace: BYTES` (an expression)"
              if workspace is None else "the kernel takes no workspace: add `workspace` to args")
    if workspace is not None:
        if isinstance(workspace, bool) or not isinstance(workspace, (int, str)):
            _fail(path, "workspace", f"expected an expression of bytes, got {str(workspace)[:40]!r}")
        try:
            expr.parse(str(workspace))
        except SpecError as exc:
            _fail(path, "workspace", str(exc))
    ld = {} if doc.get("ld") is None else doc["ld"]
    if not isinstance(ld, dict):
        _fail(path, "ld", "expected a mapping {lda: EXPRESSION, ldb: ..., ldc: ...}")
    from gemmprof.catalog.spec_fields import check_keys

    check_keys(path, "ld", ld, ("lda", "ldb", "ldc"))
    for name, text in ld.items():
        if name not in names:
            _fail(path, f"ld.{name}", f"the kernel takes no {name}: add it to args")
        if isinstance(text, bool) or not isinstance(text, (int, str)):
            _fail(path, f"ld.{name}", f"expected an expression, got {str(text)[:40]!r}")
        try:
            expr.parse(str(text))
        except SpecError as exc:
            _fail(path, f"ld.{name}", str(exc))
    return Abi(args, c_dtype, workspace, dict(ld))


def _check_scale_args(path, doc: dict, names: list[str]) -> None:
    """An fp8 kernel takes both scale arrays (scale_a, scale_b); a kernel of other dtypes takes none."""
    from gemmprof.catalog.launch_fields import FP8_DTYPES

    dtypes = doc.get("dtypes") or [doc.get("dtype", "fp32")]
    if not isinstance(dtypes, list):  # launch_fields names the wrong type of `dtypes` itself
        return
    fp8 = [d for d in dtypes if d in FP8_DTYPES]
    taken = [n for n in SCALES if n in names]
    if fp8 and len(taken) < 2:
        _fail(path, "args", f"an fp8 kernel ({fp8[0]}) takes its operands' scales: add "
                            f"{' and '.join(n for n in SCALES if n not in taken)} (float32 device arrays, docs/fp8.md)")
    if taken and len(fp8) < len(dtypes):
        _fail(path, "args", f"{taken[0]}: only fp8 kernels (dtype e4m3 or e5m2) take scales, this one is "
                            f"{'/'.join(str(d) for d in dtypes)}")


def values(abi: Abi, shape: GemmShape, layout: dict, alpha: float, beta: float, buffers: dict,
           lds: dict | None = None) -> list:
    """Every argument's value in order, as Python numbers and the `buffers` given (A, B, C, workspace, stream);
    `lds`: the leading dimensions (Abi.leading), packed when not given."""
    known = {"M": shape.M, "N": shape.N, "K": shape.K, **(lds or leading_dims(shape, layout)), "alpha": alpha,
             "beta": beta, **buffers}
    return [a.literal if not a.name else known[a.name] for a in abi.args]


def kernel_values(abi: Abi, shape: GemmShape, layout: dict, alpha: float, beta: float, buffers: dict,
                  lds: dict | None = None) -> tuple:
    """The arguments of a CuPy kernel launch: int32 and float32 scalars, the device arrays as given."""
    import numpy as np

    cast = {"int": np.int32, "float": np.float32}
    return tuple(cast[a.kind](v) if a.kind in cast else v
                 for a, v in zip(abi.args, values(abi, shape, layout, alpha, beta, buffers, lds), strict=True))


def ctypes_call(abi: Abi, shape: GemmShape, layout: dict, alpha: float, beta: float, pointers: dict,
                lds: dict | None = None) -> tuple[list, list]:
    """(argtypes, values) of a host launcher's call: int, float, and void* for device pointers and the stream
    (`pointers`: addresses by name, the stream's included)."""
    import ctypes

    types = {"int": ctypes.c_int, "float": ctypes.c_float, "pointer": ctypes.c_void_p, "stream": ctypes.c_void_p}
    argtypes = [types[a.kind] for a in abi.args]
    vals = [t(v) for t, v in zip(argtypes, values(abi, shape, layout, alpha, beta, pointers, lds), strict=True)]
    return argtypes, vals
