"""SASS facts of a cubin, offline: instruction counts by class and the FLOPs one trip of the inner loop does.

The listing comes from nvdisasm (or cuobjdump -sass, which itself needs nvdisasm in CUDA 13): beside nvcc, on
PATH, or from the pip wheels nvidia-cuda-nvdisasm / nvidia-cuda-cuobjdump (`pip install gemmprof[sass]`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

# classes shown by `build` and `run`, in this order
CLASSES = ("FFMA", "HMMA", "HGMMA", "QGMMA", "LDS", "LDS.64", "LDS.128", "LDSM", "LDG", "LDG.64", "LDG.128", "LDGSTS",
           "STS", "STG", "BAR", "LDL", "STL")
_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*([^;]*);")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_MMA_SHAPE = re.compile(r"\.(\d+)x(\d+)x(\d+)|\.(1688|16816|884|16832)")


def _tool_dirs() -> list[Path]:
    dirs = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(Path(nvcc).resolve().parent)
    dirs.append(Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin")
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels

        for root in getattr(nvidia, "__path__", []):
            dirs += sorted(Path(root).glob("*/bin"))
    except ImportError:
        pass
    return dirs


def find_disassembler() -> tuple[str, str] | None:
    """(kind, path) of nvdisasm or cuobjdump, or None."""
    for tool in ("nvdisasm", "cuobjdump"):
        found = shutil.which(tool) or next((str(d / tool) for d in _tool_dirs() if (d / tool).is_file()), None)
        if found:
            return tool, found
    return None


def disassemble(cubin: Path) -> str | None:
    """The SASS listing of a cubin, or None if no disassembler is installed or it fails."""
    tool = find_disassembler()
    if tool is None:
        return None
    kind, path = tool
    cmd = [path, "-c", str(cubin)] if kind == "nvdisasm" else [path, "-sass", str(cubin)]
    env = dict(os.environ)
    env["PATH"] = f"{Path(path).parent}{os.pathsep}{env.get('PATH', '')}"  # cuobjdump calls nvdisasm
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 and "/*0000*/" in proc.stdout else None


def instructions(listing: str) -> list[tuple[int, str, str]]:
    """(address, opcode with modifiers, operands) for every instruction; labels resolved to addresses."""
    out = []
    for line in listing.splitlines():
        m = _INSN.search(line)
        if m:
            out.append((int(m[1], 16), m[2], m[3]))
    return out


def _labels(listing: str) -> dict[str, int]:
    """nvdisasm names branch targets `.L_x_N`; a label is the address of the next instruction."""
    labels, pending = {}, []
    for line in listing.splitlines():
        lab = _LABEL.match(line)
        if lab:
            pending.append(lab[1])
            continue
        m = _INSN.search(line)
        if m and pending:
            for p in pending:
                labels[p] = int(m[1], 16)
            pending = []
    return labels


def classify(op: str) -> str | None:
    parts = op.split(".")
    base, mods = parts[0], set(parts[1:])
    wide = "128" if "128" in mods else "64" if "64" in mods else None
    if base in ("LDS", "LDG", "LDGSTS"):
        return f"{base}.{wide}" if wide and base != "LDGSTS" else base
    if base in ("FFMA", "HMMA", "HGMMA", "QGMMA", "LDSM", "STS", "STG", "BAR", "LDL", "STL"):
        return base
    return None


def counts(listing: str) -> dict[str, int]:
    """Instruction counts by class (static: each instruction in the binary once), plus the total."""
    insns = instructions(listing)
    out = {c: 0 for c in CLASSES}
    for _addr, op, _args in insns:
        c = classify(op)
        if c:
            out[c] += 1
    out["total"] = len(insns)
    return out


def _mma_flops(op: str) -> int:
    """FLOPs of one warp-level HMMA (per warp) or HGMMA / QGMMA (fp8; per warpgroup) instruction, from its shape."""
    m = _MMA_SHAPE.search(op)
    if not m:
        return 0
    if m[1]:
        return 2 * int(m[1]) * int(m[2]) * int(m[3])
    return {"1688": 2 * 16 * 8 * 8, "16816": 2 * 16 * 8 * 16, "884": 2 * 8 * 8 * 4, "16832": 2 * 16 * 8 * 32}[m[4]]


def inner_loop(listing: str) -> dict | None:
    """The loop (a backward branch) with the most math per trip, the smallest such on a tie (an outer loop
    counts an inner loop's body once): its FFMA/HMMA/HGMMA/QGMMA counts.

    Static counts of one trip; how many trips the loop makes depends on K and on how far the compiler
    unrolled it, which the binary alone does not say."""
    insns = instructions(listing)
    labels = _labels(listing)
    loops = []
    for addr, op, args in insns:
        if not op.startswith("BRA"):
            continue
        target = args.strip().split()[-1] if args.strip() else ""
        target = target.strip("`()")
        dest = labels.get(target) if target.startswith(".L") else int(target, 16) if target.startswith("0x") else None
        if dest is not None and dest <= addr:
            loops.append((dest, addr))
    best, best_work = None, 0
    for lo, hi in sorted(loops, key=lambda r: r[1] - r[0]):
        body = [op for a, op, _ in insns if lo <= a <= hi]
        math = {"FFMA": 0, "HMMA": 0, "HGMMA": 0, "QGMMA": 0, "mma_flops": 0}
        for op in body:
            c = classify(op)
            if c in ("FFMA", "HMMA", "HGMMA", "QGMMA"):
                math[c] += 1
                if c != "FFMA":
                    math["mma_flops"] += _mma_flops(op)
        hgmma_flops = math["mma_flops"] if math["HGMMA"] or math["QGMMA"] else 0
        work = 64 * math["FFMA"] + (math["mma_flops"] - hgmma_flops) + hgmma_flops / 4  # FLOPs per warp
        if work > best_work:
            best, best_work = {"start": lo, "end": hi, "instructions": len(body), **math}, work
    return best


def flops_per_trip(loop: dict, threads_per_block: int) -> int:
    """FLOPs one block does in one trip of the loop: 2 per FFMA per thread, an MMA's shape per warp (HMMA) or
    per warpgroup of 128 threads (HGMMA, QGMMA)."""
    ffma = 2 * loop["FFMA"] * threads_per_block
    wgmma = loop["HGMMA"] or loop.get("QGMMA", 0)  # loops kept before QGMMA was counted have no such key
    mma_per_warp = loop["mma_flops"] if loop["HMMA"] and not wgmma else 0
    mma_per_wg = loop["mma_flops"] if wgmma else 0
    return ffma + mma_per_warp * (threads_per_block // 32) + mma_per_wg * (threads_per_block // 128)


def facts(cubin: Path, keep: bool = False) -> dict[str, int] | None:
    """counts() plus the inner loop's figures (keys loop_*), or None without a disassembler.

    keep: the facts are kept beside the cubin (`NAME.sass.json`, with the cubin's SHA-256) and read back
    from there next time. gemmprof's cubin cache does this: disassembling costs about half a second per kernel,
    which a tune sweep would otherwise pay again in its GPU worker for every candidate."""
    cubin = Path(cubin)
    if not keep:
        return _facts(cubin)
    memo = cubin.with_name(cubin.name + ".sass.json")
    stamp = _stamp(cubin)
    try:
        doc = json.loads(memo.read_text())
        if doc.get("cubin") == stamp and set(CLASSES) <= set(doc["facts"]):  # kept before a class was added: again
            return doc["facts"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    out = _facts(cubin)
    if out is None:
        return None
    try:  # a read-only cache folder only costs the next caller the disassembly
        tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"cubin": stamp, "facts": out}))
        os.replace(tmp, memo)
    except OSError:
        pass
    return out


def _facts(cubin: Path) -> dict[str, int] | None:
    listing = disassemble(cubin)
    if listing is None:
        return None
    out = counts(listing)
    loop = inner_loop(listing)
    if loop:
        out.update({f"loop_{k}": v for k, v in loop.items() if k not in ("start", "end")})
    return out


def _stamp(cubin: Path) -> str | None:
    try:
        return hashlib.sha256(cubin.read_bytes()).hexdigest()
    except OSError:
        return None
