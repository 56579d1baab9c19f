"""The gemmprof command line: a lazy click group, so `gemmprof --help` imports no command's dependencies."""

from __future__ import annotations

import importlib
import sys

import click

from gemmprof._version import __version__
from gemmprof.errors import GemmprofError

# name -> (module, one-line help). Modules are imported only when their command runs.
COMMANDS = {
    "list": ("gemmprof.commands.list_cmd", "Show the kernel ladder; --explain RUNG: its coalescing and bank conflicts."),
    "run": ("gemmprof.commands.run", "Build (nvcc or NVRTC), verify and time rungs or your own kernel beside cuBLAS on the GPU."),
    "build": ("gemmprof.commands.build", "Compile kernels offline with nvcc: registers, shared memory, spills, SASS mix."),
    "model": ("gemmprof.commands.model", "FLOPs, bytes, arithmetic intensity and lower-bound times of a GEMM (no GPU)."),
    "occupancy": ("gemmprof.commands.occupancy", "Theoretical occupancy of a launch configuration on a GPU (no GPU)."),
    "gpus": ("gemmprof.commands.gpus", "List the GPU spec sheets, or show one with its sources."),
    "ceiling": ("gemmprof.commands.ceiling", "Measure this GPU's real ceilings (matmul per dtype, DRAM), burst and sustained."),
    "profile": ("gemmprof.commands.profile", "Run Nsight Compute on rungs (or read its CSV) and say what limits each."),
    "explain": ("gemmprof.commands.explain", "Rank what limits a kernel and what would lift it; --ladder: checked on the ladder."),
    "compare-nsys": ("gemmprof.commands.compare_nsys", "Compare kernels from Nsight Systems reports side by side."),
    "roofline": ("gemmprof.commands.roofline", "Draw the roofline of the ladder against a GPU's ceilings, with a table."),
    "sweep": ("gemmprof.commands.sweep", "Time variants over many shapes or a model's layers, one run per shape: geomean, fast_p, plot."),
    "tune": ("gemmprof.commands.tune", "Search a rung's parameter space on the GPU (cached, resumable, multi-GPU, Ray)."),
    "show": ("gemmprof.commands.show", "Print a saved run or profile results file again (table, JSON, CSV)."),
    "diff": ("gemmprof.commands.diff", "Compare two saved runs: change in time and TFLOP/s per variant, beyond noise?"),
    "report": ("gemmprof.commands.report", "Write one self-contained HTML page: header, table, roofline, ncu findings."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[name][0])
        return module.command

    def parse_args(self, ctx, args):
        if any("\0" in a for a in args):  # no file name or value holds one; os calls would raise ValueError
            raise click.UsageError("an argument holds a NUL byte (\\0)", ctx)
        return super().parse_args(ctx, args)

    def format_commands(self, ctx, formatter):
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="gemmprof")
def cli():
    """Profile, verify and explain CUDA GEMM kernels.

    \b
    Examples:
      gemmprof model --size 4096 --gpu h100                         # FLOPs, bytes, bounds: no GPU needed
      gemmprof run --all --dtype fp32 --size 4096 -o results.json   # the fp32 ladder on your GPU
      gemmprof roofline results.json -o roofline.png                # plot it, on any machine
    """


def main(argv=None):
    try:
        cli.main(args=argv, prog_name="gemmprof", standalone_mode=False)
    except GemmprofError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:  # one line naming the option, as every other error (`--help` shows usage)
        click.echo(f"error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
