"""Scoring: the ``official`` and ``strict`` protocols side by side, each score with n, failures and a 95% CI.

Two protocols read the same run:

- ``official`` reproduces the AIR-Bench scripts. Foundation: the response is stripped and its newlines deleted
  (as ``score_foundation.py`` does), then :func:`~airbench_nb.judge.extract.official_extract` reads its first or
  second-to-last character; judge verdicts are not used. A response with no letter there, an empty one, or an
  error is a *failure* and is dropped from the denominator (which inflates accuracy); a letter beyond the item's
  options counts wrong. Chat: the judge's raw reply goes through
  :func:`~airbench_nb.judge.chat_parse.parse_scores_official`; failures are dropped. The offline ``proxy``
  judge (:data:`SCORES_ONLY_JUDGES`) and any verdict without a raw reply keep their scores: their ``raw`` is an
  explanation, not a judge reply, so there is nothing for the official parser to read.
- ``strict`` (the default) fixes the known flaws. Foundation: the verdict's ``correct`` decides (rule or LLM
  judge); a missing response, an error response, a missing verdict or an abstention is a failure and counts
  *wrong*. Chat: the verdict's parsed scores; an unscored (item, order) cannot be guessed, so it is left out of
  the mean but counted in ``failures`` and reported.

Aggregation is the same in both protocols (the official one). Foundation: accuracy per subset
``f"{task}_{dataset}"`` and per task (the task's items pooled over its datasets); a category is the unweighted
mean of its tasks; the Average is the mean of the category means present. Chat: the model's score is its
``score_hypothesis``; a category (speech, sound, music) is the mean over its items and both orders; Mixed is the
mean of the task means of ``speech_and_sound_QA`` and ``speech_and_music_QA``; the Average is the mean of the
four categories present. The reference's mean score and the relative score (model / reference) come with every
Chat score.

Every :class:`Score` carries ``n`` (the number of units its value is computed over: items for Foundation,
(item, order) pairs for Chat), ``failures`` (units that failed: dropped from ``n`` in ``official`` and in strict
Chat, inside ``n`` as wrong answers in strict Foundation) and a percentile bootstrap 95% confidence interval:
items are resampled with replacement within each stratum (a Foundation subset, a Chat task) and the whole
aggregate (subset -> task -> category -> Average) is recomputed per replicate. Each stratum draws from its own
generator seeded by ``(seed, crc32(stratum))``, so both protocols share the same resamples and adding a task
leaves the other tasks' intervals unchanged. Same inputs, same seed: same numbers.

Which verdict decides a strict Foundation item: verdicts of the scored model are grouped by judge; for each item
the judges are tried in priority order (``judges``, default ``rule`` first, then the other judge specs present in
sorted order) and the first verdict that decided (``correct`` not None) wins; when every judge abstained the item
is a failure. Several verdicts of one judge for one item: the last one (verdict files are append-only). Chat uses
one judge: the first of ``judges`` that has Chat verdicts, or the only Chat judge present.

Official-format files (:func:`score_official_files`): one bad line never stops the scoring. A line that cannot be
placed in a task (invalid JSON, not an object, missing ``task_name`` or ``dataset_name``, Foundation choices or
``answer_gt`` missing or not matching) is *invalid*: it is counted in ``invalid`` and described in ``errors``
(file, line, field). A placeable line whose ``response`` or ``gpt-score`` is missing or not a string is a failure
of that item in both protocols. Pass ``raise_on_error=True`` to raise the first problem instead.
"""

from __future__ import annotations

from airbench_nb.scoring.aggregate import (
    CHAT_CATEGORIES,
    CONFIDENCE,
    DEFAULT_REPS,
    FOUNDATION_CATEGORIES,
    MIXED_TASKS,
    Score,
)
from airbench_nb.scoring.official_files import CHAT_SCORE_FIELD, FOUNDATION_FILE_FIELDS, score_official_files
from airbench_nb.scoring.outcomes import (
    CHAT_ORDERS,
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    RULE_JUDGE,
    SCORES_ONLY_JUDGES,
    ChatOutcome,
    FoundationOutcome,
    Protocol,
    _failure_text,
    _official_chat,
    _strict_chat,
    _strict_foundation,
    official_foundation_correct,
)
from airbench_nb.scoring.run import PROXY_LABEL, PROXY_SHORT, _foundation_verdicts, score_run
from airbench_nb.scoring.tables import FRAME_COLUMNS, score_run_folder, scores_frame

__all__ = [
    "CHAT_CATEGORIES",
    "CHAT_ORDERS",
    "CHAT_SCORE_FIELD",
    "CONFIDENCE",
    "DEFAULT_PROTOCOL",
    "DEFAULT_REPS",
    "FOUNDATION_CATEGORIES",
    "FOUNDATION_FILE_FIELDS",
    "FRAME_COLUMNS",
    "MIXED_TASKS",
    "PROTOCOLS",
    "PROXY_LABEL",
    "PROXY_SHORT",
    "RULE_JUDGE",
    "SCORES_ONLY_JUDGES",
    "ChatOutcome",
    "FoundationOutcome",
    "Protocol",
    "Score",
    "_failure_text",
    "_foundation_verdicts",
    "_official_chat",
    "_strict_chat",
    "_strict_foundation",
    "official_foundation_correct",
    "score_official_files",
    "score_run",
    "score_run_folder",
    "scores_frame",
]
