"""The item ``meta`` keys that mark an audio-reliance control, and what a prompt reads from them.

A control (:mod:`airbench_nb.builders.controls` makes them) is a derived copy of an item whose audio is taken away,
replaced or described. Its marks live in the item's ``meta`` so that every layer can read them without the builder:
the prompts (a ``description`` control's text goes before the question), the models (a ``no_audio`` prompt goes
without audio, or is ``n/a`` for a backend that cannot prompt text alone), the scoring (controls are left out of the
score tables) and the analysis.

A perturbed copy (:mod:`airbench_nb.builders.perturbations`: the same question asked of a codec-coded,
reverberated, ... copy of the audio) is marked here too, by :data:`PERTURBATION_OF_KEY`, so that the scoring and the
analysis leave it out of the score tables the same way.
"""

from __future__ import annotations

from typing import Any

CONTROLS = ("silence", "noise", "mismatched", "no_audio", "description")
"""The controls, in the order they are made."""
CONTROL_OF_KEY = "control_of"
"""Item ``meta`` key naming the uid of the item a control was made of (its presence marks a control)."""
CONTROL_KEY = "control"
"""Item ``meta`` key naming the control (one of :data:`CONTROLS`)."""
CONTROL_TEXT_KEY = "control_text"
"""Item ``meta`` key of the text given in place of the audio (the ``description`` control)."""
WITHOUT_AUDIO_KEY = "control_without_audio"
"""Item ``meta`` key: true when the prompt goes without audio (``no_audio`` and ``description``)."""
PERTURBATION_OF_KEY = "perturbation_of"
"""Item ``meta`` key naming the uid of the item a perturbed copy was made of (its presence marks a perturbed copy;
the first of :data:`airbench_nb.perturb.spec.PERTURBATION_META_KEYS`)."""
DESCRIPTION_LEAD = "Description of the audio: "
"""What :func:`control_question` puts before a description."""


def _meta(item: Any) -> dict[str, Any]:
    return getattr(item, "meta", None) or {}


def control_uid(uid: str, name: str) -> str:
    """Uid of the control ``name`` of item ``uid`` (``Speaker_Gender_Recognition-003@ctl-silence``)."""
    return f"{uid}@ctl-{name}"


def is_control(item: Any) -> bool:
    """Whether an item is a control (its meta names ``control_of``)."""
    return CONTROL_OF_KEY in _meta(item)


def is_perturbed(item: Any) -> bool:
    """Whether an item is a perturbed copy (its meta names ``perturbation_of``)."""
    return PERTURBATION_OF_KEY in _meta(item)


def prompt_without_audio(item: Any) -> bool:
    """Whether the item's prompt goes without audio (a ``no_audio`` or ``description`` control).

    A backend asked such an item sends no clip; one that cannot prompt text alone answers it ``n/a`` with its reason.
    """
    return bool(_meta(item).get(WITHOUT_AUDIO_KEY, False))


def control_text(item: Any) -> str | None:
    """The text a ``description`` control gives in place of the audio, or None."""
    text = _meta(item).get(CONTROL_TEXT_KEY)
    return text if isinstance(text, str) and text else None


def control_question(item: Any) -> str:
    """The question a control is asked: a ``description`` control's text before the question, else the question."""
    return with_description(item, item.question)


def with_description(item: Any, text: str) -> str:
    """``text`` (a prompt's first turn) with a ``description`` control's text before it; ``text`` for other items."""
    description = control_text(item)
    return f"{DESCRIPTION_LEAD}{description}\n\n{text}" if description else text
