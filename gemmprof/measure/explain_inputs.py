"""The facts `gemmprof explain` reads about a kernel: the model's (traffic, accesses, occupancy), the SASS mix (from
a saved run, else compiled here with nvcc), and a measurement when one is given (ncu's findings, a run's median)."""

from __future__ import annotations

import math
from dataclasses import replace

from gemmprof.model import traffic as mdl
from gemmprof.model.access_explain import analyse_kernel
from gemmprof.model.explain import KernelFacts
from gemmprof.model.explain_techniques import applied_by, ladder_of
from gemmprof.model.occupancy import occupancy


def _access_totals(kernel, shape, sms):
    la = analyse_kernel(kernel, shape, sms=sms)
    if la is None:
        return None, None, None, None
    g = [r for r in la.results if r.access.space == "global"]
    lines = sum(r.lines_per_request * r.requests_per_launch for r in g)
    ideal = sum(max(r.requests_per_launch, r.efficiency * r.sectors * 32 / 128) for r in g)
    return la.wavefronts(), la.wavefronts() - la.conflicts(), lines, ideal


def detect_applied(sass: dict | None, shared_wavefronts, global_lines, global_ideal, blocks, tiles) -> tuple:
    """What a kernel that is not a rung visibly applies, from its SASS and access model."""
    s = sass or {}
    out = []
    if global_lines is not None and global_lines <= 1.05 * (global_ideal or 0):
        out.append("coalescing")
    if shared_wavefronts or s.get("LDS") or s.get("LDS.128") or s.get("LDSM"):
        out.append("smem_tiling")
    if s.get("LDS.128") or s.get("LDG.128"):
        out.append("vectorized")
    if s.get("LDGSTS"):
        out.append("latency_hiding")
    if s.get("HMMA") or s.get("HGMMA") or s.get("QGMMA"):
        out.append("tensor_cores")
    if s.get("LDSM"):
        out.append("ldmatrix")
    if s.get("HGMMA") or s.get("QGMMA"):
        out.append("wgmma")
    if blocks < tiles:
        out.append("persistent")
    return tuple(out)


def facts_for(kernel, shape: mdl.GemmShape, gpu, variant=None, findings=None, sass=None, resources=None,
              measured_s: float | None = None, device: str | None = None, regime: str | None = None) -> KernelFacts:
    """`variant`: the kernel's VariantResult from a saved run (SASS, registers, median); `findings`: its ncu
    LaunchFindings; `sass`/`resources`: from a build here when there is no run. `device` and `regime`: where and how
    the run timed it (its measured ceiling is looked up by them; without a run, by the GPU spec, sustained)."""
    kernel.check_shape(shape)  # a shape the kernel rejects has nothing to explain (run refuses it too)
    dtype = kernel.run_dtype
    dt = mdl.get_dtype(dtype)
    grid, block, dyn = kernel.launch_config(shape, sms=gpu.sm_count)
    if findings is not None and findings.grid:
        grid = tuple(findings.grid)
    blocks = math.prod(grid)
    threads = math.prod(block)
    if variant is not None:
        resources = variant.resources or resources
        if variant.build is not None and variant.build.sass:
            sass = variant.build.sass
        measured_s = measured_s or variant.median_s
    if findings is not None and findings.duration_ns:
        measured_s = findings.duration_ns * 1e-9
    regs = resources.registers if resources else None
    static = resources.static_smem if resources else 0
    spills = (resources.spill_stores + resources.spill_loads) if resources else 0
    occ = occupancy(gpu, threads, regs or 0, static, dyn)
    tiles_model = kernel.tiles(shape, gpu.sm_count)
    if tiles_model.smem and tiles_model.BM > 1:
        # in clusters the model's tile is the cluster's (h7: two CTAs of 128 x 256 sharing B make one 256 x 256
        # tile of traffic): each CTA computes and writes its share of it
        ctas = math.prod(kernel.cluster_dims(shape, gpu.sm_count) or (1,))
        tiles = -(-shape.M // tiles_model.BM) * -(-shape.N // tiles_model.BN) * ctas
        tile_c = tiles_model.BM * tiles_model.BN * dt.output_bytes // ctas
        l2 = mdl.tiled_traffic(shape, dt, tiles_model).gmem_bytes
    else:
        tiles, tile_c, l2 = blocks, shape.M * shape.N * dt.output_bytes // blocks, None
    wf, wf_ideal, lines, lines_ideal = _access_totals(kernel, shape, gpu.sm_count)
    # the clock the run held while timing it (NVML samples, in runs since regimes were recorded): the peak is the
    # datasheet's scaled to it; without samples, the datasheet's own
    clocks = variant.clocks if variant is not None else None
    held = clocks.held_mhz if clocks is not None and clocks.samples else None
    peak = gpu.peak_flops_at(dt.peak_kind, held) if held else gpu.peak_flops(dt.peak_kind)
    rung = kernel.spec.id
    ladder = ladder_of(rung)
    applied = applied_by(rung) if ladder else detect_applied(sass, wf, lines, lines_ideal, blocks, tiles)
    ceiling, ceiling_note = measured_ceiling(gpu, dtype, device, regime)
    return KernelFacts(
        kernel=rung, name=kernel.variant_name, dtype=dtype,
        ladder=("fp32" if rung.isdigit() else "fp16") if ladder else None,
        shape=(shape.M, shape.N, shape.K), flops=mdl.gemm_flops(shape), peak_flops=peak, clock_mhz=held,
        blocks=blocks, tiles=max(tiles, blocks) if blocks >= tiles else tiles, tile_bytes_c=tile_c,
        blocks_per_sm=max(1, occ.active_blocks), warps_per_sm=occ.active_warps, registers=regs, spill_bytes=spills,
        sass=dict(sass) if sass else None, shared_wavefronts=wf, shared_ideal_wavefronts=wf_ideal,
        global_lines=lines, global_ideal_lines=lines_ideal, l2_bytes_model=l2,
        dram_bytes_model=mdl.min_bytes(shape, dt).total, c_bytes=shape.M * shape.N * dt.output_bytes,
        applied=applied, measured_s=measured_s, profile=findings, ceiling_flops=ceiling, ceiling_note=ceiling_note)


def measured_ceiling(gpu, dtype: str, device: str | None = None, regime: str | None = None
                     ) -> tuple[float | None, str]:
    """(this GPU's measured ceiling of `dtype` in FLOP/s, a note saying it is the compute bound's rate), or (None,
    "") where none is stored; a damaged store is (None, a note saying so)."""
    from gemmprof.catalog import ceilings as store

    regime = regime or "sustained"
    try:
        c = store.measured(device or gpu, dtype, regime)
    except store.CeilingStoreError as exc:
        return None, f"measured ceilings not used: {exc}"
    if c is None:
        return None, ""
    sheet, clock = store.datasheet(gpu, c)
    instead = f", not the datasheet's {sheet:.1f} TFLOP/s (at {clock:.0f} MHz)" if sheet else ""
    return c.per_s, f"compute bound at this GPU's measured {regime} ceiling: {c.describe()}{instead}"


BUILD_FAILED = "does not build"  # a note of build_facts that is a failure, not a limitation of this machine


def build_facts(kernel, arch: str = "sm_90"):
    """(sass facts, resources, note) from compiling `kernel` here with nvcc; without nvcc, or when the kernel does
    not compile, no SASS and a note saying why (the model still explains it)."""
    from gemmprof.errors import GemmprofError
    from gemmprof.measure.compile_pool import nvcc_build_all
    from gemmprof.measure.sass import facts

    try:
        result = nvcc_build_all([kernel], [arch], jobs=1)[0]
    except GemmprofError as exc:
        return None, None, f"not compiled ({exc})"
    if not result.ok:
        lines = result.log.strip().splitlines() or ["?"]
        why = result.error or next((x.strip() for x in lines if "error" in x.lower()), lines[-1])
        return None, None, f"{kernel.variant_name} {BUILD_FAILED}: {why}"
    if result.skipped or result.cubin is None:
        return None, result.resources, f"not compiled: {result.log}"
    return facts(result.cubin, keep=True), result.resources, None


def _latest_first(docs):
    return sorted(docs, key=lambda d: d.created or "", reverse=True)


def _variant_of(runs, rung: str, dtype: str):
    for r in runs:
        for v in r.variants:
            if v.id == rung and v.dtype == dtype and v.passed and v.plan is None:  # a rung's own row, not plan's
                return v
    return None


def _launch_of(profiles, name: str, shape):
    for p in profiles:
        for launch in p.launches:
            if launch.variant == name and (launch.shape is None or launch.shape == shape):
                return launch
    return None


def explain_ladder(ladder: str, runs, profiles, gpu):
    """The ladder check from saved runs (`gemmprof run` at one shape) and profiles (`gemmprof profile --save`)."""
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.errors import InputError
    from gemmprof.model.explain import explain
    from gemmprof.model.explain_ladder import STEPS, check

    runs, profiles = _latest_first(runs), _latest_first(profiles)
    shapes = {r.shape for r in runs}
    if len(shapes) != 1:
        raise InputError(f"--results: the runs have {len(shapes)} shapes ({', '.join(sorted(s.label for s in shapes))}); "
                         "the ladder check compares rungs at one shape")
    shape = shapes.pop()
    dtype = "fp32" if ladder == "fp32" else "fp16"
    rungs = [r for g in STEPS[ladder] for r in g.split("/")]
    explanations, timings = {}, []
    for r in runs:
        timings.append({v.id: v.median_s for v in r.variants if v.id in rungs and v.dtype == dtype and v.median_s
                        and v.plan is None})
    for spec in specmod.select(rungs):
        variant = _variant_of(runs, spec.id, dtype)
        if variant is None:
            continue
        kernel = bind(spec, {k: p for k, p in variant.params.items() if k in spec.params})
        findings = _launch_of(profiles, kernel.variant_name, shape)
        run = next(r for r in runs if any(v is variant for v in r.variants))
        explanations[spec.id] = explain(facts_for(kernel, shape, gpu, variant=variant, findings=findings,
                                                  **_where_timed(run)), gpu)
    return check(ladder, explanations, timings), explanations


def _where_timed(run) -> dict:
    """facts_for's device and regime from a saved run (None: no run)."""
    from gemmprof.catalog.ceilings import regime_of

    if run is None:
        return {}
    name = run.device.get("name") if isinstance(run.device, dict) else None
    return {"device": name if isinstance(name, str) else None, "regime": regime_of(run.timing_method)}


def explain_kernels(kernels, shape, gpu, runs=(), profiles=(), failures: list | None = None) -> list:
    """explain for each kernel at `shape`: SASS and median from the latest run that has it at this shape, else
    SASS from an nvcc build here; ncu's findings from the latest profile of it at this shape. A kernel that does
    not build is still explained from the model; `failures` (when given) gets one line for each. A planning entry
    is explained as the rung it chooses at `shape` on `gpu`'s SM count."""
    from gemmprof.catalog.plan import resolve
    from gemmprof.model.explain import explain

    runs_given = bool(runs)
    runs = [r for r in _latest_first(runs) if r.shape == shape]
    profiles = _latest_first(profiles)
    out = []
    for kernel in kernels:
        kernel = resolve(kernel, shape, gpu.sm_count)
        # the run's build is this kernel's only with the same parameters (a --param or a kept tune differs)
        variant, run = next(((v, r) for r in runs for v in r.variants if v.name == kernel.variant_name and v.passed
                             and (not v.params or v.params == kernel.params)), (None, None))
        findings = _launch_of(profiles, kernel.variant_name, shape)
        sass = resources = built = None
        if variant is None or variant.build is None or not variant.build.sass:
            sass, resources, built = build_facts(kernel.for_shape(shape, gpu.sm_count))  # as run builds it
            if built and f" {BUILD_FAILED}: " in built and failures is not None:
                failures.append(built)
        facts = facts_for(kernel, shape, gpu, variant=variant, findings=findings, sass=sass, resources=resources,
                          **_where_timed(run))
        notes = [built] if built else []
        if runs_given and variant is None:
            notes.append(f"--results: no verified run of {kernel.variant_name} at {shape.label} with these "
                         "parameters; SASS from nvcc here")
        if profiles and findings is None:
            notes.append(f"--profile-results: no launch of {kernel.variant_name} at {shape.label}")
        e = explain(facts, gpu)
        out.append(replace(e, notes=e.notes + tuple(notes)) if notes else e)
    return out


def explain_callables(refs, shape, dtype: str | None, gpu, profiles) -> list:
    """explain for Python callables from ncu's measurement alone (model/explain_measured.py): each callable's
    launches in the latest profile that has them at `shape` (None: the one shape the profile has them at)."""
    from gemmprof.errors import InputError
    from gemmprof.model.explain_measured import explain_launch

    out = []
    for ref in refs:
        launches = []
        for p in _latest_first(profiles):
            launches = [la for la in p.launches if la.variant == ref.name and la.duration_ns
                        and (shape is None or la.shape is None or la.shape == shape)]
            if launches:
                break
        if not launches:
            at = f" at {shape.label}" if shape is not None else ""
            raise InputError(f"--profile-results: no launch of {ref.name}{at} (profile it with `gemmprof profile --callable "
                             f"{ref.text} --save FILE.json`, or use --measure)")
        shapes = {la.shape for la in launches if la.shape is not None}
        if shape is None and len(shapes) > 1:
            raise InputError(f"--profile-results: {ref.name} was profiled at {len(shapes)} shapes "
                             f"({', '.join(sorted(s.label for s in shapes))}): give -m, -n, -k")
        at = shape or next(iter(shapes), None)
        if at is None:
            raise InputError(f"--profile-results: the launches of {ref.name} carry no shape: give -m, -n, -k")
        main = max(launches, key=lambda la: la.duration_ns)
        others = [la for la in launches if la is not main]
        out.append(explain_launch(main, at, dtype or main.dtype or "fp32", gpu, ref.name, others))
    return out


def measure_profile(selectors: list[str], spec_files, shape, dtype: str | None, workdir, params=(),
                    extra=()) -> object:
    """`gemmprof profile` of the kernels in a child process (ncu on one verified launch each): its results."""
    import subprocess
    import sys
    from pathlib import Path

    from gemmprof.errors import GemmprofError
    from gemmprof.results.profile import ProfileResults

    out = Path(workdir) / "profile.json"
    cmd = [sys.executable, "-m", "gemmprof", "profile", *selectors, "-m", str(shape.M), "-n", str(shape.N),
           "-k", str(shape.K), "--save", str(out), "--format", "json", "-o", str(Path(workdir) / "tables.json")]
    cmd += [x for f in spec_files for x in ("--spec", str(f))] + (["--dtype", dtype] if dtype else [])
    cmd += [f"--param={p}" for p in params] + list(extra)
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not out.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise GemmprofError(f"--measure: gemmprof profile failed ({last})")
    return ProfileResults.load(out)


def explain_run(run, profile, gpu) -> list:
    """explain for every verified ladder rung of a saved run (its SASS and median; ncu's findings from `profile`
    when it has the rung at the run's shape): `report`'s section. Nothing is compiled."""
    from gemmprof.catalog import spec as specmod
    from gemmprof.catalog.binding import bind
    from gemmprof.model.explain import explain

    out = []
    for v in run.variants:
        if v.kind != "ladder" or not v.passed:
            continue
        spec = next((s for s in specmod.ladder() if s.id == v.id), None)
        if spec is None:
            continue
        kernel = bind(spec, {k: p for k, p in v.params.items() if k in spec.params},
                              dtype=v.dtype if v.dtype in spec.dtypes else None)
        if v.plan is not None:  # a planning entry's row: its rung, named as the run named it (plan)
            kernel = replace(kernel, plan=v.plan)
        findings = _launch_of([profile] if profile else [], v.name, run.shape)
        out.append(explain(facts_for(kernel, run.shape, gpu, variant=v, findings=findings, **_where_timed(run)), gpu))
    return out
