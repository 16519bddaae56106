"""Judge-human and inter-annotator agreement on an annotation sample (``airbench-nb sample-annotation``).

The rules, stated once:

**Labels.** A label file is a log of one annotator's actions (:class:`~airbench_nb.records.Label`). Actions are
replayed in the order given (files in argument order, lines in file order; label files are append-only): ``label``
pushes a decision onto the (annotator, pair) stack, ``undo`` pops the latest one (an undo with nothing to retract
is counted and ignored), ``skip`` changes nothing. The annotator's label of a pair is the top of its stack: the
latest label not undone. Foundation labels are option letters (``A``-``D``, from ``choice``) or ``unclear`` (the
answer picks no option, or not clearly one). Chat preferences are recorded in SHOWN order (``"1"``, ``"2"``,
``"tie"``) and translated with the pair's ``model_answer`` into ``model`` / ``reference`` / ``tie``.

**Judges.** Foundation: a judge's decision is the option its verdict chose (``Verdict.choice`` as a letter); a
judge that abstained (``choice`` None) decided ``unclear``, so it agrees with a human who marked the pair
"none / unclear" and disagrees with one who picked an option. Two reading rules of the kit are reported as
judges too: ``protocol:official`` (the official first/second-to-last character rule; an unreadable answer is
``unclear``; a letter past the options can never agree) and, when a run has more than one Foundation judge,
``protocol:strict`` (the strict protocol's deciding verdict: ``rule`` first, then the others). Chat: a judge's
preference comes from its two scores averaged over both orders (model vs reference: higher wins, equal is
``tie``); a pair needs a parsed score in both orders, otherwise the judge did not decide it (counted in
``missing``). Judgments are the current verdicts of the model's latest response (stale ones left out).

**Judge-human agreement.** The headline compares the judge with each annotator's label: one vote per (pair,
annotator), every vote counted, as MT-Bench computes agreement. Beside it: the same with an excluded class left
out (Chat: pairs where either side says tie, MT-Bench's "without ties"; Foundation: where either side says
unclear), Cohen's kappa of judge vs human over the votes, and the agreement with the majority label of each pair
(the unique most frequent label; pairs without one counted in ``no_majority``). Intervals: Wilson 95% when every
pair gives one vote (independent units), otherwise a percentile bootstrap that resamples pairs (votes on one pair
are not independent). Every block is repeated per category.

**Inter-annotator agreement** (per kind, since the label sets differ): Cohen's kappa for two annotators
(:func:`sklearn.metrics.cohen_kappa_score`) or Fleiss' kappa for more (:mod:`statsmodels.stats.inter_rater`),
computed on the pairs every annotator labelled; Krippendorff's alpha (nominal, the ``krippendorff`` package) on
every pair with at least two labels, so missing labels are allowed; and the pairwise percent agreement of humans
(share of agreeing annotator pairs, MT-Bench's human-human agreement: the ceiling to read judges against). Kappa
and alpha come with a 95% percentile bootstrap interval resampling pairs (:func:`scipy.stats.bootstrap`, seeded;
resamples in which the statistic is undefined, e.g. a single label, are left out and counted in ``note``), the
pairwise agreement with an interval chosen as for judges (Wilson with two annotators, else the pair bootstrap);
each with its n. Foundation categories are the option letters and ``unclear``; Chat categories ``model``,
``reference``, ``tie``. A pair bootstrap with very few pairs is narrow (every resample may give the same share).
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

from airbench_nb.analysis.stats import WILSON, plain, wilson
from airbench_nb.judge.extract import LETTERS
from airbench_nb.manifests import ManifestError, read_records
from airbench_nb.records import AnnotationPair, FoundationItem, Label

logger = logging.getLogger(__name__)

KINDS: tuple[str, str] = ("foundation", "chat")
"""Pair kinds, in report order."""

UNCLEAR = "unclear"
"""Foundation label of an answer that picks no option, or not clearly one (and of a judge that abstained)."""
MODEL, REFERENCE, TIE = "model", "reference", "tie"
"""Chat labels: which answer is better, in model/reference terms."""
CHAT_LABELS: tuple[str, ...] = (MODEL, REFERENCE, TIE)
"""Chat label set, in display order."""
EXCLUDED: dict[str, str] = {"foundation": UNCLEAR, "chat": TIE}
"""Per kind, the class the secondary measure leaves out."""
SUFFIX: dict[str, str] = {"foundation": "_clear", "chat": "_no_ties"}
"""Per kind, the key suffix of the secondary measure (``agreement_clear``, ``agreement_no_ties``)."""

STRICT_JUDGE = "protocol:strict"
"""Pseudo-judge: the strict protocol's deciding Foundation verdict (reported with more than one Foundation judge)."""
OFFICIAL_JUDGE = "protocol:official"
"""Pseudo-judge: the official first/second-to-last character rule."""
HUMANS = "human vs human"
"""Row name of the pairwise human agreement in :func:`agreement_frame`."""

HEADLINE = (
    "agreement: judge vs each annotator's label, one vote per (pair, annotator), every vote counted (MT-Bench); "
    "majority: judge vs the majority label, one unit per pair"
)
"""Which judge-human measure is the headline, in words."""
BOOTSTRAP = "percentile bootstrap over pairs, 95% (scipy.stats.bootstrap)"
"""How intervals over resampled pairs are computed."""
COHEN = "Cohen's kappa (sklearn.metrics.cohen_kappa_score)"
"""Statistic of two annotators (and of judge vs human)."""
FLEISS = "Fleiss' kappa (statsmodels.stats.inter_rater.fleiss_kappa)"
"""Statistic of three or more annotators."""
KRIPPENDORFF = "Krippendorff's alpha, nominal (krippendorff.alpha)"
"""Statistic that allows missing labels."""
PAIRWISE = "pairwise percent agreement of annotators (MT-Bench human-human agreement)"
"""The human-human share comparable to judge-human agreement."""
CONFIDENCE = 0.95
"""Coverage of every interval."""
REPS = 1000
"""Default bootstrap resamples."""

LABEL_COLUMNS: tuple[str, ...] = (
    "pair_id",
    "annotator",
    "kind",
    "uid",
    "model",
    "task",
    "category",
    "label",
    "shown",
)
"""Columns of :func:`resolve_labels` (``shown``: the raw Chat preference in shown order, or the option index)."""
DECISION_COLUMNS: tuple[str, ...] = ("judge", "pair_id", "kind", "category", "decision", "detail")
"""Columns of :func:`judge_decisions`."""
VOTE_COLUMNS: tuple[str, ...] = (
    "judge",
    "kind",
    "pair_id",
    "category",
    "annotator",
    "judge_label",
    "human_label",
    "agree",
)
"""Columns of :func:`votes`."""
DISAGREEMENT_COLUMNS: tuple[str, ...] = (
    "judge",
    "kind",
    "pair_id",
    "uid",
    "model",
    "task",
    "category",
    "judge_decision",
    "judge_detail",
    "human_labels",
    "majority",
    "humans_agreeing",
    "question",
    "answer",
    "audio",
)
"""Columns of :func:`disagreements`."""
FRAME_COLUMNS: tuple[str, ...] = ("judge", "kind", "measure", "label", "n", "agreement", "ci_low", "ci_high")
"""Columns of :func:`agreement_frame` (figure-ready)."""
CATEGORY_COLUMNS: tuple[str, ...] = (
    "judge",
    "kind",
    "category",
    "n",
    "agreement",
    "ci_low",
    "ci_high",
    "n_secondary",
    "agreement_secondary",
)
"""Columns of :func:`category_frame` (``*_secondary``: without ties for Chat, without unclear for Foundation)."""


def _line_numbers(path: Path) -> list[int]:
    r"""1-based numbers of the non-blank lines of a JSON Lines file (split on ``\n`` only, as the reader does)."""
    return [n for n, line in enumerate(path.read_bytes().split(b"\n"), start=1) if line.strip()]


def read_sample(path: str | Path) -> list[AnnotationPair]:
    """Read an annotation sample, refusing duplicate pair ids and Chat pairs without ``model_answer``.

    Args:
        path: The sample JSONL (``airbench-nb sample-annotation``).

    Returns:
        The pairs in file order.

    Raises:
        ManifestError: On a bad line (file, line and field named).
        FileNotFoundError: If the file does not exist.
    """
    path = Path(path)
    pairs = read_records(path, AnnotationPair)
    seen: dict[str, int] = {}
    for line, pair in zip(_line_numbers(path), pairs, strict=True):
        if pair.pair_id in seen:
            raise ManifestError(
                str(path), line, f"duplicate pair_id (first on line {seen[pair.pair_id]})", field="pair_id"
            )
        seen[pair.pair_id] = line
        if pair.kind == "chat" and pair.model_answer not in (1, 2):
            raise ManifestError(
                str(path), line, "a Chat pair needs model_answer 1 or 2", uid=pair.pair_id, field="model_answer"
            )
    return pairs


def read_labels(paths: Iterable[str | Path]) -> tuple[list[Label], list[tuple[str, int]]]:
    """Read label files in the order given.

    Args:
        paths: Label JSONL files (one per annotator, usually).

    Returns:
        ``(labels, sources)``: the actions in replay order and, for each, its ``(file, line)``.

    Raises:
        ManifestError: On a bad line (file, line and field named).
        FileNotFoundError: If a file does not exist.
    """
    labels: list[Label] = []
    sources: list[tuple[str, int]] = []
    for path in map(Path, paths):
        records = read_records(path, Label)
        labels.extend(records)
        sources.extend((str(path), line) for line in _line_numbers(path))
    return labels, sources


def _check(label: Label, pair: AnnotationPair, file: str, line: int) -> None:
    """Refuse a label that does not fit its pair's kind (ManifestError naming file, line and field)."""

    def bad(message: str, field: str) -> ManifestError:
        return ManifestError(file, line, message, uid=label.pair_id, field=field)

    if pair.kind == "foundation":
        if label.preference is not None:
            raise bad("a Foundation pair takes choice or unclear, not a preference", "preference")
        if label.unclear and label.choice is not None:
            raise bad("give choice or unclear, not both", "choice")
        if not label.unclear and label.choice is None:
            raise bad("a Foundation label needs choice (an option index) or unclear", "choice")
        if label.choice is not None and not 0 <= label.choice < len(pair.choices):
            raise bad(f"choice {label.choice} is not an index into the pair's {len(pair.choices)} options", "choice")
    else:
        if label.choice is not None or label.unclear:
            raise bad("a Chat pair takes a preference, not choice or unclear", "choice")
        if label.preference is None:
            raise bad('a Chat label needs preference "1", "2" or "tie"', "preference")


def chat_label(preference: str, model_answer: int) -> str:
    """Translate a Chat preference in SHOWN order into ``model`` / ``reference`` / ``tie``.

    Args:
        preference: ``"1"``, ``"2"`` or ``"tie"`` (which shown answer is better).
        model_answer: Which shown answer (1 or 2) is the model's.

    Returns:
        ``tie``, ``model`` when the preferred shown answer is the model's, else ``reference``.
    """
    if preference == TIE:
        return TIE
    return MODEL if int(preference) == model_answer else REFERENCE


def _canonical(label: Label, pair: AnnotationPair) -> tuple[str, Any]:
    if pair.kind == "foundation":
        return (UNCLEAR, None) if label.unclear else (LETTERS[label.choice], label.choice)  # type: ignore[index]
    return chat_label(str(label.preference), int(pair.model_answer or 0)), label.preference


def resolve_labels(
    labels: Sequence[Label], pairs: Sequence[AnnotationPair], sources: Sequence[tuple[str, int]] | None = None
) -> pd.DataFrame:
    """Each annotator's label of each pair: the latest ``label`` action not undone, in model/reference terms.

    Args:
        labels: Actions in replay order (see the module docstring).
        pairs: The sample the labels refer to.
        sources: ``(file, line)`` of each action, for error messages (default ``("<labels>", index + 1)``).

    Returns:
        One row per (pair, annotator) with a label, :data:`LABEL_COLUMNS`, sorted by pair and annotator.
        ``attrs["counts"]``: ``actions``, ``labels``, ``skips``, ``undos``, ``undo_without_label`` and ``resolved``.

    Raises:
        ManifestError: On a label whose pair is not in the sample or that does not fit its pair's kind (an option
            index out of range, a Chat label without a preference, ...), naming file, line and field.
    """
    by_id = {p.pair_id: p for p in pairs}
    stacks: dict[tuple[str, str], list[Label]] = {}
    counts = Counter(actions=0, labels=0, skips=0, undos=0, undo_without_label=0)
    for index, label in enumerate(labels):
        file, line = sources[index] if sources is not None else ("<labels>", index + 1)
        counts["actions"] += 1
        pair = by_id.get(label.pair_id)
        if pair is None:
            raise ManifestError(file, line, "pair_id is not in the sample", uid=label.pair_id, field="pair_id")
        stack = stacks.setdefault((label.pair_id, label.annotator), [])
        if label.action == "label":
            _check(label, pair, file, line)
            counts["labels"] += 1
            stack.append(label)
        elif label.action == "undo":
            counts["undos"] += 1
            if stack:
                stack.pop()
            else:
                counts["undo_without_label"] += 1
        else:
            counts["skips"] += 1
    rows = []
    for (pair_id, annotator), stack in sorted(stacks.items()):
        if not stack:
            continue
        pair = by_id[pair_id]
        value, shown = _canonical(stack[-1], pair)
        rows.append(
            {
                "pair_id": pair_id,
                "annotator": annotator,
                "kind": pair.kind,
                "uid": pair.uid,
                "model": pair.model,
                "task": pair.task,
                "category": pair.category,
                "label": value,
                "shown": shown,
            }
        )
    out = pd.DataFrame(rows, columns=list(LABEL_COLUMNS))
    out.attrs["counts"] = {**dict(counts), "resolved": len(out)}
    return out


def _foundation_decisions(
    run: Any, pairs: Sequence[AnnotationPair], judges: Sequence[str] | None
) -> list[dict[str, Any]]:
    from airbench_nb.scoring import foundation_verdicts

    rows: list[dict[str, Any]] = []
    wanted: dict[str, dict[str, AnnotationPair]] = {}
    for pair in pairs:
        if pair.kind == "foundation" and isinstance(run.items.get(pair.uid), FoundationItem):
            wanted.setdefault(pair.model, {})[pair.uid] = pair

    def add(judge: str, pair: AnnotationPair, choice: int | None, detail: str) -> None:
        decision = UNCLEAR if choice is None else (LETTERS[choice] if choice < len(LETTERS) else f"#{choice}")
        rows.append(
            {
                "judge": judge,
                "pair_id": pair.pair_id,
                "kind": "foundation",
                "category": pair.category,
                "decision": decision,
                "detail": detail,
            }
        )

    def text(item: FoundationItem, choice: int | None, judge: str) -> str:
        if choice is None:
            return f"{judge} abstained"
        return item.choices[choice] if choice < len(item.choices) else "a letter past the options"

    several = False
    for model, by_uid in sorted(wanted.items()):
        current = [v for v in run.current_verdicts(model) if v.order == "single" and v.uid in by_uid]
        latest = {(v.judge, v.uid): v for v in current}
        present = sorted({j for j, _ in latest})
        several = several or len(present) > 1
        for (judge, uid), verdict in sorted(latest.items()):
            if judges is None or judge in judges:
                add(judge, by_uid[uid], verdict.choice, text(run.items[uid], verdict.choice, judge))
        if len(present) > 1 and (judges is None or STRICT_JUDGE in judges):
            for uid, verdict in sorted(foundation_verdicts(current, set(by_uid), None).items()):
                item = run.items[uid]
                add(STRICT_JUDGE, by_uid[uid], verdict.choice, f"{verdict.judge}: {text(item, verdict.choice, 'all')}")
    if wanted and (judges is None or OFFICIAL_JUDGE in judges):
        frame = run.foundation_frame("official")
        frame = frame[frame["model"].isin(list(wanted))]
        for model, uid, chosen, reason in zip(
            frame["model"], frame["uid"], frame["chosen"], frame["reason"], strict=True
        ):
            pair = wanted[model].get(uid)
            if pair is None:
                continue
            choice = None if pd.isna(chosen) else int(chosen)
            detail = text(run.items[uid], choice, "official") if choice is not None else f"unread: {reason}"
            add(OFFICIAL_JUDGE, pair, choice, detail)
    if not several:
        logger.info("one Foundation judge: %s not reported (it would repeat that judge)", STRICT_JUDGE)
    return rows


def _chat_decisions(run: Any, pairs: Sequence[AnnotationPair], judges: Sequence[str] | None) -> list[dict[str, Any]]:
    wanted = {(p.model, p.uid): p for p in pairs if p.kind == "chat"}
    if not wanted:
        return []
    frame = run.chat_frame("strict")
    if frame.empty:
        return []
    keys = pd.Series(list(zip(frame["model"], frame["uid"], strict=True)), index=frame.index)
    frame = frame[keys.isin(set(wanted)) & ~frame["failed"]]
    if judges is not None:
        frame = frame[frame["judge"].isin(list(judges))]
    rows: list[dict[str, Any]] = []
    for (judge, model, uid), group in frame.groupby(["judge", "model", "uid"], sort=True):
        if group["order"].nunique() < 2:
            continue  # a score in one order only: not decided
        group = group.drop_duplicates("order", keep="last")
        model_mean = float(group["score_model"].mean())
        reference_mean = float(group["score_reference"].mean())
        decision = MODEL if model_mean > reference_mean else REFERENCE if model_mean < reference_mean else TIE
        pair = wanted[(model, uid)]
        rows.append(
            {
                "judge": str(judge),
                "pair_id": pair.pair_id,
                "kind": "chat",
                "category": pair.category,
                "decision": decision,
                "detail": f"model {model_mean:g} vs reference {reference_mean:g} (mean of both orders)",
            }
        )
    return rows


def judge_decisions(run: Any, pairs: Sequence[AnnotationPair], judges: Sequence[str] | None = None) -> pd.DataFrame:
    """What each judge decided on each pair of the sample (see the module docstring).

    Args:
        run: :class:`airbench_nb.analysis.data.RunData` of the run the sample was drawn from.
        pairs: The sample.
        judges: Judge specs to keep, pseudo-judges included (default all).

    Returns:
        One row per (judge, decided pair), :data:`DECISION_COLUMNS`: ``decision`` is a letter or ``unclear``
        (Foundation) or ``model`` / ``reference`` / ``tie`` (Chat); ``detail`` says why in words.
    """
    rows = _foundation_decisions(run, pairs, judges) + _chat_decisions(run, pairs, judges)
    return pd.DataFrame(rows, columns=list(DECISION_COLUMNS))


def _bootstrap(units: int, statistic: Callable[[np.ndarray], float], seed: int, reps: int) -> tuple[Any, Any, int]:
    """Percentile 95% interval of ``statistic(indices)`` over resampled units; ``(None, None, 0)`` under 2 units.

    Resamples where the statistic is undefined (NaN) are left out; their number is the third value.
    """
    if units < 2:
        return None, None, 0
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.bootstrap(
            (np.arange(units),),
            statistic,
            vectorized=False,
            n_resamples=reps,
            confidence_level=CONFIDENCE,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    values = np.asarray(result.bootstrap_distribution, dtype=float)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None, None, int(values.size)
    alpha = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(finite, [alpha, 100 - alpha])
    return plain(low), plain(high), int(values.size - finite.size)


def _share(agree: np.ndarray, total: np.ndarray, seed: int, reps: int, prefix: str = "") -> dict[str, Any]:
    """A share of per-unit counts: ``sum(agree) / sum(total)`` with Wilson (one per unit) or a cluster bootstrap."""
    keep = total > 0
    agree, total = agree[keep], total[keep]
    n, hits = int(total.sum()), int(agree.sum())
    out: dict[str, Any] = {f"n{prefix}": n, f"agree{prefix}": hits}
    if n == 0:
        none = {f"{key}{prefix}": None for key in ("agreement", "ci_low", "ci_high", "ci_method")}
        return {**out, **none}
    if len(total) == n:
        low, high = wilson(hits, n)
        method = WILSON
    else:
        low, high, _ = _bootstrap(len(total), lambda i: agree[i].sum() / total[i].sum(), seed, reps)
        method = BOOTSTRAP
    return {
        **out,
        f"agreement{prefix}": hits / n,
        f"ci_low{prefix}": plain(low),
        f"ci_high{prefix}": plain(high),
        f"ci_method{prefix}": method,
    }


def _vote_share(frame: pd.DataFrame, seed: int, reps: int, prefix: str = "") -> dict[str, Any]:
    """Share of agreeing votes; units are pairs."""
    if frame.empty:
        return _share(np.zeros(0), np.zeros(0), seed, reps, prefix)
    grouped = frame.groupby("pair_id", sort=True)["agree"].agg(["sum", "count"])
    return _share(grouped["sum"].to_numpy(float), grouped["count"].to_numpy(float), seed, reps, prefix)


def cohen_kappa(first: Sequence[str], second: Sequence[str]) -> float | None:
    """Cohen's kappa of two label sequences (sklearn); None when undefined (one label throughout) or empty."""
    if len(first) == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(list(first), list(second))
    return plain(value)


def majority_label(labels: Sequence[str]) -> str | None:
    """The unique most frequent label, or None when two or more labels tie for the most (or there is none)."""
    top = Counter(labels).most_common()
    if not top or (len(top) > 1 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def votes(decisions: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Every (judge, pair, annotator) where both the judge and the annotator decided, with ``agree``.

    Args:
        decisions: :func:`judge_decisions`.
        labels: :func:`resolve_labels`.

    Returns:
        :data:`VOTE_COLUMNS`, sorted by judge, pair and annotator.
    """
    if decisions.empty or labels.empty:
        return pd.DataFrame(columns=list(VOTE_COLUMNS)).astype({"agree": bool})
    joined = decisions.merge(labels[["pair_id", "annotator", "label"]], on="pair_id", how="inner")
    joined = joined.rename(columns={"decision": "judge_label", "label": "human_label"})
    joined["agree"] = joined["judge_label"] == joined["human_label"]
    return joined[list(VOTE_COLUMNS)].sort_values(["judge", "pair_id", "annotator"], ignore_index=True)


def _judge_measures(
    judged: pd.DataFrame, labelled: pd.DataFrame, kind: str, seed: int, reps: int, detailed: bool
) -> dict[str, Any]:
    """One judge on one kind (or one category): headline, secondary measure, kappa, majority, categories."""
    excluded, suffix = EXCLUDED[kind], SUFFIX[kind]
    out = _vote_share(judged, seed, reps)
    out["pairs"] = int(judged["pair_id"].nunique())
    clear = judged[(judged["judge_label"] != excluded) & (judged["human_label"] != excluded)]
    out.update(_vote_share(clear, seed, reps, suffix))
    out[f"judge_{excluded}"] = int((judged["judge_label"] == excluded).sum())
    out[f"human_{excluded}"] = int((judged["human_label"] == excluded).sum())
    out["missing"] = int(labelled["pair_id"].nunique() - out["pairs"])
    if not detailed:
        return out
    out["kappa"] = cohen_kappa(judged["judge_label"].tolist(), judged["human_label"].tolist())
    out["kappa_method"] = COHEN
    # majority: one unit per pair
    per_pair = judged.groupby("pair_id", sort=True).agg(
        judge_label=("judge_label", "first"), humans=("human_label", list)
    )
    majority = per_pair["humans"].map(majority_label)
    has = majority.notna()
    agree = (per_pair["judge_label"] == majority) & has
    both = has & (per_pair["judge_label"] != excluded) & (majority != excluded)
    block = _share(agree[has].to_numpy(float), np.ones(int(has.sum())), seed, reps)
    block.update(_share(agree[both].to_numpy(float), np.ones(int(both.sum())), seed, reps, suffix))
    block["no_majority"] = int((~has).sum())
    out["majority"] = block
    out["by_category"] = {
        str(category): _judge_measures(
            group, labelled[labelled["category"] == category], kind, seed, reps, detailed=False
        )
        for category, group in judged.groupby("category", sort=True)
    }
    return out


def judge_human(
    decisions: pd.DataFrame, labels: pd.DataFrame, seed: int = 0, reps: int = REPS
) -> dict[str, dict[str, dict[str, Any]]]:
    """Judge-human agreement per judge and kind (and category), as the module docstring says.

    Args:
        decisions: :func:`judge_decisions`.
        labels: :func:`resolve_labels`.
        seed: Bootstrap seed.
        reps: Bootstrap resamples.

    Returns:
        ``{judge: {kind: block}}`` for each kind the judge decided a labelled pair of. A block holds ``n`` (votes),
        ``agree``, ``pairs``, ``agreement``, ``ci_low``, ``ci_high``, ``ci_method``; the secondary measure with the
        kind's suffix (Chat ``n_no_ties``, ``agreement_no_ties``, ``ci_low_no_ties``, ``ci_high_no_ties``;
        Foundation ``..._clear``); ``judge_tie``/``human_tie`` (Chat) or ``judge_unclear``/``human_unclear``
        (Foundation) vote counts; ``missing`` (labelled pairs the judge did not decide); ``kappa`` (Cohen, judge vs
        human over the votes); ``majority`` (``n``, ``agreement``, ``ci_low``, ``ci_high``, the secondary measure,
        ``no_majority``); ``by_category`` (``{category: block}`` without kappa, majority and categories).
    """
    table = votes(decisions, labels)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (judge, kind), judged in table.groupby(["judge", "kind"], sort=True):
        labelled = labels[labels["kind"] == kind]
        out.setdefault(str(judge), {})[str(kind)] = _judge_measures(
            judged, labelled, str(kind), seed, reps, detailed=True
        )
    return out


def reliability_matrix(labels: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Labels of one kind as a pairs x annotators table (None where an annotator did not label a pair).

    Args:
        labels: :func:`resolve_labels`.
        kind: ``foundation`` or ``chat``.

    Returns:
        Index ``pair_id``, one column per annotator (sorted), object values.
    """
    rows = labels[labels["kind"] == kind]
    if rows.empty:
        return pd.DataFrame()
    matrix = rows.pivot(index="pair_id", columns="annotator", values="label").sort_index(axis=1)
    return matrix.astype(object).where(matrix.notna(), None)


def _codes(kind: str, values: Iterable[str]) -> list[str]:
    """The category set of a kind in display order (letters then unclear; model, reference, tie)."""
    order = [*LETTERS, UNCLEAR] if kind == "foundation" else list(CHAT_LABELS)
    present = set(values)
    return [c for c in order if c in present] + sorted(present - set(order))


def _pairwise(matrix: pd.DataFrame, excluded: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: agreeing annotator pairs and annotator pairs (leaving out labels equal to ``excluded``)."""
    agree, total = [], []
    for row in matrix.itertuples(index=False):
        given = [v for v in row if v is not None and v != excluded]
        counts = Counter(given)
        agree.append(sum(c * (c - 1) // 2 for c in counts.values()))
        total.append(len(given) * (len(given) - 1) // 2)
    return np.asarray(agree, float), np.asarray(total, float)


def _kappa_of(codes: np.ndarray, n_categories: int, two: bool) -> float:
    """Cohen's kappa (two columns) or Fleiss' kappa of integer codes; NaN when undefined.

    Cohen's is statsmodels' ``cohens_kappa`` on the contingency table: the same number as sklearn's (a test checks),
    15 times faster, which the bootstrap needs.
    """
    if two:
        table = np.bincount(codes[:, 0] * n_categories + codes[:, 1], minlength=n_categories**2)
        return float(cohens_kappa(table.reshape(n_categories, n_categories), return_results=False))
    counts, _ = aggregate_raters(codes, n_cat=n_categories)
    return float(fleiss_kappa(counts, method="fleiss"))


def _alpha_of(data: np.ndarray, n_categories: int) -> float:
    """Krippendorff's nominal alpha of a raters x units array (NaN missing); NaN when undefined."""
    try:
        return float(
            krippendorff.alpha(
                reliability_data=data, level_of_measurement="nominal", value_domain=list(range(n_categories))
            )
        )
    except ValueError:
        return math.nan


def _inter_measures(matrix: pd.DataFrame, kind: str, seed: int, reps: int) -> dict[str, Any]:
    """Inter-annotator statistics of one kind (or category) from its reliability matrix."""
    if not matrix.empty:
        matrix = matrix.loc[:, matrix.notna().any()]  # annotators with a label here
    annotators = [str(a) for a in matrix.columns]
    given = matrix.notna().sum(axis=1) if not matrix.empty else pd.Series(dtype=int)
    out: dict[str, Any] = {
        "annotators": annotators,
        "n_annotators": len(annotators),
        "pairs_labelled": int((given >= 1).sum()),
        "statistic": None,
        "cohen_kappa": None,
        "fleiss_kappa": None,
        "n": 0,
        "ci_low": None,
        "ci_high": None,
        "ci_method": BOOTSTRAP,
        "krippendorff_alpha": None,
        "n_alpha": 0,
        "alpha_ci_low": None,
        "alpha_ci_high": None,
        "alpha_method": KRIPPENDORFF,
        "complete": bool(len(annotators) and (given == len(annotators)).all()),
        "note": None,
        "reason": None,
    }
    if len(annotators) < 2:
        out["reason"] = f"{len(annotators)} annotator(s): inter-annotator agreement needs two"
        return out
    notes = []
    categories = _codes(kind, (v for v in matrix.to_numpy().ravel() if v is not None))
    index = {c: k for k, c in enumerate(categories)}
    complete = matrix[given == len(annotators)]
    two = len(annotators) == 2
    out["statistic"] = COHEN if two else FLEISS
    out["n"] = len(complete)
    if len(complete):
        codes = complete.map(index.get).to_numpy(int)
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = (
                cohen_kappa(complete.iloc[:, 0].tolist(), complete.iloc[:, 1].tolist())
                if two
                else plain(_kappa_of(codes, len(categories), two=False))
            )
        out["cohen_kappa" if two else "fleiss_kappa"] = value
        low, high, undefined = _bootstrap(len(codes), lambda i: _kappa_of(codes[i], len(categories), two), seed, reps)
        out["ci_low"], out["ci_high"] = low, high
        if value is None:
            notes.append("kappa undefined: one label throughout")
        if undefined:
            notes.append(f"kappa undefined in {undefined} of {reps} resamples (left out of its interval)")
    else:
        notes.append("no pair labelled by every annotator: no kappa")
    if not out["complete"]:
        notes.append(f"labels missing: kappa on the {len(complete)} pairs every annotator labelled; alpha on all")
    multi = matrix[given >= 2]
    out["n_alpha"] = len(multi)
    if len(multi):
        data = multi.map(lambda v: math.nan if v is None else float(index[v])).to_numpy(float).T
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out["krippendorff_alpha"] = plain(_alpha_of(data, len(categories)))
        low, high, undefined = _bootstrap(data.shape[1], lambda i: _alpha_of(data[:, i], len(categories)), seed, reps)
        out["alpha_ci_low"], out["alpha_ci_high"] = low, high
        if undefined:
            notes.append(f"alpha undefined in {undefined} of {reps} resamples (left out of its interval)")
    agree, total = _pairwise(multi, None)
    pairwise = _share(agree, total, seed, reps)
    out["pairwise_method"] = PAIRWISE
    out["n_comparisons"] = pairwise["n"]
    out["pairwise_agreement"] = pairwise["agreement"]
    out["pairwise_ci_low"], out["pairwise_ci_high"] = pairwise["ci_low"], pairwise["ci_high"]
    suffix = SUFFIX[kind]
    agree, total = _pairwise(multi, EXCLUDED[kind])
    secondary = _share(agree, total, seed, reps)
    out[f"n_comparisons{suffix}"] = secondary["n"]
    out[f"pairwise_agreement{suffix}"] = secondary["agreement"]
    out[f"pairwise_ci_low{suffix}"], out[f"pairwise_ci_high{suffix}"] = secondary["ci_low"], secondary["ci_high"]
    out["note"] = "; ".join(notes) or None
    return out


def inter_annotator(
    labels: pd.DataFrame, seed: int = 0, reps: int = REPS, categories: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Inter-annotator agreement per kind (and category), as the module docstring says.

    Args:
        labels: :func:`resolve_labels`.
        seed: Bootstrap seed.
        reps: Bootstrap resamples.
        categories: ``{pair_id: category}`` (default: read from ``labels``).

    Returns:
        ``{kind: block}`` for the kinds with labels. A block: ``annotators``, ``n_annotators``, ``pairs_labelled``;
        ``statistic`` (:data:`COHEN` or :data:`FLEISS`), ``cohen_kappa`` or ``fleiss_kappa`` (the other None),
        ``n`` (pairs every annotator labelled), ``ci_low``, ``ci_high``, ``ci_method``; ``krippendorff_alpha``,
        ``n_alpha`` (pairs with two or more labels), ``alpha_ci_low``, ``alpha_ci_high``; ``pairwise_agreement``,
        ``n_comparisons``, ``pairwise_ci_low``, ``pairwise_ci_high`` and the same with the kind's suffix
        (``_no_ties`` / ``_clear``); ``complete``, ``note``, ``reason`` (set when there is nothing to compute) and
        ``by_category`` (``{category: block}``).
    """
    if categories is None:
        categories = dict(zip(labels["pair_id"], labels["category"], strict=True))
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        matrix = reliability_matrix(labels, kind)
        if matrix.empty:
            continue
        block = _inter_measures(matrix, kind, seed, reps)
        category = matrix.index.map(lambda p: categories.get(p, "other"))
        block["by_category"] = {
            str(c): _inter_measures(matrix[category == c], kind, seed, reps) for c in sorted(set(category))
        }
        out[kind] = block
    return out


def _shown_label(label: str, pair: AnnotationPair) -> str:
    if pair.kind == "foundation" and len(label) == 1 and label in LETTERS and LETTERS.index(label) < len(pair.choices):
        return f"{label} ({pair.choices[LETTERS.index(label)]})"
    return label


def disagreements(decisions: pd.DataFrame, labels: pd.DataFrame, pairs: Sequence[AnnotationPair]) -> pd.DataFrame:
    """The (judge, pair) cases where the judge's decision differs from at least one annotator's label.

    Args:
        decisions: :func:`judge_decisions`.
        labels: :func:`resolve_labels`.
        pairs: The sample (for question, answer and audio).

    Returns:
        :data:`DISAGREEMENT_COLUMNS`: ``human_labels`` is ``"annotator: label; ..."`` (Foundation letters with
        their option text), ``majority`` the majority label or None, ``humans_agreeing`` ``"k/m"``, ``answer`` the
        model's answer (Foundation response, or the model's shown Chat answer), ``audio`` the absolute path
        (``data_root/audio``) for a player.
    """
    table = votes(decisions, labels)
    by_id = {p.pair_id: p for p in pairs}
    rows = []
    details = decisions.set_index(["judge", "pair_id"])["detail"] if not decisions.empty else pd.Series(dtype=object)
    for (judge, pair_id), group in table.groupby(["judge", "pair_id"], sort=True):
        if group["agree"].all():
            continue
        pair = by_id[pair_id]
        humans = group["human_label"].tolist()
        answer = pair.response if pair.kind == "foundation" else pair.answers[(pair.model_answer or 1) - 1]
        majority = majority_label(humans)
        rows.append(
            {
                "judge": judge,
                "kind": pair.kind,
                "pair_id": pair_id,
                "uid": pair.uid,
                "model": pair.model,
                "task": pair.task,
                "category": pair.category,
                "judge_decision": _shown_label(str(group["judge_label"].iloc[0]), pair),
                "judge_detail": details.get((judge, pair_id)),
                "human_labels": "; ".join(
                    f"{a}: {_shown_label(h, pair)}" for a, h in zip(group["annotator"], humans, strict=True)
                ),
                "majority": majority,
                "humans_agreeing": f"{int(group['agree'].sum())}/{len(group)}",
                "question": pair.question,
                "answer": answer,
                "audio": str(Path(pair.data_root) / pair.audio),
            }
        )
    out = pd.DataFrame(rows, columns=list(DISAGREEMENT_COLUMNS))
    return out.sort_values(["judge", "kind", "category", "task", "pair_id"], ignore_index=True)


MEASURES: tuple[tuple[str, str, str, str], ...] = (
    ("foundation", "", "agreement", "Foundation"),
    ("foundation", "_clear", "agreement_clear", "Foundation, without unclear"),
    ("chat", "", "agreement", "Chat, ties a class"),
    ("chat", "_no_ties", "agreement_no_ties", "Chat, without ties"),
)
"""Rows of :func:`agreement_frame` per judge: (kind, key suffix, measure, label)."""


def agreement_frame(result: Mapping[str, Any], secondary_foundation: bool = False) -> pd.DataFrame:
    """Figure-ready agreement: one row per judge and measure (and the human-human reference), with 95% CIs.

    Args:
        result: :func:`agreement` (or its JSON read back).
        secondary_foundation: Also give Foundation without unclear labels.

    Returns:
        :data:`FRAME_COLUMNS`: ``measure`` is ``agreement`` or ``agreement_no_ties`` / ``agreement_clear``,
        ``label`` its caption; judges in result order, then :data:`HUMANS` (pairwise human agreement) when there
        are two or more annotators.
    """
    rows = []

    def add(judge: str, kind: str, measure: str, label: str, n: Any, value: Any, low: Any, high: Any) -> None:
        rows.append(
            {
                "judge": judge,
                "kind": kind,
                "measure": measure,
                "label": label,
                "n": n,
                "agreement": value,
                "ci_low": low,
                "ci_high": high,
            }
        )

    for kind, suffix, measure, label in MEASURES:
        if suffix == "_clear" and not secondary_foundation:
            continue
        for judge, blocks in result.get("judges", {}).items():
            block = blocks.get(kind)
            if block and block.get(f"n{suffix}"):
                add(
                    judge,
                    kind,
                    measure,
                    label,
                    block[f"n{suffix}"],
                    block[f"agreement{suffix}"],
                    block[f"ci_low{suffix}"],
                    block[f"ci_high{suffix}"],
                )
        block = result.get("inter_annotator", {}).get(kind)
        if block and block.get(f"n_comparisons{suffix}"):
            add(
                HUMANS,
                kind,
                measure,
                label,
                block[f"n_comparisons{suffix}"],
                block[f"pairwise_agreement{suffix}"],
                block[f"pairwise_ci_low{suffix}"],
                block[f"pairwise_ci_high{suffix}"],
            )
    out = pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
    for column in ("agreement", "ci_low", "ci_high"):
        out[column] = out[column].astype(float)
    out["n"] = out["n"].astype(int)
    return out


def category_frame(result: Mapping[str, Any]) -> pd.DataFrame:
    """Judge-human agreement per judge, kind and category (the ``by_category`` blocks), for display.

    Args:
        result: :func:`agreement` (or its JSON read back).

    Returns:
        :data:`CATEGORY_COLUMNS`; ``*_secondary`` is without ties (Chat) or without unclear (Foundation).
    """
    rows = []
    for judge, blocks in result.get("judges", {}).items():
        for kind in KINDS:
            for category, block in (blocks.get(kind) or {}).get("by_category", {}).items():
                suffix = SUFFIX[kind]
                rows.append(
                    {
                        "judge": judge,
                        "kind": kind,
                        "category": category,
                        "n": block["n"],
                        "agreement": block["agreement"],
                        "ci_low": block["ci_low"],
                        "ci_high": block["ci_high"],
                        "n_secondary": block[f"n{suffix}"],
                        "agreement_secondary": block[f"agreement{suffix}"],
                    }
                )
    out = pd.DataFrame(rows, columns=list(CATEGORY_COLUMNS))
    for column in ("agreement", "ci_low", "ci_high", "agreement_secondary"):
        out[column] = out[column].astype(float)
    return out


class AgreementResult(dict[str, Any]):
    """The JSON-serialisable result of :func:`agreement`, with display frames as attributes (not serialised)."""

    labels: pd.DataFrame
    """:func:`resolve_labels`."""
    decisions: pd.DataFrame
    """:func:`judge_decisions`."""
    votes: pd.DataFrame
    """:func:`votes`."""
    disagreements: pd.DataFrame
    """:func:`disagreements`, for a table with an audio player per row."""
    frame: pd.DataFrame
    """:func:`agreement_frame`, for :func:`airbench_nb.plots.agreement_bars`."""
    categories: pd.DataFrame
    """:func:`category_frame`."""


def agreement(
    run_dir: str | Path,
    sample: str | Path,
    label_files: Sequence[str | Path],
    seed: int = 0,
    *,
    judges: Sequence[str] | None = None,
    reps: int = REPS,
) -> AgreementResult:
    """Judge-human and inter-annotator agreement of an annotated sample of a run.

    Args:
        run_dir: The run folder the sample was drawn from (``data/``, ``responses/``, ``verdicts/``).
        sample: The sample JSONL (:class:`~airbench_nb.records.AnnotationPair` lines).
        label_files: Label JSONL files (:class:`~airbench_nb.records.Label` lines), replayed in this order.
        seed: Bootstrap seed.
        judges: Judge specs to report (pseudo-judges included; default all).
        reps: Bootstrap resamples.

    Returns:
        A dict (JSON-serialisable; attributes hold the frames, see :class:`AgreementResult`)::

            {"run_dir", "sample", "label_files", "seed", "reps", "headline",
             "counts": {"pairs", "foundation_pairs", "chat_pairs", "not_in_run", "labelled_pairs",
                        "actions", "labels", "skips", "undos", "undo_without_label", "resolved",
                        "by_annotator": {annotator: labelled pairs}},
             "annotators": [...],
             "judges": {judge: {"foundation": block, "chat": block}},   # see judge_human()
             "inter_annotator": {"foundation": block, "chat": block},   # see inter_annotator()
             "reasons": {key: why}}                                     # what could not be computed

    Raises:
        ManifestError: On a bad sample or label line, or a label that does not fit its pair (file, line named).
        FileNotFoundError: If a file, or the run's manifests, do not exist.
    """
    from airbench_nb.analysis.data import load_run

    pairs = read_sample(sample)
    actions, sources = read_labels(label_files)
    labels = resolve_labels(actions, pairs, sources)
    run = load_run(run_dir)
    decisions = judge_decisions(run, pairs, judges)
    not_in_run = sum(1 for p in pairs if p.uid not in run.items or p.model not in run.responses)
    reasons: dict[str, str] = {}
    if labels.empty:
        reasons["labels"] = "no pair has a label (every label undone or skipped, or no label files)"
    if decisions.empty:
        reasons["judges"] = "no judge decided a pair of the sample"
    judged = judge_human(decisions, labels, seed, reps)
    if not judged and not labels.empty and not decisions.empty:
        reasons["judges"] = "no judge decided a labelled pair"
    inter = inter_annotator(labels, seed, reps, categories={p.pair_id: p.category for p in pairs})
    for kind, block in inter.items():
        if block.get("reason"):
            reasons[f"inter_annotator.{kind}"] = block["reason"]
    annotators = sorted(labels["annotator"].unique().tolist()) if not labels.empty else []
    counts = {
        "pairs": len(pairs),
        "foundation_pairs": sum(p.kind == "foundation" for p in pairs),
        "chat_pairs": sum(p.kind == "chat" for p in pairs),
        "not_in_run": not_in_run,
        "labelled_pairs": int(labels["pair_id"].nunique()) if not labels.empty else 0,
        **labels.attrs["counts"],
        "by_annotator": {a: int(n) for a, n in labels.groupby("annotator").size().items()} if annotators else {},
    }
    result = AgreementResult(
        run_dir=str(run_dir),
        sample=str(sample),
        label_files=[str(f) for f in label_files],
        seed=seed,
        reps=reps,
        headline=HEADLINE,
        counts=counts,
        annotators=annotators,
        judges=judged,
        inter_annotator=inter,
        reasons=reasons,
    )
    result.labels = labels
    result.decisions = decisions
    result.votes = votes(decisions, labels)
    result.disagreements = disagreements(decisions, labels, pairs)
    result.frame = agreement_frame(result)
    result.categories = category_frame(result)
    logger.info(
        "agreement: %d pairs, %d labels from %d annotators, %d judges, %d disagreements",
        len(pairs),
        len(labels),
        len(annotators),
        len(judged),
        len(result.disagreements),
    )
    return result
