"""The benchmarks of the kit, one registration module each: what a benchmark builds, scores, analyses and shows.

:mod:`~airbench_nb.benchmarks.base` holds the :class:`Benchmark` declaration and its registry; importing this package
registers the kit's benchmarks, in this order: :mod:`~airbench_nb.benchmarks.airbench` (AIR-Bench),
:mod:`~airbench_nb.benchmarks.sseu` (SSEU-Bench), :mod:`~airbench_nb.benchmarks.ugbench` (UG-Bench) and
:mod:`~airbench_nb.benchmarks.tiered` (the tiered sound-source benchmark), then
:mod:`~airbench_nb.benchmarks.choice_qa` (MMAU, MMAR and MMSU, single-choice audio QA from their releases). A new
benchmark is one more module that calls :func:`register_benchmark` (and registers its builder parts, metrics, analysis
sections and page sections (:mod:`airbench_nb.pages`) where they live).
"""

# isort: off
# The registration modules, imported in pipeline order (the order of records.ITEM_KINDS): it is BENCHMARKS' order.
from airbench_nb.benchmarks.airbench import AIRBENCH
from airbench_nb.benchmarks.sseu import SSEU
from airbench_nb.benchmarks.ugbench import UGBENCH
from airbench_nb.benchmarks.tiered import TIERED
from airbench_nb.benchmarks.choice_qa import MMAR, MMAU, MMSU

# isort: on
from airbench_nb.benchmarks.base import (
    BENCHMARKS,
    SHARED_ANALYSIS_SECTIONS,
    SHARED_PAGE_SECTIONS,
    Benchmark,
    benchmark_for,
    benchmark_of_kind,
    kind_of,
    register_benchmark,
)

__all__ = [
    "AIRBENCH",
    "BENCHMARKS",
    "MMAR",
    "MMAU",
    "MMSU",
    "SHARED_ANALYSIS_SECTIONS",
    "SHARED_PAGE_SECTIONS",
    "SSEU",
    "TIERED",
    "UGBENCH",
    "Benchmark",
    "benchmark_for",
    "benchmark_of_kind",
    "kind_of",
    "register_benchmark",
]
