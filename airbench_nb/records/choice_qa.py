"""The item kinds of three single-choice audio QA benchmarks: MMAU (test-mini), MMAR and MMSU.

Each is a :class:`~airbench_nb.records.item.SingleChoiceItem` (its options in ``choices``, ``answer`` the index of
the right one) with the fields of its release kept as typed fields: MMAU's task, category (a string, or a list for
13 items of test-mini, kept as released), sub-category and difficulty; MMAR's modality, layer, sub-category and
language (null for 320 items); MMSU's task, category and sub-category. ``answer_text`` keeps the release's gold
answer verbatim: the official scripts compare it with the options as released, so the ``official`` protocol reads
it (:mod:`airbench_nb.scoring.choice_qa`). Rows of the releases become items through
:mod:`airbench_nb.records.choice_qa_rows`; the benchmarks are registered by :mod:`airbench_nb.benchmarks.choice_qa`.

MMAU and MMAR are scored officially by matching the answer's words against the options' words, so their models are
asked for the text of an option (``ANSWERED_BY_TEXT``); MMSU's script reads a letter, so its models are asked for
one, as Foundation's are.

Options as released. MMAU's and MMAR's official scripts score every row, so the two text-answered kinds take the
options as the release writes them: an option may repeat another (27 rows of MMAU test-mini, e.g. ``["four", "nine",
"fourteen", "fourteen"]``) or be the empty string (4 rows of MMAR). Such options stay in ``choices`` in release order,
and the item says what is odd about them in ``notes`` (:func:`option_notes`: "options 3 and 4 repeat 'fourteen' as
released", "option 2 is empty as released"). The gold is the first option whose stripped text is the gold's; options
of one text are one answer (:meth:`~airbench_nb.records.item.SingleChoiceItem.answer_option`). MMSU, answered by
letter, refuses them as Foundation does.
"""

from __future__ import annotations

import logging
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from airbench_nb.records.item import SingleChoiceItem

logger = logging.getLogger(__name__)

MMAU_TASKS: tuple[str, ...] = ("sound", "music", "speech")
"""MMAU's three tasks (the ``task`` field of its release), in the order its ``evaluation.py`` reports them."""

MMAU_DIFFICULTIES: tuple[str, ...] = ("easy", "hard", "medium")
"""MMAU's difficulties, in the order its ``evaluation.py`` reports them."""

MMAR_MODALITIES: tuple[str, ...] = (
    "sound",
    "music",
    "speech",
    "mix-sound-music",
    "mix-sound-speech",
    "mix-music-speech",
    "mix-sound-music-speech",
)
"""MMAR's seven modalities as ``MMAR-meta.jsonl`` spells them, in the order its ``evaluation.py`` reports them."""

MMAR_CATEGORIES: tuple[str, ...] = ("Signal Layer", "Perception Layer", "Semantic Layer", "Cultural Layer")
"""MMAR's four layers (its ``category`` field), in the order its ``evaluation.py`` reports them."""

MMSU_LETTERS: str = "ABCD"
"""The letters MMSU's ``mmsu_evaluation.py`` reads (its options are ``choice_a`` to ``choice_d``)."""


OfficialRule = Literal["word_match", "letter"]
"""How a kind's official script reads an answer: MMAU's word match of the answer against the options, or MMSU's
letter (:mod:`airbench_nb.scoring.choice_qa`)."""


def _numbered(indices: list[int]) -> str:
    """Option positions counted from 1, as a reader says them: ``2``, ``3 and 4``, ``1, 2 and 5``."""
    numbers = [str(k + 1) for k in indices]
    return numbers[0] if len(numbers) == 1 else f"{', '.join(numbers[:-1])} and {numbers[-1]}"


def option_notes(choices: list[str]) -> list[str]:
    """What is odd about options as released: one note per repeated text and per empty option, in option order.

    Options repeat when their stripped, case-folded texts are equal (what
    :class:`~airbench_nb.records.item.SingleChoiceItem` refuses); an option is empty when it is the empty string or
    only spaces. Positions are counted from 1 in release order.

    Args:
        choices: The options as released.

    Returns:
        Notes such as ``"options 3 and 4 repeat 'fourteen' as released"`` or ``"option 2 is empty as released"``;
        empty for options that are distinct and non-empty.
    """
    groups: dict[str, list[int]] = {}
    for k, choice in enumerate(choices):
        groups.setdefault(choice.strip().casefold(), []).append(k)
    notes: list[tuple[int, str]] = []
    for key, indices in groups.items():
        if not key:
            for k in indices:
                blank = "" if choices[k] == "" else f" (only spaces: {choices[k]!r})"
                notes.append((k, f"option {k + 1} is empty as released{blank}"))
        elif len(indices) > 1:
            texts = list(dict.fromkeys(choices[k].strip() for k in indices))
            written = "" if len(texts) == 1 else f" (written {', '.join(map(repr, texts))}: case aside)"
            notes.append((indices[0], f"options {_numbered(indices)} repeat {texts[0]!r} as released{written}"))
    return [note for _, note in sorted(notes)]


class _ChoiceQAItem(SingleChoiceItem):
    """What the three kinds share: the gold answer's text as released, and an optional sub-category."""

    answer_text: str = Field(min_length=1)
    """The gold answer as the release writes it (MMAU and MMAR ``answer``, MMSU ``answer_gt``), verbatim: what the
    official scripts compare the prediction or the chosen option with. ``choices[answer]`` equals it once both are
    stripped."""
    sub_category: str | None = None
    """The release's ``sub-category`` (MMAU: one of 27 skills; MMAR: one of 16; MMSU: its second level)."""

    ROTATED: ClassVar[bool] = True
    """Circular evaluation rotates its options (``airbench-nb rotate``): the copies keep ``answer_text``, are left out
    of the scores when their original is scored, and are read by the benchmark's analysis section (strict)."""

    @model_validator(mode="after")
    def _gold_is_an_option(self) -> _ChoiceQAItem:
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index into {len(self.choices)} choices")
        if self.choices[self.answer].strip() != self.answer_text.strip():
            raise ValueError(
                f"answer_text {self.answer_text!r} is not choices[{self.answer}] {self.choices[self.answer]!r}"
            )
        first = next(k for k, c in enumerate(self.choices) if c.strip() == self.answer_text.strip())
        if first != self.answer:
            raise ValueError(
                f"answer {self.answer} is not the first option of the gold's text {self.answer_text.strip()!r} "
                f"(option {first} is): the gold is the first such option"
            )
        return self

    @property
    def subset_label(self) -> str:
        """The sub-category the item is reported under (``other`` when the release gives none)."""
        return self.sub_category or "other"


class _TextChoiceQAItem(_ChoiceQAItem):
    """The two kinds answered by an option's text (MMAU, MMAR): options taken as released, repeats and empties too.

    Their official scripts match the answer's words against every option and score every row, so an option that
    repeats another or is empty is kept where the release puts it, and the item records it in ``notes``
    (:func:`option_notes`). A rotated copy (``meta.rotation_of``) keeps its original's notes, which count the
    options in release order.
    """

    @field_validator("choices")
    @classmethod
    def _choices_distinct(cls, value: list[str]) -> list[str]:
        """Replaces :class:`SingleChoiceItem`'s check: repeated and empty options are accepted as released."""
        return value

    @model_validator(mode="after")
    def _odd_options_noted(self) -> _TextChoiceQAItem:
        if "rotation_of" in (self.meta or {}):
            return self
        missing = [note for note in option_notes(self.choices) if note not in self.notes]
        if missing:
            object.__setattr__(self, "notes", [*self.notes, *missing])  # validate_assignment would re-enter
        return self


class MMAUItem(_TextChoiceQAItem):
    """One question of MMAU (Sakshi et al., ICLR 2025), from ``mmau-test-mini.json`` or its Hugging Face copy.

    2, 4, 5 or 8 options (test-mini), the gold answer given as the text of an option. Scored officially by
    ``evaluation.py``'s word match of the prediction against the options.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("mmau_accuracy",)
    """The metric that scores it (:mod:`airbench_nb.scoring.choice_qa`)."""
    ANSWERED_BY_TEXT: ClassVar[bool] = True
    """Asked for the text of an option (the official word match reads text, not letters)."""
    OFFICIAL_RULE: ClassVar[OfficialRule] = "word_match"
    """``evaluation.py``'s word match."""

    kind: Literal["mmau"] = "mmau"
    """Record kind: the manifest is ``mmau.jsonl``."""
    task: Literal["speech", "sound", "music"]
    """The release's ``task``: the domain of the audio."""
    category: str | list[str] | None = None  # type: ignore[assignment]  # the release's own shape: str or list
    """The release's ``category`` as it is written: ``Reasoning`` or ``Information Extraction``, a list of one
    name for 13 items of test-mini (reported under :attr:`category_label`)."""
    difficulty: Literal["easy", "medium", "hard"] | None = None
    """The release's ``difficulty``; None when the row has none."""
    split: str = "test-mini"
    """The release's ``split`` (``test-mini``)."""

    @field_validator("category")
    @classmethod
    def _category_names(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and (not value or any(not isinstance(v, str) or not v.strip() for v in value)):
            raise ValueError(f"category as a list must hold one or more names, got {value!r}")
        return value

    @property
    def category_label(self) -> str:
        """The category reported: the name, the names of a list joined with `` + `` (one name: that name)."""
        if isinstance(self.category, list):
            return " + ".join(dict.fromkeys(self.category))
        return self.category or "other"


class MMARItem(_TextChoiceQAItem):
    """One question of MMAR (Ma et al., 2025), from ``MMAR-meta.jsonl``: 2 to 6 options, the gold as text.

    Scored officially by its ``code/evaluation.py``, whose word match is MMAU's.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("mmar_accuracy",)
    """The metric that scores it (:mod:`airbench_nb.scoring.choice_qa`)."""
    ANSWERED_BY_TEXT: ClassVar[bool] = True
    """Asked for the text of an option (the official word match reads text, not letters)."""
    OFFICIAL_RULE: ClassVar[OfficialRule] = "word_match"
    """``code/evaluation.py``'s word match (MMAU's)."""

    kind: Literal["mmar"] = "mmar"
    """Record kind: the manifest is ``mmar.jsonl``."""
    task: str
    """The release's ``modality``, one of :data:`MMAR_MODALITIES` (mixes are ``mix-sound-speech``, ...)."""
    category: str | None = None
    """The release's ``category``: the layer (``Signal Layer`` ... ``Cultural Layer``)."""
    language: str | None = None
    """The release's ``language`` as written (``en``, ``zh|en``, ...); None where it is null (no speech)."""

    @field_validator("task")
    @classmethod
    def _known_modality(cls, value: str) -> str:
        if value not in MMAR_MODALITIES:
            raise ValueError(f"modality {value!r} is not one of MMAR's: {', '.join(MMAR_MODALITIES)}")
        return value

    @property
    def modality(self) -> str:
        """The modality (the ``task`` field)."""
        return self.task


class MMSUItem(_ChoiceQAItem):
    """One question of MMSU (Wang et al., 2025): options ``choice_a`` to ``choice_d``, the gold as text.

    Scored officially by ``mmsu_evaluation.py``, which reads a letter A-D from the answer as AIR-Bench's script
    does; its models are asked for a letter.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("mmsu_accuracy",)
    """The metric that scores it (:mod:`airbench_nb.scoring.choice_qa`)."""
    ANSWERED_BY_TEXT: ClassVar[bool] = False
    """Asked for a letter (the official script reads one)."""
    OFFICIAL_RULE: ClassVar[OfficialRule] = "letter"
    """``mmsu_evaluation.py``'s letter rule."""

    kind: Literal["mmsu"] = "mmsu"
    """Record kind: the manifest is ``mmsu.jsonl``."""
    task: str
    """The release's ``task_name`` (one of 47 tasks)."""
    category: str | None = None
    """The release's ``category``: the first level (perception or reasoning)."""
    sub_sub_category: str | None = None
    """The release's ``sub-sub-category``; None when the row has none."""
    linguistics_sub_discipline: str | None = None
    """The release's ``linguistics_sub_discipline``; None when the row has none."""

    @field_validator("choices")
    @classmethod
    def _four_at_most(cls, value: list[str]) -> list[str]:
        if len(value) > len(MMSU_LETTERS):
            raise ValueError(f"an MMSU item has 2 to 4 options (choice_a .. choice_d), got {len(value)}")
        return value

    @property
    def subset_label(self) -> str:
        """``<category> / <sub-category>``: the official script nests sub-categories in categories."""
        return f"{self.category_label} / {self.sub_category or 'other'}"


__all__ = [
    "MMAR_CATEGORIES",
    "MMAR_MODALITIES",
    "MMAU_DIFFICULTIES",
    "MMAU_TASKS",
    "MMSU_LETTERS",
    "OfficialRule",
    "MMARItem",
    "MMAUItem",
    "MMSUItem",
    "option_notes",
]
