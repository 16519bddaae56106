"""Commands that analyse runs: ``analyze``, ``compare``, ``agreement``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from airbench_nb.cli.app import (
    MAX_REPS,
    REPS_BOUND,
    console,
    one_of,
    out_folder,
    refuse,
    refusing,
    rows_table,
    within,
)
from airbench_nb.run_folder import RunFolder

ANALYSIS_REPS = 1000
"""Bootstrap replicates of ``analyze`` (RunAnalysis' default), given to the worker started before the analysis too."""

STRICT_OR_OFFICIAL = one_of("strict", "official")
"""Callback of ``--protocol`` where answers are read one way: strict or official."""


def analyze(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (reports/<run_id>) with data/, responses/, verdicts/.")],
    protocol: Annotated[
        str, typer.Option(help="strict or official: how answers are read.", callback=STRICT_OR_OFFICIAL)
    ] = "strict",
    weights: Annotated[
        str, typer.Option(help="Ranking weights per capability.")
    ] = "speech=0.4,sound=0.3,music=0.2,chat=0.1",
    model: Annotated[list[str] | None, typer.Option(help="Analyse only this model spec (repeatable).")] = None,
    judge: Annotated[list[str] | None, typer.Option(help="Analyse only this Chat judge (repeatable).")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default RUN_DIR/analysis).", callback=out_folder)
    ] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    embedder: Annotated[
        str | None,
        typer.Option(help="Text embeddings mapping scene/event answers onto classes (default: the offline MiniLM)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print analysis.json.")] = False,
) -> None:
    """Analyse a run: main table, biases, per-class metrics, SNR curves, rankings, SSEU-Bench's table and curves."""
    if not run_dir.is_dir():
        raise refuse("no such run folder", file=run_dir)
    from airbench_nb.scoring.ahead import start_ahead, stop_ahead

    # a large run's transcripts and translations are scored ahead from now, while the analysis is imported
    # (the analysis keeps this worker: the same run, replicates and seed; scoring.ahead)
    start_ahead(RunFolder(run_dir), reps=ANALYSIS_REPS, seed=seed)
    try:
        from airbench_nb.analysis.report import analyze_run
    except BaseException:
        stop_ahead()
        raise
    with refusing(FileNotFoundError, ValueError):  # ManifestError is a ValueError
        result = analyze_run(
            run_dir,
            protocol=protocol,
            weights=weights,
            out=out,
            models=model,
            judges=judge,
            seed=seed,
            reps=ANALYSIS_REPS,
            embedder=embedder,
        )
    if as_json:
        typer.echo(result.to_json(), nl=False)
        return
    folder = out or RunFolder(run_dir).analysis_dir
    console.print(f"analysed {len(result.models)} model(s) under the {protocol} protocol into {folder}/")
    for name in result.files.figures if result.files else []:
        console.print(f"  {name}")
    for section, why in result.reasons.items():
        console.print(f"[yellow]{section}:[/yellow] {why}")


def compare(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Run folders (every model in them) or RUN_DIR::MODEL_SPEC (one model of a run); at least two models."
        ),
    ],
    protocol: Annotated[
        str, typer.Option(help="strict or official: how answers are read.", callback=STRICT_OR_OFFICIAL)
    ] = "strict",
    judge: Annotated[
        str | None, typer.Option(help="Chat judge to compare on (default: the one that scored most models).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    reps: Annotated[
        int,
        typer.Option(
            help=f"Bootstrap replicates (0: no intervals; at most {MAX_REPS:,}).",
            callback=within(0, MAX_REPS, REPS_BOUND),
        ),
    ] = 2000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare models pair by pair on shared items: differences with 95% CIs, McNemar / Wilcoxon, Holm-corrected."""
    from rich.markup import escape

    from airbench_nb.analysis.compare import compare_runs

    with refusing(FileNotFoundError, ValueError):  # ManifestError is a ValueError
        result = compare_runs(sources, protocol=protocol, chat_judge=judge, seed=seed, reps=reps)
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=1))
        return

    def number(value: Any, digits: int = 3) -> str:
        return "" if value is None else f"{value:.{digits}f}"

    judged = f"; Chat judge {result.chat_judge}" if result.chat_judge else ""
    console.print(f"paired comparison, {protocol} protocol{judged}; p Holm-corrected over {result.tests_run} tests")
    for pair in dict.fromkeys((r["model_a"], r["model_b"]) for r in result.rows):
        rows = [
            {
                "benchmark": r["benchmark"],
                "level": r["level"],
                "name": r["name"],
                "n": r["n"],
                "a": number(r["a"]),
                "b": number(r["b"]),
                "diff": number(r["diff"]),
                "95% CI": f"[{number(r['ci_low'])}, {number(r['ci_high'])}]",
                "test": r["test"],
                "p": "" if r["p_value"] is None else f"{r['p_value']:.3g}",
                "p Holm": "" if r["p_holm"] is None else f"{r['p_holm']:.3g}",
                "verdict": r["verdict"],
                "MDE": number(r.get("mde")),
                "clusters (design effect)": ""
                if r.get("clusters") is None
                else f"{r['clusters']} ({number(r.get('design_effect'), 1)})",
                "items for this gap": "" if r.get("items_needed") is None else str(r["items_needed"]),
                "size": r.get("size") or "",
            }
            for r in result.rows
            if (r["model_a"], r["model_b"]) == pair
        ]
        console.print(rows_table(f"A = {pair[0]}  vs  B = {pair[1]}", rows))
    for match in result.items:
        left_out = f"{match.only_a} only in A, {match.only_b} only in B, {match.differ} differ"
        left_out += f", {match.unscored} unscored"
        line = f"{match.model_a} vs {match.model_b} · {match.benchmark}: {match.compared} items compared; {left_out}"
        console.print(escape(line + (f" ({match.reason})" if match.reason else "")), soft_wrap=True)
        if match.differ:
            fields = ", ".join(f"{k} {v}" for k, v in match.differ_fields.items())
            uids = ", ".join(match.examples["differ"])
            console.print(escape(f"  differing fields: {fields}; e.g. {uids}"), soft_wrap=True)


def agreement_cmd(
    run_dir: Annotated[Path, typer.Argument(help="The run folder the sample was drawn from.")],
    labels: Annotated[
        list[Path], typer.Option(help="Label JSONL files, one per annotator: --labels A.jsonl B.jsonl ...")
    ],
    more_labels: Annotated[
        list[Path] | None, typer.Argument(help="More label files (what follows --labels F).", show_default=False)
    ] = None,
    sample: Annotated[
        Path | None,
        typer.Option(
            help="The annotation sample JSONL (airbench-nb sample-annotation); default: the one sample*.jsonl in "
            "RUN_DIR/annotation/."
        ),
    ] = None,
    judge: Annotated[list[str] | None, typer.Option(help="Report only this judge (repeatable).")] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    reps: Annotated[
        int, typer.Option(help=f"Bootstrap resamples (at most {MAX_REPS:,}).", callback=within(1, MAX_REPS, REPS_BOUND))
    ] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Judge-human agreement per judge and kind, and inter-annotator agreement, with 95% CIs and n."""
    from airbench_nb.analysis.agreement import agreement

    if not run_dir.is_dir():
        raise refuse("no such run folder (give RUN_DIR before --labels)", file=run_dir)
    files = [*labels, *(more_labels or [])]
    if sample is None:
        found = RunFolder(run_dir).annotation_samples()
        if len(found) != 1:
            where = f"{RunFolder(run_dir).annotation_dir}: " + (", ".join(p.name for p in found) or "no sample*.jsonl")
            raise refuse(f"give --sample: {where}")
        sample = found[0]
    with refusing(FileNotFoundError, ValueError):  # ManifestError is a ValueError
        result = agreement(run_dir, sample, files, seed=seed, judges=judge, reps=reps)
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return

    console.print(result.counts_line(), soft_wrap=True)
    console.print(rows_table("judge-human agreement (votes = pairs x annotators)", result.judge_rows()))
    inter = result.inter_annotator_rows()
    if inter:
        console.print(
            rows_table("inter-annotator agreement (bootstrap over pairs; alpha: Krippendorff, nominal)", inter)
        )
    categories = result.category_rows()
    if categories:
        console.print(rows_table("judge-human agreement per category", categories))
    console.print(f"{len(result.disagreements)} (judge, pair) disagreements; notebook 06 lists them with audio")
    for key, why in result["reasons"].items():
        console.print(f"[yellow]{key}:[/yellow] {why}", soft_wrap=True)


def judge_map(
    run_dir: Annotated[Path, typer.Argument(help="A run folder whose Chat answers both judges scored.")],
    reference: Annotated[
        str, typer.Option("--reference", help="The judge whose scale scores are mapped onto (openai:gpt-4-0125-...).")
    ],
    substitute: Annotated[str, typer.Option("--substitute", help="The judge whose scores are mapped.")],
    protocol: Annotated[
        str, typer.Option(help="strict or official: how verdicts are read.", callback=STRICT_OR_OFFICIAL)
    ] = "strict",
    reps: Annotated[
        int,
        typer.Option(
            help=f"Bootstrap replicates of the bands (at most {MAX_REPS:,}).", callback=within(0, MAX_REPS, REPS_BOUND)
        ),
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default RUN_DIR/analysis).", callback=out_folder)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Map a substitute Chat judge's scores onto a reference judge's scale (isotonic and linear, bootstrap bands).

    Fitted on the answers both judges scored in both orders; writes judge-mapping.<substitute>-onto-<reference>.json,
    .csv (every answer, mapped by both fits) and .png (the fits with their 95% bands). Every mapped score is flagged
    mapped, never the reference judge's own. Exits 2 when a judge has no Chat score or they share too few answers.
    """
    from airbench_nb.analysis.judge_mapping import map_run_judges

    if not run_dir.is_dir():
        raise refuse("no such run folder", file=run_dir)
    with refusing(FileNotFoundError, ValueError):  # MappingError and ManifestError are ValueErrors
        result, files = map_run_judges(run_dir, reference, substitute, protocol=protocol, reps=reps, seed=seed, out=out)
    if as_json:
        typer.echo(result.model_dump_json(indent=1))
        return
    rows = [
        {
            "model": m.model,
            "method": m.method,
            f"{substitute} (own)": m.substitute_score,
            "mapped": f"{m.mapped_score:.2f} [{m.ci[0]:.2f}, {m.ci[1]:.2f}]" if m.ci else f"{m.mapped_score:.2f}",
            f"{reference} (own, same answers)": "-" if m.reference_score is None else m.reference_score,
            "n": m.n,
        }
        for m in result.models
    ]
    console.print(
        rows_table(f"MAPPED scores: {substitute} onto {reference}'s scale ({result.shared} shared answers)", rows)
    )
    console.print("Mapped scores are the substitute judge's, expressed on the reference's scale: not its judgement.")
    for name, path in files.items():
        console.print(f"{name}: {path}")
