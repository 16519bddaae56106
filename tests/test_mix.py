"""The mixer does what its metadata says, measured on the audio rather than read back from MixMeta.

The tests separate each mix themselves: they place the raw sources where the offset puts them and fit the mix
as ``g_a * A + g_b * B`` by least squares. A residual at float rounding level proves the mix is exactly that
sum with the offset right to the sample; the SNR, loudness and onsets are then measured on the fitted
components with numpy and pyloudnorm directly.
"""

import hashlib
import json

import numpy as np
import pyloudnorm
import pytest
import soundfile as sf
from typer.testing import CliRunner

from airbench_nb.audio import AudioError, SilentAudioError, write_wav
from airbench_nb.cli import app
from airbench_nb.mix import (
    SNR_GRID_DB,
    Clip,
    MixError,
    grid_frame,
    mix,
    mix_files,
    mix_grid,
    remix,
    source_pairs,
    write_demo_sources,
)
from airbench_nb.records import MixMeta

SR = 16000


# ---------------------------------------------------------------- independent measurement helpers


def _placed(x, start, total):
    out = np.zeros(total)
    out[start : start + x.size] = x
    return out


def _starts(offset_s, sr=SR):
    shift = round(offset_s * sr)
    return max(0, -shift), max(0, shift)


def _separate(mixed, a, b, offset_s):
    """Fit ``mixed`` as ``g_a * A + g_b * B`` with A and B placed by the test; return the components."""
    start_a, start_b = _starts(offset_s)
    total = max(start_a + a.size, start_b + b.size)
    assert mixed.size == total, "mix length is not the span of the two placed clips"
    pa, pb = _placed(a.astype(float), start_a, total), _placed(b.astype(float), start_b, total)
    (ga, gb), *_ = np.linalg.lstsq(np.stack([pa, pb], axis=1), mixed.astype(float), rcond=None)
    residual = mixed - ga * pa - gb * pb
    overlap = slice(max(start_a, start_b), min(start_a + a.size, start_b + b.size))
    return ga * pa, gb * pb, residual, overlap


def _snr(ca, cb, overlap):
    return 10 * np.log10(np.sum(ca[overlap] ** 2) / np.sum(cb[overlap] ** 2))


def _source(kind, seconds, rng):
    n = int(seconds * SR)
    t = np.arange(n) / SR
    if kind == "white":
        x = rng.standard_normal(n)
    elif kind == "pink":
        spectrum = np.fft.rfft(rng.standard_normal(n))
        spectrum[1:] /= np.sqrt(np.arange(1, spectrum.size))
        x = np.fft.irfft(spectrum, n)
    elif kind == "tone":  # a harmonic tone with a syllable-rate envelope, like voiced speech
        f0 = rng.uniform(90, 250)
        x = sum(np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 6)) / h for h in range(1, 6))
        x *= 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)
    else:  # bursts: noise gated on and off
        x = rng.standard_normal(n) * (np.sin(2 * np.pi * 2.5 * t) > 0)
        x[: int(0.02 * SR)] = rng.standard_normal(int(0.02 * SR))  # audible from the first sample
    x = x / np.max(np.abs(x)) * rng.uniform(0.05, 0.9)
    return x.astype(np.float32)


def _random_pair(rng):
    kinds = ["white", "pink", "tone", "bursts"]
    a = _source(kinds[rng.integers(4)], rng.uniform(0.6, 2.5), rng)
    b = _source(kinds[rng.integers(4)], rng.uniform(0.6, 2.5), rng)
    # Any offset that leaves at least 0.2 s of overlap.
    offset = rng.uniform(-(b.size / SR) + 0.2, a.size / SR - 0.2)
    return a, b, float(offset)


# ---------------------------------------------------------------- SNR, offset, clipping over random pairs


def test_snr_grid_holds_on_separated_components_for_random_pairs(rng):
    for _ in range(5):
        a, b, offset = _random_pair(rng)
        for snr in SNR_GRID_DB:
            result = mix(a, b, snr_db=snr, offset_s=offset)
            ca, cb, residual, overlap = _separate(result.mix, a, b, offset)
            # Exactly A plus B, each placed to the sample (float32 rounding only).
            assert np.max(np.abs(residual)) < 1e-5 * max(1e-3, np.max(np.abs(result.mix)))
            measured = _snr(ca, cb, overlap)
            assert abs(measured - snr) < 0.5, (snr, measured)
            assert abs(measured - snr) < 0.01  # in fact exact up to rounding
            assert np.max(np.abs(result.mix)) <= 1.0
            assert result.meta.snr_db_measured == pytest.approx(measured, abs=1e-3)
            np.testing.assert_allclose(result.a + result.b, result.mix, atol=1e-7)


def test_snr_holds_in_the_written_16_bit_file(tmp_path, rng):
    a, b, offset = _random_pair(rng)
    for snr in (-10.0, 0.0, 10.0):
        path = mix(a, b, snr_db=snr, offset_s=offset).write(tmp_path / f"m{snr}.wav")
        written, sr = sf.read(str(path), dtype="int16")
        assert sr == SR and np.max(np.abs(written.astype(int))) < 32767  # nothing at (or beyond) full scale
        ca, cb, _, overlap = _separate(written / 32768.0, a, b, offset)
        assert abs(_snr(ca, cb, overlap) - snr) < 0.5


@pytest.mark.parametrize("offset", [0.0, 1 / SR, -1 / SR, 0.0123, -0.3377, 0.75, -1.2])
def test_offset_is_exact_to_the_sample(offset, rng):
    a = rng.standard_normal(SR).astype(np.float32) * 0.1
    b = rng.standard_normal(int(1.5 * SR)).astype(np.float32) * 0.1
    result = mix(a, b, gain_a_db=0.0, gain_b_db=0.0, offset_s=offset)
    start_a, start_b = _starts(offset)
    assert (np.flatnonzero(result.a)[0], np.flatnonzero(result.b)[0]) == (start_a, start_b)
    assert np.flatnonzero(result.a)[-1] == start_a + a.size - 1
    _, _, residual, _ = _separate(result.mix, a, b, offset)
    assert np.max(np.abs(residual)) < 1e-5
    # One sample off would leave a residual the size of the signal.
    _, _, wrong, _ = _separate(result.mix, a, np.r_[np.zeros(1, np.float32), b[:-1]], offset)
    assert np.max(np.abs(wrong)) > 0.01
    assert round(result.meta.offset_s * SR) == start_b - start_a


def test_clipping_never_occurs_and_the_scale_is_recorded(tmp_path, rng):
    a = _source("tone", 1.5, rng)
    b = _source("white", 1.0, rng)
    loud = mix(a, b, gain_a_db=18.0, gain_b_db=15.0, offset_s=0.25)
    raw = mix(a, b, gain_a_db=18.0, gain_b_db=15.0, offset_s=0.25, peak_limit=None)
    peak = np.max(np.abs(raw.mix.astype(float)))
    assert peak > 1.0 and raw.meta.scale == 1.0  # without protection it would clip
    assert np.max(np.abs(loud.mix)) <= 0.99 + 1e-6
    assert loud.meta.scale == pytest.approx(0.99 / peak, rel=1e-5)
    np.testing.assert_allclose(loud.mix, raw.mix * loud.meta.scale, atol=1e-6)
    # Relative levels unchanged: same SNR, same loudness difference, same Louder.
    ca, cb, _, ov = _separate(loud.mix, a, b, 0.25)
    ra, rb, _, _ = _separate(raw.mix, a, b, 0.25)
    assert _snr(ca, cb, ov) == pytest.approx(_snr(ra, rb, ov), abs=1e-4)
    assert loud.meta.loudness_a - loud.meta.loudness_b == pytest.approx(raw.meta.loudness_a - raw.meta.loudness_b)
    assert loud.meta.louder == raw.meta.louder
    written, _ = sf.read(str(loud.write(tmp_path / "loud.wav")), dtype="int16")
    assert np.max(np.abs(written.astype(int))) < 32767
    quiet = mix(a, b, gain_a_db=0.0, gain_b_db=0.0)
    assert quiet.meta.scale == 1.0


# ---------------------------------------------------------------- Louder and Ahead against the audio


def _lufs(x):
    return pyloudnorm.Meter(SR).integrated_loudness(np.asarray(x, dtype=float))


@pytest.mark.parametrize(
    ("level", "kinds"),
    [
        ({"gain_a_db": 6.0, "gain_b_db": -6.0}, ("tone", "pink")),
        ({"gain_a_db": -4.0, "gain_b_db": 4.0}, ("tone", "white")),
        ({"gain_a_db": 0.0, "gain_b_db": 0.0}, ("tone", "pink")),
        ({"gain_a_db": 0.5, "gain_b_db": 0.0}, ("white", "bursts")),
        ({"snr_db": 10.0}, ("white", "white")),
        ({"snr_db": -10.0}, ("pink", "pink")),
        ({"snr_db": 0.0}, ("tone", "white")),
    ],
)
def test_louder_matches_the_loudness_of_the_separated_components(level, kinds, rng):
    a, b = _source(kinds[0], 2.0, rng), _source(kinds[1], 1.5, rng)
    result = mix(a, b, offset_s=0.2, **level)
    ca, cb, _, _ = _separate(result.mix, a, b, 0.2)
    start_a, start_b = _starts(0.2)
    diff = _lufs(ca[start_a : start_a + a.size]) - _lufs(cb[start_b : start_b + b.size])
    expected = "equal" if abs(diff) <= 1.0 else ("A" if diff > 0 else "B")
    assert result.meta.louder == expected, (diff, result.meta)
    assert result.meta.loudness_unit == "LUFS"
    assert result.meta.loudness_a - result.meta.loudness_b == pytest.approx(diff, abs=0.01)
    if "gain_a_db" in level:  # both sources start from the same reference: loudness difference = gain difference
        assert diff == pytest.approx(level["gain_a_db"] - level["gain_b_db"], abs=0.01)


def _first_audible(component):
    return np.flatnonzero(np.abs(component) > 1e-6)[0] / SR


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        (-1.0, "after"),
        (-0.3, "after"),
        (-0.05, "meanwhile"),
        (0.0, "meanwhile"),
        (0.08, "meanwhile"),
        (0.3, "before"),
        (1.0, "before"),
    ],
)
def test_ahead_matches_the_audio(offset, expected, rng):
    a, b = _source("white", 1.5, rng), _source("tone", 2.0, rng)
    result = mix(a, b, snr_db=0.0, offset_s=offset)
    ca, cb, _, _ = _separate(result.mix, a, b, offset)
    onset_gap = float(_first_audible(cb) - _first_audible(ca))
    heard = "before" if onset_gap > 0.1 else "after" if onset_gap < -0.1 else "meanwhile"
    assert heard == expected
    assert result.meta.ahead == expected
    assert result.meta.meanwhile_tolerance_s == 0.1


def test_ahead_follows_audible_onsets_not_file_starts(rng):
    # A's file opens with 0.5 s of silence: B, starting 0.3 s after A's file, is heard first.
    a = np.r_[np.zeros(int(0.5 * SR), np.float32), _source("tone", 1.0, rng)]
    b = _source("pink", 1.5, rng)
    result = mix(a, b, gain_a_db=0.0, gain_b_db=0.0, offset_s=0.3)
    assert result.meta.ahead == "after"
    assert result.meta.onset_a_s == pytest.approx(0.5, abs=0.011)
    assert result.meta.onset_b_s == pytest.approx(0.3, abs=0.011)
    assert mix(a, b, gain_a_db=0.0, gain_b_db=0.0, offset_s=0.45).meta.ahead == "meanwhile"
    assert mix(a, b, gain_a_db=0.0, gain_b_db=0.0, offset_s=0.8).meta.ahead == "before"
    assert mix(a, b, gain_a_db=0.0, gain_b_db=0.0, meanwhile_tolerance_s=0.6).meta.ahead == "meanwhile"


# ---------------------------------------------------------------- bad inputs


def test_bad_inputs_get_clear_errors(rng):
    a = _source("white", 1.0, rng)
    b = _source("pink", 1.0, rng)
    with pytest.raises(MixError, match="sample rates differ: A \\(speech.wav\\) is 16000 Hz and B .* 22050 Hz"):
        mix(Clip(a, 16000, "speech.wav"), Clip(b, 22050, "music.wav"), snr_db=0.0)
    with pytest.raises(AudioError, match="source A.*mono 1-D.*shape \\(8000, 2\\).*stereo"):
        mix(a.reshape(-1, 2), b, snr_db=0.0)
    with pytest.raises(SilentAudioError, match="source B.*all silent"):
        mix(a, np.zeros(SR, np.float32), snr_db=0.0)
    nan = a.copy()
    nan[123] = np.nan
    with pytest.raises(AudioError, match="source A.*NaN or infinite.*index 123"):
        mix(nan, b, gain_a_db=0.0, gain_b_db=0.0)
    with pytest.raises(AudioError, match="zero samples"):
        mix(a, np.zeros(0, np.float32), snr_db=0.0)
    for offset in (1.0, -1.0, 25.0, -25.0):  # at or beyond the end of either clip: no overlap
        with pytest.raises(MixError, match="leaves no overlap"):
            mix(a, b, snr_db=0.0, offset_s=offset)
    assert mix(a, b, snr_db=0.0, offset_s=1.0 - 1 / SR).meta.overlap_s == pytest.approx(1 / SR)
    with pytest.raises(MixError, match="either snr_db or"):
        mix(a, b, snr_db=0.0, gain_a_db=1.0)
    with pytest.raises(MixError, match="give snr_db, or both"):
        mix(a, b, gain_a_db=1.0)
    with pytest.raises(MixError, match="snr_db must be a finite"):
        mix(a, b, snr_db=float("nan"))
    with pytest.raises(MixError, match="offset_s must be a finite"):
        mix(a, b, snr_db=0.0, offset_s=float("inf"))
    with pytest.raises(MixError, match="peak_limit"):
        mix(a, b, snr_db=0.0, peak_limit=1.5)


def test_snr_of_a_source_silent_over_the_overlap_is_refused(rng):
    a = np.r_[_source("tone", 0.5, rng), np.zeros(SR, np.float32)]  # sound, then a second of silence
    b = _source("pink", 1.0, rng)
    with pytest.raises(MixError, match="source A \\(A\\) is silent over the whole overlap"):
        mix(a, b, snr_db=0.0, offset_s=0.6)
    # With gains the mix is made, and the SNR, undefined, is recorded as None.
    assert mix(a, b, gain_a_db=0.0, gain_b_db=0.0, offset_s=0.6).meta.snr_db_measured is None


def test_no_component_clips_where_the_sources_cancel_in_the_sum(tmp_path, rng):
    """A component (a builder's stem) may peak above the sum where the sources cancel: it is kept under the limit."""
    a = _source("tone", 1.0, rng)
    b = -a + 0.01 * _source("white", 1.0, rng)  # nearly a's opposite: the sum stays small, each source is loud
    result = mix(a, b, gain_a_db=9.0, gain_b_db=9.0, offset_s=0.0, reference_loudness=-3.0)
    raw = mix(a, b, gain_a_db=9.0, gain_b_db=9.0, offset_s=0.0, reference_loudness=-3.0, peak_limit=None)
    assert np.max(np.abs(raw.a.astype(float))) > 1.0 > np.max(np.abs(raw.mix.astype(float)))  # unprotected
    for name, samples in (("mix", result.mix), ("a", result.a), ("b", result.b)):
        assert np.max(np.abs(samples.astype(float))) <= 0.99 + 1e-6, name
        written, _ = sf.read(str(write_wav(tmp_path / f"{name}.wav", samples)), dtype="int16")
        assert np.max(np.abs(written.astype(int))) < 32767, name
    assert result.meta.scale < 1.0 and result.meta.louder == raw.meta.louder
    np.testing.assert_allclose(result.mix, result.a + result.b, atol=1e-6)


def test_short_clips_use_dbfs_for_both_sources(rng):
    a = _source("white", 0.25, rng)  # shorter than one 400 ms gating block
    b = _source("pink", 2.0, rng)
    result = mix(a, b, gain_a_db=3.0, gain_b_db=-3.0)
    assert result.meta.loudness_unit == "dBFS"

    def dbfs(x):
        return 10 * np.log10(np.mean(np.asarray(x, float) ** 2))

    assert result.meta.loudness_a == pytest.approx(dbfs(result.a[: a.size]), abs=1e-3)
    assert result.meta.loudness_b == pytest.approx(dbfs(result.b), abs=1e-3)
    assert result.meta.loudness_a == pytest.approx(-23.0 + 3.0, abs=1e-3)
    assert result.meta.louder == "A"


# ---------------------------------------------------------------- files, metadata, CLI, grid


@pytest.fixture
def source_files(tmp_path, rng):
    root = tmp_path / "data"
    (root / "speech").mkdir(parents=True)
    (root / "background").mkdir()
    sf.write(str(root / "speech" / "a.wav"), _source("tone", 1.5, rng), SR)
    stereo = np.stack([_source("pink", 2.0, np.random.default_rng(5))] * 2, axis=1)
    sf.write(str(root / "background" / "b.flac"), stereo, 44100)  # stereo at 44.1 kHz: downmixed, resampled
    return root


def test_mix_files_records_paths_as_given_and_hashes(source_files, tmp_path):
    root = source_files
    result = mix_files("speech/a.wav", "background/b.flac", root=root, out=tmp_path / "out" / "m.wav", snr_db=5.0)
    meta = result.meta
    assert (meta.source_a, meta.source_b) == ("speech/a.wav", "background/b.flac")
    assert meta.sha256_a == hashlib.sha256((root / "speech/a.wav").read_bytes()).hexdigest()
    assert meta.sha256_b == hashlib.sha256((root / "background/b.flac").read_bytes()).hexdigest()
    info = sf.info(str(tmp_path / "out" / "m.wav"))
    assert (info.samplerate, info.channels, info.subtype) == (SR, 1, "PCM_16")
    assert meta.duration_b_s == pytest.approx(2.0 * SR / 44100, abs=1e-3)
    assert MixMeta.model_validate_json(meta.model_dump_json()) == meta
    absolute = mix_files(root / "speech/a.wav", root / "background/b.flac", snr_db=5.0)
    assert absolute.meta.source_a == (root / "speech/a.wav").as_posix()
    with pytest.raises(AudioError, match="no such audio file"):
        mix_files("speech/none.wav", "background/b.flac", root=root, snr_db=0.0)
    with pytest.raises(ValueError, match="outside|'..'"):
        mix_files("../x.wav", "background/b.flac", root=root, snr_db=0.0)


def test_remix_rebuilds_the_mix_and_checks_hashes(source_files):
    root = source_files
    original = mix_files("speech/a.wav", "background/b.flac", root=root, snr_db=-5.0, offset_s=-0.4)
    again = remix(original.meta, root)
    np.testing.assert_array_equal(again.mix, original.mix)
    np.testing.assert_array_equal(again.b, original.b)
    assert again.meta == original.meta
    sf.write(str(root / "speech" / "a.wav"), np.ones(100, np.float32) * 0.1, SR)
    with pytest.raises(MixError, match="source A \\(speech/a.wav\\) changed"):
        remix(original.meta, root)


def test_cli_mix(source_files, tmp_path):
    runner = CliRunner()
    a, b, out = str(source_files / "speech/a.wav"), str(source_files / "background/b.flac"), tmp_path / "m.wav"
    done = runner.invoke(app, ["mix", a, b, "--out", str(out), "--snr-db", "-5", "--offset-s", "-0.25", "--json"])
    assert done.exit_code == 0, done.output
    meta = MixMeta.model_validate(json.loads(done.stdout))
    assert meta.snr_db_requested == -5.0 and meta.offset_s == -0.25 and meta.ahead == "after" and out.is_file()
    written, _ = sf.read(str(out))
    ca, cb, _, overlap = _separate(
        written, Clip.from_file(a).samples, Clip.from_file(b).samples, -0.25
    )  # measured on the file
    assert abs(_snr(ca, cb, overlap) + 5.0) < 0.5
    table = runner.invoke(app, ["mix", a, b, "--out", str(out), "--gain-a-db", "3", "--gain-b-db", "-3"])
    assert table.exit_code == 0 and "louder" in table.stdout and "wrote" in table.stdout
    for bad in (["--snr-db", "0", "--gain-a-db", "1"], ["--gain-a-db", "1"], ["--snr-db", "0", "--offset-s", "9"]):
        failed = runner.invoke(app, ["mix", a, b, "--out", str(out), *bad])
        assert failed.exit_code == 2 and "error:" in failed.output


def test_mix_grid_writes_files_and_records_failures(source_files, tmp_path):
    pairs = source_pairs(source_files, 2, seed=0)
    assert pairs == [("speech/a.wav", "background/b.flac")] * 2
    grid = mix_grid(
        pairs[:1], tmp_path / "mixes", root=source_files, snr_grid=[-5, 5], gain_pairs=[[3, -3]], offsets_s=[0, 9]
    )
    assert len(grid) == 6
    ok = [g for g in grid if g.meta is not None]
    assert len(ok) == 3 and all(g.offset_s == 0 for g in ok)
    assert all("no overlap" in g.error for g in grid if g.meta is None)
    assert {g.path for g in ok} == {
        "pair00_snr-5dB_off+0s.wav",
        "pair00_snr+5dB_off+0s.wav",
        "pair00_gains+3-3dB_off+0s.wav",
    }
    assert all((tmp_path / "mixes" / g.path).is_file() for g in ok)
    frame = grid_frame(grid)
    assert len(frame) == 6 and frame["error"].notna().sum() == 3 and "snr_db_measured" in frame
    assert set(frame["setting"]) == {"snr -5 dB", "snr +5 dB", "gains +3/-3 dB"}
    assert list(grid_frame(grid[3:]).columns) == list(frame.columns)  # failures only: same columns
    with pytest.raises(FileNotFoundError, match="no audio files"):
        source_pairs(tmp_path, 1)


def test_demo_sources_are_speech_and_backgrounds(tmp_path):
    pairs = write_demo_sources(tmp_path, n_pairs=2, seed=1, seconds=1.0)
    assert [p[0].split("/")[0] for p in pairs] == ["speech", "speech"]
    assert pairs[1][1] == "background/chord_01.wav"
    for speech, background in pairs:
        assert Clip.from_file(speech, root=tmp_path).duration_s > 1.0
        assert Clip.from_file(background, root=tmp_path).duration_s == pytest.approx(1.0)
    assert source_pairs(tmp_path, 2, seed=0) != []


def test_mix_grid_writes_flac_when_asked(source_files, tmp_path):
    pairs = [("speech/a.wav", "background/b.flac")]
    done = mix_grid(pairs, tmp_path / "m", root=source_files, snr_grid=[0], gain_pairs=[], fmt="flac")
    assert [m.path for m in done] == ["pair00_snr+0dB_off+0s.flac"]
    data, sr = sf.read(str(tmp_path / "m" / done[0].path), dtype="int16")
    info = sf.info(str(tmp_path / "m" / done[0].path))
    assert info.format == "FLAC" and info.subtype == "PCM_16" and sr == 16000 and data.size
    with pytest.raises(ValueError, match="fmt must be one of wav, flac"):
        mix_grid(pairs, tmp_path / "x", root=source_files, fmt="mp3")
