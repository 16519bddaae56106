"""Commands that judge and score: ``judge``, ``score``, ``score-official``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from airbench_nb.cli.app import (
    API_KEY_ENV_HELP,
    console,
    field_rows,
    items_failed,
    one_of,
    out_file,
    refuse,
    refusing,
    rows_table,
)
from airbench_nb.score_table import RunScores

SCORE_STOPPED = "nothing was scored; the embeddings made so far are cached: fix this and rerun"
"""What ``score`` says after its embedder stopped on a fatal API error (a missing key, an endpoint that is down)."""


def _load_prices(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise refuse(f"cannot read the price table ({exc})", file=path) from None


def judge(
    judge_spec: Annotated[
        str,
        typer.Option(
            "--judge",
            help="rule, proxy, openai:<model>[@<base_url>], hf:<path> or asr:<model spec> (spoken answers).",
        ),
    ],
    manifest: Annotated[Path, typer.Option(help="The manifest the responses answer.")],
    responses: Annotated[Path, typer.Option(help="Responses JSONL (from `airbench-nb infer`).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Verdicts JSONL (resumed when it exists).", callback=out_file)
    ],
    concurrency: Annotated[int, typer.Option(help="Judge requests in flight.")] = 8,
    cache: Annotated[
        Path | None,
        typer.Option(help="SQLite cache of judge calls (a rerun makes no request).", callback=out_file),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print calls, estimated tokens and cost; judge nothing.")
    ] = False,
    batch_api: Annotated[bool, typer.Option("--batch-api", help="Use the OpenAI Batch API (half price).")] = False,
    all_items: Annotated[
        bool,
        typer.Option("--all", help="Ask the LLM judge for every Foundation item, not only where the rule abstains."),
    ] = False,
    prices: Annotated[Path | None, typer.Option(help="JSON price table: {model: [USD per 1M in, per 1M out]}.")] = None,
    api_key_env: Annotated[str | None, typer.Option(help=API_KEY_ENV_HELP)] = None,
    judge_repeats: Annotated[
        int,
        typer.Option(
            "--judge-repeats",
            min=1,
            help="Judge each (answer, order) R times, each repeat cached on its own (scores read the first; the "
            "judge-panel analysis reads all); a deterministic judge (rule, proxy, hf:) is judged once.",
        ),
    ] = 1,
) -> None:
    """Judge responses into verdicts: Foundation choice extraction, Chat scores in both orders.

    A rerun judges only what is new: responses answered again since, and failed judge calls. Exits 0 when every
    judge call succeeded (abstentions and unparseable replies are outcomes, counted), 1 when some failed (rerun to
    retry them), 2 on bad input, a refused --out or a judge that reads none of the answered items' kinds (nothing
    written), 3 when a fatal API error stopped the run.
    """
    from airbench_nb.judge.run import JudgeSpecError, judge_responses
    from airbench_nb.manifests import read_manifest, read_records
    from airbench_nb.records import Response
    from airbench_nb.runner import refuse_input_as_output, responses_run_folder

    with refusing(JudgeSpecError, FileNotFoundError, ValueError, fatal_api=True):
        refuse_input_as_output(out, {"--responses": responses, "--manifest": manifest})
        price_table = _load_prices(prices)
        items, answers = read_manifest(manifest), read_records(responses, Response)
        _refuse_unmatched(answers, items, responses, manifest)
        _refuse_unread_kinds(judge_spec, answers, items, manifest)
        summary = judge_responses(
            judge_spec,
            items,
            answers,
            out,
            concurrency=concurrency,
            cache=cache,
            dry_run=dry_run,
            batch_api=batch_api,
            foundation_mode="all" if all_items else "abstentions",
            prices=price_table,
            api_key_env=api_key_env,
            run_folder=responses_run_folder(responses),
            repeats=judge_repeats,
        )
    if summary.dry_run is not None:
        console.print(f"dry run: {summary.dry_run}")
        return
    console.print(
        rows_table(f"judge {judge_spec}", field_rows({k: v for k, v in summary.as_dict().items() if k != "dry_run"}))
    )
    if summary.errors:
        raise items_failed(summary.failure_text())


def _refuse_unmatched(
    answers: Sequence[Any], items: Sequence[Any], responses: Path, manifest: Path, model: str | None = None
) -> None:
    """Refuse (exit 2) responses (of ``model``) of which none answers an item of the manifest: nothing to do."""
    uids = {item.uid for item in items}
    if not any(answer.uid in uids for answer in answers):
        of = "" if model is None else f" of {model}"
        held = f"its {len(answers)} responses{of} answer" if answers else f"it holds no response{of}, so answers"
        raise refuse(f"{held} none of the {len(uids)} items of {manifest}: is it the right manifest?", file=responses)


def _refuse_unread_kinds(judge_spec: str, answers: Sequence[Any], items: Sequence[Any], manifest: Path) -> None:
    """Refuse (exit 2) a judge none of whose kinds the responses answer: it would judge nothing, write nothing."""
    from airbench_nb.judge.registry import judge_class

    reads = judge_class(judge_spec).kinds
    by_uid = {item.uid: item.kind for item in items}
    answered = Counter(by_uid[uid] for uid in {answer.uid for answer in answers} if uid in by_uid)
    if not reads & set(answered):
        held = ", ".join(f"{n} {kind} item{'s' * (n != 1)}" for kind, n in sorted(answered.items()))
        raise refuse(
            f"judge {judge_spec} reads {' and '.join(sorted(reads))} items; the responses answer {held} of {manifest}: "
            "nothing to judge (choose a judge of that kind, or the manifest it reads)"
        )


def _refuse_unscorable(items: Sequence[Any], manifest: Path) -> None:
    """Refuse (exit 2) a manifest of which ``score`` scores no item (no metric reads its kinds)."""
    if not items:
        raise refuse("holds no item: nothing to score", file=manifest)
    if any(type(item).METRICS for item in items):
        return
    kinds = sorted({item.kind for item in items})
    raise refuse(
        f"score cannot score {' or '.join(kinds)} items ({len(items)}): no metric of the score table reads them",
        file=manifest,
    )


def _refuse_unknown_model(answers: Sequence[Any], model: str, responses: Path) -> None:
    """Refuse (exit 2) ``--model`` when the responses hold no answer of that model."""
    models = sorted({answer.model for answer in answers})
    if model not in models:
        held = ", ".join(models[:5]) + (" ..." if len(models) > 5 else "") if models else "no model"
        raise refuse(f"--model {model!r}: no response of that model (the file holds {held})", file=responses)


def _refuse_nothing_scored(result: RunScores) -> None:
    """Refuse (exit 2) official files of which no row could be scored (every row invalid): no score to show."""
    for table in result.protocols()[:1]:
        for section in (table.foundation, table.chat):
            data = section.model_dump() if section is not None else {}
            if section is None or data.get("items"):
                continue
            errors = data.get("errors") or []
            source = data.get("source")
            where = ", ".join(source) if isinstance(source, list) else str(source)
            first = f"; first: {errors[0]}" if errors else ""
            raise refuse(f"no row could be scored ({data.get('invalid', 0)} invalid lines{first})", file=where)


def _print_scores(result: RunScores, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2, default=str))
        return
    frame = result.frame()
    shown = frame[frame["level"].isin(["task", "category", "measure", "average"])]
    rounded = shown.round(4).astype(object)
    rows = rounded.where(rounded.notna(), "").to_dict("records")
    console.print(rows_table("scores (95% bootstrap CI; n = denominator; failures counted)", rows))
    from airbench_nb.scoring.provenance import NOT_COMPARABLE, published_judge

    judged = {
        (table.judges.chat_label, spec)
        for table in result.protocols()
        if table.judges is not None
        for spec in table.judges.chat or [None]
    }
    for label, spec in sorted(((label, spec) for label, spec in judged if label), key=lambda p: (p[0], p[1] or "")):
        console.print(f"Chat scores by: {label}" + ("" if published_judge(spec) else f" ({NOT_COMPARABLE})"))


def score(
    manifest: Annotated[Path, typer.Option(help="The manifest.")],
    responses: Annotated[Path, typer.Option(help="Responses JSONL.")],
    verdicts: Annotated[Path | None, typer.Option(help="Verdicts JSONL (strict protocol; Chat needs it).")] = None,
    protocol: Annotated[
        str, typer.Option(help="official, strict or both.", callback=one_of("official", "strict", "both"))
    ] = "both",
    model: Annotated[str | None, typer.Option(help="Model spec, when the files hold several models.")] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    embedder: Annotated[
        str | None,
        typer.Option(help="Text embeddings mapping scene/event answers onto classes (default: the offline MiniLM)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Score a run with the official and/or strict protocol (each score with n, failures and a 95% CI).

    The tiered sound-source items are scored per tier (the model's: A, B or C on closed-set items, D on open ones):
    accuracy, macro precision, recall, F1 and FNR at both granularities, and top-k recall for ranked tiers.

    Exits 0 with the scores; 2 when there is nothing to score (an empty manifest, one of kinds no metric of the score
    table reads, responses that answer none of its items, a --model the file does not hold) or on bad input; 3 when
    the embedder stopped on a fatal API error (no key, the endpoint down).
    """
    from airbench_nb.manifests import read_manifest, read_records
    from airbench_nb.records import Response, Verdict
    from airbench_nb.scoring import score_run

    with refusing(FileNotFoundError, ValueError, fatal_api=True, kept=SCORE_STOPPED):
        items, answers = read_manifest(manifest), read_records(responses, Response)
        _refuse_unscorable(items, manifest)
        if model is not None:
            _refuse_unknown_model(answers, model, responses)
        _refuse_unmatched([a for a in answers if model in (None, a.model)], items, responses, manifest, model)
        result = score_run(
            items,
            answers,
            read_records(verdicts, Verdict) if verdicts else (),
            protocol=protocol,  # type: ignore[arg-type]
            model=model,
            seed=seed,
            metric_options={"embedder": embedder} if embedder else None,
        )
    _print_scores(result, as_json)


def score_official(
    foundation: Annotated[
        Path | None, typer.Option(help="Official Foundation results JSONL (with `response`).")
    ] = None,
    chat: Annotated[Path | None, typer.Option(help="Official Chat judge list, reference first (`gpt-score`).")] = None,
    chat_swapped: Annotated[Path | None, typer.Option(help="The same with the answers swapped.")] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Re-score result files in the official formats (made by any system) with both protocols."""
    from airbench_nb.scoring import score_official_files

    if foundation is None and chat is None and chat_swapped is None:
        raise refuse("give --foundation and/or --chat (and --chat-swapped)")
    with refusing(FileNotFoundError, ValueError):
        result = score_official_files(foundation=foundation, chat=chat, chat_swapped=chat_swapped, seed=seed)
    _refuse_nothing_scored(result)
    _print_scores(result, as_json)
