"""The tiered sound-source benchmark (Abdoli et al.), declared as a :class:`~airbench_nb.benchmarks.base.Benchmark`.

"What made that sound?" asked of LALMs, classifiers and CLAP (closed set) and open-vocabulary, each tier scored on
its own.
"""

from __future__ import annotations

from airbench_nb.benchmarks.base import Benchmark, register_benchmark
from airbench_nb.records import OpenSourceItem, SoundSourceItem

TIERED = register_benchmark(
    Benchmark(
        name="tiered",
        title="Tiered sound sources",
        item_kinds=(SoundSourceItem, OpenSourceItem),
        parts=("tiered",),
        metrics=("tier_closed_set", "tier_open_vocabulary"),
        analysis_sections=("tiered",),
        page_sections=("Tiered sound sources",),
        capability_tasks=(),
        doc="docs/tiered.md",
    )
)
"""The tiered benchmark, registered: its per-tier scores go through the ``Metric`` protocol
(:mod:`airbench_nb.scoring.tier_metrics`), its reasoning analysis is ``analysis.json``'s ``tiered`` section."""
