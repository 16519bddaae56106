"""``tts:espeak-ng`` through the pipeline, scored by back-transcription: the WER Whisper tiny.en hears.

Reads the texts to speak from ``data_manifests/mini/speech_generation.json`` (or ``--texts FILE``: whatever JSON it
holds: every string under a ``text`` key, or a list of strings), writes them as ``tts`` items of a small run folder,
answers them with ``tts:espeak-ng[:voice]`` through the kit's runner (:func:`~airbench_nb.runner.infer_run_folder`),
judges the spoken answers with ``asr:faster-whisper:tiny.en-bundled`` (:func:`~airbench_nb.judge.run.judge_run_folder`)
and prints the WER of the transcripts against the texts asked for (:func:`airbench_nb.scoring.wer.utterance_errors`:
jiwer after Whisper's English normaliser): corpus WER (errors over reference words) and seed-tts-eval's per-utterance
mean, with the failures (a spoken answer missing, silent, too short) counted apart. Exit 1 when the
corpus WER is over ``--max-wer`` (0.30 by default, issue 20's bar) or an item failed.

    .venv/bin/python bench/bench_tts_backtranscription.py
    .venv/bin/python bench/bench_tts_backtranscription.py --voice en-us+f3 --texts my_texts.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TEXTS = Path(__file__).resolve().parent.parent / "data_manifests" / "mini" / "speech_generation.json"
ASR = "asr:faster-whisper:tiny.en-bundled"


@dataclass(frozen=True)
class BackTranscription:
    """What the benchmark measured."""

    model: str
    """The TTS model's spec."""
    judge: str
    """The ASR judge's spec."""
    n: int
    """Texts spoken."""
    failures: dict[str, int]
    """Items without a transcript, by reason (``silent output``, ``audio missing``, an item's error, ...)."""
    corpus_wer: float | None
    """Word errors over reference words, over the items transcribed (normalised); None when none was."""
    per_utterance_wer: float | None
    """Mean of each item's WER (seed-tts-eval's figure); None when none was transcribed."""
    seconds_tts: float
    """Wall-clock seconds of the TTS run."""
    seconds_asr: float
    """Wall-clock seconds of the judge run."""
    worst: list[tuple[float, str, str]]
    """The three items with the highest WER: (WER, text, transcript)."""


def texts_in(obj: Any, top: bool = True) -> Iterator[str]:
    """Every text to speak in a JSON document: strings under a ``text`` key at any depth, or, for a document that
    is a list, its strings (a nested list of strings, such as a spoken question's ``answers``, is not read)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "text" and isinstance(value, str) and value.strip():
                yield value
            else:
                yield from texts_in(value, top=False)
    elif isinstance(obj, list):
        for value in obj:
            if isinstance(value, str):
                if top and value.strip():
                    yield value
            else:
                yield from texts_in(value, top=False)


def read_texts(path: Path) -> list[str]:
    """The texts of ``path`` (see :func:`texts_in`), in order, without repeats.

    Raises:
        SystemExit: When the file is missing, not JSON, or holds no text.
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"{path}: no such file; give the texts with --texts FILE") from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
    texts = list(dict.fromkeys(texts_in(document)))
    if not texts:
        raise SystemExit(f"{path}: no text to speak (no string under a 'text' key, no list of strings)")
    return texts


def measure(texts: Sequence[str], workdir: Path, *, voice: str = "", judge: str = ASR) -> BackTranscription:
    """Speak ``texts`` with ``tts:espeak-ng[:voice]`` through the runner, transcribe them back, and score them.

    Args:
        texts: English texts to speak.
        workdir: An empty folder for the run folder.
        voice: espeak-ng voice (empty: the backend's default, ``en-us``).
        judge: The ASR judge's spec.
    """
    import numpy as np
    import soundfile as sf

    from airbench_nb.judge.run import judge_run_folder
    from airbench_nb.manifests import read_records, write_manifest
    from airbench_nb.records import Response, SpeechGenerationItem, Verdict
    from airbench_nb.run_folder import RunFolder
    from airbench_nb.runner import infer_run_folder
    from airbench_nb.scoring.wer import SkippedUtterance, utterance_errors

    folder = RunFolder(workdir)
    cue = folder.data_dir / "audio" / "cue.wav"  # a tts item's clip carries no content: a short tone
    cue.parent.mkdir(parents=True, exist_ok=True)
    sf.write(cue, (0.1 * np.sin(2 * np.pi * 440 * np.arange(8000) / 16000)).astype(np.float32), 16000)
    items = [
        SpeechGenerationItem(uid=f"tts{i:03d}", dataset="bench", audio="audio/cue.wav", question="", task="tts", text=t)
        for i, t in enumerate(texts)
    ]
    write_manifest(folder.manifest("speech_generation"), items)
    model = "tts:espeak-ng" + (f":{voice}" if voice else "")
    t0 = time.perf_counter()
    infer_run_folder(folder, [model], kinds=["speech_generation"])
    t1 = time.perf_counter()
    judge_run_folder(folder, [judge], kinds=["speech_generation"])
    t2 = time.perf_counter()
    responses = {r.uid: r for r in read_records(folder.responses_file(model, "speech_generation"), Response)}
    verdicts = {v.uid: v for v in read_records(folder.verdicts_file(model, "speech_generation", judge), Verdict)}
    failures: dict[str, int] = {}
    errors = words = 0
    scored: list[tuple[float, str, str]] = []
    for item in items:
        verdict, response = verdicts.get(item.uid), responses.get(item.uid)
        reason = (
            (response.error if response is not None and response.error else None)
            or (verdict.parse_error if verdict is not None else "no verdict")
            or (None if verdict is not None and verdict.raw is not None else "no transcript")
        )
        if reason is not None:
            kind = reason.split(":", 1)[0].split(" (")[0]
            failures[kind] = failures.get(kind, 0) + 1
            continue
        assert verdict is not None and item.text is not None
        scored_one = utterance_errors(item.text, verdict.raw, item.language, item.uid)
        if isinstance(scored_one, SkippedUtterance):
            failures[scored_one.reason] = failures.get(scored_one.reason, 0) + 1
            continue
        errors += scored_one.errors
        words += scored_one.ref_words
        scored.append((scored_one.wer, item.text, verdict.raw or ""))
    return BackTranscription(
        model=model,
        judge=judge,
        n=len(items),
        failures=failures,
        corpus_wer=errors / words if words else None,
        per_utterance_wer=float(np.mean([w for w, _, _ in scored])) if scored else None,
        seconds_tts=round(t1 - t0, 3),
        seconds_asr=round(t2 - t1, 3),
        worst=sorted(scored, reverse=True)[:3],
    )


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--texts", type=Path, default=DEFAULT_TEXTS, help="JSON file holding the texts to speak")
    p.add_argument("--voice", default="", help="espeak-ng voice (default en-us), e.g. en-us+f3")
    p.add_argument("--judge", default=ASR, help="ASR judge spec")
    p.add_argument("--max-wer", type=float, default=0.30, help="exit 1 when the corpus WER is over this")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its result; the exit status says whether it met ``--max-wer``."""
    args = parser().parse_args(argv)
    texts = read_texts(args.texts)
    with tempfile.TemporaryDirectory(prefix="bench-tts-") as tmp:
        result = measure(texts, Path(tmp), voice=args.voice, judge=args.judge)
    failed = sum(result.failures.values())
    print(f"{result.model} judged by {result.judge}: {result.n} texts from {args.texts}")
    print(f"  transcribed {result.n - failed}, failures {failed} {result.failures or ''}".rstrip())
    if result.corpus_wer is None or result.per_utterance_wer is None:
        print("  no transcript: no WER")
        return 1
    print(f"  corpus WER {result.corpus_wer:.1%}  per-utterance mean WER {result.per_utterance_wer:.1%}  (normalised)")
    print(f"  seconds: TTS {result.seconds_tts:.1f}, ASR {result.seconds_asr:.1f}")
    for wer, text, heard in result.worst:
        print(f"  {wer:.0%}  asked {text!r}  heard {heard!r}")
    return 0 if result.corpus_wer <= args.max_wer and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
