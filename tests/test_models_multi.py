"""Items about several clips and Chat items of several turns, through the runner and every backend.

Items are made by hand here, with synthesized audio (two tones, two noises, bursts, harmonic "voices"), in the shape
of the kit's multi-clip tasks (``kit_pitch_compare``, ``kit_louder_clip``, ``kit_more_events``, ``kit_same_speaker``)
and its multi-turn Chat task (``kit_followup_QA``). Tiny random Qwen2-Audio and Qwen2.5-Omni answer them through the
runner, batched equal to one by one; the ``openai:`` backend sends them to the local test server, which records every
clip of every request in order; Audio Flamingo 3 answers a multi-clip prompt with an error of its own; the baselines
answer every item, the oracle the gold, and ``dsp`` the right clip wherever it measures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from airbench_nb.audio import sha256_file, write_wav
from airbench_nb.manifests import read_records
from airbench_nb.models import GenerationParams, Prompt, load_model
from airbench_nb.models.base import chat_messages
from airbench_nb.models.baselines import CANNOT_TELL
from airbench_nb.prompts import PromptSet, item_prompt_hash, item_prompts, prompt_hash
from airbench_nb.records import ChatItem, ChatTurn, FoundationItem, Response
from airbench_nb.runner import run_model

SR = 16000
CLIPS = ("the first clip", "the second clip")
TINY = GenerationParams(max_new_tokens=6)


# ------------------------------------------------------------------------------------------------ audio and items


def _tone(f0: float, seconds: float, harmonics: int = 4, level: float = 0.3) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    wave = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, harmonics + 1))
    return (level * wave / np.max(np.abs(wave))).astype(np.float32)


def _noise(seconds: float, rms: float, seed: int) -> np.ndarray:
    return (rms * np.random.default_rng(seed).standard_normal(int(seconds * SR))).astype(np.float32)


def _bursts(count: int, seconds: float = 1.6, seed: int = 0) -> np.ndarray:
    audio = _noise(seconds, 0.001, seed)
    burst = _noise(0.05, 0.15, seed + 100)
    for k in range(count):
        start = int((0.1 + 0.3 * k) * SR)
        audio[start : start + burst.size] += burst
    return audio


AUDIO: dict[str, np.ndarray] = {
    "low.wav": _tone(220.0, 0.6),
    "high.wav": _tone(330.0, 0.9),
    "quiet.wav": _noise(0.8, 0.02, 1),
    "loud.wav": _noise(1.1, 0.1, 2),
    "two.wav": _bursts(2, seed=3),
    "four.wav": _bursts(4, seed=4),
    "male.wav": _tone(110.0, 1.0, harmonics=8),
    "female.wav": _tone(210.0, 1.2, harmonics=8),
    "male2.wav": _tone(118.0, 0.7, harmonics=8),
    "scene.wav": _noise(1.0, 0.05, 5),
    "single.wav": _tone(440.0, 0.5),
}
"""Clips (mono, 16 kHz) written under ``<root>/mm/``."""


def _foundation(root: Path, uid: str, task: str, question: str, clips: list[str], answer: int, choices=CLIPS):
    paths = [f"mm/{c}" for c in clips]
    shas = [sha256_file(root / p) for p in paths]
    return FoundationItem(
        uid=uid,
        dataset="synthetic",
        audio=paths[0],
        audios=paths if len(paths) > 1 else [],
        audio_sha256=shas[0],
        audios_sha256=shas if len(paths) > 1 else [],
        audio_status="ok",
        question=question,
        task=task,
        choices=list(choices),
        answer=answer,
    )


FOLLOWUP = [
    ChatTurn(question="What do you hear?", reference="A steady hiss of noise."),
    ChatTurn(question="Is it loud?", reference="No, it is fairly quiet."),
    ChatTurn(question="Could it be rain?", reference="Yes, it could be light rain."),
]


def make_items(root: Path) -> dict[str, FoundationItem | ChatItem]:
    """Write the clips under ``root`` and return the hand-made items by uid."""
    for name, samples in AUDIO.items():
        write_wav(root / "mm" / name, samples, SR)
    items: list[FoundationItem | ChatItem] = [
        _foundation(root, "pitch", "kit_pitch_compare", "Which clip has the higher pitch?", ["low.wav", "high.wav"], 1),
        _foundation(
            root, "pitch-low", "kit_pitch_compare", "Which clip has the lower pitch?", ["high.wav", "low.wav"], 1
        ),
        _foundation(root, "louder", "kit_louder_clip", "Which clip is louder?", ["loud.wav", "quiet.wav"], 0),
        _foundation(root, "events", "kit_more_events", "Which clip has more events?", ["two.wav", "four.wav"], 1),
        _foundation(
            root,
            "speaker",
            "kit_same_speaker",
            "Are the two recordings spoken by the same speaker?",
            ["male.wav", "female.wav"],
            1,
            choices=("the same speaker", "two different speakers"),  # the builder's wording
        ),
        _foundation(
            root,
            "speaker-close",
            "kit_same_speaker",
            "Do the two clips have the same speaker?",
            ["male.wav", "male2.wav"],
            1,
            choices=("yes", "no"),
        ),
        _foundation(
            root,
            "single",
            "Music_Midi_Pitch_Analysis",
            "What is the pitch of the note?",
            ["single.wav"],
            0,
            choices=("69", "57", "81", "62"),
        ),
        ChatItem(
            uid="followup",
            dataset="synthetic",
            audio="mm/scene.wav",
            audio_sha256=sha256_file(root / "mm/scene.wav"),
            audio_status="ok",
            question=FOLLOWUP[0].question,
            reference=FOLLOWUP[0].reference,
            meta_info="Light rain on a window, quiet.",
            task="kit_followup_QA",
            turns=FOLLOWUP,
        ),
        ChatItem(
            uid="followup-2",
            dataset="synthetic",
            audio="mm/male.wav",
            audio_sha256=sha256_file(root / "mm/male.wav"),
            audio_status="ok",
            question="Who is speaking?",
            reference="A man with a low voice.",
            meta_info="A man hums a low tone.",
            task="kit_followup_QA",
            turns=[
                ChatTurn(question="Who is speaking?", reference="A man with a low voice."),
                ChatTurn(question="How long does it last?", reference="About one second."),
            ],
        ),
    ]
    return {item.uid: item for item in items}


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, FoundationItem | ChatItem]]:
    root = tmp_path_factory.mktemp("multi-data")
    return root, make_items(root)


def _responses(path: Path) -> dict[str, Response]:
    return {r.uid: r for r in read_records(path, Response)}


# ------------------------------------------------------------------------------------------------ prompts


def test_prompt_names_the_clips_and_hash_covers_clips_and_turns(data):
    root, items = data
    pitch, single, followup = items["pitch"], items["single"], items["followup"]
    [text] = item_prompts(pitch)
    assert text.startswith("You are given 2 audio clips, in this order: Clip 1 is the first clip, Clip 2 is the ")
    assert text.splitlines()[2] == "Which clip has the higher pitch?"
    assert text.endswith("A. the first clip\nB. the second clip")
    assert item_prompts(followup) == [t.question for t in FOLLOWUP]

    # one clip, one turn: the hash of schema version 1, so older responses resume without a new answer
    import hashlib
    import json

    v1 = json.dumps({"system": None, "text": item_prompts(single)[0], "audio": single.audio_sha256}, sort_keys=True)
    assert item_prompt_hash(single) == hashlib.sha256(v1.encode()).hexdigest()
    assert item_prompt_hash(single) == prompt_hash(item_prompts(single)[0], single.audio_sha256)

    # every clip's hash and every turn count
    other_clip = pitch.model_copy(update={"audios_sha256": [pitch.audios_sha256[0], "0" * 64]})
    assert item_prompt_hash(other_clip) != item_prompt_hash(pitch)
    swapped = pitch.model_copy(
        update={"audios_sha256": pitch.audios_sha256[::-1], "audio_sha256": pitch.audios_sha256[1]}
    )
    assert item_prompt_hash(swapped) != item_prompt_hash(pitch)
    later = followup.model_copy(update={"turns": [*FOLLOWUP[:2], ChatTurn(question="Rain?", reference="Maybe.")]})
    assert item_prompt_hash(later) != item_prompt_hash(followup)
    assert item_prompt_hash(followup, system="Be brief.") != item_prompt_hash(followup)
    custom = PromptSet(name="mine", multi_clip_intro="{count} clips: {clips}.")
    assert item_prompts(pitch, custom)[0].startswith("2 clips: Clip 1 is the first clip")


def test_chat_messages_order_clips_then_turns(data):
    _, items = data
    a, b = np.zeros(10, np.float32), np.ones(10, np.float32)
    prompt = Prompt.of(
        items["followup"],
        "Could it be rain?",
        [a, b],
        [Path("a.wav"), Path("b.wav")],
        system="Be brief.",
        history=[("What do you hear?", "noise"), ("Is it loud?", "no")],
    )
    assert prompt.turn == 2 and len(prompt.audios) == 2 and prompt.audio is a
    messages = chat_messages(prompt, [{"type": "audio", "n": 1}, {"type": "audio", "n": 2}])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "audio", "n": 1},
        {"type": "audio", "n": 2},
        {"type": "text", "text": "What do you hear?"},
    ]
    assert messages[2]["content"] == [{"type": "text", "text": "noise"}]
    assert messages[-1]["content"] == [{"type": "text", "text": "Could it be rain?"}]


# ------------------------------------------------------------------------------------------------ hf


@pytest.fixture(scope="module", autouse=True)
def one_cpu_thread():
    """Tiny models run fastest on one thread on a shared 2-core machine."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-multi")


def _tiny(family: str, root: Path) -> Path:
    from airbench_nb.models.tiny import BUILDERS

    if family == "voxtral":
        pytest.importorskip("mistral_common", reason="voxtral needs mistral-common: pip install -e '.[voxtral]'")
    folder = root / family
    return folder if (folder / "config.json").exists() else BUILDERS[family](folder)


HF_UIDS = ("pitch", "louder", "events", "single", "followup", "followup-2")
"""Items the tiny models answer: two-clip, one-clip, three-turn and two-turn."""


@pytest.mark.parametrize("family", ["qwen2_audio", "qwen2_5_omni"])
def test_hf_answers_multi_clip_and_multi_turn_batched_equal_one_by_one(family, data, tiny_root, tmp_path):
    root, items = data
    chosen = [items[uid] for uid in HF_UIDS]
    lm = load_model(f"hf:{_tiny(family, tiny_root)}", batch_size=4, device="cpu")
    seen: list[Prompt] = []
    encode = lm.adapter.encode

    def spy(processor, prompts):
        seen.extend(prompts)
        return encode(processor, prompts)

    lm.adapter.encode = spy
    try:
        batched = run_model(lm, chosen, root, tmp_path / "batched.jsonl", params=TINY, progress=False)
        lm.batch_size = 1
        single = run_model(lm, chosen, root, tmp_path / "single.jsonl", params=TINY, progress=False)
    finally:
        lm.close()
    assert batched.answered == single.answered == len(chosen) and batched.errors == 0
    a, b = _responses(tmp_path / "batched.jsonl"), _responses(tmp_path / "single.jsonl")
    for uid in HF_UIDS:
        assert a[uid].error is None, a[uid].error
        assert (a[uid].text, a[uid].turns) == (b[uid].text, b[uid].turns), uid
        assert (a[uid].input_tokens, a[uid].output_tokens) == (b[uid].input_tokens, b[uid].output_tokens), uid
        assert a[uid].prompt_hash == item_prompt_hash(items[uid])
        assert a[uid].generation["max_new_tokens"] == 6 and a[uid].generation["greedy"] is True
    assert len(a["followup"].turns) == 3 and len(a["followup-2"].turns) == 2 and a["pitch"].turns == []
    assert a["followup"].text == a["followup"].turns[0]
    assert len({r.text for r in a.values()}) > 1, "a degenerate model would make the comparison vacuous"

    # what the model got: both clips in order; each later turn carries the earlier ones and the model's own answers
    pitch = next(p for p in seen if p.uid == "pitch")
    assert [p.name for p in pitch.audio_paths] == ["low.wav", "high.wav"]
    assert [a.size for a in pitch.audios] == [AUDIO["low.wav"].size, AUDIO["high.wav"].size]
    third = [p for p in seen if p.uid == "followup" and p.turn == 2]
    earlier = list(zip(item_prompts(items["followup"])[:2], a["followup"].turns[:2], strict=True))
    assert third and all(p.history == earlier for p in third)


def test_qwen2_audio_template_numbers_the_clips(data, tiny_root):
    root, items = data
    lm = load_model(f"hf:{_tiny('qwen2_audio', tiny_root)}", device="cpu")
    try:
        clips = [AUDIO["low.wav"], AUDIO["high.wav"]]
        prompt = Prompt.of(items["pitch"], item_prompts(items["pitch"])[0], clips, [Path("a"), Path("b")])
        later = Prompt.of(items["followup"], "Is it loud?", clips[:1], [Path("a")], history=[("What?", "noise")])
        rendered = lm.processor.apply_chat_template(
            [lm.adapter.conversation(prompt), lm.adapter.conversation(later)],
            add_generation_prompt=True,
            tokenize=False,
        )
    finally:
        lm.close()
    first, second = rendered
    assert first.count("<|AUDIO|>") == 2 and "Audio 1: <|audio_bos|>" in first and "Audio 2: <|audio_bos|>" in first
    assert first.index("Audio 2:") < first.index("You are given 2 audio clips")
    assert second.count("<|AUDIO|>") == 1
    assert "<|im_start|>assistant\nnoise<|im_end|>\n<|im_start|>user\nIs it loud?<|im_end|>" in second


@pytest.mark.parametrize("family", ["audioflamingo3", "voxtral"])
def test_other_families_take_several_clips_or_refuse_per_item(family, data, tiny_root):
    """Voxtral's processor takes several audio chunks per message; Audio Flamingo 3's pairs texts and audios 1:1."""
    _, items = data
    lm = load_model(f"hf:{_tiny(family, tiny_root)}", batch_size=3, device="cpu")
    try:
        two = Prompt.of(
            items["louder"], "Which clip is louder?", [AUDIO["loud.wav"], AUDIO["quiet.wav"]], [Path("a")] * 2
        )
        one = Prompt.of(items["single"], "What pitch?", [AUDIO["single.wav"]], [Path("s")])
        turn = Prompt.of(
            items["followup"], "Is it loud?", [AUDIO["scene.wav"]], [Path("c")], history=[("What?", "rain")]
        )
        batched = lm.generate([two, one, turn], TINY)
        singles = [lm.generate([p], TINY)[0] for p in (two, one, turn)]
    finally:
        lm.close()
    assert [g.text for g in batched] == [g.text for g in singles]
    assert batched[1].error is None and batched[2].error is None
    if family == "audioflamingo3":
        assert (
            batched[0].text is None and batched[0].error == "audioflamingo3 takes one clip per prompt; this item has 2"
        )
    else:
        assert batched[0].error is None and batched[0].text is not None


def test_refusing_backend_gives_an_error_response_through_the_runner(data, tiny_root, tmp_path):
    root, items = data
    lm = load_model(f"hf:{_tiny('audioflamingo3', tiny_root)}", batch_size=4, device="cpu")
    try:
        summary = run_model(
            lm, [items["pitch"], items["single"]], root, tmp_path / "r.jsonl", params=TINY, progress=False
        )
    finally:
        lm.close()
    got = _responses(tmp_path / "r.jsonl")
    assert got["pitch"].text is None
    assert got["pitch"].error == "backend: audioflamingo3 takes one clip per prompt; this item has 2"
    assert got["single"].error is None and got["single"].text is not None
    assert (summary.answered, summary.errors, summary.error_kinds) == (1, 1, {"backend": 1})


# ------------------------------------------------------------------------------------------------ openai


@pytest.fixture
def server():
    from tests.openai_server import OpenAITestServer

    with OpenAITestServer(latency_s=0.0) as srv:
        yield srv


def test_openai_sends_every_clip_in_order_and_the_history(data, server, tmp_path):
    root, items = data
    chosen = [items[u] for u in ("pitch", "louder", "events", "single", "followup", "followup-2")]
    model = load_model(f"openai:tiny-audio@{server.base_url}", concurrency=3, batch_size=4)
    summary = run_model(model, chosen, root, tmp_path / "r.jsonl", progress=False)
    model.close()
    assert summary.answered == len(chosen) and summary.errors == 0
    got = _responses(tmp_path / "r.jsonl")

    by_text: dict[str, list[list[float]]] = {}
    for text, seconds in server.seen.clips:
        by_text.setdefault(text, []).append(seconds)
    for uid in ("pitch", "louder", "events", "single"):
        item = items[uid]
        expected = [AUDIO[Path(c).name].size / SR for c in item.clips]
        [sent] = by_text[item_prompts(item)[0]]  # one request, carrying every clip in the item's order
        assert sent == [pytest.approx(s, abs=1 / SR) for s in expected], uid
        assert got[uid].text == f"tiny-audio heard {sum(expected):.3f}s: {item_prompts(item)[0]}"

    followup = got["followup"]
    assert followup.turns == [f"tiny-audio heard 1.000s: {t.question}" for t in FOLLOWUP]
    assert followup.text == followup.turns[0] and followup.generation["max_new_tokens"] == 512
    last = next(c for c in server.seen.conversations if c[-1] == ("user", FOLLOWUP[2].question))
    assert last == [
        ("user", f"<audio> {FOLLOWUP[0].question}"),
        ("assistant", followup.turns[0]),
        ("user", FOLLOWUP[1].question),
        ("assistant", followup.turns[1]),
        ("user", FOLLOWUP[2].question),
    ]
    # the clip goes once, with the first turn; the history carries the model's own answers
    assert by_text[FOLLOWUP[2].question] == [[pytest.approx(1.0, abs=1 / SR)]]
    bodies = [b for b in server.seen.bodies if b["messages"][-1]["content"][-1]["text"] == FOLLOWUP[1].question]
    assert bodies[0]["max_tokens"] == 512 and bodies[0]["messages"][1]["content"] == followup.turns[0]


def test_openai_failed_later_turn_keeps_the_answers_and_is_retried(data, server, tmp_path):
    from tests.openai_server import Fault

    root, items = data
    server.plan = {FOLLOWUP[1].question: [Fault("400")]}
    out = tmp_path / "r.jsonl"
    model = load_model(f"openai:tiny-audio@{server.base_url}")
    first = run_model(model, [items["followup"]], root, out, progress=False)
    [failed] = read_records(out, Response)
    assert failed.error.startswith("backend: turn 2 of 3: ") and "400" in failed.error
    assert failed.text == failed.turns[0] == f"tiny-audio heard 1.000s: {FOLLOWUP[0].question}"
    assert len(failed.turns) == 1 and first.errors == 1 and first.error_kinds == {"backend": 1}

    again = run_model(model, [items["followup"]], root, out, progress=False)
    model.close()
    assert again.retried == 1 and again.answered == 1
    latest = _responses(out)["followup"]
    assert latest.error is None and len(latest.turns) == 3


# ------------------------------------------------------------------------------------------------ baselines


def test_oracle_answers_the_gold_on_every_turn_and_scores_full_marks(data, tmp_path):
    from airbench_nb.judge.extract import extract_choice

    root, items = data
    out = tmp_path / "oracle.jsonl"
    run_model(load_model("baseline:oracle"), list(items.values()), root, out, progress=False)
    got = _responses(out)
    assert set(got) == set(items)
    for uid, item in items.items():
        response = got[uid]
        assert response.error is None
        if isinstance(item, FoundationItem):
            assert extract_choice(response.text, item.choices).choice == item.answer
        else:
            assert response.turns == [reference for _, reference in item.conversation]
            assert response.text == item.reference


def test_random_and_first_answer_every_item_and_turn(data, tmp_path):
    root, items = data
    for name in ("random", "first"):
        out = tmp_path / f"{name}.jsonl"
        summary = run_model(load_model(f"baseline:{name}", seed=1), list(items.values()), root, out, progress=False)
        assert summary.answered == len(items) and summary.errors == 0
        got = _responses(out)
        for uid, item in items.items():
            if isinstance(item, FoundationItem):
                assert got[uid].text in "ABCD"[: len(item.choices)]
                assert name != "first" or got[uid].text == "A"
            else:
                assert got[uid].turns == [CANNOT_TELL] * len(item.conversation)


def test_dsp_is_right_where_it_measures(data, tmp_path):
    root, items = data
    out = tmp_path / "dsp.jsonl"
    run_model(load_model("baseline:dsp"), list(items.values()), root, out, progress=False)
    got = _responses(out)
    for uid in ("pitch", "pitch-low", "louder", "events", "speaker"):
        assert got[uid].error is None, got[uid].error
        assert got[uid].text == items[uid].answer_letter, uid
    assert got["speaker-close"].text == CANNOT_TELL  # two low voices: F0 alone cannot tell them apart
    assert got["followup"].turns == [CANNOT_TELL] * 3


def test_dsp_cannot_tell_equal_clips(data):
    from airbench_nb.models.baselines import dsp_answer

    _, items = data
    same = [AUDIO["quiet.wav"], AUDIO["quiet.wav"]]
    assert dsp_answer(Prompt.of(items["louder"], "", same, [Path("a")] * 2)) == CANNOT_TELL
    bursts = [AUDIO["two.wav"], AUDIO["two.wav"]]
    assert dsp_answer(Prompt.of(items["events"], "", bursts, [Path("a")] * 2)) == CANNOT_TELL


def test_one_unreadable_clip_is_the_items_error(data, tmp_path):
    root, items = data
    broken = root / "mm" / "broken.wav"
    broken.write_bytes(b"RIFF not really")
    item = items["pitch"].model_copy(update={"audios": ["mm/low.wav", "mm/broken.wav"]})
    run_model(load_model("baseline:first"), [item, items["single"]], root, tmp_path / "r.jsonl", progress=False)
    got = _responses(tmp_path / "r.jsonl")
    # the audio is checked when the run starts: a clip that does not decode is a data defect, named
    assert got["pitch"].error == "audio corrupt: clip 2 of 2 (mm/broken.wav)"
    assert got["single"].text == "A"
