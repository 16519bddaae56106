"""The DSP baseline's pitch tracker: ``airbench_nb.models.pyin`` returns librosa's pYIN track exactly, faster.

Also: a clip where pYIN finds no voice is answered ``I cannot tell.``, not an error that every resume retries (the
mini build's ``Speaker_Gender_Recognition-001@snr+00``, a voice under as loud a background, was one).
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.manifests import read_records
from airbench_nb.models import load_model
from airbench_nb.models.baselines import CANNOT_TELL, _median_f0
from airbench_nb.models.pyin import pyin
from airbench_nb.records import FoundationItem, Response
from airbench_nb.runner import run_model

SR = 16000
RANGES = [(60.0, 1400.0), (60.0, 400.0), (60.0, 450.0)]
"""The F0 search ranges the DSP baseline uses (pitch, gender and same speaker, number of speakers)."""


def _voice(seconds: float, f0_from: float, f0_to: float, rng: np.random.Generator, snr_db: float) -> np.ndarray:
    """A harmonic tone gliding from ``f0_from`` to ``f0_to`` Hz with pauses, under white noise at ``snr_db``."""
    t = np.arange(int(seconds * SR)) / SR
    f0 = np.geomspace(f0_from, f0_to, t.size)
    phase = 2 * np.pi * np.cumsum(f0) / SR
    tone = sum(np.sin(h * phase) / h for h in range(1, 6))
    tone *= (np.sin(2 * np.pi * 1.5 * t) > -0.3).astype(float)  # voiced stretches and pauses
    noise = rng.standard_normal(t.size)
    noise *= np.sqrt(np.mean(tone**2) / np.mean(noise**2)) * 10 ** (-snr_db / 20)
    return (0.3 * (tone + noise) / np.max(np.abs(tone + noise))).astype(np.float32)


def _signals(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "low voice": _voice(1.5, 95, 120, rng, 20),
        "high voice, noisy": _voice(1.2, 210, 180, rng, 0),
        "note": _voice(1.0, 440, 440, rng, 40),
        "noise": (0.1 * rng.standard_normal(SR)).astype(np.float32),
        "silence": np.zeros(SR // 2, dtype=np.float32),
        "very noisy": _voice(1.0, 150, 300, rng, -10),
    }


@pytest.mark.parametrize(("fmin", "fmax"), RANGES)
def test_pyin_is_librosas_track_exactly(fmin, fmax, rng):
    import librosa

    for name, samples in _signals(rng).items():
        expected, _, _ = librosa.pyin(samples, fmin=fmin, fmax=fmax, sr=SR, frame_length=2048)
        got = pyin(samples, sr=SR, fmin=fmin, fmax=fmax)
        assert got.dtype == expected.dtype and got.shape == expected.shape, name
        assert np.array_equal(got, expected, equal_nan=True), (name, np.nanmax(np.abs(got - expected)))
    assert np.isnan(pyin(np.zeros(SR // 2, dtype=np.float32), sr=SR, fmin=fmin, fmax=fmax)).all()


def test_pyin_multichannel_and_librosa_left_as_it_was(rng):
    import librosa
    import librosa.sequence

    viterbi, transition_local = librosa.sequence.viterbi, librosa.sequence.transition_local
    stereo = np.stack([_voice(1.0, 100, 110, rng, 10), _voice(1.0, 220, 200, rng, 10)])
    expected, _, _ = librosa.pyin(stereo, fmin=60, fmax=400, sr=SR, frame_length=2048)
    got = pyin(stereo, sr=SR, fmin=60, fmax=400)
    assert got.shape == expected.shape == (2, expected.shape[-1])
    assert np.array_equal(got, expected, equal_nan=True)
    assert librosa.sequence.viterbi is viterbi and librosa.sequence.transition_local is transition_local


def test_median_f0_measures_a_clip_once_and_says_when_it_cannot(rng, monkeypatch):
    from airbench_nb.models import baselines
    from airbench_nb.models import pyin as pyin_module
    from airbench_nb.models.baselines import Unmeasurable

    voice = _voice(1.0, 100, 100, rng, 30)
    calls = []
    monkeypatch.setattr(pyin_module, "pyin", lambda *a, **k: calls.append(1) or pyin(*a, **k))
    monkeypatch.setattr(baselines, "_F0_CACHE", type(baselines._F0_CACHE)())
    first = _median_f0(voice, SR, 60.0, 400.0)
    assert 95 < first < 105 and _median_f0(voice.copy(), SR, 60.0, 400.0) == first and len(calls) == 1
    assert _median_f0(voice, SR, 60.0, 450.0) and len(calls) == 2  # another range is another measurement
    with pytest.raises(Unmeasurable, match="no voiced frames"):
        _median_f0(np.zeros(SR, dtype=np.float32), SR, 60.0, 400.0)


def test_a_voice_the_dsp_baseline_cannot_find_is_cannot_tell_not_an_error_retried_on_every_resume(tmp_path):
    """Noise where a voice should be: the baseline cannot tell, and a rerun has nothing to retry."""
    sf.write(tmp_path / "noise.wav", (0.1 * np.random.default_rng(0).standard_normal(SR)).astype(np.float32), SR)
    sf.write(tmp_path / "silence.wav", np.zeros(SR, dtype=np.float32), SR)
    items = [
        FoundationItem(
            uid=f"{task}-{name}",
            dataset="d",
            audio=f"{name}.wav",
            question="How many speakers?" if task == "Speaker_Number_Verification" else "Who speaks?",
            task=task,
            choices=["1", "2"] if task == "Speaker_Number_Verification" else ["male", "female"],
            answer=0,
        )
        for task in ("Speaker_Gender_Recognition", "Speaker_Number_Verification", "Music_Midi_Velocity_Analysis")
        for name in ("noise", "silence")
    ]
    items = [i for i in items if i.task != "Music_Midi_Velocity_Analysis" or i.audio == "silence.wav"]
    out = tmp_path / "dsp.jsonl"
    first = run_model(load_model("baseline:dsp"), items, tmp_path, out, progress=False)
    responses = {r.uid: r for r in read_records(out, Response)}
    assert first.errors == 0, [r.error for r in responses.values()]
    assert {uid: r.text for uid, r in responses.items()} == {i.uid: CANNOT_TELL for i in items}
    again = run_model(load_model("baseline:dsp"), items, tmp_path, out, progress=False)
    assert again.answered == again.retried == again.errors == 0
