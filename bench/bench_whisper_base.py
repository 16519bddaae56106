"""Whisper base (multilingual, ``faster-whisper:base-bundled``) beside tiny.en (``tiny.en-bundled``): RTF and WER.

The same ``--clips`` espeak-ng English sentences as ``bench/bench_whisper.py`` (three voices, 2-5 s each) go through
both models, batched (``--batch-size``); then ``--clips`` German sentences (the kit's translation sentences spoken by
espeak-ng's German voice) through Whisper base alone (tiny.en is English-only: ``n/a``). It prints, per model and
language, the load time, decoding seconds, the real-time factor (decoding seconds over seconds of audio) and the
corpus WER after Whisper's normalisation (:func:`airbench_nb.scoring.wer.normalize`), then base's RTF and WER as
ratios of tiny.en's. Whisper base's weights are fetched by ``airbench-nb weights fetch whisper-base``; without them it
prints one line saying so and exits 0.

    .venv/bin/python bench/bench_whisper_base.py                  # 24 clips a language, batch 8, 2 CPU threads
    AIRBENCH_WEIGHTS=/tmp/wtest .venv/bin/python bench/bench_whisper_base.py --clips 48 --threads 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from airbench_nb.models import GenerationParams, Prompt, load_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_whisper import _prompts  # noqa: E402 - the sibling benchmark's espeak-ng clips

TINY = "faster-whisper:tiny.en-bundled"
BASE = "faster-whisper:base-bundled"
GERMAN_SENTENCES = Path(__file__).resolve().parent.parent / "data_manifests" / "mini" / "translation.json"


@dataclass(frozen=True)
class Row:
    """One model on one language's clips."""

    model: str
    language: str
    load_s: float
    decode_s: float
    audio_s: float
    wer: float

    @property
    def rtf(self) -> float:
        """Decoding seconds over seconds of audio."""
        return self.decode_s / self.audio_s


def clips(language: str, count: int) -> list[Prompt]:
    """``count`` espeak-ng clips in ``en`` (the English sentences) or ``de`` (the translation set's German)."""
    if language == "en":
        return _prompts(count)
    sentences = tuple(s["de"] for s in json.loads(GERMAN_SENTENCES.read_text(encoding="utf-8"))["sentences"])
    return _prompts(count, sentences, language="de", voice="de")


def measure(spec: str, prompts: list[Prompt], batch_size: int, threads: int) -> Row:
    """Load ``spec``, transcribe ``prompts`` batched, and score them."""
    import jiwer

    from airbench_nb.scoring.wer import normalize

    t0 = time.perf_counter()
    model = load_model(spec, batch_size=batch_size, cpu_threads=threads)
    loaded = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        answers = model.generate(prompts, GenerationParams())
        seconds = time.perf_counter() - t0
    finally:
        model.close()
    language = prompts[0].item.language
    references = [normalize(p.item.reference, language) for p in prompts]
    hypotheses = [normalize(a.text or "", language) for a in answers]
    audio_s = sum(p.audio.size for p in prompts) / 16000
    return Row(spec, language, loaded, seconds, audio_s, float(jiwer.wer(references, hypotheses)))


def main() -> int:
    """Print the side-by-side table; exit 0 (also when Whisper base is not fetched)."""
    from airbench_nb.models import SpecError
    from airbench_nb.models.faster_whisper import base_model_path

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=24, help="Clips per language (default 24)")
    parser.add_argument("--batch-size", type=int, default=8, help="Windows per batched call (default 8)")
    parser.add_argument("--threads", type=int, default=2, help="CTranslate2 CPU threads (default 2)")
    args = parser.parse_args()
    try:
        base_model_path()
    except SpecError as exc:
        print(f"skipped: {exc}")
        return 0
    english, german = clips("en", args.clips), clips("de", args.clips)
    print(f"{args.clips} espeak-ng clips a language; CPU threads {args.threads}, batch size {args.batch_size}")
    rows = [
        measure(TINY, english, args.batch_size, args.threads),
        measure(BASE, english, args.batch_size, args.threads),
        measure(BASE, german, args.batch_size, args.threads),
    ]
    width = max(len(r.model) for r in rows)
    print(f"{'model':<{width}}  lang  {'load s':>6}  {'decode s':>8}  {'audio s':>7}  {'RTF':>6}  {'WER':>6}")
    for r in rows:
        print(
            f"{r.model:<{width}}  {r.language:<4}  {r.load_s:>6.2f}  {r.decode_s:>8.2f}  {r.audio_s:>7.1f}  "
            f"{r.rtf:>6.3f}  {r.wer:>6.3f}"
        )
    print(f"{TINY:<{width}}  de    n/a (English-only)")
    tiny, base = rows[0], rows[1]
    print(
        f"English: base's RTF is {base.rtf / tiny.rtf:.2f}x tiny.en's, its WER {base.wer / tiny.wer:.2f}x"
        if tiny.wer > 0
        else f"English: base's RTF is {base.rtf / tiny.rtf:.2f}x tiny.en's (tiny.en WER 0)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
