"""Roofline data from what the user has: run results, ncu profile results, or the model alone.

Each function takes typed results and returns gemmprof.model.roofline.RooflineData; the command only parses
options. `choose_gpu(named)` picks the GPU spec sheet given the key a results file names (or None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gemmprof.catalog.gpu_specs import GpuSpec
from gemmprof.errors import InputError
from gemmprof.model import roofline as rl
from gemmprof.model.traffic import GemmShape
from gemmprof.results.profile import ProfileResults
from gemmprof.results.run import RunResult


@dataclass(frozen=True)
class RooflineChoice:
    dtype: str | None = None  # only rows of this dtype; None for all
    baselines: bool = True  # the cuBLAS rows
    measured: bool = True  # draw the GPU spec's measured ceilings beside the datasheet ones
    ceiling: str = "datasheet"  # the ceilings the table's roof, bound and headroom use


@dataclass(frozen=True)
class ProfileInput:
    results: ProfileResults
    origin: str  # the file it came from, for notes


def from_results(runs: list[tuple[str, RunResult]], profile: ProfileInput | None, choice: RooflineChoice,
                 choose_gpu: Callable[[str | None], GpuSpec], shape: GemmShape | None = None) -> rl.RooflineData:
    """Run results (merged: a verified row beats a failed one, then the later file wins) and profile results.

    `shape` is needed only when there are no run results and the profile's launches have no common shape."""
    from gemmprof.catalog.ceilings import regime_of

    run_shape = beta = named = None
    variants, device, regimes = {}, "", set()
    for origin, run in runs:
        if run_shape is not None and (run.shape, run.beta) != (run_shape, beta):
            raise InputError(f"{origin}: shape {run.shape.label}, beta={run.beta:g} differs from {run_shape.label}, "
                             f"beta={beta:g} of the files before it; plot one shape at a time")
        run_shape, beta, device = run.shape, run.beta, run.device.get("name", device)
        named = named or run.gpu_spec
        regimes.add(regime_of(run.timing_method))
        for v in run.variants:
            old = variants.get(v.name)
            if old is None or v.passed or not old.passed:
                variants[v.name] = v
    if run_shape is None:
        if profile is None:
            raise InputError("nothing to plot: no run results and no profile results")
        run_shape = shape or profile.results.common_shape
        if run_shape is None:
            raise InputError(f"{profile.origin}: its launches have no common shape: pick one with --size or -m/-n/-k")
        named, device, beta = profile.results.gpu_spec, profile.results.gpu or "", 0.0
    gpu = choose_gpu(named)
    keep = {"dtype": choice.dtype, "baselines": choice.baselines}
    rungs, excluded = rl.rungs_from_variants(list(variants.values()), run_shape, gpu, beta=beta, **keep)
    notes = rl.attach_profile(rungs, profile.results.launches, run_shape, gpu, origin=profile.origin, beta=beta,
                              **keep) if profile is not None else []
    if not rungs:
        what = ", ".join(f for f, _ in runs) or (profile.origin if profile else "")
        only = f" of {choice.dtype}" if choice.dtype else ""
        raise InputError(f"nothing to plot: no verified, timed variant{only} in {what}"
                         + (f" (not plotted: {'; '.join(excluded)})" if excluded else ""))
    return rl.build(gpu, run_shape, rungs, measured=choice.measured, source=choice.ceiling, device=device,
                    excluded=excluded, notes=notes, held=rl.held_clocks(list(variants.values())),
                    regime=regimes.pop() if len(regimes) == 1 else None)


def from_model(specs, shape: GemmShape, gpu: GpuSpec, profile: ProfileInput | None, choice: RooflineChoice,
               beta: float = 0.0) -> rl.RooflineData:
    """Each rung on the roof at its traffic model's intensity (an estimate), with ncu's points if given."""
    rungs, excluded = rl.rungs_from_model(specs, shape, gpu, beta=beta, source=choice.ceiling, dtype=choice.dtype)
    notes = rl.attach_profile(rungs, profile.results.launches, shape, gpu, origin=profile.origin,
                              beta=beta) if profile else []
    if not rungs:
        raise InputError(f"nothing to plot: every selected rung rejects {shape.label} ({'; '.join(excluded)})")
    return rl.build(gpu, shape, rungs, measured=choice.measured, source=choice.ceiling, estimate=True,
                    excluded=excluded, notes=notes)
