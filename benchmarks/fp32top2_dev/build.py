"""Build the rung-14 cubin (every configs.py configuration) and rung 13's default with nvcc (CPU machine).

Usage: python3 build.py KERNEL_DIR OUTDIR   -> OUTDIR/r14.cubin, r13.cubin, ptxas.log
"""
import subprocess
import sys
from pathlib import Path

from configs import CONFIGS, R13_DEFAULT, R13_ENTRY, instantiation

NVCC = ["nvcc", "-std=c++17", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v"]


def nvcc(src: Path, out: Path, log: list[str]) -> None:
    proc = subprocess.run([*NVCC, "-o", str(out), str(src)], capture_output=True, text=True)
    log.append(f"== {out.name}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        sys.exit(f"nvcc failed for {src}:\n{proc.stderr}")


def main() -> None:
    kdir, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    log: list[str] = []
    src14 = (kdir / "14_multistage_any_shape.cu").read_text()
    inst = "\n".join(instantiation(p) for p in CONFIGS.values())
    (out / "r14.cu").write_text(src14 + "\n" + inst + "\n")
    nvcc(out / "r14.cu", out / "r14.cubin", log)
    src13 = (kdir / "13_pipelined_any_shape.cu").read_text()
    (out / "r13.cu").write_text(src13 + "\n" + instantiation(R13_DEFAULT, R13_ENTRY) + "\n")
    nvcc(out / "r13.cu", out / "r13.cubin", log)
    (out / "ptxas.log").write_text("\n".join(log))
    for line in "\n".join(log).splitlines():
        if "Compiling entry" in line or "Used" in line or "spill" in line or line.startswith("=="):
            print(line.strip())


if __name__ == "__main__":
    main()
