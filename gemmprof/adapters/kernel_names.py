"""Kernel names as profilers print them (`void ns::gemm<128, 64>(float*, ...)`), shortened for tables."""

from __future__ import annotations

import re

_TEMPLATE_WORD = re.compile(r"^[\w:]+$")


def base_kernel_name(name: str) -> str:
    """The bare function name, template arguments and parameters dropped: `void ns::gemm<128, 64>(float*, ...)` ->
    `ns::gemm` (how ncu tables name a launch)."""
    n = re.sub(r"^void\s+", "", name.strip())
    depth, out = 0, []
    for ch in n:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip() or name


def short_kernel_name(name: str, width: int = 64) -> str:
    """For display: drop the return type and parameters; past `width`, elide template arguments, then cut.

    "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)" keeps its one template word;
    "void gen_sequenced<curandStateXORWOW, float, ...>(T1 *, ...)" becomes "gen_sequenced<…>".
    """
    depth, cut, space = 0, len(name), -1
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0 and ch == "(" and i > 0 and not name.startswith("(anonymous namespace)", i):
            cut = i
            break
        elif depth == 0 and ch == " ":
            space = i
    head = name[space + 1:cut].strip() or name.strip()
    if len(head) <= width:
        return head
    out, depth, start = [], 0, 0
    for i, ch in enumerate(head):
        if ch == "<":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
            if depth == 0:
                inner = head[start + 1:i]
                out.append(f"<{inner}>" if _TEMPLATE_WORD.match(inner) else "<…>")
        elif depth == 0:
            out.append(ch)
    if depth:  # nsys cut the name inside a template argument list
        out.append("<…>")
    short = "".join(out)
    return short if len(short) <= width else short[:width - 1] + "…"
