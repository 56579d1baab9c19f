"""Read a cubin (an ELF file) without CUDA tools: its kernel symbols, and which of them is a spec's entry."""

from __future__ import annotations

import re
import struct

from gemmprof.errors import GemmprofError

STT_FUNC = 2
STB_GLOBAL = 1


def function_symbols(data: bytes, table: int = 2) -> list[str]:
    """Names of the global functions (kernels) in an ELF64 little-endian cubin's .symtab (table=2), or those a
    shared library exports (its .dynsym: table=11)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise GemmprofError("not a 64-bit little-endian ELF file (a cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for _name, sh_type, _f, _a, off, size, link, _i, _al, entsize in sections:
        if sh_type != table:  # SHT_SYMTAB or SHT_DYNSYM
            continue
        stroff = sections[link][4]
        for pos in range(off, off + size, entsize or 24):
            st_name, st_info, _other, _shndx, _value, _size = struct.unpack_from("<IBBHQQ", data, pos)
            if st_info & 0xF == STT_FUNC and st_info >> 4 == STB_GLOBAL and _shndx != 0:  # 0: undefined here
                end = data.index(b"\0", stroff + st_name)
                names.append(data[stroff + st_name:end].decode("ascii", "replace"))
    return names


def _mangled_int(v: int) -> str:
    return f"n{-v}" if v < 0 else str(v)


def entry_symbol(symbols: list[str], entry: str, template_args: tuple[int, ...] = ()) -> str:
    """The mangled name of `entry` (optionally namespaced: a::b::k) instantiated with `template_args`."""
    base = entry.split("::")[-1]
    if not template_args and base in symbols:
        return base  # extern "C"
    piece = f"{len(base)}{base}"
    cands = [s for s in symbols if s.startswith("_Z") and re.search(rf"(?<![0-9]){piece}(?:I|E|v|i|P)", s)]
    if template_args:
        args = "".join(rf"L[a-z]+{_mangled_int(v)}E" for v in template_args)
        cands = [s for s in cands if re.search(rf"{piece}I{args}E", s)]
    if len(cands) == 1:
        return cands[0]
    what = f"{entry}<{', '.join(map(str, template_args))}>" if template_args else entry
    if not cands:
        raise GemmprofError(f"no kernel {what} in the cubin (its kernels: {', '.join(symbols) or 'none'})")
    raise GemmprofError(f"{what} matches several kernels in the cubin: {', '.join(cands)}")


_MANGLED = re.compile(r"^_Z(?:N\d+\w+?)?(\d+)")


def plain_name(symbol: str) -> str:
    """`_Z13splitk_reduceiiifPKffPf` -> `splitk_reduce` (a top-level function; anything else as it is)."""
    m = _MANGLED.match(symbol)
    if m and not symbol.startswith("_ZN"):
        n = int(m[1])
        return symbol[m.end():m.end() + n] or symbol
    return symbol
