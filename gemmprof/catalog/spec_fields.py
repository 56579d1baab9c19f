"""Fields of a kernel spec that must have one shape: names, lists of names, the kernel's source file."""

from __future__ import annotations

import os
from pathlib import Path

from gemmprof.catalog.nvcc_flags import check_path
from gemmprof.errors import SpecError
from gemmprof.results.files import file_kind

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


def source_file(path, node, key: str = "file") -> Path:
    name = text(path, key, node)
    if len(name) > 255 or "\0" in name:
        _fail(path, key, f"{name[:40]!r}... is not a usable file name")
    cu = (path.parent / name).resolve()
    folder = Path(path).parent.resolve()
    if not cu.is_relative_to(folder) and os.environ.get(SOURCES_ANYWHERE) != "1":
        # a spec names its source beside it; a path that leaves the folder would compile (and echo in build
        # errors) whatever file it names, e.g. a spec downloaded with file: ../../etc/shadow
        _fail(path, "file", f"{name[:60]!r} is outside the spec's folder {folder}; keep the source beside the "
                            f"spec or below it (or set {SOURCES_ANYWHERE}=1 to allow it)")
    kind = file_kind(cu)
    if kind != "file":
        _fail(path, key, f"{cu} {kind if kind.startswith(('does not', 'cannot')) else 'is ' + _a(kind)}, not a "
                         "source file")
    check_path(path, key, cu)  # the wrapper #includes it and nvcc gets its folder as -I
    return cu


def rejoin(items: list) -> list:
    """YAML's flow lists split `[cdiv(M, 32), 1]` at the comma inside the call: glue such pieces back together."""
    out: list = []
    depth = 0
    for item in items:
        if depth > 0 and out:
            out[-1] = f"{out[-1]}, {item}"
        else:
            out.append(item)
        if isinstance(item, str):
            depth += item.count("(") - item.count(")")
    return out


def _a(kind: str) -> str:
    return "a folder" if kind == "folder" else kind


# every key a spec may have (docs/kernel-spec.md); anything else is refused, with the key probably meant
SPEC_KEYS = ("id", "name", "title", "description", "source", "dtype", "layout", "file", "entry", "backend",
             "template", "defines", "params", "derived", "constraints", "shape_constraints", "grid", "block",
             "smem_dynamic", "traffic", "compile_options", "aliases", "accesses", "tune", "compiler",
             "compiler_reason", "reads_c", "dtypes", "dtype_define", "tma_args", "cluster", "arch_suffix", "targets",
             "args", "c_dtype", "workspace", "ld", "include_dirs", "fetch", "flags", "launcher", "libs", "decomposition",
             "note", "specialize", "c_dtypes", "c_dtype_define", "scales", "scales_define", "scale_shapes")
NESTED_KEYS = {"layout": ("A", "B", "C"), "source": ("document", "section"),
               "traffic": ("BM", "BN", "TM", "TN", "smem")}


def check_keys(path, where: str, node: dict, known, error: type[Exception] = SpecError) -> None:
    """Refuse a key the format does not have (a typo such as `blok:`, or a key of a newer version), naming the
    key that was probably meant; `error`: the error of the file's kind (a kernel spec's, a GPU spec sheet's)."""
    import difflib

    for key in node:
        if key in known:
            continue
        shown = str(key)[:40]
        close = difflib.get_close_matches(shown, [str(k) for k in known], n=1)
        hint = f"did you mean {close[0]}?" if close else f"known keys: {', '.join(sorted(map(str, known)))}"
        raise error(f"{path}: {f'{where}.{shown}' if where else shown}: unknown key ({hint})")
