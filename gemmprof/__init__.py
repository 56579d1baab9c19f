"""gemmprof: profile, verify and explain CUDA GEMM kernels.

In a notebook: ``gemmprof.to_dataframe(gemmprof.load("results.json"))``; a Python GEMM of your own:
``gemmprof.bench(fn, m=4096, n=4096, k=4096, dtype="fp16")``.
"""

from gemmprof._version import __version__

__all__ = ["__version__", "bench", "load", "to_dataframe"]


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
    --callable` makes. Keywords: m, n, k (required), dtype, arrays ("cupy" or "torch"), alpha, beta, name,
    baselines, seed, budget_s, max_reps, flush_l2, gpu; see gemmprof.api.bench."""
    from gemmprof.api import bench as _bench

    return _bench(fn, **kwargs)
