"""Tables never break a number: every command's table, at 80 and 120 columns, on real results (tests/fixtures), and
tables generated with numbers of every width from 1 to 15 characters, at widths from 40 to 200.

A number (a run of digits with its decimal point or thousands separators) is broken when it is split across two
lines. The check reads the rendered text: the numbers printed, as a multiset, must be exactly the numbers of what
the table shows (its title, notes, headers and cells, the columns left out named in a note; a cell cut with an
ellipsis shows its kept part). A split number prints as two fragments instead of one whole: the multisets differ.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from clitools import invoke

from gemmprof.render import table as table_mod
from gemmprof.render.table import NUMBER, Column, Table, cell_text, ellipsize, fit, render_text

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures"
WIDTHS = (80, 120)


def numbers(*texts: str) -> Counter:
    return Counter(m.group() for t in texts for m in NUMBER.finditer(t))


def shown(table: Table, width: int) -> Counter:
    """The numbers the table shows at `width`: every kept cell whole (or the part an ellipsis leaves)."""
    layout = fit(table, width)
    texts = [table.title, *table.notes]
    if layout.left_out:  # "Left out to fit WIDTH columns: HEADERS"
        texts += [str(width), *(table_mod._header(c) for c in layout.left_out)]
    for c, w, cells in zip(layout.columns, layout.widths, layout.cells, strict=True):
        texts.append(table_mod._header(c))
        texts += [ellipsize(t, w) if c.fmt == "s" and not c.wrap else t for t in cells]
    return numbers(*texts)


@pytest.fixture
def printed_tables(monkeypatch):
    """Every table a command prints, with the width it was printed at."""
    seen = []
    original = table_mod._print

    def spy(table, console, width):
        seen.append((table, width))
        return original(table, console, width)

    monkeypatch.setattr(table_mod, "_print", spy)
    return seen


def widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


# --- every command, on real results ---------------------------------------------------------------------------

E = FIX / "explain"
COMMANDS = {
    "list": ["list"],
    "list --explain": ["list", "--explain", "8", "--explain", "h3"],
    "model": ["model", "--size", "4096"],
    "model --ladder": ["model", "--size", "4096", "--ladder"],
    "model --ladder fp16": ["model", "--size", "4095", "--dtype", "fp16", "--ladder"],
    "occupancy": ["occupancy", "--threads", "256", "--registers", "128", "--static-smem", "16384"],
    "gpus": ["gpus"],
    "gpus NAME": ["gpus", "h100"],
    "show": ["show", str(FIX / "results" / "h100_fix_4096.json")],
    "show fp16": ["show", str(FIX / "results" / "h100_fp16_8192.json")],
    "show errors": ["show", str(FIX / "results" / "h100_ladder_4096_first.json")],
    "show --wide": ["show", str(E / "run_ladder_4096.json"), "--wide"],
    "show bf16 --wide": ["show", str(FIX / "records" / "2026-11-23_h100_hopper" / "hopper_bf16_8192.json"), "--wide"],
    "show profile": ["show", str(E / "profile_fp32_4096.json")],
    "profile --from": ["profile", "--from", str(FIX / "ncu" / "h100_gemmprof_run_raw_4096.csv")],
    "profile --from details": ["profile", "--from", str(FIX / "ncu" / "h100_gemmprof_profile_h5_h6_cublas_details_8192.csv")],
    "explain": ["explain", "5", "15", "--results", str(E / "run_ladder_4096.json"), "--results",
                str(E / "run_fp32top_4096.json"), "--profile-results", str(E / "profile_fp32_4096.json")],
    "explain --verbose": ["explain", "h3", "--results", str(E / "run_ladder_4096.json"), "--profile-results",
                          str(E / "profile_fp16_4096.json"), "--verbose"],
    "explain --ladder": ["explain", "--ladder", "fp32", "--results", str(E / "run_ladder_4096.json"), "--results",
                         str(E / "run_fp32top_4096.json"), "--profile-results", str(E / "profile_fp32_4096.json")],
    "compare-nsys": ["compare-nsys", str(FIX / "nsys" / "h100_gemmprof_run_4096.sqlite")],
    "compare-nsys text": ["compare-nsys", str(FIX / "nsys" / "a100_seed003_profile_stats_stdout.txt"), "--size", "4096"],
    "roofline": ["roofline", str(E / "run_ladder_4096.json"), "--profile-results", str(E / "profile_fp32_4096.json")],
    "diff": ["diff", str(FIX / "results" / "h100_ladder_4096_first.json"), str(E / "run_ladder_4096.json"), "--force"],
    "sweep (saved)": ["show", str(FIX / "results" / "h100_sweep_fp32_summary.json")],
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_fits_without_breaking_a_number(runner, name, width, monkeypatch, printed_tables):
    monkeypatch.setenv("COLUMNS", str(width))
    result = invoke(runner, COMMANDS[name])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert len(text.splitlines()) > 3, text
    assert widest(text) <= width, "\n".join(line for line in text.splitlines() if len(line) > width)
    if printed_tables:
        assert all(w == width for _, w in printed_tables)
        assert numbers(text) == sum((shown(t, w) for t, w in printed_tables), Counter()), text
    else:  # text, not a table (list --explain): the same numbers as printed with no width limit
        monkeypatch.setenv("COLUMNS", "1000")
        assert numbers(text) == numbers(invoke(runner, COMMANDS[name]).stdout), text


@pytest.mark.parametrize("width", WIDTHS)
def test_build_fits_without_breaking_a_number(runner, nvcc, width, monkeypatch, printed_tables):
    """`build 1 10` (118 registers and 1088 FFMA once wrapped to "11 / 8" and "10 / 88")."""
    monkeypatch.setenv("COLUMNS", str(width))
    result = invoke(runner, ["build", "1", "10"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert widest(text) <= width and numbers(text) == shown(*printed_tables[0]), text
    assert re.search(r"│ +\d{2,3} │", text)  # the registers, whole


@pytest.mark.parametrize("width", WIDTHS)
def test_tune_table_fits_without_breaking_a_number(width):
    """`gemmprof tune`'s table, from a real sweep's saved result (tune needs a GPU to print one itself)."""
    from gemmprof.render.tune_table import to_table
    from gemmprof.results.files import load_json
    from gemmprof.tune.result import TuneResult

    result = TuneResult.from_dict(load_json(FIX / "results" / "h100_tune_16_1000.json.gz"))
    for table in (to_table(result), to_table(result, top=None, all_configs=True)):
        text = render_text(table, width)
        assert widest(text) <= width and numbers(text) == shown(table, width), text
        assert len(table.rows) >= 10


@pytest.mark.parametrize("columns", ["80", None])
def test_piped_list_honours_columns_else_80(columns):
    """`COLUMNS=80 gemmprof list | cat` is at most 80 wide; piped without COLUMNS, the default is 80 too."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "gemmprof", "list"], capture_output=True, text=True, env=env,
                         stdin=subprocess.DEVNULL, check=True, cwd=ROOT).stdout
    assert widest(out) <= 80 and "rung" in out
    env["COLUMNS"] = "200"
    wide = subprocess.run([sys.executable, "-m", "gemmprof", "list"], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, check=True, cwd=ROOT).stdout
    assert 120 < widest(wide) <= 200  # the source and parameter columns come back when there is room


def test_explain_is_one_line_per_limiter_by_default(runner, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    args = COMMANDS["explain"][:2] + COMMANDS["explain"][3:]  # rung 5 alone
    brief = invoke(runner, args).output
    body = [line for line in brief.splitlines() if line.startswith("│")]
    assert 5 <= len(body) <= 10 and all(re.match(r"│ +\d+ │", line) for line in body), brief  # a row a limiter
    verbose = invoke(runner, [*args, "--verbose"]).output
    assert "long_scoreboard" in verbose and "long_scoreboard" not in brief  # evidence: --verbose
    import json

    doc = json.loads(invoke(runner, [*args, "--format", "json"]).output)
    rows = doc["tables"][0]["rows"] if "tables" in doc else doc["rows"]
    assert all(r["evidence"] and r["lift"] for r in rows)  # and JSON


# --- the class: generated tables ------------------------------------------------------------------------------

WORDS = ("tile", "warp", "sectors", "bank_conflicts_padding", "interleaved_copies_any_shape", "L2", "TFLOP/s",
         "a", "cp.async", "(rung", "x", "per", "request;")


def _number(rng: random.Random, digits: int) -> str:
    """A number of `digits` characters: an integer, a decimal or one with thousands separators."""
    kind = rng.choice(("int", "dec", "sep"))
    if kind == "dec" and digits >= 3:
        left = rng.randint(1, digits - 2)
        return f"{rng.randint(10 ** (left - 1), 10 ** left - 1)}.{rng.randint(0, 10 ** (digits - left - 1) - 1):0{digits - left - 1}d}"
    if kind == "sep" and digits >= 5 and digits % 4 != 0:
        n = rng.randint(10 ** (digits - digits // 4 - 1), 10 ** (digits - digits // 4) - 1)
        text = f"{n:,}"
        if len(text) == digits:
            return text
    return str(rng.randint(10 ** (digits - 1) if digits > 1 else 0, 10 ** digits - 1))


def _generated(rng: random.Random) -> tuple[Table, list[str]]:
    ncols = rng.randint(2, 12)
    cols, numbers = [], []
    for i in range(ncols):
        text = i == 0 or rng.random() < 0.4
        unit = rng.choice(("", "ms", "TFLOP/s", "%", "B"))
        header = rng.choice(("rung", "median", "AI model", "gld sectors/req", "spill st", "x", "L2 x tiled"))
        cols.append(Column(f"c{i}", header + (f" {i}" if rng.random() < 0.3 else ""), "" if text else unit,
                           "s" if text else "", wrap=rng.random() < 0.8, drop=rng.choice((None, None, -1, 0, 1, 2))))
    rows = []
    for _ in range(rng.randint(1, 12)):
        row = {}
        for c in cols:
            if c.fmt == "s":
                parts = []
                for _ in range(rng.randint(0, 12)):
                    if rng.random() < 0.4:
                        n = _number(rng, rng.randint(1, 15))
                        numbers.append(n)
                        parts.append(n + rng.choice(("", "x", "%", ",", ")", "_tiles")))
                    else:
                        parts.append(rng.choice(WORDS))
                row[c.key] = (" " if rng.random() < 0.8 else "_").join(parts)
            else:
                n = _number(rng, rng.randint(1, 15))
                numbers.append(n)
                row[c.key] = n if rng.random() < 0.9 else None
        rows.append(row)
    notes = [" ".join(rng.choice(WORDS) if rng.random() < 0.6 else _number(rng, rng.randint(1, 12))
                      for _ in range(rng.randint(5, 60)))]
    title = "Generated: " + " ".join(_number(rng, rng.randint(1, 9)) for _ in range(rng.randint(1, 20)))
    return Table(title, cols, rows, notes), numbers


def test_generated_tables_never_break_a_number():
    rng = random.Random(20261128)
    seen_digits, fitted, dropped = Counter(), 0, 0
    for case in range(100):
        table, made = _generated(rng)
        for n in made:
            seen_digits[len(n)] += 1
        for width in (40, 60, 80, 120, 200):
            layout = fit(table, width)
            text = render_text(table, width)
            assert numbers(text) == shown(table, width), (case, width, text)
            if sum(layout.widths) + 3 * len(layout.widths) + 1 <= width:
                assert widest(text) <= width, (case, width, text)
            natural = sum(max(len(table_mod._header(c)), *(len(cell_text(r, c)) for r in table.rows)) + 3
                          for c in table.columns) + 1
            fitted += natural > width
            dropped += bool(layout.left_out)
            # every number of a kept number column is printed whole, on one line
            lines = text.splitlines()
            for c in layout.columns:
                if c.fmt != "s":
                    for r in table.rows:
                        if r.get(c.key) is not None:
                            assert any(str(r[c.key]) in line for line in lines), (case, width, r[c.key])
    # the generator made what it claims: numbers of every width from 1 to 15, tables too wide for their width
    assert all(seen_digits[d] > 0 for d in range(1, 16)), seen_digits
    assert fitted > 150 and dropped > 30, (fitted, dropped)
