"""Options shared by several commands: output format, GPU selection, GEMM shape."""

from __future__ import annotations

import functools

import click

from gemmprof.errors import InputError
from gemmprof.render.table import FORMATS


def output_options(func):
    @click.option("--format", "fmt", type=click.Choice(FORMATS), default=None,
                  help="Output format (default: from -o's extension, else table).")
    @click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                  help="Write to FILE instead of the terminal (.json/.csv/.txt pick the format).")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def gpu_options(func):
    """--gpu NAME or --gpu-file FILE.yaml: the GPU spec sheet (peaks, SM limits). `--profile FILE` is the old,
    hidden spelling of --gpu-file, kept for one release ("profile" now means Nsight Compute's)."""
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
            kwargs["gpu_file"] = gpu_file_old
        return func(*args, **kwargs)

    return wrapper


def shape_options(func):
    @click.option("--size", "size", type=int, default=None, help="M = N = K = SIZE.")
    @click.option("-m", "m", type=int, default=None, help="Rows of A and C.")
    @click.option("-n", "n", type=int, default=None, help="Columns of B and C.")
    @click.option("-k", "k", type=int, default=None, help="Columns of A, rows of B.")
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

    if gpu and gpu_file:
        raise InputError("--gpu and --gpu-file: give one, not both")
    if gpu_file:
        return gpu_specs.load_gpu_file(gpu_file)
    if gpu is not None:
        return gpu_specs.get_gpu(gpu)
    if prefer_current_device:
        found = gpu_specs.current_device_gpu()
        if found is not None:
            return found
    return gpu_specs.get_gpu("h100")
