"""Typed fields out of one JSON object (a results file's variant, a profile's launch): a wrong type, NaN,
infinity or a negative time is an InputError naming the file and the field, never a traceback later."""

from __future__ import annotations

import math

from gemmprof.errors import InputError
from gemmprof.results import cells
from gemmprof.results.cells import MAX_COUNT
from gemmprof.results.shape import GemmShape


def check_keys(d: dict, where: str, known) -> None:
    """Refuse a key the layout does not have, naming it and where it is."""
    unknown = sorted(str(k) for k in d if k not in known)
    if unknown:
        raise InputError(f"{where + ': ' if where else ''}unknown key {unknown[0][:40]!r}"
                         f"{f' (and {len(unknown) - 1} more)' if len(unknown) > 1 else ''}")


class Fields:
    def __init__(self, d, where: str):
        if not isinstance(d, dict):
            raise InputError(f"{where}: expected an object, got {_shown(d)}")
        self.d, self.where = d, where

    def _bad(self, key, want):
        where = f"{self.where}.{key}" if self.where else key
        raise InputError(f"{where}: expected {want}, got {_shown(self.d.get(key))}")

    def num(self, key, minimum: float | None = None):
        """A finite number (>= minimum when given), or None when absent or null."""
        v = self.d.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or abs(v) >= 1e300:
            self._bad(key, "a finite number")
        if minimum is not None and v < minimum:
            self._bad(key, f"a number >= {minimum:g}")
        return v

    def int(self, key, default=None, minimum: int = 0):
        v = self.num(key)
        if v is None:
            return default
        try:
            return cells.count(v, minimum=minimum)
        except cells.CellError:
            self._bad(key, f"an integer >= {minimum}")

    def str(self, key, default=None):
        v = self.d.get(key, default)
        if v is not None and not isinstance(v, str):
            self._bad(key, "text")
        return v

    def name(self, key) -> str:
        """Required, non-empty text."""
        v = self.d.get(key)
        if not isinstance(v, str) or not v.strip():
            self._bad(key, "a non-empty name")
        return v

    def strs(self, key):
        v = self.d.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self._bad(key, "a list of text")
        return list(v)

    def numbers(self, key):
        v = self.d.get(key) or {}
        if not isinstance(v, dict) or not all(_finite(x) for x in v.values()):
            self._bad(key, "an object of finite numbers")
        return dict(v)

    def counts(self, key):
        """An object of whole, non-negative numbers (block limits)."""
        v = self.numbers(key)
        try:
            return {k: cells.count(x) for k, x in v.items()}
        except cells.CellError:
            self._bad(key, "an object of integers >= 0")

    def ints(self, key):
        """An object of integers (a variant's parameters)."""
        v = self.d.get(key) or {}
        if not isinstance(v, dict) or not all(isinstance(x, int) and not isinstance(x, bool) and abs(x) < MAX_COUNT
                                              for x in v.values()):
            self._bad(key, "an object of integers")
        return dict(v)

    def whole_numbers(self, key):
        """A list of integers >= 0 (a variant's turns, in launches); [] where the key is absent."""
        v = self.d.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < MAX_COUNT
                                              for x in v):
            self._bad(key, "a list of integers >= 0")
        return list(v)

    def dims(self, key):
        v = self.d.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or len(v) != 3 or not all(
                isinstance(x, int) and not isinstance(x, bool) and 1 <= x < 2 ** 32 for x in v):
            self._bad(key, "three integers >= 1")
        return tuple(v)

    def times(self, key):
        """Per-repetition times: a non-empty list of finite, positive numbers."""
        v = self.d.get(key)
        if not isinstance(v, list) or not v or not all(_finite(x) and x > 0 for x in v):
            self._bad(key, "a non-empty list of positive times")
        return tuple(v)

    def shape(self, key):
        v = self.d.get(key)
        if v is None:
            return None
        sub = Fields(v, f"{self.where}.{key}" if self.where else key)
        try:
            return GemmShape(*(sub.int(d, minimum=1) for d in ("M", "N", "K")))
        except InputError:
            self._bad(key, "{M, N, K} of integers >= 1")

    def mapping(self, key):
        v = self.d.get(key)
        if v is not None and not isinstance(v, dict):
            self._bad(key, "an object")
        return v

    def sub(self, key):
        return Fields(self.d.get(key) or {}, f"{self.where}.{key}" if self.where else key)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e300


def _shown(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


FieldReader = Fields  # the name results/profile.py uses
