"""Position bias on MMAU, MMAR and MMSU: does a model favour an option's place, whatever the question?

AIR-Bench's Foundation items have this analysis in :mod:`airbench_nb.analysis.position_bias`; this module gives the
three single-choice QA benchmarks the same result, per model and per benchmark, by building a frame of the columns
:func:`~airbench_nb.analysis.position_bias.position_bias` reads (those of
:meth:`~airbench_nb.analysis.data.RunData.foundation_frame`: ``model``, ``n_choices``, ``gold_letter``,
``chosen_letter``, ``correct``) and passing it to that function unchanged: chosen against gold counts, a chi-square
goodness-of-fit test against the gold shares (the Jeffreys pseudo-count when a chosen option is never gold), and
the accuracy per gold option.

The frame holds the benchmark's original items only: circular-evaluation copies (``meta.rotation_of``) and
noise-graded copies (``meta.clean_uid``) would count one question several times. The option chosen is the deciding
verdict's under the **strict** protocol (:func:`~airbench_nb.scoring.outcomes.foundation_verdicts`, read by
:func:`~airbench_nb.scoring.outcomes.strict_reading`), as the section's circular evaluation reads it: MMAU's and
MMAR's official rule is a word match that names no option. An item with no usable response, no verdict or an
abstention names no option: it is not answered (left out of the test) and counts wrong in the accuracy per gold
option, as strict scoring counts it. Where MMAU or MMAR repeat an option, the options of one text are one answer,
the first of them (:meth:`~airbench_nb.records.item.SingleChoiceItem.answer_option`), as the gold is: the chosen
position is that option's.

MMAU and MMAR ask for an option's text (``ANSWERED_BY_TEXT``) and show the options unlettered, so what a model can
favour there is a *position* (first, second, ...), not a letter; the result still keys positions by the letters
``A``, ``B``, ... (the first position is ``A``), and :func:`position_unit` says how a page should name them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

import pandas as pd

from airbench_nb.analysis.position_bias import position_bias
from airbench_nb.analysis_report import PositionBias
from airbench_nb.records import LETTERS
from airbench_nb.records.items import item_class
from airbench_nb.scoring.outcomes import foundation_verdicts, strict_foundation, strict_reading

if TYPE_CHECKING:
    from airbench_nb.analysis.data import RunData

logger = logging.getLogger(__name__)

PositionUnit = Literal["letter", "position"]
"""What the options of a kind are told apart by when a model answers: a letter (MMSU) or a place in the list
(MMAU, MMAR, asked for an option's text)."""

BIAS_COLUMNS: tuple[str, ...] = (
    "model",
    "uid",
    "n_choices",
    "gold",
    "gold_letter",
    "chosen",
    "chosen_letter",
    "correct",
    "failed",
    "reason",
    "judge",
)
"""Columns of :func:`choice_qa_bias_frame`: those of the Foundation frame that
:func:`~airbench_nb.analysis.position_bias.position_bias` reads, with the item, the deciding judge and the reason."""

ORIGINAL_EXCLUDED_KEYS: tuple[str, ...] = ("rotation_of", "clean_uid", "control_of", "perturbation_of")
"""``meta`` keys that mark a copy of an item (rotated, noise-graded, an audio-reliance control, perturbed): such items
are left out of the frame."""


def position_unit(kind: str) -> PositionUnit:
    """How a kind's options are told apart: ``position`` for a kind asked for an option's text, else ``letter``.

    Args:
        kind: A registered item kind (``mmau``, ``mmar``, ``mmsu``).

    Raises:
        KeyError: For a kind nothing is registered under.
    """
    return "position" if getattr(item_class(kind), "ANSWERED_BY_TEXT", False) else "letter"


def position_label(key: str, unit: PositionUnit) -> str:
    """How a page names the option keyed ``key`` (``A``, ``B``, ...): the letter, or ``position 1``, ``position 2``.

    Args:
        key: A letter of :data:`~airbench_nb.records.LETTERS`, as the result keys options.
        unit: The kind's :func:`position_unit`.
    """
    if unit == "letter" or key not in LETTERS:
        return key
    return f"position {LETTERS.index(key) + 1}"


def choice_qa_bias_frame(run: RunData, kind: str) -> pd.DataFrame:
    """One row per (model, original item of ``kind``): the gold option and the option the strict verdict chose.

    Args:
        run: The run's records (:attr:`~airbench_nb.analysis.report.RunAnalysis.run`).
        kind: The item kind (``mmau``, ``mmar``, ``mmsu``).

    Returns:
        A frame of :data:`BIAS_COLUMNS` (``chosen`` a nullable int, ``correct`` a nullable boolean, False for a
        failure) for every model that answered one of the kind's original items; empty when none did.
    """
    items = [
        i
        for i in run.items.values()
        if i.kind == kind and not any((i.meta or {}).get(key) is not None for key in ORIGINAL_EXCLUDED_KEYS)
    ]
    uids = {i.uid for i in items}
    rows = []
    for model in run.models:
        by_uid = run.responses.get(model, {})
        if not uids & set(by_uid):
            continue
        deciding = foundation_verdicts(run.current_verdicts(model), uids, None)
        for item in items:
            verdict = deciding.get(item.uid)
            correct, reason = strict_foundation(by_uid.get(item.uid), verdict)
            read = strict_reading(verdict) if correct is not None else None
            pick = read.choice if read is not None else None
            pick = item.answer_option(pick) if pick is not None else None  # a repeated option: the first of its text
            rows.append(
                {
                    "model": model,
                    "uid": item.uid,
                    "n_choices": len(item.choices),
                    "gold": item.answer,
                    "gold_letter": LETTERS[item.answer],
                    "chosen": pick,
                    "chosen_letter": LETTERS[pick] if pick is not None and 0 <= pick < len(LETTERS) else None,
                    "correct": bool(correct) if correct is not None else False,
                    "failed": correct is None,
                    "reason": reason,
                    "judge": read.judge if read is not None else None,
                }
            )
    frame = pd.DataFrame(rows, columns=list(BIAS_COLUMNS))
    frame["chosen"] = frame["chosen"].astype("Int64")
    frame["correct"] = frame["correct"].astype("boolean")
    frame["failed"] = frame["failed"].astype(bool)
    return frame


def choice_qa_position_bias(run: RunData, kind: str) -> dict[str, PositionBias]:
    """Per model, the position bias of ``kind``'s original items under the strict protocol.

    Args:
        run: The run's records.
        kind: The item kind (``mmau``, ``mmar``, ``mmsu``).

    Returns:
        ``{model: PositionBias}`` as ``analysis.json`` holds it (the payload of
        :class:`airbench_nb.analysis.position_bias.PositionBias`; options keyed ``A``, ``B``, ... by place); empty
        when no model answered one of the kind's original items.
    """
    frame = choice_qa_bias_frame(run, kind)
    results = position_bias(frame)
    logger.info("%s position bias: %d model(s) over %d row(s)", kind, len(results), len(frame))
    return {model: result.payload() for model, result in results.items()}


__all__ = [
    "BIAS_COLUMNS",
    "ORIGINAL_EXCLUDED_KEYS",
    "PositionUnit",
    "choice_qa_bias_frame",
    "choice_qa_position_bias",
    "position_label",
    "position_unit",
]
