"""Build every configs.py kernel with nvcc on the CPU machine: python3 build.py REPO_ROOT OUTDIR [TAG ...]
-> OUTDIR/<tag>.cubin and OUTDIR/ptxas.log. Sources are kernels/fp32/NAME, or dev/NAME (patched variants)."""
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from configs import DEFINES, KERNELS, instantiation

NVCC = ["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v"]  # gemmprof's default build
root, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
only = set(sys.argv[3:])
out.mkdir(parents=True, exist_ok=True)
here = Path(__file__).resolve().parent
by_tag = defaultdict(list)
for src, entry, params, tag in KERNELS.values():
    by_tag[(tag, src, entry)].append(params)
log = []
for (tag, src, entry), plist in by_tag.items():
    if only and tag not in only:
        continue
    path = here / src if (here / src).exists() else root / "kernels" / "fp32" / src
    cu = out / f"{tag}.cu"
    cu.write_text(path.read_text() + "\n" + "\n".join(instantiation(p, entry) for p in plist) + "\n")
    cmd = [*NVCC, *DEFINES[tag], "-o", str(out / f"{tag}.cubin"), str(cu)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log.append(f"== {tag} ({path.name}): {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    print(log[-1].splitlines()[0][:120], flush=True)
    if proc.returncode:
        sys.exit(proc.stderr)
old = (out / "ptxas.log").read_text() if only and (out / "ptxas.log").exists() else ""
(out / "ptxas.log").write_text(old + "\n".join(log))
for line in "\n".join(log).splitlines():
    if "Used" in line:
        print(line.strip()[:100])
