r"""Parsers of a Chat judge's reply: the two 1-10 scores it gave Assistant 1 and Assistant 2.

Two parsers, shared by the Chat judge and by :mod:`airbench_nb.scoring`:

- :func:`parse_scores_official` reproduces the official AIR-Bench ``cal_score.py``: strip the reply, delete its
  newlines, split on one space, and accept exactly two parts that ``int()`` reads. ``"8\n7"`` becomes ``"87"``
  and fails; ``"7.5 8"`` fails; ``"8  7"`` (two spaces) splits into three parts and fails.
- :func:`parse_scores_strict` reads the two scores from the shapes judges actually write (``"8 7"``, ``"8\n7"``,
  ``"8, 7"``, ``"Assistant 1: 8\nAssistant 2: 7"``, ``"8/10 and 7/10"``, a score line inside an explanation, ...)
  and returns the reason when it cannot. It never guesses and never returns 0.

Decision on decimals: the strict parser accepts them (``"7.5 8"`` gives ``(7.5, 8.0)``). A half point is an
explicit statement by the judge, not an ambiguity; rejecting it would only drop a judged item, as the official
parser does. Scores must lie in ``[1, 10]`` (:data:`SCORE_MIN`, :data:`SCORE_MAX`).
"""

from __future__ import annotations

import logging
import re

logger = logging.getLogger(__name__)

CHAT_PARSER_VERSION = "1"
"""Version of the strict rules below; bump it when a reply may parse differently."""

SCORE_MIN = 1.0
"""Lowest valid score on the AIR-Bench Chat scale."""

SCORE_MAX = 10.0
"""Highest valid score on the AIR-Bench Chat scale."""

_NUMBER_RE = re.compile(r"(?:(?<=\s)|^)-?\d+(?:\.\d+)?(?![\d\w])|(?<![\w.\-])\d+(?:\.\d+)?(?![\d\w])")
_DENOMINATOR_RE = re.compile(r"\s*(?:/\s*10(?:\.0+)?|\bout\s+of\s+10(?:\.0+)?)(?![\d.]*\d)", re.IGNORECASE)
_SCALE_RE = re.compile(r"(?<![\w.])1\s*(?:to|-|–|—)\s*10(?![\w.]*\d)", re.IGNORECASE)
_LABEL_WORD = r"(?:assistant|answer|response)"
_BOTH_LABELS_RE = re.compile(rf"\b{_LABEL_WORD}s?\s*(?:#\s*)?1\s*(?:and|&|,)\s*(?:#\s*)?2\b", re.IGNORECASE)
_LABEL_RE = re.compile(rf"\b{_LABEL_WORD}\s*(?:#\s*)?([12])(?![\d.]*\d)", re.IGNORECASE)
_FILLER = (
    r"(?:\s*(?:[:=\-–—(\[*]|'s|’s|\b(?:receives?|received|gets?|got|scored?|scores|earns?|earned|deserves?|is|"
    r"was|rated|rating|a|an|of|the|overall|final|total|given|with)\b)\s*)*"
)
_LABELLED_RE = re.compile(
    rf"\b{_LABEL_WORD}\s*(?:#\s*)?([12])(?![\d.]*\d){_FILLER}(-?\d+(?:\.\d+)?)(?![\d\w])",
    re.IGNORECASE,
)


def parse_scores_official(reply: str | None) -> tuple[int, int] | None:
    r"""Parse a judge reply exactly as the official AIR-Bench script does.

    The script strips the reply, replaces ``"\n"`` with ``""``, splits on a single space and needs exactly two
    parts that ``int()`` accepts. A score above 10 is a failure too: the script's ``exit(1)`` for it sits inside
    a bare ``try``/``except:``, which catches the ``SystemExit``, so the reply is counted in ``fail_num`` and
    skipped and the run goes on. Scores below 1 (``"0 5"``, ``"-1 5"``) are accepted, as the script does.

    Args:
        reply: The judge's raw reply (None counts as a failure).

    Returns:
        ``(score_1, score_2)`` as integers, or None when the official script would count a failure.
    """
    if not isinstance(reply, str):
        return None
    parts = reply.strip().replace("\n", "").split(" ")
    if len(parts) != 2:
        return None
    try:
        first, second = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    if first > SCORE_MAX or second > SCORE_MAX:
        return None
    return first, second


def _numbers(text: str) -> list[float]:
    return [float(m.group(0)) for m in _NUMBER_RE.finditer(text)]


def _checked(scores: list[float], how: str) -> tuple[float, float] | str:
    if len(scores) != 2:
        return f"{how}: found {len(scores)} numbers, expected two"
    for score in scores:
        if not SCORE_MIN <= score <= SCORE_MAX:
            return f"{how}: score {score:g} is outside {SCORE_MIN:g}-{SCORE_MAX:g}"
    return scores[0], scores[1]


def _labelled(text: str) -> tuple[float, float] | str | None:
    """Scores stated next to "Assistant 1" and "Assistant 2"; None when the reply does not label both."""
    found: dict[str, set[float]] = {"1": set(), "2": set()}
    for match in _LABELLED_RE.finditer(text):
        found[match.group(1)].add(float(match.group(2)))
    if not found["1"] or not found["2"]:
        return None
    if len(found["1"]) > 1 or len(found["2"]) > 1:
        values = ", ".join(f"{k}: {sorted(v)}" for k, v in found.items() if len(v) > 1)
        return f"labelled scores: conflicting scores for one assistant ({values})"
    return _checked([next(iter(found["1"])), next(iter(found["2"]))], "labelled scores")


def parse_scores_strict(reply: str | None) -> tuple[float, float] | str:
    r"""Read the two scores (Assistant 1, Assistant 2) from a judge reply, or say why not.

    Rules, in order:

    1. Scores labelled ``Assistant 1`` / ``Assistant 2`` (also ``Answer``/``Response``), e.g.
       ``"Assistant 1: 8\nAssistant 2: 7"`` or ``"Assistant 1 receives a score of 8, Assistant 2 receives 7"``,
       take priority. Conflicting labelled scores are a failure.
    2. Otherwise the labels' own digits are removed, as are ``/10`` and ``out of 10`` denominators and scale
       mentions (``1 to 10``, ``1-10``), and the first line that holds a number is read: if it holds exactly
       two numbers, they are the scores (the judge prompt asks for them on the first line, before the
       explanation).
    3. Otherwise the whole reply must hold exactly two numbers.

    Every score must lie in 1-10 (decimals accepted); anything else is a failure with its reason. The parser
    never guesses a score and never returns 0.

    Args:
        reply: The judge's raw reply.

    Returns:
        ``(score_1, score_2)`` as floats, or a string with the reason the reply could not be read.
    """
    if not isinstance(reply, str) or not reply.strip():
        return "empty reply"
    text = reply.replace("**", "").replace("`", "")
    labelled = _labelled(text)
    if labelled is not None:
        return labelled
    text = _BOTH_LABELS_RE.sub(" ", text)
    text = _LABEL_RE.sub(" ", text)
    text = _DENOMINATOR_RE.sub(" ", text)
    text = _SCALE_RE.sub(" ", text)
    for line in text.splitlines():
        numbers = _numbers(line)
        if not numbers:
            continue
        if len(numbers) == 2:
            return _checked(numbers, "score line")
        break
    return _checked(_numbers(text), "whole reply")
