"""Load any saved results file as its typed result, chosen by the file's "kind"."""

from __future__ import annotations

from gemmprof.errors import InputError
from gemmprof.results.files import load_json
from gemmprof.results.nsys import COMPARE_KIND, Comparison
from gemmprof.results.profile import PROFILE_KIND, ProfileResults
from gemmprof.results.run import RUN_KIND, RunResult
from gemmprof.results.sweep import SWEEP_KIND, SweepSummary

KINDS = {RUN_KIND: "`gemmprof run -o FILE.json`", PROFILE_KIND: "`gemmprof profile --save FILE.json`",
         COMPARE_KIND: "`gemmprof compare-nsys -o FILE.json`", SWEEP_KIND: "a shape sweep's summary.json"}


def load(path) -> RunResult | ProfileResults | Comparison | SweepSummary:
    """A RunResult for a file `gemmprof run -o` wrote, a ProfileResults for `gemmprof profile --save`, a
    Comparison for `gemmprof compare-nsys -o FILE.json`, a SweepSummary for a shape sweep's summary.json; plain
    or gzipped (.json.gz).

    >>> import gemmprof
    >>> run = gemmprof.load("results.json")
    >>> gemmprof.to_dataframe(run)[["name", "median_ms", "tflops"]]
    """
    doc = load_json(path)
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if kind == RUN_KIND:
        return RunResult.from_dict(doc, str(path))
    if kind == PROFILE_KIND:
        return ProfileResults.from_dict(doc, str(path))
    if kind == COMPARE_KIND:
        return Comparison.from_dict(doc, str(path))
    if kind == SWEEP_KIND:
        return SweepSummary.from_dict(doc, str(path))
    known = "; ".join(f"{k} from {how}" for k, how in KINDS.items())
    raise InputError(f"{path}: not a results file gemmprof can load (kind is {kind!r}; expected {known})")
