"""Short sound events and scenes of events over coloured noise, at 16 kHz mono float32, with exact labels.

Events (see :data:`EVENTS`): ``beep`` (a steady tone), ``siren`` (a tone swept up and down), ``click`` (a few
milliseconds of a damped high tone), ``noise_burst`` (gated noise) and ``knock`` (a damped low thud with a
noisy attack). Each is a function of its physical parameters and starts sharply (attack of 5 ms or less), so
its onset is measurable from the energy envelope.

:func:`scene` places events at given onsets over coloured noise from :mod:`airbench_nb.synth.noise` and
returns the labels (name, onset, offset, description) as ground truth.

Example:
    >>> import numpy as np
    >>> x, labels = scene([("beep", 0.5), ("knock", 1.2)], 2.0, rng=np.random.default_rng(0))
    >>> [(d["name"], d["onset_s"], d["offset_s"]) for d in labels]
    [('beep', 0.5, 0.7), ('knock', 1.2, 1.35)]
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from airbench_nb.synth.noise import NOISE_EXPONENTS, coloured_noise

logger = logging.getLogger(__name__)

SR = 16000
"""Default sample rate in Hz."""
EVENT_PEAK = 0.8
"""Peak amplitude (linear, full scale = 1) of an event rendered on its own."""
RAMP_S = 0.005
"""Length in seconds of the raised-cosine fade-in and fade-out of steady events (beep, siren, noise burst)."""
SCENE_PEAK_LIMIT = 0.99
"""A scene whose peak would exceed this (linear) is scaled down as a whole, which keeps its SNR."""


def _n_samples(duration_s: float, sr: int, what: str = "duration_s") -> int:
    if not np.isfinite(duration_s) or duration_s <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {duration_s!r}")
    n = int(round(duration_s * sr))
    if n < 1:
        raise ValueError(f"{what}={duration_s} is shorter than one sample at {sr} Hz")
    return n


def _check_freq(freq_hz: float, sr: int, what: str = "freq_hz") -> None:
    if not np.isfinite(freq_hz) or not 0 < freq_hz < sr / 2:
        raise ValueError(f"{what} must be between 0 and {sr / 2:.0f} Hz (Nyquist), got {freq_hz!r}")


def _ramped(x: np.ndarray, sr: int, ramp_s: float = RAMP_S) -> np.ndarray:
    """``x`` with raised-cosine fades of ``ramp_s`` seconds (at most a quarter of ``x``) at both ends."""
    n = min(int(round(ramp_s * sr)), x.size // 4)
    if n > 0:
        fade = 0.5 - 0.5 * np.cos(np.pi * np.arange(n) / n)
        x[:n] *= fade
        x[-n:] *= fade[::-1]
    return x


def _to_peak(x: np.ndarray, peak: float = EVENT_PEAK) -> np.ndarray:
    level = float(np.max(np.abs(x)))
    if level > 0:
        x = x * (peak / level)
    return x.astype(np.float32)


def beep(duration_s: float = 0.2, freq_hz: float = 1000.0, sr: int = SR) -> np.ndarray:
    """A steady sine tone with 5 ms fades.

    Args:
        duration_s: Length in seconds.
        freq_hz: Frequency in Hz.
        sr: Sample rate in Hz.

    Returns:
        Mono float32 samples with a peak of :data:`EVENT_PEAK`.
    """
    n = _n_samples(duration_s, sr)
    _check_freq(freq_hz, sr)
    return _to_peak(_ramped(np.sin(2 * np.pi * freq_hz * np.arange(n) / sr), sr))


def siren(
    duration_s: float = 1.0, low_hz: float = 600.0, high_hz: float = 1200.0, sweep_hz: float = 2.0, sr: int = SR
) -> np.ndarray:
    """A wailing tone whose frequency sweeps sinusoidally between two limits, like an emergency siren.

    Args:
        duration_s: Length in seconds.
        low_hz: Lowest instantaneous frequency in Hz (reached first, at the start).
        high_hz: Highest instantaneous frequency in Hz.
        sweep_hz: Sweeps (low → high → low) per second.
        sr: Sample rate in Hz.

    Returns:
        Mono float32 samples with a peak of :data:`EVENT_PEAK`.
    """
    n = _n_samples(duration_s, sr)
    _check_freq(low_hz, sr, "low_hz")
    _check_freq(high_hz, sr, "high_hz")
    if not low_hz < high_hz:
        raise ValueError(f"low_hz must be below high_hz, got {low_hz} and {high_hz}")
    if not sweep_hz > 0:
        raise ValueError(f"sweep_hz must be positive, got {sweep_hz!r}")
    t = np.arange(n) / sr
    inst = low_hz + (high_hz - low_hz) * 0.5 * (1 - np.cos(2 * np.pi * sweep_hz * t))
    phase = 2 * np.pi * np.cumsum(inst) / sr
    return _to_peak(_ramped(np.sin(phase), sr))


def click(duration_s: float = 0.01, freq_hz: float = 3000.0, sr: int = SR) -> np.ndarray:
    """A click: a damped sinusoid that starts at full level and decays by 60 dB over ``duration_s``.

    Args:
        duration_s: Length in seconds (typically 2-20 ms).
        freq_hz: Frequency of the ringing in Hz (brightness of the click).
        sr: Sample rate in Hz.

    Returns:
        Mono float32 samples with a peak of :data:`EVENT_PEAK`.
    """
    n = _n_samples(duration_s, sr)
    _check_freq(freq_hz, sr)
    t = np.arange(n) / sr
    x = np.exp(-np.log(1000.0) * t / duration_s) * np.sin(2 * np.pi * freq_hz * t + np.pi / 4)
    return _to_peak(x)


def noise_burst(
    duration_s: float = 0.3, color: str = "white", rng: np.random.Generator | None = None, sr: int = SR
) -> np.ndarray:
    """A burst of coloured noise with 5 ms fades.

    Args:
        duration_s: Length in seconds.
        color: Noise colour (see :data:`airbench_nb.synth.noise.NOISE_EXPONENTS`).
        rng: Generator for the noise; ``None`` uses ``np.random.default_rng(0)``.
        sr: Sample rate in Hz.

    Returns:
        Mono float32 samples with a peak of :data:`EVENT_PEAK`.
    """
    n = _n_samples(duration_s, sr)
    rng = np.random.default_rng(0) if rng is None else rng
    return _to_peak(_ramped(coloured_noise(color, n, rng, sr=sr).astype(np.float64), sr))


KNOCK_MODES: tuple[tuple[float, float], ...] = ((1.0, 1.0), (2.31, 0.5), (3.87, 0.25))
"""``(frequency ratio, amplitude)`` of the knock's damped modes, relative to its ``freq_hz`` (a wooden panel)."""


def knock(
    duration_s: float = 0.15, freq_hz: float = 180.0, rng: np.random.Generator | None = None, sr: int = SR
) -> np.ndarray:
    """One knock on wood: damped low modes plus a 3 ms noise transient at the strike.

    Args:
        duration_s: Length in seconds; the modes decay by 60 dB over it.
        freq_hz: Frequency of the lowest mode in Hz (180 Hz sounds like a door).
        rng: Generator for the strike transient; ``None`` uses ``np.random.default_rng(0)``.
        sr: Sample rate in Hz.

    Returns:
        Mono float32 samples with a peak of :data:`EVENT_PEAK`.
    """
    n = _n_samples(duration_s, sr)
    _check_freq(freq_hz, sr)
    rng = np.random.default_rng(0) if rng is None else rng
    t = np.arange(n) / sr
    x = np.zeros(n)
    for ratio, amp in KNOCK_MODES:
        if ratio * freq_hz < sr / 2:
            x += amp * np.sin(2 * np.pi * ratio * freq_hz * t)
    x *= np.exp(-np.log(1000.0) * t / duration_s)
    n_strike = min(n, int(round(0.003 * sr)))
    x[:n_strike] += 0.5 * rng.uniform(-1, 1, n_strike) * np.linspace(1, 0, n_strike)
    return _to_peak(x)


def _format_param(key: str, value: Any) -> str:
    """A parameter value as words: frequencies as ``600 Hz`` or ``1 kHz``, seconds as ``200 ms``."""
    if key.endswith("_hz"):
        return f"{value / 1000:g} kHz" if value >= 1000 else f"{value:g} Hz"
    if key.endswith("_s"):
        return f"{value * 1000:g} ms" if value < 1 else f"{value:g} s"
    return str(value)


@dataclass(frozen=True)
class SoundEvent:
    """A named event for scenes and sound questions."""

    name: str
    """Registry key."""
    template: str
    """Human description with ``{param}`` fields filled from the parameters (see :meth:`describe`)."""
    make: Callable[..., np.ndarray]
    """Function that renders it; keyword arguments override ``params``."""
    params: dict[str, Any] = field(default_factory=dict)
    """Default keyword arguments of ``make`` (durations in seconds, frequencies in Hz)."""
    uses_rng: bool = False
    """Whether ``make`` takes an ``rng`` (random events)."""

    @property
    def description(self) -> str:
        """Human description at the default parameters (``a short 1 kHz beep``)."""
        return self.describe()

    def _merged(self, overrides: dict[str, Any]) -> dict[str, Any]:
        unknown = set(overrides) - set(self.params)
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {', '.join(sorted(unknown))} for event {self.name!r}; "
                f"it takes {', '.join(self.params)}"
            )
        return {**self.params, **overrides}

    def describe(self, **overrides: Any) -> str:
        """Human description with ``overrides`` applied to the default parameters."""
        return self.template.format(**{k: _format_param(k, v) for k, v in self._merged(overrides).items()})

    def render(self, rng: np.random.Generator | None = None, sr: int = SR, **overrides: Any) -> np.ndarray:
        """The event's samples at ``sr`` Hz with ``overrides`` applied to its default parameters."""
        kwargs = {**self._merged(overrides), "sr": sr}
        if self.uses_rng:
            kwargs["rng"] = rng
        return self.make(**kwargs)


EVENTS: dict[str, SoundEvent] = {
    e.name: e
    for e in (
        SoundEvent("beep", "a short {freq_hz} beep", beep, {"duration_s": 0.2, "freq_hz": 1000.0}),
        SoundEvent(
            "siren", "a siren wailing between {low_hz} and {high_hz}", siren,
            {"duration_s": 1.0, "low_hz": 600.0, "high_hz": 1200.0, "sweep_hz": 2.0},
        ),
        SoundEvent("click", "a sharp click", click, {"duration_s": 0.01, "freq_hz": 3000.0}),
        SoundEvent(
            "noise_burst", "a short burst of {color} noise", noise_burst,
            {"duration_s": 0.3, "color": "white"}, uses_rng=True,
        ),
        SoundEvent(
            "knock", "a single knock on a wooden door", knock, {"duration_s": 0.15, "freq_hz": 180.0}, uses_rng=True
        ),
    )
}  # fmt: skip
"""Event registry: name → :class:`SoundEvent` (description, renderer, default parameters)."""


def event(name: str, rng: np.random.Generator | None = None, sr: int = SR, **params: Any) -> np.ndarray:
    """Render a registered event by name.

    Args:
        name: A key of :data:`EVENTS`.
        rng: Generator for random events (``noise_burst``, ``knock``).
        sr: Sample rate in Hz.
        **params: Overrides of the event's default parameters (``duration_s``, ``freq_hz``, ...).

    Raises:
        ValueError: For an unknown name or parameter, or a bad parameter value.
    """
    if name not in EVENTS:
        raise ValueError(f"unknown sound event {name!r}; choose one of {', '.join(EVENTS)}")
    return EVENTS[name].render(rng=rng, sr=sr, **params)


def scene(
    events: Sequence[tuple[str, float] | tuple[str, float, dict[str, Any]]],
    duration_s: float,
    rng: np.random.Generator,
    background: str = "pink",
    snr_db: float = 10.0,
    background_rms: float = 0.03,
    sr: int = SR,
) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Events placed at known onsets over a coloured-noise background.

    Every event is scaled so that its own RMS (over its own length) is ``snr_db`` dB above the background's
    RMS; overlapping events add. If the mix would peak above :data:`SCENE_PEAK_LIMIT`, the whole scene is
    scaled down (the SNRs are kept) and a message is logged.

    Args:
        events: ``(name, onset_s)`` or ``(name, onset_s, params)`` for each event: a key of :data:`EVENTS`, its
            onset in seconds from the start of the scene, and optional overrides of its parameters.
        duration_s: Length of the scene in seconds. Every event must end by then.
        rng: Seeded generator for the background and random events (same seed, same scene).
        background: Noise colour (``white``, ``pink``, ``brown``, ``blue``) or ``silence``.
        snr_db: Event-to-background level ratio in dB (RMS of each event over its own length against the RMS
            of the background). With ``silence``, events get the level they would have over noise.
        background_rms: RMS of the background noise (linear, full scale = 1): 0.03 is about -30 dBFS.
        sr: Sample rate in Hz.

    Returns:
        ``(samples, labels)``: mono float32 samples, and one dict per event, sorted by onset, with ``name``,
        ``onset_s`` and ``offset_s`` (seconds, sample-exact) and ``description``.

    Raises:
        ValueError: For an unknown event or colour, a non-positive duration, or an event that starts before 0
            or ends after ``duration_s``.
    """
    n = _n_samples(duration_s, sr)
    if background != "silence" and background not in NOISE_EXPONENTS:
        raise ValueError(f"unknown background {background!r}; choose silence or one of {', '.join(NOISE_EXPONENTS)}")
    if not np.isfinite(snr_db):
        raise ValueError(f"snr_db must be finite, got {snr_db!r}")
    if not background_rms > 0:
        raise ValueError(f"background_rms must be positive, got {background_rms!r}")
    if background == "silence":
        mix = np.zeros(n)
    else:
        mix = coloured_noise(background, n, rng, rms=background_rms, sr=sr).astype(np.float64)
    target_rms = background_rms * 10.0 ** (snr_db / 20.0)
    labels: list[dict[str, Any]] = []
    for i, spec in enumerate(events):
        if len(spec) not in (2, 3):
            raise ValueError(f"event {i} must be (name, onset_s) or (name, onset_s, params), got {spec!r}")
        name, onset_s = spec[0], spec[1]
        params = dict(spec[2]) if len(spec) == 3 else {}
        if name not in EVENTS:
            raise ValueError(f"event {i}: unknown sound event {name!r}; choose one of {', '.join(EVENTS)}")
        if not np.isfinite(onset_s) or onset_s < 0:
            raise ValueError(f"event {i} ({name}): onset_s must be >= 0 seconds, got {onset_s!r}")
        samples = EVENTS[name].render(rng=rng, sr=sr, **params).astype(np.float64)
        start = int(round(onset_s * sr))
        stop = start + samples.size
        if stop > n:
            raise ValueError(
                f"event {i} ({name}) at {onset_s} s lasts {samples.size / sr:.3f} s and ends at {stop / sr:.3f} s, "
                f"past the end of the {duration_s} s scene"
            )
        level = float(np.sqrt(np.mean(samples**2)))
        if level > 0:
            samples *= target_rms / level
        mix[start:stop] += samples
        labels.append(
            {"name": name, "onset_s": start / sr, "offset_s": stop / sr, "description": EVENTS[name].describe(**params)}
        )
    peak = float(np.max(np.abs(mix)))
    if peak > SCENE_PEAK_LIMIT:
        logger.info(
            "scene peak %.2f: scaled down by %.1f dB to avoid clipping", peak, 20 * np.log10(peak / SCENE_PEAK_LIMIT)
        )
        mix *= SCENE_PEAK_LIMIT / peak
    labels.sort(key=lambda d: d["onset_s"])
    return mix.astype(np.float32), labels
