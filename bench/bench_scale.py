"""Analysis at scale: ``airbench-nb analyze`` on synthetic runs of 1x (61,316 items), 2x and 150,000 items.

Each size writes a run folder without audio, the shape ``analyze`` reads (``data/``, ``responses/``, ``verdicts/``):
AIR-Bench Foundation items over the 19 official tasks (rule verdicts of the real rule judge), Chat items with two
judge verdicts per answer (both orders), SSEU-Bench transcription items (three SNRs per utterance) and UG-Bench
translation items (four directions per sentence), all answered by three models. At 1x the counts are those of the
issue's measured run: 19,248 Foundation, 2,052 Chat, 20,016 transcription and 20,000 translation items; a size of
``s`` times that scales each count. ``analyze`` runs in a subprocess per size; the bench prints its wall time, the
peak RSS of its largest process (the child's ``wait4`` rusage) and the peak of the RSS summed over the analysis and
the worker processes it starts (``/proc``, sampled every 0.2 s: the figure held against the target), the targets of
issue 35 (150,000 items under 60 s and 2 GB, the 2x/1x time ratio at most 2.2), and the ratio. Times are wall-clock
on the machine as it is: other processes sharing its cores slow them.

    .venv/bin/python bench/bench_scale.py                          # 1x, 2x and 150k items
    .venv/bin/python bench/bench_scale.py --sizes 0.1,0.2          # a quick run
    .venv/bin/python bench/bench_scale.py --scale 0.5 --keep /tmp/scale   # sizes are multiplied by --scale
    AIRBENCH_NB_WORKERS=2 .venv/bin/python bench/bench_scale.py   # transcripts and translations scored ahead
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ONE_X = {"foundation": 19_248, "chat": 2_052, "transcription": 20_016, "translation": 20_000}
"""Items of each kind at size 1 (the issue's measured run: 61,316 items)."""
MODELS = ("bench:strong", "bench:middling", "bench:weak")
"""The three models; each answers every item."""
SKILL = {"bench:strong": 0.8, "bench:middling": 0.6, "bench:weak": 0.35}
"""Probability of a right answer (Foundation), of a kept word (transcripts, translations)."""
JUDGES = ("bench-judge",)
LANGUAGES = ("de", "fr", "es", "it")
WORDS = (
    "the of and to a in is you that it he was for on are as with his they at be this have from or had by word but "
    "not what all were we when your can said there use an each which she do how their if will up other about out many "
    "then them these so some her would make like him into time has look two more write go see number no way could "
    "people my than first water been call who oil its now find long down day did get come made may part"
).split()
SIZE_150K = 150_000 / sum(ONE_X.values())
"""The size of a 150,000-item run."""
TARGET_S, TARGET_GB, TARGET_RATIO = 60.0, 2.0, 2.2


def _counts(size: float) -> dict[str, int]:
    counts = {kind: int(round(n * size)) for kind, n in ONE_X.items()}
    counts["transcription"] -= counts["transcription"] % 3  # whole utterances (three SNRs each)
    counts["translation"] -= counts["translation"] % len(LANGUAGES)  # whole sentences
    return counts


def _garble(words: list[str], keep: float, rng: random.Random) -> str:
    out = []
    for word in words:
        roll = rng.random()
        if roll < keep:
            out.append(word)
        elif roll < keep + (1 - keep) / 2:
            out.append(rng.choice(WORDS))
    return " ".join(out)


def write_run(folder: Path, size: float, seed: int = 0) -> dict[str, int]:
    """Write a synthetic run of ``size`` times :data:`ONE_X` into ``folder``; returns the item counts."""
    from airbench_nb.judge.run import rule_verdict
    from airbench_nb.manifests import write_manifest, write_records
    from airbench_nb.records import (
        CHAT_TASKS,
        FOUNDATION_TASKS,
        ChatItem,
        FoundationItem,
        Response,
        TranscriptionItem,
        TranslationItem,
        Verdict,
    )
    from airbench_nb.run_folder import RunFolder

    rng = random.Random(seed)
    counts = _counts(size)
    run = RunFolder(folder)
    common = {"dataset": "bench", "question": "What is it?"}
    tasks, chat_tasks = list(FOUNDATION_TASKS), list(CHAT_TASKS)
    foundation = []
    for k in range(counts["foundation"]):
        task = tasks[k % len(tasks)]
        choices = [f"{task} option {c}" for c in range(2 + k % 3)]
        foundation.append(
            FoundationItem(
                uid=f"f{k:06d}",
                task=task,
                audio=f"audio/f{k // 2:06d}.wav",
                choices=choices,
                answer=k % len(choices),
                **common,
            )
        )
    chat = [
        ChatItem(
            uid=f"c{k:05d}",
            task=chat_tasks[k % len(chat_tasks)],
            audio=f"audio/c{k:05d}.wav",
            reference="A short reference answer about the audio clip.",
            meta_info="a clip",
            **common,
        )
        for k in range(counts["chat"])
    ]
    sentences = [" ".join(rng.choices(WORDS, k=rng.randint(6, 18))) for _ in range(max(counts["transcription"], 1))]
    transcription = []
    for k in range(counts["transcription"]):
        utterance, snr = divmod(k, 3)
        transcription.append(
            TranscriptionItem(
                uid=f"t{k:06d}",
                task="sseu_transcription",
                audio=f"audio/t{k:06d}.wav",
                reference=sentences[utterance].capitalize() + ".",
                clip_id=f"u{utterance:06d}@snr{5 * snr - 5:+d}",
                snr_db=5.0 * snr - 5.0,
                **common,
            )
        )
    translation = []
    for k in range(counts["translation"]):
        sentence, direction = divmod(k, len(LANGUAGES))
        translation.append(
            TranslationItem(
                uid=f"x{k:06d}",
                task="speech_translation",
                audio=f"audio/x{k:06d}.wav",
                source_language=LANGUAGES[direction],
                target_language="en",
                references=[sentences[-1 - sentence % len(sentences)].capitalize() + "."],
                meta={"sentence_id": f"s{sentence:06d}"},
                **common,
            )
        )
    for kind, items in (
        ("foundation", foundation),
        ("chat", chat),
        ("transcription", transcription),
        ("translation", translation),
    ):
        write_manifest(run.manifest(kind), items)
    run.dataset_card.write_text(json.dumps({"data_root": ".", "source": "bench"}))
    letters = "ABCD"
    for model in MODELS:
        skill = SKILL[model]
        answers = []
        for item in foundation:
            right = rng.random() < skill
            pick = (
                item.answer if right else (item.answer + 1 + rng.randrange(len(item.choices) - 1)) % len(item.choices)
            )
            answers.append(Response(uid=item.uid, model=model, text=f"The answer is {letters[pick]}."))
        write_records(run.responses_file(model, "foundation"), answers)
        verdicts = [rule_verdict(i, r) for i, r in zip(foundation, answers, strict=True)]
        write_records(run.verdicts_file(model, "foundation", "rule"), verdicts)
        del answers
        write_records(
            run.responses_file(model, "chat"),
            [Response(uid=i.uid, model=model, text=" ".join(["word"] * int(12 * skill))) for i in chat],
        )
        for judge in JUDGES:
            verdicts = []
            for item in chat:
                score = float(max(1, min(10, round(10 * skill + rng.gauss(0, 1)))))
                for order in ("reference_first", "hypothesis_first"):
                    first, second = (8.0, score) if order == "reference_first" else (score, 8.0)
                    verdicts.append(
                        Verdict(
                            uid=item.uid,
                            model=model,
                            judge=judge,
                            order=order,
                            raw=f"{first:g} {second:g}",
                            score_hypothesis=score,
                            score_reference=8.0,
                        )
                    )
            write_records(run.verdicts_file(model, "chat", judge), verdicts)
        write_records(
            run.responses_file(model, "transcription"),
            [
                Response(
                    uid=i.uid, model=model, text=_garble(i.reference.split(), skill + 0.05 * (i.snr_db or 0) / 5, rng)
                )
                for i in transcription
            ],
        )
        write_records(
            run.responses_file(model, "translation"),
            [
                Response(uid=i.uid, model=model, text=_garble(i.references[0].split(), skill, rng) or None)
                for i in translation
            ],
        )
    return counts


def _tree_rss(root: int) -> int:
    """Resident bytes of process ``root`` and all its descendants now (Linux ``/proc``; 0 elsewhere)."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return 0
    for name in entries:
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def analyze(folder: Path, timeout: float) -> tuple[float, float, float, int]:
    """Run ``airbench-nb analyze`` on ``folder`` in a fresh child.

    Returns:
        ``(wall seconds, peak RSS of the largest process in GB, peak RSS summed over the analysis and its worker
        processes in GB (sampled every 0.2 s), exit code)``.
    """
    t0 = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "airbench_nb.cli", "analyze", str(folder)], stdout=subprocess.DEVNULL
    )
    summed, rusage, status = 0, None, 0
    while rusage is None:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)  # the child's own rusage: its largest process
        if pid:
            rusage = usage
            break
        summed = max(summed, _tree_rss(child.pid))
        if time.perf_counter() - t0 > timeout:
            child.kill()
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    child.returncode = rc = os.waitstatus_to_exitcode(status)
    largest = rusage.ru_maxrss * 1024  # Linux: kilobytes, of the child or the largest descendant it reaped
    return wall, largest / 1024**3, max(summed, 0) / 1024**3, rc


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "unknown"


def main() -> int:
    """Write each size, analyse it, print the table, the targets and the 2x/1x ratio; exit 1 when one failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=f"1,2,{SIZE_150K:.4f}", help="Sizes, comma-separated (1 = 61,316 items)")
    parser.add_argument("--scale", type=float, default=1.0, help="Multiply every size by this (a quick run: 0.1)")
    parser.add_argument("--keep", type=Path, help="Folder to keep the runs in (default: a temporary one, removed)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="Seconds one analysis may take")
    args = parser.parse_args()
    os.environ.setdefault("MPLBACKEND", "Agg")
    sizes = [float(s) * args.scale for s in args.sizes.split(",")]
    results: dict[float, tuple[int, float, float, int]] = {}
    with tempfile.TemporaryDirectory(prefix="airbench-scale-") as scratch:
        root = args.keep or Path(scratch)
        for size in sizes:
            folder = root / f"run-{size:g}x"
            t0 = time.perf_counter()
            if not (folder / "data" / "translation.jsonl").exists():
                write_run(folder, size)
            written = time.perf_counter() - t0
            items = sum(_counts(size).values())
            load = _load()
            wall, gb, summed, rc = analyze(folder, args.timeout)
            results[size] = (items, wall, summed, rc)
            print(
                f"size {size:g}x: {items:,} items x {len(MODELS)} models (written in {written:.0f} s); analyze "
                f"{wall:.1f} s, peak RSS {gb:.2f} GB (largest process), {summed:.2f} GB (the analysis and its workers "
                f"together), exit {rc} (load average before: {load})",
                flush=True,
            )
    print(f"{'items':>9} {'seconds':>8} {'peak GB':>8} {'s / 1k items':>12}   (peak GB: processes summed)")
    for items, wall, gb, _ in results.values():
        print(f"{items:>9,} {wall:>8.1f} {gb:>8.2f} {1000 * wall / items:>12.2f}")
    by_items = {v[0]: v for v in results.values()}
    for items, wall, gb, _ in by_items.values():
        if abs(items - 150_000) < 1_000:
            ok = wall < TARGET_S and gb < TARGET_GB
            print(
                f"150k items: {wall:.1f} s (target < {TARGET_S:.0f}), {gb:.2f} GB (target < {TARGET_GB:.0f}): "
                f"{'met' if ok else 'NOT met'}"
            )
    for small in sizes:
        if 2 * small in results:
            ratio = results[2 * small][1] / results[small][1]
            print(f"time ratio {2 * small:g}x / {small:g}x: {ratio:.2f} (target at most {TARGET_RATIO})")
    return 1 if any(v[3] for v in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
