"""The access model beside ncu for `gemmprof profile`: one AccessCheck (gemmprof.results.access_check) per launch
of a ladder rung that has an `accesses:` block, computed at the launch's shape and parameters."""

from __future__ import annotations

from gemmprof.errors import GemmprofError
from gemmprof.model.access_explain import NCU_METRICS, analyse_kernel, bound_like, compare
from gemmprof.results.access_check import AccessCheck, AccessComparison


def ncu_metrics(f) -> dict[str, float]:
    """The ncu counters compare() reads, from a LaunchFindings (its smem record and L1 bytes)."""
    sm = f.smem
    values = {"smem_ld_requests": sm.ld_requests, "smem_st_requests": sm.st_requests,
              "smem_ld_wavefronts": sm.ld_wavefronts, "smem_st_wavefronts": sm.st_wavefronts,
              "smem_ld_conflicts": sm.ld_conflicts, "smem_st_conflicts": sm.st_conflicts, "l1_bytes": f.l1_bytes,
              "smem_ld_wavefronts_addressed": sm.ld_wavefronts_addressed,
              "smem_ldsm_wavefronts_addressed": sm.ldsm_wavefronts_addressed,
              "smem_st_wavefronts_addressed": sm.st_wavefronts_addressed}
    return {NCU_METRICS[k]: v for k, v in values.items() if v is not None}


def check_launch(f, kernel) -> AccessCheck | None:
    """`kernel`: the bound rung the launch ran (None, or no accesses: block, or no shape: no check)."""
    if kernel is None or kernel.spec.accesses is None or f.shape is None:
        return None
    la = analyse_kernel(kernel, f.shape, grid=tuple(f.grid) if f.grid else None)
    out = [AccessComparison(c.quantity, c.predicted, c.ncu, c.check, c.note.why if c.note and not c.agrees else None)
           for c in compare(la, ncu_metrics(f), kernel.spec.accesses.notes)]
    return AccessCheck(out) if out else None


def attach(findings, kernels: dict | None = None, notes: list[str] | None = None) -> None:
    """Set f.accesses on every launch of a known rung. `kernels`: bound kernels by variant name (a live run, with
    its --param overrides); otherwise the ladder's specs bound with the template arguments in ncu's kernel name."""
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind

    specs = {}
    try:
        specs = {n: s for s in specmod.ladder() for n in (s.name, *s.aliases)}
    except GemmprofError as exc:
        if notes is not None:
            notes.append(f"ladder specs not read ({exc}): no access model beside ncu")
    for f in findings:
        kernel = (kernels or {}).get(f.variant)
        if kernel is None and f.variant in specs:
            try:
                kernel = bound_like(specs[f.variant], f.kernel_name, bind)
            except GemmprofError as exc:
                if notes is not None:
                    notes.append(f"{f.variant}: access model not computed ({exc})")
                continue
        try:
            f.accesses = check_launch(f, kernel)
        except GemmprofError as exc:
            if notes is not None:
                notes.append(f"{f.variant}: access model not computed ({exc})")
