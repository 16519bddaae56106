"""The architecture holds: the run folder's layout is spelled in one module only."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "airbench_nb"
OWNER = PACKAGE / "run_folder.py"

LAYOUT_FILES = (
    "run.json",
    "summary.json",
    "summary.inputs.json",
    "scores.csv",
    "scores_summary.csv",
    "analysis.json",
    "leaderboard.md",
    "tables.csv",
    "index.html",
    "README.md",
    "grid.json",
    ".labels.jsonl",
)
"""File names of a run folder: no path-like string of the kit's code may hold them (docstrings and prose apart)."""

LAYOUT_DIRS = ("data", "responses", "verdicts", "analysis", "annotation", "figures")
"""Folder names of a run folder: no path may be joined with them outside the run-folder module."""


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            for statement in body:
                # every bare string statement is documentation (module, class, function, attribute docstrings)
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    ids.add(id(statement.value))
    return ids


def _texts(node: ast.AST) -> list[str]:
    """The literal text of a string constant or the literal parts of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    return []


def layout_literals(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every run-layout literal in Python source (file names anywhere, folders in path joins)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant | ast.JoinedStr) and id(node) not in docs:
            for text in _texts(node):
                if " " in text.strip():  # prose (a message naming a file), not a path
                    continue
                for name in LAYOUT_FILES:
                    if name in text:
                        found.append((node.lineno, text))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for text in _texts(node.right):
                if text.strip("/").split("/")[0] in LAYOUT_DIRS:
                    found.append((node.lineno, text))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("glob", "rglob", "joinpath"):
            for arg in node.args:
                for text in _texts(arg):
                    if any(part in LAYOUT_DIRS for part in text.split("/")) or any(n in text for n in LAYOUT_FILES):
                        found.append((node.lineno, text))
    return sorted(set(found))


def _notebook_source(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = []
    for cell in cells:
        if cell["cell_type"] == "code":
            lines = "".join(cell["source"]).splitlines()
            code += [line for line in lines if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(code)


def test_the_checker_finds_what_it_looks_for():
    bad = 'x = run_dir / "responses" / slug\ny = f"{run}/summary.json"\nz = folder.glob("verdicts/*.jsonl")\n'
    bad += 'page = run / "index.html"\ng = folder / "grid.json"\nlabels = sample.glob("*.labels.jsonl")\n'
    assert [line for line, _ in layout_literals(bad)] == [1, 2, 3, 4, 5, 6]
    fine = '"""run.json is documented here."""\nkey = {"responses": 3}\nname = "data"\nerror = "no run.json here"\n'
    assert layout_literals(fine) == []


@pytest.mark.parametrize(
    "path",
    sorted(p for p in PACKAGE.rglob("*.py") if p != OWNER) + sorted((ROOT / "notebooks").glob("*.ipynb")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_no_run_layout_literal_outside_the_run_folder_module(path: Path):
    source = _notebook_source(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")
    found = layout_literals(source)
    assert not found, f"{path.relative_to(ROOT)} spells the run layout (use airbench_nb.run_folder): {found}"


def test_import_layers_hold():
    """The layers of docs/architecture.md, as import-linter contracts in pyproject.toml: no upward import."""
    import subprocess
    import sys
    from pathlib import Path as _Path

    # in a process of its own: import-linter configures logging, which would silence the other tests' caplog
    lint = _Path(sys.executable).with_name("lint-imports")
    done = subprocess.run(  # noqa: S603 - the venv's own tool
        [str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Contracts: 1 kept, 0 broken." in done.stdout


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """No module imports, directly or not, a module that imports it (lazy imports inside functions count; imports
    for type checkers alone, under ``if TYPE_CHECKING:``, do not run and do not count)."""
    import grimp

    graph = grimp.build_graph("airbench_nb", exclude_type_checking_imports=True)
    edges = {
        m: {i for i in graph.find_modules_directly_imported_by(m) if i.startswith("airbench_nb")} for m in graph.modules
    }
    assert _cycles(edges) == []
