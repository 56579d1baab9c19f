"""A kernel spec bound to its parameters (and dtype): everything a launch needs, checked against the constraints."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gemmprof.catalog import expr
from gemmprof.catalog.launch_fields import C_DTYPE_BYTES, C_DTYPE_CODES, SCALE_CODES
from gemmprof.errors import SpecError
from gemmprof.results.shape import GemmShape, Tiles

if TYPE_CHECKING:
    from gemmprof.catalog.spec import Constraint, KernelSpec
    from gemmprof.results.stages import PlanChoice


_GENERAL_SHAPE = GemmShape(1 << 16, 1 << 16, 1 << 16)  # too large for any spec's shape rule (h8's skinny tile)
# CUDA's limits on every GPU: a grid's x, y, z; a block's x, y, z and its threads in all
GRID_LIMITS = (2 ** 31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)
MAX_BLOCK_THREADS = 1024
_GENERAL_SMS = 1 << 10  # SMS for the general binary's rules: at _GENERAL_SHAPE none depends on it (h12's fitted width)


@dataclass(frozen=True)
class BoundKernel:
    """A spec with its parameters chosen and checked: everything a launch needs."""

    spec: KernelSpec
    params: dict[str, int]
    env: dict[str, int]  # params + derived
    dtype: str = ""  # the dtype it is built and run for: one of spec.dtypes ("" means spec.dtype)
    params_source: str = ""  # where the parameters come from when not the spec ("tuned on DEVICE ...")
    shape_defines: tuple[tuple[str, int], ...] = ()  # the spec's `specialize` at one shape (see for_shape)
    built_for: tuple[GemmShape, int | None] | None = None  # the shape and SM count for_shape built it for
    c_dtype: str = ""  # the C dtype it is built for: one of spec.c_dtypes ("" means the spec's c_dtype)
    scales: str = ""  # fp8: the scale mode it is built for, one of spec.scales ("" means the first)
    plan: PlanChoice | None = None  # chosen by a planning entry (catalog/plan.py): which rule, and why

    @property
    def run_dtype(self) -> str:
        return self.dtype or self.spec.dtype

    @property
    def run_c_dtype(self) -> str:
        return self.c_dtype or self.spec.abi.c_dtype

    @property
    def run_scales(self) -> str:
        """fp8 kernels: tensor, 1x128 or 128x128; "" for the others."""
        return self.scales or (self.spec.scales[0] if self.spec.scales else "")

    @property
    def variant_name(self) -> str:
        """Its name in results and NVTX ranges: the spec's (the planning entry's where one chose it), with the
        dtype, the C dtype (_cfp32) and the scale mode added where they are not the spec's own."""
        name = self.plan.entry if self.plan else self.spec.name
        if self.run_dtype != self.spec.dtype:
            name += f"_{self.run_dtype}"
        if self.run_c_dtype != self.spec.abi.c_dtype:
            name += f"_c{self.run_c_dtype}"
        if self.spec.scales and self.run_scales != self.spec.scales[0]:
            name += f"_{self.run_scales}"
        return name

    @property
    def template_args(self) -> tuple[int, ...]:
        return tuple(self.params[n] for n in self.spec.template)

    @property
    def name_expression(self) -> str:
        if not self.spec.template:
            return self.spec.entry
        return f"{self.spec.entry}<{', '.join(str(a) for a in self.template_args)}>"

    @property
    def define_flags(self) -> tuple[str, ...]:
        flags = tuple(f"-D{n}={self.params[n]}" for n in self.spec.defines)
        flags += tuple(f"-D{n}={v}" for n, v in self.spec.build_fields.define_literals)
        if self.spec.dtype_define and self.run_dtype == "bf16":
            flags += (f"-D{self.spec.dtype_define}=1",)
        if self.spec.c_dtype_define:
            flags += (f"-D{self.spec.c_dtype_define}={C_DTYPE_CODES[self.run_c_dtype]}",)
        if self.spec.scales_define:
            flags += (f"-D{self.spec.scales_define}={SCALE_CODES[self.run_scales]}",)
        return flags + tuple(f"-D{n}={v}" for n, v in self.shape_defines)

    @property
    def binary_key(self) -> tuple:
        """What decides the binary besides the compiler and the arch: two kernels with equal keys build the same
        cubin (parameters that only the spec's expressions read do not count)."""
        return str(self.spec.path), self.spec.entry, self.template_args, self.define_flags

    def for_shape(self, shape: GemmShape, sms: int | None = None) -> BoundKernel:
        """The kernel as built for launches at `shape` on a device of `sms` multiprocessors: the spec's
        `specialize` macros added as -D flags, so the source compiles only the code such a launch can run (rung
        14: one tile orientation and one class of N % 4). Itself when the spec has none; also itself without
        `sms` when the launch depends on it (an offline build: the general binary, which runs at every shape)."""
        if not self.spec.specialize:
            return self
        if sms is None and "SMS" in self._launch_names():
            return self
        env = {**self._shape_env(shape, sms), **self.decomposition(shape, sms)}
        grid, _, _ = self.launch_config(shape, sms)
        env.update(GRID_X=grid[0], GRID_Y=grid[1], GRID_Z=grid[2])
        values = []
        for name, e in self.spec.specialize.items():
            try:
                values.append((name, int(expr.evaluate(e, env))))
            except SpecError as exc:
                raise SpecError(f"{self.spec.path}: specialize.{name}: {exc}") from None
        return replace(self, shape_defines=tuple(values), built_for=(shape, sms))

    def _launch_names(self) -> set[str]:
        """Every name the grid, the decomposition and `specialize` read."""
        exprs = (*self.spec.grid, *self.spec.decomposition.values(), *self.spec.specialize.values())
        return set().union(*(expr.names(e) for e in exprs))

    def launch_config(self, shape: GemmShape, sms: int | None = None
                      ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        """Grid, block and dynamic shared memory at `shape`; `sms` (the device's multiprocessor count) is the name
        SMS in the expressions of persistent kernels."""
        env = {**self._shape_env(shape, sms), **self.decomposition(shape, sms)}
        grid = tuple(self._launch_value(f"grid[{i}]", e, env, shape, 1, hi) for i, (e, hi) in
                     enumerate(zip(self.spec.grid, GRID_LIMITS, strict=True)))
        block = tuple(self._launch_value(f"block[{i}]", e, env, shape, 1, hi) for i, (e, hi) in
                      enumerate(zip(self.spec.block, BLOCK_LIMITS, strict=True)))
        if block[0] * block[1] * block[2] > MAX_BLOCK_THREADS:
            raise SpecError(f"{self.spec.path}: block: {block[0]} x {block[1]} x {block[2]} threads at {shape.label}: "
                            f"a block holds at most {MAX_BLOCK_THREADS} threads on every CUDA GPU")
        smem = self._launch_value("smem_dynamic", self.spec.smem_dynamic, env, shape, 0, 2 ** 31 - 1)
        return grid, block, smem

    def _launch_value(self, key: str, e, env: dict, shape: GemmShape, lo: int, hi: int) -> int:
        """One of the launch's numbers at `shape`: an integer from lo to hi, or one line naming the spec's key, the
        value and the shape (never the zero grid a division would meet later, nor a negative block)."""
        try:
            value = expr.evaluate(e, env)
        except SpecError as exc:
            raise SpecError(f"{self.spec.path}: {key}: {exc}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
            shown = f" ({str(e)[:60]!r})" if isinstance(e, str) else ""
            raise SpecError(f"{self.spec.path}: {key}: {str(value)[:40]}{shown} at {shape.label}: must be an integer "
                            f"from {lo} to {hi}")
        return int(value)

    def cluster_dims(self, shape: GemmShape | None = None, sms: int | None = None) -> tuple[int, int, int] | None:
        """The launch's cluster shape, None for a plain launch (no `cluster`, or 1 x 1 x 1 at this shape). A cluster
        may depend on the shape through `decomposition` names (h8 clusters only its unsplit launches): at `shape`,
        else as _shape_env_with says."""
        if self.spec.cluster is None:
            return None
        env = self._shape_env_with(self.spec.cluster, shape, sms)
        dims = tuple(int(expr.evaluate(c, env)) for c in self.spec.cluster)
        return None if dims == (1, 1, 1) else dims

    def shape_names(self, shape: GemmShape, sms: int | None = None) -> dict[str, int]:
        """Every name at `shape`: the parameters, the derived names, M, N, K, SMS and the decomposition's."""
        return {**self._shape_env(shape, sms), **self.decomposition(shape, sms)}

    def _shape_env(self, shape: GemmShape, sms: int | None) -> dict[str, int]:
        return {**self.env, "M": shape.M, "N": shape.N, "K": shape.K, **({"SMS": sms} if sms else {})}

    def decomposition(self, shape: GemmShape, sms: int | None = None, until: set[str] | None = None
                      ) -> dict[str, int]:
        """The spec's `decomposition` names at `shape`, evaluated in order (each may use the ones before): how the
        launch splits the problem, e.g. split-K's slice count. Empty for specs without the key. With `until`, only
        as far as those names are known: later ones may need SMS, which a model without a device does not have."""
        env, out = self._shape_env(shape, sms), {}
        for name, e in self.spec.decomposition.items():
            if until is not None and until <= set(out):
                break
            try:
                out[name] = env[name] = int(expr.evaluate(e, env))
            except SpecError as exc:
                raise SpecError(f"{self.spec.path}: decomposition.{name}: {exc}") from None
        return out

    def decomposition_note(self, shape: GemmShape, sms: int | None = None) -> str:
        """The decomposition names the grid uses (or the spec's `note` lists), with their values at `shape`
        ("TILES=32, SPLIT_K=4"): what a run shows of how it split the problem; "" without them."""
        used = set(self.spec.note) if self.spec.note is not None else set().union(*(expr.names(e)
                                                                                     for e in self.spec.grid))
        values = self.decomposition(shape, sms)
        return ", ".join(f"{n}={v}" for n, v in values.items() if n in used)

    def _shape_env_with(self, exprs, shape: GemmShape | None, sms: int | None) -> dict[str, int]:
        """The names `exprs` read: the parameters, and the decomposition's where they use it (h8's block, h8's and
        h11's tiles depend on the shape), at `shape`, else at the shape the kernel was built for (for_shape), else
        at a problem large enough that no shape rule applies: the general binary is built from the parameters as
        given."""
        needed = set().union(*(expr.names(str(e)) for e in exprs)) & set(self.spec.decomposition)
        if not needed:
            return {**self.env, "M": 1, "N": 1, "K": 1}
        if shape is None:
            shape, sms = self.built_for or (_GENERAL_SHAPE, sms)
        if sms is None and self._reads_sms(needed):  # a tile fitted to the SM count, which nobody gave: the general one
            shape, sms = self.built_for or (_GENERAL_SHAPE, _GENERAL_SMS)
        return {**self._shape_env(shape, sms), **self.decomposition(shape, sms, until=needed)}

    def _reads_sms(self, needed: set[str]) -> bool:
        """Whether the decomposition reads SMS before it has every name in `needed`."""
        known: set[str] = set()
        for name, e in self.spec.decomposition.items():
            if needed <= known:
                return False
            if "SMS" in expr.names(e):
                return True
            known.add(name)
        return False

    @property
    def threads_per_block(self) -> int:
        """The binary's threads per block (see _shape_env_with for a block that depends on the shape)."""
        env = self._shape_env_with(self.spec.block, None, None)
        b = [int(expr.evaluate(e, env)) for e in self.spec.block]
        return b[0] * b[1] * b[2]

    def tiles(self, shape: GemmShape | None = None, sms: int | None = None) -> Tiles:
        """The traffic model's tiles, at `shape` where the spec's tile depends on it (see _shape_env_with)."""
        t = self.spec.traffic
        keys = ("BM", "BN", "TM", "TN")
        env = self._shape_env_with([t.get(k, 1) for k in keys], shape, sms)
        get = {k: int(expr.evaluate(t.get(k, 1), env)) for k in keys}
        return Tiles(**get, smem=bool(t.get("smem", False)))

    def check_shape(self, shape: GemmShape) -> None:
        """Raise SpecError naming the failed constraint and the nearest sizes that pass it."""
        env = {**self.env, "M": shape.M, "N": shape.N, "K": shape.K}
        failed = [f"{c.message} ({c.check}){_nearest_hint(c, env)}"
                  for c in self.spec.shape_constraints if not expr.evaluate(c.check, env)]
        if failed:
            raise SpecError(f"{self.spec.name}: shape {shape.label} rejected: {'; '.join(failed)}")


def _nearest_hint(c: Constraint, env: dict) -> str:
    dims = [d for d in ("M", "N", "K") if d in expr.names(c.check)]
    if len(dims) != 1:
        return ""
    d = dims[0]
    v = env[d]
    below = next((x for x in range(v - 1, max(v - 4097, 0), -1) if expr.evaluate(c.check, {**env, d: x})), None)
    above = next((x for x in range(v + 1, v + 4097) if expr.evaluate(c.check, {**env, d: x})), None)
    options = [str(x) for x in (below, above) if x]
    return f"; nearest valid {d}: {' or '.join(options)}" if options else ""


def bind(spec: KernelSpec, overrides: dict[str, int] | None = None, dtype: str | None = None,
         c_dtype: str | None = None, scales: str | None = None) -> BoundKernel:
    """The spec with `overrides` for its parameters, built for `dtype`, `c_dtype` and `scales` (None: the spec's
    own), every constraint checked. A spec with `c_dtypes` has the name C_BYTES (4 or 2) in its expressions, an fp8
    spec the name SCALES (0 tensor, 1 1x128, 2 128x128)."""
    overrides = overrides or {}
    if dtype and dtype != spec.dtype and dtype not in spec.dtypes:
        raise SpecError(f"{spec.name}: built for {', '.join(spec.dtypes or (spec.dtype,))}, not {dtype}")
    if c_dtype and c_dtype not in spec.c_dtypes:
        raise SpecError(f"{spec.name}: writes C as {', '.join(spec.c_dtypes)}, not {c_dtype} (--c-dtype)")
    if scales and scales not in spec.scales:
        raise SpecError(f"{spec.name}: takes --scales {', '.join(spec.scales) or 'none (not an fp8 kernel)'}, not "
                        f"{scales}")
    unknown = set(overrides) - set(spec.params)
    if unknown:
        raise SpecError(f"--param: {spec.name} has no parameter {', '.join(sorted(unknown))} "
                        f"(it has {', '.join(spec.params) or 'none'})")
    params = {**spec.params, **overrides}
    env: dict[str, int] = dict(params)
    c_chosen = c_dtype or spec.abi.c_dtype
    scales_chosen = scales or (spec.scales[0] if spec.scales else "")
    if len(spec.c_dtypes) > 1:
        env["C_BYTES"] = C_DTYPE_BYTES[c_chosen]
    if spec.scales:
        env["SCALES"] = SCALE_CODES[scales_chosen]
    for k, e in spec.derived.items():
        try:
            env[k] = expr.evaluate(e, env)
        except SpecError as exc:
            raise SpecError(f"{spec.path}: derived.{k}: {exc}") from None
    for c in spec.constraints:
        try:
            ok = expr.evaluate(c.check, env)
        except SpecError as exc:
            raise SpecError(f"{spec.name}: constraint {c.check}: {exc}") from None
        if not ok:
            shown = ", ".join(f"{k}={v}" for k, v in params.items())
            raise SpecError(f"{spec.name}: {c.message} ({c.check} fails with {shown})")
    return BoundKernel(spec, params, env, dtype if dtype and dtype != spec.dtype else "",
                       c_dtype=c_chosen if c_chosen != spec.abi.c_dtype else "",
                       scales=scales_chosen if spec.scales and scales_chosen != spec.scales[0] else "")


def parse_param_overrides(items) -> dict[str, int]:
    import re

    limit = 2 ** 31  # a parameter is a C int in the kernel's template or -D flag
    out = {}
    for item in items or ():
        k, eq, v = item.partition("=")
        k, v = k.strip(), v.strip()
        if not eq or not k or re.fullmatch(r"[+-]?[0-9]+", v) is None:  # ASCII digits: int() also reads '٣٢'
            raise SpecError(f"--param {item[:60]!r}: expected NAME=INTEGER")
        n = int(v) if len(v) <= 20 else None
        if n is None or not -limit <= n < limit:
            raise SpecError(f"--param {item[:60]!r}: too large: a parameter is a C int, {-limit} to {limit - 1}")
        out[k] = n
    return out

