"""Reference scoring speed: WER of 20,000 transcripts end to end, and SSEU's embedding post-processing of 20,000
free-text scene answers cold (every distinct text embedded by the offline MiniLM, batched) and warm (from the
on-disk cache, in a new embedder as a second run would have), with the targets and the ratios.

Transcripts: references drawn from a pool of sentences (each spoken at several SNRs, as in SSEU-Bench), hypotheses
made from them by random substitutions, deletions and insertions, 2% failed (None) and 1% empty; the normalisation
cache is cleared first. Scene answers: LALM-style sentences ("The audio sounds like a busy street with cars.") over
10 scene classes; the cache folder is a fresh temporary one.

    .venv/bin/python bench/bench_reference_scoring.py [--items 20000] [--answers 20000] [--sentences 2500]
        [--reps 1000] [--only wer|embed]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time

from airbench_nb.embeddings import SentenceTransformerEmbedder
from airbench_nb.scoring.tagging import score_scenes
from airbench_nb.scoring.wer import corpus_wer, normalize, score_utterances

WORDS = (
    "the of and to a in is you that it he was for on are as with his they at be this have from or had by word but "
    "not what all were we when your can said there use an each which she do how their if will up other about out many "
    "then them these so some her would make like him into time has look two more write go see number no way could "
    "people my than first water been call who oil its now find long down day did get come made may part twenty five "
    "seven hundred colour don't it's mr"
).split()
SCENES = ("street", "park", "kitchen", "train station", "beach", "office", "forest", "restaurant", "bus", "home")
OPENERS = ("This sounds like", "The scene is", "I think it is", "Probably", "It seems to be", "The audio suggests")
DETAILS = ("with cars", "with people talking", "with birds", "at night", "in the rain", "with music", "with a dog")

WER_TARGET_S = 5.0
COLD_TARGET_PER_S = 200.0
WARM_TARGET_S = 5.0


def _transcripts(items: int, sentences: int, seed: int = 0) -> tuple[list[str], list[str | None]]:
    rng = random.Random(seed)
    pool = [" ".join(rng.choices(WORDS, k=rng.randint(6, 16))).capitalize() + "." for _ in range(sentences)]
    references, hypotheses = [], []
    for i in range(items):
        reference = pool[i % sentences]
        words = reference.split()
        for _ in range(rng.randint(0, 4)):
            j, op = rng.randrange(len(words)), rng.random()
            if op < 0.4:
                words[j] = rng.choice(WORDS)
            elif op < 0.7 and len(words) > 1:
                del words[j]
            else:
                words.insert(j, rng.choice(WORDS))
        roll = rng.random()
        references.append(reference)
        hypotheses.append(None if roll < 0.02 else "" if roll < 0.03 else " ".join(words))
    return references, hypotheses


def _answers(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    answers, golds = [], []
    for i in range(n):
        gold = SCENES[i % len(SCENES)]
        said = gold if rng.random() < 0.6 else rng.choice(SCENES)
        answers.append(f"{rng.choice(OPENERS)} a {said} {rng.choice(DETAILS)} ({i % 2000}).")
        golds.append(gold)
    return answers, golds


def _load() -> str:
    """The 1-minute load average (other processes share the CPUs: wall times grow with it)."""
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"


def wer(args: argparse.Namespace) -> None:
    references, hypotheses = _transcripts(args.items, args.sentences)
    distinct = len(set(references) | {h for h in hypotheses if h})
    normalize.cache_clear()
    c0, t0 = time.process_time(), time.perf_counter()
    utterances = score_utterances(references, hypotheses, "en")
    t1 = time.perf_counter()
    summary = corpus_wer(utterances, reps=args.reps, seed=0)
    t2, c2 = time.perf_counter(), time.process_time()
    total = t2 - t0
    print(f"WER of {args.items} transcripts ({distinct} distinct strings to normalise), {args.reps} bootstrap reps")
    print(f"{'what':44s} {'seconds':>10s}")
    print(f"{'normalise + process_words (per utterance)':44s} {t1 - t0:10.2f}")
    print(f"{'corpus WER + bootstrap CI':44s} {t2 - t1:10.2f}")
    print(f"{'total':44s} {total:10.2f}  (target < {WER_TARGET_S:g} s: target / measured {WER_TARGET_S / total:.2f})")
    print(f"{'CPU time of this process (all threads)':44s} {c2 - c0:10.2f}  (load average {_load()})")
    print(
        f"corpus WER {summary.wer:.4f} [{summary.ci_low:.4f}, {summary.ci_high:.4f}], n={summary.n}, "
        f"empty {summary.empty}, failed {summary.failed}, hallucinations {summary.hallucinations}"
    )


def embed(args: argparse.Namespace) -> None:
    answers, golds = _answers(args.answers)
    with tempfile.TemporaryDirectory() as cache:
        cold = SentenceTransformerEmbedder(cache_dir=cache)
        t0 = time.perf_counter()
        cold.encoder.encode(["warm up"])  # load the model: not part of the per-answer rate
        load = time.perf_counter() - t0
        c0, t0 = time.process_time(), time.perf_counter()
        result = score_scenes(answers, golds, list(SCENES), cold, reps=args.reps)
        cold_s, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
        cold.close()
        warm = SentenceTransformerEmbedder(cache_dir=cache)
        t0 = time.perf_counter()
        again = score_scenes(answers, golds, list(SCENES), warm, reps=args.reps)
        warm_s = time.perf_counter() - t0
    assert again.predicted == result.predicted
    distinct = len(set(answers))
    print(
        f"scene post-processing of {args.answers} answers ({distinct} distinct) over {len(SCENES)} classes, "
        f"offline MiniLM on {os.cpu_count()} CPUs, {args.reps} bootstrap reps (model load {load:.1f} s, not counted)"
    )
    print(f"{'what':44s} {'seconds':>10s} {'answers/s':>12s}")
    print(f"{'cold: embed every distinct text, batched':44s} {cold_s:10.2f} {args.answers / cold_s:12.0f}")
    print(f"{'warm: a new embedder, from the disk cache':44s} {warm_s:10.2f} {args.answers / warm_s:12.0f}")
    print(f"{'ratio warm / cold speed':44s} {cold_s / warm_s:10.1f}")
    cpus = min(2, os.cpu_count() or 1)
    print(
        f"cold CPU time {cold_cpu:.1f} s (all threads; load average {_load()}): {args.answers / (cold_cpu / cpus):.0f} "
        f"answers/s if {cpus} cores were free"
    )
    cold_rate = args.answers / cold_s
    print(
        f"targets: cold >= {COLD_TARGET_PER_S:g} answers/s (measured / target {cold_rate / COLD_TARGET_PER_S:.2f}), "
        f"warm < {WARM_TARGET_S:g} s (target / measured {WARM_TARGET_S / warm_s:.1f})"
    )
    print(
        f"backend calls cold {cold.stats.calls}, warm {warm.stats.calls}; "
        f"mACC {result.macc:.3f} [{result.ci_low:.3f}, {result.ci_high:.3f}]"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000, help="transcripts to score")
    parser.add_argument("--sentences", type=int, default=2_500, help="distinct reference sentences")
    parser.add_argument("--answers", type=int, default=20_000, help="free-text scene answers to post-process")
    parser.add_argument("--reps", type=int, default=1_000, help="bootstrap replicates")
    parser.add_argument("--only", choices=("wer", "embed"), default=None, help="run one part")
    args = parser.parse_args()
    if args.only in (None, "wer"):
        wer(args)
    if args.only in (None, "embed"):
        embed(args)


if __name__ == "__main__":
    main()
