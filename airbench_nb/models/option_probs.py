"""Option-letter probabilities at the first answer position, for calibration.

A single-choice item asked for a letter (Foundation, the tiered benchmark's tier A, MMSU; not the items asked for an
option's text, ``ANSWERED_BY_TEXT``) is answered by a letter. Where a backend exposes its next-token distribution, the
probability of each option letter at the answer's first position says how sure the model is of each option:

- ``hf:`` (:mod:`airbench_nb.models.hf`): the raw logits of the first generated step of the real ``generate`` call
  (``output_logits=True``: before any logits processor, so that temperature, top-p or a checkpoint's repetition
  penalty do not reshape them), softmaxed over the whole vocabulary in float32 (:func:`from_logits`).
- ``openai:`` with ``logprobs=True`` (:mod:`airbench_nb.models.openai_api`): the ``top_logprobs`` of the first
  answer token (:func:`from_top_logprobs`); a letter outside the top N gets probability 0 (the API says no more),
  so that the letters' mass is a lower bound there.

Spellings: a tokenizer may hold a letter bare (``A``) and after a space (`` A``, BPE's ``ĠA``); a model may begin
its answer with either. Each letter's probability is the **sum over its single-token spellings** (bare and
space-prefixed; for an API, every top token that is the letter once stripped of whitespace): both are the same
answer, and taking only one spelling would drop probability that the model did give that letter. A spelling that is
not one token (a tokenizer that splits it) is left out and named in :attr:`OptionProbs.source`. The letters'
probabilities are then renormalised over the item's option letters; their sum before that is
:attr:`OptionProbs.mass` (how much of the distribution answers with a letter at all).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

from airbench_nb.records import LETTERS, OptionProbs

logger = logging.getLogger(__name__)

SPELLINGS: tuple[str, ...] = ("{}", " {}")
"""How a letter may be written as the answer's first token: bare, and after a space."""


def option_letters(item: Any, turn: int = 0) -> list[str] | None:
    """The option letters of an item asked for a letter (``A``, ``B``, ...), or None for any other item or turn."""
    if turn != 0:
        return None
    letters = getattr(item, "option_letters", None)
    return letters() if letters is not None else None


def letter_token_ids(tokenizer: Any) -> dict[str, list[int]]:
    """Per letter A-Z, the token ids of its single-token spellings (:data:`SPELLINGS`), distinct across letters.

    A tokenizer that cannot encode (a wrapper without ``encode``) gives ``{}``: its model gives no option
    probabilities.
    """
    ids: dict[str, list[int]] = {}
    seen: set[int] = set()
    for letter in LETTERS:
        for spelling in SPELLINGS:
            try:
                encoded = tokenizer.encode(spelling.format(letter), add_special_tokens=False)
            except (TypeError, ValueError, AttributeError, NotImplementedError) as exc:
                logger.info("tokenizer %s cannot encode letters (%s): no option probabilities", type(tokenizer), exc)
                return {}
            if len(encoded) == 1 and int(encoded[0]) not in seen:
                seen.add(int(encoded[0]))
                ids.setdefault(letter, []).append(int(encoded[0]))
    return ids


def _spelled(ids: Mapping[str, Sequence[int]], letters: Sequence[str]) -> str:
    """How the letters were spelled, in words (for :attr:`OptionProbs.source`)."""
    counts = {len(ids.get(letter, ())) for letter in letters}
    if counts == {2}:
        return "letters spelled 'A' and ' A', summed"
    return "letters as single tokens only (" + ", ".join(f"{k}: {len(ids.get(k, ()))}" for k in letters) + ")"


def from_logits(logprobs: Any, letters: Sequence[str], ids: Mapping[str, Sequence[int]]) -> OptionProbs | None:
    """Option probabilities from one row of next-token log-probabilities (a 1-D torch tensor over the vocabulary).

    Args:
        logprobs: ``log_softmax`` of the first generated step's logits for this row.
        letters: The item's option letters.
        ids: :func:`letter_token_ids` of the model's tokenizer.

    Returns:
        The probabilities, or None when a letter has no single-token spelling or the letters get no mass at all.
    """
    if any(not ids.get(letter) for letter in letters):
        return None
    size = int(logprobs.shape[-1])
    raw: dict[str, float] = {}
    for letter in letters:
        raw[letter] = float(sum(math.exp(float(logprobs[i])) for i in ids[letter] if i < size))
    return _renormalised(raw, "hf: first generated token, " + _spelled(ids, letters))


def from_top_logprobs(top: Sequence[tuple[str, float]], letters: Sequence[str], n: int) -> OptionProbs | None:
    """Option probabilities from an API's ``top_logprobs`` of the first answer token: ``[(token, logprob), ...]``.

    A token is a letter when, stripped of whitespace, it is one of ``letters`` (upper case only: ``a`` is a word);
    its spellings are summed. None when no option letter is among the top tokens.
    """
    raw = dict.fromkeys(letters, 0.0)
    for token, logprob in top:
        key = token.strip()
        if key in raw and math.isfinite(logprob):
            raw[key] += math.exp(logprob)
    return _renormalised(raw, f"openai: top_logprobs of the first answer token (top {n}; letters outside it 0)")


def _renormalised(raw: Mapping[str, float], source: str) -> OptionProbs | None:
    mass = sum(raw.values())
    if not mass > 0.0 or not math.isfinite(mass):
        return None
    probs = {letter: value / mass for letter, value in raw.items()}
    return OptionProbs(probs=probs, mass=min(mass, 1.0), source=source)


__all__ = ["SPELLINGS", "from_logits", "from_top_logprobs", "letter_token_ids", "option_letters"]
