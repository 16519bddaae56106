"""The tiered sound-source benchmark over a run folder: each model's answers as per-tier results.

:func:`tiered_run` reads a run's ``sound_source`` and ``sound_source_open`` manifests, every model's latest responses
to them and the verdicts that count, and scores each (model, tier) with :mod:`airbench_nb.scoring.tiered`. Which tier
a model's answers belong to:

- closed-set items answered by a ``classifier:`` model: **B** (its ranking of the options is the prediction list);
- closed-set items answered by a ``clap:`` model: **C** (idem);
- closed-set items answered by any other model (an LALM, a baseline): **A**, the option the deciding judge read
  (``rule`` unless another judge is named; an abstention or an error is an unanswered item, counted);
- open-vocabulary items: **D**, the hits the deciding judge found (``sources``, the offline rule judge, unless an
  LLM judge is named; shown as a proxy when it is the rule). Tier D's precision and share of classes named per
  answer come from the names the ``sources`` rule reads in each answer (stored in its verdicts; read again from the
  answer when an LLM judge, which gives hits only, decided).

A model that answered closed-set items in tier A and open items is two systems (tiers A and D): they are never in one
table. Items whose audio is missing, empty or corrupt are a defect of the data, not a failure of the model, by the rule
every kind follows (:func:`~airbench_nb.scoring.run.score_run`): an item whose manifest says so, or that the runner
answered with a data defect (``audio missing: ...``) when it checked the audio, is left out of that system's
denominators and counted in :attr:`TieredRun.unusable`.

The reasoning analysis reads tier A's answers: response length and the strategy of each answer (the keyword proxy
:class:`~airbench_nb.analysis.tiered.KeywordStrategyClassifier` unless a classifier is given) against being right, raw
and within class (:func:`~airbench_nb.analysis.tiered.strategy_association`), systems pooled with the class and the
system as the stratum. When a ``strategy:`` judge (:mod:`airbench_nb.judge.strategy`, an LLM) labelled
the answers, its labels replace the proxy's and the association says so (``proxy`` false). The share of wrong
answers stated confidently comes from the same answers (the lexicon of :mod:`airbench_nb.analysis.tiered`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from airbench_nb.analysis.tiered import (
    ConfidentShare,
    LengthAssociation,
    StrategyAssociation,
    StrategyClassifier,
    confident_share,
    length_association,
    reasoning_json,
    strategy_association,
    words,
)
from airbench_nb.analysis_report import TieredPayload
from airbench_nb.judge.registry import deciding_judges
from airbench_nb.manifests import DATA_DEFECT_TEXT, read_manifest
from airbench_nb.models.specs import closed_set_tier
from airbench_nb.records import AudioStatus, OpenSourceItem, Response, SoundSourceItem, Verdict
from airbench_nb.run_folder import RunFolder
from airbench_nb.run_records import RunRecords, verdict_file_judge
from airbench_nb.scoring.tier_metrics import closed_answer, open_answer
from airbench_nb.scoring.tiered import RANKED_TIERS, SystemMetrics, score_closed_set, score_open_vocabulary, tiers_json

logger = logging.getLogger(__name__)

CLOSED_JUDGES: tuple[str, ...] = tuple(deciding_judges("A"))
"""Offline judges whose reading decides a tier A answer, in order of preference (the first with a verdict wins): the
registry's (:attr:`~airbench_nb.judge.base.BaseJudge.decides_tiers`), ``rule``."""

OPEN_JUDGES: tuple[str, ...] = tuple(deciding_judges("D"))
"""Offline judges whose hits decide a tier D answer, in order of preference: the registry's, ``sources`` (the offline
rule, a proxy)."""

UNUSABLE_WHY = "audio missing, empty or corrupt: a defect of the data, left out of the metrics and counted here"
"""Why a system's unusable items are missing from its metrics (``analysis.json["tiered"]["unusable_why"]``)."""

REASONING_MIN_WORDS = 8
"""Tier A answers shorter than this many words are a bare letter, not reasoning: the reasoning analysis needs
answers of at least this length (the oracle's and the random baseline's letters never qualify)."""


def tier_of(model: str, kind: str) -> str:
    """The tier of a model's answers to items of ``kind`` (see the module docstring).

    D for open-vocabulary items, else the tier its backend declares (:func:`~airbench_nb.models.specs.closed_set_tier`).
    """
    if kind == "sound_source_open":
        return "D"
    return closed_set_tier(model)


@dataclass
class TieredRun:
    """A run's tiered results: per-tier metrics, the answers behind them, and the reasoning analysis."""

    systems: list[SystemMetrics] = field(default_factory=list)
    """One result per (model, tier), in model order."""
    answers: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Tier A/B/C answers: ``system, tier, uid, gold, gold_coarse, predicted, correct, response, words, judge``, and
    ``strategy, confidence, strategy_judge`` where a ``strategy:`` judge labelled the answer (else None)."""
    open_answers: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Tier D answers: ``system, uid, gold, gold_coarse, category_hit, subclass_hit, response, judge, named`` (the
    classes and categories the ``sources`` rule reads in the answer: tier D's precision and share named)."""
    judges: dict[str, list[str]] = field(default_factory=dict)
    """Per system (``model · tier``), the judges whose verdicts decided its answers."""
    failures: dict[str, int] = field(default_factory=dict)
    """Per system, items with no usable answer (an error, an abstention, no verdict): counted as unanswered."""
    unusable: dict[str, int] = field(default_factory=dict)
    """Per system, items whose audio is missing, empty or corrupt (:data:`UNUSABLE_WHY`): left out of its metrics."""
    length: LengthAssociation | None = None
    """Response length against accuracy over tier A's reasoning answers; None when there are too few."""
    association: StrategyAssociation | None = None
    """Strategy against accuracy over the same answers; None when there are too few."""
    confident: dict[str, ConfidentShare] = field(default_factory=dict)
    """Per tier A system, the share of wrong (and right) answers stated confidently."""
    hierarchy: dict[str, str] = field(default_factory=dict)
    """Fine class -> coarse category of the run's items (the label lists of every metric)."""
    confident_labelled: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per tier A system, from a ``strategy:`` judge's confidence labels: ``{wrong_n, wrong_confident, wrong_share,
    wrong_ci, right_n, right_confident, right_share, right_ci, judge}`` (Wilson 95% intervals); empty without labels."""
    unlabelled: int = 0
    """Tier A reasoning answers a ``strategy:`` judge did not label (left out of the strategy association)."""
    reason: str | None = None
    """Why there are no results (no tiered items in the run), or why the reasoning analysis is empty."""

    @property
    def empty(self) -> bool:
        """Whether the run has no tiered result."""
        return not self.systems

    def payload(self) -> TieredPayload:
        """``analysis.json["tiered"]``, typed: :meth:`to_json` validated (the keys it writes are the fields set)."""
        return TieredPayload.from_data(self.to_json())

    def to_json(self) -> dict[str, Any]:
        """Serializer of ``analysis.json["tiered"]``: ``{tiers, reasons, hierarchy, judges, confident, ...}``."""
        out = tiers_json(self.systems)
        out["hierarchy"] = self.hierarchy
        if self.empty and self.reason:
            out["reasons"] = {tier: self.reason for tier in out["tiers"]}
        out["judges"] = self.judges
        out["failures"] = self.failures
        out["unusable"] = self.unusable
        out["unusable_why"] = UNUSABLE_WHY
        out["confident"] = {system: share.to_json() for system, share in self.confident.items()}
        out["confident_labelled"] = self.confident_labelled
        why = self.reason if self.length is None and self.association is None else None
        out["reasoning"] = reasoning_json(self.length, self.association, why)
        if self.unlabelled:
            out["reasoning"]["strategies"]["unlabelled"] = self.unlabelled
        return out


def _items(folder: RunFolder, kind: str, cls: type[Any]) -> list[Any]:
    path = folder.manifest(kind)
    return [i for i in read_manifest(path) if isinstance(i, cls)] if path.is_file() else []


def _responses(records: RunRecords, model_dir: str, kind: str) -> dict[str, Response]:
    return records.latest(model_dir, [kind]).by_uid


def _usable(items: list[Any], responses: dict[str, Response]) -> list[Any]:
    """The items whose audio is usable for this model: not a defect by the manifest nor by the runner's check."""
    return [
        i
        for i in items
        if i.audio_status in (None, AudioStatus.ok)
        and not ((r := responses.get(i.uid)) is not None and r.error is not None and DATA_DEFECT_TEXT.match(r.error))
    ]


def _labels(
    records: RunRecords, model_dir: str, judges: Sequence[str] | None, responses: dict[str, Response]
) -> dict[str, Verdict]:
    """The current strategy label per uid: from ``judges`` in order, or (None) from any verdict file that has one."""
    if judges is not None:
        found = records.deciding(model_dir, responses, "sound_source", judges) if judges else {}
        return {uid: v for uid, v in found.items() if v.reasoning is not None}
    labels: dict[str, Verdict] = {}
    for path in records.verdict_files(model_dir, ["sound_source"]):  # each file resolved on its own, in name order
        current = records.current(model_dir, responses, ["sound_source"], [verdict_file_judge(path)]).verdicts
        labels.update({v.uid: v for v in current if v.reasoning is not None})
    return labels


def _closed(
    model: str,
    tier: str,
    items: list[SoundSourceItem],
    responses: dict[str, Response],
    verdicts: dict[str, Verdict],
    labels: dict[str, Verdict],
) -> tuple[list[dict[str, Any]], list[list[str]] | None]:
    rows: list[dict[str, Any]] = []
    ranked: list[list[str]] | None = [] if tier in RANKED_TIERS else None
    for item in items:
        response = responses.get(item.uid)
        answer = closed_answer(item, response, verdicts.get(item.uid) if ranked is None else None, tier)
        predicted, judge = answer.predicted, answer.judge
        if ranked is not None:
            ranked.append(answer.ranked or [])
        text = response.text if response is not None else None
        label = labels.get(item.uid)
        reading = label.reasoning if label is not None else None
        rows.append(
            {
                "system": model,
                "tier": tier,
                "uid": item.uid,
                "gold": item.fine,
                "gold_coarse": item.coarse,
                "predicted": predicted,
                "correct": None if response is None else predicted == item.fine,
                "response": text,
                "words": words(text),
                "judge": judge,
                "strategy": reading.strategy if reading is not None else None,
                "confidence": reading.confidence if reading is not None else None,
                "strategy_judge": label.judge if reading is not None and label is not None else None,
            }
        )
    return rows, ranked


def _open(
    model: str, items: list[OpenSourceItem], responses: dict[str, Response], verdicts: dict[str, Verdict]
) -> list[dict[str, Any]]:
    rows = []
    for item in items:
        response = responses.get(item.uid)
        answer = open_answer(item, response, verdicts.get(item.uid))
        rows.append(
            {
                "system": model,
                "uid": item.uid,
                "gold": item.fine,
                "gold_coarse": item.coarse,
                "category_hit": answer.category_hit,
                "subclass_hit": answer.subclass_hit,
                "response": response.text if response is not None else None,
                "judge": answer.judge,
                "named": answer.named,
            }
        )
    return rows


def tiered_run(
    folder: RunFolder,
    *,
    closed_judges: Sequence[str] = CLOSED_JUDGES,
    open_judges: Sequence[str] = OPEN_JUDGES,
    strategy_judges: Sequence[str] | None = None,
    classifier: StrategyClassifier | None = None,
    records: RunRecords | None = None,
) -> TieredRun:
    """Score a run's tiered items per (model, tier) and analyse tier A's reasoning (see the module docstring).

    Args:
        folder: The run folder.
        closed_judges: Judges deciding tier A answers, preferred first.
        open_judges: Judges deciding tier D answers, preferred first (an LLM judge's spec before ``sources``).
        strategy_judges: ``strategy:`` judges whose labels (:attr:`~airbench_nb.records.Verdict.reasoning`) the
            reasoning analysis uses, preferred first; answers they did not label are left out of it (counted). None:
            every label found among the run's current ``sound_source`` verdicts; empty: none (the proxy).
        classifier: Strategy classifier of the reasoning analysis when no ``strategy:`` judge labelled the answers
            (the keyword proxy by default).
        records: The run's records already read (:class:`~airbench_nb.run_records.RunRecords` of ``folder``); None:
            read here. Bad record lines are skipped (logged), never fatal, whichever reader is given.

    Returns:
        A :class:`TieredRun` (empty, with a reason, when the run has no tiered items or no answers to them).
    """
    closed = _items(folder, "sound_source", SoundSourceItem)
    opened = _items(folder, "sound_source_open", OpenSourceItem)
    if not closed and not opened:
        return TieredRun(reason="no tiered sound-source items in this run (build with tiered_clips_per_class)")
    result = TieredRun(hierarchy=(closed or opened)[0].hierarchy())
    records = (records or RunRecords(folder)).lenient()
    rows: list[dict[str, Any]] = []
    open_rows: list[dict[str, Any]] = []
    for model_dir in records.model_dirs():
        for kind, every in (("sound_source", closed), ("sound_source_open", opened)):
            responses = _responses(records, model_dir, kind)
            if not every or not responses:
                continue
            model = next(iter(responses.values())).model
            tier = tier_of(model, kind)
            system = f"{model} · {tier}"
            items = _usable(every, responses)
            result.unusable[system] = len(every) - len(items)
            if not items:
                logger.warning("%s: every item's audio is missing, empty or corrupt: nothing to score", system)
                continue
            if tier == "D":
                verdicts = records.deciding(model_dir, responses, kind, open_judges)
                mine = _open(model, items, responses, verdicts)
                open_rows += mine
                hierarchy = items[0].hierarchy()
                result.systems.append(
                    score_open_vocabulary(
                        hierarchy,
                        [r["gold"] for r in mine],
                        [r["category_hit"] for r in mine],
                        [r["subclass_hit"] for r in mine],
                        system=model,
                        named=[r["named"] for r in mine],
                    )
                )
                result.failures[system] = sum(r["category_hit"] is None for r in mine)
                result.judges[system] = sorted({r["judge"] for r in mine if r["judge"]})
                continue
            verdicts = records.deciding(model_dir, responses, kind, closed_judges) if tier == "A" else {}
            labels = _labels(records, model_dir, strategy_judges, responses) if tier == "A" else {}
            mine, ranked = _closed(model, tier, items, responses, verdicts, labels)
            rows += mine
            result.systems.append(
                score_closed_set(
                    items[0].hierarchy(),
                    [r["gold"] for r in mine],
                    [r["predicted"] for r in mine],
                    system=model,
                    tier=tier,
                    ranked=ranked,
                )
            )
            result.failures[system] = sum(r["predicted"] is None for r in mine)
            result.judges[system] = sorted({r["judge"] for r in mine if r["judge"]}) if tier == "A" else ["ranking"]
    result.answers = pd.DataFrame(rows)
    result.open_answers = pd.DataFrame(open_rows)
    if not result.systems:
        result.reason = "no model answered the tiered items"
        return result
    _reasoning(result, classifier)
    return result


def _confident_labelled(answers: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """The share of wrong and of right tier A answers a ``strategy:`` judge labelled confident, per system."""
    from airbench_nb.analysis.stats import plain, wilson

    rows = answers[(answers["tier"] == "A") & answers["confidence"].notna() & answers["correct"].notna()]
    out: dict[str, dict[str, Any]] = {}
    for system, mine in rows.groupby("system", sort=True):
        entry: dict[str, Any] = {"judge": ", ".join(sorted(set(mine["strategy_judge"])))}
        for name, part in (
            ("wrong", mine[~mine["correct"].astype(bool)]),
            ("right", mine[mine["correct"].astype(bool)]),
        ):
            n, k = len(part), int((part["confidence"] == "confident").sum())
            entry[f"{name}_n"], entry[f"{name}_confident"] = n, k
            entry[f"{name}_share"] = k / n if n else None
            entry[f"{name}_ci"] = [plain(v) for v in wilson(k, n)] if n else None
        out[str(system)] = entry
    return out


def _reasoning(result: TieredRun, classifier: StrategyClassifier | None) -> None:
    """Tier A's confident language and reasoning analysis into ``result`` (or a reason when there is none)."""
    if result.answers.empty:
        result.reason = "no tier A answers (no model chose among the options)"
        return
    tier_a = result.answers[(result.answers["tier"] == "A") & result.answers["correct"].notna()]
    answered = tier_a[tier_a["response"].notna()]
    if not answered.empty:
        result.confident = confident_share(answered[["system", "response", "correct"]])
    reasoning = answered[answered["words"] >= REASONING_MIN_WORDS]
    if len(reasoning) < 4 or reasoning["correct"].nunique() < 2:
        result.reason = (
            f"no tier A answers with reasoning ({len(reasoning)} answer(s) of {REASONING_MIN_WORDS}+ words, "
            "right and wrong needed): ask with the cot prompt set"
        )
        return
    strata = ("gold", "system") if reasoning["system"].nunique() > 1 else ("gold",)
    result.length = length_association(reasoning, strata=strata)
    labelled = reasoning[reasoning["strategy"].notna()]
    if labelled.empty:  # no strategy: judge labelled these answers: the keyword proxy (or the classifier given)
        result.association = strategy_association(
            reasoning.drop(columns=["strategy"]), classifier=classifier, strata=strata
        )
        return
    result.unlabelled = len(reasoning) - len(labelled)
    result.confident_labelled = _confident_labelled(result.answers)
    association = strategy_association(labelled, strata=strata)
    judges = ", ".join(sorted(set(labelled["strategy_judge"])))
    result.association = replace(association, classifier=judges, proxy=False)
