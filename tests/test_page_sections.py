"""The landing page's sections are registrations: a benchmark's section shows without editing report_page."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airbench_nb.benchmarks import BENCHMARKS, SHARED_PAGE_SECTIONS, Benchmark, register_benchmark
from airbench_nb.pages import (
    KIT_PAGE_SECTIONS,
    PAGE_CSS,
    PAGE_SECTIONS,
    PageInputs,
    PageSection,
    page_section_for,
    register_page_section,
)
from airbench_nb.pages.cells import interval_cell
from airbench_nb.records import RunInfo
from airbench_nb.report_page import write_report_page

EXAMPLE = Path(__file__).resolve().parents[1] / "reports" / "example"
NOT_IN_EXAMPLE = ("mmau", "mmar", "mmsu")
"""Benchmarks the committed example run has no items of."""
SECTIONS_NOT_IN_EXAMPLE = ("Controls", "Perturbations", "Stability", "Calibration", "Judge panel", "Mapped Chat scores")
"""Sections of the benchmarks in the example whose items the example run was built without (no controls, no
perturbed copies, no sampled answers, no model giving option probabilities and only baselines on the tiered tier A,
one judgement of one Chat judge per answer, no judge mapping)."""


@pytest.fixture
def registries() -> Iterator[None]:
    """Restore BENCHMARKS and PAGE_SECTIONS as they were, whatever the test registered."""
    benchmarks, sections = dict(BENCHMARKS), dict(PAGE_SECTIONS)
    try:
        yield
    finally:
        BENCHMARKS.clear()
        BENCHMARKS.update(benchmarks)
        PAGE_SECTIONS.clear()
        PAGE_SECTIONS.update(sections)


def _run(folder: Path) -> Path:
    folder.mkdir(parents=True)
    now = datetime.now(UTC)
    info = RunInfo(run_id=folder.name, started=now, ended=now, status="ok", notebooks=[], git_commit="abc123")
    (folder / "run.json").write_text(info.model_dump_json(indent=1))
    return folder


def _headings(html: str) -> list[str]:
    return re.findall(r"<h2>([^<]+)</h2>", html)


def test_a_registered_section_of_a_new_benchmark_shows_in_the_benchmarks_order(tmp_path: Path, registries: None):
    seen: list[PageInputs] = []

    def render(inputs: PageInputs) -> str:
        seen.append(inputs)
        return f"<p>beeps of <code>{inputs.run.run_id}</code></p>"

    register_page_section(PageSection(title="Beep-Bench", render=render, markdown=lambda _: "Beeps: none."))
    register_benchmark(Benchmark("beep", "Beep-Bench", (), (), (), (), ("Beep-Bench",), ()))
    index, readme = write_report_page(_run(tmp_path / "run-1"))
    html = index.read_text()
    assert "<h2>Beep-Bench</h2>\n<p>beeps of <code>run-1</code></p>" in html  # inserted as trusted HTML
    shared = list(SHARED_PAGE_SECTIONS)
    assert _headings(html) == [*shared[:2], "Main table", "Beep-Bench", *shared[2:]]  # after AIR-Bench's
    assert len(seen) == 1 and seen[0].folder.path == tmp_path / "run-1" and seen[0].analysis is None
    assert seen[0].scores is None and seen[0].run.git_commit == "abc123"
    assert "## Beep-Bench\n\nBeeps: none.\n" in readme.read_text()


def test_a_section_that_renders_none_is_left_out(tmp_path: Path, registries: None):
    register_page_section(PageSection(title="Silent", render=lambda _: None))
    register_benchmark(Benchmark("silent", "Silent", (), (), (), (), ("Silent",), ()))
    index, readme = write_report_page(_run(tmp_path / "run"))
    assert "Silent" not in index.read_text() and "Silent" not in readme.read_text()


def test_an_unregistered_section_raises_and_names_the_benchmark(tmp_path: Path, registries: None):
    register_benchmark(Benchmark("ghost", "Ghost", (), (), (), (), ("Ghost table",), ()))
    with pytest.raises(KeyError, match=r"benchmark 'ghost' declares page section 'Ghost table', which is not regis"):
        write_report_page(_run(tmp_path / "run"))
    registered = "Main table, Controls, Perturbations, Stability, Calibration, Judge panel, Mapped Chat scores"
    with pytest.raises(KeyError, match=f"no page section 'Ghost table'; registered: {registered}"):
        page_section_for("Ghost table")


def test_the_fixture_restored_the_registries():
    assert list(BENCHMARKS) == ["airbench", "sseu", "ugbench", "tiered", "mmau", "mmar", "mmsu"]
    assert list(PAGE_SECTIONS) == [
        "Main table",
        "Controls",
        "Perturbations",
        "Stability",
        "Calibration",
        "Judge panel",
        "Mapped Chat scores",
        "SSEU-Bench",
        "UG-Bench",
        "Tiered sound sources",
        "MMAU",
        "MMAR",
        "MMSU",
        "Clustered intervals",
    ]


def test_the_example_run_shows_every_built_in_section_and_the_shared_css(tmp_path: Path):
    folder = tmp_path / "example"
    for path in EXAMPLE.rglob("*"):
        if path.is_file():
            target = folder / path.relative_to(EXAMPLE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    index, _ = write_report_page(folder)
    html = index.read_text()
    # The example run was made before MMAU, MMAR and MMSU were added: it holds none of their items, and a section with
    # nothing to show is left out (their sections are shown by tests/test_mcq_benchmarks.py).
    sections = [
        t
        for b in BENCHMARKS.values()
        if b.name not in NOT_IN_EXAMPLE
        for t in b.page_sections
        if t not in SECTIONS_NOT_IN_EXAMPLE
    ]
    shared = list(SHARED_PAGE_SECTIONS)
    # then the kit's own: the example's SSEU-Bench items share utterances, so its intervals were clustered
    assert _headings(html) == shared[:2] + sections + list(KIT_PAGE_SECTIONS) + shared[2:]
    assert "utterance (every SNR and prompting mode of one spoken sentence)" in html
    assert PAGE_CSS in html and "Tier A: LALMs choosing one lettered class" in html
    assert json.loads((folder / "run.json").read_text())["run_id"] in html


def test_an_interval_cell_is_scaled_and_a_missing_value_is_a_dash():
    assert interval_cell(0.5, (0.25, 0.75), 100.0) == "50.0 [25.0, 75.0]"
    assert interval_cell(0.5, (None, 0.75), digits=2) == "0.50"
    assert interval_cell(None, None) == "–"
