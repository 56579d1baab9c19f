"""A kernel's source: its file and every header it includes by a quoted path (found beside the including file).

The nvcc cache key (gemmprof.measure.nvcc) and the tune cache and tuned defaults (source_hash) read the headers
too, so a change to a shared header such as kernels/fp16/hopper.cuh rebuilds and re-tunes the rungs that use it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

_INCLUDE = re.compile(r'^\s*#\s*include\s*(?:"([^"]+)"|<([^>]+)>)', re.M)


def source_text(path: Path, seen: set[Path] | None = None, include_dirs=()) -> str:
    """The file and every header it includes, recursively: by a quoted path found beside it or in
    `include_dirs`, or by <...> found in `include_dirs` (system headers are the compiler's version's)."""
    seen = set() if seen is None else seen
    path = path.resolve()
    if path in seen or not path.is_file():
        return ""
    seen.add(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    parts = [f"// {path.name}\n{text}"]
    for quoted, angled in _INCLUDE.findall(text):
        places = ([path.parent] if quoted else []) + [Path(d) for d in include_dirs]
        found = next((p / (quoted or angled) for p in places if (p / (quoted or angled)).is_file()), None)
        if found is not None:
            parts.append(source_text(found, seen, include_dirs))
    return "\n".join(parts)


def included_headers(path: Path) -> list[Path]:
    """Every header the file includes by a quoted path, recursively, each once, in the order first met."""
    found: list[Path] = []

    def walk(p: Path) -> None:
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        for inc, _angled in _INCLUDE.findall(text):
            if not inc:
                continue
            h = (p.parent / inc).resolve()
            if h.is_file() and h not in found and h != path.resolve():
                found.append(h)
                walk(h)

    walk(Path(path))
    return found


def source_hash(spec) -> str:
    """The kernel's source (with the headers it includes), compile options and ABI-relevant spec fields: a change
    in any makes a new tune cache and marks kept tuned defaults stale."""
    h = hashlib.sha256()
    h.update(Path(spec.file).read_bytes())
    for header in included_headers(Path(spec.file)):  # nothing for a file without quoted includes: same hash as before
        h.update(header.read_bytes())
    h.update(repr((spec.entry, spec.backend, spec.template, spec.defines, spec.compile_options)).encode())
    if spec.build_fields != type(spec.build_fields)() or not spec.abi.is_default:  # (older hashes stay valid)
        h.update(repr((spec.build_fields, spec.abi)).encode())
    return h.hexdigest()[:16]
