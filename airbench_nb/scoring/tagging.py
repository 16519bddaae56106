"""Scenes and events from free text, scored SSEU-Bench's way: text embeddings onto class names, then mACC and mAP.

The procedure (Yin & Choi, ICASSP 2026), stated once:

- **Scenes.** The predicted text and every class name are embedded (:mod:`airbench_nb.embeddings`); the cosine
  similarities of the answer to the classes go through a plain softmax over the classes (temperature
  :data:`SCENE_TEMPERATURE` = 1: the softmax of the cosines themselves; it changes no argmax, the probabilities only
  show how close the call was); the argmax is the predicted class. The headline is mACC, the balanced accuracy
  (``sklearn.metrics.balanced_accuracy_score``: the mean over the gold classes of each class's recall). A missing
  answer (None, or only whitespace) is a failure kept in the denominator: it predicts no class, so it is wrong.
- **Events.** Every predicted event and every class name are embedded; the similarity matrix (predicted events x
  classes) is max-pooled over the predicted events per class and passed through a sigmoid: one score per class
  and item. The headline is mAP, the mean over classes of ``sklearn.metrics.average_precision_score`` of the class
  scores against the gold labels. Classes no item carries have no AP: they are listed
  (:attr:`EventsResult.classes_without_positives`) and left out of the mean. A missing answer (None) is a failure
  kept in the denominator with every score 0 (below any sigmoid); an empty list (the model heard no event) scores
  0 too but is not a failure.
- **Ranked-list models.** A tagger (``onnx:``, ``classifier:``) answers with its own score of each class it ranks
  (:attr:`~airbench_nb.records.Response.ranking`): its row of scores is those scores (0 for a class it does not rank),
  not the embedding similarities of the events it lists, so mAP ranks the clips by the tagger's probabilities, as
  SSEU-Bench scores its specialist baselines (:func:`score_events`'s ``class_scores``).
- **The floor of mAP.** mAP rewards no answer: with every score tied (all answers empty, or all failed), a class's AP
  is its share of positive items, so an all-empty answer set scores the mean prevalence of the classes, far above 0
  on a set whose items carry several events (and 1.0 on a set of one clip, where any answer gets 1.0).
  :func:`map_floor` computes that mAP the same way (scikit-learn's AP of all-zero scores), and
  :attr:`EventsResult.map_floor` carries it beside ``map``: a model is better than answering nothing only above it.
- **Embedding-free views.** A predicted text counts as a class when, normalised (:func:`label_key`: lower case,
  ``_`` and punctuation to spaces), it equals the class name normalised: exact-label accuracy for scenes, exact-label
  micro F1 (``sklearn.metrics.f1_score``, ``average="micro"``) for events.
- **Intervals.** mACC and mAP get 95% percentile bootstrap intervals over items (a seeded generator per key, as in
  :mod:`~airbench_nb.scoring.aggregate`); each replicate recomputes the statistic on the resampled items
  (vectorised: the resample as integer weights; the weighted statistics equal scikit-learn's with
  ``sample_weight``, which a test checks). A class absent from a replicate's gold labels is left out of that
  replicate's mean, as it is from the point estimate.

Class names are embedded as readable text (``Alarm_bell_ringing`` as ``Alarm bell ringing``); the labels stay as
given. One call scores items that share one class list (SSEU-Bench's lists are fixed per task).
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from airbench_nb.embeddings import Embedder
from airbench_nb.scoring.aggregate import DEFAULT_REPS
from airbench_nb.scoring.wer import _key_rng

logger = logging.getLogger(__name__)

SCENE_TEMPERATURE = 1.0
"""Temperature of the scene softmax over cosine similarities (1: a plain softmax of the cosines)."""
NO_CLASS = "<no answer>"
"""The prediction of a failed scene answer in the balanced-accuracy call (never a class: always wrong)."""


def class_text(name: str) -> str:
    """The text embedded for a class name: underscores as spaces (``dog_bark`` -> ``dog bark``)."""
    return " ".join(name.replace("_", " ").split())


def label_key(text: str) -> str:
    """A label or answer normalised for exact matching: lower case, ``_`` and punctuation as spaces, one space."""
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


def _answer(text: str | None) -> str | None:
    """The answer text to embed, or None for a failure (None, or only whitespace)."""
    if text is None:
        return None
    text = " ".join(text.split())
    return text or None


def softmax(x: np.ndarray, temperature: float = SCENE_TEMPERATURE) -> np.ndarray:
    """Softmax along the last axis of ``x / temperature`` (stable)."""
    z = np.asarray(x, dtype=float) / temperature
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function."""
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=float)))


def _resample_weights(n: int, reps: int, seed: int, key: str, codes: np.ndarray | None = None) -> Any:
    """Chunks of bootstrap weights: arrays (rows, n) of how often each item counts, ``reps`` rows in all."""
    return bootstrap_weight_rows(n, reps, _key_rng(seed, key), codes)


def _clustered_interval(
    statistic: Any, n: int, reps: int, seed: int, key: str, clusters: Sequence[str] | None
) -> tuple[float | None, float | None, Any]:
    """The interval of ``statistic(weights) -> replicates``: :func:`airbench_nb.scoring.resample.clustered_interval`."""
    from airbench_nb.scoring.resample import clustered_interval

    def draw(by: np.ndarray | None) -> np.ndarray:
        parts = [statistic(w) for w in _resample_weights(n, reps, seed, key, by)]
        return np.concatenate(parts) if parts else np.array([])

    return clustered_interval(draw, clusters, n, reps)


def bootstrap_weight_rows(n: int, reps: int, rng: np.random.Generator, codes: np.ndarray | None = None) -> Any:
    """Chunks of bootstrap weights drawn from ``rng``: arrays (rows, n) of how often each of ``n`` items counts.

    :func:`airbench_nb.scoring.resample.weight_rows`: ``reps`` rows in all; with ``codes`` (each item's cluster) whole
    clusters are drawn, else items (row ``r`` is then the items drawn ``rng.integers(0, n, n)``).
    """
    from airbench_nb.scoring.resample import weight_rows

    return weight_rows(n, reps, rng, codes)


def weighted_balanced_accuracy(gold: np.ndarray, correct: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Balanced accuracy per row of ``weights``: the mean over gold classes with weight of the weighted recall.

    Equal to ``balanced_accuracy_score(y_true, y_pred, sample_weight=w)`` for each row ``w``.

    Args:
        gold: Gold class index per item (n,).
        correct: Whether each item's prediction is its gold class (n,).
        weights: Item weights (rows, n).

    Returns:
        One value per row (NaN for a row with no weight).
    """
    classes = int(gold.max()) + 1 if gold.size else 0
    onehot = np.zeros((gold.size, classes))
    onehot[np.arange(gold.size), gold] = 1.0
    totals = weights @ onehot
    hits = weights @ (onehot * np.asarray(correct, dtype=float)[:, None])
    recall = np.full(totals.shape, np.nan)
    np.divide(hits, totals, out=recall, where=totals > 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(recall, axis=1)


def weighted_average_precision(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average precision of ``scores`` against binary ``labels`` per row of ``weights``.

    Equal to ``average_precision_score(labels, scores, sample_weight=w)`` for each row ``w`` (ties in the scores
    form one threshold, as there); NaN for a row whose positives have no weight.

    Args:
        labels: 0/1 per item (n,).
        scores: Score per item (n,).
        weights: Item weights (rows, n).
    """
    order = np.argsort(-np.asarray(scores, dtype=float), kind="mergesort")
    s = np.asarray(scores, dtype=float)[order]
    y = np.asarray(labels, dtype=float)[order]
    w = weights[:, order]
    last = np.r_[np.nonzero(np.diff(s))[0], s.size - 1]  # the last item of each distinct score
    tp = np.cumsum(w * y, axis=1)[:, last]
    fp = np.cumsum(w * (1.0 - y), axis=1)[:, last]
    positives = tp[:, -1:]
    precision = np.zeros(tp.shape)
    np.divide(tp, tp + fp, out=precision, where=(tp + fp) > 0)
    recall = np.zeros(tp.shape)
    np.divide(tp, positives, out=recall, where=positives > 0)
    steps = np.diff(np.concatenate([np.zeros((tp.shape[0], 1)), recall], axis=1), axis=1)
    out = (steps * precision).sum(axis=1)
    out[positives[:, 0] <= 0] = np.nan
    return out


@dataclass(frozen=True)
class SceneResult:
    """Scenes scored by SSEU-Bench's embedding procedure (mACC) and by exact labels."""

    macc: float | None
    """Balanced accuracy of the embedding-mapped predictions (failures wrong); None with no items."""
    ci_low: float | None
    """Lower end of the 95% bootstrap interval of ``macc`` (items resampled)."""
    ci_high: float | None
    """Upper end of the 95% bootstrap interval of ``macc``."""
    exact_accuracy: float | None
    """Share of items whose answer, normalised, is the gold class's name (failures wrong); no embeddings."""
    n: int
    """Items scored (failures included)."""
    failures: int
    """Items without an answer (None or empty): counted wrong."""
    classes: tuple[str, ...]
    """The class list."""
    predicted: tuple[str | None, ...]
    """The class each answer was mapped to (None for a failure)."""
    exact: tuple[str | None, ...]
    """The class each answer names exactly (normalised), else None."""
    correct: tuple[bool, ...]
    """Whether each item's mapped class is its gold class."""
    embedder: str
    """Spec of the embedding backend used."""
    temperature: float
    """Temperature of the softmax over cosines."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Seed of the bootstrap."""
    probabilities: np.ndarray = field(repr=False, compare=False)
    """Softmax over classes per item (n, classes); a failure's row is all NaN."""
    clustering: Any = None
    """How the interval's items were clustered (:class:`~airbench_nb.scoring.resample.Clustering`); None without
    an interval."""


@dataclass(frozen=True)
class EventsResult:
    """Events scored by SSEU-Bench's embedding procedure (mAP) and by exact labels (micro F1)."""

    map: float | None
    """Mean over classes with positives of the average precision of the class scores; None when no class has one."""
    ci_low: float | None
    """Lower end of the 95% bootstrap interval of ``map`` (items resampled)."""
    ci_high: float | None
    """Upper end of the 95% bootstrap interval of ``map``."""
    per_class_ap: dict[str, float]
    """Average precision per class with at least one positive."""
    classes_without_positives: tuple[str, ...]
    """Classes no item carries: no AP, left out of ``map``."""
    micro_f1: float | None
    """Micro F1 of the exactly named classes (normalised string equality) against the gold sets; no embeddings."""
    n: int
    """Items scored (failures included)."""
    failures: int
    """Items without an answer (None): every class score 0, exact prediction empty."""
    classes: tuple[str, ...]
    """The class list."""
    embedder: str
    """Spec of the embedding backend used."""
    reps: int
    """Bootstrap replicates."""
    seed: int
    """Seed of the bootstrap."""
    scores: np.ndarray = field(repr=False, compare=False)
    """Sigmoid of the max-pooled cosine per item and class (n, classes); 0 for failures and empty answers."""
    map_floor: float | None = None
    """The mAP an all-empty answer set gets on these items (:func:`map_floor`); None when no class has a positive."""
    clustering: Any = None
    """How the interval's items were clustered (:class:`~airbench_nb.scoring.resample.Clustering`); None without
    an interval."""


def _check_gold(golds: Sequence[str], classes: Sequence[str], what: str) -> None:
    unknown = sorted({g for g in golds if g not in classes})
    if unknown:
        raise ValueError(f"{what} {unknown!r} are not among the classes {list(classes)!r}")


def score_scenes(
    answers: Sequence[str | None],
    golds: Sequence[str],
    classes: Sequence[str],
    embedder: Embedder,
    *,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> SceneResult:
    """Map free-text scene answers onto ``classes`` and score them (see the module docstring).

    Args:
        answers: Each item's scene answer (parsed text), None when the model or the parser failed.
        golds: Each item's gold class (one of ``classes``).
        classes: The class list shared by the items.
        embedder: The embedding backend.
        reps: Bootstrap replicates (0: no interval).
        seed: Seed of the bootstrap.
        clusters: Each item's cluster key (its utterance): the interval draws whole clusters; None: items.

    Raises:
        ValueError: Lengths differ, or a gold label is not a class.
    """
    from sklearn.metrics import balanced_accuracy_score

    if len(answers) != len(golds):
        raise ValueError(f"{len(answers)} answers for {len(golds)} gold labels")
    _check_gold(golds, classes, "gold scenes")
    texts = [_answer(a) for a in answers]
    n, k = len(texts), len(classes)
    probabilities = np.full((n, k), np.nan)
    given = [i for i, t in enumerate(texts) if t is not None]
    if given:
        vectors = embedder.embed([class_text(c) for c in classes] + [texts[i] for i in given])
        cosines = vectors[k:] @ vectors[:k].T
        probabilities[given] = softmax(cosines)
    answered = set(given)
    predicted = tuple(classes[int(np.argmax(p))] if i in answered else None for i, p in enumerate(probabilities))
    keys = {label_key(c): c for c in classes}
    exact = tuple(keys.get(label_key(t)) if t is not None else None for t in texts)
    correct = tuple(p == g for p, g in zip(predicted, golds, strict=True))
    macc = low = high = exact_accuracy = grouping = None
    if n:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "y_pred contains classes not in y_true" (failures)
            macc = float(balanced_accuracy_score(list(golds), [p if p is not None else NO_CLASS for p in predicted]))
        exact_accuracy = float(np.mean([e == g for e, g in zip(exact, golds, strict=True)]))
        gold_index = np.array([list(classes).index(g) for g in golds])
        right = np.array(correct)
        low, high, grouping = _clustered_interval(
            lambda w: weighted_balanced_accuracy(gold_index, right, w), n, reps, seed, "scene_macc", clusters
        )
    failures = n - len(given)
    logger.debug("scenes: n=%d failures=%d macc=%s", n, failures, macc)
    return SceneResult(
        macc=macc,
        ci_low=low,
        ci_high=high,
        exact_accuracy=exact_accuracy,
        n=n,
        failures=failures,
        classes=tuple(classes),
        predicted=predicted,
        exact=exact,
        correct=correct,
        embedder=embedder.spec,
        temperature=SCENE_TEMPERATURE,
        reps=reps,
        seed=seed,
        probabilities=probabilities,
        clustering=grouping,
    )


def map_floor(truth: np.ndarray) -> float | None:
    """The mAP of an all-empty answer set: every score 0, computed as :func:`score_events` computes mAP.

    Each class with a positive gets ``average_precision_score(truth[:, j], zeros)``, which is its share of positive
    items (one threshold, every item above it); the mean over those classes is the floor. An all-empty answer set,
    or one that failed throughout, scores exactly this.

    Args:
        truth: Gold 0/1 per item and class (n, classes).

    Returns:
        The floor, or None when no class has a positive item.
    """
    from sklearn.metrics import average_precision_score

    truth = np.asarray(truth)
    columns = [j for j in range(truth.shape[1]) if truth[:, j].any()] if truth.ndim == 2 else []
    if not columns:
        return None
    zeros = np.zeros(truth.shape[0])
    return float(np.mean([average_precision_score(truth[:, j].astype(int), zeros) for j in columns]))


def event_scores(answers: Sequence[Sequence[str] | None], classes: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Per item and class: sigmoid of the best cosine between a predicted event and the class (0 without events).

    Every distinct text is embedded once, in one call.
    """
    lists = [[" ".join(e.split()) for e in a if e and e.strip()] if a is not None else [] for a in answers]
    k = len(classes)
    scores = np.zeros((len(lists), k))
    distinct = list(dict.fromkeys(e for events in lists for e in events))
    if not distinct:
        return scores
    vectors = embedder.embed([class_text(c) for c in classes] + distinct)
    row_of = {text: k + i for i, text in enumerate(distinct)}
    cosines = vectors[k:] @ vectors[:k].T  # distinct events x classes
    for i, events in enumerate(lists):
        if events:
            rows = [row_of[e] - k for e in events]
            scores[i] = sigmoid(cosines[rows].max(axis=0))
    return scores


def score_events(
    answers: Sequence[Sequence[str] | None],
    golds: Sequence[Sequence[str]],
    classes: Sequence[str],
    embedder: Embedder,
    *,
    reps: int = DEFAULT_REPS,
    seed: int = 0,
    class_scores: Sequence[Mapping[str, float] | None] | None = None,
    clusters: Sequence[str] | None = None,
) -> EventsResult:
    """Map free-text event lists onto ``classes`` and score them (see the module docstring).

    Args:
        answers: Each item's predicted events (parsed texts); None when the model or the parser failed.
        golds: Each item's gold events (classes).
        classes: The class list shared by the items.
        embedder: The embedding backend.
        reps: Bootstrap replicates (0: no interval).
        seed: Seed of the bootstrap.
        class_scores: Per item, a ranked-list model's own score of each class it ranks (a tagger's probabilities,
            :attr:`~airbench_nb.records.Response.ranking`), or None: that item's row of scores is these (0 for a
            class it does not rank) instead of the embedding similarities of its text. mAP is a ranking metric; a
            tagger is scored on its probabilities, as SSEU-Bench scores its specialist baselines. The exact-label F1
            still reads the listed events.
        clusters: Each item's cluster key (its utterance): the interval draws whole clusters; None: items.

    Raises:
        ValueError: Lengths differ, or a gold label is not a class.
    """
    from sklearn.metrics import average_precision_score, f1_score

    if len(answers) != len(golds):
        raise ValueError(f"{len(answers)} answers for {len(golds)} gold label sets")
    _check_gold([g for gold in golds for g in gold], classes, "gold events")
    n, k = len(answers), len(classes)
    scores = event_scores(answers, classes, embedder)
    if class_scores is not None:
        if len(class_scores) != n:
            raise ValueError(f"{len(class_scores)} class-score rows for {n} answers")
        for i, own in enumerate(class_scores):
            if own is not None:
                scores[i] = [float(own.get(c, 0.0)) for c in classes]
    index = {c: j for j, c in enumerate(classes)}
    truth = np.zeros((n, k), dtype=int)
    for i, gold in enumerate(golds):
        truth[i, [index[g] for g in gold]] = 1
    keys = {label_key(c): j for j, c in enumerate(classes)}
    named = np.zeros((n, k), dtype=int)
    for i, answer in enumerate(answers):
        for event in answer or []:
            j = keys.get(label_key(event))
            if j is not None:
                named[i, j] = 1
    with_positives = [j for j in range(k) if truth[:, j].any()]
    per_class = {classes[j]: float(average_precision_score(truth[:, j], scores[:, j])) for j in with_positives}
    mean_ap = float(np.mean(list(per_class.values()))) if per_class else None
    micro_f1 = float(f1_score(truth, named, average="micro", zero_division=0)) if n else None
    low = high = grouping = None
    if with_positives and n:

        def replicate(w: np.ndarray) -> np.ndarray:
            aps = np.stack([weighted_average_precision(truth[:, j], scores[:, j], w) for j in with_positives], axis=1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a replicate with no positive of any class
                return np.nanmean(aps, axis=1)

        low, high, grouping = _clustered_interval(replicate, n, reps, seed, "event_map", clusters)
    failures = sum(a is None for a in answers)
    logger.debug("events: n=%d failures=%d map=%s", n, failures, mean_ap)
    return EventsResult(
        map=mean_ap,
        ci_low=low,
        ci_high=high,
        per_class_ap=per_class,
        classes_without_positives=tuple(classes[j] for j in range(k) if j not in with_positives),
        micro_f1=micro_f1,
        n=n,
        failures=failures,
        classes=tuple(classes),
        embedder=embedder.spec,
        reps=reps,
        seed=seed,
        scores=scores,
        map_floor=map_floor(truth),
        clustering=grouping,
    )
