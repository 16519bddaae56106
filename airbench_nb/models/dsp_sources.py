"""``baseline:dsp`` on the tiered benchmark's closed set: measure the clip, then reason from the measurements.

The kit's synthesized sources differ on properties measured on the audio (:mod:`airbench_nb.synth.sources_measure`;
each fine class of ``data_manifests/tiered/hierarchy.json`` gives the range of its category's properties). This
baseline measures every property the item's classes give and compares the values with each class's ranges: a class
*fits* when every property it gives lies inside its range. It then answers with a short rationale and a final
``Answer: X`` line, as a chain-of-thought model would, so that the reasoning analysis has something real to read:

- the fitting class whose values lie nearest the middle of its ranges is within :data:`CENTRAL` widths of it: it
  names the measurement and the range it falls in (a detailed acoustic analysis);
- else, when classes fit, it keeps that same class and says it ruled the others out (an elimination);
- none fits: it names the class whose ranges are nearest (in widths of the range) as the one the clip resembles
  (a pattern match).

Which of the three happens depends on the class (some classes' ranges are narrow, some properties are shared across
categories), and so does being right: the strategy–accuracy association is confounded by class by construction,
which the reasoning analysis must see through. Classes the hierarchy gives no ranges for (a user's own data) cannot
be measured: the baseline then cannot tell.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from airbench_nb.models.base import Prompt
from airbench_nb.records import LETTERS

logger = logging.getLogger(__name__)

PROPERTY_WORDS: dict[str, str] = {
    "pitch_modulation_hz": "pitch modulation rate",
    "lowest_partial_hz": "lowest strong partial",
    "dominant_hz": "dominant frequency",
    "firing_rate_hz": "firing rate of the amplitude envelope",
    "quiet_fraction": "quiet fraction of the amplitude envelope",
    "glide_oct_per_s": "pitch glide",
    "impact_rate_hz": "onset rate",
}
"""How the rationale names each measured property."""


CENTRAL = 0.1
"""A fitting class whose measured values lie within this many widths of its ranges' middles (summed over its
properties) is asserted from the measurement; a fit farther from the middle is chosen by elimination."""


def _value(value: float, unit: str) -> str:
    text = f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}".strip()


def _distance(ranges: dict[str, tuple[float, float]], measured: dict[str, float]) -> tuple[float, float]:
    """(how far outside its ranges, how far from their middles), both in widths of the range; inf when unmeasured."""
    outside = middle = 0.0
    for prop, (low, high) in ranges.items():
        value = measured.get(prop, math.nan)
        if math.isnan(value):
            return math.inf, math.inf
        width = max(high - low, 1e-9)
        outside += max(low - value, 0.0, value - high) / width
        middle += abs(value - (low + high) / 2) / width
    return outside, middle


def dsp_source_answer(prompt: Prompt) -> str | None:
    """The DSP baseline's answer to a closed-set sound-source item, or None when no option can be measured."""
    from airbench_nb.synth.sources import hierarchy
    from airbench_nb.synth.sources_measure import measure_many

    item: Any = prompt.item
    tree = hierarchy()
    known = set(tree.fine_names)
    candidates = [(i, tree.fine(name)) for i, name in enumerate(item.classes) if name in known]
    candidates = [(i, fine) for i, fine in candidates if fine.ranges]
    if not candidates:
        return None
    props = sorted({prop for _, fine in candidates for prop in fine.ranges})
    measured = measure_many(prompt.audio, props, prompt.sample_rate)
    scored = [(i, fine, *_distance(dict(fine.ranges), measured)) for i, fine in candidates]
    fits = sorted((s for s in scored if s[2] == 0.0), key=lambda s: (s[3], s[0]))
    if fits and fits[0][3] <= CENTRAL:
        i, fine, _, _ = fits[0]
        prop, (low, high) = min(
            fine.ranges.items(), key=lambda r: abs(measured[r[0]] - sum(r[1]) / 2) / max(r[1][1] - r[1][0], 1e-9)
        )
        unit = tree.properties[prop].unit if prop in tree.properties else ""
        words, value = PROPERTY_WORDS.get(prop, prop), _value(measured[prop], unit)
        return (
            f"I measured the clip's {words} at {value}, near the middle of the range of a {item.choices[i]} "
            f"({low:g}-{high:g} {unit}).\nAnswer: {LETTERS[i]}"
        )
    if fits:
        i = fits[0][0]
        others = ", ".join(item.choices[s[0]] for s in fits[1:])
        return (
            f"Several sources fit what I measured ({item.choices[i]}, {others}). I rule out all but the one whose "
            f"values sit nearest the middle of its ranges, so by elimination it is a {item.choices[i]}.\n"
            f"Answer: {LETTERS[i]}"
        )
    reachable = [s for s in scored if math.isfinite(s[2])]
    if not reachable:
        return None
    i, fine, _, _ = min(reachable, key=lambda s: (s[2], s[0]))
    return (
        f"No source's ranges hold everything I measured; the clip resembles a {item.choices[i]} more than anything "
        f"else.\nAnswer: {LETTERS[i]}"
    )
