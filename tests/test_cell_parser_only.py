"""Lint: every reader turns text into numbers through gemmprof.results.cells only. No int()/float() on a cell,
no str.isdigit() (true for '²'), no json.loads outside results.files.parse_json, anywhere in a reader module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gemmprof"
READERS = sorted([*(PACKAGE / "adapters" / "ncu").glob("*.py"), *(PACKAGE / "adapters" / "nsys").glob("*.py"),
                  *(PACKAGE / "results").glob("*.py"),
                  *(PACKAGE / "tune" / n for n in ("cache.py", "records.py")), PACKAGE / "catalog" / "tuned_defaults.py"])
THE_PARSER = {PACKAGE / "results" / "cells.py", PACKAGE / "results" / "files.py"}
# (module, call as ast.unparse writes it): why it is not a raw cell. Keep this short; each entry needs a reason.
ALLOWED: dict[tuple[str, str], str] = {}


def _findings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(PACKAGE).as_posix()
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        call = ast.unparse(node)
        if isinstance(func, ast.Name) and func.id in ("int", "float"):
            if all(isinstance(a, ast.Constant) for a in node.args) and not node.keywords:
                continue  # float("inf"), float("nan"): constants, not cells
            if (rel, call) not in ALLOWED:
                out.append(f"{rel}:{node.lineno}: {call}")
        elif not (isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass")) and any(
                isinstance(a, ast.Name) and a.id in ("int", "float") for a in node.args):
            out.append(f"{rel}:{node.lineno}: {call} (int/float passed as a converter)")
        elif isinstance(func, ast.Attribute) and func.attr in ("isdigit", "isnumeric", "isdecimal"):
            out.append(f"{rel}:{node.lineno}: {call} (true for non-ASCII digits such as '²')")
        elif isinstance(func, ast.Attribute) and func.attr in ("loads", "load") and \
                isinstance(func.value, ast.Name) and func.value.id == "json":
            out.append(f"{rel}:{node.lineno}: {call} (read JSON with results.files.parse_json)")
    return out


@pytest.mark.parametrize("path", [p for p in READERS if p not in THE_PARSER], ids=lambda p: p.name)
def test_reader_converts_cells_only_through_the_parser(path):
    assert _findings(path) == []


def test_the_scan_sees_what_it_forbids(tmp_path):
    """The lint is not vacuous: each forbidden form is reported."""
    sample = tmp_path / "reader.py"
    sample.write_text("import json\nx = int(cells['ID'])\ny = float(t)\nz = t.isdigit()\nw = list(map(int, t))\n"
                      "v = json.loads(t)\nu = float('inf')\n")
    found = [f.split(": ", 1)[1] for f in _findings_at(sample)]
    assert found == ["int(cells['ID'])", "float(t)", "t.isdigit() (true for non-ASCII digits such as '²')",
                     "map(int, t) (int/float passed as a converter)",
                     "json.loads(t) (read JSON with results.files.parse_json)"]
    assert READERS and all(p.exists() for p in READERS)
    assert ALLOWED.keys() <= {(p.relative_to(PACKAGE).as_posix(), c) for p in READERS for c in _calls(p)}


def _findings_at(path: Path) -> list[str]:
    global PACKAGE
    saved, PACKAGE = PACKAGE, path.parent
    try:
        return sorted(_findings(path), key=lambda f: int(f.split(":")[1]))
    finally:
        PACKAGE = saved


def _calls(path: Path) -> set[str]:
    return {ast.unparse(n) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Call)}
