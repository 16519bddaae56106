"""Audio-reliance controls: the derived items are measured on their audio, the statistics on planted outcomes.

Built data (one module fixture, about 4 s): 8 gender and 8 speaker-number Foundation items and 2 sound Chat
items, each with its five controls; the kit's baselines answer them through the kit's runner.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter

import numpy as np
import pytest
import soundfile as sf

from airbench_nb.analysis.controls import (
    ControlOutcome,
    controls_results,
    outcomes_of,
)
from airbench_nb.audio import loudness, sha256_file
from airbench_nb.builders import build, load_recipes
from airbench_nb.builders.controls import (
    CONTROL_KEY,
    CONTROL_OF_KEY,
    CONTROL_TEXT_KEY,
    CONTROLS,
    DONOR_KEY,
    ControlsPart,
    build_controls,
    control_uid,
    derangement,
    parse_controls,
)
from airbench_nb.judge.extract import extract_choice
from airbench_nb.manifests import read_records
from airbench_nb.models import load_model
from airbench_nb.models.baselines import text_prior_answer
from airbench_nb.records import Response, control_question, prompt_without_audio
from airbench_nb.runner import run_model
from airbench_nb.scoring.run import CONTROL_KEY as SCORING_CONTROL_KEY

TASKS = ["Speaker_Gender_Recognition", "Speaker_Number_Verification", "sound_QA"]
PER_TASK = 8


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """8 items of two speech tasks and 2 sound Chat items, with every control; the clip of item 007 of the gender
    task overwritten with item 006's bytes, so that two items share a clip."""
    root = tmp_path_factory.mktemp("controls")
    recipes = root / "recipes"
    shutil.copytree(load_recipes().folder, recipes)
    presets = json.loads((recipes / "presets.json").read_text())
    presets["ctltest"] = {"foundation_per_task": PER_TASK, "chat_per_task": 2}
    (recipes / "presets.json").write_text(json.dumps(presets))
    out = root / "data"
    report = build(
        "ctltest",
        seed=0,
        out=out,
        tasks=TASKS,
        recipe_dir=recipes,
        progress=False,
        snr_grid=[],
        circular_items_per_task=0,
    )
    by_uid = {i.uid: i for i in report.foundation}
    twin, same = by_uid["Speaker_Gender_Recognition-007"], by_uid["Speaker_Gender_Recognition-006"]
    shutil.copyfile(out / same.audio, out / twin.audio)
    originals = [*report.foundation, *report.chat]  # the twin's manifest hash is stale: controls hash the files
    made = build_controls(originals, out, seed=0)
    return out, originals, made


def test_every_control_is_a_derived_copy_of_its_original(built):
    out, originals, made = built
    by_uid = {i.uid: i for i in originals}
    assert made.failures == []
    assert Counter(i.meta[CONTROL_KEY] for i in made.items) == {
        "silence": 2 * PER_TASK + 2,
        "noise": 2 * PER_TASK + 2,
        "mismatched": 2 * PER_TASK + 2,
        "no_audio": 2 * PER_TASK + 2,
        "description": 2,  # only the Chat items carry a description (meta_info)
    }
    for item in made.items:
        original = by_uid[item.meta[CONTROL_OF_KEY]]
        assert (
            item.uid
            == control_uid(original.uid, item.meta[CONTROL_KEY])
            == f"{original.uid}@ctl-{item.meta['control']}"
        )
        assert type(item) is type(original)
        assert (item.task, item.question, item.dataset) == (original.task, original.question, original.dataset)
        if item.kind == "foundation":
            assert (item.choices, item.answer) == (original.choices, original.answer)
        assert item.audio_sha256 == sha256_file(out / item.audio)  # the hash is the written file's
        assert {k: item.meta[k] for k in original.meta} == original.meta
        assert prompt_without_audio(item) == (item.meta[CONTROL_KEY] in ("no_audio", "description"))
        if prompt_without_audio(item):  # a runner unaware of the marker sends silence, never the original
            silent, _ = sf.read(out / item.audio)
            assert not np.any(silent)
    not_eligible = Counter((n.control, n.uid.split("-")[0]) for n in made.not_eligible)
    assert not_eligible == {
        ("description", "Speaker_Gender_Recognition"): PER_TASK,
        ("description", "Speaker_Number_Verification"): PER_TASK,
    }


def test_silence_and_noise_have_the_original_length_and_noise_its_loudness(built):
    out, originals, made = built
    by_uid = {i.uid: i for i in originals}
    worst = 0.0
    for item in made.items:
        if item.meta[CONTROL_KEY] not in ("silence", "noise"):
            continue
        original, info = sf.info(out / by_uid[item.meta[CONTROL_OF_KEY]].audio), sf.info(out / item.audio)
        assert (info.frames, info.samplerate) == (original.frames, original.samplerate), item.uid
        samples, sr = sf.read(out / item.audio, dtype="float64")
        if item.meta[CONTROL_KEY] == "silence":
            assert not np.any(samples)
            continue
        reference, _ = sf.read(out / by_uid[item.meta[CONTROL_OF_KEY]].audio, dtype="float64")
        target = loudness(reference, sr)
        measured = loudness(samples, sr, unit=target.unit)
        assert abs(measured.value - target.value) <= 0.5, (item.uid, target, measured)
        worst = max(worst, abs(measured.value - target.value))
        assert np.corrcoef(samples, reference)[0, 1] ** 2 < 0.01  # noise, not the clip
    assert worst < 0.05  # measured: 16-bit rounding only


def test_mismatched_never_hands_an_item_its_own_audio(built):
    out, originals, made = built
    by_uid = {i.uid: i for i in originals}
    mismatched = [i for i in made.items if i.meta[CONTROL_KEY] == "mismatched"]
    assert len(mismatched) == len(originals)
    donors = Counter()
    for item in mismatched:
        original, donor = by_uid[item.meta[CONTROL_OF_KEY]], by_uid[item.meta[DONOR_KEY]]
        assert donor.uid != original.uid and donor.task == original.task
        assert item.audio == donor.audio != original.audio
        assert sha256_file(out / item.audio) != sha256_file(out / original.audio)  # not even the twin's equal bytes
        donors[donor.uid] += 1
    assert set(donors.values()) == {1}  # a permutation: every clip given once


def test_derangement_for_every_seed():
    """200 seeds, each with its own number of items and pattern of repeated clips."""
    for seed in range(200):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 30))
        keys = [str(k) for k in rng.integers(0, max(2, n // 2), size=n)]  # repeated clips, by chance
        if len(set(keys)) == 1:
            keys[0] = "other"
        donors = derangement(keys, seed, "task")
        largest = max(Counter(keys).values())
        given = [d for d in donors if d is not None]
        assert len(set(given)) == len(given), seed  # each clip given at most once
        for i, d in enumerate(donors):
            if d is not None:
                assert d != i and keys[d] != keys[i], seed
        assert sum(d is None for d in donors) == max(0, 2 * largest - n), seed  # the surplus of a clip held by most
        assert derangement(keys, seed, "task") == donors  # seeded


def test_derangement_fallback_and_no_donor():
    keys = ["a"] * 5 + ["b"] * 5  # half the items share each clip: random cycles rarely avoid them, the shift does
    donors = derangement(keys, 3, "t")
    assert all(d is not None and keys[d] != keys[i] for i, d in enumerate(donors))
    assert derangement(["a", "a", "a"], 0) == [None, None, None]
    assert derangement(["a"], 0) == [None]


def test_description_control_and_names():
    assert parse_controls("silence, noise") == ["silence", "noise"] and parse_controls(None) == []
    with pytest.raises(ValueError, match="unknown control 'hum'"):
        parse_controls(["hum"])
    with pytest.raises(ValueError, match="given twice"):
        parse_controls("silence,silence")
    assert SCORING_CONTROL_KEY == CONTROL_OF_KEY
    assert set(CONTROLS) == {"silence", "noise", "mismatched", "no_audio", "description"}


def test_description_is_the_chat_meta_info(built):
    _, originals, made = built
    for item in (i for i in made.items if i.meta[CONTROL_KEY] == "description"):
        original = next(o for o in originals if o.uid == item.meta[CONTROL_OF_KEY])
        assert item.meta[CONTROL_TEXT_KEY] == original.meta_info.strip()
        assert control_question(item).endswith(item.question) and original.meta_info.strip() in control_question(item)


def test_controls_are_left_out_of_the_score_tables(built):
    from airbench_nb.scoring.run import score_run

    out, originals, made = built
    foundation = [i for i in originals if i.kind == "foundation"]
    controls = [i for i in made.items if i.kind == "foundation"]
    responses = [Response(uid=i.uid, model="baseline:oracle", text=i.answer_letter) for i in [*foundation, *controls]]
    alone = score_run(foundation, responses, reps=0, model="baseline:oracle").as_dict()
    both = score_run([*foundation, *controls], responses, reps=0, model="baseline:oracle").as_dict()
    assert alone == both
    tasks = both["strict"]["foundation"]["tasks"]
    assert {t: tasks[t]["n"] for t in tasks} == {t: PER_TASK for t in TASKS[:2]}  # the originals alone


@pytest.fixture(scope="module")
def answered(built):
    """The oracle, text-prior and DSP baselines through the kit's runner, on every Foundation item and control (DSP:
    but noise)."""
    out, originals, made = built
    items = [i for i in [*originals, *made.items] if i.kind == "foundation"]
    correct: dict[str, dict[str, bool]] = {}
    texts: dict[str, dict[str, str]] = {}
    for spec in ("baseline:oracle", "baseline:text-prior", "baseline:dsp"):
        path = out / f"{spec.split(':')[1]}.jsonl"
        asked = items
        if spec == "baseline:dsp":  # pyin on 16 noise clips takes 3 s
            asked = [i for i in items if i.meta.get(CONTROL_KEY) != "noise"]
        summary = run_model(load_model(spec), asked, out, path, progress=False)
        texts[spec] = {r.uid: r.text for r in read_records(path, Response)}
        unasked = {i.uid for i in asked if i.meta.get(CONTROL_KEY) == "no_audio"} if spec == "baseline:dsp" else set()
        assert summary.not_applicable == ({"foundation": len(unasked)} if unasked else {})  # dsp needs the audio
        assert set(texts[spec]) == {i.uid for i in asked} - unasked
        correct[spec] = {
            i.uid: extract_choice(t, i.choices).choice == i.answer for i in asked if (t := texts[spec].get(i.uid))
        }
        correct[spec] |= dict.fromkeys(unasked)  # n/a: no outcome
    outcomes = [o for spec in correct for o in outcomes_of(items, correct[spec], spec)]
    return items, texts, controls_results(outcomes, reps=2000, seed=0)


def _result(results, model, task=None):
    return next(r for r in results if r.model == model and r.task == task)


def test_text_prior_model_needs_no_audio(answered):
    items, texts, results = answered
    answers = texts["baseline:text-prior"]
    for item in items:  # unchanged under every control by construction
        original = item.meta.get(CONTROL_OF_KEY, item.uid)
        assert answers[item.uid] == answers[original] == text_prior_answer(item)
    for result in (r for r in results if r.model == "baseline:text-prior"):
        assert result.audio_needed.value == 0.0
        assert result.audio_needed.low <= 0.0 <= result.audio_needed.high
        assert all(c.difference.value == 0.0 for c in result.controls)
        assert result.corrected.value in (0.0, None)


def test_dsp_needs_the_audio_and_collapses_under_silence(answered):
    _, _, results = answered
    pooled = _result(results, "baseline:dsp")
    assert [c.control for c in pooled.controls] == ["silence", "mismatched"]
    assert set(pooled.not_answered) == {"noise", "no_audio"}  # noise: not run here
    assert "cannot be prompted without audio" in pooled.not_answered["no_audio"]
    assert "not run" in pooled.not_answered["noise"]
    assert pooled.n == 2 * PER_TASK and pooled.score.value >= 0.9
    assert pooled.needed_under == ["silence", "mismatched"]
    assert pooled.audio_needed.value >= 0.3 and pooled.audio_needed.excludes(0.0)
    silence = next(c for c in pooled.controls if c.control == "silence")
    assert silence.score == 0.0 and silence.difference.excludes(0.0)  # pyin finds no voice: it cannot tell
    assert pooled.corrected.value > 0.5 and pooled.corrected.excludes(0.0)
    oracle = _result(results, "baseline:oracle")
    assert oracle.score.value == 1.0 and all(c.score == 1.0 for c in oracle.controls)
    assert oracle.audio_needed.value == 0.0 and oracle.corrected.value is None and "prior is 1" in oracle.corrected_why


def test_statistics_on_planted_outcomes():
    """100 items: right with the audio on 80, under silence on 20 of those 80 and 10 of the 20 others."""
    outcomes = []
    for k in range(100):
        audio = k < 80
        silence = k < 20 or 80 <= k < 90
        mismatched = k < 40
        uid = f"i{k:03d}"
        outcomes += [
            ControlOutcome("m", "t", uid, None, float(audio)),
            ControlOutcome("m", "t", uid, "silence", float(silence)),
            ControlOutcome("m", "t", uid, "mismatched", float(mismatched)),
        ]
    outcomes.append(ControlOutcome("m", "t", "i999", "silence", 1.0))  # a control without its original: no pair
    (result,) = controls_results(outcomes, reps=4000, seed=1)
    assert result.n == 100 and result.score.value == pytest.approx(0.8)
    by = {c.control: c for c in result.controls}
    assert by["silence"].score == pytest.approx(0.3) and by["silence"].difference.value == pytest.approx(-0.5)
    assert by["mismatched"].difference.value == pytest.approx(-0.4)
    # paired: the difference's interval is about 0.5 +- 2 sqrt(var(d)/n), with var(d) = 0.7 - 0.25 = 0.45
    half = 1.96 * np.sqrt(0.45 / 100)
    assert by["silence"].difference.low == pytest.approx(-0.5 - half, abs=0.03)
    assert by["silence"].difference.high == pytest.approx(-0.5 + half, abs=0.03)
    # right with the audio, wrong under silence and mismatched: items 40..79
    assert result.audio_needed.value == pytest.approx(0.4) and result.audio_needed_of_right == pytest.approx(0.5)
    assert result.audio_needed.low == pytest.approx(0.4 - 1.96 * np.sqrt(0.24 / 100), abs=0.03)
    assert result.text_prior.value == pytest.approx(0.4) and result.text_prior_control == "mismatched"
    assert result.corrected.value == pytest.approx((0.8 - 0.4) / (1 - 0.4))


def test_outcomes_are_checked():
    with pytest.raises(ValueError, match="unknown control 'hum'"):
        controls_results([ControlOutcome("m", "t", "a", "hum", 1.0)])
    with pytest.raises(ValueError, match=r"correct 2.0 not in \[0, 1\]"):
        controls_results([ControlOutcome("m", "t", "a", None, 2.0)])
    with pytest.raises(ValueError, match="two outcomes of m on a under silence"):
        controls_results([ControlOutcome("m", "t", "a", "silence", 1.0)] * 2)
    n_a = [ControlOutcome("m", "t", "a", None, 1.0), ControlOutcome("m", "t", "a", "no_audio", None)]
    (result,) = controls_results(n_a, reps=10)
    assert result.controls == [] and result.text_prior is None and result.audio_needed is None


def made_silence(out, originals):
    """An item whose clip is all zero (the silence control of the first original, as an item of its own)."""
    (control,) = build_controls(originals[:1], out, seed=0, controls=["silence"]).items
    meta = {k: v for k, v in control.meta.items() if k not in (CONTROL_OF_KEY, CONTROL_KEY)}
    return [control.model_copy(update={"uid": "silent-000", "meta": meta})]


def test_builder_part_and_a_failing_clip(built, tmp_path):
    from airbench_nb.builders.parts import BuildContext, PartResult

    out, originals, _ = built
    part = ControlsPart()
    assert part.resolve({}, {}) == {"controls": list(CONTROLS), "controls_items_per_task": 0}  # off by default
    assert part.resolve({"controls": "none"}, {"controls_items_per_task": None}) == {
        "controls": [],
        "controls_items_per_task": None,
    }
    with pytest.raises(ValueError, match="controls_items_per_task must be"):
        part.resolve({"controls": "silence"}, {"controls_items_per_task": -1})
    options = part.resolve({"controls": "silence,mismatched"}, {"controls_items_per_task": 2})
    earlier = {"airbench": PartResult(items={"foundation": [i for i in originals if i.kind == "foundation"]})}
    result = part.build(BuildContext(out, "x", 0, load_recipes(), frozenset(), options, earlier))
    assert [i.uid for i in result.items["foundation"]] == [
        f"{task}-{k:03d}@ctl-{name}" for task in TASKS[:2] for k in (0, 1) for name in ("silence", "mismatched")
    ]
    assert result.card["controls_not_eligible"] == 0
    alone = part.resolve({"controls": "silence,mismatched"}, {"controls_items_per_task": 1})
    single = part.build(BuildContext(out, "x", 0, load_recipes(), frozenset(), alone, earlier))
    # one item per task: no other to swap with
    assert len(single.items["foundation"]) == 2 and single.card["controls_not_eligible"] == 2
    assert result.failures == [] and result.items["chat"] == []
    (silent,) = made_silence(out, originals)
    quiet = build_controls([silent], out, seed=0, controls=["noise"])
    assert quiet.items == [] and quiet.failures == [] and "silent" in quiet.not_eligible[0].reason
    broken = originals[0].model_copy(update={"audio": "audio/missing.wav"})
    made = build_controls([broken], out, seed=0, controls=["silence"])
    assert made.items == [] and len(made.failures) == 1
    assert "audio/missing.wav" in made.failures[0].error and made.failures[0].task == broken.task


def test_multi_clip_items_get_every_clip_controlled(tmp_path):
    """The kit's louder-clip task (two clips per item): each clip silenced or noised at its own length and
    loudness, the mismatched control takes both clips of another item, and the DSP baseline cannot tell on silence
    (never an error) but stays right on noise, which keeps each clip's loudness (why noise is no text prior)."""
    report = build("tiny", seed=0, out=tmp_path, tasks=["kit_louder_clip"], progress=False, snr_grid=[])
    originals = [i for i in report.foundation if "rotation_of" not in i.meta]
    assert len(originals) == 2 and all(len(i.clips) == 2 for i in originals)
    made = build_controls(originals, tmp_path, seed=0, controls=["silence", "noise", "mismatched"])
    assert made.failures == [] and made.not_eligible == [] and len(made.items) == 6
    by_uid = {i.uid: i for i in originals}
    for item in made.items:
        original = by_uid[item.meta[CONTROL_OF_KEY]]
        assert len(item.clips) == 2 and item.audios_sha256 == [sha256_file(tmp_path / c) for c in item.clips]
        if item.meta[CONTROL_KEY] == "mismatched":
            assert item.clips == by_uid[item.meta[DONOR_KEY]].clips and not set(item.clips) & set(original.clips)
            continue
        for clip, own in zip(item.clips, original.clips, strict=True):
            assert sf.info(tmp_path / clip).frames == sf.info(tmp_path / own).frames
    items = [*originals, *made.items]
    run_model(load_model("baseline:dsp"), items, tmp_path, tmp_path / "dsp.jsonl", progress=False)
    answers = {r.uid: r for r in read_records(tmp_path / "dsp.jsonl", Response)}
    assert all(r.error is None for r in answers.values())
    for item in made.items:
        text, original = answers[item.uid].text, answers[item.meta[CONTROL_OF_KEY]].text
        if item.meta[CONTROL_KEY] == "silence":
            assert text == "I cannot tell."
        elif item.meta[CONTROL_KEY] == "noise":
            assert text == original and extract_choice(text, item.choices).choice == item.answer


def test_outcomes_from_a_frame(built):
    import pandas as pd

    from airbench_nb.analysis.controls import outcomes_from_frame

    _, originals, made = built
    items = {i.uid: i for i in [*originals, *made.items] if i.kind == "foundation"}
    uid = originals[0].uid
    frame = pd.DataFrame(
        {
            "model": ["m", "m", "m", "m"],
            "uid": [uid, control_uid(uid, "silence"), control_uid(uid, "noise"), "not-an-item"],
            "correct": pd.array([True, False, pd.NA, True], dtype="boolean"),
        }
    )
    assert outcomes_from_frame(frame, items) == [
        ControlOutcome("m", originals[0].task, uid, None, 1.0),
        ControlOutcome("m", originals[0].task, uid, "silence", 0.0),
        ControlOutcome("m", originals[0].task, uid, "noise", None),
        # the item's other controls, with no row: not answered (a backend not asked no_audio has no response)
        ControlOutcome("m", originals[0].task, uid, "mismatched", None),
        ControlOutcome("m", originals[0].task, uid, "no_audio", None),
    ]
    with pytest.raises(ValueError, match="no column correct"):
        outcomes_from_frame(frame.drop(columns="correct"), items)


def test_a_chat_model_is_asked_the_controls_without_audio_as_text_alone(built):
    """Through the kit's runner and an OpenAI-compatible server (tests/openai_server.py reports the audio it hears):
    ``no_audio`` and ``description`` send no audio part, ``description`` puts the Chat item's meta_info before the
    question, ``silence`` sends the silence of the original's length."""
    from airbench_nb.prompts import item_prompts
    from airbench_nb.records import DESCRIPTION_LEAD
    from tests.openai_server import OpenAITestServer

    out, originals, made = built
    chat = [i for i in originals if i.kind == "chat"]
    controls = [
        i for i in made.items if i.kind == "chat" and i.meta[CONTROL_KEY] in ("silence", "no_audio", "description")
    ]
    assert Counter(i.meta[CONTROL_KEY] for i in controls) == {"silence": 2, "no_audio": 2, "description": 2}
    with OpenAITestServer() as server:
        model = load_model(f"openai:tiny-audio@{server.base_url}")
        summary = run_model(model, [*chat, *controls], out, out / "chat-api.jsonl", progress=False)
        model.close()
    assert summary.not_applicable == {} and summary.failed == 0
    answers = {r.uid: r.text for r in read_records(out / "chat-api.jsonl", Response)}
    originals_by_uid = {i.uid: i for i in chat}
    for item in controls:
        original = originals_by_uid[item.meta[CONTROL_OF_KEY]]
        heard = answers[item.uid].split(": ", 1)[0]
        if item.meta[CONTROL_KEY] == "silence":
            assert heard == answers[original.uid].split(": ", 1)[0] != "tiny-audio heard no audio"  # same length
        else:
            assert heard == "tiny-audio heard no audio"
        text = item_prompts(item)[0]
        if item.meta[CONTROL_KEY] == "description":
            assert text == f"{DESCRIPTION_LEAD}{original.meta_info.strip()}\n\n{item_prompts(original)[0]}"
        else:
            assert text == item_prompts(original)[0]
        assert answers[item.uid].split(": ", 1)[1] == text


def test_chat_outcomes_are_judge_scores_per_judge_and_never_count_an_unasked_control(built):
    import pandas as pd

    from airbench_nb.analysis.controls import CHAT_SCALE, chat_label, chat_outcomes

    _, originals, made = built
    chat = [i for i in originals if i.kind == "chat"][:1]
    controls = [i for i in made.items if i.meta.get(CONTROL_OF_KEY) == chat[0].uid]
    items = {i.uid: i for i in [*chat, *controls]}
    silence = next(i.uid for i in controls if i.meta[CONTROL_KEY] == "silence")
    no_audio = next(i.uid for i in controls if i.meta[CONTROL_KEY] == "no_audio")
    rows = []
    for judge in ("proxy", "openai:judge"):
        rows += [
            {"model": "m", "judge": judge, "uid": chat[0].uid, "score_model": 8.0},  # both orders: mean 7
            {"model": "m", "judge": judge, "uid": chat[0].uid, "score_model": 6.0},
            {"model": "m", "judge": judge, "uid": silence, "score_model": 2.0},
            {"model": "m", "judge": judge, "uid": silence, "score_model": float("nan")},  # unread: 0 under strict
            {"model": "m", "judge": judge, "uid": no_audio, "score_model": float("nan")},  # no response: not asked
        ]
    frame = pd.DataFrame(rows)
    answered = {"m": [chat[0].uid, silence]}
    strict = chat_outcomes(frame, items, answered, "strict")
    by = {(o.model, o.control): o.correct for o in strict}
    label = chat_label("m", "proxy")
    assert label == "m (Chat, judged by proxy)" and CHAT_SCALE == 10
    assert by[(label, None)] == pytest.approx(0.7) and by[(label, "silence")] == pytest.approx(0.1)
    assert by[(label, "no_audio")] is None  # listed, not answered: n/a in the results, never a failure
    assert (chat_label("m", "openai:judge"), None) in by
    official = {(o.model, o.control): o.correct for o in chat_outcomes(frame, items, answered, "official")}
    assert official[(label, "silence")] == pytest.approx(0.2)
    (result,) = [r for r in controls_results(strict, reps=50) if r.model == label]
    assert [c.control for c in result.controls] == ["silence"] and "no_audio" in result.not_answered
    assert result.controls[0].difference.value == pytest.approx(-0.6)


def test_the_corrected_score_sets_the_prior_against_the_same_items():
    """A model that never listens, with controls on only some items (a run controls the first N per task): its
    corrected score is 0, the score with the audio taken over the controlled items (0.75), not over all (0.5)."""
    outcomes = [ControlOutcome("deaf", "t", f"u{i}", None, float(i < 50)) for i in range(100)]
    controlled = [*range(30), *range(60, 70)]
    outcomes += [ControlOutcome("deaf", "t", f"u{i}", "silence", float(i < 50)) for i in controlled]
    (result,) = controls_results(outcomes, reps=500, seed=0)
    assert result.score.value == 0.5 and result.n == 100
    assert result.text_prior.value == 0.75 and result.text_prior.n == 40
    assert result.corrected.value == 0.0 and result.corrected.n == 40
    assert result.corrected.low <= 0.0 <= result.corrected.high
