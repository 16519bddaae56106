"""The one-read probe of a plain integer-PCM wav agrees with the decoders' probe, and leaves every other file to them.

:func:`airbench_nb.audio.probe_audio` reads a file once, hashes the bytes, and calls a plain integer-PCM RIFF WAVE
file whose data chunk is whole ``ok`` without opening a decoder; anything else (float samples, the extensible
format tag, a truncated or streamed data chunk, RIFX, another container) goes through libsndfile and librosa as
before. The suite also checks every plain wav any test probes against the decoders
(``AIRBENCH_NB_VERIFY_FAST_READ=1``).
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
import soundfile as sf

from airbench_nb import audio
from airbench_nb.records import AudioStatus

SR = 16000


def _signal(seconds: float = 0.5, channels: int = 1) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = 0.3 * rng.standard_normal((int(SR * seconds), channels)).astype(np.float32)
    return x[:, 0] if channels == 1 else x


def _decoded(path):
    """What the decoders say of a file (the probe before the one-read path)."""
    return audio._probe_decoding(path, audio.sha256_file(path))


@pytest.mark.parametrize(
    ("subtype", "channels", "rate"),
    [("PCM_16", 1, SR), ("PCM_U8", 1, SR), ("PCM_24", 2, 44100), ("PCM_32", 1, 8000), ("PCM_16", 2, 22050)],
)
def test_plain_pcm_wavs_are_probed_from_their_bytes_as_the_decoders_probe_them(tmp_path, subtype, channels, rate):
    path = tmp_path / "a.wav"
    sf.write(path, _signal(0.37, channels), rate, subtype=subtype, format="WAV")
    layout = audio._riff_pcm_layout(path.read_bytes())
    info = sf.info(str(path))
    assert layout == (channels, rate, {"PCM_U8": 8, "PCM_16": 16, "PCM_24": 24, "PCM_32": 32}[subtype], info.frames)
    found = audio.probe_audio(path)
    assert found == _decoded(path)
    assert found.status == AudioStatus.ok and found.duration_s == info.frames / rate
    assert found.sha256 == audio.sha256_file(path)


def test_a_plain_wav_opens_no_decoder(tmp_path, monkeypatch):
    path = tmp_path / "a.wav"
    sf.write(path, _signal(), SR, subtype="PCM_16")
    monkeypatch.setattr(audio, "VERIFY_FAST_PROBE", False)

    def refuse(_path):
        raise AssertionError("a decoder was opened")

    monkeypatch.setattr(audio, "_frames_soundfile", refuse)
    monkeypatch.setattr(audio, "_frames_librosa", refuse)
    assert audio.probe_audio(path).status == AudioStatus.ok


def _with_chunk_before_data(raw: bytes, name: bytes, body: bytes) -> bytes:
    """``raw`` (a 44-byte-header wav) with a chunk inserted between ``fmt `` and ``data``, the RIFF size updated."""
    chunk = name + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")
    out = raw[:36] + chunk + raw[36:]
    return out[:4] + struct.pack("<I", len(out) - 8) + out[8:]


def test_other_chunks_and_odd_lengths_are_walked_over(tmp_path):
    path = tmp_path / "a.wav"
    sf.write(path, _signal(), SR, subtype="PCM_16")
    raw = path.read_bytes()
    odd = tmp_path / "odd.wav"
    odd.write_bytes(_with_chunk_before_data(raw, b"LIST", b"INFOabc"))  # odd length: a pad byte follows
    assert audio._riff_pcm_layout(odd.read_bytes()) == (1, SR, 16, len(_signal()))
    assert audio.probe_audio(odd) == _decoded(odd)
    assert audio.probe_audio(odd).status == AudioStatus.ok


def _patched(raw: bytes, offset: int, fmt: str, value: int) -> bytes:
    return raw[:offset] + struct.pack(fmt, value) + raw[offset + struct.calcsize(fmt) :]


def test_what_is_not_a_plain_whole_pcm_wav_is_left_to_the_decoders(tmp_path):
    x = _signal()
    sf.write(tmp_path / "float.wav", x, SR, subtype="FLOAT")
    sf.write(tmp_path / "wavex.wav", x, SR, subtype="PCM_16", format="WAVEX")
    sf.write(tmp_path / "a.flac", x, SR)
    sf.write(tmp_path / "ok.wav", x, SR, subtype="PCM_16")
    raw = (tmp_path / "ok.wav").read_bytes()
    cases = {
        "float.wav": None,
        "wavex.wav": None,
        "a.flac": None,
        "cut.wav": raw[:-100],  # the header promises more frames than the file holds
        "streamed.wav": _patched(raw, 40, "<I", 0xFFFFFFFF),  # a streamed wav's data size
        "empty_data.wav": _patched(raw, 40, "<I", 0)[:44],
        "half_frame.wav": _patched(raw, 40, "<I", len(raw) - 44 - 1),  # not a whole number of frames
        "bad_align.wav": _patched(raw, 32, "<H", 4),  # block alignment of 4 for one 16-bit channel
        "rifx.wav": b"RIFX" + raw[4:],
        "no_fmt.wav": raw[:12] + raw[36:],
    }
    for name, data in cases.items():
        if data is not None:
            (tmp_path / name).write_bytes(data)
        path = tmp_path / name
        assert audio._riff_pcm_layout(path.read_bytes()) is None, name
        assert audio.probe_audio(path) == _decoded(path), name
    assert audio.probe_audio(tmp_path / "float.wav").status == AudioStatus.ok
    assert audio.probe_audio(tmp_path / "cut.wav").status == AudioStatus.corrupt
    assert "promises" in audio.probe_audio(tmp_path / "cut.wav").detail


def test_a_file_past_the_one_read_size_is_hashed_in_blocks_with_the_same_answer(tmp_path, monkeypatch):
    path = tmp_path / "a.wav"
    sf.write(path, _signal(), SR, subtype="PCM_16")
    small = audio.probe_audio(path)
    monkeypatch.setattr(audio, "FAST_PROBE_BYTES", 1000)
    assert audio.probe_audio(path) == small


def test_the_verification_hook_fails_on_a_disagreement(tmp_path, monkeypatch):
    path = tmp_path / "a.wav"
    sf.write(path, _signal(), SR, subtype="PCM_16")
    monkeypatch.setattr(audio, "VERIFY_FAST_PROBE", True)
    monkeypatch.setattr(audio, "_probe_decoding", lambda p, d: audio.AudioProbe(AudioStatus.corrupt, d, "no"))
    with pytest.raises(AssertionError, match="the plain wav check found"):
        audio.probe_audio(path)
