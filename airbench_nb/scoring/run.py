"""Scoring a kit run: items, responses and verdicts under the official and/or strict protocol."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from airbench_nb.judge.registry import scores_only
from airbench_nb.manifests import DATA_DEFECT_TEXT
from airbench_nb.records import (
    CONTROL_OF_KEY,
    PERTURBATION_OF_KEY,
    REFERENCE_KINDS,
    AudioStatus,
    ChatItem,
    FoundationItem,
    Response,
    Verdict,
)
from airbench_nb.score_table import ProtocolScores, RunScores
from airbench_nb.scoring.aggregate import DEFAULT_REPS, _log_summary, _protocols
from airbench_nb.scoring.metrics import Metric, as_metric, metrics_of, optional_metrics
from airbench_nb.scoring.outcomes import (
    DEFAULT_PROTOCOL,
    STALE_WHY,
    Protocol,
    asked_items,
    current_verdicts,
    foundation_verdicts,
    latest_responses,
)
from airbench_nb.scoring.reference import with_options

logger = logging.getLogger(__name__)

GRADED_KEY = "clean_uid"
"""Item ``meta`` key that marks a noise-graded copy of a clean item (with ``snr_db``): left out of the tables."""

GRADED_WHY = "noise-graded copies (meta.clean_uid): analysed as SNR curves, not scored here"
"""Why graded items are missing from the score tables (``graded_items["why"]`` of every table)."""

ROTATED_KEY = "rotation_of"
"""Item ``meta`` key that marks a circular-evaluation copy (``airbench-nb rotate``) of another item."""

ROTATED_WHY = (
    "circular-evaluation copies (meta.rotation_of) of items scored here: analysed by circular evaluation, not scored "
    "twice (a manifest of rotations alone is scored)"
)
"""Why rotated copies whose original is present are missing from the score tables."""


CONTROL_KEY = CONTROL_OF_KEY
"""Item ``meta`` key that marks an audio-reliance control (:mod:`airbench_nb.builders.controls`): left out of the
tables (analysed beside its original by :mod:`airbench_nb.analysis.controls`)."""

PERTURBED_KEY = PERTURBATION_OF_KEY
"""Item ``meta`` key that marks a perturbed copy (:mod:`airbench_nb.builders.perturbations`: a codec, reverberation,
... of another item's audio): left out of the tables (analysed beside its original, as a curve over the
perturbation's parameter)."""


def _pick_model(responses: Sequence[Response], model: str | None) -> str | None:
    if model is not None:
        return model
    models = sorted({r.model for r in responses})
    if len(models) > 1:
        raise ValueError(f"responses of several models ({', '.join(models)}): pass model= to choose one")
    return models[0] if models else None


_foundation_verdicts = foundation_verdicts  # the older, underscored name (airbench_nb.analysis.data imports it)


def _chat_verdicts(
    verdicts: Iterable[Verdict], uids: set[str], judges: Sequence[str] | None
) -> dict[tuple[str, str, int | None], Verdict]:
    """The Chat judge's verdicts by ``(uid, order, turn)`` (:meth:`~airbench_nb.scoring.metrics.JudgeScore.select`)."""
    from airbench_nb.scoring.metrics import JudgeScore

    return JudgeScore().select(verdicts, uids, judges)


def audio_as_is(items: Sequence[Any], root: str | Path) -> list[Any]:
    """The items with ``audio_status`` and hashes from their audio as it is now (what decides usability).

    Args:
        items: Items of one data root.
        root: Their data root.

    Returns:
        New items (:func:`~airbench_nb.manifests.check_audio`); a warning names how many are unusable now though
        their manifest says otherwise (no ``audio_status``, or a stale one).
    """
    from airbench_nb.manifests import check_audio

    checked = check_audio(items, root)
    misstated = [
        (i.uid, was.audio_status, i.audio_status)
        for was, i in zip(items, checked, strict=True)
        if i.audio_status != AudioStatus.ok and was.audio_status != i.audio_status
    ]
    if misstated:
        uid, was, now = misstated[0]
        logger.warning(
            "%d item(s) whose audio is unusable now though the manifest says otherwise (first: %r, manifest %s, "
            "now %s): left out of scoring and counted as unusable",
            len(misstated),
            uid,
            was.value if was else "no audio_status",
            now.value if now else None,
        )
    return checked


PROXY_LABEL = "proxy (sentence-embedding similarity mapped to 1-10, not an LLM judgment)"
"""How Chat scores from the ``proxy`` judge are labelled in every table."""


def score_run(
    items: Sequence[FoundationItem | ChatItem],
    responses: Sequence[Response],
    verdicts: Sequence[Verdict] = (),
    protocol: Protocol = DEFAULT_PROTOCOL,
    model: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    judges: Sequence[str] | None = None,
    metric_options: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    shared_sections: dict[str, Any] | None = None,
) -> RunScores:
    """Score one model's run under the official and/or strict protocol.

    Args:
        items: The benchmark items (Foundation and/or Chat); uids must be unique.
        responses: Model responses; the last response per uid wins (a resumed run may append a retry).
        verdicts: Judge verdicts (Foundation: ``single``; Chat: both orders, per turn for multi-turn items); the
            last per (uid, judge, order, turn) wins, and one that judged an older response than the latest (its
            ``response_hash``) is stale and unused.
        protocol: ``official``, ``strict`` or ``both``.
        model: Model spec to score; None when the responses come from a single model.
        seed: Seed of the bootstrap.
        reps: Bootstrap replicates (0: no confidence intervals).
        judges: Judge specs in priority order (see the module docstring); None for the default.
        metric_options: Options of the metrics that take some (``embedder``: the embedding backend of the scene,
            event and caption-similarity metrics, :mod:`airbench_nb.scoring.reference`), and ``metrics``: names of
            optional metrics to compute too (``spider``, ``fense``:
            :func:`~airbench_nb.scoring.metrics.optional_metrics`; one that cannot run here is refused in one line
            before anything is scored).
        root: The items' data root. When given, which items are usable is decided from their audio as it is now
            (:func:`~airbench_nb.manifests.check_audio`, cached per file by path, size and times), whatever the
            manifest's ``audio_status`` says (absent, or stale: a clip deleted, emptied or damaged since); None: from
            ``audio_status`` and the model's responses (an item the runner answered with a data defect, ``audio
            missing|empty|corrupt: ...``, found when it checked the audio, is unusable too).
        shared_sections: Sections of the protocol-free metrics (every reference metric: no judge reads them) by
            section name, filled here and read again by a later call for the same model's same records and options
            with other ``judges`` (:func:`~airbench_nb.scoring.tables.score_models` scores a model once per Chat
            judge); None: computed here for this call only.

    Returns:
        A :class:`~airbench_nb.score_table.RunScores`: a :class:`~airbench_nb.score_table.ProtocolScores` for each
        protocol asked for (``protocol``, ``model``, ``seed``, ``reps``, ``unusable_items``, ``graded_items``,
        ``judges``, ``foundation``, ``chat``); a section is None when the model answered no item of that kind.
        ``graded_items`` counts the noise-graded copies (``meta["clean_uid"]``) left out of the tables;
        ``duplicates`` the response and verdict records superseded by later ones and the stale verdicts left out.
        ``.as_dict()`` is its JSON form.

    Raises:
        ValueError: On an unknown protocol, duplicate item uids, or several models or Chat judges to choose from.
    """
    steps = score_run_steps(
        items,
        responses,
        verdicts,
        protocol=protocol,
        model=model,
        seed=seed,
        reps=reps,
        judges=judges,
        metric_options=metric_options,
        root=root,
        shared_sections=shared_sections,
    )
    return finish_steps(steps)


def finish_steps(steps: Generator[None, None, RunScores]) -> RunScores:
    """Run :func:`score_run_steps` (from its start or its ``yield``) to its end and return its scores."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def score_run_steps(
    items: Sequence[FoundationItem | ChatItem],
    responses: Sequence[Response],
    verdicts: Sequence[Verdict] = (),
    protocol: Protocol = DEFAULT_PROTOCOL,
    model: str | None = None,
    seed: int = 0,
    reps: int = DEFAULT_REPS,
    judges: Sequence[str] | None = None,
    metric_options: Mapping[str, Any] | None = None,
    root: str | Path | None = None,
    shared_sections: dict[str, Any] | None = None,
    defer: Callable[[Metric], bool] | None = None,
) -> Generator[None, None, RunScores]:
    """:func:`score_run` in two steps: it yields once, before the sections of the metrics ``defer`` picks.

    Every section of a protocol-free metric that ``defer`` picks (one whose scores a worker is still computing:
    :func:`airbench_nb.scoring.ahead.waits_on`) is computed after the generator's one ``yield``; everything else
    before it. :func:`~airbench_nb.scoring.tables.score_models` takes every model to its ``yield`` first, so that
    the analysis waits for the worker last. The scores are the same, in the same order, as :func:`score_run`'s
    (which runs the steps at once); the generator's return value is the :class:`RunScores`.

    Args:
        items: As in :func:`score_run`.
        responses: As in :func:`score_run`.
        verdicts: As in :func:`score_run`.
        protocol: As in :func:`score_run`.
        model: As in :func:`score_run`.
        seed: As in :func:`score_run`.
        reps: As in :func:`score_run`.
        judges: As in :func:`score_run`.
        metric_options: As in :func:`score_run`.
        root: As in :func:`score_run`.
        shared_sections: As in :func:`score_run`.
        defer: Picks the protocol-free metrics whose sections are computed after the ``yield``; None: none.
    """
    wanted = _protocols(protocol)
    if reps < 0:
        raise ValueError(f"reps must be >= 0, got {reps}")
    seen: set[str] = set()
    for item in items:
        if item.uid in seen:
            raise ValueError(f"duplicate item uid {item.uid!r}")
        seen.add(item.uid)
    model = _pick_model(responses, model)
    by_uid, duplicate_responses = latest_responses(r for r in responses if r.model == model)
    own, resolved = current_verdicts((v for v in verdicts if v.model == model), by_uid)
    # Items whose audio is missing, empty or corrupt cannot be answered by any model: they are a defect of the data,
    # not a failure of the model. Both protocols leave them out (the official inference script skips them too) and
    # every table reports how many there were.
    # Noise-graded copies of clean items (meta.clean_uid, meta.snr_db) are analysed as SNR curves; in the tables
    # they would count one clean question several times. Circular-evaluation copies (meta.rotation_of) of items that
    # are scored here are left out for the same reason; a manifest of rotations alone is scored as it is. Controls
    # (meta.control_of) and perturbed copies (meta.perturbation_of) are analysed beside their originals.
    if root is not None:
        items = audio_as_is(items, root)
    uids = {i.uid for i in items}
    graded = Counter(i.kind for i in items if GRADED_KEY in i.meta)
    rotated = Counter(i.kind for i in items if GRADED_KEY not in i.meta and i.meta.get(ROTATED_KEY) in uids)
    ungraded = [
        i
        for i in items
        if GRADED_KEY not in i.meta
        and CONTROL_KEY not in i.meta
        and PERTURBED_KEY not in i.meta
        and i.meta.get(ROTATED_KEY) not in uids
    ]
    # The runner checks the audio as it is when it asks the model: an item it answered with a data defect
    # ("audio missing: ...") is unusable for this model even when the manifest says nothing about its audio.
    defects = {uid for uid, r in by_uid.items() if r.error is not None and DATA_DEFECT_TEXT.match(r.error)}
    usable = [i for i in ungraded if i.audio_status in (None, AudioStatus.ok) and i.uid not in defects]
    kept = {i.uid for i in usable}
    unusable = Counter(i.kind for i in ungraded if i.uid not in kept)
    # Each metric scores the items that name it (FoundationItem: choice_accuracy; ChatItem: judge_score) into its
    # section; a metric whose items the model did not answer leaves its section None, and picks no verdicts.
    scored: list[tuple[Metric, list[Any], Mapping[Any, Verdict]]] = []
    extra = optional_metrics(metric_options)  # asked for by name (SPIDEr, FENSE): refused in one line when unavailable
    extra_names = {m.name for m in extra}
    for metric in (as_metric(with_options(m, metric_options)) for m in [*metrics_of(usable), *extra]):
        own_items = [i for i in usable if (metric.name in i.METRICS or metric.name in extra_names) and metric.serves(i)]
        own_items = asked_items(own_items, by_uid)  # a task or direction the model declined is not asked
        answered = any(i.uid in by_uid for i in own_items)
        chosen = metric.select(own, {i.uid for i in own_items}, judges) if answered else None
        scored.append((metric, own_items, chosen))
    used = {metric.section: metric.judges_used(chosen or {}) for metric, _, chosen in scored}

    result: dict[str, Any] = {}
    tables: list[tuple[str, dict[str, Any], list[Any]]] = []
    deferred: dict[str, list[Any]] = {}  # the outcomes of each deferred section (protocol-free: the same in both)
    shared_outcomes: dict[tuple[Any, tuple[str, ...]], list[Any]] = {}
    # sections of protocol-free metrics (every reference metric), computed once (across Chat judges when shared)
    computed: dict[str, Any] = shared_sections if shared_sections is not None else {}
    for name in wanted:
        table: dict[str, Any] = {"protocol": name, "model": model, "seed": seed, "reps": reps}
        table["unusable_items"] = {
            "foundation": unusable.get("foundation", 0),
            "chat": unusable.get("chat", 0),
            **({"reference": other} if (other := sum(unusable[k] for k in REFERENCE_KINDS)) else {}),
            "why": "audio missing, empty or corrupt: left out of both protocols and counted here",
        }
        table["graded_items"] = {
            "foundation": graded.get("foundation", 0),
            "chat": graded.get("chat", 0),
            "why": GRADED_WHY,
        }
        table["rotated_items"] = {"foundation": rotated.get("foundation", 0), "why": ROTATED_WHY}
        table["duplicates"] = {"responses": duplicate_responses, **resolved, "why": STALE_WHY}
        chat_judges = used.get("chat", [])
        table["judges"] = {
            "foundation": used.get("foundation", []),
            "chat": chat_judges,
            "chat_label": ", ".join(PROXY_LABEL if scores_only(j) else j for j in chat_judges) or None,
        }
        table["foundation"] = None
        table["chat"] = None
        slots: list[Any] = []
        for metric, own_items, chosen in scored:
            section = None
            if chosen is not None and metric.protocol_free and metric.section in computed:
                section = computed[metric.section]
            elif chosen is not None and metric.protocol_free and defer is not None and defer(metric):
                section = _LATER
                if metric.section not in deferred:  # the outcomes now: after the yield only what waits is left
                    # metrics reading the same items the same way (BLEU and chrF) share one list of outcomes
                    same = (getattr(metric.outcomes, "__func__", metric.outcomes), tuple(i.uid for i in own_items))
                    if same not in shared_outcomes:
                        shared_outcomes[same] = _outcomes(metric, own_items, by_uid, chosen, name)
                    deferred[metric.section] = shared_outcomes[same]
            elif chosen is not None:
                section = _section(metric, own_items, by_uid, chosen, name, reps, seed, computed)
            slots.append(section)
        tables.append((name, table, slots))
    shared_outcomes.clear()
    yield  # the caller may score other models before the deferred sections
    for name, table, slots in tables:
        for k, (metric, _, _) in enumerate(scored):
            section = slots[k]
            if section is _LATER:  # computed now, or by an earlier protocol or a call sharing the sections
                if metric.section not in computed:
                    computed[metric.section] = metric.aggregate(deferred.pop(metric.section), name, reps, seed)
                section = computed[metric.section]
            if metric.section in ("foundation", "chat"):
                table[metric.section] = section
            else:  # a metric beyond AIR-Bench's two: its own section
                table.setdefault("metric_sections", {})[metric.section_of(section)] = section
        _log_summary(name, table)
        result[name] = ProtocolScores.model_validate(table)
    return RunScores.model_validate(result)


_LATER = object()
"""A deferred section's place (:func:`score_run_steps`)."""


def _outcomes(
    metric: Metric,
    own_items: Sequence[Any],
    by_uid: Mapping[str, Response],
    chosen: Mapping[Any, Verdict],
    protocol: str,
) -> list[Any]:
    """Every outcome of a metric's items under ``protocol``."""
    return [o for i in own_items for o in metric.outcomes(i, by_uid.get(i.uid), chosen, protocol)]


def _section(
    metric: Metric,
    own_items: Sequence[Any],
    by_uid: Mapping[str, Response],
    chosen: Mapping[Any, Verdict],
    protocol: str,
    reps: int,
    seed: int,
    computed: dict[str, Any],
) -> Any:
    """One metric's section under ``protocol``, kept in ``computed`` when the metric is protocol-free."""
    section = metric.aggregate(_outcomes(metric, own_items, by_uid, chosen, protocol), protocol, reps, seed)
    if metric.protocol_free:
        computed[metric.section] = section
    return section
