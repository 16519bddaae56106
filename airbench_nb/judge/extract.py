"""Rule-based extraction of the chosen option from a free-text answer.

Two extractors:

- :func:`extract_choice` (the ``strict`` protocol): reads bare letters ("B", "(B)", "b"), stated answers
  ("Answer: B", "The answer is B.", "Option B"), a leading letter with its text ("B) a dog barking"), the text
  of exactly one choice, and a letter followed by an explanation. It abstains (``choice=None`` with the reason)
  when the answer names several options, none, contradicts itself, or hedges ("A or B", "none of the above",
  "I cannot tell"). It never picks at random.
- :func:`official_extract` reproduces the official AIR-Bench script: after stripping and deleting newlines,
  the first character if it is one of A-D, else the second-to-last character if it is one of A-D, else a failure.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from airbench_nb.records import LETTERS

logger = logging.getLogger(__name__)

EXTRACTOR_VERSION = "2"
"""Version of the strict rules below; recorded with verdicts through the judge spec. 2: options that name clips by
their order ("the first clip", ...) are also read from "the first one", "clip 2", "audio 2"."""


HEDGES = (
    r"\bnot (?:sure|certain|clear)\b",
    r"\b(?:can ?not|can't|cannot|unable to|impossible to|hard to|difficult to) (?:tell|determine|say|identify|"
    r"answer|know|decide|be sure|hear)\b",
    r"\bi (?:do not|don't) know\b",
    r"\bnone of (?:the|these) (?:above|options|choices)\b",
    r"\bneither\b",
    r"\bno (?:audio|sound) (?:was |is )?(?:provided|available|given)\b",
    r"\bas an ai\b",
    r"\bsorry\b",
)
"""Phrases that make an answer a non-answer when no single option is clearly stated."""

_HEDGE_RE = re.compile("|".join(HEDGES), re.IGNORECASE)
_MARKDOWN_RE = re.compile(r"[*_`#]+")
_STATED_RE = re.compile(
    r"(?:\b(?:answer|option|choice)\b(?:\s+(?:is|would be|should be|must be))?\s*[:：]?\s*|"
    r"\b(?:i (?:choose|pick|select|would choose|would say)|it(?:'s| is)|correct (?:answer|option) is)\s+)"
    r"\(?([A-Da-d])\)?(?![A-Za-z0-9])",
    re.IGNORECASE,
)
_LEADING_RE = re.compile(r"^\(?([A-D])(?=$|[).:\],;\s–—-])")
_ARTICLE_START_RE = re.compile(r"^A\s+[a-z]")
_BARE_RE = re.compile(r"^\(?\[?([A-Da-d])\]?\)?[.!:]?$")
_STANDALONE_RE = re.compile(r"(?<![A-Za-z0-9'])\(?([B-D])\)?(?![A-Za-z0-9'])")
_OR_RE = re.compile(r"(?<![A-Za-z])\(?([A-D])\)?\s*(?:or|and|/|,)\s*\(?([A-D])\)?(?![A-Za-z])")


@dataclass(frozen=True)
class Extraction:
    """The option an answer was read as, or why none was."""

    choice: int | None
    """Index of the chosen option (0 for A); None when the extractor abstains."""
    reason: str
    """How the choice was read, or why it abstained."""

    @property
    def letter(self) -> str | None:
        """The chosen letter, or None."""
        return None if self.choice is None else LETTERS[self.choice]


_ORDINALS = (r"(?:first|1st)", r"(?:second|2nd)", r"(?:third|3rd)", r"(?:fourth|4th)")
_CLIP_NOUNS = r"(?:clip|one|recording|audio|sample|track)"


def _clip_mentions(text: str, choices: list[str]) -> list[int] | None:
    """The clips an answer names by their order, for options that are clip ordinals; None for other options.

    The kit's multi-clip tasks offer "the first clip", "the second clip"; answers name them as "the first one",
    "the 2nd recording", "clip 2" or "audio 2" (Qwen2-Audio's chat template labels the clips "Audio 1", "Audio 2").
    """
    if not all(re.fullmatch(rf"the {_ORDINALS[i]} clip\.?", c.strip().casefold()) for i, c in enumerate(choices)):
        return None
    found = []
    for i in range(len(choices)):
        ordinal = rf"\b{_ORDINALS[i]}\s+{_CLIP_NOUNS}\b"
        numbered = rf"\b(?:clip|audio|recording|track|sample)\s*#?\s*{i + 1}\b"
        if re.search(ordinal, text, re.IGNORECASE) or re.search(numbered, text, re.IGNORECASE):
            found.append(i)
    return found


def _clean(text: str) -> str:
    text = _MARKDOWN_RE.sub("", text or "")
    return re.sub(r"\s+", " ", text).strip()


def _choice_mentions(text: str, choices: list[str]) -> list[int]:
    """Indices of choices whose full text appears in the answer as whole words (longest first wins overlaps)."""
    lowered = text.casefold()
    found: list[int] = []
    spans: list[tuple[int, int]] = []
    order = sorted(range(len(choices)), key=lambda i: -len(choices[i]))
    for i in order:
        # "a bell ringing" is also named by "the bell ringing": leading articles are optional
        core = re.sub(r"^(?:a|an|the)\s+", "", choices[i].strip().casefold().rstrip("."))
        needle = r"(?:(?:a|an|the)\s+)?" + re.escape(core) if core else ""
        if not needle:
            continue
        for match in re.finditer(rf"(?<![\w]){needle}(?![\w])", lowered):
            if not any(s <= match.start() < e or s < match.end() <= e for s, e in spans):
                spans.append(match.span())
                if i not in found:
                    found.append(i)
    return sorted(found)


def extract_choice(response: str | None, choices: list[str]) -> Extraction:
    """Read which option a free-text answer chose (strict protocol).

    Args:
        response: The model's answer.
        choices: The options in order (2 to 4).

    Returns:
        An :class:`Extraction`: the option index with how it was read, or None with the reason.
    """
    n = len(choices)
    valid = LETTERS[:n]
    text = _clean(response or "")
    if not text:
        return Extraction(None, "empty answer")

    bare = _BARE_RE.match(text)
    if bare:
        letter = bare.group(1).upper()
        if letter in valid:
            return Extraction(valid.index(letter), "bare letter")
        return Extraction(None, f"letter {letter} is not an option (only {', '.join(valid)})")

    pair = _OR_RE.search(text)
    if pair and pair.group(1) != pair.group(2):
        return Extraction(None, f"names several options ({pair.group(1)} and {pair.group(2)})")

    stated = {m.group(1).upper() for m in _STATED_RE.finditer(text)}
    stated = {s for s in stated if not (s == "A" and _looks_like_article(text, s))}
    leading = _LEADING_RE.match(text)
    if leading and _ARTICLE_START_RE.match(text):  # "A dog is barking": the article, not option A
        leading = None
    letters: set[str] = set(stated)
    if leading:
        letters.add(leading.group(1))
    mentions = _choice_mentions(text, choices)

    if len(letters) > 1:
        return Extraction(None, f"names several options ({', '.join(sorted(letters))})")
    if len(letters) == 1:
        letter = next(iter(letters))
        if letter not in valid:
            return Extraction(None, f"letter {letter} is not an option (only {', '.join(valid)})")
        index = valid.index(letter)
        others = [m for m in mentions if m != index]
        if others and index not in mentions:
            return Extraction(None, f"letter {letter} contradicts the text of option {LETTERS[others[0]]}")
        how = "stated letter" if stated else "leading letter"
        return Extraction(index, how)

    if _HEDGE_RE.search(text) and len(mentions) != 1:
        return Extraction(None, "hedges or refuses")
    if len(mentions) == 1:
        if _HEDGE_RE.search(text):
            return Extraction(None, "hedges or refuses while naming an option")
        return Extraction(mentions[0], "text of one option")
    if len(mentions) > 1:
        return Extraction(None, f"names the text of several options ({', '.join(LETTERS[m] for m in mentions)})")

    clips = _clip_mentions(text, choices)
    if clips is not None and len(clips) == 1:
        return Extraction(clips[0], "names one clip by its order")
    if clips is not None and len(clips) > 1:
        return Extraction(None, f"names several clips ({', '.join(LETTERS[c] for c in clips)})")

    standalone = {m.group(1) for m in _STANDALONE_RE.finditer(text)}
    if len(standalone) == 1:
        letter = next(iter(standalone))
        if letter in valid:
            return Extraction(valid.index(letter), "standalone letter")
    if len(standalone) > 1:
        return Extraction(None, f"names several options ({', '.join(sorted(standalone))})")
    return Extraction(None, "names no option")


def _looks_like_article(text: str, letter: str) -> bool:
    """Whether an ``A`` read as a stated letter is the English article ("it is a dog")."""
    return letter == "A" and bool(re.search(r"\b(?i:it(?:'s| is)|answer is)\s+a\s+[a-z]{2,}", text))


def official_extract(response: str | None, choices: list[str]) -> Extraction:
    """The official AIR-Bench Foundation extraction (``score_foundation.py``), reproduced exactly.

    The official script strips the response and deletes its newlines, treats ``None`` (the string) and an empty
    answer as failures, then reads the first character if it is one of ``A``-``D``, else the second-to-last
    character if it is one of ``A``-``D``; anything else is a failure (which the official scoring drops from the
    denominator). No case folding. A letter beyond the item's options is kept: the official script then compares
    it with the gold and counts it wrong.

    Args:
        response: The model's answer.
        choices: The options (only their number matters to the caller's scoring).

    Returns:
        The extraction; ``choice`` may index past ``choices`` for a letter the item does not have.
    """
    text = (response or "").strip().replace("\n", "")
    if not text or text == "None":
        return Extraction(None, "official: empty or None response")
    if text[0] in LETTERS:
        return Extraction(LETTERS.index(text[0]), "official: first character")
    if len(text) >= 2 and text[-2] in LETTERS:
        return Extraction(LETTERS.index(text[-2]), "official: second-to-last character")
    return Extraction(None, "official: no letter in first or second-to-last character")
