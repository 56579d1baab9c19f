"""Results on disk: JSON that holds no NaN, and files written whole or not at all."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from gemmprof.errors import InputError
from gemmprof.results import cells


def finite(value):
    """None for NaN and infinities (JSON has neither), the value otherwise."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_safe(v):
    """The same structure with NaN and infinities replaced by None."""
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return finite(v)


def write_with(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> None:
    """Call `write` on a temporary file beside `path`, then rename it into place: a failure never leaves half a
    file, nor the temporary one. The folder must exist: gemmprof creates no directories unasked.

    Only regular files are written: a device node, FIFO or socket at `path` (or a symlink to one) is refused, never
    replaced (as root, `-o /dev/null` would otherwise swap the node for a file). A symlink to a regular file is
    followed, so the link stays and its target gets the new contents. An existing regular file is replaced."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if os.path.lexists(path) and not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file (a device, FIFO or socket?)"
        raise InputError(f"cannot write {path}: it is {kind}; gemmprof writes only regular files")
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: the folder {path.parent} does not exist")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a results file or image is an ordinary file
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, text: str) -> None:
    write_with(path, lambda fh: fh.write(text.encode("utf-8")))


def save_json(path, doc: dict) -> None:
    write_atomic(path, json.dumps(json_safe(doc), indent=1) + "\n")


MAX_DEPTH = 64  # gemmprof's own files nest a handful of levels; deeper is damage, and recursion would fail later


def parse_json(text: str | bytes, where: str):
    """JSON text as Python values, integers through the cell parser (a 5000-digit one is damage, not a
    ValueError); a failure is one InputError starting with `where` (the file, or file:line)."""
    try:
        doc = json.loads(text, parse_int=cells.json_int)
    except UnicodeDecodeError:
        raise InputError(f"{where}: not a text file (not UTF-8)") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except cells.CellError as exc:
        raise InputError(f"{where}: {exc}") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deeply to be a gemmprof file") from None
    if _depth(doc) > MAX_DEPTH:
        raise InputError(f"{where}: nested more than {MAX_DEPTH} levels deep, too deep to be a gemmprof file")
    return doc


def _depth(doc) -> int:
    """How deeply `doc` nests, without recursion (a deeply nested field would overflow the stack later)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:
                stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return deepest


MAX_GUNZIPPED = 1 << 30  # a results file gzipped (records keep large ones so) unpacks to far less than this


def read_bytes(path) -> bytes:
    """A saved file's bytes, unpacked when it is gzipped (`.gz`): every reader of saved results goes through here,
    so a record's `.json.gz` or `.csv.gz` reads as the file it packs."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if path.suffix.lower() == ".gz" or data[:2] == b"\x1f\x8b":
        import gzip
        import io
        import zlib

        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                data = fh.read(MAX_GUNZIPPED + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{path}: not a readable gzip file ({exc})") from None
        if len(data) > MAX_GUNZIPPED:
            raise InputError(f"{path}: unpacks to more than {MAX_GUNZIPPED >> 20} MiB, too large for a results file")
    return data


def read_text(path) -> str:
    """A saved text file (an ncu or nsys CSV, nsys's printed tables), plain or gzipped, bad bytes replaced."""
    return read_bytes(path).decode("utf-8", errors="replace")


def unpacked_name(path) -> str:
    """The file's name without a `.gz` ending: what it holds (`ncu.csv.gz` holds `ncu.csv`)."""
    name = Path(path).name
    return name[:-3] if name.lower().endswith(".gz") else name


def load_json(path) -> dict:
    """A results file, plain or gzipped (`.json.gz`)."""
    text = read_bytes(path)
    return parse_json(text, str(path))
