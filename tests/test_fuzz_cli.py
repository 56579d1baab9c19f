"""Property test of the command line (click's CliRunner): options given nasty values end in a result, click's own
usage error, or gemmprof's error with a message; never another exception. Commands that need no GPU and no nvcc."""

from __future__ import annotations

import click
from click.testing import CliRunner
from conftest import FIXTURES
from fuzzing import NASTY_TEXT
from hypothesis import given
from hypothesis import strategies as st

from gemmprof.cli import cli
from gemmprof.errors import GemmprofError

RESULTS = str(FIXTURES / "results" / "h100_fix_4096.json")
NCU = str(FIXTURES / "ncu" / "h100_naive_smem_details.csv")
STATS = str(FIXTURES / "nsys" / "a100_seed003_gpukernsum_4096.txt")
VALUES = st.sampled_from([*NASTY_TEXT, "4096", "1", "h100", "a100", "fp16", "warptiling", "1-3", "10", "BK=16",
                          "BOGUS=3", str(FIXTURES), RESULTS])
COMMANDS = {
    "model": ["--size", "-m", "-n", "-k", "--gpu", "--peak-tflops", "--bandwidth", "--alpha", "--beta", "--dtype",
              "--rung", "--tiles", "--format"],
    "occupancy": ["-t", "-r", "--static-smem", "--dynamic-smem", "--gpu"],
    "gpus": ["--gpu-file"],
    "list": ["--dtype"],
    "roofline": ["--size", "-m", "--gpu", "--dtype", "--beta", "--ceiling", "--dpi", "--format"],
    "profile": ["--size", "--dtype", "--gpu", "--top", "--format"],
    "compare-nsys": ["--size", "-n", "--dtype", "--baseline", "--gpu", "--format"],
    "sweep": ["--dtype", "--shapes", "--tokens", "--model", "--baseline", "--fast-p", "--highlight", "--run-option"],
}
FIXED = {"occupancy": ["-t", "256", "-r", "32"], "roofline": ["--model-only"], "profile": ["--from", NCU],
         "compare-nsys": [STATS], "sweep": ["--summarize-only"]}
ALLOWED = (GemmprofError, click.ClickException, click.exceptions.Exit, click.exceptions.Abort)


@st.composite
def command_lines(draw):
    name = draw(st.sampled_from(sorted(COMMANDS)))
    argv = [name, *FIXED.get(name, [])]
    for _ in range(draw(st.integers(1, 3))):
        argv += [draw(st.sampled_from(COMMANDS[name])), draw(VALUES)]
    return argv


@given(command_lines())
def test_command_line_options(argv):
    result = CliRunner().invoke(cli, argv, standalone_mode=False, catch_exceptions=True)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        assert isinstance(exc, ALLOWED), (argv, repr(exc))
        assert str(exc).strip() or isinstance(exc, (click.exceptions.Exit, click.exceptions.Abort)), argv
