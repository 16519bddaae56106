"""Sound events and scenes, checked by measuring the audio (energy envelope, spectrum, levels)."""

from __future__ import annotations

import numpy as np
import pytest

from airbench_nb.synth import sounds
from airbench_nb.synth.noise import coloured_noise
from airbench_nb.synth.sounds import EVENTS, beep, click, knock, noise_burst, scene, siren
from tests.measure import energy_onsets

SR = 16000


def peak_frequency(x: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size), n=8 * x.size))
    return float(np.argmax(spectrum) * SR / (8 * x.size))


SCENE = [("beep", 0.3), ("click", 0.9), ("knock", 1.4), ("noise_burst", 2.0), ("siren", 2.6)]


@pytest.mark.parametrize("background", ["white", "pink", "brown", "blue"])
@pytest.mark.parametrize("seed", [0, 4])
def test_scene_onsets_are_found_in_the_energy_envelope(background: str, seed: int) -> None:
    x, labels = scene(SCENE, 4.0, rng=np.random.default_rng(seed), background=background, snr_db=10.0)
    assert x.dtype == np.float32 and x.size == 4 * SR
    assert [d["name"] for d in labels] == [name for name, _ in SCENE]
    found = energy_onsets(x)
    assert len(found) == len(labels), (found, labels)
    for label, onset in zip(labels, found, strict=True):
        assert abs(onset - label["onset_s"]) <= 0.020, (label, onset)


def test_labels_are_sample_exact_and_sorted(rng: np.random.Generator) -> None:
    x, labels = scene([("knock", 1.0), ("beep", 0.25), ("click", 0.5, {"freq_hz": 2000.0})], 1.5, rng=rng)
    assert [d["name"] for d in labels] == ["beep", "click", "knock"]
    assert labels[0] == {"name": "beep", "onset_s": 0.25, "offset_s": 0.45, "description": "a short 1 kHz beep"}
    assert labels[1]["offset_s"] == pytest.approx(0.51)
    assert labels[2]["offset_s"] == pytest.approx(1.15)
    assert EVENTS["beep"].describe(freq_hz=440.0) == "a short 440 Hz beep"


def test_scene_snr_is_measured_against_the_same_background() -> None:
    # The background is drawn first, so the same seed with no events gives the scene's background alone.
    events = [("beep", 0.2), ("noise_burst", 0.8)]
    mixed, labels = scene(events, 1.5, rng=np.random.default_rng(3), background="pink", snr_db=6.0)
    alone, _ = scene([], 1.5, rng=np.random.default_rng(3), background="pink", snr_db=6.0)
    background_db = 20 * np.log10(np.sqrt(np.mean(alone.astype(np.float64) ** 2)))
    assert background_db == pytest.approx(20 * np.log10(0.03), abs=0.01)
    difference = mixed.astype(np.float64) - alone
    for label in labels:
        seg = difference[round(label["onset_s"] * SR) : round(label["offset_s"] * SR)]
        event_db = 20 * np.log10(np.sqrt(np.mean(seg**2)))
        assert event_db - background_db == pytest.approx(6.0, abs=0.05)
    outside = np.ones(mixed.size, dtype=bool)
    for label in labels:
        outside[round(label["onset_s"] * SR) : round(label["offset_s"] * SR)] = False
    assert np.max(np.abs(difference[outside])) < 1e-6


def test_silent_background_is_silent_outside_events(rng: np.random.Generator) -> None:
    x, labels = scene([("beep", 0.5)], 1.0, rng=rng, background="silence")
    assert not np.any(x[: int(0.5 * SR)]) and not np.any(x[int(0.7 * SR) :])
    assert np.any(x[int(0.5 * SR) : int(0.7 * SR)])


def test_loud_scene_is_kept_below_clipping(rng: np.random.Generator) -> None:
    x, _ = scene([("click", 0.1), ("siren", 0.2)], 1.5, rng=rng, snr_db=40.0, background_rms=0.05)
    assert np.max(np.abs(x)) <= sounds.SCENE_PEAK_LIMIT + 1e-6


def test_seeds_change_the_background_and_repeat_it() -> None:
    a, _ = scene(SCENE[:2], 1.5, rng=np.random.default_rng(1))
    b, _ = scene(SCENE[:2], 1.5, rng=np.random.default_rng(2))
    c, _ = scene(SCENE[:2], 1.5, rng=np.random.default_rng(1))
    assert not np.array_equal(a, b)
    assert np.corrcoef(a[:4000], b[:4000])[0, 1] < 0.2
    np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("name", list(EVENTS))
def test_every_event_renders_at_its_length_and_level(name: str, rng: np.random.Generator) -> None:
    x = sounds.event(name, rng=rng)
    assert x.dtype == np.float32
    assert x.size == round(EVENTS[name].params["duration_s"] * SR)
    assert float(np.max(np.abs(x))) == pytest.approx(sounds.EVENT_PEAK, abs=1e-4)
    assert EVENTS[name].description


def test_event_spectra_match_their_parameters(rng: np.random.Generator) -> None:
    assert peak_frequency(beep(0.2, 1000.0)) == pytest.approx(1000.0, abs=5)
    assert peak_frequency(beep(0.3, 440.0)) == pytest.approx(440.0, abs=5)
    assert peak_frequency(click(0.02, 3000.0)) == pytest.approx(3000.0, abs=100)
    assert peak_frequency(knock(0.15, 180.0, rng=rng)) == pytest.approx(180.0, abs=10)
    # The siren's per-frame peak frequency spans its range and stays inside it.
    x = siren(1.0, 600.0, 1200.0, 2.0)
    peaks = [peak_frequency(x[i : i + 400]) for i in range(800, x.size - 800, 400)]
    assert min(peaks) < 700 and max(peaks) > 1100
    assert 550 < min(peaks) and max(peaks) < 1250

    # Brown noise has more of its energy below 500 Hz than white noise.
    def low_share(y: np.ndarray) -> float:
        power = np.abs(np.fft.rfft(y)) ** 2
        return float(power[: int(500 * y.size / SR)].sum() / power.sum())

    assert low_share(noise_burst(0.3, "brown", rng=rng)) > 0.5 > 0.2 > low_share(noise_burst(0.3, "white", rng=rng))


def test_events_start_sharply() -> None:
    # Every event reaches half its peak level within 5 ms of its start (onsets are well defined).
    for name in EVENTS:
        x = np.abs(sounds.event(name, rng=np.random.default_rng(0)))
        first = int(np.argmax(x >= 0.5 * x.max()))
        assert first <= 0.005 * SR, (name, first / SR)


@pytest.mark.parametrize(
    ("events", "duration_s", "kwargs", "match"),
    [
        ([("siren", 0.5)], 1.0, {}, "past the end"),
        ([("beep", 0.9)], 1.0, {}, "past the end"),
        ([("gunshot", 0.1)], 1.0, {}, "unknown sound event"),
        ([("beep", -0.1)], 1.0, {}, "onset_s"),
        ([("beep", 0.1)], -1.0, {}, "duration_s"),
        ([("beep", 0.1)], 0.0, {}, "duration_s"),
        ([("beep", 0.1)], 1.0, {"background": "purple"}, "unknown background"),
        ([("beep", 0.1, {"loudness": 3})], 1.0, {}, "unknown parameter"),
        ([("beep",)], 1.0, {}, "must be"),
        ([("beep", 0.1, {"duration_s": -0.2})], 1.0, {}, "duration_s"),
    ],
)
def test_scene_rejects_bad_arguments(events: list, duration_s: float, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        scene(events, duration_s, rng=np.random.default_rng(0), **kwargs)


def test_events_reject_bad_arguments() -> None:
    with pytest.raises(ValueError, match="duration_s"):
        beep(-0.1)
    with pytest.raises(ValueError, match="freq_hz"):
        beep(0.1, 9000.0)
    with pytest.raises(ValueError, match="below high_hz"):
        siren(1.0, 1200.0, 600.0)
    with pytest.raises(ValueError, match="unknown noise colour"):
        noise_burst(0.1, "purple")
    with pytest.raises(ValueError, match="unknown sound event"):
        sounds.event("gunshot")


@pytest.mark.parametrize(("color", "slope"), [("white", 0.0), ("pink", -1.0), ("brown", -2.0), ("blue", 1.0)])
def test_background_noise_has_its_colour_and_no_infrasound(color: str, slope: float, rng: np.random.Generator) -> None:
    x = coloured_noise(color, 4 * SR, rng, rms=0.05).astype(np.float64)
    assert np.sqrt(np.mean(x**2)) == pytest.approx(0.05, rel=1e-4)
    power = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(x.size, 1 / SR)
    # All the level is audible: nothing below 20 Hz (brown noise used to hold ~99% of its power there).
    assert power[freqs < 20].sum() < 1e-9 * power.sum()
    # Power-spectrum slope on log-log axes between 50 Hz and 5 kHz, from octave-band averages.
    edges = 50 * 2.0 ** np.arange(0, 7)
    centres = np.sqrt(edges[:-1] * edges[1:])
    bands = [power[(freqs >= lo) & (freqs < hi)].mean() for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    fitted = np.polyfit(np.log10(centres), np.log10(bands), 1)[0]
    assert fitted == pytest.approx(slope, abs=0.1)


def test_noise_rejects_a_bad_cutoff(rng: np.random.Generator) -> None:
    with pytest.raises(ValueError, match="low_cut_hz"):
        coloured_noise("pink", 100, rng, low_cut_hz=9000.0)
