"""The command that draws an annotation sample: ``sample-annotation``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from airbench_nb.cli.app import console, out_file, refuse, refusing, rows_table


def sample_annotation_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (reports/<run_id>) with data/ and responses/.")],
    n: Annotated[int, typer.Option("--n", help="Pairs to draw (fewer if the run has fewer).", min=1)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The sample JSONL to write.", callback=out_file)],
    kind: Annotated[str, typer.Option(help="foundation or chat: the kind of pairs.")] = "foundation",
    stratify: Annotated[str, typer.Option(help="category or task: pairs are spread equally over these.")] = "category",
    seed: Annotated[int, typer.Option(help="Seed of the draw, the order shown and the Chat answer order.")] = 0,
    show_judge: Annotated[bool, typer.Option("--show-judge", help="Let the tool show the judges' verdicts.")] = False,
    model: Annotated[list[str] | None, typer.Option(help="Sample only this model spec (repeatable).")] = None,
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
    with refusing(FileNotFoundError, FileExistsError, ValueError):  # ManifestError is a ValueError
        report = sample_annotation(
            run_dir, out, n, kind=kind, stratify=stratify, seed=seed, show_judge=show_judge, models=model
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
