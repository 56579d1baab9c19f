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
    @click.option("--gpu", "gpu", default=None, metavar="NAME",
                  help="GPU profile name (see `gemmprof gpus`); default: the current device, else H100 SXM.")
    @click.option("--profile", "profile_file", type=click.Path(dir_okay=False), default=None,
                  metavar="FILE.yaml", help="A GPU profile of your own instead of --gpu.")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
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


def resolve_profile(gpu, profile_file, *, prefer_current_device: bool = False):
    from gemmprof.catalog import gpu_specs as profiles

    if gpu and profile_file:
        raise InputError("--gpu and --profile: give one, not both")
    if profile_file:
        return profiles.load_profile_file(profile_file)
    if gpu:
        return profiles.get_profile(gpu)
    if prefer_current_device:
        found = profiles.current_device_profile()
        if found is not None:
            return found
    return profiles.get_profile("h100")
