"""How a two-source mix was made (:class:`MixMeta`)."""

from __future__ import annotations

import logging
from typing import Literal

from airbench_nb.records.base import Record
from airbench_nb.records.checks import StrictInteger

logger = logging.getLogger(__name__)


class MixMeta(Record):
    """How a two-source mix was made, and what was measured on it (see :mod:`airbench_nb.mix`).

    Source A is usually speech, source B music or a sound. Times are in seconds on the mix's timeline, and
    offsets are relative to A's start. Each source is first normalised to ``reference_loudness``, then given its
    gain; the whole mix is then multiplied by ``scale`` (clipping protection), which leaves the relative levels
    unchanged. SNR is the energy ratio of the two scaled components over the samples where both clips play.
    """

    source_a: str
    """Path of source A as the caller gave it (relative to the data root when the mix belongs to a manifest)."""
    source_b: str
    """Path of source B, as given."""
    sha256_a: str | None = None
    """SHA-256 of source A's file, when it came from a file."""
    sha256_b: str | None = None
    """SHA-256 of source B's file, when it came from a file."""
    sample_rate: StrictInteger = 16000
    """Sample rate of the mix in Hz."""
    reference_loudness: float = -23.0
    """Common loudness reference each source is normalised to before its gain (in ``loudness_unit``)."""
    gain_a_db: float
    """Gain applied to A in dB, relative to the common loudness reference (the clipping ``scale`` comes on top)."""
    gain_b_db: float
    """Gain applied to B in dB, relative to the common loudness reference (the clipping ``scale`` comes on top)."""
    snr_db_requested: float | None = None
    """SNR of A over B that was asked for (SSEU-Bench style), or None when gains were given directly."""
    snr_db_measured: float | None = None
    """SNR of A over B in dB: ``10 log10(sum a**2 / sum b**2)`` over the overlap, on the two scaled components.

    None when one component is all zero over the overlap (the ratio is then 0 or infinite).
    """
    loudness_a: float | None = None
    """Loudness of scaled A over its own extent (LUFS, or dBFS RMS for clips too short for gating; see
    ``loudness_unit``)."""
    loudness_b: float | None = None
    """Loudness of scaled B over its own extent (same unit as ``loudness_a``)."""
    loudness_unit: Literal["LUFS", "dBFS"] = "LUFS"
    """Unit of the loudness fields: ``LUFS`` (ITU-R BS.1770) or ``dBFS`` (RMS fallback, used for both sources
    when either is too short or too quiet for gating)."""
    offset_s: float = 0.0
    """Start of B minus start of A in seconds, a whole number of samples (negative: B starts first)."""
    duration_a_s: float
    """Duration of A in seconds."""
    duration_b_s: float
    """Duration of B in seconds."""
    duration_s: float
    """Duration of the mix in seconds: from the first clip's start to the last clip's end."""
    overlap_s: float | None = None
    """Seconds during which both clips play (the region the SNR is measured on)."""
    onset_a_s: float | None = None
    """Audible onset of A on the mix's timeline: first 10 ms frame within 35 dB of A's loudest frame."""
    onset_b_s: float | None = None
    """Audible onset of B on the mix's timeline (same rule as ``onset_a_s``)."""
    louder: Literal["A", "B", "equal"]
    """Which scaled source is louder (``loudness_a`` vs ``loudness_b``); ``equal`` within ``louder_tolerance_db``."""
    louder_tolerance_db: float = 1.0
    """Loudness difference in dB at or under which ``louder`` is ``equal``."""
    ahead: Literal["meanwhile", "before", "after"]
    """When A starts relative to B, by audible onsets: ``before`` (A first), ``after`` (B first) or ``meanwhile``
    (onsets within ``meanwhile_tolerance_s``)."""
    meanwhile_tolerance_s: float = 0.1
    """Largest onset difference in seconds for which ``ahead`` is ``meanwhile``."""
    scale: float = 1.0
    """Factor applied to the whole mix to avoid clipping (1.0 when none was needed)."""
    peak_limit: float | None = 0.99
    """Peak the mix and each of its components were kept under by ``scale`` (None: no clipping protection was
    asked for)."""
