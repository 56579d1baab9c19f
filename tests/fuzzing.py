"""Mutations of real fixture files for the property tests: nasty cell values, wrong types, truncation."""

from __future__ import annotations

import csv
import io

from hypothesis import strategies as st

from gemmprof.errors import GemmprofError

# Values a damaged or hand-edited file holds where a number or a name is expected.
NASTY_TEXT = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "9" * 110, "-" + "9" * 40, "-1", "0",
              "0.0", "-0", "", " ", "abc", "1,234,567", "12 MB", "1.5 Gbyte/second", "(1, 2, 3)", "1 2 3",
              "\x00", "é", "3e-320", "1.5", "-7.25", "2147483648", "18446744073709551616", "%", "n/a", '"', ","]
NASTY_JSON = [None, -1, 0, -0.0, 1.5, 1e308, -1e308, float("nan"), float("inf"), 10 ** 40, True, False, "", "x",
              "4096", "nan", [], {}, [1, 2], [[1]], {"a": 1}, "-1"]


def expect_gemmprof_error(fn, *args, **kwargs):
    """The property: a result, or gemmprof's own error with a one-line message. Anything else propagates."""
    try:
        return fn(*args, **kwargs)
    except GemmprofError as exc:
        msg = str(exc)
        assert msg.strip(), "empty error message"
        return None


@st.composite
def mutated_csv(draw, text: str, max_edits: int = 4):
    rows = list(csv.reader(io.StringIO(text)))
    for _ in range(draw(st.integers(1, max_edits))):
        i = draw(st.integers(0, len(rows) - 1))
        if not rows[i]:
            continue
        j = draw(st.integers(0, len(rows[i]) - 1))
        action = draw(st.integers(0, 9))
        if action == 0:
            del rows[i][j]
        elif action == 1:
            rows[i].append(draw(st.sampled_from(NASTY_TEXT)))
        elif action == 2:
            rows = rows[:i] if i else rows[1:]
            if not rows:
                rows = [[]]
        else:
            rows[i][j] = draw(st.sampled_from(NASTY_TEXT) | st.text(max_size=12))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


@st.composite
def mutated_text(draw, text: str, max_edits: int = 4):
    """Whitespace-separated tokens of a line replaced, lines dropped or duplicated, the text truncated."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, max_edits))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.integers(0, 9))
        if action == 0:
            del lines[i]
            if not lines:
                lines = [""]
        elif action == 1:
            lines = lines[: i + 1]
        elif action == 2:
            lines.insert(i, lines[i])
        else:
            tokens = lines[i].split(" ")
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[j] = draw(st.sampled_from(NASTY_TEXT) | st.text(max_size=8))
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
