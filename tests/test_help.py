"""Help that is true: every option of every command says what it does, no help shows a literal `%%` (click prints
help as written), and the points a reader checks against the code say what the code does."""

from __future__ import annotations

import re

import click
import pytest
from clitools import invoke

from gemmprof.cli import cli

CTX = click.Context(cli)
COMMANDS = sorted(cli.list_commands(CTX))


def _options(command):
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def test_there_are_commands_with_options():
    assert len(COMMANDS) >= 14 and sum(len(_options(cli.get_command(CTX, c))) for c in COMMANDS) > 100


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_help(name):
    command = cli.get_command(CTX, name)
    assert (command.help or "").strip() and (command.short_help or command.help).strip()
    missing = [p.opts[0] for p in _options(command) if not (p.help or "").strip() and p.opts[0] not in ("-h", "--help")]
    assert missing == [], f"gemmprof {name}: options without help: {missing}"


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_rendered_help_has_no_literal_double_percent(runner, name):
    r = invoke(runner, [name, "--help"] if name else ["--help"])
    assert r.exit_code == 0, r.output
    assert "%%" not in r.output, [line for line in r.output.splitlines() if "%%" in line]


def test_run_precision_help_reads_as_percent(runner):
    text = " ".join(invoke(runner, ["run", "--help"]).output.split())
    assert "the 95% confidence interval of its median is within +-PCT% of it" in text


def test_the_main_example_runs_the_fp32_ladder(runner):
    """`run --all` alone also runs the tensor-core rungs: the example that says "fp32 ladder" says --dtype fp32."""
    text = invoke(runner, ["--help"]).output
    line = next(x for x in text.splitlines() if "run --all" in x)
    assert "--dtype fp32" in line and "fp32 ladder" in line


def test_tune_jobs_help_gives_the_code_s_bounds(runner, monkeypatch):
    from gemmprof.measure import pools

    monkeypatch.setattr(pools.os, "cpu_count", lambda: 64)
    high = pools.default_jobs()
    monkeypatch.setattr(pools.os, "cpu_count", lambda: 1)
    low = pools.default_jobs()
    text = " ".join(invoke(runner, ["tune", "--help"]).output.split())
    said = re.search(r"--jobs INTEGER RANGE Compile processes \(default: the CPU cores less two, (\d+) to (\d+)\)", text)
    assert said and (int(said[1]), int(said[2])) == (low, high), text


def test_build_spec_help_says_it_builds_only_the_spec_when_alone(runner):
    text = " ".join(invoke(runner, ["build", "--help"]).output.split())
    assert "alone it builds only these" in text and "Also build" not in text
    from gemmprof.catalog.selection import choose

    spec = next(iter(__import__("pathlib").Path(__file__).parents[1].glob("examples/*/*.yaml")))
    assert [k.spec.path for k in choose((), spec_files=(str(spec),), everything_by_default=True)] == [spec]


def test_model_alpha_has_help(runner):
    text = " ".join(invoke(runner, ["model", "--help"]).output.split())
    assert re.search(r"--alpha NUMBER C = alpha \* A @ B", text)
