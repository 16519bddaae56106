import json
import re

import nbformat
import pytest
from typer.testing import CliRunner

from airbench_nb.cli import app
from airbench_nb.nbresults import read_results
from airbench_nb.pipeline import PIPELINE, PipelineError, check_no_secrets, notebook_parameters, run_pipeline

runner = CliRunner()
FAKE_KEY = "sk-test-" + "abcdefghijklmnopqrstuvwx"


def _notebook(path, params_src, body_src):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(params_src)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# test"), params, nbformat.v4.new_code_cell(body_src)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


@pytest.fixture
def toy_notebooks(tmp_path):
    folder = tmp_path / "nbs"
    folder.mkdir()
    _notebook(
        folder / "a.ipynb",
        'n: int = 1  # a number\nrun_dir: str = ""  # run folder',
        "from pathlib import Path\nPath(run_dir, 'a.txt').write_text(str(n * 2))",
    )
    _notebook(
        folder / "b.ipynb",
        "fail: bool = False  # raise on purpose",
        "if fail:\n    raise RuntimeError('stage b broke')",
    )
    _notebook(folder / "c.ipynb", "m: int = 0  # unused", "print(m)")
    return folder


def test_pipeline_runs_tutorial_into_report_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    info = run_pipeline({"seed": 3}, notebooks=["00_tutorial"], run_id="demo", reports_dir=tmp_path)
    run_dir = tmp_path / "demo"
    assert info.status == "ok", info.notebooks[0].error
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "ok" and saved["run_id"] == "demo" and saved["parameters"] == {"seed": 3}
    nb = saved["notebooks"][0]
    assert nb["status"] == "ok" and nb["parameters"] == {"seed": 3, "run_dir": str(run_dir.resolve())}
    assert nb["duration_s"] > 0 and nb["started"] <= nb["ended"]
    assert {"python", "airbench-nb", "papermill", "pydantic"} <= set(saved["versions"])
    assert saved["started"] and saved["ended"] and "git_commit" in saved
    assert (run_dir / "00_tutorial.ipynb").is_file() and (run_dir / "00_tutorial.html").is_file()
    page = (run_dir / "00_tutorial.html").read_text()  # nbconvert's theme is written once and linked
    css = re.findall(r'<link rel="stylesheet" href="(_static/nbconvert-[0-9a-f]{12}\.css)">', page)
    assert css and all((run_dir / c).stat().st_size > 4000 for c in css) and len(page) < 250_000
    executed = nbformat.read(str(run_dir / "00_tutorial.ipynb"), as_version=4)
    assert executed.metadata.papermill.parameters["seed"] == 3
    results = read_results(run_dir / "00_tutorial.ipynb")
    assert results["tutorial"]["foundation_items"] == 9
    assert (run_dir / "tutorial" / "manifests" / "foundation.jsonl").is_file()
    for path in run_dir.rglob("*"):
        if path.is_file() and path.suffix in {".json", ".ipynb", ".html", ".jsonl"}:
            assert FAKE_KEY not in path.read_text(errors="ignore"), path


def test_failure_is_recorded_and_later_stages_skipped(tmp_path, toy_notebooks):
    info = run_pipeline(
        {"n": 21, "fail": True},
        notebooks=["a", "b", "c"],
        run_id="r",
        reports_dir=tmp_path,
        notebook_dir=toy_notebooks,
        html=False,
    )
    assert info.status == "failed"
    assert [n.status for n in info.notebooks] == ["ok", "failed", "skipped"]
    assert "stage b broke" in info.notebooks[1].error
    assert "earlier notebook failed" in info.notebooks[2].error
    assert (tmp_path / "r/a.txt").read_text() == "42"
    assert (tmp_path / "r/b.ipynb").is_file()  # the failed notebook is kept, up to the failing cell
    saved = json.loads((tmp_path / "r/run.json").read_text())
    assert saved["status"] == "failed" and saved["notebooks"][2]["status"] == "skipped"


def test_unknown_parameter_refused_before_running(tmp_path, toy_notebooks):
    with pytest.raises(PipelineError, match="nn are declared by none"):
        run_pipeline({"nn": 1}, notebooks=["a"], reports_dir=tmp_path / "reports", notebook_dir=toy_notebooks)
    with pytest.raises(PipelineError, match="no notebook 'zz'"):
        run_pipeline({}, notebooks=["zz"], reports_dir=tmp_path / "reports", notebook_dir=toy_notebooks)
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"limit": -1}, r"^parameter limit=-1 must be 0 or more \(declared by 03_run_model: answer only the first N"),
        ({"concurrency": 0}, r"^parameter concurrency=0 must be 1 or more \(declared by 03_run_model, 04_judge"),
        ({"batch_size": -2}, r"^parameter batch_size=-2 must be 0 or more"),
        ({"limit": "5"}, r"^parameter limit='5' must be a whole number"),
        ({"limit": True}, r"^parameter limit=True must be a whole number"),
    ],
)
def test_notebook_03_bad_counts_refused_before_running(tmp_path, params, message):
    with pytest.raises(PipelineError, match=message):
        run_pipeline(params, notebooks=["03_run_model", "04_judge"], reports_dir=tmp_path / "reports")
    assert not (tmp_path / "reports").exists()  # nothing ran, no run folder


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"reps": 200_000_000}, r"^parameter reps=200000000 must be at most 100,000 \(declared by 05_analyze"),
        ({"listening_wer": {"tts:x": float("inf")}}, r"^parameter listening_wer\['tts:x'\]=inf must be a finite"),
        ({"listening_wer": {"tts:x": -0.5}}, r"^parameter listening_wer\['tts:x'\]=-0.5 must be a finite"),
        ({"listening_wer": {"tts:x": "low"}}, r"^parameter listening_wer\['tts:x'\]='low' must be a finite"),
    ],
)
def test_analysis_bounds_refused_before_running(tmp_path, params, message):
    """What the commands refuse (--reps over MAX_REPS, --wer inf or negative), a run refuses before anything runs."""
    with pytest.raises(PipelineError, match=message):
        run_pipeline(params, notebooks=["05_analyze", "06_annotate"], reports_dir=tmp_path / "reports")
    assert not (tmp_path / "reports").exists()


def test_limit_minus_one_is_refused_by_the_runner_too(imported, tmp_path):
    """Notebook 03 executed on its own passes ``limit`` to ``infer``: -1 is refused there, naming the parameter."""
    from airbench_nb.manifests import read_manifest
    from airbench_nb.models import load_model
    from airbench_nb.runner import infer, run_model

    _, manifests, _, _ = imported
    out = tmp_path / "responses.jsonl"
    with pytest.raises(ValueError, match=r"^limit=-1 must be a whole number, 0 or more"):
        infer("baseline:oracle", manifests / "foundation.jsonl", out, limit=-1, progress=False)
    with pytest.raises(ValueError, match=r"^limit=-1 must be"):
        run_model(load_model("baseline:oracle"), read_manifest(manifests / "foundation.jsonl"), tmp_path, out, limit=-1)
    assert not out.exists()
    summary = infer("baseline:oracle", manifests / "foundation.jsonl", out, limit=0, progress=False)
    assert summary.total == 0


@pytest.mark.parametrize(
    "params",
    [{"openai_api_key": "x"}, {"judge_token": "abc"}, {"judge": FAKE_KEY}, {"hdr": "Bearer abcdefghijklmnop"}],
)
def test_secrets_refused(params):
    with pytest.raises(PipelineError, match="environment") as err:
        check_no_secrets(params)
    assert FAKE_KEY not in str(err.value)


def test_notebook_parameters_have_help():
    from airbench_nb.pipeline import notebooks_dir

    for stem in PIPELINE:
        params = notebook_parameters(notebooks_dir() / f"{stem}.ipynb")
        assert params, stem
        for name, spec in params.items():
            assert spec["help"], f"{stem}: parameter {name} has no help comment"


def test_cli_run_and_params(tmp_path, toy_notebooks, monkeypatch):
    monkeypatch.setenv("AIRBENCH_NOTEBOOKS", str(toy_notebooks))
    ok = runner.invoke(
        app,
        [
            "run",
            "--notebooks",
            "a,c",
            "-p",
            "n=5",
            "-p",
            "m=2",
            "--reports",
            str(tmp_path),
            "--run-id",
            "x",
            "--no-html",
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "x/a.txt").read_text() == "10"
    bad = runner.invoke(
        app, ["run", "--notebooks", "a,b", "-p", "fail=true", "--reports", str(tmp_path), "--run-id", "y", "--no-html"]
    )
    assert bad.exit_code == 1 and "failed" in bad.output
    secret = runner.invoke(app, ["run", "--notebooks", "a", "-p", f"n={FAKE_KEY}", "--reports", str(tmp_path)])
    assert secret.exit_code == 2 and FAKE_KEY not in secret.output
    listed = runner.invoke(app, ["params", "--notebooks", "a"])
    assert listed.exit_code == 0 and "a number" in listed.output


def test_a_model_failing_on_every_item_marks_the_run_failed(tmp_path):
    """Notebook 03 records its counts, then fails: run.json says failed, not ok; a rerun retries the items."""
    import numpy as np
    import soundfile as sf

    from airbench_nb.manifests import write_manifest
    from airbench_nb.records import FoundationItem
    from tests.openai_server import Fault, OpenAITestServer

    data = tmp_path / "data"
    data.mkdir()
    items = [
        FoundationItem(
            uid=f"f{i}",
            dataset="d",
            audio=f"a{i}.wav",
            question="Who speaks?",
            task="Speaker_Gender_Recognition",
            choices=["male", "female"],
            answer=0,
        )
        for i in range(3)
    ]
    for item in items:
        sf.write(data / item.audio, np.full(1600, 0.1, dtype=np.float32), 16000)
    write_manifest(data / "foundation.jsonl", items)
    # every request refused with a 400 (unreadable audio would be a defect of the data, not the model's failure)
    with OpenAITestServer() as server:
        server.plan[""] = [Fault("400")] * 10
        model = f"openai:m@{server.base_url}"
        params = {"manifest_dir": str(data), "models": [model], "kinds": ["foundation"], "show": 1}
        info = run_pipeline(params, notebooks=["03_run_model"], run_id="dead", reports_dir=tmp_path / "r", html=False)
    assert info.status == "failed" and info.notebooks[0].status == "failed"
    assert "failed on every item" in info.notebooks[0].error and "backend: 3" in info.notebooks[0].error
    results = read_results(tmp_path / "r" / "dead" / "03_run_model.ipynb")
    assert results["run_model"]["runs"][0]["failed"] == 3  # the counts were recorded before the notebook failed
    assert json.loads((tmp_path / "r" / "dead" / "run.json").read_text())["status"] == "failed"


def test_a_judge_failing_on_every_call_marks_the_run_failed(tmp_path):
    """Notebook 04 with an LLM judge whose every call gets a 400: the counts are recorded, the run is failed."""
    from airbench_nb.manifests import write_manifest
    from airbench_nb.records import ChatItem, Response
    from tests.openai_server import Fault, OpenAITestServer

    data = tmp_path / "data"
    items = [
        ChatItem(
            uid=f"c{i}", dataset="d", audio="a.wav", question="What?", task="sound_QA", reference="R", meta_info="M"
        )
        for i in range(2)
    ]
    write_manifest(data / "chat.jsonl", items)
    answers = tmp_path / "responses" / "m"
    answers.mkdir(parents=True)
    (answers / "chat.jsonl").write_text(
        "".join(Response(uid=i.uid, model="m", text="x").model_dump_json() + "\n" for i in items)
    )
    with OpenAITestServer() as server:
        server.plan[""] = [Fault("400")] * 10  # every prompt, every attempt
        params = {
            "manifest_dir": str(data),
            "responses_dir": str(tmp_path / "responses"),
            "judges": [f"openai:judge@{server.base_url}"],
            "show": 1,
        }
        info = run_pipeline(params, notebooks=["04_judge"], run_id="j", reports_dir=tmp_path / "r", html=False)
    assert info.status == "failed" and "judge(s) failed on every call" in info.notebooks[0].error
    assert "4 of 4 judge calls failed" in info.notebooks[0].error
    assert read_results(tmp_path / "r" / "j" / "04_judge.ipynb")["judge"]["judge_errors"] == 4


def test_share_css_moves_long_style_blocks_only(tmp_path):
    from airbench_nb.pipeline import SHARED_CSS_MIN, share_css

    long_css = "body { color: red; }" * (SHARED_CSS_MIN // 10)
    page = f"<style type='text/css'>{long_css}</style><style>.x {{}}</style><p>hi</p>"
    first = share_css(page, tmp_path)
    assert "<style>.x {}</style>" in first and long_css not in first and "<p>hi</p>" in first
    (written,) = (tmp_path / "_static").iterdir()
    assert written.read_text() == long_css and f'href="_static/{written.name}"' in first
    assert share_css(page, tmp_path) == first and len(list((tmp_path / "_static").iterdir())) == 1  # written once


def _executed(info) -> list[str]:
    """The notebooks a run executed (not those it kept from an earlier execution)."""
    return [n.name for n in info.notebooks if n.status == "ok" and not n.reused]


def test_resume_executes_only_notebooks_whose_inputs_changed(tmp_path, toy_notebooks, monkeypatch):
    """A notebook outside the pipeline depends on its source, parameters and the notebooks before it."""
    run = dict(notebooks=["a", "c"], run_id="r", reports_dir=tmp_path, notebook_dir=toy_notebooks, html=False)
    first = run_pipeline({"n": 1, "m": 1}, **run)
    assert _executed(first) == ["a", "c"] and all(n.inputs_hash for n in first.notebooks)
    hashed = {"notebook", "parameters", "versions", "environment", "weights", "upstream"}
    assert set(first.notebooks[0].input_hashes) >= hashed
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "r").glob("*.ipynb")}

    same = run_pipeline({}, resume=True, **run)  # nothing changed: nothing executes, the notebooks are kept
    assert same.status == "ok" and _executed(same) == [] and all(n.reused for n in same.notebooks)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "r").glob("*.ipynb")} == stamps
    assert [n.inputs_hash for n in same.notebooks] == [n.inputs_hash for n in first.notebooks]
    saved = json.loads((tmp_path / "r/run.json").read_text())
    assert [n["reused"] for n in saved["notebooks"]] == [True, True] and saved["resumed"] == 1

    assert _executed(run_pipeline({"m": 2}, resume=True, **run)) == ["c"]  # only c declares m
    assert _executed(run_pipeline({"n": 2}, resume=True, **run)) == ["a", "c"]  # c comes after a
    assert (tmp_path / "r/a.txt").read_text() == "4"

    (tmp_path / "r/c.ipynb").unlink()  # a kept notebook must still be there
    assert _executed(run_pipeline({}, resume=True, **run)) == ["c"]
    (toy_notebooks / "a.ipynb").write_text((toy_notebooks / "a.ipynb").read_text().replace("n * 2", "n * 3"))
    assert _executed(run_pipeline({}, resume=True, **run)) == ["a", "c"]  # an edited notebook runs again
    assert (tmp_path / "r/a.txt").read_text() == "6"
    monkeypatch.setenv("AIRBENCH_JUDGE", "rule")  # an environment variable that changes what notebooks do
    assert _executed(run_pipeline({}, resume=True, **run)) == ["a", "c"]
    monkeypatch.setattr("airbench_nb.pipeline.fetched_weights", lambda: ["yamnet"])  # real weights fetched since
    assert _executed(run_pipeline({}, resume=True, **run)) == ["a", "c"]

    monkeypatch.setenv("AIRBENCH_NOTEBOOKS", str(toy_notebooks))
    forced = runner.invoke(app, ["run", "--resume", "r", "--reports", str(tmp_path), "--no-html", "--force"])
    assert forced.exit_code == 0, forced.output
    saved = json.loads((tmp_path / "r/run.json").read_text())
    assert [n["reused"] for n in saved["notebooks"]] == [False, False] and saved["resumed"] == 8


def test_a_run_json_without_input_hashes_still_reads_and_resumes(tmp_path, toy_notebooks):
    """run.json files written before incremental resumes have no hashes: every notebook executes again."""
    run = dict(notebooks=["a"], run_id="old", reports_dir=tmp_path, notebook_dir=toy_notebooks, html=False)
    run_pipeline({"n": 1}, **run)
    saved = json.loads((tmp_path / "old/run.json").read_text())
    for notebook in saved["notebooks"]:
        for field in ("inputs_hash", "input_hashes", "reused"):
            del notebook[field]
    (tmp_path / "old/run.json").write_text(json.dumps(saved))
    again = run_pipeline({}, resume=True, **run)
    assert again.status == "ok" and _executed(again) == ["a"] and again.notebooks[0].inputs_hash


@pytest.mark.parametrize("stem", ["../../../tmp/x/evil", "/tmp/evil", "..", "a/b", ".hidden", "a.ipynb"])
def test_only_plain_notebook_stems_run(tmp_path, toy_notebooks, stem):
    """A stem that is a path is refused in one line before anything runs (issue 22: notebooks from outside)."""
    with pytest.raises(PipelineError, match="is not a notebook stem") as caught:
        run_pipeline({}, notebooks=[stem], reports_dir=tmp_path / "reports", notebook_dir=toy_notebooks)
    assert "\n" not in str(caught.value) and not (tmp_path / "reports").exists()


def test_the_kits_folder_runs_only_pipeline_notebooks(tmp_path, monkeypatch):
    """From the kit's own notebook folder only the pipeline's stems are accepted."""
    monkeypatch.delenv("AIRBENCH_NOTEBOOKS", raising=False)
    with pytest.raises(PipelineError, match="no notebook 'conftest' in the pipeline"):
        run_pipeline({}, notebooks=["conftest"], reports_dir=tmp_path / "reports")


def test_a_tampered_run_json_cannot_run_a_notebook_from_elsewhere(tmp_path, toy_notebooks):
    """On --resume the notebook names and parameters of run.json are checked like those given on the command line."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.ipynb").write_text((toy_notebooks / "a.ipynb").read_text())
    run = dict(notebooks=["a"], run_id="r", reports_dir=tmp_path / "reports", notebook_dir=toy_notebooks, html=False)
    run_pipeline({"n": 1}, **run)
    saved_path = tmp_path / "reports/r/run.json"
    saved = json.loads(saved_path.read_text())
    saved["notebooks"][0]["name"] = "../../outside/evil"
    saved_path.write_text(json.dumps(saved))
    with pytest.raises(PipelineError, match="is not a notebook stem"):
        run_pipeline({}, resume=True, run_id="r", reports_dir=tmp_path / "reports", notebook_dir=toy_notebooks)
    saved["notebooks"][0]["name"] = "a"
    saved["parameters"]["n"] = "sk-" + "A1b2" * 12
    saved_path.write_text(json.dumps(saved))
    with pytest.raises(PipelineError, match="looks like"):
        run_pipeline({}, resume=True, run_id="r", reports_dir=tmp_path / "reports", notebook_dir=toy_notebooks)


def test_a_run_prints_no_kernel_warning(tmp_path, toy_notebooks, capfd):
    """The kernels run over IPC: no "running over TCP without encryption" warning per notebook among the kit's lines."""
    info = run_pipeline(
        {"n": 1}, notebooks=["a", "c"], run_id="q", reports_dir=tmp_path, notebook_dir=toy_notebooks, html=False
    )
    assert info.status == "ok", [n.error for n in info.notebooks]
    captured = capfd.readouterr()
    assert "without encryption" not in captured.err + captured.out
