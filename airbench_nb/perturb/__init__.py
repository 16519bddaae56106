"""Audio perturbations beyond additive noise, each measured on the audio it wrote.

Families (codec, reverberation, speed, pitch, clipping, loudness), their parameters, ranges and default grid are
in :mod:`airbench_nb.perturb.spec`; how each is made in :mod:`airbench_nb.perturb.apply`; how each is measured in
:mod:`airbench_nb.perturb.measure`; writing a perturbed copy and measuring the written files in
:mod:`airbench_nb.perturb.written`.
"""

from airbench_nb.perturb.apply import PerturbedAudio, apply, synthetic_rir
from airbench_nb.perturb.measure import (
    ClippingMeasured,
    CodecMeasured,
    LoudnessMeasured,
    Measured,
    PitchMeasured,
    ReverbMeasured,
    SpeedMeasured,
    measured_dict,
    pitch_ratio,
    schroeder_rt60,
)
from airbench_nb.perturb.spec import (
    DEFAULT_GRID,
    FAMILIES,
    PERTURBATION_META_KEYS,
    Perturbation,
    PerturbError,
    parse_perturbation,
    parse_perturbations,
    perturbed_uid,
)
from airbench_nb.perturb.written import PerturbationRecord, perturb_file, write_perturbed

__all__ = [
    "DEFAULT_GRID",
    "FAMILIES",
    "PERTURBATION_META_KEYS",
    "ClippingMeasured",
    "CodecMeasured",
    "LoudnessMeasured",
    "Measured",
    "PerturbError",
    "Perturbation",
    "PerturbationRecord",
    "PerturbedAudio",
    "PitchMeasured",
    "ReverbMeasured",
    "SpeedMeasured",
    "apply",
    "measured_dict",
    "parse_perturbation",
    "parse_perturbations",
    "perturb_file",
    "perturbed_uid",
    "pitch_ratio",
    "schroeder_rt60",
    "synthetic_rir",
    "write_perturbed",
]
