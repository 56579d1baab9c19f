"""Typed results -> render.Table: the views `run`, `list` and `build` print."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.results.run import RunResult


def _first_line(message: str, width: int = 120) -> str:
    line = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


# Where each column's figure comes from, said once under the table (the same words in every view).
_SOURCES = (
    ("measured in this run", ("median_ms", "min_ms", "spread_pct", "tflops", "pct_cublas", "rel_error", "clock"),
     "CUDA events, L2 flushed; % cuBLAS against the cuBLAS row of the same dtype; spread = IQR/median, above 2% "
     "flagged unstable"),
    ("against the GPU spec", ("pct_peak",), "% peak: the datasheet's dense peak for the dtype"),
    ("model", ("ai_model", "occupancy_pct"), "AI model: the spec's traffic: block at this shape, '-' where the "
     "kernel has none; occ: theoretical occupancy from registers and shared memory"),
    ("compiler", ("registers", "smem_bytes"), "regs and smem as built"),
)


def legend(keys) -> str:
    """One line naming the source of each figure among `keys`; ncu's figures are `gemmprof profile`'s."""
    parts = [f"{what} ({how})" for what, cols, how in _SOURCES if any(k in keys for k in cols)]
    return "Where the numbers come from: " + "; ".join(parts) + ". Nsight Compute's figures: `gemmprof profile`."


def run_table(result: RunResult) -> Table:
    shape = result.shape
    rows = []
    for v in result.variants:
        base = result.baseline_for(v.dtype, v.c_dtype, v.scales)
        ach = v.achieved_flops
        occ = v.occupancy or {}
        rows.append({
            "id": v.id, "name": v.name, "dtype": v.dtype, "status": v.status,
            "compiler": v.build.compiler if v.build else _library(v),
            "median_ms": v.timing.median_ms if v.timing and v.passed else None,
            "min_ms": v.timing.min_ms if v.timing and v.passed else None,
            "spread_pct": v.timing.spread * 100 if v.timing and v.passed else None,
            "stable": v.timing.stable if v.timing and v.passed else None,
            "reps": len(v.timing.samples_ms) if v.timing else None,
            "tflops": ach / 1e12 if ach else None,
            "pct_peak": 100 * ach / v.peak_flops if ach and v.peak_flops else None,
            "pct_cublas": 100 * ach / base.achieved_flops if ach and base and base.achieved_flops else None,
            "ai_model": v.model.model_arithmetic_intensity if v.model else None,
            "registers": v.resources.registers if v.resources else None,
            "smem_bytes": v.resources.static_smem + (v.launch.dynamic_smem if v.launch else 0)
            if v.resources else None,
            "occupancy_pct": 100 * occ["theoretical_occupancy"] if "theoretical_occupancy" in occ else None,
            "rel_error": v.rel_error,
            "tolerance": v.verification.tolerance if v.verification else None,
            "message": _first_line(v.message, 10_000),
            "clock": _clock_cell(v),
        })
    cols = [Column("id", "rung", fmt="s"), Column("name", "name", fmt="s"), Column("compiler", "compiler", fmt="s"),
            Column("status", "status", fmt="s"), Column("median_ms", "median", "ms", ".3f"), Column("min_ms", "min", "ms", ".3f"),
            Column("spread_pct", "spread", "%", ".1f"), Column("tflops", "TFLOP/s", fmt=".2f"),
            Column("pct_peak", "% peak", fmt=".1f"), Column("pct_cublas", "% cuBLAS", fmt=".1f"),
            Column("ai_model", "AI model", "FLOP/B", ".1f"), Column("registers", "regs"),
            Column("smem_bytes", "smem", "B"), Column("occupancy_pct", "occ", "%", ".0f"),
            Column("rel_error", "rel err", fmt=".1e"), Column("tolerance", "tol", fmt=".0e"),
            Column("message", "note", fmt="s")]
    if any(v.clocks for v in result.variants):
        cols.insert(-1, Column("clock", "SM clock before->after", "MHz", "s"))
    dev = result.device.get("name", "?")
    title = (f"gemmprof run: {shape.label}, alpha={result.alpha:g} beta={result.beta:g} "
             f"on {dev} (peaks from GPU spec {result.gpu_spec})")
    built = sorted({v.build.label for v in result.variants if v.build})
    if built:
        title += "; built by " + ", ".join(built)
    notes = [legend([c.key for c in cols])]
    tuned = [f"{v.name} ({v.params_source})" for v in result.variants if v.params_source]
    if tuned:
        notes.append("parameters from `gemmprof tune --keep`, not the spec's defaults: " + "; ".join(tuned)
                     + " (--spec-defaults ignores them)")
    fp8 = sorted({(v.dtype, v.scales or "tensor") for v in result.variants if v.dtype in ("e4m3", "e5m2")})
    if fp8:
        notes.append("fp8 inputs, " + ", ".join(f"{d} with {s} scales" for d, s in fp8) + " (A and B as docs/fp8.md "
                     "says); each row is checked against float64 of the dequantized inputs within its tol")
    unstable = [r["name"] for r in rows if r["stable"] is False]
    if unstable:
        notes.append("unstable timing (spread > 2%): " + ", ".join(unstable))
    fell = [f"{v.name} ({v.clocks.describe()})" for v in result.variants if v.clocks and v.clocks.clock_fell]
    if fell:
        notes.append("CLOCK FELL during timing (SM clock after < 95% of before, or < 90% of max): " + "; ".join(fell))
    return Table(title, cols, rows, notes)


def _library(v) -> str | None:
    """What ran a row that gemmprof did not compile: cuBLAS, torch (torch.matmul) or a Python callable."""
    if v.kind == "callable":
        return "python"
    if v.kind == "baseline":
        if v.name.startswith("cublaslt_"):
            return "cuBLASLt"  # fp8, through torch._scaled_mm
        return "torch" if v.name == "torch_matmul" else "cuBLAS"
    return None


def _clock_cell(v) -> str | None:
    c = v.clocks
    if c is None:
        return None
    text = f"{c.sm_clock_mhz_before:.0f}->{c.sm_clock_mhz_after:.0f}"
    return text + " FELL" if c.clock_fell else text


# The terminal's default view: what a reader needs first. --wide shows every column, --columns names them.
DEFAULT_COLUMNS = ("id", "name", "status", "median_ms", "tflops", "pct_cublas", "message")
TERMINAL_WIDTH = 120
NAME_MAX = 30
ID_MAX = 8  # "cuBLAS", "5b", "h6"; a user's spec may name itself at any length
_MIN_NOTE = 16


def terminal_view(full: Table, columns: tuple[str, ...] | None = None, wide: bool = False,
                  width: int = TERMINAL_WIDTH) -> Table:
    """The run table for a terminal: the default columns fit `width` (names cut, long notes moved under the table
    as numbered footnotes); --wide keeps every column, `columns` (keys or headers) chooses them. JSON and CSV are
    written from `full`, which keeps every field."""
    keys = _chosen(full, columns) if columns else [c.key for c in full.columns] if wide else \
        [k for k in DEFAULT_COLUMNS if any(c.key == k for c in full.columns)]
    if not columns and not wide and len({r.get("compiler") for r in full.rows} - {None, "cuBLAS"}) > 1:
        keys.insert(keys.index("status"), "compiler")  # two builds of each kernel: tell the rows apart
    by_key = {c.key: c for c in full.columns}
    cols = [by_key[k] for k in keys]
    rows = [dict(r) for r in full.rows]
    fit = not columns and not wide
    if fit:  # the whole id and name stay in JSON, CSV and footnotes
        for r in rows:
            r["name"] = _cut(r.get("name") or "", NAME_MAX)
            r["id"] = _cut(str(r.get("id") or ""), ID_MAX)
    notes = [legend(keys)] + full.notes[1:]
    if "message" in keys:
        others = sum(_width(c, rows) for c in cols if c.key != "message") + 3 * len(cols) + 1
        room = max(_MIN_NOTE, width - others) if fit else 40
        footnotes = []
        for r, whole in zip(rows, full.rows, strict=True):
            text = r.get("message") or ""
            if len(text) > room:
                name = whole.get("name")
                text = _without_name(text, name)
                footnotes.append(f"[{len(footnotes) + 1}] {name}: {text}")
                mark = f"[{len(footnotes)}] "
                r["message"] = mark + _cut(text, room - len(mark))
        notes += footnotes
    return Table(full.title, cols, rows, notes, full.meta)


def _chosen(full: Table, columns: tuple[str, ...]) -> list[str]:
    names = {c.key.lower(): c.key for c in full.columns} | {c.header.lower(): c.key for c in full.columns}
    keys = []
    for want in columns:
        key = names.get(want.strip().lower())
        if key is None:
            from gemmprof.errors import InputError

            known = ", ".join(f"{c.key} ({c.header})" if c.header != c.key else c.key for c in full.columns)
            raise InputError(f"--columns: no column {want.strip()!r} (choose from {known})")
        if key not in keys:
            keys.append(key)
    return keys


def _width(col: Column, rows: list[dict]) -> int:
    from gemmprof.render.table import format_value

    header = len(f"{col.header} ({col.unit})" if col.unit else col.header)
    cells = [len(format_value(r.get(col.key), "" if col.fmt == "s" else col.fmt)) for r in rows]
    return max([header, *cells])


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _without_name(text: str, name) -> str:
    """A note that begins with the variant's own name says it once, in the name column."""
    prefix = f"{name}: "
    return text[len(prefix):] if name and text.startswith(prefix) else text
