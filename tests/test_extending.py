"""docs/extending.md works: the ```python blocks of each section run, in order, in a scratch folder."""

from __future__ import annotations

import re
from pathlib import Path

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


EXPECTED = (
    "Add a builder part",
    "Add a model backend",
    "Add a model family",
    "Add a judge",
    "Add a metric",
    "Add an analysis section",
    "Add a notebook",
    "Add a page section",
)
"""The sections the page must have, each with a worked example."""


def test_the_page_has_worked_examples():
    assert tuple(sections()) == EXPECTED


def test_the_examples_run_in_order(tmp_path, monkeypatch):
    """The page's examples, run as a reader would: one session, in order (later sections use what earlier made)."""
    from airbench_nb.benchmarks import BENCHMARKS
    from airbench_nb.builders import parts
    from airbench_nb.judge import registry
    from airbench_nb.models import hf, specs
    from airbench_nb.pages import PAGE_SECTIONS
    from airbench_nb.records import ChatItem, FoundationItem
    from airbench_nb.scoring import metrics

    monkeypatch.chdir(tmp_path)
    # the examples register things: the registries are put back afterwards
    monkeypatch.setattr(metrics, "METRICS", dict(metrics.METRICS))
    monkeypatch.setattr(specs, "BACKENDS", dict(specs.BACKENDS))
    monkeypatch.setattr(hf, "ADAPTERS", dict(hf.ADAPTERS))
    monkeypatch.setattr(registry, "_JUDGES", dict(registry._JUDGES))
    monkeypatch.setattr(ChatItem, "METRICS", ChatItem.METRICS)
    monkeypatch.setattr(FoundationItem, "METRICS", FoundationItem.METRICS)
    builder_parts = dict(parts.PARTS)  # build() holds the dict itself: it is put back in place
    benchmarks, page_sections = dict(BENCHMARKS), dict(PAGE_SECTIONS)  # so does the report page
    namespace: dict = {"__name__": "extending_examples"}
    try:
        for title, blocks in sections().items():
            for block in blocks:
                exec(compile(block, f"{DOC.name}: {title}", "exec"), namespace)  # noqa: S102 - the page's own examples
    finally:
        parts.PARTS.clear()
        parts.PARTS.update(builder_parts)
        BENCHMARKS.clear()
        BENCHMARKS.update(benchmarks)
        PAGE_SECTIONS.clear()
        PAGE_SECTIONS.update(page_sections)
