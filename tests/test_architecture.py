"""The import graph, read from the source: no stage imports a higher one, and no modules import each other in a circle.

The order is the one docs/architecture.md states (its "Import order" block), so the document and the code cannot
drift apart. Every `import` and `from ... import` counts, inside functions too: an import hidden in a function is
still a dependency.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gemmprof"
DOC = ROOT / "docs" / "architecture.md"


def stage_order(doc_text: str) -> dict[str, int]:
    """{stage: rank} from the doc's line `a, b < c < ...` in the fenced block under "## Import order"."""
    section = doc_text.split("## Import order", 1)
    if len(section) < 2:
        raise AssertionError("docs/architecture.md has no '## Import order' section")
    block = re.search(r"```\n(.*?)\n```", section[1], re.S)
    if block is None:
        raise AssertionError("docs/architecture.md: the Import order section has no fenced block")
    line = next((ln for ln in block[1].splitlines() if "<" in ln), "")
    ranks = {}
    for rank, level in enumerate(line.split("<")):
        for name in level.split(","):
            if name.strip():
                ranks[name.strip()] = rank
    return ranks


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage_of(module: str) -> str:
    """gemmprof.results.run -> results; gemmprof.cli -> cli; the package itself (its __init__) -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path, module: str, known: set[str]) -> set[str]:
    """The gemmprof modules `path` imports, anywhere in the file; `from pkg import name` names the submodule
    pkg.name when there is one, else pkg."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import gemmprof.x.y` of a name inside a module
                target = target.rpartition(".")[0]
            if target.split(".")[0] == "gemmprof" and target and target != module:
                found.add(target)
    return found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    files = {module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    return {m: imports_of(p, m, set(files)) for m, p in files.items()}


def upward_imports(graph: dict[str, set[str]], ranks: dict[str, int]) -> list[str]:
    return [f"{m} ({stage_of(m)}) imports {t} ({stage_of(t)})" for m, targets in sorted(graph.items())
            for t in sorted(targets) if ranks[stage_of(t)] > ranks[stage_of(m)]]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph()


@pytest.fixture(scope="module")
def ranks():
    return stage_order(DOC.read_text(encoding="utf-8"))


def test_every_module_belongs_to_a_stage_the_doc_orders(graph, ranks):
    unplaced = sorted({stage_of(m) for m in graph} - set(ranks))
    assert not unplaced, f"place these in docs/architecture.md's Import order: {unplaced}"


def test_no_stage_imports_a_higher_one(graph, ranks):
    assert upward_imports(graph, ranks) == []


def test_no_import_circle(graph):
    assert circles(graph) == []


def test_the_graph_sees_imports_inside_functions(graph):
    # the package facade imports results and render only inside its functions (to keep `import gemmprof` light)
    assert {"gemmprof.results.loading", "gemmprof.render.dataframe"} <= graph["gemmprof"]


# -- the checks themselves catch what they are for -------------------------------------------------------------
def _package(tmp_path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "gemmprof" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "gemmprof"


def test_checks_find_an_upward_import_in_a_function_and_a_circle(tmp_path):
    pkg = _package(tmp_path, {
        "__init__.py": "",
        "results/__init__.py": "",
        "results/run.py": "def f():\n    from gemmprof.render import table\n",
        "render/__init__.py": "",
        "render/table.py": "from gemmprof.results import run\n",
        "catalog/__init__.py": "",
        "catalog/spec.py": "from . import binding\n",
        "catalog/binding.py": "import gemmprof.catalog.spec\n",
    })
    graph = import_graph(pkg)
    ranks = stage_order("## Import order\n\n```\nresults < catalog < render, __init__\n```\n")
    assert upward_imports(graph, ranks) == [
        "gemmprof.results.run (results) imports gemmprof.render.table (render)"]
    assert circles(graph) == [["gemmprof.catalog.binding", "gemmprof.catalog.spec"],
                              ["gemmprof.render.table", "gemmprof.results.run"]]
