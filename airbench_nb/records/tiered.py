"""The tiered sound-source benchmark's item kinds: the closed set of lettered classes and the open question."""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from airbench_nb.records.checks import check_no_bidi
from airbench_nb.records.item import ItemBase, SingleChoiceItem
from airbench_nb.records.tasks import OPEN_SOURCE_TASK, SOUND_SOURCE_TASK

logger = logging.getLogger(__name__)


def _check_hierarchy_lists(classes: list[str], categories: list[str], size: int, what: str) -> None:
    if len(classes) != size:
        raise ValueError(f"classes has {len(classes)} entries for {size} {what}")
    if len(categories) != size:
        raise ValueError(f"categories has {len(categories)} entries for {size} {what}")
    if any(not c.strip() for c in [*classes, *categories]):
        raise ValueError("classes and categories may not hold empty names")
    for name in [*classes, *categories]:
        check_no_bidi(name, "class or category name")
    if len(set(classes)) != len(classes):
        repeated = sorted({c for c in classes if classes.count(c) > 1})
        raise ValueError(f"classes names a fine class twice: {', '.join(repeated)}")
    clash = sorted(set(classes) & set(categories))
    if clash:
        raise ValueError(f"a name is both a fine class and a category: {', '.join(clash)}")


class SoundSourceItem(SingleChoiceItem):
    """A closed-set "what made that sound?" question of the tiered sound-source benchmark.

    One lettered option per fine class (up to 26). ``classes`` and ``categories`` give each option's fine class and
    coarse category, so an item carries its hierarchy: every metric is computed at both granularities, a fine
    prediction implying its category (:mod:`airbench_nb.scoring.tiered`). LALMs choose a letter (tier A), read by
    the rule judge like a Foundation answer; classifiers (tier B) and CLAP (tier C) rank the options. Scored apart
    from AIR-Bench's Foundation tasks (never in their averages): :mod:`airbench_nb.analysis.tiered_run`.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("tier_closed_set",)
    """Its tier's scores in the score table (``tier_A|B|C``: :mod:`airbench_nb.scoring.tier_metrics`)."""

    kind: Literal["sound_source"] = "sound_source"
    """Record kind, so that a manifest line says what it holds."""
    task: Literal["sound_source"] = SOUND_SOURCE_TASK
    """Always ``sound_source``."""
    category: Literal["sound"] | None = None
    """Always ``sound``."""
    classes: list[str]
    """The fine class (hierarchy name, e.g. ``wail``) of each option, in option order."""
    categories: list[str]
    """The coarse category (e.g. ``siren``) of each option, in option order."""

    @model_validator(mode="after")
    def _consistent(self) -> SoundSourceItem:
        object.__setattr__(self, "category", "sound")
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"answer {self.answer} is not an index into {len(self.choices)} choices")
        _check_hierarchy_lists(self.classes, self.categories, len(self.choices), "choices")
        for choice in self.choices:
            check_no_bidi(choice, "option")
        return self

    @property
    def fine(self) -> str:
        """The gold fine class."""
        return self.classes[self.answer]

    @property
    def coarse(self) -> str:
        """The gold coarse category."""
        return self.categories[self.answer]

    def hierarchy(self) -> dict[str, str]:
        """Fine class -> coarse category over the item's options."""
        return dict(zip(self.classes, self.categories, strict=True))


class OpenSourceItem(ItemBase):
    """The tiered benchmark's open-vocabulary question (tier D), asked without candidates.

    The question is the benchmark's "Enumerate the sound occurrences in the audio clip.". A judge reads the free
    answer for a hit on the gold coarse category and on its fine class (:attr:`Verdict.hits`): the offline rule judge
    ``sources`` by the hierarchy's synonyms (longest match first), an LLM judge by asking. Recall and FNR only:
    without a predicted class there is no precision.
    """

    METRICS: ClassVar[tuple[str, ...]] = ("tier_open_vocabulary",)
    """Tier D's scores in the score table (``tier_D``: :mod:`airbench_nb.scoring.tier_metrics`)."""

    kind: Literal["sound_source_open"] = "sound_source_open"
    """Record kind, so that a manifest line says what it holds."""
    task: Literal["sound_source_open"] = OPEN_SOURCE_TASK
    """Always ``sound_source_open``."""
    category: Literal["sound"] = "sound"
    """Always ``sound``."""
    classes: list[str]
    """Every fine class of the hierarchy (hierarchy names)."""
    categories: list[str]
    """The coarse category of each of ``classes``, in its order."""
    label: str
    """The gold fine class, one of ``classes``."""
    names: dict[str, list[str]] = Field(default_factory=dict)
    """Words that name a fine class or a category (the hierarchy's synonyms), by class or category name; a name
    always names itself (underscores read as spaces)."""
    clip_id: str | None = None
    """Identifier of the clip, shared with the closed-set item about the same audio; None when it stands alone."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Ground truth and provenance (the synthesizer's drawn parameters, the seed)."""

    @model_validator(mode="after")
    def _consistent(self) -> OpenSourceItem:
        _check_hierarchy_lists(self.classes, self.categories, len(self.classes), "classes")
        if self.label not in self.classes:
            raise ValueError(f"label {self.label!r} is not one of classes")
        unknown = sorted(set(self.names) - set(self.classes) - set(self.categories))
        if unknown:
            raise ValueError(f"names has entries for unknown classes or categories: {', '.join(unknown)}")
        for words in self.names.values():
            for word in words:
                check_no_bidi(word, "name")
        return self

    @property
    def fine(self) -> str:
        """The gold fine class."""
        return self.label

    @property
    def coarse(self) -> str:
        """The gold coarse category."""
        return self.categories[self.classes.index(self.label)]

    def hierarchy(self) -> dict[str, str]:
        """Fine class -> coarse category."""
        return dict(zip(self.classes, self.categories, strict=True))
