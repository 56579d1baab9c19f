"""Options shared by several commands: output format, GPU selection, GEMM shape, a callable's C dtype."""

from __future__ import annotations

import functools
import math
import os
import re
from pathlib import Path

import click

from gemmprof.errors import InputError
from gemmprof.render.table import FORMATS

MAX_DIMENSION = 2 ** 31 - 1  # as GemmShape: CUDA grid limits and int32 indexing


class WholeNumber(click.IntRange):
    """An integer option in a range, written in ASCII digits only: Python's int() would also take ' 3', '1_000',
    '+7' and other scripts' digits, none of which a user means as a count."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not re.fullmatch(r"[0-9]+", value):
            self.fail(f"{value!r} is not a whole number written in the digits 0-9", param, ctx)
        return super().convert(value, param, ctx)


DIMENSION = WholeNumber(1, MAX_DIMENSION)


class FiniteFloat(click.ParamType):
    """A float that is finite (no nan, inf), and positive where physics says so (peaks, bandwidths, budgets)."""

    name = "number"

    def __init__(self, positive: bool = False, maximum: float = 1e30, minimum: float | None = None):
        self.positive, self.maximum, self.minimum = positive, maximum, minimum

    def convert(self, value, param, ctx):
        if isinstance(value, float) and math.isfinite(value):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number) or abs(number) > self.maximum:
            self.fail(f"{value!r} is not a finite number of sane size", param, ctx)
        if self.positive and number <= 0:
            self.fail(f"{value!r} must be greater than 0", param, ctx)
        if self.minimum is not None and number < self.minimum:
            self.fail(f"{value!r} must be at least {self.minimum:g}", param, ctx)
        return number


FINITE = FiniteFloat()
POSITIVE = FiniteFloat(positive=True)


def refuse_overwrite(outputs: dict[str, object], inputs: list) -> None:
    """An output file that is one of the command's inputs (by resolved path) would destroy it: refuse."""
    seen = {}
    for p in inputs:
        if p:
            seen.setdefault(os.path.realpath(p), str(p))
    for option, out in outputs.items():
        if not out:
            continue
        real = os.path.realpath(out)
        same = seen.get(real) or next((orig for r, orig in seen.items() if _same_file(r, real)), None)
        if same is not None:
            raise InputError(f"{option} {out}: that is also an input of this command ({same}); "
                             "writing it would destroy it: choose another file")
        seen[real] = str(out)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_directories(paths, what: str = "a file") -> None:
    for p in paths:
        if p and Path(p).is_dir():
            raise InputError(f"{p} is a directory: give {what}")


def output_options(func):
    @click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                  help="Output format (default: from -o's extension, else table).")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                  help="Write to FILE instead of the terminal (.json/.csv/.txt pick the format).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def deprecated_alias(old: str, new: str, what: str) -> None:
    """One line on stderr when a script uses an option's old spelling: it still works, and says what replaces it."""
    click.echo(f"gemmprof: {old} is the old spelling of {new} ({what}); it still works, but use {new}.", err=True)


def gpu_options(func):
    """--gpu NAME or --gpu-file FILE.yaml: the GPU spec sheet (peaks, SM limits). `--profile FILE` is the old,
    hidden spelling of --gpu-file: it still works and says so on stderr ("profile" means Nsight Compute's)."""
    @click.option("--gpu", "gpu", default=None, metavar="NAME",
                  help="GPU spec name (see `gemmprof gpus`); default: the current device, else H100 SXM.")
    @click.option("--gpu-file", "gpu_file", type=click.Path(dir_okay=False), default=None,
                  metavar="FILE.yaml", help="A GPU spec sheet of your own instead of --gpu (docs/gpu-spec-format.md).")
    @click.option("--profile", "gpu_file_old", type=click.Path(dir_okay=False), default=None, hidden=True)
    @functools.wraps(func)
    def wrapper(*args, gpu_file_old=None, **kwargs):
        if gpu_file_old is not None:
            if kwargs.get("gpu_file") is not None:
                raise InputError("--gpu-file and --profile (its old name): give one")
            deprecated_alias("--profile FILE.yaml", "--gpu-file", "a GPU spec sheet")
            kwargs["gpu_file"] = gpu_file_old
        return func(*args, **kwargs)

    return wrapper


def c_dtype_option(func):
    """--c-dtype: the C that --callable functions fill (a kernel's spec declares its own, `c_dtype:`)."""
    return click.option("--c-dtype", "c_dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default=None,
                        help="The dtype of the C that --callable functions fill (default fp32; bf16 with fp8 "
                             "inputs): fp16 or bf16 for a GEMM that writes half C, checked with that C's tolerance "
                             "beside cuBLAS writing the same C. Also the C of the fp8 rung (h14: bf16, fp16 or "
                             "fp32).")(func)


def callable_c_dtype(c_dtype: str | None, callables) -> str:
    """The callables' C dtype; --c-dtype without a --callable is refused rather than ignored."""
    if c_dtype is not None and not callables:
        raise InputError(f"--c-dtype {c_dtype}: only for --callable functions (a kernel spec declares its C with "
                         "c_dtype:, docs/kernel-spec.md)")
    return c_dtype or "fp32"


FP8_DTYPES = ("e4m3", "e5m2")  # as catalog.launch_fields (not imported here: --help stays light)
SCALE_MODES = ("tensor", "1x128", "128x128")


def scales_option(func):
    """--scales: how fp8 operands are scaled (docs/fp8.md)."""
    return click.option("--scales", "scales", type=click.Choice(SCALE_MODES), default=None,
                        help="fp8 inputs (--dtype e4m3 or e5m2, or an fp8 rung): one scale per tensor (default), "
                             "1x128 (A per row and 128 of K, B per 128 x 128 block: DeepGEMM's), or 128x128 (A and "
                             "B per 128 x 128 block). See docs/fp8.md.")(func)


def fp8_scales(scales: str | None, dtype: str | None, K: int) -> str:
    """The run's scale mode: --scales (default tensor), refused for a dtype that is not fp8 and, in the block modes,
    for a K that is not a multiple of 128."""
    if scales is None:
        return "tensor"
    from gemmprof.measure.fp8 import check_scales

    check_scales(scales, dtype or FP8_DTYPES[0], K)
    return scales


def run_c_dtype(c_dtype: str | None, callables, dtype: str | None, kernels, scales: str | None = None) -> str:
    """The C dtype of the run's callables (--c-dtype; default fp32, bf16 for fp8 inputs). --c-dtype that nothing in
    the run takes (no callable, no kernel writing several C dtypes), and --scales without an fp8 variant, are
    refused rather than ignored."""
    fp8_kernels = [k for k in kernels if k.run_dtype in FP8_DTYPES]
    if c_dtype is not None and not callables and not any(len(k.spec.c_dtypes) > 1 or k.spec.scales
                                                           for k in kernels):
        raise InputError(f"--c-dtype {c_dtype}: only for --callable functions and kernels that write several C "
                         "dtypes (the fp8 rung h14); a kernel spec declares its C with c_dtype:, docs/kernel-spec.md")
    if scales is not None and not fp8_kernels and not (callables and dtype in FP8_DTYPES):
        raise InputError(f"--scales {scales}: no fp8 variant in this run (give --dtype e4m3 or e5m2, or an fp8 rung "
                         "such as h14)")
    return c_dtype or ("bf16" if dtype in FP8_DTYPES else "fp32")


def shape_options(func):
    @click.option("--size", "size", type=DIMENSION, default=None, help="M = N = K = SIZE.")
    @click.option("-m", "m", type=DIMENSION, default=None, help="Rows of A and C.")
    @click.option("-n", "n", type=DIMENSION, default=None, help="Columns of B and C.")
    @click.option("-k", "k", type=DIMENSION, default=None, help="Columns of A, rows of B.")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def resolve_shape(size, m, n, k, default: int | None = 4096):
    """Combine --size and -m/-n/-k into a GemmShape; any dimension left out takes --size (or the default)."""
    from gemmprof.model.traffic import GemmShape

    base = size if size is not None else default
    dims = {}
    for name, value in (("m", m), ("n", n), ("k", k)):
        value = value if value is not None else base
        if value is None:
            raise InputError(f"-{name}: missing (give --size or -m/-n/-k)")
        if value < 1:
            raise InputError(f"-{name}/--size: {value} is not a valid dimension (must be >= 1)")
        dims[name] = value
    return GemmShape(dims["m"], dims["n"], dims["k"])


def resolve_gpu(gpu, gpu_file, *, prefer_current_device: bool = False):
    """The GPU spec sheet: --gpu-file, else --gpu NAME, else (if asked) the current device's, else H100 SXM."""
    from gemmprof.catalog import gpu_specs

    if gpu is not None and not gpu.strip():
        raise InputError("--gpu: the name is empty (see `gemmprof gpus` for the names)")
    if gpu and gpu_file:
        raise InputError("--gpu and --gpu-file: give one, not both")
    if gpu_file:
        return gpu_specs.load_gpu_file(gpu_file)
    if gpu is not None:
        return gpu_specs.get_gpu(gpu)
    if prefer_current_device:
        from gemmprof.measure.device import current_device_gpu

        found = current_device_gpu()
        if found is not None:
            return found
    return gpu_specs.get_gpu("h100")


METHOD_KEYS = ("regime", "fill", "l2", "cool_down", "expect_clock", "energy", "checks")


def method_options(default_regime: str = "sustained"):
    """How the figure is taken, one set of options for every command that times: --regime, --fill, --l2,
    --cool-down, --expect-clock, --energy/--no-energy, --checks. The command's function gets them as the keyword
    arguments METHOD_KEYS; `method_config` turns them into TimingConfig fields."""

    def decorate(func):
        for opt in reversed((
            click.option("--regime", type=click.Choice(["burst", "sustained"]), default=default_regime,
                         show_default=True,
                         help="sustained: each variant launched back to back until NVML's SM clock and power "
                              "settle, then timed (its speed under load, at the power cap); burst: a few warm-up "
                              "calls on the card as found (a cold card's boost clock, figures higher than it "
                              "sustains)."),
            click.option("--fill", type=click.Choice(["uniform", "uniform01", "randn", "zeros", "ints"]),
                         default="uniform", show_default=True,
                         help="Values of the timed calls' inputs: uniform [-1, 1), uniform [0, 1), randn, zeros or "
                              "integers in [-3, 3]. They move the power drawn and so the clock held under a power "
                              "cap (verification always uses uniform [-1, 1))."),
            click.option("--l2", type=click.Choice(["flush", "rotate", "warm"]), default=None,
                         help="L2 between timed calls: flush (write twice its size; default), rotate (each call on "
                              "the next of several input sets totalling twice the L2, no flush), warm (neither)."),
            click.option("--cool-down", "cool_down", type=FiniteFloat(minimum=0, maximum=600), default=0.0,
                         show_default=True, metavar="SECONDS", help="Idle seconds before each variant's warm-up."),
            click.option("--expect-clock", "expect_clock", type=FiniteFloat(positive=True, maximum=10000),
                         default=None, metavar="MHZ",
                         help="Refuse figures taken at an SM clock other than MHZ (+-2%): for a card whose owner "
                              "locked its clocks (gemmprof never changes them)."),
            click.option("--energy/--no-energy", "energy", default=None,
                         help="Joules per GEMM from NVML's energy counter over about 1 s of calls back to back "
                              "(default: with --regime sustained)."),
            click.option("--checks", type=WholeNumber(0, 1000), default=3, show_default=True,
                         help="Timed calls verified per variant, chosen at random: each timed call with the chance "
                              "N over the calls the budget allows, so about N, and at least one (0: only the first "
                              "call)."),
        )):
            func = opt(func)
        return func

    return decorate


def method_config(regime, fill, l2, cool_down, expect_clock, energy, checks) -> dict:
    """TimingConfig's fields from method_options' values."""
    return {"regime": regime, "fill": fill, "l2": l2, "cool_down_s": cool_down, "expect_clock_mhz": expect_clock,
            "energy": energy, "checks": checks}
