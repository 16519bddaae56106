r"""MMAU, MMAR and MMSU scored: each benchmark's own script as the ``official`` protocol, the kit's ``strict`` beside.

Official rules, restated from each release's evaluation script (the kit runs none of them):

- **MMAU** (``evaluation.py`` of github.com/Sakshi113/MMAU) and **MMAR** (``code/evaluation.py`` of
  github.com/ddlBoJack/MMAR, the same function): :func:`official_word_match`. The words of a text are the
  distinct matches of ``\b\w+\b`` in its lower-cased form (Unicode word characters: ``light_switch`` is one word,
  ``G#`` is ``g``). A prediction is right when it has words, every word of the gold answer is among them, and none
  of them is a word of a wrong option that the gold answer does not have (an option whose words are exactly the
  gold's counts as the gold). Letters are not read: "B" is the word ``b``. Nothing is dropped: a prediction with no
  words counts wrong. The scripts skip rows without a prediction key: the kit leaves out, and counts, the items the
  model has no answer for (no response, an error).
- **MMSU** (``mmsu_evaluation.py`` of github.com/dingdongwang/MMSU_Bench): :func:`mmsu_official_read`, AIR-Bench's
  letter rule. The response is stripped and its newlines deleted; its first character if it is A, B, C or D, else
  its second-to-last if it is, is the letter; any other response is skipped (dropped from the denominator). The
  letter is right when that option's text, as released, equals ``answer_gt`` as released (no stripping; a letter
  past the item's options names no option). An empty response or the text ``None`` reads no letter but is not
  skipped: the script keeps the letter it read last, from an earlier row, and scores this row with it. The kit
  reproduces that in item order (:func:`resolve_carried`); a row of that kind before any letter was read stops
  the script (``NameError``): the kit counts it wrong and says so in its reason.

Strict (all three): the deciding judge's verdict (:func:`~airbench_nb.scoring.outcomes.strict_foundation`: the rule
judge first, which reads letters, stated answers and, for MMAU and MMAR, whose models are asked for an option's
text, an answer that is exactly one option's text); no response, an error, no verdict or an abstention counts
wrong.

Both protocols pool items: accuracy overall (the ``average``, the scripts' "Total Accuracy"), per ``task`` (MMAU's
task, MMAR's modality, MMSU's task name), per category (``categories``), per sub-category (``subsets``; MMSU's
``<category> / <sub-category>``, nested as its script nests them) and, for MMAU, per difficulty (``measures``,
``difficulty <level>``). Each entry has n, failures and a 95% percentile bootstrap interval (units resampled within
the entry; where items share a source recording, whole recordings too, the interval being the union of both).
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np

from airbench_nb.records import (
    MMAR_CATEGORIES,
    MMAR_MODALITIES,
    MMAU_DIFFICULTIES,
    MMAU_TASKS,
    MMSU_LETTERS,
    MMARItem,
    MMAUItem,
    MMSUItem,
    Response,
    Verdict,
    cluster_of,
)
from airbench_nb.score_table import ScoreSection
from airbench_nb.scoring.aggregate import _accuracy, _ratio, _resampled, _score
from airbench_nb.scoring.metric_base import BaseMetric
from airbench_nb.scoring.outcomes import (
    failure_text,
    foundation_verdicts,
    injection_counts,
    screened,
    strict_foundation,
)

logger = logging.getLogger(__name__)

_WORD = re.compile(r"\b\w+\b")
"""A word, as the MMAU and MMAR scripts tokenise: a maximal run of Unicode word characters."""

DIFFICULTY_PREFIX = "difficulty "
"""Key prefix of the per-difficulty entries of a section's ``measures`` (MMAU)."""

NAME_ERROR_REASON = (
    "official: empty answer before any letter was read (mmsu_evaluation.py stops here with a NameError; counted wrong)"
)
"""Reason of an MMSU item whose blank answer has no earlier letter to inherit."""


def words(text: str) -> set[str]:
    r"""The distinct words of a text as the MMAU and MMAR scripts see them (lower-cased ``\b\w+\b`` matches)."""
    return set(_WORD.findall(text.lower()))


def official_word_match(answer: str, prediction: str, choices: Sequence[str]) -> bool:
    """Whether a prediction is right by MMAU's and MMAR's ``evaluation.py`` (see the module docstring).

    Args:
        answer: The gold answer as released.
        prediction: The model's answer.
        choices: The options as released.
    """
    said = words(prediction)
    if not said:
        return False
    gold = words(answer)
    others: set[str] = set()
    for choice in choices:
        option = words(choice)
        if option != gold:  # an option of the gold's very words is not a wrong one
            others |= option - gold
    return gold <= said and said.isdisjoint(others)


ChoiceQAItem = MMAUItem | MMARItem | MMSUItem
"""An item of the three benchmarks."""


MmsuRead = Literal["letter", "skipped", "blank"]
"""What MMSU's script makes of a response: a letter, nothing (skipped), or nothing but kept (blank)."""


def mmsu_official_read(text: str) -> tuple[MmsuRead, str | None]:
    """What ``mmsu_evaluation.py`` reads from a response (see the module docstring).

    Returns:
        ``("letter", L)`` with L in A-D; ``("skipped", None)`` for a response it drops; ``("blank", None)`` for an
        empty response or ``None``, which it scores with the letter of an earlier row.
    """
    predict = text.strip().replace("\n", "")
    if not predict or predict == "None":
        return "blank", None
    if predict[0] in MMSU_LETTERS:
        return "letter", predict[0]
    if len(predict) > 1 and predict[-2] in MMSU_LETTERS:
        return "letter", predict[-2]
    return "skipped", None


def mmsu_letter_right(item: ChoiceQAItem, letter: str) -> bool:
    """Whether MMSU's script counts ``letter`` right for the item: that option, as released, is ``answer_gt``."""
    index = MMSU_LETTERS.index(letter)
    return index < len(item.choices) and item.choices[index] == item.answer_text


@dataclass(frozen=True)
class ChoiceQAOutcome:
    """How one MMAU, MMAR or MMSU item came out under one protocol."""

    unit: str
    """The item's uid (the bootstrap's unit)."""
    task: str
    """Its task (MMAU's task, MMAR's modality, MMSU's task name)."""
    category: str
    """Its category label."""
    subset: str
    """Its sub-category label."""
    difficulty: str | None
    """Its difficulty (MMAU); None for the others."""
    correct: bool | None
    """True/False; None for a failure (official: dropped; strict: counted wrong)."""
    reason: str
    """How the answer was read, or why it failed."""
    judge: str | None = None
    """The judge of the deciding verdict (strict); None for the official rules."""
    flags: tuple[str, ...] | None = None
    """The injection screen's flags on the answer (None: not screened)."""
    letter: str | None = None
    """MMSU official: the letter read (A-D), which later blank answers inherit."""
    right_letters: str = ""
    """MMSU official: the letters the script would count right for this item."""
    carried: bool = False
    """MMSU official: a blank answer, scored with the letter read last before it (:func:`resolve_carried`)."""
    cluster: str = ""
    """The item's cluster (:func:`airbench_nb.records.cluster_of`: the source recording an importer names, else its
    clip); empty: the item on its own."""


def _outcome(item: ChoiceQAItem, correct: bool | None, reason: str, **more: Any) -> ChoiceQAOutcome:
    return ChoiceQAOutcome(
        unit=item.uid,
        task=item.task,
        category=item.category_label,
        subset=item.subset_label,
        difficulty=getattr(item, "difficulty", None),
        correct=correct,
        reason=reason,
        cluster=cluster_of(item),
        **more,
    )


def official_outcome(item: ChoiceQAItem, response: Response | None) -> ChoiceQAOutcome:
    """One item under its benchmark's official rule (an MMSU blank answer is left ``carried``, to be resolved).

    Args:
        item: The item.
        response: The model's response (None when there is none).
    """
    failed = failure_text(response)
    if failed is not None or response is None or response.text is None:
        return _outcome(item, None, f"official: not scored ({failed or 'no response'})")
    text = response.text
    if item.OFFICIAL_RULE == "letter":
        right = "".join(letter for letter in MMSU_LETTERS if mmsu_letter_right(item, letter))
        read, letter = mmsu_official_read(text)
        if read == "letter" and letter is not None:
            return _outcome(item, letter in right, f"official: letter {letter}", letter=letter, right_letters=right)
        if read == "blank":
            return _outcome(item, None, "official: blank answer", right_letters=right, carried=True)
        return _outcome(item, None, "official: no letter A-D first or second-to-last", right_letters=right)
    match = official_word_match(item.answer_text, text, item.choices)
    return _outcome(item, match, "official: word match" if match else "official: no word match")


def resolve_carried(outcomes: Sequence[ChoiceQAOutcome]) -> list[ChoiceQAOutcome]:
    """MMSU official: each blank answer scored with the letter read last before it, in item order.

    Outcomes that are not ``carried`` are returned as they are; a blank answer before any letter was read counts
    wrong (:data:`NAME_ERROR_REASON`).
    """
    last: str | None = None
    out = []
    for outcome in outcomes:
        if outcome.letter is not None:
            last = outcome.letter
        if outcome.carried:
            if last is None:
                outcome = replace(outcome, correct=False, reason=NAME_ERROR_REASON)
            else:
                reason = f"official: blank answer, scored with the last letter read ({last})"
                outcome = replace(outcome, correct=last in outcome.right_letters, reason=reason)
        out.append(outcome)
    return out


def strict_outcome(item: ChoiceQAItem, response: Response | None, verdict: Verdict | None) -> ChoiceQAOutcome:
    """One item under the strict protocol: its deciding verdict (a failure counts wrong)."""
    correct, reason = strict_foundation(response, verdict)
    return _outcome(item, correct, reason, **screened(verdict))


def _entry(group: Sequence[ChoiceQAOutcome], protocol: str, reps: int, seed: int, key: str) -> dict[str, Any]:
    """One entry: accuracy with its interval, widened by a cluster bootstrap where items share a recording.

    Where items of the entry share a cluster (the questions about one source recording), the entry is bootstrapped a
    second time drawing whole clusters and its interval is the union of both (never narrower), with ``clusters``,
    ``cluster_unit`` and ``design_effect`` (:mod:`airbench_nb.scoring.resample`). The point value is the same.
    """
    from airbench_nb.records import CLUSTER_UNITS
    from airbench_nb.scoring.resample import cluster_codes, design_effect, union

    right = np.array([1.0 if o.correct else 0.0 for o in group])
    if protocol == "official":
        counted = np.array([0.0 if o.correct is None else 1.0 for o in group])
    else:
        counted = np.ones(len(group))
    values = np.column_stack([right, counted])
    sums = _resampled(values, reps, seed, key)
    failures = sum(o.correct is None for o in group)
    ratio = _ratio(sums[:, 0], sums[:, 1])
    entry = _accuracy(_score(ratio, int(counted.sum()), failures, int(right.sum())))
    keys = [o.cluster or f"unit:{o.unit}" for o in group]
    clusters = len(set(keys))
    if reps and clusters < len(keys):
        grouped = _resampled(values, reps, seed, f"{key}/clusters", cluster_codes(keys, len(keys)))
        wide = _ratio(grouped[:, 0], grouped[:, 1])
        spread = _score(wide, 0, 0)
        low, high = spread.ci_low, spread.ci_high
        entry["ci_low"], entry["ci_high"] = union((low, high), (entry["ci_low"], entry["ci_high"]))
        unit = {k.split(":", 1)[0] for k in keys}
        entry["clusters"] = clusters
        entry["cluster_unit"] = "; ".join(CLUSTER_UNITS.get(u, u) for u in sorted(unit))
        entry["design_effect"] = design_effect(wide[1:], ratio[1:])
    return entry


def _grouped(outcomes: Iterable[ChoiceQAOutcome], key: str) -> dict[str, list[ChoiceQAOutcome]]:
    groups: dict[str, list[ChoiceQAOutcome]] = defaultdict(list)
    for outcome in outcomes:
        value = getattr(outcome, key)
        if value is not None:
            groups[value].append(outcome)
    return groups


def choice_qa_section(
    outcomes: Sequence[ChoiceQAOutcome],
    metric: str,
    protocol: str,
    reps: int,
    seed: int,
    order: Mapping[str, Sequence[str]] | None = None,
) -> ScoreSection:
    """The section of one benchmark's outcomes (see the module docstring for its entries).

    Args:
        outcomes: One per item, MMSU's blank answers already resolved (:func:`resolve_carried`).
        metric: The metric's name (part of each bootstrap key).
        protocol: ``official`` or ``strict``.
        reps: Bootstrap replicates (0: no intervals).
        seed: Bootstrap seed.
        order: Per level (``task``, ``category``), the names in report order (the others follow, sorted).
    """
    order = order or {}

    def ordered(groups: dict[str, list[ChoiceQAOutcome]], level: str) -> list[str]:
        known = [name for name in order.get(level, ()) if name in groups]
        return known + sorted(name for name in groups if name not in known)

    def level(key: str, prefix: str = "") -> dict[str, Any]:
        groups = _grouped(outcomes, key)
        return {
            f"{prefix}{name}": _entry(groups[name], protocol, reps, seed, f"{metric}/{key}/{name}")
            for name in ordered(groups, key)
        }

    section: dict[str, Any] = {
        "tasks": level("task"),
        "categories": level("category"),
        "subsets": level("subset"),
        "average": _entry(outcomes, protocol, reps, seed, f"{metric}/average"),
        "items": len(outcomes),
        "failed": sum(o.correct is None for o in outcomes),
        "failure_reasons": dict(Counter(o.reason for o in outcomes if o.correct is None).most_common()),
        "injection": injection_counts(outcomes),  # type: ignore[arg-type]  # it reads judge and flags only
    }
    difficulties = level("difficulty", DIFFICULTY_PREFIX)
    if difficulties:
        section["measures"] = difficulties
    return ScoreSection.model_validate(section)


class ChoiceQAAccuracy(BaseMetric):
    """Accuracy of one of the three benchmarks' items, official (its script's rule) and strict (the verdict)."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    """The item kind it scores."""
    order: ClassVar[Mapping[str, Sequence[str]]] = {}
    """Report order of the names of its levels (those of the release's own script)."""

    def serves(self, item: Any) -> bool:
        """Items of its kind."""
        return getattr(item, "kind", None) == self.kind

    def select(self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None) -> dict[str, Verdict]:
        """The deciding verdict of each item (the rule judge first, as for Foundation)."""
        return foundation_verdicts(verdicts, uids, judges)

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """The judges whose verdicts decided items."""
        return sorted({v.judge for v in chosen.values()})

    def outcomes(
        self, item: ChoiceQAItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[ChoiceQAOutcome]:
        """One outcome (an MMSU official blank answer is resolved by :meth:`aggregate`, in item order)."""
        if protocol == "strict":
            return [strict_outcome(item, response, chosen.get(item.uid))]
        return [official_outcome(item, response)]

    def aggregate(self, outcomes: Sequence[ChoiceQAOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """Overall, per task, category, sub-category (and difficulty) accuracy."""
        resolved = resolve_carried(outcomes) if protocol == "official" else list(outcomes)
        return choice_qa_section(resolved, self.name, protocol, reps, seed, self.order)


class MMAUAccuracy(ChoiceQAAccuracy):
    """MMAU: official by ``evaluation.py``'s word match, strict by the verdict."""

    name: ClassVar[str] = "mmau_accuracy"
    section: ClassVar[str] = "mmau"
    kind: ClassVar[str] = "mmau"
    order: ClassVar[Mapping[str, Sequence[str]]] = {"task": MMAU_TASKS, "difficulty": MMAU_DIFFICULTIES}


class MMARAccuracy(ChoiceQAAccuracy):
    """MMAR: official by ``code/evaluation.py``'s word match (MMAU's), strict by the verdict."""

    name: ClassVar[str] = "mmar_accuracy"
    section: ClassVar[str] = "mmar"
    kind: ClassVar[str] = "mmar"
    order: ClassVar[Mapping[str, Sequence[str]]] = {"task": MMAR_MODALITIES, "category": MMAR_CATEGORIES}


class MMSUAccuracy(ChoiceQAAccuracy):
    """MMSU: official by ``mmsu_evaluation.py``'s letter rule, strict by the verdict."""

    name: ClassVar[str] = "mmsu_accuracy"
    section: ClassVar[str] = "mmsu"
    kind: ClassVar[str] = "mmsu"


CHOICE_QA_METRICS: tuple[ChoiceQAAccuracy, ...] = (MMAUAccuracy(), MMARAccuracy(), MMSUAccuracy())
"""The three metrics, registered by :mod:`airbench_nb.scoring.metrics`."""

__all__ = [
    "CHOICE_QA_METRICS",
    "DIFFICULTY_PREFIX",
    "ChoiceQAAccuracy",
    "ChoiceQAOutcome",
    "MMARAccuracy",
    "MMAUAccuracy",
    "MMSUAccuracy",
    "official_outcome",
    "official_word_match",
    "mmsu_letter_right",
    "mmsu_official_read",
    "resolve_carried",
    "strict_outcome",
    "words",
]
