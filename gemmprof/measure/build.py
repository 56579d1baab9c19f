"""Compile kernels: with nvcc to a cubin (the default wherever nvcc is found; offline too, for resource usage,
SASS facts and CI) or with NVRTC through CuPy (the fallback, and a choice), for launch through CuPy."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from gemmprof.catalog.binding import BoundKernel
from gemmprof.errors import GemmprofError, InputError
from gemmprof.measure import nvcc as nvccmod
from gemmprof.measure import sass as sassmod
from gemmprof.results.run import BuildInfo, Resources

BASE_OPTIONS = ("-std=c++17",)
COMPILERS = ("nvcc", "nvrtc")


@dataclass(frozen=True)
class BuildResult:
    name: str
    arch: str
    ok: bool
    resources: Resources | None
    log: str
    build: BuildInfo | None = None
    cubin: object = None  # pathlib.Path of the built cubin
    skipped: bool = False  # the spec builds only for other targets (e.g. sm_90a): nothing was compiled
    kernel: object = None  # the BoundKernel built (a launcher gives one row per kernel in its .cu)
    error: str = ""  # one line, when it compiled but is unusable (e.g. no kernel `entry` names): not nvcc's log


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


def nvcc_build(kernel: BoundKernel, arch: str, nvcc: str | None = None, use_cache: bool = True) -> BuildResult:
    """Build the cubin offline; resources from ptxas -v, SASS facts where a disassembler is installed."""
    nvcc = nvcc or nvccmod.nvcc_path()
    out = nvccmod.compile_cubin(kernel, arch, nvcc, use_cache=use_cache)
    res = parse_ptxas(out.log) if out.ok else None
    info = None
    if out.ok and out.cubin is not None:
        symbol, missing = _symbol(out.cubin, kernel)
        if missing:  # it compiled, but the kernel `entry` names is not in it: nothing could be launched
            return BuildResult(kernel.variant_name, out.arch, False, None, out.log, kernel=kernel, error=missing)
        info = BuildInfo("nvcc", out.version, out.flags, out.arch, nvccmod.sha256_file(out.cubin),
                         symbol, sass=sassmod.facts(out.cubin, keep=True), compile_s=out.seconds)
    return BuildResult(kernel.variant_name, out.arch, out.ok and res is not None, res, out.log, info, out.cubin,
                       kernel=kernel)


def _symbol(cubin, kernel: BoundKernel) -> tuple[str | None, str | None]:
    """(the entry's symbol in the cubin, None) or (None, one line naming the spec's entry and the file)."""
    from gemmprof.measure.cubin import entry_symbol, function_symbols, plain_name

    spec = kernel.spec
    try:
        symbols = function_symbols(cubin.read_bytes())
    except GemmprofError as exc:
        return None, f"{spec.path}: entry: the cubin nvcc built from {spec.file} is unreadable ({exc})"
    try:
        return entry_symbol(symbols, spec.entry, kernel.template_args), None
    except GemmprofError as exc:
        if symbols and "matches several" in str(exc):
            return None, f"{spec.path}: entry: {exc}"
        names = ", ".join(sorted({plain_name(s) for s in symbols})) or "none"
        return None, f"{spec.path}: entry: no kernel {kernel.name_expression!r} in {spec.file} (its kernels: {names})"


def builds_for(kernel: BoundKernel, arch: str) -> bool:
    """Whether the kernel builds for `arch`: any arch, unless its spec names targets (sm_90a: sm_90's a-variant)."""
    targets = kernel.spec.targets
    return not targets or any(t.rstrip("a") == arch.rstrip("a") for t in targets)


@dataclass
class CompiledKernel:
    """A kernel compiled through CuPy, with the resource usage the driver reports for it."""

    kernel: BoundKernel
    function: object  # cupy.RawKernel-like: callable(grid, block, args, shared_mem=)
    resources: Resources
    build: BuildInfo | None = None


def choose_compiler(kernel: BoundKernel, requested: str | None) -> tuple[str, str]:
    """(compiler, why): --compiler wins, then the spec's pin, then nvcc where it is found, else NVRTC."""
    if requested:
        if requested not in COMPILERS:
            raise InputError(f"--compiler {requested!r}: choose nvcc or nvrtc")
        return requested, "--compiler"
    if kernel.spec.compiler:
        return kernel.spec.compiler, f"pinned by the spec: {kernel.spec.compiler_reason}"
    if nvccmod.find_nvcc():
        return "nvcc", "default (nvcc found)"
    return "nvrtc", "fallback: nvcc not found"


def device_arch() -> str:
    import cupy

    return f"sm_{cupy.cuda.Device().compute_capability}"


def device_sms() -> int:
    """Device 0's multiprocessor count: the SMS of the spec expressions, read as Runner.device reads it."""
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])


def compile_for_launch(kernel: BoundKernel, compiler: str | None = None, ahead=None) -> CompiledKernel:
    """`ahead`: a compile_pool.CompileAhead whose nvcc build of this kernel is used when it has one."""
    import time

    which, why = choose_compiler(kernel, compiler)
    t0 = time.perf_counter()
    if which == "nvcc":
        compiled = nvcc_load(kernel, ahead.get(kernel) if ahead is not None else None)
    else:
        compiled = cupy_compile(kernel)
    load_s = round(time.perf_counter() - t0, 3)
    compiled.build = BuildInfo(**{**compiled.build.__dict__, "reason": why, "load_s": load_s})
    return compiled


def nvcc_load(kernel: BoundKernel, built: BuildResult | None = None) -> CompiledKernel:
    """Build with nvcc for this device's exact arch (cached), unless `built` is that build already, and load the
    cubin with CuPy."""
    import cupy

    result = built if built is not None else nvcc_build(kernel, device_arch())
    if result.error:
        raise CompileError(result.error)
    if not result.ok or result.build is None:
        raise CompileError(f"{kernel.spec.name}: nvcc failed:\n{result.log}")
    cubin = result.cubin
    symbol = result.build.symbol
    if symbol is None:
        raise CompileError(f"{kernel.spec.name}: no kernel {kernel.name_expression} in the cubin nvcc built")
    try:
        func = cupy.RawModule(path=str(cubin)).get_function(symbol)
        regs = func.num_regs
    except Exception as exc:  # CuPy raises several driver error types here
        raise CompileError(f"{kernel.spec.name}: loading the cubin failed: {exc}") from None
    ptx = result.resources
    res = Resources(registers=regs, static_smem=func.shared_size_bytes, spill_stores=ptx.spill_stores,
                    spill_loads=ptx.spill_loads, stack_frame=ptx.stack_frame, local_bytes=func.local_size_bytes)
    return CompiledKernel(kernel, func, res, result.build)


def cupy_compile(kernel: BoundKernel) -> CompiledKernel:
    import cupy

    spec = kernel.spec
    try:
        code = spec.file.read_text(encoding="utf-8")
    except OSError as exc:
        raise CompileError(f"{spec.file}: cannot read ({exc.strerror})") from None
    options = (*BASE_OPTIONS, *kernel.define_flags, *spec.compile_options, *nvccmod.spec_flags(kernel))
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
    return CompiledKernel(kernel, func, res, _nvrtc_info(kernel, code, options))


def _nvrtc_info(kernel: BoundKernel, code: str, options: tuple[str, ...]) -> BuildInfo:
    """NVRTC's version and flags (CuPy adds -ftz=true and the arch); the cubin's hash and SASS where CuPy hands
    the cubin back (compile_using_nvrtc, recompiled with the same options; best effort)."""
    import cupy

    arch = device_arch()
    try:
        version = ".".join(str(v) for v in cupy.cuda.nvrtc.getVersion())
    except Exception:
        version = "unknown"
    flags = (*options, "-ftz=true", f"-arch={arch} (CuPy)")
    if kernel.spec.backend == "nvcc":
        return BuildInfo("nvcc (CuPy backend)", version, flags, arch)
    sha = sass = None
    try:
        import tempfile
        from pathlib import Path

        from cupy.cuda import compiler as cc

        out = cc.compile_using_nvrtc(code, (*options, "-ftz=true"), None, name_expressions=[kernel.name_expression])
        binary = out[0] if isinstance(out, tuple) else out
        if isinstance(binary, bytes) and binary[:4] == b"\x7fELF":
            sha = hashlib.sha256(binary).hexdigest()
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "nvrtc.cubin"
                path.write_bytes(binary)
                sass = sassmod.facts(path)
    except Exception:  # private CuPy API: no hash then, never a failed run
        pass
    return BuildInfo("nvrtc", version, flags, arch, sha, kernel.name_expression, sass=sass)
