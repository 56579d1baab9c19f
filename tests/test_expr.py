"""The spec expression evaluator: arithmetic and comparisons only, never eval."""

import pytest

from gemmprof.catalog.expr import evaluate, names
from gemmprof.errors import SpecError


@pytest.mark.parametrize("text,expected", [
    ("cdiv(N, BN)", 33), ("BM * BN / (TM * TN)", 256), ("BN % (16 * TN) == 0", True), ("min(BM, BN) + max(1, 2)", 130),
    ("M % BM == 0 and not K < 8", False), ("-BM // 3", -43), (7, 7),
    ("TM ^ ((BM >> 3) & 7)", 8), ("(1 << TM) | 1", 257),
])
def test_evaluates(text, expected):
    env = {"M": 4095, "N": 4097, "K": 1023, "BM": 128, "BN": 128, "TM": 8, "TN": 8}
    assert evaluate(text, env) == expected


@pytest.mark.parametrize("text", ["__import__('os')", "BM.real", "open('x')", "[1, 2]", "'a'", "lambda: 1",
                                  "BM ** 2", "BM ^ 1.5", "1 << -1"])
def test_rejects_anything_else(text):
    with pytest.raises(SpecError):
        evaluate(text, {"BM": 1})


def test_inexact_division_and_unknown_names_are_errors():
    with pytest.raises(SpecError, match="not exact"):
        evaluate("BM / 3", {"BM": 128})
    with pytest.raises(SpecError, match="unknown name 'Q'"):
        evaluate("Q + 1", {})
    with pytest.raises(SpecError, match="division by zero"):
        evaluate("1 // BM", {"BM": 0})


def test_names():
    assert names("cdiv(M, BM) + K") == {"M", "BM", "K"}


@pytest.mark.parametrize("text,match", [("M << M", "shift by 4096 is out of range"),  # fuzz find: OverflowError before
                                        ("M << 63", "out of range"), ("M * M * M * M * M * M", "out of range")])
def test_huge_values_are_out_of_range_errors(text, match):
    with pytest.raises(SpecError, match=match):
        evaluate(text, {"M": 4096})
