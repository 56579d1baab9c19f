"""gemmprof build: compile every kernel offline with nvcc (no GPU needed)."""

from __future__ import annotations

import sys

import click

from gemmprof.commands._options import (
    WholeNumber,
    gpu_options,
    output_options,
    resolve_gpu,
    resolve_shape,
    shape_options,
)
from gemmprof.errors import InputError
from gemmprof.render.table import Column, Table, emit
from gemmprof.results.stages import with_params

SASS_COLUMNS = [Column("FFMA", "FFMA", drop=-1), Column("HMMA", "HMMA", drop=-1), Column("HGMMA", "HGMMA", drop=-1),
                Column("QGMMA", "QGMMA", drop=-1), Column("LDS", "LDS"),
                Column("LDS.64", "LDS.64"), Column("LDS.128", "LDS.128"), Column("LDG", "LDG"),
                Column("LDG.64", "LDG.64"), Column("LDG.128", "LDG.128"), Column("LDGSTS", "LDGSTS"),
                Column("STG", "STG"), Column("BAR", "BAR"), Column("LDL", "LDL"), Column("STL", "STL"),
                Column("loop_flops", "loop FLOP/trip"), Column("ktile_flops", "2*BM*BN*BK"),
                Column("loop_vs_ktile", "ratio", fmt=".2f")]


def _sass_columns(kernel, r) -> dict:
    import math

    from gemmprof.measure.sass import flops_per_trip

    sass = r.build.sass if r.build and r.build.sass else None
    if sass is None:
        return {}
    out = {c.key: sass.get(c.key) for c in SASS_COLUMNS[:14]}
    if "loop_FFMA" in sass and kernel.spec.launcher is None:  # a launcher's kernels: block size unknown here
        loop = {k[5:]: v for k, v in sass.items() if k.startswith("loop_")}
        out["loop_flops"] = flops_per_trip(loop, kernel.threads_per_block)
        t = kernel.spec.traffic
        if "BK" in kernel.env and "BM" in t and "BN" in t:
            tiles = kernel.tiles()  # the tile the binary was built for (h8's, h11's come from the shape)
            bm, bn = tiles.BM, tiles.BN
            ctas = math.prod(kernel.cluster_dims() or (1,))  # a cluster's CTAs share the traffic model's tile (as built)
            out["ktile_flops"] = 2 * bm * bn * kernel.env["BK"] // ctas
            out["loop_vs_ktile"] = out["loop_flops"] / out["ktile_flops"]
    return out


def _name(r) -> str:
    """A build's row name; a planning entry's says which rung it built, with its rule's parameters:
    "plan:h12 tma_store_epilogue", "plan:h12 tma_store_epilogue CLUSTER_M=1"."""
    chose = r.kernel.plan if r.kernel is not None else None
    if not chose:
        return r.name
    return f"{r.name}:{with_params(f'{chose.rung} {chose.rung_name}', chose.params)}"


@click.command("build")
@click.argument("variants", nargs=-1)
@click.option("--arch", "archs", multiple=True, default=("sm_90",), show_default=True,
              help="Target architecture (repeatable), e.g. --arch sm_80 --arch sm_90.")
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False),
              help="Build your own kernel from its YAML spec (repeatable); alone it builds only these, with VARIANTS "
                   "those too.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a parameter.")
@click.option("-j", "--jobs", type=WholeNumber(1, 256), default=None,
              help="Parallel nvcc processes (default: CPU cores less two, 1 to 16).")
@shape_options
@gpu_options
@output_options
def command(variants, archs, spec_files, params, jobs, size, m, n, k, gpu, gpu_file, fmt, output):
    """Compile kernels with nvcc and report registers, shared memory, spills and the SASS instruction mix.

    With no VARIANTS, every rung of the ladder is built. A host launcher (`launcher:` in its spec) gets a row per
    kernel in its .cu, named LAUNCHER:KERNEL. Exits non-zero if any kernel fails to compile.

    Without a shape each kernel is built to run at every shape, and a planning entry (plan) builds every rung it
    may choose, a row each (plan:h12 ...). With one (--size or -m/-n/-k) a kernel whose spec has `specialize`
    (rungs 14-16, h8-h13) is built as `run` builds it for that shape, on the GPU of --gpu (its SM count; default:
    the current device, else H100 SXM), and a planning entry as the rung it chooses there.

    \b
    Examples:
      gemmprof build --arch sm_80 --arch sm_90
      gemmprof build 10 --param BK=16 --arch sm_90
      gemmprof build 14 -m 4095 -n 4097 -k 1023
    """
    import re

    from gemmprof.catalog import plan
    from gemmprof.catalog.selection import choose
    from gemmprof.measure.compile_pool import nvcc_build_all
    from gemmprof.measure.pools import default_jobs

    for arch in archs:  # one line here, rather than nvcc's complaint once per kernel
        if not re.fullmatch(r"sm_[0-9]{2,3}[af]?", arch):
            raise InputError(f"--arch {arch[:40]!r}: expected an architecture such as sm_80, sm_90 or sm_90a")
    kernels = choose(variants, spec_files=spec_files, params=params, everything_by_default=True)
    shaped = ""
    if (size, m, n, k) != (None,) * 4:
        shape, sms = resolve_shape(size, m, n, k, default=None), resolve_gpu(gpu, gpu_file,
                                                                            prefer_current_device=True).sm_count
        kernels = [plan.resolve(kernel, shape, sms).for_shape(shape, sms) for kernel in kernels]
        shaped = f" for {shape.label} on {sms} SMs"
    elif gpu or gpu_file:
        raise InputError("--gpu/--gpu-file: give a shape too (--size or -m/-n/-k): the GPU's SM count is used only "
                         "to build kernels for a shape")
    else:  # a planning entry without a shape: every rung it may choose
        kernels = [rung for kernel in kernels for rung in plan.rule_kernels(kernel)]
    n = len(kernels) * len(archs)
    workers = max(1, min(jobs or default_jobs(), n))
    click.echo(f"compiling {n} kernel{'s' * (n != 1)} with nvcc on {workers} worker{'s' * (workers != 1)}...", err=True)
    results = nvcc_build_all(kernels, list(archs), jobs=workers)
    from gemmprof.measure.sass import find_disassembler

    rows = []
    for r in results:
        res = r.resources
        rows.append({**_sass_columns(r.kernel, r), "name": _name(r), "arch": r.arch, "status": "skipped" if r.skipped else ("ok" if r.ok else "error"),
                     "registers": res.registers if res else None, "static_smem": res.static_smem if res else None,
                     "spill_stores": res.spill_stores if res else None, "spill_loads": res.spill_loads if res else None,
                     "stack_frame": res.stack_frame if res else None,
                     "compile_s": r.build.compile_s if r.build else None})
    sass = find_disassembler() is not None or any(r.build and r.build.sass for r in results)
    cols = [Column("name", "kernel", fmt="s"), Column("arch", "arch", fmt="s", drop=int(len(archs) == 1)),
            Column("status", "status", fmt="s"), Column("registers", "regs/thread", drop=-1), Column("static_smem", "static smem", "B"),
            Column("spill_stores", "spill st", "B"), Column("spill_loads", "spill ld", "B"),
            Column("stack_frame", "stack", "B", drop=1), Column("compile_s", "nvcc", "s", fmt=".1f", drop=2),
            *(SASS_COLUMNS if sass else [])]
    version = next((r.build.label for r in results if r.build), "nvcc")
    notes = ["nvcc: the compiler's wall time in this build ('-': read from the cache)."]
    notes += [f"{r.name}: {r.log}" for r in results if r.ok and r.resources is None and not r.skipped]
    if sass:
        notes += ["SASS counts are static (each instruction in the binary once). loop FLOP/trip: FLOPs one block "
                 "does in one trip of the innermost loop holding FFMA/HMMA/HGMMA (2 per FFMA per thread, the MMA "
                 "shape per warp); 2*BM*BN*BK: what one K-step of the block tile needs (1.00 = the loop is the "
                 "K-tile loop)."]
    else:  # one line instead of 17 columns of '-'
        notes += ["No SASS instruction mix: no disassembler (nvdisasm or cuobjdump) was found. "
                 "`pip install 'gemmprof[sass]'` brings both (or install the CUDA toolkit's)."]
    emit(Table(f"{version} build: " + ", ".join(archs) + shaped, cols, rows, notes), fmt, output)
    failed = [r for r in results if not r.ok]
    for r in failed:
        if r.error:  # it compiled; the one line says what is wrong
            click.echo(f"\n{r.name} ({r.arch}): {r.error}", err=True)
        else:
            click.echo(f"\n{r.name} ({r.arch}) failed to compile:\n{r.log}", err=True)
    if failed:
        sys.exit(1)
