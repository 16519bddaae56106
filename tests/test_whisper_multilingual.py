"""``faster-whisper:`` as a multilingual specialist, on a tiny random Whisper built here (:mod:`tests.whisper_minis`).

What a multilingual checkpoint serves (``applies`` per item), the language table (detected code -> choice, name or
error; item tag -> Whisper code), language identification through CTranslate2's ``detect_language`` (the mini model is
rigged to detect German), ``task="translate"`` reaching the model for X -> en items in both ways of decoding, and the
``asr:`` judge's language handling (an English-only model refuses non-English spoken answers). No real weights.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.judge import load_judge
from airbench_nb.judge.asr import LANGUAGE_REFUSED
from airbench_nb.judge.base import Task
from airbench_nb.models import GeneratedAudio, GenerationParams, Prompt, not_applicable_reason
from airbench_nb.models.faster_whisper import FasterWhisperASR
from airbench_nb.models.languages import NOT_AMONG, choice_for, language_name, whisper_code
from airbench_nb.models.specs import BUNDLED_WHISPER, SpecError
from airbench_nb.records import (
    FoundationItem,
    Response,
    SpeechGenerationItem,
    TranscriptionItem,
    TranslationItem,
)
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import run_model, write_response_audio
from tests.whisper_minis import build_multilingual

BASE = {"dataset": "synthetic", "audio": "audio/c.wav", "question": "Which language?"}


def _lid(uid: str, choices: list[str], answer: int = 0) -> FoundationItem:
    return FoundationItem(uid=uid, task="Spoken_Language_Identification", choices=choices, answer=answer, **BASE)


def _translation(uid: str, source: str, target: str) -> TranslationItem:
    return TranslationItem(
        uid=uid, task="speech_translation", source_language=source, target_language=target, references=["x"], **BASE
    )


def _transcription(uid: str, language: str) -> TranscriptionItem:
    return TranscriptionItem(uid=uid, task="sseu_transcription", reference="x", language=language, **BASE)


GENDER = FoundationItem(uid="g", task="Speaker_Gender_Recognition", choices=["male", "female"], answer=0, **BASE)


@pytest.fixture(scope="module")
def mini_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random multilingual Whisper (CTranslate2), rigged to detect German; built once (a few seconds)."""
    return build_multilingual(tmp_path_factory.mktemp("whisper-mini") / "model", language="de")


@pytest.fixture(scope="module")
def mini(mini_folder: Path):
    model = FasterWhisperASR(str(mini_folder), batch_size=4, cpu_threads=1)
    yield model
    model.close()


@pytest.fixture(scope="module")
def english_only():
    model = FasterWhisperASR(BUNDLED_WHISPER, batch_size=2, cpu_threads=1)
    yield model
    model.close()


def _prompt(item, seconds: float = 1.0) -> Prompt:
    rng = np.random.default_rng(len(item.uid))
    audio = (0.1 * rng.standard_normal(int(16000 * seconds))).astype(np.float32)
    return Prompt(item=item, text="", audio=audio, audio_path=Path("c.wav"))


# ------------------------------------------------------------------------------------------- the language table


def test_language_table_maps_codes_onto_choices_by_name():
    assert choice_for("de", ["english", "GERMAN ", "French"]).reply == "B) GERMAN "  # as the item spells it
    assert choice_for("es", ["Castilian", "French"]).reply == "A) Castilian"  # Whisper's own alias
    assert choice_for("zh", ["English", "German", "French", "Chinese"]).reply == "D) Chinese"
    missing = choice_for("nl", ["English", "German"])
    assert (missing.text, missing.index, missing.error) == ("Dutch", None, None)
    assert missing.reply == NOT_AMONG.format(name="Dutch") == "detected: Dutch (not among the choices)"
    unknown = choice_for("xx", ["English", "German"])
    assert unknown.reply is None and unknown.error == "Whisper detected language code 'xx', which the table cannot name"
    twice = choice_for("nl", ["Dutch", "Flemish"])
    assert twice.reply is None and "'Dutch', 'Flemish' all name" in (twice.error or "")
    assert language_name("haw") == "Hawaiian" and language_name("xx") is None
    tags = {"en-us": "en", "de": "de", "zh_CN": "zh", "jv": "jw", "iw": "he", "haw": "haw", "nb": "no", "xx": None}
    assert {tag: whisper_code(tag) for tag in tags} == tags


def test_a_not_among_reply_is_wrong_in_strict_and_unread_in_official():
    from airbench_nb.judge.extract import extract_choice, official_extract

    choices = ["English", "German", "French", "Chinese"]
    reply = choice_for("ar", choices).reply  # Arabic: a bare "Arabic" would be read as A by the official script
    assert extract_choice(reply, choices).choice is None and official_extract(reply, choices).choice is None
    right = choice_for("zh", choices).reply
    assert extract_choice(right, choices).choice == 3 and official_extract(right, choices).choice == 3


# ------------------------------------------------------------------------------------------- what it answers


def test_multilingual_checkpoint_serves_lid_translation_into_english_and_transcription(mini, english_only):
    assert mini.multilingual and mini.kinds == frozenset({"transcription", "translation", "foundation"})
    assert "de" in mini.languages and "yue" not in mini.languages  # the mini model has tiny.en's 99 language tokens
    assert not_applicable_reason(mini, _lid("l", ["German", "French"])) is None
    assert not_applicable_reason(mini, GENDER) == (
        f"{mini.spec} answers only Spoken_Language_Identification among Foundation tasks (language detection)"
    )
    assert not_applicable_reason(mini, _translation("t", "de", "en")) is None
    assert not_applicable_reason(mini, _translation("t", "en", "de")) == (
        f"{mini.spec} translates into English only (Whisper's translate task)"
    )
    assert not_applicable_reason(mini, _transcription("s", "xx")) is None  # answered: the item's error, not n/a
    assert not english_only.multilingual and english_only.kinds == frozenset({"transcription"})
    assert (
        not_applicable_reason(english_only, _lid("l", ["German", "French"]))
        == f"{english_only.spec} does not serve foundation items"
    )
    assert not_applicable_reason(english_only, _translation("t", "de", "en")) is not None
    assert mini.settings["multilingual"] is True and "translation" in mini.settings


def test_base_bundled_without_weights_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRBENCH_WEIGHTS", str(tmp_path))
    with pytest.raises(SpecError) as caught:
        FasterWhisperASR("base-bundled")
    assert "\n" not in str(caught.value) and "airbench-nb weights fetch whisper-base" in str(caught.value)


# ------------------------------------------------------------------------------------------- language ID


def test_language_identification_maps_the_detected_language(mini, monkeypatch):
    items = [_lid("l1", ["English", "german", "French"], 1), _lid("l2", ["English", "French"]), _lid("l3", ["A", "B"])]
    out = mini.generate([_prompt(i) for i in items], GenerationParams())
    assert out[0].text == "B) german" and out[0].error is None
    assert out[0].ranking[0].label == "de" and 0 < out[0].ranking[0].score <= 1 and len(out[0].ranking) == 5
    assert [r.score for r in out[0].ranking] == sorted((r.score for r in out[0].ranking), reverse=True)
    assert out[1].text == "detected: German (not among the choices)" and out[1].error is None
    assert out[2].text == "detected: German (not among the choices)"
    from airbench_nb.models import languages

    monkeypatch.delitem(languages.WHISPER_LANGUAGES, "de")  # a code the table cannot name
    (unnamed,) = mini.generate([_prompt(items[0])], GenerationParams())
    assert unnamed.text is None and unnamed.error == (
        f"{mini.spec}: Whisper detected language code 'de', which the table cannot name (l1)"
    )


# ------------------------------------------------------------------------------------------- translate, languages


def _spy(monkeypatch, target, name: str, calls: list):
    original = getattr(target, name)

    def spy(*args, **kwargs):
        calls.append((kwargs["task"], kwargs["language"]))
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, spy)


@pytest.mark.parametrize("batch_size", [4, 1])
def test_translate_and_the_item_language_reach_the_model(mini, monkeypatch, batch_size):
    calls: list[tuple[str, str]] = []
    _spy(monkeypatch, mini.pipeline, "transcribe", calls)
    _spy(monkeypatch, mini.model, "transcribe", calls)
    monkeypatch.setattr(mini, "batch_size", batch_size)
    items = [_translation("t1", "de", "en"), _transcription("s1", "fr-FR"), _transcription("s2", "xx")]
    out = mini.generate([_prompt(i) for i in items], GenerationParams(max_new_tokens=8))
    assert sorted(set(calls)) == [("transcribe", "fr"), ("translate", "de")]
    assert out[0].error is None and out[1].error is None  # the rigged decoder ends at once: empty texts
    assert out[2].text is None and out[2].error == f"{mini.spec}: Whisper knows no language 'xx' (s2)"


def test_runner_counts_what_a_multilingual_whisper_does_not_answer(mini, tmp_path):
    (tmp_path / "audio").mkdir()
    sf.write(tmp_path / "audio" / "c.wav", (0.1 * np.sin(np.arange(16000) / 5)).astype(np.float32), 16000)
    items = [
        _lid("l1", ["German", "French"]),
        GENDER,
        _translation("t1", "de", "en"),
        _translation("t2", "en", "de"),
        _transcription("s1", "de"),
    ]
    summary = run_model(mini, items, tmp_path, tmp_path / "r.jsonl", progress=False)
    assert summary.served == {"foundation": 1, "translation": 1, "transcription": 1}
    assert summary.not_applicable == {"foundation": 1, "translation": 1} and summary.errors == 0
    from airbench_nb.manifests import read_records

    lid = next(r for r in read_records(tmp_path / "r.jsonl", Response) if r.uid == "l1")
    assert lid.text == "A) German" and lid.ranking[0].label == "de"


# ------------------------------------------------------------------------------------------- the asr: judge


def _spoken_task(tmp_path: Path, language: str) -> Task:
    folder = RunFolder(tmp_path)
    speech = (0.3 * np.sin(2 * np.pi * 220 * np.arange(16000) / 16000)).astype(np.float32)
    item = SpeechGenerationItem(uid=f"tts-{language}", task="tts", text="Guten Tag", language=language, **BASE)
    audio = write_response_audio(folder, "tts:espeak-ng", item.uid, GeneratedAudio(speech, 16000))
    return Task(item, Response(uid=item.uid, model="tts:espeak-ng", audio=audio), run_folder=folder)


def test_asr_judge_refuses_a_language_an_english_only_model_cannot_transcribe(english_only, tmp_path, monkeypatch):
    judge = load_judge(f"asr:faster-whisper:{BUNDLED_WHISPER}")
    monkeypatch.setattr(judge, "_model", english_only)
    calls: list = []
    monkeypatch.setattr(english_only, "generate", lambda prompts, params: calls.append(prompts) or [])
    german = _spoken_task(tmp_path / "de", "de")
    (verdict,) = judge.ask([german], batch_file=tmp_path / "b.jsonl")
    assert verdict.parse_error == (
        f"{LANGUAGE_REFUSED}: faster-whisper:{BUNDLED_WHISPER} is English-only: it cannot transcribe speech in 'de'"
    )
    assert verdict.raw is None and calls == []  # the model is asked for nothing
    assert english_only.language_problem("en-us") is None


def test_asr_judge_transcribes_in_the_answer_language_with_a_multilingual_model(mini, tmp_path, monkeypatch):
    judge = load_judge(f"asr:faster-whisper:{mini.path}")
    monkeypatch.setattr(judge, "_model", mini)
    calls: list[tuple[str, str]] = []
    _spy(monkeypatch, mini.pipeline, "transcribe", calls)
    _spy(monkeypatch, mini.model, "transcribe", calls)
    verdicts = judge.ask(
        [_spoken_task(tmp_path / "de", "de"), _spoken_task(tmp_path / "xx", "xx")], batch_file=tmp_path / "b.jsonl"
    )
    assert verdicts[0].parse_error is None and verdicts[0].raw == ""  # the rigged decoder writes nothing
    assert calls == [("transcribe", "de")]
    assert verdicts[1].parse_error == f"{LANGUAGE_REFUSED}: {mini.spec}: Whisper knows no language 'xx'"
