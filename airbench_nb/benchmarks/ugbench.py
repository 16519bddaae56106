"""UG-Bench (Interspeech 2026), declared as a :class:`~airbench_nb.benchmarks.base.Benchmark`.

Speech translation, audio and music captioning, text to speech and spoken answers, and the capability ranking over
every task of the kit.
"""

from __future__ import annotations

from airbench_nb.benchmarks.base import Benchmark, register_benchmark
from airbench_nb.records import CaptionItem, SpeechGenerationItem, TranslationItem

UGBENCH = register_benchmark(
    Benchmark(
        name="ugbench",
        title="UG-Bench",
        item_kinds=(TranslationItem, CaptionItem, SpeechGenerationItem),
        parts=("ugbench",),
        metrics=("bleu", "chrf", "cider_d", "caption_similarity", "speech_output", "spoken_answer"),
        analysis_sections=("translation", "captioning", "speech_output", "ugbench"),
        page_sections=("UG-Bench",),
        capability_tasks=(
            "speech_translation",
            "audio_captioning",
            "music_captioning",
            "tts",
            "spoken_answer",
            "tts_mos",
        ),
        doc="docs/ugbench.md",
    )
)
"""UG-Bench, registered."""
