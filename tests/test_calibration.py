"""Calibration: ECE, Brier and AURC on planted and hand-computed data, option probabilities from the tiny hf model and
the fixture OpenAI server, the tiered confident/hedged proxy, and the optional ``calibration`` section of a run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from airbench_nb.analysis.calibration import (
    CalibrationAnswer,
    calibration_answers,
    calibration_result,
)
from airbench_nb.analysis.calibration_metrics import aurc, brier_terms, ece, reliability_bins, risk_coverage
from airbench_nb.analysis.calibration_proxy import PROXY_LABEL, proxy_rows
from airbench_nb.models import GenerationParams, Prompt, load_model
from airbench_nb.models.option_probs import from_top_logprobs, letter_token_ids, option_letters
from airbench_nb.records import FoundationItem, OptionProbs, Response

# ------------------------------------------------------------------------------------------------ metrics


def test_ece_of_a_hand_example_is_exact() -> None:
    # bin 9: confidences 0.9, 0.9, one right (gap 0.4); bin 3: 0.3, 0.3, none right (gap 0.3): 0.5 * 0.4 + 0.5 * 0.3
    assert ece(np.array([0.9, 0.9, 0.3, 0.3]), np.array([1, 0, 0, 0]))[0] == pytest.approx(0.35, abs=1e-12)
    # 1.0 falls in the last bin (gap 0); 0.05 in the first, right: gap 0.95, half the answers
    assert ece(np.array([1.0, 0.05]), np.array([1, 1]))[0] == pytest.approx(0.475, abs=1e-12)
    # weights count answers: doubling the first answer is the same as writing it twice
    doubled = ece(np.array([0.9, 0.3]), np.array([1, 0]), np.array([[2.0, 1.0]]))[0]
    assert doubled == pytest.approx(ece(np.array([0.9, 0.9, 0.3]), np.array([1, 1, 0]))[0])
    bins = reliability_bins(np.array([0.9, 0.9, 0.3, 0.3]), np.array([1, 0, 0, 0]))
    assert [b.n for b in bins] == [0, 0, 0, 2, 0, 0, 0, 0, 0, 2]
    assert bins[9].accuracy == 0.5 and bins[9].confidence == pytest.approx(0.9) and bins[0].accuracy is None


def test_brier_of_a_hand_example_is_exact() -> None:
    terms = brier_terms([[0.7, 0.2, 0.1], [0.5, 0.5]], [0, 1])
    assert terms == pytest.approx([0.09 + 0.04 + 0.01, 0.25 + 0.25])


def test_risk_coverage_and_aurc_of_a_hand_example_are_exact() -> None:
    conf, right = np.array([0.6, 0.9, 0.7, 0.8]), np.array([0, 1, 1, 0])
    coverage, risk = risk_coverage(conf, right)  # most confident first: right, wrong, right, wrong
    assert coverage == pytest.approx([0.25, 0.5, 0.75, 1.0]) and risk == pytest.approx([0, 1 / 2, 1 / 3, 1 / 2])
    assert aurc(conf, right)[0] == pytest.approx((0 + 1 / 2 + 1 / 3 + 1 / 2) / 4, abs=1e-12)
    # ties are accepted together: the two answers at 0.9 (one wrong) share the point (2/3, 1/2)
    tied_conf, tied_right = np.array([0.9, 0.5, 0.9]), np.array([1, 1, 0])
    coverage, risk = risk_coverage(tied_conf, tied_right)
    assert coverage == pytest.approx([2 / 3, 1.0]) and risk == pytest.approx([1 / 2, 1 / 3])
    assert aurc(tied_conf, tied_right)[0] == pytest.approx((1 / 2 + 1 / 2 + 1 / 3) / 3, abs=1e-12)
    # a confidence that ranks every error last has AURC below the error rate; one that ranks them first, above
    assert (
        aurc(np.array([0.9, 0.8, 0.2]), np.array([1, 1, 0]))[0] < 1 / 3 < aurc(np.array([0.2, 0.8, 0.9]), [1, 1, 0])[0]
    )


def _answers(conf: np.ndarray, right: np.ndarray, clusters: list[str] | None = None) -> list[CalibrationAnswer]:
    out = []
    for k, (c, y) in enumerate(zip(conf, right, strict=True)):
        # a 2-option item: the chosen option (index 0) has probability c; gold is 0 when right
        out.append(
            CalibrationAnswer(
                model="m",
                task="t",
                uid=f"u{k}",
                cluster=clusters[k] if clusters else f"item:u{k}",
                confidence=float(c),
                correct=bool(y),
                probs=[float(c), 1 - float(c)],
                gold=0 if y else 1,
                argmax_agrees=c >= 0.5,
                mass=1.0,
            )
        )
    return out


def test_a_calibrated_model_has_ece_near_zero_and_an_overconfident_one_its_gap() -> None:
    rng = np.random.default_rng(11)
    conf = rng.uniform(0.5, 1.0, 3000)
    calibrated = calibration_result(_answers(conf, rng.random(3000) < conf), "m", "t", reps=150, seed=0)
    assert calibrated.ece.value is not None and calibrated.ece.value < 0.03
    assert calibrated.ece.low is not None and calibrated.ece.low < 0.03
    assert calibrated.accuracy.contains(float(conf.mean())) and calibrated.confidence.value == pytest.approx(
        conf.mean()
    )
    gap = 0.2  # stated confidence c, true accuracy c - 0.2: ECE = 0.2 in every bin
    over = calibration_result(_answers(conf, rng.random(3000) < conf - gap), "m", "t", reps=150, seed=0)
    assert over.ece.contains(gap) and over.ece.low is not None and calibrated.ece.high is not None
    assert over.ece.low > calibrated.ece.high  # the two are told apart
    assert over.brier.value is not None and calibrated.brier.value is not None
    assert over.brier.value > calibrated.brier.value
    assert over.clusters == 3000 and over.design_effect is None


def test_shared_clusters_widen_the_interval_by_union() -> None:
    rng = np.random.default_rng(5)
    # 40 recordings, 10 questions each, answered alike within a recording (right or wrong together)
    recording_right = rng.random(40) < 0.6
    conf = np.repeat(rng.uniform(0.4, 0.9, 40), 10)
    right = np.repeat(recording_right, 10)
    clusters = [f"audio:r{k // 10}" for k in range(400)]
    alone = calibration_result(_answers(conf, right), "m", "t", reps=300, seed=1)
    clustered = calibration_result(_answers(conf, right, clusters), "m", "t", reps=300, seed=1)
    assert clustered.ece.value == alone.ece.value and clustered.clusters == 40
    assert clustered.ece.low <= alone.ece.low and clustered.ece.high >= alone.ece.high  # the union
    width = (clustered.accuracy.high - clustered.accuracy.low) / (alone.accuracy.high - alone.accuracy.low)
    assert width > 2.0  # ten perfectly correlated questions: the clustered interval is about sqrt(10) wider
    assert clustered.design_effect is not None and clustered.design_effect > 1.5


# ------------------------------------------------------------------------------------------------ answers


def _item(uid: str, answer: int = 0, task: str = "Speaker_Gender_Recognition", n: int = 2) -> FoundationItem:
    choices = ["male", "female", "child", "robot"][:n]
    return FoundationItem(
        uid=uid, dataset="planted", audio=f"a/{uid}.wav", question="Who?", task=task, choices=choices, answer=answer
    )


def _probs(*values: float) -> OptionProbs:
    return OptionProbs(probs={chr(65 + k): v for k, v in enumerate(values)}, mass=0.9, source="planted")


def test_answers_take_the_option_read_in_the_text_and_count_what_is_left_out() -> None:
    items = {u: _item(u) for u in ("a", "b", "c", "d", "e", "f")}
    responses = {
        "m": {
            "a": Response(uid="a", model="m", text="A", option_probs=_probs(0.8, 0.2)),
            "b": Response(uid="b", model="m", text="The answer is B.", option_probs=_probs(0.7, 0.3)),
            "c": Response(uid="c", model="m", text="A or B", option_probs=_probs(0.5, 0.5)),
            "d": Response(uid="d", model="m", text="A"),
            "e": Response(uid="e", model="m", error="backend: boom"),
            "f": Response(uid="f", model="m", text="Answer: A", option_probs=_probs(0.6, 0.4), prompt_set="cot"),
        }
    }
    answers, counts = calibration_answers(items, responses)
    assert [(a.uid, a.confidence, a.correct, a.argmax_agrees) for a in answers] == [
        ("a", 0.8, True, True),
        ("b", 0.3, False, False),  # the text chose B: its probability, not the argmax's
    ]
    c = counts["m"]
    assert (c.used, c.unread, c.without_probs, c.failed, c.reasoning_first) == (2, 1, 1, 1, 1)


def test_option_probabilities_must_be_a_distribution_over_letters() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        _probs(0.5, 0.2)
    with pytest.raises(ValueError, match="letters A-Z"):
        OptionProbs(probs={"A": 0.5, "x": 0.5}, mass=0.5, source="s")
    plain = Response(uid="u", model="m", text="A")
    with_probs = Response(uid="u", model="m", text="A", option_probs=_probs(0.9, 0.1))
    assert plain.content_hash() == with_probs.content_hash()  # a judge judges the text
    assert Response.model_validate_json(with_probs.model_dump_json()) == with_probs


def test_top_logprobs_sum_the_spellings_of_a_letter_and_ignore_the_rest() -> None:
    top = [("B", math.log(0.5)), (" B", math.log(0.1)), ("The", math.log(0.2)), ("A", math.log(0.2)), ("a", -0.1)]
    probs = from_top_logprobs(top, ["A", "B", "C"], 5)
    assert probs is not None
    assert probs.probs == pytest.approx({"A": 0.25, "B": 0.75, "C": 0.0}) and probs.mass == pytest.approx(0.8)
    assert from_top_logprobs([("The", 0.0)], ["A", "B"], 1) is None
    assert option_letters(_item("x", n=4)) == ["A", "B", "C", "D"] and option_letters(_item("x"), turn=1) is None


# ------------------------------------------------------------------------------------------------ backends


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory: pytest.TempPathFactory):
    from airbench_nb.models.tiny import build_tiny_qwen2_audio

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    path = build_tiny_qwen2_audio(tmp_path_factory.mktemp("calibration") / "qwen2-audio")
    lm = load_model(f"hf:{path}", batch_size=4, device="cpu")
    yield lm
    lm.close()
    torch.set_num_threads(threads)


def _prompt(item: FoundationItem, seed: int) -> Prompt:
    rng = np.random.default_rng(seed)
    audio = (0.3 * np.sin(np.arange(8000) * (0.05 + 0.01 * seed)) + 0.05 * rng.standard_normal(8000)).astype(np.float32)
    options = "\n".join(f"{chr(65 + k)}. {c}" for k, c in enumerate(item.choices))
    text = f"Choose the answer.\n{item.question} (item {seed})\n{options}"
    return Prompt(item=item, text=text, audio=audio, audio_path=Path(item.audio))


def test_tiny_hf_model_gives_option_probabilities_that_follow_its_first_token(tiny_qwen) -> None:
    lm = tiny_qwen
    ids = letter_token_ids(lm._tokenizer)
    head = lm._generator.get_output_embeddings().weight
    letter_rows = [i for letter in "ABCD" for i in ids[letter]]
    with torch.no_grad():  # make the letters likely first tokens, so that greedy decoding begins with one
        saved = head[letter_rows].clone()
        head[letter_rows] *= 60.0
    try:
        prompts = [_prompt(_item(f"q{k}", n=4), k) for k in range(6)]
        one_token = lm.generate(prompts, GenerationParams(max_new_tokens=1))
        longer = lm.generate(prompts, GenerationParams(max_new_tokens=4))
        alone = lm.generate(prompts[:1], GenerationParams(max_new_tokens=1))[0]
    finally:
        with torch.no_grad():
            head[letter_rows] = saved
    began_with_letter = 0
    for g, again in zip(one_token, longer, strict=True):
        assert g.error is None and g.option_probs is not None
        assert sorted(g.option_probs.probs) == ["A", "B", "C", "D"]
        assert sum(g.option_probs.probs.values()) == pytest.approx(1.0, abs=1e-9)
        assert 0 < g.option_probs.mass <= 1
        assert again.option_probs == g.option_probs  # the first step does not depend on the length bound
        if g.text in ("A", "B", "C", "D"):  # greedy decoding's first token is a letter: it is the most probable
            began_with_letter += 1
            assert max(g.option_probs.probs, key=g.option_probs.probs.get) == g.text
    assert began_with_letter >= 2, "the planted letters should make greedy decoding begin with a letter"
    assert alone.option_probs is not None
    assert alone.option_probs.probs == pytest.approx(one_token[0].option_probs.probs, abs=1e-4)  # batched = alone
    # the same probabilities by hand: a forward pass over the prompt, softmax at its last position, spellings summed
    with torch.no_grad():
        head[letter_rows] *= 60.0
        try:
            inputs = lm._to_device(lm.adapter.encode(lm.processor, [prompts[0]]))
            logprobs = torch.log_softmax(lm._generator(**inputs).logits[0, -1].float(), dim=-1)
        finally:
            head[letter_rows] = saved
    by_hand = {letter: sum(math.exp(float(logprobs[i])) for i in ids[letter]) for letter in "ABCD"}
    mass = sum(by_hand.values())
    assert alone.option_probs.probs == pytest.approx({k: v / mass for k, v in by_hand.items()}, abs=1e-4)
    assert alone.option_probs.mass == pytest.approx(mass, rel=1e-3)
    chat = lm.generate(
        [Prompt(item=_item("t0"), text="Describe the sound.", audio=prompts[0].audio, audio_path=Path("a.wav"))],
        GenerationParams(max_new_tokens=2),
    )
    assert chat[0].option_probs is not None  # a single-choice item, whatever the text says
    assert len(set(json.dumps(g.option_probs.probs, sort_keys=True) for g in one_token)) > 1  # not degenerate


def test_an_hf_model_told_not_to_gives_no_option_probabilities_and_the_same_answer(tiny_qwen) -> None:
    off = load_model(f"hf:{tiny_qwen.path}", device="cpu", option_probs=False)
    prompts = [_prompt(_item(f"q{k}", n=4), k) for k in range(2)]
    params = GenerationParams(max_new_tokens=4)
    try:
        without = off.generate(prompts, params)
    finally:
        off.close()
    with_probs = tiny_qwen.generate(prompts, params)
    assert all(g.option_probs is None for g in without) and all(g.option_probs is not None for g in with_probs)
    assert [g.text for g in without] == [g.text for g in with_probs]  # asking for the logits changes no answer


def test_the_fixture_server_returns_logprobs_that_map_onto_the_options() -> None:
    from tests.openai_server import OpenAITestServer, fixture_first_token

    item = _item("o1", answer=2, n=4)
    prompt = _prompt(item, 1)
    with OpenAITestServer() as server:
        asked = load_model(f"openai:m@{server.base_url}", logprobs=True, top_logprobs=5)
        plain = load_model(f"openai:m@{server.base_url}")
        params = GenerationParams(max_new_tokens=3)
        assert asked.request(prompt, params).params["top_logprobs"] == 5
        assert "logprobs" not in plain.request(prompt, params).params  # the cache key stays what it was
        got = asked.generate([prompt], params)[0]
        without = plain.generate([prompt], params)[0]
        asked.close()
        plain.close()
    candidates = fixture_first_token(prompt.text)[:5]  # the server sends the top 5
    expected = {letter: sum(math.exp(lp) for t, lp in candidates if t.strip() == letter) for letter in "ABCD"}
    total = sum(expected.values())
    assert got.error is None and got.option_probs is not None
    assert got.option_probs.probs == pytest.approx({k: v / total for k, v in expected.items()})
    assert got.option_probs.mass == pytest.approx(total)
    assert got.text == max(got.option_probs.probs, key=got.option_probs.probs.get)
    assert without.option_probs is None and without.text is not None and without.text.startswith("m heard")


# ------------------------------------------------------------------------------------------------ proxy


def test_the_tiered_proxy_on_planted_answers() -> None:
    rng = np.random.default_rng(2)
    rows = []
    for _ in range(600):
        hedged = rng.random() < 0.3
        right = rng.random() < (0.4 if hedged else 0.8)
        text = "It might be a siren, I am not sure." if hedged else "It is a siren."
        rows.append({"system": "hf:m · A", "tier": "A", "correct": right, "response": text, "confidence": None})
    rows.append({"system": "baseline:first", "tier": "A", "correct": True, "response": "A", "confidence": None})
    rows.append({"system": "hf:m · A", "tier": "D", "correct": True, "response": "maybe", "confidence": None})
    # a judge's label wins over the lexicon
    rows.append({"system": "hf:j", "tier": "A", "correct": False, "response": "It is a siren.", "confidence": "hedged"})
    result = proxy_rows(pd.DataFrame(rows).assign(strategy_judge="openai:judge"), reps=300, seed=0)
    assert [r.system for r in result] == ["hf:j", "hf:m · A"]  # baselines and other tiers left out
    judged, planted = result
    assert judged.hedged == 1 and judged.labels == "strategy judge openai:judge"
    assert planted.n == 600 and planted.labels.startswith("lexicon")
    assert planted.hedged_share_ci[0] <= 0.3 <= planted.hedged_share_ci[1]
    assert planted.accuracy_confident_ci[0] <= 0.8 <= planted.accuracy_confident_ci[1]
    assert planted.accuracy_hedged_ci[0] <= 0.4 <= planted.accuracy_hedged_ci[1]
    assert planted.difference_ci[0] > 0.2  # confident answers are right more often, clearly
    assert "not a probability" in PROXY_LABEL


# ------------------------------------------------------------------------------------------------ the section


def _planted_run(root: Path, with_probs: bool) -> Path:
    from airbench_nb.manifests import write_manifest
    from airbench_nb.run_folder import RunFolder

    folder = RunFolder(root / "run")
    rng = np.random.default_rng(4)
    items = [
        _item(f"s{k}", answer=int(rng.integers(2)), task=("Speaker_Gender_Recognition", "Music_AQA")[k % 2])
        for k in range(60)
    ]
    write_manifest(folder.manifest("foundation"), items)
    responses = []
    for item in items:
        p = float(rng.uniform(0.5, 1.0))
        right = rng.random() < p
        chosen = item.answer if right else 1 - item.answer
        probs = [p, 1 - p] if chosen == 0 else [1 - p, p]
        option = _probs(*probs) if with_probs else None
        responses.append(Response(uid=item.uid, model="hf:planted", text="AB"[chosen], option_probs=option))
    path = folder.responses_file("hf:planted", "foundation")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(r.model_dump_json() + "\n" for r in responses), encoding="utf-8")
    if with_probs:
        _planted_tiered(folder, rng)
    return folder.path


def _planted_tiered(folder, rng: np.random.Generator) -> None:
    """Tier A items of the tiered benchmark answered by the same model, half of them hedged in words."""
    from airbench_nb.builders.tiered import source_items
    from airbench_nb.judge.run import judge_run_folder
    from airbench_nb.manifests import write_manifest
    from airbench_nb.synth.sources import hierarchy

    tree = hierarchy()
    items, responses = [], []
    for k, fine in enumerate(list(tree.fine_names)[:10]):
        item, _ = source_items(tree, fine, uid=f"t{k}", audio=f"t/{k}.wav", audio_sha256=None, meta={}, dataset="p")
        items.append(item)
        letters = [chr(65 + j) for j in range(len(item.choices))]
        chosen = item.answer if k % 2 == 0 else (item.answer + 1) % len(letters)
        probs = {letter: 0.2 / (len(letters) - 1) for letter in letters}
        probs[letters[chosen]] = 0.8
        text = f"Answer: {letters[chosen]}" if k < 5 else f"It might be, I am not sure.\nAnswer: {letters[chosen]}"
        option = OptionProbs(probs=probs, mass=0.5, source="planted")
        responses.append(Response(uid=item.uid, model="hf:planted", text=text, option_probs=option))
    write_manifest(folder.manifest("sound_source"), items)
    path = folder.responses_file("hf:planted", "sound_source")
    path.write_text("".join(r.model_dump_json() + "\n" for r in responses), encoding="utf-8")
    judge_run_folder(folder, ["rule"], kinds=["sound_source"])


def test_the_section_is_written_for_a_run_with_probabilities_and_left_out_otherwise(tmp_path: Path) -> None:
    from airbench_nb.analysis.calibration import calibration_section
    from airbench_nb.analysis.report import RunAnalysis
    from airbench_nb.pages.base import PageInputs
    from airbench_nb.pages.calibration import render_calibration

    analysis = RunAnalysis(_planted_run(tmp_path / "with", True), reps=100)
    section = calibration_section(analysis)
    assert section.reason is None and section.figure is not None
    axes = section.figure.axes
    assert axes[0].get_xlabel().startswith("confidence") and axes[0].get_ylabel() == "accuracy in bin"
    assert "n = 70 answers" in section.figure.texts[0].get_text() and "n = 70 answers" in axes[0].get_title()
    rows = section.data["models"]["hf:planted"]
    tiered_task = rows[-2]["task"]
    assert [r["task"] for r in rows] == ["Music_AQA", "Speaker_Gender_Recognition", tiered_task, None]
    tiered = rows[-2]  # tier A: 10 answers at confidence 0.8, half right: ECE 0.3 exactly
    assert tiered["n"] == 10 and tiered["accuracy"] == 0.5 and tiered["ece"] == pytest.approx(0.3)
    pooled = rows[-1]
    assert pooled["n"] == 70 and pooled["argmax_agreement"] == 1.0 and len(pooled["bins"]) == 10
    assert pooled["ece_ci"][0] <= pooled["ece"] <= pooled["ece_ci"][1]
    assert section.data["counts"]["hf:planted"]["used"] == 70
    (proxy,) = section.data["proxy"]  # the tiered answers' wording: 5 confident (3 right), 5 hedged (2 right)
    assert proxy["system"].startswith("hf:planted") and (proxy["confident"], proxy["hedged"]) == (5, 5)
    assert proxy["accuracy_confident"] == pytest.approx(3 / 5) and proxy["accuracy_hedged"] == pytest.approx(2 / 5)
    report = analysis.write(tmp_path / "with-out", sections=[section])
    assert json.loads((tmp_path / "with-out" / "analysis.json").read_text())["calibration"] == section.data
    assert (tmp_path / "with-out" / "figures" / "calibration-reliability-diagrams.png").is_file()
    assert (tmp_path / "with-out" / "figures" / "calibration-risk-coverage.png").is_file()
    html = render_calibration(PageInputs(folder=None, run=None, analysis=report, scores=None))  # type: ignore[arg-type]
    assert html is not None and "ECE" in html and "hf:planted" in html and "not a probability" in html
    import matplotlib.pyplot as plt

    plt.close("all")
    bare = RunAnalysis(_planted_run(tmp_path / "without", False), reps=20)
    empty = calibration_section(bare)
    assert empty.reason is not None and "logprobs" in empty.reason
    written = bare.write(tmp_path / "out", sections=[empty])
    assert "calibration" not in json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert "calibration" not in written.reasons  # optional: neither its key nor its reason
    assert render_calibration(PageInputs(folder=None, run=None, analysis=written, scores=None)) is None  # type: ignore[arg-type]


def test_the_runner_writes_the_option_probabilities_of_an_openai_model_asked_for_logprobs(tmp_path: Path) -> None:
    import soundfile as sf

    from airbench_nb.manifests import read_records, write_manifest
    from airbench_nb.runner.infer import infer
    from tests.openai_server import OpenAITestServer

    data = tmp_path / "data"
    items = [_item(f"r{k}", answer=k % 4, n=4) for k in range(3)]
    for item in items:
        (data / item.audio).parent.mkdir(parents=True, exist_ok=True)
        sf.write(data / item.audio, 0.1 * np.sin(np.arange(4000) * 0.1).astype(np.float32), 16000)
    write_manifest(data / "foundation.jsonl", items)
    with OpenAITestServer() as server:
        for name, options in (("asked", {"logprobs": True, "top_logprobs": 8}), ("plain", {})):
            summary = infer(
                f"openai:m@{server.base_url}",
                data / "foundation.jsonl",
                tmp_path / f"{name}.jsonl",
                progress=False,
                model_options=options,
            )
            assert summary.answered == 3
    asked = read_records(tmp_path / "asked.jsonl", Response)
    plain = read_records(tmp_path / "plain.jsonl", Response)
    assert all(
        r.option_probs is not None and r.text == max(r.option_probs.probs, key=r.option_probs.probs.get) for r in asked
    )
    assert all(r.option_probs is None and "backend" not in r.generation for r in plain)
    assert asked[0].generation["backend"] == {"name": "openai", "logprobs": True, "top_logprobs": 8}
    answers, counts = calibration_answers({i.uid: i for i in items}, {"m": {r.uid: r for r in asked}})
    assert counts["m"].used == 3 and all(a.argmax_agrees for a in answers)
