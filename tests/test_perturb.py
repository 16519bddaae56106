"""Perturbations beyond additive noise: each measured on the files written, against known answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.audio import AudioError, SilentAudioError
from airbench_nb.perturb import (
    DEFAULT_GRID,
    FAMILIES,
    PERTURBATION_META_KEYS,
    ClippingMeasured,
    CodecMeasured,
    LoudnessMeasured,
    Perturbation,
    PerturbError,
    PitchMeasured,
    ReverbMeasured,
    SpeedMeasured,
    apply,
    parse_perturbation,
    parse_perturbations,
    perturb_file,
    perturbed_uid,
    pitch_ratio,
    schroeder_rt60,
    write_perturbed,
)

SR = 16000


def harmonic_tone(f0: float = 220.0, seconds: float = 2.0, harmonics: int = 8) -> np.ndarray:
    """A harmonic tone with 1/k partials, peak well under full scale."""
    t = np.arange(round(seconds * SR)) / SR
    return sum(0.2 / k * np.sin(2 * np.pi * f0 * k * t) for k in range(1, harmonics + 1)).astype(np.float32)


@pytest.fixture(scope="module")
def tone() -> np.ndarray:
    return harmonic_tone()


@pytest.fixture(scope="module")
def bursts() -> np.ndarray:
    """Noise bursts: 250 ms of white noise, 250 ms of silence, for 2 s."""
    t = np.arange(2 * SR) / SR
    rng = np.random.default_rng(7)
    return (0.1 * rng.standard_normal(t.size) * (np.sin(2 * np.pi * 2 * t) > 0)).astype(np.float32)


def _snr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    ref = np.asarray(reference, dtype=np.float64)
    err = np.asarray(estimate, dtype=np.float64) - ref
    return 10 * math.log10(np.sum(ref**2) / np.sum(err**2))


# --- codec -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "fmt", "subtype"),
    [
        ("codec:mp3:24", "MP3", "MPEG_LAYER_III"),
        ("codec:mp3:48", "MP3", "MPEG_LAYER_III"),
        ("codec:mp3:96", "MP3", "MPEG_LAYER_III"),
        ("codec:opus:16", "OGG", "OPUS"),
        ("codec:opus:32", "OGG", "OPUS"),
        ("codec:opus:64", "OGG", "OPUS"),
    ],
)
def test_codec_bitrate_is_measured_from_the_encoded_file(
    tmp_path: Path, tone: np.ndarray, text: str, fmt: str, subtype: str
) -> None:
    spec = parse_perturbation(text)
    record = write_perturbed(tone, SR, spec, tmp_path / "clip.wav")
    encoded = Path(record.artifacts[0])
    assert encoded.suffix == f".{spec.codec}" and encoded.is_file()
    info = sf.info(str(encoded))
    measured = record.measured
    assert isinstance(measured, CodecMeasured)
    assert (measured.format, measured.subtype) == (info.format, info.subtype) == (fmt, subtype)
    # the record is the file's own size over its own duration
    assert measured.bitrate_kbps == pytest.approx(encoded.stat().st_size * 8 / info.duration / 1000)
    # without the container's headers, the codec's own rate is within 10% of the target (Opus is VBR)
    assert measured.audio_bitrate_kbps <= measured.bitrate_kbps
    assert abs(measured.audio_bitrate_kbps / spec.parameter - 1) <= 0.10
    assert measured.value == measured.audio_bitrate_kbps
    # the decoded copy is aligned with the input (decoder delay removed) and as long
    written, rate = sf.read(record.path)
    assert rate == SR and written.size == tone.size
    assert _snr_db(tone, written) > 5.0


def test_codec_quality_grows_with_bitrate(tone: np.ndarray) -> None:
    snrs = [_snr_db(tone, apply(tone, SR, parse_perturbation(f"codec:opus:{k}")).samples) for k in (16, 32, 64)]
    assert snrs[0] < snrs[2]


def test_codec_refuses_a_rate_it_cannot_write(tone: np.ndarray) -> None:
    with pytest.raises(PerturbError, match="cannot be written at 44100 Hz"):
        apply(tone, 44100, parse_perturbation("codec:mp3:48"))


# --- reverberation -----------------------------------------------------------------------------------------------


def test_schroeder_rt60_of_a_pure_exponential_decay() -> None:
    """Known answer: an envelope falling 60 dB in 0.5 s has RT60 0.5 s."""
    t = np.arange(SR) / SR
    rir = np.exp(-3 * math.log(10) * t / 0.5)
    rt60, method = schroeder_rt60(rir, SR)
    assert method == "T30"
    assert rt60 == pytest.approx(0.5, rel=0.01)


@pytest.mark.parametrize("rt60", [0.3, 0.6, 1.0])
def test_reverb_rt60_measured_on_the_written_rir_within_20_percent(
    tmp_path: Path, bursts: np.ndarray, rt60: float
) -> None:
    record = write_perturbed(bursts, SR, Perturbation("reverb", rt60), tmp_path / "clip.wav", seed=5)
    measured = record.measured
    assert isinstance(measured, ReverbMeasured)
    rir_path = Path(record.artifacts[0])
    assert rir_path.name == "clip.rir.wav"
    rir, _ = sf.read(str(rir_path))
    assert rir.size == math.ceil(1.5 * rt60 * SR)
    assert schroeder_rt60(rir, SR)[0] == pytest.approx(measured.rt60_s)
    assert abs(measured.rt60_s / rt60 - 1) <= 0.20
    # level kept: the written output is as loud as the input
    assert abs(measured.level_change_db) < 0.1
    written, _ = sf.read(record.path)
    assert written.size == bursts.size
    # reverberation fills the gaps between bursts: energy in the first silent gap (250-500 ms) rises
    gap = slice(round(0.3 * SR), round(0.35 * SR))
    assert np.sum(written[gap] ** 2) > 1e3 * np.sum(bursts[gap].astype(np.float64) ** 2 + 1e-12)


def test_reverb_is_deterministic_per_seed(tone: np.ndarray) -> None:
    spec = Perturbation("reverb", 0.6)
    a, b = apply(tone, SR, spec, seed=1), apply(tone, SR, spec, seed=1)
    c = apply(tone, SR, spec, seed=2)
    assert np.array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)


# --- speed and pitch ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [0.9, 1.1])
def test_speed_changes_duration_and_pitch_together(tmp_path: Path, tone: np.ndarray, factor: float) -> None:
    record = write_perturbed(tone, SR, Perturbation("speed", factor), tmp_path / "clip.wav")
    measured = record.measured
    assert isinstance(measured, SpeedMeasured)
    frames = sf.info(record.path).frames
    assert measured.factor == pytest.approx(tone.size / frames)
    assert measured.factor == pytest.approx(factor, rel=1e-3)
    written, _ = sf.read(record.path)
    assert pitch_ratio(tone, written, SR) == pytest.approx(factor, rel=0.005)


def test_pitch_ratio_of_two_tones() -> None:
    """Known answer: a 242 Hz harmonic tone is 1.1 times a 220 Hz one."""
    assert pitch_ratio(harmonic_tone(220.0), harmonic_tone(242.0), SR) == pytest.approx(1.1, rel=0.002)


@pytest.mark.parametrize("ratio", [0.9, 1.1])
def test_pitch_shift_measured_on_a_harmonic_tone_keeps_duration(tmp_path: Path, tone: np.ndarray, ratio: float) -> None:
    record = write_perturbed(tone, SR, Perturbation("pitch", ratio), tmp_path / "clip.wav")
    measured = record.measured
    assert isinstance(measured, PitchMeasured)
    assert sf.info(record.path).frames == tone.size and measured.duration_ratio == 1.0
    assert measured.ratio == pytest.approx(ratio, rel=0.01)
    assert measured.semitones == pytest.approx(12 * math.log2(ratio), abs=0.15)


# --- clipping ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0.5, 0.25, 0.1])
def test_clipping_share_of_a_sine(tmp_path: Path, fraction: float) -> None:
    """Known answer: a sine clipped at p of its peak spends 1 - (2/pi) arcsin(p) of its time clipped."""
    t = np.arange(SR) / SR
    sine = (0.8 * np.sin(2 * np.pi * 197.3 * t)).astype(np.float32)  # incommensurate: phases fill the cycle
    record = write_perturbed(sine, SR, Perturbation("clipping", fraction), tmp_path / "clip.wav")
    measured = record.measured
    assert isinstance(measured, ClippingMeasured)
    assert measured.clipped_share == pytest.approx(1 - 2 / math.pi * math.asin(fraction), abs=0.01)
    assert measured.peak_ratio == pytest.approx(fraction, abs=1e-3)
    written, _ = sf.read(record.path)
    assert np.max(np.abs(written)) == pytest.approx(0.8 * fraction, abs=1e-3)


# --- loudness ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [-30.0, -23.0, -14.0])
@pytest.mark.parametrize("clip", ["tone", "bursts"])
def test_loudness_measured_on_the_written_file_within_half_a_lu(
    tmp_path: Path, request: pytest.FixtureRequest, clip: str, target: float
) -> None:
    import pyloudnorm

    samples = request.getfixturevalue(clip)
    record = write_perturbed(samples, SR, Perturbation("loudness", target), tmp_path / "clip.wav")
    measured = record.measured
    assert isinstance(measured, LoudnessMeasured)
    data, rate = sf.read(record.path)
    independent = pyloudnorm.Meter(rate, block_size=0.4).integrated_loudness(data)
    assert measured.unit == "LUFS"
    assert measured.loudness == pytest.approx(independent, abs=1e-6)
    assert abs(independent - target) <= 0.5
    assert measured.clipped_share == 0.0 and measured.true_peak_dbfs <= 0.0


def test_loudness_at_full_scale_reports_the_clipping(tmp_path: Path, tone: np.ndarray) -> None:
    """A harmonic tone at 0 LUFS would peak above full scale: the clipped share says so and the level falls short."""
    record = write_perturbed(tone, SR, Perturbation("loudness", 0.0), tmp_path / "clip.wav")
    measured = record.measured
    assert isinstance(measured, LoudnessMeasured)
    assert measured.clipped_share > 0.0
    assert measured.loudness < -0.5
    written, _ = sf.read(record.path)
    assert np.max(np.abs(written)) <= 1.0


def test_loudness_of_a_clip_too_short_to_gate_is_set_in_dbfs(tmp_path: Path) -> None:
    short = harmonic_tone(seconds=0.3)
    record = write_perturbed(short, SR, Perturbation("loudness", -23.0), tmp_path / "clip.wav")
    measured = record.measured
    assert isinstance(measured, LoudnessMeasured) and measured.unit == "dBFS"
    written, _ = sf.read(record.path)
    assert 20 * math.log10(np.sqrt(np.mean(written**2))) == pytest.approx(-23.0, abs=0.05)


# --- specs, refusals, records ------------------------------------------------------------------------------------


def test_default_grid_covers_every_family_and_round_trips() -> None:
    assert {spec.family for spec in DEFAULT_GRID} == set(FAMILIES)
    for spec in DEFAULT_GRID:
        assert parse_perturbation(spec.text) == spec
    assert len({spec.tag for spec in DEFAULT_GRID}) == len(DEFAULT_GRID)
    assert parse_perturbations("reverb:0.3, codec:opus:32") == [
        Perturbation("reverb", 0.3),
        Perturbation("codec", 32, "opus"),
    ]
    assert parse_perturbations("none") == [] and parse_perturbations(None) == []


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda: parse_perturbation("echo:0.5"), "family 'echo' is unknown"),
        (lambda: parse_perturbation("codec:aac:32"), "codec 'aac' is unknown"),
        (lambda: parse_perturbation("codec:mp3"), "expected codec:<mp3|opus>:<kbit/s>"),
        (lambda: parse_perturbation("speed:fast"), "'fast' is not a number"),
        (lambda: parse_perturbation("speed:3"), "speed perturbation: parameter 3 factor is outside [0.5, 2]"),
        (lambda: parse_perturbation("codec:mp3:320"), "outside [16, 160]"),
        (lambda: parse_perturbation("clipping:1"), "outside (0, 1)"),
        (lambda: parse_perturbation("loudness:3"), "outside [-70, 0]"),
        (lambda: Perturbation("reverb", float("nan")), "must be finite"),
        (lambda: Perturbation("reverb", 0.5, "mp3"), "only for the codec family"),
        (lambda: parse_perturbations("reverb:0.3,reverb:0.3"), "listed twice"),
    ],
)
def test_bad_specs_are_refused_in_one_line(make, needle: str) -> None:  # noqa: ANN001
    with pytest.raises(PerturbError) as info:
        make()
    message = str(info.value)
    assert needle in message and "\n" not in message


@pytest.mark.parametrize(
    ("samples", "error", "needle"),
    [
        (np.zeros(0, dtype=np.float32), AudioError, "zero samples"),
        (np.array([0.1, np.nan, 0.2] * 100, dtype=np.float32), AudioError, "NaN"),
        (np.zeros(SR, dtype=np.float32), SilentAudioError, "all silent"),
        (np.zeros((SR, 2), dtype=np.float32), AudioError, "mono"),
    ],
)
def test_unusable_clips_are_refused(samples: np.ndarray, error: type[Exception], needle: str) -> None:
    for spec in (Perturbation("loudness", -23), Perturbation("reverb", 0.3)):
        with pytest.raises(error, match=needle):
            apply(samples, SR, spec)


def test_record_meta_holds_the_meta_keys_and_is_json(tmp_path: Path, tone: np.ndarray) -> None:
    spec = parse_perturbation("codec:opus:32")
    record = write_perturbed(tone, SR, spec, tmp_path / "q-001.wav", seed=3)
    meta = record.meta("q-001")
    assert tuple(meta) == PERTURBATION_META_KEYS
    assert meta["perturbation_of"] == "q-001" and meta["perturbation"] == "codec:opus" and meta["parameter"] == 32.0
    assert meta["measured"]["value"] == record.measured.value and meta["measured"]["seed"] == 3
    json.dumps(meta)
    json.dumps(record.as_dict())
    assert perturbed_uid("q-001", spec) == "q-001@p-opus-32k"
    with pytest.raises(PerturbError, match="as a .wav file"):
        write_perturbed(tone, SR, spec, tmp_path / "q-001.flac")


def test_perturb_file_reads_a_file_and_measures_the_copy(tmp_path: Path, tone: np.ndarray) -> None:
    source = tmp_path / "clean.wav"
    sf.write(str(source), tone, SR, subtype="PCM_16")
    record = perturb_file(source, tmp_path / "out" / "speed.wav", Perturbation("speed", 1.1))
    assert isinstance(record.measured, SpeedMeasured)
    assert record.measured.factor == pytest.approx(1.1, rel=1e-3)
    with pytest.raises(AudioError):
        perturb_file(tmp_path / "missing.wav", tmp_path / "x.wav", Perturbation("speed", 1.1))


def test_same_seed_same_files(tmp_path: Path, tone: np.ndarray) -> None:
    for spec in (Perturbation("reverb", 0.3), parse_perturbation("codec:mp3:48"), Perturbation("pitch", 1.1)):
        a = write_perturbed(tone, SR, spec, tmp_path / "a" / "clip.wav", seed=9)
        b = write_perturbed(tone, SR, spec, tmp_path / "b" / "clip.wav", seed=9)
        assert a.sha256 == b.sha256, spec.text


def test_every_default_perturbation_records_plain_json(tmp_path: Path) -> None:
    clip = harmonic_tone(seconds=1.0)
    for spec in DEFAULT_GRID:
        record = write_perturbed(clip, SR, spec, tmp_path / f"{spec.tag}.wav")
        meta = record.meta("u")
        json.dumps(meta, allow_nan=False)
        kinds = {key: type(value) for key, value in meta["measured"].items()}
        assert set(kinds.values()) <= {int, float, str, list}, (spec.text, kinds)
