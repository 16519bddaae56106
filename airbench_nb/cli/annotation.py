"""The annotation commands: ``sample-annotation``, and the MOS listening test's ``sample-listening`` and ``mos``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from airbench_nb.cli.app import (
    MAX_LISTENERS,
    MAX_REPS,
    REPS_BOUND,
    console,
    out_file,
    refuse,
    refusing,
    rows_table,
    within,
)


def sample_annotation_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (reports/<run_id>) with data/ and responses/.")],
    n: Annotated[int, typer.Option("--n", help="Pairs to draw (fewer if the run has fewer).", min=1)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The sample JSONL to write.", callback=out_file)],
    kind: Annotated[str, typer.Option(help="foundation or chat: the kind of pairs.")] = "foundation",
    stratify: Annotated[str, typer.Option(help="category or task: pairs are spread equally over these.")] = "category",
    seed: Annotated[int, typer.Option(help="Seed of the draw, the order shown and the Chat answer order.")] = 0,
    show_judge: Annotated[bool, typer.Option("--show-judge", help="Let the tool show the judges' verdicts.")] = False,
    model: Annotated[list[str] | None, typer.Option(help="Sample only this model spec (repeatable).")] = None,
    disagreements: Annotated[
        bool,
        typer.Option(
            "--disagreements",
            help="Draw only from the Chat answers the judges disagree on most (the run's analysed judge panel).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Draw a reproducible stratified sample of (item, model response) pairs to label with notebook 06."""
    from rich.markup import escape

    from airbench_nb.annotate import KINDS, STRATIFY, dumps_report, sample_annotation

    if kind not in KINDS:
        raise refuse(f"--kind must be {' or '.join(KINDS)}, got {kind!r}")
    if stratify not in STRATIFY:
        raise refuse(f"--stratify must be {' or '.join(STRATIFY)}, got {stratify!r}")
    if not run_dir.is_dir():
        raise refuse("no such run folder", file=run_dir)
    if disagreements and kind != "chat":
        raise refuse("--disagreements draws from Chat answers the judges disagree on: add --kind chat")
    with refusing(FileNotFoundError, FileExistsError, ValueError):  # ManifestError is a ValueError
        only = None
        if disagreements:
            from airbench_nb.analysis.judge_panel import disagreement_pairs

            only = set(disagreement_pairs(run_dir))
        report = sample_annotation(
            run_dir, out, n, kind=kind, stratify=stratify, seed=seed, show_judge=show_judge, models=model, only=only
        )
    if not report.pairs:
        raise refuse(f"no {kind} pair to sample (no answered items); nothing written", file=run_dir)
    if as_json:
        typer.echo(dumps_report(report))
        return
    console.print(
        escape(
            f"{len(report.pairs)} {kind} pairs drawn from {report.population} (seed {seed}, by {stratify}) into {out}"
        ),
        soft_wrap=True,
    )
    console.print(rows_table(f"pairs per {stratify}", report.rows()))
    left_out = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.excluded.items() if v)
    if left_out:
        console.print(escape(f"left out: {left_out}"), soft_wrap=True)
    console.print("label them in JupyterLab with notebooks/06_annotate.ipynb (sample=..., annotator=your id)")


def sample_listening_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder whose responses include spoken answers (audio).")],
    listeners: Annotated[
        int,
        typer.Option(
            help=f"Listener slots (L1 .. LN, at most {MAX_LISTENERS:,}); each rates every stimulus.",
            callback=within(1, MAX_LISTENERS, "each listener's playlist holds every stimulus"),
        ),
    ] = 10,
    clips_per_system: Annotated[
        int, typer.Option(help="Items per system (the same items where possible).", min=1)
    ] = 20,
    repeats: Annotated[int, typer.Option(help="Stimuli presented twice to each listener (consistency).", min=0)] = 2,
    seed: Annotated[int, typer.Option(help="Seed of the draw, the system ids and each listener's order.")] = 0,
    model: Annotated[list[str] | None, typer.Option(help="Only this model spec (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Draw the MOS listening test's balanced, blind, seeded playlist into the run folder (rate it in notebook 06)."""
    from rich.markup import escape

    from airbench_nb.annotate.listening_playlist import draw_playlist

    if not run_dir.is_dir():
        raise refuse("no such run folder", file=run_dir)
    with refusing(FileNotFoundError, FileExistsError, ValueError):  # ManifestError is a ValueError
        report = draw_playlist(
            run_dir,
            listeners=listeners,
            clips_per_system=clips_per_system,
            repeats=repeats,
            seed=seed,
            models=model,
            write=True,
        )
    if as_json:
        rows = {"path": str(report.path), "summary": report.summary(), "systems": report.rows()}
        typer.echo(json.dumps({**rows, "excluded": report.excluded, "listeners": report.listeners}, indent=1))
        return
    console.print(escape(f"playlist written to {report.path}: {report.summary()}"), soft_wrap=True)
    console.print(rows_table("systems (the key: never shown to listeners)", report.rows()))
    console.print(
        f"listeners rate it in JupyterLab with notebooks/06_annotate.ipynb (run_dir=..., listener=one of "
        f"{', '.join(report.listeners)}); then `airbench-nb mos {run_dir}`"
    )


def _wer_option(values: list[str] | None) -> dict[str, float] | None:
    if not values:
        return None
    out = {}
    for value in values:
        system, sep, number = value.rpartition("=")
        try:
            out[system] = float(number)
        except ValueError:
            sep = ""
        if not sep or not system:
            raise refuse(f"--wer takes SYSTEM=WER (a model spec or system id and a number), got {value!r}")
        if not (math.isfinite(out[system]) and out[system] >= 0):
            raise refuse(f"--wer {system}: a WER is a finite number, 0 or more (1.0 = 100%), got {number!r}")
    return out


def mos_cmd(
    run_dir: Annotated[Path, typer.Argument(help="The run folder with the playlist and the listeners' ratings.")],
    wer: Annotated[
        list[str] | None, typer.Option(help="Back-transcription WER of a system: MODEL=WER (repeatable).")
    ] = None,
    reps: Annotated[
        int, typer.Option(help=f"Bootstrap resamples (at most {MAX_REPS:,}).", callback=within(1, MAX_REPS, REPS_BOUND))
    ] = 2000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """MOS per system with 95% CIs (bootstrap over listeners and items), agreement, consistency, MOS vs WER.

    Exits 2 (one line) when no listener has rated anything yet, on an unreadable playlist or ratings file, and on a
    --wer that is not a finite number of 0 or more.
    """
    from airbench_nb.analysis.mos import mos

    if not run_dir.is_dir():
        raise refuse("no such run folder", file=run_dir)
    wer_by_system = _wer_option(wer)
    with refusing(FileNotFoundError, ValueError):  # RatingsError and ManifestError are ValueErrors
        result = mos(run_dir, wer=wer_by_system, reps=reps, seed=seed)
    if not result.ratings["score"].notna().any():
        unrated = f"{len(result.listeners)} listeners" if result.listeners else "no listener"
        raise refuse(
            f"no rating yet: {unrated} of the playlist rated nothing; rate it in notebook 06 "
            "(notebooks/06_annotate.ipynb in JupyterLab), then rerun",
            file=run_dir,
        )
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=1))
        return
    console.print(rows_table("MOS per system (1 Bad .. 5 Excellent; first presentations)", _rows(result.frame())))
    console.print(rows_table("listeners (consistency on repeated clips)", _rows(result.listeners_frame())))
    console.print(result.summary(), soft_wrap=True)


def _rows(frame: Any) -> list[dict[str, Any]]:
    return [
        {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()} for row in frame.to_dict("records")
    ]
