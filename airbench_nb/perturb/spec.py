"""What a perturbation is (a family, its parameter and, for a codec, which one), parsed, checked and labelled.

One :class:`Perturbation` names one point of one family's grid. The parameter's unit depends on the family:

=============  =====================================  ==================  =========================
family         parameter                              accepted range      default grid
=============  =====================================  ==================  =========================
``codec``      target bitrate, kbit/s (``codec`` is   MP3 16-160,         MP3 24/48/96,
               ``mp3`` or ``opus``)                   Opus 6-256          Opus 16/32/64
``reverb``     RT60 of the synthetic RIR, seconds     0.05-3.0            0.3/0.6/1.0
``speed``      playback-rate factor (1.1: 10% faster  0.5-2.0             0.9/1.1
               and shorter, pitch up with it)
``pitch``      frequency ratio (1.1: 10% higher,      0.5-2.0             0.9/1.1
               about +1.65 semitones; duration kept)
``clipping``   clipping threshold as a fraction of    0 < p < 1           0.5/0.25/0.1
               the clip's peak
``loudness``   integrated loudness target, LUFS       -70 to 0            -30/-23/-14/0
=============  =====================================  ==================  =========================

A perturbation is written as text ``family:parameter`` (``reverb:0.6``, ``loudness:-23``) or, for codecs,
``codec:mp3:24`` / ``codec:opus:32``; :func:`parse_perturbation` reads it and :attr:`Perturbation.text` writes it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from airbench_nb.records.controls import PERTURBATION_OF_KEY

Family = Literal["codec", "reverb", "speed", "pitch", "clipping", "loudness"]
"""Families of perturbation."""
Codec = Literal["mp3", "opus"]
"""Codecs of the ``codec`` family (both written by libsndfile 1.2.2 through soundfile)."""

FAMILIES: tuple[str, ...] = get_args(Family)
"""Every family, in the order the docs list them."""
CODECS: tuple[str, ...] = get_args(Codec)
"""Every codec."""

PARAMETER_RANGES: dict[str, tuple[float, float]] = {
    "codec:mp3": (16.0, 160.0),
    "codec:opus": (6.0, 256.0),
    "reverb": (0.05, 3.0),
    "speed": (0.5, 2.0),
    "pitch": (0.5, 2.0),
    "clipping": (0.0, 1.0),
    "loudness": (-70.0, 0.0),
}
"""Accepted parameter range per curve name (inclusive, except clipping's open interval). MP3 at 16 kHz is
MPEG-2 Layer III (8-160 kbit/s; libsndfile refuses its lowest setting, so 16 is the floor); Opus's encoder
accepts 6-256 kbit/s per channel."""
OPEN_RANGES = frozenset({"clipping"})
"""Curve names whose range excludes both ends."""

PARAMETER_UNITS: dict[str, str] = {
    "codec": "kbit/s",
    "reverb": "s",
    "speed": "factor",
    "pitch": "ratio",
    "clipping": "fraction of peak",
    "loudness": "LUFS",
}
"""Unit of each family's parameter."""

PERTURBATION_META_KEYS = (PERTURBATION_OF_KEY, "perturbation", "parameter", "measured")
"""Keys a perturbed item adds to its clean item's meta: the clean uid, the curve name (:attr:`Perturbation.name`),
the requested parameter and the measured record (a clean meta holding one of them cannot be perturbed)."""
PERTURBATION_SEPARATOR = "@p-"
"""Between a clean uid and a perturbation's tag in a perturbed item's uid (``q-001@p-mp3-24k``)."""


class PerturbError(ValueError):
    """A perturbation that cannot be made as asked: unknown family or codec, a parameter out of range, bad audio."""


@dataclass(frozen=True)
class Perturbation:
    """One perturbation: a family and its parameter (see the module docstring for units and ranges)."""

    family: Family
    """Which kind of perturbation."""
    parameter: float
    """The family's parameter, in the family's unit (:data:`PARAMETER_UNITS`)."""
    codec: Codec | None = None
    """``mp3`` or ``opus`` for the ``codec`` family; None for every other family."""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise PerturbError(f"perturbation family {self.family!r} is unknown; known: {', '.join(FAMILIES)}")
        if self.family == "codec":
            if self.codec not in CODECS:
                raise PerturbError(f"codec perturbation: codec {self.codec!r} is unknown; known: {', '.join(CODECS)}")
        elif self.codec is not None:
            raise PerturbError(f"{self.family} perturbation: codec={self.codec!r} is only for the codec family")
        if isinstance(self.parameter, bool) or not isinstance(self.parameter, int | float):
            raise PerturbError(f"{self.name} perturbation: parameter must be a number, got {self.parameter!r}")
        if not math.isfinite(self.parameter):
            raise PerturbError(f"{self.name} perturbation: parameter must be finite, got {self.parameter!r}")
        low, high = PARAMETER_RANGES[self.name]
        inside = low < self.parameter < high if self.name in OPEN_RANGES else low <= self.parameter <= high
        if not inside:
            bracket = f"({low:g}, {high:g})" if self.name in OPEN_RANGES else f"[{low:g}, {high:g}]"
            raise PerturbError(
                f"{self.name} perturbation: parameter {self.parameter:g} {self.unit} is outside {bracket}"
            )
        object.__setattr__(self, "parameter", float(self.parameter))

    @property
    def name(self) -> str:
        """The curve this point belongs to: the family, or ``codec:mp3`` / ``codec:opus``."""
        return f"codec:{self.codec}" if self.family == "codec" else self.family

    @property
    def unit(self) -> str:
        """Unit of the parameter."""
        return PARAMETER_UNITS[self.family]

    @property
    def text(self) -> str:
        """The perturbation as :func:`parse_perturbation` reads it (``codec:mp3:24``, ``reverb:0.6``)."""
        return f"{self.name}:{self.parameter:g}"

    @property
    def tag(self) -> str:
        """A short label safe in file names and uids (``mp3-24k``, ``reverb-0.6s``, ``loudness-23``, ``loudness+0``)."""
        p = self.parameter
        if self.family == "codec":
            return f"{self.codec}-{p:g}k"
        if self.family == "reverb":
            return f"reverb-{p:g}s"
        if self.family == "loudness":
            return f"loudness{p:+g}"
        return f"{self.family}-{p:g}"


def parse_perturbation(text: str) -> Perturbation:
    """Read ``family:parameter`` or ``codec:<mp3|opus>:<kbit/s>`` (see the module docstring).

    Raises:
        PerturbError: For a malformed text, an unknown family or codec, or a parameter out of range.
    """
    parts = [p.strip() for p in str(text).strip().split(":")]
    family = parts[0].lower()
    if family not in FAMILIES:
        raise PerturbError(f"perturbation {text!r}: family {parts[0]!r} is unknown; known: {', '.join(FAMILIES)}")
    expected = 3 if family == "codec" else 2
    if len(parts) != expected:
        shape = "codec:<mp3|opus>:<kbit/s>" if family == "codec" else f"{family}:<{PARAMETER_UNITS[family]}>"
        raise PerturbError(f"perturbation {text!r}: expected {shape}")
    try:
        value = float(parts[-1])
    except ValueError:
        raise PerturbError(f"perturbation {text!r}: parameter {parts[-1]!r} is not a number") from None
    codec = parts[1].lower() if family == "codec" else None
    return Perturbation(family, value, codec)  # type: ignore[arg-type]


def parse_perturbations(values: str | Iterable[str | Perturbation] | None) -> list[Perturbation]:
    """Read a list of perturbations: a comma-separated string, a sequence of texts or specs, or None (none).

    Raises:
        PerturbError: For any bad entry, or the same perturbation twice.
    """
    if values is None:
        return []
    if isinstance(values, str):
        text = values.strip()
        values = [] if text.lower() in ("", "none") else text.split(",")
    specs = [v if isinstance(v, Perturbation) else parse_perturbation(v) for v in values]
    seen: set[str] = set()
    for spec in specs:
        if spec.tag in seen:
            raise PerturbError(f"perturbation {spec.text!r} is listed twice")
        seen.add(spec.tag)
    return specs


DEFAULT_GRID: tuple[Perturbation, ...] = tuple(
    parse_perturbations(
        "codec:mp3:24,codec:mp3:48,codec:mp3:96,codec:opus:16,codec:opus:32,codec:opus:64,"
        "reverb:0.3,reverb:0.6,reverb:1.0,speed:0.9,speed:1.1,pitch:0.9,pitch:1.1,"
        "clipping:0.5,clipping:0.25,clipping:0.1,loudness:-30,loudness:-23,loudness:-14,loudness:0"
    )
)
"""Every family's default grid (module docstring)."""


def perturbed_uid(clean_uid: str, spec: Perturbation) -> str:
    """Uid of a perturbed copy: ``f"{clean_uid}@p-{spec.tag}"``."""
    return f"{clean_uid}{PERTURBATION_SEPARATOR}{spec.tag}"
