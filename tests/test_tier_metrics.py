"""The tiered sound-source benchmark through the Metric protocol (issue 30, item 4).

Known answers on hand-made records (four clips of a 25-class hierarchy: 25 labels in every fine macro average):
a tier A model right on two clips, a tier B classifier whose ranking puts the gold class first, second, fourth and
nowhere, and tier D hits. The run-folder equality with :func:`airbench_nb.analysis.tiered_run.tiered_run` (every
tier, real tiny models) is in ``tests/test_tiered_run.py``; ``airbench-nb score`` on a tiered manifest is here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airbench_nb.builders.tiered import DATASET, source_items
from airbench_nb.cli import app
from airbench_nb.manifests import write_manifest, write_records
from airbench_nb.models.specs import closed_set_tier
from airbench_nb.records import OpenSourceItem, RankedLabel, Response, SoundSourceItem, SourceHits, Verdict
from airbench_nb.scoring import score_run
from airbench_nb.scoring.metrics import BaseMetric, Metric, metric_for
from airbench_nb.scoring.tiered import score_closed_set
from airbench_nb.synth.sources import hierarchy
from tests.test_refusals import RUNNER, _refused

FINE = ["truck_air_horn", "car_horn", "dog_bark", "wail"]
"""The gold class of each of the four clips (fine names of the built hierarchy)."""


def _items() -> tuple[list[SoundSourceItem], list[OpenSourceItem]]:
    pairs = [
        source_items(hierarchy(), fine, uid=f"c{k}", audio=f"c{k}.wav", audio_sha256=None, meta={}, dataset=DATASET)
        for k, fine in enumerate(FINE)
    ]
    return [closed for closed, _ in pairs], [opened for _, opened in pairs]


def _choice(item: SoundSourceItem, fine: str) -> int:
    return item.classes.index(fine)


def test_tier_a_known_answer():
    closed, _ = _items()
    model = "baseline:first"
    responses = [Response(uid=i.uid, model=model, text="X") for i in closed]
    # right on the first two clips, wrong on the third, no verdict on the fourth (unanswered)
    picks = [FINE[0], FINE[1], FINE[0]]
    verdicts = [
        Verdict(uid=i.uid, model=model, judge="rule", choice=_choice(i, pick))
        for i, pick in zip(closed, picks, strict=False)
    ]
    scores = score_run(closed, responses, verdicts, protocol="both", reps=0)
    for table in scores.protocols():
        section = table.metric_sections["tier_A"]
        assert section.tier == "A" and section.source == ["rule"]
        fine = section.measures
        assert section.average.value == 0.5 and section.average.correct == 2 and section.average.n == 4
        assert section.failed == 1 and section.average.failures == 1
        # 25 fine labels: recall 1 on two classes, 0 elsewhere; precision 1 on car_horn, 1/2 on truck_air_horn
        assert fine["fine macro_recall"].value == pytest.approx(2 / 25)
        assert fine["fine macro_fnr"].value == pytest.approx(1 - 2 / 25)
        assert fine["fine macro_precision"].value == pytest.approx(1.5 / 25)
        assert fine["fine macro_f1"].value == pytest.approx((2 / 3 + 1) / 25)
        assert "fine top-1 recall" not in fine  # one answer per item: no ranking
    expected = score_closed_set(
        closed[0].hierarchy(), FINE, [*picks, None], system=model, tier="A"
    )  # the analysis' computation
    section = scores.strict.metric_sections["tier_A"]
    for granularity in ("coarse", "fine"):
        metrics = getattr(expected, granularity)
        for name in ("macro_precision", "macro_recall", "macro_f1", "macro_fnr"):
            assert section.measures[f"{granularity} {name}"].value == getattr(metrics, name)
    assert scores.official.metric_sections["tier_A"] is scores.strict.metric_sections["tier_A"]  # protocol-free


def test_tier_b_ranking_known_answer():
    closed, _ = _items()
    model = "classifier:/x/ast"
    assert closed_set_tier(model) == "B"
    rankings = []
    for k, item in enumerate(closed):
        others = [c for c in item.choices if c != item.choices[_choice(item, item.fine)]]
        gold = item.choices[_choice(item, item.fine)]
        order = [*others[:k], gold, *others[k:]] if k < 3 else others[:5]  # gold at rank 1, 2, 3; absent
        rankings.append([RankedLabel(label=c, score=float(10 - r)) for r, c in enumerate(order[:6])])
    responses = [Response(uid=i.uid, model=model, text=None, ranking=r) for i, r in zip(closed, rankings, strict=True)]
    section = score_run(closed, responses, protocol="strict", reps=0).strict.metric_sections["tier_B"]
    assert section.tier == "B" and section.source == ["ranking"]
    assert section.average.value == 0.25  # the first-ranked class is gold on one clip
    # top-k: per-class recall over 25 fine labels, 4 of them with one item each
    assert section.measures["fine top-1 recall"].value == pytest.approx(1 / 25)
    assert section.measures["fine top-3 recall"].value == pytest.approx(3 / 25)
    assert section.measures["fine top-5 recall"].value == pytest.approx(3 / 25)
    assert section.measures["fine top-1 recall"].value == section.measures["fine macro_recall"].value


def test_tier_d_known_answer_and_no_f1():
    _, opened = _items()
    model = "baseline:first"
    responses = [Response(uid=i.uid, model=model, text="a horn") for i in opened]
    hits = [(True, True), (True, False), (False, False)]  # the fourth: no verdict
    verdicts = [
        Verdict(
            uid=i.uid,
            model=model,
            judge="sources",
            hits=SourceHits(category=c, subclass=s, named=[FINE[0]]),
        )
        for i, (c, s) in zip(opened, hits, strict=False)
    ]
    section = score_run(opened, responses, verdicts, protocol="strict", reps=0).strict.metric_sections["tier_D"]
    assert section.tier == "D" and section.source == ["sources"] and section.failed == 1
    assert section.average.value == 0.25  # one subclass hit of four
    assert section.measures["coarse accuracy"].value == 0.5  # two category hits
    assert "fine macro_f1" not in section.measures and section.reason  # n/a in tier D, and why
    assert section.measures["fine macro_recall"].value == pytest.approx(1 / 25)


def test_a_model_that_answered_no_tiered_item_gets_no_tier_section():
    closed, _ = _items()
    responses = [Response(uid="elsewhere", model="m", text="A")]
    table = score_run(closed, responses, protocol="strict", reps=0).strict
    assert table.metric_sections == {"tier_closed_set": None}


def test_the_tier_metrics_declare_the_protocol_members():
    for name in ("tier_closed_set", "tier_open_vocabulary"):
        metric = metric_for(name)
        assert isinstance(metric, Metric) and isinstance(metric, BaseMetric)
        assert metric.protocol_free and metric.serves(object())
    assert SoundSourceItem.METRICS == ("tier_closed_set",) and OpenSourceItem.METRICS == ("tier_open_vocabulary",)


# --- the CLI --------------------------------------------------------------------------------------------------------


def _tiered_files(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    closed, opened = _items()
    data = tmp_path / "data"
    write_manifest(data / "sound_source.jsonl", closed)
    write_manifest(data / "sound_source_open.jsonl", opened)
    (data / "dataset.json").write_text(json.dumps({"data_root": ".", "source": "test"}))
    model = "baseline:first"
    responses, verdicts = tmp_path / "r.jsonl", tmp_path / "v.jsonl"
    write_records(
        responses,
        [Response(uid=i.uid, model=model, text="A") for i in closed]
        + [Response(uid=i.uid, model=model, text="a horn") for i in opened],
    )
    write_records(
        verdicts,
        [Verdict(uid=i.uid, model=model, judge="rule", choice=_choice(i, FINE[0])) for i in closed]
        + [
            Verdict(uid=i.uid, model=model, judge="sources", hits=SourceHits(category=True, subclass=k == 0))
            for k, i in enumerate(opened)
        ],
    )
    return data / "sound_source.jsonl", data / "sound_source_open.jsonl", responses, verdicts


@pytest.mark.parametrize(("which", "tier", "average"), [(0, "A", 0.25), (1, "D", 0.25)])
def test_score_prints_the_tier_scores_of_a_tiered_manifest(tmp_path, which, tier, average):
    files = _tiered_files(tmp_path)
    args = ["score", "--manifest", str(files[which]), "--responses", str(files[2]), "--verdicts", str(files[3])]
    result = RUNNER.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    scores = json.loads(result.output)
    section = scores["strict"]["metric_sections"][f"tier_{tier}"]
    assert section["tier"] == tier and section["average"]["value"] == average and section["average"]["n"] == 4
    assert {"fine macro_f1", "coarse macro_recall", "fine accuracy"} & set(section["measures"])
    table = RUNNER.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert f"tier_{tier}" in table.output and "macro_recall" in table.output and "accuracy" in table.output


def test_score_still_refuses_kinds_no_metric_scores(tmp_path, monkeypatch):
    closed, _, responses, _ = _tiered_files(tmp_path)
    monkeypatch.setattr(SoundSourceItem, "METRICS", ())
    args = ["score", "--manifest", str(closed), "--responses", str(responses)]
    _refused(args, str(closed), "cannot score sound_source items", "no metric of the score table reads them")


def test_weighted_macro_f1_is_sklearns_with_and_without_weights():
    import numpy as np
    from sklearn.metrics import f1_score

    from airbench_nb.scoring.tier_intervals import weighted_macro_f1

    rng = np.random.default_rng(2)
    labels = ["a", "b", "c", "d", "e"]  # "e" never occurs: F1 0, as sklearn counts it over `labels`
    y_true = list(rng.choice(labels[:4], size=60))
    y_pred = [t if rng.random() < 0.6 else str(rng.choice([*labels[:4], "(no answer)"])) for t in y_true]
    weights = np.vstack([np.ones(60), rng.integers(0, 3, size=60).astype(float)])
    got = weighted_macro_f1(labels, y_true, y_pred, weights)
    for row, value in zip(weights, got, strict=True):
        expected = f1_score(y_true, y_pred, labels=labels, average="macro", sample_weight=row, zero_division=0)
        assert value == pytest.approx(expected, abs=1e-12)


def test_tier_intervals_hold_the_value_and_widen_where_clips_share_a_recording():
    closed, opened = _items()
    closed = [
        c.model_copy(update={"uid": f"{c.uid}-{r}", "audio": f"r{r}-{c.uid}.wav"}) for r in range(6) for c in closed
    ]
    model = "baseline:first"
    responses = [Response(uid=i.uid, model=model, text="X") for i in closed]
    # right on c0 and c1 of every recording group, wrong on c2, unanswered on c3
    verdicts = [
        Verdict(uid=i.uid, model=model, judge="rule", choice=_choice(i, FINE[0]))
        for i in closed
        if not i.uid.startswith("c3")
    ]
    section = score_run(closed, responses, verdicts, protocol="strict", reps=500).strict.metric_sections["tier_A"]
    for name in ("fine accuracy", "coarse accuracy", "fine macro_f1", "coarse macro_f1"):
        entry = section.measures[name]
        assert entry.ci_low <= entry.value <= entry.ci_high and entry.clusters is None, name
    assert section.average.ci_low == section.measures["fine accuracy"].ci_low
    assert section.measures["fine macro_precision"].ci_low is None  # no interval claimed for the others
    # every answer about one recording agrees: group the clips by recording and the interval widens
    grouped = [c.model_copy(update={"meta": {"cluster": c.uid.split("-")[0]}}) for c in closed]
    clustered = score_run(grouped, responses, verdicts, protocol="strict", reps=500).strict.metric_sections["tier_A"]
    wide, narrow = clustered.measures["fine accuracy"], section.measures["fine accuracy"]
    assert wide.value == narrow.value and wide.clusters == 4 and wide.design_effect > 2
    assert wide.ci_low <= narrow.ci_low and wide.ci_high >= narrow.ci_high
    assert (wide.ci_high - wide.ci_low) > (narrow.ci_high - narrow.ci_low)
