"""The one place a child `gemmprof run` command line is built (fault isolation, ncu, nsys, live rooflines).

A child process gets its own CUDA context: a faulting kernel, or a profiler wrapped around it, cannot take the
parent down. Returns an argument list, never a shell string.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from gemmprof.model.traffic import GemmShape


@dataclass(frozen=True)
class ChildRun:
    selectors: tuple[str, ...]  # rung names and ids, or "--spec", PATH pairs
    shape: GemmShape
    all_: bool = False
    dtype: str | None = None
    alpha: float | None = None
    beta: float | None = None
    seed: int | None = None
    budget_s: float | None = None
    max_reps: int | None = None
    gpu: str | None = None
    gpu_file: str | None = None
    compiler: str | None = None
    params: tuple[str, ...] = ()  # NAME=VALUE
    no_cublas: bool = False
    launch_once: bool = False
    no_flush: bool = False
    interleave: bool = False  # time the variants in turns (gemmprof run --interleave)
    scales: str | None = None  # fp8 inputs: --scales
    output: str | None = None
    child_results: str | None = None
    precision: float | None = None  # --precision PCT
    c_dtype: str | None = None  # --c-dtype of --callable functions
    arrays: str | None = None  # --arrays of --callable functions
    extra: tuple[str, ...] = ()  # further `gemmprof run` arguments, passed as they are (gemmprof sweep --run-option)

    def argv(self, python: str | None = None) -> list[str]:
        s = self.shape
        cmd = [python or sys.executable, "-m", "gemmprof", "run", *self.selectors,
               "-m", str(s.M), "-n", str(s.N), "-k", str(s.K)]
        cmd += ["--all"] if self.all_ else []
        cmd += ["--dtype", self.dtype] if self.dtype else []
        cmd += ["--scales", self.scales] if self.scales else []
        for flag, value in (("--alpha", self.alpha), ("--beta", self.beta), ("--budget", self.budget_s),
                            ("--precision", self.precision)):
            cmd += [flag, repr(float(value))] if value is not None else []
        for flag, value in (("--seed", self.seed), ("--max-reps", self.max_reps), ("--gpu", self.gpu),
                            ("--gpu-file", self.gpu_file), ("--compiler", self.compiler), ("-o", self.output),
                            ("--child-results", self.child_results), ("--c-dtype", self.c_dtype),
                            ("--arrays", self.arrays)):
            cmd += [flag, str(value)] if value is not None else []
        cmd += [f"--param={p}" for p in self.params]
        cmd += ["--no-cublas"] if self.no_cublas else []
        cmd += ["--launch-once"] if self.launch_once else []
        cmd += ["--no-flush"] if self.no_flush else []
        cmd += ["--interleave"] if self.interleave else []
        return cmd + list(self.extra)


def spawn(cmd: list[str]):
    """Start the child and wait (tests replace this); its stdout, the run table, is captured, not shown."""
    import subprocess

    return subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)


def run_child(child: ChildRun):
    """Run `gemmprof run` in a child process and load the results it saved (the child must name -o or
    --child-results). Returns (RunResult or None if it saved nothing, the child's exit status)."""
    from pathlib import Path

    from gemmprof.results.run import load_run

    proc = spawn(child.argv())
    path = child.output or child.child_results
    if not path or not Path(path).exists():
        return None, proc.returncode
    return load_run(path), proc.returncode
