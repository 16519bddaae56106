"""Rule-based extraction of the chosen option from a free-text answer, for items of 2 to 26 options.

Two extractors:

- :func:`extract_choice` (the ``strict`` protocol): reads bare letters ("B", "(B)", "b"), stated answers
  ("Answer: B", "The answer is B.", "Option B"), a leading letter with its text ("B) a dog barking"), the text
  of exactly one choice, and a letter followed by an explanation. It abstains (``choice=None`` with the reason)
  when the answer names several options, none, contradicts itself, or hedges ("A or B", "none of the above",
  "I cannot tell"). It never picks at random.
- :func:`official_extract` reproduces the official AIR-Bench script: after stripping and deleting newlines,
  the first character if it is one of A-D, else the second-to-last character if it is one of A-D, else a failure.

Many options (up to 26, A-Z). The letters looked for in prose are the item's own (``A`` to its last letter), or
A-D for an item of two to four options, exactly as before (a letter past a small item's options is refused or
ignored as it always was). A chain of thought (the ``cot`` prompt set: reasoning, then a letter) mentions options
while it reasons, so its **final answer** is read first, from the answer's last line only:

- a stated answer that ends the line: "... so the answer is (K).", "Answer: K", "Final answer: option K",
  optionally followed by the option's text ("Answer: K. police siren"; text naming another option abstains);
- a bold letter ending the line ("... best matches **K**."), or a line that is only a letter ("K", "(K)", "**K**").

The final answer's letter must be a capital: "the answer is a siren" never reads as A. A final letter past the
item's options is refused ("letter X is not an option"). When the last line holds no final answer, the whole text
is read by the rules above (where a chain of thought naming several options abstains). Two letters are English
words, "A" (the article) and "I" (the pronoun): a capital A or I followed by a lower-case word ("A dog barks",
"I think ...") is prose, never a letter, and a lower-case "i" is never read as option I.

:func:`official_extract` generalised (see its docstring): the letters the official script knows are A-D; for an
item of more than four options they are the item's own letters, A to its last, read by the same first-character /
second-to-last-character rule, with all its flaws ("The ..." is read as T when the item has a T).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass

from airbench_nb.records import AIRBENCH_LETTERS, LETTERS

logger = logging.getLogger(__name__)

EXTRACTOR_VERSION = "3"
"""Version of the strict rules below; recorded with verdicts through the judge spec. 2: options that name clips by
their order ("the first clip", ...) are also read from "the first one", "clip 2", "audio 2". 3: items of up to 26
options (A-Z); a final answer on the last line ("so the answer is (K)", "Answer: K", "**K**") is read first; the
word-letters A and I are not read from prose."""


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

WORD_LETTERS = frozenset("AI")
"""Letters that are also English words (the article "A", the pronoun "I"): read as a letter only where they cannot
be the word (not before a lower-case word, and "i" never in lower case)."""

_HEDGE_RE = re.compile("|".join(HEDGES), re.IGNORECASE)
_MARKDOWN_RE = re.compile(r"[*_`#]+")
_ARTICLE_START_RE = re.compile(r"^[AI]\s+[a-z]")  # "A dog is barking", "I think ...": the word, not the option
_WORD_AFTER_RE = re.compile(r"\s+[a-z]")
_FINAL_STATED_RE = re.compile(
    r"(?:\b((?i:answer|option|choice))\b(?:\s+(?i:is|would be|should be|must be|will be))?\s*[:：]?\s*"
    r"(?:(?i:option|choice)\s+)?)([(\[]?)([A-Z])(?![A-Za-z0-9'’])"
)
_FINAL_BOLD_RE = re.compile(r"\*\*\s*[(\[]?([A-Z])[)\]]?\s*\*\*\s*[.!]?\s*$")
_FINAL_BARE_RE = re.compile(r"^[(\[]?([A-Z])[)\]]?[.!]?$")
_SEPARATORS = ".:,;-–—"


@functools.lru_cache(maxsize=32)
def _patterns(span: str) -> dict[str, re.Pattern[str]]:
    """The prose patterns for the letters ``span`` (A-D for AIR-Bench's items, the item's own letters beyond)."""
    upper = f"A-{span[-1]}"
    both = f"{upper}{upper.lower()}"
    standalone = "".join(k for k in span[1:] if k not in WORD_LETTERS)
    return {
        "stated": re.compile(
            r"(?:\b(?:answer|option|choice)\b(?:\s+(?:is|would be|should be|must be))?\s*[:：]?\s*|"
            r"\b(?:i (?:choose|pick|select|would choose|would say)|it(?:'s| is)|correct (?:answer|option) is)\s+)"
            rf"\(?([{both}])\)?(?![A-Za-z0-9])",
            re.IGNORECASE,
        ),
        "leading": re.compile(rf"^\(?([{upper}])(?=$|[).:\],;\s–—-])"),
        "bare": re.compile(r"^\(?\[?([A-Za-z])\]?\)?[.!:]?$"),
        "standalone": re.compile(rf"(?<![A-Za-z0-9'])\(?([{standalone}])\)?(?![A-Za-z0-9'])"),
        "or": re.compile(rf"(?<![A-Za-z])\(?([{upper}])\)?\s*(?:or|and|/|,)\s*\(?([{upper}])\)?(?![A-Za-z])"),
    }


def reading_letters(n_choices: int) -> str:
    """The letters the strict extractor looks for in prose for an item of ``n_choices`` options.

    A-D for an item of two to four options (AIR-Bench's rules, unchanged); the item's own letters beyond that.
    """
    return LETTERS[: max(len(AIRBENCH_LETTERS), n_choices)]


def official_letters(n_choices: int) -> str:
    """The letters the official first/second-to-last character rule accepts for an item of ``n_choices`` options.

    The official script accepts A-D whatever the item (a letter past a binary item's options is read and counts
    wrong); generalised, an item of more than four options accepts its own letters, A to its last.
    """
    return LETTERS[: max(len(AIRBENCH_LETTERS), n_choices)]


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
    if len(choices) > len(_ORDINALS):
        return None
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


def _word_letter(text: str, end: int, letter: str) -> bool:
    """Whether ``letter``, read in ``text`` up to ``end``, is the English word ("A dog", "I think"), not an option."""
    if letter.upper() not in WORD_LETTERS:
        return False
    return letter == "i" or bool(_WORD_AFTER_RE.match(text, end))


def _last_line(response: str) -> str:
    lines = [line.strip() for line in response.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _final_answer(response: str, choices: list[str]) -> Extraction | None:
    """The final answer stated on the answer's last line (a chain of thought's conclusion), or None when there is none.

    See the module docstring for the forms read.
    """
    n = len(choices)
    valid = LETTERS[:n]
    raw = _last_line(response)
    if not raw:
        return None
    line = _clean(raw)
    letter: str | None = None
    how = ""
    keyword = "answer"
    bare = _FINAL_BARE_RE.match(line)
    bold = _FINAL_BOLD_RE.search(raw)
    if bare and len(response.strip().splitlines()) > 1:
        letter, how, rest = bare.group(1), "final letter", ""
    elif bold:
        letter, how, rest = bold.group(1), "final answer in bold", ""
    else:
        stated = list(_FINAL_STATED_RE.finditer(line))
        if not stated:
            return None
        match = stated[-1]
        keyword, letter = match.group(1).casefold(), match.group(3)
        rest = line[match.end() :]
        closed = rest[:1] in ")]"
        if closed:
            rest = rest[1:]
        stripped = rest.strip()
        if stripped and not re.fullmatch(r"[.!]+", stripped):
            if not (rest[:1] in _SEPARATORS or (closed and rest[:1].isspace())):
                return None  # "the answer is B because ...", "... answer is A dog": not a final statement
        how = "final stated answer"
    if letter not in valid:
        return Extraction(None, f"final answer {letter} is not an option (only {valid[0]}-{valid[-1]})")
    index = valid.index(letter)
    text = rest.strip().lstrip(_SEPARATORS + " ").strip()
    if text:
        others = {m.group(1) for m in _patterns(reading_letters(n))["standalone"].finditer(text)} - {letter}
        if _HEDGE_RE.search(text) or re.search(r"\b(?:or|maybe|perhaps|possibly)\b", text, re.IGNORECASE) or others:
            return Extraction(None, f"final answer {letter} is hedged or followed by another option")
        mentions = _choice_mentions(text, choices)
        if mentions and index not in mentions:
            return Extraction(None, f"final answer {letter} contradicts the text of option {LETTERS[mentions[0]]}")
        if keyword != "answer" and index not in mentions:
            return None  # "Unlike option K, this sound ...": an option named in passing, not the answer
    return Extraction(index, how)


def extract_choice(response: str | None, choices: list[str]) -> Extraction:
    """Read which option a free-text answer chose (strict protocol).

    Args:
        response: The model's answer.
        choices: The options in order (2 to 26).

    Returns:
        An :class:`Extraction`: the option index with how it was read, or None with the reason.
    """
    n = len(choices)
    valid = LETTERS[:n]
    patterns = _patterns(reading_letters(n))
    text = _clean(response or "")
    if not text:
        return Extraction(None, "empty answer")

    bare = patterns["bare"].match(text)
    if bare:
        letter = bare.group(1).upper()
        if letter in valid:
            return Extraction(valid.index(letter), "bare letter")
        return Extraction(None, f"letter {letter} is not an option (only {', '.join(valid)})")

    final = _final_answer(response or "", choices)
    if final is not None:
        return final

    pair = next(
        (
            m
            for m in patterns["or"].finditer(text)
            if m.group(1) != m.group(2) and not _word_letter(text, m.end(2), m.group(2))
        ),
        None,
    )
    if pair:
        return Extraction(None, f"names several options ({pair.group(1)} and {pair.group(2)})")

    stated = {
        m.group(1).upper() for m in patterns["stated"].finditer(text) if not _word_letter(text, m.end(1), m.group(1))
    }
    stated = {s for s in stated if not (s == "A" and _looks_like_article(text, s))}
    leading = patterns["leading"].match(text)
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

    standalone = {m.group(1) for m in patterns["standalone"].finditer(text)}
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

    Generalised to items of more than four options (the official scripts never saw one): the accepted letters are
    the item's own, A to its last (:func:`official_letters`), by the same rule; an item of two to four options is
    read with A-D exactly as the script does.

    Args:
        response: The model's answer.
        choices: The options (only their number matters).

    Returns:
        The extraction; ``choice`` may index past ``choices`` for a letter the item does not have.
    """
    letters = official_letters(len(choices))
    text = (response or "").strip().replace("\n", "")
    if not text or text == "None":
        return Extraction(None, "official: empty or None response")
    if text[0] in letters:
        return Extraction(letters.index(text[0]), "official: first character")
    if len(text) >= 2 and text[-2] in letters:
        return Extraction(letters.index(text[-2]), "official: second-to-last character")
    return Extraction(None, "official: no letter in first or second-to-last character")
