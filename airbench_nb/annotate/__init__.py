"""Human labels of (item, model response) pairs: a stratified sample, label files, and an ipywidgets tool.

A reproducible stratified sample of pairs, an append-only label file per annotator, and a tool over both.

**Sampling** (:func:`draw_sample`, ``airbench-nb sample-annotation``). The population is every (model, item) pair
of one kind (Foundation or Chat) in a run folder whose item is a clean original (SNR-graded copies, ``meta.clean_uid``,
and rotated copies, ``meta.rotation_of``, are left out), whose audio is not missing, empty or corrupt, and whose
model gave a non-empty answer (the latest response, as scoring reads it); every exclusion is counted. Pairs are
grouped into strata (category or task) and the ``n`` pairs are spread equally over the strata: a stratum with fewer
pairs than its share gives the rest to the others. Within a stratum, pairs are taken in the order of the SHA-256 of
``seed`` and the pair id, so the same seed and run give the same sample whatever the order of the files, and adding a
model does not reshuffle the pairs of the others. The sample is written in another seeded order (strata interleaved).
A Chat pair shows the model's answer and the reference as "Answer 1" and "Answer 2"; which one is the model's
(``model_answer``) alternates over a seeded permutation of the Chat pairs (so each side comes first in half of them)
and is recorded in the sample. The annotator sees neither the model's name nor which answer is the reference, and
sees the judges' verdicts only in a sample drawn with ``show_judge``.

**Labels** (:class:`AnnotationSession`). Each annotator labels into their own JSON Lines file of
:class:`~airbench_nb.records.Label` actions (default ``<sample stem>.<annotator>.labels.jsonl`` beside the sample).
Every action is appended, flushed and fsynced before the tool moves on, so closing the browser or killing the
kernel loses nothing that was shown as done. Replaying the file gives the state: ``label`` pushes a decision onto
the pair's stack, ``undo`` pops the latest one, ``skip`` only passes the pair over; the annotator's label of a pair is
the latest label not undone (the rule :mod:`airbench_nb.analysis.agreement` reads). Reopening resumes at the first
unlabelled pair, pairs that were skipped coming after the others. A final line cut short by a crash mid-write is
dropped (it was never acknowledged) and the file repaired before anything is appended.

**Keys** (:data:`KEYS`): ``A``-``D`` pick the option the answer chooses and ``X`` marks it "none / unclear"
(Foundation); ``1``, ``2`` and ``T`` say which answer is better (Chat); ``N`` passes to the next pair (a skip), ``U``
undoes the latest label. A pair of more options (up to 26, A-Z) takes every letter of its options, N, U and X
included: ``0`` (none / unclear), ``→`` (next) and ``Backspace`` (undo) do the same on every pair. In JupyterLab,
keys reach the tool while the pointer is over its card (the framed part above the comment box; the frame turns
blue): :mod:`ipyevents` captures them there, so that JupyterLab's own shortcuts (``A`` inserts a cell) do not fire,
and typing a comment below the card never labels anything.
"""

from __future__ import annotations

from airbench_nb.annotate.sample import (
    KINDS,
    LETTERS,
    STRATIFY,
    SampleReport,
    _digest,
    _judge_verdicts,
    _read_lines,
    allocate,
    draw_sample,
    dumps_report,
    read_sample,
    sample_annotation,
    sample_frame,
    write_sample,
)
from airbench_nb.annotate.session import (
    ANNOTATOR,
    AnnotationSession,
    LabelFileError,
    ReplaySession,
    _append_durably,
    _label_text,
    check_annotator,
    label_file,
    label_files_beside,
    labels_summary,
    read_action_file,
    read_label_file,
)
from airbench_nb.annotate.tool import (
    _CSS,
    _FIGURE_LOCK,
    _SCORES,
    CHAT_PREFERENCES,
    KEYS,
    AnnotationTool,
    _esc,
    _not_interactive,
    annotate,
    how_to_start,
    judge_text,
    key_action,
    pair_html,
)

__all__ = [
    "ANNOTATOR",
    "AnnotationSession",
    "AnnotationTool",
    "CHAT_PREFERENCES",
    "KEYS",
    "KINDS",
    "LETTERS",
    "LabelFileError",
    "ReplaySession",
    "STRATIFY",
    "SampleReport",
    "_CSS",
    "_FIGURE_LOCK",
    "_SCORES",
    "_append_durably",
    "_digest",
    "_esc",
    "_judge_verdicts",
    "_label_text",
    "_not_interactive",
    "_read_lines",
    "allocate",
    "annotate",
    "check_annotator",
    "draw_sample",
    "dumps_report",
    "how_to_start",
    "judge_text",
    "key_action",
    "label_file",
    "label_files_beside",
    "labels_summary",
    "pair_html",
    "read_action_file",
    "read_label_file",
    "read_sample",
    "sample_annotation",
    "sample_frame",
    "write_sample",
]
