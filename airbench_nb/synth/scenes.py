"""Synthesized acoustic scenes: a background bed shaped to the place plus its typical sound events at known times.

SSEU-Bench (Yin & Choi, ICASSP 2026) mixes speech over real recordings of scenes (DESED, MAESTRO-Real) that carry
labelled events. Offline, the kit synthesizes the same structure:

Bed
    A continuous background shaped to the scene (:data:`SCENES`): low rumble with passing-car swells for a street,
    leaves and wind for a park, babble (several syllable-rate modulated speech-band noise streams) for a
    restaurant, rumble and mains hum for a train station, fan noise and fluorescent hum for an office, surf for a
    beach. It is set to :data:`BED_RMS` (before any clipping protection, see :data:`PEAK_LIMIT`) and faded in
    and out over :data:`FADE_S`.

Events
    Short sounds from :data:`EVENT_CLASSES` (12 classes: dog bark, car horn, bird song, footsteps, door knock,
    church bell, phone ring, cutlery clink, train whistle, siren, applause, keyboard typing), rendered by
    functions of their physical parameters; ``door knock`` and ``siren`` reuse :mod:`airbench_nb.synth.sounds`.
    Every event starts within :data:`ATTACK_S` of its labelled onset, so an energy detector finds it there. A
    scene draws its events from its own typical classes, each at most once per clip, without overlap (at least
    :data:`GAP_S` apart), and sets each one's RMS over its own length ``level_db`` dB above the bed's RMS.

Ground truth
    :class:`SceneAudio` holds the bed, the isolated event track and their sum (the background), with one
    :class:`EventLabel` per event (class, onset, offset: sample-exact, offset = onset + the event's length). The
    same seed gives the same samples.

Example:
    >>> import numpy as np
    >>> audio = make_scene("park", 3.0, np.random.default_rng(0))
    >>> audio.scene, audio.background.size, len(audio.events) >= 1
    ('park', 48000, True)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from airbench_nb.synth.noise import coloured_noise
from airbench_nb.synth.sounds import knock, siren

logger = logging.getLogger(__name__)

SR = 16000
"""Sample rate in Hz."""
BED_RMS = 0.03
"""RMS of a bed (linear, full scale = 1; about -30 dBFS)."""
FADE_S = 0.01
"""Raised-cosine fade at both ends of a bed (seconds), so that a mix starts and ends without a click."""
GAP_S = 0.15
"""Least silence between two events of a clip (seconds), so that each onset is measurable on its own."""
EDGE_S = 0.05
"""Least time between an event and either end of the clip (seconds)."""
ATTACK_S = 0.02
"""Every event reaches at least a tenth of its peak within this many seconds of its onset."""
PEAK = 0.8
"""Peak amplitude of an event rendered on its own (before it is levelled against the bed)."""
PEAK_LIMIT = 0.99
"""A background (bed plus events, or either alone) that would peak above this is scaled down as a whole: its levels
relative to one another, hence its event-to-bed ratios, are kept."""


def _filtered(x: np.ndarray, kind: str, freq: float | tuple[float, float], order: int = 2) -> np.ndarray:
    """``x`` through a Butterworth filter (``lowpass``, ``highpass`` or ``bandpass``) at ``freq`` Hz."""
    from scipy.signal import butter, sosfilt  # here: scipy.signal takes a second to import, and reading a cached
    # dataset imports the builders without synthesizing anything

    return sosfilt(butter(order, freq, kind, fs=SR, output="sos"), x)


def _peak(x: np.ndarray, peak: float = PEAK) -> np.ndarray:
    level = float(np.max(np.abs(x)))
    return (x * (peak / level) if level > 0 else x).astype(np.float32)


def _env(n: int, attack_s: float, decay_s: float) -> np.ndarray:
    """A linear attack of ``attack_s`` then an exponential decay by 60 dB over ``decay_s`` (``n`` samples)."""
    t = np.arange(n) / SR
    attack = np.clip(t / max(attack_s, 1.0 / SR), 0.0, 1.0)
    return attack * np.exp(-np.log(1000.0) * np.maximum(t - attack_s, 0.0) / decay_s)


def _gate(t: np.ndarray, dur: float, attack_s: float, release_s: float) -> np.ndarray:
    """A held sound's envelope over ``t``: linear rise over ``attack_s``, linear fall over the last ``release_s``."""
    return np.minimum(1.0, np.minimum(t / attack_s, (dur - t) / release_s))


def _place(length_s: float, parts: Sequence[tuple[float, np.ndarray]]) -> np.ndarray:
    """Parts (start in seconds, samples) added into ``length_s`` seconds of silence."""
    out = np.zeros(int(round(length_s * SR)))
    for start_s, part in parts:
        start = int(round(start_s * SR))
        stop = min(out.size, start + part.size)
        out[start:stop] += part[: stop - start]
    return out


# --- events --------------------------------------------------------------------------------------------------


def dog_bark(rng: np.random.Generator) -> np.ndarray:
    """Two barks: harmonic bursts with a falling pitch (about 450 to 300 Hz) and a breathy noise part."""
    barks = []
    for _ in range(2):
        dur = float(rng.uniform(0.12, 0.18))
        n = int(dur * SR)
        t = np.arange(n) / SR
        f0 = float(rng.uniform(380, 520)) * (1 - 0.35 * t / dur)
        phase = 2 * np.pi * np.cumsum(f0) / SR
        tone = sum(np.sin(k * phase) / k for k in range(1, 7))
        breath = _filtered(rng.standard_normal(n), "bandpass", (500.0, 3000.0))
        barks.append((tone + 0.4 * breath / (np.std(breath) + 1e-12)) * _env(n, 0.005, dur))
    gap = float(rng.uniform(0.12, 0.2))
    return _peak(
        _place(barks[0].size / SR + gap + barks[1].size / SR, [(0.0, barks[0]), (barks[0].size / SR + gap, barks[1])])
    )


def car_horn(rng: np.random.Generator) -> np.ndarray:
    """A two-tone horn (about 400 and 500 Hz, rich in harmonics), held for 0.4-0.7 s."""
    dur = float(rng.uniform(0.4, 0.7))
    t = np.arange(int(dur * SR)) / SR
    base = float(rng.uniform(380, 420))
    x = sum(np.sign(np.sin(2 * np.pi * f * t)) * 0.5 for f in (base, base * 1.25))
    x = _filtered(x, "lowpass", 3500.0)
    env = _gate(t, dur, 0.005, 0.02)
    return _peak(x * env)


def bird_song(rng: np.random.Generator) -> np.ndarray:
    """Four to six chirps: fast downward sweeps between about 5 and 2.5 kHz, 50-90 ms each."""
    parts, at = [], 0.0
    for _ in range(int(rng.integers(4, 7))):
        dur = float(rng.uniform(0.05, 0.09))
        n = int(dur * SR)
        t = np.arange(n) / SR
        high, low = float(rng.uniform(4000, 5200)), float(rng.uniform(2400, 3200))
        freq = high + (low - high) * t / dur
        chirp = np.sin(2 * np.pi * np.cumsum(freq) / SR) * np.sin(np.pi * np.minimum(1.0, t / dur)) ** 0.3
        parts.append((at, chirp))
        at += dur + float(rng.uniform(0.04, 0.08))
    return _peak(_place(at, parts))


def footsteps(rng: np.random.Generator) -> np.ndarray:
    """Three or four steps about half a second apart: a low thud with a scuff of noise."""
    parts, at = [], 0.0
    count = int(rng.integers(3, 5))
    for k in range(count):
        thud = knock(0.12, float(rng.uniform(70, 110)), rng, SR).astype(np.float64)
        n = thud.size
        scuff = _filtered(rng.standard_normal(n), "bandpass", (800.0, 4000.0)) * _env(n, 0.002, 0.06)
        parts.append((at, thud + 0.06 * scuff / (np.std(scuff) + 1e-12)))
        if k < count - 1:
            at += float(rng.uniform(0.4, 0.55))
    return _peak(_place(at + 0.12, parts))


def door_knock(rng: np.random.Generator) -> np.ndarray:
    """Three knocks on a wooden door, 0.18-0.25 s apart (:func:`airbench_nb.synth.sounds.knock`)."""
    gap = float(rng.uniform(0.18, 0.25))
    freq = float(rng.uniform(160, 220))
    parts = [(k * gap, knock(0.15, freq, rng, SR).astype(np.float64)) for k in range(3)]
    return _peak(_place(2 * gap + 0.15, parts))


BELL_PARTIALS: tuple[tuple[float, float], ...] = (
    (0.5, 0.6),
    (1.0, 1.0),
    (1.2, 0.6),
    (1.5, 0.4),
    (2.0, 0.5),
    (2.6, 0.25),
)
"""``(frequency ratio, amplitude)`` of a church bell's partials (hum, prime, minor third, fifth, octave, ...)."""


def church_bell(rng: np.random.Generator) -> np.ndarray:
    """One stroke of a bell: inharmonic partials over a 350-600 Hz strike note, ringing for 1.2-1.5 s."""
    dur = float(rng.uniform(1.2, 1.5))
    n = int(dur * SR)
    t = np.arange(n) / SR
    strike = float(rng.uniform(350, 600))
    x = sum(
        a * np.sin(2 * np.pi * r * strike * t) * np.exp(-np.log(1000.0) * t / (dur / r**0.3)) for r, a in BELL_PARTIALS
    )
    return _peak(x * np.minimum(1.0, t / 0.003))


def phone_ring(rng: np.random.Generator) -> np.ndarray:
    """A telephone ring: 440 + 480 Hz tones warbled at 20 Hz, one burst of 0.8-1.1 s."""
    dur = float(rng.uniform(0.8, 1.1))
    t = np.arange(int(dur * SR)) / SR
    x = (np.sin(2 * np.pi * 440 * t) + np.sin(2 * np.pi * 480 * t)) * (0.6 + 0.4 * np.sign(np.sin(2 * np.pi * 20 * t)))
    env = _gate(t, dur, 0.005, 0.01)
    return _peak(x * env)


def cutlery_clink(rng: np.random.Generator) -> np.ndarray:
    """Two to four clinks of metal on china: short inharmonic rings between 3 and 7 kHz."""
    parts, at = [], 0.0
    for _ in range(int(rng.integers(2, 5))):
        dur = float(rng.uniform(0.08, 0.15))
        n = int(dur * SR)
        t = np.arange(n) / SR
        base = float(rng.uniform(3000, 4200))
        ring = sum(a * np.sin(2 * np.pi * base * r * t) for r, a in ((1.0, 1.0), (1.37, 0.6), (1.71, 0.4)))
        parts.append((at, ring * _env(n, 0.001, dur)))
        at += dur + float(rng.uniform(0.08, 0.2))
    return _peak(_place(at, parts))


def train_whistle(rng: np.random.Generator) -> np.ndarray:
    """A steam whistle: a three-pipe chord (about 550, 660 and 825 Hz) with breath noise, 0.8-1.2 s."""
    dur = float(rng.uniform(0.8, 1.2))
    n = int(dur * SR)
    t = np.arange(n) / SR
    base = float(rng.uniform(520, 580))
    chord = sum(np.sin(2 * np.pi * base * r * t) for r in (1.0, 1.2, 1.5))
    breath = _filtered(rng.standard_normal(n), "bandpass", (400.0, 2000.0))
    x = chord + 0.3 * breath / (np.std(breath) + 1e-12)
    env = _gate(t, dur, 0.015, 0.05)
    return _peak(x * env)


def siren_event(rng: np.random.Generator) -> np.ndarray:
    """An emergency siren wailing for 1.0-1.4 s (:func:`airbench_nb.synth.sounds.siren`)."""
    dur = float(rng.uniform(1.0, 1.4))
    return _peak(siren(dur, float(rng.uniform(550, 700)), float(rng.uniform(1100, 1400)), 1.5, SR).astype(np.float64))


def applause(rng: np.random.Generator) -> np.ndarray:
    """Applause: hundreds of claps (short bright noise bursts) at random times over 0.9-1.3 s."""
    dur = float(rng.uniform(0.9, 1.3))
    n = int(dur * SR)
    x = np.zeros(n)
    clap_n = int(0.012 * SR)
    clap_env = _env(clap_n, 0.0005, 0.012)
    starts = np.concatenate([[0], rng.integers(0, n - clap_n, int(250 * dur))])
    for start in starts:
        x[start : start + clap_n] += rng.standard_normal(clap_n) * clap_env * float(rng.uniform(0.3, 1.0))
    x = _filtered(x, "bandpass", (600.0, 6000.0))
    t = np.arange(n) / SR
    return _peak(x * np.minimum(1.0, (dur - t) / 0.1))


def keyboard_typing(rng: np.random.Generator) -> np.ndarray:
    """Typing: 6-10 key clicks (plastic ticks of 1.5-3 kHz) at irregular intervals of 80-200 ms."""
    parts, at = [], 0.0
    for _ in range(int(rng.integers(6, 11))):
        n = int(0.03 * SR)
        t = np.arange(n) / SR
        tick = np.sin(2 * np.pi * float(rng.uniform(1500, 3000)) * t) + 0.5 * rng.standard_normal(n)
        parts.append((at, tick * _env(n, 0.0005, 0.03) * float(rng.uniform(0.6, 1.0))))
        at += float(rng.uniform(0.08, 0.2))
    return _peak(_place(at + 0.03, parts))


@dataclass(frozen=True)
class EventClass:
    """One sound event class that scenes carry."""

    name: str
    """Class name as items list it (``dog bark``)."""
    description: str
    """What it sounds like, in words."""
    make: Callable[[np.random.Generator], np.ndarray]
    """Renders one event (16 kHz mono float32, peak :data:`PEAK`) from a seeded generator."""


EVENT_CLASSES: dict[str, EventClass] = {
    e.name: e
    for e in (
        EventClass("dog bark", "a dog barking twice", dog_bark),
        EventClass("car horn", "a car horn honking", car_horn),
        EventClass("bird song", "a bird chirping", bird_song),
        EventClass("footsteps", "footsteps walking past", footsteps),
        EventClass("door knock", "someone knocking on a door", door_knock),
        EventClass("church bell", "a church bell ringing once", church_bell),
        EventClass("phone ring", "a telephone ringing", phone_ring),
        EventClass("cutlery clink", "cutlery clinking on plates", cutlery_clink),
        EventClass("train whistle", "a train whistle blowing", train_whistle),
        EventClass("siren", "an emergency siren wailing", siren_event),
        EventClass("applause", "people applauding", applause),
        EventClass("keyboard typing", "someone typing on a keyboard", keyboard_typing),
    )
}
"""The event classes, by name (the class list every events item offers)."""


# --- beds ----------------------------------------------------------------------------------------------------


def _slow_am(n: int, rng: np.random.Generator, rate_hz: tuple[float, float], depth: float) -> np.ndarray:
    """A smooth random amplitude envelope between ``1 - depth`` and 1, varying at ``rate_hz`` (low, high)."""
    t = np.arange(n) / SR
    rate = float(rng.uniform(*rate_hz))
    phase = float(rng.uniform(0, 2 * np.pi))
    return 1.0 - depth * 0.5 * (1.0 + np.sin(2 * np.pi * rate * t + phase))


def _hum(n: int, mains_hz: float, harmonics: Sequence[float]) -> np.ndarray:
    t = np.arange(n) / SR
    return sum(a * np.sin(2 * np.pi * mains_hz * (k + 1) * t) for k, a in enumerate(harmonics))


def _norm(x: np.ndarray) -> np.ndarray:
    return x / (np.sqrt(np.mean(x**2)) + 1e-12)


def street_bed(n: int, rng: np.random.Generator) -> np.ndarray:
    """Street traffic: low engine rumble (brown noise under 600 Hz) swelling as cars pass, with tyre hiss."""
    rumble = _filtered(coloured_noise("brown", n, rng, sr=SR), "lowpass", 600.0)
    hiss = _filtered(coloured_noise("pink", n, rng, sr=SR), "bandpass", (1000.0, 5000.0))
    swell = _slow_am(n, rng, (0.2, 0.4), 0.7)
    return (_norm(rumble) + 0.4 * _norm(hiss)) * swell


def park_bed(n: int, rng: np.random.Generator) -> np.ndarray:
    """Park: rustling leaves and gusts of wind (high-passed pink noise, slowly modulated)."""
    leaves = _filtered(coloured_noise("pink", n, rng, sr=SR), "highpass", 800.0)
    wind = _filtered(coloured_noise("brown", n, rng, sr=SR), "lowpass", 300.0)
    return _norm(leaves) * _slow_am(n, rng, (0.15, 0.35), 0.6) + 0.5 * _norm(wind)


def babble_bed(n: int, rng: np.random.Generator, voices: int = 6) -> np.ndarray:
    """Restaurant: babble of several talkers (speech-band noise, each stream gated at a syllable rate of 3-6 Hz)."""
    t = np.arange(n) / SR
    out = np.zeros(n)
    for _ in range(voices):
        band = _filtered(coloured_noise("pink", n, rng, sr=SR), "bandpass", (float(rng.uniform(200, 400)), 3500.0))
        syllables = np.clip(np.sin(2 * np.pi * float(rng.uniform(3.0, 6.0)) * t + float(rng.uniform(0, 6.3))), 0, None)
        out += _norm(band) * (0.2 + syllables) * float(rng.uniform(0.5, 1.0))
    return out


def station_bed(n: int, rng: np.random.Generator) -> np.ndarray:
    """Train station: a large hall's rumble, distant babble and a 50 Hz mains hum."""
    rumble = _filtered(coloured_noise("brown", n, rng, sr=SR), "lowpass", 400.0)
    crowd = babble_bed(n, rng, voices=4)
    return _norm(rumble) + 0.5 * _norm(crowd) + 0.3 * _norm(_hum(n, 50.0, (1.0, 0.5, 0.3)))


def office_bed(n: int, rng: np.random.Generator) -> np.ndarray:
    """Office: air-conditioning fan (low-passed white noise) and the hum of fluorescent lights (100 Hz and up)."""
    fan = _filtered(coloured_noise("white", n, rng, sr=SR), "lowpass", 1200.0)
    return _norm(fan) + 0.5 * _norm(_hum(n, 100.0, (1.0, 0.4, 0.2, 0.1)))


def beach_bed(n: int, rng: np.random.Generator) -> np.ndarray:
    """Beach: surf, broadband noise rising and falling with waves every 4-7 seconds."""
    surf = _filtered(coloured_noise("pink", n, rng, sr=SR), "highpass", 150.0)
    return _norm(surf) * _slow_am(n, rng, (1 / 7, 1 / 4), 0.8)


@dataclass(frozen=True)
class SceneClass:
    """One acoustic scene: its bed and the events heard there."""

    name: str
    """Class name as items list it (``street traffic``)."""
    description: str
    """What the bed sounds like, in words."""
    bed: Callable[[int, np.random.Generator], np.ndarray]
    """Renders ``n`` samples of the bed (any level; :func:`make_scene` sets it to :data:`BED_RMS`)."""
    events: tuple[str, ...]
    """Its typical events (names of :data:`EVENT_CLASSES`), from which a clip's events are drawn."""


SCENES: dict[str, SceneClass] = {
    s.name: s
    for s in (
        SceneClass(
            "street traffic",
            "engine rumble and passing cars",
            street_bed,
            ("car horn", "siren", "footsteps", "dog bark"),
        ),
        SceneClass("park", "rustling leaves and wind", park_bed, ("bird song", "dog bark", "footsteps", "church bell")),
        SceneClass(
            "restaurant",
            "the babble of many diners",
            babble_bed,
            ("cutlery clink", "phone ring", "applause", "door knock"),
        ),
        SceneClass(
            "train station",
            "a hall's rumble, distant voices and mains hum",
            station_bed,
            ("train whistle", "footsteps", "phone ring", "siren"),
        ),
        SceneClass(
            "office",
            "an air-conditioning fan and humming lights",
            office_bed,
            ("keyboard typing", "phone ring", "door knock", "footsteps"),
        ),
        SceneClass("beach", "surf rising and falling", beach_bed, ("bird song", "dog bark", "applause", "church bell")),
    )
}
"""The scene classes, by name (the class list every scene item offers)."""


@dataclass(frozen=True)
class EventLabel:
    """Ground truth of one event in a clip."""

    event: str
    """Class name (a key of :data:`EVENT_CLASSES`)."""
    onset_s: float
    """Start in seconds from the start of the clip (a whole sample)."""
    offset_s: float
    """End in seconds (onset plus the event's length in samples)."""


@dataclass(frozen=True)
class SceneAudio:
    """A synthesized scene and its ground truth."""

    scene: str
    """Scene class name (a key of :data:`SCENES`)."""
    bed: np.ndarray
    """The bed alone (float32, RMS :data:`BED_RMS` times ``scale``)."""
    events_track: np.ndarray
    """The events alone, at their levels and times (float32, zero between events)."""
    events: tuple[EventLabel, ...]
    """One label per event, sorted by onset."""
    levels_db: tuple[float, ...]
    """RMS of each event over its own length, in dB above the bed's RMS (in ``events``' order)."""
    scale: float = 1.0
    """Factor bed and events were multiplied by to keep the background under :data:`PEAK_LIMIT` (1.0: none)."""
    sr: int = SR
    """Sample rate in Hz."""

    @property
    def background(self) -> np.ndarray:
        """Bed plus events: the whole background speech is mixed over."""
        return (self.bed + self.events_track).astype(np.float32)

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return self.bed.size / self.sr

    def labels(self) -> list[dict[str, float | str]]:
        """The events as JSON-able dicts ``{"event", "onset_s", "offset_s"}``."""
        return [{"event": e.event, "onset_s": e.onset_s, "offset_s": e.offset_s} for e in self.events]


def _fade(x: np.ndarray) -> np.ndarray:
    n = min(int(round(FADE_S * SR)), x.size // 2)
    if n > 0:
        ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, np.pi, n))
        x[:n] *= ramp
        x[-n:] *= ramp[::-1]
    return x


def make_scene(
    scene: str,
    duration_s: float,
    rng: np.random.Generator,
    *,
    n_events: int | None = None,
    level_db: tuple[float, float] = (3.0, 9.0),
) -> SceneAudio:
    """Synthesize ``duration_s`` seconds of a scene: its bed plus some of its typical events at random times.

    Args:
        scene: A key of :data:`SCENES`.
        duration_s: Length in seconds.
        rng: Seeded generator (the same seed gives the same samples and labels).
        n_events: How many events (distinct classes of the scene's typical ones); None: as many as fit, drawn
            between 1 and 3. Fewer are placed when they do not fit, and the clip keeps at least one.
        level_db: Range (low, high) of each event's RMS over its own length, in dB above the bed's RMS.

    Returns:
        A :class:`SceneAudio`.

    Raises:
        ValueError: For an unknown scene, a clip too short for any of its events (under about 1 s), or a bad
            ``n_events``.
    """
    if scene not in SCENES:
        raise ValueError(f"unknown scene {scene!r}; choose one of {', '.join(SCENES)}")
    spec = SCENES[scene]
    n = int(round(duration_s * SR))
    if n <= 0:
        raise ValueError(f"duration_s must be positive, got {duration_s!r}")
    if n_events is not None and not 1 <= n_events <= len(spec.events):
        raise ValueError(f"n_events must be 1-{len(spec.events)} for scene {scene!r}, got {n_events}")
    bed = spec.bed(n, rng).astype(np.float64)
    bed = _fade(bed * (BED_RMS / (np.sqrt(np.mean(bed**2)) + 1e-12)))
    wanted = int(rng.integers(1, 4)) if n_events is None else n_events
    order = [spec.events[int(i)] for i in rng.permutation(len(spec.events))]
    rendered: list[tuple[str, np.ndarray]] = []
    room = duration_s - 2 * EDGE_S
    for name in order:
        if len(rendered) == wanted:
            break
        samples = EVENT_CLASSES[name].make(rng).astype(np.float64)
        used = sum(x.size for _, x in rendered) / SR + GAP_S * len(rendered)
        if used + samples.size / SR <= room:
            rendered.append((name, samples))
    if not rendered:
        raise ValueError(f"a {duration_s:.2f} s clip is too short for any event of scene {scene!r}")
    # Free time is split at random among the gaps before, between and after the events (each gap has its minimum).
    free = room - sum(x.size for _, x in rendered) / SR - GAP_S * (len(rendered) - 1)
    shares = rng.dirichlet(np.ones(len(rendered) + 1)) * free
    track = np.zeros(n)
    labels, levels = [], []
    at = EDGE_S
    for k, (name, samples) in enumerate(rendered):
        at += float(shares[k]) + (GAP_S if k else 0.0)
        start = int(round(at * SR))
        level = float(rng.uniform(*level_db))
        samples = samples * (BED_RMS * 10 ** (level / 20) / np.sqrt(np.mean(samples**2)))
        track[start : start + samples.size] += samples
        labels.append(EventLabel(name, start / SR, (start + samples.size) / SR))
        levels.append(round(level, 3))
        at = (start + samples.size) / SR
    # the bed and the events are written as files of their own too: each stays under the limit, like their sum
    peak = max(float(np.max(np.abs(bed + track))), float(np.max(np.abs(track))), float(np.max(np.abs(bed))))
    scale = PEAK_LIMIT / peak if peak > PEAK_LIMIT else 1.0
    if scale < 1.0:
        logger.info("scene %s would peak at %.2f: bed and events scaled by %.3f", scene, peak, scale)
    return SceneAudio(
        scene, (bed * scale).astype(np.float32), (track * scale).astype(np.float32), tuple(labels), tuple(levels), scale
    )
