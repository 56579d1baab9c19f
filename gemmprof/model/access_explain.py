"""What `list --explain RUNG` and `profile` say about a rung's accesses: findings as data, then plain text.

`kernel` is a bound kernel (gemmprof.catalog.binding.BoundKernel: .spec.accesses, .env, .launch_config(shape)); `ncu` is a
mapping from ncu metric names to numbers for one launch of that kernel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from gemmprof.catalog.accesses import DocumentedDifference
from gemmprof.model.access import SECTOR, LaunchAccesses, analyse

TOLERANCE = 0.10  # relative, against ncu's value
SEED_BANKS = 16  # the bank count some seeds reason with (the H100, like every GPU since Kepler, has 32)

NCU_METRICS = {
    "smem_ld_requests": "smsp__inst_executed_op_shared_ld.sum",
    "smem_st_requests": "smsp__inst_executed_op_shared_st.sum",
    "smem_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smem_st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smem_ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smem_st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1_bytes": "l1tex__t_bytes.sum",
    "smem_ld_wavefronts_addressed": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smem_ldsm_wavefronts_addressed": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "smem_st_wavefronts_addressed": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
}


@functools.cache
def _default_sms() -> int:
    """The SM count of the GPU spec the commands default to without a device (H100 SXM); read once."""
    from gemmprof.catalog.gpu_specs import get_gpu

    return get_gpu("h100").sm_count


def analyse_kernel(kernel, shape, banks: int = 32, sms: int | None = None,
                   grid: tuple[int, int, int] | None = None) -> LaunchAccesses | None:
    """`grid`: the launch's own (from ncu) when known; else the spec's at `shape`, with `sms` as the name SMS
    (grids that depend on the SM count: persistent kernels, the orientation of rungs 14 and 15), by default the
    H100 SXM's."""
    block_desc = kernel.spec.accesses
    if block_desc is None:
        return None
    sms = sms or _default_sms()
    spec_grid, block, _ = kernel.launch_config(shape, sms=sms)
    env = {**kernel.env, **kernel.decomposition(shape, sms), "M": shape.M, "N": shape.N, "K": shape.K}
    return analyse(block_desc, env, grid or spec_grid, block, banks)


def bound_like(spec, kernel_name: str, bind):
    """`bind(spec, params)` with the template arguments ncu printed in `kernel_name` (the profiled build may predate
    today's defaults); the defaults when the name has none (nvcc-built rungs set parameters with -D)."""
    import re

    args = re.search(r"<([\d, ]+)>", kernel_name or "")
    if not args or not spec.template:
        return bind(spec)
    return bind(spec, dict(zip(spec.template, (int(a) for a in args[1].split(",")), strict=False)))


def summary(la: LaunchAccesses) -> dict[str, float | None]:
    """Per rung, as `gemmprof model` shows it: global sectors per request and coalescing efficiency, shared
    wavefronts per request and n-way degree, for loads and stores. Requests no lane takes part in (predicated-off
    instructions) are left out here; they count in the ncu comparison, where ncu counts them."""
    out: dict[str, float | None] = {}
    for op, tag in (("load", "ld"), ("store", "st")):
        g = [r for r in la.results if r.access.space == "global" and r.access.op == op]
        reqs, sectors = sum(r.requests_per_launch for r in g), sum(r.sectors for r in g)
        useful = sum(r.efficiency * r.sectors * SECTOR for r in g)
        out[f"g{tag}_sectors_per_request"] = sectors / reqs if reqs else None
        out[f"g{tag}_efficiency"] = useful / (sectors * SECTOR) if sectors else None
        sh = [r for r in la.results if r.access.space == "shared" and r.access.op == op and r.wavefronts]
        reqs, wf, ideal = (sum(r.requests_per_launch for r in sh), sum(r.wavefronts for r in sh),
                           sum(r.ideal_wavefronts for r in sh))
        out[f"s{tag}_wavefronts_per_request"] = wf / reqs if reqs else None
        out[f"s{tag}_conflicts_per_request"] = (wf - ideal) / reqs if reqs else None
        out[f"s{tag}_degree"] = wf / ideal if ideal else None
    out["gmem_sector_bytes"] = la.sectors() * SECTOR
    return out


def ncu_quantities(ncu) -> dict[str, float]:
    """Per-request figures from ncu's counters; gmem_sectors from the L1 tag-stage bytes (l1tex__t_bytes / 32)."""
    out: dict[str, float] = {}
    for op in ("ld", "st"):
        reqs = ncu.get(NCU_METRICS[f"smem_{op}_requests"])
        if reqs:  # each counter on its own: a report may lack one (another --metrics list, a damaged file)
            for figure, counter in (("wavefronts", f"smem_{op}_wavefronts"), ("conflicts", f"smem_{op}_conflicts")):
                if ncu.get(NCU_METRICS[counter]) is not None:
                    out[f"smem_{op}_{figure}_per_request"] = ncu[NCU_METRICS[counter]] / reqs
    if ncu.get(NCU_METRICS["l1_bytes"]) is not None:
        out["gmem_sectors"] = ncu[NCU_METRICS["l1_bytes"]] / SECTOR
    # launch totals as ncu derives them from the addresses (its SASS counters): loads with ldmatrix's
    ld, ldsm = ncu.get(NCU_METRICS["smem_ld_wavefronts_addressed"]), ncu.get(NCU_METRICS["smem_ldsm_wavefronts_addressed"])
    if ld is not None or ldsm is not None:
        out["smem_ld_wavefronts_addressed"] = (ld or 0) + (ldsm or 0)
    if ncu.get(NCU_METRICS["smem_st_wavefronts_addressed"]) is not None:
        out["smem_st_wavefronts_addressed"] = ncu[NCU_METRICS["smem_st_wavefronts_addressed"]]
    return out


def predicted_quantities(la: LaunchAccesses) -> dict[str, float]:
    """The model's figures defined as ncu's are: wavefronts (ldmatrix's included) over shared-memory instructions
    other than ldmatrix (smsp__inst_executed_op_shared_ld does not count LDSM)."""
    out: dict[str, float] = {}
    for op, name in (("load", "ld"), ("store", "st")):
        n = la.requests("shared", op, ldmatrix=False)
        if n:
            out[f"smem_{name}_wavefronts_per_request"] = la.wavefronts(op) / n
            out[f"smem_{name}_conflicts_per_request"] = la.conflicts(op) / n
    out["gmem_sectors"] = la.sectors()
    for op, name in (("load", "ld"), ("store", "st")):
        if la.requests("shared", op, ldmatrix=True):
            out[f"smem_{name}_wavefronts_addressed"] = la.wavefronts(op)
    return out


@dataclass(frozen=True)
class Comparison:
    quantity: str
    predicted: float
    ncu: float
    agrees: bool  # within TOLERANCE (conflicts: within TOLERANCE of the wavefronts per request)
    note: DocumentedDifference | None = None

    @property
    def check(self) -> str:
        if self.agrees:
            return "ok"
        return "explained" if self.note else "DIFFERS"


def compare(la: LaunchAccesses, ncu, notes=()) -> list[Comparison]:
    """Model against ncu, quantity by quantity, with the rung's documented differences attached."""
    pred, meas = predicted_quantities(la), ncu_quantities(ncu)
    by_quantity = {n.quantity: n for n in notes}
    out = []
    for q, p in pred.items():
        if q not in meas:
            continue
        m = meas[q]
        if "conflicts" in q:
            scale = meas.get(q.replace("conflicts", "wavefronts"), 1.0)
        else:
            scale = abs(m)
        agrees = abs(p - m) <= TOLERANCE * max(scale, 1e-12)
        out.append(Comparison(q, p, m, agrees, by_quantity.get(q)))
    return out


@dataclass(frozen=True)
class Explanation:
    rung: str
    accesses: list[dict] = field(default_factory=list)  # one row per access
    claims: list[dict] = field(default_factory=list)
    text: str = ""


def _row(r, r16) -> dict:
    a = r.access
    row = {"access": a.name, "space": a.space, "op": a.op, "bytes": a.bytes, "requests": r.requests_per_launch}
    if a.space == "global":
        row.update(sectors_per_request=r.sectors_per_request, lines_per_request=r.lines_per_request,
                   efficiency=r.efficiency)
    else:
        row.update(wavefronts_per_request=r.wavefronts_per_request, conflicts_per_request=r.conflicts_per_request,
                   degree=r.degree, degree_16_banks=r16.degree)
    return row


def _fmt(row) -> str:
    head = f"  {row['access']}: {row['space']} {row['op']} of {row['bytes']} B, {row['requests']:,} requests;"
    if row["space"] == "global":
        return (f"{head} {row['sectors_per_request']:.2f} sectors and {row['lines_per_request']:.2f} lines per "
                f"request, {100 * row['efficiency']:.0f}% of sector bytes used")
    if row["wavefronts_per_request"] == 0:
        return f"{head} predicated off (no lane on): issued, no wavefront; ncu counts it as a shared-memory instruction"
    text = (f"{head} {row['wavefronts_per_request']:.2f} wavefronts per request "
            f"({row['degree']:.2f}-way, {row['conflicts_per_request']:.2f} conflicts)")
    if abs(row["degree_16_banks"] - row["degree"]) > 1e-9:
        text += f"; counting {SEED_BANKS} banks as the seeds do would say {row['degree_16_banks']:.2f}-way"
    return text


def explain(kernel, shape) -> Explanation | None:
    """Findings for one rung at one shape: per-access rows, the documents' claims, the notes on ncu."""
    la = analyse_kernel(kernel, shape)
    if la is None:
        return None
    la16 = analyse_kernel(kernel, shape, banks=SEED_BANKS)
    rows = [_row(r, r16) for r, r16 in zip(la.results, la16.results, strict=True)]
    lines = [f"{kernel.spec.id} {kernel.spec.name} at {shape.label}: accesses of one warp, per request"]
    lines += [_fmt(r) for r in rows]
    lines.append(f"  launch: {la.sectors():,} global sectors ({la.sectors() * SECTOR / 1e9:.2f} GB at L1), "
                 f"{la.wavefronts():,} shared wavefronts, {la.conflicts():,} bank conflicts")
    if any(r.access.ldmatrix for r in la.results):
        ncu_def = predicted_quantities(la).get("smem_ld_wavefronts_per_request")
        lines.append("  ncu's shared-load requests (smsp__inst_executed_op_shared_ld) leave ldmatrix out, so ncu's "
                     "wavefronts per request divide every wavefront, ldmatrix's included, by the other shared loads: "
                     + (f"{ncu_def:.2f} predicted on that definition" if ncu_def is not None
                        else "no such loads here, so ncu shows none"))
    claims = []
    for c in kernel.spec.accesses.claims:
        entry = {"claim": c["claim"], "finding": c["finding"]}
        lines.append(f"  document: {c['claim']}")
        lines.append(f"  model: {c['finding']}")
        claims.append(entry)
    for n in kernel.spec.accesses.notes:
        lines.append(f"  ncu differs on {n.quantity} (ncu {n.ncu:g}): {n.why}")
    return Explanation(kernel.spec.id, rows, claims, "\n".join(lines))
