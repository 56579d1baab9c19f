"""Spec fields about how a kernel or host launcher is built: `include_dirs` (and `fetch`, how to fetch those in
gemmprof's cache), `flags`, literal `defines`, `launcher` and `libs` (docs/kernel-spec.md). Every flag is one
argument to nvcc, never a shell word."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from gemmprof.catalog.paths import cache_root
from gemmprof.catalog.spec_fields import source_file
from gemmprof.errors import SpecError

# options gemmprof sets itself (output, mode, target): a spec that set them would build something else
RESERVED = ("-o", "--output-file", "-cubin", "--cubin", "-ptx", "--ptx", "-fatbin", "--fatbin", "-c", "--compile",
            "-shared", "--shared", "-lib", "--lib", "-E", "--preprocess", "-M", "-run", "--run", "-gencode",
            "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code", "-odir", "--output-directory",
            "-dryrun", "--dryrun", "-I", "--include-path", "-D", "--define-macro", "-l", "--library")
_DEFINE = re.compile(r"^([A-Za-z_]\w*)=(.*)$")
_LIB = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
CACHE_PLACEHOLDER = "${GEMMPROF_CACHE}"  # the one placeholder an include folder may start with


@dataclass(frozen=True)
class BuildFields:
    include_dirs: tuple[Path, ...] = ()
    flags: tuple[str, ...] = ()
    define_literals: tuple[tuple[str, str], ...] = ()  # -DNAME=VALUE not tied to a parameter
    launcher: Path | None = None  # a host launcher's .cu: `entry` is its extern "C" function
    libs: tuple[str, ...] = ()  # linked into a launcher's shared library (-lNAME)


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def _flags(path, node) -> tuple[str, ...]:
    if node is None:
        return ()
    if not isinstance(node, list):
        _fail(path, "flags", "expected a list of nvcc options, one argument each (e.g. [-maxrregcount=128])")
    for i, flag in enumerate(node):
        key = f"flags[{i}]"
        if not isinstance(flag, str) or not flag or any(c.isspace() or c == "\0" for c in flag):
            _fail(path, key, f"{str(flag)[:40]!r}: one option per item, without spaces (-maxrregcount=128, or "
                             "-Xptxas then -O3 as two items)")
        if not flag.startswith("-") and (i == 0 or not str(node[i - 1]).startswith("-")):
            _fail(path, key, f"{flag[:40]!r} is not an option (options start with -; a value follows its option)")
        name = flag.split("=", 1)[0]
        glued = flag.startswith(("-I", "-D")) or (flag.startswith("-l") and not flag.startswith("-lineinfo"))
        if name in RESERVED or glued:
            _fail(path, key, f"{flag[:40]!r}: gemmprof sets this itself (use include_dirs, defines or libs)")
    return tuple(node)


def _include_dirs(path: Path, dirs, fetch) -> list[Path]:
    """The spec's include folders: relative to the spec, or in gemmprof's cache (`${GEMMPROF_CACHE}/...`, for
    headers fetched at the moment of use; `fetch:` says how, and is named where such a folder is missing)."""
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
        rest = d[len(CACHE_PLACEHOLDER):] if d.startswith(CACHE_PLACEHOLDER) else None
        if "${" in (d if rest is None else rest) or (rest is not None and rest[:1] not in ("", "/")):
            _fail(path, key, f"{d[:80]!r}: only a leading {CACHE_PLACEHOLDER}/ is expanded (gemmprof's cache "
                             "folder: $GEMMPROF_CACHE, else ~/.cache/gemmprof)")
        where = (path.parent / d) if rest is None else cache_root() / rest.lstrip("/")
        try:
            folder = where.resolve()
            found = "\0" not in d and len(d) < 4096 and folder.is_dir()
        except (OSError, ValueError):
            found = False
        if found:
            out.append(folder)
        elif rest is None:
            _fail(path, key, f"{str(where)[:200]} is not a folder")
        else:
            how = f"run `{fetch.strip()}`" if fetch else "fetch what it holds first"
            _fail(path, key, f"{str(where)[:200]} is not there: it is fetched, not shipped ({how})")
    return out


def parse_build_fields(path: Path, doc: dict, params: dict) -> tuple[tuple[str, ...], BuildFields]:
    """(the parameters passed as -D, BuildFields). `defines` lists parameter names, or NAME=VALUE for a macro of
    your own; a mapping {NAME: VALUE} is all literal."""
    node = doc.get("defines")
    by_param: list[str] = []
    literal: list[tuple[str, str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str) or not k.isidentifier() or isinstance(v, (dict, list)):
                _fail(path, f"defines.{str(k)[:40]}", "expected NAME: VALUE (a macro name and a number or word)")
            literal.append((k, str(v).lower() if isinstance(v, bool) else str(v)))
    elif node is not None:
        if not isinstance(node, list):
            _fail(path, "defines", "expected a list of parameter names and NAME=VALUE macros")
        for i, item in enumerate(node):
            m = _DEFINE.match(item) if isinstance(item, str) else None
            if isinstance(item, str) and item in params:
                by_param.append(item)
            elif m and "\0" not in item and "\n" not in item:
                literal.append((m[1], m[2]))
            else:
                _fail(path, f"defines[{i}]", f"{str(item)[:40]!r} is not a parameter (a macro of your own is "
                                             "NAME=VALUE, e.g. USE_FAST=1)")
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
        if not isinstance(libs, list) or not all(isinstance(x, str) and _LIB.match(x) for x in libs):
            _fail(path, "libs", "expected a list of library names (cublas, cublasLt: linked as -lNAME)")
    return tuple(by_param), BuildFields(tuple(include_dirs), _flags(path, doc.get("flags")), tuple(literal),
                                        launcher, tuple(libs or ()))
