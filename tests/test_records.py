import pytest
from pydantic import ValidationError

from airbench_nb.records import (
    CHAT_TASKS,
    FOUNDATION_TASKS,
    SCHEMA_VERSION,
    AnnotationPair,
    ChatItem,
    ChatTurn,
    FoundationItem,
    Label,
    MixMeta,
    Record,
    Response,
    RunInfo,
    UnknownTaskError,
    Verdict,
    chat_category,
    foundation_category,
)


def _foundation(**kw):
    base = dict(
        uid="u1",
        dataset="synthetic",
        audio="a/b.wav",
        question="Q?",
        task="Speaker_Gender_Recognition",
        choices=["male", "female"],
        answer=1,
    )
    base.update(kw)
    return FoundationItem(**base)


def test_official_task_counts_and_categories():
    assert len(FOUNDATION_TASKS) == 19
    cats = [FOUNDATION_TASKS[t] for t in FOUNDATION_TASKS]
    assert (cats.count("speech"), cats.count("sound"), cats.count("music")) == (9, 4, 6)
    assert len(CHAT_TASKS) == 8
    assert [t for t, c in CHAT_TASKS.items() if c == "mixed"] == ["speech_and_sound_QA", "speech_and_music_QA"]
    # official misspellings are kept
    assert foundation_category("Speaker_Emotion_Recontion") == "speech"
    assert foundation_category("Music_Instruments_Classfication") == "music"
    assert foundation_category("vocal_sound_classification") == "sound"
    assert chat_category("music_generation_analysis_QA") == "music"


def test_unknown_task_lists_valid_names():
    with pytest.raises(UnknownTaskError) as err:
        foundation_category("Speaker_Emotion_Recognition")
    assert "Speaker_Emotion_Recontion" in str(err.value) and "Music_AQA" in str(err.value)
    with pytest.raises(ValidationError, match="valid task names are"):
        _foundation(task="Speaker_Emotion_Recognition")
    with pytest.raises(ValidationError, match="speech_dialogue_QA"):
        ChatItem(uid="c", dataset="d", audio="x.wav", question="q", task="chat_QA", reference="r", meta_info="m")


def test_category_derived_and_checked():
    item = _foundation()
    assert item.category == "speech" and item.schema_version == SCHEMA_VERSION
    assert item.answer_letter == "B"
    with pytest.raises(ValidationError, match="does not match task"):
        _foundation(category="music")
    chat = ChatItem(
        uid="c", dataset="d", audio="x.wav", question="q", task="speech_and_sound_QA", reference="r", meta_info="m"
    )
    assert chat.category == "mixed" and chat.mix is None


@pytest.mark.parametrize(
    ("choices", "answer", "message"),
    [
        (["only"], 0, "at least 2"),
        ([f"option {i}" for i in range(27)], 0, "at most 26"),
        (["a", "b"], 2, "not an index"),
        (["a", "b"], -1, "not an index"),
        (["a", "A"], 0, "distinct"),
        (["a", " "], 0, "empty"),
    ],
)
def test_choices_and_answer_validated(choices, answer, message):
    with pytest.raises(ValidationError, match=message):
        _foundation(choices=choices, answer=answer)


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.wav", "a/../../x.wav", "C:/x.wav", "a\\b.wav", "", "  "])
def test_audio_path_must_stay_in_root(path):
    with pytest.raises(ValidationError, match="audio"):
        _foundation(audio=path)


def test_audio_path_normalised():
    assert _foundation(audio="./a/./b.wav").audio == "a/b.wav"


def test_unknown_fields_rejected():
    with pytest.raises(ValidationError, match="extra"):
        _foundation(colour="red")


def test_every_field_has_a_docstring():
    for model in (FoundationItem, ChatItem, MixMeta, Response, Verdict, RunInfo):
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name} has no docstring"


def test_roundtrip_json():
    item = _foundation(meta={"f0": 110.5})
    assert FoundationItem.model_validate_json(item.model_dump_json()) == item


def _record_classes() -> list[type]:
    """Every record class of ``airbench_nb.records`` (the subclasses of ``Record``, and ``ChatTurn``)."""
    found, todo = [], [Record]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__.startswith("airbench_nb.records.")] + [ChatTurn]


def test_every_bool_field_of_every_record_is_strict():
    """A bool field takes true or false only: "yes", 1, "true", 0 and "off" are refused, naming the field."""
    bool_fields = [
        (cls, name)
        for cls in _record_classes()
        for name, info in cls.model_fields.items()
        if "bool" in str(info.annotation)
    ]
    assert {(cls.__name__, name) for cls, name in bool_fields} >= {
        ("Verdict", "correct"),
        ("Verdict", "cached"),
        ("AnnotationPair", "show_judge"),
        ("Label", "unclear"),
    }
    for cls, name in bool_fields:
        for bad in ("yes", 1, "true", 0, "off", 1.0):
            with pytest.raises(ValidationError, match=rf"(?s)^.*\n{name}\n.*expected true or false"):
                cls.__pydantic_validator__.validate_assignment(cls.model_construct(), name, bad)


def test_strict_bools_in_json_lines_and_constructors():
    verdict = Verdict(uid="u1", model="m", judge="rule", correct=True, cached=False)
    assert verdict.correct is True and verdict.cached is False
    line = verdict.model_dump(mode="json")
    for field in ("correct", "cached"):
        for bad in ("yes", 1, "false"):
            with pytest.raises(ValidationError, match=rf"\n{field}\n"):
                Verdict.model_validate({**line, field: bad})
    with pytest.raises(ValidationError, match=r"\nunclear\n.*expected true or false, got str 'no'"):
        Label(pair_id="m|u1", annotator="a", unclear="no")
    assert Verdict(uid="u1", model="m", judge="rule", correct=None).correct is None
    import numpy as np

    assert Verdict(uid="u1", model="m", judge="rule", correct=np.bool_(True)).correct is True  # from numpy scoring
    assert AnnotationPair.model_fields["show_judge"].default is False
