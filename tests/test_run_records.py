"""The one reader of a run's records: latest responses, the verdicts that count, per model, kind and judge.

A small hand-written run folder with reruns, superseded and stale verdicts gives known answers; the planted run (with
reruns appended) shows that scoring and the analyses read through the reader exactly what their own loaders read
before it existed (those loaders are kept here, verbatim in substance, as the reference).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airbench_nb.analysis.data import load_run
from airbench_nb.manifests import ManifestError, read_manifest, read_records, write_records
from airbench_nb.records import TIERED_KINDS, Response, Verdict
from airbench_nb.run_folder import KINDS, RunFolder
from airbench_nb.run_records import RunRecords, current_verdicts, latest_responses, verdict_file_judge
from airbench_nb.scoring import score_models, score_run_folder
from tests.planted_run import write_planted_run

A, B = "m:a", "m:b"


def _r(uid: str, text: str, model: str = A) -> Response:
    return Response(uid=uid, model=model, text=text)


def _v(uid: str, judge: str, response: Response | None, model: str = A, **fields) -> Verdict:
    return Verdict(
        uid=uid,
        model=model,
        judge=judge,
        response_hash=response.content_hash() if response is not None else None,
        **fields,
    )


@pytest.fixture
def small(tmp_path: Path) -> tuple[RunFolder, dict[str, object]]:
    """Model ``m:a``: u1 answered twice (the rerun wins), its old verdict stale; u2 judged twice; chat both orders."""
    folder = RunFolder(tmp_path / "run")
    u1_old, u1, u2 = _r("u1", "A"), _r("u1", "C"), _r("u2", "B")
    c1 = _r("c1", "a long answer")
    write_records(folder.responses_file(A, "foundation"), [u1_old, u2, u1])
    write_records(folder.responses_file(A, "chat"), [c1])
    write_records(folder.responses_file(B, "foundation"), [_r("u1", "D", B)])
    stale = _v("u1", "rule", u1_old, choice=0)
    first, rerun = _v("u2", "rule", u2, choice=0), _v("u2", "rule", u2, choice=1)
    unhashed = _v("u3", "rule", None, choice=2)  # a file written before response_hash: counts
    write_records(folder.verdicts_file(A, "foundation", "rule"), [stale, first, rerun, unhashed])
    proxy = _v("u1", "proxy", u1, choice=3)
    write_records(folder.verdicts_file(A, "foundation", "proxy"), [proxy])
    ref1 = _v("c1", "j", c1, order="reference_first", score_reference=8.0, score_hypothesis=5.0)
    hyp = _v("c1", "j", c1, order="hypothesis_first", score_reference=8.0, score_hypothesis=6.0)
    ref2 = _v("c1", "j", c1, order="reference_first", score_reference=7.0, score_hypothesis=4.0)
    write_records(folder.verdicts_file(A, "chat", "j"), [ref1, hyp, ref2])
    tiered = _v("t1", "rule", None, choice=0)
    write_records(folder.verdicts_file(A, "sound_source", "rule"), [tiered])
    batch = RunFolder.batch_requests_file(folder.verdicts_file(A, "chat", "j"), 0)
    batch.write_text('{"not": "a verdict"}\n', encoding="utf-8")  # never read as verdicts
    known = {
        "u1": u1,
        "u2": u2,
        "rerun": rerun,
        "unhashed": unhashed,
        "proxy": proxy,
        "ref2": ref2,
        "hyp": hyp,
        "tiered": tiered,
    }
    return folder, known


def test_the_latest_response_wins_and_superseded_ones_are_counted(small) -> None:
    folder, known = small
    records = RunRecords(folder)
    assert records.model_dirs() == ["m_a", "m_b"]
    latest = records.latest("m_a", ["foundation"])
    assert latest.by_uid == {"u1": known["u1"], "u2": known["u2"]} and latest.superseded == 1
    assert list(latest.by_uid) == ["u1", "u2"]  # first-seen order
    assert set(records.latest("m_a").by_uid) == {"u1", "u2", "c1"}  # every kind by default
    by_model = records.latest_by_model(models=[A])
    assert list(by_model) == [A] and by_model[A].superseded == 1


def test_current_verdicts_drop_superseded_and_stale_ones(small) -> None:
    folder, known = small
    records = RunRecords(folder)
    latest = records.latest("m_a").by_uid
    current = records.current("m_a", latest, ["foundation"], ["rule"])
    assert current.verdicts == [known["rerun"], known["unhashed"]]
    assert (current.superseded, current.stale) == (1, 1)
    assert current.counts() == {"verdicts": 1, "stale_verdicts": 1}
    chat = records.current("m_a", latest, ["chat"]).verdicts
    assert chat == [known["ref2"], known["hyp"]]  # the rerun of reference_first replaced the first one, in its place
    everything = records.verdicts("m_a")
    assert known["tiered"] in everything and len(everything) == 9  # every file, the Batch API file left out
    assert known["tiered"] not in records.verdicts("m_a", skip_kinds=TIERED_KINDS)
    assert [p.name for p in records.verdict_files("m_a", judges=["rule"])] == [
        "foundation.rule.jsonl",
        "sound_source.rule.jsonl",
    ]
    judges = [verdict_file_judge(p) for p in records.verdict_files("m_a", ["chat", "foundation"])]
    assert judges == ["j", "proxy", "rule"]
    # the module's functions are the rules scoring applies (re-exported there)
    from airbench_nb.scoring import outcomes

    assert outcomes.current_verdicts is current_verdicts and outcomes.latest_responses is latest_responses


def test_the_deciding_verdict_is_the_first_judge_with_a_current_one(small) -> None:
    folder, known = small
    records = RunRecords(folder)
    latest = records.latest("m_a", ["foundation"]).by_uid
    assert records.deciding("m_a", latest, "foundation", ["proxy", "rule"]) == {
        "u1": known["proxy"],  # proxy first; rule's u1 verdict is stale anyway
        "u2": known["rerun"],
        "u3": known["unhashed"],
    }
    assert records.deciding("m_a", latest, "foundation", ["rule", "proxy"])["u1"] == known["proxy"]
    assert records.deciding("m_a", latest, "foundation", ["nobody"]) == {}


def test_a_bad_line_raises_unless_lenient_and_each_file_is_read_once(small) -> None:
    folder, _ = small
    path = folder.responses_file(A, "foundation")
    with path.open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    strict = RunRecords(folder)
    with pytest.raises(ManifestError):
        strict.latest("m_a", ["foundation"])
    lenient = strict.lenient()
    assert set(lenient.latest("m_a", ["foundation"]).by_uid) == {"u1", "u2"}
    path.write_text("", encoding="utf-8")  # read already: the reader answers from what it read
    assert set(lenient.latest("m_a", ["foundation"]).by_uid) == {"u1", "u2"}


def test_the_fingerprint_follows_the_files(small) -> None:
    folder, _ = small
    before = RunRecords(folder).fingerprint()
    assert RunRecords(folder).fingerprint() == before
    with folder.verdicts_file(A, "chat", "j").open("a", encoding="utf-8") as handle:
        handle.write(_v("c2", "j", None, order="reference_first").model_dump_json() + "\n")
    assert RunRecords(folder).fingerprint() != before


# --- the loaders read what they read before the reader --------------------------------------------------------------


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> RunFolder:
    """The planted run, with a rerun of some answers (changed) and of some verdicts appended to its files."""
    folder = RunFolder(write_planted_run(tmp_path_factory.mktemp("planted") / "run", per_task=6, snr_items=4))
    for model_dir in folder.model_dirs():
        path = model_dir / "foundation.jsonl"
        answers = read_records(path, Response)
        reruns = [r.model_copy(update={"text": "B"}) for r in answers[:5]]
        write_records(path, [*answers, *reruns])
        verdicts = folder.verdicts_dir / model_dir.name / "foundation.rule.jsonl"
        old = read_records(verdicts, Verdict)
        write_records(verdicts, [*old, *(v.model_copy(update={"choice": 1}) for v in old[5:9])])
    return folder


def _old_score_runs(folder: RunFolder, kinds=KINDS) -> list[tuple[list[Response], list[Verdict]]]:
    """``score_run_folder``'s loader before the reader."""
    manifests = folder.manifests(kinds)
    runs = []
    for model_dir in folder.model_dirs():
        paths = [model_dir / f"{kind}.jsonl" for kind in manifests]
        responses = [r for path in paths if path.is_file() for r in read_records(path, Response)]
        if not responses:
            continue
        verdicts = [v for path in folder.verdict_files(model_dir.name) for v in read_records(path, Verdict)]
        runs.append((responses, verdicts))
    return runs


def test_scoring_reads_the_same_records(planted: RunFolder) -> None:
    items = [i for path in planted.manifests(KINDS).values() for i in read_manifest(path)]
    _, before = score_models(items, _old_score_runs(planted), reps=50)
    _, now = score_run_folder(planted, reps=50)
    assert now.to_json() == before.to_json()
    duplicates = {k: run.strict.duplicates for k, run in now.items() if run.strict is not None}
    assert duplicates and all(d["responses"] == 5 and d["verdicts"] == 4 for d in duplicates.values()), duplicates


def test_the_analysis_loader_reads_the_same_records(planted: RunFolder) -> None:
    kinds = [k for k in KINDS if k not in TIERED_KINDS]
    responses: dict[str, dict[str, Response]] = {}
    verdicts: dict[str, list[Verdict]] = {}
    duplicates = 0
    for model_dir in planted.model_dirs():  # load_run's loader before the reader
        for kind in kinds:
            path = model_dir / f"{kind}.jsonl"
            if path.is_file():
                for response in read_records(path, Response):
                    by_uid = responses.setdefault(response.model, {})
                    duplicates += response.uid in by_uid
                    by_uid[response.uid] = response
        for path in planted.verdict_files(model_dir.name):
            if path.name.split(".", 1)[0] not in TIERED_KINDS:
                for verdict in read_records(path, Verdict):
                    verdicts.setdefault(verdict.model, []).append(verdict)
    run = load_run(planted.path)
    assert run.responses == responses and list(run.responses) == list(responses)
    assert run.verdicts == verdicts and run.duplicate_responses == duplicates == 15
    for model in run.models:
        assert run.current_verdicts(model) == current_verdicts(verdicts[model], responses[model])[0]
    shared = RunRecords(planted)
    again = load_run(planted.path, records=shared, models=[run.models[0]])
    assert again.models == [run.models[0]] and again.responses[run.models[0]] == responses[run.models[0]]
