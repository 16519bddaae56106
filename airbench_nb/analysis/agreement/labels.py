"""Reading the sample and label files: checks, shown-order translation, latest-not-undone labels.

The label rules are in the :mod:`airbench_nb.analysis.agreement` docstring.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from airbench_nb.analysis.agreement.constants import (
    LABEL_COLUMNS,
    MODEL,
    REFERENCE,
    TIE,
    UNCLEAR,
)
from airbench_nb.manifests import ManifestError, read_records
from airbench_nb.records import LETTERS, AnnotationPair, Label

logger = logging.getLogger(__name__)

ANNOTATOR_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""What an annotator id may be (the annotation tool's rule: it names the label file): no HTML, no control character."""


def label_problem(label: Label) -> tuple[str, str] | None:
    """What makes ``label`` a line the annotation tool never writes, as ``(field, why)``; None when it is fine.

    The tool writes annotator ids that name a file (:data:`ANNOTATOR_ID`), scores from 1 to 10 and seconds that are
    finite and 0 or more.
    """
    if not ANNOTATOR_ID.fullmatch(label.annotator):
        return "annotator", f"annotator id {label.annotator!r} is not one the tool writes (letters, digits, . _ -)"
    for name in ("score_1", "score_2"):
        score = getattr(label, name)
        if score is not None and not (math.isfinite(score) and 1 <= score <= 10):
            return name, f"{name} must be from 1 to 10, got {score}"
    if label.seconds is not None and not (math.isfinite(label.seconds) and label.seconds >= 0):
        return "seconds", f"seconds must be finite and 0 or more, got {label.seconds}"
    return None


def read_label_file(path: Path) -> list[Label]:
    """The labels of one file; a final line cut short by a crash is dropped with a warning, as the tool does.

    Raises:
        ManifestError: On a complete line that is not a valid label (file, line and field named).
    """
    try:
        return read_records(path, Label)
    except ManifestError as exc:
        raw = path.read_bytes()
        cut = raw and not raw.endswith(b"\n")
        if not cut or exc.line != _line_numbers(path)[-1]:
            raise
    logger.warning("%s: dropping a final line cut short (never acknowledged by the annotation tool)", path)
    return read_records(path, Label, strict=False)


def _line_numbers(path: Path) -> list[int]:
    r"""1-based numbers of the non-blank lines of a JSON Lines file (split on ``\n`` only, as the reader does)."""
    return [n for n, line in enumerate(path.read_bytes().split(b"\n"), start=1) if line.strip()]


def read_sample(path: str | Path) -> list[AnnotationPair]:
    """Read an annotation sample, refusing duplicate pair ids and Chat pairs without ``model_answer``.

    Args:
        path: The sample JSONL (``airbench-nb sample-annotation``).

    Returns:
        The pairs in file order.

    Raises:
        ManifestError: On a bad line (file, line and field named).
        FileNotFoundError: If the file does not exist.
    """
    path = Path(path)
    pairs = read_records(path, AnnotationPair)
    seen: dict[str, int] = {}
    for line, pair in zip(_line_numbers(path), pairs, strict=True):
        if pair.pair_id in seen:
            raise ManifestError(
                str(path), line, f"duplicate pair_id (first on line {seen[pair.pair_id]})", field="pair_id"
            )
        seen[pair.pair_id] = line
        if pair.kind == "chat" and pair.model_answer not in (1, 2):
            raise ManifestError(
                str(path), line, "a Chat pair needs model_answer 1 or 2", uid=pair.pair_id, field="model_answer"
            )
    return pairs


def read_labels(paths: Iterable[str | Path]) -> tuple[list[Label], list[tuple[str, int]]]:
    """Read label files in the order given, accepting only files the annotation tool would write.

    A final line cut short by a crash is dropped with a warning, as the tool does when it reopens the file (the
    file itself is left as it is). Refused, naming the file (and line and field): a file given twice, an empty file,
    a file holding more than one annotator's lines, a line the tool never writes (:func:`label_problem`: an
    annotator id with HTML or control characters, a NaN, infinite or out-of-range score, negative seconds), and a
    file whose actions are those of another file under another annotator's name (a copy: it would count as a
    second annotator in perfect agreement).

    Args:
        paths: Label JSONL files, one per annotator.

    Returns:
        ``(labels, sources)``: the actions in replay order and, for each, its ``(file, line)``.

    Raises:
        ManifestError: On a bad file or line (file, line and field named).
        FileNotFoundError: If a file does not exist.
    """
    labels: list[Label] = []
    sources: list[tuple[str, int]] = []
    given: dict[Path, Path] = {}
    copies: dict[tuple[str, ...], tuple[Path, str]] = {}
    for path in map(Path, paths):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such label file")
        if path.resolve() in given:
            raise ManifestError(str(path), None, f"label file given twice (also as {given[path.resolve()]})")
        given[path.resolve()] = path
        records = read_label_file(path)  # drops a final line cut by a crash, with a warning
        if not records:
            raise ManifestError(str(path), None, "holds no label: nothing to compare (is it the right file?)")
        lines = _line_numbers(path)[: len(records)]
        for line, label in zip(lines, records, strict=True):
            problem = label_problem(label)
            if problem is not None:
                raise ManifestError(str(path), line, problem[1], uid=label.pair_id, field=problem[0])
            if label.annotator != records[0].annotator:
                raise ManifestError(
                    str(path),
                    line,
                    f"a line of annotator {label.annotator!r} in the file of {records[0].annotator!r}: the tool "
                    "writes one annotator per file",
                    uid=label.pair_id,
                    field="annotator",
                )
        actions = tuple(label.model_dump_json(exclude={"annotator"}) for label in records)
        if actions in copies and copies[actions][1] != records[0].annotator:
            first, who = copies[actions]
            raise ManifestError(
                str(path),
                None,
                f"the same actions, times included, as {first} (annotator {who!r}) under annotator "
                f"{records[0].annotator!r}: a copy, not a second annotator",
                field="annotator",
            )
        copies.setdefault(actions, (path, records[0].annotator))
        labels.extend(records)
        sources.extend((str(path), line) for line in lines)
    return labels, sources


def _check(label: Label, pair: AnnotationPair, file: str, line: int) -> None:
    """Refuse a label that does not fit its pair's kind (ManifestError naming file, line and field)."""

    def bad(message: str, field: str) -> ManifestError:
        return ManifestError(file, line, message, uid=label.pair_id, field=field)

    if pair.kind == "foundation":
        if label.preference is not None:
            raise bad("a Foundation pair takes choice or unclear, not a preference", "preference")
        if label.unclear and label.choice is not None:
            raise bad("give choice or unclear, not both", "choice")
        if not label.unclear and label.choice is None:
            raise bad("a Foundation label needs choice (an option index) or unclear", "choice")
        if label.choice is not None and not 0 <= label.choice < len(pair.choices):
            raise bad(f"choice {label.choice} is not an index into the pair's {len(pair.choices)} options", "choice")
    else:
        if label.choice is not None or label.unclear:
            raise bad("a Chat pair takes a preference, not choice or unclear", "choice")
        if label.preference is None:
            raise bad('a Chat label needs preference "1", "2" or "tie"', "preference")


def chat_label(preference: str, model_answer: int) -> str:
    """Translate a Chat preference in SHOWN order into ``model`` / ``reference`` / ``tie``.

    Args:
        preference: ``"1"``, ``"2"`` or ``"tie"`` (which shown answer is better).
        model_answer: Which shown answer (1 or 2) is the model's.

    Returns:
        ``tie``, ``model`` when the preferred shown answer is the model's, else ``reference``.
    """
    if preference == TIE:
        return TIE
    return MODEL if int(preference) == model_answer else REFERENCE


def _canonical(label: Label, pair: AnnotationPair) -> tuple[str, Any]:
    if pair.kind == "foundation":
        return (UNCLEAR, None) if label.unclear else (LETTERS[label.choice], label.choice)  # type: ignore[index]
    return chat_label(str(label.preference), int(pair.model_answer or 0)), label.preference


def resolve_labels(
    labels: Sequence[Label], pairs: Sequence[AnnotationPair], sources: Sequence[tuple[str, int]] | None = None
) -> pd.DataFrame:
    """Each annotator's label of each pair: the latest ``label`` action not undone, in model/reference terms.

    Args:
        labels: Actions in replay order (see the module docstring).
        pairs: The sample the labels refer to.
        sources: ``(file, line)`` of each action, for error messages (default ``("<labels>", index + 1)``).

    Returns:
        One row per (pair, annotator) with a label, :data:`LABEL_COLUMNS`, sorted by pair and annotator.
        ``attrs["counts"]``: ``actions``, ``labels``, ``skips``, ``undos``, ``undo_without_label`` and ``resolved``.

    Raises:
        ManifestError: On a label whose pair is not in the sample or that does not fit its pair's kind (an option
            index out of range, a Chat label without a preference, ...), naming file, line and field.
    """
    by_id = {p.pair_id: p for p in pairs}
    stacks: dict[tuple[str, str], list[Label]] = {}
    counts = Counter(actions=0, labels=0, skips=0, undos=0, undo_without_label=0)
    for index, label in enumerate(labels):
        file, line = sources[index] if sources is not None else ("<labels>", index + 1)
        counts["actions"] += 1
        pair = by_id.get(label.pair_id)
        if pair is None:
            raise ManifestError(file, line, "pair_id is not in the sample", uid=label.pair_id, field="pair_id")
        stack = stacks.setdefault((label.pair_id, label.annotator), [])
        if label.action == "label":
            _check(label, pair, file, line)
            counts["labels"] += 1
            stack.append(label)
        elif label.action == "undo":
            counts["undos"] += 1
            if stack:
                stack.pop()
            else:
                counts["undo_without_label"] += 1
        else:
            counts["skips"] += 1
    rows = []
    for (pair_id, annotator), stack in sorted(stacks.items()):
        if not stack:
            continue
        pair = by_id[pair_id]
        value, shown = _canonical(stack[-1], pair)
        rows.append(
            {
                "pair_id": pair_id,
                "annotator": annotator,
                "kind": pair.kind,
                "uid": pair.uid,
                "model": pair.model,
                "task": pair.task,
                "category": pair.category,
                "label": value,
                "shown": shown,
            }
        )
    out = pd.DataFrame(rows, columns=list(LABEL_COLUMNS))
    out.attrs["counts"] = {**dict(counts), "resolved": len(out)}
    return out
