"""The tables `gemmprof compare-nsys` prints: kernel times, launch configuration, CUDA API time and memory."""

from __future__ import annotations

from gemmprof.adapters.kernel_names import short_kernel_name
from gemmprof.render.table import Column, Table
from gemmprof.results.nsys import COMPARE_KIND as KIND
from gemmprof.results.nsys import COMPARE_SCHEMA as SCHEMA_VERSION
from gemmprof.results.nsys import Comparison

_MS = ("total", "avg", "med", "min", "max", "stddev")
_DATA_COLUMNS = ("input", "range", "variant", "shape", "kernel", "instances", *(f"{k}_ns" for k in _MS), "grid",
                 "block", "registers", "static_smem_bytes", "dynamic_smem_bytes", "gpu_time_pct", "baseline",
                 "speedup", "dtype", "flops", "tflops", "peak_tflops", "pct_of_peak")


def tables(cmp: Comparison, fmt: str) -> list:
    """For JSON and CSV one table of raw figures (full kernel names, ns) with the reports and the CUDA API/memory
    summary in its metadata; for the terminal, times, launch configuration and the API/memory summary (ms, µs)."""

    title = cmp.title
    if fmt != "table":
        meta = {"kind": KIND, "schema": SCHEMA_VERSION, "inputs": cmp.inputs, "activity": cmp.activity}
        cols = [Column(k, k.removesuffix("_ns"), "ns" if k.endswith("_ns") else "") for k in _DATA_COLUMNS]
        return [Table(title, cols, [r.to_dict() for r in cmp.rows], list(cmp.notes), meta)]
    tags = _input_tags(cmp)
    shapes = {r.shape.label if r.shape else None for r in cmp.rows}
    if len(shapes) == 1 and None not in shapes:
        title += f" at {shapes.pop()}"
    rows = []
    for r in cmp.rows:
        s = r.stats
        smem = None if s.static_smem is None and s.dynamic_smem is None else (s.static_smem or 0) + (s.dynamic_smem or 0)
        rows.append({
            "input": tags.get(r.input), "group": r.variant or s.range, "kernel": short_kernel_name(s.name, 40),
            "shape": r.shape.label if r.shape and " at " not in title else None, "instances": s.instances,
            **{f"{k}_ms": getattr(s, f"{k}_ns") / 1e6 if getattr(s, f"{k}_ns") is not None else None for k in _MS},
            "grid": _dims(s.grid), "block": _dims(s.block), "registers": s.registers, "smem": smem,
            "gpu_time_pct": r.gpu_time_pct, "tflops": r.tflops, "pct_of_peak": r.pct_of_peak,
            "speedup": None if r.speedup is None else f"{r.speedup:.3g}x" + (" base" if r.baseline else "")})
    which = [Column("input", "In", fmt="s"), Column("group", "Range", fmt="s"), Column("kernel", "Kernel", fmt="s", drop=2)]
    times = which + [
        Column("shape", "Shape", fmt="s"), Column("instances", "Launches", fmt=","),
        Column("total_ms", "Total", "ms", ".4g", drop=1), Column("avg_ms", "Avg", "ms", ".4g"),
        Column("med_ms", "Med", "ms", ".4g"), Column("min_ms", "Min", "ms", ".4g", drop=1), Column("max_ms", "Max", "ms", ".4g", drop=1),
        Column("stddev_ms", "StdDev", "ms", ".2g", drop=1), Column("gpu_time_pct", "GPU", "%", ".1f"),
        Column("speedup", "Speedup", drop=-1), Column("tflops", "TFLOP/s", fmt=".3g"), Column("pct_of_peak", "Peak", "%", ".1f")]
    launch = which + [Column("grid", "Grid"), Column("block", "Block"), Column("registers", "Registers"),
                      Column("smem", "Shared memory", "B", ",")]
    gpus = {i["input"]: i.get("gpu") for i in cmp.inputs}
    legend = [f"{tag} {path}" + (f" ({gpus[path]})" if gpus.get(path) else "") for path, tag in tags.items()]
    out = [Table(title, _used(times, rows), rows, legend + list(cmp.notes))]
    if any(r[k] is not None for r in rows for k in ("grid", "block", "registers", "smem")):
        out.append(Table("Launch configuration", _used(launch, rows), rows))
    if cmp.activity:
        act = [{**a, "input": tags.get(a["input"]), "total_ms": _scaled(a["total_ns"], 1e6),
                "avg_us": _scaled(a["avg_ns"], 1e3), "mb": _scaled(a["bytes"], 1e6)} for a in cmp.activity]
        cols = [Column("input", "In", fmt="s"), Column("source", "Source", fmt="s"),
                Column("category", "Category", fmt="s"), Column("calls", "Calls", fmt=","),
                Column("total_ms", "Total", "ms", ".4g"), Column("avg_us", "Avg", "µs", ".4g"),
                Column("share_pct", "Share", "%", ".1f"), Column("mb", "Size", "MB", ".4g")]
        out.append(Table("CUDA API time and GPU memory operations", _used(cols, act), act))
    return out


def _used(cols, rows):
    return [c for c in cols if any(row.get(c.key) is not None for row in rows)]


def _scaled(value, unit):
    return None if value is None else value / unit


def _dims(triple) -> str | None:
    """(128, 1, 1) -> "128", (32, 32, 1) -> "32x32": launch dimensions as people write them."""
    if triple is None:
        return None
    x, y, z = triple
    return str(x) if (y, z) == (1, 1) else f"{x}x{y}" if z == 1 else f"{x}x{y}x{z}"


def _input_tags(cmp: Comparison) -> dict[str, str]:
    """[1], [2], ... for the reports that gave rows, when there are several (a note under the table names them)."""
    paths = list(dict.fromkeys(r.input for r in cmp.rows))
    return {p: f"[{n}]" for n, p in enumerate(paths, 1)} if len(paths) > 1 else {}
