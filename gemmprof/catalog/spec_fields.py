"""Fields of a kernel spec that must have one shape: names, lists of names, the kernel's source file."""

from __future__ import annotations

import os
from pathlib import Path

from gemmprof.errors import SpecError

SOURCES_ANYWHERE = "GEMMPROF_SPEC_SOURCES_ANYWHERE"  # set to 1: a spec's file: may leave the spec's folder


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def text(path, key, node) -> str:
    if not isinstance(node, (str, int)) or isinstance(node, bool) or not str(node).strip():
        _fail(path, key, f"expected a name, got {str(node)[:40]!r}")
    return str(node)


def names(path, key, node) -> tuple[str, ...]:
    if node is None:
        return ()
    if not isinstance(node, list) or not all(isinstance(n, str) and n for n in node):
        _fail(path, key, "expected a list of names")
    return tuple(node)


def source_file(path, node) -> Path:
    name = text(path, "file", node)
    if len(name) > 255 or "\0" in name:
        _fail(path, "file", f"{name[:40]!r}... is not a usable file name")
    cu = (path.parent / name).resolve()
    folder = Path(path).parent.resolve()
    if not cu.is_relative_to(folder) and os.environ.get(SOURCES_ANYWHERE) != "1":
        # a spec names its source beside it; a path that leaves the folder would compile (and echo in build
        # errors) whatever file it names, e.g. a spec downloaded with file: ../../etc/shadow
        _fail(path, "file", f"{name[:60]!r} is outside the spec's folder {folder}; keep the source beside the "
                            f"spec or below it (or set {SOURCES_ANYWHERE}=1 to allow it)")
    try:
        found = cu.is_file()
    except OSError as exc:
        _fail(path, "file", f"{name[:60]!r}: {exc.strerror or exc}")
    if not found:
        _fail(path, "file", f"{cu} does not exist")
    return cu
