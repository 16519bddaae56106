"""espeak-ng speech: voice gender measured by pyin F0, errors for a missing binary and bad arguments."""

from __future__ import annotations

import shutil

import librosa
import numpy as np
import pytest

from airbench_nb.synth import speech
from airbench_nb.synth.speech import SpeechSynthesisError, espeak_binary, speak, voice_gender

SR = 16000

needs_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng is not installed (apt-get install -y espeak-ng)"
)


def median_f0(x: np.ndarray) -> float:
    """Median pyin F0 in Hz over voiced frames (search range 60-400 Hz covers both genders with margin)."""
    f0, voiced, _ = librosa.pyin(x, fmin=60, fmax=400, sr=SR, frame_length=1024, hop_length=256)
    assert voiced.sum() >= 10, "pyin found almost no voiced frames"
    return float(np.median(f0[voiced]))


@needs_espeak
@pytest.mark.parametrize(
    ("language", "variant"),
    [("en-us", "m3"), ("en-us", "f2"), ("en-us", "m7"), ("de", "m1"), ("de", "f4"), ("fr", "m5"), ("fr", "f1")],
)
def test_voice_gender_is_measurable_from_f0(language: str, variant: str) -> None:
    x = speak("one two three", language, variant)
    assert x.dtype == np.float32 and x.ndim == 1
    assert 0.5 < x.size / SR < 3.0, f"{x.size / SR:.2f} s for three words: resampling to 16 kHz went wrong"
    f0 = median_f0(x)
    if voice_gender(variant) == "male":
        assert f0 < 140, f"{language}+{variant}: median F0 {f0:.0f} Hz is not a male voice"
    else:
        assert f0 > 160, f"{language}+{variant}: median F0 {f0:.0f} Hz is not a female voice"


@needs_espeak
def test_pitch_parameter_raises_f0() -> None:
    low = median_f0(speak("one two three", "en-us", "m3", pitch=20))
    high = median_f0(speak("one two three", "en-us", "m3", pitch=80))
    assert high > 1.2 * low, (low, high)


@needs_espeak
def test_rate_changes_duration() -> None:
    slow = speak("one two three four five", "en-us", "m3", rate=100)
    fast = speak("one two three four five", "en-us", "m3", rate=300)
    assert slow.size > 1.8 * fast.size, (slow.size / SR, fast.size / SR)


@needs_espeak
def test_same_input_same_audio() -> None:
    np.testing.assert_array_equal(speak("hello", "en-us", "f2"), speak("hello", "en-us", "f2"))


@pytest.fixture
def no_espeak(monkeypatch: pytest.MonkeyPatch):
    espeak_binary.cache_clear()
    monkeypatch.setattr(speech.shutil, "which", lambda name: None)
    yield
    monkeypatch.undo()
    espeak_binary.cache_clear()


def test_missing_espeak_gives_install_instructions(no_espeak: None) -> None:
    with pytest.raises(SpeechSynthesisError, match="espeak-ng is not installed") as info:
        speak("one two three")
    message = str(info.value)
    assert "apt-get install -y espeak-ng" in message and "brew install espeak-ng" in message


def test_cache_is_restored_after_the_missing_espeak_test() -> None:
    # The fixture above clears the lru_cache on teardown: a later call sees the real PATH again.
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (apt-get install -y espeak-ng)")
    assert espeak_binary() == shutil.which("espeak-ng")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"text": ""}, "empty text"),
        ({"text": "   \n"}, "empty text"),
        ({"rate": 79}, "rate"),
        ({"rate": 451}, "rate"),
        ({"pitch": -1}, "pitch"),
        ({"pitch": 100}, "pitch"),
        # espeak-ng would silently use its default voice for these: the gender label would be wrong.
        ({"variant": "M3"}, "unknown voice variant"),
        ({"variant": "m8"}, "unknown voice variant"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict, match: str) -> None:
    args = {"text": "one two three", **kwargs}
    with pytest.raises(ValueError, match=match):
        speak(**args)


def test_voice_gender_of_variants() -> None:
    assert {voice_gender(v) for v in speech.MALE_VARIANTS} == {"male"}
    assert {voice_gender(v) for v in speech.FEMALE_VARIANTS} == {"female"}
    with pytest.raises(ValueError, match="unknown voice variant"):
        voice_gender("x9")
