"""AIR-Bench (Yang et al., ACL 2024), declared as a :class:`~airbench_nb.benchmarks.base.Benchmark`.

Foundation single-choice items and open-ended Chat items, with the kit's own multi-clip and multi-turn tasks,
SNR-graded copies, circular rotations, audio-reliance controls and perturbed copies (both off by default; the
``perturb`` part also perturbs SSEU-Bench's clean transcription items).
"""

from __future__ import annotations

from airbench_nb.benchmarks.base import Benchmark, register_benchmark
from airbench_nb.records import ALL_FOUNDATION_TASKS, ChatItem, FoundationItem

CHAT_CAPABILITY_TASKS: tuple[str, ...] = ("chat_speech", "chat_sound", "chat_music", "chat_mixed", "chat_multi_turn")
"""The capability map's ids of the Chat categories (the multi-turn one is the kit's own)."""

AIRBENCH = register_benchmark(
    Benchmark(
        name="airbench",
        title="AIR-Bench",
        item_kinds=(FoundationItem, ChatItem),
        parts=("airbench", "snr", "circular", "controls", "perturb"),
        metrics=("choice_accuracy", "judge_score"),
        analysis_sections=(
            "tables",
            "format_following",
            "position_bias",
            "circular",
            "controls",
            "perturbations",
            "calibration",
            "order_bias",
            "classification",
            "answers",
            "snr",
            "ranking",
            "comparison",
            "multi_clip",
            "multi_turn",
            "judge_panel",
        ),
        page_sections=(
            "Main table",
            "Controls",
            "Perturbations",
            "Stability",
            "Calibration",
            "Judge panel",
            "Mapped Chat scores",
        ),
        capability_tasks=(*ALL_FOUNDATION_TASKS, *CHAT_CAPABILITY_TASKS),
        doc="docs/data.md",
    )
)
"""AIR-Bench, registered."""
