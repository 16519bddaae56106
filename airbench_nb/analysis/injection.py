"""Answers that try to talk the judge into a score: what the injection screen flagged, and what each prompt gave them.

Every verdict records the screen's result on the answer it judged (:attr:`~airbench_nb.records.Verdict.screen`,
:mod:`airbench_nb.judge.screen`). Per model this counts the answers screened and flagged (an answer judged by
several judges, or in two orders, counts once), per judge too, and keeps a few flagged answers as examples with
their scores under the verbatim prompt (what ``official`` scores) and the fenced prompt (what ``strict`` scores), so
that a score an answer asked for stands beside the one it earned. The screen never changes a score.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from airbench_nb.analysis_report import Injection, InjectionByJudge, InjectionExample, InjectionFlag, PromptScores
from airbench_nb.records import Verdict
from airbench_nb.scoring.outcomes import strict_reading

logger = logging.getLogger(__name__)

EXAMPLES = 5
"""Flagged answers kept as examples per model."""
KINDS = ("foundation", "chat")
"""The kinds of verdict scored apart: Foundation (accuracy, 0-1) and Chat (the model's 1-10 score)."""


def _score(verdict: Verdict) -> float | None:
    """The model's score of one verdict: Chat's ``score_hypothesis``, Foundation's ``correct`` as 1 or 0."""
    if verdict.score_hypothesis is not None:
        return float(verdict.score_hypothesis)
    return None if verdict.correct is None else float(verdict.correct)


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _both(verdicts: Sequence[Verdict]) -> PromptScores | None:
    """The mean model score of ``verdicts`` under the verbatim prompt and the fenced one (None: no fenced prompt)."""
    if not verdicts:
        return None
    fenced = [strict_reading(v) or v for v in verdicts if v.fenced is not None]
    return PromptScores(
        verbatim=_mean(_score(v) for v in verdicts),
        fenced=_mean(_score(v) for v in fenced) if fenced else None,
    )


def injection(verdicts: Mapping[str, Sequence[Verdict]], judges: Sequence[str] | None = None) -> dict[str, Injection]:
    """Per model: the answers the screen saw and flagged (:class:`~airbench_nb.analysis_report.Injection`).

    Args:
        verdicts: The verdicts that count, by model (:meth:`~airbench_nb.analysis.data.RunData.current_verdicts`).
        judges: The judges to count (None: every judge).

    Returns:
        An :class:`~airbench_nb.analysis_report.Injection` per model with screened verdicts: ``flagged`` and ``n``
        answers (one per item and turn), ``share``, ``patterns`` (flagged answers per pattern), ``by_judge`` (per
        judge, ``foundation`` (accuracy) and ``chat`` (the model's 1-10 score) as verbatim and fenced means over the
        flagged answers, ``fenced`` None for a judge without one, or None when the judge judged no flagged answer of
        that kind), and up to :data:`EXAMPLES` ``examples`` (uid, turn, flags with spans, scores per judge).
    """
    out: dict[str, Injection] = {}
    for model, given in verdicts.items():
        screened = [v for v in given if v.screen is not None and (judges is None or v.judge in judges)]
        if not screened:
            continue
        answers: dict[tuple[str, int | None], Verdict] = {}
        judged: dict[str, dict[tuple[str, int | None], list[Verdict]]] = defaultdict(lambda: defaultdict(list))
        for verdict in screened:
            answers.setdefault((verdict.uid, verdict.turn), verdict)
            judged[verdict.judge][(verdict.uid, verdict.turn)].append(verdict)
        flagged = [key for key, v in answers.items() if v.screen is not None and v.screen.flagged]
        patterns: dict[str, int] = defaultdict(int)
        for key in flagged:
            for flag in answers[key].screen.flags:  # type: ignore[union-attr]
                patterns[flag.pattern] += 1
        by_judge = {}
        for judge, keyed in judged.items():
            hit = [v for key, vs in keyed.items() if key in set(flagged) for v in vs]
            by_judge[judge] = InjectionByJudge(
                flagged=len({(v.uid, v.turn) for v in hit}),
                n=len(keyed),
                share=len({(v.uid, v.turn) for v in hit}) / len(keyed),
                foundation=_both([v for v in hit if v.order == "single"]),
                chat=_both([v for v in hit if v.order != "single"]),
            )
        examples = []
        for uid, turn in flagged[:EXAMPLES]:
            screen = answers[(uid, turn)].screen
            assert screen is not None
            scores = {}
            for judge, keyed in judged.items():
                if keyed.get((uid, turn)):
                    scores[judge] = _both(keyed[(uid, turn)])
            examples.append(
                InjectionExample(
                    uid=uid,
                    turn=turn,
                    flags=[InjectionFlag(pattern=f.pattern, span=f.span) for f in screen.flags],
                    scores=scores,
                )
            )
        out[model] = Injection(
            flagged=len(flagged),
            n=len(answers),
            share=len(flagged) / len(answers),
            patterns=dict(patterns),
            by_judge=by_judge,
            examples=examples,
        )
    return out


def injection_frame(data: Mapping[str, Injection]) -> pd.DataFrame:
    """One row per (model, judge, kind): answers flagged of n, and the flagged answers' mean under each prompt."""
    rows = [
        {
            "model": model,
            "judge": judge,
            "kind": kind,
            "flagged": row.flagged,
            "n": row.n,
            "share": row.share,
            "patterns": ", ".join(sorted(entry.patterns)),
            "verbatim prompt": scores.verbatim,
            "fenced prompt": scores.fenced,
        }
        for model, entry in data.items()
        for judge, row in entry.by_judge.items()
        for kind, scores in zip(KINDS, (row.foundation, row.chat), strict=True)
        if scores is not None
    ]
    return pd.DataFrame(rows)
