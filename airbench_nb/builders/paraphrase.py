"""Paraphrased questions: derived items asking an item's question in another of its task's phrasings.

A score that moves when the question is reworded measures the wording as much as the listening (MMAU, MMAR and MMSU
results move with paraphrase, arXiv 2510.04584). The kit's recipes already hold a versioned set of rewrites per task:
``phrasings.json`` (and ``multi.json``'s ``phrasings`` for the multi-clip tasks) lists at least five phrasings of
each Foundation task's question, one of which each built item was asked in, with placeholders (``{word}``,
``{event}``) filled from the item's ground truth. A paraphrased copy asks the same item in the next phrasings of its
list, the placeholders filled with the values read back from the item's own question:

- the item's phrasing is found by matching its question against each phrasing of its task (a placeholder matches
  any text; the same placeholder twice must match the same text), in the lists of the task and of its subtasks
  (``Sound_AQA_count``, ...); rewrite ``k`` (1, 2, ...) is the ``k``-th phrasing after it, cyclically, skipping any
  that reads the same as the question;
- uid ``f"{uid}@para-{k}"``; the same kind, task, audio, options and answer; ``question`` the rewrite; ``meta`` the
  original's plus ``perturbation_of`` (the original's uid), ``perturbation`` ``"paraphrase"`` (the curve's name),
  ``parameter`` ``k`` and ``measured`` ``{"value": None, "phrasing": <index in its list>, "question": <the
  rewrite>}``, so that the perturbation curves (:mod:`airbench_nb.analysis.perturbations`) pair it with its original
  and the scoring leaves it out like every perturbed copy; one line more in ``notes``.

An item whose question matches no phrasing of its task (a recipe edited since the build, an imported item), or whose
task has no phrasings, is not eligible (listed with the reason). The set is versioned by the recipes' SHA-256, which
``dataset.json`` records.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from airbench_nb.records.controls import PERTURBATION_OF_KEY

logger = logging.getLogger(__name__)

CURVE = "paraphrase"
"""The curve name paraphrased copies carry in ``meta.perturbation``."""
SEPARATOR = "@para-"
"""Between an item's uid and the rewrite's number in a paraphrased copy's uid."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class ParaphraseBuild:
    """What :func:`paraphrase_items` made."""

    items: list[Any] = field(default_factory=list)
    """The copies, item by item, each item's rewrites in order."""
    not_eligible: list[tuple[str, str]] = field(default_factory=list)
    """``(uid, reason)`` of the items no rewrite could be made of."""


def paraphrase_uid(uid: str, k: int) -> str:
    """Uid of rewrite ``k`` of item ``uid`` (``Speaker_Gender_Recognition-003@para-1``)."""
    return f"{uid}{SEPARATOR}{k}"


def _pattern(template: str) -> re.Pattern[str]:
    """A regex matching the phrasing with any text in each placeholder (a repeated one: the same text)."""
    parts: list[str] = []
    seen: set[str] = set()
    last = 0
    for m in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[last : m.start()]))
        name = m.group(1)
        parts.append(f"(?P={name})" if name in seen else f"(?P<{name}>.+?)")
        seen.add(name)
        last = m.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts), re.DOTALL)


def phrasing_of(question: str, phrasings: Sequence[str]) -> tuple[int, dict[str, str]] | None:
    """The index of the phrasing ``question`` was written in and its placeholders' values, or None."""
    for index, template in enumerate(phrasings):
        m = _pattern(template).fullmatch(question)
        if m is not None:
            return index, m.groupdict()
    return None


def rewrites(question: str, phrasings: Sequence[str], n: int) -> list[tuple[int, str]]:
    """Up to ``n`` rewrites of ``question``: ``(index, text)`` of the phrasings after its own, cyclically.

    Raises:
        ValueError: When the question matches none of the phrasings.
    """
    found = phrasing_of(question, phrasings)
    if found is None:
        raise ValueError("its question matches none of its task's phrasings")
    own, fills = found
    out: list[tuple[int, str]] = []
    for step in range(1, len(phrasings)):
        index = (own + step) % len(phrasings)
        try:
            text = phrasings[index].format(**fills)
        except (KeyError, IndexError):  # a phrasing naming a placeholder the item's own does not fill
            continue
        if text != question and text not in (t for _, t in out):
            out.append((index, text))
        if len(out) == n:
            break
    return out


def task_phrasings(task: str, table: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """The phrasing lists of a task: its own, then its subtasks' (``<task>_<subtask>``), in the table's order."""
    return [list(v) for k, v in table.items() if k == task or k.startswith(f"{task}_")]


def paraphrase_items(items: Sequence[Any], table: Mapping[str, Sequence[str]], n: int) -> ParaphraseBuild:
    """``n`` paraphrased copies of each item (see the module docstring).

    Args:
        items: Single-choice items (their ``task`` and ``question`` are read); derived items are the caller's to
            leave out.
        table: Phrasing lists by task (and subtask) name: the recipes' ``phrasings`` and ``multi["phrasings"]``.
        n: Rewrites per item (fewer when the task has fewer other phrasings).

    Returns:
        A :class:`ParaphraseBuild`.
    """
    made = ParaphraseBuild()
    for item in items:
        lists = task_phrasings(str(item.task), table)
        if not lists:
            made.not_eligible.append((item.uid, f"task {item.task} has no phrasings in the recipes"))
            continue
        found: list[tuple[int, str]] | None = None
        for phrasings in lists:
            try:
                found = rewrites(item.question, phrasings, n)
                break
            except ValueError:
                continue
        if not found:
            made.not_eligible.append((item.uid, "its question matches none of its task's phrasings"))
            continue
        for k, (index, text) in enumerate(found, start=1):
            meta = {
                **item.meta,
                PERTURBATION_OF_KEY: item.uid,
                "perturbation": CURVE,
                "parameter": float(k),
                "measured": {"value": None, "phrasing": index, "question": text},
            }
            update = {
                "uid": paraphrase_uid(item.uid, k),
                "question": text,
                "meta": meta,
                "notes": [*item.notes, f"paraphrase {k} of {item.uid}: phrasing {index} of its task"],
            }
            made.items.append(type(item).model_validate({**item.model_dump(), **update}))
    if made.not_eligible:
        logger.info("%d item(s) not paraphrased (no matching phrasing)", len(made.not_eligible))
    return made
