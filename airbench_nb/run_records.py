"""One reader of a run's records: the latest response per (model, uid) and the verdicts that count.

:class:`RunRecords` reads a :class:`~airbench_nb.run_folder.RunFolder`'s response and verdict files once (each file at
most once per reading mode) and answers every stage's question about them, per model folder, item kind and judge.
Scoring (:func:`~airbench_nb.scoring.score_run_folder`), the analyses (:func:`~airbench_nb.analysis.data.load_run`) and
the tiered benchmark (:func:`~airbench_nb.analysis.tiered_run.tiered_run`) all read through it, and the rules of which
record counts live here only:

- **latest response** (:func:`latest_responses`): response files are append-only, so a rerun of an item comes later
  in its file: the last record per uid wins, and the earlier ones are *superseded* (counted);
- **current verdict** (:func:`current_verdicts`): the last verdict per (model, uid, judge, order, turn) wins, and it
  counts only if it judged the model's latest response: a verdict whose ``response_hash`` differs from that response's
  :meth:`~airbench_nb.records.Response.content_hash` is *stale* (left out, counted; the item is unjudged until the
  judge runs again). Verdicts without the field (files written before it existed) count. Repeats of a judgement
  (``Verdict.repeat`` 1, 2, ...: ``judge --judge-repeats``) are left out: every score reads the first judgement
  (``repeat`` None), so a run judged with repeats scores as it would without them; the judge-panel analysis reads them
  (``current_verdicts(..., repeats=True)``: the key gains the repeat).

A response file is ``responses/<model>/<kind>.jsonl``, a verdict file ``verdicts/<model>/<kind>.<judge>.jsonl``
(:meth:`RunFolder.verdicts_file <airbench_nb.run_folder.RunFolder.verdicts_file>`): a record's kind is its file's.

This module sits just above :mod:`airbench_nb.run_folder`: it imports records, manifests and the run folder only.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from airbench_nb.manifests import read_manifest, read_records
from airbench_nb.records import AnyItem, Response, Verdict
from airbench_nb.run_folder import KINDS, RunFolder, file_slug

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)


def latest_responses(responses: Iterable[Response]) -> tuple[dict[str, Response], int]:
    """The latest response per uid of one model's responses (files are append-only: a retry comes later).

    Args:
        responses: Responses of one model, in file order.

    Returns:
        ``({uid: latest response}, number of records superseded)``.
    """
    latest: dict[str, Response] = {}
    seen = 0
    for response in responses:
        seen += 1
        latest[response.uid] = response
    return latest, seen - len(latest)


def current_verdicts(
    verdicts: Iterable[Verdict], responses: Mapping[str, Response], *, repeats: bool = False
) -> tuple[list[Verdict], dict[str, int]]:
    """The verdicts that count: the latest per (model, uid, judge, order, turn), if it judged the latest response.

    A verdict whose ``response_hash`` is not the :meth:`~airbench_nb.records.Response.content_hash` of the model's
    latest response for its item is *stale*: it judged an older answer, and never scores a newer one (the item is
    then unjudged until the judge runs again). Verdicts without the field (files written before it existed) count.

    Args:
        verdicts: Verdicts of one model, in file order.
        responses: That model's latest response per uid (:func:`latest_responses`).
        repeats: Keep the repeats too (the latest per (model, uid, judge, order, turn, repeat)); by default only the
            first judgement (``repeat`` None) counts, the repeats are neither kept nor counted as superseded.

    Returns:
        ``(verdicts, counts)``: the verdicts that count, in first-seen key order, and
        ``{"verdicts": records superseded, "stale_verdicts": latest verdicts left out as stale}``.
    """
    latest: dict[tuple[str, str, str, str, int | None, int | None], Verdict] = {}
    seen = 0
    for verdict in verdicts:
        if verdict.repeat is not None and not repeats:
            continue
        seen += 1
        latest[(verdict.model, verdict.uid, verdict.judge, verdict.order, verdict.turn, verdict.repeat)] = verdict
    hashes: dict[str, str] = {}
    kept: list[Verdict] = []
    stale = 0
    for verdict in latest.values():
        response = responses.get(verdict.uid)
        if verdict.response_hash is not None and response is not None:
            if response.uid not in hashes:
                hashes[response.uid] = response.content_hash()
            if verdict.response_hash != hashes[response.uid]:
                stale += 1
                continue
        kept.append(verdict)
    return kept, {"verdicts": seen - len(latest), "stale_verdicts": stale}


@dataclass(frozen=True)
class LatestResponses:
    """A model's latest response per uid (:func:`latest_responses`)."""

    by_uid: dict[str, Response]
    """``{uid: latest response}``, in first-seen uid order."""
    superseded: int
    """Response records superseded by a later record of the same uid."""


@dataclass(frozen=True)
class CurrentVerdicts:
    """A model's verdicts that count (:func:`current_verdicts`)."""

    verdicts: list[Verdict]
    """The latest verdict per (model, uid, judge, order, turn) that judged the latest response, first-seen order."""
    superseded: int
    """Verdict records superseded by a later record of the same key."""
    stale: int
    """Latest verdicts left out because they judged an older response."""

    def counts(self) -> dict[str, int]:
        """``{"verdicts": superseded, "stale_verdicts": stale}`` (the score table's ``duplicates`` form)."""
        return {"verdicts": self.superseded, "stale_verdicts": self.stale}


def verdict_file_kind(path: Path) -> str:
    """The item kind of a verdict file (``<kind>.<judge>.jsonl`` -> ``<kind>``)."""
    return path.name.split(".", 1)[0]


def verdict_file_judge(path: Path) -> str:
    """The judge of a verdict file, as its name spells it (``<kind>.<judge slug>.jsonl`` -> the slug)."""
    return path.name.removesuffix(".jsonl").split(".", 1)[-1]


@dataclass
class RunRecords:
    """The responses and verdicts of a run folder, each file read once, answered per model folder, kind and judge.

    Args:
        folder: The run folder.
        strict: Raise on a bad record line (True, :func:`~airbench_nb.manifests.read_records`'s default) or skip it
            with a logged warning (False).
    """

    folder: RunFolder
    """The run folder read."""
    strict: bool = True
    """Whether a bad record line raises (else it is skipped, logged)."""
    _read: dict[tuple[Path, bool], list[BaseModel]] = field(default_factory=dict, repr=False)
    _items: dict[Path, list[AnyItem]] = field(default_factory=dict, repr=False)

    def lenient(self) -> RunRecords:
        """The same reader skipping bad lines (``strict=False``), sharing the files already read."""
        return RunRecords(self.folder, strict=False, _read=self._read, _items=self._items)

    def manifest_items(self, path: Path) -> list[AnyItem]:
        """The items of a manifest (:func:`~airbench_nb.manifests.read_manifest`, strict), read once per file.

        The analyses and the score tables read the same items: one copy of them is held, not one per reader.
        """
        if path not in self._items:
            self._items[path] = read_manifest(path)
        return self._items[path]

    # --- files ------------------------------------------------------------------------------------------------

    def model_dirs(self) -> list[str]:
        """The names of the models' response folders, sorted (:meth:`RunFolder.model_dirs`)."""
        return [p.name for p in self.folder.model_dirs()]

    def response_files(self, model_dir: str, kinds: Sequence[str] = KINDS) -> list[Path]:
        """A model folder's response files of ``kinds`` that exist, in the order of ``kinds``."""
        paths = [self.folder.responses_file(model_dir, kind) for kind in kinds]
        return [p for p in paths if p.is_file()]

    def verdict_files(
        self,
        model_dir: str,
        kinds: Sequence[str] | None = None,
        judges: Sequence[str] | None = None,
        *,
        skip_kinds: Sequence[str] = (),
    ) -> list[Path]:
        """A model folder's verdict files (Batch API files left out), sorted by name.

        Args:
            model_dir: The model's folder name (or spec).
            kinds: Keep the files of these kinds (None: every file, whatever its kind).
            judges: Keep the files of these judges (None: every judge); the order is the files' sorted order.
            skip_kinds: Leave out the files of these kinds.
        """
        paths = self.folder.verdict_files(model_dir)
        if kinds is not None:
            paths = [p for p in paths if verdict_file_kind(p) in kinds]
        if skip_kinds:
            paths = [p for p in paths if verdict_file_kind(p) not in skip_kinds]
        if judges is not None:
            slugs = {file_slug(j) for j in judges}
            paths = [p for p in paths if verdict_file_judge(p) in slugs]
        return paths

    def _records(self, path: Path, model: type[R]) -> list[R]:
        key = (path, self.strict)
        if key not in self._read:
            self._read[key] = list(read_records(path, model, strict=self.strict))
        return self._read[key]  # type: ignore[return-value] - one record type per file

    # --- records ----------------------------------------------------------------------------------------------

    def responses(self, model_dir: str, kinds: Sequence[str] = KINDS) -> list[Response]:
        """Every response record of a model folder's files of ``kinds``, in file order (kinds in the order given)."""
        return [r for path in self.response_files(model_dir, kinds) for r in self._records(path, Response)]

    def verdicts(
        self,
        model_dir: str,
        kinds: Sequence[str] | None = None,
        judges: Sequence[str] | None = None,
        *,
        skip_kinds: Sequence[str] = (),
    ) -> list[Verdict]:
        """Every verdict record of a model folder's verdict files (:meth:`verdict_files`), in file order."""
        paths = self.verdict_files(model_dir, kinds, judges, skip_kinds=skip_kinds)
        return [v for path in paths for v in self._records(path, Verdict)]

    def latest(self, model_dir: str, kinds: Sequence[str] = KINDS) -> LatestResponses:
        """The latest response per uid of a model folder's responses to ``kinds`` (:func:`latest_responses`)."""
        by_uid, superseded = latest_responses(self.responses(model_dir, kinds))
        return LatestResponses(by_uid, superseded)

    def latest_by_model(
        self, kinds: Sequence[str] = KINDS, models: Sequence[str] | None = None
    ) -> dict[str, LatestResponses]:
        """The latest response per uid of each model spec (a record's ``model``), over every model folder.

        Args:
            kinds: Response files of these kinds.
            models: Keep these model specs (None: all).

        Returns:
            ``{model spec: its latest responses}``, models in first-seen order.
        """
        out: dict[str, LatestResponses] = {}
        for model_dir in self.model_dirs():
            grouped: dict[str, list[Response]] = {}
            for response in self.responses(model_dir, kinds):
                if models is None or response.model in models:
                    grouped.setdefault(response.model, []).append(response)
            for model, mine in grouped.items():
                before = out.get(model)
                earlier = list(before.by_uid.values()) if before is not None else []
                by_uid, superseded = latest_responses([*earlier, *mine])
                out[model] = LatestResponses(by_uid, superseded + (before.superseded if before is not None else 0))
        return out

    def verdicts_by_model(
        self,
        models: Sequence[str] | None = None,
        *,
        skip_kinds: Sequence[str] = (),
    ) -> dict[str, list[Verdict]]:
        """Every verdict record per model spec (a record's ``model``), over every model folder, in file order.

        Args:
            models: Keep these model specs (None: all).
            skip_kinds: Leave out the verdict files of these kinds.
        """
        out: dict[str, list[Verdict]] = {}
        for model_dir in self.model_dirs():
            for verdict in self.verdicts(model_dir, skip_kinds=skip_kinds):
                if models is None or verdict.model in models:
                    out.setdefault(verdict.model, []).append(verdict)
        return out

    def current(
        self,
        model_dir: str,
        responses: Mapping[str, Response],
        kinds: Sequence[str] | None = None,
        judges: Sequence[str] | None = None,
        *,
        repeats: bool = False,
    ) -> CurrentVerdicts:
        """The verdicts that count of a model folder's verdict files, against its latest ``responses``.

        Args:
            model_dir: The model's folder name (or spec).
            responses: The model's latest response per uid (:meth:`latest`).
            kinds: Verdict files of these kinds (None: every kind).
            judges: Verdict files of these judges (None: every judge).
            repeats: Keep the judges' repeats too (:func:`current_verdicts`); by default the first judgements only.
        """
        kept, counts = current_verdicts(self.verdicts(model_dir, kinds, judges), responses, repeats=repeats)
        return CurrentVerdicts(kept, counts["verdicts"], counts["stale_verdicts"])

    def deciding(
        self,
        model_dir: str,
        responses: Mapping[str, Response],
        kind: str,
        judges: Sequence[str],
    ) -> dict[str, Verdict]:
        """The deciding verdict per uid: the current verdict of the first judge of ``judges`` that has one.

        Each judge's file (``<kind>.<judge>.jsonl``) is resolved on its own; a judge without a file is skipped.
        """
        chosen: dict[str, Verdict] = {}
        for judge in reversed(judges):  # earlier judges overwrite later ones
            path = self.folder.verdicts_file(model_dir, kind, judge)
            if not path.is_file():
                continue
            current, _ = current_verdicts(self._records(path, Verdict), responses)
            chosen.update({v.uid: v for v in current})
        return chosen

    # --- provenance -------------------------------------------------------------------------------------------

    def fingerprint(self, kinds: Sequence[str] = KINDS) -> str:
        """SHA-256 over the manifests of ``kinds`` and every response and verdict file of the run (names and bytes).

        Two readings of a run give the same fingerprint exactly when none of these files changed, appeared or went:
        what was computed from the first still holds for the second.
        """
        digest = hashlib.sha256()
        paths = [self.folder.manifest(kind) for kind in kinds if self.folder.manifest(kind).is_file()]
        for model_dir in self.model_dirs():
            paths += self.response_files(model_dir, kinds)
            paths += self.verdict_files(model_dir)
        for path in paths:
            digest.update(f"{path.parent.name}/{path.name}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        return digest.hexdigest()
