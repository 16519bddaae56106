"""The tier D rule judge (``sources``): open-vocabulary answers read against the hierarchy's names.

The tiered sound-source benchmark's tier D asks "Enumerate the sound occurrences in the audio clip." and judges each
free answer for a hit on the gold coarse category and on the gold fine class. The benchmark asks an LLM; this judge
is the kit's offline default, a rule, labelled as such wherever its verdicts are shown (an LLM judge through the
judge protocol can replace it).

How it reads an answer (:func:`named_sources`):

1. the answer is lower-cased, curly apostrophes straightened, underscores, hyphens and punctuation read as spaces;
2. every name of every fine class and category (its own name, underscores as spaces, and the item's
   :attr:`~airbench_nb.records.OpenSourceItem.names`, the hierarchy's synonyms) is looked for as whole words;
3. the longest matches win and may not overlap: "truck air horn" names the air horn, not the truck engine, and
   "police siren" the wail, not the category alone ("police car");
4. a name preceded within three words by a negation ("no", "not", "without", "never", "neither", "nor") is not
   counted ("there is no siren").

A fine-class hit implies a category hit; naming a wrong class of the right category is a category hit only. The
verdict's ``correct`` is the fine-class hit, its :attr:`~airbench_nb.records.Verdict.hits` both. An empty answer is
a verdict with both misses (the model named nothing); no answer at all (an error) is a failed verdict.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from airbench_nb.judge.base import BaseJudge, Task
from airbench_nb.prompts import prompt_hash
from airbench_nb.records import OpenSourceItem, SourceHits, Verdict

logger = logging.getLogger(__name__)

SOURCES_RULE_VERSION = "1"
"""Version of the reading rule above; recorded in every verdict's ``raw``."""

NEGATIONS: frozenset[str] = frozenset({"no", "not", "without", "never", "neither", "nor", "isn't", "isnt"})
"""Words that cancel a name when one of them is among the three words before it."""

NEGATION_WINDOW = 3
"""How many words before a name a negation reaches."""


def _words(text: str) -> list[str]:
    text = text.lower().replace("\u2019", "'").replace("_", " ").replace("-", " ")
    return re.findall(r"[a-z0-9']+", text)


@dataclass(frozen=True)
class NamedSource:
    """One class or category named in an answer."""

    name: str
    """The fine class or category named."""
    phrase: str
    """The words that named it."""
    start: int
    """Index of its first word in the answer."""


def name_phrases(item: OpenSourceItem) -> list[tuple[tuple[str, ...], str]]:
    """Every (words, class or category) a name stands for, longest first (ties in class order)."""
    phrases: dict[tuple[str, ...], str] = {}
    for name in [*item.classes, *dict.fromkeys(item.categories)]:
        for text in [name, *item.names.get(name, [])]:
            words = tuple(_words(text))
            if words and words not in phrases:  # a phrase two names share stands for the first (a class)
                phrases[words] = name
    return sorted(phrases.items(), key=lambda pair: -len(pair[0]))


def named_sources(answer: str, item: OpenSourceItem) -> list[NamedSource]:
    """The classes and categories an answer names, in the order they appear (see the module docstring)."""
    words = _words(answer)
    taken = [False] * len(words)
    found: list[NamedSource] = []
    for phrase, name in name_phrases(item):
        size = len(phrase)
        for start in range(len(words) - size + 1):
            if tuple(words[start : start + size]) != phrase or any(taken[start : start + size]):
                continue
            for i in range(start, start + size):
                taken[i] = True
            if not NEGATIONS & set(words[max(0, start - NEGATION_WINDOW) : start]):
                found.append(NamedSource(name=name, phrase=" ".join(phrase), start=start))
    return sorted(found, key=lambda n: n.start)


def source_hits(answer: str, item: OpenSourceItem) -> SourceHits:
    """The hits of an answer on the item's gold category and fine class."""
    hierarchy = item.hierarchy()
    named = list(dict.fromkeys(n.name for n in named_sources(answer, item)))
    subclass = item.fine in named
    category = subclass or any(hierarchy.get(name, name) == item.coarse for name in named)
    return SourceHits(category=category, subclass=subclass, named=named)


def sources_verdict(item: OpenSourceItem, task: Task, judge: str = "sources") -> Verdict:
    """The rule's verdict on one open-vocabulary answer."""
    answer = task.answer
    if answer is None:
        return task.verdict(judge, parse_error=f"no response: {task.response.error}")
    hits = source_hits(answer, item)
    named = ", ".join(hits.named) or "nothing"
    return task.verdict(
        judge,
        raw=f"sources rule v{SOURCES_RULE_VERSION}: named {named}",
        correct=hits.subclass,
        hits=hits,
        prompt_hash=prompt_hash(answer),
    )


class SourcesJudge(BaseJudge):
    """Tier D's offline rule judge (see the module docstring)."""

    name: ClassVar[str] = "sources"
    usage_text: ClassVar[str] = "sources"
    kinds: ClassVar[frozenset[str]] = frozenset({"sound_source_open"})
    deterministic: ClassVar[bool] = True
    decides_tiers: ClassVar[frozenset[str]] = frozenset({"D"})
    """Its hits decide tier D answers (the offline rule, a proxy)."""
    names_sources: ClassVar[bool] = True
    """Its verdicts store the names it read (``hits.named``)."""

    def __init__(self, spec: str = "sources") -> None:
        """The rule judge of open-vocabulary sound-source answers (its spec is ``sources``)."""
        super().__init__(spec)

    def decide(self, task: Task) -> Verdict | None:
        """The rule's verdict (never None)."""
        item = cast(OpenSourceItem, task.item)  # judge_tasks hands it only items of its kind, sound_source_open
        return sources_verdict(item, task, judge=self.spec)

    def ask(self, tasks: Sequence[Task], *, batch_file: Path) -> list[Verdict]:
        """Never needed (:meth:`decide` decides every task)."""
        return [verdict for task in tasks if (verdict := self.decide(task)) is not None]
