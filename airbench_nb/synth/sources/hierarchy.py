"""The class hierarchy of the tiered benchmark: coarse categories, fine classes, and what tells them apart.

The file (``data_manifests/tiered/hierarchy.json`` for the kit's own sources; a user may write one for their
own data) holds::

    {"version": 1,
     "properties": {"<property>": {"unit": "Hz", "description": "..."}},
     "categories": [{"name": "siren", "description": "...", "properties": ["pitch_modulation_hz"],
                     "synonyms": ["siren", ...], "prompt": "a siren"}],
     "classes": [{"name": "wail", "coarse": "siren", "description": "...",
                  "ranges": {"pitch_modulation_hz": [0.18, 0.46]},
                  "synonyms": ["wailing siren", ...], "prompt": "a police car siren wailing"}]}

``properties``, ``ranges``, ``description`` and ``label`` are optional (user data need not say what separates its
classes); where a
category's classes give ranges, every class of it must, and every two of them must be disjoint on at least
one property they both give, so that :meth:`Hierarchy.nearest_fine` can tell them apart. ``synonyms`` (for an
open-vocabulary rule judge) default to none, ``label`` (a class's option text) to its name with underscores as
spaces, and ``prompt`` (for zero-shot CLAP) to the description (else the label, else the name spelled out).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from airbench_nb.records import check_no_bidi

logger = logging.getLogger(__name__)

HIERARCHY_FILE = Path(__file__).resolve().parents[3] / "data_manifests" / "tiered" / "hierarchy.json"
"""The hierarchy of the kit's synthesized sources."""


@dataclass(frozen=True)
class PropertySpec:
    """A defining property measured on the audio."""

    name: str
    """Its name (a key of :data:`airbench_nb.synth.sources_measure.PROPERTY_MEASURES` for the kit's sources)."""
    unit: str
    """Unit of its values (``Hz``, ``oct/s``, ``fraction``)."""
    description: str
    """How it is measured, in a sentence."""


@dataclass(frozen=True)
class CoarseCategory:
    """A coarse category (siren, bell, engine, ...)."""

    name: str
    """Its name, unique among categories and classes."""
    description: str
    """One line saying what sounds belong to it."""
    properties: tuple[str, ...] = ()
    """The properties that separate its fine classes (empty when the file gives none)."""
    synonyms: tuple[str, ...] = ()
    """Words a free-text answer naming the category might use (``siren``, ``emergency vehicle``)."""
    prompt: str = ""
    """Text prompt for zero-shot CLAP at the coarse granularity (defaults to the description)."""


@dataclass(frozen=True)
class FineClass:
    """A fine class (wail siren, church bell, ...)."""

    name: str
    """Its name, unique among categories and classes."""
    coarse: str
    """The coarse category it belongs to (a category of the same file)."""
    description: str
    """One line saying what it sounds like and what sets it apart."""
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Range ``(low, high)`` of each defining property it gives, inclusive; measured clips lie inside."""
    synonyms: tuple[str, ...] = ()
    """Words a free-text answer naming the class might use (``police siren``, ``fire engine siren``)."""
    prompt: str = ""
    """Text prompt for zero-shot CLAP (``a police car siren wailing``; defaults to the description)."""
    label: str = ""
    """How the class is shown as an option of a closed-set question (``wail siren``); defaults to its name with
    underscores as spaces. Classifier mapping tables and CLAP prompts name classes by it."""

    @property
    def shown(self) -> str:
        """The option text: :attr:`label`, or the name with underscores as spaces."""
        return self.label or self.name.replace("_", " ")


@dataclass(frozen=True)
class Hierarchy:
    """Coarse categories, their fine classes and the properties that separate them."""

    categories: tuple[CoarseCategory, ...]
    """The coarse categories, in file order."""
    classes: tuple[FineClass, ...]
    """The fine classes, in file order."""
    properties: Mapping[str, PropertySpec] = field(default_factory=dict)
    """The defining properties, by name."""
    version: int = 1
    """Version of the file format."""
    source: str = ""
    """The file it was read from (empty when built in code)."""

    @property
    def fine_names(self) -> tuple[str, ...]:
        """Names of the fine classes, in file order."""
        return tuple(c.name for c in self.classes)

    @property
    def coarse_names(self) -> tuple[str, ...]:
        """Names of the coarse categories, in file order."""
        return tuple(c.name for c in self.categories)

    def fine(self, name: str) -> FineClass:
        """The fine class called ``name``.

        Raises:
            KeyError: When there is none.
        """
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(f"no fine class {name!r} in the hierarchy {self.source or '(in code)'}")

    def category(self, name: str) -> CoarseCategory:
        """The coarse category called ``name``.

        Raises:
            KeyError: When there is none.
        """
        for c in self.categories:
            if c.name == name:
                return c
        raise KeyError(f"no coarse category {name!r} in the hierarchy {self.source or '(in code)'}")

    def coarse_of(self, fine: str) -> str:
        """The coarse category of the fine class ``fine`` (a fine prediction implies it)."""
        return self.fine(fine).coarse

    def fine_to_coarse(self) -> dict[str, str]:
        """Every fine class mapped to its coarse category."""
        return {c.name: c.coarse for c in self.classes}

    def classes_of(self, coarse: str) -> tuple[str, ...]:
        """The fine classes of a coarse category, in file order."""
        self.category(coarse)
        return tuple(c.name for c in self.classes if c.coarse == coarse)

    def nearest_fine(self, coarse: str, measured: Mapping[str, float]) -> str:
        """The fine class of ``coarse`` whose property ranges are nearest the measured values.

        The distance of a class is the sum, over the properties it gives, of how far the value lies outside
        its range, in widths of the range (0 inside); a NaN value (not measurable on the clip) puts the classes
        that give that property out of reach. Ties go to the first class in file order.

        Args:
            coarse: A coarse category whose classes give ranges.
            measured: The measured value of every property the category lists (NaN where not measurable).

        Raises:
            ValueError: When the category's classes give no ranges, a needed value is missing, or no class is
                within reach.
        """
        names = self.classes_of(coarse)
        best, best_distance = "", math.inf
        for name in names:
            ranges = self.fine(name).ranges
            if not ranges:
                raise ValueError(f"fine class {name!r} gives no property ranges: it cannot be recovered from audio")
            distance = 0.0
            for prop, (low, high) in ranges.items():
                if prop not in measured:
                    raise ValueError(f"no measured value of {prop!r}, which separates the classes of {coarse!r}")
                value = float(measured[prop])
                if math.isnan(value):
                    distance = math.inf
                    break
                distance += max(low - value, 0.0, value - high) / (high - low)
            if distance < best_distance:
                best, best_distance = name, distance
        if not best:
            raise ValueError(f"no class of {coarse!r} is within reach of the measured values {dict(measured)}")
        return best


def _error(path: str, where: str, problem: str) -> ValueError:
    return ValueError(f"{path}: {where}: {problem}")


def _shown(value: str, key: str, path: str, where: str) -> str:
    """``value`` stripped, refused when it holds a direction control (its text reaches pages and prompts)."""
    try:
        return check_no_bidi(value.strip(), f"field {key!r}:")
    except ValueError as exc:
        raise _error(path, where, str(exc)) from None


def _string(raw: Mapping[str, Any], key: str, path: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _error(path, where, f"field {key!r} must be a non-empty string, got {value!r}")
    return _shown(value, key, path, where)


def _strings(raw: Mapping[str, Any], key: str, path: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise _error(path, where, f"field {key!r} must be a list of non-empty strings, got {value!r}")
    return tuple(_shown(v, key, path, where) for v in value)


def _known(raw: Any, allowed: set[str], required: set[str], path: str, where: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise _error(path, where, f"an entry must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise _error(path, where, f"unknown fields {unknown}; known: {', '.join(sorted(allowed))}")
    missing = sorted(required - set(raw))
    if missing:
        raise _error(path, where, f"missing fields {missing}")
    return raw


def _range(value: Any, path: str, where: str) -> tuple[float, float]:
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    )
    if not ok or not value[0] < value[1]:
        raise _error(path, where, f"a range must be [low, high] with finite low < high, got {value!r}")
    return float(value[0]), float(value[1])


def parse_hierarchy(data: Any, source: str = "(in code)") -> Hierarchy:
    """Check and type a hierarchy given as parsed JSON.

    Args:
        data: The file's content (see the module docstring for the layout).
        source: Where it came from, for error messages.

    Raises:
        ValueError: Naming the file, the entry and the field for every kind of defect: unknown or missing
            fields, wrong types, duplicate names, a class whose category does not exist, a category without
            classes, a range on a property its category does not list, classes of one category that no
            property separates.
    """
    top = _known(
        data,
        {"version", "about", "properties", "categories", "classes"},
        {"categories", "classes"},
        source,
        "top level",
    )
    version = top.get("version", 1)
    if version != 1:
        raise _error(source, "version", f"only version 1 is known, got {version!r}")
    properties: dict[str, PropertySpec] = {}
    raw_props = top.get("properties", {})
    if not isinstance(raw_props, Mapping):
        raise _error(source, "properties", f"must be an object of name → {{unit, description}}, got {raw_props!r}")
    for name, spec in raw_props.items():
        where = f"properties[{name!r}]"
        spec = _known(spec, {"unit", "description"}, {"unit", "description"}, source, where)
        properties[name] = PropertySpec(
            name, _string(spec, "unit", source, where), _string(spec, "description", source, where)
        )
    seen: dict[str, str] = {}

    def claim(name: str, where: str) -> None:
        if name in seen:
            raise _error(source, where, f"duplicate name {name!r} (already used by {seen[name]})")
        seen[name] = where

    if not isinstance(top["categories"], list) or not top["categories"]:
        raise _error(source, "categories", "must be a non-empty list of categories")
    categories: list[CoarseCategory] = []
    fields = {"name", "description", "properties", "synonyms", "prompt"}
    for i, raw in enumerate(top["categories"]):
        where = f"categories[{i}]"
        raw = _known(raw, fields, {"name"}, source, where)
        name = _string(raw, "name", source, where)
        where = f"categories[{i}] ({name!r})"
        claim(name, where)
        props = _strings(raw, "properties", source, where)
        for prop in props:
            if prop not in properties:
                raise _error(source, where, f"property {prop!r} is not declared under 'properties'")
        description = _string(raw, "description", source, where) if "description" in raw else ""
        prompt = _string(raw, "prompt", source, where) if "prompt" in raw else description or name.replace("_", " ")
        categories.append(CoarseCategory(name, description, props, _strings(raw, "synonyms", source, where), prompt))
    by_name = {c.name: c for c in categories}
    if not isinstance(top["classes"], list) or not top["classes"]:
        raise _error(source, "classes", "must be a non-empty list of fine classes")
    classes: list[FineClass] = []
    labels: dict[str, str] = {}
    fields = {"name", "coarse", "description", "ranges", "synonyms", "prompt", "label"}
    for i, raw in enumerate(top["classes"]):
        where = f"classes[{i}]"
        raw = _known(raw, fields, {"name", "coarse"}, source, where)
        name = _string(raw, "name", source, where)
        where = f"classes[{i}] ({name!r})"
        claim(name, where)
        coarse = _string(raw, "coarse", source, where)
        if coarse not in by_name:
            raise _error(
                source, where, f"field 'coarse': category {coarse!r} does not exist; categories: {', '.join(by_name)}"
            )
        raw_ranges = raw.get("ranges", {})
        if not isinstance(raw_ranges, Mapping):
            raise _error(
                source, where, f"field 'ranges' must be an object of property → [low, high], got {raw_ranges!r}"
            )
        ranges = {}
        for prop, value in raw_ranges.items():
            if prop not in by_name[coarse].properties:
                raise _error(
                    source,
                    where,
                    f"ranges: property {prop!r} is not one of category {coarse!r}'s properties "
                    f"{list(by_name[coarse].properties)}",
                )
            ranges[prop] = _range(value, source, f"{where}: ranges[{prop!r}]")
        description = _string(raw, "description", source, where) if "description" in raw else ""
        label = _string(raw, "label", source, where) if "label" in raw else ""
        prompt = (
            _string(raw, "prompt", source, where) if "prompt" in raw else description or label or name.replace("_", " ")
        )
        shown = label or name.replace("_", " ")
        if shown.casefold() in labels:
            raise _error(source, where, f"option text {shown!r} is also that of {labels[shown.casefold()]}")
        labels[shown.casefold()] = where
        classes.append(
            FineClass(name, coarse, description, ranges, _strings(raw, "synonyms", source, where), prompt, label)
        )
    for category in categories:
        members = [c for c in classes if c.coarse == category.name]
        if not members:
            raise _error(source, f"category {category.name!r}", "has no fine classes")
        with_ranges = [c for c in members if c.ranges]
        if with_ranges and len(with_ranges) < len(members):
            bare = [c.name for c in members if not c.ranges]
            raise _error(source, f"category {category.name!r}", f"classes {bare} give no ranges while others do")
        for i, a in enumerate(with_ranges):
            for b in with_ranges[i + 1 :]:
                shared = set(a.ranges) & set(b.ranges)
                if not any(a.ranges[p][1] < b.ranges[p][0] or b.ranges[p][1] < a.ranges[p][0] for p in shared):
                    raise _error(
                        source,
                        f"category {category.name!r}",
                        f"classes {a.name!r} and {b.name!r} overlap on every property they both give "
                        f"({sorted(shared) or 'none'}): nothing separates them",
                    )
    return Hierarchy(tuple(categories), tuple(classes), properties, int(version), source)


MAX_HIERARCHY_BYTES = 16 * 1024 * 1024
"""Largest hierarchy file read (the kit's is a few kilobytes)."""


def load_hierarchy(path: str | Path = HIERARCHY_FILE) -> Hierarchy:
    """Read and check a hierarchy file (see :func:`parse_hierarchy` for the checks).

    Args:
        path: The JSON file; the kit's own by default.

    Raises:
        FileNotFoundError: When the file does not exist.
        ValueError: When it is too big, not UTF-8, not JSON, nested deeper than the kit reads (the message names the
            file and line) or fails a check (the message names the file, entry and field).
    """
    from airbench_nb.manifests import MAX_JSON_DEPTH, json_too_deep, read_utf8

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"hierarchy file {path} does not exist")
    text = read_utf8(path, MAX_HIERARCHY_BYTES, "a hierarchy file")
    deep = json_too_deep(text)
    if deep is not None:
        raise ValueError(f"{path}:{deep[0]}: column {deep[1]}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg} (column {exc.colno})") from None
    return parse_hierarchy(data, str(path))
