"""Kernel specs: the YAML beside each .cu file (docs/kernel-spec.md), validated, with parameters bound safely."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gemmprof.catalog import expr
from gemmprof.catalog.abi import Abi, parse_abi
from gemmprof.catalog.accesses import AccessBlock, parse_accesses
from gemmprof.catalog.build_fields import BuildFields, parse_build_fields
from gemmprof.catalog.launch_fields import DTYPE_NAMES, TmaArg, launch_fields
from gemmprof.catalog.nvcc_flags import MACRO_NAME, check_flags
from gemmprof.catalog.paths import KERNELS_DIR
from gemmprof.catalog.plan_rules import PLAN_KEYS, PlanRule, parse_rules
from gemmprof.catalog.spec_fields import NESTED_KEYS, SPEC_KEYS, check_keys
from gemmprof.catalog.spec_fields import names as _param_names
from gemmprof.catalog.spec_fields import rejoin as _rejoin
from gemmprof.catalog.spec_fields import source_file as _source_file
from gemmprof.catalog.spec_fields import text as _text
from gemmprof.catalog.yamlfile import parse_mapping
from gemmprof.errors import SpecError

_ID = re.compile(r"^(?P<prefix>h?)(?P<num>\d+)(?P<letter>[a-z]?)$")
_PLAN_ID = re.compile(r"^h?p$")  # the ladder's planning entries: p (fp32), hp (fp16/bf16)
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}$")  # a file name of its build, a row of results
_REQUIRED = ("file", "entry", "grid", "block")  # a minimal spec; the rest has defaults (docs/kernel-spec.md)
_LADDER_REQUIRED = ("id", "name", "title", "description", "source", "dtype", "layout")
COMPILERS = ("nvcc", "nvrtc")
SPEC_BYTES = 4 << 20  # the ladder's largest spec is a few KiB
PARAM_LIMIT = 2 ** 31  # a parameter is a C int in the kernel's template or -D flag


@dataclass(frozen=True)
class Constraint:
    check: str
    message: str


@dataclass(frozen=True)
class KernelSpec:
    id: str
    name: str
    title: str
    description: str
    source: dict[str, str]
    dtype: str
    layout: dict[str, str]
    file: Path
    entry: str
    backend: str
    template: tuple[str, ...]
    defines: tuple[str, ...]
    params: dict[str, int]
    derived: dict[str, str]
    constraints: tuple[Constraint, ...]
    shape_constraints: tuple[Constraint, ...]
    grid: tuple[Any, Any, Any]
    block: tuple[Any, Any, Any]
    smem_dynamic: Any
    traffic: dict[str, Any]
    path: Path
    compile_options: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # arch_suffix, targets
    aliases: tuple[str, ...] = ()  # former names: old results and reports still match this rung
    accesses: AccessBlock | None = None  # principal memory accesses (docs/kernel-spec.md)
    tune: dict[str, tuple[int, ...]] = field(default_factory=dict)  # `gemmprof tune`'s candidates per parameter
    compiler: str | None = None  # a pinned compiler (nvcc | nvrtc), with compiler_reason
    compiler_reason: str = ""
    reads_c: bool = False  # the kernel reads C even when beta == 0 (declared, still reported)
    dtypes: tuple[str, ...] = ()  # every dtype the source builds for (dtype first); see dtype_define
    dtype_define: str | None = None  # -DNAME=1 builds the source for bf16
    c_dtypes: tuple[str, ...] = ("fp32",)  # every C dtype the source writes (abi.c_dtype first); see c_dtype_define
    c_dtype_define: str | None = None  # -DNAME=0|1|2 builds it for fp32|fp16|bf16 C (launch_fields.C_DTYPE_CODES)
    scales: tuple[str, ...] = ()  # fp8: the scale modes it takes (the first is its default); see scales_define
    scales_define: str | None = None  # -DNAME=0|1|2 builds it for tensor|1x128|128x128 scales
    scale_shapes: dict[str, dict[str, list]] = field(default_factory=dict)  # per mode: the scale arrays it reads
    tma_args: tuple[TmaArg, ...] = ()  # CUtensorMaps passed after the eight standard arguments
    cluster: tuple[Any, Any, Any] | None = None  # thread-block cluster shape: launched through cuLaunchKernelEx
    decomposition: dict[str, Any] = field(default_factory=dict)  # names over M, N, K, SMS (e.g. split-K's slices)
    specialize: dict[str, Any] = field(default_factory=dict)  # macros over the launch at one shape (-DNAME=value)
    note: tuple[str, ...] | None = None  # the decomposition names a run's note shows (None: those the grid reads)
    abi: Abi = Abi()  # its parameters in order (`args`), C's dtype, the workspace
    build_fields: BuildFields = BuildFields()  # include_dirs, flags, literal defines, a host launcher, libs
    plan: tuple[PlanRule, ...] = ()  # a planning entry's rules (catalog/plan.py); it then has no kernel of its own

    @property
    def launcher(self) -> Path | None:
        """The host launcher's .cu (then `entry` is its extern "C" function and `file` the same .cu)."""
        return self.build_fields.launcher

    @property
    def targets(self) -> tuple[str, ...]:
        """The only architectures it builds for (e.g. sm_90a for wgmma), or () for any."""
        return tuple(self.extra.get("targets") or ())

    @property
    def sort_key(self):
        m = _ID.match(self.id)
        if not m:
            return (2, 0, self.id)
        return (1 if m["prefix"] else 0, int(m["num"]), m["letter"])

    def answers_to(self, name: str) -> bool:
        """Its id, its name or one of its former names."""
        return name in (self.id, self.name, *self.aliases)

    @property
    def is_ladder_rung(self) -> bool:
        """Shipped under kernels/ (selectable by name), rather than a user's own --spec."""
        return self.path.is_relative_to(KERNELS_DIR.resolve())

    @property
    def rung_number(self) -> int | None:
        m = _ID.match(self.id)
        return int(m["num"]) if m else None

    def source_text(self) -> str:
        return self.source.get("document", "") + (f", {self.source['section']}" if self.source.get("section") else "")


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def _constraints(path, key, node) -> tuple[Constraint, ...]:
    if node is None:
        return ()
    if not isinstance(node, list):
        _fail(path, key, "expected a list of {check, message}")
    out = []
    for i, item in enumerate(node):
        if not isinstance(item, dict) or "check" not in item or "message" not in item:
            _fail(path, f"{key}[{i}]", "expected {check: EXPRESSION, message: TEXT}")
        check_keys(path, f"{key}[{i}]", item, ("check", "message"))
        _parse(path, f"{key}[{i}].check", item["check"])
        out.append(Constraint(str(item["check"]), str(item["message"])))
    return tuple(out)


def _parse(path, key, text):
    if isinstance(text, (int, float)):
        return
    try:
        expr.parse(str(text))
    except SpecError as exc:
        _fail(path, key, str(exc))


def _triple(path, key, node):
    if isinstance(node, list):
        node = _rejoin(node)
    if not isinstance(node, list) or not 1 <= len(node) <= 3:
        _fail(path, key, "expected a list of 1 to 3 expressions")
    for i, e in enumerate(node):
        _launch_expr(path, f"{key}[{i}]", e)
    return tuple(list(node) + [1] * (3 - len(node)))


def _launch_expr(path, key, node) -> None:
    """A number of the launch (a grid or block dimension, the dynamic shared memory): an integer or an expression,
    never true, a fraction, NaN or a negative literal (a launch of -1 blocks, of 1.5 bytes, is no launch)."""
    if isinstance(node, bool) or not isinstance(node, (int, str)) or (isinstance(node, int) and node < 0):
        _fail(path, key, f"expected a non-negative integer or an expression over the parameters, M, N and K, got "
                         f"{str(node)[:40]!r}")
    _parse(path, key, node)


def _mapping(doc: dict, key: str):
    """The key's mapping, {} where it is absent or null; any other value is returned for the caller to refuse (never
    an empty list, 0 or '' read as no entries)."""
    node = doc.get(key)
    return {} if node is None else node


def _prose(path, doc: dict, key: str, default: str) -> str:
    """A line of text (title, description, compiler_reason): a string or a number, never a list or a mapping."""
    node = doc.get(key)
    if node is None:
        return default
    if isinstance(node, bool) or not isinstance(node, (str, int, float)):
        _fail(path, key, f"expected text, got {type(node).__name__} {str(node)[:40]!r}")
    return str(node).strip()


def _flag(path, doc: dict, key: str) -> bool:
    node = doc.get(key, False)
    if not isinstance(node, bool):
        _fail(path, key, f"expected true or false, got {str(node)[:40]!r}")
    return node


def _tune_space(path, node, params) -> dict[str, tuple[int, ...]]:
    if node is None:
        return {}
    if not isinstance(node, dict):
        _fail(path, "tune", "expected a mapping PARAMETER: [candidate values]")
    out = {}
    for k, values in node.items():
        if k not in params:
            _fail(path, f"tune.{k}", f"not a parameter (the parameters are {', '.join(params) or 'none'})")
        if not isinstance(values, list) or not values:
            _fail(path, f"tune.{k}", "expected a non-empty list of integers")
        if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
            _fail(path, f"tune.{k}", f"expected integers, got {str(values)[:60]}")
        if any(not -PARAM_LIMIT <= v < PARAM_LIMIT for v in values):
            _fail(path, f"tune.{k}", f"{str(values)[:60]}: too large: a parameter is a C int, {-PARAM_LIMIT} to "
                                     f"{PARAM_LIMIT - 1}")
        out[str(k)] = tuple(dict.fromkeys(values))
    return out


def _name_and_id(path: Path, doc: dict, required: tuple[str, ...], id_rule: re.Pattern | None, id_words: str
                 ) -> tuple[str, str]:
    """The spec's nested keys checked, its required keys present, its name and id (the name where no id is given):
    both a file name of its build and a row of results, the id of a ladder file matching `id_rule`."""
    for key, known in NESTED_KEYS.items():
        if isinstance(doc.get(key), dict):
            check_keys(path, key, doc[key], known)
    for key in required:
        if key not in doc:
            _fail(path, key, "missing")
    name = _text(path, "name", doc["name"]) if "name" in doc else path.stem
    sid = _text(path, "id", doc["id"]) if "id" in doc else name
    if id_rule is not None and not id_rule.match(sid):
        _fail(path, "id", f"{sid!r} {id_words}")
    for key, value in (("name", name), ("id", sid)):
        if not _NAME.fullmatch(value):
            _fail(path, key, f"{value[:60]!r}: use letters, digits, _, ., + and - (no spaces), at most 100")
    return name, sid


def parse_spec(path: Path, text: str) -> KernelSpec:
    doc = parse_mapping(path, text, SpecError)
    if "plan" in doc:
        return _parse_plan_spec(path, doc)
    check_keys(path, "", doc, SPEC_KEYS)
    ladder_file = path.is_relative_to(KERNELS_DIR.resolve())
    launcher = "launcher" in doc
    name, sid = _name_and_id(path, doc, (("entry",) if launcher else _REQUIRED) + (_LADDER_REQUIRED if ladder_file
                                                                                   else ()),
                             _ID if ladder_file else None, "is not a rung id like 5, 3b or h2")
    doc.setdefault("dtype", "fp32")
    doc.setdefault("layout", {"A": "row", "B": "row", "C": "row"})
    doc.setdefault("source", {"document": ""})
    compiler = doc.get("compiler")
    if compiler is not None and compiler not in COMPILERS:
        _fail(path, "compiler", f"{compiler!r} is not nvcc or nvrtc")
    if compiler is not None and not doc.get("compiler_reason"):
        _fail(path, "compiler_reason", "a spec that pins its compiler must say why")
    if doc.get("arch_suffix") not in (None, "a"):
        _fail(path, "arch_suffix", f"{doc.get('arch_suffix')!r}: only 'a' (e.g. sm_90a) is known")
    if doc["dtype"] not in DTYPE_NAMES:
        _fail(path, "dtype", f"{doc['dtype']!r} is not one of {', '.join(DTYPE_NAMES)}")
    backend = doc.get("backend", "nvrtc")
    if backend not in ("nvrtc", "nvcc"):
        _fail(path, "backend", f"{backend!r} is not nvrtc or nvcc")
    params = _mapping(doc, "params")
    if not isinstance(params, dict):
        _fail(path, "params", "expected a mapping NAME: integer")
    for k, v in params.items():
        if not isinstance(k, str) or not MACRO_NAME.fullmatch(k):
            _fail(path, f"params.{str(k)[:40]}", "not a parameter name (a C identifier: ASCII letters, digits and _, "
                                                 "not starting with a digit)")
        if isinstance(v, bool) or not isinstance(v, int):
            _fail(path, f"params.{k}", f"expected an integer default, got {str(v)[:40]!r}")
        if not -PARAM_LIMIT <= v < PARAM_LIMIT:
            _fail(path, f"params.{k}", f"{str(v)[:40]} is too large: a parameter is a C int, {-PARAM_LIMIT} to "
                                       f"{PARAM_LIMIT - 1}")
    template = _param_names(path, "template", doc.get("template"))
    for n in template:
        if n not in params:
            _fail(path, "template", f"{n!r} is not a parameter")
    defines, build_fields = parse_build_fields(path, doc, params)
    derived = _mapping(doc, "derived")
    if not isinstance(derived, dict):
        _fail(path, "derived", "expected a mapping NAME: expression")
    for k, v in derived.items():
        if not isinstance(k, str):
            _fail(path, "derived", f"{k!r} is not a name")
        _parse(path, f"derived.{k}", v)
    layout = doc["layout"]
    if not isinstance(layout, dict) or set(layout) != {"A", "B", "C"} or not all(
            v in ("row", "col") for v in layout.values()):
        _fail(path, "layout", "expected {A: row|col, B: row|col, C: row|col}")
    source = doc["source"]
    if not isinstance(source, dict) or "document" not in source:
        _fail(path, "source", "expected {document: ..., section: ...}")
    cu = build_fields.launcher or _source_file(path, doc["file"])
    traffic = _mapping(doc, "traffic")
    if not isinstance(traffic, dict):
        _fail(path, "traffic", "expected a mapping {BM, BN, TM, TN, smem}")
    for k, v in traffic.items():
        if k != "smem":
            _parse(path, f"traffic.{k}", v)
    smem_dynamic = doc.get("smem_dynamic", 0)
    _launch_expr(path, "smem_dynamic", smem_dynamic)
    return KernelSpec(
        id=sid, name=name, title=_prose(path, doc, "title", name), description=_prose(path, doc, "description", ""),
        source={k: str(v) for k, v in source.items()}, dtype=doc["dtype"], layout=dict(layout), file=cu,
        entry=_entry(path, doc["entry"], launcher), backend=backend, template=template, defines=defines, params=dict(params),
        derived={k: v for k, v in derived.items()}, constraints=_constraints(path, "constraints", doc.get("constraints")),
        shape_constraints=_constraints(path, "shape_constraints", doc.get("shape_constraints")),
        grid=_triple(path, "grid", doc.get("grid", [1])), block=_triple(path, "block", doc.get("block", [1])),
        smem_dynamic=smem_dynamic,
        traffic=traffic, path=path, compile_options=check_flags(path, "compile_options", doc.get("compile_options")),
        aliases=_names(path, "aliases", doc.get("aliases")),
        accesses=parse_accesses(path, doc.get("accesses")),
        tune=_tune_space(path, doc.get("tune"), params),
        extra={**({"arch_suffix": doc["arch_suffix"]} if "arch_suffix" in doc else {}),
               **({"targets": _targets(path, doc["targets"])} if "targets" in doc else {})}, compiler=compiler,
        compiler_reason=_prose(path, doc, "compiler_reason", ""), reads_c=_flag(path, doc, "reads_c"),
        abi=parse_abi(path, doc, launcher), build_fields=build_fields, **launch_fields(path, doc),
    )


_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*")
_TARGET = re.compile(r"sm_[0-9]{2,3}a?")


def _entry(path, node, launcher: bool) -> str:
    """The kernel's name (a::b::k for one in a namespace), or a launcher's extern "C" function: a C++ name, which
    the wrapper nvcc compiles takes the address of."""
    name = _text(path, "entry", node)
    if not _ENTRY.fullmatch(name) or (launcher and "::" in name):
        what = "an extern \"C\" function name" if launcher else "a kernel name (a C++ identifier, or a::b::kernel)"
        _fail(path, "entry", f"{name[:60]!r} is not {what}")
    return name


def _targets(path, node) -> list[str]:
    if not isinstance(node, list) or not node or not all(isinstance(t, str) and _TARGET.fullmatch(t) for t in node):
        _fail(path, "targets", f"{str(node)[:60]!r}: expected a list of architectures such as [sm_90a]")
    return list(node)


def _parse_plan_spec(path: Path, doc: dict) -> KernelSpec:
    """A planning entry: its rules (`plan:`), the dtypes and layout its rungs share, the shapes it accepts; no kernel
    of its own (catalog/plan.py)."""
    for key in doc:
        if key in SPEC_KEYS and key not in PLAN_KEYS:
            _fail(path, key, "a plan chooses among rungs and has no kernel of its own: its rungs have the "
                             f"{key}: (a plan has {', '.join(PLAN_KEYS)})")
    check_keys(path, "", doc, PLAN_KEYS)
    ladder_file = path.is_relative_to(KERNELS_DIR.resolve())
    name, sid = _name_and_id(path, doc, ("name", *(("id", "title", "description", "source") if ladder_file else ())),
                             _PLAN_ID if ladder_file else None, "is not a planning entry of the ladder (p or hp)")
    dtype = doc.setdefault("dtype", "fp32")
    if dtype not in DTYPE_NAMES:
        _fail(path, "dtype", f"{dtype!r} is not one of {', '.join(DTYPE_NAMES)}")
    dtypes = [dtype] if doc.get("dtypes") is None else doc["dtypes"]
    if not isinstance(dtypes, list) or not all(d in DTYPE_NAMES for d in dtypes) or dtype not in dtypes:
        _fail(path, "dtypes", f"expected a list of {', '.join(DTYPE_NAMES)} that holds dtype ({dtype})")
    layout = doc.get("layout", {"A": "row", "B": "row", "C": "row"})
    if not isinstance(layout, dict) or set(layout) != {"A", "B", "C"} or not all(
            v in ("row", "col") for v in layout.values()):
        _fail(path, "layout", "expected {A: row|col, B: row|col, C: row|col}")
    source = {"document": ""} if doc.get("source") is None else doc["source"]
    if not isinstance(source, dict) or "document" not in source:
        _fail(path, "source", "expected {document: ..., section: ...}")
    return KernelSpec(
        id=sid, name=name, title=_prose(path, doc, "title", name), description=_prose(path, doc, "description", ""),
        source={k: str(v) for k, v in source.items()}, dtype=dtype, layout=dict(layout), file=path, entry="",
        backend="nvcc", template=(), defines=(), params={}, derived={}, constraints=(),
        shape_constraints=_constraints(path, "shape_constraints", doc.get("shape_constraints")),
        grid=(1, 1, 1), block=(1, 1, 1), smem_dynamic=0, traffic={}, path=path,
        aliases=_names(path, "aliases", doc.get("aliases")), dtypes=tuple(dtypes),
        plan=parse_rules(path, doc["plan"]))


def _names(path, key, node) -> tuple[str, ...]:
    if node is None:
        return ()
    if not isinstance(node, list) or not all(isinstance(n, str) and _NAME.fullmatch(n) for n in node):
        _fail(path, key, "expected a list of names (letters, digits, _, ., + and -, at most 100 each)")
    return tuple(node)


def load_spec(path) -> KernelSpec:
    from gemmprof.errors import InputError
    from gemmprof.results.files import read_text

    path = Path(path)
    try:
        text = read_text(path, "kernel spec .yaml", limit=SPEC_BYTES, strict=True)
    except InputError as exc:
        raise SpecError(f"--spec: {exc}") from None
    return parse_spec(path.resolve(), text)


@lru_cache(maxsize=1)
def ladder() -> tuple[KernelSpec, ...]:
    """Every rung under kernels/, in ladder order (fp32 rungs by number, then fp16); the planning entries beside
    them are plans()."""
    return tuple(sorted((s for s in _catalog() if not s.plan), key=lambda s: s.sort_key))


@lru_cache(maxsize=1)
def plans() -> tuple[KernelSpec, ...]:
    """The ladder's planning entries (specs with `plan:` under kernels/); catalog/plan.py checks their rules
    against the rungs wherever one is chosen, listed or resolved."""
    return tuple(s for s in _catalog() if s.plan)


def _catalog() -> list[KernelSpec]:
    """Every spec under kernels/, rungs and plans, their ids, names and former names unique among all."""
    specs = [load_spec(p) for p in sorted(KERNELS_DIR.glob("*/*.yaml"))]
    if not specs:  # an install without its data must say so, not print an empty ladder
        raise SpecError(f"no kernel specs under {KERNELS_DIR}: a broken install? reinstall gemmprof, or set "
                        "GEMMPROF_HOME to a gemmprof checkout")
    seen: dict[str, Path] = {}
    for s in specs:
        for key in (s.id, s.name, *s.aliases):
            if key in seen:
                raise SpecError(f"{s.path}: id/name {key!r} is also used by {seen[key]}")
            seen[key] = s.path
    return specs


def load_user_specs(paths) -> list[KernelSpec]:
    """--spec files, each once: none may answer to the id, name or former name of a rung, of a cuBLAS baseline or
    of an earlier --spec, since selection, results, diff and tuned defaults go by them. A rung's own file is the
    rung."""
    from gemmprof.catalog.baselines import by_name

    rungs = {s.path.resolve(): s for s in ladder()}
    taken: dict[str, str] = {}
    for s in ladder():
        for what, key in (("id", s.id), ("name", s.name), *(("former name", a) for a in s.aliases)):
            taken.setdefault(key, f"the {what} of rung {s.id} ({s.path})")
    taken.update((name, f"a cuBLAS baseline's name ({name})") for name in by_name())
    out: list[KernelSpec] = []
    for p in paths:
        spec = load_spec(p)
        own = rungs.get(spec.path.resolve())
        if own is not None or any(o.path.resolve() == spec.path.resolve() for o in out):
            if own is not None and own not in out:
                out.append(own)
            continue
        for what, key in (("name", spec.name), ("id", spec.id), *(("aliases", a) for a in spec.aliases)):
            if key in taken:
                raise SpecError(f"{spec.path}: {what}: {key!r} is already {taken[key]}; give this kernel an id and "
                                "name of its own (selection, results, diff and tuned defaults go by them)")
        for what, key in (("name", spec.name), ("id", spec.id), *(("former name", a) for a in spec.aliases)):
            taken.setdefault(key, f"the {what} of {spec.path}")
        out.append(spec)
    return out


def select(selectors: tuple[str, ...] | list[str], *, all_: bool = False, dtype: str | None = None,
           specs: tuple[KernelSpec, ...] | None = None) -> list[KernelSpec]:
    """Pick rungs by name, id ("5", "3b", "h2"), range ("1-6", "h1-h3") or all of them (optionally of a dtype); a
    planning entry (plans()) by its name or id only, never by a range or --all."""
    entries = plans() if specs is None else ()
    specs = ladder() if specs is None else specs
    pool = [s for s in specs if dtype is None or dtype == s.dtype or dtype in s.dtypes]
    named = [s for s in entries if dtype is None or dtype == s.dtype or dtype in s.dtypes]
    if all_:
        if not selectors:
            return pool
    if not selectors and not all_:
        raise SpecError("no variants selected: name rungs (e.g. 1-6, 10, warptiling) or pass --all")
    chosen: list[KernelSpec] = []
    for sel in selectors:
        for part in str(sel).split(","):
            part = part.strip()
            if not part:
                continue
            matched = [s for s in named if s.answers_to(part)] or _match(part, pool)
            if not matched:
                raise SpecError(_not_found(part, pool + named, (*specs, *entries), dtype))
            chosen.extend(m for m in matched if m not in chosen)
    return chosen


def _not_found(part: str, pool: list[KernelSpec], specs, dtype: str | None) -> str:
    known = ", ".join(f"{s.id}:{s.name}" for s in pool)
    other = _match(part, list(specs)) if dtype else []
    if other:  # the rung exists, only not for this dtype
        names = ", ".join(f"{s.id}:{s.name} ({'/'.join(s.dtypes or (s.dtype,))})" for s in other)
        return f"{part!r} is not built for {dtype}: {names}; {dtype} rungs: {known or 'none'}"
    return f"unknown variant {part!r} (known: {known})"


def _match(sel: str, pool: list[KernelSpec]) -> list[KernelSpec]:
    exact = [s for s in pool if s.answers_to(sel)]
    if exact:
        return exact
    rng = re.match(r"^(h?)(\d+)-(h?)(\d+)$", sel)
    if rng and rng[1] == rng[3]:
        lo, hi, fp16 = int(rng[2]), int(rng[4]), bool(rng[1])
        return [s for s in pool if s.rung_number is not None and lo <= s.rung_number <= hi
                and s.id.startswith("h") == fp16]
    if sel.isdigit() or re.match(r"^h\d+$", sel):  # a number also selects its lettered side variants
        return [s for s in pool if re.match(rf"^{sel}[a-z]?$", s.id)]
    return []
