"""nvcc builds: one translation unit per bound kernel, compiled to a cubin for an exact arch, cached on disk.

Templates are instantiated by taking the kernel's address, never by spelling its signature, so any kernel
that takes the eight standard arguments builds (non-const pointers, other parameter names) as it is written.
The cache key is the wrapper, the text of the kernel file and of every header it includes (by a quoted path
beside it, or found in the spec's include_dirs), the flags (defines, include dirs and the spec's own flags among
them), the compiler's version and the arch; GEMMPROF_CACHE overrides ~/.cache/gemmprof.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gemmprof.catalog.binding import BoundKernel
from gemmprof.catalog.sources import source_text
from gemmprof.errors import ToolNotFoundError

BASE_FLAGS = ("-O3", "-std=c++17")


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    cand = Path(home) / "bin" / "nvcc"
    return str(cand) if cand.exists() else None


def nvcc_path() -> str:
    found = find_nvcc()
    if not found:
        raise ToolNotFoundError("nvcc", "/usr/local/cuda/bin", "install the CUDA toolkit to compile kernels offline")
    return found


@cache
def nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out) or re.search(r"release (\d+\.\d+)", out)
    return m[1] if m else "unknown"


def wrapper_source(kernel: BoundKernel) -> str:
    """Include the kernel; take the address of the template instance the bound parameters name."""
    spec = kernel.spec
    lines = ["#include <cuda_fp16.h>", f'#include "{spec.file}"']
    if spec.template:
        args = ", ".join(str(a) for a in kernel.template_args)
        lines.append(f"static void* gemmprof_instance __attribute__((unused)) = (void*)&{spec.entry}<{args}>;")
    return "\n".join(lines) + "\n"


def target_arch(kernel: BoundKernel, arch: str) -> str:
    """sm_90 -> sm_90a where the spec asks for the arch-specific target (arch_suffix: a, or targets: [sm_90a])."""
    extra = kernel.spec.extra
    if extra.get("arch_suffix") == "a" or f"{arch}a" in (extra.get("targets") or ()):
        return arch if arch.endswith("a") else f"{arch}a"
    return arch


def flags_for(kernel: BoundKernel, arch: str) -> list[str]:
    compute = arch.replace("sm_", "compute_")
    return [*BASE_FLAGS, "-cubin", f"-gencode=arch={compute},code={arch}", "-Xptxas", "-v",
            *kernel.define_flags, *kernel.spec.compile_options, *spec_flags(kernel)]


def spec_flags(kernel: BoundKernel) -> list[str]:
    """The spec's include folders (its own first) and its extra nvcc flags."""
    fields = kernel.spec.build_fields
    return [f"-I{kernel.spec.file.parent}", *(f"-I{d}" for d in fields.include_dirs), *fields.flags]


def cache_dir() -> Path:
    root = os.environ.get("GEMMPROF_CACHE") or Path.home() / ".cache" / "gemmprof"
    return Path(root) / "cubin"


@dataclass(frozen=True)
class NvccOutput:
    ok: bool
    arch: str
    flags: tuple[str, ...]
    version: str
    log: str
    cubin: Path | None
    cached: bool
    seconds: float | None = None  # nvcc's wall time; None for a build read from the cache


def _cache_entry(kernel: BoundKernel, arch: str, nvcc: str):
    """(arch, version, wrapper, flags, key, cubin path, meta path) of the kernel's build: the key covers the
    wrapper, the source with every header it includes, the flags, the compiler's version and the arch."""
    arch = target_arch(kernel, arch)
    version = nvcc_version(nvcc)
    wrapper = wrapper_source(kernel)
    flags = flags_for(kernel, arch)
    key_text = json.dumps([wrapper, source_text(kernel.spec.file, include_dirs=kernel.spec.build_fields.include_dirs),
                           flags, version, arch])
    key = hashlib.sha256(key_text.encode()).hexdigest()[:32]
    cdir = cache_dir()
    return arch, version, wrapper, flags, key, cdir / f"{key}.cubin", cdir / f"{key}.json"


def is_cached(kernel: BoundKernel, arch: str, nvcc: str | None = None) -> bool:
    """Whether compile_cubin would find this build in the cache (nothing to compile)."""
    *_, cubin, meta = _cache_entry(kernel, arch, nvcc or nvcc_path())
    return cubin.is_file() and meta.is_file()


def compile_cubin(kernel: BoundKernel, arch: str, nvcc: str | None = None, use_cache: bool = True) -> NvccOutput:
    nvcc = nvcc or nvcc_path()
    arch, version, wrapper, flags, key, cubin, meta = _cache_entry(kernel, arch, nvcc)
    cdir = cubin.parent
    if use_cache and cubin.is_file() and meta.is_file():
        log = json.loads(meta.read_text()).get("log", "")
        return NvccOutput(True, arch, tuple(flags), version, log, cubin, True)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / f"{kernel.spec.name}.cu", Path(tmp) / "k.cubin"
        src.write_text(wrapper)
        t0 = time.perf_counter()
        proc = subprocess.run([nvcc, *flags, "-o", str(out), str(src)], capture_output=True, text=True, check=False)
        seconds = round(time.perf_counter() - t0, 3)
        log = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0 or not out.is_file():
            return NvccOutput(False, arch, tuple(flags), version, log, None, False, seconds)
        if not use_cache:
            cdir = Path(tempfile.mkdtemp(prefix="gemmprof-cubin-"))
            cubin, meta = cdir / f"{key}.cubin", cdir / f"{key}.json"
        try:
            cdir.mkdir(parents=True, exist_ok=True)
            _atomic_write(cubin, out.read_bytes())
            _atomic_write(meta, json.dumps({"log": log, "flags": flags, "version": version}).encode())
        except OSError:  # a read-only cache: keep the cubin in a private temporary folder instead
            cdir = Path(tempfile.mkdtemp(prefix="gemmprof-cubin-"))
            cubin = cdir / "k.cubin"
            cubin.write_bytes(out.read_bytes())
    return NvccOutput(True, arch, tuple(flags), version, log, cubin, False, seconds)


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
