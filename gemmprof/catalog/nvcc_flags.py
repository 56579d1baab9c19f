"""What a spec may hand nvcc: its `flags` (and `compile_options`), its macros (`defines`) and the paths nvcc reads.

A kernel spec is data plus device code (docs/kernel-spec.md, "Threat model"): building it must run nothing on the
host but nvcc, and write nothing outside gemmprof's cache. nvcc runs its own steps through `sh`, with `-D` values
inside double quotes (so `$(...)` and backquotes in a value run) and `-Xptxas`/`-Xcompiler` values bare, and
several of its options write files (`-keep`, `-MF`, `-time`...), read options from a file (`--options-file`) or
run another compiler (`-ccbin`). So everything a spec passes is checked against allow-lists: options gemmprof
knows to be safe with values it can validate, macro names that are C identifiers and values from a character set
in which sh finds nothing to expand, and paths without the characters that end sh's double quotes.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from gemmprof.errors import SpecError

MACRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# an expression of numbers and names: nothing sh expands or splits inside nvcc's double quotes ($, `, \, ")
# nor anything that ends an argument (spaces, quotes, ;) or splits nvcc's list options (a comma)
MACRO_VALUE = re.compile(r"[A-Za-z0-9_.+\-*/()<>=!&|~^%?:]{0,200}")
MACRO_VALUE_CHARS = "letters, digits and _ . + - * / ( ) < > = ! & | ~ ^ % ? : (at most 200)"
# and none of these, which the preprocessor would not take as the value written: comments, trigraphs (c++14)
MACRO_VALUE_SEQUENCES = ("/*", "*/", "//", "??")
# sh interprets these inside the double quotes nvcc puts around -I paths (it escapes $ but not the rest)
UNSAFE_PATH_CHARS = frozenset('$`\\"') | frozenset(chr(c) for c in range(32)) | {"\x7f"}

# options gemmprof sets itself (output, mode, target): a spec that set them would build something else
RESERVED = ("-o", "--output-file", "-cubin", "--cubin", "-ptx", "--ptx", "-fatbin", "--fatbin", "-c", "--compile",
            "-shared", "--shared", "-lib", "--lib", "-E", "--preprocess", "-M", "-run", "--run", "-gencode",
            "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code", "-odir", "--output-directory",
            "-dryrun", "--dryrun", "-I", "--include-path", "-D", "--define-macro", "-l", "--library")
# why some options that are not allowed are refused (any other unknown option: "not an option gemmprof allows")
WRITES = "writes files outside gemmprof's cache"
REFUSED_WHY = {
    **{o: WRITES for o in ("-keep", "--keep", "-keep-dir", "--keep-dir", "-save-temps", "--save-temps", "-MD",
                           "--generate-dependencies-with-compile", "-MMD", "--generate-nonsystem-dependencies-with-compile",
                           "-MF", "--dependency-output", "-MM", "--generate-nonsystem-dependencies",
                           "--generate-dependencies", "-time", "--time", "-fdevice-time-trace", "--fdevice-time-trace",
                           "-lto", "-dlto", "--dlink-time-opt", "-odir", "--output-directory")},
    **{o: "runs a compiler the spec names" for o in ("-ccbin", "--compiler-bindir", "-allow-unsupported-compiler",
                                                       "--allow-unsupported-compiler")},
    **{o: "reads more options from a file gemmprof does not check" for o in ("-optf", "--options-file")},
    **{o: "loads code or data from a path the spec names" for o in ("-L", "--library-path", "-include",
                                                                     "--pre-include", "-isystem", "--system-include",
                                                                     "-Xlinker", "--linker-options", "-Xnvlink",
                                                                     "--nvlink-options", "-Xarchive",
                                                                     "--archive-options")},
}


@dataclass(frozen=True)
class Value:
    """How an option's value is checked, and the words that say what it may be."""

    ok: Callable[[str], bool]
    allowed: str
    piece: Value | None = None  # a list option's pieces (nvcc splits its value at commas)


def _choice(*values: str) -> Value:
    return Value(lambda v: v in values, " | ".join(values))


def _int(lo: int, hi: int) -> Value:
    return Value(lambda v: re.fullmatch(r"[0-9]{1,5}", v) is not None and lo <= int(v) <= hi,
                 f"an integer from {lo} to {hi}")


def _each(pieces: Value) -> Value:
    """nvcc splits a list option's value at commas: every piece must pass."""
    return Value(lambda v: bool(v) and all(pieces.ok(p) for p in v.split(",")), f"a comma-separated list of "
                 f"{pieces.allowed}", pieces)


def _options(plain: tuple[str, ...], valued: dict[str, Value], patterns: tuple[str, ...] = ()) -> Value:
    """Options of a tool nvcc passes them to (ptxas, the host compiler): plain ones, NAME=VALUE ones, patterns."""
    def ok(piece: str) -> bool:
        if piece in plain or any(re.fullmatch(p, piece) for p in patterns):
            return True
        name, eq, value = piece.partition("=")
        return bool(eq) and name in valued and valued[name].ok(value)

    shown = [*plain[:8], *(f"{n}={v.allowed}" for n, v in list(valued.items())[:4])]
    return Value(ok, ", ".join(shown) + ", ... (docs/kernel-spec.md lists them)")


_BOOL = _choice("true", "false")
_REGS = _int(1, 255)
PTXAS = _options(
    ("-v", "--verbose", "-O0", "-O1", "-O2", "-O3", "-warn-spills", "--warn-on-spills", "-warn-lmem-usage",
     "--warn-on-local-memory-usage", "-warn-double-usage", "--warn-on-double-precision-use", "-Werror",
     "--warning-as-error", "-w", "--disable-warnings", "-lineinfo", "--generate-line-info",
     "-disable-optimizer-consts", "--disable-optimizer-constants", "-suppress-stack-size-warning",
     "--suppress-stack-size-warning"),
    {"--opt-level": _int(0, 3), "-dlcm": _choice("ca", "cg", "cs", "lu", "cv"),
     "--def-load-cache": _choice("ca", "cg", "cs", "lu", "cv"), "-dscm": _choice("wb", "cg", "cs", "wt"),
     "--def-store-cache": _choice("wb", "cg", "cs", "wt"), "-maxrregcount": _REGS, "--maxrregcount": _REGS,
     "-allow-expensive-optimizations": _BOOL, "--allow-expensive-optimizations": _BOOL, "-fmad": _BOOL,
     "--fmad": _BOOL})
HOST_COMPILER = _options(
    ("-O0", "-O1", "-O2", "-O3", "-Wall", "-Wextra", "-Werror", "-fPIC", "-fopenmp", "-funroll-loops",
     "-fno-strict-aliasing", "-ffast-math", "-march=native", "-mtune=native", "-g", "-pthread"),
    {"-fvisibility": _choice("default", "hidden")}, (r"-Wno-[a-z0-9][a-z0-9-]{0,60}",))
CUDAFE = _options(("--display_error_number",), {"--diag_suppress": _int(0, 99999)})
_DIAG = _each(_int(0, 99999))
_WERROR = _each(_choice("all-warnings", "cross-execution-space-call", "reorder", "default-stream-launch",
                        "missing-launch-bounds", "ext-lambda-captures-this", "deprecated-declarations"))

# options that take no value
PLAIN = frozenset((
    "-O0", "-O1", "-O2", "-O3", "-lineinfo", "--generate-line-info", "-use_fast_math", "--use_fast_math",
    "-extra-device-vectorization", "--extra-device-vectorization", "-G", "--device-debug",
    "-expt-relaxed-constexpr", "--expt-relaxed-constexpr", "-extended-lambda", "--extended-lambda",
    "-expt-extended-lambda", "--expt-extended-lambda", "-restrict", "--restrict", "-w", "--disable-warnings",
    "-res-usage", "--resource-usage", "-src-in-ptx", "--source-in-ptx", "-err-no", "--display-error-number",
    "-Wno-deprecated-gpu-targets", "--Wno-deprecated-gpu-targets", "-Wno-deprecated-declarations",
    "--Wno-deprecated-declarations", "-Wreorder", "--Wreorder", "-Wext-lambda-captures-this",
    "--Wext-lambda-captures-this", "-Wmissing-launch-bounds", "--Wmissing-launch-bounds"))
# options with a value: NAME=VALUE, or NAME then VALUE as the next item
VALUED = {
    **dict.fromkeys(("-maxrregcount", "--maxrregcount"), _REGS),
    **dict.fromkeys(("-ftz", "--ftz", "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad"),
                    _BOOL),
    **dict.fromkeys(("-std", "--std"), _choice("c++14", "c++17", "c++20")),
    **dict.fromkeys(("-Xptxas", "--ptxas-options"), _each(PTXAS)),
    **dict.fromkeys(("-Xcompiler", "--compiler-options"), _each(HOST_COMPILER)),
    **dict.fromkeys(("-Xcudafe",), _each(CUDAFE)),
    **dict.fromkeys(("-diag-suppress", "--diag-suppress", "-diag-warn", "--diag-warn", "-diag-error",
                     "--diag-error"), _DIAG),
    **dict.fromkeys(("-Werror", "--Werror"), _WERROR),
    **dict.fromkeys(("-default-stream", "--default-stream"), _choice("legacy", "null", "per-thread")),
    **dict.fromkeys(("-t", "--threads", "-split-compile", "--split-compile"), _int(0, 64)),
}
ALLOWED_SUMMARY = ("-O0..-O3, -lineinfo, -use_fast_math, -ftz/-prec-div/-prec-sqrt/-fmad=true|false, "
                   "-maxrregcount=N, -std=c++14|c++17|c++20, -extra-device-vectorization, -G, "
                   "--expt-relaxed-constexpr, -Xptxas OPTS, -Xcompiler OPTS, --diag-suppress=N... "
                   "(docs/kernel-spec.md lists them all)")


def _fail(path, key, problem):
    raise SpecError(f"{path}: {key}: {problem}")


def _shown(value) -> str:
    return repr(str(value)[:60])


def check_macro(path, key: str, name, value) -> tuple[str, str]:
    """(NAME, VALUE) of a `-DNAME=VALUE` a spec asks for, or one line naming the key and what is allowed."""
    if not isinstance(name, str) or not MACRO_NAME.fullmatch(name):
        _fail(path, key, f"{_shown(name)} is not a macro name (a C identifier: ASCII letters, digits and _, "
                         "not starting with a digit)")
    if isinstance(value, bool):
        value = str(value).lower()
    elif isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str) or not MACRO_VALUE.fullmatch(value):
        bad = sorted({c for c in str(value) if not MACRO_VALUE.fullmatch(c)})[:6] if isinstance(value, str) else []
        what = f" ({', '.join(repr(c) for c in bad)} not allowed)" if bad else ""
        _fail(path, key, f"{_shown(value)} is not a macro value gemmprof passes to nvcc{what}: use "
                         f"{MACRO_VALUE_CHARS}")
    seq = next((q for q in MACRO_VALUE_SEQUENCES if q in value), None)
    if seq:
        _fail(path, key, f"{_shown(value)}: {seq!r} would start a comment or a trigraph, not be part of the value: "
                         "use letters, digits and operators without it")
    return name, value


def check_path(path, key: str, folder) -> None:
    """A path that nvcc gets on its command line (-I) or the wrapper includes: none of the characters that end
    or escape sh's double quotes, and no control characters."""
    text = str(folder)
    bad = sorted({c for c in text if c in UNSAFE_PATH_CHARS})
    if bad:
        _fail(path, key, f"{text[:120]!r} holds {', '.join(repr(c) for c in bad)}, which nvcc's shell would "
                         "interpret: rename or move it (paths nvcc reads may not hold $ ` \\ \" or control "
                         "characters)")


def check_flags(path, key: str, node) -> tuple[str, ...]:
    """The spec's extra nvcc options, each an allowed option with a valid value, one argument per item."""
    if node is None:
        return ()
    if not isinstance(node, list):
        _fail(path, key, "expected a list of nvcc options, one argument each (e.g. [-maxrregcount=128])")
    i, out = 0, []
    while i < len(node):
        flag, at = node[i], f"{key}[{i}]"
        if not isinstance(flag, str) or not flag:
            _fail(path, at, f"{_shown(flag)}: expected an nvcc option (a string such as -lineinfo)")
        out.append(flag)
        if flag in PLAIN:
            i += 1
            continue
        name, eq, value = flag.partition("=")
        if name not in VALUED:
            _refuse(path, at, flag, name)
        if not eq:
            if i + 1 >= len(node):
                _fail(path, at, f"{name} needs a value ({name}=VALUE, or VALUE as the next item): "
                                f"{VALUED[name].allowed}")
            i += 1
            value, at = node[i], f"{key}[{i}]"
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)  # YAML reads [-maxrregcount, 64] with a number
            if not isinstance(value, str):
                _fail(path, at, f"{_shown(value)}: the value of {name} is a string: {VALUED[name].allowed}")
            out.append(value)
        rule = VALUED[name]
        if not rule.ok(value):
            bad = next((p for p in value.split(",") if not rule.piece.ok(p)), value) if rule.piece else value
            part = f" ({bad[:40]!r} is not)" if bad != value else ""
            _fail(path, at, f"{value[:60]!r} is not a value gemmprof allows for {name}{part}: {rule.allowed}")
        i += 1
    return tuple(out)


def _refuse(path, at: str, flag: str, name: str):
    shown = repr(flag[:60])
    for option, why in REFUSED_WHY.items():
        if name == option or (option in ("-L", "-include", "-isystem") and flag.startswith(option)):
            _fail(path, at, f"{shown}: {option} {why}; allowed: {ALLOWED_SUMMARY}")
    glued = flag.startswith(("-I", "-D")) or (flag.startswith("-l") and not flag.startswith("-lineinfo"))
    if name in RESERVED or glued:
        _fail(path, at, f"{shown}: gemmprof sets this itself (use include_dirs, defines or libs)")
    if any(c.isspace() for c in flag):
        _fail(path, at, f"{shown}: one option per item, without spaces (-maxrregcount=128, or -Xptxas then -O3 "
                        "as two items)")
    if not flag.startswith("-"):
        _fail(path, at, f"{shown} is not an option (options start with -; a value follows its option)")
    close = difflib.get_close_matches(name, [*PLAIN, *VALUED], n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    _fail(path, at, f"{shown} is not an nvcc option gemmprof passes ({hint}allowed: {ALLOWED_SUMMARY})")
