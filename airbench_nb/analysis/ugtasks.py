"""UG-Bench's open-ended tasks of a run, per model: speech translation, captioning and spoken answers.

Each reads the score-table metrics' own summaries (:mod:`airbench_nb.scoring.translation`,
:mod:`airbench_nb.scoring.captioning`, :mod:`airbench_nb.scoring.speech_output`), so that ``analysis.json``, notebook
05 and the landing page show the numbers the score tables hold, with what the tables cannot carry: the sacrebleu
signature, every captioning metric, WER and CER of the back-transcription as a corpus rate and as seed-tts-eval's
per-utterance mean.

- ``translation[model] = {bleu, bleu_ci, chrf, chrf_ci, signature, n, failures, failure_reasons, by_pair}``: BLEU and
  chrF on 0-100 (sacrebleu's scale).
- ``captioning[model] = {n, failures, failure_reasons, embedder, metrics: {metric: {label, value, by_task}}}``:
  CIDEr-D (0-10 scale, as aac-metrics gives it), corpus BLEU and ROUGE-L when computed, and the embedding similarity
  of the kit's offline model (labelled as such: it is not FENSE).
- ``speech_output[model] = {wer, wer_ci, cer, per_utterance_wer, n, failures, failure_reasons, judge,
  spoken_answer: {accuracy, ci, n, failures, failure_reasons, enumerations}}``: fractions (``enumerations``: answers
  naming more than one candidate answer, scored wrong); a model that answered no speech-generation item with
  audio has every item failed ("no audio output"), so text-only models are listed, not hidden.

A model that answered no item of a family is absent from that family.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from airbench_nb.analysis_report import Captioning, SpeechOutput, Translation
from airbench_nb.records import Response, Verdict, is_control, is_perturbed

logger = logging.getLogger(__name__)


def _interval(ci: Sequence[float] | None) -> list[float] | None:
    return [float(ci[0]), float(ci[1])] if ci else None


@dataclass
class UgTasks:
    """The three families' summaries by model (see the module docstring)."""

    translation: dict[str, Any] = field(default_factory=dict)
    """:class:`~airbench_nb.scoring.translation.TranslationSummary` by model."""
    captioning: dict[str, Any] = field(default_factory=dict)
    """:class:`~airbench_nb.scoring.captioning.CaptionSummary` by model."""
    speech_output: dict[str, Any] = field(default_factory=dict)
    """:class:`~airbench_nb.scoring.speech_output.SpeechOutputSummary` by model."""

    def translation_payload(self) -> dict[str, Translation]:
        """``analysis.json``'s ``translation``, typed (:meth:`translation_dict` validated)."""
        return {model: Translation.from_data(data) for model, data in self.translation_dict().items()}

    def translation_dict(self) -> dict[str, dict[str, Any]]:
        """``analysis.json``'s ``translation``, a serializer (:meth:`translation_payload` is the typed form)."""
        out = {}
        for model, s in self.translation.items():
            out[model] = {
                "bleu": s.bleu,
                "bleu_ci": _interval(s.bleu_ci),
                "chrf": s.chrf,
                "chrf_ci": _interval(s.chrf_ci),
                "signature": s.signature,
                "chrf_signature": s.chrf_signature,
                "n": s.n,
                "failures": s.failures,
                "failure_reasons": dict(s.failure_reasons),
                "by_pair": {
                    pair: {
                        "bleu": p.bleu.value,
                        "bleu_ci": _interval(p.bleu.ci),
                        "chrf": p.chrf.value,
                        "chrf_ci": _interval(p.chrf.ci),
                        "n": p.n,
                        "failures": p.failures,
                        "tokenize": p.tokenize,
                    }
                    for pair, p in s.by_pair.items()
                },
            }
        return out

    def captioning_payload(self) -> dict[str, Captioning]:
        """``analysis.json``'s ``captioning``, typed (:meth:`captioning_dict` validated)."""
        return {model: Captioning.from_data(data) for model, data in self.captioning_dict().items()}

    def captioning_dict(self) -> dict[str, dict[str, Any]]:
        """``analysis.json``'s ``captioning``, a serializer (:meth:`captioning_payload` is the typed form)."""
        out = {}
        for model, s in self.captioning.items():
            metrics = {}
            for name, scores in s.metrics.items():
                entries = s.entries.get(name, {})
                metrics[name] = {
                    "label": scores.label,
                    "value": scores.corpus,
                    "error": scores.error,
                    "by_task": {task: entry.model_dump(exclude_none=True) for task, entry in entries.items()},
                }
            out[model] = {
                "n": s.n,
                "failures": s.failures,
                "failure_reasons": dict(s.failure_reasons),
                "embedder": s.embedder,
                "metrics": metrics,
            }
        return out

    def speech_output_payload(self) -> dict[str, SpeechOutput]:
        """``analysis.json``'s ``speech_output``, typed (:meth:`speech_output_dict` validated)."""
        return {model: SpeechOutput.from_data(data) for model, data in self.speech_output_dict().items()}

    def speech_output_dict(self) -> dict[str, dict[str, Any]]:
        """``analysis.json``'s ``speech_output``, a serializer (:meth:`speech_output_payload` is the typed form)."""
        out = {}
        for model, s in self.speech_output.items():
            out[model] = {
                "wer": s.wer,
                "wer_ci": _interval(s.wer_ci),
                "cer": s.cer,
                "cer_ci": _interval(s.cer_ci),
                "per_utterance_wer": s.per_utterance_wer,
                "n": s.n,
                "failures": s.failures,
                "failure_reasons": dict(s.failure_reasons),
                "judge": s.judge,
                "spoken_answer": {
                    "accuracy": s.spoken_answer_accuracy,
                    "ci": _interval(s.spoken_answer_ci),
                    "n": s.spoken_answer_n,
                    "failures": s.spoken_answer_failures,
                    "failure_reasons": dict(s.spoken_answer_failure_reasons),
                    "enumerations": s.spoken_answer_enumerations,  # several candidates named: scored wrong
                },
            }
        return out

    def translation_frame(self) -> pd.DataFrame:
        """One row per model and language pair (and ``all``).

        Columns ``model, pair, bleu, ci_low, ci_high, chrf, n, failures``.
        """
        rows = []
        for model, s in self.translation.items():
            pairs = [("all", s.bleu, s.bleu_ci, s.chrf, s.n, s.failures)]
            pairs += [(k, p.bleu.value, p.bleu.ci, p.chrf.value, p.n, p.failures) for k, p in s.by_pair.items()]
            for pair, bleu, ci, chrf, n, failures in pairs:
                low, high = ci if ci else (None, None)
                rows.append(
                    {
                        "model": model,
                        "pair": pair,
                        "bleu": bleu,
                        "ci_low": low,
                        "ci_high": high,
                        "chrf": chrf,
                        "n": n,
                        "failures": failures,
                    }
                )
        return pd.DataFrame(rows, columns=["model", "pair", "bleu", "ci_low", "ci_high", "chrf", "n", "failures"])

    def captioning_frame(self) -> pd.DataFrame:
        """One row per model, metric and task (and ``average``).

        Columns ``model, metric, label, task, value, ci_low, ci_high, n, failures``.
        """
        rows = []
        for model, s in self.captioning.items():
            for name, entries in s.entries.items():
                label = s.metrics[name].label if name in s.metrics else name
                for task, entry in entries.items():
                    rows.append(
                        {
                            "model": model,
                            "metric": name,
                            "label": label,
                            "task": task,
                            "value": entry.value,
                            "ci_low": entry.ci_low,
                            "ci_high": entry.ci_high,
                            "n": entry.n,
                            "failures": entry.failures,
                        }
                    )
        columns = ["model", "metric", "label", "task", "value", "ci_low", "ci_high", "n", "failures"]
        return pd.DataFrame(rows, columns=columns)

    def speech_output_frame(self) -> pd.DataFrame:
        """One row per model and measure (WER, CER, per-utterance WER, spoken-answer accuracy; fractions).

        Columns ``model, measure, value, ci_low, ci_high, n, failures``.
        """
        rows = []
        for model, s in self.speech_output.items():
            for measure, value, ci, n, failures in (
                ("WER", s.wer, s.wer_ci, s.n, s.failures),
                ("CER", s.cer, s.cer_ci, s.n, s.failures),
                ("per-utterance WER", s.per_utterance_wer, None, s.n, s.failures),
                (
                    "spoken-answer accuracy",
                    s.spoken_answer_accuracy,
                    s.spoken_answer_ci,
                    s.spoken_answer_n,
                    s.spoken_answer_failures,
                ),
            ):
                if n:
                    low, high = ci if ci else (None, None)
                    rows.append(
                        {
                            "model": model,
                            "measure": measure,
                            "value": value,
                            "ci_low": low,
                            "ci_high": high,
                            "n": n,
                            "failures": failures,
                        }
                    )
        return pd.DataFrame(rows, columns=["model", "measure", "value", "ci_low", "ci_high", "n", "failures"])


def ug_tasks(
    items: Sequence[Any],
    responses: Mapping[str, Mapping[str, Response]],
    verdicts: Mapping[str, Sequence[Verdict]],
    *,
    asr_judges: Sequence[str] | None = None,
    embedder: str | None = None,
    reps: int = 1000,
    seed: int = 0,
    perturbations: bool = False,
) -> UgTasks:
    """Summaries of the run's translation, caption and speech-generation items, per model that answered some.

    Args:
        items: The run's items (other kinds are ignored).
        responses: Each model's latest responses by uid.
        verdicts: Each model's verdicts (the ASR judge's back-transcriptions among them).
        asr_judges: ASR judge specs in priority order (None: the one the verdicts hold).
        embedder: Embedding backend of the caption similarity (None: the offline MiniLM).
        reps: Bootstrap replicates of the intervals.
        seed: Seed of the bootstraps.
        perturbations: Keep the perturbed copies (``meta.perturbation_of``); left out by default, as the score
            tables leave them out. Audio-reliance controls (``meta.control_of``) are always left out.
    """
    from airbench_nb.scoring.captioning import CiderD, caption_summary
    from airbench_nb.scoring.outcomes import asked_items
    from airbench_nb.scoring.speech_output import SpeechOutputWer, speech_output_summary
    from airbench_nb.scoring.translation import Bleu, translation_summary

    def scored_by(metric: str) -> list[Any]:
        # the items that name the family's metric (what the score tables score with it); controls never
        return [
            i
            for i in items
            if metric in getattr(i, "METRICS", ()) and (perturbations or not is_perturbed(i)) and not is_control(i)
        ]

    translation = scored_by(Bleu.name)
    captions = scored_by(CiderD.name)
    speech = scored_by(SpeechOutputWer.name)
    result = UgTasks()
    for model, by_uid in responses.items():
        answers = list(by_uid.values())
        if translation and any(i.uid in by_uid for i in translation):
            asked = asked_items(translation, by_uid)  # a direction the model declined (X -> en only) is not asked
            result.translation[model] = translation_summary(asked, answers, reps=reps, seed=seed)
        if captions and any(i.uid in by_uid for i in captions):
            result.captioning[model] = caption_summary(captions, answers, embedder=embedder, reps=reps, seed=seed)
        if speech and any(i.uid in by_uid for i in speech):
            result.speech_output[model] = speech_output_summary(
                speech, answers, list(verdicts.get(model, [])), judges=asr_judges, reps=reps, seed=seed
            )
    return result
