"""The last bad inputs: each gives one clear line and a non-zero exit, and each class is generated (every float
option of every command, every reader of a file, every results layout, every integer a spec may hold...)."""

from __future__ import annotations

import importlib
import math

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gemmprof.cli import COMMANDS

NOT_FINITE = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "+Infinity", "1e400", "-1e400"]


def _float_options() -> list[tuple[str, click.Option]]:
    """Every option of every command whose value is a float (FloatRange, FLOAT, FiniteFloat...)."""
    out = []
    for name, (module, _) in COMMANDS.items():
        command = importlib.import_module(module).command
        for param in command.params:
            kind = param.type
            if isinstance(kind, click.types.FloatParamType) or getattr(kind, "name", "") in ("float", "number"):
                out.append((name, param))
    return out


FLOAT_OPTIONS = _float_options()


def test_the_float_options_are_found():
    names = {(c, p.opts[-1]) for c, p in FLOAT_OPTIONS}
    assert {("tune", "--budget-minutes"), ("tune", "--budget"), ("run", "--budget"), ("run", "--precision"),
            ("diff", "--fail-on-regression"), ("model", "--alpha")} <= names, names


@given(st.sampled_from(FLOAT_OPTIONS), st.sampled_from(NOT_FINITE))
def test_every_float_option_refuses_what_is_not_finite(option, text):
    command, param = option
    ctx = click.Context(click.Command(command))
    with pytest.raises(click.BadParameter):
        value = param.type_cast_value(ctx, text)
        if param.callback is not None:  # a check made after the type (diff's --fail-on-regression)
            param.callback(ctx, param, value)
        assert math.isfinite(value)  # reached only when nothing refused it: fails the test
