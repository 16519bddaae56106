"""Label files and :class:`AnnotationSession`, the state machine over one: replay, resume, undo and repair."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypeVar

from airbench_nb.analysis.agreement.labels import ANNOTATOR_ID
from airbench_nb.annotate.sample import _read_lines
from airbench_nb.records import LETTERS, AnnotationPair, Label
from airbench_nb.run_folder import LABELS_SUFFIX

logger = logging.getLogger(__name__)

U = TypeVar("U")
"""What a session steps through (an annotation pair, a playlist entry)."""
A = TypeVar("A")
"""An action record of a session's file (a label, a rating)."""

ANNOTATOR = ANNOTATOR_ID
"""What an annotator id may be: it names the label file (the agreement analysis accepts the same ids)."""


class LabelFileError(ValueError):
    """A label file that does not belong to this sample or annotator (the message names file, line and field)."""


def label_file(sample: str | Path, annotator: str) -> Path:
    """The default label file of ``annotator`` for ``sample``: ``<sample stem>.<annotator>.labels.jsonl`` beside it."""
    sample = Path(sample)
    return sample.with_name(f"{sample.stem}.{check_annotator(annotator)}{LABELS_SUFFIX}")


def check_annotator(annotator: str, role: str = "annotator") -> str:
    """Validate an annotator (or listener) id (it names a file): 1-64 letters, digits, ``.``, ``_`` or ``-``.

    Args:
        annotator: The id typed.
        role: What the id names in the message (``annotator``, ``listener``).

    Raises:
        ValueError: Saying what an id may hold.
    """
    annotator = annotator.strip()
    if not ANNOTATOR.fullmatch(annotator):
        raise ValueError(
            f"{role} id {annotator!r} is not usable: give 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (it names your file)"
        )
    return annotator


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
    return read_action_file(path, Label, repair=repair)


def read_action_file(path: str | Path, record: type[A], *, repair: bool = False) -> list[A]:
    """Read an append-only file of ``record`` actions (labels, ratings), dropping a final line cut short by a crash.

    Args:
        path: The file (absent: no actions).
        record: The record type of a line.
        repair: Also rewrite the file without that cut line, so that appending can go on.

    Returns:
        The actions in file order.

    Raises:
        airbench_nb.manifests.ManifestError: On a complete line that is not a valid record (file and line named).
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
    return _read_lines(path, raw, record)


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


class ReplaySession(Generic[U, A]):
    """One person working through a list (pairs to label, clips to rate) into their own append-only action file.

    The state is always what replaying the file gives (see the package docstring): a decision (action ``label``)
    pushes onto its unit's stack, ``undo`` pops the latest one, ``skip`` only passes the unit over. Each action is
    appended durably before the state moves on. If the file grows outside this session (the same person in a second
    tab), the session replays it before its next action. Not thread-safe: the widgets take one action at a time.
    Subclasses name the record and its fields (:attr:`record`, :attr:`id_field`, :attr:`who_field`) and add the
    decision of their kind (:meth:`_decide`).
    """

    record: ClassVar[type[Any]]
    """The action record of a line."""
    id_field: ClassVar[str]
    """The field naming the unit, on the unit and on the action (``pair_id``, ``entry_id``)."""
    who_field: ClassVar[str]
    """The action's field naming the person (``annotator``, ``listener``)."""
    collection: ClassVar[str] = "list"
    """What the units are called in messages (``sample``, ``playlist``)."""
    unit_name: ClassVar[str] = "unit"
    """What one unit is called in messages (``pair``, ``clip``)."""

    def __init__(
        self,
        units: Sequence[U],
        path: str | Path,
        who: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Open (or create) the person's file and resume at the first unit without a decision.

        Args:
            units: The units, in display order.
            path: The person's action file (created on the first action).
            who: The person's id.
            clock: Seconds counter used to time each unit (a fake one in tests).

        Raises:
            ValueError: For a bad id, no units or duplicate unit ids.
            LabelFileError: When the file holds another person's actions or units not in the list.
        """
        if not units:
            raise ValueError(f"the {self.collection} holds no {self.unit_name}s")
        self.units = list(units)
        """The units, in display order."""
        self.index_of = {getattr(u, self.id_field): i for i, u in enumerate(self.units)}
        """Position of each unit id."""
        if len(self.index_of) != len(self.units):
            raise ValueError(f"the {self.collection} holds duplicate {self.id_field}s")
        self.path = Path(path)
        """The person's action file."""
        self.who = check_annotator(who, self.who_field)
        """The person's id."""
        self.clock = clock
        self.index: int | None = None
        """Position of the unit shown (None when every unit has a decision)."""
        self.actions: list[A] = []
        """Every action of the file, in order."""
        self._stacks: dict[str, list[A]] = {}
        self._history: list[str] = []
        self._skipped: set[str] = set()
        self._size = -1
        self._shown_at = clock()
        self.reload()

    # -- state ---------------------------------------------------------------------------------------------------

    def _id(self, unit_or_action: Any) -> str:
        return str(getattr(unit_or_action, self.id_field))

    def reload(self) -> None:
        """Replay the file (repairing a final line cut short) and go to the first unit without a decision.

        Raises:
            LabelFileError: When the file holds another person's actions or units not in the list.
        """
        actions = read_action_file(self.path, self.record, repair=True)
        self.actions, self._stacks, self._history, self._skipped = [], {}, [], set()
        for line, action in enumerate(actions, start=1):
            who = getattr(action, self.who_field)
            if who != self.who:
                raise LabelFileError(
                    f"{self.path}, line {line}, field {self.who_field}: labels of {who!r}, not "
                    f"{self.who!r}; each {self.who_field} labels into their own file"
                )
            if self._id(action) not in self.index_of:
                raise LabelFileError(
                    f"{self.path}, line {line}, field {self.id_field}: {self._id(action)!r} is not in the "
                    f"{self.collection}; is this the file of another {self.collection}?"
                )
            self._replay(action)
        self._size = self.path.stat().st_size if self.path.exists() else 0
        self._go(self.next_unlabelled(None))

    def _replay(self, action: A) -> None:
        self.actions.append(action)
        key = self._id(action)
        stack = self._stacks.setdefault(key, [])
        kind = action.action  # type: ignore[attr-defined]
        if kind == "label":
            stack.append(action)
            self._history.append(key)
            self._skipped.discard(key)
        elif kind == "undo":
            if stack:
                stack.pop()
                for position in range(len(self._history) - 1, -1, -1):
                    if self._history[position] == key:
                        del self._history[position]
                        break
            else:
                logger.warning("%s: an undo of %s with no label to retract (ignored)", self.path, key)
        else:
            self._skipped.add(key)

    def _go(self, index: int | None) -> None:
        self.index = index
        self._shown_at = self.clock()

    @property
    def current(self) -> U | None:
        """The unit shown (None when done)."""
        return None if self.index is None else self.units[self.index]

    @property
    def done(self) -> bool:
        """Whether every unit has a decision."""
        return self.index is None

    @property
    def labels(self) -> dict[str, A]:
        """The person's decision on each decided unit (the latest not undone), by unit id."""
        return {key: stack[-1] for key, stack in self._stacks.items() if stack}

    def label_of(self, unit_id: str) -> A | None:
        """The person's decision on a unit, or None."""
        stack = self._stacks.get(unit_id)
        return stack[-1] if stack else None

    @property
    def progress(self) -> tuple[int, int]:
        """``(units decided, units in the list)``."""
        return sum(1 for stack in self._stacks.values() if stack), len(self.units)

    @property
    def skipped(self) -> set[str]:
        """Unit ids skipped and not decided since."""
        return set(self._skipped)

    def next_unlabelled(self, after: int | None) -> int | None:
        """The next unit without a decision after position ``after`` (None: from the start), wrapping around.

        Units never skipped come first; skipped ones after them. None when every unit has a decision.
        """
        n = len(self.units)
        start = 0 if after is None else after + 1
        order = [(start + k) % n for k in range(n)]
        open_ = [i for i in order if not self._stacks.get(self._id(self.units[i]))]
        fresh = [i for i in open_ if self._id(self.units[i]) not in self._skipped]
        return (fresh or open_ or [None])[0]

    # -- actions -------------------------------------------------------------------------------------------------

    def _sync(self) -> None:
        """Replay the file if it changed outside this session, keeping the unit shown when it is still open."""
        size = self.path.stat().st_size if self.path.exists() else 0
        if size != self._size:
            logger.warning("%s changed outside this session: replaying it", self.path)
            shown = self.current
            self.reload()
            if shown is not None and self.label_of(self._id(shown)) is None:
                self._go(self.index_of[self._id(shown)])

    def _write(self, action: A) -> A:
        from airbench_nb.manifests import dumps_record

        _append_durably(self.path, dumps_record(action))  # type: ignore[arg-type]
        self._size = self.path.stat().st_size
        self._replay(action)
        return action

    def _elapsed(self) -> float:
        return round(max(0.0, self.clock() - self._shown_at), 3)

    def _new(self, action: str, unit_id: str, **fields: Any) -> A:
        return self.record(**{self.id_field: unit_id, self.who_field: self.who, "action": action, **fields})

    def _current_or_refuse(self, doing: str) -> U:
        self._sync()
        unit = self.current
        if unit is None:
            raise RuntimeError(f"every {self.unit_name} is labelled: nothing to {doing} (undo to change a label)")
        return unit

    def _decide(self, unit: U, **fields: Any) -> A:
        """Write a decision on ``unit`` (shown) with the fields of the kind, and go to the next open unit."""
        action = self._write(self._new("label", self._id(unit), seconds=self._elapsed(), **fields))
        self._go(self.next_unlabelled(self.index))
        return action

    def skip(self, comment: str = "") -> A:
        """Pass the unit shown over for now (written as a skip) and go to the next open unit.

        Raises:
            RuntimeError: When every unit has a decision.
        """
        unit = self._current_or_refuse("skip")
        action = self._write(self._new("skip", self._id(unit), comment=comment.strip(), seconds=self._elapsed()))
        self._go(self.next_unlabelled(self.index))
        return action

    def undo(self) -> A | None:
        """Retract the latest decision not yet undone (written as an undo) and show its unit again.

        Returns:
            The undo written, or None when there is nothing to undo.
        """
        self._sync()
        if not self._history:
            return None
        unit_id = self._history[-1]
        action = self._write(self._new("undo", unit_id))
        self._go(self.index_of[unit_id])
        return action


class AnnotationSession(ReplaySession[AnnotationPair, Label]):
    """One annotator labelling one sample: the current pair, labels, skips, undo and resume, without widgets.

    The state is always what replaying the label file gives (see the module docstring); each action is appended
    durably before the state moves on. If the file grows outside this session (the same annotator in a second
    tab), the session replays it before its next action. A session is not thread-safe: :class:`AnnotationTool`
    takes one action at a time.
    """

    record = Label
    id_field = "pair_id"
    who_field = "annotator"
    collection = "sample"
    unit_name = "pair"

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
        super().__init__(pairs, labels_path, annotator, clock=clock)

    @property
    def pairs(self) -> list[AnnotationPair]:
        """The sample, in display order."""
        return self.units

    @property
    def annotator(self) -> str:
        """The annotator's id."""
        return self.who

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
        pair = self._current_or_refuse("label")
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
        return self._decide(
            pair,
            choice=choice,
            unclear=unclear,
            preference=preference,
            score_1=score_1,
            score_2=score_2,
            comment=comment.strip(),
        )


def _label_text(pair: AnnotationPair, label: Label) -> str:
    if pair.kind == "foundation":
        return "none / unclear" if label.unclear else LETTERS[label.choice or 0]
    return {"1": "Answer 1", "2": "Answer 2", "tie": "tie"}[label.preference or "tie"]


def label_files_beside(sample: str | Path) -> list[Path]:
    """The label files with the default names found beside a sample, sorted."""
    sample = Path(sample)
    return sorted(sample.parent.glob(f"{sample.stem}.*{LABELS_SUFFIX}"))


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
    from airbench_nb.analysis.mos import latest_decisions

    decided, skipped = latest_decisions(actions, "pair_id")
    by_id = {p.pair_id: p for p in pairs}
    final = {pid: label for pid, label in decided.items() if pid in by_id}
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
