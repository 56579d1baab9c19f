"""gemmprof: profile, verify and explain CUDA GEMM kernels.

In a notebook: ``gemmprof.to_dataframe(gemmprof.load("results.json"))``.
"""

from gemmprof._version import __version__

__all__ = ["__version__", "load", "to_dataframe"]


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
