"""Mutations of real fixture files for the property tests: nasty cell values, wrong types, truncation."""

from __future__ import annotations

import csv
import io
import re

from hypothesis import strategies as st

from gemmprof.errors import GemmprofError

# Values a damaged or hand-edited file holds where a number or a name is expected.
NASTY_TEXT = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "9" * 110, "-" + "9" * 40, "-1", "0",
              "0.0", "-0", "", " ", "abc", "1,234,567", "12 MB", "1.5 Gbyte/second", "(1, 2, 3)", "1 2 3",
              "\x00", "é", "3e-320", "1.5", "-7.25", "2147483648", "18446744073709551616", "%", "n/a", '"', ","]
NASTY_JSON = [None, -1, 0, -0.0, 1.5, 1e308, -1e308, float("nan"), float("inf"), 10 ** 40, True, False, "", "x",
              "4096", "nan", [], {}, [1, 2], [[1]], {"a": 1}, "-1"]

# Issue 29: the classes of damaged numbers every numeric column is drawn from (tests/test_fuzz_classes.py proves
# that the strategies below produce each). "overflowing unit": figures that overflow once scaled by a unit the
# fixture prints (Kbyte, usecond, "(s)" in nsys's headers), or by a unit from OVERFLOW_UNITS put in its place.
ADVERSARIAL = {
    "nan": ["nan", "NaN", "-nan"],
    "inf": ["inf", "Infinity", "+inf"],
    "-inf": ["-inf", "-Infinity"],
    "1e400": ["1e400", "-1e400", "1.8e308"],
    "5000-digit integer": ["9" * 5000, "-" + "1" * 5000],
    "unicode digits": ["²", "¹²⁸", "٣٢", "۴", "１２８", "߁"],  # superscripts, Arabic-Indic, full-width, NKo
    "negative": ["-1", "-128", "-0.5", "-2147483648"],
    "zero": ["0", "0.0", "-0"],
    "empty": ["", " "],
    "overflowing unit": ["9e299", "1.5e299", "9" * 60],
}
ADVERSARIAL_CELLS = [v for values in ADVERSARIAL.values() for v in values]
OVERFLOW_UNITS = ["Pbyte", "Tbyte/second", "second", "msecond", "Gcycle", "Pinst"]
CELL_POOL = NASTY_TEXT + ADVERSARIAL_CELLS  # what a mutated CSV or text cell is set to
HUGE_INT = "@@huge-int@@"  # stands for a 5000-digit JSON integer, which json.dumps itself refuses to write
JSON_POOL = NASTY_JSON + [float("-inf"), 1e300, -5, HUGE_INT, "²", "٣٢", "１２８", "1e400", "9" * 5000]
_NUMERIC = re.compile(r"[+-]?[0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_UNIT = re.compile(r"[KMGTP]?(?:byte|cycle|inst|hz|Hz|sector|warp|thread|block|request|wavefront)(?:/\w+)?|"
                   r"[mun]?second|[mun]?s|%")


def json_text(doc) -> str:
    """JSON text for a mutated document: HUGE_INT written as the 5000-digit integer it stands for."""
    import json

    return json.dumps(doc).replace(f'"{HUGE_INT}"', "9" * 5000)


def expect_gemmprof_error(fn, *args, **kwargs):
    """The property: a result, or gemmprof's own error with a one-line message. Anything else propagates."""
    try:
        return fn(*args, **kwargs)
    except GemmprofError as exc:
        msg = str(exc)
        assert msg.strip(), "empty error message"
        return None


_ROWS: dict[str, tuple] = {}


def _rows(text: str) -> tuple:
    """The CSV's rows and the positions of its numeric and unit cells, found once per fixture."""
    if text not in _ROWS:
        rows = [tuple(r) for r in csv.reader(io.StringIO(text))]
        numeric = [(r, c) for r, row in enumerate(rows) for c, cell in enumerate(row) if _NUMERIC.fullmatch(cell)]
        units = [(r, c) for r, row in enumerate(rows) for c, cell in enumerate(row) if _UNIT.fullmatch(cell)]
        lines = text.splitlines()
        quoted = len(lines) == len(rows) and any(line.startswith('"') for line in lines)
        _ROWS[text] = (rows, numeric, units, [line.startswith('"') for line in lines] if quoted else None)
    return _ROWS[text]


@st.composite
def mutated_csv(draw, text: str, max_edits: int = 4):
    rows, numeric, units, quoted = _rows(text)
    rows = [list(r) for r in rows]
    for _ in range(draw(st.integers(1, max_edits))):
        i = draw(st.integers(0, len(rows) - 1))
        if not rows[i]:
            continue
        j = draw(st.integers(0, len(rows[i]) - 1))
        action = draw(st.integers(0, 11))
        if action == 0:
            del rows[i][j]
        elif action == 1:
            rows[i].append(draw(st.sampled_from(CELL_POOL)))
        elif action == 2:
            rows = rows[:i] if i else rows[1:]
            if quoted is not None:
                quoted = quoted[:i] if i else quoted[1:]
            if not rows:
                rows, quoted = [[]], None
        elif action in (3, 4, 5) and numeric:  # a numeric cell of any column, set to a damaged number
            r, c = draw(st.sampled_from(numeric))
            if r < len(rows) and c < len(rows[r]):
                rows[r][c] = draw(st.sampled_from(ADVERSARIAL_CELLS))
        elif action == 6 and units:  # a unit scaled up: the cell's figure may overflow once converted
            r, c = draw(st.sampled_from(units))
            if r < len(rows) and c < len(rows[r]):
                rows[r][c] = draw(st.sampled_from(OVERFLOW_UNITS))
        else:
            rows[i][j] = draw(st.sampled_from(CELL_POOL) | st.text(max_size=12))
    buf = io.StringIO()
    if quoted is None or len(rows) != len(quoted):  # rows were cut: write as written, quoted only where needed
        csv.writer(buf, lineterminator="\n").writerows(rows)
        return buf.getvalue()
    # ncu quotes every cell of its table ('"ID",...' starts one); its messages and program output are bare lines
    every, minimal = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n"), csv.writer(buf, lineterminator="\n")
    for row, was_quoted in zip(rows, quoted, strict=True):
        (every if was_quoted else minimal).writerow(row)
    return buf.getvalue()


@st.composite
def mutated_text(draw, text: str, max_edits: int = 4):
    """Whitespace-separated tokens of a line replaced, lines dropped or duplicated, the text truncated."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, max_edits))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.integers(0, 11))
        tokens = lines[i].split(" ")
        numeric = [j for j, t in enumerate(tokens) if _NUMERIC.fullmatch(t)]
        if action == 0:
            del lines[i]
            if not lines:
                lines = [""]
        elif action == 1:
            lines = lines[: i + 1]
        elif action == 2:
            lines.insert(i, lines[i])
        elif action in (3, 4, 5) and numeric:  # a number of the line, set to a damaged number
            tokens[draw(st.sampled_from(numeric))] = draw(st.sampled_from(ADVERSARIAL_CELLS))
            lines[i] = " ".join(tokens)
        elif action == 6 and "(ns)" in lines[i]:  # nanoseconds become seconds: a column's figures scale by 1e9
            lines[i] = lines[i].replace("(ns)", "(s)")
        else:
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[j] = draw(st.sampled_from(CELL_POOL) | st.text(max_size=8))
            lines[i] = " ".join(tokens)
    return "\n".join(lines) + "\n"


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:6]):  # enough of each list to reach every kind of field
            yield from _paths(v, (*prefix, i))


@st.composite
def mutated_tree(draw, doc, values=NASTY_JSON, max_edits: int = 3):
    """A JSON/YAML document with fields set to wrong types or values, or removed."""
    import copy

    doc = copy.deepcopy(doc)
    paths = list(_paths(doc))
    for _ in range(draw(st.integers(1, max_edits))):
        path = draw(st.sampled_from(paths))
        if not path:
            continue
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            if draw(st.integers(0, 7)) == 0 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                # a copy: the nasty values are shared objects, and a later edit may reach into the one put here
                parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(values)))
        except (KeyError, IndexError, TypeError):
            continue
    return doc


SCHEMA_SHARE = 4  # one flip in four lands in the schema (sqlite_master), the rest anywhere in the file


@st.composite
def flipped_bytes(draw, paths):
    """(path, ((offset, byte), ...)): 1-3 bytes of an SQLite file to change, anywhere or inside a CREATE statement
    of the schema, whose text Python decodes strictly. `apply_flips` makes the damaged copy."""
    path = draw(st.sampled_from(paths))
    size, schema, flips = len(_bytes(path)), _schema_spans(path), []
    for _ in range(draw(st.integers(1, 3))):
        if schema and draw(st.integers(0, SCHEMA_SHARE - 1)) == 0:
            start, end = draw(st.sampled_from(schema))
            at = draw(st.integers(start, end - 1))
        else:
            at = draw(st.integers(0, size - 1))
        new = draw(st.sampled_from([0xFF, 0x80, 0xC3, 0x00])) if draw(st.booleans()) else \
            _bytes(path)[at] ^ (1 << draw(st.integers(0, 7)))
        flips.append((at, new))
    return path, tuple(flips)


def apply_flips(path, flips) -> bytes:
    data = bytearray(_bytes(path))
    for at, new in flips:
        data[at] = new
    return bytes(data)


_BYTES: dict = {}


def _bytes(path) -> bytes:
    if path not in _BYTES:
        _BYTES[path] = path.read_bytes()
    return _BYTES[path]


def _schema_spans(path) -> list[tuple[int, int]]:
    data = _bytes(path)
    spans, at = [], data.find(b"CREATE ")
    while at != -1:
        end = data.find(b")", at)
        spans.append((at, end if end > at else at + 7))
        at = data.find(b"CREATE ", at + 7)
    return spans


# What a kernel spec hands nvcc (a define's value, a flag, the value of -Xptxas...), by the ways such a string can
# make nvcc's sh run something or split it into other arguments. "{c}" stands for a canary file's name.
SHELL_INJECTIONS = {
    "command substitution": ["$(touch {c})", "1+0*$(touch {c})"],
    "backquote": ["`touch {c}`", "1`touch {c}`"],
    "escaped substitution": ["\\$(touch {c})", "\\`touch {c}\\`"],
    "variable": ["$HOME", "${IFS}", "$0", "$$"],
    "double quote": ['"', '";touch {c};"'],
    "single quote": ["'", "'$(touch {c})'"],
    "separator": [";touch {c}", "&&touch {c}", "\ntouch {c}"],
    "whitespace": [" ", "\t", "\r", "\x0b"],
    "control": ["\x00", "\x1b", "\x7f"],
    "comma": [",", ",-time,{c}"],  # nvcc splits the value of a list option (-Xptxas, -D, -Xcompiler) at commas
    "non-ASCII": ["é", "\u2028", "\uff04(touch {c})"],  # a line separator; a full-width dollar
}
SHELL_CLASSES = list(SHELL_INJECTIONS)
# characters sh finds nothing to expand in inside nvcc's double quotes (the filler around an injection)
SAFE_TEXT = st.text(alphabet="ABCXYZabcxyz0123456789_.+-*/()<>=!&|~^%?:", max_size=8)


@st.composite
def injected_word(draw, canary: str = "ran"):
    """(class, text): a harmless-looking word with one injection of a SHELL_INJECTIONS class in it."""
    kind = draw(st.sampled_from(SHELL_CLASSES))
    piece = draw(st.sampled_from(SHELL_INJECTIONS[kind])).replace("{c}", canary)
    return kind, draw(SAFE_TEXT) + piece + draw(SAFE_TEXT)


# nvcc options that write files outside the build's folder, read options from elsewhere or run another program
# (nvcc --help; the spec gives the value): each must be refused however it is written
NVCC_HOST_EFFECTS = {
    "-keep": [], "--keep": [], "-save-temps": [], "--save-temps": [], "-keep-dir": ["kd"], "--keep-dir": ["kd"],
    "-MD": [], "-MMD": [], "-M": [], "-MM": [], "-MF": ["dep.d"], "--dependency-output": ["dep.d"],
    "--generate-dependencies-with-compile": [], "-time": ["t.csv"], "--time": ["t.csv"],
    "--fdevice-time-trace": ["trace"], "-optf": ["opts"], "--options-file": ["opts"], "-ccbin": ["bin"],
    "--compiler-bindir": ["bin"], "-odir": ["out"], "--output-directory": ["out"], "-o": ["x"], "-run": [],
    "-include": ["x.h"], "-L": ["lib"], "-Xlinker": ["-o,x"], "-Xnvlink": ["x"], "-lib": [],
}
# nvcc options a spec uses (docs/kernel-spec.md): the filler around a bad one; each list is one option's items
NVCC_GOOD = [["-lineinfo"], ["--use_fast_math"], ["-maxrregcount=128"], ["-maxrregcount", "64"], ["-Xptxas", "-v"],
             ["-Xptxas", "-O3,-warn-spills"], ["--ftz=true"], ["-prec-div=false"], ["-std=c++17"], ["-O2"],
             ["--extra-device-vectorization"], ["-Xcompiler", "-Wall"], ["--expt-relaxed-constexpr"]]
# where in an option an injected word goes: the value of an option that takes one, or a glued option
INJECT_INTO = ["-Xptxas {w}", "-Xptxas=-v,{w}", "-Xcompiler {w}", "-Xcudafe {w}", "-maxrregcount={w}", "--ftz {w}",
               "-std={w}", "-D{w}", "-DX={w}", "{w}"]


@st.composite
def bad_flags(draw, canary: str = "ran"):
    """(kind, flags, index): a spec's `flags` with one bad option among good ones; `index` is the item a refusal
    must name (the option, or its value where the option is allowed and the value is not)."""
    before = [x for opt in draw(st.lists(st.sampled_from(NVCC_GOOD), max_size=3)) for x in opt]
    after = [x for opt in draw(st.lists(st.sampled_from(NVCC_GOOD), max_size=2)) for x in opt]
    if draw(st.booleans()):
        option = draw(st.sampled_from(sorted(NVCC_HOST_EFFECTS)))
        bad, at, kind = [option, *NVCC_HOST_EFFECTS[option]], 0, "host effect"
    else:
        kind, word = draw(injected_word(canary))
        form = draw(st.sampled_from(INJECT_INTO))
        bad = form.replace("{w}", word).split(" ", 1) if form.count(" ") else [form.replace("{w}", word)]
        at = len(bad) - 1 if form.startswith("-Xptxas ") or form.startswith("-Xcompiler ") or form.startswith(
            "-Xcudafe ") or form.startswith("--ftz ") else 0
    return kind, [*before, *bad, *after], len(before) + at
