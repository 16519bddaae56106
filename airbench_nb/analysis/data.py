"""A run folder as two tidy frames: one row per (model, Foundation item), one per (model, judge, Chat item, order).

Every analysis reads these frames, so the protocol's rules live in one place:

- ``strict``: the Foundation option a model chose is the one its deciding verdict read (judges in the scoring
  priority: ``rule`` first, then the others; see :mod:`airbench_nb.scoring`); a missing or error response, a
  missing verdict or an abstention is a *failure*: ``failed`` is True, ``chosen`` is missing and ``correct`` is
  False (counted wrong, as strict scoring does). Chat scores are the verdict's parsed scores.
- ``official``: the option is read by the official first/second-to-last character rule; a failure has ``correct``
  missing (dropped, as the official script does) and a letter past the item's options is read (``chosen`` >=
  ``n_choices``) and wrong. Chat scores come from the official parser of the judge's raw reply.

Items about several clips (the kit's ``multi-clip`` tasks) are rows like the others, with ``clips`` > 1. Multi-turn
Chat items have one row per (turn, order) per judge: ``turn`` is the turn's index (0 for the first, and for a
one-turn item), ``turns`` the conversation's length (1 for a one-turn item); a turn's row reads the verdict of that
turn and the model's answer to it (a turn the model did not answer is a failure).

Audio-reliance controls (items whose ``meta`` names ``control_of``, :mod:`airbench_nb.builders.controls`) are left
out of both frames, so that no analysis counts a question again with its audio taken away (as the score tables
leave them out); ``foundation_frame(controls=True)`` keeps them, rows like the others, for the controls' analysis
(:func:`airbench_nb.analysis.controls.outcomes_from_frame` reads their original and control from the items).
Perturbed copies (``meta.perturbation_of``, :mod:`airbench_nb.builders.perturbations`) are left out the same way;
``foundation_frame(perturbations=True)`` keeps them, their ``perturbation`` and ``parameter`` in columns of their
own.

Items whose audio is missing, empty or corrupt are left out (they are a data defect, as in scoring); responses
are the latest per (model, uid); verdicts the latest per (model, judge, uid, order), and a verdict that judged an
older response than the latest one (its ``response_hash`` differs) is stale and unused, as in scoring
(:mod:`airbench_nb.run_records`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from airbench_nb.judge.extract import official_extract
from airbench_nb.records import (
    CONTROL_OF_KEY,
    LETTERS,
    PERTURBATION_OF_KEY,
    TIERED_KINDS,
    AudioStatus,
    ChatItem,
    FoundationItem,
    Response,
    Verdict,
)
from airbench_nb.run_folder import KINDS as RUN_KINDS
from airbench_nb.run_folder import RunFolder
from airbench_nb.run_records import RunRecords, current_verdicts

logger = logging.getLogger(__name__)

KINDS: tuple[str, ...] = RUN_KINDS
"""Manifest kinds of a run folder's data directory (``<kind>.jsonl``): AIR-Bench's two and the reference-scored
ones (:data:`airbench_nb.run_folder.KINDS`)."""

FOUNDATION_COLUMNS: tuple[str, ...] = (
    "model",
    "uid",
    "task",
    "dataset",
    "category",
    "n_choices",
    "choices",
    "gold",
    "gold_letter",
    "chosen",
    "chosen_letter",
    "chosen_text",
    "correct",
    "failed",
    "reason",
    "judge",
    "response",
    "words",
    "snr_db",
    "clean_uid",
    "background",
    "rotation_of",
    "rotation",
    "clips",
    "perturbation",
    "parameter",
)
"""Columns of :meth:`RunData.foundation_frame`."""

CHAT_COLUMNS: tuple[str, ...] = (
    "model",
    "judge",
    "uid",
    "task",
    "category",
    "order",
    "score_model",
    "score_reference",
    "failed",
    "reason",
    "response_words",
    "reference_words",
    "turn",
    "turns",
)
"""Columns of :meth:`RunData.chat_frame`."""


def word_count(text: str | None) -> int | None:
    """Number of whitespace-separated words of ``text`` (None for no text)."""
    return None if text is None else len(text.split())


def _float(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


@dataclass
class RunData:
    """The records of one run folder: items, the latest response per (model, uid), all verdicts."""

    folder: Path
    """The run folder (or the folder the records were read from)."""
    items: dict[str, FoundationItem | ChatItem]
    """Usable items by uid (audio ok or not checked)."""
    responses: dict[str, dict[str, Response]] = field(default_factory=dict)
    """``{model spec: {uid: latest response}}``."""
    verdicts: dict[str, list[Verdict]] = field(default_factory=dict)
    """``{model spec: verdicts of every judge, in file order}``."""
    unusable: int = 0
    """Items left out because their audio is missing, empty or corrupt."""
    all_items: list[FoundationItem | ChatItem] = field(default_factory=list)
    """Every item as read, unusable ones included (scoring counts them)."""
    duplicate_responses: int = 0
    """Response records superseded by a later record of the same (model, uid) when the run was read."""
    _current: dict[tuple[str, bool], Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def models(self) -> list[str]:
        """Model specs that answered at least one item, sorted."""
        return sorted(m for m, by_uid in self.responses.items() if by_uid)

    def _resolved(self, model: str, repeats: bool = False) -> tuple[list[Verdict], dict[str, int]]:
        """:func:`~airbench_nb.run_records.current_verdicts` of ``model``, computed once while its records stay.

        Every frame and section asks for the same model's verdicts (each protocol, each frame): the latest per key
        and the response hashes are worked out once. A model's verdict list or responses replaced or grown since
        (another object, another length) are resolved again.
        """
        verdicts, responses = self.verdicts.get(model, []), self.responses.get(model, {})
        cached = self._current.get((model, repeats))
        if not (
            cached is not None
            and cached[0] is verdicts
            and cached[1] is responses
            and cached[2] == (len(verdicts), len(responses))
        ):
            found = current_verdicts(verdicts, responses, repeats=repeats)
            cached = (verdicts, responses, (len(verdicts), len(responses)), found)
            self._current[(model, repeats)] = cached
        kept, counts = cached[3]
        return list(kept), dict(counts)

    def current_verdicts(self, model: str) -> list[Verdict]:
        """The verdicts of ``model`` that count: latest per (judge, uid, order), stale ones left out."""
        return self._resolved(model)[0]

    def repeated_verdicts(self, model: str) -> list[Verdict]:
        """The verdicts of ``model`` that count, the judges' repeats included (for the judge-panel analysis).

        The latest per (judge, uid, order, turn, repeat), stale ones left out (:func:`current_verdicts`).
        """
        return self._resolved(model, repeats=True)[0]

    def resolved_counts(self) -> dict[str, dict[str, int]]:
        """Per model: verdict records superseded by later ones and stale verdicts left out."""
        return {m: self._resolved(m)[1] for m in self.models}

    def foundation_frame(
        self,
        protocol: str = "strict",
        judges: Sequence[str] | None = None,
        *,
        controls: bool = False,
        perturbations: bool = False,
    ) -> pd.DataFrame:
        """One row per (model, Foundation item) with the option chosen and whether it is right.

        Args:
            protocol: ``strict`` or ``official`` (see the module docstring).
            judges: Judge specs in priority order for ``strict`` (default: ``rule`` first, then the others).
            controls: Keep the audio-reliance controls (``meta.control_of``); left out by default.
            perturbations: Keep the perturbed copies (``meta.perturbation_of``); left out by default.

        Returns:
            A DataFrame with :data:`FOUNDATION_COLUMNS`. ``chosen``/``rotation`` are nullable ints, ``correct`` a
            nullable boolean, ``snr_db`` NaN for items that are not SNR-graded; ``perturbation`` (the curve's name,
            ``codec:mp3``) None and ``parameter`` NaN for items that are not perturbed copies.
        """
        from airbench_nb.scoring import (
            failure_text,
            foundation_verdicts,
            official_foundation_correct,
            strict_foundation,
        )
        from airbench_nb.scoring.metrics import ChoiceAccuracy
        from airbench_nb.scoring.outcomes import asked_items

        if protocol not in ("strict", "official"):
            raise ValueError(f"unknown protocol {protocol!r}: use 'strict' or 'official'")
        items = [
            i
            for i in self.items.values()
            if ChoiceAccuracy.name in i.METRICS  # what the metric scores
            and (controls or CONTROL_OF_KEY not in (i.meta or {}))
            and (perturbations or PERTURBATION_OF_KEY not in (i.meta or {}))
        ]
        uids = {i.uid for i in items}
        rows: list[dict[str, Any]] = []
        for model in self.models:
            by_uid = self.responses[model]
            if not any(u in by_uid for u in uids):
                continue
            chosen_verdicts = foundation_verdicts(self.current_verdicts(model), uids, judges)
            for item in asked_items(items, by_uid):  # a task the model declined (a specialist) is not asked
                response = by_uid.get(item.uid)
                text = None if response is None or response.error is not None else response.text
                judge: str | None = None
                chosen: int | None = None
                if protocol == "strict":
                    verdict = chosen_verdicts.get(item.uid)
                    correct, reason = strict_foundation(response, verdict)
                    if correct is not None and verdict is not None:
                        judge, chosen = verdict.judge, verdict.choice
                else:
                    failed_text = failure_text(response)
                    if failed_text is not None:
                        correct, reason = None, failed_text
                    else:
                        correct, reason = official_foundation_correct(text, len(item.choices), item.answer)
                        if correct is not None:
                            predict = (text or "").strip().replace("\n", "")
                            chosen = official_extract(predict, list(LETTERS[: len(item.choices)])).choice
                            judge = "official"
                failed = correct is None
                meta = item.meta or {}
                rows.append(
                    {
                        "model": model,
                        "uid": item.uid,
                        "task": item.task,
                        "dataset": item.dataset,
                        "category": item.category_label,
                        "n_choices": len(item.choices),
                        "choices": tuple(item.choices),
                        "gold": item.answer,
                        "gold_letter": LETTERS[item.answer],
                        "chosen": chosen,
                        "chosen_letter": LETTERS[chosen] if chosen is not None and chosen < len(LETTERS) else None,
                        "chosen_text": item.choices[chosen]
                        if chosen is not None and chosen < len(item.choices)
                        else None,
                        "correct": (False if protocol == "strict" else None) if failed else bool(correct),
                        "failed": failed,
                        "reason": reason,
                        "judge": judge,
                        "response": text,
                        "words": word_count(text),
                        # only graded copies carry an SNR here: built scenes record their own event SNR in meta
                        "snr_db": _float(meta.get("snr_db")) if meta.get("clean_uid") else math.nan,
                        "clean_uid": meta.get("clean_uid"),
                        "background": meta.get("background"),
                        "rotation_of": meta.get("rotation_of"),
                        "rotation": meta.get("rotation"),
                        "clips": len(item.clips),
                        "perturbation": meta.get("perturbation") if PERTURBATION_OF_KEY in meta else None,
                        "parameter": _float(meta.get("parameter")) if PERTURBATION_OF_KEY in meta else math.nan,
                    }
                )
        frame = pd.DataFrame(rows, columns=list(FOUNDATION_COLUMNS))
        for column in ("chosen", "rotation", "words", "clips"):
            frame[column] = frame[column].astype("Int64")
        frame["correct"] = frame["correct"].astype("boolean")
        frame["failed"] = frame["failed"].astype(bool)
        frame["snr_db"] = frame["snr_db"].astype(float)
        frame["parameter"] = frame["parameter"].astype(float)
        return frame

    def chat_frame(self, protocol: str = "strict", *, controls: bool = False) -> pd.DataFrame:
        """One row per (model, judge, Chat item, order), and turn for multi-turn items, with both answers' scores.

        Args:
            protocol: ``strict`` (the verdict's parsed scores) or ``official`` (the official parser of the raw
                reply; scores-only judges such as ``proxy`` keep their scores).
            controls: Keep the audio-reliance controls (``meta.control_of``); left out by default.

        Returns:
            A DataFrame with :data:`CHAT_COLUMNS`; ``score_*`` are NaN and ``failed`` True where no score was read.
        """
        from airbench_nb.scoring import CHAT_ORDERS, official_chat, strict_chat
        from airbench_nb.scoring.metrics import JudgeScore

        if protocol not in ("strict", "official"):
            raise ValueError(f"unknown protocol {protocol!r}: use 'strict' or 'official'")
        parse = official_chat if protocol == "official" else strict_chat
        items = {  # what the metric scores, the controls and perturbed copies left out
            u: i
            for u, i in self.items.items()
            if JudgeScore.name in i.METRICS
            and (controls or CONTROL_OF_KEY not in (i.meta or {}))
            and PERTURBATION_OF_KEY not in (i.meta or {})
        }
        rows: list[dict[str, Any]] = []
        for model in self.models:
            by_uid = self.responses[model]
            latest: dict[tuple[str, str, str, int | None], Verdict] = {}
            for verdict in self.current_verdicts(model):
                if verdict.uid in items and verdict.order in CHAT_ORDERS:
                    latest[(verdict.judge, verdict.uid, verdict.order, verdict.turn)] = verdict
            for judge in sorted({key[0] for key in latest}):
                for uid, item in items.items():
                    response = by_uid.get(uid)
                    turns: list[int | None] = list(range(len(item.turns))) if item.multi_turn else [None]
                    for turn in turns:
                        text = None if response is None else response.turn_answer(turn)
                        reference = item.reference if turn is None else item.conversation[turn][1]
                        for order in CHAT_ORDERS:
                            verdict = latest.get((judge, uid, order, turn))
                            model_score, reference_score, reason = parse(response, verdict, turn)
                            failed = model_score is None or reference_score is None
                            rows.append(
                                {
                                    "model": model,
                                    "judge": judge,
                                    "uid": uid,
                                    "task": item.task,
                                    "category": item.category_label,
                                    "order": order,
                                    "score_model": math.nan if failed else float(model_score),
                                    "score_reference": math.nan if failed else float(reference_score),
                                    "failed": failed,
                                    "reason": reason,
                                    "response_words": word_count(text),
                                    "reference_words": word_count(reference),
                                    "turn": turn or 0,
                                    "turns": len(turns),
                                }
                            )
        frame = pd.DataFrame(rows, columns=list(CHAT_COLUMNS))
        for column in ("response_words", "reference_words", "turn", "turns"):
            frame[column] = frame[column].astype("Int64")
        frame["failed"] = frame["failed"].astype(bool)
        return frame


def load_run(
    run_dir: str | Path,
    *,
    manifest_dir: str | Path | None = None,
    responses_dir: str | Path | None = None,
    verdicts_dir: str | Path | None = None,
    models: Sequence[str] | None = None,
    records: RunRecords | None = None,
) -> RunData:
    """Read a run folder (notebook 03/04 layout) into a :class:`RunData`.

    Args:
        run_dir: The run folder.
        manifest_dir: Folder of ``foundation.jsonl``/``chat.jsonl`` (default ``<run_dir>/data``).
        responses_dir: ``<model>/<kind>.jsonl`` responses (default ``<run_dir>/responses``).
        verdicts_dir: ``<model>/<kind>.<judge>.jsonl`` verdicts (default ``<run_dir>/verdicts``).
        models: Model specs to keep (default all).
        records: The run's records already read (:class:`~airbench_nb.run_records.RunRecords` of the same folder);
            None: read here.

    Returns:
        The run's records.

    Raises:
        FileNotFoundError: When the manifest folder holds no manifest.
        airbench_nb.manifests.ManifestError: On an invalid manifest or record line (file, line and field named).
    """
    folder = RunFolder(Path(run_dir), data=manifest_dir, responses=responses_dir, verdicts=verdicts_dir)
    run_dir = folder.path
    # The tiered sound-source items are analysed apart, per tier (airbench_nb.analysis.tiered_run): their lettered
    # answers never enter AIR-Bench's Foundation analyses (position bias, format following, answers, ...).
    kinds = [kind for kind in KINDS if kind not in TIERED_KINDS]
    manifests = [folder.manifest(kind) for kind in KINDS if folder.manifest(kind).is_file()]
    if not manifests:
        raise FileNotFoundError(f"{folder.data_dir}: no manifest ({', '.join(f'{k}.jsonl' for k in KINDS)})")
    manifests = [path for path in manifests if path.stem in kinds]
    items: dict[str, FoundationItem | ChatItem] = {}
    all_items: list[FoundationItem | ChatItem] = []
    unusable = 0
    records = records if records is not None else RunRecords(folder)
    for path in manifests:
        for item in records.manifest_items(path):
            all_items.append(item)
            if item.audio_status in (None, AudioStatus.ok):
                items[item.uid] = item
            else:
                unusable += 1
    latest = records.latest_by_model(kinds, models)
    responses = {model: found.by_uid for model, found in latest.items()}
    duplicates = sum(found.superseded for found in latest.values())
    verdicts = records.verdicts_by_model(models, skip_kinds=TIERED_KINDS)
    # an item whose audio the runner found missing, empty or corrupt when it asked (a data defect, whatever the
    # manifest says) is unusable, as scoring has it (airbench_nb.scoring.run.score_run)
    from airbench_nb.manifests import DATA_DEFECT_TEXT

    defects = {
        uid
        for by_uid in responses.values()
        for uid, r in by_uid.items()
        if uid in items and r.error is not None and DATA_DEFECT_TEXT.match(r.error)
    }
    for uid in defects:
        del items[uid]
    unusable += len(defects)
    logger.info("run %s: %d items, %d models", run_dir, len(items), len(responses))
    return RunData(
        folder=run_dir,
        items=items,
        responses=responses,
        verdicts=verdicts,
        unusable=unusable,
        all_items=all_items,
        duplicate_responses=duplicates,
    )
