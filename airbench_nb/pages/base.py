"""The page-section registry: what a section of a run's landing page reads, how it renders, and where it is found.

A section is a :class:`PageSection`: its ``<h2>`` title and a function from the run's typed files
(:class:`PageInputs`) to the HTML below the heading, or None to leave the section out of the page. A benchmark names
its sections in :attr:`airbench_nb.benchmarks.Benchmark.page_sections`; the module that renders a section registers
it with :func:`register_page_section` when imported, and :func:`airbench_nb.report_page.write_report_page` looks each
declared title up with :func:`page_section_for`. Each section renders from its own small Jinja2 template
(:func:`render_template`: autoescaped, undefined names refused), with tables inserted as trusted HTML.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.records import RunInfo
from airbench_nb.registries import lookup
from airbench_nb.run_folder import RunFolder
from airbench_nb.score_table import ScoreTable

if TYPE_CHECKING:
    import jinja2

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PageInputs:
    """What the sections of a run's landing page read: the run's typed files, each read once by the page."""

    folder: RunFolder
    """The run folder (for links to its files)."""
    run: RunInfo
    """Its ``run.json``."""
    analysis: AnalysisReport | None
    """Its ``analysis.json``, or None when notebook 05 did not write a readable one."""
    scores: ScoreTable | None
    """Its score table (``summary.json``), or None when scoring did not finish."""


@dataclass(frozen=True)
class PageSection:
    """One section of a run's landing page, below its ``<h2>`` heading."""

    title: str
    """The section's ``<h2>`` heading (the name a benchmark declares in its ``page_sections``)."""
    render: Callable[[PageInputs], str | None]
    """The section's HTML below the heading (trusted: escape what comes from the run), or None to leave it out."""
    markdown: Callable[[PageInputs], str | None] | None = None
    """Its Markdown below a ``##`` heading in ``README.md``, or None (also as a result) to leave it out there."""


PAGE_SECTIONS: dict[str, PageSection] = {}
"""Registered page sections by title, in registration order."""

KIT_PAGE_SECTIONS: tuple[str, ...] = ("Clustered intervals",)
"""Titles of the sections no benchmark declares (about every benchmark's scores), placed after the benchmarks'."""


def register_page_section(section: PageSection) -> PageSection:
    """Register a page section (replacing one of that title, in its place), and return it.

    Args:
        section: The section; its title is the name benchmarks declare.

    Returns:
        The section, so that a module may keep it under a name.
    """
    if section.title in PAGE_SECTIONS:
        logger.debug("page section %r registered again: replaced", section.title)
    PAGE_SECTIONS[section.title] = section
    return section


def page_section_for(title: str) -> PageSection:
    """The registered page section of a title.

    Raises:
        KeyError: For a title no section is registered under (the message lists the known ones).
    """
    return lookup(PAGE_SECTIONS, title, "page section")


@cache
def _template(source: str) -> jinja2.Template:
    """The compiled template of a source text (compiled once per text)."""
    import jinja2

    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return environment.from_string(source)


def render_template(source: str, **context: Any) -> str:
    """Render a section's Jinja2 template: autoescaped, an undefined name is an error.

    Args:
        source: The template's text (a module constant next to the section's render function).
        **context: Its names; HTML tables are passed as text and inserted with ``| safe``.

    Returns:
        The rendered HTML.
    """
    return _template(source).render(**context)
