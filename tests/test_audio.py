"""Loading, writing and measuring audio: formats, downmix, resampling, loudness and its fallback, bad signals."""

import logging

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf

from airbench_nb.audio import (
    LUFS_BLOCK_S,
    AudioError,
    SilentAudioError,
    audible_onset,
    check_samples,
    load_audio,
    loudness,
    rms_dbfs,
    write_wav,
)

SR = 16000


def _sine(freq, seconds, sr=SR, amp=0.5):
    t = np.arange(int(round(seconds * sr))) / sr
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _dominant_hz(x, sr=SR):
    spectrum = np.abs(np.fft.rfft(x * np.hanning(x.size)))
    return np.fft.rfftfreq(x.size, 1 / sr)[np.argmax(spectrum)]


@pytest.mark.parametrize(("fmt", "subtype"), [("WAV", "PCM_24"), ("FLAC", "PCM_16"), ("MP3", None)])
def test_load_downmixes_and_resamples_any_format(tmp_path, fmt, subtype):
    sr_in = 44100
    left, right = _sine(440, 1.0, sr_in, 0.6), _sine(440, 1.0, sr_in, 0.2)
    path = tmp_path / f"clip.{fmt.lower()}"
    sf.write(str(path), np.stack([left, right], axis=1), sr_in, format=fmt, subtype=subtype)
    x = load_audio(path)
    assert x.dtype == np.float32 and x.ndim == 1
    assert abs(x.size - SR) <= (1200 if fmt == "MP3" else 1)  # mp3 adds encoder delay and padding
    assert abs(_dominant_hz(x) - 440) < 3
    # The mean of the channels: amplitude 0.4, RMS 0.4 / sqrt(2).
    assert np.sqrt(np.mean(x[2000:-2000] ** 2)) == pytest.approx(0.4 / np.sqrt(2), rel=0.03)


def test_load_keeps_mono_16k_untouched(tmp_path):
    x = np.random.default_rng(0).uniform(-0.5, 0.5, SR).astype(np.float32)
    sf.write(str(tmp_path / "a.wav"), x, SR, subtype="FLOAT")
    np.testing.assert_array_equal(load_audio(tmp_path / "a.wav"), x)


def test_load_bad_files_get_clear_errors(tmp_path):
    with pytest.raises(AudioError, match="no such audio file"):
        load_audio(tmp_path / "missing.wav")
    (tmp_path / "empty.wav").write_bytes(b"")
    with pytest.raises(AudioError, match="empty"):
        load_audio(tmp_path / "empty.wav")
    sf.write(str(tmp_path / "zero.wav"), np.zeros(0, dtype=np.float32), SR)
    with pytest.raises(AudioError, match="zero samples"):
        load_audio(tmp_path / "zero.wav")
    nan = _sine(440, 0.5)
    nan[100] = np.nan
    sf.write(str(tmp_path / "nan.wav"), nan, SR, subtype="FLOAT")
    with pytest.raises(AudioError, match="NaN"):
        load_audio(tmp_path / "nan.wav")
    (tmp_path / "garbage.wav").write_bytes(b"RIFF" + bytes(range(256)) * 4)
    with pytest.raises(AudioError, match="cannot decode"):
        load_audio(tmp_path / "garbage.wav")


def test_write_wav_is_16_bit_and_round_trips(tmp_path, caplog):
    x = np.random.default_rng(1).uniform(-0.9, 0.9, 4000).astype(np.float32)
    path = write_wav(tmp_path / "sub" / "x.wav", x)
    info = sf.info(str(path))
    assert (info.subtype, info.samplerate, info.channels) == ("PCM_16", SR, 1)
    assert np.max(np.abs(load_audio(path) - x)) <= 1 / 32768 + 1e-7
    with caplog.at_level(logging.WARNING, logger="airbench_nb.audio"):
        write_wav(tmp_path / "loud.wav", np.array([0.5, 1.5, -2.0], dtype=np.float32))
    assert "2 samples beyond full scale" in caplog.text
    with pytest.raises(AudioError, match="mono"):
        write_wav(tmp_path / "st.wav", np.zeros((10, 2)))
    with pytest.raises(AudioError, match="NaN"):
        write_wav(tmp_path / "nan.wav", np.array([0.0, np.inf]))


def test_lufs_of_a_reference_sine():
    # BS.1770: a 997 Hz sine with peak 1.0 reads -3.01 LUFS; at peak 0.1 it reads -23.01 LUFS.
    value = loudness(_sine(997, 3.0, amp=0.1))
    assert value.unit == "LUFS"
    assert value.value == pytest.approx(-23.01, abs=0.1)
    assert value.value == pytest.approx(
        pyloudnorm.Meter(SR).integrated_loudness(_sine(997, 3.0, amp=0.1).astype(float))
    )


def test_loudness_is_scale_homogeneous(rng):
    x = (0.1 * rng.standard_normal(SR * 2)).astype(np.float32)
    assert loudness(x * 0.5).value - loudness(x).value == pytest.approx(20 * np.log10(0.5), abs=1e-6)


def test_short_clips_fall_back_to_rms_dbfs(rng):
    short = (0.1 * rng.standard_normal(int(LUFS_BLOCK_S * SR) - 1)).astype(np.float32)
    value = loudness(short)
    assert value.unit == "dBFS"
    assert value.value == pytest.approx(10 * np.log10(np.mean(short.astype(float) ** 2)))
    with pytest.raises(AudioError, match="too short"):
        loudness(short, unit="LUFS")
    assert loudness(short[:10]).unit == "dBFS"
    long_enough = (0.1 * rng.standard_normal(int(LUFS_BLOCK_S * SR))).astype(np.float32)
    assert loudness(long_enough).unit == "LUFS"
    assert loudness(long_enough, unit="dBFS").unit == "dBFS"


def test_clips_under_the_absolute_gate_fall_back_to_dbfs():
    quiet = _sine(997, 1.0, amp=1e-4)  # about -83 LUFS: every block is gated out
    value = loudness(quiet)
    assert value.unit == "dBFS" and value.value == pytest.approx(rms_dbfs(quiet))
    with pytest.raises(AudioError, match="absolute gate"):
        loudness(quiet, unit="LUFS")


def test_bad_signals_get_clear_errors():
    with pytest.raises(SilentAudioError, match="all silent"):
        loudness(np.zeros(SR, dtype=np.float32))
    with pytest.raises(AudioError, match="NaN or infinite samples \\(first at index 5\\)"):
        loudness(np.r_[np.ones(5), np.nan, np.ones(5)].astype(np.float32))
    with pytest.raises(AudioError, match="infinite"):
        loudness(np.r_[np.ones(5), np.inf].astype(np.float32))
    with pytest.raises(AudioError, match="zero samples"):
        loudness(np.zeros(0, dtype=np.float32))
    with pytest.raises(AudioError, match="stereo"):
        loudness(np.zeros((SR, 2), dtype=np.float32))
    assert check_samples(np.zeros(4), allow_silent=True).size == 4
    assert check_samples(np.array([1, 2, 3], dtype=np.int16)).dtype == np.float32
    assert rms_dbfs(np.zeros(3)) == float("-inf")


def test_audible_onset_skips_leading_silence():
    x = np.r_[np.zeros(int(0.3 * SR)), 1e-5 * np.ones(800), _sine(300, 0.5)].astype(np.float32)
    assert audible_onset(x) == pytest.approx(0.35, abs=0.011)
    assert audible_onset(_sine(300, 0.5)) == 0.0
