"""MMAU (test-mini), MMAR and MMSU, declared as three :class:`~airbench_nb.benchmarks.base.Benchmark` values.

Single-choice audio QA from released data (no builder part: the items come from the releases' rows,
:mod:`airbench_nb.records.choice_qa_rows`). Each benchmark is its item kind (:mod:`airbench_nb.records.choice_qa`),
its metric (:mod:`airbench_nb.scoring.choice_qa`: the release's own script as ``official``, the kit's ``strict``
beside), its section of ``analysis.json`` and its section of the landing page (:mod:`airbench_nb.analysis.choice_qa`,
:mod:`airbench_nb.pages.choice_qa`).

How the kinds are asked and answered is registered here. MMAU's and MMAR's scripts match the answer's words against
the options' words, so a model is asked for the text of an option (:data:`TEXT_ANSWER_TEMPLATE`), the oracle answers
the gold option's text, ``first`` the first option's text and ``random`` a seeded option's text (``dsp`` measures
nothing these questions ask: it cannot tell). MMSU's script reads a letter: its items are asked and answered as every
single-choice item is (lettered options, the oracle's gold letter, ``first``'s ``A``).
"""

from __future__ import annotations

import hashlib
import logging

from airbench_nb.benchmarks.base import Benchmark, register_benchmark
from airbench_nb.models.base import Prompt
from airbench_nb.models.baselines import CANNOT_TELL, Baseline, baseline_guess, oracle_answer
from airbench_nb.prompts import PromptSet, kind_prompts
from airbench_nb.records import MMARItem, MMAUItem, MMSUItem

logger = logging.getLogger(__name__)

TEXT_ANSWER_TEMPLATE = """{question}
Options:
{options}
Answer with the text of the correct option, exactly as it is written above, and nothing else."""
"""The prompt of an MMAU or MMAR item: the question, its options one per line (unlettered: the official scoring
reads the option's words, not a letter), and the request for the option's text."""


@kind_prompts.register(MMAUItem)
@kind_prompts.register(MMARItem)
def text_answer_prompt(item: MMAUItem | MMARItem, prompts: PromptSet) -> list[str]:
    """The user text of an MMAU or MMAR item (:data:`TEXT_ANSWER_TEMPLATE`; the prompt set does not change it)."""
    options = "\n".join(f"- {choice}" for choice in item.choices)
    return [TEXT_ANSWER_TEMPLATE.format(question=item.question, options=options)]


@oracle_answer.register(MMAUItem)
@oracle_answer.register(MMARItem)
def _oracle_option_text(item: MMAUItem | MMARItem, turn: int = 0) -> str:
    return item.choices[item.answer]


@baseline_guess.register(MMAUItem)
@baseline_guess.register(MMARItem)
def _guess_option_text(item: MMAUItem | MMARItem, baseline: Baseline, prompt: Prompt) -> str:
    if baseline.name == "first":
        return item.choices[0]
    if baseline.name == "random":
        digest = hashlib.sha256(f"{baseline.seed}:{item.uid}".encode()).digest()
        return item.choices[int.from_bytes(digest[:4], "big") % len(item.choices)]
    return CANNOT_TELL  # dsp measures nothing these questions ask


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

__all__ = ["MMAR", "MMAU", "MMSU", "TEXT_ANSWER_TEMPLATE", "text_answer_prompt"]
