"""A safe evaluator for the integer expressions in kernel specs: parsed with ast, never eval'ed."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping
from functools import lru_cache

from gemmprof.errors import SpecError


def _cdiv(a, b):
    return -(-a // b)


def _min(*args):
    return min(args)


def _max(*args):
    return max(args)


MAX_FIT_WIDTHS = 1024  # fit_width's candidates: (HI - LO) / STEP + 1, at most


def _fit_width(rows, n, slots, lo, hi, step, fixed, margin_pct):
    """The tile width W in HI, HI - STEP, ... down to LO whose rounds of tiles take least time on SLOTS CTAs at once:
    ROWS tile rows by cdiv(N, W) columns run in cdiv(tiles, SLOTS) rounds, a tile of width W taking W + FIXED units
    (work that does not shrink with the width: the A tile's loads, the epilogue's turn). A narrower width is taken
    only where it saves more than MARGIN_PCT % of HI's time; of equal times the widest."""
    args = (rows, n, slots, lo, hi, step, fixed, margin_pct)
    if not all(type(a) is int for a in args):
        raise ExprError(f"fit_width: its arguments must be integers, got {', '.join(map(str, args))}")
    if not (rows >= 1 and n >= 1 and slots >= 1):
        raise ExprError(f"fit_width: rows ({rows}), n ({n}) and slots ({slots}) must be at least 1")
    if not (0 < lo <= hi and step >= 1 and (hi - lo) // step < MAX_FIT_WIDTHS and fixed >= 0 and margin_pct >= 0):
        raise ExprError(f"fit_width: needs 0 < lo <= hi, step >= 1 (at most {MAX_FIT_WIDTHS} widths), fixed >= 0 and "
                        f"margin_pct >= 0; got lo {lo}, hi {hi}, step {step}, fixed {fixed}, margin_pct {margin_pct}")

    def time(w):
        return _cdiv(rows * _cdiv(n, w), slots) * (w + fixed)

    best, best_time = hi, time(hi)
    for w in range(hi - step, lo - 1, -step):
        if time(w) < best_time:
            best, best_time = w, time(w)
    return best if best_time * 100 < time(hi) * (100 - margin_pct) else hi


FUNCTIONS = {"cdiv": _cdiv, "min": _min, "max": _max, "fit_width": _fit_width}
ARITY = {"cdiv": (2, 2), "min": (1, 64), "max": (1, 64), "fit_width": (8, 8)}  # (fewest, most) arguments
MAX_LENGTH = 1000  # characters: a spec's expressions are a line each
MAX_DEPTH = 40  # nesting of the parsed tree: deep enough for any spec, far from Python's recursion limit
MAX_MAGNITUDE = 2 ** 64  # larger values (2**70 tiles, 1e300 bytes) are mistakes, not GEMM sizes
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           # bitwise operators, for index expressions such as an XOR swizzle (h3's accesses)
           ast.BitXor: operator.xor, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.RShift: operator.rshift, ast.LShift: operator.lshift}
_BITWISE = (ast.BitXor, ast.BitAnd, ast.BitOr, ast.RShift, ast.LShift)
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge}


class ExprError(SpecError):
    pass


@lru_cache(maxsize=4096)
def parse(text: str) -> ast.expr:
    if not isinstance(text, str):
        raise ExprError(f"expected an expression (text or a number), got {_short(text)}")
    if len(text) > MAX_LENGTH:
        raise ExprError(f"expression {_short(text)}: longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"cannot parse expression {_short(text)}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"expression {_short(text)}: nested too deeply") from None
    _check_depth(tree.body, text)
    _check(tree.body, text)
    return tree.body


def _short(text) -> str:
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _check_depth(root, text):
    """Iteratively (no recursion): evaluation recurses, so deep trees are refused before it starts."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ExprError(f"expression {_short(text)}: nested more than {MAX_DEPTH} deep")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _check(node, text):
    allowed = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.Name, ast.Constant,
               ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.Load, ast.IfExp)
    for sub in ast.walk(node):
        if not isinstance(sub, allowed):
            raise ExprError(f"expression {_short(text)}: {type(sub).__name__} is not allowed")
        if isinstance(sub, ast.Call):
            if not (isinstance(sub.func, ast.Name) and sub.func.id in FUNCTIONS):
                raise ExprError(f"expression {_short(text)}: only {', '.join(FUNCTIONS)} may be called")
            low, high = ARITY[sub.func.id]
            if not low <= len(sub.args) <= high:
                want = f"{low}" if low == high else f"{low} or more"
                raise ExprError(f"expression {_short(text)}: {sub.func.id}() takes {want} arguments, "
                                f"got {len(sub.args)}")
        if isinstance(sub, ast.Constant) and not isinstance(sub.value, (int, float, bool)):
            raise ExprError(f"expression {_short(text)}: constant {_short(sub.value)} is not a number")
        if isinstance(sub, ast.Constant) and not _in_range(sub.value):
            raise ExprError(f"expression {_short(text)}: constant {_short(sub.value)} is out of range")
        if isinstance(sub, ast.BinOp) and type(sub.op) not in _BINOPS and not isinstance(sub.op, ast.Div):
            raise ExprError(f"expression {_short(text)}: operator {type(sub.op).__name__} is not allowed")


def names(text) -> set[str]:
    if isinstance(text, (int, float)):
        return set()
    return {n.id for n in ast.walk(parse(text)) if isinstance(n, ast.Name) and n.id not in FUNCTIONS}


def _in_range(value) -> bool:
    if isinstance(value, (bool, int)):
        return abs(value) < MAX_MAGNITUDE  # exact for ints of any size (math.isfinite would overflow on them)
    return math.isfinite(value) and abs(value) < MAX_MAGNITUDE


def evaluate(text, env: Mapping[str, int | float]):
    """Evaluate `text` (or pass a number through) with the names in `env`."""
    if isinstance(text, bool):
        return text
    if isinstance(text, (int, float)):
        if not _in_range(text):
            raise ExprError(f"{_short(text)} is out of range")
        return text
    if not isinstance(text, str):
        raise ExprError(f"expected an expression (text or a number), got {_short(text)}")
    value = _eval(parse(text), env, text)
    if not isinstance(value, (int, float, bool)) or not _in_range(value):
        raise ExprError(f"expression {_short(text)}: the value {_short(value)} is out of range")
    return value


def _eval(node, env, text):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"expression {_short(text)}: unknown name {node.id!r}")
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env, text)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            return not v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env, text), _eval(node.right, env, text)
        if not (_in_range(a) and _in_range(b)):
            raise ExprError(f"expression {_short(text)}: a value out of range ({_short(a)}, {_short(b)})")
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            raise ExprError(f"expression {_short(text)}: division by zero")
        if isinstance(node.op, ast.Div):
            if isinstance(a, int) and isinstance(b, int):
                if a % b:
                    raise ExprError(f"expression {_short(text)}: {a} / {b} is not exact")
                return a // b
            return a / b
        if type(node.op) in _BITWISE and not (type(a) is int and type(b) is int and b >= 0):
            raise ExprError(f"expression {_short(text)}: bitwise operators need non-negative integer right operands")
        if isinstance(node.op, ast.LShift) and b >= 64:  # a shift of 2**60 would build a gigantic integer first
            raise ExprError(f"expression {_short(text)}: shift by {b} is out of range")
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.BoolOp):
        values = (_eval(v, env, text) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, text)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env, text)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, env, text) else node.orelse, env, text)
    if isinstance(node, ast.Call):
        args = [_eval(a, env, text) for a in node.args]
        if node.func.id == "cdiv" and args[1] == 0:
            raise ExprError(f"expression {_short(text)}: cdiv by zero")
        return FUNCTIONS[node.func.id](*args)
    raise ExprError(f"expression {_short(text)}: cannot evaluate {type(node).__name__}")


class NotVectorizable(Exception):
    """evaluate_array met something it leaves to evaluate (a call, a true division, and/or, a conditional)."""


_VECTOR_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod) + _BITWISE


def evaluate_array(text, env: Mapping):
    """Evaluate `text` with numpy integer arrays among the values of `env`, element by element.

    Only integer arithmetic, the bitwise operators and single comparisons; NotVectorizable for the rest, where the
    caller falls back to `evaluate` element by element. Errors (unknown names, division by zero) as `evaluate`."""
    if isinstance(text, (bool, int)):
        return text
    if isinstance(text, float):
        raise NotVectorizable(text)
    return _vec(parse(text), env, text)


def _vec(node, env, text):
    import numpy as np

    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int):
            raise NotVectorizable(text)
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise ExprError(f"expression {text!r}: unknown name {node.id!r}")
        v = env[node.id]
        if isinstance(v, float):
            raise NotVectorizable(text)
        return v
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _vec(node.operand, env, text)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and isinstance(node.op, _VECTOR_OPS):
        a, b = _vec(node.left, env, text), _vec(node.right, env, text)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and np.any(np.asarray(b) == 0):
            raise ExprError(f"expression {text!r}: division by zero")
        if isinstance(node.op, _BITWISE) and np.any(np.asarray(b) < 0):
            raise ExprError(f"expression {text!r}: bitwise operators need non-negative integer right operands")
        return _BINOPS[type(node.op)](a, b)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _CMPOPS[type(node.ops[0])](_vec(node.left, env, text), _vec(node.comparators[0], env, text))
    raise NotVectorizable(text)
