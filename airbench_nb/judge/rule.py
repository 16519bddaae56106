"""The rule judge (``rule``): Foundation answers read by :func:`~airbench_nb.judge.extract.extract_choice`.

It asks no model: every verdict is decided locally, and it abstains (``choice`` None, ``parse_error`` saying why)
when the answer does not name exactly one option. It applies to Foundation items, to the tiered benchmark's
closed-set items (``sound_source``, up to 26 options) and to MMAU, MMAR and MMSU items, not to Chat items. For a kind
asked for an option's text (``ANSWERED_BY_TEXT``: MMAU, MMAR), an answer that is one option's text or names
exactly one option's text (:func:`exact_option`) is that option before any letter is looked for: "C major" and
"The answer is D major" among the options "C major", "G major", "D major", "A minor" are the first and the third
option, not the letters C and D.

Options of one text (MMAU and MMAR repeat an option now and then: ``["four", "nine", "fourteen", "fourteen"]``) are
one answer, the first of them (:meth:`~airbench_nb.records.item.SingleChoiceItem.answer_option`): "fourteen" names
the third option, and the letter D of that item chooses it too. An empty option (four rows of MMAR) is no phrase and
is never named by its text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, cast

from airbench_nb.judge.base import BaseJudge, Task
from airbench_nb.judge.extract import extract_choice
from airbench_nb.prompts import prompt_hash
from airbench_nb.records import LETTERS, Response, SingleChoiceItem, Verdict, option_key

logger = logging.getLogger(__name__)


def _plain(text: str) -> str:
    """A text compared as an option: stripped of spaces, enclosing quotes and a final period, case folded."""
    return option_key(text)


def exact_option(text: str, choices: list[str]) -> int | None:
    """The one option the answer names by its text, or None (the letters are then read as for any item).

    The answer is that option's text (compared as :func:`_plain` says), or it holds the text of exactly one option
    as a phrase of whole words, an option found only inside another found option not counting ("a dog barking"
    names "a dog barking", not "a dog"). Options of one text are one option, the first of them; an empty option is
    never named.

    Args:
        text: The answer.
        choices: The item's options.
    """
    said = _plain(text)
    if not said:
        return None
    keys = [_plain(choice) for choice in choices]
    firsts = [k for k, key in enumerate(keys) if key and keys.index(key) == k]  # one option per text, none empty
    whole = [k for k in firsts if keys[k] == said]
    if len(whole) == 1:
        return whole[0]
    spans: dict[int, list[tuple[int, int]]] = {}
    for k in firsts:
        phrase = keys[k]
        if phrase:
            found = [m.span() for m in re.finditer(rf"(?<!\w){re.escape(phrase)}(?!\w)", said)]
            if found:
                spans[k] = found
    named = [
        k
        for k, found in spans.items()
        if any(
            not any(o != k and a <= start and end <= b and (a, b) != (start, end) for o in spans for a, b in spans[o])
            for start, end in found
        )
    ]
    return named[0] if len(named) == 1 else None


def rule_verdict(item: SingleChoiceItem, response: Response, judge: str = "rule") -> Verdict:
    """The rule judge's verdict on one Foundation response.

    Args:
        item: The Foundation item.
        response: The model's response to it.
        judge: The spec the verdict carries (an LLM judge reads with the rule first and records its own spec).
    """
    task = Task(item, response)
    if response.error is not None or response.text is None:
        return task.verdict(judge, parse_error=f"no response: {response.error}")
    exact = exact_option(response.text, item.choices) if item.ANSWERED_BY_TEXT else None
    if exact is not None:
        return task.verdict(
            judge,
            raw=f"rule: the answer names the text of option {LETTERS[exact]}",
            choice=exact,
            correct=item.chose_gold(exact),
            prompt_hash=prompt_hash(response.text),
        )
    extraction = extract_choice(response.text, item.choices)
    choice = None if extraction.choice is None else item.answer_option(extraction.choice)
    return task.verdict(
        judge,
        raw=f"rule: {extraction.reason}",
        choice=choice,
        correct=None if choice is None else item.chose_gold(choice),
        parse_error=None if extraction.choice is not None else f"rule abstained: {extraction.reason}",
        prompt_hash=prompt_hash(response.text or ""),
    )


class RuleJudge(BaseJudge):
    """Foundation choice extraction; decides every task locally (see the module docstring)."""

    name: ClassVar[str] = "rule"
    usage_text: ClassVar[str] = "rule"
    kinds: ClassVar[frozenset[str]] = frozenset({"foundation", "sound_source", "mmau", "mmar", "mmsu"})
    deterministic: ClassVar[bool] = True
    decides_tiers: ClassVar[frozenset[str]] = frozenset({"A"})
    """It reads the option a tier A answer chose."""

    def __init__(self, spec: str = "rule") -> None:
        """A rule judge (its spec is ``rule``)."""
        super().__init__(spec)

    def decide(self, task: Task) -> Verdict | None:
        """The rule's verdict (never None)."""
        item = cast(SingleChoiceItem, task.item)  # judge_tasks hands it only items of its kinds (single-choice)
        return rule_verdict(item, task.response, judge=self.spec)

    def ask(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Verdict]:
        """Never needed (:meth:`decide` decides every task); the rule's verdicts all the same."""
        return [verdict for task in tasks if (verdict := self.decide(task)) is not None]
