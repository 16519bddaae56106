"""A model's answer to one item (:class:`Response`): text, spoken audio or a ranked list of classes."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from airbench_nb.records.base import Record, _now
from airbench_nb.records.checks import StrictInteger, check_relative_audio_path, check_uid

logger = logging.getLogger(__name__)


class ResponseAudio(Record):
    """A spoken answer: an audio file written beside the responses file, never inline in the JSONL."""

    path: str
    """Path of the file relative to the folder of the responses file (``audio/<uid>.wav``), forward slashes."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the file's bytes, as written; a file whose bytes differ is not this answer."""
    sample_rate: StrictInteger = Field(gt=0)
    """Sample rate in Hz."""
    duration_s: float = Field(ge=0)
    """Duration in seconds."""

    @field_validator("path")
    @classmethod
    def _path_relative(cls, value: str) -> str:
        return check_relative_audio_path(value)


class RankedLabel(BaseModel):
    """One task class in a ranked-list model's answer, with the score it was ranked by (tiers B and C)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    label: str = Field(min_length=1)
    """The task class, spelled as the item's choice it stands for."""
    score: float = Field(allow_inf_nan=False)
    """The model's score of the class: a probability for a classifier (the best of its mapped source labels), a
    logit-scaled audio-text cosine for CLAP. Comparable within one response only."""


class OptionProbs(BaseModel):
    """A model's probability of each option letter where its answer begins (:mod:`airbench_nb.analysis.calibration`).

    Read at the first generated position of a single-choice item asked for a letter: an ``hf:`` model's next-token
    distribution (raw logits, softmax over the vocabulary), an ``openai:`` model's ``top_logprobs`` of its first
    answer token. Never part of :meth:`Response.content_hash`: a judge judges the text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    probs: dict[str, float]
    """Probability of each of the item's option letters (``A``, ``B``, ... in option order), renormalised over those
    letters: they sum to 1. A letter the backend gave no probability for (outside an API's top-N) is 0."""
    mass: float = Field(ge=0.0, le=1.0 + 1e-6, allow_inf_nan=False)
    """The letters' probability before renormalising: how much of the model's next-token distribution answers with a
    letter at all (near 1 for a model that answers with the letter; small when it begins otherwise, "The answer ...";
    a lower bound for an API's top-N)."""
    source: str
    """How they were read: the backend and the spelling of the letter tokens (``hf: first generated token, letters
    spelled 'A'``; ``openai: top_logprobs of the first answer token (top 20)``)."""

    @field_validator("probs")
    @classmethod
    def _probs_distribution(cls, value: dict[str, float]) -> dict[str, float]:
        if len(value) < 2:
            raise ValueError(f"option probabilities need 2 or more option letters, got {sorted(value)}")
        bad = [k for k in value if len(k) != 1 or not "A" <= k <= "Z"]
        if bad:
            raise ValueError(f"option probabilities are keyed by option letters A-Z, got {bad}")
        if any(not (0.0 <= v <= 1.0 + 1e-6) for v in value.values()):
            raise ValueError(f"option probabilities must lie in [0, 1], got {value}")
        total = sum(value.values())
        if abs(total - 1.0) > 1e-4:
            raise ValueError(f"option probabilities must sum to 1 (renormalised over the options), got {total:.6f}")
        return value

    @property
    def letters(self) -> list[str]:
        """The option letters, in option order."""
        return sorted(self.probs)

    @property
    def vector(self) -> list[float]:
        """The probabilities in option order (A first)."""
        return [self.probs[k] for k in self.letters]


def check_ranking(ranking: list[RankedLabel]) -> list[RankedLabel]:
    """A ranking as :attr:`Response.ranking` takes it: each class once, best first.

    Raises:
        ValueError: For a class named twice or scores that rise (naming them).
    """
    if not ranking:
        return ranking
    labels = [r.label for r in ranking]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise ValueError(f"ranking names {', '.join(map(repr, twice))} more than once")
    for rank, (a, b) in enumerate(zip(ranking, ranking[1:], strict=False), start=1):
        if a.score < b.score:
            raise ValueError(
                f"ranking is not best first: {b.label!r} ({b.score:g}) ranked after {a.label!r} ({a.score:g}) "
                f"at rank {rank + 1}"
            )
    return ranking


class Response(Record):
    """A model's answer to one item (or the error that prevented one)."""

    uid: str
    """Uid of the item answered."""

    @field_validator("uid")
    @classmethod
    def _uid_clean(cls, value: str) -> str:
        return check_uid(value)

    model: str
    """Model spec that produced the answer (e.g. ``hf:Qwen/Qwen2-Audio-7B-Instruct``)."""
    text: str | None = None
    """The answer text; None when the item failed."""
    error: str | None = None
    """Why no answer was produced (bad audio, model error, ...); None on success."""
    prompt_hash: str | None = None
    """SHA-256 of the exact prompt sent, so that two runs can be compared item by item."""
    latency_s: float | None = None
    """Wall-clock seconds spent on this item (its share of the batch for batched backends)."""
    input_tokens: StrictInteger | None = None
    """Prompt tokens, when the backend reports them."""
    output_tokens: StrictInteger | None = None
    """Generated tokens, when the backend reports them."""
    turns: list[str] = Field(default_factory=list)
    """Multi-turn Chat: the answer to each turn, in order (``text`` is the first); empty for one-turn items. When a
    later turn fails, the answers so far are kept here and ``error`` says which turn failed."""
    generation: dict[str, Any] = Field(default_factory=dict)
    """The decoding settings the answer was made with (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``,
    greedy when temperature is 0; for a sampled answer also ``sampling``: ``samples``, the K asked, and
    ``samples_vary``, whether the backend samples); empty in files written before the field existed."""
    prompt_set: str | None = None
    """Name (or template file) of the prompt set the prompt was made from, so that it can be rebuilt from this
    record and the item (:func:`airbench_nb.prompts.item_prompt`); None in older files."""
    audio: ResponseAudio | None = None
    """The spoken answer, for models that answer with audio (``text`` then holds what the model said it said, when
    it says); None for text-only answers."""
    ranking: list[RankedLabel] = Field(default_factory=list)
    """A ranked-list model's task classes, best first (tiers B and C: a classifier through its label mapping, CLAP
    over the item's choices); ``text`` is the first. Empty for text answers, and in files written before the field
    existed."""
    sample: StrictInteger | None = Field(default=None, ge=0)
    """Which of the K sampled answers this is (0 to K-1), for a record of ``<kind>.samples.jsonl`` written by
    ``infer --samples K`` (:mod:`airbench_nb.runner.samples`); None for the run's main answer (every record of the
    main responses file). Left out of the JSON line when None, so that main responses files read as before."""
    option_probs: OptionProbs | None = None
    """A single-choice item's probability of each option letter at the answer's first position (``hf:`` models; an
    ``openai:`` model asked with ``logprobs``), for calibration (:mod:`airbench_nb.analysis.calibration`); None for
    other items, other backends, and in files written before the field existed. Not part of :meth:`content_hash`. Left
    out of the JSON line when None, so that the answers of other backends read as before."""
    created: datetime = Field(default_factory=_now)
    """When the response was recorded (UTC)."""

    @model_serializer(mode="wrap")
    def _without_unset_additions(self, handler: SerializerFunctionWrapHandler) -> Any:
        """The record's fields, but ``sample`` and ``option_probs`` when None (later additions most records lack)."""
        data = handler(self)
        if isinstance(data, dict):
            for name in ("sample", "option_probs"):
                if getattr(self, name) is None:
                    data.pop(name, None)
        return data

    @field_validator("ranking")
    @classmethod
    def _ranking_sorted(cls, value: list[RankedLabel]) -> list[RankedLabel]:
        return check_ranking(value)

    def content_hash(self) -> str:
        """SHA-256 of what a judge judges: uid, model, prompt hash, text, error, turns, audio hash, ranking, sample.

        Each turn's answer, the audio's hash, the ranking and the sample index count only when there are some.

        Not the time, latency or settings. A verdict records it (:attr:`Verdict.response_hash`), so a re-inferred
        answer is re-judged and a verdict of an older answer never scores a newer one; the same answer given again
        keeps its verdict. A one-turn response hashes exactly as in schema version 1, so that older verdicts keep
        matching.
        """
        import hashlib
        import json

        fields: list[Any] = [self.uid, self.model, self.prompt_hash, self.text, self.error]
        if self.turns:
            fields.append(list(self.turns))
        if self.audio is not None:
            fields.append({"audio_sha256": self.audio.sha256})
        if self.ranking:
            fields.append({"ranking": [[r.label, r.score] for r in self.ranking]})
        if self.sample is not None:
            fields.append({"sample": self.sample})
        return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode("utf-8")).hexdigest()

    def turn_answer(self, turn: int | None) -> str | None:
        """The answer to ``turn`` (None: the one-turn answer), or None when there is none.

        A one-turn response (or turn 0 of a response without ``turns``) is ``text``, None when the response is an
        error. Turn ``k`` of a multi-turn response is ``turns[k]``, which is kept even when a later turn failed.
        """
        if turn is None or (turn == 0 and not self.turns):
            return None if self.error is not None else self.text
        if turn < len(self.turns):
            return self.turns[turn]
        return None

    def turn_failure(self, turn: int | None) -> str:
        """Why this response has no answer to ``turn`` (the reason of a judge's ``no response`` verdict)."""
        if turn is None:
            return f"no response: {self.error}"
        why = self.error or "the response holds no answer to it"
        return f"no response: turn {turn + 1} not answered ({why})"
