"""A real ASR model on the built SSEU items: the bundled Whisper tiny.en through the runner, WER per SNR.

The SSEU recipe (``data_manifests/mini/sseu.json``) is tuned so that Whisper tiny.en transcribes its clean espeak-ng
speech well; the mixes over synthesized scenes must then make it worse as the SNR falls. One module-scoped fixture
builds the first :data:`UTTERANCES` utterances of the ``sseu`` preset (transcription items only: each clean copy
and its 7 mixes) through the shared data cache (``AIRBENCH_CACHE``, set by ``conftest.py``), answers them with
``faster-whisper:tiny.en-bundled`` through :func:`~airbench_nb.runner.infer_run_folder` on one CPU thread, and
scores them with :mod:`airbench_nb.scoring.wer`. 32 clips: under a minute on one core, model load included.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from airbench_nb.builders.cache import cached_build, link_data
from airbench_nb.manifests import read_manifest, read_records
from airbench_nb.models.specs import BUNDLED_WHISPER
from airbench_nb.records import Response, TranscriptionItem
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer_run_folder
from airbench_nb.scoring.wer import UtteranceErrors, WerSummary, corpus_wer, utterance_errors

pytestmark = pytest.mark.slow

SPEC = f"faster-whisper:{BUNDLED_WHISPER}"
UTTERANCES = 4
"""Utterances built: the first four sentences of the recipe (four voices, both genders), 8 clips each."""
CLEAN = "clean"
"""Key of the clean copies in the per-SNR tables."""


def _key(item: TranscriptionItem) -> str | float:
    return CLEAN if item.snr_db is None else float(item.snr_db)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str | float, WerSummary], list[dict]]:
    """Build, transcribe and score once: (corpus WER per SNR key, one row per clip)."""
    cached = cached_build("sseu", 0, tasks=["sseu_transcription"], sseu_utterances=UTTERANCES, progress=False)
    assert cached.report.failures == []
    run = tmp_path_factory.mktemp("sseu-whisper")
    link_data(cached.path, run / "data")
    folder = RunFolder(run)
    summaries = infer_run_folder(folder, [SPEC], ["transcription"], batch_size=8, model_options={"cpu_threads": 1})
    ((kind, summary),) = summaries.runs
    items = read_manifest(folder.data_dir / "transcription.jsonl")
    assert kind == "transcription" and summary.answered == len(items) == UTTERANCES * 8 and summary.errors == 0
    responses = {r.uid: r for r in read_records(folder.responses_file(SPEC, "transcription"), Response)}
    by_snr: dict[str | float, list[UtteranceErrors]] = defaultdict(list)
    rows = []
    for item in items:
        text = responses[item.uid].text
        errors = utterance_errors(item.reference, text, item.language, uid=item.uid)
        assert isinstance(errors, UtteranceErrors)  # every reference has words
        by_snr[_key(item)].append(errors)
        rows.append({"uid": item.uid, "voice": item.meta["voice"], "wer": errors.wer, "text": text})
    return {key: corpus_wer(utterances, reps=0) for key, utterances in by_snr.items()}, rows


def _table(tables: dict[str | float, WerSummary]) -> str:
    keys = [CLEAN, *sorted((k for k in tables if k != CLEAN), reverse=True)]
    lines = [f"Whisper tiny.en (bundled) on {tables[CLEAN].n} SSEU utterances: corpus WER by SNR"]
    for key in keys:
        s = tables[key]
        label = CLEAN if key == CLEAN else f"{key:+g} dB"
        lines.append(
            f"  {label:>9}: WER {s.wer:.3f}  (S {s.substitutions}, D {s.deletions}, I {s.insertions} / {s.ref_words})"
        )
    return "\n".join(lines)


def test_whisper_wer_on_sseu_items_rises_as_snr_falls(scored: tuple[dict[str | float, WerSummary], list[dict]]):
    tables, rows = scored
    print(_table(tables))
    for row in rows:
        if row["uid"].split("@")[1].startswith(("clean", "snr+10")):
            print(f"  {row['uid']} ({row['voice']}): WER {row['wer']:.2f}  {row['text']!r}")
    assert set(tables) == {CLEAN, -10.0, -6.67, -3.33, 0.0, 3.33, 6.67, 10.0}
    assert all(s.n == UTTERANCES for s in tables.values())
    assert tables[CLEAN].wer < 0.25
    assert tables[10.0].wer < 0.50
    assert tables[-10.0].wer > tables[10.0].wer


def test_clean_copies_cover_both_genders(scored: tuple[dict[str | float, WerSummary], list[dict]]):
    """The measured set is not one voice: the first utterances alternate male and female espeak-ng variants."""
    _, rows = scored
    voices = {row["voice"] for row in rows}
    variants = {voice.partition("+")[2][0] for voice in voices}
    assert variants == {"m", "f"} and len(voices) >= 3, voices
