"""Spoken answers scored by back-transcription: WER and CER of ``tts`` items, answer accuracy of ``spoken_answer``.

A model that answers with audio (:attr:`airbench_nb.records.Response.audio`) is transcribed back by an ASR judge
(spec ``asr:<model spec>``, e.g. ``asr:faster-whisper:tiny.en-bundled``): each of its verdicts holds the transcript
in ``raw``, or in ``parse_error`` why there is none (no audio output, audio missing or unreadable or changed since
it was written, silent output, ...). The rules, stated once:

- **Which transcripts count.** One ASR judge's verdicts: the first of ``judges`` (in priority order) that has any;
  with ``judges`` None there must be only one ASR judge among the verdicts (else a ValueError asks to choose).
- **Failures.** No response, a response error, no verdict of the chosen judge, or a verdict with a
  ``parse_error``: the item stays in the denominator with an empty transcript (``tts``: every reference word
  deleted; ``spoken_answer``: not heard), and is counted with its reason. Among them ``language not transcribed:
  ...``: an ASR judge that cannot take the item's language (an English-only Whisper and a German answer) transcribes
  nothing rather than write German speech down as English (:data:`~airbench_nb.judge.asr.LANGUAGE_REFUSED`); judge
  such answers with a multilingual model (``asr:faster-whisper:base-bundled``).
- **Not measured.** An answer in a language the ASR judge cannot transcribe (an English-only Whisper and a German
  answer: its verdict says ``language not transcribed: ...``) measures the judge, not the model: it is left out of
  every score and counted in the failure reasons as ``not measured (left out of the score): ...`` (:func:`measured`).
- **Languages.** When the items span several languages, each task has one entry per language beside the pooled one
  (``tts (de)``, ``tts (en)``), each scored the same way.
- **tts** (metric ``speech_output``, section ``speech_output``): the transcript against :attr:`text` with Whisper's
  normalisation (:mod:`airbench_nb.scoring.wer`, jiwer's alignment). The entry's value is the corpus WER (total
  errors / total reference words) with a 95% bootstrap interval over utterances; the summary adds seed-tts-eval's
  per-utterance mean WER and the corpus CER (characters of the normalised texts, spaces removed).
- **spoken_answer** (metric ``spoken_answer``, section ``spoken_answer``): right when an accepted answer, normalised
  the same way, appears in the normalised transcript on word boundaries (``"25"`` is heard in ``"it is 25"``, not in
  ``"125"``); the value is the accuracy with a bootstrap interval. WER and accuracy never share a section.
- **Enumerations** (``spoken_answer``): the accepted answers of the questions scored together are the
  *candidates* (each question's answers, normalised, are one). A transcript that names more than one candidate is
  an enumeration, not an answer: it is scored wrong even when its own answer is among them (else an answer listing
  every candidate would score 100%), and counted (:attr:`SpeechOutputSummary.spoken_answer_enumerations`).
  Candidates are found on word boundaries, longest first and without overlap (``"24"`` is not also ``"4"``); words
  the spoken question itself says (``meta["spoken_question"]``: "two" and "three" in "What is two plus three?") name
  no candidate. A set of one question has one candidate: no enumeration can be seen there.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from airbench_nb.records import Response, SpeechGenerationItem, Verdict, cluster_of
from airbench_nb.score_table import ScoreEntry, ScoreSection
from airbench_nb.scoring.metric_base import BaseMetric
from airbench_nb.scoring.outcomes import current_verdicts, failure_text, latest_responses
from airbench_nb.scoring.text_answers import empty_entry, interval_entry

logger = logging.getLogger(__name__)

ASR_PREFIX = "asr:"
"""Judge specs of ASR judges start with this."""

NO_VERDICT = "no transcript: no verdict by the ASR judge"
"""Failure reason of an answered item that the chosen ASR judge did not transcribe."""


def asr_verdicts(verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None) -> dict[str, Verdict]:
    """The chosen ASR judge's verdicts of the items ``uids``, by uid (the last per uid wins).

    Args:
        verdicts: Verdicts of one model (current ones: not stale).
        uids: The items scored.
        judges: Judge specs in priority order; None: the only ASR judge present.

    Raises:
        ValueError: When ``judges`` is None and several ASR judges are present.
    """
    relevant = [v for v in verdicts if v.uid in uids and v.judge.startswith(ASR_PREFIX)]
    present = sorted({v.judge for v in relevant})
    if not present:
        return {}
    if judges is None:
        if len(present) > 1:
            raise ValueError(f"transcripts of several ASR judges ({', '.join(present)}): pass judges= to choose one")
        judge = present[0]
    else:
        usable = [j for j in judges if j in present]
        if not usable:
            logger.warning("no transcripts by %s (ASR judges present: %s)", list(judges), present)
            return {}
        judge = usable[0]
    return {v.uid: v for v in relevant if v.judge == judge}


@dataclass(frozen=True)
class SpokenOutcome:
    """One spoken answer as transcribed back, ready to score."""

    uid: str
    """The item's uid."""
    task: str
    """``tts`` or ``spoken_answer``."""
    language: str
    """The language it must be spoken in."""
    text: str | None
    """``tts``: the text asked for."""
    answers: tuple[str, ...]
    """``spoken_answer``: the accepted answers."""
    transcript: str | None
    """The ASR judge's transcript; None for a failure."""
    failure: str | None
    """Why there is no transcript; None when there is one."""
    judge: str | None
    """The ASR judge whose verdict was read; None when there was none."""
    question: str | None = None
    """``spoken_answer``: the question as spoken (``meta["spoken_question"]``), whose words name no candidate."""
    cluster: str = ""
    """The item's cluster (:func:`airbench_nb.records.cluster_of`); empty: the item on its own."""


def spoken_outcome(item: SpeechGenerationItem, response: Response | None, verdict: Verdict | None) -> SpokenOutcome:
    """The outcome of one item (see the module docstring for the failures)."""
    failure = failure_text(response)
    if response is not None and failure == "response has no text":
        failure = None  # a spoken answer may come without text
    transcript = None
    if failure is None:
        if verdict is None:
            failure = NO_VERDICT
        elif verdict.parse_error is not None:
            failure = verdict.parse_error
        elif verdict.raw is None:
            failure = "no transcript: the verdict holds none"
        else:
            transcript = verdict.raw
    return SpokenOutcome(
        uid=item.uid,
        task=item.task,
        language=item.language,
        text=item.text,
        answers=tuple(item.answers),
        transcript=transcript,
        failure=failure,
        judge=verdict.judge if verdict is not None else None,
        question=spoken if isinstance(spoken := item.meta.get("spoken_question"), str) else None,
        cluster=cluster_of(item),
    )


def char_errors(reference: str, hypothesis: str, language: str) -> tuple[int, int]:
    """(character errors, reference characters) of two texts after Whisper's normalisation, spaces removed."""
    import jiwer

    from airbench_nb.scoring.wer import normalize

    ref = "".join(normalize(reference, language).split())
    hyp = "".join(normalize(hypothesis, language).split())
    if not ref:
        return 0, 0
    if not hyp:
        return len(ref), len(ref)
    out = jiwer.process_characters(ref, hyp)
    return out.substitutions + out.deletions + out.insertions, len(ref)


def heard(answers: Sequence[str], transcript: str | None, language: str) -> bool:
    """Whether an accepted answer is in the transcript (both normalised; whole words)."""
    from airbench_nb.scoring.wer import normalize

    if not transcript:
        return False
    said = f" {normalize(transcript, language)} "
    return any(f" {form} " in said for form in (normalize(a, language) for a in answers) if form)


def _forms(answers: Sequence[str], language: str) -> frozenset[tuple[str, ...]]:
    """The accepted answers normalised (as :func:`heard` reads them), as word tuples; empty ones dropped."""
    from airbench_nb.scoring.wer import normalize

    return frozenset(words for a in answers if (words := tuple(normalize(a, language).split())))


def _contains(words: Sequence[str], phrase: tuple[str, ...]) -> bool:
    size = len(phrase)
    return any(tuple(words[i : i + size]) == phrase for i in range(len(words) - size + 1))


def candidates_named(outcome: SpokenOutcome, candidates: Sequence[frozenset[tuple[str, ...]]]) -> int:
    """How many candidates the outcome's transcript names (see the module docstring; 0 without a transcript).

    Args:
        outcome: One ``spoken_answer`` outcome.
        candidates: The candidates of its set: each question's accepted answers as :func:`_forms` gives them.
    """
    from airbench_nb.scoring.wer import normalize

    if not outcome.transcript:
        return 0
    own = _forms(outcome.answers, outcome.language)
    said = normalize(outcome.transcript, outcome.language).split()
    asked = normalize(outcome.question, outcome.language).split() if outcome.question else []
    phrases: dict[tuple[str, ...], object] = {}
    for index, forms in enumerate(candidates):
        for form in forms:
            phrases.setdefault(form, index)
    for form in own:
        phrases[form] = "own"  # a form of its own answer names its own candidate, whoever else accepts it
    taken = [False] * len(said)
    named: set[object] = set()
    for phrase in sorted(phrases, key=lambda p: (-len(p), p)):
        size = len(phrase)
        for start in range(len(said) - size + 1):
            if tuple(said[start : start + size]) != phrase or any(taken[start : start + size]):
                continue
            taken[start : start + size] = [True] * size
            if not _contains(asked, phrase):
                named.add(phrases[phrase])
    return len(named)


def _answer_values(outcomes: Sequence[SpokenOutcome]) -> tuple[list[float], int]:
    """Per outcome 1.0 when its answer is heard and it names no other candidate; and the enumerations counted."""
    candidates = list(dict.fromkeys(_forms(o.answers, o.language) for o in outcomes))
    values, enumerations = [], 0
    for o in outcomes:
        listed = candidates_named(o, candidates) > 1
        enumerations += listed
        values.append(float(heard(o.answers, o.transcript, o.language) and not listed))
    if enumerations:
        logger.warning(
            "%d spoken answer(s) name more than one candidate answer: enumerations, scored wrong", enumerations
        )
    return values, enumerations


@dataclass(frozen=True)
class SpeechOutputSummary:
    """One model's spoken answers: back-transcription WER/CER of ``tts`` items, accuracy of ``spoken_answer``."""

    wer: float | None
    """Corpus WER of the ``tts`` items (fraction; can pass 1); None without any."""
    wer_ci: tuple[float, float] | None
    """Its 95% bootstrap interval over utterances; None without replicates."""
    cer: float | None
    """Corpus CER of the ``tts`` items (normalised characters, spaces removed)."""
    cer_ci: tuple[float, float] | None
    """Its 95% bootstrap interval over utterances."""
    per_utterance_wer: float | None
    """seed-tts-eval's mean of the utterance WERs."""
    n: int
    """``tts`` items scored (failures included as empty transcripts)."""
    failures: int
    """``tts`` items without a transcript."""
    failure_reasons: dict[str, int]
    """``tts`` failures by reason, most common first (references that normalise to nothing as ``skipped: ...``)."""
    judge: str | None
    """The ASR judge whose transcripts were read."""
    spoken_answer_accuracy: float | None = None
    """Share of ``spoken_answer`` items whose accepted answer is heard; None without any."""
    spoken_answer_ci: tuple[float, float] | None = None
    """Its 95% bootstrap interval."""
    spoken_answer_n: int = 0
    """``spoken_answer`` items scored."""
    spoken_answer_failures: int = 0
    """``spoken_answer`` items without a transcript (counted not heard)."""
    spoken_answer_failure_reasons: dict[str, int] = field(default_factory=dict)
    """Their reasons."""
    spoken_answer_enumerations: int = 0
    """``spoken_answer`` items whose transcript names more than one candidate answer: scored wrong (see the module
    docstring)."""


def _ci(entry: ScoreEntry) -> tuple[float, float] | None:
    return (entry.ci_low, entry.ci_high) if entry.ci_low is not None and entry.ci_high is not None else None


def _reasons(outcomes: Sequence[SpokenOutcome]) -> Counter[str]:
    return Counter(o.failure for o in outcomes if o.failure is not None)


NOT_MEASURED = "not measured (left out of the score)"
"""How the failure reasons name the answers the ASR judge could not transcribe (their language), which no score
counts: the judge's limit, not the model's failure."""


def measured(outcomes: Sequence[SpokenOutcome]) -> tuple[list[SpokenOutcome], Counter[str]]:
    """The outcomes a score counts, and those left out by reason.

    An answer in a language the ASR judge cannot transcribe (its verdict's ``parse_error`` begins with
    :data:`~airbench_nb.judge.asr.LANGUAGE_REFUSED`: an English-only Whisper and a German answer) measures the judge,
    not the model: it is left out of the WER and the accuracy, and counted as ``not measured (left out of the score):
    <reason>``. A multilingual ASR judge (``asr:faster-whisper:base-bundled``) measures it.
    """
    from airbench_nb.judge.asr import LANGUAGE_REFUSED

    kept: list[SpokenOutcome] = []
    left_out: Counter[str] = Counter()
    for outcome in outcomes:
        if outcome.failure is not None and outcome.failure.startswith(LANGUAGE_REFUSED):
            left_out[f"{NOT_MEASURED}: {outcome.failure}"] += 1
        else:
            kept.append(outcome)
    return kept, left_out


@dataclass(frozen=True)
class _TtsScores:
    wer: ScoreEntry
    cer: ScoreEntry
    per_utterance: float | None
    reasons: Counter[str]


def _tts_scores(outcomes: Sequence[SpokenOutcome], reps: int, seed: int) -> _TtsScores:
    from airbench_nb.scoring.wer import SkippedUtterance, corpus_wer, utterance_errors

    utterances = [utterance_errors(o.text or "", o.transcript, o.language, o.uid) for o in outcomes]
    summary = corpus_wer(utterances, reps=reps, seed=seed)
    wer = ScoreEntry(
        value=summary.wer, n=summary.n, failures=summary.failed, ci_low=summary.ci_low, ci_high=summary.ci_high
    )
    scored = [o for o, u in zip(outcomes, utterances, strict=True) if not isinstance(u, SkippedUtterance)]
    chars = [char_errors(o.text or "", o.transcript or "", o.language) for o in scored]
    failed = sum(o.failure is not None for o in scored)
    cer = interval_entry([e for e, _ in chars], [c for _, c in chars], failed, reps, seed, "cer")
    reasons = _reasons(outcomes)
    reasons.update({f"skipped: {k}": v for k, v in summary.skipped_reasons.items()})
    return _TtsScores(wer, cer, summary.mean_wer, reasons)


def _answer_entry(outcomes: Sequence[SpokenOutcome], reps: int, seed: int) -> tuple[ScoreEntry, int]:
    values, enumerations = _answer_values(outcomes)
    failed = sum(o.failure is not None for o in outcomes)
    keys = [o.cluster or o.uid for o in outcomes]
    return interval_entry(values, [1.0] * len(values), failed, reps, seed, "spoken_answer", keys), enumerations


def speech_output_summary(
    items: Sequence[SpeechGenerationItem],
    responses: Sequence[Response],
    verdicts: Sequence[Verdict],
    judges: Sequence[str] | None = None,
    reps: int = 1000,
    seed: int = 0,
) -> SpeechOutputSummary:
    """One model's spoken-answer scores (for the analysis).

    Args:
        items: The items (other kinds are ignored).
        responses: One model's responses, in file order (the latest per uid counts).
        verdicts: That model's verdicts (stale ones, of an older response, are left out).
        judges: ASR judge specs in priority order; None: the only one present.
        reps: Bootstrap replicates (0: no intervals).
        seed: Bootstrap seed.

    Raises:
        ValueError: When ``judges`` is None and several ASR judges transcribed the answers.
    """
    own = [i for i in items if isinstance(i, SpeechGenerationItem)]
    latest, _ = latest_responses(responses)
    current, _ = current_verdicts(verdicts, latest)
    chosen = asr_verdicts(current, {i.uid for i in own}, judges)
    outcomes, left_out = measured([spoken_outcome(i, latest.get(i.uid), chosen.get(i.uid)) for i in own])
    tts = [o for o in outcomes if o.task == "tts"]
    answers = [o for o in outcomes if o.task == "spoken_answer"]
    scores = _tts_scores(tts, reps, seed)
    scores.reasons.update(left_out)
    accuracy, enumerations = _answer_entry(answers, reps, seed)
    return SpeechOutputSummary(
        wer=scores.wer.value,
        wer_ci=_ci(scores.wer),
        cer=scores.cer.value,
        cer_ci=_ci(scores.cer),
        per_utterance_wer=scores.per_utterance,
        n=scores.wer.n,
        failures=scores.wer.failures,
        failure_reasons=dict(scores.reasons.most_common()),
        judge=next(iter({v.judge for v in chosen.values()}), None),
        spoken_answer_accuracy=accuracy.value,
        spoken_answer_ci=_ci(accuracy),
        spoken_answer_n=accuracy.n,
        spoken_answer_failures=accuracy.failures,
        spoken_answer_failure_reasons=dict(_reasons(answers).most_common()),
        spoken_answer_enumerations=enumerations,
    )


class _SpokenMetric(BaseMetric):
    """What the two spoken-answer metrics share: the ASR judge's verdicts, one task's items."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    task: ClassVar[str] = ""
    protocol_free: ClassVar[bool] = True
    """Its section is the same under both protocols (computed once by ``score_run``)."""

    def select(self, verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None) -> dict[str, Verdict]:
        """The chosen ASR judge's verdicts by uid (:func:`asr_verdicts`)."""
        return asr_verdicts(verdicts, uids, judges)

    def judges_used(self, chosen: Mapping[Any, Verdict]) -> list[str]:
        """The ASR judge (one at most)."""
        return sorted({v.judge for v in chosen.values()})

    def serves(self, item: Any) -> bool:
        """Whether the metric scores this item (a speech generation item of its task)."""
        return isinstance(item, SpeechGenerationItem) and item.task == self.task

    def outcomes(
        self, item: SpeechGenerationItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[SpokenOutcome]:
        """The item's outcome when it is of this metric's task (none otherwise); the same under both protocols."""
        if not self.serves(item):
            return []
        return [spoken_outcome(item, response, chosen.get(item.uid))]

    def entry(self, outcomes: Sequence[SpokenOutcome], reps: int, seed: int) -> tuple[ScoreEntry, Counter[str]]:
        """The section's one entry and its failure reasons."""
        raise NotImplementedError

    def aggregate(self, outcomes: Sequence[SpokenOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """One task entry (``tts`` or ``spoken_answer``), one per language when there are several, and the average.

        Answers the ASR judge cannot transcribe (:func:`measured`) are left out and counted under
        :data:`NOT_MEASURED` in the failure reasons; an empty section without items.
        """
        judges = sorted({o.judge for o in outcomes if o.judge is not None})
        kept, left_out = measured(outcomes)
        entry, reasons = self.entry(kept, reps, seed) if kept else (empty_entry(), Counter())
        tasks = {self.task: entry} if kept else {}
        languages = sorted({o.language for o in kept})
        if len(languages) > 1:
            for language in languages:
                tasks[f"{self.task} ({language})"] = self.entry(
                    [o for o in kept if o.language == language], reps, seed
                )[0]
        reasons.update(left_out)
        return ScoreSection(
            tasks=tasks,
            categories={},
            average=entry,
            n_items=len(kept),
            failed=sum(o.failure is not None for o in kept),
            failure_reasons=dict(reasons.most_common()),
            source=f"back-transcription: {', '.join(judges) or 'no ASR judge'}",
        )


class SpeechOutputWer(_SpokenMetric):
    """Corpus WER of ``tts`` answers transcribed back by an ASR judge (lower is better)."""

    name: ClassVar[str] = "speech_output"
    section: ClassVar[str] = "speech_output"
    task: ClassVar[str] = "tts"

    def entry(self, outcomes: Sequence[SpokenOutcome], reps: int, seed: int) -> tuple[ScoreEntry, Counter[str]]:
        """Corpus WER with its bootstrap interval over utterances."""
        scores = _tts_scores(outcomes, reps, seed)
        return scores.wer, scores.reasons


class SpokenAnswerAccuracy(_SpokenMetric):
    """Share of ``spoken_answer`` items whose accepted answer is heard in the back-transcription."""

    name: ClassVar[str] = "spoken_answer"
    section: ClassVar[str] = "spoken_answer"
    task: ClassVar[str] = "spoken_answer"

    def entry(self, outcomes: Sequence[SpokenOutcome], reps: int, seed: int) -> tuple[ScoreEntry, Counter[str]]:
        """Accuracy with its bootstrap interval (an enumeration of candidates is wrong)."""
        return _answer_entry(outcomes, reps, seed)[0], _reasons(outcomes)


__all__ = [
    "ASR_PREFIX",
    "NOT_MEASURED",
    "NO_VERDICT",
    "SpeechOutputSummary",
    "SpeechOutputWer",
    "SpokenAnswerAccuracy",
    "SpokenOutcome",
    "asr_verdicts",
    "candidates_named",
    "char_errors",
    "heard",
    "measured",
    "speech_output_summary",
    "spoken_outcome",
]
