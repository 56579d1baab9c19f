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
from gemmprof.catalog.paths import KERNELS_DIR
from gemmprof.catalog.spec_fields import NESTED_KEYS, SPEC_KEYS, check_keys
from gemmprof.catalog.spec_fields import names as _param_names
from gemmprof.catalog.spec_fields import rejoin as _rejoin
from gemmprof.catalog.spec_fields import source_file as _source_file
from gemmprof.catalog.spec_fields import text as _text
from gemmprof.catalog.yamlfile import parse_mapping
from gemmprof.errors import SpecError

_ID = re.compile(r"^(?P<prefix>h?)(?P<num>\d+)(?P<letter>[a-z]?)$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_REQUIRED = ("file", "entry", "grid", "block")  # a minimal spec; the rest has defaults (docs/kernel-spec.md)
_LADDER_REQUIRED = ("id", "name", "title", "description", "source", "dtype", "layout")
COMPILERS = ("nvcc", "nvrtc")


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
        _parse(path, f"{key}[{i}]", e)
    return tuple(list(node) + [1] * (3 - len(node)))


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
            _fail(path, f"tune.{k}", f"expected integers, got {values!r}")
        out[str(k)] = tuple(dict.fromkeys(values))
    return out


def parse_spec(path: Path, text: str) -> KernelSpec:
    doc = parse_mapping(path, text, SpecError)
    check_keys(path, "", doc, SPEC_KEYS)
    for key, known in NESTED_KEYS.items():
        if isinstance(doc.get(key), dict):
            check_keys(path, key, doc[key], known)
    ladder_file = path.is_relative_to(KERNELS_DIR.resolve())
    launcher = "launcher" in doc
    for key in (("entry",) if launcher else _REQUIRED) + (_LADDER_REQUIRED if ladder_file else ()):
        if key not in doc:
            _fail(path, key, "missing")
    name = str(doc.get("name", path.stem))
    sid = str(doc.get("id", name))
    if ladder_file and not _ID.match(sid):
        _fail(path, "id", f"{sid!r} is not a rung id like 5, 3b or h2")
    for key, value in (("id", sid), ("name", name)):
        if not _NAME.match(value):
            _fail(path, key, f"{value!r}: use letters, digits, _, ., + and - (no spaces)")
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
    params = doc.get("params") or {}
    if not isinstance(params, dict):
        _fail(path, "params", "expected a mapping NAME: integer")
    for k, v in params.items():
        if not isinstance(k, str) or isinstance(v, bool) or not isinstance(v, int) or abs(v) > 2 ** 31:
            _fail(path, f"params.{k}", f"expected an integer default, got {str(v)[:40]!r}")
    template = _param_names(path, "template", doc.get("template"))
    for n in template:
        if n not in params:
            _fail(path, "template", f"{n!r} is not a parameter")
    defines, build_fields = parse_build_fields(path, doc, params)
    derived = doc.get("derived") or {}
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
    traffic = doc.get("traffic") or {}
    if not isinstance(traffic, dict):
        _fail(path, "traffic", "expected a mapping {BM, BN, TM, TN, smem}")
    for k, v in traffic.items():
        if k != "smem":
            _parse(path, f"traffic.{k}", v)
    smem_dynamic = doc.get("smem_dynamic", 0)
    _parse(path, "smem_dynamic", smem_dynamic)
    return KernelSpec(
        id=sid, name=name, title=str(doc.get("title", name)), description=str(doc.get("description", "")).strip(),
        source={k: str(v) for k, v in source.items()}, dtype=doc["dtype"], layout=dict(layout), file=cu,
        entry=_text(path, "entry", doc["entry"]), backend=backend, template=template, defines=defines, params=dict(params),
        derived={k: v for k, v in derived.items()}, constraints=_constraints(path, "constraints", doc.get("constraints")),
        shape_constraints=_constraints(path, "shape_constraints", doc.get("shape_constraints")),
        grid=_triple(path, "grid", doc.get("grid", [1])), block=_triple(path, "block", doc.get("block", [1])),
        smem_dynamic=smem_dynamic,
        traffic=traffic, path=path, compile_options=_param_names(path, "compile_options", doc.get("compile_options")),
        aliases=_names(path, "aliases", doc.get("aliases")),
        accesses=parse_accesses(path, doc.get("accesses")),
        tune=_tune_space(path, doc.get("tune"), params),
        extra={k: doc[k] for k in ("arch_suffix", "targets") if k in doc}, compiler=compiler,
        compiler_reason=str(doc.get("compiler_reason") or ""), reads_c=bool(doc.get("reads_c", False)),
        abi=parse_abi(path, doc, launcher), build_fields=build_fields, **launch_fields(path, doc),
    )


def _names(path, key, node) -> tuple[str, ...]:
    if node is None:
        return ()
    if not isinstance(node, list) or not all(isinstance(n, str) and _NAME.match(n) for n in node):
        _fail(path, key, "expected a list of names (lower-case letters, digits and _)")
    return tuple(node)


def load_spec(path) -> KernelSpec:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        what = "a directory, not a spec file" if path.is_dir() else exc.strerror or exc
        raise SpecError(f"--spec: cannot read {path}: {what}") from None
    except UnicodeDecodeError:
        raise SpecError(f"--spec: {path} is not a text file (not UTF-8): give a kernel spec .yaml") from None
    return parse_spec(path.resolve(), text)


@lru_cache(maxsize=1)
def ladder() -> tuple[KernelSpec, ...]:
    """Every spec under kernels/, in ladder order (fp32 rungs by number, then fp16)."""
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
    return tuple(sorted(specs, key=lambda s: s.sort_key))


def select(selectors: tuple[str, ...] | list[str], *, all_: bool = False, dtype: str | None = None,
           specs: tuple[KernelSpec, ...] | None = None) -> list[KernelSpec]:
    """Pick rungs by name, id ("5", "3b", "h2"), range ("1-6", "h1-h3") or all of them (optionally of a dtype)."""
    specs = ladder() if specs is None else specs
    pool = [s for s in specs if dtype is None or dtype == s.dtype or dtype in s.dtypes]
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
            matched = _match(part, pool)
            if not matched:
                raise SpecError(_not_found(part, pool, specs, dtype))
            chosen.extend(m for m in matched if m not in chosen)
    return chosen


def _not_found(part: str, pool: list[KernelSpec], specs: tuple[KernelSpec, ...], dtype: str | None) -> str:
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
