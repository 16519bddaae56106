"""Judge-human and inter-annotator agreement: every statistic against a value computed by hand."""

import json
import math

import matplotlib
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from airbench_nb.analysis import agreement as ag
from airbench_nb.analysis.stats import WILSON
from airbench_nb.cli import app
from airbench_nb.manifests import ManifestError, write_manifest, write_records
from airbench_nb.records import AnnotationPair, ChatItem, FoundationItem, Label, Response, Verdict
from airbench_nb.runner import model_slug

matplotlib.use("Agg")

MODEL = "planted:m"
Z = 1.959963984540054  # the 97.5% normal quantile


def fpair(uid, choices=("male", "female"), task="Speaker_Gender_Recognition", category="speech", root="/data"):
    return AnnotationPair(
        pair_id=f"{MODEL}|{uid}",
        kind="foundation",
        uid=uid,
        model=MODEL,
        task=task,
        category=category,
        stratum=category,
        question="Which?",
        audio=f"audio/{uid}.wav",
        data_root=root,
        choices=list(choices),
        response="A",
    )


def cpair(uid, model_answer, task="speech_QA", category="speech", root="/data"):
    answers = ["the model's answer", "the reference"] if model_answer == 1 else ["the reference", "the model's answer"]
    return AnnotationPair(
        pair_id=f"{MODEL}|{uid}",
        kind="chat",
        uid=uid,
        model=MODEL,
        task=task,
        category=category,
        stratum=category,
        question="What do you hear?",
        audio=f"audio/{uid}.wav",
        data_root=root,
        answers=answers,
        model_answer=model_answer,
    )


def flabel(annotator, uid, value, action="label"):
    """A Foundation label: a letter, "unclear", or None (for skip/undo)."""
    fields = {}
    if value == "unclear":
        fields["unclear"] = True
    elif value is not None:
        fields["choice"] = "ABCD".index(value)
    return Label(pair_id=f"{MODEL}|{uid}", annotator=annotator, action=action, **fields)


def clabel(annotator, uid, preference):
    return Label(pair_id=f"{MODEL}|{uid}", annotator=annotator, preference=preference)


def decisions(judge, kind, values, category="speech"):
    return pd.DataFrame(
        [
            {"judge": judge, "pair_id": f"{MODEL}|{uid}", "kind": kind, "category": category, "decision": d}
            for uid, d in values.items()
        ],
        columns=list(ag.DECISION_COLUMNS),
    )


def wilson_by_hand(k, n):
    p = k / n
    denominator = 1 + Z**2 / n
    centre = (p + Z**2 / (2 * n)) / denominator
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2)) / denominator
    return centre - half, centre + half


# ------------------------------------------------------------------ resolution


def test_latest_label_not_undone_wins():
    pairs = [fpair(f"p{i}", choices=("a", "b", "c", "d")) for i in range(6)]
    actions = [
        flabel("alice", "p0", "A"),
        flabel("alice", "p0", "B"),
        flabel("alice", "p0", None, "undo"),  # p0: back to A
        flabel("alice", "p1", "A"),
        flabel("alice", "p1", None, "undo"),  # p1: nothing left
        flabel("alice", "p2", "A"),
        flabel("alice", "p2", None, "skip"),  # a skip keeps the label
        flabel("alice", "p3", "C"),
        flabel("alice", "p3", "D"),  # p3: the latest, D
        flabel("alice", "p4", None, "undo"),  # nothing to undo: counted, ignored
        flabel("alice", "p4", "B"),
        flabel("bob", "p0", "C"),
        flabel("bob", "p0", "D"),
        flabel("alice", "p5", "unclear"),
        flabel("bob", "p0", None, "undo"),  # bob's undo leaves alice's p0 alone: bob back to C
        flabel("bob", "p0", None, "undo"),  # and then to nothing
    ]
    frame = ag.resolve_labels(actions, pairs)
    got = {(r.annotator, r.pair_id.split("|")[1]): r.label for r in frame.itertuples()}
    assert got == {("alice", "p0"): "A", ("alice", "p2"): "A", ("alice", "p3"): "D", ("alice", "p4"): "B",
                   ("alice", "p5"): "unclear"}  # fmt: skip
    assert frame.attrs["counts"] == {
        "actions": 16,
        "labels": 10,
        "skips": 1,
        "undos": 5,
        "undo_without_label": 1,
        "resolved": 5,
    }


def test_chat_preference_translated_from_shown_order():
    assert ag.chat_label("1", 1) == ag.MODEL
    assert ag.chat_label("2", 1) == ag.REFERENCE
    assert ag.chat_label("1", 2) == ag.REFERENCE
    assert ag.chat_label("2", 2) == ag.MODEL
    assert ag.chat_label("tie", 2) == ag.TIE
    pairs = [cpair("c1", 1), cpair("c2", 2), cpair("c3", 2)]
    frame = ag.resolve_labels([clabel("a", "c1", "1"), clabel("a", "c2", "1"), clabel("a", "c3", "2")], pairs)
    assert frame.set_index("uid")["label"].to_dict() == {"c1": "model", "c2": "reference", "c3": "model"}
    assert frame.set_index("uid")["shown"].to_dict() == {"c1": "1", "c2": "1", "c3": "2"}


@pytest.mark.parametrize(
    ("label", "field"),
    [
        (Label(pair_id=f"{MODEL}|p0", annotator="a", choice=2), "choice"),  # 2 options only
        (Label(pair_id=f"{MODEL}|p0", annotator="a"), "choice"),  # neither choice nor unclear
        (Label(pair_id=f"{MODEL}|p0", annotator="a", choice=0, unclear=True), "choice"),
        (Label(pair_id=f"{MODEL}|p0", annotator="a", preference="1"), "preference"),
        (Label(pair_id=f"{MODEL}|c1", annotator="a"), "preference"),
        (Label(pair_id=f"{MODEL}|c1", annotator="a", choice=0), "choice"),
        (Label(pair_id=f"{MODEL}|nope", annotator="a", choice=0), "pair_id"),
    ],
)
def test_a_label_that_does_not_fit_names_file_line_and_field(label, field):
    with pytest.raises(ManifestError) as info:
        ag.resolve_labels(
            [flabel("a", "p0", "A"), label], [fpair("p0"), cpair("c1", 1)], [("x.jsonl", 1), ("x.jsonl", 3)]
        )
    assert (info.value.file, info.value.line, info.value.field) == ("x.jsonl", 3, field)


def test_label_lines_counted_past_blank_lines(tmp_path):
    path = tmp_path / "alice.jsonl"
    good = flabel("alice", "p0", "A").model_dump_json()
    bad = Label(pair_id=f"{MODEL}|p0", annotator="alice", choice=3).model_dump_json()
    path.write_text(f"{good}\n\n{good}\n{bad}\n")
    labels, sources = ag.read_labels([path])
    with pytest.raises(ManifestError, match=r"alice.jsonl:4: item .*field 'choice'"):
        ag.resolve_labels(labels, [fpair("p0")], sources)


# ------------------------------------------------------------------ inter-annotator, by hand


def _labels(pairs, by_annotator):
    actions = [
        flabel(a, pairs[i].uid, v) for a, values in by_annotator.items() for i, v in enumerate(values) if v is not None
    ]
    return ag.resolve_labels(actions, pairs)


def test_cohen_kappa_two_annotators_by_hand():
    # both A: 4, alice A / bob B: 2, alice B / bob A: 1, both B: 3 -> p_o = 0.7;
    # alice A 0.6 B 0.4, bob A 0.5 B 0.5 -> p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    pairs = [fpair(f"p{i}") for i in range(10)]
    alice = list("AAAAAABBBB")
    bob = list("AAAABBABBB")
    labels = _labels(pairs, {"alice": alice, "bob": bob})
    block = ag.inter_annotator(labels, seed=0, reps=300)["foundation"]
    assert block["statistic"] == ag.COHEN
    assert block["cohen_kappa"] == pytest.approx(0.4)
    assert cohen_kappa_score(alice, bob) == pytest.approx(0.4)  # the library agrees with the hand value
    assert block["fleiss_kappa"] is None
    assert block["n"] == 10 and block["complete"]
    assert block["ci_low"] < 0.4 < block["ci_high"]
    assert block["ci_method"] == ag.BOOTSTRAP
    # pairwise agreement: 7 of 10 pairs agree, one comparison per pair -> Wilson
    assert block["pairwise_agreement"] == pytest.approx(0.7)
    assert (block["pairwise_ci_low"], block["pairwise_ci_high"]) == pytest.approx(wilson_by_hand(7, 10))
    # the bootstrap's fast path (statsmodels on the table) gives sklearn's number
    codes = pd.DataFrame({"a": alice, "b": bob}).map("AB".index).to_numpy()
    assert ag._kappa_of(codes, 2, two=True) == pytest.approx(0.4)
    # seeded: the same interval twice
    again = ag.inter_annotator(labels, seed=0, reps=300)["foundation"]
    assert (again["ci_low"], again["ci_high"]) == (block["ci_low"], block["ci_high"])


def test_fleiss_kappa_three_annotators_by_hand():
    # items AAA, AAB, BBB, ABB: P_i = 1, 1/3, 1, 1/3 -> P = 2/3; p_A = p_B = 6/12 -> P_e = 0.5;
    # kappa = (2/3 - 0.5) / (1 - 0.5) = 1/3
    pairs = [fpair(f"p{i}") for i in range(4)]
    labels = _labels(pairs, {"a": list("AABA"), "b": list("AABB"), "c": list("ABBB")})
    block = ag.inter_annotator(labels, seed=0, reps=300)["foundation"]
    assert block["statistic"] == ag.FLEISS
    assert block["fleiss_kappa"] == pytest.approx(1 / 3)
    assert block["cohen_kappa"] is None
    assert block["n"] == 4
    # pairwise: 3 + 1 + 3 + 1 agreeing of 3 comparisons per item = 8/12; several per item -> bootstrap over items
    assert block["pairwise_agreement"] == pytest.approx(2 / 3)
    assert block["n_comparisons"] == 12
    assert block["pairwise_ci_low"] <= 2 / 3 <= block["pairwise_ci_high"]


def test_krippendorff_alpha_with_missing_labels_by_hand():
    # units (coder a, b, c): u1 A A -, u2 A B B, u3 B - B, u4 A - - (one label: not pairable)
    # coincidences: o_AA = 2 (u1), u2 adds 1/2 per ordered pair: o_AB = o_BA = 1, o_BB = 1; u3: o_BB += 2
    # n = 7, n_A = 3, n_B = 4; alpha = 1 - (n - 1) * (o_AB + o_BA) / (2 n_A n_B) = 1 - 6 * 2 / 24 = 0.5
    pairs = [fpair(f"p{i}") for i in range(4)]
    labels = _labels(pairs, {"a": ["A", "A", "B", "A"], "b": ["A", "B", None, None], "c": [None, "B", "B", None]})
    block = ag.inter_annotator(labels, seed=0, reps=300)["foundation"]
    assert block["krippendorff_alpha"] == pytest.approx(0.5)
    assert block["n_alpha"] == 3 and block["pairs_labelled"] == 4
    assert not block["complete"]
    # Fleiss only on the one pair all three labelled (A B B): P = 1/3, p_A = 1/3, p_B = 2/3, P_e = 5/9 -> -0.5
    assert block["n"] == 1 and block["fleiss_kappa"] == pytest.approx(-0.5)
    assert block["ci_low"] is None  # one pair: no interval
    assert "labels missing" in block["note"]
    assert block["alpha_ci_low"] <= 0.5 <= block["alpha_ci_high"]


def test_one_annotator_has_no_inter_annotator_agreement():
    pairs = [fpair("p0"), fpair("p1")]
    block = ag.inter_annotator(_labels(pairs, {"a": ["A", "B"]}), reps=50)["foundation"]
    assert block["cohen_kappa"] is None and block["krippendorff_alpha"] is None
    assert "needs two" in block["reason"]


# ------------------------------------------------------------------ judge vs human


def test_judge_agreeing_on_9_of_10_gives_0_9_with_its_wilson_interval():
    pairs = [fpair(f"p{i}") for i in range(10)]
    labels = _labels(pairs, {"alice": ["A"] * 10})
    judged = decisions("rule", "foundation", {f"p{i}": "A" if i else "B" for i in range(10)})
    block = ag.judge_human(judged, labels, reps=100)["rule"]["foundation"]
    assert block["n"] == 10 and block["agree"] == 9 and block["agreement"] == pytest.approx(0.9)
    assert block["ci_method"] == WILSON
    low, high = wilson_by_hand(9, 10)
    assert (low, high) == pytest.approx((0.5958, 0.9821), abs=1e-4)
    assert (block["ci_low"], block["ci_high"]) == pytest.approx((low, high))
    assert block["majority"]["agreement"] == pytest.approx(0.9)  # one annotator: the majority is the label
    assert block["missing"] == 0


def test_chat_agreement_with_and_without_ties():
    # judge:  model, model,     reference, tie, tie,   reference
    # human:  model, reference, reference, tie, model, tie
    # with ties: pairs 1, 3, 4 agree -> 3/6; without: pairs 4-6 have a tie on a side -> 2 of pairs 1-3 -> 2/3
    judge = ["model", "model", "reference", "tie", "tie", "reference"]
    human = ["model", "reference", "reference", "tie", "model", "tie"]
    pairs = [cpair(f"c{i}", 1 + i % 2) for i in range(6)]
    to_shown = {("model", 1): "1", ("model", 2): "2", ("reference", 1): "2", ("reference", 2): "1"}
    actions = [
        clabel("alice", p.uid, "tie" if h == "tie" else to_shown[(h, p.model_answer)])
        for p, h in zip(pairs, human, strict=True)
    ]
    labels = ag.resolve_labels(actions, pairs)
    assert labels["label"].tolist() == human
    block = ag.judge_human(decisions("j", "chat", {f"c{i}": d for i, d in enumerate(judge)}), labels, reps=100)
    block = block["j"]["chat"]
    assert block["agreement"] == pytest.approx(0.5) and block["n"] == 6
    assert block["agreement_no_ties"] == pytest.approx(2 / 3) and block["n_no_ties"] == 3
    assert (block["ci_low_no_ties"], block["ci_high_no_ties"]) == pytest.approx(wilson_by_hand(2, 3))
    assert (block["judge_tie"], block["human_tie"]) == (2, 2)


def test_judge_kappa_and_majority_with_several_annotators():
    # the judge labels as alice of the Cohen fixture, the human is bob: kappa 0.4 over the 10 votes
    pairs = [fpair(f"p{i}") for i in range(10)]
    alice, bob = list("AAAAAABBBB"), list("AAAABBABBB")
    one = ag.judge_human(
        decisions("j", "foundation", dict(zip([p.uid for p in pairs], alice, strict=True))),
        _labels(pairs, {"bob": bob}),
    )
    assert one["j"]["foundation"]["kappa"] == pytest.approx(0.4)
    # three annotators: votes pooled (pairs x annotators), majority per pair
    pairs = [fpair(f"p{i}") for i in range(4)]
    labels = _labels(pairs, {"a": list("AABA"), "b": list("AABB"), "c": list("ABBB")})
    block = ag.judge_human(decisions("j", "foundation", {"p0": "A", "p1": "A", "p2": "A", "p3": "A"}), labels)
    block = block["j"]["foundation"]
    assert block["n"] == 12 and block["agree"] == 3 + 2 + 0 + 1
    assert block["agreement"] == pytest.approx(0.5)
    assert block["ci_method"] == ag.BOOTSTRAP and block["ci_low"] <= 0.5 <= block["ci_high"]
    # majorities A, A, B, B -> the judge agrees on 2 of 4
    assert block["majority"]["n"] == 4 and block["majority"]["agreement"] == pytest.approx(0.5)


def test_unclear_counts_as_a_class_and_the_clear_measure_leaves_it_out():
    pairs = [fpair(f"p{i}") for i in range(4)]
    labels = _labels(pairs, {"a": ["unclear", "unclear", "A", "B"]})
    judged = decisions("rule", "foundation", {"p0": "unclear", "p1": "A", "p2": "unclear", "p3": "B"})
    block = ag.judge_human(judged, labels, reps=50)["rule"]["foundation"]
    assert block["agreement"] == pytest.approx(2 / 4)  # p0 (both unclear) and p3 agree
    assert block["n_clear"] == 1 and block["agreement_clear"] == pytest.approx(1.0)
    assert (block["judge_unclear"], block["human_unclear"]) == (2, 2)


# ------------------------------------------------------------------ a run folder, end to end


def _run(tmp_path):
    """A run with 6 Foundation and 4 Chat items, two Foundation judges and a Chat judge; a sample; two annotators."""
    run = tmp_path / "run"
    gender, mood = ["male", "female"], ["happy", "sad"]
    spec = [("F1", 0, 0, 0), ("F2", 1, 1, 1), ("F3", 0, None, 1), ("F4", 0, 0, 0), ("F5", 1, 0, 1), ("F6", 0, 1, 1)]
    items = [
        FoundationItem(
            uid=uid,
            task="Speaker_Gender_Recognition" if k < 3 else "Music_Mood_Recognition",
            dataset="t",
            audio=f"audio/{uid}.wav",
            question="Which?",
            choices=gender if k < 3 else mood,
            answer=gold,
        )
        for k, (uid, gold, _, _) in enumerate(spec)
    ]
    chat = [
        ChatItem(
            uid=f"C{k}",
            task="speech_QA" if k <= 2 else "sound_QA",
            dataset="t",
            audio=f"audio/C{k}.wav",
            question="What?",
            reference="ref",
            meta_info="m",
        )
        for k in range(1, 5)
    ]
    write_manifest(run / "data" / "foundation.jsonl", items)
    write_manifest(run / "data" / "chat.jsonl", chat)
    (run / "data" / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "test"}))
    slug = model_slug(MODEL)
    texts = {"F1": "A", "F2": "B", "F3": "I am not sure", "F4": "A", "F5": "A", "F6": "B"}
    write_records(
        run / "responses" / slug / "foundation.jsonl", [Response(uid=u, model=MODEL, text=t) for u, t in texts.items()]
    )
    for judge, column in (("rule", 2), ("openai:judge", 3)):
        verdicts = [
            Verdict(
                uid=s[0],
                model=MODEL,
                judge=judge,
                choice=s[column],
                correct=None if s[column] is None else s[column] == s[1],
            )
            for s in spec
        ]
        write_records(run / "verdicts" / slug / f"foundation.{model_slug(judge)}.jsonl", verdicts)
    write_records(
        run / "responses" / slug / "chat.jsonl", [Response(uid=c.uid, model=MODEL, text="an answer") for c in chat]
    )
    scores = {"C1": [(7, 8), (9, 7)], "C2": [(5, 8), (6, 8)], "C3": [(8, 8), (7, 7)], "C4": [(6, 6)]}
    verdicts = [
        Verdict(uid=uid, model=MODEL, judge="proxy", order=order, score_hypothesis=m, score_reference=r)
        for uid, both in scores.items()
        for order, (m, r) in zip(("reference_first", "hypothesis_first"), both, strict=False)
    ]
    write_records(run / "verdicts" / slug / "chat.proxy.jsonl", verdicts)
    root = str(tmp_path / "audio-root")
    pairs = [fpair(i.uid, i.choices, i.task, i.category, root) for i in items]
    pairs += [cpair(c.uid, 1 if c.uid in ("C1", "C3") else 2, c.task, c.category, root) for c in chat]
    sample = tmp_path / "sample.jsonl"
    write_records(sample, pairs)
    alice = [flabel("alice", "F1", "B"), flabel("alice", "F1", None, "undo"), flabel("alice", "F1", "A")]
    alice += [
        flabel("alice", u, v)
        for u, v in zip(["F2", "F3", "F4", "F5", "F6"], ["B", "unclear", "A", "B", "B"], strict=True)
    ]
    alice += [
        clabel("alice", "C1", "1"),
        clabel("alice", "C2", "1"),
        clabel("alice", "C3", "2"),
        clabel("alice", "C4", "tie"),
    ]
    bob = [flabel("bob", u, v) for u, v in zip(["F1", "F2", "F3", "F4", "F6"], ["A", "B", "B", "A", "A"], strict=True)]
    bob += [clabel("bob", "C1", "2"), clabel("bob", "C2", "2"), clabel("bob", "C3", "tie"), clabel("bob", "C4", "1")]
    files = [tmp_path / "alice.jsonl", tmp_path / "bob.jsonl"]
    write_records(files[0], alice)
    write_records(files[1], bob)
    return run, sample, files


def test_agreement_on_a_run_folder(tmp_path):
    run, sample, files = _run(tmp_path)
    result = ag.agreement(run, sample, files, seed=0, reps=200)
    json.dumps(result, allow_nan=False)  # plain JSON
    assert set(result["judges"]) == {"rule", "openai:judge", ag.STRICT_JUDGE, ag.OFFICIAL_JUDGE, "proxy"}
    # rule: F1 AA ok ok, F2 ok ok, F3 unclear vs (unclear ok, B no), F4 ok ok, F5 A vs B no, F6 B vs (B ok, A no)
    rule = result["judges"]["rule"]["foundation"]
    assert (rule["n"], rule["agree"], rule["pairs"]) == (11, 8, 6)
    assert rule["agreement"] == pytest.approx(8 / 11) and rule["ci_method"] == ag.BOOTSTRAP
    assert rule["ci_low"] <= 8 / 11 <= rule["ci_high"]
    assert rule["n_clear"] == 9 and rule["agreement_clear"] == pytest.approx(7 / 9)
    # majority: F1 A ok, F2 B ok, F3 none, F4 A ok, F5 B (bob did not label) no, F6 none
    assert rule["majority"]["n"] == 4 and rule["majority"]["agreement"] == pytest.approx(0.75)
    assert rule["majority"]["no_majority"] == 2
    assert rule["by_category"]["speech"]["agreement"] == pytest.approx(5 / 6)
    assert rule["by_category"]["music"]["agreement"] == pytest.approx(3 / 5)
    # strict: rule, then openai:judge where rule abstained (F3 -> B)
    strict = result["judges"][ag.STRICT_JUDGE]["foundation"]
    assert strict["agree"] == 8 and strict["judge_unclear"] == 0
    # official reads "I am not sure" as nothing: unclear
    assert result["judges"][ag.OFFICIAL_JUDGE]["foundation"]["judge_unclear"] == 2
    # Chat: proxy prefers the model on C1 (mean 8 vs 7.5 though the reference won one order), the reference on C2,
    # a tie on C3; C4 has one order only: not decided
    proxy = result["judges"]["proxy"]["chat"]
    assert proxy["missing"] == 1 and proxy["pairs"] == 3
    assert (proxy["n"], proxy["agree"]) == (6, 3)
    assert (proxy["n_no_ties"], proxy["agreement_no_ties"]) == (4, pytest.approx(0.5))
    # inter-annotator Foundation, 5 pairs both labelled: (A,A) x2, (B,B), (unclear,B), (B,A): p_o = 0.6,
    # alice A .4 B .4 unclear .2, bob A .6 B .4 -> p_e = 0.4 -> kappa = 0.2 / 0.6 = 1/3
    # alpha: o_AA 4, o_BB 2, o_AB = o_BA = o_UB = o_BU = 1; n 10; n_A 5 n_B 4 n_U 1 -> 1 - 9 * 4 / 58 = 22/58
    inter = result["inter_annotator"]["foundation"]
    assert inter["cohen_kappa"] == pytest.approx(1 / 3) and inter["n"] == 5
    assert inter["krippendorff_alpha"] == pytest.approx(22 / 58) and inter["n_alpha"] == 5
    assert inter["pairwise_agreement"] == pytest.approx(0.6)
    # Chat: alice model, reference, reference, tie; bob reference, model, tie, reference: p_o 0, p_e .375
    assert result["inter_annotator"]["chat"]["cohen_kappa"] == pytest.approx(-0.375 / 0.625)
    assert result["counts"]["undos"] == 1 and result["counts"]["labelled_pairs"] == 10
    assert result["annotators"] == ["alice", "bob"]
    # frames
    frame = result.frame
    assert set(frame["judge"]) == set(result["judges"]) | {ag.HUMANS}
    assert list(frame.columns) == list(ag.FRAME_COLUMNS)
    row = frame[(frame["judge"] == "proxy") & (frame["measure"] == "agreement_no_ties")].iloc[0]
    assert (row["n"], row["agreement"]) == (4, 0.5)
    table = result.disagreements
    f5 = table[(table["judge"] == "rule") & (table["uid"] == "F5")].iloc[0]
    assert f5["judge_decision"] == "A (happy)" and f5["human_labels"] == "alice: B (sad)"
    assert f5["audio"] == str(tmp_path / "audio-root" / "audio" / "F5.wav")
    assert not ((table["judge"] == "rule") & (table["uid"] == "F2")).any()
    c1 = table[(table["judge"] == "proxy") & (table["uid"] == "C1")].iloc[0]
    assert c1["humans_agreeing"] == "1/2" and "mean of both orders" in c1["judge_detail"]
    assert set(result.categories["category"]) == {"speech", "music", "sound"}


def test_rows_are_the_tables_the_cli_prints_and_notebook_06_shows(tmp_path):
    run, sample, files = _run(tmp_path)
    result = ag.agreement(run, sample, files, seed=0, reps=200)
    assert result.counts_line().startswith("10 of 10 pairs labelled by 2 annotator(s) (") and "1 undos" in (
        result.counts_line()
    )
    rows = result.judge_rows()
    assert list(rows[0]) == ["judge", "measure", "n", "agreement", "95% CI", "kappa", "majority", "n majority"]
    rule = next(r for r in rows if r["judge"] == "rule" and r["n"] == 11)
    assert rule["agreement"] == f"{8 / 11:.3f}" and rule["majority"] == "0.750" and rule["n majority"] == 4
    clear = next(r for r in rows if r["judge"] == "rule" and r["n"] == 9)  # Foundation without unclear
    assert clear["agreement"] == f"{7 / 9:.3f}" and clear["kappa"] == "" and clear["n majority"] == ""
    assert rows[-1]["judge"] == ag.HUMANS and all(r["95% CI"].startswith("[") for r in rows)
    inter = {r["kind"]: r for r in result.inter_annotator_rows()}
    assert inter["foundation"]["kappa"] == "0.333" and inter["foundation"]["n"] == 5
    assert inter["foundation"]["statistic"] == "Cohen's kappa" and inter["foundation"]["alpha"] == f"{22 / 58:.3f}"
    categories = result.category_rows()
    assert len(categories) == len(result.categories) and {r["category"] for r in categories} == {
        "speech",
        "music",
        "sound",
    }
    sound = next(r for r in categories if r["category"] == "sound")
    assert sound["95% CI"] == "[, ]"  # a statistic that could not be computed is blank, not nan


def test_agreement_bars(tmp_path):
    from airbench_nb.plots import agreement_bars

    run, sample, files = _run(tmp_path)
    fig = agreement_bars(ag.agreement(run, sample, files, reps=50).frame, last=(ag.HUMANS,))
    assert "n = votes: foundation 11, chat 6" in fig._suptitle.get_text()
    assert [ax.get_title() for ax in fig.axes] == ["Foundation (n = 11 votes)", "Chat (n = 6 votes)"]
    assert fig.axes[0].get_ylabel() and fig.axes[0].get_xlabel()
    assert [t.get_text() for t in fig.axes[1].get_xticklabels()] == ["proxy", ag.HUMANS]  # humans last
    assert agreement_bars(pd.DataFrame(columns=list(ag.FRAME_COLUMNS))) is None


def test_cli_agreement(tmp_path):
    run, sample, files = _run(tmp_path)
    runner = CliRunner()
    args = ["agreement", str(run), "--sample", str(sample), "--reps", "50", "--labels", str(files[0]), str(files[1])]
    shown = runner.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert "judge-human agreement" in shown.output and "Krippendorff" in shown.output
    as_json = runner.invoke(app, [*args, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["annotators"] == ["alice", "bob"]
    bad = tmp_path / "carol.jsonl"
    bad.write_text(flabel("carol", "F1", "A").model_dump_json() + "\n{not json\n")
    failed = runner.invoke(app, ["agreement", str(run), "--sample", str(sample), "--labels", str(bad)])
    assert failed.exit_code == 2
    assert f"{bad}:2" in failed.output.replace("\n", "")


def test_no_labels_and_judge_filter(tmp_path):
    run, sample, files = _run(tmp_path)
    undone = tmp_path / "undone.jsonl"
    write_records(undone, [flabel("dan", "F1", "A"), flabel("dan", "F1", None, "undo")])
    result = ag.agreement(run, sample, [undone], reps=50)
    assert result["judges"] == {} and result["inter_annotator"] == {}
    assert "no pair has a label" in result["reasons"]["labels"]
    assert result.frame.empty and result.disagreements.empty
    only = ag.agreement(run, sample, files, reps=50, judges=["rule", ag.OFFICIAL_JUDGE])
    assert set(only["judges"]) == {"rule", ag.OFFICIAL_JUDGE}
