"""explain's results as tables: one per kernel (its limiters, ranked), and the ladder check."""

from __future__ import annotations

from gemmprof.model.explain import ATTAINABLE, KINDS, Explanation
from gemmprof.model.explain_ladder import TARGET_MATCH, TARGET_WITHIN, TOLERANCE, LadderCheck
from gemmprof.render.table import Column, Table

LIMITER_COLUMNS = [
    Column("kernel", "kernel", fmt="s"), Column("rank", "#"), Column("limiter", "limiter", fmt="s"), Column("evidence", "evidence", fmt="s"),
    Column("bound_ms", "bound", "ms", ".3f"), Column("bound_tflops", "ceiling", "TFLOP/s", ".1f"),
    Column("gain", "gain if lifted", "x", ".2f"), Column("lift", "what lifts it", fmt="s"),
    Column("source", "from", fmt="s"),
]

# The default view: one line per limiter; the evidence and the whole remedy are in --verbose, JSON and CSV.
SHORT_KINDS = {"math_pipe": "FMA/tensor peak", "tensor_pipe": "tensor pipe use", "issue": "issue slots",
               "l1_wavefronts": "L1 wavefronts", "l2": "L2 bandwidth", "dram": "DRAM bandwidth",
               "latency": "latency", "waves": "waves and tail", "epilogue": "epilogue", "spills": "spills"}
BRIEF_COLUMNS = [
    Column("rank", "#"), Column("short", "limiter", fmt="s", wrap=False),
    Column("bound_ms", "bound", "ms", ".3f"), Column("bound_tflops", "ceiling", "TFLOP/s", ".1f"),
    Column("gain", "gain if lifted", "x", ".2f"), Column("lifted_by", "lifted by (rung: technique)", fmt="s", wrap=False),
    Column("source", "from", fmt="s", drop=2),
]

LADDER_COLUMNS = [
    Column("step", "step", fmt="s"), Column("top_limiter", "top limiter", fmt="s"),
    Column("technique", "it recommends", fmt="s"), Column("next_techniques", "next rung applies", fmt="s"),
    Column("match", "match"), Column("predicted_speedup", "predicted", "x", ".2f"),
    Column("measured_speedup", "measured", "x", ".2f"), Column("within", f"within {TOLERANCE:.0%}"),
    Column("why", "why it misses", fmt="s"),
]


def _lifted_by(lim) -> str:
    """The remedy in a few words: the rung that teaches it, then the technique."""
    what = lim.technique.replace("_", " ") if lim.technique else lim.lift.split(":")[0]
    return f"{lim.rung}: {what}" if lim.rung else what


def explanation_table(e: Explanation, verbose: bool = True) -> Table:
    """The limiters of one kernel, ranked. verbose=False: one line each (the terminal's default view); the rows
    keep every field either way, and the JSON has the whole explanation."""
    rows = []
    for i, lim in enumerate(e.limiters, 1):
        rows.append({"kernel": e.kernel, "rank": i, "limiter": KINDS.get(lim.kind, lim.kind), "kind": lim.kind, "evidence": lim.evidence,
                     "bound_ms": lim.bound_s * 1e3 if lim.bound_s is not None else None,
                     "bound_tflops": lim.bound_tflops, "gain": lim.gain, "lift": lim.lift,
                     "technique": lim.technique, "rung": lim.rung, "source": lim.source,
                     "short": SHORT_KINDS.get(lim.kind, lim.kind), "lifted_by": _lifted_by(lim)})
    measured = f"measured {e.measured_s * 1e3:.3f} ms" if e.measured_s else "not measured"
    title = (f"{e.kernel} {e.name} ({e.dtype}) at {'x'.join(map(str, e.shape))} on {e.gpu}: {measured}, "
             f"model {e.model_s * 1e3:.3f} ms")
    notes = ["bound: the time this limiter alone forces (waves, epilogue: the time they add); ceiling: 2*M*N*K "
             "over it; gain: the speedup lifting it predicts (ranked by it); latency: the measured time beyond the "
             f"largest throughput bound at {ATTAINABLE:.0%} of its peak"]
    if e.needs_measurement:
        notes.append(f"needs a measurement (--profile-results, --results or --measure): {', '.join(e.needs_measurement)}")
    if e.applied:
        notes.append(f"already applied, never recommended: {', '.join(e.applied)}")
    notes += list(e.notes)
    if not verbose:
        notes[0] = ("bound: the time this limiter alone forces; ceiling: 2*M*N*K over it; gain: the speedup lifting "
                    "it predicts (ranked by it). The evidence and each remedy in full: --verbose or --format json.")
    return Table(title, LIMITER_COLUMNS if verbose else BRIEF_COLUMNS, rows, notes,
                 meta={"explanation": e.to_dict()})


def ladder_table(c: LadderCheck) -> Table:
    rows = [{**s.to_dict(), "next_techniques": ", ".join(s.next_techniques)} for s in c.steps]
    title = (f"Ladder check, {c.ladder} at {'x'.join(map(str, c.shape))}: top limiter matches the next rung's "
             f"technique on {sum(s.match for s in c.steps)}/{len(c.steps)} steps ({c.match_share:.0%}, target "
             f"{TARGET_MATCH:.0%}); predicted within {TOLERANCE:.0%} of measured on "
             f"{sum(bool(s.within) for s in c.steps)}/{len(c.steps)} ({c.within_share:.0%}, target "
             f"{TARGET_WITHIN:.0%})")
    notes = ["predicted: the gain explain's top limiter of the rung predicts; measured: its median over the next "
             "rung's, from one run that timed both; a pair (7/8, 11/12) stands by its faster rung"] + list(c.notes)
    return Table(title, LADDER_COLUMNS, rows, notes, meta={"ladder_check": c.to_dict()})


def summary_table(explanations, top: int = 3) -> Table:
    """Each kernel's first `top` limiters, one row each: `report`'s section."""
    rows = []
    for e in explanations:
        for i, lim in enumerate(e.limiters[:top], 1):
            rows.append({"kernel": f"{e.kernel} {e.name}" if i == 1 else "", "rank": i,
                         "limiter": KINDS.get(lim.kind, lim.kind), "evidence": lim.evidence, "gain": lim.gain,
                         "lift": lim.lift})
    cols = [Column("kernel", "kernel", fmt="s"), Column("rank", "#"), Column("limiter", "limiter", fmt="s"),
            Column("evidence", "evidence", fmt="s"), Column("gain", "gain if lifted", "x", ".2f"),
            Column("lift", "what lifts it", fmt="s")]
    return Table("Top limiters of each rung, ranked by the gain lifting each predicts", cols, rows)
