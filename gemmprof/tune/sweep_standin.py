"""A stand-in for the child `gemmprof run` of a shape sweep (`gemmprof sweep --stand-in`, tests, dry runs on a CPU).

It reads the child's command line as `gemmprof run` would (the shape, the variants, the dtype, -o), names the
variants as a run names them (rungs and specs through the catalog, callables by FILE stem.function) and writes a
results file with invented, deterministic times: cuBLAS's from a smooth function of the shape, each variant's at a
fixed fraction of it drawn from its name and the shape. Nothing is measured; the device is named "stand-in GPU",
with the CUDA_VISIBLE_DEVICES the child was given, so a test sees which worker ran which shape.

GEMMPROF_STANDIN_FAIL=MxNxK[,MxNxK...]: at those shapes the child writes a file with no variant and ends as a
crash would (exit 137).
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

STANDIN_DEVICE = "stand-in GPU"


def _arg(argv: list[str], flag: str) -> str | None:
    rest = argv[argv.index("run"):]  # after `python -m gemmprof run`
    return rest[rest.index(flag) + 1] if flag in rest else None


def _selectors(argv: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(rung selectors, spec files, callable refs) of a child `gemmprof run` command line."""
    rest = argv[argv.index("run") + 1:]
    rungs, specs, refs = [], [], []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a in ("--spec", "--callable"):
            (specs if a == "--spec" else refs).append(rest[i + 1])
            i += 2
        elif a.startswith("-"):
            break
        else:
            rungs.append(a)
            i += 1
    return rungs, specs, refs


def _fraction(name: str, label: str) -> float:
    """A variant's speed as a fraction of cuBLAS's: 0.6 to 1.2, fixed by its name and the shape."""
    return 0.6 + 0.6 * (zlib.crc32(f"{name} {label}".encode()) % 1000) / 1000


def execute(argv: list[str], log_path, env: dict | None = None) -> int:
    from gemmprof.catalog.baselines import for_kernels, torch_matmul_name
    from gemmprof.catalog.selection import choose
    from gemmprof.measure.callables import refs as parse_refs
    from gemmprof.results.run import Measurement, ModelFigures, RunResult, VariantResult
    from gemmprof.results.shape import GemmShape

    env = env if env is not None else dict(os.environ)
    shape = GemmShape(*(int(_arg(argv, f)) for f in ("-m", "-n", "-k")))
    dtype, c_dtype = _arg(argv, "--dtype") or "fp32", _arg(argv, "--c-dtype") or "fp32"
    out = _arg(argv, "-o")
    rungs, specs, refs = _selectors(argv)
    flops = 2 * shape.M * shape.N * shape.K
    cublas_s = flops / (600e12 * min(1.0, shape.M / 256) * min(1.0, shape.N / 256) + 1e9) + 4e-6

    def row(name, vid, kind, seconds, dt=dtype, c=c_dtype):
        return VariantResult(id=vid, name=name, title=name, dtype=dt, kind=kind, c_dtype=c,
                             timing=Measurement((seconds * 1e3,) * 5), model=ModelFigures(flops, 1.0))

    kernels = choose(rungs, dtype=dtype, spec_files=specs) if rungs or specs else []
    variants = [row(b.name, "cuBLAS", "baseline", cublas_s, b.dtype, b.c_dtype)
                for b in for_kernels({(k.run_dtype, k.spec.abi.c_dtype) for k in kernels}
                                     | ({(dtype, c_dtype)} if refs else set()))]
    if refs:
        variants.append(row(torch_matmul_name(c_dtype), "torch", "baseline", cublas_s * 1.01))
    for k in kernels:
        variants.append(row(k.variant_name, k.spec.id, "ladder" if k.spec.is_ladder_rung else "user",
                            cublas_s / _fraction(k.variant_name, shape.label), k.run_dtype, k.spec.abi.c_dtype))
    for r in parse_refs(refs):
        variants.append(row(r.name, "py", "callable", cublas_s / _fraction(r.name, shape.label)))
    fail = shape.label in (env.get("GEMMPROF_STANDIN_FAIL") or "").split(",")
    run = RunResult(shape=shape, alpha=1.0, beta=0.0, seed=1, gpu_spec="h100", timing_method={},
                    device={"name": STANDIN_DEVICE, "cuda_visible_devices": env.get("CUDA_VISIBLE_DEVICES")},
                    variants=[] if fail else variants, command="stand-in " + " ".join(argv[argv.index("run"):]))
    if out:
        run.save(out)
    Path(log_path).write_text(f"stand-in gemmprof run at {shape.label}: {len(run.variants)} variants\n",
                              encoding="utf-8")
    return 137 if fail else 0
