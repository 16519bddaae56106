"""Whisper tiny.en (the bundled CTranslate2 model) on this machine: real-time factor, sequential vs batched.

Synthesizes ``--clips`` espeak-ng sentences (three voices, 2-5 s each, as the SSEU items are), then transcribes them
all with ``faster-whisper:tiny.en-bundled`` twice: clip by clip (``batch_size=1``: ``WhisperModel.transcribe``) and
batched (``--batch-size``: faster-whisper's ``BatchedInferencePipeline``, one 30 s window per clip). It prints the
load time, each way's seconds and real-time factor (decoding seconds over seconds of audio; under 1 is faster than
real time), the speed-up as a ratio, and whether the two ways gave the same transcripts (exit 1 when they did not).

    .venv/bin/python bench/bench_whisper.py                       # 24 clips, batch 8, 2 CPU threads
    .venv/bin/python bench/bench_whisper.py --clips 48 --threads 1
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from airbench_nb.models import GenerationParams, Prompt, load_model
from airbench_nb.records import TranscriptionItem

SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "Seven people waited at the station for the morning train.",
    "I would like a cup of coffee and a slice of bread.",
    "The weather will be cold and windy tomorrow afternoon.",
    "She opened the window to let the fresh air in.",
    "Turn left at the second light and park near the bank.",
    "Our meeting starts at nine and ends before lunch.",
)
VOICES = ("m3", "f2", "m1")


def _prompts(
    count: int, sentences: tuple[str, ...] = SENTENCES, language: str = "en", voice: str = "en-us"
) -> list[Prompt]:
    """``count`` espeak-ng clips of ``sentences`` (cycled) in ``voice``, three variants, 150-180 words a minute."""
    from airbench_nb.synth.speech import speak

    prompts = []
    for i in range(count):
        sentence = sentences[i % len(sentences)]
        item = TranscriptionItem(
            uid=f"bench-{language}-{i}",
            dataset="synthetic",
            audio=f"audio/{language}{i}.wav",
            question="",
            task="sseu_transcription",
            reference=sentence,
            language=language,
        )
        audio = speak(sentence, language=voice, variant=VOICES[i % len(VOICES)], rate=150 + 10 * (i % 4))
        prompts.append(Prompt(item=item, text="", audio=audio, audio_path=Path(item.audio)))
    return prompts


def _timed(spec: str, prompts: list[Prompt], batch_size: int, threads: int) -> tuple[float, float, list[str]]:
    t0 = time.perf_counter()
    model = load_model(spec, batch_size=batch_size, cpu_threads=threads)
    loaded = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        answers = model.generate(prompts, GenerationParams())
        seconds = time.perf_counter() - t0
    finally:
        model.close()
    return loaded, seconds, [a.text if a.error is None else f"ERROR {a.error}" for a in answers]


def main() -> int:
    """Time both ways and print the comparison; exit 1 when their transcripts differ."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=24, help="Clips to transcribe (default 24)")
    parser.add_argument("--batch-size", type=int, default=8, help="Windows per batched call (default 8)")
    parser.add_argument("--threads", type=int, default=2, help="CTranslate2 CPU threads (default 2)")
    parser.add_argument("--model", default="faster-whisper:tiny.en-bundled", help="A faster-whisper: spec")
    args = parser.parse_args()

    prompts = _prompts(args.clips)
    audio_s = sum(p.audio.size for p in prompts) / 16000
    print(f"{args.model}: {len(prompts)} clips, {audio_s:.1f} s of speech ({audio_s / len(prompts):.1f} s a clip)")
    print(f"CPU threads {args.threads}, batch size {args.batch_size}")
    load_seq, seq_s, seq_text = _timed(args.model, prompts, 1, args.threads)
    load_bat, bat_s, bat_text = _timed(args.model, prompts, args.batch_size, args.threads)
    rows = [
        ("sequential (WhisperModel.transcribe)", load_seq, seq_s),
        (f"batched (BatchedInferencePipeline, {args.batch_size})", load_bat, bat_s),
    ]
    width = max(len(name) for name, _, _ in rows)
    print(f"{'':<{width}}  {'load s':>7}  {'decode s':>8}  {'s/clip':>6}  {'RTF':>6}")
    for name, loaded, seconds in rows:
        print(
            f"{name:<{width}}  {loaded:>7.2f}  {seconds:>8.2f}  {seconds / len(prompts):>6.2f}  "
            f"{seconds / audio_s:>6.3f}"
        )
    rtf = f"RTF {seq_s / audio_s:.3f} -> {bat_s / audio_s:.3f}"
    print(f"batched is {seq_s / bat_s:.2f}x the speed of sequential ({rtf})")
    differ = [i for i, (a, b) in enumerate(zip(seq_text, bat_text, strict=True)) if a != b]
    if differ:
        for i in differ:
            print(f"  clip {i}: sequential {seq_text[i]!r} vs batched {bat_text[i]!r}")
        print(f"{len(differ)} of {len(prompts)} transcripts differ between the two ways")
        return 1
    print(f"the two ways gave the same {len(prompts)} transcripts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
