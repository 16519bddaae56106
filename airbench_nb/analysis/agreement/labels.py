"""Reading the sample and label files: checks, shown-order translation, latest-not-undone labels.

The label rules are in the :mod:`airbench_nb.analysis.agreement` docstring.
"""

from __future__ import annotations

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
    """Read label files in the order given.

    Args:
        paths: Label JSONL files (one per annotator, usually).

    Returns:
        ``(labels, sources)``: the actions in replay order and, for each, its ``(file, line)``.

    Raises:
        ManifestError: On a bad line (file, line and field named).
        FileNotFoundError: If a file does not exist.
    """
    labels: list[Label] = []
    sources: list[tuple[str, int]] = []
    for path in map(Path, paths):
        records = read_records(path, Label)
        labels.extend(records)
        sources.extend((str(path), line) for line in _line_numbers(path))
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
