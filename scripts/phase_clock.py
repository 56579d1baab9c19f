"""Time one `python3 -m gemmprof ARGS...` in three phases: interpreter start-up (the process started to gemmprof's
main called), gemmprof's main, and exit (main returned to the process gone: atexit handlers, teardown). Prints one
line, `wall_ms W start_ms S main_ms M exit_ms E`, to stdout; gemmprof's own output goes to stderr. The gemmprof
run is the one Python finds from the working directory (`--cwd`, with PYTHONPATH set to it). Used by
scripts/gpu_stages/overhead.sh to say where a difference in the main job's wall time lies.

    python3 scripts/phase_clock.py -- run --all --dtype fp32 --size 4096 -o results.json
    python3 scripts/phase_clock.py --cwd .old -- run --all --dtype fp32 --size 4096 -o old.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

CHILD = ("import runpy, sys, time\n"
         "t0 = time.time_ns()\n"
         "sys.argv = ['gemmprof', *sys.argv[1:]]\n"
         "code = 0\n"
         "try:\n"
         "    runpy.run_module('gemmprof', run_name='__main__', alter_sys=True)\n"
         "except SystemExit as exc:\n"
         "    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)\n"
         "sys.stdout.flush()\n"
         "sys.__stderr__.write(f'\\nphase_clock {t0} {time.time_ns()}\\n')\n"
         "sys.exit(code)\n")


def split(started_ns: int, ended_ns: int, stderr: str) -> dict[str, float] | None:
    """The phases in milliseconds from the child's marker line, or None where it printed none."""
    marks = [line.split() for line in stderr.splitlines() if line.startswith("phase_clock ")]
    if not marks:
        return None
    t0, t1 = int(marks[-1][1]), int(marks[-1][2])
    ms = 1e-6
    return {"wall_ms": (ended_ns - started_ns) * ms, "start_ms": (t0 - started_ns) * ms,
            "main_ms": (t1 - t0) * ms, "exit_ms": (ended_ns - t1) * ms}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cwd", default=".", help="the folder whose gemmprof runs (default: here)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="gemmprof's arguments, after --")
    a = parser.parse_args(argv)
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    if not args:
        parser.error("no gemmprof arguments (give them after --)")
    env = {**os.environ, "PYTHONPATH": os.path.abspath(a.cwd)}
    started = time.time_ns()
    done = subprocess.run([sys.executable, "-c", CHILD, *args], cwd=a.cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    ended = time.time_ns()
    sys.stderr.write(done.stderr)
    phases = split(started, ended, done.stderr)
    if phases is None:
        print(f"phase_clock: the run printed no marker (exit code {done.returncode})", file=sys.stderr)
        return done.returncode or 1
    print(" ".join(f"{k} {v:.0f}" for k, v in phases.items()))
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
