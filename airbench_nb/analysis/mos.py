"""The MOS listening test's analysis: MOS per system with bootstrap intervals, agreement, consistency, MOS vs WER.

Read from the run's playlist (:meth:`~airbench_nb.run_folder.RunFolder.listening_playlist`) and each listener's
ratings file (:meth:`~airbench_nb.run_folder.RunFolder.listening_ratings`); a listener's rating of an entry is the
latest ``label`` not undone (:func:`latest_decisions`, the rule the tools replay). A bad line (one cut short by a crash
included; reopening the tool repairs it) stops the analysis with its file, line and field, as in the agreement.

- **MOS** of a system: the mean of its ratings on the absolute category rating scale (1 Bad .. 5 Excellent). Only
  the *first* presentation of each stimulus counts; the rating of a repeated presentation (``repeat``) is used for
  the listener's consistency only, so no stimulus weighs twice. An entry never rated (skipped, or not reached) is
  counted in ``unrated``, never guessed.
- **95% interval**: a two-way percentile bootstrap over listeners *and* clips (items), since both are samples
  (listeners from a population of listeners, items from a population of texts; those with at least one rating of
  a first presentation). Each of ``reps`` resamples draws
  the listeners with replacement and, independently, the items with replacement (``numpy.random.default_rng(seed)``:
  first a ``reps x listeners`` array of indices, then a ``reps x items`` array); a system's resampled MOS is the mean
  of the ratings in the cells (listener, item) drawn, each weighted by how often its listener and its item were
  drawn. The interval is the 2.5th and 97.5th percentiles (numpy's linear interpolation) of the resampled MOS; a
  resample with no rating of the system is left out and counted (``empty_resamples``). Every system is resampled with
  the same draws, so the intervals are comparable.
- **Inter-listener agreement**: Krippendorff's alpha, ordinal, by the ``krippendorff`` package, over the reliability
  matrix listeners x stimuli (first presentations; a missing rating is missing), with a 95% percentile bootstrap over
  stimuli.
- **Consistency** of each listener on the repeated stimuli: the pairs where both presentations are rated, their mean
  absolute difference, the share identical and the share within one point.
- **MOS vs WER**: Spearman's rank correlation (``scipy.stats.spearmanr``) between the systems' MOS and the
  back-transcription WER given per system (a mapping from model spec or system id to WER), over the systems with
  both; not computed (with the reason) under three systems.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from airbench_nb.manifests import read_records
from airbench_nb.records import ListeningEntry, Rating
from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

ALPHA_TEST = "Krippendorff's alpha, ordinal (krippendorff.alpha)"
"""How the inter-listener agreement is computed (named in the output)."""
CI_METHOD = "percentile bootstrap over listeners and items (two-way)"
"""How the MOS intervals are computed (named in the output)."""
RATING_COLUMNS = ["listener", "entry_id", "stimulus_id", "system_id", "model", "uid", "repeat", "score"]
"""Columns of :attr:`MosResult.ratings`."""


class RatingsError(ValueError):
    """A ratings file that does not fit the playlist (the message names file, line and field)."""


@dataclass(frozen=True)
class SystemMos:
    """The MOS of one system."""

    system_id: str
    """The system's opaque id in the playlist."""
    model: str
    """The model spec behind it."""
    mos: float | None
    """Mean rating of its first presentations (None without ratings)."""
    ci_low: float | None
    """Lower end of the 95% bootstrap interval."""
    ci_high: float | None
    """Upper end of the 95% bootstrap interval."""
    std: float | None
    """Standard deviation of its ratings."""
    n: int
    """Ratings counted (first presentations rated)."""
    listeners: int
    """Listeners who rated it."""
    items: int
    """Items rated."""
    unrated: int
    """First presentations not rated (skipped or not reached): failures, counted."""
    empty_resamples: int
    """Bootstrap resamples with no rating of the system (left out of the interval)."""


@dataclass(frozen=True)
class ListenerConsistency:
    """How one listener rated the stimuli presented twice."""

    listener: str
    """The listener slot."""
    rated: int
    """First presentations the listener rated."""
    unrated: int
    """First presentations the listener did not rate."""
    repeats: int
    """Repeated presentations in the listener's list."""
    n: int
    """Repeated stimuli with both presentations rated."""
    mean_abs_diff: float | None
    """Mean absolute difference of the two ratings (None when ``n`` is 0)."""
    identical: float | None
    """Share of the ``n`` pairs rated the same."""
    within_one: float | None
    """Share of the ``n`` pairs within one point."""


@dataclass(frozen=True)
class ListenerAgreement:
    """Inter-listener agreement: Krippendorff's alpha (ordinal) with a bootstrap interval over stimuli."""

    alpha: float | None
    """The alpha (None when not computable: see ``reason``)."""
    ci_low: float | None
    """Lower end of the 95% bootstrap interval (resampling stimuli)."""
    ci_high: float | None
    """Upper end of the 95% interval."""
    stimuli: int
    """Stimuli with two or more ratings (the pairable units)."""
    listeners: int
    """Listeners with at least one rating."""
    test: str = ALPHA_TEST
    """How it is computed."""
    reason: str | None = None
    """Why it was not computed (None when it was)."""


@dataclass(frozen=True)
class WerCorrelation:
    """Spearman's rank correlation of the systems' MOS with their back-transcription WER."""

    rho: float | None
    """Spearman's rho (None when not computed)."""
    p_value: float | None
    """Its two-sided p-value."""
    n: int
    """Systems with both a MOS and a WER."""
    systems: list[str] = field(default_factory=list)
    """Their model specs."""
    reason: str | None = None
    """Why it was not computed (None when it was)."""

    def text(self) -> str:
        """The statistic as one line, test named: ``Spearman rho = -0.80, p = 0.2, n = 4 systems``."""
        if self.rho is None:
            return f"Spearman rho not computed: {self.reason}"
        return f"Spearman rho = {self.rho:.2f}, p = {self.p_value:.2g}, n = {self.n} systems"


@dataclass
class MosResult:
    """Everything ``airbench-nb mos`` reports."""

    systems: list[SystemMos]
    """MOS per system, best first."""
    listeners: list[ListenerConsistency]
    """Each listener's counts and consistency."""
    agreement: ListenerAgreement
    """Inter-listener agreement."""
    correlation: WerCorrelation | None
    """MOS vs WER (None when no WER was given)."""
    ratings: pd.DataFrame
    """Every rating counted or used: one row per (listener, entry) (:data:`RATING_COLUMNS`)."""
    missing_files: list[str] = field(default_factory=list)
    """Listener slots of the playlist without a ratings file."""
    reps: int = 2000
    """Bootstrap resamples."""
    seed: int = 0
    """Seed of the bootstraps."""

    def frame(self) -> pd.DataFrame:
        """MOS per system: one row each, best first, with n, unrated and the interval."""
        columns = list(SystemMos.__dataclass_fields__)
        return pd.DataFrame([asdict(s) for s in self.systems], columns=columns)

    def listeners_frame(self) -> pd.DataFrame:
        """Each listener's counts and consistency on the repeated stimuli."""
        columns = list(ListenerConsistency.__dataclass_fields__)
        return pd.DataFrame([asdict(c) for c in self.listeners], columns=columns)

    def summary(self) -> str:
        """Counts, the agreement and the correlation, in a few lines with the tests named."""
        rated = int((~self.ratings["repeat"]).sum()) if len(self.ratings) else 0
        lines = [
            f"{rated} ratings of first presentations from {len(self.listeners) - len(self.missing_files)} listeners "
            f"({len(self.missing_files)} without a ratings file); MOS intervals: {CI_METHOD}, {self.reps} resamples",
        ]
        a = self.agreement
        if a.alpha is None:
            lines.append(f"{a.test}: not computed ({a.reason})")
        else:
            lines.append(
                f"{a.test} = {a.alpha:.3f} [{_fmt(a.ci_low)}, {_fmt(a.ci_high)}] over {a.stimuli} stimuli, "
                f"{a.listeners} listeners"
            )
        if self.correlation is not None:
            lines.append(f"MOS vs WER: {self.correlation.text()}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready values (without the ratings frame)."""
        return {
            "systems": [asdict(s) for s in self.systems],
            "listeners": [asdict(c) for c in self.listeners],
            "agreement": asdict(self.agreement),
            "correlation": asdict(self.correlation) if self.correlation is not None else None,
            "missing_files": self.missing_files,
            "reps": self.reps,
            "seed": self.seed,
            "ci_method": CI_METHOD,
        }


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _number(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def latest_decisions(actions: Sequence[Any], id_field: str) -> tuple[dict[str, Any], set[str]]:
    """Replay actions (labels, ratings) without a session: each unit's latest decision not undone, and the skipped.

    Args:
        actions: The actions in file order.
        id_field: The action's field naming the unit (``pair_id``, ``entry_id``).

    Returns:
        ``({unit id: latest decision}, {unit ids skipped and not decided since})``.
    """
    stacks: dict[str, list[Any]] = {}
    skipped: set[str] = set()
    for action in actions:
        key = getattr(action, id_field)
        stack = stacks.setdefault(key, [])
        if action.action == "label":
            stack.append(action)
            skipped.discard(key)
        elif action.action == "undo" and stack:
            stack.pop()
        elif action.action == "skip":
            skipped.add(key)
    decided = {key: stack[-1] for key, stack in stacks.items() if stack}
    return decided, skipped - set(decided)


def read_ratings(run_dir: str | Path) -> tuple[list[ListeningEntry], pd.DataFrame, list[str]]:
    """The playlist and every listener's ratings (the latest not undone per entry) as a frame.

    Returns:
        ``(playlist, ratings frame, listener slots without a ratings file)``.

    Raises:
        FileNotFoundError: When the run has no playlist.
        RatingsError: When a ratings file holds another listener's line or an entry not in their list.
        airbench_nb.manifests.ManifestError: On a line that is not a valid rating (file, line and field named).
    """
    folder = RunFolder(Path(run_dir))
    if not folder.listening_playlist.is_file():
        raise FileNotFoundError(
            f"{folder.listening_playlist}: no listening playlist (draw one with `airbench-nb sample-listening RUN_DIR`)"
        )
    playlist = read_records(folder.listening_playlist, ListeningEntry)
    slots = sorted({e.listener for e in playlist}, key=lambda s: (len(s), s))
    rows, missing = [], []
    for listener in slots:
        path = folder.listening_ratings(listener)
        if not path.is_file():
            missing.append(listener)
            continue
        mine = {e.entry_id: e for e in playlist if e.listener == listener}
        actions = read_records(path, Rating)
        for line, action in enumerate(actions, start=1):
            if action.listener != listener:
                raise RatingsError(f"{path}, line {line}, field listener: {action.listener!r}, not {listener!r}")
            if action.entry_id not in mine:
                raise RatingsError(
                    f"{path}, line {line}, field entry_id: {action.entry_id!r} is not in {listener}'s playlist"
                )
        decided, _ = latest_decisions(actions, "entry_id")
        for entry_id, rating in decided.items():
            e = mine[entry_id]
            rows.append([listener, entry_id, e.stimulus_id, e.system_id, e.model, e.uid, e.repeat, rating.score])
    frame = pd.DataFrame(rows, columns=RATING_COLUMNS)
    frame["score"] = frame["score"].astype(float)
    frame["repeat"] = frame["repeat"].astype(bool)
    return playlist, frame, missing


def bootstrap_mos(
    first: pd.DataFrame, systems: Sequence[str], reps: int, seed: int
) -> dict[str, tuple[float | None, float | None, int]]:
    """The two-way percentile bootstrap of every system's MOS (see the module docstring).

    Args:
        first: Ratings of first presentations (columns ``listener``, ``uid``, ``model``, ``score``).
        systems: Model specs to resample.
        reps: Resamples.
        seed: Seed of the generator.

    Returns:
        ``{model: (ci_low, ci_high, empty resamples)}``.
    """
    listeners = sorted(first["listener"].unique())
    items = sorted(first["uid"].unique())
    out: dict[str, tuple[float | None, float | None, int]] = {}
    if not listeners or reps < 1:
        return {m: (None, None, 0) for m in systems}
    rng = np.random.default_rng(seed)
    draw_l = rng.integers(0, len(listeners), size=(reps, len(listeners)))
    draw_i = rng.integers(0, len(items), size=(reps, len(items)))
    weight_l = np.stack([np.bincount(row, minlength=len(listeners)) for row in draw_l]).astype(float)
    weight_i = np.stack([np.bincount(row, minlength=len(items)) for row in draw_i]).astype(float)
    li, ii = {v: k for k, v in enumerate(listeners)}, {v: k for k, v in enumerate(items)}
    for model in systems:
        scores = np.zeros((len(listeners), len(items)))
        present = np.zeros_like(scores)
        for row in first[first["model"] == model].itertuples(index=False):
            scores[li[row.listener], ii[row.uid]] = row.score
            present[li[row.listener], ii[row.uid]] = 1.0
        total = np.einsum("rl,li,ri->r", weight_l, scores, weight_i)
        count = np.einsum("rl,li,ri->r", weight_l, present, weight_i)
        means = total[count > 0] / count[count > 0]
        empty = int((count == 0).sum())
        if means.size == 0:
            out[model] = (None, None, empty)
        else:
            low, high = np.percentile(means, [2.5, 97.5])
            out[model] = (float(low), float(high), empty)
    return out


def listener_alpha(first: pd.DataFrame, reps: int, seed: int) -> ListenerAgreement:
    """Krippendorff's alpha (ordinal) over listeners x stimuli, with a percentile bootstrap over stimuli."""
    import krippendorff

    matrix = first.pivot_table(index="listener", columns="stimulus_id", values="score", aggfunc="first")
    listeners = int(matrix.shape[0])
    if matrix.empty:
        return ListenerAgreement(None, None, None, 0, 0, reason="no ratings")
    data = matrix.to_numpy(dtype=float)
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    if listeners < 2 or pairable.shape[1] == 0:
        return ListenerAgreement(None, None, None, 0, listeners, reason="needs a stimulus rated by two listeners")
    domain = [1, 2, 3, 4, 5]

    def alpha_of(values: np.ndarray) -> float:
        return float(krippendorff.alpha(reliability_data=values, level_of_measurement="ordinal", value_domain=domain))

    if len(np.unique(pairable[~np.isnan(pairable)])) < 2:
        return ListenerAgreement(
            None, None, None, pairable.shape[1], listeners, reason="every rating is the same value (alpha undefined)"
        )
    value = alpha_of(pairable)
    rng = np.random.default_rng(seed)
    resampled = []
    for _ in range(reps):
        columns = pairable[:, rng.integers(0, pairable.shape[1], pairable.shape[1])]
        if len(np.unique(columns[~np.isnan(columns)])) >= 2:  # alpha is undefined without variation
            resampled.append(alpha_of(columns))
    low, high = (float(v) for v in np.percentile(resampled, [2.5, 97.5])) if resampled else (None, None)
    return ListenerAgreement(value, low, high, pairable.shape[1], listeners)


def consistency(playlist: Sequence[ListeningEntry], ratings: pd.DataFrame) -> list[ListenerConsistency]:
    """Each listener's counts and agreement with themselves on the stimuli presented twice."""
    out = []
    for listener in sorted({e.listener for e in playlist}, key=lambda s: (len(s), s)):
        mine = [e for e in playlist if e.listener == listener]
        scores = dict(
            zip(*(ratings.loc[ratings["listener"] == listener, c] for c in ("entry_id", "score")), strict=True)
        )
        firsts = [e for e in mine if not e.repeat]
        repeats = [e for e in mine if e.repeat]
        diffs = [
            abs(scores[e.entry_id] - scores[e.stimulus_id])
            for e in repeats
            if e.entry_id in scores and e.stimulus_id in scores
        ]
        n = len(diffs)
        rated = sum(e.entry_id in scores for e in firsts)
        out.append(
            ListenerConsistency(
                listener=listener,
                rated=rated,
                unrated=len(firsts) - rated,
                repeats=len(repeats),
                n=n,
                mean_abs_diff=float(np.mean(diffs)) if n else None,
                identical=sum(d == 0 for d in diffs) / n if n else None,
                within_one=sum(d <= 1 for d in diffs) / n if n else None,
            )
        )
    return out


def wer_correlation(mos_by_model: Mapping[str, float | None], wer: Mapping[str, float]) -> WerCorrelation:
    """Spearman's rho of MOS with WER over the systems with both (three or more needed).

    Args:
        mos_by_model: ``{model spec: MOS}``.
        wer: ``{model spec: WER}`` (a key may also be a system id; resolved by the caller).
    """
    from scipy.stats import spearmanr

    both = sorted(m for m, v in mos_by_model.items() if v is not None and m in wer and not math.isnan(wer[m]))
    if len(both) < 3:
        return WerCorrelation(
            None, None, len(both), both, reason=f"needs 3 or more systems with a MOS and a WER, got {len(both)}"
        )
    x = [mos_by_model[m] for m in both]
    y = [wer[m] for m in both]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return WerCorrelation(None, None, len(both), both, reason="MOS or WER is the same for every system")
    result = spearmanr(x, y)
    return WerCorrelation(_number(result.statistic), _number(result.pvalue), len(both), both)


def mos(
    run_dir: str | Path,
    *,
    wer: Mapping[str, float] | None = None,
    reps: int = 2000,
    seed: int = 0,
) -> MosResult:
    """Analyse the run's listening test (``airbench-nb mos``; notebook 06).

    Args:
        run_dir: The run folder (its playlist and ratings files).
        wer: Back-transcription WER per system, by model spec or system id (None: no correlation).
        reps: Bootstrap resamples of every interval.
        seed: Seed of the bootstraps.

    Returns:
        The :class:`MosResult`.

    Raises:
        FileNotFoundError: When the run has no playlist.
        RatingsError, airbench_nb.manifests.ManifestError: On a ratings file that does not fit (file, line, field).
    """
    playlist, ratings, missing = read_ratings(run_dir)
    keys = {e.system_id: e.model for e in playlist}
    first = ratings[~ratings["repeat"]]
    models = sorted(set(keys.values()))
    intervals = bootstrap_mos(first, models, reps, seed)
    systems = []
    for system_id, model in sorted(keys.items(), key=lambda kv: kv[1]):
        mine = first[first["model"] == model]
        presented = sum(1 for e in playlist if e.model == model and not e.repeat)
        low, high, empty = intervals[model]
        systems.append(
            SystemMos(
                system_id=system_id,
                model=model,
                mos=float(mine["score"].mean()) if len(mine) else None,
                ci_low=low,
                ci_high=high,
                std=float(mine["score"].std(ddof=1)) if len(mine) > 1 else None,
                n=len(mine),
                listeners=int(mine["listener"].nunique()),
                items=int(mine["uid"].nunique()),
                unrated=presented - len(mine),
                empty_resamples=empty,
            )
        )
    systems.sort(key=lambda s: (s.mos is None, -(s.mos or 0.0), s.model))
    correlation = None
    if wer is not None:
        by_model = {keys.get(k, k): float(v) for k, v in wer.items()}
        correlation = wer_correlation({s.model: s.mos for s in systems}, by_model)
    result = MosResult(
        systems=systems,
        listeners=consistency(playlist, ratings),
        agreement=listener_alpha(first, reps, seed),
        correlation=correlation,
        ratings=ratings,
        missing_files=missing,
        reps=reps,
        seed=seed,
    )
    logger.info("listening test of %s: %s", run_dir, result.summary().replace("\n", "; "))
    return result
