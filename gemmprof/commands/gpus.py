"""gemmprof gpus: the GPU spec sheets (peaks with sources, SM limits, measured ceilings)."""

from __future__ import annotations

import click

from gemmprof.commands._options import output_options
from gemmprof.render.table import Column, Table, emit


@click.command("gpus")
@click.argument("name", required=False)
@click.option("--gpu-file", "gpu_file", type=click.Path(dir_okay=False), default=None, metavar="FILE.yaml",
              help="Show (and validate) a GPU spec sheet of your own.")
@click.option("--profile", "gpu_file_old", type=click.Path(dir_okay=False), default=None, hidden=True)
@output_options
def command(name, gpu_file, gpu_file_old, fmt, output):
    """List the GPU spec sheets, or show one with every figure's source.

    \b
    Examples:
      gemmprof gpus
      gemmprof gpus h100
      gemmprof gpus --gpu-file my_card.yaml
    """
    from gemmprof.catalog import gpu_specs

    if gpu_file_old is not None:  # --profile: the old name of --gpu-file
        from gemmprof.commands._options import deprecated_alias

        if gpu_file is not None:
            from gemmprof.errors import InputError

            raise InputError("--gpu-file and --profile (its old name): give one")
        deprecated_alias("--profile FILE.yaml", "--gpu-file", "a GPU spec sheet")
        gpu_file = gpu_file_old
    if name or gpu_file:
        from gemmprof.render.table import choose_format

        gpu_spec = gpu_specs.load_gpu_file(gpu_file) if gpu_file else gpu_specs.get_gpu(name)
        table = _detail(gpu_spec)
        _add_measured(table, gpu_spec)
        emit(_cited_once(table) if choose_format(fmt, output) == "table" else table, fmt, output)
        return
    rows = [{"key": p.key, "name": p.name, "cc": p.compute_capability, "sms": p.sm_count,
             "fp32": p.peak_tflops.get("fp32"), "tf32": p.peak_tflops.get("tf32_tensor"),
             "fp16": p.peak_tflops.get("fp16_tensor_fp32_acc"), "dram": p.dram_bandwidth_gbs,
             "l2": p.l2_size_mib, "measured": "yes" if p.measured else ""} for p in gpu_specs.all_gpus()]
    cols = [Column("key", "gpu", fmt="s"), Column("name", "GPU", fmt="s"), Column("cc", "cc", fmt="s"),
            Column("sms", "SMs"), Column("fp32", "fp32", "TFLOP/s", ".1f"),
            Column("tf32", "tf32 tensor", "TFLOP/s", ".1f"), Column("fp16", "fp16 tensor (fp32 acc)", "TFLOP/s", ".1f"),
            Column("dram", "DRAM", "GB/s", ".0f"), Column("l2", "L2", "MiB", ".0f"), Column("measured", "measured", fmt="s")]
    table = Table("GPU spec sheets (dense peaks, datasheet)", cols, rows)
    _add_measured_columns(table, gpu_specs.all_gpus())
    emit(table, fmt, output)


def _detail(p) -> Table:
    rows = []

    def add(key, value, unit=""):
        rows.append({"figure": key, "value": value, "unit": unit, "source": p.citation(key)})

    add("sm_count", p.sm_count)
    add("boost_clock_mhz", p.boost_clock_mhz, "MHz")
    for k, v in p.peak_tflops.items():
        add(f"peak_tflops.{k}", v, "TFLOP/s")
    add("dram_bandwidth_gbs", p.dram_bandwidth_gbs, "GB/s")
    add("l2.size_mib", p.l2_size_mib, "MiB")
    if p.l2_bandwidth_gbs:
        add("l2.bandwidth_gbs", p.l2_bandwidth_gbs, "GB/s")
    if p.smem_bandwidth_gbs:
        add("smem_bandwidth_gbs", p.smem_bandwidth_gbs, "GB/s")
    for k, v in p.sm_limits.__dict__.items():
        add(f"sm_limits.{k}", ", ".join(f"{x:g}" for x in v) if isinstance(v, tuple) else v)
    for k, v in p.measured.items():
        add(f"measured.{k}", v)
    cols = [Column("figure", "figure", fmt="s"), Column("value", "value"), Column("unit", "unit", fmt="s"),
            Column("source", "source", fmt="s")]
    title = f"{p.name} (cc {p.compute_capability}; CUDA names: {', '.join(p.cuda_names)}) from {p.path}"
    return Table(title, cols, rows, meta={"gpu_spec": p.key})


def _cited_once(table: Table) -> Table:
    """For reading: each source's text once, under the table, numbered; the rows name its number. (JSON and CSV
    keep the whole citation in every row, so any row read alone still says where its figure comes from.)"""
    numbers: dict[str, int] = {}
    rows = []
    for row in table.rows:
        text = row.get("source") or ""
        if text:
            numbers.setdefault(text, len(numbers) + 1)
        rows.append({**row, "source": f"[{numbers[text]}]" if text else None})
    notes = [f"[{n}] {text}" for text, n in numbers.items()] + table.notes
    return Table(table.title, table.columns, rows, notes, table.meta)


def _stored(spec, notes: list[str]) -> list:
    """The ceilings `gemmprof ceiling` stored for this GPU spec's device; a damaged store is a note."""
    from gemmprof.catalog import ceilings

    try:
        return ceilings.stored(spec)
    except ceilings.CeilingStoreError as exc:
        notes.append(f"{spec.key}: {exc}")
        return []


def _add_measured_columns(table: Table, specs) -> None:
    """Beside the datasheet's fp16 and DRAM columns, this machine's measured sustained figures, where stored."""
    found = False
    for row, spec in zip(table.rows, specs, strict=True):
        for c in _stored(spec, table.notes):
            if c.regime == "sustained" and c.key in ("fp16", "dram"):
                row[f"measured_{c.key}"] = c.value
                found = True
    if found:
        at = {c.key: i for i, c in enumerate(table.columns)}
        table.columns.insert(at["fp16"] + 1, Column("measured_fp16", "fp16 measured (sustained)", "TFLOP/s", ".1f"))
        table.columns.insert(at["dram"] + 2, Column("measured_dram", "DRAM measured (sustained)", "GB/s", ".0f"))
        table.notes.append("measured: by `gemmprof ceiling` on this machine (`gemmprof gpus NAME` shows every one)")


def _add_measured(table: Table, spec) -> None:
    """Rows for this GPU's measured ceilings, each saying which datasheet figure it is a share of."""
    from gemmprof.catalog.ceilings import PEAK_KIND
    from gemmprof.render.ceiling_table import beside_datasheet

    for c in _stored(spec, table.notes):
        b = beside_datasheet(c, spec)
        at = "of" if c.kind == "memory" else "at"
        text = f"measured on {c.device} by gemmprof ceiling, {c.measured_at[:10]}: {c.source} {at} {c.where}"
        if c.power_w:
            text += f", {c.power_w:.0f} W"
        if b["pct_datasheet"] is not None:
            figure = "dram_bandwidth_gbs" if c.kind == "memory" else f"peak_tflops.{PEAK_KIND[c.key]}"
            text += f"; {b['pct_datasheet']:.0f}% of {figure}"
            if b["pct_at_held"] is not None:
                text += f", {b['pct_at_held']:.0f}% of it at the {c.held_mhz:.0f} MHz held"
        table.rows.append({"figure": f"ceiling.{c.key}.{c.regime}", "value": round(c.value, 1), "unit": c.unit,
                           "source": text})
