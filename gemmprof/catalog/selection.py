"""Choosing kernels from the command line: rungs by id, range or name, --all/--dtype, --spec FILE, --param."""

from __future__ import annotations

from dataclasses import replace

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import BoundKernel, bind, parse_param_overrides
from gemmprof.errors import InputError
from gemmprof.results.run import CUBLASLT_FP8, FP8_DTYPES

NOTHING_CHOSEN = "no variants selected: name rungs (e.g. 1-6, 10, warptiling), pass --all or --spec FILE"


def choose(variants=(), *, all_: bool = False, dtype: str | None = None, spec_files=(), params=(),
           everything_by_default: bool = False, tuned_for: str | None = None, c_dtype: str | None = None,
           scales: str | None = None) -> list[BoundKernel]:
    """The selected kernels bound to their parameters; --param NAME=V goes to every chosen kernel that has NAME.
    `c_dtype` (--c-dtype) builds every chosen kernel whose spec lists `c_dtypes` for that C (one that does not list
    it is an error); `scales` (--scales) builds every chosen fp8 kernel for that scale mode (one that does not take
    it is an error).

    With `tuned_for` (a device name), a kernel whose `gemmprof tune --keep` winner was kept for that device and
    whose source has not changed since starts from those parameters instead of the spec's (--param still wins);
    its BoundKernel says so in `params_source`."""
    overrides = parse_param_overrides(params)
    if variants or all_:
        chosen = specmod.select(variants, all_=all_, dtype=dtype)
    elif everything_by_default and not spec_files:
        chosen = [s for s in specmod.ladder() if dtype is None or dtype == s.dtype or dtype in s.dtypes]
    else:
        chosen = []
    chosen += [s for s in specmod.load_user_specs(spec_files) if s not in chosen]
    if not chosen:
        raise InputError(NOTHING_CHOSEN)
    if any(s.plan for s in chosen):  # a planning entry: every rule's rung exists and takes its parameters
        from gemmprof.catalog.plan import check_plan

        for s in chosen:
            if s.plan:
                check_plan(s, specmod.ladder())
    if overrides and not any(set(overrides) <= set(s.params) for s in chosen):
        raise InputError(f"--param: no selected variant has {', '.join(overrides)}")
    out = []
    for s in chosen:
        tuned, source = _tuned(s, tuned_for) if tuned_for else ({}, "")
        # --dtype bf16 builds a rung whose source serves several dtypes (h4-h13) for bf16; others run as they are
        k = bind(s, {**tuned, **{k: v for k, v in overrides.items() if k in s.params}},
                 dtype=dtype if dtype in s.dtypes else None, c_dtype=c_dtype if len(s.c_dtypes) > 1 or s.scales else None,
                 scales=scales if s.scales else None)
        out.append(replace(k, params_source=source) if source else k)
    return out


def _tuned(spec, device: str) -> tuple[dict[str, int], str]:
    from gemmprof.catalog.paths import default_cache_dir
    from gemmprof.catalog.sources import source_hash
    from gemmprof.catalog.tuned_defaults import defaults_path, load_tuned_defaults

    entry = load_tuned_defaults(default_cache_dir(), device, spec.name)
    if entry is None or not entry.is_current(source_hash(spec)):
        return {}, ""
    params = {k: v for k, v in entry.params.items() if k in spec.params}
    return params, f"tuned on {device} at {entry.shape} ({defaults_path(default_cache_dir())})"


def dtype_of(name: str) -> str | None:
    """The dtype of a cuBLAS baseline, ladder rung or planning entry (by name, id or former name); None when
    unknown."""
    from gemmprof.catalog.baselines import by_name

    baselines = by_name()  # the half-C ones too (cublas_hgemm_cfp16: compare-nsys reads ranges by name)
    if name in baselines:
        return baselines[name].dtype
    parts = name.split("_")
    if len(parts) >= 3 and parts[0] == CUBLASLT_FP8 and parts[1] in FP8_DTYPES:  # cublaslt_e4m3_cbf16[_1x128]
        return parts[1]
    for s in (*specmod.ladder(), *specmod.plans()):
        if s.answers_to(name):
            return s.dtype
        for d in s.dtypes:  # a rung built for another of its dtypes runs as NAME_DTYPE (binding.variant_name)
            if name == f"{s.name}_{d}":
                return d
        if s.scales and name.startswith(f"{s.name}_"):  # an fp8 rung's C dtype and scales: NAME_cfp32_1x128
            rest = name[len(s.name) + 1:].split("_")
            if all(p in s.scales or p in {f"c{c}" for c in s.c_dtypes} for p in rest):
                return s.dtype
    return None
