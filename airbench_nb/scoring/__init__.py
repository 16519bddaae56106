r"""Scoring: the ``official`` and ``strict`` protocols side by side, each score with n, failures and a 95% CI.

Two protocols read the same run:

- ``official`` reproduces the AIR-Bench scripts. Foundation: the response is stripped and its newlines deleted
  (as ``score_foundation.py`` does), then :func:`~airbench_nb.judge.extract.official_extract` reads its first or
  second-to-last character; judge verdicts are not used. A response with no letter there, an empty one, or an
  error is a *failure* and is dropped from the denominator (which inflates accuracy); a letter beyond the item's
  options counts wrong. The letters read are A-D for items of two to four options, as the scripts read them; an
  item of more than four options (up to 26, A-Z: the tiered benchmark's 23 classes) is read by the same rule over
  its own letters, A to its last (:func:`~airbench_nb.judge.extract.official_letters`), flaws included ("The ..."
  is read as T on an item with a T). Chat: the judge's raw reply goes through
  :func:`~airbench_nb.judge.chat_parse.parse_scores_official`; failures are dropped. The offline ``proxy``
  judge (``scores_only`` in the registry) and any verdict without a raw reply keep their scores: their ``raw`` is an
  explanation, not a judge reply, so there is nothing for the official parser to read.
- ``strict`` (the default) fixes the known flaws. Foundation: the verdict's ``correct`` decides (rule or LLM
  judge); a missing response, an error response, a missing verdict or an abstention is a failure and counts
  *wrong*. Chat: the verdict's parsed scores; an unscored (item, order) cannot be guessed, so it is left out of
  the mean but counted in ``failures`` and reported.

Foundation aggregation is the same in both protocols (the official one): accuracy per subset
``f"{task}_{dataset}"`` and per task (the task's items pooled over its datasets); a category is the unweighted
mean of its tasks; the Average is the mean of the category means present.

Chat aggregation: the model's score is its ``score_hypothesis``. In ``official`` it is what running the official
``cal_score.py`` on each order's judge file apart, then averaging the two results, gives: per order, a task or a
category (speech, sound, music) is the mean of the model's scores over the order's parsed replies of that task or
category (the category's tasks pooled, as the script does); the value is the mean of the two orders' means. When
one order has no parsed reply in a group, that order's mean does not exist (the script would divide by zero) and
the other order's mean is the value; every Chat entry lists the orders it rests on in ``orders_scored``, and a
section whose replies come from one order alone (one judge file given, or a judge run in one order) says
``single_order: true``. In ``strict`` a task or category is the mean over its scored (item, order) units, both
orders pooled: every judged unit weighs the same, so a reply lost in one order does not give the other order's
replies in that group more weight. The two rules agree whenever both orders have the same number of scored units
in a group, and differ when they do not (the official value then weighs each unit of the order with fewer parsed
replies more). In both protocols Mixed is the mean of the task values of ``speech_and_sound_QA`` and
``speech_and_music_QA``, and the Average the mean of the four category values present. The reference's mean score
and the relative score (model / reference, of the values above) come with every Chat score. The official script
itself prints the five per-file means only; Mixed, the Average and the mean over orders are the paper's.

An Average over fewer categories than the benchmark has (three for Foundation, four for Chat; a category without
a value does not count) is *partial*: the ``average`` entry of every section carries ``partial`` and
``categories_present``, and :func:`score_run_folder` a ``foundation_partial`` / ``chat_partial`` column.

Items left out of the tables in both protocols, and counted in every table: items whose audio is missing, empty
or corrupt (``unusable_items``: a data defect, not a model failure) and noise-graded copies of clean items, whose
``meta`` holds ``clean_uid`` (``graded_items``: they are analysed as SNR curves), and circular-evaluation copies
(``meta.rotation_of``) whose original item is among the items scored (``rotated_items``: analysed by circular
evaluation; a manifest that holds only rotations, as ``airbench-nb rotate`` writes, is scored as it is).

The kit's own tasks (``kit_`` prefix, :data:`~airbench_nb.records.KIT_FOUNDATION_TASKS` and
:data:`~airbench_nb.records.KIT_CHAT_TASKS`) are scored like the others and shown in categories of their own,
``multi-clip`` (Foundation items about several clips) and ``multi-turn`` (Chat conversations), after the official
ones; the Averages (Foundation over speech, sound and music; Chat over speech, sound, music and mixed), their n,
failures and intervals leave them out, so adding kit items to a run changes no official-shaped number. A section
with kit tasks says so in ``kit`` (tasks, n, failures, why).

Multi-turn Chat items are judged turn by turn, in both orders (``Verdict.turn``). Each (turn, order) is a unit of
its task, and the turns of one conversation are resampled together. A conversation's score is the mean over its
turns of the turn's score (both orders averaged, as for a one-turn item); the task's value is the mean over its
scored (turn, order) units (under ``official``, per order and then the two orders averaged), which is the mean of
the conversations' scores when they have equal numbers of turns and every unit is scored. ``turns`` of the Chat
section holds one entry per (task, turn) (``"<task> turn <k>"``, k from 1): does the score fall on follow-ups? A
failed turn (the model gave no answer to it, or no order of it was scored): ``official`` drops the failed units
and scores the conversation on the rest, as the official script drops unparsed replies; ``strict`` scores a
conversation only when every turn has a score in at least one order, and otherwise counts all its units as
failures (left out of the mean; see :func:`~airbench_nb.scoring.run.chat_outcomes_of`), because a conversation
scored on its first turns alone would reward breaking down on the follow-ups.

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
of that item in both protocols. Pass ``raise_on_error=True`` to raise the first problem instead. JSON Lines are
split on ``"\n"`` only, as the official scripts read them: a raw U+2028, U+2029 or U+0085 inside a row (which
``json.dumps(ensure_ascii=False)`` writes unescaped) is part of the row, not a line break.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Names are imported from their modules when first used (PEP 562): a process that needs one scoring module (a
# worker scoring translations, airbench_nb.scoring.ahead) does not import pandas, scipy and scikit-learn with all
# the others.
_EXPORTS: dict[str, str] = {
    "FRAME_COLUMNS": "airbench_nb.score_table",
    "PROXY_SHORT": "airbench_nb.score_table",
    "CHAT_CATEGORIES": "airbench_nb.scoring.aggregate",
    "CONFIDENCE": "airbench_nb.scoring.aggregate",
    "DEFAULT_REPS": "airbench_nb.scoring.aggregate",
    "FOUNDATION_CATEGORIES": "airbench_nb.scoring.aggregate",
    "KIT_CHAT_CATEGORIES": "airbench_nb.scoring.aggregate",
    "KIT_FOUNDATION_CATEGORIES": "airbench_nb.scoring.aggregate",
    "MIXED_TASKS": "airbench_nb.scoring.aggregate",
    "Score": "airbench_nb.scoring.aggregate",
    "CHAT_SCORE_FIELD": "airbench_nb.scoring.official_files",
    "FOUNDATION_FILE_FIELDS": "airbench_nb.scoring.official_files",
    "score_official_files": "airbench_nb.scoring.official_files",
    "CHAT_ORDERS": "airbench_nb.scoring.outcomes",
    "DEFAULT_PROTOCOL": "airbench_nb.scoring.outcomes",
    "INCOMPLETE_CONVERSATION": "airbench_nb.scoring.outcomes",
    "PROTOCOLS": "airbench_nb.scoring.outcomes",
    "RULE_JUDGE": "airbench_nb.scoring.outcomes",
    "ChatOutcome": "airbench_nb.scoring.outcomes",
    "FoundationOutcome": "airbench_nb.scoring.outcomes",
    "Protocol": "airbench_nb.scoring.outcomes",
    "_failure_text": "airbench_nb.scoring.outcomes",
    "_official_chat": "airbench_nb.scoring.outcomes",
    "_strict_chat": "airbench_nb.scoring.outcomes",
    "_strict_foundation": "airbench_nb.scoring.outcomes",
    "chat_outcomes_of": "airbench_nb.scoring.outcomes",
    "failure_text": "airbench_nb.scoring.outcomes",
    "foundation_verdicts": "airbench_nb.scoring.outcomes",
    "official_chat": "airbench_nb.scoring.outcomes",
    "official_foundation_correct": "airbench_nb.scoring.outcomes",
    "strict_chat": "airbench_nb.scoring.outcomes",
    "strict_foundation": "airbench_nb.scoring.outcomes",
    "GRADED_KEY": "airbench_nb.scoring.run",
    "GRADED_WHY": "airbench_nb.scoring.run",
    "PROXY_LABEL": "airbench_nb.scoring.run",
    "ROTATED_KEY": "airbench_nb.scoring.run",
    "ROTATED_WHY": "airbench_nb.scoring.run",
    "_foundation_verdicts": "airbench_nb.scoring.run",
    "score_run": "airbench_nb.scoring.run",
    "score_inputs": "airbench_nb.scoring.tables",
    "score_models": "airbench_nb.scoring.tables",
    "score_run_folder": "airbench_nb.scoring.tables",
    "scores_frame": "airbench_nb.scoring.tables",
    "write_run_scores": "airbench_nb.scoring.tables",
}
"""Each name this package exports and the module that defines it."""

if TYPE_CHECKING:  # what type checkers and readers see
    from airbench_nb.score_table import FRAME_COLUMNS, PROXY_SHORT
    from airbench_nb.scoring.aggregate import (
        CHAT_CATEGORIES,
        CONFIDENCE,
        DEFAULT_REPS,
        FOUNDATION_CATEGORIES,
        KIT_CHAT_CATEGORIES,
        KIT_FOUNDATION_CATEGORIES,
        MIXED_TASKS,
        Score,
    )
    from airbench_nb.scoring.official_files import CHAT_SCORE_FIELD, FOUNDATION_FILE_FIELDS, score_official_files
    from airbench_nb.scoring.outcomes import (
        CHAT_ORDERS,
        DEFAULT_PROTOCOL,
        INCOMPLETE_CONVERSATION,
        PROTOCOLS,
        RULE_JUDGE,
        ChatOutcome,
        FoundationOutcome,
        Protocol,
        _failure_text,
        _official_chat,
        _strict_chat,
        _strict_foundation,
        chat_outcomes_of,
        failure_text,
        foundation_verdicts,
        official_chat,
        official_foundation_correct,
        strict_chat,
        strict_foundation,
    )
    from airbench_nb.scoring.run import (
        GRADED_KEY,
        GRADED_WHY,
        PROXY_LABEL,
        ROTATED_KEY,
        ROTATED_WHY,
        _foundation_verdicts,
        score_run,
    )
    from airbench_nb.scoring.tables import score_inputs, score_models, score_run_folder, scores_frame, write_run_scores


def __getattr__(name: str) -> Any:
    """A name of :data:`_EXPORTS`, imported from its module on first use (then kept in this package)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "CHAT_CATEGORIES",
    "CHAT_ORDERS",
    "INCOMPLETE_CONVERSATION",
    "CHAT_SCORE_FIELD",
    "CONFIDENCE",
    "DEFAULT_PROTOCOL",
    "DEFAULT_REPS",
    "FOUNDATION_CATEGORIES",
    "FOUNDATION_FILE_FIELDS",
    "FRAME_COLUMNS",
    "GRADED_KEY",
    "KIT_CHAT_CATEGORIES",
    "KIT_FOUNDATION_CATEGORIES",
    "GRADED_WHY",
    "ROTATED_KEY",
    "ROTATED_WHY",
    "MIXED_TASKS",
    "PROTOCOLS",
    "PROXY_LABEL",
    "PROXY_SHORT",
    "RULE_JUDGE",
    "ChatOutcome",
    "FoundationOutcome",
    "Protocol",
    "Score",
    "_failure_text",
    "_foundation_verdicts",
    "_official_chat",
    "_strict_chat",
    "_strict_foundation",
    "chat_outcomes_of",
    "failure_text",
    "foundation_verdicts",
    "official_chat",
    "official_foundation_correct",
    "strict_chat",
    "strict_foundation",
    "score_official_files",
    "score_run",
    "score_inputs",
    "score_models",
    "score_run_folder",
    "scores_frame",
    "write_run_scores",
]
