"""Record named results in a notebook and read them back from the executed copy (scrapbook-style).

A notebook calls :func:`record` in its last cells; papermill keeps the output; a test or the report builder
calls :func:`read_results` on the executed notebook.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MIME = "application/vnd.airbench-nb.result+json"
"""Mime type under which results are stored in cell outputs."""


def record(name: str, value: Any) -> None:
    """Display ``value`` (JSON-serialisable) in the notebook and store it under ``name`` for later reading.

    Args:
        name: Result name, unique within the notebook.
        value: Any JSON-serialisable value.
    """
    from IPython.display import display

    payload = json.loads(json.dumps(value, default=str))
    text = f"{name} = {json.dumps(payload, indent=1, sort_keys=True)}"
    display({MIME: {"name": name, "value": payload}, "text/plain": text}, raw=True)


def read_results(notebook: str | Path) -> dict[str, Any]:
    """Read the values recorded with :func:`record` from an executed notebook.

    Args:
        notebook: Path of the executed ``.ipynb``.

    Returns:
        ``{name: value}``; a later record of the same name wins.
    """
    from airbench_nb.notebook_imports import light_jsonschema

    light_jsonschema()
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    results: dict[str, Any] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if MIME in data:
                results[data[MIME]["name"]] = data[MIME]["value"]
    return results
