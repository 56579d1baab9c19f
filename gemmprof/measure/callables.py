"""Python callables as variants: `gemmprof run --callable FILE.py:function` and `gemmprof.bench(fn, ...)`.

The function is called as fn(A, B, C, alpha, beta) and must fill C = alpha * A @ B + beta * C in place: A (M x K)
and B (K x N) row-major in the input dtype, C (M x N) row-major in the C dtype it declares (--c-dtype; float32 by
default, the ladder's ABI), alpha and beta Python floats. fp8 inputs (e4m3, e5m2) come with their scales as the
keyword arguments scale_a and scale_b, and B is K x N column-major (a view of N rows of K): docs/fp8.md. Its GPU
work must go on CuPy's current stream (gemmprof makes that torch's current stream too). It is verified like a kernel (C poisoned with NaN, then a finite sentinel, against
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
    from gemmprof.results.files import not_a_file

    why = not_a_file(Path(ref.path))  # a FIFO would block the import until something writes to it
    if why:
        raise CallableError(f"--callable {ref.text}: {ref.path} {why}")


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
    except (Exception, SystemExit) as exc:  # its imports (torch, triton), its own top-level code, a sys.exit there
        del sys.modules[module_name]
        raise CallableError(f"{where}: importing {path} {_raised(exc)}") from None
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


def _raised(exc: BaseException, width: int = 300) -> str:
    """What a callable's code did instead of returning: "raised ValueError: ...", or "called sys.exit(3)" (a
    SystemExit, which would otherwise end gemmprof silently with the callable's status)."""
    if isinstance(exc, SystemExit):
        return f"called sys.exit({_one_line(repr(exc.code), width)})"
    return f"raised {type(exc).__name__}: {_one_line(exc, width)}"


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
    from gemmprof.measure.runner import Prepared

    shape = runner.opt.shape
    row = VariantResult(id=item.id, name=item.name, title=item.title, dtype=dtype, kind=item.kind,
                        c_dtype=item.c_dtype, scales=runner.opt.scales if dtype in FP8_DTYPES else "")
    row.nvtx_range = nvtx.range_name(item.name, shape)
    problem = runner.problem(dtype, item.c_dtype)  # exactly a spec's with that c_dtype: C0, reference, sentinel
    try:
        with arrays.stream():
            prepared = Prepared(_launcher(item.fn, arrays), dtype, item.c_dtype, ("row", None),
                                tolerance(dtype, item.c_dtype, shape.K))
            row, verified = runner._verify(row, prepared)
            if verified is not None and arrays.copied:  # copies would not see the row changed before each call
                verified.perturb = False
            runner._time(row, verified)
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


def _launcher(fn, arrays):
    """launch_for(problem, out): a call of fn on the problem's operands (as `arrays` hands them) filling `out`."""

    def launch_for(problem, out):
        A, B = arrays.operands(problem)
        scales = arrays.scales(problem)  # fp8: {scale_a, scale_b}; {} otherwise
        alpha, beta = problem.alpha, problem.beta
        C, before, after = arrays.output(out, problem.c_dtype)  # outside the timed call: no cost per call

        def launch():
            if before:
                before()
            try:
                fn(A, B, C, alpha, beta, **scales)
            except (Exception, SystemExit) as exc:  # sys.exit in a callable fails its variant, not the run
                raise CallableRaised(_raised(exc)) from exc
            if after:
                after()

        return launch

    return launch_for


def _raise_if_context_lost(message: str) -> None:
    from gemmprof.measure import runner as runner_module

    if not runner_module._context_alive():
        raise runner_module.ContextLost(message)


# C's dtype, inferred: `gemmprof.bench(fn, ...)` without c_dtype ---------------------------------------------------
@dataclass(frozen=True)
class Attempt:
    """One call of a function over a C of one dtype, made to choose its C: what happened."""

    outcome: str  # ok (within that C's tolerance) | raised | unwritten | wrong
    detail: str = ""  # the exception, the check's finding, or what the function returned
    half_values: bool = False  # an fp32 C holding only numbers of the inputs' half type: a half product, cast


def choose_c_dtype(dtype: str, attempt: Callable[[str], Attempt]) -> tuple[str, str]:
    """The C a function with `dtype` inputs fills, and the sentence that says how it was decided.

    fp32 inputs: fp32 C. Half inputs: one call over fp32 C; if it writes fp32 C within its tolerance, fp32. If it
    raised, or wrote only numbers of the half type into the fp32 C (a half product cast: torch.matmul's fp16
    result copied into C), one call over C of the inputs' type decides: within that C's tolerance, that C.
    Anything else stays fp32, and the run's verification reports what the function did."""
    if dtype not in HALF_TYPES:
        return "fp32", ""
    first = attempt("fp32")
    if first.outcome == "ok":
        return "fp32", f"C: fp32, inferred (it filled fp32 C from {dtype} inputs)"
    if first.outcome == "raised" or (first.outcome == "wrong" and first.half_values):
        second = attempt(dtype)
        if second.outcome == "ok":
            why = (f"over fp32 C it raised {first.detail}" if first.outcome == "raised"
                   else f"it wrote only {dtype} numbers into fp32 C, out of {dtype}'s precision")
            return dtype, f"C: {dtype}, inferred ({why}; c_dtype='{dtype}' says so)"
    said = {"raised": f"over fp32 C it raised {first.detail}", "unwritten": first.detail or "it left C unwritten",
            "wrong": f"its fp32 C was wrong ({first.detail})"}.get(first.outcome, first.detail)
    return "fp32", f"C: fp32, not inferred ({said}; give c_dtype= if it writes half C)"


HALF_TYPES = ("fp16", "bf16")


def attempt_call(runner, fn, dtype: str, arrays, c_dtype: str) -> Attempt:
    """Call fn over the runner's problem with a C of `c_dtype` and check it as verification does: over C poisoned
    with NaN and, where beta = 0, again over a finite sentinel (two calls)."""
    import cupy

    from gemmprof.measure.problem import tolerance, verify

    problem = runner.problem(dtype, c_dtype)
    outputs = [problem.fresh_output()] + ([problem.sentinel_output()] if problem.beta == 0 else [])
    returned = None
    with arrays.stream():
        A, B = arrays.operands(problem)
        for out in outputs:
            C, before, after = arrays.output(out, c_dtype)
            try:
                if before:
                    before()
                returned = fn(A, B, C, problem.alpha, problem.beta)
                if after:
                    after()
            except (Exception, SystemExit) as exc:  # sys.exit in a callable fails its variant, not the run
                _raise_if_context_lost(str(exc))
                return Attempt("raised", _raised(exc, 160).removeprefix("raised "))
        cupy.cuda.Device().synchronize()
    check = verify(outputs[0], outputs[1] if len(outputs) > 1 else None, problem, tolerance(dtype, c_dtype, problem.shape.K))
    if check.passed:
        return Attempt("ok")
    shape = problem.shape
    if check.unwritten >= 0.99 * shape.M * shape.N:
        kind = getattr(returned, "dtype", None)
        what = f"it returned a {kind} array and left C unwritten" if kind is not None else "it left C unwritten"
        return Attempt("unwritten", what + ": gemmprof reads C, filled in place")
    return Attempt("wrong", check.describe(), c_dtype == "fp32" and _only_half_numbers(outputs[-1], dtype))


def _only_half_numbers(c32, dtype: str) -> bool:
    """Every element of an fp32 array is finite and a number of the half type `dtype` (fp16 or bf16)."""
    import numpy as np

    x = np.asarray(c32.get() if hasattr(c32, "get") else c32, dtype=np.float32)
    if x.size == 0 or not np.isfinite(x).all():
        return False
    if dtype == "fp16":
        return bool(np.array_equal(x, x.astype(np.float16).astype(np.float32)))
    return bool(((x.view(np.uint32) & np.uint32(0xFFFF)) == 0).all())
