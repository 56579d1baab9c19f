"""Typed results -> render.Table: the views `run`, `list` and `build` print."""

from __future__ import annotations

from gemmprof.render.table import Column, Table
from gemmprof.results.run import FP8_DTYPES, RunResult


def _first_line(message: str, width: int = 120) -> str:
    line = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


# Where each column's figure comes from, said once under the table (the same words in every view).
_SOURCES = (
    ("measured in this run", ("median_ms", "min_ms", "spread_pct", "tflops", "pct_cublas", "rel_error", "clock",
                              "held_mhz", "power_w", "joules_per_gemm"),
     (("CUDA events; % cuBLAS against the cuBLAS row of the same dtype; spread = IQR/median, above 2% flagged "
       "unstable", None), ("held: median SM clock sampled (NVML) while timed", ("held_mhz",)),
      ("energy: NVML's counter over ~1 s of calls", ("joules_per_gemm",)))),
    ("cuBLASLt's best", ("pct_cublaslt",), "% cuBLASLt against the fastest of the cuBLASLt heuristic's top N "
     "algorithms for the same problem, each verified and timed, the winner timed again"),
    ("against the GPU spec", ("pct_peak", "pct_peak_held"), "% peak: the datasheet's dense peak for the dtype (at "
     "the clock it assumes); at held: that peak scaled to the clock held"),
    ("model", ("ai_model", "occupancy_pct"), "AI model: the spec's traffic: block at this shape, '-' where the "
     "kernel has none; occ: theoretical occupancy from registers and shared memory"),
    ("compiler", ("registers", "smem_bytes"), "regs and smem as built"),
)


def _how(how, keys) -> str:
    """A source's words; where they come in parts, only the parts whose columns are shown (None: always)."""
    if isinstance(how, str):
        return how
    return "; ".join(text for text, cols in how if cols is None or any(k in keys for k in cols))


def legend(keys) -> str:
    """One line naming the source of each figure among `keys`; ncu's figures are `gemmprof profile`'s."""
    parts = [f"{what} ({_how(how, keys)})" for what, cols, how in _SOURCES if any(k in keys for k in cols)]
    return "Where the numbers come from: " + "; ".join(parts) + ". Nsight Compute's figures: `gemmprof profile`."


def _span(lo: float, hi: float, fmt: str) -> str:
    """'1485-1600', or '1980' where both ends print the same."""
    a, b = format(lo, fmt), format(hi, fmt)
    return a if a == b else f"{a}-{b}"


def method_line(result: RunResult) -> str:
    """How the figures were taken, in one line: the regime, the inputs' fill, the L2 policy, the clock held."""
    t = result.timing_method or {}
    regime = t.get("regime", "burst (files from before regimes were recorded)")
    parts = [f"regime {regime}", f"fill {t.get('fill', 'uniform')}", f"L2 {t.get('l2', 'flush')}"]
    held = [v.clocks for v in result.variants if v.clocks and v.passed]
    if held:
        lo = min(c.held_min_mhz or c.clock_mhz for c in held)
        hi = max(c.held_max_mhz or c.clock_mhz for c in held)
        parts.append(f"SM clock held {_span(lo, hi, '.0f')} MHz")
    warmed = [v.warm_up for v in result.variants if v.warm_up and v.warm_up.regime == "sustained"]
    if warmed:
        verdicts = sorted({w.verdict for w in warmed})
        seconds = [w.seconds for w in warmed]
        parts.append(f"warm-up {', '.join(verdicts)} after {_span(min(seconds), max(seconds), '.1f')} s")
    if t.get("checks"):
        counts = [len(v.checks.checked) for v in result.variants if v.checks]
        many = f"{_span(min(counts), max(counts), 'd')} timed calls" if counts else "timed calls"
        parts.append(f"{many} verified per variant at random (--checks {t['checks']})")
    if t.get("expect_clock_mhz"):
        parts.append(f"expected clock {t['expect_clock_mhz']:.0f} MHz")
    return "Measured: " + "; ".join(parts)


def equal_clock_pct(v, base) -> float | None:
    """% of the baseline with both rates scaled to one clock (rate / held clock): where the two held different
    clocks under the power cap, the kernel's own share of the speed."""
    if not (v.achieved_flops and base and base.achieved_flops and v.clocks and base.clocks):
        return None
    return 100 * (v.achieved_flops / v.clocks.clock_mhz) / (base.achieved_flops / base.clocks.clock_mhz)


def run_table(result: RunResult) -> Table:
    shape = result.shape
    rows = []
    for v in result.variants:
        base, best = result.baseline_for(v.dtype, v.c_dtype, v.scales), result.cublaslt_for(v.dtype, v.c_dtype)
        ach = v.achieved_flops
        occ = v.occupancy or {}
        held = v.clocks.clock_mhz if v.clocks else None
        peak_held = v.peak_flops * held / v.model.peak_clock_mhz \
            if v.peak_flops and held and v.model and v.model.peak_clock_mhz else None
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
            "pct_cublas": _pct(ach, base),
            "pct_cublas_of": base.name if _pct(ach, base) is not None else None,  # the row each % is against
            "pct_cublaslt": _pct(ach, best),
            "pct_cublaslt_of": best.name if _pct(ach, best) is not None else None,
            "ai_model": v.model.model_arithmetic_intensity if v.model else None,
            "registers": v.resources.registers if v.resources else None,
            "smem_bytes": v.resources.static_smem + (v.launch.dynamic_smem if v.launch else 0)
            if v.resources else None,
            "occupancy_pct": 100 * occ["theoretical_occupancy"] if "theoretical_occupancy" in occ else None,
            "rel_error": v.rel_error,
            "tolerance": v.verification.tolerance if v.verification else None,
            "message": _first_line(v.message, 10_000),
            "clock": _clock_cell(v),
            "held_mhz": held,
            "pct_peak_held": 100 * ach / peak_held if ach and peak_held else None,
            "pct_cublas_equal_clock": equal_clock_pct(v, base) if v.passed else None,
            "power_w": v.energy.power_w if v.energy and v.passed else None,
            "joules_per_gemm": v.joules_per_gemm,
            "tflop_per_joule": v.tflop_per_joule,
            "checked": len(v.checks.checked) if v.checks else None,
        })
    cols = [Column("id", "rung", fmt="s"), Column("name", "name", fmt="s", drop=-1), Column("compiler", "compiler", fmt="s"),
            Column("status", "status", fmt="s"), Column("median_ms", "median", "ms", ".3f"), Column("min_ms", "min", "ms", ".3f"),
            Column("spread_pct", "spread", "%", ".1f"), Column("tflops", "TFLOP/s", fmt=".2f"),
            Column("pct_peak", "% peak", fmt=".1f"), Column("pct_cublas", "% cuBLAS", fmt=".1f"),
            *([Column("pct_cublaslt", "% cuBLASLt", fmt=".1f")] if any(r["pct_cublaslt"] for r in rows) else []),
            Column("ai_model", "AI model", "FLOP/B", ".1f"), Column("registers", "regs"),
            Column("smem_bytes", "smem", "B"), Column("occupancy_pct", "occ", "%", ".0f"),
            Column("rel_error", "rel err", fmt=".1e"), Column("tolerance", "tol", fmt=".0e"),
            Column("message", "note", fmt="s")]
    if any(v.clocks for v in result.variants):
        cols.insert(-1, Column("clock", "SM clock before->after", "MHz", "s"))
    if any(v.clocks and v.clocks.samples for v in result.variants):  # sampled while timed (files since regimes)
        cols[-1:-1] = [Column("held_mhz", "held", "MHz", ".0f"), Column("pct_peak_held", "% peak at held", fmt=".1f"),
                       Column("pct_cublas_equal_clock", "% cuBLAS same clock", fmt=".1f")]
    if any(v.energy for v in result.variants):
        cols[-1:-1] = [Column("power_w", "power", "W", ".0f"), Column("joules_per_gemm", "energy", "J", ".3g"),
                       Column("tflop_per_joule", "TFLOP/J", fmt=".3f")]
    if any(v.checks for v in result.variants):
        cols.insert(-1, Column("checked", "checked calls"))
    dev = result.device.get("name", "?")
    title = (f"gemmprof run: {shape.label}, alpha={result.alpha:g} beta={result.beta:g} "
             f"on {dev} (peaks from GPU spec {result.gpu_spec})")
    built = sorted({v.build.label for v in result.variants if v.build})
    if built:
        title += "; built by " + ", ".join(built)
    notes = [legend([c.key for c in cols]), method_line(result), *_against(rows), *result.notes,
             *filter(None, [checks_line(result)])]
    if not result.variants:
        notes.insert(1, "no variants in this results file: its run ended before the first variant finished (a run "
                        "writes its file first; the run's log or terminal says why)")
    tuned = [f"{v.name} ({v.params_source})" for v in result.variants if v.params_source]
    if tuned:
        notes.append("parameters from `gemmprof tune --keep`, not the spec's defaults: " + "; ".join(tuned)
                     + " (--spec-defaults ignores them)")
    fp8 = sorted({(v.dtype, v.scales or "tensor") for v in result.variants if v.dtype in FP8_DTYPES})
    if fp8:
        notes.append("fp8 inputs, " + ", ".join(f"{d} with {s} scales" for d, s in fp8) + " (A and B as docs/fp8.md "
                     "says); each row is checked against float64 of the dequantized inputs within its tol")
    unstable = [r["name"] for r in rows if r["stable"] is False]
    if unstable:
        notes.append("unstable timing (spread > 2%): " + ", ".join(unstable))
    fell = [f"{v.name} ({v.clocks.describe()})" for v in result.variants if v.clock_fell]
    if fell:
        notes.append("CLOCK FELL during timing (SM clock after < 95% of before; unless warmed until settled, "
                     "also < 90% of max): " + "; ".join(fell))
    return Table(title, cols, rows, notes)


def _pct(ach: float | None, base) -> float | None:
    return 100 * ach / base.achieved_flops if ach and base is not None and base.achieved_flops else None


def _against(rows: list[dict]) -> list[str]:
    """Which row each percentage column is against, by name (cuBLAS's own choice, or cuBLASLt's best of N)."""
    out = []
    for key, what in (("pct_cublas_of", "% cuBLAS"), ("pct_cublaslt_of", "% cuBLASLt")):
        names = sorted({r[key] for r in rows if r.get(key)})
        if names:
            out.append(f"{what} is against {', '.join(names)}")
    return out


def checks_line(result: RunResult) -> str | None:
    """What the checks of the timed calls cost, against the time gemmprof took (None before it is known)."""
    if not result.elapsed_s or not any(v.checks for v in result.variants):
        return None
    cost = result.checks_cost_s
    return (f"checks of the timed calls: {cost:.2f} s of the run's {result.elapsed_s:.1f} s "
            f"({100 * cost / result.elapsed_s:.1f}%; rows of A changed and C poisoned around every call, chosen "
            "calls verified, the device synchronized after each batch: an upper bound, docs/measuring.md)")


def _library(v) -> str | None:
    """What ran a row that gemmprof did not compile: cuBLAS, torch (torch.matmul) or a Python callable."""
    if v.kind == "callable":
        return "python"
    if v.kind == "baseline":
        if v.name == "torch_matmul":
            return "torch"
        return "cuBLASLt" if v.id == "cuBLASLt" or v.name.startswith("cublaslt_") else "cuBLAS"  # fp8: torch._scaled_mm
    return None


def _clock_cell(v) -> str | None:
    c = v.clocks
    if c is None:
        return None
    text = f"{c.sm_clock_mhz_before:.0f}->{c.sm_clock_mhz_after:.0f}"
    return text + " FELL" if v.clock_fell else text


# The terminal's default view: what a reader needs first. --wide shows every column, --columns names them.
DEFAULT_COLUMNS = ("id", "name", "status", "median_ms", "tflops", "pct_cublas", "message")
NAME_MAX = 30  # at 120 columns and wider; narrower, names are cut further (to NAME_MIN) before notes wrap
NAME_MIN = 12
ID_MAX = 8  # "cuBLAS", "5b", "h6"; a user's spec may name itself at any length
_MIN_NOTE = 16


def terminal_view(full: Table, columns: tuple[str, ...] | None = None, wide: bool = False,
                  width: int | None = None) -> Table:
    """The run table for a terminal: the default columns fit `width` (default: the terminal's, render.table's
    text_width) with names cut and long notes moved under the table as numbered footnotes; --wide keeps every
    column, `columns` (keys or headers) chooses them (what does not fit is left out and named). JSON and CSV are
    written from `full`, which keeps every field."""
    from gemmprof.render.table import text_width

    width = width or text_width()
    keys = _chosen(full, columns) if columns else [c.key for c in full.columns] if wide else \
        [k for k in DEFAULT_COLUMNS if any(c.key == k for c in full.columns)]
    if not columns and not wide and len({r.get("compiler") for r in full.rows} - {None, "cuBLAS", "cuBLASLt"}) > 1:
        keys.insert(keys.index("status"), "compiler")  # two builds of each kernel: tell the rows apart
    if not columns and not wide and any(c.key == "pct_cublaslt" for c in full.columns):
        keys.insert(keys.index("pct_cublas") + 1, "pct_cublaslt")  # a run with cuBLASLt's best of N beside cuBLAS
    by_key = {c.key: c for c in full.columns}
    cols = [by_key[k] for k in keys]
    rows = [dict(r) for r in full.rows]
    fit = not columns and not wide
    if fit:  # the whole id and name stay in JSON, CSV and footnotes
        for r in rows:
            r["id"] = _cut(str(r.get("id") or ""), ID_MAX)
        fixed = sum(_width(c, rows) for c in cols if c.key not in ("name", "message")) + 3 * len(cols) + 1
        room = width - fixed - (_MIN_NOTE if "message" in keys else 0)
        for r in rows:
            r["name"] = _cut(r.get("name") or "", max(NAME_MIN, min(NAME_MAX, room)))
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
    from gemmprof.render.table import ellipsize

    return ellipsize(text, max(2, width))


def _without_name(text: str, name) -> str:
    """A note that begins with the variant's own name says it once, in the name column."""
    prefix = f"{name}: "
    return text[len(prefix):] if name and text.startswith(prefix) else text
