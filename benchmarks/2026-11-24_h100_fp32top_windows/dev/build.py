"""Build every configs.py kernel with nvcc (CPU machine): python3 build.py KERNEL_DIR OUTDIR -> OUTDIR/<tag>.cubin, ptxas.log"""
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from configs import DEFINES, KERNELS, instantiation

NVCC = ["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v"]
kdir, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
out.mkdir(parents=True, exist_ok=True)
by_tag = defaultdict(list)
for _name, (src, entry, p, tag) in KERNELS.items():
    by_tag[(tag, src, entry)].append(p)
log = []
for (tag, src, entry), plist in by_tag.items():
    path = kdir / src if (kdir / src).exists() else Path(src).resolve()
    cu = out / f"{tag}.cu"
    cu.write_text(path.read_text() + "\n" + "\n".join(instantiation(p, entry) for p in plist) + "\n")
    cmd = [*NVCC, *DEFINES[tag], "-o", str(out / f"{tag}.cubin"), str(cu)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    log.append(f"== {tag}: {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode:
        sys.exit(proc.stderr)
(out / "ptxas.log").write_text("\n".join(log))
for line in "\n".join(log).splitlines():
    if "Used" in line or line.startswith("=="):
        print(line.strip()[:100])
