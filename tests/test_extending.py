"""docs/extending.md works: the ```python blocks of each section run, in order, in a scratch folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def sections() -> dict[str, list[str]]:
    """``{section title: [python blocks]}`` of the page, for the sections that have code."""
    found: dict[str, list[str]] = {}
    title = ""
    for part in re.split(r"^(## .+)$", DOC.read_text(encoding="utf-8"), flags=re.M):
        if part.startswith("## "):
            title = part[3:].strip()
            continue
        blocks = re.findall(r"^```python\n(.*?)^```", part, flags=re.M | re.S)
        if blocks:
            found[title] = blocks
    return found


def test_the_page_has_worked_examples():
    assert {"Add a metric"} <= set(sections())


@pytest.mark.parametrize("title", sorted(sections()))
def test_example_runs(title, tmp_path, monkeypatch):
    from airbench_nb.records import ChatItem, FoundationItem
    from airbench_nb.scoring import metrics

    monkeypatch.chdir(tmp_path)
    # the examples register things: put the registries back afterwards
    monkeypatch.setattr(metrics, "METRICS", dict(metrics.METRICS))
    monkeypatch.setattr(ChatItem, "METRICS", ChatItem.METRICS)
    monkeypatch.setattr(FoundationItem, "METRICS", FoundationItem.METRICS)
    namespace: dict = {"__name__": f"extending_{title.lower().replace(' ', '_')}"}
    for block in sections()[title]:
        exec(compile(block, f"{DOC.name}: {title}", "exec"), namespace)  # noqa: S102 - the page's own examples
