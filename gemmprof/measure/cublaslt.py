"""cuBLASLt's best of N beside cuBLAS's default call (`run --cublaslt-best N`): the heuristic's top N algorithms for
the very problem the cuBLAS row runs, each verified like any variant (C poisoned, then a sentinel, against the
float64 reference), then timed together round-robin with gemmprof's timer; the fastest is kept as its own baseline
row, and timed once more like every row (with --interleave, among them), so its figure is not the one it was
chosen by.

cuBLASLt is reached through nvmath-python's binding of it (`nvmath.bindings.cublasLt`; `pip install
'gemmprof[cublaslt]'`), imported only here and only when asked for. The problem is described as cublasGemmEx
describes it (measure/cublas.py): row-major C = A @ B computed as column-major C^T = B^T A^T, B read as the
kernels store it, the same data, compute and C types, up to 32 MiB of workspace (cublasSetWorkspace's documented
recommendation for Hopper): only the choice of algorithm, and the workspace it may take, can differ from the
cuBLAS row.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np

from gemmprof.catalog.baselines import Baseline
from gemmprof.errors import GemmprofError
from gemmprof.measure import nvtx
from gemmprof.measure.cublas import (
    CUBLAS_COMPUTE_32F,
    CUBLAS_COMPUTE_32F_FAST_TF32,
    CUBLAS_OP_N,
    CUBLAS_OP_T,
    CUDA_R_16BF,
    CUDA_R_16F,
    CUDA_R_32F,
)
from gemmprof.measure.launcher import LaunchFailed
from gemmprof.measure.problem import Problem, tolerance
from gemmprof.results.run import VariantResult

ID = "cuBLASLt"
WORKSPACE_BYTES = 32 << 20  # the workspace cuBLAS's documentation recommends for Hopper (cublasSetWorkspace)
SELECTION_ROUNDS = 10  # the candidates' launches in this many batches taken in turn: clock drift reaches all alike
DATA_TYPES = {"fp32": CUDA_R_32F, "fp16": CUDA_R_16F, "bf16": CUDA_R_16BF}
# The algorithm's configuration as cuBLASLt reports it (cublasLtMatmulAlgoConfigAttributes_t), kept in the row's
# params: key in gemmprof's results, name of the attribute in nvmath's binding
CONFIG = (("algo_id", "ID"), ("tile_id", "TILE_ID"), ("stages_id", "STAGES_ID"), ("split_k", "SPLITK_NUM"),
          ("reduction_scheme", "REDUCTION_SCHEME"), ("cta_swizzling", "CTA_SWIZZLING"),
          ("custom_option", "CUSTOM_OPTION"), ("inner_shape_id", "INNER_SHAPE_ID"),
          ("cluster_shape_id", "CLUSTER_SHAPE_ID"))
INSTALL = "pip install 'gemmprof[cublaslt]', or pip install nvmath-python"

Launch = Callable[[], None]


class CublasLtUnavailable(GemmprofError):
    """nvmath-python (its cuBLASLt binding) cannot be imported, or cuBLASLt cannot plan this problem."""


def binding():
    """nvmath-python's cuBLASLt module."""
    try:
        from nvmath.bindings import cublasLt
    except ImportError as exc:
        raise CublasLtUnavailable(f"nvmath-python is not installed ({INSTALL}): {exc}") from None
    except Exception as exc:  # its own imports (cuda.bindings) failing, in whatever way
        raise CublasLtUnavailable(f"nvmath-python did not import: {type(exc).__name__}: {_one_line(exc)}") from None
    return cublasLt


def unavailable() -> str:
    """Why there can be no cuBLASLt row in this process ("" when nvmath-python imports)."""
    try:
        binding()
    except CublasLtUnavailable as exc:
        return str(exc)
    return ""


def _address(array) -> int:
    """A device array's address (CuPy)."""
    return array.data.ptr


def _current_stream() -> int:
    import cupy

    return cupy.cuda.get_current_stream().ptr


def _one_line(exc: BaseException, width: int = 200) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _set(setter, dtype_of, obj: int, attr, value) -> None:
    """One cuBLASLt attribute, in the C type nvmath's binding says it has."""
    buf = np.array(value, dtype=dtype_of(attr))
    setter(obj, attr, buf.ctypes.data, buf.itemsize)


@dataclass
class Plan:
    """The heuristic's algorithms for one problem, and what every launch of them passes to cublasLtMatmul."""

    lt: object  # nvmath.bindings.cublasLt
    baseline: Baseline
    requested: int
    handle: int
    desc: int
    layouts: tuple[int, int, int]  # cuBLASLt's A (gemmprof's B), B (gemmprof's A), C and D
    operands: tuple[int, int]  # their addresses, in cuBLASLt's order
    results: object  # lt.MatmulHeuristicResult, in the heuristic's order
    offered: int  # how many the heuristic returned
    candidates: list[int] = field(default_factory=list)  # the usable ones among them, by index (rank - 1)
    dropped: list[str] = field(default_factory=list)  # offered but not usable, and why
    workspace: object = None  # one buffer of the largest workspace any candidate asks for (None: none asks)
    scalars: tuple = ()  # alpha and beta, float32 on the host (kept alive with the plan)

    def workspace_bytes(self, i: int) -> int:
        return int(self.results[i].workspace_size)

    def config(self, i: int) -> dict[str, int]:
        """The algorithm's configuration, attribute by attribute (one cuBLASLt does not report is left out)."""
        lt, algo, out = self.lt, self.results[i].ptr, {}
        for key, name in CONFIG:
            attr = getattr(lt.MatmulAlgoConfigAttribute, name, None)
            if attr is None:
                continue
            buf, written = np.zeros(1, dtype=lt.get_matmul_algo_config_attribute_dtype(attr)), np.zeros(1, np.uint64)
            try:
                lt.matmul_algo_config_get_attribute(algo, attr, buf.ctypes.data, buf.itemsize, written.ctypes.data)
            except Exception:  # an attribute this cuBLASLt does not have
                continue
            out[key] = int(buf[0])
        return out

    def describe(self, i: int) -> str:
        """The algorithm in words: id, tile, stages, split-K, cluster, workspace."""
        c, lt = self.config(i), self.lt
        parts = [f"algo {c['algo_id']}" if "algo_id" in c else "algo ?"]
        for key, enum, prefix, word in (("tile_id", "MatmulTile", "TILE_", "tile"),
                                        ("stages_id", "MatmulStages", "STAGES_", "stages"),
                                        ("cluster_shape_id", "ClusterShape", "SHAPE_", "cluster")):
            if key in c:
                parts.append(f"{word} {_enum_name(getattr(lt, enum, None), c[key], prefix)}")
        if "split_k" in c:
            parts.append(f"split-K {c['split_k']}")
        parts.append(f"workspace {self.workspace_bytes(i)} B")
        return ", ".join(parts)

    def launcher(self, i: int, out, problem=None) -> Launch:
        """A no-argument callable running candidate i into `out` (the baseline's C dtype, row-major M x N), on the
        operands of `problem` (an input set of the same shape and dtypes; None: the one it was planned on)."""
        lt, ptr = self.lt, _address(out)
        ws = (_address(self.workspace), int(self.workspace.nbytes)) if self.workspace is not None else (0, 0)
        (a_layout, b_layout, c_layout), (a, b) = self.layouts, self.operands
        if problem is not None:  # cuBLASLt's A is gemmprof's B, its B gemmprof's A (row-major C = B^T A^T)
            a = _address(problem.operand("B", self.baseline.b_layout))
            b = _address(problem.operand("A", "row"))
        alpha, beta = self.scalars
        args = (self.handle, self.desc, alpha.ctypes.data, a, a_layout, b, b_layout, beta.ctypes.data, ptr, c_layout,
                ptr, c_layout, self.results[i].ptr, *ws, _current_stream())
        matmul, error = lt.matmul, lt.cuBLASLtError

        def launch(_alive=(self, out)):  # what the addresses point into lives while the launch does
            try:
                matmul(*args)
            except error as exc:
                raise LaunchFailed(f"cuBLASLt: {_one_line(exc)}") from None

        return launch


def _enum_name(enum, value: int, prefix: str) -> str:
    try:
        return enum(value).name.removeprefix(prefix)
    except (TypeError, ValueError):
        return str(value)


def plan(baseline: Baseline, problem: Problem, n: int, attributes: Sequence[tuple[str, object]] = ()) -> Plan:
    """Ask cuBLASLt's heuristic for its top `n` algorithms for `baseline` on `problem`. `attributes`: more matmul
    descriptor attributes as (name in nvmath's MatmulDescAttribute, value), e.g. the scale pointers an fp8 GEMM
    needs. CublasLtUnavailable (one line) when nvmath-python is missing or cuBLASLt offers nothing usable."""
    lt = binding()
    s = problem.shape
    col_b = baseline.b_layout == "col"
    # as cublasGemmEx is called (measure/cublas.py): cuBLASLt's A is B, its B is A. Row-major B (K x N) is
    # column-major N x K with ld N; column-major B (N rows of K) is column-major K x N with ld K, transposed.
    op_b, b_stored = (CUBLAS_OP_T, (s.K, s.N, s.K)) if col_b else (CUBLAS_OP_N, (s.N, s.K, s.N))
    dtype, c_dtype = DATA_TYPES[baseline.storage], DATA_TYPES[baseline.c_dtype]
    compute = CUBLAS_COMPUTE_32F_FAST_TF32 if baseline.dtype == "tf32" else CUBLAS_COMPUTE_32F
    made: list[tuple[Callable, int]] = []  # what to destroy when the plan goes
    try:
        handle = lt.create()
        made.append((lt.destroy, handle))
        desc = lt.matmul_desc_create(compute, CUDA_R_32F)
        made.append((lt.matmul_desc_destroy, desc))
        set_desc = partial(_set, lt.matmul_desc_set_attribute, lt.get_matmul_desc_attribute_dtype, desc)
        set_desc(lt.MatmulDescAttribute.TRANSA, op_b)
        set_desc(lt.MatmulDescAttribute.TRANSB, CUBLAS_OP_N)
        for name, value in attributes:
            set_desc(getattr(lt.MatmulDescAttribute, name), value)
        layouts = []
        for layout in ((dtype, *b_stored), (dtype, s.K, s.M, s.K), (c_dtype, s.N, s.M, s.N)):
            layouts.append(lt.matrix_layout_create(*layout))
            made.append((lt.matrix_layout_destroy, layouts[-1]))
        pref = lt.matmul_preference_create()
        made.append((lt.matmul_preference_destroy, pref))
        _set(lt.matmul_preference_set_attribute, lt.get_matmul_preference_attribute_dtype, pref,
             lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, WORKSPACE_BYTES)
        results, count = lt.MatmulHeuristicResult(n), np.zeros(1, dtype=np.int32)
        lt.matmul_algo_get_heuristic(handle, desc, *layouts, layouts[2], pref, n, results.ptr, count.ctypes.data)
    except CublasLtUnavailable:
        raise
    except Exception as exc:  # the binding's errors: cuBLASLtError, a library it cannot load
        _destroy(made)
        raise CublasLtUnavailable(f"cuBLASLt's heuristic: {type(exc).__name__}: {_one_line(exc)}") from None
    offered = int(count[0])
    usable = [i for i in range(offered) if int(results[i].state) == 0]
    dropped = [f"#{i + 1} not usable (status {int(results[i].state)})" for i in range(offered) if i not in usable]
    if not usable:
        _destroy(made)
        raise CublasLtUnavailable(f"cuBLASLt's heuristic offered no usable algorithm for {s.label} "
                                  f"({baseline.storage} in, {baseline.c_dtype} C)")
    A = problem.operand("A", "row")
    B = problem.operand("B", baseline.b_layout)
    scalars = (np.array(problem.alpha, dtype=np.float32), np.array(problem.beta, dtype=np.float32))
    out = Plan(lt, baseline, n, handle, desc, tuple(layouts), (_address(B), _address(A)), results, offered, usable,
               dropped, scalars=scalars)
    largest = max(out.workspace_bytes(i) for i in usable)
    if largest:
        import cupy

        out.workspace = cupy.empty(largest, dtype=cupy.uint8)
    finalizer = weakref.finalize(out, _destroy, made)
    finalizer.atexit = False  # at exit the CUDA context may be gone before them: the process frees them anyway
    return out


def _destroy(made: list[tuple[Callable, int]]) -> None:
    for destroy, obj in reversed(made):
        try:
            destroy(obj)
        except Exception:  # freeing what may already be gone
            pass


# the row -----------------------------------------------------------------------------------------------------------
def _row(runner, baseline: Baseline, name: str | None = None) -> VariantResult:
    row = VariantResult(id=ID, name=name or baseline.name, title=baseline.title, dtype=baseline.dtype,
                        kind="baseline", c_dtype=baseline.c_dtype)
    row.nvtx_range = nvtx.range_name(row.name, runner.opt.shape)
    return row


def selection_timing(config):
    """The run's timing, the candidates taken round-robin (at least SELECTION_ROUNDS batches each)."""
    return replace(config, interleave_rounds=max(config.interleave_rounds, SELECTION_ROUNDS))


def prepare(runner, baseline: Baseline, attributes: Sequence[tuple[str, object]] = ()
            ) -> tuple[VariantResult, Launch | None]:
    """Plan, verify every candidate, time them together, keep the fastest: its row (the winner's configuration
    in params, every candidate's fate in the note) and its launch, ready to be timed like any row (None when the
    row already says why not). `runner` is a measure.runner.Runner: its own _verify and time_together.
    `attributes`: plan's (an fp8 GEMM's scale pointers)."""
    row = _row(runner, baseline)
    if runner.opt.launch_once:
        row.status, row.message = "skipped", "cuBLASLt's best is chosen by timing; --launch-once times nothing"
        return row, None
    problem = runner.problem(baseline.storage, baseline.c_dtype)
    try:
        lt_plan = plan(baseline, problem, baseline.candidates, attributes)
    except CublasLtUnavailable as exc:
        row.status, row.message = "error", str(exc)
        return row, None
    from gemmprof.measure.runner import Prepared

    check = tolerance(baseline.tolerance_key, baseline.c_dtype, runner.opt.shape.K)
    tried = {i: runner._verify(_row(runner, baseline, f"{baseline.name}.algo{i + 1}"),
                               Prepared(partial(_launch_for, lt_plan, i), baseline.storage, baseline.c_dtype,
                                        ("row", None), check)) for i in lt_plan.candidates}
    verified = [(cand, launch) for cand, launch in tried.values() if launch is not None]
    if len(verified) > 1:
        runner.time_together(verified, selection_timing(runner.opt.timing))
    ranked = sorted((cand.timing.median_ms if cand.timing else float("inf"), i)
                    for i, (cand, launch) in tried.items() if launch is not None and cand.passed)
    row.params = {"requested": lt_plan.requested, "offered": lt_plan.offered}
    if not ranked:
        failed = next((cand for cand, _ in tried.values() if cand.status == "FAIL"), None)
        row.status = "FAIL" if failed is not None else "error"
        row.verification = failed.verification if failed is not None else None
        row.message = (f"none of the {len(tried)} algorithms cuBLASLt's heuristic offered passed: "
                       + _fates(lt_plan, tried, None))
        return row, None
    best = ranked[0][1]
    winner, launch = tried[best]
    row.verification = winner.verification
    row.params.update(lt_plan.config(best))
    row.params.update(rank=best + 1, verified=len(ranked))
    chosen = (f"fastest of {len(ranked)} verified of cuBLASLt's top {lt_plan.requested}, timed round-robin: "
              f"#{best + 1} ({lt_plan.describe(best)})")
    row.message = "; ".join(n for n in (chosen, _fates(lt_plan, tried, best), winner.message) if n)
    return row, launch


def _launch_for(lt_plan: Plan, i: int, problem, out) -> Launch:
    return lt_plan.launcher(i, out, problem)


def _fates(lt_plan: Plan, tried: dict, best: int | None) -> str:
    """Each candidate in the heuristic's order, in a few words: its median when timed, why it was dropped else."""
    parts = []
    for i, (cand, launch) in tried.items():
        if launch is not None and cand.passed:
            timed = f"{cand.timing.median_ms:.4g} ms" if cand.timing else "not timed"
            parts.append(f"#{i + 1} {timed}" + (" (kept)" if i == best else ""))
        else:
            parts.append(f"#{i + 1} dropped ({cand.status}: {_one_line(Exception(cand.message), 80)})")
    return "; ".join(parts + lt_plan.dropped)


def run(runner, baseline: Baseline) -> VariantResult:
    """prepare, then the winner timed like any row."""
    return runner._time(*prepare(runner, baseline))
