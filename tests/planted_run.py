"""A run folder with planted effects, written in seconds without audio: items, responses and real rule verdicts.

Models (``planted:*`` specs; their answers are drawn here, their verdicts come from the real rule judge):

- ``planted:skilled`` answers right with probability 0.8 on clean items, and on SNR-graded copies with a
  probability that falls with the SNR (0.9 at +10 dB down to 0.3 at -10 dB); otherwise a uniform wrong option.
- ``planted:letter-a`` answers "A" on 60% of items, else a uniform letter (position bias).
- ``planted:uniform`` answers a uniform random letter (no bias).

Chat: the judge ``planted-judge`` scores each answer in both orders; it adds ``order_bonus`` to whichever answer it
reads first. A second judge ``fair-judge`` has no order effect.

With ``kit=True`` the run also holds the kit's own tasks (drawn from a generator of their own, so everything else is
the same as without them): multi-clip Foundation items (``KIT_CLIP_TASKS``: "Which clip ...?", choices "the first
clip" / "the second clip") answered by every model, a fourth model ``planted:clips`` that answers every Foundation
item and is right on ``CLIPS_SINGLE`` (90%) of single-clip and ``CLIPS_MULTI`` (50%) of multi-clip items, and
3-turn ``kit_followup_QA`` conversations whose true score falls by ``TURN_DROP`` per turn for every model.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from airbench_nb.analysis.circular import rotate_items
from airbench_nb.judge.run import rule_verdict
from airbench_nb.manifests import write_manifest, write_records
from airbench_nb.records import CHAT_TASKS as OFFICIAL_CHAT_TASKS
from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from airbench_nb.runner import model_slug

FOUNDATION_TASKS: dict[str, list[str]] = {
    "Speaker_Gender_Recognition": ["male", "female"],
    "Spoken_Language_Identification": ["English", "German", "French", "Spanish"],
    "Sound_AQA": ["one", "two", "three", "four"],
    "Music_Instruments_Classfication": ["organ", "sine", "square", "plucked string"],
    "Music_Mood_Recognition": ["happy", "sad"],
}
CHAT_TASKS = tuple(OFFICIAL_CHAT_TASKS)
MODELS = ("planted:skilled", "planted:letter-a", "planted:uniform")
SNR_GRID = (-10.0, -5.0, 0.0, 5.0, 10.0)
SNR_ACCURACY = {-10.0: 0.3, -5.0: 0.45, 0.0: 0.6, 5.0: 0.75, 10.0: 0.9}
LETTERS = "ABCD"
KIT_CLIP_TASKS = ("kit_pitch_compare", "kit_same_speaker", "kit_more_events", "kit_louder_clip")
CLIPS_MODEL = "planted:clips"
CLIPS_SINGLE, CLIPS_MULTI = 0.9, 0.5
KIT_TURNS = 3
TURN_DROP = 1.5


def _foundation_items(per_task: int, rng: np.random.Generator) -> list[FoundationItem]:
    items = []
    for task, labels in FOUNDATION_TASKS.items():
        for index in range(per_task):
            gold = labels[index % len(labels)]
            choices = list(labels)
            rng.shuffle(choices)
            items.append(
                FoundationItem(
                    uid=f"{task}-{index:04d}",
                    task=task,
                    dataset="planted",
                    audio=f"audio/{task}-{index:04d}.wav",
                    question=f"Which {task}?",
                    choices=choices,
                    answer=choices.index(gold),
                    meta={"gold": gold},
                )
            )
    return items


def _graded(items: list[FoundationItem], per_snr: int) -> list[FoundationItem]:
    base = [i for i in items if i.task == "Speaker_Gender_Recognition"][:per_snr]
    out = []
    for item in base:
        for snr in SNR_GRID:
            meta = {**item.meta, "clean_uid": item.uid, "snr_db": snr, "background": "noise"}
            out.append(item.model_copy(update={"uid": f"{item.uid}@snr{snr:+03.0f}", "meta": meta}))
    return out


def _answer(model: str, item: FoundationItem, rng: np.random.Generator) -> str:
    n = len(item.choices)
    if model == "planted:letter-a":
        return "A" if rng.random() < 0.6 else LETTERS[rng.integers(n)]
    if model == "planted:uniform":
        return LETTERS[rng.integers(n)]
    snr = item.meta.get("snr_db")
    p_right = SNR_ACCURACY[float(snr)] if snr is not None else 0.8
    if rng.random() < p_right:
        return f"The answer is {LETTERS[item.answer]}."
    wrong = [k for k in range(n) if k != item.answer]
    return f"The answer is {LETTERS[wrong[rng.integers(len(wrong))]]}."


def _chat_items(per_task: int) -> list[ChatItem]:
    return [
        ChatItem(
            uid=f"{task}-{index:03d}",
            task=task,
            dataset="planted",
            audio=f"audio/{task}-{index:03d}.wav",
            question="What do you hear?",
            reference="A short reference answer about the audio clip.",
            meta_info="a clip",
        )
        for task in CHAT_TASKS
        for index in range(per_task)
    ]


def write_planted_run(
    folder: str | Path,
    *,
    per_task: int = 60,
    chat_per_task: int = 6,
    snr_items: int = 40,
    rotated_per_task: int = 8,
    order_bonus: float = 1.0,
    seed: int = 0,
    kit: bool = False,
    kit_per_task: int = 30,
    kit_conversations: int = 10,
) -> Path:
    """Write ``folder/{data,responses,verdicts}`` with the planted models and judges; returns ``folder``."""
    rng = np.random.default_rng(seed)
    folder = Path(folder)
    items = _foundation_items(per_task, rng)
    rotated = rotate_items([i for i in items if int(i.uid.rsplit("-", 1)[1]) < rotated_per_task])
    foundation = items + _graded(items, snr_items) + rotated
    chat = _chat_items(chat_per_task)
    data = folder / "data"
    files: dict[Path, list] = {}
    for model in MODELS:
        slug = model_slug(model)
        answers = [Response(uid=i.uid, model=model, text=_answer(model, i, rng)) for i in foundation]
        files[folder / "responses" / slug / "foundation.jsonl"] = answers
        by_uid = {r.uid: r for r in answers}
        files[folder / "verdicts" / slug / "foundation.rule.jsonl"] = [
            rule_verdict(i, by_uid[i.uid]) for i in foundation
        ]
        words = {"planted:skilled": 12, "planted:letter-a": 3, "planted:uniform": 6}[model]
        chat_answers = [Response(uid=i.uid, model=model, text=" ".join(["word"] * words)) for i in chat]
        files[folder / "responses" / slug / "chat.jsonl"] = chat_answers
        quality = {"planted:skilled": 7.0, "planted:letter-a": 4.0, "planted:uniform": 5.0}[model]
        for judge, bonus in (("planted-judge", order_bonus), ("fair-judge", 0.0)):
            verdicts = []
            for item in chat:
                true_model = float(np.clip(np.round(quality + rng.normal(0, 1.0)), 1, 9))
                true_reference = 8.0
                for order in ("reference_first", "hypothesis_first"):
                    first_is_model = order == "hypothesis_first"
                    model_score = min(10.0, true_model + (bonus if first_is_model else 0.0))
                    reference_score = min(10.0, true_reference + (0.0 if first_is_model else bonus))
                    first, second = (model_score, reference_score) if first_is_model else (reference_score, model_score)
                    verdicts.append(
                        Verdict(
                            uid=item.uid,
                            model=model,
                            judge=judge,
                            order=order,
                            raw=f"{first:g} {second:g}",
                            score_hypothesis=model_score,
                            score_reference=reference_score,
                        )
                    )
            files[folder / "verdicts" / slug / f"chat.{judge}.jsonl"] = verdicts
    if kit:
        foundation, chat = _add_kit(folder, foundation, chat, files, kit_per_task, kit_conversations, order_bonus, seed)
    write_manifest(data / "foundation.jsonl", foundation)
    write_manifest(data / "chat.jsonl", chat)
    (data / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "planted"}))
    for path, records in files.items():
        write_records(path, records)
    return folder


def _chat_verdict(item, model, judge, order, true_model, bonus, turn=None) -> Verdict:
    first_is_model = order == "hypothesis_first"
    model_score = min(10.0, true_model + (bonus if first_is_model else 0.0))
    reference_score = min(10.0, 8.0 + (0.0 if first_is_model else bonus))
    first, second = (model_score, reference_score) if first_is_model else (reference_score, model_score)
    return Verdict(
        uid=item.uid,
        model=model,
        judge=judge,
        order=order,
        raw=f"{first:g} {second:g}",
        score_hypothesis=model_score,
        score_reference=reference_score,
        turn=turn,
    )


def _add_kit(folder, foundation, chat, files, per_task, conversations, order_bonus, seed):
    """Add the kit's multi-clip items, the planted:clips model and the multi-turn conversations (see the module)."""
    rng = np.random.default_rng([seed, 14])
    clips = []
    for task in KIT_CLIP_TASKS:
        for index in range(per_task):
            answer = index % 2
            clips.append(
                FoundationItem(
                    uid=f"{task}-{index:04d}",
                    task=task,
                    dataset="synthetic",
                    audios=[f"audio/{task}-{index:04d}-a.wav", f"audio/{task}-{index:04d}-b.wav"],
                    question="Which clip is it?",
                    choices=["the first clip", "the second clip"],
                    answer=answer,
                )
            )
    talks = [
        ChatItem(
            uid=f"kit_followup_QA-{index:03d}",
            task="kit_followup_QA",
            dataset="synthetic",
            audio=f"audio/kit_followup_QA-{index:03d}.wav",
            turns=[
                {"question": f"Question {k + 1} about the mix?", "reference": f"Reference {k + 1}."}
                for k in range(KIT_TURNS)
            ],
            meta_info="a mix",
        )
        for index in range(conversations)
    ]
    for model in (*MODELS, CLIPS_MODEL):
        slug = model_slug(model)
        answered = clips if model != CLIPS_MODEL else foundation + clips
        answers = []
        for item in answered:
            if model == CLIPS_MODEL:
                p_right = CLIPS_MULTI if item.multi_clip else CLIPS_SINGLE
                pick = (
                    item.answer
                    if rng.random() < p_right
                    else 1 - item.answer
                    if len(item.choices) == 2
                    else int(rng.choice([k for k in range(len(item.choices)) if k != item.answer]))
                )
                answers.append(Response(uid=item.uid, model=model, text=f"The answer is {LETTERS[pick]}."))
            else:
                answers.append(Response(uid=item.uid, model=model, text=_answer(model, item, rng)))
        verdicts = [rule_verdict(i, r) for i, r in zip(answered, answers, strict=True)]
        files.setdefault(folder / "responses" / slug / "foundation.jsonl", []).extend(answers)
        files.setdefault(folder / "verdicts" / slug / "foundation.rule.jsonl", []).extend(verdicts)
        if model == CLIPS_MODEL:
            continue
        quality = {"planted:skilled": 7.0, "planted:letter-a": 4.0, "planted:uniform": 5.0}[model]
        texts = [f"answer {k + 1}" for k in range(KIT_TURNS)]
        files[folder / "responses" / slug / "chat.jsonl"].extend(
            Response(uid=i.uid, model=model, text=texts[0], turns=texts) for i in talks
        )
        for judge, bonus in (("planted-judge", order_bonus), ("fair-judge", 0.0)):
            for item in talks:
                for turn in range(KIT_TURNS):
                    true_model = float(np.clip(np.round(quality - TURN_DROP * turn + rng.normal(0, 1.0)), 1, 9))
                    for order in ("reference_first", "hypothesis_first"):
                        verdict = _chat_verdict(item, model, judge, order, true_model, bonus, turn)
                        files[folder / "verdicts" / slug / f"chat.{judge}.jsonl"].append(verdict)
    return foundation + clips, chat + talks


def write_planted_labels(folder: str | Path, *, n: int = 10, disagree: int = 1) -> tuple[Path, list[Path]]:
    """An annotation sample of ``n`` Foundation pairs of ``planted:skilled`` and two annotators' label files.

    Annotator ``h1`` labels the option each answer states, except on the first ``disagree`` pairs (the next option);
    ``h2`` always labels the stated option. The rule judge reads the stated option, so it agrees with ``h1`` on
    ``n - disagree`` of ``n`` pairs and with ``h2`` on all.
    """
    from airbench_nb.manifests import read_manifest, read_records
    from airbench_nb.records import AnnotationPair, Label

    folder = Path(folder)
    items = [i for i in read_manifest(folder / "data" / "foundation.jsonl") if "@" not in i.uid][:n]
    model = "planted:skilled"
    answers = {r.uid: r for r in read_records(folder / "responses" / model_slug(model) / "foundation.jsonl", Response)}
    pairs, h1, h2 = [], [], []
    for k, item in enumerate(items):
        text = answers[item.uid].text or ""
        stated = LETTERS.index(text.rstrip(".")[-1])
        pair_id = f"{model}|{item.uid}"
        pairs.append(
            AnnotationPair(
                pair_id=pair_id,
                kind="foundation",
                uid=item.uid,
                model=model,
                task=item.task,
                category=str(item.category),
                stratum=str(item.category),
                question=item.question,
                audio=item.audio,
                data_root=str(folder / "data"),
                choices=item.choices,
                response=text,
            )
        )
        other = (stated + 1) % len(item.choices)
        h1.append(Label(pair_id=pair_id, annotator="h1", choice=other if k < disagree else stated, seconds=3.0))
        h2.append(Label(pair_id=pair_id, annotator="h2", choice=stated, seconds=2.0))
    sample = write_records(folder / "annotation" / "sample.jsonl", pairs)
    files = [
        write_records(folder / "annotation" / "labels.h1.jsonl", h1),
        write_records(folder / "annotation" / "labels.h2.jsonl", h2),
    ]
    return Path(sample), [Path(p) for p in files]
