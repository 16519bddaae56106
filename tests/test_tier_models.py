"""Tiers B and C as model backends: ``classifier:`` (label mapping) and ``clap:`` (zero-shot), and responses' ranking.

The tiny random models are built offline once per module; the hand computations go through the models' own forward
passes (logits, text and audio features), not through the backends.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.judge.extract import extract_choice
from airbench_nb.manifests import write_manifest
from airbench_nb.models import SpecError, load_model
from airbench_nb.models.base import Generation, GenerationParams, Prompt
from airbench_nb.models.clap import CLAP_PROMPTS, read_clap_prompts
from airbench_nb.models.classifier import AUDIOSET_MAPPING
from airbench_nb.models.label_mapping import LabelMapping, MappingError, MappingRow, read_label_mapping
from airbench_nb.models.tiny.audio_classifier import TINY_CLASSIFIER_MAPPING, build_tiny_audio_classifier
from airbench_nb.models.tiny.clap import build_tiny_clap
from airbench_nb.records import FoundationItem, RankedLabel, Response
from airbench_nb.runner import run_model
from airbench_nb.runner.infer import infer
from airbench_nb.runner.outputs import read_existing

RATE = 16000
CHOICES = ["wail siren", "handbell", "drip", "a barking dog"]
"""Four choices: the tiny classifier's table maps the first three (``handbell`` through two source labels)."""


def _tone(freq: float, seconds: float = 1.0, rate: int = RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _item(uid: str, choices: list[str] = CHOICES, answer: int = 0) -> FoundationItem:
    return FoundationItem(
        uid=uid, task="Sound_AQA", dataset="tones", audio=f"{uid}.wav", question="What is heard?", choices=choices,
        answer=answer,
    )  # fmt: skip


def _prompt(item: FoundationItem, audio: np.ndarray, rate: int = RATE) -> Prompt:
    return Prompt(item=item, text="", audio=audio, audio_path=Path(item.audio), sample_rate=rate)


@pytest.fixture(scope="module")
def clips() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    noise = (0.1 * rng.standard_normal(RATE)).astype(np.float32)
    return [_tone(440.0), _tone(1800.0, 1.5), noise]


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tier-models")
    return {
        "classifier": build_tiny_audio_classifier(root / "ast"),
        "clap": build_tiny_clap(root / "clap"),
    }


@pytest.fixture(scope="module")
def classifier(tiny_dirs: dict[str, Path]):
    model = load_model(f"classifier:{tiny_dirs['classifier']}", kinds="foundation", batch_size=4)
    yield model
    model.close()


@pytest.fixture(scope="module")
def clap(tiny_dirs: dict[str, Path]):
    model = load_model(f"clap:{tiny_dirs['clap']}", kinds="foundation", batch_size=4)
    yield model
    model.close()


def _sorted_best_first(ranking: list[RankedLabel]) -> bool:
    return all(a.score >= b.score for a, b in zip(ranking, ranking[1:], strict=False))


# ------------------------------------------------------------------------------------------------ mapping tables


def test_mapping_ranks_by_best_source_label_in_choice_spelling() -> None:
    mapping = LabelMapping(
        (
            MappingRow("Church bell", "church bell", "exact"),
            MappingRow("Church bell", "handbell", "approximate"),
            MappingRow("Hand bell", "handbell", "exact"),
            MappingRow("Drip", "drip", "exact"),
            MappingRow("Knock", "knock", "exact"),
        )
    )
    scores = {"Church bell": 0.9, "Hand bell": 0.2, "Drip": 0.4, "Knock": 0.95, "Speech": 0.99}
    ranking = mapping.rank(scores, ["Drip", "HandBell", "a dog", "church bell"])
    # handbell gets the better of its two labels (0.9), ties keep choice order; knock is not a choice; a dog unmapped
    assert [(r.label, r.score) for r in ranking] == [("HandBell", 0.9), ("church bell", 0.9), ("Drip", 0.4)]
    assert mapping.unmapped(scores) == ["Speech"]
    assert mapping.only("exact").sources_of("handbell") == ("Hand bell",)
    with pytest.raises(MappingError, match="none of the item's choices"):
        mapping.rank(scores, ["a dog", "a cat"])


def test_mapping_reads_csv_and_json_alike_and_refuses_bad_rows(tmp_path: Path) -> None:
    rows = [{"source_label": "Fire engine, fire truck (siren)", "task_class": "wail siren", "match": "approximate"}]
    (tmp_path / "m.json").write_text(json.dumps(rows))
    (tmp_path / "m.csv").write_text(
        'source_label,task_class,match\n"Fire engine, fire truck (siren)",wail siren,approximate\n'
    )
    assert read_label_mapping(tmp_path / "m.csv").rows == read_label_mapping(tmp_path / "m.json").rows
    (tmp_path / "bad.csv").write_text("source_label,task_class,match\nDrip,drip,exact\nPour,pour,roughly\n")
    with pytest.raises(MappingError, match=r"bad.csv: line 3: match 'roughly' is not one of exact, approximate"):
        read_label_mapping(tmp_path / "bad.csv")
    (tmp_path / "twice.csv").write_text("source_label,task_class,match\nDrip,drip,exact\nDrip,Drip,approximate\n")
    with pytest.raises(MappingError, match="appears twice"):
        read_label_mapping(tmp_path / "twice.csv")
    (tmp_path / "nohead.csv").write_text("source,class\nDrip,drip\n")
    with pytest.raises(MappingError, match="header lacks source_label, task_class, match"):
        read_label_mapping(tmp_path / "nohead.csv")


def test_bundled_tables_read_and_every_mapped_class_has_a_clap_text() -> None:
    mapping = read_label_mapping(AUDIOSET_MAPPING)
    prompts = read_clap_prompts(CLAP_PROMPTS)
    assert {r.match for r in mapping.rows} == {"exact", "approximate"}
    assert len(mapping.classes) >= 12
    assert "Fire engine, fire truck (siren)" in mapping.source_labels  # a label with commas survives the CSV
    missing = [c for c in mapping.classes if c.casefold() not in prompts.label_texts]
    assert missing == []
    assert prompts.texts("dripping water")[0] == "this is a sound of water dripping"
    assert prompts.texts("an unlisted class")[1] == "a sound of an unlisted class"


# ------------------------------------------------------------------------------------------------ classifier:


def test_classifier_ranking_equals_hand_computation_from_logits(classifier, clips) -> None:
    import torch

    items = [_item(f"c{k}") for k in range(len(clips))]
    generations = classifier.generate([_prompt(i, c) for i, c in zip(items, clips, strict=True)], GenerationParams())
    sources: dict[str, list[str]] = {}
    for source, task_class, _ in TINY_CLASSIFIER_MAPPING:
        sources.setdefault(task_class, []).append(source)
    labels = [classifier.model.config.id2label[i] for i in range(classifier.model.config.num_labels)]
    for clip, generation in zip(clips, generations, strict=True):
        assert generation.error is None
        inputs = classifier.extractor([clip], sampling_rate=RATE, return_tensors="pt")
        with torch.no_grad():
            probs = torch.sigmoid(classifier.model(**inputs).logits)[0].numpy()  # multi-label config: sigmoid
        by_label = dict(zip(labels, probs.tolist(), strict=True))
        expected = {c: max(by_label[s] for s in sources[c]) for c in CHOICES[:3]}
        ranking = generation.ranking
        assert [r.label for r in ranking] == sorted(expected, key=lambda c: -expected[c])
        assert [r.score for r in ranking] == pytest.approx([expected[r.label] for r in ranking], abs=1e-6)
        assert _sorted_best_first(ranking) and generation.text == ranking[0].label
    # the scores depend on the audio (random weights wide enough): not every clip gets the same ranking
    assert len({tuple(r.score for r in g.ranking) for g in generations}) == len(clips)
    alone = [classifier.generate([_prompt(_item("x"), c)], GenerationParams())[0] for c in clips]
    assert [[r.label for r in g.ranking] for g in alone] == [[r.label for r in g.ranking] for g in generations]


def test_classifier_resamples_and_fails_only_the_unmappable_item(classifier, clips) -> None:
    at_22k = _tone(440.0, rate=22050)
    prompts = [
        _prompt(_item("ok"), at_22k, rate=22050),
        _prompt(_item("none", ["a barking dog", "a meowing cat"]), clips[0]),
        _prompt(_item("empty"), np.zeros(0, np.float32)),
    ]
    ok, none, empty = classifier.generate(prompts, GenerationParams())
    assert ok.error is None and ok.text in CHOICES[:3] and len(ok.ranking) == 3
    assert "none of the item's choices ('a barking dog', 'a meowing cat') is a task class" in none.error
    assert none.ranking == [] and "empty" in empty.error
    same = classifier.generate([_prompt(_item("ok16"), clips[0])], GenerationParams())[0]
    assert [r.label for r in ok.ranking] == [r.label for r in same.ranking]  # a 440 Hz tone at either rate


def test_classifier_refuses_bad_specs_in_one_line(tiny_dirs: dict[str, Path], tmp_path: Path) -> None:
    folder = tiny_dirs["classifier"]
    unknown = tmp_path / "unknown.csv"
    unknown.write_text("source_label,task_class,match\nDrip,drip,exact\nDripping,drip,exact\n")
    cases = {
        "names 1 label(s) the model does not have ('Drip')": {"mapping": unknown},
        "no such file": {"mapping": tmp_path / "absent.csv"},
        "match='some'": {"match": "some"},
    }
    for expected, options in cases.items():
        with pytest.raises(SpecError) as caught:
            load_model(f"classifier:{folder}", **options)
        assert expected in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(SpecError, match=r"^classifier:/no/such/model: no such folder$"):
        load_model("classifier:/no/such/model")
    # the bundled AudioSet table does not fit the tiny model's made-up labels: refused, naming the table
    with pytest.raises(SpecError, match="audioset_mapping.csv names"):
        load_model(f"classifier:{folder}", mapping=AUDIOSET_MAPPING)


# ------------------------------------------------------------------------------------------------ clap:


def test_clap_ranking_equals_cosine_times_logit_scale(clap, clips) -> None:
    import torch

    items = [_item(f"p{k}") for k in range(len(clips))]
    generations = clap.generate([_prompt(i, c) for i, c in zip(items, clips, strict=True)], GenerationParams())
    model, processor = clap.model, clap.processor
    with torch.no_grad():
        class_vectors = []
        for choice in CHOICES:
            tokens = processor.tokenizer(clap.prompts.texts(choice), padding=True, return_tensors="pt")
            text = model.get_text_features(**tokens)
            text = getattr(text, "pooler_output", text).numpy()
            text /= np.linalg.norm(text, axis=1, keepdims=True)
            mean = text.mean(axis=0)
            class_vectors.append(mean / np.linalg.norm(mean))
        scale = float(model.logit_scale_a.exp())
    for clip, generation in zip(clips, generations, strict=True):
        features = processor.feature_extractor([clip], sampling_rate=RATE, return_tensors="pt")
        with torch.no_grad():
            audio = model.get_audio_features(**features)
        audio = getattr(audio, "pooler_output", audio)[0].numpy()
        cosines = np.array(class_vectors) @ (audio / np.linalg.norm(audio))
        expected = dict(zip(CHOICES, (cosines * scale).tolist(), strict=True))
        assert sorted(r.label for r in generation.ranking) == sorted(CHOICES)  # every choice is ranked
        assert [r.label for r in generation.ranking] == sorted(CHOICES, key=lambda c: -expected[c])
        assert [r.score for r in generation.ranking] == pytest.approx([expected[r.label] for r in generation.ranking])
        assert _sorted_best_first(generation.ranking) and generation.text == generation.ranking[0].label
        assert all(abs(r.score) <= scale + 1e-5 for r in generation.ranking)  # a cosine times the scale


def test_clap_one_template_equals_clap_models_own_logits(tiny_dirs: dict[str, Path], clips, tmp_path: Path) -> None:
    import torch

    one = tmp_path / "one.json"
    one.write_text(json.dumps({"templates": ["the sound of {label}"]}))
    model = load_model(f"clap:{tiny_dirs['clap']}", kinds="foundation", prompts=one)
    generation = model.generate([_prompt(_item("one"), clips[1])], GenerationParams())[0]
    inputs = model.processor(
        text=[f"the sound of {c}" for c in CHOICES], audio=[clips[1]], sampling_rate=RATE, return_tensors="pt",
        padding=True,
    )  # fmt: skip
    with torch.no_grad():
        logits = model.model(**inputs).logits_per_audio[0].numpy()  # what ClapModel itself computes
    by_choice = dict(zip(CHOICES, logits.tolist(), strict=True))
    assert [r.score for r in generation.ranking] == pytest.approx([by_choice[r.label] for r in generation.ranking])


def test_clap_long_clip_crop_is_seeded_and_errors_are_one_line(
    clap, tiny_dirs: dict[str, Path], tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)
    long_clip = (0.2 * rng.standard_normal(5 * RATE)).astype(np.float32)  # longer than the tiny CLAP's 2 s window
    first, second = (clap.generate([_prompt(_item("long"), long_clip)], GenerationParams())[0] for _ in range(2))
    assert [r.score for r in first.ranking] == [r.score for r in second.ranking]
    two = Prompt.of(_item("two"), "", [long_clip, long_clip], [Path("a.wav"), Path("b.wav")])
    assert "takes one clip per prompt; this item has 2" in clap.generate([two], GenerationParams())[0].error
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"templates": ["a sound"]}))
    for options, expected in (
        ({"prompts": bad}, "template 1 ('a sound') has no {label}"),
        ({"prompts": tmp_path / "x.json"}, "no such file"),
    ):
        with pytest.raises(SpecError) as caught:
            load_model(f"clap:{tiny_dirs['clap']}", **options)
        assert expected in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(SpecError, match=r"^clap:/no/such/clap: no such folder$"):
        load_model("clap:/no/such/clap")


# ------------------------------------------------------------------------------------------------ responses


def test_response_ranking_keeps_old_hashes_and_refuses_unsorted() -> None:
    old = {"uid": "u1", "model": "clap:x", "text": "drip", "prompt_hash": "h", "schema_version": 1}
    plain = Response.model_validate(old)  # a line written before the field existed
    assert plain.ranking == []
    import hashlib

    assert plain.content_hash() == hashlib.sha256(json.dumps(["u1", "clap:x", "h", "drip", None]).encode()).hexdigest()
    ranked = plain.model_copy(update={"ranking": [RankedLabel(label="drip", score=2.0)]})
    assert ranked.content_hash() != plain.content_hash()
    with pytest.raises(ValueError, match="not best first: 'b' \\(2\\) ranked after 'a' \\(1\\)"):
        Response(uid="u1", model="m", text="a", ranking=[{"label": "a", "score": 1.0}, {"label": "b", "score": 2.0}])
    with pytest.raises(ValueError, match="names 'a' more than once"):
        Response(uid="u1", model="m", text="a", ranking=[{"label": "a", "score": 1.0}, {"label": "a", "score": 0.0}])


class _Unsorted:
    """A backend returning an unsorted ranking for item ``bad`` and a good one for the others."""

    spec, batch_size, kinds = "fake:unsorted", 4, None

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        good = [RankedLabel(label="drip", score=1.0), RankedLabel(label="handbell", score=0.5)]
        return [Generation(text="drip", ranking=good[::-1] if p.uid == "bad" else good) for p in prompts]

    def close(self) -> None:
        pass


def _manifest(tmp_path: Path, clips: list[np.ndarray], uids: list[str]) -> Path:
    items = [_item(uid) for uid in uids]
    for item, clip in zip(items, clips, strict=True):
        sf.write(tmp_path / item.audio, clip, RATE)
    manifest = tmp_path / "foundation.jsonl"
    write_manifest(manifest, items)
    return manifest


def test_runner_writes_rankings_and_a_bad_one_fails_its_item(tmp_path: Path, clips) -> None:
    manifest = _manifest(tmp_path, clips[:2], ["good", "bad"])
    from airbench_nb.manifests import read_manifest

    summary = run_model(_Unsorted(), read_manifest(manifest), tmp_path, tmp_path / "r.jsonl", progress=False)
    assert (summary.answered, summary.errors) == (1, 1)
    by_uid = {r.uid: r for r in read_existing(tmp_path / "r.jsonl", Response)}
    assert [r.label for r in by_uid["good"].ranking] == ["drip", "handbell"]
    assert by_uid["bad"].ranking == [] and by_uid["bad"].error.startswith("backend: bad ranking: ranking is not best")


def test_infer_writes_ranking_scores_by_choice_text_and_respects_kinds(
    tiny_dirs: dict[str, Path], tmp_path: Path, clips
) -> None:
    """The tiny classifier through ``infer``: responses carry the ranking and the rule extractor reads their text.

    A ranked-list model serves ``sound_source`` items; these are Foundation items, so the run names the kind with the
    ``kinds`` option (``model_options={"kinds": "foundation"}``). Without it every item is not applicable.
    """
    manifest = _manifest(tmp_path, clips, ["a", "b", "c"])
    spec = f"classifier:{tiny_dirs['classifier']}"
    skipped = infer(spec, manifest, tmp_path / "none.jsonl", progress=False)
    assert skipped.not_applicable == {"foundation": 3} and skipped.answered == 0
    summary = infer(spec, manifest, tmp_path / "out.jsonl", progress=False, model_options={"kinds": "foundation"})
    assert (summary.answered, summary.errors) == (3, 0)
    responses = read_existing(tmp_path / "out.jsonl", Response)
    for response in responses:
        assert len(response.ranking) == 3 and response.text == response.ranking[0].label
        assert extract_choice(response.text, CHOICES).choice == CHOICES.index(response.text)
        assert response.generation["backend"]["unmapped_source_labels"] == 2
    written = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert [r["label"] for r in written["ranking"]] == [r.label for r in responses[0].ranking]
