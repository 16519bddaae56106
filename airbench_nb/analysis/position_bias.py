"""Position bias: does a model favour an option letter on single-choice (Foundation) items?

The question is answered per model, over the items where the model chose a letter (``chosen_letter`` set; under
``official`` that may be a letter past the item's options, which still is a letter the model favoured):

- ``chosen`` and ``gold`` count the chosen and the correct letters over those answered items, for every letter of
  the frame's items: A-D when no item has more than four options (AIR-Bench), A to the last letter of the largest
  item otherwise (up to 26, A-Z; :func:`frame_letters`). Items with different numbers of options pool: each
  contributes its own letters.
- A chi-square goodness-of-fit test (:func:`scipy.stats.chisquare`) compares the chosen-letter counts with the
  counts expected if the model's letters followed the gold letters: ``expected_k = n * gold_k / n`` over the
  answered items. A model that knows every answer, and a model that guesses uniformly on balanced items, both pass;
  a model that prefers a letter does not.
- Letters with an expected count of zero (never gold among the answered items). A chosen letter that is never gold
  is evidence of bias, but the chi-square term ``(o - 0)**2 / 0`` is infinite. The test therefore runs on the
  letters that are gold or chosen at least once (letters neither gold nor chosen carry no information and are
  left out of the test and its degrees of freedom), and when one of them has a gold count of zero every one of
  them gets a pseudo-count of :data:`PSEUDO_COUNT` (0.5, a Jeffreys prior) added to its gold count before the
  shares are taken. A never-gold letter the model picks then has a small expected count and a large chi-square
  term, as it should; the ``note`` says when this was done. With no zero cell the gold shares are used as they
  are (the textbook test).
- ``null="uniform"`` asks instead whether the chosen letters are uniform over each item's own options: an answered
  item of ``N_i`` options expects ``1/N_i`` of a choice on each of its ``N_i`` letters, so
  ``expected_k = sum_i [k < N_i] / N_i`` (a 23-option item spreads its one answer over A-W, a binary item over A and
  B). This is the null of a model that guesses; it flags a model that knows answers whose gold letters are not
  uniform, which the default (gold-share) null does not. A letter chosen past every answered item's options (the
  ``official`` protocol keeps such letters) has an expected count of zero and gets the pseudo-count as above.
- The test is undefined (``p_value`` None, with a ``note``) when nothing was answered or fewer than two letters
  take part. Expected counts under 5 make the chi-square approximation rough: the ``note`` says so.
- ``accuracy_by_gold`` is the accuracy (mean of ``correct`` over non-NA rows, the kit's one accuracy rule, so it
  follows the protocol of the frame) over all of the model's items with that gold letter, answered or not;
  ``wrong_choice`` counts the letters the model chose when it was wrong (answered items only).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
from scipy.stats import chisquare

from airbench_nb.analysis.stats import plain
from airbench_nb.analysis_report import PositionBias as PositionBiasPayload
from airbench_nb.records import AIRBENCH_LETTERS, LETTERS

logger = logging.getLogger(__name__)

TEST_NAME = "chi-square goodness of fit (chosen letters vs gold-letter shares)"
"""Name of the test, as reported in :attr:`PositionBias.test`."""

TEST_NAME_UNIFORM = "chi-square goodness of fit (chosen letters vs uniform over each item's options)"
"""Name of the test under ``null="uniform"``."""

NULLS = ("gold", "uniform")
"""The null hypotheses :func:`position_bias` tests against (see the module docstring)."""

PSEUDO_COUNT = 0.5
"""Added to every tested letter's gold count when one of them is never gold (see the module docstring)."""

MIN_EXPECTED = 5.0
"""Expected count under which the chi-square approximation is flagged as rough in the note."""


@dataclass(frozen=True)
class PositionBias:
    """Letter preferences of one model over its answered Foundation items."""

    model: str
    """The model spec."""
    n: int
    """Items on which the model chose a letter (the test's sample size)."""
    n_items: int
    """All of the model's items in the frame, answered or not."""
    chosen: dict[str, int]
    """Count of each chosen letter (A-D, or A to the frame's last letter: :func:`frame_letters`)."""
    gold: dict[str, int]
    """Count of each gold letter over the answered items, same letters as ``chosen``."""
    expected: dict[str, float | None]
    """Expected chosen count per letter under the null (None for a letter left out of the test)."""
    chi2: float | None
    """The chi-square statistic; None when the test is undefined."""
    dof: int | None
    """Degrees of freedom (tested letters - 1); None when the test is undefined."""
    p_value: float | None
    """P-value of the test; None when the test is undefined (see ``note``)."""
    accuracy_by_gold: dict[str, float | None]
    """Accuracy over all items with each gold letter (None for a letter that is never gold)."""
    wrong_choice: dict[str, int]
    """Letters chosen on answered items that were wrong."""
    test: str = TEST_NAME
    """The statistical test used."""
    note: str | None = None
    """Why the test is undefined, or how it was adjusted (pseudo-counts, small expected counts)."""
    reason: str | None = None
    """Why there was nothing to analyse, or None."""
    letters_tested: tuple[str, ...] = field(default_factory=tuple)
    """Letters that took part in the test."""
    null: str = "gold"
    """The null hypothesis: ``gold`` (chosen letters follow the gold-letter shares) or ``uniform`` (uniform over each
    item's own options)."""

    def as_dict(self) -> dict[str, Any]:
        """Serializer: a JSON-ready dict (plain numbers, None instead of NaN)."""
        out = asdict(self)
        out["letters_tested"] = list(self.letters_tested)
        return out

    def payload(self) -> PositionBiasPayload:
        """The result as ``analysis.json`` holds it (``position_bias[model]``)."""
        return PositionBiasPayload.from_data(self.as_dict())


def frame_letters(frame: pd.DataFrame) -> str:
    """The letters a frame's analysis reports: A-D, or A to the last letter of its largest item (up to A-Z).

    The span covers every item's options (``n_choices``) and every gold or chosen letter present, so a 4-option
    frame reports exactly A-D, as AIR-Bench's analyses always did.
    """
    size = len(AIRBENCH_LETTERS)
    if not frame.empty:
        if "n_choices" in frame:
            counts = pd.to_numeric(frame["n_choices"], errors="coerce").dropna()
            if len(counts):
                size = max(size, int(counts.max()))
        for column in ("gold_letter", "chosen_letter"):
            if column in frame:
                present = [LETTERS.index(k) + 1 for k in frame[column].dropna().unique() if k in LETTERS]
                size = max(size, *present) if present else size
    return LETTERS[: min(size, len(LETTERS))]


def _answered(frame: pd.DataFrame) -> pd.Series:
    return frame["chosen_letter"].notna() & frame["chosen_letter"].isin(list(LETTERS))


def _uniform_weights(answered: pd.DataFrame, letters: str) -> dict[str, float]:
    """``sum_i [k < N_i] / N_i`` per letter over the answered items (each item's own options, see the docstring)."""
    weights = dict.fromkeys(letters, 0.0)
    sizes = pd.to_numeric(answered["n_choices"], errors="coerce")
    for size, count in sizes.value_counts().items():
        if pd.isna(size) or int(size) < 1:
            continue
        for letter in LETTERS[: min(int(size), len(letters))]:
            weights[letter] += count / int(size)
    return weights


def _one(model: str, rows: pd.DataFrame, letters: str = AIRBENCH_LETTERS, null: str = "gold") -> PositionBias:
    answered = rows[_answered(rows)]
    n = len(answered)
    chosen = {k: int((answered["chosen_letter"] == k).sum()) for k in letters}
    gold = {k: int((answered["gold_letter"] == k).sum()) for k in letters}
    accuracy: dict[str, float | None] = {}
    for letter in letters:
        correct = rows.loc[rows["gold_letter"] == letter, "correct"].dropna()
        accuracy[letter] = float(correct.astype(bool).mean()) if len(correct) else None
    wrong_rows = answered[answered["correct"].astype("boolean").eq(False).fillna(False).astype(bool)]
    wrong = {k: int((wrong_rows["chosen_letter"] == k).sum()) for k in letters}
    base: dict[str, Any] = {
        "model": model,
        "n": n,
        "n_items": len(rows),
        "chosen": chosen,
        "gold": gold,
        "accuracy_by_gold": accuracy,
        "wrong_choice": wrong,
        "null": null,
        "test": TEST_NAME if null == "gold" else TEST_NAME_UNIFORM,
    }
    if n == 0:
        reason = "the model chose no letter on any item"
        return PositionBias(
            **base,
            expected=dict.fromkeys(letters),
            chi2=None,
            dof=None,
            p_value=None,
            note=f"test undefined: {reason}",
            reason=reason,
        )
    if null == "gold":
        weights_all = {k: float(gold[k]) for k in letters}
        zero_text = "chosen but never gold"
        zero_name = "gold count"
    else:
        weights_all = _uniform_weights(answered, letters)
        zero_text = "chosen but never an option of an answered item"
        zero_name = "expected share"
    tested = tuple(k for k in letters if chosen[k] > 0 or weights_all[k] > 0)
    notes: list[str] = []
    if len(tested) < 2:
        return PositionBias(
            **base,
            expected={k: (float(n) if k in tested else None) for k in letters},
            chi2=None,
            dof=None,
            p_value=None,
            note=f"test undefined: only letter {''.join(tested)} was {'gold' if null == 'gold' else 'an option'} "
            "or chosen",
            letters_tested=tested,
        )
    weights = {k: weights_all[k] for k in tested}
    if any(weights[k] == 0 for k in tested):
        never = [k for k in tested if weights[k] == 0]
        weights = {k: w + PSEUDO_COUNT for k, w in weights.items()}
        notes.append(
            f"letter(s) {', '.join(never)} {zero_text}: pseudo-count {PSEUDO_COUNT} added to every "
            f"tested letter's {zero_name}"
        )
    total = sum(weights.values())
    expected = {k: n * weights[k] / total for k in tested}
    observed = [chosen[k] for k in tested]
    result = chisquare(observed, f_exp=[expected[k] for k in tested])
    if min(expected.values()) < MIN_EXPECTED:
        notes.append(f"some expected counts are under {MIN_EXPECTED:g}: the chi-square approximation is rough")
    return PositionBias(
        **base,
        expected={k: (float(expected[k]) if k in expected else None) for k in letters},
        chi2=plain(result.statistic),
        dof=len(tested) - 1,
        p_value=plain(result.pvalue),
        note="; ".join(notes) or None,
        letters_tested=tested,
    )


def position_bias(frame: pd.DataFrame, null: str = "gold") -> dict[str, PositionBias]:
    """Test each model's chosen letters against the gold-letter distribution (or a uniform one).

    Args:
        frame: A Foundation frame (:meth:`airbench_nb.analysis.data.RunData.foundation_frame`); items of any number
            of options (2 to 26) pool.
        null: ``gold`` (the chosen letters follow the gold-letter shares) or ``uniform`` (uniform over each item's
            own options); see the module docstring.

    Returns:
        ``{model: PositionBias}``; a model that chose no letter gets an empty result with a ``reason``. An empty
        frame gives an empty dict. Every result reports the same letters (:func:`frame_letters`).

    Raises:
        ValueError: For an unknown ``null``.
    """
    if null not in NULLS:
        raise ValueError(f"unknown null {null!r}: use one of {', '.join(NULLS)}")
    if frame.empty:
        logger.info("position bias: empty frame, nothing to analyse")
        return {}
    letters = frame_letters(frame)
    return {str(model): _one(str(model), rows, letters, null) for model, rows in frame.groupby("model", sort=True)}


def position_bias_frame(results: Mapping[str, PositionBias]) -> pd.DataFrame:
    """A long frame for plots: one row per (model, letter).

    Args:
        results: The output of :func:`position_bias`.

    Returns:
        Columns ``model, letter, chosen, gold, expected, accuracy_by_gold`` (NaN where undefined).
    """
    rows = [
        {
            "model": model,
            "letter": letter,
            "chosen": result.chosen[letter],
            "gold": result.gold[letter],
            "expected": result.expected.get(letter),
            "accuracy_by_gold": result.accuracy_by_gold.get(letter),
        }
        for model, result in results.items()
        for letter in result.chosen
    ]
    out = pd.DataFrame(rows, columns=["model", "letter", "chosen", "gold", "expected", "accuracy_by_gold"])
    for column in ("expected", "accuracy_by_gold"):
        out[column] = out[column].astype(float)
    return out


NO_LETTER = "(none)"
"""Column of :func:`letter_confusion` for items where no letter was chosen."""


def letter_confusion(frame: pd.DataFrame, include_unanswered: bool = False, long: bool = False) -> pd.DataFrame:
    """Counts of chosen letter by gold letter, per model (for a heatmap of chosen vs gold letters).

    Args:
        frame: A Foundation frame.
        include_unanswered: Add a :data:`NO_LETTER` column counting items where no letter was chosen.
        long: Return the tidy long form instead: columns ``model, gold_letter, chosen_letter, count``.

    Returns:
        A frame indexed by ``(model, gold_letter)`` (every model with every letter of :func:`frame_letters`: A-D,
        or A to the largest item's last letter) with one int column per chosen letter (and :data:`NO_LETTER` when
        asked); or its long form.
    """
    letters = list(frame_letters(frame))
    columns = letters + ([NO_LETTER] if include_unanswered else [])
    models = sorted(frame["model"].unique()) if not frame.empty else []
    index = pd.MultiIndex.from_product([models, letters], names=["model", "gold_letter"])
    rows = frame if include_unanswered else frame[_answered(frame)]
    letters = rows["chosen_letter"].where(_answered(rows), NO_LETTER)
    counts = (
        pd.crosstab([rows["model"], rows["gold_letter"]], letters)
        if len(rows)
        else pd.DataFrame(columns=columns, dtype=int)
    )
    counts = counts.reindex(index=index, columns=columns, fill_value=0).fillna(0).astype(int)
    counts.columns.name = "chosen_letter"
    if long:
        tidy = counts.stack().rename("count").reset_index()
        return tidy[["model", "gold_letter", "chosen_letter", "count"]]
    return counts
