"""Notes, chords and melodies, checked by measuring the audio (pyin pitch, levels, chroma, onsets)."""

from __future__ import annotations

import librosa
import numpy as np
import pytest

from airbench_nb.synth import music
from airbench_nb.synth.music import (
    DYNAMICS,
    INSTRUMENTS,
    chord,
    melody,
    midi_to_hz,
    note,
    scale_midis,
    velocity_to_db,
)
from tests.measure import detected_onsets

SR = 16000


def pyin_midi(x: np.ndarray, expected_midi: int) -> float:
    """Median pyin F0 of ``x`` as a (fractional) MIDI number, searching an octave and a bit around the label.

    The search range admits octave errors both ways (fmin below half, fmax above twice the expected F0), so a
    note read an octave off fails the test rather than hiding outside the range.
    """
    f0_expected = midi_to_hz(expected_midi)
    fmin = max(30.0, f0_expected / 2.2)
    fmax = min(SR / 2 - 100, f0_expected * 2.2)
    frame = 2048 if fmin < 60 else 1024
    f0, voiced, _ = librosa.pyin(x, fmin=fmin, fmax=fmax, sr=SR, frame_length=frame, hop_length=256)
    assert voiced.mean() > 0.5, f"pyin found voicing in only {voiced.mean():.0%} of frames"
    return float(librosa.hz_to_midi(np.median(f0[voiced])))


def rms_db(x: np.ndarray) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(np.asarray(x, dtype=np.float64) ** 2))))


PITCH_CASES = [
    (instrument, midi)
    for instrument, midis in {
        "sine": (40, 52, 64, 72, 79, 84),
        "square": (40, 50, 60, 69, 79, 84),
        "sawtooth": (40, 47, 59, 71, 79, 84),
        "organ": (41, 53, 62, 74, 79, 84),
        "plucked": (40, 48, 57, 67, 79, 84),
    }.items()
    for midi in midis
]


@pytest.mark.parametrize(("instrument", "midi"), PITCH_CASES)
def test_pyin_reads_the_midi_label(instrument: str, midi: int, rng: np.random.Generator) -> None:
    x = note(midi, 100, instrument, 0.4, rng=rng)
    assert x.dtype == np.float32 and x.shape == (int(0.4 * SR),)
    measured = pyin_midi(x, midi)
    assert round(measured) == midi, f"{instrument} MIDI {midi} read as {measured:.2f}"


@pytest.mark.parametrize("midi", [67, 79, 84, 96])
def test_plucked_string_is_in_tune_to_a_few_cents(midi: int, rng: np.random.Generator) -> None:
    # An integer Karplus-Strong delay line is +0.6 semitone sharp at 67 and +1 at 79; the fractional delay must
    # keep the fundamental within 5 cents. Measure the spectral peak with 16x zero padding and a parabola.
    x = note(midi, 100, "plucked", 1.0, rng=rng).astype(np.float64)
    n_fft = 16 * x.size
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size), n=n_fft))
    f0 = midi_to_hz(midi)
    lo, hi = int(f0 / 1.06 * n_fft / SR), int(f0 * 1.06 * n_fft / SR)
    k = lo + int(np.argmax(spectrum[lo:hi]))
    a, b, c = np.log(spectrum[k - 1 : k + 2])
    peak_hz = (k + 0.5 * (a - c) / (a - 2 * b + c)) * SR / n_fft
    cents = 1200 * np.log2(peak_hz / f0)
    assert abs(cents) < 5, f"plucked MIDI {midi}: fundamental at {peak_hz:.2f} Hz, {cents:+.1f} cents off"


def test_bell_is_inharmonic_and_marked_unpitched(rng: np.random.Generator) -> None:
    assert INSTRUMENTS["bell"].pitched is False
    assert "bell" not in music.pitched_instruments()
    f0_expected = midi_to_hz(60)
    x = note(60, 100, "bell", 0.4, rng=rng)
    f0, voiced, _ = librosa.pyin(x, fmin=30, fmax=f0_expected * 2.2, sr=SR, frame_length=2048, hop_length=256)
    measured = librosa.hz_to_midi(np.median(f0[voiced])) if voiced.any() else np.nan
    assert not round(measured) == 60, "the FM bell now reads as its label: reconsider pitched=False"


def test_instrument_registry_has_metadata() -> None:
    assert {"sine", "square", "sawtooth", "organ", "plucked", "bell"} <= set(INSTRUMENTS)
    for name, inst in INSTRUMENTS.items():
        assert inst.name == name
        assert inst.family and inst.description
        assert inst.envelope.attack_s > 0 and inst.envelope.release_s > 0
    assert set(music.pitched_instruments()) == {"sine", "square", "sawtooth", "organ", "plucked"}


@pytest.mark.parametrize("instrument", ["sine", "organ", "plucked", "bell"])
def test_velocity_level_is_strictly_monotonic(instrument: str) -> None:
    velocities = sorted(DYNAMICS.values())
    # The same seed for every velocity: only the level may change.
    levels = [rms_db(note(64, v, instrument, 0.3, rng=np.random.default_rng(7))) for v in velocities]
    assert all(b > a for a, b in zip(levels, levels[1:], strict=False)), levels
    # The measured steps follow the documented 40*log10(v/127) curve.
    for v, level in zip(velocities, levels, strict=True):
        assert level - levels[-1] == pytest.approx(velocity_to_db(v), abs=0.05)
    loudest = note(64, 127, instrument, 0.3, rng=np.random.default_rng(7))
    assert float(np.max(np.abs(loudest))) == pytest.approx(music.PEAK_AT_MAX_VELOCITY, abs=1e-3)


def test_dynamics_classes_are_separable_by_level_across_pitches_and_seeds() -> None:
    # pp / mf / ff at various pitches and excitations: their measured RMS levels never overlap.
    by_class: dict[str, list[float]] = {}
    for name in ("pp", "mf", "ff"):
        for seed, midi in enumerate((45, 60, 72, 81)):
            x = note(midi, DYNAMICS[name], "plucked", 0.25, rng=np.random.default_rng(seed))
            by_class.setdefault(name, []).append(rms_db(x))
    assert max(by_class["pp"]) + 3 < min(by_class["mf"])
    assert max(by_class["mf"]) + 3 < min(by_class["ff"])


def test_velocity_to_db_values() -> None:
    assert velocity_to_db(127) == 0.0
    assert velocity_to_db(64) == pytest.approx(-11.91, abs=0.01)
    assert velocity_to_db(1) == pytest.approx(-84.15, abs=0.01)


@pytest.mark.parametrize("instrument", ["sine", "organ", "sawtooth", "plucked"])
@pytest.mark.parametrize("root", [48, 62])
def test_major_and_minor_chords_differ_at_the_third(instrument: str, root: int, rng: np.random.Generator) -> None:
    def chroma(quality: str) -> np.ndarray:
        x = chord(root, quality, instrument, 0.5, velocity=90, rng=rng)
        return librosa.feature.chroma_stft(y=x, sr=SR, n_fft=4096, hop_length=1024).mean(axis=1)

    major, minor = chroma("major"), chroma("minor")
    maj3, min3 = (root + 4) % 12, (root + 3) % 12
    assert major[maj3] > 1.5 * major[min3], (major[maj3], major[min3])
    assert minor[min3] > 1.5 * minor[maj3], (minor[min3], minor[maj3])
    # Root and fifth are present in both.
    for c in (major, minor):
        assert c[root % 12] > 0.3 * c.max() and c[(root + 7) % 12] > 0.3 * c.max()


def test_chord_midis() -> None:
    assert music.chord_midis(60, "major") == [60, 64, 67]
    assert music.chord_midis(57, "minor") == [57, 60, 64]
    with pytest.raises(ValueError, match="quality"):
        music.chord_midis(60, "diminished")


def per_note_midi(x: np.ndarray, onsets: list[float], midis: list[int]) -> list[float]:
    """Median pyin pitch (fractional MIDI) of each note, leaving 50 ms out at both ends."""
    fmin, fmax = midi_to_hz(min(midis)) / 1.5, midi_to_hz(max(midis)) * 1.5
    f0, voiced, _ = librosa.pyin(x, fmin=fmin, fmax=fmax, sr=SR, frame_length=1024, hop_length=256)
    times = librosa.times_like(f0, sr=SR, hop_length=256)
    ends = [*onsets[1:], x.size / SR]
    out = []
    for start, end in zip(onsets, ends, strict=True):
        sel = (times > start + 0.05) & (times < end - 0.05) & voiced
        out.append(float(librosa.hz_to_midi(np.median(f0[sel]))))
    return out


@pytest.mark.parametrize(
    ("instrument", "direction", "start"),
    [
        ("plucked", "ascending", 55),
        ("plucked", "descending", 84),
        ("organ", "descending", 72),
        ("sine", "ascending", 60),
    ],
)
def test_melody_onsets_and_contour(instrument: str, direction: str, start: int, rng: np.random.Generator) -> None:
    midis = scale_midis(start, 6, direction)
    x, onsets = melody(midis, tempo_bpm=120, instrument=instrument, velocity=90, note_value=0.125, rng=rng)
    assert onsets == pytest.approx([i * 0.25 for i in range(6)])
    assert x.size == int(1.5 * SR)
    found = detected_onsets(x)
    assert len(found) == len(onsets), (found, onsets)
    for want, got in zip(onsets, found, strict=True):
        assert abs(got - want) <= 0.030, (want, got)
    pitches = per_note_midi(x, onsets, midis)
    assert [round(p) for p in pitches] == midis
    steps = np.diff(pitches)
    assert np.all(steps > 0) if direction == "ascending" else np.all(steps < 0)
    assert music.melody_direction(midis) == direction


def test_scale_helpers() -> None:
    assert music.ascending_melody(60, 8) == [60, 62, 64, 65, 67, 69, 71, 72]
    assert music.descending_melody(72, 8) == [72, 71, 69, 67, 65, 64, 62, 60]
    assert music.ascending_melody(57, 4, scale="minor") == [57, 59, 60, 62]
    assert music.melody_direction([60, 62, 62]) == "mixed"
    with pytest.raises(ValueError, match="direction"):
        scale_midis(60, 4, "sideways")
    with pytest.raises(ValueError, match="at least 2"):
        scale_midis(60, 1)


def test_note_duration_from_tempo() -> None:
    assert music.note_duration_s(120, 0.25) == pytest.approx(0.5)
    assert music.note_duration_s(60, 0.125) == pytest.approx(0.5)
    _, onsets = melody([60, 62, 64], tempo_bpm=90, instrument="sine", note_value=0.25)
    assert onsets == pytest.approx([0.0, 2 / 3, 4 / 3], abs=1 / SR)


def test_same_seed_same_audio_different_seed_different_audio() -> None:
    def render(seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [
            note(60, 90, "plucked", 0.2, rng=rng),
            chord(60, "minor", "plucked", 0.2, rng=rng),
            melody([60, 64, 67], 140, "plucked", rng=rng)[0],
        ]

    for a, b in zip(render(5), render(5), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(render(5), render(6), strict=True):
        assert not np.array_equal(a, b)
    np.testing.assert_array_equal(note(60, 90, "plucked", 0.2), note(60, 90, "plucked", 0.2))
    np.testing.assert_array_equal(note(60, 90, "organ", 0.2), note(60, 90, "organ", 0.2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"instrument": "theremin"}, "unknown instrument"),
        ({"velocity": 0}, "velocity"),
        ({"velocity": 128}, "velocity"),
        ({"velocity": 64.5}, "velocity"),
        ({"midi": 20}, "midi"),
        ({"midi": 109}, "midi"),
        ({"duration_s": -0.5}, "duration_s"),
        ({"duration_s": 0.0}, "duration_s"),
    ],
)
def test_note_rejects_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"midi": 60, "velocity": 80, "instrument": "sine", "duration_s": 0.1, **kwargs}
    with pytest.raises(ValueError, match=match):
        note(**args)


def test_melody_and_chord_reject_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least one note"):
        melody([], 120, "sine")
    with pytest.raises(ValueError, match="positive"):
        melody([60], 0, "sine")
    with pytest.raises(ValueError, match="midi"):
        chord(105, "major", "sine", 0.2)
