"""The registered sections of ``analysis.json``: :class:`AnalysisSection`, :data:`SECTIONS`, the register.

A section is one question asked of a run (:class:`~airbench_nb.analysis.report.RunAnalysis`), answered as a
:class:`~airbench_nb.analysis.section.Section`. The kit's own sections are methods of ``RunAnalysis`` and typed
fields of :class:`~airbench_nb.analysis_report.AnalysisReport`; a benchmark adds its own here, with the pydantic
model of its data, and :meth:`RunAnalysis.write <airbench_nb.analysis.report.RunAnalysis.write>` computes it with
the others, checks its data against that model and writes it under its name (read back with
:meth:`AnalysisReport.extra_section <airbench_nb.analysis_report.AnalysisReport.extra_section>`). A benchmark
declares the names of its sections (:attr:`airbench_nb.benchmarks.Benchmark.analysis_sections`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from airbench_nb.analysis.section import Section
from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.registries import lookup

if TYPE_CHECKING:
    from airbench_nb.analysis.report import RunAnalysis

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnalysisSection:
    """One registered section of ``analysis.json``."""

    name: str
    """Its key in ``analysis.json`` (the :attr:`Section.name` its ``compute`` returns)."""
    compute: Callable[[RunAnalysis], Section]
    """Answers the question for a run (given the run's :class:`RunAnalysis`)."""
    payload: type[BaseModel] | None = None
    """The model of its data (a section that is not the kit's); None for the kit's own, whose models are fields of
    :class:`AnalysisReport`, or for data kept as plain JSON."""
    kit: bool = False
    """Whether it is one of the kit's own sections (a typed field of :class:`AnalysisReport`)."""
    optional: bool = False
    """Whether it is left out of ``analysis.json`` when it has nothing to show (neither its key nor its reason is
    written): a section about derived items a run holds only when asked for (the audio-reliance controls), so that
    a run without them writes what it wrote before the section existed."""
    late: bool = False
    """Whether it reads the score table or the translations' scores, which a worker may still be computing
    (:mod:`airbench_nb.scoring.ahead`): such sections are computed after the others, so that the run's analysis
    waits for the worker last. Only the order of computing changes, never a result or the report's order."""

    def checked(self, data: Any) -> Any:
        """``data`` checked against :attr:`payload` (unchanged when it has none).

        Raises:
            ValueError: The data does not match the model; the message names the section and the fields.
        """
        if self.payload is None or not data:
            return data
        try:
            self.payload.model_validate(data)
        except ValueError as exc:
            kind = self.payload.__name__
            raise ValueError(f"analysis section {self.name!r}: its data is not a {kind}: {exc}") from exc
        return data


SECTIONS: dict[str, AnalysisSection] = {}
"""Registered sections of ``analysis.json`` by name, in report order: the kit's, then those benchmarks added."""


def register_analysis_section(
    name: str,
    compute: Callable[[RunAnalysis], Section],
    payload: type[BaseModel] | None = None,
    *,
    kit: bool = False,
    optional: bool = False,
    late: bool = False,
) -> AnalysisSection:
    """Register a section of ``analysis.json`` (replacing one of that name, in its place), and return it.

    Args:
        name: Its key in ``analysis.json``.
        compute: Computes it from a run's :class:`RunAnalysis`.
        payload: The pydantic model of its data, checked when it is written.
        kit: For the kit's own sections only (typed fields of :class:`AnalysisReport`).
        optional: Leave it out of ``analysis.json`` when it has nothing to show (:attr:`AnalysisSection.optional`).
        late: It reads the score table or the translations' scores: computed after the others
            (:attr:`AnalysisSection.late`).

    Raises:
        ValueError: When ``name`` is a field of :class:`AnalysisReport` (or its ``_detail``) and the section is not
            the kit's: the name is taken.
    """
    taken = name in AnalysisReport.model_fields or f"{name}_detail" in AnalysisReport.model_fields
    if taken and not kit:
        raise ValueError(f"analysis section {name!r}: the name is one of analysis.json's own fields")
    section = AnalysisSection(name, compute, payload, kit, optional, late)
    SECTIONS[name] = section
    return section


def analysis_section_for(name: str) -> AnalysisSection:
    """The registered section of a name.

    Raises:
        KeyError: For a name no section is registered under (the message lists the known ones).
    """
    return lookup(SECTIONS, name, "analysis section")


__all__ = ["SECTIONS", "AnalysisSection", "analysis_section_for", "register_analysis_section"]
