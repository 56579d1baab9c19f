"""gemmprof: profile, verify and explain CUDA GEMM kernels.

In a notebook: ``gemmprof.to_dataframe(gemmprof.load("results.json"))``; a Python GEMM of your own:
``gemmprof.bench(fn, m=4096, n=4096, k=4096, dtype="fp16")``.
"""

from gemmprof import _started  # noqa: F401 - first of all: when gemmprof started (a run's elapsed_s)
from gemmprof._version import __version__

__all__ = ["__version__", "bench", "explain", "ladder_check", "load", "to_dataframe"]


def load(path):
    """The typed result of a saved file: RunResult (`gemmprof run -o`) or ProfileResults (`profile --save`).

    Imported lazily, so `import gemmprof` (and `gemmprof --help`) stay fast."""
    from gemmprof.results.loading import load as _load

    return _load(path)


def to_dataframe(result):
    """A pandas DataFrame of a loaded result, units in the column names: one row per variant of a RunResult
    (median_ms, tflops, ...), one per ncu launch of ProfileResults (duration_us, dram_mb, ...); needs pandas."""
    from gemmprof.render.dataframe import to_dataframe as _to_dataframe

    return _to_dataframe(result)


def bench(fn, **kwargs):
    """Verify and time fn(A, B, C, alpha, beta), which fills C, beside cuBLAS: a RunResult, as `gemmprof run
    --callable` makes. Keywords: m, n, k (required), dtype, c_dtype (inferred when not given, and said so),
    arrays ("cupy" or "torch"), alpha, beta, name, baselines, seed, budget_s, max_reps, flush_l2, gpu; see
    gemmprof.api.bench."""
    from gemmprof.api import bench as _bench

    return _bench(fn, **kwargs)


def _loaded(items):
    return [load(x) if isinstance(x, (str, bytes)) or hasattr(x, "__fspath__") else x for x in items]


def explain(variants=(), *, size=4096, m=None, n=None, k=None, dtype=None, spec_files=(), results=(),
            profiles=(), gpu="h100"):
    """What limits each kernel, as `gemmprof explain` says it: a list of Explanation (gemmprof.model.explain),
    one per kernel, its limiters ranked. `results`/`profiles`: saved files (paths or loaded results) of
    `gemmprof run -o` and `gemmprof profile --save`."""
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.catalog.selection import choose
    from gemmprof.measure.explain_inputs import explain_kernels
    from gemmprof.model.traffic import GemmShape

    shape = GemmShape(m or size, n or size, k or size)
    kernels = choose(tuple(variants), dtype=dtype, spec_files=tuple(spec_files))
    return explain_kernels(kernels, shape, get_gpu(gpu), _loaded(results), _loaded(profiles))


def ladder_check(ladder, results, profiles=(), gpu="h100"):
    """`gemmprof explain --ladder`: a LadderCheck (gemmprof.model.explain_ladder) of the "fp32" or "fp16" ladder
    from saved runs and profiles (paths or loaded results)."""
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure.explain_inputs import explain_ladder

    return explain_ladder(ladder, _loaded(results), _loaded(profiles), get_gpu(gpu))[0]
