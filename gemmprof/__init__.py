"""gemmprof: profile, verify and explain CUDA GEMM kernels.

In a notebook: ``gemmprof.load("results.json").to_dataframe()``.
"""

__version__ = "0.1.0"


def load(path):
    """The typed result of a saved file: RunResult (`gemmprof run -o`) or ProfileResults (`profile --save`).

    Imported lazily, so `import gemmprof` (and `gemmprof --help`) stay fast."""
    from gemmprof.results.loading import load as _load

    return _load(path)


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
