"""SSEU-Bench (Yin & Choi, ICASSP 2026), declared as a :class:`~airbench_nb.benchmarks.base.Benchmark`.

Speech over real-world backgrounds, asked for a transcript, the acoustic scene and the sound events, one task per
prompt or jointly.
"""

from __future__ import annotations

from airbench_nb.benchmarks.base import Benchmark, register_benchmark
from airbench_nb.records import EventsItem, JointItem, SceneItem, TranscriptionItem

SSEU = register_benchmark(
    Benchmark(
        name="sseu",
        title="SSEU-Bench",
        item_kinds=(TranscriptionItem, SceneItem, EventsItem, JointItem),
        parts=("sseu",),
        metrics=("wer", "scene_macc", "event_map"),
        analysis_sections=("sseu", "snr_curves"),
        page_sections=("SSEU-Bench",),
        capability_tasks=("sseu_transcription", "sseu_scene", "sseu_events"),
        doc="docs/sseu.md",
    )
)
"""SSEU-Bench, registered."""
