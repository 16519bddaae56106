"""Musical notes, chords and melodies synthesized offline at 16 kHz mono float32, with exact ground truth.

Every instrument is a small, classic synthesis method whose pitch has been measured with ``librosa.pyin``:

- ``sine``: one sinusoid.
- ``square``: band-limited square wave, the odd harmonics ``k`` (amplitude ``1/k``) below Nyquist.
- ``sawtooth``: band-limited sawtooth, all harmonics ``k`` (amplitude ``1/k``) below Nyquist. A naive
  (aliased) sawtooth at 16 kHz is read 12-19 semitones low above MIDI 79; this one is not.
- ``organ``: additive drawbar organ, harmonics 1, 2, 3, 4, 6 and 8 only (no sub-octave or fifth drawbar,
  which would make the perceived pitch ambiguous).
- ``plucked``: Karplus-Strong string whose loop is tuned with a first-order allpass fractional delay, so its
  pitch does not drift sharp as an integer delay line does (+1 semitone at MIDI 79, an octave at 84).
- ``bell``: two-operator FM with an inharmonic 1:1.4 carrier:modulator ratio. Its spectrum has no common
  fundamental, so pitch trackers read it 12-28 semitones off: it is marked ``pitched=False``.

Loudness follows MIDI velocity through the General MIDI / DLS curve: the peak amplitude of a note is
``PEAK_AT_MAX_VELOCITY * (velocity / 127) ** 2``, i.e. ``40 * log10(velocity / 127)`` dB relative to velocity
127. Each note is first normalised to a peak of 1, so the mapping holds exactly for every instrument and the
measured level (peak or RMS) of one instrument grows strictly with velocity.

Example:
    >>> import numpy as np
    >>> x = note(69, 100, "plucked", 0.5, rng=np.random.default_rng(0))
    >>> x.dtype, x.shape
    (dtype('float32'), (8000,))
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

SR = 16000
"""Default sample rate in Hz."""
MIDI_MIN = 21
"""Lowest MIDI note accepted (A0, 27.5 Hz), the bottom of the piano."""
MIDI_MAX = 108
"""Highest MIDI note accepted (C8, 4186 Hz), the top of the piano."""
PEAK_AT_MAX_VELOCITY = 0.8
"""Peak amplitude (linear, full scale = 1) of a single note at velocity 127; leaves 1.9 dB of headroom."""
DEFAULT_SEED = 0
"""Seed of the generator used when an instrument needs randomness (``plucked``) and no ``rng`` is given."""
DYNAMICS: dict[str, int] = {"ppp": 16, "pp": 33, "p": 49, "mp": 64, "mf": 80, "f": 96, "ff": 112, "fff": 127}
"""MIDI velocity of each dynamic marking (the common notation-software convention). Through
:func:`velocity_to_db` they lie at -36.0, -23.5, -16.5, -12.0, -8.1, -4.9, -2.1 and 0.0 dB."""
CHORD_INTERVALS: dict[str, tuple[int, ...]] = {"major": (0, 4, 7), "minor": (0, 3, 7)}
"""Semitones above the root of each chord quality (root position triads)."""
SCALE_STEPS: dict[str, tuple[int, ...]] = {
    "major": (2, 2, 1, 2, 2, 2, 1),
    "minor": (2, 1, 2, 2, 1, 2, 2),
    "chromatic": (1,),
}
"""Successive semitone steps of each scale, repeated cyclically (natural minor for ``minor``)."""


@dataclass(frozen=True)
class Envelope:
    """An ADSR amplitude envelope.

    The note sounds at full length: the release takes the last ``release_s`` seconds of it (or half the note
    when the note is shorter than twice the release).
    """

    attack_s: float
    """Time, in seconds, to rise linearly from 0 to full level."""
    decay_s: float
    """Time, in seconds, to fall linearly from full level to the sustain level after the attack."""
    sustain: float
    """Sustain level, a linear fraction (0-1] of the full level."""
    release_s: float
    """Time, in seconds, of the fade to silence at the end of the note (a raised-cosine half period, smooth at
    both ends so that the fade adds no click)."""

    def render(self, n_samples: int, sr: int) -> np.ndarray:
        """The envelope as ``n_samples`` gains (float64) at ``sr`` Hz."""
        duration = n_samples / sr
        release = min(self.release_s, duration / 2.0)
        gate = duration - release
        attack = max(self.attack_s, 1.0 / sr)
        knots_t = [0.0, attack, attack + max(self.decay_s, 0.0) + 1e-12]
        knots_v = [0.0, 1.0, self.sustain]
        t = np.arange(n_samples) / sr
        env = np.interp(t, knots_t, knots_v)
        if release > 0:
            level = float(np.interp(gate, knots_t, knots_v))
            tail = t >= gate
            progress = np.clip((t[tail] - gate) / release, 0.0, 1.0)
            env[tail] = level * 0.5 * (1.0 + np.cos(np.pi * progress))
        return env


@dataclass(frozen=True)
class Instrument:
    """A synthesized instrument and what a benchmark builder needs to know about it."""

    name: str
    """Registry key (``sine``, ``plucked``, ...)."""
    family: str
    """Instrument family for classification questions (``keyboard``, ``string``, ``synth lead``, ...)."""
    description: str
    """Human description, usable in a question or in Chat meta-information."""
    pitched: bool
    """Whether the measured pitch equals the MIDI label. ``False`` for inharmonic timbres (``bell``): keep them
    out of pitch questions or label them by perceived pitch."""
    envelope: Envelope
    """Amplitude envelope applied on top of the synthesis."""
    render: Callable[[float, int, int, np.random.Generator], np.ndarray]
    """``render(f0_hz, n_samples, sr, rng)``: the raw waveform (float64) before envelope and level."""


def midi_to_hz(midi: float) -> float:
    """Frequency in Hz of a MIDI note number in 12-tone equal temperament (A4 = MIDI 69 = 440 Hz)."""
    return 440.0 * 2.0 ** ((midi - 69.0) / 12.0)


def velocity_to_db(velocity: int) -> float:
    """Level in dB, relative to velocity 127, of a MIDI velocity: ``40 * log10(velocity / 127)``.

    This is the General MIDI / DLS curve (amplitude proportional to velocity squared): 127 → 0 dB,
    100 → -4.2 dB, 64 → -11.9 dB, 32 → -23.9 dB, 1 → -84.1 dB. Strictly increasing in velocity.

    Raises:
        ValueError: For a velocity outside 1-127.
    """
    _check_velocity(velocity)
    return 40.0 * float(np.log10(velocity / 127.0))


def velocity_to_gain(velocity: int) -> float:
    """Peak amplitude (linear, full scale = 1) of a single note at ``velocity``.

    Equals ``PEAK_AT_MAX_VELOCITY * 10 ** (velocity_to_db(velocity) / 20)``.
    """
    return PEAK_AT_MAX_VELOCITY * 10.0 ** (velocity_to_db(velocity) / 20.0)


def _check_velocity(velocity: int) -> None:
    if isinstance(velocity, bool) or not isinstance(velocity, int | np.integer) or not 1 <= velocity <= 127:
        raise ValueError(f"velocity must be an integer 1-127, got {velocity!r}")


def _check_midi(midi: int, sr: int) -> None:
    if isinstance(midi, bool) or not isinstance(midi, int | np.integer) or not MIDI_MIN <= midi <= MIDI_MAX:
        raise ValueError(f"midi must be an integer {MIDI_MIN}-{MIDI_MAX}, got {midi!r}")
    if midi_to_hz(midi) >= sr / 4.0:
        raise ValueError(f"MIDI {midi} ({midi_to_hz(midi):.0f} Hz) is too high for a sample rate of {sr} Hz")


def _time(n_samples: int, sr: int) -> np.ndarray:
    return np.arange(n_samples) / sr


def _additive(f0: float, n_samples: int, sr: int, harmonics: Sequence[tuple[int, float]]) -> np.ndarray:
    """Sum of sine partials ``(k, amplitude)`` at ``k * f0``, skipping those at or above Nyquist."""
    phase = 2.0 * np.pi * f0 * _time(n_samples, sr)
    out = np.zeros(n_samples)
    for k, amp in harmonics:
        if k * f0 < sr / 2.0:
            out += amp * np.sin(k * phase)
    return out


def _render_sine(f0: float, n_samples: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    return np.sin(2.0 * np.pi * f0 * _time(n_samples, sr))


def _render_square(f0: float, n_samples: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    top = int((sr / 2.0) // f0)
    return _additive(f0, n_samples, sr, [(k, 1.0 / k) for k in range(1, top + 1, 2)])


def _render_sawtooth(f0: float, n_samples: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    top = int((sr / 2.0) // f0)
    return _additive(f0, n_samples, sr, [(k, 1.0 / k) for k in range(1, top + 1)])


ORGAN_HARMONICS: tuple[tuple[int, float], ...] = ((1, 1.0), (2, 0.7), (3, 0.5), (4, 0.4), (6, 0.25), (8, 0.2))
"""``(harmonic number, amplitude)`` of the organ: drawbars 8', 4', 2 2/3', 2', 1 1/3' and 1'."""


def _render_organ(f0: float, n_samples: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    return _additive(f0, n_samples, sr, ORGAN_HARMONICS)


PLUCK_T60_S = 1.5
"""Time, in seconds, for the fundamental of a plucked string to decay by 60 dB."""
PLUCK_POSITION = 0.2
"""Where the string is plucked, as a fraction of its length: the initial shape is a triangle peaking there."""
PLUCK_NOISE = 0.3
"""Share of seeded uniform noise in the initial shape (0 = the same pluck every time, 1 = classic
Karplus-Strong, whose random spectrum can leave the fundamental weak)."""


def _render_plucked(f0: float, n_samples: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    """Karplus-Strong string with an exactly tuned loop.

    The loop is ``z**-N`` · a linear-phase loss filter ``[a, 1 - 2a, a]`` (delay exactly 1 sample) · a
    first-order allpass ``(C + z**-1) / (1 + C z**-1)`` · a gain ``g``. ``N`` is an integer and the allpass
    supplies the fractional rest ``d`` of the period ``sr / f0 = N + 1 + d``; ``C`` is chosen so that the
    allpass phase delay is exactly ``d`` at ``f0`` (not just at DC), so the fundamental is in tune at any
    pitch. The loop starts from a triangular pluck shape plus some seeded noise (:data:`PLUCK_POSITION`,
    :data:`PLUCK_NOISE`), so the fundamental is always strong. ``a`` and ``g`` give the fundamental a decay of
    :data:`PLUCK_T60_S`, with higher partials decaying faster; ``g < 1`` keeps the loop stable. The whole loop
    is one IIR filter run by :func:`scipy.signal.lfilter`.
    """
    period = sr / f0
    n_delay = int(np.floor(period - 1.5))
    frac = period - 1.0 - n_delay  # in [0.5, 1.5): where the first-order allpass is well behaved
    w0 = 2.0 * np.pi * f0 / sr
    coef = np.sin((1.0 - frac) * w0 / 2.0) / np.sin((1.0 + frac) * w0 / 2.0)
    loop_gain = 10.0 ** (-3.0 / (f0 * PLUCK_T60_S))  # per period, at f0
    a = min(0.25, 0.5 * (1.0 - loop_gain) / (2.0 * (1.0 - np.cos(w0))))
    g = loop_gain / (1.0 - 2.0 * a + 2.0 * a * np.cos(w0))
    # Feedback polynomial g * [a, 1 - 2a, a] * [C, 1], delayed by n_delay samples.
    q = g * np.convolve([a, 1.0 - 2.0 * a, a], [coef, 1.0])
    denom = np.zeros(n_delay + q.size)
    denom[0], denom[1] = 1.0, coef
    denom[n_delay:] -= q
    length = int(round(period))
    position = max(1, int(round(PLUCK_POSITION * length)))
    shape = np.concatenate([np.linspace(0.0, 1.0, position, endpoint=False), np.linspace(1.0, 0.0, length - position)])
    burst = (1.0 - PLUCK_NOISE) * shape + PLUCK_NOISE * rng.uniform(-1.0, 1.0, length)
    burst -= burst.mean()
    excitation = np.zeros(n_samples)
    excitation[: min(burst.size, n_samples)] = burst[:n_samples]
    from scipy.signal import lfilter  # here: a second to import, not needed to read a cached dataset

    return lfilter([1.0, coef], denom, excitation)


BELL_RATIO = 1.4
"""Modulator-to-carrier frequency ratio of the FM bell (inharmonic)."""
BELL_INDEX = 8.0
"""Initial FM modulation index of the bell (lowered at high pitch so sidebands stay below Nyquist)."""
BELL_T60_S = 2.0
"""Time, in seconds, for the bell's amplitude to decay by 60 dB; the index decays twice as fast."""


def _render_bell(f0: float, n_samples: int, sr: int, rng: np.random.Generator) -> np.ndarray:
    t = _time(n_samples, sr)
    fm = BELL_RATIO * f0
    index0 = float(np.clip((sr / 2.0 - f0) / fm - 2.0, 0.5, BELL_INDEX))
    tau = BELL_T60_S / np.log(1000.0)
    index = index0 * np.exp(-2.0 * t / tau)
    return np.exp(-t / tau) * np.sin(2.0 * np.pi * f0 * t + index * np.sin(2.0 * np.pi * fm * t))


INSTRUMENTS: dict[str, Instrument] = {
    i.name: i
    for i in (
        Instrument("sine", "pure tone", "a pure sine tone", True, Envelope(0.01, 0.1, 0.8, 0.05), _render_sine),
        Instrument(
            "square", "synth lead", "a hollow square-wave synth lead", True, Envelope(0.005, 0.05, 0.7, 0.03),
            _render_square,
        ),
        Instrument(
            "sawtooth", "synth lead", "a bright sawtooth synth lead", True, Envelope(0.005, 0.05, 0.7, 0.03),
            _render_sawtooth,
        ),
        Instrument("organ", "keyboard", "a drawbar organ", True, Envelope(0.015, 0.0, 1.0, 0.04), _render_organ),
        Instrument(
            "plucked", "string", "a plucked string, like a guitar or harp", True, Envelope(0.001, 0.0, 1.0, 0.02),
            _render_plucked,
        ),
        Instrument("bell", "bell", "a struck metal bell", False, Envelope(0.002, 0.0, 1.0, 0.05), _render_bell),
    )
}  # fmt: skip
"""Instrument registry: name → :class:`Instrument` (family, description, ``pitched``, envelope, synthesis)."""


def pitched_instruments() -> list[str]:
    """Names of the instruments whose measured pitch equals their MIDI label (fit for pitch questions)."""
    return [name for name, inst in INSTRUMENTS.items() if inst.pitched]


def _check_duration(duration_s: float, sr: int) -> int:
    if not np.isfinite(duration_s) or duration_s <= 0:
        raise ValueError(f"duration_s must be a positive number of seconds, got {duration_s!r}")
    n_samples = int(round(duration_s * sr))
    if n_samples < 1:
        raise ValueError(f"duration_s={duration_s} is shorter than one sample at {sr} Hz")
    return n_samples


def _instrument(name: str) -> Instrument:
    if name not in INSTRUMENTS:
        raise ValueError(f"unknown instrument {name!r}; choose one of {', '.join(INSTRUMENTS)}")
    return INSTRUMENTS[name]


def _note_samples(
    midi: int, velocity: int, instrument: Instrument, n_samples: int, sr: int, rng: np.random.Generator
) -> np.ndarray:
    raw = instrument.render(midi_to_hz(midi), n_samples, sr, rng) * instrument.envelope.render(n_samples, sr)
    peak = float(np.max(np.abs(raw)))
    if peak > 0:
        raw *= velocity_to_gain(velocity) / peak
    return raw


def note(
    midi: int,
    velocity: int,
    instrument: str,
    duration_s: float,
    sr: int = SR,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """One note.

    Args:
        midi: MIDI note number, 21-108 (69 = A4 = 440 Hz); its frequency must stay below ``sr / 4``.
        velocity: MIDI velocity 1-127; the note's peak amplitude is :func:`velocity_to_gain` of it
            (``0.8 * (velocity / 127) ** 2``, i.e. ``40 * log10(velocity / 127)`` dB re velocity 127).
        instrument: A key of :data:`INSTRUMENTS`.
        duration_s: Length of the note in seconds, release included (the returned array has
            ``round(duration_s * sr)`` samples).
        sr: Sample rate in Hz.
        rng: Generator for instruments that use randomness (``plucked``'s excitation); ``None`` uses
            ``np.random.default_rng(DEFAULT_SEED)``. Same generator state, same samples.

    Returns:
        Mono float32 samples.

    Raises:
        ValueError: For an unknown instrument or an out-of-range MIDI note, velocity or duration.
    """
    inst = _instrument(instrument)
    _check_midi(midi, sr)
    _check_velocity(velocity)
    n_samples = _check_duration(duration_s, sr)
    rng = np.random.default_rng(DEFAULT_SEED) if rng is None else rng
    return _note_samples(midi, velocity, inst, n_samples, sr, rng).astype(np.float32)


def chord_midis(root_midi: int, quality: str) -> list[int]:
    """MIDI notes of a root-position triad.

    Args:
        root_midi: MIDI note of the root.
        quality: ``major`` (root, major third +4, fifth +7) or ``minor`` (root, minor third +3, fifth +7).

    Raises:
        ValueError: For an unknown quality.
    """
    if quality not in CHORD_INTERVALS:
        raise ValueError(f"unknown chord quality {quality!r}; choose one of {', '.join(CHORD_INTERVALS)}")
    return [root_midi + step for step in CHORD_INTERVALS[quality]]


def chord(
    root_midi: int,
    quality: str,
    instrument: str,
    duration_s: float,
    velocity: int = 80,
    sr: int = SR,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
    """A triad, its notes struck together.

    Args:
        root_midi: MIDI note of the root (the fifth, ``root_midi + 7``, must be in range too).
        quality: ``major`` or ``minor`` (see :data:`CHORD_INTERVALS`).
        instrument: A key of :data:`INSTRUMENTS`.
        duration_s: Length in seconds, release included.
        velocity: MIDI velocity 1-127 of every note. Each note is scaled by ``1 / 3`` so that the chord's peak
            never exceeds a single note's peak (:func:`velocity_to_gain`); level still grows with velocity.
        sr: Sample rate in Hz.
        rng: Generator for random instruments; ``None`` uses ``np.random.default_rng(DEFAULT_SEED)``.

    Returns:
        Mono float32 samples.

    Raises:
        ValueError: For an unknown quality or instrument, or out-of-range notes, velocity or duration.
    """
    midis = chord_midis(root_midi, quality)
    inst = _instrument(instrument)
    for m in midis:
        _check_midi(m, sr)
    _check_velocity(velocity)
    n_samples = _check_duration(duration_s, sr)
    rng = np.random.default_rng(DEFAULT_SEED) if rng is None else rng
    out = sum(_note_samples(m, velocity, inst, n_samples, sr, rng) for m in midis) / len(midis)
    return np.asarray(out, dtype=np.float32)


def note_duration_s(tempo_bpm: float, note_value: float) -> float:
    """Length in seconds of a note value at a tempo.

    Args:
        tempo_bpm: Tempo in quarter notes (beats) per minute.
        note_value: Note value as a fraction of a whole note (0.25 = quarter note = one beat, 0.125 = eighth).
    """
    if not tempo_bpm > 0 or not note_value > 0:
        raise ValueError(f"tempo_bpm and note_value must be positive, got {tempo_bpm!r} and {note_value!r}")
    return 4.0 * note_value * 60.0 / tempo_bpm


def melody(
    midis: Sequence[int],
    tempo_bpm: float = 120.0,
    instrument: str = "plucked",
    velocity: int = 80,
    note_value: float = 0.25,
    sr: int = SR,
    rng: np.random.Generator | None = None,
) -> tuple[np.ndarray, list[float]]:
    """A monophonic melody of equal note values, and the exact onset of every note.

    Note ``i`` starts at sample ``round(i * d * sr)`` where ``d = note_duration_s(tempo_bpm, note_value)`` and
    lasts until the next onset (its release included), so notes do not overlap. The clip ends with the last
    note.

    Args:
        midis: MIDI notes, in order (at least one).
        tempo_bpm: Tempo in quarter notes per minute.
        instrument: A key of :data:`INSTRUMENTS`.
        velocity: MIDI velocity 1-127 of every note.
        note_value: Note value of every note as a fraction of a whole note (0.25 = quarter note).
        sr: Sample rate in Hz.
        rng: Generator for random instruments, drawn from note after note; ``None`` uses
            ``np.random.default_rng(DEFAULT_SEED)``.

    Returns:
        ``(samples, onsets_s)``: mono float32 samples and the onset of each note in seconds (sample-exact).

    Raises:
        ValueError: For an empty melody, an unknown instrument, or out-of-range values.
    """
    if len(midis) == 0:
        raise ValueError("a melody needs at least one note")
    inst = _instrument(instrument)
    for m in midis:
        _check_midi(m, sr)
    _check_velocity(velocity)
    step = note_duration_s(tempo_bpm, note_value)
    bounds = [int(round(i * step * sr)) for i in range(len(midis) + 1)]
    if min(np.diff(bounds)) < 1:
        raise ValueError(f"notes of {step * 1000:.3f} ms are shorter than one sample at {sr} Hz")
    rng = np.random.default_rng(DEFAULT_SEED) if rng is None else rng
    out = np.zeros(bounds[-1])
    for m, start, stop in zip(midis, bounds[:-1], bounds[1:], strict=True):
        out[start:stop] = _note_samples(m, velocity, inst, stop - start, sr, rng)
    return out.astype(np.float32), [b / sr for b in bounds[:-1]]


def scale_midis(start_midi: int, n_notes: int, direction: str = "ascending", scale: str = "major") -> list[int]:
    """``n_notes`` successive notes of a scale, going up or down from ``start_midi``.

    Args:
        start_midi: MIDI note of the first note, the tonic of the scale in either direction.
        n_notes: Number of notes (at least 2, so there is a direction).
        direction: ``ascending`` or ``descending``.
        scale: A key of :data:`SCALE_STEPS` (``major``, ``minor``, ``chromatic``).

    Returns:
        The MIDI notes, strictly increasing (ascending) or strictly decreasing (descending).

    Raises:
        ValueError: For a bad direction, scale or count.
    """
    if direction not in ("ascending", "descending"):
        raise ValueError(f"direction must be 'ascending' or 'descending', got {direction!r}")
    if scale not in SCALE_STEPS:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALE_STEPS)}")
    if n_notes < 2:
        raise ValueError(f"n_notes must be at least 2, got {n_notes}")
    steps = SCALE_STEPS[scale]
    if direction == "descending":
        steps = tuple(reversed(steps))
    sign = 1 if direction == "ascending" else -1
    out = [start_midi]
    for i in range(n_notes - 1):
        out.append(out[-1] + sign * steps[i % len(steps)])
    return out


def ascending_melody(start_midi: int, n_notes: int, scale: str = "major") -> list[int]:
    """``n_notes`` notes going up the scale from ``start_midi`` (see :func:`scale_midis`)."""
    return scale_midis(start_midi, n_notes, "ascending", scale)


def descending_melody(start_midi: int, n_notes: int, scale: str = "major") -> list[int]:
    """``n_notes`` notes going down the scale from ``start_midi`` (see :func:`scale_midis`)."""
    return scale_midis(start_midi, n_notes, "descending", scale)


def melody_direction(midis: Sequence[int]) -> str:
    """The contour of a note sequence: ``ascending``, ``descending`` or ``mixed``.

    ``mixed`` when a step is zero, the steps change sign, or there are fewer than two notes.
    """
    diffs = np.diff(np.asarray(midis))
    if diffs.size and np.all(diffs > 0):
        return "ascending"
    if diffs.size and np.all(diffs < 0):
        return "descending"
    return "mixed"
