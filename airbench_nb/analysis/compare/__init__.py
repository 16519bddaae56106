r"""Paired comparison of models on the items they share: differences with bootstrap CIs, paired tests, Holm.

Models come from one run folder or from several (runs made at different times compare): a source is a run folder
(every model in it) or ``RUN_DIR::MODEL_SPEC`` (one model of a run). For every pair of models (in the order given:
``model_a`` is the earlier one) and each benchmark the pair can be compared on:

- **Items.** An item is compared when both sides have it with the same uid *and* the same content: audio hash
  (``audio_sha256``; None matches only None), task, question, and the choices and answer (Foundation) or the
  reference answer (Chat). Items with the same uid and different content (``differ``, with the fields that differ)
  and items that only one side has (``only_a``, ``only_b``) are counted, up to :data:`MAX_EXAMPLES` uids listed,
  and left out. As in the score tables, SNR-graded copies (``meta.clean_uid``), rotated copies whose original is in
  the run (``meta.rotation_of``) and items whose audio is missing, empty or corrupt are not compared (an item
  unusable on one side only is counted as present on the other side only). An item a side has no score for
  (an official-protocol failure, which that protocol drops; a Chat item no order of which was scored) is counted
  in ``unscored`` and left out: a paired test needs both.
- **Foundation** values are accuracies in 0-1, aggregated as the kit does (:mod:`airbench_nb.scoring`): a task is
  the accuracy over its items, a category the unweighted mean of its tasks, the Average the mean of the
  categories present. **Chat** values are judge scores (1-10) of one judge (``chat_judge``): per item, the model's
  score averaged over the orders that were scored; a task is the mean over its items, speech / sound / music the
  mean over the category's items pooled, Mixed the mean of its two task values, the Average the mean of the
  categories present. The kit's own categories (``multi-clip``, ``multi-turn``) are compared in rows of their own
  and left out of the Average; a multi-turn conversation's value is the mean over its turns of each turn's score.
- **Difference** ``diff = a - b`` at every task, category and the Average, with a paired percentile bootstrap 95%
  CI: items are resampled with replacement within each task, the *same* resampled items for both models, and the
  whole aggregate is recomputed per replicate. Each task draws from its own generator seeded by
  ``(seed, crc32("<benchmark>/<task>"))``.
- **Paired test.** Foundation: McNemar's exact test (statsmodels ``mcnemar(exact=True)``: a two-sided binomial
  test on the discordant pairs) of the items of the task; for a category or the Average, of the *pooled* items of
  that level (it tests the pooled accuracy, not the unweighted mean of the tasks the ``diff`` shows; the test
  column says so). Chat: the Wilcoxon signed-rank test (scipy, zero differences dropped) of the per-item
  differences of the task, or of the pooled items of the category or Average. With no discordant pair or no
  nonzero difference the p-value is 1.
- **Correction.** Holm (statsmodels ``multipletests(method="holm")``) over every p-value of the table (all pairs,
  benchmarks and levels). ``verdict`` is ``"A better"`` (``diff`` > 0) or ``"B better"`` (``diff`` < 0) when the
  Holm-corrected p-value is below ``alpha`` (0.05), else ``"no detectable difference"``; a category or Average
  whose ``diff`` (mean of task values) and pooled items (what the test read) point different ways gets no verdict.

The package: :mod:`~.common` (constants), :mod:`~.paired_tests`, :mod:`~.records`, :mod:`~.frames` (per model),
:mod:`~.aggregate` and :mod:`~.api`; the names below are its interface.
"""

from airbench_nb.analysis.compare.api import (
    compare_models,
    compare_run_data,
    compare_runs,
    comparison_section,
)
from airbench_nb.analysis.compare.common import (
    A_BETTER,
    ALPHA,
    B_BETTER,
    BENCHMARKS,
    CHAT_CATEGORIES,
    CONFIDENCE,
    DEFAULT_REPS,
    FIGURE_STEM,
    FOUNDATION_CATEGORIES,
    FRAME_COLUMNS,
    KIT_CHAT_CATEGORIES,
    KIT_FOUNDATION_CATEGORIES,
    LEVELS,
    MAX_EXAMPLES,
    MCNEMAR,
    MCNEMAR_POOLED,
    NO_DIFFERENCE,
    SEPARATOR,
    TESTS,
    WILCOXON,
    WILCOXON_POOLED,
)
from airbench_nb.analysis.compare.frames import (
    parse_source,
)
from airbench_nb.analysis.compare.paired_tests import (
    holm,
    mcnemar_exact,
    verdict,
    wilcoxon_signed_rank,
)
from airbench_nb.analysis.compare.records import (
    Comparison,
    ItemMatch,
    ModelSource,
)

__all__ = [
    "ALPHA",
    "A_BETTER",
    "BENCHMARKS",
    "B_BETTER",
    "CHAT_CATEGORIES",
    "CONFIDENCE",
    "Comparison",
    "DEFAULT_REPS",
    "FIGURE_STEM",
    "FOUNDATION_CATEGORIES",
    "FRAME_COLUMNS",
    "ItemMatch",
    "KIT_CHAT_CATEGORIES",
    "KIT_FOUNDATION_CATEGORIES",
    "LEVELS",
    "MAX_EXAMPLES",
    "MCNEMAR",
    "MCNEMAR_POOLED",
    "ModelSource",
    "NO_DIFFERENCE",
    "SEPARATOR",
    "TESTS",
    "WILCOXON",
    "WILCOXON_POOLED",
    "compare_models",
    "compare_run_data",
    "compare_runs",
    "comparison_section",
    "holm",
    "mcnemar_exact",
    "parse_source",
    "verdict",
    "wilcoxon_signed_rank",
]
