"""Per model: parsing sources, the items a run keeps, item fingerprints and per-model frames.

See :mod:`airbench_nb.analysis.compare`.
"""

from __future__ import annotations

import logging
from functools import singledispatch
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from airbench_nb.analysis.compare.common import SEPARATOR
from airbench_nb.analysis.data import RunData
from airbench_nb.records import (
    CONTROL_OF_KEY,
    PERTURBATION_OF_KEY,
    ChatItem,
    FoundationItem,
    ItemBase,
    SingleChoiceItem,
)

logger = logging.getLogger(__name__)


def parse_source(text: str | Path) -> tuple[Path, str | None]:
    """Split ``RUN_DIR::MODEL_SPEC`` into the folder and the spec (None for a bare run folder)."""
    raw = str(text)
    folder, sep, spec = raw.partition(SEPARATOR)
    if sep and not spec:
        raise ValueError(f"{raw!r}: nothing after {SEPARATOR!r}; write RUN_DIR{SEPARATOR}MODEL_SPEC")
    return Path(folder), (spec if sep else None)


def _kept_items(run: RunData) -> dict[str, FoundationItem | ChatItem]:
    """Usable items of ``run`` the score tables count: no graded, rotated, control or perturbed copies."""
    uids = {i.uid for i in run.all_items} or set(run.items)
    return {
        uid: item
        for uid, item in run.items.items()
        if "clean_uid" not in item.meta
        and item.meta.get("rotation_of") not in uids
        and CONTROL_OF_KEY not in item.meta
        and PERTURBATION_OF_KEY not in item.meta
    }


def _fingerprint(item: FoundationItem | ChatItem) -> dict[str, Any]:
    """The fields that must agree for an item of two runs to be the same item."""
    out: dict[str, Any] = {"task": item.task, "question": item.question, "audio_sha256": item.audio_sha256}
    if item.multi_clip:  # every clip must be the same (one-clip items keep the fields they always had)
        out["clips_sha256"] = item.clips_sha256
    _add_gold_fingerprint(item, out)
    return out


@singledispatch
def _add_gold_fingerprint(item: ItemBase, out: dict[str, Any]) -> None:
    """Add to ``out`` the gold fields of the item's kind that must agree too (none for a kind that registered none)."""


@_add_gold_fingerprint.register
def _single_choice_gold(item: SingleChoiceItem, out: dict[str, Any]) -> None:
    out["choices"] = list(item.choices)
    out["answer"] = item.answer


@_add_gold_fingerprint.register
def _chat_gold(item: ChatItem, out: dict[str, Any]) -> None:
    out["reference"] = item.reference
    if item.multi_turn:
        out["turns"] = item.conversation


class _RunFrames:
    """One run's items and per-item frames, computed once however many of its models are compared."""

    def __init__(
        self,
        run: RunData,
        protocol: str,
        foundation: pd.DataFrame | None = None,
        chat: pd.DataFrame | None = None,
    ) -> None:
        self.run = run
        self.protocol = protocol
        self.items = _kept_items(run)
        self._foundation = foundation
        self._chat = chat
        self._kept: dict[str, pd.Series] = {}

    def _kept_rows(self, name: str, frame: pd.DataFrame) -> pd.Series:
        """Which rows of a frame are about a kept item (computed once per frame: its models share it)."""
        if name not in self._kept:
            uids = frame["uid"].to_numpy(dtype=object)  # a set lookup per row: pandas' isin on Arrow strings is slower
            self._kept[name] = pd.Series(
                np.fromiter((uid in self.items for uid in uids), dtype=bool, count=len(uids)), index=frame.index
            )
        return self._kept[name]

    @property
    def foundation(self) -> pd.DataFrame:
        if self._foundation is None:
            self._foundation = self.run.foundation_frame(self.protocol)
        return self._foundation

    @property
    def chat(self) -> pd.DataFrame:
        if self._chat is None:
            self._chat = self.run.chat_frame(self.protocol)
        return self._chat

    def foundation_scores(self, model: str) -> dict[str, float]:
        """``{uid: 1.0 right, 0.0 wrong, NaN unscored}`` over the kept Foundation items (empty: no answers)."""
        frame = self.foundation
        rows = frame[(frame["model"] == model) & self._kept_rows("foundation", frame)]
        values = rows["correct"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
        return dict(zip(rows["uid"], values, strict=True))

    def chat_judges(self, model: str) -> set[str]:
        """Judges with at least one scored Chat unit of ``model``."""
        frame = self.chat
        rows = frame[(frame["model"] == model) & ~frame["failed"]]
        return set(rows["judge"])

    def chat_scores(self, model: str, judge: str) -> dict[str, float]:
        """``{uid: mean of the scored orders' model scores, NaN none scored}`` over the kept Chat items.

        A multi-turn conversation's value is the mean over its scored turns of each turn's mean over its scored
        orders (the conversation score of :mod:`airbench_nb.scoring`).
        """
        frame = self.chat
        rows = frame[(frame["model"] == model) & (frame["judge"] == judge) & self._kept_rows("chat", frame)]
        if rows.empty:
            return {}
        if "turn" in rows.columns and (rows["turn"].fillna(0) > 0).any():
            by_turn = rows.assign(turn=rows["turn"].fillna(0)).groupby(["uid", "turn"], sort=False)["score_model"]
            means = by_turn.mean().groupby(level="uid", sort=False).mean()  # NaN turns skipped
        else:
            means = rows.groupby("uid", sort=False)["score_model"].mean()  # NaN orders skipped; all NaN -> NaN
        return {str(u): float(v) for u, v in means.items()}
