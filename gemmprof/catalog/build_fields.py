"""Spec fields about how a kernel or host launcher is built: `include_dirs` (and `fetch`, how to fetch those in
gemmprof's cache), `flags`, literal `defines`, `launcher` and `libs` (docs/kernel-spec.md). Every flag is one
argument to nvcc, from an allow-list, and every macro and folder is one nvcc's shell finds nothing to run in
(nvcc_flags.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gemmprof.catalog.nvcc_flags import MACRO_NAME, check_flags, check_macro, check_path
from gemmprof.catalog.paths import cache_root
from gemmprof.catalog.spec_fields import source_file
from gemmprof.errors import SpecError
from gemmprof.results.files import file_kind

_LIB = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


@dataclass(frozen=True)
class BuildFields:
    include_dirs: tuple[Path, ...] = ()
    flags: tuple[str, ...] = ()
    define_literals: tuple[tuple[str, str], ...] = ()  # -DNAME=VALUE not tied to a parameter
    launcher: Path | None = None  # a host launcher's .cu: `entry` is its extern "C" function
    libs: tuple[str, ...] = ()  # linked into a launcher's shared library (-lNAME)



CACHE_PLACEHOLDER = "${GEMMPROF_CACHE}"  # the one placeholder an include folder may start with


def _include_dirs(path: Path, dirs, fetch) -> list[Path]:
    """The spec's include folders: relative to the spec, or in gemmprof's cache (`${GEMMPROF_CACHE}/...`, for
    headers fetched at the moment of use; `fetch:` says how, and is named where such a folder is missing). Each a
    folder nvcc's shell finds nothing to run in (check_path)."""
    if dirs is not None and (not isinstance(dirs, list) or not all(isinstance(d, str) and d for d in dirs)):
        _fail(path, "include_dirs", "expected a list of folders (relative to this spec, or ${GEMMPROF_CACHE}/...)")
    if fetch is not None and (not isinstance(fetch, str) or not fetch.strip() or "\n" in fetch.strip()):
        _fail(path, "fetch", "expected one line: the command that fetches the spec's ${GEMMPROF_CACHE} folders")
    cached = [d for d in dirs or () if d.startswith(CACHE_PLACEHOLDER)]
    if fetch is not None and not cached:
        _fail(path, "fetch", f"names how to fetch include_dirs in {CACHE_PLACEHOLDER}, and this spec has none")
    out = []
    for i, d in enumerate(dirs or ()):
        key = f"include_dirs[{i}]"
        if "\0" in d or len(d) >= 4096:
            _fail(path, key, f"{d[:60]!r} is not a usable folder name")
        rest = d[len(CACHE_PLACEHOLDER):] if d.startswith(CACHE_PLACEHOLDER) else None
        if "${" in (d if rest is None else rest) or (rest is not None and rest[:1] not in ("", "/")):
            _fail(path, key, f"{d[:80]!r}: only a leading {CACHE_PLACEHOLDER}/ is expanded (gemmprof's cache "
                             "folder: $GEMMPROF_CACHE, else ~/.cache/gemmprof)")
        where = (path.parent / d) if rest is None else cache_root() / rest.lstrip("/")
        kind = file_kind(where)
        if kind != "folder":
            if rest is None:
                _fail(path, key, f"{str(where)[:200]} is not a folder ({kind})")
            how = f"run `{fetch.strip()}`" if fetch else "fetch what it holds first"
            _fail(path, key, f"{str(where)[:200]} is not there: it is fetched, not shipped ({how})")
        folder = where.resolve()
        check_path(path, key, folder)
        out.append(folder)
    return out


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def parse_build_fields(path: Path, doc: dict, params: dict) -> tuple[tuple[str, ...], BuildFields]:
    """(the parameters passed as -D, BuildFields). `defines` lists parameter names, or NAME=VALUE for a macro of
    your own; a mapping {NAME: VALUE} is all literal."""
    node = doc.get("defines")
    by_param: list[str] = []
    literal: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if v is None or isinstance(v, (dict, list)):
                _fail(path, f"defines.{str(k)[:40]}", "expected NAME: VALUE (a macro name and a number or word)")
            literal.append(check_macro(path, f"defines.{str(k)[:40]}", k, v))
    elif node is not None:
        if not isinstance(node, list):
            _fail(path, "defines", "expected a list of parameter names and NAME=VALUE macros")
        for i, item in enumerate(node):
            if isinstance(item, str) and item in params:
                by_param.append(item)
            elif isinstance(item, str) and "=" in item:
                literal.append(check_macro(path, f"defines[{i}]", *item.split("=", 1)))
            elif isinstance(item, str) and MACRO_NAME.fullmatch(item):
                _fail(path, f"defines[{i}]", f"{item!r} is not a parameter (a macro of your own is NAME=VALUE, "
                                             "e.g. USE_FAST=1)")
            else:
                _fail(path, f"defines[{i}]", f"{str(item)[:40]!r} is not a parameter nor NAME=VALUE (a macro of "
                                             "your own, e.g. USE_FAST=1)")
    include_dirs = _include_dirs(path, doc.get("include_dirs"), doc.get("fetch"))
    launcher = doc.get("launcher")
    if launcher is not None:
        for key in ("file", "grid", "block", "smem_dynamic", "template", "tma_args", "cluster"):
            if key in doc:
                _fail(path, key, "a launcher spec has none: its .cu is `launcher:` and it launches its kernels itself")
        launcher = source_file(path, launcher, "launcher")
    libs = doc.get("libs")
    if libs is not None:
        if launcher is None:
            _fail(path, "libs", "only a launcher links libraries (a kernel is built as a cubin)")
        if not isinstance(libs, list) or not all(isinstance(x, str) and _LIB.fullmatch(x) and len(x) <= 100 for x in libs):
            _fail(path, "libs", "expected a list of library names (cublas, cublasLt: linked as -lNAME)")
    return tuple(by_param), BuildFields(tuple(include_dirs), check_flags(path, "flags", doc.get("flags")), tuple(literal),
                                        launcher, tuple(libs or ()))
