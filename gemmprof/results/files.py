"""Results on disk: JSON that holds no NaN, and files written whole or not at all."""

from __future__ import annotations

import json
import math
import os
import stat
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
    if 1 + _values_bound(text) > MAX_VALUES:
        raise InputError(f"{where}: holds more than {MAX_VALUES:,} JSON values, too many for a gemmprof file")
    try:
        doc = json.loads(text, parse_int=cells.json_int, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise InputError(f"{where}: key {str(exc)[:40]!r} appears twice in one object (which one is meant?)") from None
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


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list) -> dict:
    """An object of JSON text, refused where a key repeats: json.loads would keep the last silently, and no file
    gemmprof writes has one twice (a hand edit, or two files pasted together)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


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


def check_schema(doc: dict, where: str, supported: int, key: str = "schema") -> None:
    """Refuse a file of a newer (or unknown) layout than this gemmprof reads: read as the old one, its fields
    would be misread. A file without the key is of the first layout."""
    value = doc.get(key, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{where}: {key} {str(value)[:40]!r} is not a layout number (this gemmprof reads "
                         f"{key} 1 to {supported})")
    if value > supported:
        raise InputError(f"{where}: {key} {value} is newer than this gemmprof reads ({key} 1 to {supported}): "
                         "upgrade gemmprof to read it")


def file_kind(path) -> str:
    """What is at `path`, in words: "file", "folder", "FIFO (named pipe)", ... or "does not exist"."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else "does not exist"
    except OSError as exc:  # a name too long, a folder we may not enter, a NUL byte...
        return f"cannot be read: {exc.strerror or exc}"
    except ValueError:
        return "cannot be read: not a usable file name"
    for test, what in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return "not a regular file"


def not_a_file(path) -> str | None:
    """Why `path` cannot be read as a file (a folder, a FIFO, a device, missing), or None for a regular file. A FIFO
    or a device is never opened: reading one would wait for a writer, or never end."""
    kind = file_kind(path)
    if kind == "file":
        return None
    return kind if kind.startswith(("does not", "cannot")) else f"is {'a folder' if kind == 'folder' else kind}, not a file"


MAX_FILE_BYTES = 256 << 20  # gemmprof's results files are under a MiB; a record's largest is a few
MAX_VALUES = 4_000_000  # JSON values in one file (a record's largest has tens of thousands)
_CHUNK = 1 << 20


def read_file(path, what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """A regular file's bytes, at most `limit` of them: a folder, FIFO or device is refused without being opened,
    a larger file is refused unread. One InputError naming the file."""
    why = not_a_file(path)
    if why:
        raise InputError(f"{path}: {why}" if why.startswith("is") else f"{path}: cannot read ({why})")
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise InputError(f"{path}: larger than {limit >> 20} MiB, too large for a {what}")
    return data


def _values_bound(chunk: bytes | str) -> int:
    """An upper bound on the JSON values a piece of text adds: every value but the first follows a comma or a
    colon, or opens a container (commas and colons inside strings only make the bound looser)."""
    marks = ",:[{" if isinstance(chunk, str) else (b",", b":", b"[", b"{")
    return sum(chunk.count(m) for m in marks)


def _bounded(fh, where: str, limit: int) -> bytes:
    """Read `fh` (a file or a decompressing stream) in chunks, stopping as soon as the text passes `limit` bytes
    or could hold more than MAX_VALUES JSON values: a 0.5 MB gzipped list of zeros unpacks to gigabytes, and
    parsing it would take minutes and many GiB. One InputError naming the file and the limit."""
    parts, size, values = [], 0, 1
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            return b"".join(parts)
        size += len(chunk)
        values += _values_bound(chunk)
        if size > limit:
            raise InputError(f"{where}: unpacks to more than {limit >> 20} MiB, too large for a results file")
        if values > MAX_VALUES:
            raise InputError(f"{where}: holds more than {MAX_VALUES:,} JSON values, too many for a results file")
        parts.append(chunk)


def read_bytes(path, what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """A saved file's bytes, unpacked when it is gzipped (`.gz`, or gzip's magic bytes): every reader of saved
    results goes through here, so a record's `.json.gz` or `.csv.gz` reads as the file it packs. Bounded as
    read_file is, and once unpacked (at most `limit` bytes, at most MAX_VALUES JSON values)."""
    path = Path(path)
    data = read_file(path, what, limit)
    if path.suffix.lower() == ".gz" or data[:2] == b"\x1f\x8b":
        import gzip
        import io
        import zlib

        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                data = _bounded(fh, str(path), limit)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"{path}: not a readable gzip file ({exc})") from None
    return data


def read_text(path, what: str = "file", limit: int = MAX_FILE_BYTES, strict: bool = False) -> str:
    """A saved text file (an ncu or nsys CSV, nsys's printed tables, a spec), plain or gzipped: bad bytes replaced,
    or with `strict` one InputError naming the file."""
    data = read_bytes(path, what, limit)
    if not strict:
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file (not UTF-8): give a {what}") from None


def unpacked_name(path) -> str:
    """The file's name without a `.gz` ending: what it holds (`ncu.csv.gz` holds `ncu.csv`)."""
    name = Path(path).name
    return name[:-3] if name.lower().endswith(".gz") else name


def load_json(path) -> dict:
    """A results file, plain or gzipped (`.json.gz`), bounded in what it may cost: a regular file, at most
    MAX_FILE_BYTES once unpacked, at most MAX_VALUES values, nested at most MAX_DEPTH deep."""
    text = read_bytes(path, "results file")
    return parse_json(text, str(path))
