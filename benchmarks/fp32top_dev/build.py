"""Build the rung-13 cubins with nvcc (run on the CPU machine; the cubins travel to the GPU).

Writes into OUTDIR: r13.cubin (every configuration of configs.py), r13_aligned.cubin (the same source with every
bounds predicate and the run-time path test removed: the aligned-only reference for the cost of 'any shape'),
r09.cubin (rung 9 with its spec defaults, for context) and ptxas.log.
Usage: python3 build.py KERNEL_DIR OUTDIR
"""
import re
import subprocess
import sys
from pathlib import Path

from configs import CONFIGS, instantiation

NVCC = ["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v"]
ALIGNED_ONLY = [  # (pattern, replacement): the aligned-only variant, harness use only
    (r"min\(m0 \+ int\(p / \(BK / 4\)\), M - 1\)", "m0 + int(p / (BK / 4))"),
    (r"min\(nb\[i\], N - 4\)", "nb[i]"),
    (r"if \(m >= M\) continue;", ""),
    (r"if \(n < N\) \{", "if (true) {"),
    (r"if \(vec\)\n", "if (true)\n"),
]


def nvcc(src: Path, out: Path, log: list[str]) -> None:
    proc = subprocess.run([*NVCC, f"-I{src.parent}", "-o", str(out), str(src)], capture_output=True, text=True)
    log.append(f"== {out.name}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        sys.exit(f"nvcc failed for {src}:\n{proc.stderr}")


def main() -> None:
    kdir, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log: list[str] = []
    src13 = (kdir / "13_pipelined_any_shape.cu").read_text()
    inst = "\n".join(instantiation(p) for p in CONFIGS.values())
    (out / "r13.cu").write_text(src13 + "\n" + inst + "\n")
    nvcc(out / "r13.cu", out / "r13.cubin", log)
    aligned = src13
    for pat, rep in ALIGNED_ONLY:
        aligned, n = re.subn(pat, rep, aligned)
        assert n >= 1, pat
    (out / "r13_aligned.cu").write_text(aligned + "\n" + inst + "\n")
    nvcc(out / "r13_aligned.cu", out / "r13_aligned.cubin", log)
    r09 = (kdir / "09_autotuned.cu").read_text()
    (out / "r09.cu").write_text(r09 + "\ntemplate __global__ void sgemm_autotuned<128, 128, 16, 4, 4, 256>"
                                "(int, int, int, float, const float*, const float*, float, float*);\n")
    nvcc(out / "r09.cu", out / "r09.cubin", log)
    (out / "ptxas.log").write_text("\n".join(log))
    for line in "\n".join(log).splitlines():
        if "Compiling entry" in line or "Used" in line or "spill" in line or line.startswith("=="):
            print(line.strip())


if __name__ == "__main__":
    main()
