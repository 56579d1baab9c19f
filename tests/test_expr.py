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


# -- fit_width: the tile width fitted to the rounds of tiles (h12's decomposition TN) -----------------------------
def _cdiv(a, b):
    return -(-a // b)


def _fit(rows, n, slots, lo=128, hi=256, step=8, fixed=18, margin=3):
    return evaluate(f"fit_width({rows}, {n}, {slots}, {lo}, {hi}, {step}, {fixed}, {margin})", {})


def test_fit_width_at_the_shapes_it_was_made_for():
    # 1024 x 11008: 8 tile rows; 43 columns of 256 are 2.6 rounds on 132 SMs (3 rounds); 66 of 168 are 4 rounds
    # exactly (cuBLAS's own tile there, nvjet ..._168x128_...), in pairs (4 cluster rows on 66 clusters) 240
    assert _fit(8, 11008, 132) == 168
    assert _fit(4, 11008, 66, step=16) == 240
    # the squares keep 256: 4096^2 is 4 full rounds in pairs, 8192^2 16
    assert _fit(16, 4096, 66, step=16) == _fit(32, 8192, 66, step=16) == 256
    assert _fit(32, 4096, 132) == 256


def test_fit_width_keeps_the_widest_unless_a_narrower_saves_more_than_the_margin():
    # 8192 x 8192 alone: 224 saves 0.6% of 256's time, under the 3% margin
    t = {w: _cdiv(64 * _cdiv(8192, w), 132) * (w + 18) for w in range(128, 257, 8)}
    assert min(t.values()) < t[256] and min(t.values()) * 100 >= t[256] * 97
    assert _fit(64, 8192, 132) == 256
    assert _fit(64, 8192, 132, margin=0) == min(t, key=lambda w: (t[w], -w))  # no margin: the fit itself


@pytest.mark.parametrize("args, match", [
    ("0, 11008, 132, 128, 256, 8, 18, 3", "rows"), ("8, 11008, 0, 128, 256, 8, 18, 3", "slots"),
    ("8, 11008, 132, 256, 128, 8, 18, 3", "lo <= hi"), ("8, 11008, 132, 128, 256, 0, 18, 3", "step"),
    ("8, 11008, 132, 1, 100000, 1, 18, 3", "at most"), ("8, 11008, 132, 128, 256, 8, -1, 3", "fixed"),
    ("8, 11008, 132, 128, 256, 8", "takes 8"), ("8, 11008, 132, 128.5, 256, 8, 18, 3", "integers"),
    ("8, 11008, 132, 128, 256, 8, 18, 1 < 2", "integers"),
])
def test_fit_width_refuses_bad_arguments(args, match):
    with pytest.raises(SpecError, match=match):
        evaluate(f"fit_width({args})", {})


def test_fit_width_over_generated_problems_is_the_cheapest_width_or_the_widest():
    # a grid of LLM-like problems: every answer is a candidate, never slower than 256 by the model, narrower only
    # where it saves more than the margin, and the grid draws both outcomes (256 kept, a narrower width fitted)
    fitted = kept = 0
    for rows in (1, 2, 3, 4, 5, 8, 10, 16, 24, 32, 64):
        for n in (1000, 2048, 4096, 5120, 8192, 11008, 13824, 14336, 28672):
            for slots, step in ((132, 8), (66, 16), (114, 8)):
                w = _fit(rows, n, slots, step=step)
                t = {c: _cdiv(rows * _cdiv(n, c), slots) * (c + 18) for c in range(256, 127, -step)}
                assert w in t and t[w] <= t[256]
                if w == 256:
                    kept += 1
                    assert min(t.values()) * 100 >= t[256] * 97
                else:
                    fitted += 1
                    assert t[w] == min(t.values()) and t[w] * 100 < t[256] * 97
                    assert all(t[c] > t[w] for c in t if c > w)  # of equal times the widest
    assert fitted >= 20 and kept >= 20
