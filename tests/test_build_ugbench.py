"""UG-Bench's offline data: the recipe files are complete, the built audio is what the items say, captions say only
what the clip's meta holds, the presets build the stated counts, and a bad recipe line names its file and field.

One module-scoped build (one translation per direction, one audio caption per scene, four melodies, three tts items
and two spoken answers) serves the measurements; the tiny preset's items are the first of it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import librosa
import numpy as np
import pytest
import soundfile as sf

from airbench_nb.builders import RECIPE_DIR, RecipeError, build, load_recipes
from airbench_nb.builders.cache import cached_build
from airbench_nb.builders.ugbench import (
    SILENCE_FILE,
    UGBENCH_TASKS,
    build_ugbench,
    parse_ugbench_items,
    parse_ugbench_option,
    planned_counts,
)
from airbench_nb.builders.ugbench_recipes import caption_recipe, speech_generation_recipe, translation_recipe
from airbench_nb.manifests import read_manifest
from airbench_nb.prompts import reference_prompt
from airbench_nb.records import CaptionItem, SpeechGenerationItem, TranslationItem
from airbench_nb.synth.music import midi_to_hz
from airbench_nb.synth.scenes import EVENT_CLASSES, SCENES

SR = 16000
UG_TASKS = list(UGBENCH_TASKS)
KINDS = ("translation", "caption", "speech_generation")
DIRECTIONS = {("de", "en"), ("fr", "en"), ("es", "en"), ("it", "en"), ("en", "de")}
SAMPLE = {"speech_translation": 5, "audio_captioning": 6, "music_captioning": 4, "tts": 3, "spoken_answer": 2}


@pytest.fixture(scope="module")
def recipes():
    return load_recipes()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """One translation per direction, one audio caption per scene, four melodies, 3 tts, 2 spoken answers."""
    out = tmp_path_factory.mktemp("ugbench")
    report = build("tiny", seed=0, out=out, tasks=UG_TASKS, ugbench_items=SAMPLE, progress=False)
    items = {kind: read_manifest(out / f"{kind}.jsonl") for kind in KINDS}
    return out, report, items


def _words(text: str) -> int:
    return len([w for w in text.split() if re.search(r"\w", w)])


def _load(out: Path, rel: str) -> np.ndarray:
    x, sr = sf.read(out / rel, dtype="float64")
    assert sr == SR and x.ndim == 1, rel
    return x


@cache
def _espeak_voices(selector: str) -> str:
    return subprocess.run(["espeak-ng", f"--voices={selector}"], capture_output=True, text=True, check=True).stdout


def _voice_exists(voice: str) -> bool:
    """espeak-ng lists the language (as its own or another language) and the variant file (``!v/<variant>``)."""
    language, _, variant = voice.partition("+")
    languages = _espeak_voices(language).splitlines()[1:]
    variants = {line.split()[4] for line in _espeak_voices("variant").splitlines()[1:]}
    return bool(languages) and f"!v/{variant}" in variants


# --- the recipe files --------------------------------------------------------------------------------------------


def test_translation_data_complete(recipes):
    recipe = translation_recipe(recipes)
    assert set(recipe.directions) == DIRECTIONS
    assert len(recipe.sentences) >= 40  # every sentence in every direction: at least 40 per direction
    for sentence in recipe.sentences:
        for language in ("en", "de", "fr", "es", "it"):
            text = sentence[language]
            assert text.strip() == text and 6 <= _words(text) <= 14, (sentence["id"], language, text)
            assert not re.search(r"\d", text), f"{sentence['id']} {language}: numbers are written as words"
            assert text[-1] in ".?!", (sentence["id"], language)
        assert len({sentence[lang] for lang in ("en", "de", "fr", "es", "it")}) == 5, sentence["id"]
    for language in ("en", "de", "fr", "es", "it"):
        assert len({s[language] for s in recipe.sentences}) == len(recipe.sentences)  # no sentence twice
        genders = {v.gender for v in recipe.voices[language]}
        assert genders == {"male", "female"}, language
        assert all(_voice_exists(v.name) for v in recipe.voices[language]), recipe.voices[language]
        assert 80 <= recipe.rates_wpm[language] <= 450
    assert not _voice_exists("zz+m3") and not _voice_exists("de+q9")  # the check can fail


def test_speech_generation_data_complete(recipes):
    from whisper_normalizer.english import EnglishTextNormalizer

    recipe = speech_generation_recipe(recipes)
    normalise = EnglishTextNormalizer()
    assert len(recipe.texts) >= 40 and len(recipe.spoken_answers) >= 10
    assert {t["kind"] for t in recipe.texts} == {"number", "name", "date", "question", "sentence"}
    assert {t["kind"] for t in recipe.texts if t["text"].endswith("?")} == {"question"}
    for entry in recipe.texts:
        assert not re.search(r"\d", entry["text"]), entry["id"]  # numbers as words: Whisper's normaliser maps both
        assert len(normalise(entry["text"]).split()) >= 4, entry["id"]
    for entry in recipe.spoken_answers:
        assert entry["question"].endswith("?") and entry["answers"], entry["id"]
    assert len({t["text"] for t in recipe.texts}) == len(recipe.texts)
    assert all(_voice_exists(v.name) for v in recipe.voices) and {v.gender for v in recipe.voices} == {"male", "female"}
    assert {t["language"] for t in recipe.texts} == {"en", "de"} and recipe.tts_language_cycle == (
        "en",
        "en",
        "en",
        "de",
    )


def test_tts_items_follow_the_language_cycle(recipes):
    """Every fourth tts item is German; each language keeps its own seeded order; "all" takes every text once."""
    from airbench_nb.builders.ugbench import _cycled_texts

    recipe = speech_generation_recipe(recipes)
    twelve = _cycled_texts(recipe, 12, 0)
    assert [t["language"] for t in twelve] == ["en", "en", "en", "de"] * 3
    assert [t["id"] for t in twelve[:2]] == [t["id"] for t in _cycled_texts(recipe, 2, 0)]  # a smaller preset: a prefix
    every = _cycled_texts(recipe, len(recipe.texts), 0)
    assert sorted(t["id"] for t in every) == sorted(t["id"] for t in recipe.texts)  # German used up: English goes on
    with pytest.raises(ValueError, match=r"tts asks for 54 items; the recipe has 53"):
        _cycled_texts(recipe, len(recipe.texts) + 1, 0)


def test_caption_templates_cover_every_class(recipes):
    recipe = caption_recipe(recipes)
    assert 3 <= recipe.references_per_item <= 5
    assert len(recipe.audio.templates) == len(recipe.music.templates) == recipe.references_per_item
    assert set(recipe.audio.scenes) == set(SCENES) and set(recipe.audio.events) == set(EVENT_CLASSES)
    phrases = [p for table in (recipe.audio.scenes, recipe.audio.events) for v in table.values() for p in v.values()]
    assert len(set(phrases)) == len(phrases)  # each phrase names one thing


# --- the built items ---------------------------------------------------------------------------------------------


def test_sample_items_and_manifests(sample):
    out, report, items = sample
    assert report.failures == [] and report.foundation == [] and report.chat == []
    assert items == {k: v for k, v in report.reference_items.items() if k in KINDS}
    tasks = [i.task for kind in KINDS for i in items[kind]]
    assert {t: tasks.count(t) for t in SAMPLE} == SAMPLE
    every = [i for kind in KINDS for i in items[kind]]
    assert len({i.uid for i in every}) == len(every)
    for item in every:
        assert item.dataset == "synthetic" and item.question == reference_prompt(item)
        assert item.audio_sha256 and (out / item.audio).is_file()
    card = json.loads((out / "dataset.json").read_text())
    assert card["counts"]["ugbench"]["items"] == SAMPLE and card["counts"]["ugbench_items"] == SAMPLE


def test_translation_items_speak_their_source(sample, recipes):
    out, _, items = sample
    recipe = translation_recipe(recipes)
    sentences = {s["id"]: s for s in recipe.sentences}
    assert {(i.source_language, i.target_language) for i in items["translation"]} == DIRECTIONS
    for item in items["translation"]:
        assert isinstance(item, TranslationItem)
        sentence = sentences[item.meta["sentence_id"]]
        assert item.source_text == sentence[item.source_language]
        assert item.references == [sentence[item.target_language]]
        assert item.uid == f"ugb-st-{item.source_language}-{item.target_language}-{sentence['id']}"
        assert item.meta["voice"].split("+")[0] == recipe.voices[item.source_language][0].language
        x = _load(out, item.audio)
        assert x[: int(0.15 * SR)].max() == 0.0 and np.sqrt(np.mean(x**2)) > 0.01  # padded, audible speech
        speech, _ = librosa.effects.trim(x, top_db=40)
        nominal = _words(item.source_text) * 60 / item.meta["rate_wpm"]
        assert 0.5 * nominal < speech.size / SR < 1.6 * nominal, (item.uid, speech.size / SR, nominal)


def test_speech_generation_items(sample, recipes):
    out, _, items = sample
    recipe = speech_generation_recipe(recipes)
    texts = {t["id"]: t for t in recipe.texts}
    questions = {q["id"]: q for q in recipe.spoken_answers}
    tts = [i for i in items["speech_generation"] if i.task == "tts"]
    spoken = [i for i in items["speech_generation"] if i.task == "spoken_answer"]
    for item in tts:
        assert isinstance(item, SpeechGenerationItem) and item.text == texts[item.meta["text_id"]]["text"]
        assert item.audio == SILENCE_FILE and item.text in item.question  # the request is in the prompt
    silence = _load(out, SILENCE_FILE)
    assert silence.size == int(recipe.silence_s * SR) and not silence.any()  # digital silence
    for item in spoken:
        entry = questions[item.meta["question_id"]]
        assert item.answers == entry["answers"] and item.text is None
        assert item.meta["spoken_question"] not in item.question  # the question is only in the audio
        speech, _ = librosa.effects.trim(_load(out, item.audio), top_db=40)
        nominal = _words(entry["question"]) * 60 / recipe.rate_wpm
        assert np.sqrt(np.mean(speech**2)) > 0.01 and 0.5 * nominal < speech.size / SR < 1.6 * nominal


def _phrase_positions(text: str, phrases: list[str]) -> list[int]:
    return [text.find(p) for p in phrases]


def test_audio_captions_say_only_what_the_meta_holds(sample, recipes):
    out, _, items = sample
    recipe = caption_recipe(recipes)
    audio = [i for i in items["caption"] if i.task == "audio_captioning"]
    assert {i.meta["scene"] for i in audio} == set(SCENES)  # six clips: every scene once (balanced cycle)
    for item in audio:
        assert isinstance(item, CaptionItem) and len(item.references) == recipe.references_per_item
        assert len(set(item.references)) == len(item.references)  # varied phrasings
        events = [e["event"] for e in item.meta["events"]]
        assert events and [e["onset_s"] for e in item.meta["events"]] == sorted(
            e["onset_s"] for e in item.meta["events"]
        )
        scene = recipe.audio.scenes[item.meta["scene"]]
        for caption in item.references:
            low = caption.lower()
            assert any(scene[k] in low for k in ("place", "at_place", "bed")), caption
            for name, other in recipe.audio.scenes.items():
                if name != item.meta["scene"]:
                    assert not any(p in low for p in other.values()), (caption, name)
            for name, phrases in recipe.audio.events.items():
                if name not in events:
                    assert not any(p in low for p in phrases.values()), (caption, name)
            form = "noun" if recipe.audio.events[events[0]]["noun"] in low else "clause"
            at = _phrase_positions(low, [recipe.audio.events[e][form] for e in events])
            assert -1 not in at and at == sorted(at), (caption, events)  # every event, in the order they sound
        x = _load(out, item.audio)
        spans = [(int(e["onset_s"] * SR), int(e["offset_s"] * SR)) for e in item.meta["events"]]
        bed = np.ones(x.size, bool)
        for on, off in spans:
            bed[on:off] = False
        for on, off in spans:  # each event named is heard: louder than the bed alone
            assert np.sqrt(np.mean(x[on:off] ** 2)) > 1.5 * np.sqrt(np.mean(x[bed] ** 2)), (item.uid, on / SR)


def test_music_captions_match_the_notes_heard(sample, recipes):
    out, _, items = sample
    recipe = caption_recipe(recipes)
    music = [i for i in items["caption"] if i.task == "music_captioning"]
    assert len({i.meta["instrument"] for i in music}) == len(music)  # cycled: four different instruments
    for item in music:
        meta = item.meta
        low_midi, high_midi = recipe.music.registers[meta["register"]]["midi"]
        assert all(low_midi <= m <= high_midi for m in meta["midis"])
        steps = np.diff(meta["midis"])
        assert (steps > 0).all() if meta["direction"] == "ascending" else (steps < 0).all()
        for caption in item.references:
            low = caption.lower()
            assert recipe.music.instruments[meta["instrument"]] in low and meta["tempo"] in low
            others = [p for n, p in recipe.music.instruments.items() if n != meta["instrument"]]
            assert not any(p in low for p in others), caption
            assert not any(t in low for t in recipe.music.tempos_bpm if t != meta["tempo"]), caption
            other_dir = "descending" if meta["direction"] == "ascending" else "ascending"
            assert not any(w in low.split() for w in recipe.music.directions[other_dir].values()), caption
            assert not any(w in low for w in ("happy", "sad", "calm", "cheerful", "gloomy")), caption
        # the notes heard: pyin's median pitch over each note equals its MIDI number
        x = _load(out, item.audio)
        f0, _, _ = librosa.pyin(
            x, fmin=midi_to_hz(low_midi - 3), fmax=midi_to_hz(high_midi + 3), sr=SR, frame_length=2048, hop_length=256
        )
        times = librosa.times_like(f0, sr=SR, hop_length=256)
        bounds = [*meta["onsets_s"], meta["onsets_s"][-1] + 60 / meta["tempo_bpm"]]
        for midi, start, stop in zip(meta["midis"], bounds[:-1], bounds[1:], strict=True):
            inside = (times > start + 0.05) & (times < stop - 0.05)
            heard = librosa.hz_to_midi(np.nanmedian(f0[inside]))
            assert abs(heard - midi) < 0.5, (item.uid, meta["instrument"], midi, heard)


# --- presets, cache, options, errors -------------------------------------------------------------------------------


def test_tiny_preset_builds_the_first_items_of_a_larger_build(sample, tmp_path):
    _, big, _ = sample
    report = build("tiny", seed=0, out=tmp_path, tasks=UG_TASKS, progress=False)
    assert report.ugbench.counts()["items"] == {
        "speech_translation": 2,
        "audio_captioning": 1,
        "music_captioning": 1,
        "tts": 2,
        "spoken_answer": 1,
    }
    larger = {i.uid: i for i in big.ugbench.items}
    for item in report.ugbench.items:  # stable seeded uids, the same audio bytes
        assert item == larger[item.uid], item.uid


def test_presets_plan_the_stated_counts(recipes):
    mini = planned_counts(recipes, recipes.presets["mini"]["ugbench_items"])
    assert mini == {
        "speech_translation": 20,
        "audio_captioning": 6,
        "music_captioning": 6,
        "tts": 12,
        "spoken_answer": 4,
    }
    full = planned_counts(recipes, recipes.presets["ugbench"]["ugbench_items"])
    n_sentences = len(translation_recipe(recipes).sentences)
    assert full["speech_translation"] == 5 * n_sentences and full["tts"] >= 40 and full["spoken_answer"] >= 10
    assert recipes.presets["ugbench"]["foundation_per_task"] == 0 and recipes.presets["ugbench"]["sseu_utterances"] == 0


def test_ugbench_preset_builds_every_text(tmp_path, recipes):
    report = build("ugbench", seed=0, out=tmp_path, tasks=["tts"], progress=False)
    texts = speech_generation_recipe(recipes).texts
    assert sorted(i.meta["text_id"] for i in report.ugbench.speech_generation) == sorted(t["id"] for t in texts)
    assert report.foundation == [] and report.sseu.items == [] and not (tmp_path / "translation.jsonl").exists()
    assert {p.name for p in (tmp_path / "audio/ugbench").iterdir()} == {"silence.wav"}


def test_cache_restores_the_items(tmp_path):
    first = cached_build("tiny", 0, tasks=UG_TASKS, cache_dir=tmp_path, progress=False)
    again = cached_build("tiny", 0, tasks=UG_TASKS, cache_dir=tmp_path, progress=False)
    assert not first.hit and again.hit
    assert again.report.ugbench.by_kind == first.report.ugbench.by_kind
    assert again.report.ugbench.requested == first.report.ugbench.requested
    assert again.report.reference_items == first.report.reference_items


def test_counts_and_option_parsing(recipes):
    assert parse_ugbench_option("speech_translation=4, tts=all") == {"speech_translation": 4, "tts": "all"}
    for bad, message in [
        ("tts", "must be task=count"),
        ("tts=two", "whole number"),
        ("poems=3", "unknown task"),
        ("tts=-1", "whole number >= 0"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_ugbench_option(bad)
    with pytest.raises(ValueError, match="audio_captioning is made from synthesized clips"):
        planned_counts(recipes, {"audio_captioning": "all"})
    with pytest.raises(ValueError, match="asks for 999 items"):
        planned_counts(recipes, {"spoken_answer": 999})
    assert parse_ugbench_items(None) == {} and planned_counts(recipes, {"tts": 0}) == {}


def _broken(tmp_path: Path, name: str, edit) -> Path:
    folder = tmp_path / "recipes"
    shutil.copytree(RECIPE_DIR, folder)
    path = folder / name
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("name", "old", "new", "task", "expected"),
    [
        (
            "translation.json",
            '"fr": "Quatre amis viennent dîner vendredi soir."',
            '"fr": " "',
            "speech_translation",
            r"translation\.json:\d+: sentence 't32': field 'fr': empty text",
        ),
        ("translation.json", '"de+f2"', '"de+q9"', "speech_translation", r"language 'de': field 'voices'"),
        (
            "speech_generation.json",
            '"answers": ["honey"]',
            '"answers": []',
            "spoken_answer",
            r"speech_generation\.json:\d+: spoken answer 'a10': field 'answers'",
        ),
        ("speech_generation.json", '"kind": "date"', '"kind": "poem"', "tts", r"text 'g18': field 'kind'"),
        ("captions.json", "{events_noun} can be heard", "{mood} can be heard", "audio_captioning", r"unknown field"),
        ("captions.json", '"plucked": "a plucked', '"bell": "a plucked', "music_captioning", r"field 'instruments'"),
    ],
)
def test_bad_recipe_line_names_file_line_entry_and_field(tmp_path, name, old, new, task, expected):
    folder = _broken(tmp_path, name, lambda text: text.replace(old, new, 1))
    with pytest.raises(RecipeError, match=expected) as info:
        build_ugbench(tmp_path / "out", seed=0, recipes=load_recipes(folder), items={task: 1})
    message = str(info.value)
    assert message.startswith(str(folder / name)) and "\n" not in message
    line = int(message.split(":")[1])
    assert new in folder.joinpath(name).read_text(encoding="utf-8").splitlines()[line - 1]  # the line it names


def test_one_bad_item_is_counted_not_fatal(tmp_path):
    # a voice espeak-ng does not have: that direction's items fail, counted; the others are built
    folder = _broken(tmp_path, "translation.json", lambda t: t.replace('"it+m3"', '"zz+m3"', 1))
    report = build_ugbench(
        tmp_path / "out", seed=0, recipes=load_recipes(folder), items={"speech_translation": 5}, progress=False
    )
    assert [f["task"] for f in report.failures] == ["speech_translation"]
    assert report.failures[0]["uid"].startswith("ugb-st-it-en-") and "espeak-ng" in report.failures[0]["error"]
    assert len(report.translation) == 4


def test_cli_build_ugbench_items(tmp_path):
    from typer.testing import CliRunner

    from airbench_nb.cli import app

    runner = CliRunner()
    ok = runner.invoke(
        app, ["build", "--preset", "tiny", "--task", "tts", "--ugbench-items", "tts=3", "--out", str(tmp_path / "d")]
    )
    assert ok.exit_code == 0, ok.output
    assert [i.task for i in read_manifest(tmp_path / "d/speech_generation.jsonl")] == ["tts"] * 3
    assert "3 UG-Bench items" in ok.output
    bad = runner.invoke(app, ["build", "--preset", "tiny", "--ugbench-items", "tts=many", "--out", str(tmp_path / "e")])
    assert bad.exit_code == 2 and "tts must be a whole number or 'all'" in bad.output
