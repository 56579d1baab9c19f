"""Compile kernels: offline with nvcc (any machine, for resource usage and CI), or for launch through CuPy."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gemmprof.catalog.spec import BoundKernel
from gemmprof.errors import GemmprofError, ToolNotFoundError
from gemmprof.results.run import Resources

ABI = {
    "fp32": "int, int, int, float, const float*, const float*, float, float*",
    "fp16": "int, int, int, float, const __half*, const __half*, float, float*",
}
BASE_OPTIONS = ("-std=c++17",)


@dataclass(frozen=True)
class BuildResult:
    name: str
    arch: str
    ok: bool
    resources: Resources | None
    log: str



class CompileError(GemmprofError):
    pass


_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas(log: str) -> Resources | None:
    """Registers, static shared memory and spills of the (single) kernel in a `-Xptxas -v` log."""
    used = [m for m in _USED.finditer(log)]
    if not used:
        return None
    regs = max(int(m[1]) for m in used)
    smem = max(int(m[2] or 0) for m in used)
    spills = [tuple(int(x) for x in m.groups()) for m in _SPILL.finditer(log)] or [(0, 0, 0)]
    stack, st, ld = (max(s[i] for s in spills) for i in range(3))
    return Resources(registers=regs, static_smem=smem, spill_stores=st, spill_loads=ld, stack_frame=stack)


def wrapper_source(kernel: BoundKernel) -> str:
    """A translation unit that includes the kernel and instantiates its template with the bound parameters."""
    spec = kernel.spec
    lines = ["#include <cuda_fp16.h>", f'#include "{spec.file}"']
    if spec.template:
        args = ", ".join(str(a) for a in kernel.template_args)
        lines.append(f"template __global__ void {spec.entry}<{args}>({ABI[spec.dtype]});")
    return "\n".join(lines) + "\n"


def nvcc_path() -> str:
    found = shutil.which("nvcc")
    if found:
        return found
    for cand in ("/usr/local/cuda/bin/nvcc",):
        if Path(cand).exists():
            return cand
    raise ToolNotFoundError("nvcc", "/usr/local/cuda/bin", "install the CUDA toolkit to compile kernels offline")


def nvcc_build(kernel: BoundKernel, arch: str, nvcc: str | None = None, workdir: Path | None = None) -> BuildResult:
    nvcc = nvcc or nvcc_path()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        src = Path(tmp) / f"{kernel.spec.name}.cu"
        src.write_text(wrapper_source(kernel))
        cmd = [nvcc, *BASE_OPTIONS, f"-arch={arch}", "-cubin", "-Xptxas", "-v", *kernel.define_flags,
               *kernel.spec.compile_options, f"-I{kernel.spec.file.parent}", "-o", str(Path(tmp) / "k.cubin"), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    log = (proc.stdout + proc.stderr).strip()
    res = parse_ptxas(log) if proc.returncode == 0 else None
    return BuildResult(kernel.spec.name, arch, proc.returncode == 0 and res is not None, res, log)


def nvcc_build_all(kernels: list[BoundKernel], archs: list[str], jobs: int = 2, progress=None) -> list[BuildResult]:
    nvcc = nvcc_path()
    tasks = [(k, a) for a in archs for k in kernels]
    out: list[BuildResult | None] = [None] * len(tasks)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(nvcc_build, k, a, nvcc): i for i, (k, a) in enumerate(tasks)}
        for fut, i in futures.items():
            out[i] = fut.result()
            if progress:
                progress()
    return [r for r in out if r is not None]


@dataclass
class CompiledKernel:
    """A kernel compiled through CuPy, with the resource usage the driver reports for it."""

    kernel: BoundKernel
    function: object  # cupy.RawKernel-like: callable(grid, block, args, shared_mem=)
    resources: Resources


def cupy_compile(kernel: BoundKernel) -> CompiledKernel:
    import cupy

    spec = kernel.spec
    try:
        code = spec.file.read_text(encoding="utf-8")
    except OSError as exc:
        raise CompileError(f"{spec.file}: cannot read ({exc.strerror})") from None
    options = (*BASE_OPTIONS, f"-I{spec.file.parent}", *kernel.define_flags, *spec.compile_options)
    try:
        if spec.backend == "nvcc":
            module = cupy.RawModule(code=code, options=options, backend="nvcc")
            func = module.get_function(spec.entry)
        else:
            # name expressions give the lowered (mangled) name of templates and plain C++ kernels alike
            expression = kernel.name_expression
            module = cupy.RawModule(code=code, options=options, name_expressions=[expression])
            func = module.get_function(expression)
        regs = func.num_regs
    except cupy.cuda.compiler.CompileException as exc:
        raise CompileError(f"{spec.name}: compilation failed:\n{exc.get_message() if hasattr(exc, 'get_message') else exc}") from None
    except Exception as exc:  # CuPy raises several driver/NVRTC error types here
        raise CompileError(f"{spec.name}: compilation failed: {exc}") from None
    res = Resources(registers=regs, static_smem=func.shared_size_bytes, spill_stores=0, spill_loads=0,
                    stack_frame=0, local_bytes=func.local_size_bytes)
    return CompiledKernel(kernel, func, res)
