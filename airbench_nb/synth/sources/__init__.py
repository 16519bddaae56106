"""Tiered sound sources: synthesized clips of coarse categories and fine classes whose differences are physical.

The tiered sound-source benchmark asks "what made that sound?" at two granularities. Here every fine class is a
small synthesizer whose seeded draws vary pitch, rate, duration, level and background noise, always within
ranges that keep it apart from the other classes of its coarse category on a *defining property* measured on
the audio (:mod:`airbench_nb.synth.sources_measure`). The classes, their categories, descriptions, synonyms,
CLAP prompts and property ranges are data: ``data_manifests/tiered/hierarchy.json``
(:func:`~airbench_nb.synth.sources.hierarchy.load_hierarchy`).

Clips are mono float32 at 16 kHz by default, 2-5 s long, with a peak of 0.3-0.8 and pink background noise
40-50 dB below the peak; the same fine class and seed always give the same samples.

Example:
    >>> clip = render("wail", seed=3)
    >>> clip.coarse, clip.samples.dtype, 2.0 <= clip.samples.size / 16000 <= 5.0
    ('siren', dtype('float32'), True)
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from airbench_nb.synth.sources import struck, textures, tonal
from airbench_nb.synth.sources.common import Draw, finish
from airbench_nb.synth.sources.hierarchy import HIERARCHY_FILE, FineClass, Hierarchy, load_hierarchy

logger = logging.getLogger(__name__)

__all__ = [
    "HIERARCHY_FILE",
    "MIN_SR",
    "SR",
    "SYNTHESIZERS",
    "FineClass",
    "Hierarchy",
    "SourceClip",
    "class_spec",
    "coarse_of",
    "fine_classes",
    "hierarchy",
    "load_hierarchy",
    "render",
    "synthesize",
]

SR = 16000
"""Default sample rate in Hz."""
MIN_SR = 16000
"""Lowest sample rate accepted: the highest partials (bird chirps, bicycle bells) need it."""

Synthesizer = Callable[[np.random.Generator, int], tuple[np.ndarray, Draw]]

SYNTHESIZERS: dict[str, Synthesizer] = {
    "wail": tonal.wail,
    "yelp": tonal.yelp,
    "hi_lo": tonal.hi_lo,
    "two_tone": tonal.two_tone,
    "church_bell": struck.church_bell,
    "hand_bell": struck.hand_bell,
    "bicycle_bell": struck.bicycle_bell,
    "reversing_beeper": tonal.reversing_beeper,
    "microwave_beep": tonal.microwave_beep,
    "smoke_alarm": tonal.smoke_alarm,
    "motorcycle_engine": textures.motorcycle,
    "truck_engine": textures.truck,
    "car_engine": textures.car,
    "drip": textures.drip,
    "pour": textures.pour,
    "stream": textures.stream,
    "door_knock": struck.door_knock,
    "footsteps": struck.footsteps,
    "clock_tick": struck.clock_tick,
    "cow_moo": tonal.cow_moo,
    "dog_bark": tonal.dog_bark,
    "bird_chirp": tonal.bird_chirp,
    "ship_horn": tonal.ship_horn,
    "truck_air_horn": tonal.truck_air_horn,
    "car_horn": tonal.car_horn,
}
"""The synthesizer of each fine class (the names of the hierarchy file), taking ``(rng, sr)``."""

_HIERARCHY: Hierarchy | None = None


def hierarchy() -> Hierarchy:
    """The shipped hierarchy (``data_manifests/tiered/hierarchy.json``), loaded once."""
    global _HIERARCHY
    if _HIERARCHY is None:
        _HIERARCHY = load_hierarchy(HIERARCHY_FILE)
    return _HIERARCHY


def fine_classes() -> tuple[str, ...]:
    """The fine classes, in hierarchy order (grouped by coarse category)."""
    return hierarchy().fine_names


def coarse_of(fine_class: str) -> str:
    """The coarse category of a fine class."""
    return hierarchy().coarse_of(fine_class)


def class_spec(fine_class: str) -> FineClass:
    """The hierarchy record of a fine class: category, description, synonyms, prompt and property ranges."""
    return hierarchy().fine(fine_class)


@dataclass(frozen=True)
class SourceClip:
    """One synthesized clip and what it was made from."""

    fine: str
    """Fine class (a key of :data:`SYNTHESIZERS`)."""
    coarse: str
    """Coarse category of the fine class."""
    seed: int
    """Seed it was drawn with (same class and seed, same samples)."""
    sr: int
    """Sample rate in Hz."""
    samples: np.ndarray = field(repr=False)
    """Mono float32 samples, peak 0.3-0.8."""
    params: Draw = field(default_factory=dict)
    """Physical parameters drawn for it (rates in Hz, durations in s, counts, ``peak``, ``background_db``)."""

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.samples.size / self.sr


def _rng(fine_class: str, seed: int) -> np.random.Generator:
    """The generator of one class and seed: seeds of different classes never share a stream."""
    return np.random.default_rng([seed, zlib.crc32(fine_class.encode("utf-8"))])


def render(fine_class: str, seed: int, sr: int = SR) -> SourceClip:
    """Synthesize one clip of a fine class, with its drawn parameters.

    Args:
        fine_class: A fine class of the hierarchy (a key of :data:`SYNTHESIZERS`).
        seed: Non-negative integer seed.
        sr: Sample rate in Hz, at least :data:`MIN_SR`.

    Raises:
        ValueError: For an unknown class, a bad seed or a sample rate below :data:`MIN_SR`.
    """
    if fine_class not in SYNTHESIZERS:
        raise ValueError(f"unknown fine class {fine_class!r}; choose one of {', '.join(SYNTHESIZERS)}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(sr, bool) or not isinstance(sr, int | np.integer) or sr < MIN_SR:
        raise ValueError(f"sr must be an integer sample rate of at least {MIN_SR} Hz, got {sr!r}")
    rng = _rng(fine_class, int(seed))
    raw, params = SYNTHESIZERS[fine_class](rng, int(sr))
    samples, level = finish(raw, rng, int(sr))
    return SourceClip(fine_class, coarse_of(fine_class), int(seed), int(sr), samples, {**params, **level})


def synthesize(fine_class: str, seed: int, sr: int = SR) -> np.ndarray:
    """Mono float32 samples of one clip of a fine class (see :func:`render`)."""
    return render(fine_class, seed, sr).samples
