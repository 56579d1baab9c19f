"""Reading typed fields out of a results file's JSON objects: a wrong type is one InputError naming the file and
the field, never a TypeError deep inside a renderer."""

from __future__ import annotations

from gemmprof.errors import InputError
from gemmprof.model.traffic import GemmShape


class FieldReader:
    """Typed fields out of one JSON object; a wrong type is an InputError naming the file and the field."""

    def __init__(self, d, where: str):
        if not isinstance(d, dict):
            raise InputError(f"{where}: expected an object, got {type(d).__name__}")
        self.d, self.where = d, where

    def _bad(self, key, want):
        raise InputError(f"{self.where}.{key}: expected {want}, got {self.d.get(key)!r}")

    def num(self, key):
        v = self.d.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self._bad(key, "a number")
        return v

    def int(self, key):
        v = self.num(key)
        if v is not None and v != int(v):
            self._bad(key, "an integer")
        return None if v is None else int(v)

    def str(self, key, default=None):
        v = self.d.get(key, default)
        if v is not None and not isinstance(v, str):
            self._bad(key, "text")
        return v

    def strs(self, key):
        v = self.d.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            self._bad(key, "a list of text")
        return list(v)

    def numbers(self, key):
        v = self.d.get(key) or {}
        if not isinstance(v, dict) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                              for x in v.values()):
            self._bad(key, "an object of numbers")
        return dict(v)

    def dims(self, key):
        v = self.d.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            self._bad(key, "a list of integers")
        return tuple(v)

    def shape(self, key):
        v = self.d.get(key)
        if v is None:
            return None
        try:
            return GemmShape(int(v["M"]), int(v["N"]), int(v["K"]))
        except (KeyError, TypeError, ValueError, InputError, OverflowError):
            self._bad(key, "{M, N, K}")

    def sub(self, key):
        return FieldReader(self.d.get(key) or {}, f"{self.where}.{key}")
