"""gemmprof: profile, verify and explain CUDA GEMM kernels.

In a notebook: ``gemmprof.load("results.json").to_dataframe()``.
"""

__version__ = "0.1.0"


def load(path):
    """The typed result of a saved file: RunResult (`gemmprof run -o`) or ProfileResults (`profile --save`).

    Imported lazily, so `import gemmprof` (and `gemmprof --help`) stay fast."""
    from gemmprof.results.loading import load as _load

    return _load(path)
