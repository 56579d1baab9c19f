"""Nsight Systems reports compared side by side: rows per NVTX range or kernel, speedups, TFLOP/s, API time."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gemmprof.adapters.kernel_names import short_kernel_name
from gemmprof.errors import GemmprofError, GpuSpecError, InputError
from gemmprof.measure.nvtx import is_gemmprof_range, parse_range
from gemmprof.model.traffic import GemmShape, gemm_flops, get_dtype, tflops
from gemmprof.results.nsys import CompareRow, Comparison, NsysReport

__all__ = ["CompareRow", "Comparison", "compare", "looks_like_cublas_gemm"]  # the records live in results.nsys

_CUBLAS_KERNEL = re.compile(r"cublas|cutlass|xmma|(^|\s)(sm\d+|ampere|volta|turing|maxwell|kepler|hopper|ada|blackwell)_",
                            re.IGNORECASE)


def looks_like_cublas_gemm(name: str) -> bool:
    """cuBLAS's own GEMM kernels: sm80_xmma_gemm_..., ampere_sgemm_..., cutlass::Kernel2<cutlass_80_simt_sgemm_...>."""
    return "gemm" in name.lower() and bool(_CUBLAS_KERNEL.search(name))


_API_CATEGORIES = (("launch", ("launch",)), ("synchronize", ("synchronize",)), ("memcpy/memset", ("memcpy", "memset")),
                   ("alloc/free", ("malloc", "free", "alloc")),
                   ("module load", ("moduleload", "libraryload", "getfunction", "unload")))


def label(row: CompareRow) -> str:
    """How a row is named: its gemmprof variant, else its NVTX range, else its kernel's short name."""
    return row.variant or row.stats.range or short_kernel_name(row.stats.name)


def api_category(name: str) -> str:
    low = name.lower()
    return next((cat for cat, words in _API_CATEGORIES if any(w in low for w in words)), "other")


def _variant_dtype(variant: str) -> str:
    """The dtype of a cuBLAS baseline or ladder rung by name; fp32 when unknown."""
    from gemmprof.catalog.selection import dtype_of

    try:
        return dtype_of(variant) or "fp32"
    except GemmprofError:
        return "fp32"


def _gpu_spec_for(report: NsysReport, explicit):
    """The spec of the GPU the report names; else --gpu/--gpu-file; else H100 SXM as elsewhere; else None."""
    from gemmprof.catalog import gpu_specs

    try:
        own = gpu_specs.gpu_for_device_name(report.gpu_name) if report.gpu_name else None
        return own or explicit or (None if report.gpu_name else gpu_specs.get_gpu("h100"))
    except GpuSpecError:
        return explicit


def _match(row: CompareRow, needle: str) -> int:
    fields = [row.variant, row.stats.range, row.stats.name, short_kernel_name(row.stats.name)]
    if needle in fields:
        return 2
    return 1 if any(f and needle.lower() in f.lower() for f in fields) else 0


def _baselines(rows: list[CompareRow], wanted: str | None) -> dict[str | None, CompareRow]:
    """Baseline rows of one report, keyed by dtype (None: for every row)."""
    def biggest(cands):
        return max(cands, key=lambda r: r.stats.total_ns) if cands else None

    if wanted:
        scores = [(_match(r, wanted), r) for r in rows]
        best = max((s for s, _ in scores), default=0)
        found = biggest([r for s, r in scores if s == best and s > 0])
        return {None: found} if found else {}
    cublas = [r for r in rows if r.variant and r.variant.startswith("cublas")]
    if cublas:
        by_dtype = {}
        for r in sorted(cublas, key=lambda r: -r.stats.total_ns):
            by_dtype.setdefault(r.dtype, r)
        by_dtype[None] = by_dtype.get("fp32") or biggest(cublas)
        return by_dtype
    found = biggest([r for r in rows if looks_like_cublas_gemm(r.stats.name)])
    return {None: found} if found else {}


@dataclass
class _Part:
    """One report's share of a comparison."""

    report: NsysReport
    rows: list[CompareRow]
    bases: dict[str | None, CompareRow]
    gpu_spec: object
    by_range: bool


def compare(reports: list[NsysReport], *, baseline: str | None = None, shape: GemmShape | None = None,
            dtype: str | None = None, gpu_spec=None, group_by: str = "auto",
            failed: dict[str, str] | None = None) -> Comparison:
    """Rows per NVTX range (or kernel) per report, with speedup against a baseline and TFLOP/s where the shape is known.

    Speedups are against the baseline row of the same report (per dtype for gemmprof's cublas_* ranges); a report
    without one uses the first report's. `failed` names inputs that could not be read, for the record.
    """
    notes: list[str] = []
    parts = []
    for rep in reports:
        by_range = group_by != "kernel" and rep.has_ranges
        if group_by == "range" and not rep.has_ranges:
            notes.append(f"{rep.path}: no kernel was launched inside an NVTX range; grouped by kernel name")
        own = _gpu_spec_for(rep, gpu_spec)
        if gpu_spec is not None and own is not gpu_spec:
            notes.append(f"{rep.path}: peaks of its own GPU ({own.name}), not of --gpu/--gpu-file")
        rows = _rows(rep, by_range, shape, dtype, own, notes)
        notes += several_kernels(rep.path, rows) if by_range else []
        if own is None and any(r.shape for r in rows):
            notes.append(f"{rep.path}: no GPU spec for {rep.gpu_name or 'its GPU'}: no % of peak "
                         "(pass --gpu or --gpu-file)")
        parts.append(_Part(rep, rows, _baselines(rows, baseline), own, by_range))
    fallback = next((p.bases[None] for p in parts if p.bases.get(None)), None)
    if baseline and fallback is None:
        labels = sorted({label(r) for p in parts for r in p.rows})
        raise InputError(f"--baseline: no row matches {baseline!r} (rows: {', '.join(labels)})")
    if fallback is None:
        notes.append("no cuBLAS row found (a gemmprof cublas_* range or a cuBLAS gemm kernel): no speedups; "
                     "pick a row with --baseline NAME")
    inputs = []
    for p in parts:
        if fallback is not None and not p.bases:
            notes.append(f"{p.report.path}: no baseline row of its own; speedups are against {label(fallback)} "
                         f"in {fallback.input}")
        for row in p.rows:
            own = None if (row.variant or "").startswith("cublas") else p.bases.get(row.dtype)
            base = own or p.bases.get(None) or fallback
            if base is not None and row.stats.avg_ns:
                row.speedup = base.stats.avg_ns / row.stats.avg_ns
                base.baseline = True
        rep = p.report
        inputs.append({"input": rep.path, "format": rep.format, "gpu": rep.gpu_name, "nsys_version": rep.nsys_version,
                       "gpu_spec": p.gpu_spec.name if p.gpu_spec else None,
                       "grouped_by": "range" if p.by_range else "kernel",
                       "baseline": next((label(r) for r in p.rows if r.baseline), None), "error": rep.problem})
        notes.extend(rep.notes)
    inputs += [{"input": path, "error": message} for path, message in (failed or {}).items()]
    title = "Nsight Systems kernels" + (f" from {len(inputs)} reports" if len(inputs) > 1 else "")
    return Comparison(_interleave(parts), inputs, _activity(reports), notes, title)


def several_kernels(path, rows) -> list[str]:
    """A variant that launches several kernels per call (a host launcher's split-K and its reduction) has a row per
    kernel under its one range: say so, since each row's TFLOP/s is the whole GEMM over that kernel's time."""
    names: dict[str, set[str]] = {}
    for r in rows:
        if r.variant:
            names.setdefault(r.variant, set()).add(short_kernel_name(r.stats.name))
    return [f"{path}: {v}: {len(k)} kernels per call ({', '.join(sorted(k))}), a row each; each row's TFLOP/s is "
            "the whole GEMM's FLOPs over that kernel's time" for v, k in names.items() if len(k) > 1]


def _rows(rep: NsysReport, by_range: bool, shape, dtype, gpu_spec, notes: list[str]) -> list[CompareRow]:
    stats = rep.kernels(by_range)
    total = sum(s.total_ns for s in stats)
    if by_range:
        outside = [s for s in stats if s.range is None]
        if outside:
            notes.append(f"{rep.path}: {sum(s.instances for s in outside)} launches outside NVTX ranges "
                         f"({sum(s.total_ns for s in outside) / 1e6:.3g} ms: setup, verification) are not shown; "
                         "--group-by kernel lists every kernel")
        stats = [s for s in stats if s.range is not None]
        ours = [s for s in stats if is_gemmprof_range(s.range)]
        if ours and len(ours) < len(stats):
            # a gemmprof run: its ranges are the comparison; CuPy's own (CCCL:cub::...) belong to verification
            others = [s for s in stats if not is_gemmprof_range(s.range)]
            notes.append(f"{rep.path}: {sum(s.instances for s in others)} launches in other NVTX ranges "
                         f"({', '.join(sorted({s.range for s in others}))}) are not shown; --group-by kernel lists all")
            stats = ours
        stats = sorted(stats, key=lambda s: (not is_gemmprof_range(s.range), s.first_start_ns or 0))
    else:
        stats = sorted(stats, key=lambda s: -s.total_ns)
    if any(is_gemmprof_range(s.range) for s in stats):
        shape = None  # gemmprof's ranges carry their shapes; -m/-n/-k would only mislabel other ranges' kernels
    rows = []
    for s in stats:
        variant, rshape = parse_range(s.range) or (None, None)
        row = CompareRow(rep.path, s, variant=variant, shape=rshape or shape,
                         gpu_time_pct=100 * s.total_ns / total if total else None,
                         dtype=dtype or (_variant_dtype(variant) if variant else "fp32"))
        if row.shape:
            row.flops = gemm_flops(row.shape)
            row.tflops = tflops(row.flops, s.avg_ns * 1e-9)
            try:
                row.peak_tflops = gpu_spec.peak_flops(get_dtype(row.dtype).peak_kind) / 1e12 if gpu_spec else None
            except GpuSpecError:  # the GPU spec gives no peak for this dtype
                row.peak_tflops = None
            if row.peak_tflops:
                row.pct_of_peak = 100 * row.tflops / row.peak_tflops
        rows.append(row)
    per_range: dict[str, set] = {}
    for row in rows:
        if row.stats.range:
            per_range.setdefault(row.stats.range, set()).add(row.stats.name)
    notes += [f"{rep.path}: range {rng!r} ran {len(names)} different kernels; each row's TFLOP/s counts the whole "
              "GEMM for that kernel alone" for rng, names in per_range.items() if len(names) > 1]
    return rows


def _interleave(parts: list[_Part]) -> list[CompareRow]:
    """Rows of the same range and kernel from every report next to each other, in first-seen order."""
    order: dict[tuple, int] = {}
    for p in parts:
        for r in p.rows:
            order.setdefault((label(r), r.stats.name), len(order))
    ranked = [(order[(label(r), r.stats.name)], i, j, r) for i, p in enumerate(parts) for j, r in enumerate(p.rows)]
    return [r for *_, r in sorted(ranked, key=lambda t: t[:3])]


def _activity(reports: list[NsysReport]) -> list[dict]:
    out = []
    for rep in reports:
        cats: dict[str, list] = {}
        for call in rep.api:
            acc = cats.setdefault(api_category(call.name), [0, 0, []])
            acc[0] += call.calls
            acc[1] += call.total_ns
            acc[2].append(call.name)
        api_total = sum(c[1] for c in cats.values())
        order = [c for c, _ in _API_CATEGORIES] + ["other"]
        for cat in sorted(cats, key=order.index):
            calls, total, names = cats[cat]
            out.append({"input": rep.path, "source": "CUDA API", "category": cat, "calls": calls, "total_ns": total,
                        "avg_ns": total / calls if calls else None,
                        "share_pct": 100 * total / api_total if api_total else None, "bytes": None,
                        "names": sorted(names)})
        ops_total = sum(op.total_ns or 0 for op in rep.memops)
        for op in rep.memops:
            out.append({"input": rep.path, "source": "GPU memory", "category": op.operation, "calls": op.count,
                        "total_ns": op.total_ns, "avg_ns": op.total_ns / op.count if op.total_ns and op.count else None,
                        "share_pct": 100 * op.total_ns / ops_total if op.total_ns and ops_total else None,
                        "bytes": op.bytes, "names": []})
    return out
