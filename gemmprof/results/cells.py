"""The one parser for numeric cells: every reader (ncu CSV, nsys CSV/text/SQLite, results and profile JSON, tune
caches) turns a cell into a number here, and nowhere else calls int() or float() on what a file holds.

A cell is read as ASCII digits only (Python's int() also takes '٣' and '３', and '²'.isdigit() is True), with
thousands separators, of bounded length (a 5000-digit number is damage, and int() refuses past 4300 digits),
and scaled by a unit only where the product stays finite. NaN and infinities are refused wherever a figure must
be a real quantity; a count is an integer within [minimum, MAX_COUNT).

Failures are CellError, an InputError without a location: the reader that knows the file, row and column adds it
(`CellError.at`), or leaves the row out with a warning where the rest of the file is usable.
"""

from __future__ import annotations

import math
import re

from gemmprof.errors import InputError

MAX_COUNT = 2 ** 62  # integers beyond this are damage, not registers, bytes or FLOPs
MAX_FIGURE = 1e300  # a float beyond this overflows the first product or sum it enters
MAX_CHARS = 64  # the longest numeric cell read: ncu's longest counters print ~25 characters with separators
MAX_JSON_DIGITS = 400  # a JSON integer longer than any float: damage (Python refuses to read past 4300 digits)

_NUMBER = re.compile(r"[+-]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NON_FINITE = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}


class CellError(InputError):
    """A cell that is not the number its column needs; the message says what it holds and why it is refused."""

    def at(self, where: str) -> CellError:
        """The same problem, prefixed with where it was (file, row, column)."""
        return CellError(f"{where}: {self}")


def _shown(text) -> str:
    t = str(text).strip()
    return repr(t if len(t) <= 24 else t[:21] + "...")


def looks_numeric(text: str) -> bool:
    """True when `text` is written as a number (ASCII digits, optional separators and exponent), as nan/inf, or
    with digits that are not ASCII: a cell gemmprof must read as a number or refuse, never keep as text.
    Other text ("n/a", "(64, 1, 1)", "1.2.3") is not numeric."""
    t = text.strip()
    return bool(_NUMBER.fullmatch(t)) or t.lower() in _NON_FINITE or (  # or digits that are not ASCII ('²', '٣')
        any(c.isdigit() and not c.isascii() for c in t) and all(c.isdigit() or c in "+-.," for c in t))


def parse_number(text: str, *, finite: bool = True) -> int | float | None:
    """The number a cell prints: an int for integer text, a float otherwise; None for text that is no number
    ("", "n/a", a name). A numeric-looking cell that cannot be a figure (non-ASCII digits, too long, out of range,
    NaN or infinity when `finite`) is a CellError."""
    t = text.strip()
    if t.lower() in _NON_FINITE:
        if finite:
            raise CellError(f"{_shown(t)} is not a finite number")
        return float(t.lower().replace("infinity", "inf"))
    if not _NUMBER.fullmatch(t):
        if looks_numeric(t):
            raise CellError(f"{_shown(t)} is not a number written in ASCII digits")
        return None
    if len(t) > MAX_CHARS:
        raise CellError(f"a number of {len(t)} characters ({_shown(t)}) is damage, not a figure")
    t = t.replace(",", "")
    if _INTEGER.fullmatch(t):
        value = int(t)
        if abs(value) >= MAX_COUNT:
            raise CellError(f"{_shown(t)} is out of range (beyond 2**62)")
        return value
    value = float(t)
    if not abs(value) < MAX_FIGURE:
        raise CellError(f"{_shown(t)} is out of range")
    return value


def number(text: str, *, minimum: float | None = None) -> int | float:
    """A required finite number, >= minimum when given; an empty or non-numeric cell is a CellError."""
    value = parse_number(text)
    if value is None:
        raise CellError(f"{_shown(text)} is not a number")
    return figure(value, minimum=minimum)


def figure(value, *, minimum: float | None = None) -> int | float:
    """An already-typed value (JSON, SQLite) checked as a finite number of sane size, >= minimum when given."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CellError(f"{_shown(value)} is not a number")
    if isinstance(value, int):
        if abs(value) >= MAX_COUNT:
            raise CellError(f"{_shown(value)} is out of range (beyond 2**62)")
    elif not math.isfinite(value) or abs(value) >= MAX_FIGURE:
        raise CellError(f"{_shown(value)} is not a finite number")
    if minimum is not None and value < minimum:
        raise CellError(f"{_shown(value)} is below {minimum:g}")
    return value


def real(value) -> float:
    """A checked finite number as a float (a speedup, a share)."""
    return float(figure(value))


def count(value, *, minimum: int = 0) -> int:
    """An integer within [minimum, MAX_COUNT): from a typed value (an integral float counts) or from text."""
    if isinstance(value, str):
        value = number(value)
    value = figure(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise CellError(f"{_shown(value)} is not a whole number")
        value = int(value)
    if not minimum <= value < MAX_COUNT:
        raise CellError(f"{_shown(value)} is not an integer >= {minimum}")
    return value


def scaled(value: int | float, scale: float) -> int | float:
    """`value` in a unit `scale` times larger, as a finite number (an int stays an int when scale is 1)."""
    if scale == 1:
        return value
    product = float(value) * scale if abs(value) < MAX_FIGURE else math.inf
    if not abs(product) < MAX_FIGURE:
        raise CellError(f"{_shown(value)} scaled by {scale:g} is out of range")
    return product


def integers(text: str, *, minimum: int = 0) -> tuple[int, ...]:
    """Every run of ASCII digits in a cell such as "(64, 64, 1)" or "64 64 1", each a bounded count."""
    if any(c.isdigit() and not c.isascii() for c in text):
        raise CellError(f"{_shown(text)} holds digits that are not ASCII")
    return tuple(count(n, minimum=minimum) for n in re.findall(r"[0-9]+", text))


def json_int(text: str) -> int:
    """The parse_int hook of json.loads: an integer of sane length (the caller names the file)."""
    if len(text.lstrip("-")) > MAX_JSON_DIGITS:
        raise CellError(f"an integer of {len(text.lstrip('-'))} digits (more than {MAX_JSON_DIGITS} is damage)")
    return int(text)
