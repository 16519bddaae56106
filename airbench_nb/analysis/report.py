"""Every analysis of a run folder in one object: what notebook 05 shows and ``airbench-nb analyze`` writes.

:class:`RunAnalysis` reads the run once (:func:`~airbench_nb.analysis.data.load_run`), scores it with both protocols
(:func:`~airbench_nb.scoring.score_run_folder`) and answers each question with one method returning a
:class:`Section` (JSON data, a display frame, a figure, or the reason there is nothing to show). :meth:`write` puts
``analysis.json``, ``leaderboard.md``, ``tables.csv`` and ``figures/*.png`` into ``<run_dir>/analysis/``.

Which rows each analysis reads (``protocol`` is the one asked for; the main table always shows both):

- position bias, per-class metrics and answer style: the plain Foundation items (neither SNR-graded copies nor
  rotations; when a manifest holds only rotations, those);
- circular evaluation: rotated copies (``meta.rotation_of``), made by ``airbench-nb rotate``;
- controls: the audio-reliance controls (``meta.control_of``, :mod:`airbench_nb.builders.controls`) of Foundation
  items and their originals under ``protocol`` (:mod:`airbench_nb.analysis.controls`); left out of
  ``analysis.json`` when the run has none, and out of every other section;
- SNR curves: SNR-graded copies (``meta.clean_uid``) and their clean originals;
- judge order bias: every Chat judge that judged both orders;
- ranking: the category scores of the main table under ``protocol``;
- comparison: every pair of models on the items they share (:mod:`airbench_nb.analysis.compare`);
- agreement: judge-human and inter-annotator agreement, when an annotation sample and label files are given
  (:mod:`airbench_nb.analysis.agreement`; notebook 06 makes them);
- multi-clip: the plain Foundation items under the strict protocol, single-clip against multi-clip
  (:mod:`airbench_nb.analysis.multi`);
- multi-turn: the per-turn Chat scores of the score tables under ``protocol``, and the Chat rows of the
  multi-turn items for the follow-up test;
- SSEU-Bench (``sseu``, ``snr_curves``): the items scored against references (transcription, scene, events and
  joint items), read as the score tables read them (:mod:`airbench_nb.analysis.sseu`): the table of models x
  prompting modes, WER, mACC and mAP against SNR, and the paired joint and chain-of-thought differences.
- UG-Bench (``translation``, ``captioning``, ``speech_output``, ``ugbench``): the translation, caption and speech
  generation items per model (:mod:`airbench_nb.analysis.ugtasks`: BLEU and chrF with sacrebleu's signature, the
  captioning metrics, the back-transcription WER and CER of spoken answers), and UG-Bench's four-capability ranking
  over every task of the score tables (:mod:`airbench_nb.analysis.ugbench`), with the listeners' MOS when a MOS
  result is given.
- injection (``injection``): every model's current verdicts, of the judges analysed and ``rule``: the answers the
  injection screen flagged, and for those the scores of the verbatim and the fenced judge prompt
  (:mod:`airbench_nb.analysis.injection`).
- decoding stability (``stability``): the choice items' main and sampled answers of ``infer --samples K``, read by
  the rule extractor (:mod:`airbench_nb.analysis.stability`); left out of ``analysis.json`` when no model has
  samples.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from airbench_nb import plots
from airbench_nb.analysis import answers, circular, classification, order_bias, position_bias, ranking, snr, tables
from airbench_nb.analysis.data import RunData, load_run
from airbench_nb.analysis.registry import SECTIONS, register_analysis_section
from airbench_nb.analysis.section import SHOW_DPI, Section, show  # noqa: F401 - re-exported (notebooks import show here)
from airbench_nb.analysis_report import AnalysisReport, AnswersPayload, LengthBin, MultiTurnPayload
from airbench_nb.run_folder import ANALYSIS, ANALYSIS_JSON, FIGURES, RunFolder
from airbench_nb.run_records import RunRecords
from airbench_nb.score_table import RunScores, ScoreTable
from airbench_nb.scoring import PROXY_SHORT
from airbench_nb.scoring.ahead import start_ahead, stop_ahead
from airbench_nb.scoring.reference import forget_parts

logger = logging.getLogger(__name__)

ANALYSIS_DIR = ANALYSIS
"""Sub-folder of the run folder that :meth:`RunAnalysis.write` fills."""

KIT_SECTIONS: tuple[str, ...] = (
    "tables",
    "format_following",
    "position_bias",
    "circular",
    "controls",
    "order_bias",
    "classification",
    "answers",
    "snr",
    "ranking",
    "comparison",
    "agreement",
    "multi_clip",
    "multi_turn",
    "sseu",
    "snr_curves",
    "translation",
    "captioning",
    "speech_output",
    "ugbench",
    "tiered",
    "injection",
)
"""The kit's own sections of ``analysis.json``, in report order (methods of :class:`RunAnalysis`, typed fields of
:class:`~airbench_nb.analysis_report.AnalysisReport`); :data:`SECTIONS` holds them and those benchmarks added."""

LATE_SECTIONS: tuple[str, ...] = (
    "tables",
    "ranking",
    "multi_turn",
    "translation",
    "captioning",
    "speech_output",
    "ugbench",
)
"""Kit sections computed after the others, the benchmarks' included (:meth:`RunAnalysis.sections`,
:attr:`~airbench_nb.analysis.registry.AnalysisSection.late`): they read the score table or the translations' scores,
which a worker may still be computing (:mod:`airbench_nb.scoring.ahead`)."""

OPTIONAL_SECTIONS: tuple[str, ...] = ("controls",)
"""Kit sections left out of ``analysis.json`` when they have nothing to show
(:attr:`~airbench_nb.analysis.registry.AnalysisSection.optional`)."""


def _plain_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Foundation rows that are neither SNR-graded copies nor rotations (the rotations when there is nothing else)."""
    if frame.empty:
        return frame
    plain = frame[frame["clean_uid"].isna() & frame["rotation_of"].isna()]
    if plain.empty:
        plain = frame[frame["clean_uid"].isna()]
    return plain


class RunAnalysis:
    """The analyses of one run folder.

    Args:
        run_dir: The run folder (notebook 03/04 layout: ``data/``, ``responses/``, ``verdicts/``).
        protocol: ``strict`` (default) or ``official``: how answers are read in every analysis but the main table.
        weights: Ranking weights, a mapping or ``"speech=0.4,sound=0.3,music=0.2,chat=0.1"``; None for the default.
        models: Model specs to analyse (default all that answered).
        judges: Chat judges to analyse (default all); the first also scores Chat in the ranking.
        manifest_dir: Folder of the manifests (default ``<run_dir>/data``).
        responses_dir: Responses folder (default ``<run_dir>/responses``).
        verdicts_dir: Verdicts folder (default ``<run_dir>/verdicts``).
        confusion_model: Model whose confusion matrices are drawn (default: the one with most closed-label items
            answered, oracles last).
        seed: Seed of every bootstrap.
        reps: Bootstrap replicates of the main table's intervals.
        sample: An annotation sample of this run (``airbench-nb sample-annotation``), for the agreement section.
        labels: Label files of that sample (one per annotator).
        embedder: Embedding backend that maps scene and event answers onto classes
            (:func:`airbench_nb.embeddings.load_embedder`); None: the default offline model.
        mos: Listening-test MOS by model, ranked as UG-Bench's TTS MOS task; None: the run's own listening test
            (``annotation/listening``: :func:`airbench_nb.analysis.mos.mos`) when it holds ratings.
    """

    def __init__(
        self,
        run_dir: str | Path,
        *,
        protocol: str = "strict",
        weights: str | Mapping[str, float] | None = None,
        models: Sequence[str] | None = None,
        judges: Sequence[str] | None = None,
        manifest_dir: str | Path | None = None,
        responses_dir: str | Path | None = None,
        verdicts_dir: str | Path | None = None,
        confusion_model: str | None = None,
        seed: int = 0,
        reps: int = 1000,
        sample: str | Path | None = None,
        labels: Sequence[str | Path] = (),
        embedder: str | None = None,
        mos: Mapping[str, float] | None = None,
    ) -> None:
        if protocol not in ("strict", "official"):
            raise ValueError(f"unknown protocol {protocol!r}: use 'strict' or 'official'")
        self.run_dir = Path(run_dir)
        self.protocol = protocol
        if weights is None:
            self.weights = dict(ranking.DEFAULT_WEIGHTS)
        elif isinstance(weights, str):
            self.weights = ranking.parse_weights(weights) if weights.strip() else dict(ranking.DEFAULT_WEIGHTS)
        else:
            self.weights = ranking.validate_weights(weights)
        self.seed = seed
        self.reps = reps
        self.confusion_model = confusion_model
        self.sample = Path(sample) if sample else None
        self.labels = [Path(p) for p in labels]
        self.embedder = embedder or None
        self._sseu: Any = None
        self._ug: Any = None
        self._mos: Any = None
        self._tiered: Any = None
        self.mos_given = dict(mos or {})
        self.folder = RunFolder(self.run_dir, data=manifest_dir, responses=responses_dir, verdicts=verdicts_dir)
        self.records = RunRecords(self.folder)
        """The run's responses and verdicts, each file read once for every section."""
        # a large run's transcripts and translations are scored ahead in a worker while this process reads the run
        # (when AIRBENCH_NB_WORKERS asks for 2 or more; taken only where they are this process's own: scoring.ahead)
        self.ahead = start_ahead(self.folder, reps=reps, seed=seed)
        """Whether a worker scores the transcripts and translations ahead (:mod:`airbench_nb.scoring.ahead`)."""
        self.run: RunData = load_run(
            self.run_dir,
            manifest_dir=manifest_dir,
            responses_dir=responses_dir,
            verdicts_dir=verdicts_dir,
            models=list(models) if models else None,
            records=self.records,
        )
        self.manifest_dir = self.folder.data_dir
        self.responses_dir = self.folder.responses_dir
        self.verdicts_dir = self.folder.verdicts_dir
        self._frames: dict[str, pd.DataFrame] = {}
        self.foundation = self.foundation_frame(protocol)
        chat = self.run.chat_frame(protocol)
        # `rule` judges Foundation only: notebooks 04 and 05 share the `judges` parameter of a run (04: the judges to
        # run, `rule` among them; here: the Chat judges to analyse), so it is left out rather than refused
        judges = [j for j in judges if j != "rule"] if judges else judges
        self.judges_given = bool(judges)
        self.judges = list(judges) if judges else sorted(chat["judge"].unique())
        self.chat = chat[chat["judge"].isin(self.judges)] if judges else chat
        self.plain = _plain_rows(self.foundation)
        self._scores: tuple[pd.DataFrame, dict[str, Any]] | None = None

    def close(self) -> None:
        """End the worker scoring this run ahead, if it is still at work, and drop the answer parts kept for it.

        :meth:`write` does this when it ends; a notebook computing sections one by one calls it (or uses the
        analysis as a context manager) once done. Sections computed afterwards compute those parts here.
        """
        if self.ahead:
            stop_ahead(self.folder)
            self.ahead = False
        forget_parts()

    def __enter__(self) -> RunAnalysis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------------------------- scores

    def foundation_frame(self, protocol: str) -> pd.DataFrame:
        """The run's Foundation frame under ``protocol`` (computed once per protocol)."""
        if protocol not in self._frames:
            self._frames[protocol] = self.run.foundation_frame(protocol)
        return self._frames[protocol]

    def scores(self) -> tuple[pd.DataFrame, dict[str, Any]]:
        """The run's score table under both protocols and its summary: notebook 04's when current, else computed once.

        The table notebook 04 wrote (:func:`~airbench_nb.scoring.write_run_scores`) is read when it was computed
        from this analysis's inputs (the same records, seed, replicates and embedder, both protocols:
        ``summary.inputs.json``), limited to the models analysed; otherwise (no table, the records changed since,
        other options, a folder notebook 04 never scored) it is computed here from the records read.
        """
        if self._scores is None:
            stored = self._stored_scores()
            if stored is not None:
                self._scores = (stored.summary_frame(), stored)
                return self._scores
            from airbench_nb.scoring import score_models

            items = list(self.run.all_items)
            runs = [(list(self.run.responses[m].values()), self.run.verdicts.get(m, [])) for m in self.run.models]
            summary, results = score_models(
                items, runs, protocol="both", seed=self.seed, reps=self.reps, embedder=self.embedder
            )
            self._scores = (summary, results)
        return self._scores

    def _stored_scores(self) -> ScoreTable | None:
        """Notebook 04's table when current (:meth:`scores`), its runs those of the models analysed, in their order."""
        from airbench_nb.scoring import score_inputs

        inputs = score_inputs(self.records, protocol="both", seed=self.seed, reps=self.reps, embedder=self.embedder)
        table = self.folder.read_scores(inputs)
        if table is None:
            return None

        def model(run: RunScores) -> str | None:
            scores = run.strict if run.strict is not None else run.official
            return scores.model if scores is not None else None

        kept = {key: run for m in self.run.models for key, run in table.items() if model(run) == m}
        if {model(run) for run in kept.values()} != set(self.run.models):
            return None  # a model answered since notebook 04 scored (or the table lacks it): score here
        logger.info("scores of %s read from notebook 04's table (%d runs)", self.run_dir, len(kept))
        return ScoreTable(kept)

    # -------------------------------------------------------------------------------------------------- sections

    def tables(self) -> Section:
        """The AIR-Bench main table: Foundation and Chat categories and averages, official and strict side by side."""
        summary, results = self.scores()
        if not results:
            return Section("tables", {}, reason="no scored responses in the run folder")
        main = tables.main_table(results, summary)
        long = tables.tables_long(results, summary=summary)
        cats = long[long["table"] == "main"].copy()
        data = {"scores": _records(cats)}
        shown = cats.copy()
        chat = shown["benchmark"] == "chat"
        judge = shown.loc[chat, "chat_judge"].astype(str).map(lambda j: "proxy (similarity)" if j == PROXY_SHORT else j)
        shown.loc[chat, "model"] = shown.loc[chat, "model"] + " · " + judge
        figure = plots.category_bars(shown)
        return Section("tables", data, frame=main, figure=figure, figure_key="categories")

    def format_following(self) -> Section:
        """The paper's format-following table: who resolves each Foundation answer (rule, LLM judge, nobody)."""
        strict = self.foundation_frame("strict")
        frame = tables.format_following(_plain_rows(strict))
        if frame.empty:
            return Section("format_following", {}, reason="no Foundation answers")
        data = {row["model"]: {k: v for k, v in row.items() if k != "model"} for row in _records(frame)}
        return Section("format_following", data, frame=frame)

    def position_bias(self) -> Section:
        """Chosen vs gold letters per model, with a chi-square test of the chosen-letter distribution."""
        results = position_bias.position_bias(self.plain)
        if not results:
            return Section("position_bias", {}, reason="no Foundation item was answered with a letter")
        long = position_bias.letter_confusion(self.plain, long=True)
        frame = pd.DataFrame(
            [
                {
                    "model": m,
                    "n": r.n,
                    "chi2": r.chi2,
                    "dof": r.dof,
                    "p_value": r.p_value,
                    **{f"chosen_{k}": v for k, v in r.chosen.items()},
                    **{f"gold_{k}": v for k, v in r.gold.items()},
                }
                for m, r in results.items()
            ]
        )
        return Section(
            "position_bias",
            {m: r.payload() for m, r in results.items()},
            frame=frame,
            figure=plots.letter_heatmaps(long),
            figure_key="letters",
        )

    def circular(self) -> Section:
        """MMBench CircularEval over rotated copies: plain, consistent and circular accuracy per model."""
        rotated = self.foundation[self.foundation["rotation_of"].notna()]
        if rotated.empty:
            return Section(
                "circular",
                {},
                reason="no rotated items: write them with `airbench-nb rotate MANIFEST --out M2`, run the models on M2",
            )
        results = circular.circular(rotated)
        frame = circular.circular_frame(results)
        return Section(
            "circular",
            {m: r.payload() for m, r in results.items()},
            frame=frame,
            figure=plots.circular_bars(frame),
            figure_key="circular",
        )

    def controls(self) -> Section:
        """Does the model listen? Each Foundation and Chat item with the audio against its audio-reliance controls.

        Chat items are scored by each judge (:func:`~airbench_nb.analysis.controls.chat_outcomes`: the judge score
        divided by 10), in rows of their own per judge, never pooled with the Foundation accuracies.

        Per model and task (and over all its tasks): the score under each control against the score with the audio
        (paired bootstrap intervals), the audio-needed share, the text-prior score and the score corrected for it
        (:func:`~airbench_nb.analysis.controls.controls_results`, with the run's ``reps`` and ``seed``). Empty, with
        the reason, when the run holds no control (the section is then left out of ``analysis.json``).
        """
        from airbench_nb.analysis.controls import (
            REFERENCE_METRICS,
            chat_outcomes,
            controls_detail,
            controls_frame,
            controls_payload,
            controls_plot_frame,
            controls_results,
            outcomes_from_frame,
            reference_controls_results,
        )
        from airbench_nb.records import CONTROL_OF_KEY

        if not any(CONTROL_OF_KEY in (i.meta or {}) for i in self.run.items.values()):
            return Section(
                "controls",
                {},
                reason="no audio-reliance controls in the run: build them with notebook 01's build_options "
                '{"controls_items_per_task": 4} (docs/analysis.md, "Does the model listen? Controls")',
            )
        frame = self.run.foundation_frame(self.protocol, controls=True)
        outcomes = outcomes_from_frame(frame, self.run.items) if not frame.empty else []
        chat = self.run.chat_frame(self.protocol, controls=True)
        chat_models: set[str] = set()
        if not chat.empty:  # judge scores, one set per judge (never pooled with the accuracies)
            answered = {model: list(by_uid) for model, by_uid in self.run.responses.items()}
            judged = chat_outcomes(chat, self.run.items, answered, self.protocol)
            chat_models = {o.model for o in judged}
            outcomes += judged
        results = [
            replace(r, metric="judge score / 10") if r.model in chat_models else r
            for r in controls_results(outcomes, reps=self.reps, seed=self.seed)
            if r.controls
        ]
        results += [  # transcripts (corpus WER), translations (BLEU), event lists (mAP) under each control
            r
            for r in reference_controls_results(
                self.run.items.values(), self.run.responses, embedder=self.embedder, reps=self.reps, seed=self.seed
            )
            if r.controls
        ]
        if not results:
            return Section("controls", {}, reason="no model answered a Foundation item and one of its controls")
        return Section(
            "controls",
            controls_payload(results),
            frame=controls_frame(results),
            figure=plots.controls_chart(controls_plot_frame([r for r in results if r.metric not in REFERENCE_METRICS])),
            figure_key="controls",
            extra_data=controls_detail(self.protocol, self.reps, self.seed),
        )

    def order_bias(self) -> Section:
        """Judge order bias: a model's Chat score shown first minus shown second, paired by item."""
        if self.chat.empty:
            return Section("order_bias", {}, reason="no Chat verdicts in both orders")
        results = order_bias.order_bias(self.chat, seed=self.seed)
        frame = order_bias.order_bias_frame(results)
        if frame.empty:
            return Section("order_bias", {}, reason="no Chat item was judged in both orders")
        pairs = order_bias.order_pairs(self.chat)
        return Section(
            "order_bias",
            {judge: dict(by_model) for judge, by_model in results.items()},
            frame=frame,
            figure=plots.order_scatter(pairs),
            figure_key="order_bias",
        )

    def classification(self) -> Section:
        """Macro precision, recall, F1 and false-negative rate per closed-label task, with confusion matrices."""
        results = classification.classification(self.plain)
        frame = classification.classification_frame(results)
        scored = {m: {t: r for t, r in by_task.items() if r.reason is None} for m, by_task in results.items()}
        scored = {m: by_task for m, by_task in scored.items() if by_task}
        if not scored:
            skipped = classification.classification_frame(results, skipped=True)
            why = "; ".join(sorted(set(skipped["reason"].dropna()))) if not skipped.empty else "no Foundation answers"
            return Section("classification", {}, frame=skipped, reason=f"no closed-label task to analyse ({why})")
        model = self.confusion_model if self.confusion_model in scored else self._confusion_default(scored)
        grid = [(t, list(m.labels), m.confusion) for t, m in scored[model].items()]
        return Section(
            "classification",
            {m: {t: r.payload() for t, r in by_task.items()} for m, by_task in results.items()},
            frame=frame,
            figure=plots.confusion_grid(grid, model),
            figure_key="confusion",
        )

    @staticmethod
    def _confusion_default(scored: Mapping[str, Mapping[str, Any]]) -> str:
        def key(model: str) -> tuple[bool, int, float, str]:
            answered = sum(r.n - getattr(r, "unanswered", 0) for r in scored[model].values())
            f1 = [r.macro_f1 for r in scored[model].values() if r.macro_f1 is not None]
            return ("oracle" in model, -answered, -(sum(f1) / len(f1) if f1 else 0.0), model)

        return sorted(scored, key=key)[0]

    def answers(self) -> Section:
        """Accuracy against answer length, and how often wrong answers are stated with confidence."""
        lengths = answers.length_accuracy(self.plain)
        confident = answers.confidence(self.plain)
        if lengths.empty and not confident:
            return Section("answers", {}, reason="no Foundation answers")
        shown = lengths[lengths["n"] > 0] if not lengths.empty else lengths
        data = AnswersPayload(
            length=[LengthBin.from_data(row) for row in _records(lengths)],
            confidence={m: r.payload() for m, r in confident.items()},
        )
        return Section(
            "answers",
            data,
            frame=answers.confidence_frame(confident),
            figure=plots.length_accuracy(shown),
            figure_key="length",
        )

    def snr(self) -> Section:
        """Accuracy against SNR (SNR-graded copies and their clean originals), with Wilson CIs and a trend test."""
        curves = snr.snr_curves(self.foundation)
        frame = snr.snr_frame(curves)
        if frame.empty:
            hint = "build SNR-graded items with `airbench-nb build --snr-grid=-10,-5,0,5,10`"
            return Section("snr", {}, reason=f"{curves.reason or 'no SNR-graded items'}; {hint}")
        per_model = frame[frame["level"] == "model"]
        shown = frame[frame["level"].isin(["model", "task"])]
        return Section(
            "snr",
            curves.points(),
            extra_data=curves.detail(),
            frame=per_model,
            figure=plots.snr_curves(shown),
            figure_key="snr",
        )

    def ranking(self) -> Section:
        """UG-Bench ranks per capability and a weighted 0-100 total."""
        summary, _ = self.scores()
        if summary.empty:
            return Section("ranking", [], reason="no scored responses")
        chat_judge = self._ranking_judge(summary)
        scores = ranking.capability_scores(summary, self.protocol, chat_judge=chat_judge)
        if scores.empty:
            return Section("ranking", [], reason=f"no {self.protocol} scores")
        if scores.isna().all().all():  # e.g. a run of other benchmarks only: nothing to rank, no empty chart
            return Section("ranking", [], reason=f"no AIR-Bench category has a {self.protocol} score")
        result = ranking.ranking(scores, self.weights)
        frame = ranking.ranking_frame(result)
        return Section(
            "ranking",
            result.rows(),
            extra_data=result.detail(chat_judge, self.protocol),
            frame=frame,
            figure=plots.ranking_chart(frame),
            figure_key="ranking",
        )

    def comparison(self) -> Section:
        """Every pair of models: differences per task, category and Average with paired CIs and Holm-corrected tests."""
        from airbench_nb.analysis.compare import comparison_section

        return comparison_section(
            self.run,
            protocol=self.protocol,
            chat_judge=self.judges[0] if self.judges_given and self.judges else None,
            seed=self.seed,
            reps=max(self.reps, 200),
            foundation=self.foundation,
            chat=self.chat,
        )

    def agreement(self) -> Section:
        """Judge-human agreement (and between annotators) on an annotated sample, when labels are given."""
        if self.sample is None or not self.labels:
            return Section(
                "agreement",
                {},
                reason="no annotation labels given: draw a sample with `airbench-nb sample-annotation`, label it in "
                "notebook 06, then pass `sample` and `labels`",
            )
        from airbench_nb.analysis.agreement import HUMANS, agreement, agreement_frame

        result = agreement(self.run_dir, self.sample, self.labels, seed=self.seed)
        frame = agreement_frame(result)
        data = json.loads(json.dumps(result, default=_json_default))
        return Section(
            "agreement",
            data,
            frame=frame,
            figure=plots.agreement_bars(frame, last=(HUMANS,)),
            figure_key="judge-human-agreement",
        )

    def multi_clip(self) -> Section:
        """Accuracy on single-clip vs multi-clip Foundation items per model (strict), Wilson CIs, Fisher's test."""
        from airbench_nb.analysis import multi

        frame, tests = multi.clip_accuracy(_plain_rows(self.foundation_frame("strict")))
        if frame.empty:
            return Section(
                "multi_clip",
                {},
                reason="no multi-clip items answered (the kit's kit_pitch_compare, kit_same_speaker, kit_more_events "
                "and kit_louder_clip tasks)",
            )
        data = {
            model: {
                **{row["clips"]: {k: v for k, v in row.items() if k not in ("model", "clips")} for row in rows},
                **tests.get(model, {}),
            }
            for model, rows in _by_model(frame).items()
        }
        return Section(
            "multi_clip",
            data,
            frame=frame,
            figure=plots.clip_accuracy_bars(frame),
            figure_key="multi_clip",
            extra_data={"protocol": "strict", "tests": tests},
        )

    def multi_turn(self) -> Section:
        """Multi-turn Chat: the score of each turn per model and judge, and whether follow-ups score lower."""
        from airbench_nb.analysis import multi

        _, results = self.scores()
        judges = self.judges if self.judges_given else None
        frame = multi.turn_scores(results, self.protocol, judges)
        if frame.empty:
            return Section("multi_turn", {}, reason="no multi-turn Chat items judged (the kit's kit_followup_QA task)")
        drop = multi.followup_drop(self.chat)
        data = MultiTurnPayload.from_data({"turns": _records(frame), "followup_drop": drop})
        return Section(
            "multi_turn",
            data,
            frame=frame,
            figure=plots.turn_scores_chart(frame),
            figure_key="multi_turn",
            extra_data={"protocol": self.protocol},
        )

    def sseu_results(self) -> Any:
        """SSEU-Bench's analyses of the run (:func:`~airbench_nb.analysis.sseu.sseu_analysis`; computed once).

        None when no model answered an item scored against a reference.
        """
        if self._sseu is None:
            from airbench_nb.analysis.sseu import outcomes_by_model, sseu_analysis

            outcomes = outcomes_by_model(self.run.items.values(), self.run.responses)
            outcomes = {m: o for m, o in outcomes.items() if any(x.answered for x in o)}
            self._sseu = (
                sseu_analysis(outcomes, embedder=self.embedder, reps=self.reps, seed=self.seed) if outcomes else False
            )
        return self._sseu or None

    def sseu(self) -> Section:
        """The SSEU table: WER, mACC and mAP per model and prompting mode, and the paired mode differences."""
        result = self.sseu_results()
        if result is None or not any(result.table.values()):
            return Section(
                "sseu",
                {},
                reason="no transcription, scene, events or joint item was answered (build them with `airbench-nb "
                "build --preset mini`, and answer them with notebook 03's kinds)",
            )
        differences = result.differences_frame()
        return Section(
            "sseu",
            result.scores(),
            frame=result.table_frame(),
            figure=plots.sseu_mode_differences(differences),
            figure_key="sseu_modes",
            extra_data=result.detail(
                scope="mixed clips (the clean copies are a point of the SNR curves); WER, mACC and mAP as "
                "fractions; n counts clips"
            ),
        )

    def snr_curves(self) -> Section:
        """WER, scene mACC and event mAP against SNR per model, task and mode (SSEU-Bench's headline figure)."""
        result = self.sseu_results()
        frame = result.curves_frame() if result is not None else pd.DataFrame()
        if frame.empty:
            return Section("snr_curves", {}, reason="no SSEU item with an SNR was answered")
        return Section(
            "snr_curves",
            result.curve_points(),
            frame=frame,
            figure=plots.sseu_snr_curves(frame),
            figure_key="sseu_snr",
        )

    def ug_results(self) -> Any:
        """UG-Bench's open-ended task families per model (:func:`~airbench_nb.analysis.ugtasks.ug_tasks`; once)."""
        if self._ug is None:
            from airbench_nb.analysis.ugtasks import ug_tasks
            from airbench_nb.judge.registry import reads_spoken_answers

            asr = [j for j in self.judges if reads_spoken_answers(j)] or None
            self._ug = ug_tasks(
                self.run.items.values(),
                self.run.responses,
                {m: self.run.current_verdicts(m) for m in self.run.models},
                asr_judges=asr,
                embedder=self.embedder,
                reps=self.reps,
                seed=self.seed,
            )
        return self._ug

    def translation(self) -> Section:
        """Speech-to-text translation: corpus BLEU and chrF per model and language pair, with sacrebleu's signature."""
        result = self.ug_results()
        if not result.translation:
            return Section(
                "translation",
                {},
                reason="no translation item was answered (build them with the mini "
                "or ugbench preset and answer them with notebook 03's kinds)",
            )
        frame = result.translation_frame()
        shown = frame.assign(metric="BLEU")
        figure = plots.metric_panels(
            shown,
            panel="metric",
            group="pair",
            value="bleu",
            scale=1.0,
            ylabels={"BLEU": "BLEU (0-100, sacrebleu)"},
            title="Speech translation: corpus BLEU by language pair (95% bootstrap CIs, sacrebleu)",
            ylim=(0, 105),
            xlabel="language pair (source-target)",
        )
        return Section(
            "translation", result.translation_payload(), frame=frame, figure=figure, figure_key="translation"
        )

    def captioning(self) -> Section:
        """Audio and music captioning: CIDEr-D, the other offline aac-metrics and the embedding similarity."""
        result = self.ug_results()
        if not result.captioning:
            return Section("captioning", {}, reason="no caption item was answered")
        frame = result.captioning_frame()
        shown = frame[frame["task"] != "average"]
        figure = plots.metric_panels(
            shown,
            panel="label",
            group="task",
            value="value",
            scale=1.0,
            ylabels={},
            title="Captioning metrics by task (95% bootstrap CIs over items)",
            xlabel="task",
        )
        return Section("captioning", result.captioning_payload(), frame=frame, figure=figure, figure_key="captioning")

    def speech_output(self) -> Section:
        """Spoken answers: back-transcription WER and CER (corpus and per-utterance mean) and spoken-answer accuracy."""
        result = self.ug_results()
        if not result.speech_output:
            return Section("speech_output", {}, reason="no speech generation item was answered")
        frame = result.speech_output_frame()
        figure = plots.metric_panels(
            frame.assign(panel=frame["measure"].map(lambda m: "accuracy" if "accuracy" in m else "error rate")),
            panel="panel",
            group="measure",
            value="value",
            scale=100.0,
            ylabels={"error rate": "error rate (%, lower is better)", "accuracy": "accuracy (%)"},
            title="Spoken answers transcribed back by the ASR judge (95% bootstrap CIs)",
            ylim=(0, 105),
            xlabel="measure",
        )
        listening = self.mos_result()
        return Section(
            "speech_output",
            result.speech_output_payload(),
            frame=frame,
            figure=figure,
            figure_key="speech_output",
            extra_data={"mos": listening.to_dict()} if listening is not None else {},
        )

    def mos_result(self) -> Any:
        """The run's listening test, with each model's back-transcription WER (computed once).

        :func:`airbench_nb.analysis.mos.mos`; None when the run has no playlist or no rating.
        """
        if self._mos is None:
            self._mos = False
            if self.folder.listening_playlist.is_file():
                from airbench_nb.analysis.mos import mos

                wer = {m: s.wer for m, s in self.ug_results().speech_output.items() if s.wer is not None}
                result = mos(self.run_dir, wer=wer or None, reps=self.reps, seed=self.seed)
                if len(result.ratings):
                    self._mos = result
        return self._mos or None

    def listening_mos(self) -> dict[str, float]:
        """MOS by model: the ``mos`` given, else the run's listening test (empty when there is neither)."""
        if self.mos_given:
            return dict(self.mos_given)
        result = self.mos_result()
        if result is None:
            return {}
        frame = result.frame()
        return {str(r.model): float(r.mos) for r in frame.itertuples() if pd.notna(r.mos)}

    def ugbench(self) -> Section:
        """UG-Bench's ranking over every task: per capability the mean task rank, then the weighted 0-100 total."""
        from airbench_nb.analysis import ugbench

        summary, results = self.scores()
        if summary.empty:
            return Section("ugbench", {}, reason="no scored responses")
        judge = self._ranking_judge(summary)
        mos = self.listening_mos()
        extra = {"tts_mos": mos} if mos else None
        result = ugbench.ugbench_ranking(results, protocol=self.protocol, chat_judge=judge, extra=extra)
        if result.reason:
            return Section("ugbench", {}, reason=result.reason)
        n_tasks = sum(len(c.tasks) for c in result.capabilities.values())
        return Section(
            "ugbench",
            result.payload(),
            extra_data=result.detail(self.protocol, judge),
            frame=result.ranking_frame(),
            figure=plots.ugbench_chart(result.ranking_frame(), n_tasks=n_tasks),
            figure_key="ugbench",
        )

    def tiered_result(self) -> Any:
        """The tiered sound-source benchmark per (model, tier), computed once.

        :func:`~airbench_nb.analysis.tiered_run.tiered_run`; LLM judges among the run's judges decide before the
        offline rules (``rule``, ``sources``).
        """
        if self._tiered is None:
            from airbench_nb.analysis.tiered_run import tiered_run
            from airbench_nb.judge.registry import deciding_judges, labels_reasoning

            self._tiered = tiered_run(
                self.folder,
                closed_judges=deciding_judges("A", self.judges),
                open_judges=deciding_judges("D", self.judges),
                strategy_judges=[j for j in self.judges if labels_reasoning(j)] or None,
                records=self.records,
            )
        return self._tiered

    def tiered_tables(self) -> dict[str, pd.DataFrame]:
        """One table per tier (A, B, C, D; empty for a tier without systems): never one mixed ranking."""
        from airbench_nb.analysis.tiered import tier_tables

        return tier_tables(self.tiered_result().systems)

    def tiered(self) -> Section:
        """The tiered sound-source benchmark: per-tier tables, confusion matrices, confident language, reasoning."""
        from airbench_nb import plots_tiered
        from airbench_nb.analysis.tiered import confident_frame
        from airbench_nb.run_folder import file_slug

        result = self.tiered_result()
        if result.empty:
            return Section("tiered", result.payload(), reason=result.reason)
        tables = self.tiered_tables()
        extra: dict[str, Any] = {}
        for tier, table in tables.items():
            if tier == "D" or table.empty:
                continue  # tier D has no confusion matrix
            shown = [s for s in table["system"] if s != "baseline:oracle"] or list(table["system"])
            best = next(r for r in result.systems if r.tier == tier and r.system == shown[0])
            figure = plots_tiered.confusion_pair(
                best.coarse.confusion_frame(), best.fine.confusion_frame(), f"{best.system} (tier {tier})", best.fine.n
            )
            if figure is not None:
                extra[f"tiered-confusion-tier-{tier.lower()}-{file_slug(best.system)}"] = figure
        confident = plots_tiered.confident_bars(confident_frame(result.confident)) if result.confident else None
        if confident is not None:
            extra["tiered-confident-language"] = confident
        if result.association is not None:
            odds = plots_tiered.strategy_odds(
                result.association.frame(),
                result.association.raw.describe(),
                result.association.controlled.describe(),
                proxy=result.association.proxy,
            )
            if odds is not None:
                extra["tiered-strategy-raw-vs-within-class"] = odds
        return Section(
            "tiered",
            result.payload(),
            figure=plots_tiered.tier_f1_bars(tables),
            figure_key="tiered",
            extra_figures=extra,
        )

    def injection(self) -> Section:
        """Answers the injection screen flagged, per model (``injection[model] = {flagged, n, share, examples}``)."""
        from airbench_nb.analysis.injection import injection, injection_frame

        judges = [*self.judges, "rule"] if self.judges_given else None
        data = injection({m: self.run.current_verdicts(m) for m in self.run.models}, judges)
        if not data:
            return Section("injection", {}, reason="no verdict carries the injection screen (judged before it existed)")
        return Section("injection", data, frame=injection_frame(data))

    def _ranking_judge(self, summary: pd.DataFrame) -> str | None:

        present = [j for j in summary["chat_judge"].astype(str).unique() if j != "-"]
        if not present:
            return None
        from airbench_nb.judge.registry import scores_only

        named = [j for j in self.judges if j in present or (scores_only(j) and PROXY_SHORT in present)]
        if named:
            return named[0]
        llm = [j for j in present if j != PROXY_SHORT]
        return llm[0] if llm else "proxy"

    # ----------------------------------------------------------------------------------------------------- output

    def sections(self) -> list[Section]:
        """Every registered section (:data:`SECTIONS`), in report order: the kit's, then those benchmarks added.

        Sections that read the score table or the translations (:attr:`AnalysisSection.late`: the kit's
        :data:`LATE_SECTIONS`, the choice-QA benchmarks') are computed after the others, the benchmarks' included,
        so that a worker scoring the transcripts and translations ahead (:mod:`airbench_nb.scoring.ahead`) works
        while the others are computed; each section's result is the same in either order.
        """
        return self._sections()

    def _sections(self, computed_one: Callable[[Section], None] | None = None) -> list[Section]:
        """:meth:`sections`, calling ``computed_one`` with each section as soon as it is computed.

        In computing order: :meth:`write` saves a section's figures while the late sections wait for a worker.
        """
        registered = list(SECTIONS.values())
        order = sorted(range(len(registered)), key=lambda k: registered[k].late)  # stable: report order otherwise
        computed: dict[int, Section] = {}
        for k in order:
            computed[k] = registered[k].compute(self)
            if computed_one is not None:
                computed_one(computed[k])
        kit = [computed[k] for k, section in enumerate(registered) if section.kit]
        return [*kit, *self._shown([(s, computed[k]) for k, s in enumerate(registered) if not s.kit])]

    def added_sections(self) -> list[Section]:
        """The sections benchmarks registered beyond the kit's own (what notebook 05 shows after the kit's).

        An optional section with nothing to show (the perturbation curves of a run built without perturbed copies) is
        left out, as :meth:`write` leaves it out of ``analysis.json``.
        """
        return self._shown([(section, section.compute(self)) for section in SECTIONS.values() if not section.kit])

    @staticmethod
    def _shown(computed: Sequence[tuple[Any, Section]]) -> list[Section]:
        """The added sections' results, less the optional ones with nothing to show."""
        return [result for section, result in computed if not (section.optional and result.reason)]

    def write(self, out: str | Path | None = None, sections: Sequence[Section] | None = None) -> AnalysisReport:
        """Write ``analysis.json``, ``leaderboard.md``, ``tables.csv`` and ``figures/*.png``.

        Args:
            out: Output folder (default ``<run_dir>/analysis``).
            sections: Sections already computed (default: compute them all).

        Every section being computed by then, the worker scoring ahead (if any) is ended at the end, as by
        :meth:`close`.

        Returns:
            The report written to ``analysis.json`` (its ``files``: the paths written, relative to ``out``).

        Raises:
            ValueError: A section's data does not match its model in :mod:`airbench_nb.analysis_report` (a bug of
                the section; the message names the section and the field).
        """
        try:
            return self._write(out, sections)
        finally:
            self.close()

    def _write(self, out: str | Path | None, sections: Sequence[Section] | None) -> AnalysisReport:
        """:meth:`write` without ending the worker."""
        import matplotlib.pyplot as plt

        out = Path(out) if out else self.folder.analysis_dir
        out.mkdir(parents=True, exist_ok=True)
        saved: dict[int, list[str]] = {}

        def hidden(section: Section) -> bool:  # an optional section with nothing to show: not written
            return bool(section.reason and section.name in SECTIONS and SECTIONS[section.name].optional)

        def save(section: Section) -> None:  # a section's figures, saved once
            if id(section) in saved or hidden(section):
                return
            names = []
            if section.figure is not None and section.figure_key:
                names.append(plots.save(section.figure, out / FIGURES, section.figure_key).name)
            for stem, figure in section.extra_figures.items():
                names.append(plots.save(figure, out / FIGURES, stem).name)
            saved[id(section)] = names

        # each section's figures are saved as soon as it is computed (while the late sections wait for a worker)
        sections = list(sections) if sections is not None else self._sections(save)
        sections = [s for s in sections if not hidden(s)]
        for section in sections:
            save(section)
        figures = [name for section in sections for name in saved[id(section)]]
        plt.close("all")
        summary, results = self.scores()
        written = (
            tables.write_tables(out, results, summary, _plain_rows(self.foundation_frame("strict"))) if results else {}
        )
        analysis: dict[str, Any] = {
            "run_dir": str(self.run_dir),
            "protocol": self.protocol,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "models": self.run.models,
            "judges": self.judges,
            "weights": self.weights,
            "items": len(self.run.items),
            "unusable_items": self.run.unusable,
            "reasons": {s.name: s.reason for s in sections if s.reason},
        }
        for section in sections:
            registered = SECTIONS.get(section.name)
            analysis[section.name] = registered.checked(section.data) if registered is not None else section.data
            if section.extra_data:
                analysis[f"{section.name}_detail"] = section.extra_data
        analysis["files"] = {
            "figures": [f"{FIGURES}/{name}" for name in figures],
            **{k: Path(v).name for k, v in written.items()},
            "analysis": ANALYSIS_JSON,
        }
        report = AnalysisReport.from_data(analysis)
        self.folder.write_analysis(report, out)
        logger.info("analysis of %s written to %s (%d figures)", self.run_dir, out, len(figures))
        return report


for _name in KIT_SECTIONS:
    register_analysis_section(
        _name,
        getattr(RunAnalysis, _name),
        kit=True,
        optional=_name in OPTIONAL_SECTIONS,
        late=_name in LATE_SECTIONS,
    )

# The benchmarks' own sections register after the kit's (report order): MMAU's, MMAR's and MMSU's, the judge panel
# (optional: a run with one judgement of one judge per answer writes no key), then the perturbation curves (optional:
# a run without perturbed copies writes no key), then decoding stability and calibration (optional too).
# isort: off
import airbench_nb.analysis.choice_qa  # noqa: E402, F401 - imported for its registrations
import airbench_nb.analysis.judge_panel  # noqa: E402, F401 - imported for its registration (optional: judge panels)
import airbench_nb.analysis.perturbations  # noqa: E402, F401 - imported for its registration
import airbench_nb.analysis.stability  # noqa: E402, F401 - imported for its registration
import airbench_nb.analysis.calibration  # noqa: E402, F401 - imported for its registration

# isort: on


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    return str(value)


def _by_model(frame: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Rows of ``frame`` as JSON-ready dicts grouped by ``model``, in order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in _records(frame):
        out.setdefault(row["model"], []).append(row)
    return out


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of ``frame`` as JSON-ready dicts (NaN as None)."""
    return json.loads(frame.to_json(orient="records"))


def analyze_run(
    run_dir: str | Path,
    *,
    protocol: str = "strict",
    weights: str | Mapping[str, float] | None = None,
    out: str | Path | None = None,
    **options: Any,
) -> AnalysisReport:
    """Analyse a run folder and write ``<run_dir>/analysis/`` (see :meth:`RunAnalysis.write`).

    Args:
        run_dir: The run folder.
        protocol: ``strict`` or ``official``.
        weights: Ranking weights.
        out: Output folder (default ``<run_dir>/analysis``).
        **options: Further :class:`RunAnalysis` arguments (``models``, ``judges``, ``seed``, ``reps``, ...).

    Returns:
        The report written to ``analysis.json``.
    """
    # The run's records are read without the cyclic collector (reading makes no cycles), then frozen: the full
    # collections of the sections (statsmodels' multipletests calls gc.collect()) need not walk them again.
    enabled = gc.isenabled()
    gc.disable()
    try:
        analysis = RunAnalysis(run_dir, protocol=protocol, weights=weights, **options)
    except BaseException:
        stop_ahead()  # started by the command line, or by the analysis before it failed
        raise
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    try:
        return analysis.write(out)  # which ends the worker: a result never asked for is not waited for
    finally:
        gc.unfreeze()
