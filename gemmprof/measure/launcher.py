"""Host launchers (docs/kernel-spec.md): an `extern "C"` host function built by nvcc into a cached shared library,
loaded with ctypes and called with the run's stream. It may launch any number of kernels or call a library.

The library is one translation unit: the launcher's .cu and a shim that reads the CUDA runtime's last error.
nvcc links that runtime statically into the library, so only code inside it sees the errors of the launches it
made: gemmprof asks the shim after every call, and a non-zero return or a CUDA error fails the variant.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gemmprof.catalog.binding import BoundKernel
from gemmprof.errors import GemmprofError
from gemmprof.measure import nvcc as nvccmod

SHIM = """
#include <cuda_runtime.h>
extern "C" int gemmprof_last_error(void) { return (int)cudaGetLastError(); }
extern "C" const char* gemmprof_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }
"""


class LauncherError(GemmprofError):
    """A launcher's library does not build, does not load, or lacks its entry function."""


class LaunchFailed(GemmprofError):
    """A launcher's call returned non-zero, or a launch it made failed."""


@dataclass(frozen=True)
class LibraryBuild:
    ok: bool
    arch: str
    flags: tuple[str, ...]
    version: str
    log: str
    library: Path | None


def wrapper_source(kernel: BoundKernel) -> str:
    return f'#include "{kernel.spec.launcher}"\n{SHIM}'


def library_flags(kernel: BoundKernel, arch: str) -> list[str]:
    """nvcc's flags before the source (the libraries to link come after it)."""
    compute = arch.replace("sm_", "compute_")
    return [*nvccmod.BASE_FLAGS, "-shared", "-Xcompiler", "-fPIC", f"-gencode=arch={compute},code={arch}",
            *kernel.define_flags, *kernel.spec.compile_options, *nvccmod.spec_flags(kernel)]


def build_library(kernel: BoundKernel, arch: str, nvcc: str | None = None, use_cache: bool = True) -> LibraryBuild:
    """The launcher's shared library for `arch`, cached like cubins (source, headers, flags, nvcc, arch)."""
    nvcc = nvcc or nvccmod.nvcc_path()
    arch = nvccmod.target_arch(kernel, arch)
    version = nvccmod.nvcc_version(nvcc)
    wrapper, flags = wrapper_source(kernel), library_flags(kernel, arch)
    libs = [f"-l{name}" for name in kernel.spec.build_fields.libs]
    source = nvccmod.source_text(kernel.spec.launcher, include_dirs=kernel.spec.build_fields.include_dirs)
    key = hashlib.sha256(json.dumps(["shared", wrapper, source, flags, libs, version, arch]).encode()).hexdigest()[:32]
    cdir = nvccmod.cache_dir().parent / "lib"
    lib = cdir / f"{key}.so"
    if use_cache and lib.is_file():
        return LibraryBuild(True, arch, tuple(flags + libs), version, "", lib)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / f"{kernel.spec.name}_launcher.cu", Path(tmp) / "lib.so"
        src.write_text(wrapper)
        proc = subprocess.run([nvcc, *flags, "-o", str(out), str(src), *libs], capture_output=True, text=True,
                              check=False)
        log = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 or not out.is_file():
            return LibraryBuild(False, arch, tuple(flags + libs), version, log, None)
        if not use_cache:
            cdir = Path(tempfile.mkdtemp(prefix="gemmprof-lib-"))
            lib = cdir / f"{key}.so"
        try:
            cdir.mkdir(parents=True, exist_ok=True)
            nvccmod._atomic_write(lib, out.read_bytes())
        except OSError:  # a read-only cache: a private temporary folder instead
            lib = Path(tempfile.mkdtemp(prefix="gemmprof-lib-")) / "lib.so"
            lib.write_bytes(out.read_bytes())
    return LibraryBuild(True, arch, tuple(flags + libs), version, log, lib)


def exported(library: Path) -> list[str]:
    """The functions a shared library exports (its dynamic symbol table), read without loading it."""
    from gemmprof.measure.cubin import function_symbols

    try:
        return function_symbols(Path(library).read_bytes(), table=11)
    except (OSError, GemmprofError, IndexError, ValueError):
        return []


def missing_entry(library: Path, entry: str, source: str = "") -> str | None:
    """Why `entry` cannot be called from `library`, or None. The hint names the exported functions that
    `source` (the launcher's text) mentions, so the CUDA runtime linked in does not drown them."""
    names = exported(library)
    if entry in names:
        return None
    words = set(re.findall(r"\w+", source))
    names = [n for n in names if n in words and not n.startswith("gemmprof_")] if source else names
    close = difflib.get_close_matches(entry, names, n=1)
    hint = f"did you mean {close[0]}?" if close else f"it exports {', '.join(names[:8]) or 'no C functions'}"
    return (f"no extern \"C\" function {entry!r} in the launcher's library ({hint}; a C++ function needs "
            "extern \"C\" to keep its name)")


class Launcher:
    """A loaded launcher: call(argtypes, values) runs it once and raises LaunchFailed on any error."""

    def __init__(self, library: Path, entry: str):
        import ctypes

        try:
            self._lib = ctypes.CDLL(str(library))
        except OSError as exc:
            raise LauncherError(f"cannot load the launcher's library {library}: {exc}") from None
        try:
            self._fn = getattr(self._lib, entry)
        except AttributeError:
            raise LauncherError(f"{library}: no function {entry!r}") from None
        self._fn.restype = ctypes.c_int
        self._last_error = getattr(self._lib, "gemmprof_last_error", None)
        if self._last_error is not None:
            self._last_error.restype = ctypes.c_int
            self._error_string = self._lib.gemmprof_error_string
            self._error_string.restype, self._error_string.argtypes = ctypes.c_char_p, [ctypes.c_int]
        self.entry = entry

    def call(self, argtypes: list, values: list) -> None:
        if self._fn.argtypes != tuple(argtypes):
            self._fn.argtypes = argtypes
        rc = self._fn(*values)
        err = self._last_error() if self._last_error is not None else 0
        if err:
            text = (self._error_string(err) or b"").decode(errors="replace")
            raise LaunchFailed(f"{self.entry}: CUDA error {err} ({text}) in a launch it made")
        if rc != 0:
            raise LaunchFailed(f"{self.entry} returned {rc} (non-zero: an error)")


_LOADED: dict[tuple[str, str], Launcher] = {}


def prepare(kernel: BoundKernel, shape, arch: str, lds: dict | None = None):
    """(launch_for(problem, out) -> a no-argument call of the launcher on the problem's operands writing C into
    `out`, BuildInfo) on the current device; the call passes the current CuPy stream, on which the timing's events
    are recorded."""
    import cupy

    from gemmprof.catalog.abi import ctypes_call
    from gemmprof.measure.problem import scale_buffers, workspace_buffer
    from gemmprof.results.run import BuildInfo

    built = build_library(kernel, arch)
    if not built.ok or built.library is None:
        raise LauncherError(f"{kernel.spec.name}: nvcc failed to build the launcher:\n{built.log}")
    why = missing_entry(built.library, kernel.spec.entry, kernel.spec.launcher.read_text(errors="replace"))
    if why:
        raise LauncherError(f"{kernel.spec.launcher}: {why}")
    key = (str(built.library), kernel.spec.entry)
    if key not in _LOADED:
        _LOADED[key] = Launcher(built.library, kernel.spec.entry)
    launcher, spec = _LOADED[key], kernel.spec
    workspace = workspace_buffer(kernel, shape)  # shared by the input sets: one call at a time uses it

    def launch_for(problem, out):
        lead = lds or {}
        pointers = {"A": problem.operand("A", spec.layout["A"], lead.get("lda")).data.ptr,
                    "B": problem.operand("B", spec.layout["B"], lead.get("ldb")).data.ptr, "C": out.data.ptr,
                    "workspace": workspace.data.ptr if workspace is not None else None,
                    "stream": cupy.cuda.get_current_stream().ptr, **scale_buffers(problem, pointers=True)}
        argtypes, values = ctypes_call(spec.abi, shape, spec.layout, problem.alpha, problem.beta, pointers, lds)
        return lambda: launcher.call(argtypes, values)

    info = BuildInfo("nvcc", built.version, built.flags, built.arch, nvccmod.sha256_file(built.library),
                     spec.entry, reason="a host launcher: nvcc -shared, called through ctypes")
    return launch_for, info
