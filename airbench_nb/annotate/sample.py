"""The stratified annotation sample: drawing it from a run folder, and its sample files."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import singledispatch
from pathlib import Path
from typing import Any, Literal

from airbench_nb.records import (
    LETTERS,
    AnnotationPair,
    ChatItem,
    FoundationItem,
    ItemBase,
    SingleChoiceItem,
    Verdict,
)
from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("foundation", "chat")
"""Kinds of pairs a sample may hold."""


STRATIFY: tuple[str, ...] = ("category", "task")
"""What a sample may be stratified by."""


@dataclass
class SampleReport:
    """What :func:`draw_sample` drew, and what it left out."""

    pairs: list[AnnotationPair]
    """The sample, in its seeded display order."""
    kind: str
    """Kind of the pairs (foundation or chat)."""
    stratify: str
    """What the strata are (category or task)."""
    seed: int
    """Seed of the draw."""
    requested: int
    """Pairs asked for."""
    population: int
    """Eligible pairs the sample was drawn from."""
    strata: dict[str, dict[str, int]] = field(default_factory=dict)
    """``{stratum: {"eligible": n, "sampled": k}}``, strata sorted."""
    excluded: dict[str, int] = field(default_factory=dict)
    """What was left out, by reason: items for ``audio_not_ok``, ``graded_copies``, ``rotated_copies`` and
    ``multi_clip_or_multi_turn`` (the kit's items about several clips or turns: a pair shows one clip and one
    answer); (model, item) pairs for ``no_response`` and ``error_or_empty_response``."""
    models: list[str] = field(default_factory=list)
    """Models whose responses were read."""
    path: Path | None = None
    """Where the sample was written (None when only drawn)."""

    def rows(self) -> list[dict[str, str | int]]:
        """Pairs per stratum (``stratum, eligible, sampled``), as ``sample-annotation`` and notebook 06 show them."""
        return [{"stratum": s, "eligible": c["eligible"], "sampled": c["sampled"]} for s, c in self.strata.items()]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (without the pairs)."""
        return {
            "path": str(self.path) if self.path else None,
            "kind": self.kind,
            "stratify": self.stratify,
            "seed": self.seed,
            "requested": self.requested,
            "sampled": len(self.pairs),
            "population": self.population,
            "models": self.models,
            "strata": self.strata,
            "excluded": self.excluded,
        }


def _digest(*parts: object) -> str:
    """SHA-256 hex digest of the parts joined by a separator: a platform-independent seeded sort key."""
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()


def allocate(sizes: dict[str, int], n: int, seed: int = 0) -> dict[str, int]:
    """Spread ``n`` draws equally over strata, capped by each stratum's size.

    A stratum smaller than its share gives what it cannot take to the others; a remainder that cannot be split
    evenly goes to strata in a seeded order.

    Args:
        sizes: ``{stratum: eligible pairs}``.
        n: Pairs wanted in all.
        seed: Seed of the order in which remainders are handed out.

    Returns:
        ``{stratum: pairs to draw}``; the total is ``min(n, sum(sizes))``.
    """
    take = dict.fromkeys(sizes, 0)
    remaining = min(max(n, 0), sum(sizes.values()))
    order = sorted(sizes, key=lambda s: _digest(seed, "stratum", s))
    while remaining > 0:
        open_ = [s for s in order if take[s] < sizes[s]]
        share = remaining // len(open_)
        if share == 0:
            for stratum in open_[:remaining]:
                take[stratum] += 1
            break
        for stratum in open_:
            extra = min(share, sizes[stratum] - take[stratum])
            take[stratum] += extra
            remaining -= extra
    return take


def _judge_verdicts(run: Any, model: str, item: FoundationItem | ChatItem) -> dict[str, Any]:
    """What each judge decided about the model's answer to ``item`` (current verdicts only)."""
    out: dict[str, Any] = {}
    for verdict in run.current_verdicts(model):
        if verdict.uid != item.uid:
            continue
        _add_judge_view(item, verdict, out)
    return out


@singledispatch
def _add_judge_view(item: ItemBase, verdict: Verdict, out: dict[str, Any]) -> None:
    """Add what ``verdict`` decided about the answer to ``item`` to ``out``, as its kind's pairs show it.

    Raises:
        TypeError: For a kind an annotation sample does not hold.
    """
    raise TypeError(f"an annotation sample holds no {type(item).__name__}")


@_add_judge_view.register
def _single_choice_view(item: SingleChoiceItem, verdict: Verdict, out: dict[str, Any]) -> None:
    choice = verdict.choice
    letter = LETTERS[choice] if choice is not None and choice < len(item.choices) else None
    out[verdict.judge] = {"choice": letter, "parse_error": verdict.parse_error}


@_add_judge_view.register
def _chat_view(item: ChatItem, verdict: Verdict, out: dict[str, Any]) -> None:
    scores = {"model": verdict.score_hypothesis, "reference": verdict.score_reference}
    out.setdefault(verdict.judge, {})[verdict.order] = scores


@singledispatch
def _annotation_pair(item: ItemBase, common: dict[str, Any], text: str, model_first: bool) -> AnnotationPair:
    """The pair that shows ``item`` and the model's answer ``text`` to an annotator, as its kind is labelled.

    Args:
        item: The item.
        common: The fields every pair has (pair id, uid, model, task, question, audio, ...).
        text: The model's answer.
        model_first: A Chat pair shows the model's answer as "Answer 1" (else the reference's).

    Raises:
        TypeError: For a kind an annotation sample does not hold.
    """
    raise TypeError(f"an annotation sample holds no {type(item).__name__}")


@_annotation_pair.register
def _single_choice_pair(item: SingleChoiceItem, common: dict[str, Any], text: str, model_first: bool) -> AnnotationPair:
    return AnnotationPair(**common, choices=list(item.choices), response=text)


@_annotation_pair.register
def _chat_pair(item: ChatItem, common: dict[str, Any], text: str, model_first: bool) -> AnnotationPair:
    answers = [text, item.reference] if model_first else [item.reference, text]
    return AnnotationPair(**common, answers=answers, model_answer=1 if model_first else 2)


def draw_sample(
    run_dir: str | Path,
    n: int,
    *,
    kind: Literal["foundation", "chat"] = "foundation",
    stratify: Literal["category", "task"] = "category",
    seed: int = 0,
    show_judge: bool = False,
    models: Sequence[str] | None = None,
    only: Collection[str] | None = None,
) -> SampleReport:
    """Draw a reproducible stratified sample of (item, model response) pairs to label from a run folder.

    Args:
        run_dir: The run folder (notebook 03/04 layout: ``data/``, ``responses/<model>/<kind>.jsonl``, ``verdicts/``).
        n: Pairs wanted (fewer when the run has fewer eligible pairs).
        kind: ``foundation`` or ``chat``.
        stratify: Strata by ``category`` or by ``task``.
        seed: Seed of the draw, the display order and the Chat answer order.
        show_judge: Let the tool show the judges' verdicts to the annotator.
        models: Model specs to sample from (default: every model of the run).
        only: Pair ids (``model|uid``) to draw from, the others not eligible (not counted as excluded): the answers
            the judges disagree on most (:func:`airbench_nb.analysis.judge_panel.disagreement_pairs`); None: all.

    Returns:
        The :class:`SampleReport` (nothing is written; see :func:`sample_annotation`).

    Raises:
        ValueError: For a bad ``kind``, ``stratify`` or ``n``.
        FileNotFoundError: When the run folder holds no manifest.
    """
    from airbench_nb.analysis.data import load_run
    from airbench_nb.manifests import data_root
    from airbench_nb.records import AudioStatus, is_perturbed

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if stratify not in STRATIFY:
        raise ValueError(f"stratify must be one of {', '.join(STRATIFY)}, got {stratify!r}")
    if n < 1:
        raise ValueError(f"n must be 1 or more, got {n}")
    run_dir = Path(run_dir)
    run = load_run(run_dir, models=models)
    folder = RunFolder(run_dir)
    manifest = folder.manifest(kind)
    root = str(data_root(manifest)) if manifest.is_file() else str(folder.data_dir.resolve())
    excluded = {
        "audio_not_ok": 0,
        "graded_copies": 0,
        "rotated_copies": 0,
        "perturbed_copies": 0,
        "multi_clip_or_multi_turn": 0,
        "no_response": 0,
        "error_or_empty_response": 0,
    }
    for item in run.all_items:
        if item.kind == kind and item.audio_status not in (None, AudioStatus.ok):
            excluded["audio_not_ok"] += 1
    items = []
    for item in run.items.values():
        if item.kind != kind:
            continue
        if (item.meta or {}).get("clean_uid"):
            excluded["graded_copies"] += 1
        elif (item.meta or {}).get("rotation_of"):
            excluded["rotated_copies"] += 1
        elif is_perturbed(item):
            excluded["perturbed_copies"] += 1
        elif item.multi_clip or item.multi_turn:
            # the kit's own items about several clips or turns: the tool shows one clip and one answer per pair
            excluded["multi_clip_or_multi_turn"] += 1
        else:
            items.append(item)
    eligible: dict[str, list[tuple[str, str, FoundationItem | ChatItem, str]]] = {}
    for model in run.models:
        by_uid = run.responses[model]
        for item in items:
            response = by_uid.get(item.uid)
            if response is None:
                excluded["no_response"] += 1
                continue
            if response.error is not None or not (response.text or "").strip():
                excluded["error_or_empty_response"] += 1
                continue
            if only is not None and f"{model}|{item.uid}" not in only:
                continue
            stratum = item.category_label if stratify == "category" else item.task
            eligible.setdefault(stratum, []).append((f"{model}|{item.uid}", model, item, response.text or ""))
    take = allocate({s: len(v) for s, v in eligible.items()}, n, seed)
    chosen: list[tuple[str, str, str, FoundationItem | ChatItem, str]] = []
    for stratum, pool in eligible.items():
        pool = sorted(pool, key=lambda p: _digest(seed, "draw", p[0]))
        chosen.extend((stratum, *entry) for entry in pool[: take[stratum]])
    chosen.sort(key=lambda c: _digest(seed, "show", c[1]))
    chat_order = sorted((c[1] for c in chosen), key=lambda pid: _digest(seed, "answer-order", pid))
    model_first = {pid: index % 2 == 0 for index, pid in enumerate(chat_order)}
    pairs = []
    for stratum, pair_id, model, item, text in chosen:
        common: dict[str, Any] = {
            "pair_id": pair_id,
            "kind": kind,
            "uid": item.uid,
            "model": model,
            "task": item.task,
            "category": item.category_label,
            "stratum": stratum,
            "question": item.question,
            "audio": item.audio,
            "data_root": root,
            "judge_verdicts": _judge_verdicts(run, model, item),
            "show_judge": show_judge,
            "seed": seed,
        }
        pairs.append(_annotation_pair(item, common, text, model_first[pair_id]))
    strata = {s: {"eligible": len(eligible[s]), "sampled": take[s]} for s in sorted(eligible)}
    report = SampleReport(
        pairs=pairs,
        kind=kind,
        stratify=stratify,
        seed=seed,
        requested=n,
        population=sum(len(v) for v in eligible.values()),
        strata=strata,
        excluded=excluded,
        models=run.models,
    )
    logger.info("sample of %d %s pairs from %d eligible (%s)", len(pairs), kind, report.population, run_dir)
    return report


def write_sample(path: str | Path, pairs: Sequence[AnnotationPair]) -> Path:
    """Write a sample atomically, refusing to replace a different sample (labels may refer to it).

    Args:
        path: The sample file (JSONL).
        pairs: The pairs, in display order.

    Returns:
        The path written.

    Raises:
        FileExistsError: If ``path`` holds a different sample.
        ValueError: If two pairs share a pair id.
    """
    path = Path(path)
    ids = [p.pair_id for p in pairs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate pair ids in the sample")
    return write_once(path, pairs, "sample", "label files may refer to its pairs")


def write_once(path: str | Path, records: Sequence[Any], what: str, why: str, fix: str = "") -> Path:
    """Write records atomically unless ``path`` already holds them; refuse to replace different ones.

    Args:
        path: The JSONL file.
        records: The records, in order.
        what: What the file is, for the message (``sample``, ``playlist``).
        why: Why it may not be replaced (``label files may refer to its pairs``).
        fix: What to do instead (default: write it under another name, or delete the old one first).

    Returns:
        The path (written, or already holding the same records).

    Raises:
        FileExistsError: If ``path`` holds different records.
    """
    from airbench_nb.manifests import dumps_record, write_records

    path = Path(path)
    text = "".join(dumps_record(r) + "\n" for r in records)
    if path.exists():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return path
        raise FileExistsError(
            f"{path} already holds a different {what}, and {why}: "
            + (fix or f"write the new {what} under another name, or delete the old one first")
        )
    return write_records(path, records)


def sample_annotation(
    run_dir: str | Path,
    out: str | Path,
    n: int,
    *,
    kind: Literal["foundation", "chat"] = "foundation",
    stratify: Literal["category", "task"] = "category",
    seed: int = 0,
    show_judge: bool = False,
    models: Sequence[str] | None = None,
    only: Collection[str] | None = None,
) -> SampleReport:
    """Draw a sample with :func:`draw_sample` and write it to ``out`` (``airbench-nb sample-annotation``).

    Args:
        run_dir: The run folder.
        out: The sample file to write (refused when it holds a different sample).
        n: Pairs wanted.
        kind: ``foundation`` or ``chat``.
        stratify: ``category`` or ``task``.
        seed: Seed of the draw.
        show_judge: Let the tool show the judges' verdicts.
        models: Model specs to sample from (default all).
        only: Pair ids (``model|uid``) to draw from (see :func:`draw_sample`); None: all.

    Returns:
        The :class:`SampleReport`, with ``path`` set when pairs were written (an empty draw writes nothing).

    Raises:
        ValueError, FileNotFoundError, FileExistsError: As :func:`draw_sample` and :func:`write_sample`.
    """
    report = draw_sample(
        run_dir, n, kind=kind, stratify=stratify, seed=seed, show_judge=show_judge, models=models, only=only
    )
    if report.pairs:
        report.path = write_sample(out, report.pairs)
    return report


def read_sample(path: str | Path) -> list[AnnotationPair]:
    """Read a sample written by :func:`write_sample`, refusing duplicate pair ids and Chat pairs without an order.

    Raises:
        airbench_nb.manifests.ManifestError: On a bad line (file, line and field named).
        FileNotFoundError: If the file does not exist.
    """
    from airbench_nb.manifests import ManifestError

    missing = "no such sample (make one with `airbench-nb sample-annotation`)"
    found = read_keyed(path, AnnotationPair, ("pair_id",), missing)
    for line, pair in found:
        if pair.kind == "chat" and (pair.model_answer not in (1, 2) or len(pair.answers) != 2):
            raise ManifestError(
                str(path), line, "a Chat pair needs two answers and model_answer 1 or 2", uid=pair.pair_id
            )
    return [pair for _, pair in found]


def read_keyed(path: str | Path, model: type[Any], key: tuple[str, ...], missing: str) -> list[tuple[int, Any]]:
    """Read a JSONL file of ``model`` records whose ``key`` fields are unique (a sample, a playlist).

    Args:
        path: The file.
        model: The record type of a line.
        key: The fields that together identify a record (the last one is named in errors).
        missing: What to say when the file does not exist.

    Returns:
        ``(line number, record)`` in file order.

    Raises:
        FileNotFoundError: If the file does not exist.
        airbench_nb.manifests.ManifestError: On a bad line or a duplicate key (file, line and field named).
    """
    from airbench_nb.manifests import ManifestError

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: {missing}")
    raw = path.read_bytes()
    records = _read_lines(path, raw, model)
    lines = [n for n, text in enumerate(raw.split(b"\n"), start=1) if text.strip()]
    seen: set[tuple[Any, ...]] = set()
    for line, record in zip(lines, records, strict=True):
        value = tuple(getattr(record, name) for name in key)
        if value in seen:
            raise ManifestError(str(path), line, f"duplicate {'/'.join(key)}", uid=value[-1], field=key[-1])
        seen.add(value)
    return list(zip(lines, records, strict=True))


def _read_lines(path: Path, raw: bytes, model: type[Any]) -> list[Any]:
    r"""Parse JSON Lines (split on ``\n`` only) into ``model`` records, naming file, line and field on error."""
    from pydantic import ValidationError

    from airbench_nb.manifests import ManifestError

    records = []
    for line, text in enumerate(raw.split(b"\n"), start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ManifestError(str(path), line, f"not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ManifestError(str(path), line, f"expected a JSON object, got {type(obj).__name__}")
        try:
            records.append(model.model_validate(obj))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or None
            uid = obj.get("pair_id") if isinstance(obj.get("pair_id"), str) else None
            raise ManifestError(str(path), line, first["msg"], uid=uid, field=where) from None
    return records


def sample_frame(pairs: Sequence[AnnotationPair]) -> Any:
    """A pandas DataFrame of a sample without what the annotator must not see (model, answer order, judges)."""
    import pandas as pd

    rows = [
        {"pair": i, "kind": p.kind, "stratum": p.stratum, "task": p.task, "category": p.category, "uid": p.uid}
        for i, p in enumerate(pairs, start=1)
    ]
    return pd.DataFrame(rows, columns=["pair", "kind", "stratum", "task", "category", "uid"])


def dumps_report(report: SampleReport) -> str:
    """The report as indented JSON (the CLI's ``--json``)."""
    return json.dumps(report.to_dict(), indent=1)
