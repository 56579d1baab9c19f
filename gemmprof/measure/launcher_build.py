"""`gemmprof build` for a host launcher: every kernel in its .cu gets a row (registers, spills, SASS mix), from
the cubin of its device code, and the shared library is built and searched for the entry function."""

from __future__ import annotations

import re

from gemmprof.catalog.binding import BoundKernel
from gemmprof.measure import nvcc as nvccmod
from gemmprof.measure import sass as sassmod
from gemmprof.measure.cubin import plain_name
from gemmprof.results.run import BuildInfo

NO_KERNELS = ("its .cu defines no __global__ kernel of its own (it launches library kernels): no registers or SASS "
              "to report; the library built and exports {entry}")
_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+),", re.M)


def ptxas_by_function(log: str) -> dict[str, str]:
    """The `-Xptxas -v` log cut into one piece per kernel, by mangled name."""
    starts = [(m.start(), m[1]) for m in _ENTRY.finditer(log)]
    return {name: log[pos:starts[i + 1][0] if i + 1 < len(starts) else len(log)]
            for i, (pos, name) in enumerate(starts)}


def listing_by_function(listing: str) -> dict[str, str]:
    """An nvdisasm listing cut into one piece per function (each starts at address 0)."""
    starts = [(m.start(), m[1]) for m in _SECTION.finditer(listing)]
    return {name: listing[pos:starts[i + 1][0] if i + 1 < len(starts) else len(listing)]
            for i, (pos, name) in enumerate(starts)}


def launcher_builds(kernel: BoundKernel, arch: str, nvcc: str | None = None, use_cache: bool = True) -> list:
    """One BuildResult per kernel the launcher's .cu holds; a failed library build or a missing entry function
    is one failed row naming it."""
    from gemmprof.measure.build import BuildResult, parse_ptxas
    from gemmprof.measure.launcher import build_library, missing_entry

    nvcc = nvcc or nvccmod.nvcc_path()
    name = kernel.variant_name
    lib = build_library(kernel, arch, nvcc, use_cache)
    if not lib.ok or lib.library is None:
        return [BuildResult(name, lib.arch, False, None, lib.log, kernel=kernel)]
    why = missing_entry(lib.library, kernel.spec.entry, kernel.spec.launcher.read_text(errors="replace"))
    if why:
        return [BuildResult(name, lib.arch, False, None, f"{kernel.spec.launcher}: {why}", kernel=kernel)]
    out = nvccmod.compile_cubin(kernel, arch, nvcc, use_cache=use_cache)
    if not out.ok or out.cubin is None:
        return [BuildResult(name, out.arch, False, None, out.log, kernel=kernel)]
    logs = ptxas_by_function(out.log)
    if not logs:  # it only calls libraries' kernels (cuBLAS...): the library built and exports entry, so it runs
        return [BuildResult(name, out.arch, True, None, NO_KERNELS.format(entry=kernel.spec.entry), kernel=kernel)]
    listing = sassmod.disassemble(out.cubin)
    pieces = listing_by_function(listing) if listing else {}
    rows = []
    for symbol, piece in logs.items():
        sass = None
        if symbol in pieces:
            sass = sassmod.counts(pieces[symbol])
            loop = sassmod.inner_loop(pieces[symbol])
            sass.update({f"loop_{k}": v for k, v in (loop or {}).items() if k not in ("start", "end")})
        info = BuildInfo("nvcc", out.version, out.flags, out.arch, nvccmod.sha256_file(out.cubin), symbol,
                         sass=sass)
        res = parse_ptxas(piece)
        rows.append(BuildResult(f"{name}:{plain_name(symbol)}", out.arch, res is not None, res, piece, info,
                                out.cubin, kernel=kernel))
    return rows
