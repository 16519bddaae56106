"""docs/extending.md works: the ```python blocks of each section run, in order, in a scratch folder."""

from __future__ import annotations

import re
import sys
import types
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
    "Add a benchmark",
)
"""The sections the page must have, each with a worked example."""


def in_place_registries() -> list[dict]:
    """The registries a benchmark adds to that other modules hold by name (restored in place after a test)."""
    from airbench_nb.analysis.registry import SECTIONS
    from airbench_nb.benchmarks import BENCHMARKS
    from airbench_nb.pages import PAGE_SECTIONS
    from airbench_nb.records import ITEM_CLASSES

    return [BENCHMARKS, ITEM_CLASSES, SECTIONS, PAGE_SECTIONS]


def test_the_page_has_worked_examples():
    assert tuple(sections()) == EXPECTED


def test_the_examples_run_in_order(tmp_path, monkeypatch):
    """The page's examples, run as a reader would: one session, in order (later sections use what earlier made)."""
    from airbench_nb.builders import parts
    from airbench_nb.judge import registry
    from airbench_nb.models import hf, specs
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
    # registries read through other modules' names are put back in place
    held = [parts.PARTS, *in_place_registries()]
    saved = [dict(registry) for registry in held]
    # one module, as a reader's notebook or script is (pydantic resolves a generic model's names through it)
    module = types.ModuleType("extending_examples")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace = module.__dict__
    try:
        for title, blocks in sections().items():
            for block in blocks:
                exec(compile(block, f"{DOC.name}: {title}", "exec"), namespace)  # noqa: S102 - the page's own examples
    finally:
        for registry, before in zip(held, saved, strict=True):
            registry.clear()
            registry.update(before)


def test_the_benchmark_runs_as_a_plugin_through_airbench_nb_run(tmp_path):
    """ "Add a benchmark" as a user follows it: its module saved as a file, named in AIRBENCH_NB_PLUGINS, and the
    page's command run in a shell: every notebook's kernel loads it, and the run's page shows its section."""
    import json
    import os
    import subprocess

    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Add a benchmark") :]
    module = re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S)[0]
    (command,) = re.findall(r"^```bash\n(.*?)^```", section, flags=re.M | re.S)
    (tmp_path / "beeps_bench.py").write_text(module, encoding="utf-8")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "AIRBENCH_CACHE": str(tmp_path / "cache"),
    }
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = tmp_path / "reports" / "beeps"
    page = (run / "index.html").read_text(encoding="utf-8")
    assert "<h2>Beep counting</h2>" in page
    assert "<h2>Main table</h2>" not in page  # no AIR-Bench item: AIR-Bench's section is left out
    assert "No figures (the analyses of this run drew none)" in page
    assert re.search(r"<td>baseline:first</td>\s*<td class=\"num\">100</td>\s*<td class=\"num\">0</td>", page), page
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    oracle = summary["baseline:oracle | chat judge -"]["strict"]["metric_sections"]["beep_accuracy"]
    assert oracle["average"]["value"] == 1.0 and oracle["average"]["n"] == 4
    analysis = json.loads((run / "analysis" / "analysis.json").read_text(encoding="utf-8"))
    assert analysis["beeps"]["baseline:first"] == {"1": 1.0, "2": 0.0, "3": 0.0, "4": 0.0}
    assert json.loads((run / "run.json").read_text(encoding="utf-8"))["status"] == "ok"
