"""Label-mapping tables: a fixed-vocabulary tagger's labels turned into the task's classes (tier B).

An AudioSet tagger never sees the item's candidates: it scores its own labels ("Police car (siren)", "Drip", ...). A
mapping table, written by hand, says which of those labels stand for which task class, and whether the label is the
class itself (``exact``) or only close to it (``approximate``: "Siren" for a wailing siren). It is data, a CSV or JSON
file with one row per (source label, task class):

.. code-block:: text

    source_label,task_class,match
    Civil defense siren,wail siren,exact
    Siren,wail siren,approximate

(JSON: a list of objects with the same three keys.) A source label may map to several classes and a class may have
several source labels; a (source label, class) pair appears once. :meth:`LabelMapping.rank` turns a model's scores into
a ranking of an item's choices: a class's score is the best score among its source labels; labels with no row are
dropped (:attr:`LabelMapping.unmapped` counts them for a model's label set); classes of the table that are not among
the item's choices are ignored for that item; an item none of whose choices the table maps is an error for that item.
Classes match choices case-insensitively, ignoring surrounding spaces; the ranking spells them as the item does.
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from airbench_nb.models.ranking import ranked
from airbench_nb.records import RankedLabel

logger = logging.getLogger(__name__)

MATCHES: tuple[str, ...] = ("exact", "approximate")
"""How a source label stands for its class: the class itself, or only close to it."""

COLUMNS: tuple[str, ...] = ("source_label", "task_class", "match")
"""The columns of a mapping table, in this order in a CSV file's header."""


class MappingError(ValueError):
    """A mapping table that cannot be read or used (the message names the file, the row and the field)."""


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class MappingRow:
    """One row of a mapping table."""

    source_label: str
    """A label of the model (as in its ``id2label``)."""
    task_class: str
    """The task class it stands for (as the items' choices spell it)."""
    match: Literal["exact", "approximate"]
    """``exact``: the label is the class; ``approximate``: it is only close to it."""


@dataclass(frozen=True)
class LabelMapping:
    """A mapping table, read and checked (:func:`read_label_mapping`)."""

    rows: tuple[MappingRow, ...]
    """The rows in file order."""
    path: Path | None = None
    """The file it was read from (None when built in code)."""
    _sources: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.rows:
            raise MappingError(f"{self.name}: the mapping has no rows")
        sources: dict[str, list[str]] = {}
        seen: set[tuple[str, str]] = set()
        for row in self.rows:
            pair = (row.source_label, _key(row.task_class))
            if pair in seen:
                raise MappingError(f"{self.name}: {row.source_label!r} -> {row.task_class!r} appears twice")
            seen.add(pair)
            sources.setdefault(_key(row.task_class), []).append(row.source_label)
        self._sources.update({k: tuple(v) for k, v in sources.items()})

    @property
    def name(self) -> str:
        """The file's name, for messages (``<mapping>`` when built in code)."""
        return str(self.path) if self.path is not None else "<mapping>"

    @property
    def classes(self) -> list[str]:
        """The task classes, in the order of their first row."""
        out: dict[str, str] = {}
        for row in self.rows:
            out.setdefault(_key(row.task_class), row.task_class)
        return list(out.values())

    @property
    def source_labels(self) -> list[str]:
        """The source labels, in the order of their first row."""
        return list(dict.fromkeys(row.source_label for row in self.rows))

    def only(self, match: Literal["exact", "approximate"]) -> LabelMapping:
        """The table restricted to the rows of one kind of match (``exact``: a stricter tier B)."""
        rows = tuple(row for row in self.rows if row.match == match)
        if not rows:
            raise MappingError(f"{self.name}: no {match} rows")
        return LabelMapping(rows, self.path)

    def unknown_sources(self, model_labels: Iterable[str]) -> list[str]:
        """The table's source labels that the model does not have (a typo, or a table for another model)."""
        known = set(model_labels)
        return [label for label in self.source_labels if label not in known]

    def unmapped(self, model_labels: Iterable[str]) -> list[str]:
        """The model's labels that no row maps (their scores are dropped)."""
        mapped = set(self.source_labels)
        return [label for label in model_labels if label not in mapped]

    def sources_of(self, task_class: str) -> tuple[str, ...]:
        """The source labels of a task class (empty when the table does not map it)."""
        return self._sources.get(_key(task_class), ())

    def rank(self, scores: Mapping[str, float], choices: Sequence[str]) -> list[RankedLabel]:
        """The item's mapped choices ranked by the best score among each one's source labels.

        Args:
            scores: The model's score of each of its labels.
            choices: The item's candidate classes.

        Returns:
            The choices the table maps, best first (equal scores in choice order), spelled as the item spells them.

        Raises:
            MappingError: When none of the choices is a class of the table (the item cannot be answered).
        """
        labels: list[str] = []
        values: list[float] = []
        for choice in choices:
            sources = [s for s in self.sources_of(choice) if s in scores]
            if sources:
                labels.append(choice)
                values.append(max(float(scores[s]) for s in sources))
        if not labels:
            shown = ", ".join(repr(c) for c in list(choices)[:6]) + (", ..." if len(choices) > 6 else "")
            raise MappingError(
                f"none of the item's choices ({shown}) is a task class of the mapping {self.name} "
                f"({len(self.classes)} classes, e.g. {', '.join(repr(c) for c in self.classes[:3])})"
            )
        return ranked(labels, values)


def _rows_from_csv(path: Path, text: str) -> list[tuple[int, dict[str, str]]]:
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise MappingError(f"{path}: the header lacks {', '.join(missing)} (expected: {','.join(COLUMNS)})")
    reader.fieldnames = header
    return [(number, row) for number, row in enumerate(reader, start=2)]


def _rows_from_json(path: Path, text: str) -> list[tuple[int, dict[str, str]]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MappingError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, list) or not all(isinstance(row, dict) for row in data):
        raise MappingError(f"{path}: a JSON mapping is a list of objects with keys {', '.join(COLUMNS)}")
    return [(number, row) for number, row in enumerate(data, start=1)]


def read_label_mapping(path: str | Path) -> LabelMapping:
    """Read and check a mapping table (CSV with a header, or JSON: see the module docstring).

    Raises:
        MappingError: In one line naming the file (and the row and field): a missing file, a missing column, an
            empty field, a ``match`` other than ``exact`` or ``approximate``, a pair given twice, no rows.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise MappingError(f"label mapping {path}: no such file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise MappingError(f"label mapping {path}: cannot be read ({type(exc).__name__})") from None
    parsed = _rows_from_json(path, text) if path.suffix.lower() == ".json" else _rows_from_csv(path, text)
    where = "row" if path.suffix.lower() == ".json" else "line"
    rows: list[MappingRow] = []
    for number, raw in parsed:
        values = {c: raw.get(c) for c in COLUMNS}
        for column, value in values.items():
            if not isinstance(value, str) or not value.strip():
                raise MappingError(f"{path}: {where} {number}: {column} is empty or missing")
        match = values["match"].strip().lower()
        if match not in MATCHES:
            raise MappingError(
                f"{path}: {where} {number}: match {values['match']!r} is not one of {', '.join(MATCHES)}"
            )
        rows.append(MappingRow(values["source_label"].strip(), values["task_class"].strip(), match))  # type: ignore[arg-type]
    return LabelMapping(tuple(rows), path)
