"""Spec fields that change how a kernel is built and launched beyond the eight standard arguments: the dtypes one
source serves (`dtypes`, `dtype_define`), the C dtypes and fp8 scale modes it builds for (`c_dtypes`,
`c_dtype_define`, `scales`, `scales_define`, `scale_shapes`), Hopper's tensor maps (`tma_args`), thread-block
clusters (`cluster`), how the problem is split over the grid at each shape (`decomposition`) and the macros that
build a kernel for the shape it is launched at (`specialize`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gemmprof.catalog import expr
from gemmprof.catalog.nvcc_flags import MACRO_NAME
from gemmprof.catalog.spec_fields import check_keys, rejoin
from gemmprof.errors import SpecError
from gemmprof.results.run import FP8_DTYPES

DTYPE_NAMES = ("fp32", "fp16", "bf16", *FP8_DTYPES)
SCALE_MODES = ("tensor", "1x128", "128x128")  # how fp8 operands are scaled: docs/fp8.md
C_DTYPE_NAMES = ("fp32", "fp16", "bf16")
# the value of `c_dtype_define` for each C dtype, and of `scales_define` for each scale mode (also the names C_BYTES
# and SCALES in the spec's expressions)
C_DTYPE_CODES = {"fp32": 0, "fp16": 1, "bf16": 2}
C_DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
SCALE_CODES = {mode: i for i, mode in enumerate(SCALE_MODES)}
SWIZZLES = (0, 32, 64, 128)


@dataclass(frozen=True)
class TmaArg:
    """One CUtensorMap argument: operand A, B or C as stored (rows x cols, row-major), copied in boxes. `when`: an
    expression; where it is false at the shape (C's rows off 16 bytes, say) the kernel gets an unused map of zeros
    and must not touch it (it tests the same condition itself)."""

    operand: str
    rows: Any  # expressions over the parameters and M, N, K
    cols: Any
    box: tuple[Any, Any]  # (box rows, box cols)
    swizzle: int = 128
    when: Any = None  # None: always
    l2_promotion: Any = 256  # bytes an L2 request of the copy is widened to (0, 64, 128, 256): an expression


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def _expr(path, key, node):
    if isinstance(node, bool) or not isinstance(node, (int, str)):
        _fail(path, key, f"expected an expression, got {str(node)[:40]!r}")
    if isinstance(node, str):
        try:
            expr.parse(node)
        except SpecError as exc:
            _fail(path, key, str(exc))
    return node


def launch_fields(path, doc: dict) -> dict:
    dtype = doc.get("dtype", "fp32")
    dtypes = [dtype] if doc.get("dtypes") is None else doc["dtypes"]
    if not isinstance(dtypes, list) or not all(d in DTYPE_NAMES for d in dtypes) or dtype not in dtypes:
        _fail(path, "dtypes", f"expected a list of {', '.join(DTYPE_NAMES)} that holds dtype ({dtype})")
    define = doc.get("dtype_define")
    if define is not None and (not isinstance(define, str) or not MACRO_NAME.fullmatch(define)):
        _fail(path, "dtype_define", f"{str(define)[:40]!r} is not a macro name (ASCII letters, digits and _)")
    if len(dtypes) > 1 and define is None:
        _fail(path, "dtype_define", "a spec with several dtypes names the macro that selects bf16")
    tma = [] if doc.get("tma_args") is None else doc["tma_args"]
    if not isinstance(tma, list):
        _fail(path, "tma_args", "expected a list of {operand, rows, cols, box, swizzle}")
    args = []
    for i, item in enumerate(tma):
        key = f"tma_args[{i}]"
        if not isinstance(item, dict) or item.get("operand") not in ("A", "B", "C"):
            _fail(path, key, "expected {operand: A|B|C, rows: EXPR, cols: EXPR, box: [EXPR, EXPR], swizzle: 128, "
                             "when: EXPR, l2_promotion: EXPR}")
        check_keys(path, key, item, ("operand", "rows", "cols", "box", "swizzle", "when", "l2_promotion"))
        box = item.get("box")
        if not isinstance(box, list) or len(box) != 2:
            _fail(path, f"{key}.box", "expected [box rows, box cols]")
        if item.get("swizzle", 128) not in SWIZZLES:
            _fail(path, f"{key}.swizzle", f"expected one of {SWIZZLES} bytes")
        args.append(TmaArg(item["operand"], _expr(path, f"{key}.rows", item.get("rows")),
                           _expr(path, f"{key}.cols", item.get("cols")),
                           (_expr(path, f"{key}.box[0]", box[0]), _expr(path, f"{key}.box[1]", box[1])),
                           int(item.get("swizzle", 128)),
                           None if item.get("when") is None else _expr(path, f"{key}.when", item["when"]),
                           _expr(path, f"{key}.l2_promotion", item.get("l2_promotion", 256))))
    cluster = doc.get("cluster")
    if cluster is not None:
        if not isinstance(cluster, list) or not 1 <= len(cluster) <= 3:
            _fail(path, "cluster", "expected [x, y, z]")
        cluster = tuple(_expr(path, f"cluster[{i}]", c) for i, c in enumerate(cluster)) + (1,) * (3 - len(cluster))
    decomposition = {} if doc.get("decomposition") is None else doc["decomposition"]
    if not isinstance(decomposition, dict):
        _fail(path, "decomposition", "expected a mapping NAME: expression over the parameters, M, N, K and SMS")
    for k, v in decomposition.items():
        if not isinstance(k, str) or not k.isidentifier():
            _fail(path, "decomposition", f"{str(k)[:40]!r} is not a name")
        _expr(path, f"decomposition.{k}", v)
    note = doc.get("note")
    if note is not None and (not isinstance(note, list)
                             or any(not isinstance(n, str) or n not in decomposition for n in note)):
        _fail(path, "note", f"expected a list of decomposition names ({', '.join(decomposition) or 'none'})")
    return {"dtypes": tuple(dtypes), "dtype_define": define, **_c_and_scales(path, doc, dtypes),
            "tma_args": tuple(args), "cluster": cluster,
            "decomposition": dict(decomposition), "specialize": _specialize(path, doc),
            "note": None if note is None else tuple(note)}


def _c_and_scales(path, doc: dict, dtypes: list) -> dict:
    """`c_dtypes` + `c_dtype_define`: the C dtypes one source writes (`--c-dtype` picks one; c_dtype first, the
    default); `scales` + `scales_define`: the scale modes an fp8 kernel takes (`--scales` picks one; default
    [tensor]); `scale_shapes`: the shapes it reads its scale arrays in, per mode, checked against gemmprof's."""
    c_dtype = doc.get("c_dtype", "fp32")
    c_dtypes = doc.get("c_dtypes") or [c_dtype]
    if not isinstance(c_dtypes, list) or not all(c in C_DTYPE_NAMES for c in c_dtypes) or c_dtypes[0] != c_dtype:
        _fail(path, "c_dtypes", f"expected a list of {', '.join(C_DTYPE_NAMES)} whose first is c_dtype ({c_dtype})")
    c_define = _macro(path, doc, "c_dtype_define", len(c_dtypes) > 1, "a spec with several c_dtypes names the macro "
                                                                     "that selects C's type")
    fp8 = [d for d in dtypes if d in FP8_DTYPES]
    scales = doc.get("scales")
    if scales is not None and not fp8:
        _fail(path, "scales", "only fp8 kernels (dtype e4m3 or e5m2) take scales")
    scales = scales if scales is not None else (["tensor"] if fp8 else [])
    if not isinstance(scales, list) or not all(m in SCALE_MODES for m in scales) or len(set(scales)) != len(scales):
        _fail(path, "scales", f"expected a list of scale modes without repeats: {', '.join(SCALE_MODES)}")
    s_define = _macro(path, doc, "scales_define", len(scales) > 1, "a spec with several scale modes names the macro "
                                                                  "that selects one")
    shapes = doc.get("scale_shapes") or {}
    if not isinstance(shapes, dict):
        _fail(path, "scale_shapes", "expected a mapping MODE: {scale_a: [EXPR, ...], scale_b: [EXPR, ...]}")
    for mode, both in shapes.items():
        if mode not in scales:
            _fail(path, f"scale_shapes.{mode}", f"not one of the spec's scales ({', '.join(scales) or 'none'})")
        if not isinstance(both, dict):
            _fail(path, f"scale_shapes.{mode}", "expected {scale_a: [EXPR, ...], scale_b: [EXPR, ...]}")
        check_keys(path, f"scale_shapes.{mode}", both, ("scale_a", "scale_b"))
        for name, dims in both.items():
            dims = both[name] = rejoin(dims) if isinstance(dims, list) else dims
            if not isinstance(dims, list) or not 1 <= len(dims) <= 2:
                _fail(path, f"scale_shapes.{mode}.{name}", "expected [rows, cols] or [count]: expressions over the "
                                                          "parameters and M, N, K")
            for i, e in enumerate(dims):
                _expr(path, f"scale_shapes.{mode}.{name}[{i}]", e)
    return {"c_dtypes": tuple(c_dtypes), "c_dtype_define": c_define, "scales": tuple(scales),
            "scales_define": s_define, "scale_shapes": {m: dict(v) for m, v in shapes.items()}}


def _macro(path, doc: dict, key: str, required: bool, why: str):
    define = doc.get(key)
    if define is not None and (not isinstance(define, str) or not define.isidentifier()):
        _fail(path, key, f"{str(define)[:40]!r} is not a macro name")
    if required and define is None:
        _fail(path, key, why)
    return define


def _specialize(path, doc: dict) -> dict:
    """`specialize: {MACRO: expression}`: -DMACRO=value of a build for one shape (docs/kernel-spec.md)."""
    node = {} if doc.get("specialize") is None else doc["specialize"]
    if not isinstance(node, dict):
        _fail(path, "specialize", "expected a mapping MACRO: expression over the parameters, M, N, K, SMS and GRID_X, "
                                  "GRID_Y, GRID_Z")
    taken = {str(d).split("=", 1)[0] for d in doc.get("defines") or ()} | ({doc["dtype_define"]}
                                                                         if doc.get("dtype_define") else set())
    for k, v in node.items():
        if not isinstance(k, str) or not MACRO_NAME.fullmatch(k):
            _fail(path, "specialize", f"{str(k)[:40]!r} is not a macro name (ASCII letters, digits and _)")
        if k in taken:
            _fail(path, f"specialize.{k}", "is already a macro of defines or dtype_define")
        _expr(path, f"specialize.{k}", v)
    return dict(node)
