"""The property tests are only as good as what they draw: this proves the strategies of tests/fuzzing.py produce
every class of damaged number issue 29 lists, in CSV cells, text tokens, JSON fields and SQLite files."""

from __future__ import annotations

import pytest
from conftest import FIXTURES
from fuzzing import (
    ADVERSARIAL,
    ADVERSARIAL_CELLS,
    CELL_POOL,
    HUGE_INT,
    JSON_POOL,
    apply_flips,
    flipped_bytes,
    json_text,
    mutated_csv,
    mutated_text,
    mutated_tree,
)
from hypothesis import HealthCheck, Phase, find, settings

from gemmprof.results import cells

CLASSES = ["nan", "inf", "-inf", "1e400", "5000-digit integer", "unicode digits", "negative", "zero", "empty",
           "overflowing unit"]
SEARCH = settings(max_examples=3000, database=None, suppress_health_check=list(HealthCheck),
                  phases=(Phase.generate,))  # found is enough: no shrinking
NCU_CSV = (FIXTURES / "ncu" / "h100_naive_smem_raw_stalls.csv").read_text(encoding="utf-8")
STATS = (FIXTURES / "nsys" / "a100_seed003_gpukernsum_4096.txt").read_text(encoding="utf-8")


def test_every_class_of_the_issue_is_in_the_pools():
    assert list(ADVERSARIAL) == CLASSES
    for name, values in ADVERSARIAL.items():
        assert values, name
        assert all(v in CELL_POOL for v in values), name
    kinds = {
        "nan": lambda v: v.strip().lower().lstrip("+-") == "nan",
        "inf": lambda v: v.strip().lower().lstrip("+") in ("inf", "infinity"),
        "-inf": lambda v: v.strip().lower() in ("-inf", "-infinity"),
        "1e400": lambda v: "e" in v and abs(float(v)) > 1.7e308,
        "5000-digit integer": lambda v: len(v.lstrip("-")) >= 5000 and v.lstrip("-").isdigit(),
        "unicode digits": lambda v: any(c.isdigit() and not c.isascii() for c in v),
        "negative": lambda v: v.startswith("-") and float(v) < 0,
        "zero": lambda v: float(v) == 0,
        "empty": lambda v: not v.strip(),
        "overflowing unit": lambda v: float(v) * 1e3 > cells.MAX_FIGURE or len(v) > 50,
    }
    for name, values in ADVERSARIAL.items():
        assert all(kinds[name](v) for v in values), name  # each value is of the class it is filed under
    # JSON: numbers a file can hold that json.dumps writes (NaN, Infinity), the 5000-digit stand-in, text digits
    assert any(isinstance(v, float) and v != v for v in JSON_POOL)
    assert float("inf") in JSON_POOL and float("-inf") in JSON_POOL and HUGE_INT in JSON_POOL
    assert json_text([HUGE_INT]) == "[" + "9" * 5000 + "]"
    assert any(isinstance(v, str) and any(c.isdigit() and not c.isascii() for c in v) for v in JSON_POOL)
    assert any(isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0 for v in JSON_POOL)
    assert 0 in JSON_POOL and "" in JSON_POOL


@pytest.mark.parametrize("name", CLASSES)
def test_mutated_csv_puts_each_class_into_a_numeric_cell(name):
    """Found by search, not assumed: some draw of the CSV strategy writes a value of the class where a number was."""
    import csv
    import io

    original = {(r, c): cell for r, row in enumerate(csv.reader(io.StringIO(NCU_CSV))) for c, cell in enumerate(row)}
    wanted = set(ADVERSARIAL[name])

    def hit(text):
        try:
            rows = list(csv.reader(io.StringIO(text)))
        except csv.Error:  # a NUL byte drawn elsewhere in the file
            return False
        return any(cell in wanted and cell != original.get((r, c), cell) and _numeric(original.get((r, c), ""))
                   for r, row in enumerate(rows) for c, cell in enumerate(row))

    find(mutated_csv(NCU_CSV), hit, settings=SEARCH)


def _numeric(cell: str) -> bool:
    try:
        return cells.parse_number(cell) is not None
    except cells.CellError:
        return False


@pytest.mark.parametrize("name", CLASSES)
def test_mutated_text_puts_each_class_into_a_number_token(name):
    """Some draw of the text strategy replaces a number token of a line by a value of the class."""
    wanted = set(ADVERSARIAL[name])
    originals = {}
    for line in STATS.splitlines():
        originals.setdefault(len(line.split(" ")), []).append(line.split(" "))

    def hit(text):
        for line in text.splitlines():
            tokens = line.split(" ")
            for old in originals.get(len(tokens), []):
                changed = [(a, b) for a, b in zip(old, tokens, strict=True) if a != b]
                if len(changed) == 1 and _numeric(changed[0][0]) and changed[0][1] in wanted:
                    return True
        return False

    find(mutated_text(STATS), hit, settings=SEARCH)


def test_mutated_text_scales_a_column():
    """nsys's "(ns)" headers become "(s)": with a figure of the "overflowing unit" class (drawn above), the
    column's values scale past the float range."""
    find(mutated_text(STATS), lambda t: "(s)" in t, settings=SEARCH)


def test_mutated_tree_writes_a_5000_digit_integer_and_nan():
    doc = {"a": 1, "b": [2.5, 3]}
    find(mutated_tree(doc, JSON_POOL), lambda d: "9" * 5000 in json_text(d), settings=SEARCH)
    find(mutated_tree(doc, JSON_POOL), lambda d: "NaN" in json_text(d), settings=SEARCH)
    find(mutated_tree(doc, JSON_POOL), lambda d: "-Infinity" in json_text(d), settings=SEARCH)


def test_flipped_bytes_reach_the_schema_and_the_rest_of_the_file():
    from fuzzing import _schema_spans

    path = FIXTURES / "nsys" / "h100_cupy_nvtx.sqlite"
    spans = _schema_spans(path)
    assert spans
    in_schema = lambda case: any(s <= at < e for at, _ in case[1] for s, e in spans)  # noqa: E731
    find(flipped_bytes([path]), in_schema, settings=SEARCH)
    find(flipped_bytes([path]), lambda case: not in_schema(case) and case[1][0][0] > spans[-1][1], settings=SEARCH)
    path_, flips = find(flipped_bytes([path]), lambda case: True, settings=SEARCH)
    assert apply_flips(path_, flips) != path.read_bytes() or all(path.read_bytes()[a] == b for a, b in flips)


def test_adversarial_cells_are_refused_or_none_by_the_parser():
    """Each value of every class is either no number (empty) or a CellError, except those that are real figures
    (negative, zero, the overflowing-unit values before scaling): the parser and the pools agree."""
    for value in ADVERSARIAL_CELLS:
        try:
            parsed = cells.parse_number(value)
        except cells.CellError:
            continue
        assert parsed is None or value in ADVERSARIAL["negative"] + ADVERSARIAL["zero"] + \
            ADVERSARIAL["overflowing unit"], value
