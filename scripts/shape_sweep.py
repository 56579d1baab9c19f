"""The shape sweep, now the command `gemmprof sweep`: this script passes its arguments to it, for the command lines
of earlier records (scripts/gpu_batch.sh's fp16 sweep among them).

    python3 scripts/shape_sweep.py h4-h13 --dtype fp16 --out-dir sweep_fp16 --confirm --max-reps 2000 --budget 0.5
    is  gemmprof sweep h4-h13 --dtype fp16 --out-dir sweep_fp16 --confirm --max-reps 2000 --budget 0.5

--resume is accepted and changes nothing: a sweep always keeps the finished runs in its folder. See
`gemmprof sweep --help` and docs/sweep.md.
"""

from __future__ import annotations

import sys


def main(argv=None) -> int:
    from gemmprof.cli import main as gemmprof_main

    args = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--resume"]
    try:
        gemmprof_main(["sweep", *args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
