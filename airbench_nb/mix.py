"""Two-source mixing: loudness control, SNR, temporal dislocation, and the Louder/Ahead metadata.

AIR-Bench's mixed Chat items (speech with sound or music) and SSEU-Bench's speech-in-background protocol both
need a mix whose levels and timing are exactly what its :class:`~airbench_nb.records.MixMeta` says. The
definitions, which the tests check by measuring the audio:

Timeline
    A starts at 0 and B at ``offset_s``, rounded to a whole sample (negative: B starts first, and A starts at
    ``-offset_s``). The mix runs from the first start to the last end; each source is zero outside its clip.
    The clips must overlap (an offset beyond both clips is an error).

Loudness reference and gains
    Each source is first normalised to ``reference_loudness`` (default -23 LUFS, EBU R 128), then multiplied by
    its gain (``gain_a_db``, ``gain_b_db``: dB relative to that reference, AIR-Bench style, e.g. +3 / -3).
    Loudness is ITU-R BS.1770 integrated loudness (:func:`airbench_nb.audio.loudness`); when either clip is too
    short or too quiet for BS.1770 gating, both are measured as RMS dBFS instead, so the two are always on one
    scale (``loudness_unit``).

SNR (what ``snr_db`` asks for and ``snr_db_measured`` reports)
    ``10 log10(sum(a**2) / sum(b**2))`` over the overlap, the samples where both clips play, where ``a`` and
    ``b`` are the two components as placed and scaled in the mix (so the clipping scale cancels). It is a plain
    energy ratio: unweighted, and any silence inside the overlap counts. Asked for an SNR (SSEU-Bench style), the
    mixer measures the SNR of the two normalised sources, ``snr0``, and splits the correction evenly:
    ``gain_a_db = (snr - snr0) / 2`` and ``gain_b_db = -(snr - snr0) / 2``, which keeps both sources near the
    reference. The SNR is therefore exact up to float rounding (and 16-bit quantisation once written).

Louder
    Compares the loudness of the two scaled components, each over its own extent (not only the overlap):
    ``A`` or ``B`` when they differ by more than ``louder_tolerance_db``, else ``equal``. Loudness is K-weighted
    and gated, so at 0 dB SNR a hiss can be louder than a hum of the same energy.

Ahead
    When A starts relative to B, by their audible onsets on the mix's timeline (first 10 ms frame within 35 dB of
    the clip's loudest frame, so that leading silence in a file does not count): ``before`` when A's onset
    precedes B's by more than ``meanwhile_tolerance_s``, ``after`` when it follows by more, else ``meanwhile``.
    For clips without leading silence this is the sign of ``offset_s``.

Clipping protection
    If the peak of the sum or of either component would exceed ``peak_limit`` (default 0.99), the whole mix (both
    components) is multiplied by ``scale = peak_limit / peak``; the relative levels, hence the SNR and Louder, never
    change, and neither the mix nor a component written as a stem clips (a component may peak higher than the sum
    where the two cancel).

Bounds
    SNRs and gains must lie within ±:data:`MAX_LEVEL_DB` (beyond it one source is far below 16-bit quantisation, and
    ``10 ** (dB / 20)`` overflows long before ``1e308``), the loudness reference within
    [:data:`MIN_REFERENCE_LOUDNESS`, 0], and the offset inside the clips (checked before it is rounded to samples).
    A source more than :data:`QUIET_WARNING_DB` below the reference is logged as a warning before it is amplified:
    normalising it raises its noise floor by as much.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from airbench_nb.audio import (
    TARGET_SR,
    AudioError,
    Loudness,
    LoudnessUnit,
    audible_onset,
    check_samples,
    load_audio,
    loudness,
    sha256_file,
    write_wav,
)
from airbench_nb.records import MixMeta

logger = logging.getLogger(__name__)

DEFAULT_REFERENCE_LOUDNESS = -23.0
"""Loudness each source is normalised to before its gain (LUFS; EBU R 128's programme level)."""
DEFAULT_PEAK_LIMIT = 0.99
"""Peak the mix and each of its components are kept under: 1% headroom below full scale, so that writing 16-bit
audio (the mix, or a component as a stem) never clips."""
DEFAULT_LOUDER_TOLERANCE_DB = 1.0
"""Loudness difference (dB) at or under which Louder is ``equal``; a just-noticeable difference is ~1 dB."""
DEFAULT_MEANWHILE_TOLERANCE_S = 0.1
"""Onset difference (s) at or under which Ahead is ``meanwhile``."""
MAX_LEVEL_DB = 100.0
"""Largest SNR or gain magnitude (dB) the mixer accepts: 100 dB is beyond 16-bit audio's 96 dB range."""
MIN_REFERENCE_LOUDNESS = -100.0
"""Lowest loudness reference accepted (the highest is 0, full scale)."""
QUIET_WARNING_DB = 60.0
"""A source this many dB or more below the loudness reference is warned about before normalisation amplifies it."""
SNR_GRID_DB: tuple[float, ...] = (-10.0, -5.0, 0.0, 5.0, 10.0)
"""SSEU-Bench style SNR grid of speech over background, in dB."""
GAIN_PAIRS_DB: tuple[tuple[float, float], ...] = ((3.0, -3.0), (-3.0, 3.0), (0.0, 0.0))
"""AIR-Bench style gain pairs (A, B) in dB relative to the loudness reference."""
AUDIO_GLOB = ("*.wav", "*.flac", "*.mp3")
"""Audio files :func:`source_pairs` picks up."""


class MixError(ValueError):
    """A mix that cannot be made as asked: mismatched rates, bad parameters, or clips that do not overlap."""


@dataclass(frozen=True)
class Clip:
    """A mono signal with its sample rate and where it came from."""

    samples: np.ndarray
    """Mono samples (1-D float array)."""
    sr: int = TARGET_SR
    """Sample rate in Hz."""
    source: str = ""
    """Path as the caller gave it (relative to a data root for manifests), or a label for in-memory audio."""
    sha256: str | None = None
    """SHA-256 of the source file, when the clip came from a file."""

    @classmethod
    def from_file(cls, path: str | Path, *, root: str | Path | None = None, sr: int = TARGET_SR) -> Clip:
        """Load a wav/flac/mp3 file as a mono clip at ``sr`` Hz, hashing the file.

        Args:
            path: The file; relative to ``root`` when ``root`` is given. Recorded as given.
            root: Data root that ``path`` is relative to (the path may not leave it).
            sr: Sample rate to load at (files are downmixed and resampled).

        Returns:
            The clip, with ``source`` as given and the file's SHA-256.

        Raises:
            AudioError: If the file is missing, empty, undecodable or holds NaN/inf samples.
            ValueError: If ``root`` is given and ``path`` is absolute or leaves it.
        """
        if root is not None:
            from airbench_nb.manifests import resolve_audio

            full = resolve_audio(root, str(path) if isinstance(path, str) else path.as_posix())
        else:
            full = Path(path)
        samples = load_audio(full, sr=sr)
        source = path if isinstance(path, str) else path.as_posix()
        return cls(samples, sr, source, sha256_file(full))

    @property
    def duration_s(self) -> float:
        """Duration in seconds."""
        return len(self.samples) / self.sr


@dataclass(frozen=True)
class MixResult:
    """A mix, its two components as placed and scaled in it, and its metadata.

    ``mix == a + b`` sample for sample (float32); ``a`` and ``b`` have the mix's length and are zero outside
    their clips.
    """

    mix: np.ndarray
    """The mixed signal (float32, mono)."""
    a: np.ndarray
    """Component A as it is in the mix: placed at ``start_a``, normalised, gained and scaled."""
    b: np.ndarray
    """Component B as it is in the mix."""
    meta: MixMeta
    """How the mix was made and what was measured on it."""
    start_a: int
    """First sample of A's clip in the mix."""
    start_b: int
    """First sample of B's clip in the mix."""

    @property
    def sr(self) -> int:
        """Sample rate in Hz."""
        return self.meta.sample_rate

    @property
    def overlap(self) -> slice:
        """Samples of the mix where both clips play."""
        end_a = self.start_a + round(self.meta.duration_a_s * self.sr)
        end_b = self.start_b + round(self.meta.duration_b_s * self.sr)
        return slice(max(self.start_a, self.start_b), min(end_a, end_b))

    def write(self, path: str | Path) -> Path:
        """Write the mix as a 16-bit wav file (creating folders) and return its path."""
        return write_wav(path, self.mix, self.sr)


def energy_snr_db(a: np.ndarray, b: np.ndarray) -> float | None:
    """SNR of ``a`` over ``b`` in dB as an energy ratio: ``10 log10(sum(a**2) / sum(b**2))``.

    Args:
        a: Signal samples (the region to compare, already cut to the overlap).
        b: Interferer samples, same length as ``a``.

    Returns:
        The ratio in dB, or None when either is all zero.
    """
    ea = float(np.sum(np.square(np.asarray(a, dtype=np.float64))))
    eb = float(np.sum(np.square(np.asarray(b, dtype=np.float64))))
    if ea <= 0.0 or eb <= 0.0:
        return None
    return 10.0 * math.log10(ea / eb)


def classify_louder(loudness_a: float, loudness_b: float, tolerance_db: float) -> Literal["A", "B", "equal"]:
    """``A`` or ``B`` for whichever is louder by more than ``tolerance_db``, else ``equal``."""
    diff = loudness_a - loudness_b
    if abs(diff) <= tolerance_db:
        return "equal"
    return "A" if diff > 0 else "B"


def classify_ahead(onset_a_s: float, onset_b_s: float, tolerance_s: float) -> Literal["meanwhile", "before", "after"]:
    """When A starts relative to B: ``before`` (A first), ``after`` (B first) or ``meanwhile`` within tolerance."""
    diff = onset_b_s - onset_a_s
    if abs(diff) <= tolerance_s + 1e-9:
        return "meanwhile"
    return "before" if diff > 0 else "after"


def _common_loudness(a: np.ndarray, b: np.ndarray, sr: int) -> tuple[float, float, LoudnessUnit]:
    la = loudness(a, sr, name="source A")
    lb = loudness(b, sr, name="source B")
    if la.unit == lb.unit:
        return la.value, lb.value, la.unit
    logger.info("one source cannot be gated for LUFS: measuring both in dBFS RMS")
    return (loudness(a, sr, "dBFS").value, loudness(b, sr, "dBFS").value, "dBFS")


def _scaled_loudness(samples: np.ndarray, sr: int, unit: LoudnessUnit, raw: float, factor: float, name: str) -> float:
    """Loudness of a source as scaled in the mix, measured; computed when the scaling put it under the LUFS gate.

    K-weighting is linear and BS.1770's relative gate scale-free, so a clip scaled by ``factor`` is
    ``raw + 20 log10(factor)`` loud: exactly what is measured, until a large negative gain puts every block under
    the -70 LUFS absolute gate (or a float32 underflow silences it), where nothing can be measured.
    """
    try:
        return loudness(samples, sr, unit, name=name).value
    except AudioError:
        value = raw + 20.0 * math.log10(factor)
        logger.info("%s: under the measurable range; loudness computed from its gain: %.1f %s", name, value, unit)
        return value


def _finite(name: str, value: float | None) -> None:
    if value is not None and not math.isfinite(value):
        raise MixError(f"{name} must be a finite number, got {value!r}")


def _bounded(name: str, value: float | None, low: float, high: float) -> None:
    if value is not None and not low <= value <= high:
        raise MixError(f"{name} must lie within [{low:g}, {high:g}], got {value!r}")


def _as_clip(x: Clip | np.ndarray, sr: int, label: str) -> Clip:
    return x if isinstance(x, Clip) else Clip(np.asarray(x), sr, label)


def mix(
    a: Clip | np.ndarray,
    b: Clip | np.ndarray,
    *,
    sr: int = TARGET_SR,
    snr_db: float | None = None,
    gain_a_db: float | None = None,
    gain_b_db: float | None = None,
    offset_s: float = 0.0,
    reference_loudness: float = DEFAULT_REFERENCE_LOUDNESS,
    louder_tolerance_db: float = DEFAULT_LOUDER_TOLERANCE_DB,
    meanwhile_tolerance_s: float = DEFAULT_MEANWHILE_TOLERANCE_S,
    peak_limit: float | None = DEFAULT_PEAK_LIMIT,
) -> MixResult:
    """Mix source A (e.g. speech) with source B (e.g. music or a sound); see the module docstring.

    Give either ``snr_db`` (SSEU-Bench style) or both ``gain_a_db`` and ``gain_b_db`` (AIR-Bench style).

    Args:
        a: Source A: a :class:`Clip`, or mono samples at ``sr`` (then labelled ``A``).
        b: Source B, likewise (labelled ``B``).
        sr: Sample rate of bare arrays.
        snr_db: Target SNR of A over B in dB, over the overlap.
        gain_a_db: Gain of A in dB relative to the loudness reference.
        gain_b_db: Gain of B in dB relative to the loudness reference.
        offset_s: Start of B minus start of A in seconds (rounded to a whole sample; negative: B first).
        reference_loudness: Loudness each source is normalised to before its gain.
        louder_tolerance_db: Loudness difference at or under which Louder is ``equal``.
        meanwhile_tolerance_s: Onset difference at or under which Ahead is ``meanwhile``.
        peak_limit: Peak the mix and each component are kept under by scaling the mix as a whole; None disables
            the protection.

    Returns:
        A :class:`MixResult`: the mix, its two components and its :class:`MixMeta`.

    Raises:
        AudioError: If a source is stereo (2-D), empty, holds NaN/inf, or is all silent (``SilentAudioError``).
        MixError: For different sample rates, both or neither loudness mode, non-finite parameters, an SNR or gain
            beyond ±``MAX_LEVEL_DB``, a reference outside [``MIN_REFERENCE_LOUDNESS``, 0], an offset that leaves no
            overlap, or (SNR mode) a source that is silent over the whole overlap.
    """
    ca, cb = _as_clip(a, sr, "A"), _as_clip(b, sr, "B")
    if ca.sr != cb.sr:
        raise MixError(
            f"sample rates differ: A ({ca.source}) is {ca.sr} Hz and B ({cb.source}) is {cb.sr} Hz; "
            f"resample both to one rate first (load_audio gives {TARGET_SR} Hz)"
        )
    rate = int(ca.sr)
    if snr_db is not None and (gain_a_db is not None or gain_b_db is not None):
        raise MixError("give either snr_db or gain_a_db and gain_b_db, not both")
    if snr_db is None and (gain_a_db is None or gain_b_db is None):
        raise MixError("give snr_db, or both gain_a_db and gain_b_db")
    for name, value in (
        ("snr_db", snr_db),
        ("gain_a_db", gain_a_db),
        ("gain_b_db", gain_b_db),
        ("offset_s", offset_s),
        ("reference_loudness", reference_loudness),
        ("louder_tolerance_db", louder_tolerance_db),
        ("meanwhile_tolerance_s", meanwhile_tolerance_s),
    ):
        _finite(name, value)
    for name, value in (("snr_db", snr_db), ("gain_a_db", gain_a_db), ("gain_b_db", gain_b_db)):
        _bounded(name, value, -MAX_LEVEL_DB, MAX_LEVEL_DB)
    _bounded("reference_loudness", reference_loudness, MIN_REFERENCE_LOUDNESS, 0.0)
    _bounded("louder_tolerance_db", louder_tolerance_db, 0.0, MAX_LEVEL_DB)
    if louder_tolerance_db < 0 or meanwhile_tolerance_s < 0:
        raise MixError("tolerances must be >= 0")
    if peak_limit is not None and not 0.0 < peak_limit <= 1.0:
        raise MixError(f"peak_limit must be in (0, 1] or None, got {peak_limit!r}")

    xa = check_samples(ca.samples, f"source A ({ca.source})").astype(np.float64)
    xb = check_samples(cb.samples, f"source B ({cb.source})").astype(np.float64)
    if not -xb.size / rate < offset_s < xa.size / rate:  # in seconds first: a huge offset overflows the rounding
        raise MixError(
            f"offset_s={offset_s} leaves no overlap: A lasts {xa.size / rate:.3f} s and B {xb.size / rate:.3f} s, "
            f"so B must start between {-xb.size / rate:.3f} s and {xa.size / rate:.3f} s after A (exclusive)"
        )
    shift = round(offset_s * rate)
    start_a, start_b = max(0, -shift), max(0, shift)
    end_a, end_b = start_a + xa.size, start_b + xb.size
    ov_start, ov_end = max(start_a, start_b), min(end_a, end_b)
    if ov_end <= ov_start:
        raise MixError(
            f"offset_s={offset_s} leaves no overlap: A lasts {xa.size / rate:.3f} s and B {xb.size / rate:.3f} s, "
            f"so B must start between {-xb.size / rate:.3f} s and {xa.size / rate:.3f} s after A (exclusive)"
        )

    raw_la, raw_lb, unit = _common_loudness(xa, xb, rate)
    for label, raw, clip in (("A", raw_la, ca), ("B", raw_lb, cb)):
        if reference_loudness - raw >= QUIET_WARNING_DB:
            logger.warning(
                "source %s (%s) is %.1f dB below the loudness reference (%.1f %s against %.1f): normalising it "
                "amplifies its noise floor by as much; is it the clip you meant?",
                label,
                clip.source,
                reference_loudness - raw,
                raw,
                unit,
                reference_loudness,
            )
    norm_a = 10.0 ** ((reference_loudness - raw_la) / 20.0)
    norm_b = 10.0 ** ((reference_loudness - raw_lb) / 20.0)
    if snr_db is not None:
        seg_a = xa[ov_start - start_a : ov_end - start_a] * norm_a
        seg_b = xb[ov_start - start_b : ov_end - start_b] * norm_b
        for label, seg, clip in (("A", seg_a, ca), ("B", seg_b, cb)):
            if not np.any(seg):
                raise MixError(
                    f"source {label} ({clip.source}) is silent over the whole overlap "
                    f"({ov_start / rate:.3f}-{ov_end / rate:.3f} s): the SNR is undefined; change offset_s"
                )
        snr0 = energy_snr_db(seg_a, seg_b)
        assert snr0 is not None  # both segments hold signal (checked above)
        gain_a_db = (snr_db - snr0) / 2.0
        gain_b_db = -(snr_db - snr0) / 2.0
    assert gain_a_db is not None and gain_b_db is not None
    ga = norm_a * 10.0 ** (gain_a_db / 20.0)
    gb = norm_b * 10.0 ** (gain_b_db / 20.0)

    total = max(end_a, end_b)
    comp_a = np.zeros(total, dtype=np.float64)
    comp_b = np.zeros(total, dtype=np.float64)
    comp_a[start_a:end_a] = xa * ga
    comp_b[start_b:end_b] = xb * gb
    # The components are written too (a builder's stems): where they cancel in the sum, one of them may peak
    # higher than the mix, so the limit holds for each of them as well as for the sum.
    peak = max(float(np.max(np.abs(comp_a + comp_b))), float(np.max(np.abs(comp_a))), float(np.max(np.abs(comp_b))))
    scale = 1.0
    if peak_limit is not None and peak > peak_limit:
        scale = peak_limit / peak
        logger.info("mix of %s and %s would peak at %.3f: scaled by %.4f", ca.source, cb.source, peak, scale)
    a32 = (comp_a * scale).astype(np.float32)
    b32 = (comp_b * scale).astype(np.float32)
    mixed = a32 + b32

    overlap = slice(ov_start, ov_end)
    measured = energy_snr_db(a32[overlap], b32[overlap])
    scaled_la = _scaled_loudness(a32[start_a:end_a], rate, unit, raw_la, ga * scale, f"scaled source A ({ca.source})")
    scaled_lb = _scaled_loudness(b32[start_b:end_b], rate, unit, raw_lb, gb * scale, f"scaled source B ({cb.source})")
    onset_a = start_a / rate + audible_onset(xa, rate)
    onset_b = start_b / rate + audible_onset(xb, rate)
    meta = MixMeta(
        source_a=ca.source,
        source_b=cb.source,
        sha256_a=ca.sha256,
        sha256_b=cb.sha256,
        sample_rate=rate,
        reference_loudness=reference_loudness,
        gain_a_db=gain_a_db,
        gain_b_db=gain_b_db,
        snr_db_requested=snr_db,
        snr_db_measured=measured,
        loudness_a=scaled_la,
        loudness_b=scaled_lb,
        loudness_unit=unit,
        offset_s=shift / rate,
        duration_a_s=xa.size / rate,
        duration_b_s=xb.size / rate,
        duration_s=total / rate,
        overlap_s=(ov_end - ov_start) / rate,
        onset_a_s=onset_a,
        onset_b_s=onset_b,
        louder=classify_louder(scaled_la, scaled_lb, louder_tolerance_db),
        louder_tolerance_db=louder_tolerance_db,
        ahead=classify_ahead(onset_a, onset_b, meanwhile_tolerance_s),
        meanwhile_tolerance_s=meanwhile_tolerance_s,
        scale=scale,
        peak_limit=peak_limit,
    )
    return MixResult(mixed, a32, b32, meta, start_a, start_b)


def mix_files(
    path_a: str | Path,
    path_b: str | Path,
    *,
    root: str | Path | None = None,
    out: str | Path | None = None,
    sr: int = TARGET_SR,
    **kwargs: Any,
) -> MixResult:
    """Load two audio files (mono, ``sr`` Hz), mix them with :func:`mix`, and optionally write the mix.

    Args:
        path_a: Source A's file, recorded in the metadata as given (relative to ``root`` when given).
        path_b: Source B's file, likewise.
        root: Data root the paths are relative to; None: the paths are used as they are.
        out: Where to write the mix as 16-bit wav; None: not written.
        sr: Sample rate to load the files at.
        **kwargs: Passed to :func:`mix` (``snr_db`` or ``gain_a_db``/``gain_b_db``, ``offset_s``, ...).

    Returns:
        The :class:`MixResult`, whose metadata carries the paths as given and the files' SHA-256.

    Raises:
        AudioError: If a file is missing, empty, undecodable, or its audio is unusable (NaN, silent).
        MixError: As :func:`mix`.
    """
    result = mix(Clip.from_file(path_a, root=root, sr=sr), Clip.from_file(path_b, root=root, sr=sr), **kwargs)
    if out is not None:
        result.write(out)
    return result


def remix(meta: MixMeta, root: str | Path | None = None) -> MixResult:
    """Rebuild a mix (and its components) from its metadata and source files, checking their hashes.

    The recorded gains, offset, reference, tolerances and peak limit reproduce the mix exactly.

    Args:
        meta: The mix's metadata, whose sources are files.
        root: Data root the source paths are relative to (None: as recorded).

    Returns:
        The rebuilt :class:`MixResult` (with ``snr_db_requested`` copied from ``meta``).

    Raises:
        AudioError: If a source file is missing or unusable.
        MixError: If a source file's SHA-256 differs from the recorded one.
    """
    clips = []
    for label, path, digest in (("A", meta.source_a, meta.sha256_a), ("B", meta.source_b, meta.sha256_b)):
        clip = Clip.from_file(path, root=root, sr=meta.sample_rate)
        if digest and clip.sha256 != digest:
            raise MixError(
                f"source {label} ({path}) changed since the mix was made: "
                f"sha256 {digest[:12]}... recorded, {clip.sha256[:12] if clip.sha256 else None}... now"
            )
        clips.append(clip)
    result = mix(
        clips[0],
        clips[1],
        gain_a_db=meta.gain_a_db,
        gain_b_db=meta.gain_b_db,
        offset_s=meta.offset_s,
        reference_loudness=meta.reference_loudness,
        louder_tolerance_db=meta.louder_tolerance_db,
        meanwhile_tolerance_s=meta.meanwhile_tolerance_s,
        peak_limit=meta.peak_limit,
    )
    rebuilt = result.meta.model_copy(update={"snr_db_requested": meta.snr_db_requested})
    return MixResult(result.mix, result.a, result.b, rebuilt, result.start_a, result.start_b)


def source_pairs(root: str | Path, n_pairs: int, seed: int = 0) -> list[tuple[str, str]]:
    """Pair speech files with background files found under ``root/speech/`` and ``root/background/``.

    Args:
        root: Folder holding ``speech/`` and ``background/`` (wav, flac or mp3).
        n_pairs: Number of pairs; files are reused, in a seeded order, when there are fewer.
        seed: Seed of the pairing.

    Returns:
        ``(speech, background)`` paths relative to ``root``, with forward slashes.

    Raises:
        FileNotFoundError: If either folder holds no audio file.
    """
    root = Path(root)
    found: dict[str, list[str]] = {}
    for kind in ("speech", "background"):
        files = sorted({p for pattern in AUDIO_GLOB for p in (root / kind).glob(pattern) if p.is_file()})
        if not files:
            raise FileNotFoundError(f"no audio files (wav, flac, mp3) in {root / kind}")
        found[kind] = [p.relative_to(root).as_posix() for p in files]
    rng = np.random.default_rng(seed)
    speech = [found["speech"][i] for i in rng.permutation(len(found["speech"]))]
    background = [found["background"][i] for i in rng.permutation(len(found["background"]))]
    return [(speech[i % len(speech)], background[i % len(background)]) for i in range(n_pairs)]


DEMO_SENTENCES = (
    "The meeting starts at nine tomorrow morning.",
    "Please turn left at the second traffic light.",
    "She bought three apples and a loaf of bread.",
    "The train to the airport leaves every twenty minutes.",
)
"""What the demo speech sources say."""
DEMO_VOICES = ("m3", "f2", "m1", "f4")
"""espeak-ng variants of the demo speech sources."""
DEMO_BACKGROUNDS = ("pink_noise", "chord", "brown_noise", "white_noise")
"""Kinds of demo background sources."""


def _demo_background(kind: str, seconds: float, rng: np.random.Generator, sr: int = TARGET_SR) -> np.ndarray:
    from airbench_nb.synth.noise import coloured_noise

    n = int(round(seconds * sr))
    if kind.endswith("_noise"):
        return coloured_noise(kind.removesuffix("_noise"), n, rng, rms=0.05)
    # A sustained A-minor chord of additive tones with a slow tremolo: a stand-in for music.
    t = np.arange(n) / sr
    root = 220.0 * 2.0 ** (rng.integers(-3, 4) / 12.0)
    chord = sum(sum(np.sin(2 * np.pi * root * ratio * h * t) / h**1.5 for h in (1, 2, 3)) for ratio in (1.0, 1.2, 1.5))
    chord *= 1.0 + 0.3 * np.sin(2 * np.pi * 3.0 * t)
    return (0.05 * chord / np.sqrt(np.mean(chord**2))).astype(np.float32)


def write_demo_sources(
    root: str | Path, n_pairs: int = 2, seed: int = 0, seconds: float = 3.0
) -> list[tuple[str, str]]:
    """Synthesize speech (espeak-ng) and backgrounds (noise, a chord) under ``root/speech`` and ``root/background``.

    Args:
        root: Folder to write into.
        n_pairs: Number of speech/background pairs to make (one file of each per pair).
        seed: Seed of the noise and chord.
        seconds: Length of each background clip.

    Returns:
        The pairs, as :func:`source_pairs` gives them (paths relative to ``root``).

    Raises:
        SpeechSynthesisError: When espeak-ng is missing.
    """
    from airbench_nb.synth.speech import speak

    root = Path(root)
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(n_pairs):
        text, voice = DEMO_SENTENCES[i % len(DEMO_SENTENCES)], DEMO_VOICES[i % len(DEMO_VOICES)]
        kind = DEMO_BACKGROUNDS[i % len(DEMO_BACKGROUNDS)]
        speech_rel, background_rel = f"speech/speech_{i:02d}_{voice}.wav", f"background/{kind}_{i:02d}.wav"
        write_wav(root / speech_rel, speak(text, "en-us", voice))
        write_wav(root / background_rel, _demo_background(kind, seconds, rng))
        pairs.append((speech_rel, background_rel))
    return pairs


@dataclass(frozen=True)
class GridMix:
    """One mix of a grid: its settings, and the file and metadata it gave, or why it failed."""

    pair: int
    """Index of the source pair."""
    mode: Literal["snr", "gains"]
    """``snr`` (SSEU-Bench style) or ``gains`` (AIR-Bench style)."""
    snr_db: float | None
    """Requested SNR in ``snr`` mode."""
    gains_db: tuple[float, float] | None
    """Requested (A, B) gains in ``gains`` mode."""
    offset_s: float
    """Requested start of B minus start of A."""
    path: str | None
    """The mix file, relative to the grid's output folder; None on failure."""
    meta: MixMeta | None
    """The mix's metadata; None on failure."""
    error: str | None = None
    """Why the mix failed; None on success."""


MIX_FORMATS = ("wav", "flac")
"""File formats of :func:`mix_grid` (16-bit PCM both; FLAC is lossless and about 30% smaller here)."""


def _mix_name(
    pair: int, snr_db: float | None, gains_db: tuple[float, float] | None, offset_s: float, fmt: str = "wav"
) -> str:
    level = f"snr{snr_db:+g}dB" if gains_db is None else f"gains{gains_db[0]:+g}{gains_db[1]:+g}dB"
    return f"pair{pair:02d}_{level}_off{offset_s:+g}s.{fmt}"


def mix_grid(
    pairs: Sequence[tuple[str, str]],
    out_dir: str | Path,
    *,
    root: str | Path | None = None,
    snr_grid: Sequence[float] = SNR_GRID_DB,
    gain_pairs: Sequence[Sequence[float]] = GAIN_PAIRS_DB,
    offsets_s: Sequence[float] = (0.0,),
    fmt: str = "wav",
    **kwargs: Any,
) -> list[GridMix]:
    """Mix every source pair at every SNR and gain pair, at every offset, writing each mix as a wav (or flac) file.

    A mix that fails (e.g. an offset beyond both clips, a silent source) is recorded with its error; the others
    go on. Files are named ``pairNN_snr+5dB_off+0.5s.wav`` or ``pairNN_gains+3-3dB_off+0s.wav``.

    Args:
        pairs: ``(A, B)`` source paths (relative to ``root`` when given), recorded as given.
        out_dir: Folder for the mixes.
        root: Data root of the source paths.
        snr_grid: SNRs (dB) of A over B.
        gain_pairs: ``(gain A, gain B)`` pairs in dB relative to the loudness reference.
        offsets_s: Start of B minus start of A, in seconds.
        fmt: ``wav`` or ``flac`` (see :data:`MIX_FORMATS`): the files' format and extension.
        **kwargs: Passed to :func:`mix` (``reference_loudness``, tolerances, ``peak_limit``).

    Returns:
        One :class:`GridMix` per requested mix, in order (pair, offset, SNRs then gain pairs).
    """
    if fmt not in MIX_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(MIX_FORMATS)}, got {fmt!r}")
    out_dir = Path(out_dir)
    levels: list[tuple[float | None, tuple[float, float] | None]] = [(float(s), None) for s in snr_grid]
    levels += [(None, (float(g[0]), float(g[1]))) for g in gain_pairs]
    clips: dict[str, Clip | str] = {}
    done: list[GridMix] = []
    for index, (path_a, path_b) in enumerate(pairs):
        for path in (path_a, path_b):
            if path not in clips:
                try:
                    clips[path] = Clip.from_file(path, root=root)
                except ValueError as exc:  # AudioError, or a path outside the root: every mix of it fails
                    clips[path] = f"{type(exc).__name__}: {exc}"
        for offset in offsets_s:
            for snr_db, gains_db in levels:
                name = _mix_name(index, snr_db, gains_db, float(offset), fmt)
                settings = {
                    "pair": index,
                    "mode": "snr" if gains_db is None else "gains",
                    "snr_db": snr_db,
                    "gains_db": gains_db,
                    "offset_s": float(offset),
                }
                clip_a, clip_b = clips[path_a], clips[path_b]
                if isinstance(clip_a, str) or isinstance(clip_b, str):
                    error = clip_a if isinstance(clip_a, str) else clip_b
                    done.append(GridMix(**settings, path=None, meta=None, error=str(error)))
                    continue
                level = {"snr_db": snr_db} if gains_db is None else {"gain_a_db": gains_db[0], "gain_b_db": gains_db[1]}
                try:
                    result = mix(clip_a, clip_b, offset_s=float(offset), **level, **kwargs)
                except ValueError as exc:  # AudioError and MixError: recorded, the grid goes on
                    logger.warning("mix %s failed: %s", name, exc)
                    done.append(GridMix(**settings, path=None, meta=None, error=f"{type(exc).__name__}: {exc}"))
                    continue
                result.write(out_dir / name)
                done.append(GridMix(**settings, path=name, meta=result.meta))
    return done


def grid_frame(mixes: Sequence[GridMix]) -> Any:
    """A pandas DataFrame of a grid: one row per mix, its settings (and a ``setting`` label), error, and meta fields."""
    import pandas as pd

    base = ["pair", "mode", "snr_db", "gains_db", "setting", "offset_requested_s", "path", "error"]
    meta_fields = [name for name in MixMeta.model_fields if name != "schema_version"]
    rows = []
    for m in mixes:
        if m.gains_db is None:
            setting = f"snr {m.snr_db:+g} dB"
        else:
            setting = f"gains {m.gains_db[0]:+g}/{m.gains_db[1]:+g} dB"
        row: dict[str, Any] = dict(
            zip(base, [m.pair, m.mode, m.snr_db, m.gains_db, setting, m.offset_s, m.path, m.error], strict=True)
        )
        if m.meta is not None:
            row.update(m.meta.model_dump(exclude={"schema_version"}))
        rows.append(row)
    return pd.DataFrame(rows, columns=[*base, *meta_fields])


def loudness_of(clip: Clip) -> Loudness:
    """Loudness of a clip (LUFS, or dBFS RMS when too short or quiet for gating)."""
    return loudness(clip.samples, clip.sr, name=clip.source or "clip")
