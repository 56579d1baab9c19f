"""gemmprof build: compile every kernel offline with nvcc (no GPU needed)."""

from __future__ import annotations

import sys

import click

from gemmprof.commands._options import output_options
from gemmprof.render.table import Column, Table, emit


@click.command("build")
@click.argument("variants", nargs=-1)
@click.option("--arch", "archs", multiple=True, default=("sm_90",), show_default=True,
              help="Target architecture (repeatable), e.g. --arch sm_80 --arch sm_90.")
@click.option("--spec", "spec_files", multiple=True, type=click.Path(dir_okay=False), help="Also build these specs.")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a parameter.")
@click.option("-j", "--jobs", type=int, default=2, show_default=True, help="Parallel nvcc processes.")
@output_options
def command(variants, archs, spec_files, params, jobs, fmt, output):
    """Compile kernels with nvcc and report registers, shared memory and spills.

    With no VARIANTS, every rung of the ladder is built. Exits non-zero if any kernel fails to compile.

    \b
    Examples:
      gemmprof build --arch sm_80 --arch sm_90
      gemmprof build 10 --param BK=16 --arch sm_90
    """
    from gemmprof.catalog.selection import choose
    from gemmprof.measure.build import nvcc_build_all

    kernels = choose(variants, spec_files=spec_files, params=params, everything_by_default=True)
    results = nvcc_build_all(kernels, list(archs), jobs=jobs)
    rows = []
    for r in results:
        res = r.resources
        rows.append({"name": r.name, "arch": r.arch, "status": "ok" if r.ok else "error",
                     "registers": res.registers if res else None, "static_smem": res.static_smem if res else None,
                     "spill_stores": res.spill_stores if res else None, "spill_loads": res.spill_loads if res else None,
                     "stack_frame": res.stack_frame if res else None})
    cols = [Column("name", "kernel", fmt="s"), Column("arch", "arch", fmt="s"), Column("status", "status", fmt="s"),
            Column("registers", "regs/thread"), Column("static_smem", "static smem", "B"),
            Column("spill_stores", "spill st", "B"), Column("spill_loads", "spill ld", "B"),
            Column("stack_frame", "stack", "B")]
    emit(Table("nvcc build: " + ", ".join(archs), cols, rows), fmt, output)
    failed = [r for r in results if not r.ok]
    for r in failed:
        click.echo(f"\n{r.name} ({r.arch}) failed to compile:\n{r.log}", err=True)
    if failed:
        sys.exit(1)
