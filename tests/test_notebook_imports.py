"""The notebook stack is imported without jsonschema's optional IRI grammars, and notebooks still validate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_papermill_imports_without_rfc3987_syntax_and_notebooks_validate():
    code = """
import sys
from airbench_nb.notebook_imports import light_jsonschema
light_jsonschema()
import nbformat, papermill
assert "rfc3987_syntax" not in sys.modules, "the IRI grammars were imported"
nb = nbformat.read("notebooks/03_run_model.ipynb", as_version=4)
nbformat.validate(nb)
bad = nbformat.from_dict({**nb, "cells": [{"cell_type": "code", "source": 1}]})
try:
    nbformat.validate(bad)
except nbformat.ValidationError:
    pass
else:
    raise AssertionError("an invalid notebook validated")
import rfc3987_syntax  # a later import of it works as usual
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
