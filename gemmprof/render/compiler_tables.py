"""The same kernels built by two compilers, side by side: time ratio, resources and SASS instruction mix."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.results.run import RunResult

MIX = ("FFMA", "LDS", "LDS.64", "LDS.128", "LDG", "LDG.128", "STG", "BAR", "LDL", "STL")


def compiler_table(result: RunResult, compilers: list[str]) -> Table:
    first, second = compilers[0], compilers[1]
    by_kernel: dict[tuple, dict] = {}
    for v in result.variants:
        if v.kind != "baseline" and v.build:
            key = (v.id, v.name, tuple(sorted(v.params.items())))
            by_kernel.setdefault(key, {})[v.build.compiler] = v
    rows = []
    for (vid, name, _), pair in by_kernel.items():
        a, b = pair.get(first), pair.get(second)
        ta = a.timing.median_ms if a and a.timing and a.passed else None
        tb = b.timing.median_ms if b and b.timing and b.passed else None
        row = {"id": vid, "name": name, "t_a": ta, "t_b": tb, "ratio": tb / ta if ta and tb else None,
               "regs_a": a.resources.registers if a and a.resources else None,
               "regs_b": b.resources.registers if b and b.resources else None,
               "same": (a.build.cubin_sha256 == b.build.cubin_sha256) if a and b and a.build.cubin_sha256
               and b.build.cubin_sha256 else None}
        row["mix"] = " | ".join(_mix(x) for x in (a, b))
        rows.append(row)
    cols = [Column("id", "rung", fmt="s"), Column("name", "name", fmt="s"),
            Column("t_a", f"{first} median", "ms", ".3f"), Column("t_b", f"{second} median", "ms", ".3f"),
            Column("ratio", f"{second}/{first}", fmt=".3f"), Column("regs_a", f"regs {first}"),
            Column("regs_b", f"regs {second}"), Column("same", "same cubin", fmt="s"),
            Column("mix", f"SASS {' '.join(MIX)} ({first} | {second})", fmt="s")]
    labels = sorted({v.build.label for v in result.variants if v.build})
    notes = [f"builds: {', '.join(labels)}; ratio above 1: {first} is faster. SASS counts are static (each "
             "instruction in the binary once); '-' where no disassembler (nvdisasm) is installed."]
    return Table(f"compilers compared: {first} vs {second}", cols, rows, notes)


def _mix(v) -> str:
    if v is None or v.build is None or not v.build.sass:
        return "-"
    return " ".join(str(v.build.sass.get(k, 0)) for k in MIX)
