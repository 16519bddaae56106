"""The :class:`Benchmark` declaration and its registry.

A benchmark is a set of registrations, declared in one place: its item kinds (the record classes of its manifests),
its builder parts (:mod:`airbench_nb.builders.parts`), its metrics (names registered in
:mod:`airbench_nb.scoring.metrics`), its sections of ``analysis.json`` (:data:`airbench_nb.analysis.report.SECTIONS`),
its sections of a run's landing page (titles registered in :data:`airbench_nb.pages.PAGE_SECTIONS`) and the tasks
it places in UG-Bench's capability map (ids of ``data_manifests/ugbench_capabilities.json``). Every item kind belongs
to exactly one benchmark; what no benchmark owns (judge-human agreement, the injection screen, the page's run
information) is listed in :data:`SHARED_ANALYSIS_SECTIONS` and :data:`SHARED_PAGE_SECTIONS`.

The names are checked against their registries by the test suite (``tests/test_benchmarks.py``), not here: this
module sits below scoring, analysis and the pages, so that each of them may ask it which benchmark a kind belongs to.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from airbench_nb.builders.parts import BuilderPart, part_for
from airbench_nb.records import Record, kind_name, register_item_kind
from airbench_nb.registries import lookup

logger = logging.getLogger(__name__)

SHARED_ANALYSIS_SECTIONS: tuple[str, ...] = ("agreement", "injection", "stability")
"""Sections of ``analysis.json`` that no benchmark owns: judge-human agreement on an annotated sample, the
answers the injection screen flagged, over every kind, and decoding stability over the sampled answers of every
choice item (AIR-Bench's Foundation items and the choice-QA benchmarks'; its page section is AIR-Bench's)."""

SHARED_PAGE_SECTIONS: tuple[str, ...] = (
    "What was run",
    "Warnings",
    "Real models",
    "Figures",
    "Notebooks",
    "Raw files",
)
"""Sections of a run's landing page that no benchmark owns: the ``<h2>`` headings of the page's shell
(:data:`airbench_nb.report_page.TEMPLATE`), in page order; the benchmarks' registered sections go after Warnings
(before Real models: every real model's numbers, apart from the baselines)."""


def kind_of(record: type[Record]) -> str:
    """The manifest kind of an item class (the default of its ``kind`` field: ``foundation``, ``scene``, ...).

    Raises:
        TypeError: For a class that is not an item kind (:func:`airbench_nb.records.kind_name`).
    """
    return kind_name(record)  # type: ignore[arg-type]  # kind_name refuses what is not an ItemBase


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of the kit: what it builds, scores, analyses and shows."""

    name: str
    """Unique short name (``airbench``, ``sseu``, ...)."""
    title: str
    """Name for people (``AIR-Bench``)."""
    item_kinds: tuple[type[Record], ...]
    """Record classes of its items, one per manifest kind (:func:`kind_of`)."""
    parts: tuple[str, ...]
    """Names of its builder parts (:data:`airbench_nb.builders.parts.PARTS`), in build order."""
    metrics: tuple[str, ...]
    """Names of the metrics that score its items (:data:`airbench_nb.scoring.metrics.METRICS`)."""
    analysis_sections: tuple[str, ...]
    """Its sections of ``analysis.json`` (names of :data:`airbench_nb.analysis.report.SECTIONS`)."""
    page_sections: tuple[str, ...]
    """Its sections of a run's landing page, in page order: titles registered in
    :data:`airbench_nb.pages.PAGE_SECTIONS` (each its ``<h2>`` heading); the page places them after the shared What
    was run and Warnings, benchmark by benchmark in :data:`BENCHMARKS` order."""
    capability_tasks: tuple[str, ...]
    """Ids of its tasks in UG-Bench's capability map (``data_manifests/ugbench_capabilities.json``)."""
    doc: str = ""
    """Its page of the manual (``docs/<name>.md``), empty when it has none."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """Its manifest kinds, in declaration order."""
        return tuple(kind_of(record) for record in self.item_kinds)

    def builder_parts(self) -> list[BuilderPart]:
        """Its registered builder parts.

        Raises:
            KeyError: For a part name that is not registered.
        """
        return [part_for(name) for name in self.parts]


BENCHMARKS: dict[str, Benchmark] = {}
"""Registered benchmarks by name, in registration order."""


def register_benchmark(benchmark: Benchmark) -> Benchmark:
    """Register a benchmark (replacing one of that name, in its place), and return it.

    Its item kinds are registered with it (:func:`airbench_nb.records.register_item_kind`): from then on manifests
    of those kinds are read like the kit's own.

    Raises:
        TypeError: When one of its item kinds is not an item kind (:func:`airbench_nb.records.kind_name`).
        ValueError: When one of its item kinds, analysis sections or capability tasks belongs to another benchmark.
    """
    for other in BENCHMARKS.values():
        if other.name == benchmark.name:
            continue
        for what in ("kinds", "analysis_sections", "capability_tasks"):
            shared = set(getattr(benchmark, what)) & set(getattr(other, what))
            if shared:
                raise ValueError(
                    f"benchmark {benchmark.name!r}: {what.replace('_', ' ')} {sorted(shared)} belong to {other.name!r}"
                )
    for record in benchmark.item_kinds:
        register_item_kind(record)  # type: ignore[arg-type]  # refuses what is not an item kind
    BENCHMARKS[benchmark.name] = benchmark
    return benchmark


def benchmark_for(name: str) -> Benchmark:
    """The registered benchmark of a name.

    Raises:
        KeyError: For a name no benchmark is registered under (the message lists the known ones).
    """
    return lookup(BENCHMARKS, name, "benchmark")


def benchmark_of_kind(kind: str) -> Benchmark:
    """The benchmark an item kind belongs to.

    Raises:
        KeyError: For a kind no registered benchmark declares.
    """
    for benchmark in BENCHMARKS.values():
        if kind in benchmark.kinds:
            return benchmark
    raise KeyError(f"no registered benchmark has item kind {kind!r}")
