"""Write a benchmark record (markdown) from gemmprof results files: command, device, versions, the numbers.

    python3 scripts/record.py TITLE RESULTS.json [RESULTS.json ...] > benchmarks/<dir>/README.md
"""

from __future__ import annotations

import sys

from gemmprof.render.run_tables import run_table
from gemmprof.render.table import render_text
from gemmprof.results.run import load_run


def main(argv):
    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    title, files = argv[0], argv[1:]
    print(f"# {title}\n")
    for f in files:
        r = load_run(f)
        d = r.device
        print(f"## `{r.command}`\n")
        print(f"- results file: `{f.split('/')[-1]}` (raw samples of every variant)")
        print(f"- device: {d.get('name')} (cc {d.get('compute_capability')}, {d.get('sm_count')} SMs), "
              f"driver {d.get('smi_driver', d.get('driver_version'))}, CUDA runtime {d.get('cuda_runtime_version')}, "
              f"CuPy {d.get('cupy_version')}; SM clock at start {d.get('smi_sm_clock_mhz_at_start', '?')} MHz "
              f"(max {d.get('smi_max_sm_clock_mhz_smi', d.get('max_sm_clock_mhz'))}), power limit "
              f"{d.get('smi_power_limit_w', '?')} W")
        print(f"- gemmprof {r.gemmprof_version}, {r.created}, seed {r.seed}, GPU spec {r.gpu_spec}; "
              f"timing: {r.timing_method.get('method')}\n")
        table = run_table(r)
        for row in table.rows:
            row["message"] = (row["message"] or "")[:110]
        print("```")
        print(render_text(table, width=250).rstrip())
        print("```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
