"""Decoding stability (issue 34, part 3): ``infer --samples K`` and the ``stability`` analysis.

A planted sampling model with known per-item success probabilities gives expected accuracy, consistency, the per-item
variance and majority-vote accuracy equal to their analytic values within the reported intervals; the tiny offline
Qwen2-Audio samples K answers per item, seeded per sample, resumed per (item, sample); a deterministic baseline is
asked once and reported as deterministic; the CLI refuses a bad ``--samples``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom
from typer.testing import CliRunner

from airbench_nb.analysis.stability import (
    ItemSamples,
    ModelSamples,
    majority_answer,
    read_model_samples,
    stability_frame,
    stability_results,
)
from airbench_nb.audio import sha256_file
from airbench_nb.cli import app
from airbench_nb.manifests import read_records, write_manifest
from airbench_nb.records import FoundationItem, Response
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer, sample_seed, samples_file
from tests.hf_minis import tone

runner = CliRunner()

TASK = "Music_Midi_Pitch_Analysis"
CHOICES = ["69", "57", "81", "62"]


def _write_run(root: Path, n: int = 3) -> Path:
    """A run folder's Foundation manifest of ``n`` one-clip items (tones), each its own recording; returns it."""
    data = root / "data"
    (data / "clips").mkdir(parents=True, exist_ok=True)
    import soundfile as sf

    items = []
    for i in range(n):
        path = data / "clips" / f"t{i}.wav"
        sf.write(path, tone(300.0 + 50 * i, seconds=0.3), 16000)
        items.append(
            FoundationItem(
                uid=f"item-{i}",
                dataset="synthetic",
                audio=f"clips/t{i}.wav",
                audio_sha256=sha256_file(path),
                audio_status="ok",
                question="What is the pitch of the note?",
                task=TASK,
                choices=CHOICES,
                answer=i % 4,
            )
        )
    manifest = data / "foundation.jsonl"
    write_manifest(manifest, items)
    return manifest


# ------------------------------------------------------------------------------------------- (a) planted sampling


def _planted(rng: np.random.Generator, p: np.ndarray, k: int, cluster_size: int) -> list[ItemSamples]:
    """Items answered right (option 0) with probability p_i per sample, else the one wrong option 1.

    The greedy answer is right exactly when p_i >= 0.5 (a mode-seeking decoder), so that greedy and expected accuracy
    differ; ``cluster_size`` items share a recording.
    """
    items = []
    for i, p_i in enumerate(p):
        right = rng.random(k) < p_i
        items.append(
            ItemSamples(
                uid=f"u{i}",
                task="A" if i % 2 else "B",
                cluster=f"audio:clip{i // cluster_size}",
                gold=0,
                greedy=0 if p_i >= 0.5 else 1,
                samples=tuple(0 if r else 1 for r in right),
            )
        )
    return items


def test_planted_sampling_model_meets_the_analytic_values_within_the_intervals():
    """Over 12 seeds of a planted model, every figure's interval holds its analytic value (coverage) and the
    estimates average to it (no bias); greedy and expected accuracy are distinct figures."""
    k = 5
    levels = np.array([0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 1.0])
    p = np.repeat(levels, 30)  # 240 items, 2 per recording
    # Analytic values of the planted model (binary right/wrong over one wrong option, K independent samples):
    analytic = {
        "expected": p.mean(),  # E[share right] = p_i
        "consistency": np.mean(p**k + (1 - p) ** k),  # all right or all wrong
        "variance": np.mean(p * (1 - p) * (1 - 1 / k)),  # E[p̂(1-p̂)] = p(1-p)(1-1/K): the plug-in's known bias
        "majority": np.mean(binom.sf(k // 2, k, p)),  # more than K/2 right (K odd: no ties)
        "greedy": np.mean(p >= 0.5),
    }
    covered = dict.fromkeys(analytic, 0)
    values: dict[str, list[float]] = {m: [] for m in analytic}
    seeds = range(12)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        items = _planted(rng, rng.permutation(p), k, cluster_size=2)
        rows = stability_results([ModelSamples("planted", items, False, 1.0, {})], reps=300)["planted"]
        assert [r.task for r in rows] == [items[0].task, items[1].task, None]
        row = rows[-1]
        assert row.n == 240 and row.samples == k and not row.deterministic
        assert row.clusters == 120 and row.cluster_unit.startswith("recording")
        for measure, value in analytic.items():
            est = getattr(row, measure)
            assert est.ci is not None and est.ci[1] - est.ci[0] < 0.2, (measure, est)  # an interval that says something
            covered[measure] += est.ci[0] <= value <= est.ci[1]
            values[measure].append(est.value)
        assert abs(row.greedy.value - row.expected.value) > 0.03  # the two columns are distinct
    assert all(n >= 11 for n in covered.values()), covered
    for measure, value in analytic.items():
        assert abs(np.mean(values[measure]) - value) < 0.01, (measure, np.mean(values[measure]), value)
    frame = stability_frame({"planted": [row]})
    assert list(frame.columns[:6]) == ["model", "task", "n", "clusters", "K", "sampling"]


def test_shared_recordings_widen_the_interval_where_the_answers_agree():
    """Items of one recording that share their p: the clustered interval is wider than the item-level one."""
    rng = np.random.default_rng(7)
    per_clip = np.repeat(rng.choice([0.1, 0.9], size=40), 6)  # 40 recordings, 6 questions each, same p
    alone = stability_results(
        [ModelSamples("m", _planted(np.random.default_rng(1), per_clip, 3, cluster_size=1), False, 1.0, {})], reps=400
    )["m"][-1]
    together = stability_results(
        [ModelSamples("m", _planted(np.random.default_rng(1), per_clip, 3, cluster_size=6), False, 1.0, {})], reps=400
    )["m"][-1]
    assert alone.expected.value == together.expected.value
    width = lambda r: r.expected.ci[1] - r.expected.ci[0]  # noqa: E731
    assert width(together) > 1.5 * width(alone)
    assert together.design_effect is not None and together.design_effect > 2.0
    assert alone.design_effect is None  # every item its own cluster: nothing to compare


def test_majority_vote_breaks_ties_by_the_answer_sampled_first():
    assert majority_answer([1, 0, 0, 1]) == 1
    assert majority_answer([0, 1, 1, 0]) == 0
    assert majority_answer([None, 2, None, 2, 3]) is None  # an abstention is one answer, and here it wins
    assert majority_answer([3, 2, 2]) == 2
    with pytest.raises(ValueError, match="at least one answer"):
        majority_answer([])
    item = ItemSamples("u", "t", "item:u", gold=2, greedy=None, samples=(None, 2, None, 2, 3))
    assert item.majority_correct == 0.0 and item.greedy_correct == 0.0 and item.p == 0.4 and item.consistent == 0.0


# ----------------------------------------------------------------------------------------- (b) a real hf model


@pytest.fixture(scope="module")
def tiny_qwen(tmp_path_factory: pytest.TempPathFactory) -> str:
    from airbench_nb.models.tiny import build_tiny_qwen2_audio

    return f"hf:{build_tiny_qwen2_audio(tmp_path_factory.mktemp('tiny') / 'qwen2-audio')}"


@pytest.fixture(scope="module", autouse=True)
def one_cpu_thread():
    """The tiny model on one thread (two OpenMP threads contend on a shared 2-core machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _hf_infer(spec: str, manifest: Path, out: Path, **options):
    return infer(
        spec,
        manifest,
        out,
        samples=3,
        temperature=1.0,
        max_new_tokens=4,
        batch_size=2,
        progress=False,
        model_options={"device": "cpu"},
        **options,
    )


def _texts(path: Path) -> dict[tuple[str, int | None], str | None]:
    return {(r.uid, r.sample): r.text for r in read_records(path, Response)}


def test_hf_samples_are_seeded_per_sample_and_resume_per_sample(tiny_qwen, tmp_path):
    manifest = _write_run(tmp_path / "a", n=2)
    out = tmp_path / "a" / "responses" / "foundation.jsonl"
    first = _hf_infer(tiny_qwen, manifest, out)
    more = samples_file(out)
    assert more == out.with_name("foundation.samples.jsonl")
    records = read_records(more, Response)
    assert sorted((r.uid, r.sample) for r in records) == [(f"item-{i}", k) for i in range(2) for k in range(3)]
    for r in records:
        assert r.error is None and r.text is not None
        assert r.generation["temperature"] == 1.0 and r.generation["greedy"] is False
        assert r.generation["seed"] == sample_seed(0, r.sample)
        assert r.generation["sampling"] == {"samples": 3, "samples_vary": True}
    main = read_records(out, Response)
    assert len(main) == 2 and all(r.sample is None and r.generation["greedy"] for r in main)
    assert '"sample"' not in out.read_text()  # the main file's lines are as before
    assert first.samples is not None and first.samples.answered == 6 and first.samples.taken == 3
    texts = _texts(more)
    assert any(len({texts[(f"item-{i}", k)] for k in range(3)}) > 1 for i in range(2))  # the samples differ

    again = _hf_infer(tiny_qwen, manifest, out)
    assert again.answered == 0 and again.samples.answered == 0 and again.samples.skipped_existing == 6

    original = _texts(more)
    lines = more.read_text().splitlines(keepends=True)
    dropped = next(i for i, line in enumerate(lines) if json.loads(line)["sample"] == 1)
    gone = json.loads(lines[dropped])
    more.write_text("".join(lines[:dropped] + lines[dropped + 1 :]))
    healed = _hf_infer(tiny_qwen, manifest, out)
    assert healed.samples.answered == 1 and healed.samples.skipped_existing == 5
    asked = [p.answered for p in healed.samples.passes]
    assert asked == [0, 1, 0]
    last = read_records(more, Response)[-1]
    assert (last.uid, last.sample) == (gone["uid"], 1)

    # the same seed, from scratch: the same texts, sample by sample
    twin_manifest = _write_run(tmp_path / "b", n=2)
    twin_out = tmp_path / "b" / "responses" / "foundation.jsonl"
    _hf_infer(tiny_qwen, twin_manifest, twin_out)
    assert _texts(samples_file(twin_out)) == original


# ------------------------------------------------------------------------- (c) deterministic backend, (d) the CLI


def test_deterministic_baseline_is_asked_once_and_reported_as_deterministic(tmp_path):
    manifest = _write_run(tmp_path, n=4)
    folder = RunFolder(tmp_path)
    spec = "baseline:random"
    out = folder.responses_file(spec, "foundation")
    summary = infer(spec, manifest, out, samples=3, temperature=1.0, progress=False)
    assert summary.samples is not None and not summary.samples.samples_vary and summary.samples.taken == 1
    records = read_records(samples_file(out), Response)
    assert sorted((r.uid, r.sample) for r in records) == [(f"item-{i}", 0) for i in range(4)]
    assert all(r.generation["sampling"] == {"samples": 3, "samples_vary": False} for r in records)
    (run,) = read_model_samples(folder)
    assert run.deterministic and len(run.items) == 4 and run.left_out == {}
    rows = stability_results([run], reps=100)[spec]
    pooled = rows[-1]
    assert pooled.task is None and pooled.deterministic and pooled.samples == 1
    assert pooled.consistency.value == 1.0 and pooled.variance.value == 0.0
    assert pooled.expected.value == pooled.majority.value == pooled.greedy.value  # one answer, read three ways
    frame = stability_frame({spec: rows})
    assert set(frame["sampling"]) == {"deterministic (sampled once)"}


def test_samples_of_a_failed_or_missing_sample_leave_the_item_out(tmp_path):
    manifest = _write_run(tmp_path, n=3)
    folder = RunFolder(tmp_path)
    spec = "test:sampler"
    out = folder.responses_file(spec, "foundation")
    out.parent.mkdir(parents=True)
    made = []
    for i in range(3):
        made.append(Response(uid=f"item-{i}", model=spec, text="A"))
        for k in range(2):
            error = "backend: timeout" if (i, k) == (1, 1) else None
            made.append(Response(uid=f"item-{i}", model=spec, text=None if error else "B", error=error, sample=k))
    out.write_text("".join(r.model_dump_json() + "\n" for r in made if r.sample is None))
    samples_file(out).write_text("".join(r.model_dump_json() + "\n" for r in made if r.sample is not None))
    (run,) = read_model_samples(folder)
    assert [i.uid for i in run.items] == ["item-0", "item-2"]
    assert run.left_out == {"a sample missing or failed": 1}
    assert not run.deterministic  # no record says the backend is deterministic
    assert manifest.is_file()


def test_cli_samples_option(tmp_path):
    manifest = _write_run(tmp_path, n=2)
    out = tmp_path / "responses.jsonl"
    base = ["infer", "--model", "baseline:first", "--manifest", str(manifest), "--out", str(out)]
    bad = runner.invoke(app, [*base, "--samples", "0", "--temperature", "1"])
    assert bad.exit_code == 2 and "--samples 0" in bad.output and "1 or more" in bad.output
    greedy = runner.invoke(app, [*base, "--samples", "3"])
    assert greedy.exit_code == 2 and "--temperature above 0" in greedy.output
    assert not out.exists() and not samples_file(out).exists()  # refused before anything was loaded or written
    good = runner.invoke(app, [*base, "--samples", "3", "--temperature", "0.7", "--seed", "5"])
    assert good.exit_code == 0, good.output
    assert "deterministic backend" in " ".join(good.output.split())
    records = read_records(samples_file(out), Response)
    assert [(r.sample, r.generation["seed"], r.generation["temperature"]) for r in records] == [
        (0, sample_seed(5, 0), 0.7)
    ] * 2
    assert all(r.generation["greedy"] for r in read_records(out, Response))  # the main answer stays greedy
    assert os.path.getsize(out) > 0


def _hand_written(folder: RunFolder, spec: str, rows: list[Response]) -> None:
    """Write a model's main and sampled records where a run folder keeps them."""
    out = folder.responses_file(spec, "foundation")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(r.model_dump_json() + "\n" for r in rows if r.sample is None))
    samples_file(out).write_text("".join(r.model_dump_json() + "\n" for r in rows if r.sample is not None))


def test_a_larger_k_on_some_items_uses_the_first_k_every_item_has_and_a_sampled_main_answer_is_labelled(tmp_path):
    _write_run(tmp_path, n=3)
    folder = RunFolder(tmp_path)
    spec = "test:sampler"
    rows = [Response(uid=f"item-{i}", model=spec, text="A", generation={"greedy": False}) for i in range(3)]
    for i in range(3):
        for k in range(5 if i < 2 else 3):  # a rerun with --samples 5 reached items 0 and 1 only
            asked = 5 if k >= 3 else 3
            rows.append(
                Response(uid=f"item-{i}", model=spec, text="B", sample=k, generation={"sampling": {"samples": asked}})
            )
    _hand_written(folder, spec, rows)
    (run,) = read_model_samples(folder)
    assert sorted(i.uid for i in run.items) == ["item-0", "item-1", "item-2"]
    assert {len(i.samples) for i in run.items} == {3} and not run.main_greedy
    (row, pooled) = stability_results([run], reps=50)[spec]
    assert pooled.samples == 3 and not pooled.main_greedy and row.task == TASK
    assert stability_frame({spec: [pooled]})["sampling"].iloc[0].endswith("main answer not greedy")
    # item-1's gold is B (index 1): every sample right, the main answer (A) wrong
    assert pooled.expected.value == pytest.approx(1 / 3) and pooled.greedy.value == pytest.approx(1 / 3)


def test_a_run_without_samples_has_no_stability_section():
    from types import SimpleNamespace

    from airbench_nb.analysis.registry import SECTIONS
    from airbench_nb.analysis.stability import stability_section

    empty = SimpleNamespace(folder=RunFolder(Path("/nonexistent-run")), run=SimpleNamespace(models=[]), reps=10, seed=0)
    section = stability_section(empty)  # type: ignore[arg-type]
    assert section.reason is not None and "--samples K" in section.reason and not section.data
    assert SECTIONS["stability"].optional  # so analysis.json leaves it out


def test_the_analysis_and_the_landing_page_show_the_samples(tmp_path):
    from airbench_nb.analysis.report import RunAnalysis
    from airbench_nb.analysis.stability import FIGURE_KEY, StabilityPayload
    from airbench_nb.pages.stability import stability_table_html
    from airbench_nb.plots import FIGURE_NAMES

    manifest = _write_run(tmp_path, n=4)
    folder = RunFolder(tmp_path)
    for spec in ("baseline:random", "baseline:oracle"):
        infer(spec, manifest, folder.responses_file(spec, "foundation"), samples=3, temperature=1.0, progress=False)
    report = RunAnalysis(tmp_path, reps=50).write()
    payload = report.extra_section("stability", StabilityPayload)
    assert set(payload.models) == {"baseline:random", "baseline:oracle"}
    oracle = payload.models["baseline:oracle"][-1]
    assert oracle.deterministic and oracle.greedy.value == oracle.expected.value == 1.0 and oracle.n == 4
    assert f"figures/{FIGURE_NAMES[FIGURE_KEY]}.png" in report.files.figures
    html = stability_table_html(report)
    assert "deterministic (asked once)" in html and "100.0 [100.0, 100.0]" in html


def test_notebook_03_asks_samples_through_infer_run_folder_and_refuses_a_negative_count(tmp_path):
    from airbench_nb.pipeline import PipelineError, check_parameter_values, notebook_parameters, notebooks_dir
    from airbench_nb.runner import infer_run_folder

    _write_run(tmp_path, n=2)
    folder = RunFolder(tmp_path)
    summaries = infer_run_folder(folder, ["baseline:first"], ["foundation"], samples=2, temperature=0.5)
    (summary,) = list(summaries)
    assert summary.samples is not None and summary.samples.taken == 1  # deterministic: asked once
    assert summaries.rows()[0]["samples"]["asked"] == 2
    assert samples_file(folder.responses_file("baseline:first", "foundation")).is_file()
    declared = {"03_run_model": notebook_parameters(notebooks_dir() / "03_run_model.ipynb")}
    assert declared["03_run_model"]["samples"]["default"] == "0"  # as papermill reads the cell
    assert declared["03_run_model"]["temperature"]["default"] == "1.0"
    with pytest.raises(PipelineError, match=r"parameter samples=-1 must be 0 or more"):
        check_parameter_values({"samples": -1}, declared)


def test_main_answers_and_samples_are_never_written_into_each_others_files(tmp_path):
    from airbench_nb.runner import OutputError

    manifest = _write_run(tmp_path, n=2)
    out = tmp_path / "r.jsonl"
    infer("baseline:first", manifest, out, samples=2, temperature=1.0, progress=False)
    more = samples_file(out)
    before = more.read_bytes()
    with pytest.raises(OutputError, match=r"holds sampled answers .*first for 'item-0'.*choose the other file"):
        infer("baseline:first", manifest, more, progress=False)  # the samples file given as the main output
    assert more.read_bytes() == before


def test_a_model_whose_samples_all_failed_is_counted_not_dropped(tmp_path):
    from types import SimpleNamespace

    from airbench_nb.analysis.stability import StabilityPayload, stability_section

    _write_run(tmp_path, n=2)
    folder = RunFolder(tmp_path)
    spec = "test:sampler"
    rows = [Response(uid=f"item-{i}", model=spec, text="A") for i in range(2)]
    rows += [Response(uid=f"item-{i}", model=spec, error="backend: timeout", sample=0) for i in range(2)]
    _hand_written(folder, spec, rows)
    analysis = SimpleNamespace(folder=folder, run=SimpleNamespace(models=[spec]), reps=10, seed=0)
    section = stability_section(analysis)  # type: ignore[arg-type]
    assert section.reason is None  # kept in analysis.json, so that the failures are seen
    payload = StabilityPayload.model_validate(section.data)
    assert payload.models == {} and payload.left_out == {spec: {"a sample missing or failed": 2}}
