"""MMAU (test-mini), MMAR and MMSU, declared as three :class:`~airbench_nb.benchmarks.base.Benchmark` values.

Single-choice audio QA from released data (no builder part: the items come from the releases' rows,
:mod:`airbench_nb.records.choice_qa_rows`). Each benchmark is its item kind (:mod:`airbench_nb.records.choice_qa`),
its metric (:mod:`airbench_nb.scoring.choice_qa`: the release's own script as ``official``, the kit's ``strict``
beside), its section of ``analysis.json`` and its section of the landing page (:mod:`airbench_nb.analysis.choice_qa`,
:mod:`airbench_nb.pages.choice_qa`).

How the kinds are asked and answered they declare on their classes: MMAU's and MMAR's scripts match the answer's
words against the options' words, so their kinds are ``ANSWERED_BY_TEXT``: a model is asked for the text of an option
(:data:`airbench_nb.prompts.TEXT_ANSWER_TEMPLATE`), the oracle answers the gold option's text, ``first`` the first
option's text and ``random`` a seeded option's text (:mod:`airbench_nb.models.baselines`). MMSU's script reads a
letter: its items are asked and answered as every single-choice item is.
"""

from __future__ import annotations

import logging

from airbench_nb.benchmarks.base import Benchmark, register_benchmark
from airbench_nb.records import MMARItem, MMAUItem, MMSUItem

logger = logging.getLogger(__name__)


def _declare(name: str, title: str, item_kind: type[MMAUItem | MMARItem | MMSUItem]) -> Benchmark:
    """Register one of the three: its kind, its metric ``<name>_accuracy``, its analysis and page sections."""
    return register_benchmark(
        Benchmark(
            name=name,
            title=title,
            item_kinds=(item_kind,),
            parts=(),
            metrics=item_kind.METRICS,
            analysis_sections=(name,),
            page_sections=(name.upper(),),
            capability_tasks=(),
            doc="docs/choice-qa.md",
        )
    )


MMAU = _declare("mmau", "MMAU (test-mini)", MMAUItem)
"""MMAU, registered."""
MMAR = _declare("mmar", "MMAR", MMARItem)
"""MMAR, registered."""
MMSU = _declare("mmsu", "MMSU", MMSUItem)
"""MMSU, registered."""

__all__ = ["MMAR", "MMAU", "MMSU"]
