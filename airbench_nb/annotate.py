"""Human labels of (item, model response) pairs: a stratified sample, label files, and an ipywidgets tool.

A reproducible stratified sample of pairs, an append-only label file per annotator, and a tool over both.

**Sampling** (:func:`draw_sample`, ``airbench-nb sample-annotation``). The population is every (model, item) pair
of one kind (Foundation or Chat) in a run folder whose item is a clean original (SNR-graded copies, ``meta.clean_uid``,
and rotated copies, ``meta.rotation_of``, are left out), whose audio is not missing, empty or corrupt, and whose
model gave a non-empty answer (the latest response, as scoring reads it); every exclusion is counted. Pairs are
grouped into strata (category or task) and the ``n`` pairs are spread equally over the strata: a stratum with fewer
pairs than its share gives the rest to the others. Within a stratum, pairs are taken in the order of the SHA-256 of
``seed`` and the pair id, so the same seed and run give the same sample whatever the order of the files, and adding a
model does not reshuffle the pairs of the others. The sample is written in another seeded order (strata interleaved).
A Chat pair shows the model's answer and the reference as "Answer 1" and "Answer 2"; which one is the model's
(``model_answer``) alternates over a seeded permutation of the Chat pairs (so each side comes first in half of them)
and is recorded in the sample. The annotator sees neither the model's name nor which answer is the reference, and
sees the judges' verdicts only in a sample drawn with ``show_judge``.

**Labels** (:class:`AnnotationSession`). Each annotator labels into their own JSON Lines file of
:class:`~airbench_nb.records.Label` actions (default ``<sample stem>.<annotator>.labels.jsonl`` beside the sample).
Every action is appended, flushed and fsynced before the tool moves on, so closing the browser or killing the
kernel loses nothing that was shown as done. Replaying the file gives the state: ``label`` pushes a decision onto
the pair's stack, ``undo`` pops the latest one, ``skip`` only passes the pair over; the annotator's label of a pair is
the latest label not undone (the rule :mod:`airbench_nb.analysis.agreement` reads). Reopening resumes at the first
unlabelled pair, pairs that were skipped coming after the others. A final line cut short by a crash mid-write is
dropped (it was never acknowledged) and the file repaired before anything is appended.

**Keys** (:data:`KEYS`): ``A``-``D`` pick the option the answer chooses and ``X`` marks it "none / unclear"
(Foundation); ``1``, ``2`` and ``T`` say which answer is better (Chat); ``N`` passes to the next pair (a skip), ``U``
undoes the latest label. In JupyterLab, keys reach the tool while the pointer is over its card (the framed part
above the comment box; the frame turns blue): :mod:`ipyevents` captures them there, so that JupyterLab's own
shortcuts (``A`` inserts a cell) do not fire, and typing a comment below the card never labels anything.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from airbench_nb.records import CHAT_TASKS, FOUNDATION_TASKS, AnnotationPair, ChatItem, FoundationItem, Label

logger = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("foundation", "chat")
"""Kinds of pairs a sample may hold."""
STRATIFY: tuple[str, ...] = ("category", "task")
"""What a sample may be stratified by."""
LETTERS = "ABCD"
"""Option letters, in option order."""
ANNOTATOR = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""What an annotator id may be: it names the label file."""
KEYS: dict[str, str] = {
    "A-D": "Foundation: the answer picks this option",
    "X": "Foundation: none / unclear",
    "1": "Chat: Answer 1 is better",
    "2": "Chat: Answer 2 is better",
    "T": "Chat: tie",
    "N": "next: pass this pair over for now (a skip; it comes back after the others)",
    "U": "undo the latest label (and go back to its pair)",
}
"""Keyboard shortcuts of the tool and what they do."""
CHAT_PREFERENCES: dict[str, str] = {"1": "1", "2": "2", "t": "tie"}
"""Chat keys and the preference they record."""


class LabelFileError(ValueError):
    """A label file that does not belong to this sample or annotator (the message names file, line and field)."""


# ------------------------------------------------------------------------------------------------------ sampling


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
    """What was left out, by reason: items for ``audio_not_ok``, ``graded_copies`` and ``rotated_copies``;
    (model, item) pairs for ``no_response`` and ``error_or_empty_response``."""
    models: list[str] = field(default_factory=list)
    """Models whose responses were read."""
    path: Path | None = None
    """Where the sample was written (None when only drawn)."""

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


def category_of(item: FoundationItem | ChatItem) -> str:
    """The item's category: from the official task tables, else the item's own, else ``other``."""
    table = FOUNDATION_TASKS if isinstance(item, FoundationItem) else CHAT_TASKS
    return table.get(item.task) or (str(item.category) if item.category else "other")


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
        if isinstance(item, FoundationItem):
            letter = LETTERS[verdict.choice] if verdict.choice is not None and verdict.choice < 4 else None
            out[verdict.judge] = {"choice": letter, "parse_error": verdict.parse_error}
        else:
            scores = {"model": verdict.score_hypothesis, "reference": verdict.score_reference}
            out.setdefault(verdict.judge, {})[verdict.order] = scores
    return out


def draw_sample(
    run_dir: str | Path,
    n: int,
    *,
    kind: Literal["foundation", "chat"] = "foundation",
    stratify: Literal["category", "task"] = "category",
    seed: int = 0,
    show_judge: bool = False,
    models: Sequence[str] | None = None,
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

    Returns:
        The :class:`SampleReport` (nothing is written; see :func:`sample_annotation`).

    Raises:
        ValueError: For a bad ``kind``, ``stratify`` or ``n``.
        FileNotFoundError: When the run folder holds no manifest.
    """
    from airbench_nb.analysis.data import load_run
    from airbench_nb.manifests import data_root
    from airbench_nb.records import AudioStatus

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if stratify not in STRATIFY:
        raise ValueError(f"stratify must be one of {', '.join(STRATIFY)}, got {stratify!r}")
    if n < 1:
        raise ValueError(f"n must be 1 or more, got {n}")
    run_dir = Path(run_dir)
    run = load_run(run_dir, models=models)
    manifest = run_dir / "data" / f"{kind}.jsonl"
    root = str(data_root(manifest)) if manifest.is_file() else str((run_dir / "data").resolve())
    item_type = FoundationItem if kind == "foundation" else ChatItem
    excluded = {
        "audio_not_ok": 0,
        "graded_copies": 0,
        "rotated_copies": 0,
        "no_response": 0,
        "error_or_empty_response": 0,
    }
    for item in run.all_items:
        if isinstance(item, item_type) and item.audio_status not in (None, AudioStatus.ok):
            excluded["audio_not_ok"] += 1
    items = []
    for item in run.items.values():
        if not isinstance(item, item_type):
            continue
        if (item.meta or {}).get("clean_uid"):
            excluded["graded_copies"] += 1
        elif (item.meta or {}).get("rotation_of"):
            excluded["rotated_copies"] += 1
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
            stratum = category_of(item) if stratify == "category" else item.task
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
            "category": category_of(item),
            "stratum": stratum,
            "question": item.question,
            "audio": item.audio,
            "data_root": root,
            "judge_verdicts": _judge_verdicts(run, model, item),
            "show_judge": show_judge,
            "seed": seed,
        }
        if isinstance(item, FoundationItem):
            pairs.append(AnnotationPair(**common, choices=list(item.choices), response=text))
        else:
            first = model_first[pair_id]
            answers = [text, item.reference] if first else [item.reference, text]
            pairs.append(AnnotationPair(**common, answers=answers, model_answer=1 if first else 2))
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
    from airbench_nb.manifests import dumps_record, write_records

    path = Path(path)
    ids = [p.pair_id for p in pairs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate pair ids in the sample")
    text = "".join(dumps_record(p) + "\n" for p in pairs)
    if path.exists():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            return path
        raise FileExistsError(
            f"{path} already holds a different sample, and label files may refer to its pairs: "
            "write the new sample under another name, or delete the old one first"
        )
    return write_records(path, pairs)


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

    Returns:
        The :class:`SampleReport`, with ``path`` set when pairs were written (an empty draw writes nothing).

    Raises:
        ValueError, FileNotFoundError, FileExistsError: As :func:`draw_sample` and :func:`write_sample`.
    """
    report = draw_sample(run_dir, n, kind=kind, stratify=stratify, seed=seed, show_judge=show_judge, models=models)
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

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such sample (make one with `airbench-nb sample-annotation`)")
    raw = path.read_bytes()
    pairs = _read_lines(path, raw, AnnotationPair)
    lines = [n for n, text in enumerate(raw.split(b"\n"), start=1) if text.strip()]
    seen: set[str] = set()
    for line, pair in zip(lines, pairs, strict=True):
        if pair.pair_id in seen:
            raise ManifestError(str(path), line, "duplicate pair_id", uid=pair.pair_id, field="pair_id")
        seen.add(pair.pair_id)
        if pair.kind == "chat" and (pair.model_answer not in (1, 2) or len(pair.answers) != 2):
            raise ManifestError(
                str(path), line, "a Chat pair needs two answers and model_answer 1 or 2", uid=pair.pair_id
            )
    return pairs


def label_file(sample: str | Path, annotator: str) -> Path:
    """The default label file of ``annotator`` for ``sample``: ``<sample stem>.<annotator>.labels.jsonl`` beside it."""
    sample = Path(sample)
    return sample.with_name(f"{sample.stem}.{check_annotator(annotator)}.labels.jsonl")


def check_annotator(annotator: str) -> str:
    """Validate an annotator id (it names a file): 1-64 letters, digits, ``.``, ``_`` or ``-``.

    Raises:
        ValueError: Saying what an id may hold.
    """
    annotator = annotator.strip()
    if not ANNOTATOR.fullmatch(annotator):
        raise ValueError(
            f"annotator id {annotator!r} is not usable: give 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (it names your label file)"
        )
    return annotator


# ---------------------------------------------------------------------------------------------------- label files


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


def read_label_file(path: str | Path, *, repair: bool = False) -> list[Label]:
    """Read one label file; a final line cut short by a crash mid-write is dropped (it was never acknowledged).

    Args:
        path: The label file (absent: no labels).
        repair: Also rewrite the file without that cut line, so that appending can go on.

    Returns:
        The actions in file order.

    Raises:
        airbench_nb.manifests.ManifestError: On a complete line that is not a valid label (file and line named).
    """
    path = Path(path)
    if not path.is_file():
        return []
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        keep = raw[: raw.rfind(b"\n") + 1]
        logger.warning("%s: dropping a final line cut short (%d bytes, never acknowledged)", path, len(raw) - len(keep))
        if repair:
            tmp = path.with_name(path.name + ".repair")
            with open(tmp, "wb") as handle:
                handle.write(keep)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        raw = keep
    return _read_lines(path, raw, Label)


def _append_durably(path: Path, line: str) -> None:
    """Append one line and make it durable (flush and fsync; the folder too when the file is new)."""
    new = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8", newline="\n") as handle:
        handle.write(line + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    if new:
        try:
            fd = os.open(path.parent, os.O_RDONLY)
        except OSError:  # pragma: no cover - folders cannot be opened on some platforms
            return
        try:
            os.fsync(fd)
        except OSError:  # pragma: no cover
            pass
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------------------------- the state machine


class AnnotationSession:
    """One annotator labelling one sample: the current pair, labels, skips, undo and resume, without widgets.

    The state is always what replaying the label file gives (see the module docstring); each action is appended
    durably before the state moves on. If the file grows outside this session (the same annotator in a second
    tab), the session replays it before its next action. A session is not thread-safe: :class:`AnnotationTool`
    takes one action at a time.
    """

    def __init__(
        self,
        pairs: Sequence[AnnotationPair],
        labels_path: str | Path,
        annotator: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Open (or create) the annotator's label file and resume at the first unlabelled pair.

        Args:
            pairs: The sample, in display order.
            labels_path: The annotator's label file (created on the first action).
            annotator: The annotator's id.
            clock: Seconds counter used to time each pair (a fake one in tests).

        Raises:
            ValueError: For a bad annotator id, an empty sample or duplicate pair ids.
            LabelFileError: When the file holds another annotator's labels or pairs not in the sample.
        """
        if not pairs:
            raise ValueError("the sample holds no pairs")
        self.pairs = list(pairs)
        """The sample, in display order."""
        self.index_of = {p.pair_id: i for i, p in enumerate(self.pairs)}
        """Position of each pair id in the sample."""
        if len(self.index_of) != len(self.pairs):
            raise ValueError("the sample holds duplicate pair ids")
        self.path = Path(labels_path)
        """The annotator's label file."""
        self.annotator = check_annotator(annotator)
        """The annotator's id."""
        self.clock = clock
        self.index: int | None = None
        """Position of the pair shown (None when every pair is labelled)."""
        self.actions: list[Label] = []
        """Every action of the file, in order."""
        self._stacks: dict[str, list[Label]] = {}
        self._history: list[str] = []
        self._skipped: set[str] = set()
        self._size = -1
        self._shown_at = clock()
        self.reload()

    # -- state ---------------------------------------------------------------------------------------------------

    def reload(self) -> None:
        """Replay the label file (repairing a final line cut short) and go to the first unlabelled pair.

        Raises:
            LabelFileError: When the file holds another annotator's labels or pairs not in the sample.
        """
        actions = read_label_file(self.path, repair=True)
        self.actions, self._stacks, self._history, self._skipped = [], {}, [], set()
        for line, action in enumerate(actions, start=1):
            if action.annotator != self.annotator:
                raise LabelFileError(
                    f"{self.path}, line {line}, field annotator: labels of {action.annotator!r}, not "
                    f"{self.annotator!r}; each annotator labels into their own file"
                )
            if action.pair_id not in self.index_of:
                raise LabelFileError(
                    f"{self.path}, line {line}, field pair_id: {action.pair_id!r} is not in the sample; "
                    "is this the label file of another sample?"
                )
            self._replay(action)
        self._size = self.path.stat().st_size if self.path.exists() else 0
        self._go(self.next_unlabelled(None))

    def _replay(self, action: Label) -> None:
        self.actions.append(action)
        stack = self._stacks.setdefault(action.pair_id, [])
        if action.action == "label":
            stack.append(action)
            self._history.append(action.pair_id)
            self._skipped.discard(action.pair_id)
        elif action.action == "undo":
            if stack:
                stack.pop()
                for position in range(len(self._history) - 1, -1, -1):
                    if self._history[position] == action.pair_id:
                        del self._history[position]
                        break
            else:
                logger.warning("%s: an undo of %s with no label to retract (ignored)", self.path, action.pair_id)
        else:
            self._skipped.add(action.pair_id)

    def _go(self, index: int | None) -> None:
        self.index = index
        self._shown_at = self.clock()

    @property
    def current(self) -> AnnotationPair | None:
        """The pair shown (None when done)."""
        return None if self.index is None else self.pairs[self.index]

    @property
    def done(self) -> bool:
        """Whether every pair has a label."""
        return self.index is None

    @property
    def labels(self) -> dict[str, Label]:
        """The annotator's label of each labelled pair (the latest label not undone), by pair id."""
        return {pid: stack[-1] for pid, stack in self._stacks.items() if stack}

    def label_of(self, pair_id: str) -> Label | None:
        """The annotator's label of a pair, or None."""
        stack = self._stacks.get(pair_id)
        return stack[-1] if stack else None

    @property
    def progress(self) -> tuple[int, int]:
        """``(pairs labelled, pairs in the sample)``."""
        return sum(1 for stack in self._stacks.values() if stack), len(self.pairs)

    @property
    def skipped(self) -> set[str]:
        """Pair ids skipped and not labelled since."""
        return set(self._skipped)

    def next_unlabelled(self, after: int | None) -> int | None:
        """The next unlabelled pair after position ``after`` (None: from the start), wrapping around.

        Pairs never skipped come first; skipped ones after them. None when every pair is labelled.
        """
        n = len(self.pairs)
        start = 0 if after is None else after + 1
        order = [(start + k) % n for k in range(n)]
        unlabelled = [i for i in order if not self._stacks.get(self.pairs[i].pair_id)]
        fresh = [i for i in unlabelled if self.pairs[i].pair_id not in self._skipped]
        return (fresh or unlabelled or [None])[0]

    # -- actions -------------------------------------------------------------------------------------------------

    def _sync(self) -> None:
        """Replay the file if it changed outside this session, keeping the pair shown when it is still open."""
        size = self.path.stat().st_size if self.path.exists() else 0
        if size != self._size:
            logger.warning("%s changed outside this session: replaying it", self.path)
            shown = self.current
            self.reload()
            if shown is not None and self.label_of(shown.pair_id) is None:
                self._go(self.index_of[shown.pair_id])

    def _write(self, action: Label) -> Label:
        from airbench_nb.manifests import dumps_record

        _append_durably(self.path, dumps_record(action))
        self._size = self.path.stat().st_size
        self._replay(action)
        return action

    def _elapsed(self) -> float:
        return round(max(0.0, self.clock() - self._shown_at), 3)

    def label(
        self,
        *,
        choice: int | None = None,
        unclear: bool = False,
        preference: Literal["1", "2", "tie"] | None = None,
        score_1: float | None = None,
        score_2: float | None = None,
        comment: str = "",
    ) -> Label:
        """Label the pair shown, write it durably and go to the next unlabelled pair.

        Args:
            choice: Foundation: index of the option the answer picks.
            unclear: Foundation: the answer picks no option, or not clearly one.
            preference: Chat: ``"1"``, ``"2"`` or ``"tie"`` (which shown answer is better).
            score_1: Chat: optional 1-10 score of Answer 1.
            score_2: Chat: optional 1-10 score of Answer 2.
            comment: Free text.

        Returns:
            The :class:`Label` written.

        Raises:
            RuntimeError: When every pair is labelled.
            ValueError: For a label that does not fit the pair's kind (nothing is written).
        """
        self._sync()
        pair = self.current
        if pair is None:
            raise RuntimeError("every pair is labelled: nothing to label (undo to change a label)")
        if pair.kind == "foundation":
            if preference is not None or score_1 is not None or score_2 is not None:
                raise ValueError("a Foundation pair takes an option or unclear, not a preference or scores")
            if unclear == (choice is not None):
                raise ValueError("give either the option the answer picks (choice) or unclear")
            if choice is not None and not 0 <= choice < len(pair.choices):
                raise ValueError(f"choice {choice} is not one of the pair's {len(pair.choices)} options")
        else:
            if choice is not None or unclear:
                raise ValueError("a Chat pair takes a preference (1, 2 or tie), not an option")
            if preference not in ("1", "2", "tie"):
                raise ValueError(f'preference must be "1", "2" or "tie", got {preference!r}')
            for name, score in (("score_1", score_1), ("score_2", score_2)):
                if score is not None and not 1 <= score <= 10:
                    raise ValueError(f"{name} must be from 1 to 10, got {score}")
        action = Label(
            pair_id=pair.pair_id,
            annotator=self.annotator,
            action="label",
            choice=choice,
            unclear=unclear,
            preference=preference,
            score_1=score_1,
            score_2=score_2,
            comment=comment.strip(),
            seconds=self._elapsed(),
        )
        self._write(action)
        self._go(self.next_unlabelled(self.index))
        return action

    def skip(self, comment: str = "") -> Label:
        """Pass the pair shown over for now (written as a skip) and go to the next unlabelled pair.

        Raises:
            RuntimeError: When every pair is labelled.
        """
        self._sync()
        pair = self.current
        if pair is None:
            raise RuntimeError("every pair is labelled: nothing to skip")
        action = Label(
            pair_id=pair.pair_id,
            annotator=self.annotator,
            action="skip",
            comment=comment.strip(),
            seconds=self._elapsed(),
        )
        self._write(action)
        self._go(self.next_unlabelled(self.index))
        return action

    def undo(self) -> Label | None:
        """Retract the latest label not yet undone (written as an undo) and show its pair again.

        Returns:
            The undo written, or None when there is no label to undo.
        """
        self._sync()
        if not self._history:
            return None
        pair_id = self._history[-1]
        action = Label(pair_id=pair_id, annotator=self.annotator, action="undo")
        self._write(action)
        self._go(self.index_of[pair_id])
        return action


# ------------------------------------------------------------------------------------------------------ keyboard


def key_action(pair: AnnotationPair | None, key: str) -> tuple[str, dict[str, Any]] | None:
    """What a key does on a pair: ``("label", kwargs)``, ``("skip", {})``, ``("undo", {})`` or None.

    Args:
        pair: The pair shown (None when done: only undo works).
        key: The key as the browser names it (``"a"``, ``"A"``, ``"1"``, ...); case is ignored.

    Returns:
        The action and the keyword arguments of :meth:`AnnotationSession.label`, or None for a key that does
        nothing here (a letter past the pair's options, a Chat key on a Foundation pair, ...).
    """
    key = key.lower()
    if key == "u":
        return "undo", {}
    if pair is None:
        return None
    if key == "n":
        return "skip", {}
    if pair.kind == "foundation":
        if key == "x":
            return "label", {"unclear": True}
        if len(key) == 1 and key in LETTERS.lower()[: len(pair.choices)]:
            return "label", {"choice": LETTERS.lower().index(key)}
        return None
    if key in CHAT_PREFERENCES:
        return "label", {"preference": CHAT_PREFERENCES[key]}
    return None


# ---------------------------------------------------------------------------------------------------- the widget

_CSS = """<style>
.airbench-annotate-card { border: 2px solid #ddd; border-radius: 6px; padding: 6px 10px; }
.airbench-annotate-card.ipyevents-watched { border-color: #1976d2; }
.airbench-annotate-answer { border-left: 4px solid #1976d2; background: #f5f8fc; padding: 4px 8px;
  white-space: pre-wrap; }
</style>"""
"""Styles of the tool (the card's outline turns blue while it receives keys)."""


_SCORES: list[tuple[str, int | None]] = [("no score", None), *((str(k), k) for k in range(1, 11))]
"""Options of the score dropdowns (none, then 1-10)."""


_FIGURE_LOCK = threading.Lock()
"""Held while the tool draws a figure: pyplot keeps global state, and callbacks may run on two threads."""


@contextlib.contextmanager
def _not_interactive() -> Iterator[None]:
    """Pyplot's interactive mode off while the tool draws its figure.

    In interactive mode (``%matplotlib inline``) a new figure is queued for display, and the inline backend shows
    and closes every queued figure when a message handled on another thread (a JupyterLab subshell) ends: a figure
    being drawn here would then come out blank. The tool displays its figures itself, so nothing is lost.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        yield
        return
    with plt.ioff():
        yield


def _esc(text: Any) -> str:
    return html.escape(str(text))


def pair_html(pair: AnnotationPair, position: int, total: int) -> str:
    """The pair as the annotator sees it: question, options or the two answers, and judges when allowed."""
    parts = [
        f"<h4 style='margin:4px 0'>pair {position} of {total} · {_esc(pair.task)} ({_esc(pair.category)})</h4>",
        f"<p><b>Question.</b> {_esc(pair.question)}</p>",
    ]
    if pair.kind == "foundation":
        options = "".join(f"<li><b>{LETTERS[i]}.</b> {_esc(c)}</li>" for i, c in enumerate(pair.choices))
        parts.append(f"<p style='margin-bottom:0'><b>Options.</b></p><ul style='margin-top:0'>{options}</ul>")
        parts.append("<p style='margin-bottom:2px'><b>The model's answer.</b> Which option does it pick?</p>")
        parts.append(f"<div class='airbench-annotate-answer'>{_esc(pair.response or '')}</div>")
    else:
        parts.append("<p style='margin-bottom:2px'><b>Two answers.</b> Which one is better?</p>")
        cells = "".join(
            f"<td style='vertical-align:top;width:50%;padding:4px'><b>Answer {k}</b>"
            f"<div class='airbench-annotate-answer'>{_esc(text)}</div></td>"
            for k, text in enumerate(pair.answers, start=1)
        )
        parts.append(f"<table style='width:100%'><tr>{cells}</tr></table>")
    if pair.show_judge and pair.judge_verdicts:
        parts.append(f"<p><b>Judges.</b> {_esc(judge_text(pair))}</p>")
    return "".join(parts)


def judge_text(pair: AnnotationPair) -> str:
    """The judges' verdicts in the annotator's terms (Chat scores as Answer 1 / Answer 2)."""
    texts = []
    for judge, verdict in sorted(pair.judge_verdicts.items()):
        if pair.kind == "foundation":
            texts.append(f"{judge}: {verdict.get('choice') or 'no option'}")
            continue
        for order, scores in sorted(verdict.items()):
            model, reference = scores.get("model"), scores.get("reference")
            first, second = (model, reference) if pair.model_answer == 1 else (reference, model)
            texts.append(f"{judge} ({order.replace('_', ' ')}): Answer 1 {first}, Answer 2 {second}")
    return "; ".join(texts)


def _label_text(pair: AnnotationPair, label: Label) -> str:
    if pair.kind == "foundation":
        return "none / unclear" if label.unclear else LETTERS[label.choice or 0]
    return {"1": "Answer 1", "2": "Answer 2", "tie": "tie"}[label.preference or "tie"]


class AnnotationTool:
    """The widgets over an :class:`AnnotationSession`: player, pair, label buttons, scores, comment, progress.

    The widgets hold no state of their own: every button and key calls the session, then :meth:`refresh` redraws
    from it. :meth:`press` is what a key does, so tests can drive the tool without a browser.
    """

    def __init__(
        self,
        pairs: Sequence[AnnotationPair],
        *,
        sample: str | Path | None = None,
        annotator: str = "",
        labels_path: str | Path | None = None,
        root: str | Path | None = None,
        show_audio: bool = True,
    ) -> None:
        """Build the widgets; open the session now when ``annotator`` is given, else after it is typed.

        Args:
            pairs: The sample.
            sample: Path of the sample (names the default label file).
            annotator: The annotator's id (empty: asked for in the tool).
            labels_path: The label file (default: :func:`label_file` of ``sample`` and the annotator).
            root: Data root of the audio instead of the sample's (the run folder moved).
            show_audio: Show the player and spectrogram (off in fast tests).

        Raises:
            ValueError: When neither ``sample`` nor ``labels_path`` names where labels go.
        """
        import ipywidgets as widgets

        if sample is None and labels_path is None:
            raise ValueError("give the sample's path or a labels_path: labels need a file")
        self.pairs = list(pairs)
        self.sample = Path(sample) if sample else None
        self.labels_path = Path(labels_path) if labels_path else None
        self.root = root
        self.show_audio = show_audio
        self.session: AnnotationSession | None = None
        """The session (None until an annotator id is given)."""
        self.status = ""
        """The last message shown under the buttons."""
        self._events: Any = None
        # JupyterLab (ipykernel 7 subshells) may deliver a button click and a key press to two threads at once
        self._lock = threading.RLock()
        self._audio_for: str | None = None
        letters = "ABCD"
        button = widgets.Button
        self.controls: dict[str, Any] = {
            "annotator": widgets.Text(
                value=annotator, description="annotator", placeholder="your id, e.g. alice", continuous_update=False
            ),
            "start": button(description="start labelling", button_style="primary"),
            "file": widgets.HTML(),
            "progress": widgets.IntProgress(min=0, max=len(self.pairs), value=0, description="labelled"),
            "count": widgets.Label(),
            "pair": widgets.HTML(),
            "audio": widgets.Output(layout={"width": "100%"}),  # full width, or a wide figure is cut
            "options": [
                button(description=letters[i], tooltip=f"the answer picks {letters[i]} (key {letters[i]})")
                for i in range(4)
            ],
            "unclear": button(description="none / unclear", tooltip="the answer picks no option clearly (key X)"),
            "better_1": button(description="Answer 1 better", tooltip="key 1"),
            "better_2": button(description="Answer 2 better", tooltip="key 2"),
            "tie": button(description="tie", tooltip="key T"),
            "score_1": widgets.Dropdown(options=_SCORES, index=0, description="score 1"),
            "score_2": widgets.Dropdown(options=_SCORES, index=0, description="score 2"),
            "skip": button(description="next (skip)", tooltip="pass this pair over for now (key N)", icon="forward"),
            "undo": button(description="undo", tooltip="retract the latest label (key U)", icon="undo"),
            "comment": widgets.Text(
                description="comment",
                placeholder="optional; saved with the next label or skip",
                layout={"width": "95%"},
            ),
            "message": widgets.HTML(),
            "help": widgets.HTML(
                "<small>Keys while the pointer is over the framed card (the frame turns blue): "
                "<b>A</b>-<b>D</b> option, <b>X</b> none / unclear, <b>1</b> / <b>2</b> / <b>T</b> better answer, "
                "<b>N</b> next (skip), <b>U</b> undo. Every label is saved at once.</small>"
            ),
        }
        c = self.controls
        for index, option in enumerate(c["options"]):
            option.on_click(lambda _b, i=index: self.act("label", {"choice": i}))
        c["unclear"].on_click(lambda _b: self.act("label", {"unclear": True}))
        c["better_1"].on_click(lambda _b: self.act("label", {"preference": "1"}))
        c["better_2"].on_click(lambda _b: self.act("label", {"preference": "2"}))
        c["tie"].on_click(lambda _b: self.act("label", {"preference": "tie"}))
        c["skip"].on_click(lambda _b: self.act("skip", {}))
        c["undo"].on_click(lambda _b: self.act("undo", {}))
        c["start"].on_click(lambda _b: self.start(c["annotator"].value))
        c["annotator"].observe(lambda change: self.start(change["new"]), names="value")  # Enter, or leaving the box
        for name in ("options", "unclear", "better_1", "better_2", "tie"):
            for b in c[name] if isinstance(c[name], list) else [c[name]]:
                b.layout.width = "auto"
        self.foundation_row = widgets.HBox([*c["options"], c["unclear"]])
        self.chat_row = widgets.VBox(
            [widgets.HBox([c["better_1"], c["better_2"], c["tie"]]), widgets.HBox([c["score_1"], c["score_2"]])]
        )
        self.card = widgets.VBox(
            [
                widgets.HBox([c["progress"], c["count"]]),
                c["pair"],
                self.foundation_row,
                self.chat_row,
                widgets.HBox([c["skip"], c["undo"]]),
                c["message"],
                c["audio"],
            ]
        )
        self.card.add_class("airbench-annotate-card")
        self.start_row = widgets.HBox([c["annotator"], c["start"]])
        self.widget = widgets.VBox([widgets.HTML(_CSS), self.start_row, c["file"], self.card, c["comment"], c["help"]])
        """The tool's root widget (display it)."""
        self.widget.add_class("airbench-annotate")
        self._watch_keys()
        if annotator.strip():
            self.start(annotator)
        else:
            self.card.layout.display = "none"
            self._say("Type your annotator id and press Enter (or <b>start labelling</b>).")

    def _watch_keys(self) -> None:
        try:
            from ipyevents import Event
        except ImportError:  # pragma: no cover - ipyevents is a dependency
            logger.warning("ipyevents is not installed: keyboard shortcuts are off, the buttons work")
            return
        self._events = Event(source=self.card, watched_events=["keydown"], prevent_default_action=True)
        self._events.on_dom_event(self._on_key)

    def _on_key(self, event: dict[str, Any]) -> None:
        if event.get("repeat") or any(event.get(m) for m in ("ctrlKey", "altKey", "metaKey")):
            return
        self.press(str(event.get("key", "")))

    def _say(self, message: str) -> None:
        self.status = re.sub(r"<[^>]+>", "", message)
        self.controls["message"].value = f"<span class='airbench-annotate-status'>{message}</span>"

    def start(self, annotator: str) -> AnnotationSession | None:
        """Open the annotator's session (label file) and show the first unlabelled pair.

        Returns:
            The session, or None when the id is not usable or the file does not fit (the reason is shown).
        """
        with self._lock:
            return self._start(annotator)

    def _start(self, annotator: str) -> AnnotationSession | None:
        c = self.controls
        if self.session is not None:
            return self.session
        try:
            annotator = check_annotator(annotator)
            path = self.labels_path or label_file(self.sample, annotator)  # type: ignore[arg-type]
            self.session = AnnotationSession(self.pairs, path, annotator)
        except (ValueError, LabelFileError) as exc:
            self._say(f"<span style='color:#b00'>{_esc(exc)}</span>")
            self.card.layout.display = ""
            c["pair"].value = ""
            return None
        c["annotator"].value = annotator
        c["annotator"].disabled = True
        self.start_row.layout.display = "none"  # the id is named in the line below
        c["file"].value = f"<small>labels of <b>{_esc(annotator)}</b> go to <code>{_esc(path)}</code></small>"
        self.card.layout.display = ""
        labelled, total = self.session.progress
        self._say(f"resumed: {labelled} of {total} labelled" if labelled else f"{total} pairs to label")
        self.refresh()
        return self.session

    def press(self, key: str) -> str | None:
        """Do what ``key`` does on the pair shown (see :data:`KEYS`).

        Returns:
            The action taken (``label``, ``skip``, ``undo``) or None when the key does nothing here.
        """
        if self.session is None:
            return None
        found = key_action(self.session.current, key)
        if found is None:
            return None
        self.act(*found)
        return found[0]

    def act(self, action: str, kwargs: dict[str, Any]) -> Label | None:
        """Take an action on the session with the comment and scores typed, then redraw.

        Returns:
            The action written (None when nothing was written).
        """
        with self._lock:  # one action at a time, whichever thread the front end's message arrives on
            return self._act(action, kwargs)

    def _act(self, action: str, kwargs: dict[str, Any]) -> Label | None:
        session = self.session
        if session is None:
            return None
        c = self.controls
        pair = session.current
        try:
            if action == "undo":
                written = session.undo()
                if written is None:
                    self._say("nothing to undo")
                else:
                    self._say(f"undid the label of pair {session.index_of[written.pair_id] + 1}")
            elif pair is None:
                self._say("every pair is labelled (U undoes the latest label)")
                written = None
            elif action == "skip":
                written = session.skip(comment=c["comment"].value)
                self._say(f"skipped pair {session.index_of[pair.pair_id] + 1}; it comes back after the others")
            else:
                if pair.kind == "chat":
                    kwargs = {**kwargs, "score_1": c["score_1"].value, "score_2": c["score_2"].value}
                written = session.label(comment=c["comment"].value, **kwargs)
                self._say(f"pair {session.index_of[pair.pair_id] + 1} labelled {_label_text(pair, written)}")
        except (ValueError, RuntimeError, LabelFileError) as exc:
            self._say(f"<span style='color:#b00'>{_esc(exc)}</span>")
            return None
        if written is not None and written.action != "undo":
            c["comment"].value = ""
            c["score_1"].index = c["score_2"].index = 0  # "no score" (a value of None would show a blank box)
        self.refresh()
        return written

    def refresh(self) -> None:
        """Redraw progress, the pair, the buttons that apply, and the player, from the session."""
        session = self.session
        if session is None:
            return
        c = self.controls
        labelled, total = session.progress
        c["progress"].max, c["progress"].value = total, labelled
        pair = session.current
        c["count"].value = f"{labelled} / {total} labelled" + (" · done" if pair is None else "")
        if pair is None:
            c["pair"].value = (
                f"<h4 class='airbench-annotate-done'>done: all {total} pairs are labelled ✓</h4>"
                f"<p>Labels are in <code>{_esc(session.path)}</code>. Press <b>U</b> (or undo) to change the latest "
                "one.</p>"
            )
            self.foundation_row.layout.display = self.chat_row.layout.display = "none"
            c["skip"].disabled = True
            self._show_audio(None)
            return
        position = (session.index or 0) + 1
        c["pair"].value = pair_html(pair, position, total)
        c["skip"].disabled = False
        is_foundation = pair.kind == "foundation"
        self.foundation_row.layout.display = "" if is_foundation else "none"
        self.chat_row.layout.display = "none" if is_foundation else ""
        for index, option in enumerate(c["options"]):
            option.layout.display = "" if index < len(pair.choices) else "none"
            if index < len(pair.choices):
                option.tooltip = f"the answer picks {LETTERS[index]}: {pair.choices[index]} (key {LETTERS[index]})"
        self._show_audio(pair)

    def _show_audio(self, pair: AnnotationPair | None) -> None:
        out = self.controls["audio"]
        key = None if pair is None else pair.pair_id
        if key == self._audio_for:
            return
        self._audio_for = key
        if not self.show_audio:
            return
        out.clear_output()
        if pair is None:
            return
        from airbench_nb.audio import AudioError
        from airbench_nb.listen import listen
        from airbench_nb.manifests import resolve_audio

        with _FIGURE_LOCK, _not_interactive(), out:
            try:
                path = resolve_audio(self.root if self.root is not None else pair.data_root, pair.audio)
                listen(path, title=f"audio of pair {(self.session.index or 0) + 1}", interactive=False)  # type: ignore[union-attr]
            except (AudioError, ValueError, OSError) as exc:
                print(f"audio unavailable: {exc}")


def annotate(
    sample: str | Path,
    *,
    annotator: str = "",
    labels_path: str | Path | None = None,
    root: str | Path | None = None,
    show_audio: bool = True,
    show: bool = True,
) -> AnnotationTool:
    """Open the annotation tool over a sample (in JupyterLab).

    Args:
        sample: The sample file (``airbench-nb sample-annotation``).
        annotator: Your annotator id (empty: the tool asks for it).
        labels_path: Your label file (default ``<sample stem>.<annotator>.labels.jsonl`` beside the sample).
        root: Data root of the audio instead of the sample's (the run folder moved).
        show_audio: Show the player and spectrogram of each pair.
        show: Display the tool.

    Returns:
        The :class:`AnnotationTool` (its ``session`` holds the state).
    """
    tool = AnnotationTool(
        read_sample(sample),
        sample=sample,
        annotator=annotator,
        labels_path=labels_path,
        root=root,
        show_audio=show_audio,
    )
    if show:
        from IPython.display import display

        display(tool.widget)
    return tool


def label_files_beside(sample: str | Path) -> list[Path]:
    """The label files with the default names found beside a sample, sorted."""
    sample = Path(sample)
    return sorted(sample.parent.glob(f"{sample.stem}.*.labels.jsonl"))


def how_to_start(sample: str | Path | None, run_dir: str | Path | None = None) -> str:
    """Markdown that says how to label a sample and then compute agreement (shown when no labels are given)."""
    lines = ["**No label files given**, so there is no agreement to compute yet. To label:", ""]
    run = str(run_dir) if run_dir else "RUN_DIR"
    shown = str(sample) if sample is not None else "sample.jsonl"
    first, second = (str(label_file(shown, who)) for who in ("alice", "bob"))
    if sample is None:
        lines += [
            "1. draw a sample from a run folder:",
            f"   `airbench-nb sample-annotation {run} --n 40 --kind foundation --out {shown}`;",
        ]
    else:
        lines.append(f"1. the sample is `{sample}`;")
    lines += [
        "2. open this notebook in JupyterLab (`make lab`), set `sample` and `annotator` (your id) in the parameters "
        "cell and run it: the annotation tool appears in section 2; a second annotator does the same with their own "
        "id (each gets their own label file, and can close the browser at any time: labelling resumes where it "
        "stopped);",
        "3. compare the labels with the judges: run this notebook headless with `run_dir`, `sample` and `labels` (the "
        f"label files), e.g. `papermill notebooks/06_annotate.ipynb 06.ipynb -p run_dir {run} -p sample {shown} "
        f"-y 'labels: [{first}, {second}]'`, or from a shell "
        f"`airbench-nb agreement {run} --sample {shown} --labels {first} {second}`.",
    ]
    if sample is not None:
        found = label_files_beside(sample)
        if found:
            names = ", ".join(f"`{p}`" for p in found)
            lines += ["", f"Label files found beside the sample: {names}."]
    return "\n".join(lines)


def labels_summary(session_or_path: AnnotationSession | str | Path, pairs: Sequence[AnnotationPair]) -> dict[str, Any]:
    """Counts of one label file against its sample: actions, labelled, skipped and unlabelled pairs.

    Args:
        session_or_path: A session, or a label file path.
        pairs: The sample.

    Returns:
        ``{"file", "annotator", "actions", "labelled", "unlabelled", "skipped", "by_label"}``.
    """
    if isinstance(session_or_path, AnnotationSession):
        actions = session_or_path.actions
        path = session_or_path.path
    else:
        path = Path(session_or_path)
        actions = read_label_file(path)
    stacks: dict[str, list[Label]] = {}
    skipped: set[str] = set()
    for action in actions:
        stack = stacks.setdefault(action.pair_id, [])
        if action.action == "label":
            stack.append(action)
            skipped.discard(action.pair_id)
        elif action.action == "undo" and stack:
            stack.pop()
        elif action.action == "skip":
            skipped.add(action.pair_id)
    by_id = {p.pair_id: p for p in pairs}
    final = {pid: stack[-1] for pid, stack in stacks.items() if stack and pid in by_id}
    by_label: dict[str, int] = {}
    for pid, label in final.items():
        text = _label_text(by_id[pid], label)
        by_label[text] = by_label.get(text, 0) + 1
    return {
        "file": str(path),
        "annotator": sorted({a.annotator for a in actions}),
        "actions": len(actions),
        "labelled": len(final),
        "unlabelled": len(pairs) - len(final),
        "skipped": len(skipped - set(final)),
        "by_label": dict(sorted(by_label.items())),
    }


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
