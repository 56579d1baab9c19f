"""A spec's `accesses:` block: the principal memory accesses of one warp in one iteration of the main loop.

Each access is one load or store instruction (as nvcc emits it: where the compiler fuses scalar loads into a
vector one, the spec describes the vector one) given by its array, memory space, width in bytes and the index of
the element a lane touches, in elements of `elem` bytes (the array's element type: 4 for float, 2 for half). The
byte address a lane touches is index * elem, and the access covers `bytes` bytes from there. Indices are safe
expressions (gemmprof.expr) of the lane's thread and block indices, the main-loop variable, the access's own
inner-loop variables, the parameters, derived names and M, N, K. docs/kernel-spec.md describes the format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gemmprof.catalog import expr
from gemmprof.catalog.spec_fields import check_keys
from gemmprof.errors import SpecError

SPACES = ("global", "shared")
OPS = ("load", "store")
WIDTHS = (1, 2, 4, 8, 16)
THREAD_NAMES = ("tid", "tx", "ty", "tz", "bx", "by", "bz", "lane", "warp")
_KEYS = {"name", "array", "space", "op", "bytes", "elem", "index", "for", "per", "count", "phase", "when", "predicated",
         "note"}


@dataclass(frozen=True)
class Access:
    name: str
    array: str
    space: str  # global | shared
    op: str  # load | store
    bytes: int  # width of the access per lane
    elem: int  # bytes per element counted by `index`
    index: str  # expression: element index (in `elem`-byte elements) a lane touches
    loops: tuple[tuple[str, Any], ...]  # inner loops: (name, count expression or list of values)
    per: str  # "iteration" (every main-loop iteration) or "launch" (once per thread, e.g. the epilogue)
    count: Any  # repeats of the same pattern not worth enumerating (expression), default 1
    phase: int | None  # lanes per shared-memory phase, overriding the width rule (8 for ldmatrix)
    when: str | None  # a lane takes part only where this expression holds
    predicated: bool  # `when` predicates an issued instruction: a warp with no lane on still issues it
    note: str

    @property
    def ldmatrix(self) -> bool:
        """ldmatrix (LDSM): 8-lane phases; ncu counts it in smsp__inst_executed_op_ldsm, not op_shared_ld."""
        return self.space == "shared" and self.phase == 8


@dataclass(frozen=True)
class DocumentedDifference:
    """A rung's explained disagreement with ncu: the quantity, ncu's value, and why."""

    quantity: str  # one of NCU_QUANTITIES
    ncu: float
    why: str


NCU_QUANTITIES = ("smem_ld_wavefronts_per_request", "smem_st_wavefronts_per_request",
                  "smem_ld_conflicts_per_request", "smem_st_conflicts_per_request", "gmem_sectors",
                  "smem_ld_wavefronts_addressed", "smem_st_wavefronts_addressed")


@dataclass(frozen=True)
class AccessBlock:
    loop_var: str  # the main loop's variable (evaluated at its first iteration: value `start`)
    loop_start: Any
    trips: Any  # expression: iterations of the main loop
    accesses: tuple[Access, ...]
    notes: tuple[DocumentedDifference, ...]
    claims: tuple[dict[str, str], ...]  # a document's claim checked against the model: {claim, finding}


def _fail(path, key, problem):
    raise SpecError(f"{path}: accesses.{key}: {problem}")


def _check_expr(path, key, text):
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        _fail(path, key, f"expected an expression, got {text!r}")
    if isinstance(text, str):
        try:
            expr.parse(text)
        except SpecError as exc:
            _fail(path, key, str(exc))


def _loops(path, key, node) -> tuple[tuple[str, Any], ...]:
    if node is None:
        return ()
    if not isinstance(node, dict):
        _fail(path, key, "expected a mapping NAME: count expression or list of values")
    out = []
    for var, rng in node.items():
        if var in THREAD_NAMES:
            _fail(path, f"{key}.{var}", "a loop variable may not shadow a thread index")
        if isinstance(rng, list):
            for i, v in enumerate(rng):
                _check_expr(path, f"{key}.{var}[{i}]", v)
            out.append((str(var), tuple(rng)))
        else:
            _check_expr(path, f"{key}.{var}", rng)
            out.append((str(var), rng))
    return tuple(out)


def _access(path, i, node) -> Access:
    key = f"list[{i}]"
    if not isinstance(node, dict):
        _fail(path, key, "expected a mapping {array, space, op, bytes, index, ...}")
    check_keys(path, f"accesses.{key}", node, _KEYS)
    for req in ("array", "space", "op", "bytes", "index"):
        if req not in node:
            _fail(path, f"{key}.{req}", "missing")
    if node["space"] not in SPACES:
        _fail(path, f"{key}.space", f"{node['space']!r} is not one of {', '.join(SPACES)}")
    if node["op"] not in OPS:
        _fail(path, f"{key}.op", f"{node['op']!r} is not one of {', '.join(OPS)}")
    for wkey in ("bytes", "elem"):
        if wkey in node and node[wkey] not in WIDTHS:
            _fail(path, f"{key}.{wkey}", f"{node[wkey]!r} is not one of {WIDTHS}")
    per = node.get("per", "iteration")
    if per not in ("iteration", "launch"):
        _fail(path, f"{key}.per", f"{per!r} is not iteration or launch")
    phase = node.get("phase")
    if phase is not None and phase not in (8, 16, 32):
        _fail(path, f"{key}.phase", f"{phase!r} is not 8, 16 or 32 lanes")
    _check_expr(path, f"{key}.index", node["index"])
    _check_expr(path, f"{key}.count", node.get("count", 1))
    if node.get("when") is not None:
        _check_expr(path, f"{key}.when", node["when"])
    name = str(node.get("name") or f"{node['array']} {node['op']}")
    return Access(name=name, array=str(node["array"]), space=node["space"], op=node["op"], bytes=int(node["bytes"]),
                  elem=int(node.get("elem", 4)), index=node["index"], loops=_loops(path, f"{key}.for", node.get("for")),
                  per=per, count=node.get("count", 1), phase=phase, when=node.get("when"),
                  predicated=bool(node.get("predicated", False)), note=str(node.get("note", "")).strip())


def _notes(path, node) -> tuple[DocumentedDifference, ...]:
    if node is None:
        return ()
    if not isinstance(node, list):
        _fail(path, "notes", "expected a list of {quantity, ncu, why}")
    out = []
    for i, item in enumerate(node):
        if not isinstance(item, dict) or not {"quantity", "ncu", "why"} <= set(item):
            _fail(path, f"notes[{i}]", "expected {quantity, ncu, why}")
        check_keys(path, f"accesses.notes[{i}]", item, ("quantity", "ncu", "why"))
        if item["quantity"] not in NCU_QUANTITIES:
            _fail(path, f"notes[{i}].quantity", f"{item['quantity']!r} is not one of {', '.join(NCU_QUANTITIES)}")
        ncu = item["ncu"]
        if isinstance(ncu, bool) or not isinstance(ncu, (int, float)) or not abs(ncu) < 1e30:
            _fail(path, f"notes[{i}].ncu", f"expected a finite number, got {str(ncu)[:40]!r}")
        out.append(DocumentedDifference(str(item["quantity"]), float(ncu), str(item["why"]).strip()))
    return tuple(out)


def parse_accesses(path: Path, node) -> AccessBlock | None:
    """Validate a spec's `accesses:` mapping (None when the spec has none)."""
    if node is None:
        return None
    if not isinstance(node, dict) or "list" not in node or "loop" not in node:
        _fail(path, "", "expected {loop: {var, trips}, list: [...]}")
    check_keys(path, "accesses", node, ("loop", "list", "notes", "claims"))
    loop = node["loop"]
    if not isinstance(loop, dict) or "var" not in loop or "trips" not in loop:
        _fail(path, "loop", "expected {var: NAME, trips: EXPRESSION, start: EXPRESSION}")
    check_keys(path, "accesses.loop", loop, ("var", "trips", "start"))
    _check_expr(path, "loop.trips", loop["trips"])
    _check_expr(path, "loop.start", loop.get("start", 0))
    if not isinstance(node["list"], list) or not node["list"]:
        _fail(path, "list", "expected a non-empty list of accesses")
    claims = [] if node.get("claims") is None else node["claims"]
    if not isinstance(claims, list) or not all(isinstance(c, dict) and {"claim", "finding"} <= set(c) for c in claims):
        _fail(path, "claims", "expected a list of {claim, finding}")
    return AccessBlock(loop_var=str(loop["var"]), loop_start=loop.get("start", 0), trips=loop["trips"],
                       accesses=tuple(_access(path, i, a) for i, a in enumerate(node["list"])),
                       notes=_notes(path, node.get("notes")),
                       claims=tuple({k: str(v).strip() for k, v in c.items()} for c in claims))


def lane_env(block: tuple[int, int, int], warp: int, lane: int, block_idx=(0, 0, 0)) -> dict[str, int]:
    """Thread indices of one lane of one warp: threads are numbered x fastest, then y, then z (CUDA's order)."""
    tid = warp * 32 + lane
    bx_, by_, _ = block
    return {"tid": tid, "tx": tid % bx_, "ty": (tid // bx_) % by_, "tz": tid // (bx_ * by_),
            "bx": block_idx[0], "by": block_idx[1], "bz": block_idx[2], "lane": lane, "warp": warp}
