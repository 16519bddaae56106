"""Field checks shared by the records: strict integers and booleans, language tags, uids, audio paths, names."""

from __future__ import annotations

import logging
import numbers
import re
import unicodedata
from pathlib import PurePosixPath, PureWindowsPath
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

logger = logging.getLogger(__name__)


def _strict_int(value: Any) -> Any:
    """Refuse what pydantic's lax mode would turn into an int: booleans, strings and floats."""
    if type(value) is int:
        return value
    if isinstance(value, bool | str | bytes | float):
        raise ValueError(f"expected an integer, got {type(value).__name__} {value!r}")
    if isinstance(value, numbers.Integral):  # numpy integers from the builders
        return int(value)
    return value


StrictInteger = Annotated[int, BeforeValidator(_strict_int)]
"""An int field that refuses ``true``, ``"1"`` and ``1.0`` (pydantic's lax mode would accept them)."""


def _strict_bool(value: Any) -> Any:
    """Refuse what pydantic's lax mode would turn into a bool: ``"yes"``, ``"true"``, ``1``, ``0``, ``"off"``."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in {"bool", "bool_"}:  # numpy's bool from scoring
        return bool(value)
    raise ValueError(f"expected true or false, got {type(value).__name__} {value!r}")


StrictBoolean = Annotated[bool, BeforeValidator(_strict_bool)]
"""A bool field that accepts only ``true`` and ``false`` (pydantic's lax mode would take ``"yes"``, ``1``, ``"on"``)."""

LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*")
"""What a language field holds: an ISO 639 code, optionally with BCP 47 subtags (``en``, ``en-us``, ``en_GB``,
``zh-Hans-CN``, ``yue``); no path, no space, no character outside ASCII letters and digits."""


def check_language(value: str) -> str:
    """Validate a language field (:data:`LANGUAGE_TAG`).

    Raises:
        ValueError: Naming the value and what a language tag looks like.
    """
    if not LANGUAGE_TAG.fullmatch(value):
        raise ValueError(
            f"language {value!r} is not a language tag: an ISO 639 code, optionally with subtags (en, en-us, de, zh)"
        )
    return value


LanguageTag = Annotated[str, AfterValidator(check_language)]
"""A language field: an ISO 639 code with optional subtags (:func:`check_language`)."""

BIDI_CONTROLS: frozenset[str] = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Unicode's direction marks, embeddings, overrides and isolates: text holding them can show as something else
(reversed, reordered) on a page, so names that reach pages may not hold them."""


def check_no_bidi(value: str, what: str) -> str:
    """Refuse a text holding a direction-control character (:data:`BIDI_CONTROLS`).

    Args:
        value: The text.
        what: What the text is, for the message (``class name``, ``choices``, ...).

    Raises:
        ValueError: Naming the character, its code point and position.
    """
    for index, char in enumerate(value):
        if char in BIDI_CONTROLS:
            name = unicodedata.name(char, "unnamed")
            raise ValueError(
                f"{what} {value!r} holds the direction-control character U+{ord(char):04X} ({name}) at position "
                f"{index}; names may hold no direction controls"
            )
    return value


def _not_blank(value: str, field: str) -> str:
    """Refuse an empty or all-whitespace text where one is required."""
    if not value.strip():
        raise ValueError(f"{field} is empty; give the text")
    return value


Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""A duration in seconds: finite and 0 or more."""

_UID_FORBIDDEN = {
    "Cc": "control character",
    "Cf": "format (zero-width) character",
    "Cs": "surrogate",
    "Zl": "line separator",
    "Zp": "paragraph separator",
}


def check_uid(value: str) -> str:
    """Validate an item uid: NFC-normalised, without control, format (zero-width) or separator characters.

    Two uids that look the same must be the same string, or an answer would not find its item.

    Args:
        value: The uid as written.

    Returns:
        The uid in Unicode normal form C.

    Raises:
        ValueError: Naming the offending character and its position.
    """
    if value.isascii() and value.isprintable():
        return value  # already NFC, and printable ASCII holds none of the forbidden categories (a reading's fast path)
    value = unicodedata.normalize("NFC", value)
    for index, char in enumerate(value):
        kind = _UID_FORBIDDEN.get(unicodedata.category(char))
        if kind is not None:
            name = unicodedata.name(char, "unnamed")
            raise ValueError(
                f"uid {value!r} holds a {kind} U+{ord(char):04X} ({name}) at position {index}; "
                "uids may hold no control, zero-width or separator characters"
            )
    return value


_PLAIN_AUDIO_PATH = re.compile(r"[\w\-]+(?:\.[\w\-]+)*(?:/[\w\-]+(?:\.[\w\-]+)*)*\Z", re.ASCII)
"""A relative POSIX path of ASCII letters, digits, ``_``, ``-`` and inner dots (``Foundation/x_1/a.b.wav``): nothing
:func:`check_relative_audio_path` refuses or rewrites (no ``.`` or ``..`` part, no slash at either end)."""


def check_relative_audio_path(value: str) -> str:
    """Validate an audio path stored in a record: relative, POSIX, inside the data root.

    Args:
        value: The path as written in the manifest.

    Returns:
        The path, normalised to forward slashes without ``./`` parts.

    Raises:
        ValueError: If the path is empty, absolute (POSIX or Windows style), contains ``..`` or a control character.
    """
    if _PLAIN_AUDIO_PATH.match(value):  # the usual path, already normal: no need for the checks below
        return value
    if not value or not value.strip():
        raise ValueError("audio path is empty")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError(f"audio path {value!r} holds a control character")
    if "\\" in value:
        raise ValueError(f"audio path {value!r} uses backslashes; write it with forward slashes")
    if value.startswith("/") or PureWindowsPath(value).is_absolute() or PureWindowsPath(value).drive:
        raise ValueError(f"audio path {value!r} is absolute; paths must be relative to the data root")
    parts = PurePosixPath(value).parts
    if ".." in parts:
        raise ValueError(f"audio path {value!r} contains '..'; paths may not leave the data root")
    return str(PurePosixPath(*[p for p in parts if p != "."]))
