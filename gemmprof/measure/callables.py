"""Python callables as variants: `gemmprof run --callable FILE.py:function` and `gemmprof.bench(fn, ...)`.

The function is called as fn(A, B, C, alpha, beta) and must fill C = alpha * A @ B + beta * C in place: A (M x K)
and B (K x N) row-major in the input dtype, C (M x N) row-major in the C dtype it declares (--c-dtype; float32 by
default, the ladder's ABI), alpha and beta Python floats. fp8 inputs (e4m3, e5m2) come with their scales as the
keyword arguments scale_a and scale_b, and B is K x N column-major (a view of N rows of K): docs/fp8.md. Its GPU work must go on CuPy's current stream (gemmprof
makes that torch's current stream too). It is verified like a kernel (C poisoned with NaN, then a finite sentinel, against
the float64 reference) and timed like one, with CUDA events around each call, inside its NVTX range.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gemmprof.errors import GemmprofError, InputError
from gemmprof.results.run import VariantResult

CALL_ARGS = ("A", "B", "C", "alpha", "beta")
CALL_TEXT = "fn(A, B, C, alpha, beta)"
SCALE_KWARGS = ("scale_a", "scale_b")  # fp8: fn(A, B, C, alpha, beta, scale_a=..., scale_b=...)
SCALES_ATTRIBUTE = "gemmprof_scales"  # a function may declare the --scales modes it takes: fn.gemmprof_scales = (...)


class CallableError(InputError):
    """A --callable cannot be used: bad FILE.py:function text, missing file or function, wrong arity."""


class CallableRaised(GemmprofError):
    """The callable raised while it was verified or timed (its variant fails, the run goes on)."""


@dataclass(frozen=True)
class CallableRef:
    """FILE.py:function as given on the command line; its variant name is known without importing the file."""

    path: str
    function: str

    @property
    def text(self) -> str:
        return f"{self.path}:{self.function}"

    @property
    def name(self) -> str:
        return variant_name(f"{Path(self.path).stem}.{self.function}")


@dataclass(frozen=True)
class PyCallable:
    name: str  # the variant's name: NVTX ranges and tables
    title: str
    fn: Callable = field(compare=False, repr=False)
    ref: str | None = None  # FILE.py:function when loaded from a file (a child process loads it again)
    id: str = "py"
    kind: str = "callable"  # callable | baseline (torch.matmul)
    c_dtype: str = "fp32"  # the C it fills (--c-dtype): the problem, tolerance and cuBLAS row follow it


def variant_name(text: str) -> str:
    """Only the characters an NVTX range name of gemmprof's may hold (measure/nvtx.py)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", text) or "callable"


def parse_ref(text: str) -> CallableRef:
    path, sep, function = str(text).rpartition(":")
    if not sep or not path or not function:
        raise CallableError(f"--callable {text!r}: give FILE.py:function")
    if not function.isidentifier():
        raise CallableError(f"--callable {text!r}: {function!r} is not a Python function name")
    return CallableRef(path, function)


def refs(texts) -> list[CallableRef]:
    """Every --callable parsed, their variant names unique."""
    out = [parse_ref(t) for t in texts]
    names = [r.name for r in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CallableError(f"--callable: two callables would both be named {twice[0]} (FILE stem.function): "
                            "rename one file or function")
    for ref in out:
        _must_exist(ref)
    return out


def load(ref: CallableRef, scales: str | None = None) -> PyCallable:
    """Import FILE.py (as a module of its own, its folder on sys.path) and take `function` from it; with `scales`
    (fp8 inputs), check that it takes them."""
    where, path = f"--callable {ref.text}", Path(ref.path)
    _must_exist(ref)
    module = _import_file(path, where)
    if not hasattr(module, ref.function):
        defined = sorted(n for n, v in vars(module).items()
                         if callable(v) and not n.startswith("_") and getattr(v, "__module__", None) == module.__name__)
        hint = f" (it defines: {', '.join(defined)})" if defined else ""
        raise CallableError(f"{where}: {path} has no function {ref.function!r}{hint}")
    return from_function(getattr(module, ref.function), name=ref.name, ref=ref.text, where=where, scales=scales)


def _must_exist(ref: CallableRef) -> None:
    path = Path(ref.path)
    if not path.is_file():
        raise CallableError(f"--callable {ref.text}: {path} " + ("is a directory" if path.is_dir() else
                                                                  "does not exist"))


def _import_file(path: Path, where: str):
    resolved = path.resolve()
    module_name = "gemmprof_callable_" + variant_name(str(resolved)).replace(".", "_").replace("-", "_")
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise CallableError(f"{where}: {path} cannot be imported as Python (name it FILE.py)")
    module = importlib.util.module_from_spec(spec)
    if str(resolved.parent) not in sys.path:  # its own helper modules beside it import as in a script
        sys.path.append(str(resolved.parent))
    sys.modules[module_name] = module  # dataclasses and Triton's source lookup find the module here
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[module_name]
        raise CallableError(f"{where}: {path} line {exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:  # its imports (torch, triton) or its own top-level code
        del sys.modules[module_name]
        raise CallableError(f"{where}: importing {path} raised {type(exc).__name__}: {_one_line(exc)}") from None
    return module


def from_function(fn, *, name: str | None = None, ref: str | None = None, where: str | None = None,
                  scales: str | None = None) -> PyCallable:
    """A callable checked for use as a variant: it must be callable and take the five arguments (with fp8 inputs,
    `scales` being the run's --scales, also scale_a and scale_b as keywords, and the mode where it declares its own
    in `fn.gemmprof_scales`)."""
    name = variant_name(name or getattr(fn, "__name__", "") or "callable")
    where = where or f"bench: {name}"
    if not callable(fn):
        raise CallableError(f"{where}: a {type(fn).__name__} is not callable (give a function {CALL_TEXT})")
    check_arity(fn, where, fp8=scales is not None)
    if scales is not None:
        check_scales_taken(fn, where, scales)
    doc = inspect.getdoc(fn) if inspect.isfunction(fn) or inspect.ismethod(fn) else None
    title = doc.strip().splitlines()[0] if doc and doc.strip() else (ref or name)
    return PyCallable(name=name, title=title, fn=fn, ref=ref)


def check_arity(fn, where: str, fp8: bool = False) -> None:
    """It must accept five positional arguments; defaults and *args are fine. With fp8 inputs also the keyword
    arguments scale_a and scale_b (or **kwargs)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: a wrong call is reported when it runs
        return
    shown = str(sig.replace(return_annotation=inspect.Signature.empty))[1:-1]
    try:
        sig.bind(*CALL_ARGS, **(dict.fromkeys(SCALE_KWARGS) if fp8 else {}))
        return
    except TypeError:
        pass
    if fp8 and _takes_five(sig):  # the five are there; the scales are what it lacks
        raise CallableError(f"{where}: it takes ({shown}); with fp8 inputs gemmprof calls fn(A, B, C, alpha, beta, "
                            "scale_a=..., scale_b=...): add the keyword parameters scale_a and scale_b "
                            "(docs/fp8.md)")
    raise CallableError(f"{where}: it takes ({shown}); gemmprof calls {CALL_TEXT}, five arguments"
                        + (" (and scale_a=..., scale_b=... with fp8 inputs)" if fp8 else ""))


def _takes_five(sig) -> bool:
    """Whether it binds the five positional arguments once keyword-only parameters without defaults are left out."""
    params = [p for p in sig.parameters.values()
              if not (p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty)]
    try:
        sig.replace(parameters=params).bind(*CALL_ARGS)
        return True
    except TypeError:
        return False


def check_scales_taken(fn, where: str, scales: str) -> None:
    """A function that declares the scale modes it takes (fn.gemmprof_scales) must take the run's."""
    declared = getattr(fn, SCALES_ATTRIBUTE, None)
    if declared is None:
        return
    if isinstance(declared, str) or not all(isinstance(m, str) for m in declared):
        raise CallableError(f"{where}: {SCALES_ATTRIBUTE} must be a tuple of scale modes, e.g. ('tensor', "
                            f"'1x128'), got {declared!r}"[:300])
    if scales not in declared:
        raise CallableError(f"{where}: takes --scales {', '.join(declared) or 'none'} ({SCALES_ATTRIBUTE}), not "
                            f"{scales}")


def _one_line(exc: BaseException, width: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def run_callable(runner, item: PyCallable, dtype: str, arrays) -> VariantResult:
    """Verify and time one callable on the runner's problem, exactly as a kernel (Runner._verify, then Runner._time).
    A callable that raises fails its own row; the run goes on (unless it took the CUDA context with it)."""
    from gemmprof.catalog.launch_fields import FP8_DTYPES
    from gemmprof.measure import nvtx
    from gemmprof.measure.arrays import bf16_note
    from gemmprof.measure.problem import tolerance
    from gemmprof.measure.runner import model_figures
    from gemmprof.model.traffic import get_dtype

    shape = runner.opt.shape
    row = VariantResult(id=item.id, name=item.name, title=item.title, dtype=dtype, kind=item.kind,
                        c_dtype=item.c_dtype, scales=runner.opt.scales if dtype in FP8_DTYPES else "")
    row.nvtx_range = nvtx.range_name(item.name, shape)
    row.model = model_figures(dtype, shape, runner.opt.beta, runner.gpu_spec, None, get_dtype(dtype).peak_kind)
    problem = runner.problem(dtype, item.c_dtype)  # exactly a spec's with that c_dtype: C0, reference, sentinel
    try:
        with arrays.stream():
            A, B = arrays.operands(problem)
            runner._time(*runner._verify(row, problem, _launcher(item.fn, A, B, problem, arrays),
                                          tolerance(dtype, item.c_dtype)))
    except CallableRaised as exc:
        row.status, row.message = "error", str(exc)
        _raise_if_context_lost(row.message)
    check = row.verification
    # nothing written: every element kept C0, but for the few whose right answer equals C0 within the tolerance
    if row.status == "FAIL" and check is not None and check.unwritten >= 0.99 * shape.M * shape.N:
        kept = "still poisoned" if problem.beta == 0 else "still its values before the call"
        row.message = f"did not write C ({kept}): write into C in place; a returned array is not read"
    notes = [row.message, arrays.note, bf16_note(dtype, item.c_dtype) if arrays.kind == "cupy" else ""]
    row.message = "; ".join(n for n in notes if n)
    return row


def lost_row(item: tuple, message: str) -> VariantResult:
    """The row of a callable job (PyCallable, dtype, arrays) that could not run: the CUDA context was lost."""
    call, dtype, _ = item
    return VariantResult(id=call.id, name=call.name, title=call.title, dtype=dtype, kind=call.kind, status="error",
                         message=message, c_dtype=call.c_dtype)


def _launcher(fn, A, B, problem, arrays):
    alpha, beta = problem.alpha, problem.beta
    scales = arrays.scales(problem)  # fp8: {scale_a, scale_b}; {} otherwise

    def launch_into(out):
        C, before, after = arrays.output(out, problem.c_dtype)  # outside the timed call: no cost per call

        def launch():
            if before:
                before()
            try:
                fn(A, B, C, alpha, beta, **scales)
            except Exception as exc:
                raise CallableRaised(f"raised {type(exc).__name__}: {_one_line(exc)}") from exc
            if after:
                after()

        return launch

    return launch_into


def _raise_if_context_lost(message: str) -> None:
    from gemmprof.measure import runner as runner_module

    if not runner_module._context_alive():
        raise runner_module.ContextLost(message)
