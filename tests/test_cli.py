"""The command line, as a user types it: build, infer, judge, score, score-official, mix."""

import json

from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.manifests import write_manifest
from airbench_nb.records import FoundationItem

runner = CliRunner()


def test_build_infer_judge_score(tmp_path):
    data = tmp_path / "data"
    built = runner.invoke(
        app,
        [
            "build",
            "--preset",
            "tiny",
            "--out",
            str(data),
            "--task",
            "Music_Midi_Pitch_Analysis",
            "--task",
            "Speaker_Gender_Recognition",
            "--task",
            "sound_QA",
        ],
    )
    assert built.exit_code == 0, built.output
    assert "built 4 Foundation + 2 Chat items" in built.output
    assert "and 2 SNR-graded Foundation items at -5, +5 dB" in built.output  # the tiny preset grades one gender item
    for kind in ("foundation", "chat"):
        out = tmp_path / f"{kind}.responses.jsonl"
        inferred = runner.invoke(
            app,
            [
                "infer",
                "--model",
                "baseline:oracle",
                "--manifest",
                str(data / f"{kind}.jsonl"),
                "--out",
                str(out),
                "--official-out",
                str(tmp_path / f"{kind}.official.jsonl"),
            ],
        )
        assert inferred.exit_code == 0, inferred.output
    judged = runner.invoke(
        app,
        [
            "judge",
            "--judge",
            "rule",
            "--manifest",
            str(data / "foundation.jsonl"),
            "--responses",
            str(tmp_path / "foundation.responses.jsonl"),
            "--out",
            str(tmp_path / "v.jsonl"),
        ],
    )
    assert judged.exit_code == 0, judged.output
    scored = runner.invoke(
        app,
        [
            "score",
            "--manifest",
            str(data / "foundation.jsonl"),
            "--responses",
            str(tmp_path / "foundation.responses.jsonl"),
            "--verdicts",
            str(tmp_path / "v.jsonl"),
            "--json",
        ],
    )
    assert scored.exit_code == 0, scored.output
    result = json.loads(scored.output)
    assert result["strict"]["foundation"]["average"]["value"] == 1.0
    assert result["official"]["foundation"]["average"]["value"] == 1.0
    proxy = runner.invoke(
        app,
        [
            "judge",
            "--judge",
            "proxy",
            "--manifest",
            str(data / "chat.jsonl"),
            "--responses",
            str(tmp_path / "chat.responses.jsonl"),
            "--out",
            str(tmp_path / "cv.jsonl"),
        ],
    )
    assert proxy.exit_code == 0, proxy.output
    chat_scores = runner.invoke(
        app,
        [
            "score",
            "--manifest",
            str(data / "chat.jsonl"),
            "--responses",
            str(tmp_path / "chat.responses.jsonl"),
            "--verdicts",
            str(tmp_path / "cv.jsonl"),
        ],
    )
    assert chat_scores.exit_code == 0, chat_scores.output
    assert "Chat scores by: proxy (sentence-embedding similarity" in chat_scores.output
    official_rows = [json.loads(line) for line in (tmp_path / "foundation.official.jsonl").read_text().splitlines()]
    uniq = [row["uniq_id"] for row in official_rows]
    # the 4 clean built items: no source id, so their uids are unique; the SNR-graded and rotated copies are left out
    assert len(uniq) == len(set(uniq)) == 4
    rescored = runner.invoke(
        app, ["score-official", "--foundation", str(tmp_path / "foundation.official.jsonl"), "--json"]
    )
    assert rescored.exit_code == 0, rescored.output
    official = json.loads(rescored.output)["official"]["foundation"]
    assert official["subsets"]["Music_Midi_Pitch_Analysis_synthetic"] == {
        **official["subsets"]["Music_Midi_Pitch_Analysis_synthetic"],
        "n": 2,
        "correct": 2,
        "accuracy": 1.0,
    }
    assert official["failed"] == 0


def test_user_errors_exit_2_with_a_message(tmp_path):
    bad_model = runner.invoke(
        app, ["infer", "--model", "gpt4", "--manifest", str(tmp_path / "m.jsonl"), "--out", str(tmp_path / "r.jsonl")]
    )
    assert bad_model.exit_code == 2
    bad_preset = runner.invoke(app, ["build", "--preset", "huge", "--out", str(tmp_path / "d")])
    assert bad_preset.exit_code == 2 and "unknown preset" in bad_preset.output
    bad_judge = runner.invoke(app, ["judge", "--judge", "llm", "--manifest", "m", "--responses", "r", "--out", "v"])
    assert bad_judge.exit_code == 2
    nothing = runner.invoke(app, ["score-official"])
    assert nothing.exit_code != 0


def test_refusals_are_one_line_naming_where(tmp_path, capsys):
    from airbench_nb.cli.app import EXIT_BAD_INPUT, refuse

    exit_ = refuse("not an integer", file=tmp_path / "m.jsonl", line=3, item="u1", field="answer")
    assert exit_.exit_code == EXIT_BAD_INPUT == 2
    assert (
        capsys.readouterr().err.strip() == f"error: {tmp_path / 'm.jsonl'}:3: item 'u1': field 'answer': not an integer"
    )
    refuse("no such run folder", file="reports/x")
    assert capsys.readouterr().err.strip() == "error: reports/x: no such run folder"
    manifest, responses = tmp_path / "m.jsonl", tmp_path / "r.jsonl"
    write_manifest(
        manifest,
        [
            FoundationItem(
                uid="u1", dataset="d", audio="a.wav", question="Q?", task="Music_AQA", choices=["x", "y"], answer=0
            )
        ],
    )
    responses.write_text("")
    # once a usage box of click (typer.BadParameter), now one line like every other refusal, still exit 2
    for args, needle in [
        (
            ["score", "--manifest", "m", "--responses", "r", "--protocol", "nope"],
            "--protocol must be official, strict or both",
        ),
        (["analyze", str(tmp_path), "--protocol", "nope"], "--protocol must be strict or official, got 'nope'"),
        (["score-official"], "give --foundation and/or --chat"),
        (
            ["judge", "--judge", "rule", "--manifest", str(manifest), "--responses", str(responses)]
            + ["--out", str(tmp_path / "v.jsonl"), "--prices", str(tmp_path / "none.json")],
            f"{tmp_path / 'none.json'}: cannot read the price table",
        ),
    ]:
        result = runner.invoke(app, args)
        lines = result.stderr.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error:"), (args, result.stderr)
        assert needle in lines[0], (needle, lines[0])
