"""The repository is ruff clean: package, tests, speed scripts (bench/) and notebooks."""

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent


def _ruff() -> list[str]:
    exe = Path(sys.executable).parent / "ruff"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("ruff")
    if not found:
        pytest.fail("ruff is not installed: it is part of the dev extra (pip install -e .[dev])")
    return [found]


def test_ruff_check_clean():
    result = subprocess.run([*_ruff(), "check", "--no-cache", str(REPO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_clean():
    result = subprocess.run([*_ruff(), "format", "--check", "--no-cache", str(REPO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_notebooks_follow_template():
    """One `parameters` cell; outputs committed only for the tutorial."""
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{path.name}: expected one cell tagged 'parameters', found {len(tagged)}"
        assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# "), f"{path.name}: title"
        has_outputs = any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
        if path.name == "00_tutorial.ipynb":
            assert has_outputs, "the tutorial is committed with outputs (nbval checks them)"
        else:
            assert not has_outputs, f"{path.name} must be committed without outputs"


def test_environment_yml_in_step_with_pyproject():
    """Every dependency of pyproject.toml (and its dev extra) is in environment.yml with the same lower bound."""
    import re
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    env = (REPO / "environment.yml").read_text()
    for requirement in wanted:
        name, bound = re.match(r"([A-Za-z0-9_.\-]+)(.*)", requirement).groups()
        if name == "torch":
            assert re.search(r"- torch==\S+", env), "environment.yml pins torch"
            continue
        assert f"- {name}{bound}" in env, f"environment.yml lacks {requirement}"
