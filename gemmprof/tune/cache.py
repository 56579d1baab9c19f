"""The sweep cache: one JSON-lines file per (device, compiler, kernel source, dtype, shape).

The first line names what the file is for; every later line is one configuration's record (or a final re-timing).
Each line is flushed and synced as it is written, so a sweep killed at any moment keeps every finished result;
a last line cut off mid-write is dropped (and trimmed away) when the file is opened again, while a complete last
record that only lacks its newline is kept. A damaged line (not JSON, not UTF-8, NUL bytes, a record without its
fields) is left out and named in `warnings`: the sweep resumes with the good lines and measures that one again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from gemmprof.errors import InputError
from gemmprof.results.files import check_schema, parse_json, read_file
from gemmprof.tune.records import Record
from gemmprof.tune.space import config_key

CACHE_KIND = "gemmprof.tune-cache"
CACHE_VERSION = 1


@dataclass(frozen=True)
class CacheKey:
    device: str
    compiler: str  # e.g. "nvrtc 13.0 (cupy 14.2.0)"
    kernel: str
    source_hash: str
    dtype: str
    shape: str  # MxNxK

    def to_dict(self):
        return dict(self.__dict__)

    def filename(self) -> str:
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:12]
        slug = re.sub(r"[^A-Za-z0-9]+", "-", self.device).strip("-").lower() or "device"
        return f"{self.kernel}_{self.dtype}_{self.shape}_{slug}_{digest}.jsonl"


class TuneCache:
    """Records by configuration key; `add` appends one line (the last record of a key wins on load)."""

    def __init__(self, path: Path, key: CacheKey):
        self.path, self.key = Path(path), key
        self.records: dict[str, Record] = {}
        self.retimes: list[dict] = []
        self.dropped_partial_line = False
        self.warnings: list[str] = []  # damaged lines left out, each naming the file and line
        self._fh = None
        self._needs_newline = False  # the last record lacks its newline: the next append starts a line first
        self._load()

    @classmethod
    def open(cls, cache_dir, key: CacheKey) -> TuneCache:
        return cls(Path(cache_dir) / key.filename(), key)

    def _load(self):
        if not self.path.exists():
            return
        try:
            data = read_file(self.path, "tune cache")  # a regular file (a FIFO would block), bounded
        except InputError as exc:
            raise InputError(f"cannot read the tune cache: {exc}") from None
        if data and not data.strip(b"\x00"):
            raise InputError(f"{self.path}: holds only NUL bytes ({len(data)}; a crash while the file was "
                             "extended?); move the file away to start over")
        lines = data.split(b"\n")
        complete, tail = lines[:-1], lines[-1]  # tail is b"" when the file ends with a newline
        if tail:
            if self._whole_record(tail, len(lines)):
                complete.append(tail)
                self._needs_newline = True
            else:
                self.dropped_partial_line = True
                with open(self.path, "r+b") as fh:  # cut the half-written line so appends start on a fresh one
                    fh.truncate(len(data) - len(tail))
        for i, raw in enumerate(complete, start=1):
            if not raw.strip():
                continue
            try:
                doc = self._line(raw, i)
                if i == 1:
                    self._check_header(doc)
                elif doc.get("kind") == "retime":
                    self.retimes.append(self._retime(doc, i))
                else:
                    rec = Record.from_dict(doc, f"{self.path}:{i}")
                    self.records[config_key(rec.params)] = rec
            except InputError as exc:
                if i == 1:
                    raise
                self.warnings.append(f"{exc}: line left out (measured again)")

    def _line(self, raw: bytes, i: int) -> dict:
        where = f"{self.path}:{i}"
        if b"\x00" in raw:
            raise InputError(f"{where}: holds NUL bytes")
        try:
            doc = parse_json(raw, where)
        except InputError as exc:
            message = str(exc).replace(f"{where}: line 1: ", f"{where}: ")
            if i == 1:
                message += "; move the file away to start over"
            raise InputError(message) from None
        if not isinstance(doc, dict):
            raise InputError(f"{where}: not a JSON object")
        return doc

    def _whole_record(self, tail: bytes, i: int) -> bool:
        """A last line without newline that is still a whole record (the writer died between the two)."""
        try:
            doc = self._line(tail, i)
            if doc.get("kind") != "retime" and i > 1:
                Record.from_dict(doc, f"{self.path}:{i}")
        except InputError:
            return False
        return True

    def _retime(self, doc: dict, i: int) -> dict:
        if not isinstance(doc.get("candidates"), list) or not isinstance(doc.get("samples_ms"), dict):
            raise InputError(f"{self.path}:{i}: a re-timing line without its candidates and samples")
        return doc

    def _check_header(self, doc):
        if not isinstance(doc, dict) or doc.get("kind") != CACHE_KIND:
            raise InputError(f"{self.path}: not a gemmprof tune cache (first line has kind {doc.get('kind')!r})")
        check_schema(doc, str(self.path), CACHE_VERSION, key="version")
        if doc.get("key") != self.key.to_dict():
            raise InputError(f"{self.path}: written for {doc.get('key')}, not {self.key.to_dict()}")

    def _append(self, doc: dict):
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            new = not self.path.exists() or self.path.stat().st_size == 0
            self._fh = open(self.path, "a", encoding="utf-8")
            if self._needs_newline and not new:
                self._fh.write("\n")
                self._needs_newline = False
            if new:
                self._write({"kind": CACHE_KIND, "version": CACHE_VERSION, "key": self.key.to_dict()})
        self._write(doc)

    def _write(self, doc: dict):
        self._fh.write(json.dumps(doc, separators=(",", ":")) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def get(self, params) -> Record | None:
        return self.records.get(config_key(params))

    def add(self, record: Record) -> None:
        self._append(record.to_dict())
        self.records[config_key(record.params)] = record

    def find_retime(self, keys: list[str]) -> dict | None:
        for doc in reversed(self.retimes):
            if doc.get("candidates") == keys:
                return doc
        return None

    def add_retime(self, keys: list[str], samples: dict[str, list[float]], rounds: int) -> dict:
        doc = {"kind": "retime", "candidates": keys, "rounds": rounds, "samples_ms": samples}
        self._append(doc)
        self.retimes.append(doc)
        return doc

    def close(self):
        if self._fh is not None:
            self._fh.close()
            self._fh = None
