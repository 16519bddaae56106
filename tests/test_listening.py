"""The MOS listening test: the playlist (balanced, blind, seeded), the ratings session and tool, and the analysis.

The run folder is built once: two espeak-ng "systems" speak three texts and answer one question aloud (real wav
files written where :class:`RunFolder` says, with their SHA-256), a text-only model answers too, and one spoken
answer's file is missing. Planted ratings are written through the session; MOS, intervals, alpha and consistency are
checked against calculations done here by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from typer.testing import CliRunner

from airbench_nb.analysis.mos import RatingsError, mos, wer_correlation
from airbench_nb.annotate.listening import ListeningSession, ListeningTool, entry_html, listening_key_action
from airbench_nb.annotate.listening_playlist import draw_playlist, listener_entries, read_playlist
from airbench_nb.cli import app
from airbench_nb.manifests import write_records
from airbench_nb.records import ListeningEntry, Rating, Response
from airbench_nb.run_folder import RunFolder
from tests.browser.lab import SPEAKERS, SPOKEN_TEXTS, write_spoken_run

A, B = SPEAKERS  # the two systems' model specs
PLANTED = {  # (listener, uid, model) -> the rating of the first presentation
    **{("L1", u, A): s for u, s in zip(SPOKEN_TEXTS, (5, 4, 4), strict=True)},
    **{("L2", u, A): s for u, s in zip(SPOKEN_TEXTS, (4, 4, 3), strict=True)},
    **{("L3", u, A): s for u, s in zip(SPOKEN_TEXTS, (5, 5, 4), strict=True)},
    **{("L1", u, B): s for u, s in zip(SPOKEN_TEXTS, (2, 1, 2), strict=True)},
    **{("L2", u, B): s for u, s in zip(SPOKEN_TEXTS, (3, 2, 2), strict=True)},
    **{("L3", u, B): s for u, s in zip(SPOKEN_TEXTS, (2, 1, 1), strict=True)},
}
SKIPPED = ("L3", "tts-3", B)
"""Left unrated (skipped): counted, never guessed."""
REPEAT_SHIFT = {"L1": 0, "L2": 1, "L3": -2}
"""How each listener's repeated rating differs from their first one (clipped to 1-5)."""
REPS = 300


@pytest.fixture(scope="session")
def spoken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_spoken_run(tmp_path_factory.mktemp("spoken") / "run")


@pytest.fixture
def run_copy(spoken: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(spoken, tmp_path / "run"))


def _repeat_score(listener: str, first: int) -> int:
    return min(5, max(1, first + REPEAT_SHIFT[listener]))


@pytest.fixture(scope="session")
def rated(spoken: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run with a playlist (3 listeners, 3 items per system, 1 repeat) and the planted ratings."""
    run = Path(shutil.copytree(spoken, tmp_path_factory.mktemp("rated") / "run"))
    report = draw_playlist(run, listeners=3, clips_per_system=3, repeats=1, seed=7, write=True)
    for listener in report.listeners:
        session = ListeningSession(
            listener_entries(report.entries, listener), RunFolder(run).listening_ratings(listener), listener
        )
        skipped = False
        while (entry := session.current) is not None:
            key = (listener, entry.uid, entry.model)
            if key == SKIPPED and not entry.repeat:
                if skipped:
                    break
                session.skip()
                skipped = True
                continue
            first = PLANTED[key]
            session.rate(_repeat_score(listener, first) if entry.repeat else first)
    return run


# -- the playlist ----------------------------------------------------------------------------------------------------


def test_playlist_is_balanced_blind_and_seeded(spoken: Path):
    report = draw_playlist(spoken, listeners=3, clips_per_system=3, repeats=1, seed=5)
    assert sorted(report.systems.values()) == sorted(SPEAKERS)  # the text-only model is no system
    assert report.excluded["audio_missing"] == 1 and report.spoken_answers == 7
    assert report.shared_items == 3 and all(sorted(v) == sorted(SPOKEN_TEXTS) for v in report.items.values())
    stimuli = {(e.model, e.uid) for e in report.entries}
    assert len(stimuli) == 6
    orders = []
    for listener in report.listeners:
        mine = listener_entries(report.entries, listener)
        assert [e.position for e in mine] == list(range(1, 8))
        firsts = [e for e in mine if not e.repeat]
        assert sorted((e.model, e.uid) for e in firsts) == sorted(stimuli)  # every stimulus once
        (again,) = [e for e in mine if e.repeat]
        original = next(e for e in firsts if e.stimulus_id == again.stimulus_id)
        assert again.entry_id == f"{original.entry_id}~2" and again.position - original.position >= 2
        orders.append([e.entry_id for e in mine])
    assert len({tuple(o) for o in orders}) == 3  # an order of each listener's own
    # blind: opaque ids, and what the listener sees names neither the model nor the system
    for entry in report.entries:
        assert entry.system_id.startswith("sys-") and entry.model not in entry.system_id
        shown = entry_html(entry, entry.position, 7)
        assert entry.model not in shown and entry.system_id not in shown and entry.prompt in shown
    # seeded: the same seed, the same playlist; another seed, other orders
    again = draw_playlist(spoken, listeners=3, clips_per_system=3, repeats=1, seed=5)
    assert [e.model_dump(exclude={"created"}) for e in again.entries] == [e.model_dump() for e in report.entries]
    other = draw_playlist(spoken, listeners=3, clips_per_system=3, repeats=1, seed=6)
    assert [e.entry_id.split("~")[0] for e in other.entries] != [e.entry_id.split("~")[0] for e in report.entries]


def test_playlist_fills_up_a_system_when_fewer_items_are_shared(spoken: Path):
    report = draw_playlist(spoken, listeners=1, clips_per_system=4, repeats=0, seed=0)
    by_model = {report.systems[s]: uids for s, uids in report.items.items()}
    assert report.shared_items == 3
    assert sorted(by_model[A]) == sorted([*SPOKEN_TEXTS, "ask-1"]) and sorted(by_model[B]) == sorted(SPOKEN_TEXTS)
    asked = next(e for e in report.entries if e.uid == "ask-1")
    assert asked.prompt_kind == "question" and asked.prompt == "What is two plus three?"
    assert next(e for e in report.entries if e.uid == "tts-1").prompt == SPOKEN_TEXTS["tts-1"]


def test_a_run_without_spoken_answers_and_bad_parameters_are_refused(run_copy: Path):
    folder = RunFolder(run_copy)
    for model in SPEAKERS:
        path = folder.responses_file(model, "speech_generation")
        write_records(path, [Response(uid="tts-1", model=model, text="said in text")])
    with pytest.raises(ValueError, match="no usable spoken answer in the run"):
        draw_playlist(run_copy)
    with pytest.raises(ValueError, match="listeners must be 1 or more"):
        draw_playlist(run_copy, listeners=0)


def test_playlist_file_round_trips_and_is_never_replaced_by_another(run_copy: Path):
    report = draw_playlist(run_copy, listeners=2, clips_per_system=2, repeats=1, seed=1, write=True)
    assert report.path == RunFolder(run_copy).listening_playlist
    assert read_playlist(report.path) == report.entries
    draw_playlist(run_copy, listeners=2, clips_per_system=2, repeats=1, seed=1, write=True)  # the same: a no-op
    with pytest.raises(FileExistsError, match="different playlist"):
        draw_playlist(run_copy, listeners=2, clips_per_system=2, repeats=1, seed=2, write=True)
    with pytest.raises(ValueError, match="listener 'L9' is not in the playlist; its listeners are L1, L2"):
        listener_entries(report.entries, "L9")


# -- rating: the session and the tool -------------------------------------------------------------------------------


def test_session_rates_skips_undoes_and_resumes(run_copy: Path):
    report = draw_playlist(run_copy, listeners=1, clips_per_system=2, repeats=1, seed=3, write=True)
    entries = listener_entries(report.entries, "L1")
    path = RunFolder(run_copy).listening_ratings("L1")
    session = ListeningSession(entries, path, "L1")
    session.rate(4)
    with pytest.raises(ValueError, match="a rating is 1 to 5"):
        session.rate(6)
    session.skip()
    session.rate(2)
    session.undo()
    assert session.current == entries[2] and session.progress == (1, 5)
    reopened = ListeningSession(entries, path, "L1")  # a new kernel: the file is replayed
    assert reopened.current == entries[2] and reopened.labels[entries[0].entry_id].score == 4
    assert [a.action for a in reopened.actions] == ["label", "skip", "label", "undo"]
    with pytest.raises(ValueError, match="needs a score from 1 to 5"):
        Rating(entry_id="x", listener="L1", action="label")


def test_tool_rates_with_keys_and_buttons_and_plays_the_clip(run_copy: Path):
    report = draw_playlist(run_copy, listeners=2, clips_per_system=2, repeats=0, seed=3, write=True)
    tool = ListeningTool(run_copy, report.entries)
    assert tool.session is None and tool.press("3") is None and "L1, L2" in tool.status
    tool.start("L7")
    assert tool.session is None and "not in the playlist" in tool.status
    tool.start("L2")
    first = tool.session.current
    played = tool.controls["audio"].value
    assert played == RunFolder(run_copy).response_audio_path(first.model, first.audio).read_bytes()
    assert played[:4] == b"RIFF" and first.model not in tool.controls["entry"].value
    assert tool.press("4") == "rate" and "rated 4 (Good)" in tool.status
    tool.controls["scores"][0].click()  # "1 Bad"
    assert [r.score for r in tool.session.labels.values()] == [4, 1]
    assert tool.press("n") == "skip" and tool.press("u") == "undo" and tool.session.progress == (1, 4)
    assert listening_key_action(None, "3") is None and listening_key_action(first, "x") is None


def test_a_changed_clip_is_not_played(run_copy: Path):
    report = draw_playlist(run_copy, listeners=1, clips_per_system=1, repeats=0, seed=0, write=True)
    entry = report.entries[0]
    RunFolder(run_copy).response_audio_path(entry.model, entry.audio).write_bytes(b"RIFF not the same")
    tool = ListeningTool(run_copy, report.entries, listener="L1")
    assert "changed since the playlist was drawn" in tool.status and tool.controls["audio"].value == b""


# -- the analysis ----------------------------------------------------------------------------------------------------


def _hand_bootstrap(model: str, reps: int, seed: int) -> tuple[float, float]:
    """The two-way bootstrap of the docstring, written out with loops over the planted ratings."""
    listeners, items = ["L1", "L2", "L3"], sorted(SPOKEN_TEXTS)
    rng = np.random.default_rng(seed)
    draw_l = rng.integers(0, 3, size=(reps, 3))
    draw_i = rng.integers(0, 3, size=(reps, 3))
    means = []
    for r in range(reps):
        values = [
            PLANTED[(listeners[a], items[b], model)]
            for a in draw_l[r]
            for b in draw_i[r]
            if (listeners[a], items[b], model) != SKIPPED
        ]
        if values:
            means.append(sum(values) / len(values))
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def test_mos_and_intervals_equal_a_hand_calculation(rated: Path):
    result = mos(rated, reps=REPS, seed=11)
    by_model = {s.model: s for s in result.systems}
    hand_a = [v for (_, _, m), v in PLANTED.items() if m == A]
    hand_b = [v for (lst, u, m), v in PLANTED.items() if m == B and (lst, u, m) != SKIPPED]
    assert by_model[A].mos == pytest.approx(sum(hand_a) / 9) and by_model[A].n == 9
    assert by_model[B].mos == pytest.approx(sum(hand_b) / 8) and by_model[B].n == 8
    assert by_model[B].unrated == 1 and by_model[A].unrated == 0  # the skipped clip: counted, not guessed
    assert by_model[B].std == pytest.approx(float(np.std(hand_b, ddof=1)))
    assert (by_model[A].ci_low, by_model[A].ci_high) == pytest.approx(_hand_bootstrap(A, REPS, 11))
    assert (by_model[B].ci_low, by_model[B].ci_high) == pytest.approx(_hand_bootstrap(B, REPS, 11))
    assert [s.model for s in result.systems] == [A, B]  # best first
    frame = result.frame()
    assert list(frame["model"]) == [A, B] and {"mos", "ci_low", "ci_high", "n", "unrated"} <= set(frame.columns)
    # repeated presentations are read for consistency only: MOS is over first presentations
    assert result.ratings["repeat"].sum() == 3 and len(result.ratings) == 17 + 3


def test_alpha_equals_the_krippendorff_package_on_the_planted_matrix(rated: Path):
    result = mos(rated, reps=50, seed=0)
    stimuli = sorted({(u, m) for (_, u, m) in PLANTED})
    matrix = np.array(
        [
            [np.nan if (lst, u, m) == SKIPPED else PLANTED[(lst, u, m)] for (u, m) in stimuli]
            for lst in ("L1", "L2", "L3")
        ]
    )
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
    assert result.agreement.alpha == pytest.approx(expected)
    assert result.agreement.stimuli == 6 and result.agreement.listeners == 3
    assert -1 <= result.agreement.ci_low < result.agreement.ci_high <= 1  # percentile bootstrap over stimuli


def test_consistency_on_the_repeated_clips(rated: Path):
    playlist = read_playlist(RunFolder(rated).listening_playlist)
    result = mos(rated, reps=20)
    rows = {c.listener: c for c in result.listeners}
    for listener, shift in REPEAT_SHIFT.items():
        (again,) = [e for e in playlist if e.listener == listener and e.repeat]
        first = PLANTED[(listener, again.uid, again.model)]
        row = rows[listener]
        if (listener, again.uid, again.model) == SKIPPED:
            assert row.n == 0 and row.mean_abs_diff is None
            continue
        assert row.n == 1 and row.repeats == 1
        assert row.mean_abs_diff == abs(_repeat_score(listener, first) - first)
        assert row.identical == (1.0 if shift == 0 else 0.0)
    assert rows["L3"].unrated == 1 and rows["L1"].unrated == 0 and rows["L1"].rated == 6


def test_spearman_with_wer_equals_the_rank_formula():
    mos_by = {"a": 4.5, "b": 3.1, "c": 2.0, "d": 3.9}
    wer = {"a": 0.05, "b": 0.30, "c": 0.20, "d": 0.10}
    got = wer_correlation(mos_by, wer)
    ranks_mos = {"a": 4, "d": 3, "b": 2, "c": 1}
    ranks_wer = {"a": 1, "d": 2, "c": 3, "b": 4}
    d2 = sum((ranks_mos[k] - ranks_wer[k]) ** 2 for k in mos_by)
    assert got.rho == pytest.approx(1 - 6 * d2 / (4 * (4**2 - 1))) and got.n == 4 and got.p_value is not None
    assert "Spearman rho = -0.80" in got.text()
    short = wer_correlation({"a": 4.0, "b": 3.0}, {"a": 0.1, "b": 0.2})
    assert short.rho is None and "needs 3 or more systems" in short.reason


def test_mos_takes_wer_by_system_id_and_names_bad_ratings_files(rated: Path, tmp_path: Path):
    result = mos(rated, wer={A: 0.1, next(s.system_id for s in mos(rated, reps=5).systems if s.model == B): 0.3})
    assert result.correlation is not None and result.correlation.n == 2 and result.correlation.rho is None
    bad = Path(shutil.copytree(rated, tmp_path / "bad"))
    path = RunFolder(bad).listening_ratings("L2")
    with open(path, "a") as handle:
        handle.write(json.dumps({"entry_id": "nope", "listener": "L2", "action": "label", "score": 3}) + "\n")
    with pytest.raises(RatingsError, match=r"L2\.ratings\.jsonl, line \d+, field entry_id: 'nope' is not in L2"):
        mos(bad, reps=5)


def test_cli_sample_listening_and_mos(rated: Path, run_copy: Path):
    runner = CliRunner()
    drawn = runner.invoke(app, ["sample-listening", str(run_copy), "--listeners", "2", "--clips-per-system", "2"])
    assert drawn.exit_code == 0, drawn.output
    assert "playlist written" in drawn.output and "sys-" in drawn.output
    assert len(read_playlist(RunFolder(run_copy).listening_playlist)) == 2 * (4 + 2)
    other = runner.invoke(app, ["sample-listening", str(run_copy), "--listeners", "2", "--seed", "9"])
    assert other.exit_code == 2 and "different playlist" in other.output
    out = runner.invoke(app, ["mos", str(rated), "--reps", "50", "--json", "--wer", f"{A}=0.1", "--wer", f"{B}=0.3"])
    assert out.exit_code == 0, out.output
    body = json.loads(out.output)
    assert [s["model"] for s in body["systems"]] == [A, B] and body["correlation"]["n"] == 2
    table = runner.invoke(app, ["mos", str(rated), "--reps", "50"])
    assert table.exit_code == 0 and "Krippendorff's alpha, ordinal" in table.output
    assert runner.invoke(app, ["mos", str(rated), "--wer", "nonsense"]).exit_code == 2
    missing = runner.invoke(app, ["mos", str(run_copy.parent)])
    assert missing.exit_code == 2 and "no listening playlist" in missing.output


def test_listening_entry_is_a_strict_record():
    with pytest.raises(ValueError, match="audio_sha256"):
        ListeningEntry(
            listener="L1",
            position=1,
            entry_id="e",
            stimulus_id="e",
            system_id="s",
            model="m",
            uid="u",
            task="tts",
            prompt="p",
            prompt_kind="text",
            audio="audio/u.wav",
            audio_sha256="not a hash",
            duration_s=1.0,
        )


def test_notebook_06_headless_reports_the_mos(rated: Path, tmp_path: Path):
    import papermill

    from airbench_nb.nbresults import read_results

    out = tmp_path / "06.ipynb"
    papermill.execute_notebook(
        str(Path(__file__).resolve().parents[1] / "notebooks" / "06_annotate.ipynb"),
        str(out),
        kernel_name="python3",
        cwd=str(tmp_path),
        progress_bar=False,
        parameters={"run_dir": str(rated), "reps": 50, "listening_wer": {A: 0.1, B: 0.3}},
    )
    listening = read_results(out)["annotate"]["listening"]
    assert [s["model"] for s in listening["systems"]] == [A, B] and listening["systems"][1]["unrated"] == 1
    assert listening["agreement"]["stimuli"] == 6 and listening["correlation"]["n"] == 2
