"""The ``airbench-nb`` command: the same functions the notebooks call, from a shell."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from airbench_nb import __version__

logger = logging.getLogger(__name__)

app = typer.Typer(
    name="airbench-nb",
    help="Evaluate audio-language models the AIR-Bench way: build data, run models, judge, analyse.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Not a terminal (CI, a pipe): print wide tables rather than truncating task names to 80 columns.
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


@app.callback()
def _main(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress (INFO level).")] = False,
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


def _table(title: str, rows: list[dict[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    if not rows:
        return table
    for column in rows[0]:
        table.add_column(column, justify="left" if column in ("task", "reason", "field") else "right")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    return table


DATA_ROOT_HELP = (
    "Folder the manifest's audio paths are relative to, instead of the data_root of its dataset.json (which may "
    "only point inside the manifest's folder, at an AIR-Bench release root or at a manifest folder holding its own "
    "audio)."
)
"""Help of ``--data-root``, shared by the commands that read audio."""


def _refuse(message: str) -> typer.Exit:
    """Print one line on stderr for bad input and return the exit (code 2) to raise."""
    from rich.markup import escape

    err_console.print("[red]error:[/red] " + escape(message), soft_wrap=True)
    return typer.Exit(2)


def _unmakeable(path: Path) -> str | None:
    """Why ``path`` cannot be created: the nearest existing ancestor is a file (None when it can be)."""
    for parent in path.absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is a file, not a folder"
    return None


def _out_file(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback of an option naming a file to write: not a folder, not under a file (else exit 2)."""
    if value is not None:
        name = param.opts[0] if param.opts else param.name
        if value.is_dir():
            raise _refuse(f"{name} {value} is a folder; give the name of a file to write")
        why = _unmakeable(value)
        if why:
            raise _refuse(f"{name} {value} cannot be written: {why}")
    return value


def _out_folder(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback of an option naming a folder to write into: not a file, not under a file (else exit 2)."""
    if value is not None:
        name = param.opts[0] if param.opts else param.name
        if value.exists() and not value.is_dir():
            raise _refuse(f"{name} {value} is a file; give a folder")
        why = _unmakeable(value)
        if why:
            raise _refuse(f"{name} {value} cannot be made: {why}")
    return value


def _not_negative(param: typer.CallbackParam, value: int | None) -> int | None:
    """Typer callback of a count that may be 0 but not negative (else exit 2)."""
    if value is not None and value < 0:
        raise _refuse(f"{param.opts[0] if param.opts else param.name} must be 0 or more, got {value}")
    return value


@app.command()
def version() -> None:
    """Print the kit's version."""
    console.print(__version__)


@app.command("import-official")
def import_official_cmd(
    root: Annotated[Path, typer.Argument(help="Root of an AIR-Bench release (holding Foundation/ and/or Chat/).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for foundation.jsonl, chat.jsonl, ...", callback=_out_folder)
    ],
    workers: Annotated[int, typer.Option(help="Threads used to check and hash audio.")] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Import the official release into manifests; bad rows are rejected with reasons, never fatal.

    Exits 0 when it imported what it could, 2 when ROOT holds no readable meta file.
    """
    from airbench_nb.official import OfficialImportError, import_official

    try:
        report = import_official(root, out, workers=workers)
    except OfficialImportError as exc:
        raise _refuse(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(report.counts(), indent=2))
        return
    for part in report.parts:
        if not part.present:
            console.print(f"{part.benchmark}: no {part.meta_file} (skipped)")
            continue
        if part.file_error:
            console.print(f"[red]{part.benchmark}: {part.file_error}[/red]")
            continue
        rows = part.task_table()
        total = {"task": "TOTAL", **{k: sum(r[k] for r in rows) for k in rows[0] if k != "task"}} if rows else {}
        console.print(
            _table(
                f"{part.benchmark}: {part.rows} rows, {len(part.items)} imported, {len(part.rejected)} rejected",
                [*rows, total] if rows else [],
            )
        )
        if part.rejected:
            console.print(
                _table(
                    f"{part.benchmark}: rejected rows",
                    [
                        {"index": r.index, "uniq_id": r.uniq_id, "field": r.field, "reason": r.reason[:120]}
                        for r in part.rejected
                    ],
                )
            )
    console.print(f"wrote {out}/ (foundation.jsonl, chat.jsonl, rejected.jsonl, dataset.json)")


@app.command()
def validate(
    manifest: Annotated[Path, typer.Argument(help="A JSONL manifest.")],
    check_audio: Annotated[
        bool, typer.Option("--audio/--no-audio", help="Also open and hash every audio file.")
    ] = True,
    data_root_dir: Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP)] = None,
) -> None:
    """Check a manifest: every line valid, uids unique, audio present, decodable and unchanged.

    Exits 1 when a line is invalid or an audio hash differs from the one recorded; 2 when the manifest is missing or
    its dataset.json is invalid or points its data root where it may not (see --data-root).
    """
    from collections import Counter

    from rich.markup import escape

    from airbench_nb.manifests import check_audio as probe_all
    from airbench_nb.manifests import data_root, read_manifest

    try:
        items, errors = read_manifest(manifest, strict=False)
        root = data_root(manifest, root=data_root_dir) if check_audio and items else None
    except (FileNotFoundError, ValueError) as exc:  # ManifestError is a ValueError
        raise _refuse(str(exc)) from None
    for err in errors:
        err_console.print(f"[red]{escape(str(err))}[/red]", soft_wrap=True)
    changed = 0
    if root is not None:
        checked = probe_all(items, root)
        statuses = Counter(i.audio_status.value for i in checked if i.audio_status)
        for before, after in zip(items, checked, strict=True):
            if before.audio_sha256 and after.audio_sha256 and before.audio_sha256 != after.audio_sha256:
                changed += 1
                err_console.print(
                    f"[red]{manifest}: item {before.uid!r}: audio {before.audio} changed "
                    f"(sha256 {before.audio_sha256[:12]}... recorded, {after.audio_sha256[:12]}... now)"
                )
        console.print("audio: " + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())))
    console.print(f"{manifest}: {len(items)} valid items, {len(errors)} invalid lines, {changed} changed audio files")
    if errors or changed:
        raise typer.Exit(1)


def _parse_param(text: str) -> tuple[str, Any]:
    if "=" not in text:
        raise _refuse(f"-p expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    except (ValueError, RecursionError):  # an integer longer than Python converts; nesting too deep
        raise _refuse(
            f"-p {name.strip()}: the value is JSON the kit cannot use (too long a number or too deep)"
        ) from None
    return name.strip(), value


@app.command()
def run(
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            "-p",
            help="NAME=VALUE passed to the notebooks that declare NAME (VALUE read as JSON if it can be).",
        ),
    ] = None,
    notebooks: Annotated[
        str | None, typer.Option(help="Comma-separated notebook stems (default: the pipeline).")
    ] = None,
    run_id: Annotated[str | None, typer.Option(help="Run folder name (default: the UTC time).")] = None,
    reports: Annotated[Path, typer.Option(help="Parent folder of run folders.", callback=_out_folder)] = Path(
        "reports"
    ),
    kernel: Annotated[str | None, typer.Option(help="Jupyter kernel name (default: the notebooks' own).")] = None,
    html: Annotated[bool, typer.Option("--html/--no-html", help="Export executed notebooks to HTML.")] = True,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Re-execute the run REPORTS/RESUME in place with its parameters (updated by --param), reusing "
            "every response, verdict and cache entry already there; a notebook whose inputs did not change is kept.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="With --resume: execute every notebook, even those whose inputs did not change."),
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            help="Shared cache of built data and judge calls (default: $AIRBENCH_CACHE or ~/.cache/airbench-nb)."
        ),
    ] = None,
    grid: Annotated[
        Path | None,
        typer.Option(
            help="YAML grid of parameter sets (see grids/example.yaml): run the pipeline once per set into "
            "REPORTS/RUN_ID/<NN-slug>/ (RUN_ID: grid-<UTC time> by default) and compare them in RUN_ID/index.html; "
            "--param is added to every set. Exits with the number of failed runs."
        ),
    ] = None,
    jobs: Annotated[int | None, typer.Option(help="With --grid: runs at a time (default 1).", min=1)] = None,
) -> None:
    """Execute the pipeline notebooks with papermill into REPORTS/RUN_ID/ and write run.json.

    Built datasets and judge calls are cached across runs (see --cache-dir); --resume RUN_ID re-executes a run in
    place and redoes only what its changed parameters invalidate. --grid GRID.yaml runs once per parameter set of
    the grid, --jobs at a time, sharing the cache; the exit code is the number of failed runs (capped at 125).
    """
    from airbench_nb.pipeline import PipelineError, run_pipeline

    if resume and run_id and resume != run_id:
        raise _refuse("give either --run-id (a new run) or --resume (an existing run), not both")
    parameters = dict(_parse_param(p) for p in param or [])
    stems = [s.strip() for s in notebooks.split(",") if s.strip()] if notebooks else None
    if jobs is not None and grid is None:
        raise _refuse("--jobs sets how many runs of a grid go at a time: give --grid GRID.yaml too")
    if grid is not None:
        from airbench_nb.grid import GridError, run_grid_command

        if resume:
            raise _refuse("--resume re-executes one run; it cannot be combined with --grid")
        try:
            grid_info = run_grid_command(
                grid,
                parameters,
                stems,
                show=console.print,
                table=_table,
                grid_id=run_id,
                reports_dir=reports,
                jobs=jobs or 1,
                cache_dir=cache_dir,
                kernel_name=kernel,
                html=html,
            )
        except GridError as exc:
            raise _refuse(str(exc)) from None
        raise typer.Exit(min(grid_info.failed, 125))
    try:
        info = run_pipeline(
            parameters,
            notebooks=stems,
            run_id=resume or run_id,
            reports_dir=reports,
            kernel_name=kernel,
            html=html,
            progress=True,
            cache_dir=cache_dir,
            resume=resume is not None,
            force=force,
        )
    except PipelineError as exc:
        raise _refuse(str(exc)) from None
    rows = [
        {"notebook": n.name, "status": n.status, "seconds": n.duration_s, "error": (n.error or "")[:100]}
        for n in info.notebooks
    ]
    console.print(_table(f"run {info.run_id}: {info.status}", rows))
    page = reports / info.run_id / "index.html"
    console.print(f"report: {page if page.is_file() else f'{reports / info.run_id}/'}")
    if info.status != "ok":
        raise typer.Exit(1)


@app.command()
def params(
    notebooks: Annotated[
        str | None, typer.Option(help="Comma-separated notebook stems (default: the pipeline).")
    ] = None,
) -> None:
    """List the parameters each pipeline notebook declares, with type, default and help."""
    from airbench_nb.pipeline import PIPELINE, notebook_parameters, notebooks_dir

    stems = [s.strip() for s in notebooks.split(",")] if notebooks else list(PIPELINE)
    for stem in stems:
        found = notebook_parameters(notebooks_dir() / f"{stem}.ipynb")
        rows = [{"name": k, "type": v["type"], "default": v["default"], "help": v["help"]} for k, v in found.items()]
        console.print(_table(stem, rows))


@app.command("mix")
def mix_cmd(
    source_a: Annotated[Path, typer.Argument(help="Source A (e.g. speech): wav, flac or mp3.")],
    source_b: Annotated[Path, typer.Argument(help="Source B (e.g. music or a sound): wav, flac or mp3.")],
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Where to write the mix (16-bit wav, 16 kHz mono).", callback=_out_file),
    ],
    snr_db: Annotated[
        float | None, typer.Option(help="SNR of A over B in dB over the overlap (SSEU-Bench style).")
    ] = None,
    gain_a_db: Annotated[float | None, typer.Option(help="Gain of A in dB relative to the loudness reference.")] = None,
    gain_b_db: Annotated[float | None, typer.Option(help="Gain of B in dB relative to the loudness reference.")] = None,
    offset_s: Annotated[float, typer.Option(help="Start of B minus start of A in seconds (negative: B first).")] = 0.0,
    reference_lufs: Annotated[
        float, typer.Option(help="Loudness both sources are normalised to before gains.")
    ] = -23.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the mix metadata as JSON.")] = False,
) -> None:
    """Mix two clips with loudness control and an offset; write the mix and print its metadata.

    Give either --snr-db, or both --gain-a-db and --gain-b-db. Files are downmixed to mono and resampled to
    16 kHz. Exits 2 on bad input: an unreadable, silent or NaN clip, clips that do not overlap, or neither or
    both level options.
    """
    from airbench_nb.mix import mix_files

    try:
        _check_mix_output(out, source_a, source_b)
        result = mix_files(
            source_a,
            source_b,
            out=out,
            snr_db=snr_db,
            gain_a_db=gain_a_db,
            gain_b_db=gain_b_db,
            offset_s=offset_s,
            reference_loudness=reference_lufs,
        )
    except ValueError as exc:  # AudioError, MixError, OutputError (a refused --out): one line, no traceback
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(result.meta.model_dump_json(indent=2))
        return
    rows = [{"field": k, "value": v} for k, v in result.meta.model_dump(exclude={"schema_version"}).items()]
    console.print(_table(f"wrote {out}", rows))


def _check_mix_output(out: Path, source_a: Path, source_b: Path) -> None:
    """Refuse a mix ``--out`` that is a source, or an existing file that is not a WAV (left untouched)."""
    import soundfile as sf

    from airbench_nb.runner import OutputError, refuse_input_as_output

    refuse_input_as_output(out, {"source A": source_a, "source B": source_b})
    if out.is_dir():
        raise OutputError(f"--out {out} is a folder, not a wav file")
    if out.is_file() and out.stat().st_size:
        try:
            kind = sf.info(str(out)).format
        except Exception:  # noqa: BLE001 - any file libsndfile cannot read is not a mix the kit wrote
            kind = None
        if kind != "WAV":
            raise OutputError(
                f"--out {out} exists and is not a wav file, so it is left untouched; choose another --out"
            )


EXIT_FAILED_ITEMS = 1
"""Exit code of ``infer`` and ``judge`` when some items ended in error (a rerun retries them)."""
EXIT_BAD_INPUT = 2
"""Exit code for bad input or a refused output: nothing was run or written."""
EXIT_FATAL_API = 3
"""Exit code of ``infer`` and ``judge`` stopped by a fatal API error (rejected or missing key, server unreachable)."""


def _fatal_or_bad_input(exc: Exception) -> typer.Exit:
    """Print one line for bad input (exit 2) or a fatal API error (exit 3), and return the exit to raise."""
    from rich.markup import escape

    from airbench_nb.runner import is_fatal_api_error

    if not isinstance(exc, ValueError) and is_fatal_api_error(exc):
        message, code = f"stopped: {exc} (what was done is kept: fix this and rerun to resume)", EXIT_FATAL_API
    else:
        message, code = str(exc), EXIT_BAD_INPUT
    err_console.print("[red]error:[/red] " + escape(message), soft_wrap=True)
    return typer.Exit(code)


@app.command()
def build(
    preset: Annotated[
        str, typer.Option(help="tiny (2 items per task, for tests) or mini (the demo's default).")
    ] = "mini",
    seed: Annotated[int, typer.Option(help="Build seed: the same seed gives byte-identical manifests.")] = 0,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for manifests and audio.", callback=_out_folder)
    ] = Path("data/mini"),
    task: Annotated[list[str] | None, typer.Option(help="Build only this task (repeatable).")] = None,
    recipes: Annotated[Path | None, typer.Option(help="Recipe folder (default: data_manifests/mini).")] = None,
    reference_model: Annotated[
        str | None,
        typer.Option(help="openai:<model>[@<base_url>]: write Chat references from the meta-information with an LLM."),
    ] = None,
    reference_cache: Annotated[
        Path | None, typer.Option(help="SQLite cache of those calls.", callback=_out_file)
    ] = None,
    snr_grid: Annotated[
        str | None,
        typer.Option(
            help="SNRs in dB, comma-separated (e.g. --snr-grid=-10,-5,0,5,10): speech items are built again mixed "
            "over noise or music at each (uid <uid>@snr-05). Default: the preset's; '' or none: no graded items."
        ),
    ] = None,
    snr_items_per_task: Annotated[
        int | None, typer.Option(help="Grade the first N built items of each speech task (default: the preset's).")
    ] = None,
    circular_items_per_task: Annotated[
        int | None,
        typer.Option(
            help="Also write the first N items of each Foundation task once per rotation of their choices "
            "(circular evaluation; uid <uid>@r<k>). Default: the preset's."
        ),
    ] = None,
) -> None:
    """Build the offline benchmark (Foundation and Chat items from synthesized audio with known ground truth)."""
    from airbench_nb.builders import RECIPE_DIR, RecipeError
    from airbench_nb.builders import build as run_build
    from airbench_nb.builders.snr import parse_snr_grid

    try:
        report = run_build(
            preset,
            seed=seed,
            out=out,
            tasks=task or None,
            recipe_dir=recipes or RECIPE_DIR,
            reference_model=reference_model,
            reference_cache=reference_cache,
            snr_grid=parse_snr_grid(snr_grid) if snr_grid is not None else None,
            snr_items_per_task=snr_items_per_task,
            circular_items_per_task=circular_items_per_task,
        )
    except (RecipeError, ValueError) as exc:
        raise _refuse(str(exc)) from None
    counts = report.counts()
    rows = [{"kind": "foundation", "task": t, "items": n} for t, n in counts["foundation"].items()]
    rows += [{"kind": "foundation, SNR-graded", "task": t, "items": n} for t, n in counts["graded"].items()]
    rows += [{"kind": "chat", "task": t, "items": n} for t, n in counts["chat"].items()]
    console.print(
        _table(
            f"built {len(report.foundation)} Foundation + {len(report.chat)} Chat items in "
            f"{report.seconds} s ({len(report.failures)} failures)",
            rows,
        )
    )
    if report.snr_grid:
        console.print(
            f"and {len(report.graded)} SNR-graded Foundation items at {', '.join(f'{s:+g}' for s in report.snr_grid)} "
            f"dB ({counts['graded_failures']} failures), after the clean ones in foundation.jsonl"
        )
    if report.rotated:
        console.print(
            f"and {len(report.rotated)} rotated copies (circular evaluation) of "
            f"{len({i.meta['rotation_of'] for i in report.rotated})} items, last in foundation.jsonl"
        )
    for failure in report.failures:
        err_console.print(
            f"[red]failed:[/red] {failure['task']} {failure.get('uid', failure['index'])}: {failure['error']}"
        )
    console.print(f"gold-letter balance: {report.letter_balance()}")
    console.print(f"wrote {out}/ (foundation.jsonl, chat.jsonl, dataset.json, audio/)")


API_KEY_ENV_HELP = (
    "NAME of the environment variable whose value is sent as the API key of an openai: endpoint, whatever it is "
    "(local ones included). Default: OPENAI_API_KEY goes only to OpenAI's endpoint or OPENAI_BASE_URL, never to a "
    "local one; any other @URL gets no key."
)
"""Help of ``--api-key-env`` on ``infer`` and ``judge``."""


@app.command()
def infer(
    model: Annotated[str, typer.Option(help="Model spec: hf:<path>, openai:<model>[@<base_url>], baseline:<name>.")],
    manifest: Annotated[Path, typer.Option(help="A JSONL manifest (foundation.jsonl or chat.jsonl).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Responses JSONL (resumed when it exists).", callback=_out_file)
    ],
    batch_size: Annotated[int | None, typer.Option(help="Prompts per backend call.")] = None,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N items (0 or more).", callback=_not_negative)
    ] = None,
    max_new_tokens: Annotated[
        int | None,
        typer.Option(
            help="Generation length bound per turn. Default: by kind, Foundation 64, Chat 512, --prompt-set cot 512.",
            min=1,
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Requests in flight (openai: models).")] = 8,
    temperature: Annotated[float, typer.Option(help="0 for greedy decoding.")] = 0.0,
    prompt_set: Annotated[str, typer.Option(help="airbench, cot, or a JSON template file.")] = "airbench",
    seed: Annotated[int, typer.Option(help="Seed of baseline:random and of sampling.")] = 0,
    official_out: Annotated[
        Path | None, typer.Option(help="Also write the official result format here.", callback=_out_file)
    ] = None,
    data_root_dir: Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP)] = None,
    api_key_env: Annotated[str | None, typer.Option(help=API_KEY_ENV_HELP)] = None,
    device: Annotated[
        str | None,
        typer.Option(help="hf: cpu, cuda, cuda:1, or auto (spread over all GPUs; default with several GPUs)."),
    ] = None,
    dtype: Annotated[
        str | None, typer.Option(help="hf: bf16, fp16, fp32 (default: the checkpoint's on CUDA, fp32 on CPU).")
    ] = None,
    attn: Annotated[
        str | None, typer.Option(help="hf: attention kernel: sdpa, flash_attention_2, eager (default: transformers').")
    ] = None,
) -> None:
    """Answer a manifest with a model, appending one response per item (a rerun resumes and retries errors).

    Exits 0 when every item was answered (items whose audio the manifest marks missing, empty or corrupt apart),
    1 when some ended in error (rerun to retry them), 2 on bad input or a refused --out (nothing written), 3 when a
    fatal API error stopped the run (rejected or missing key, server unreachable).
    """
    from rich.markup import escape

    from airbench_nb.manifests import data_root_override
    from airbench_nb.models import SpecError
    from airbench_nb.prompts import PromptSet
    from airbench_nb.runner import infer as run_infer
    from airbench_nb.runner import is_fatal_api_error

    try:
        PromptSet.named(prompt_set)  # a bad template file fails here, before a model is loaded or called
        with data_root_override(manifest, data_root_dir):
            summary = run_infer(
                model,
                manifest,
                out,
                batch_size=batch_size,
                concurrency=concurrency,
                limit=limit,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                prompt_set=prompt_set,
                seed=seed,
                official_out=official_out,
                api_key_env=api_key_env,
                model_options={"device": device, "dtype": dtype, "attn": attn},
            )
    except Exception as exc:
        if is_fatal_api_error(exc) or isinstance(exc, SpecError | FileNotFoundError | ValueError):
            raise _fatal_or_bad_input(exc) from None
        raise
    console.print(_table(f"{model} on {manifest}", [{"field": k, "value": v} for k, v in summary.as_dict().items()]))
    if summary.unusable:
        console.print(
            f"{summary.unusable} items have missing, empty or corrupt audio: data defects, left out of scoring"
        )
    if summary.failed:
        err_console.print(
            "[red]error:[/red] " + escape(f"{summary.failure_text()}; rerun the same command to retry them"),
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_FAILED_ITEMS)


def _load_prices(path: Path | None) -> Any:
    if path is None:
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise typer.BadParameter(f"{path}: cannot read the price table ({exc})") from None


@app.command()
def judge(
    judge_spec: Annotated[str, typer.Option("--judge", help="rule, proxy, openai:<model>[@<base_url>] or hf:<path>.")],
    manifest: Annotated[Path, typer.Option(help="The manifest the responses answer.")],
    responses: Annotated[Path, typer.Option(help="Responses JSONL (from `airbench-nb infer`).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Verdicts JSONL (resumed when it exists).", callback=_out_file)
    ],
    concurrency: Annotated[int, typer.Option(help="Judge requests in flight.")] = 8,
    cache: Annotated[
        Path | None,
        typer.Option(help="SQLite cache of judge calls (a rerun makes no request).", callback=_out_file),
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
) -> None:
    """Judge responses into verdicts: Foundation choice extraction, Chat scores in both orders.

    A rerun judges only what is new: responses answered again since, and failed judge calls. Exits 0 when every
    judge call succeeded (abstentions and unparseable replies are outcomes, counted), 1 when some failed (rerun to
    retry them), 2 on bad input or a refused --out (nothing written), 3 when a fatal API error stopped the run.
    """
    from rich.markup import escape

    from airbench_nb.judge.run import JudgeSpecError, judge_responses
    from airbench_nb.manifests import read_manifest, read_records
    from airbench_nb.records import Response
    from airbench_nb.runner import is_fatal_api_error, refuse_input_as_output

    try:
        refuse_input_as_output(out, {"--responses": responses, "--manifest": manifest})
        summary = judge_responses(
            judge_spec,
            read_manifest(manifest),
            read_records(responses, Response),
            out,
            concurrency=concurrency,
            cache=cache,
            dry_run=dry_run,
            batch_api=batch_api,
            foundation_mode="all" if all_items else "abstentions",
            prices=_load_prices(prices),
            api_key_env=api_key_env,
        )
    except Exception as exc:
        if is_fatal_api_error(exc) or isinstance(exc, JudgeSpecError | FileNotFoundError | ValueError):
            raise _fatal_or_bad_input(exc) from None
        raise
    if summary.dry_run is not None:
        console.print(f"dry run: {summary.dry_run}")
        return
    console.print(
        _table(
            f"judge {judge_spec}", [{"field": k, "value": v} for k, v in summary.as_dict().items() if k != "dry_run"]
        )
    )
    if summary.errors:
        err_console.print(
            "[red]error:[/red] " + escape(f"{summary.failure_text()}; rerun the same command to retry them"),
            soft_wrap=True,
        )
        raise typer.Exit(EXIT_FAILED_ITEMS)


def _print_scores(result: dict[str, Any], as_json: bool) -> None:
    from airbench_nb.scoring import scores_frame

    if as_json:
        typer.echo(json.dumps(result, indent=2, default=str))
        return
    frame = scores_frame(result)
    shown = frame[frame["level"].isin(["task", "category", "average"])]
    rows = shown.round(4).fillna("").to_dict("records")
    console.print(_table("scores (95% bootstrap CI; n = denominator; failures counted)", rows))
    labels = {table.get("judges", {}).get("chat_label") for table in result.values() if isinstance(table, dict)}
    for label in sorted(filter(None, labels)):
        console.print(f"Chat scores by: {label}")


@app.command()
def score(
    manifest: Annotated[Path, typer.Option(help="The manifest.")],
    responses: Annotated[Path, typer.Option(help="Responses JSONL.")],
    verdicts: Annotated[Path | None, typer.Option(help="Verdicts JSONL (strict protocol; Chat needs it).")] = None,
    protocol: Annotated[str, typer.Option(help="official, strict or both.")] = "both",
    model: Annotated[str | None, typer.Option(help="Model spec, when the files hold several models.")] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Score a run with the official and/or strict protocol (each score with n, failures and a 95% CI)."""
    from airbench_nb.manifests import read_manifest, read_records
    from airbench_nb.records import Response, Verdict
    from airbench_nb.scoring import score_run

    if protocol not in ("official", "strict", "both"):
        raise typer.BadParameter("protocol must be official, strict or both")
    try:
        result = score_run(
            read_manifest(manifest),
            read_records(responses, Response),
            read_records(verdicts, Verdict) if verdicts else (),
            protocol=protocol,  # type: ignore[arg-type]
            model=model,
            seed=seed,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise _refuse(str(exc)) from None
    _print_scores(result, as_json)


@app.command("score-official")
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
        raise typer.BadParameter("give --foundation and/or --chat (and --chat-swapped)")
    try:
        result = score_official_files(foundation=foundation, chat=chat, chat_swapped=chat_swapped, seed=seed)
    except (FileNotFoundError, ValueError) as exc:
        raise _refuse(str(exc)) from None
    _print_scores(result, as_json)


@app.command()
def rotate(
    manifest: Annotated[Path, typer.Argument(help="A manifest with Foundation items.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="The rotated manifest to write (e.g. DIR/foundation.jsonl).", callback=_out_file
        ),
    ],
    rotations: Annotated[
        int | None, typer.Option(help="Rotations per item (default: one per option, 4 for 4 choices).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Write every Foundation item once per rotation of its choices (MMBench CircularEval): uid <uid>@r<k>."""
    from airbench_nb.analysis.circular import rotate_manifest
    from airbench_nb.manifests import ManifestError

    try:
        counts = rotate_manifest(manifest, out, rotations=rotations)
    except (FileNotFoundError, ValueError, ManifestError) as exc:
        raise _refuse(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(counts, indent=2, default=str))
        return
    console.print(
        f"wrote {counts['written']} rotated copies of {counts['foundation']} Foundation items to {counts['out']} "
        f"({counts['skipped_chat']} Chat items not rotated); audio resolves from {counts['data_root']}"
    )


@app.command()
def analyze(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (reports/<run_id>) with data/, responses/, verdicts/.")],
    protocol: Annotated[str, typer.Option(help="strict or official: how answers are read.")] = "strict",
    weights: Annotated[
        str, typer.Option(help="Ranking weights per capability.")
    ] = "speech=0.4,sound=0.3,music=0.2,chat=0.1",
    model: Annotated[list[str] | None, typer.Option(help="Analyse only this model spec (repeatable).")] = None,
    judge: Annotated[list[str] | None, typer.Option(help="Analyse only this Chat judge (repeatable).")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default RUN_DIR/analysis).", callback=_out_folder)
    ] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print analysis.json.")] = False,
) -> None:
    """Analyse a run: main table, position bias, circular, order bias, per-class metrics, SNR curves, rankings."""
    from airbench_nb.analysis.report import analyze_run
    from airbench_nb.manifests import ManifestError

    if protocol not in ("strict", "official"):
        err_console.print(f"[red]error:[/red] protocol must be strict or official, got {protocol!r}")
        raise typer.Exit(2)
    if not run_dir.is_dir():
        err_console.print(f"[red]error:[/red] {run_dir}: no such run folder")
        raise typer.Exit(2)
    try:
        result = analyze_run(
            run_dir, protocol=protocol, weights=weights, out=out, models=model, judges=judge, seed=seed
        )
    except (FileNotFoundError, ValueError, ManifestError) as exc:
        raise _refuse(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(result, indent=1, default=str))
        return
    folder = out or run_dir / "analysis"
    console.print(f"analysed {len(result['models'])} model(s) under the {protocol} protocol into {folder}/")
    for name in result["files"]["figures"]:
        console.print(f"  {name}")
    for section, why in result["reasons"].items():
        console.print(f"[yellow]{section}:[/yellow] {why}")


@app.command()
def compare(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="Run folders (every model in them) or RUN_DIR::MODEL_SPEC (one model of a run); at least two models."
        ),
    ],
    protocol: Annotated[str, typer.Option(help="strict or official: how answers are read.")] = "strict",
    judge: Annotated[
        str | None, typer.Option(help="Chat judge to compare on (default: the one that scored most models).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Bootstrap seed.")] = 0,
    reps: Annotated[int, typer.Option(help="Bootstrap replicates.", min=0)] = 2000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare models pair by pair on shared items: differences with 95% CIs, McNemar / Wilcoxon, Holm-corrected."""
    from rich.markup import escape

    from airbench_nb.analysis.compare import compare_runs
    from airbench_nb.manifests import ManifestError

    if protocol not in ("strict", "official"):
        err_console.print("[red]error:[/red] " + escape(f"protocol must be strict or official, got {protocol!r}"))
        raise typer.Exit(2)
    try:
        result = compare_runs(sources, protocol=protocol, chat_judge=judge, seed=seed, reps=reps)
    except (FileNotFoundError, ValueError, ManifestError) as exc:
        err_console.print("[red]error:[/red] " + escape(str(exc)), soft_wrap=True)
        raise typer.Exit(2) from None
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
            }
            for r in result.rows
            if (r["model_a"], r["model_b"]) == pair
        ]
        console.print(_table(f"A = {pair[0]}  vs  B = {pair[1]}", rows))
    for match in result.items:
        left_out = f"{match.only_a} only in A, {match.only_b} only in B, {match.differ} differ"
        left_out += f", {match.unscored} unscored"
        line = f"{match.model_a} vs {match.model_b} · {match.benchmark}: {match.compared} items compared; {left_out}"
        console.print(escape(line + (f" ({match.reason})" if match.reason else "")), soft_wrap=True)
        if match.differ:
            fields = ", ".join(f"{k} {v}" for k, v in match.differ_fields.items())
            uids = ", ".join(match.examples["differ"])
            console.print(escape(f"  differing fields: {fields}; e.g. {uids}"), soft_wrap=True)


@app.command("agreement")
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
    reps: Annotated[int, typer.Option(help="Bootstrap resamples.", min=1)] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Judge-human agreement per judge and kind, and inter-annotator agreement, with 95% CIs and n."""
    from rich.markup import escape

    from airbench_nb.analysis.agreement import agreement, agreement_frame
    from airbench_nb.manifests import ManifestError

    def refuse(message: str) -> typer.Exit:
        err_console.print("[red]error:[/red] " + escape(message), soft_wrap=True)
        return typer.Exit(2)

    if not run_dir.is_dir():
        raise refuse(f"{run_dir}: no such run folder (give RUN_DIR before --labels)")
    files = [*labels, *(more_labels or [])]
    if sample is None:
        found = sorted(
            p for p in (run_dir / "annotation").glob("sample*.jsonl") if not p.name.endswith(".labels.jsonl")
        )
        if len(found) != 1:
            where = f"{run_dir / 'annotation'}: " + (", ".join(p.name for p in found) or "no sample*.jsonl")
            raise refuse(f"give --sample: {where}")
        sample = found[0]
    try:
        result = agreement(run_dir, sample, files, seed=seed, judges=judge, reps=reps)
    except (FileNotFoundError, ValueError, ManifestError) as exc:
        raise refuse(str(exc)) from None
    if as_json:
        typer.echo(json.dumps(result, indent=1))
        return

    def number(value: Any) -> str:
        return "" if value is None or value != value else f"{value:.3f}"

    counts = result["counts"]
    console.print(
        f"{counts['labelled_pairs']} of {counts['pairs']} pairs labelled by {len(result['annotators'])} annotator(s) "
        f"({counts['labels']} labels, {counts['undos']} undos, {counts['skips']} skips); {result['headline']}",
        soft_wrap=True,
    )
    rows = []
    for row in agreement_frame(result, secondary_foundation=True).to_dict("records"):
        block = result["judges"].get(row["judge"], {}).get(row["kind"], {})
        majority = block.get("majority", {}) if row["measure"] == "agreement" else {}
        rows.append(
            {
                "judge": row["judge"],
                "measure": row["label"],
                "n": row["n"],
                "agreement": number(row["agreement"]),
                "95% CI": f"[{number(row['ci_low'])}, {number(row['ci_high'])}]",
                "kappa": number(block.get("kappa")) if row["measure"] == "agreement" else "",
                "majority": number(majority.get("agreement")),
                "n majority": majority.get("n", ""),
            }
        )
    console.print(_table("judge-human agreement (votes = pairs x annotators)", rows))
    rows = [
        {
            "kind": kind,
            "annotators": block["n_annotators"],
            "statistic": (block["statistic"] or "").split(" (")[0],
            "kappa": number(block["cohen_kappa"] if block["cohen_kappa"] is not None else block["fleiss_kappa"]),
            "95% CI": f"[{number(block['ci_low'])}, {number(block['ci_high'])}]",
            "n": block["n"],
            "alpha": number(block["krippendorff_alpha"]),
            "alpha 95% CI": f"[{number(block['alpha_ci_low'])}, {number(block['alpha_ci_high'])}]",
            "n alpha": block["n_alpha"],
        }
        for kind, block in result["inter_annotator"].items()
    ]
    if rows:
        console.print(_table("inter-annotator agreement (bootstrap over pairs; alpha: Krippendorff, nominal)", rows))
    frame = result.categories
    if not frame.empty:
        shown = frame.assign(
            agreement=frame["agreement"].map(number),
            ci=[f"[{number(a)}, {number(b)}]" for a, b in zip(frame["ci_low"], frame["ci_high"], strict=True)],
        )[["judge", "kind", "category", "n", "agreement", "ci"]].rename(columns={"ci": "95% CI"})
        console.print(_table("judge-human agreement per category", shown.to_dict("records")))
    console.print(f"{len(result.disagreements)} (judge, pair) disagreements; notebook 06 lists them with audio")
    for key, why in result["reasons"].items():
        console.print(f"[yellow]{key}:[/yellow] {why}", soft_wrap=True)


@app.command("sample-annotation")
def sample_annotation_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (reports/<run_id>) with data/ and responses/.")],
    n: Annotated[int, typer.Option("--n", help="Pairs to draw (fewer if the run has fewer).", min=1)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The sample JSONL to write.")],
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
    from airbench_nb.manifests import ManifestError

    def refuse(message: str) -> typer.Exit:
        err_console.print("[red]error:[/red] " + escape(message), soft_wrap=True)
        return typer.Exit(2)

    if kind not in KINDS:
        raise refuse(f"--kind must be {' or '.join(KINDS)}, got {kind!r}")
    if stratify not in STRATIFY:
        raise refuse(f"--stratify must be {' or '.join(STRATIFY)}, got {stratify!r}")
    if not run_dir.is_dir():
        raise refuse(f"{run_dir}: no such run folder")
    if out.is_dir():
        raise refuse(f"--out {out} is a folder; give the name of a file to write")
    try:
        report = sample_annotation(
            run_dir, out, n, kind=kind, stratify=stratify, seed=seed, show_judge=show_judge, models=model
        )
    except (FileNotFoundError, FileExistsError, ValueError, ManifestError) as exc:
        raise refuse(str(exc)) from None
    if not report.pairs:
        raise refuse(f"{run_dir}: no {kind} pair to sample (no answered items); nothing written")
    if as_json:
        typer.echo(dumps_report(report))
        return
    console.print(
        escape(
            f"{len(report.pairs)} {kind} pairs drawn from {report.population} (seed {seed}, by {stratify}) into {out}"
        ),
        soft_wrap=True,
    )
    rows = [{"stratum": s, "eligible": c["eligible"], "sampled": c["sampled"]} for s, c in report.strata.items()]
    console.print(_table(f"pairs per {stratify}", rows))
    left_out = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.excluded.items() if v)
    if left_out:
        console.print(escape(f"left out: {left_out}"), soft_wrap=True)
    console.print("label them in JupyterLab with notebooks/06_annotate.ipynb (sample=..., annotator=your id)")


@app.command()
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (reports/<run_id>) with run.json.")],
) -> None:
    """Write (again) the run's landing page: index.html and README.md beside run.json."""
    from airbench_nb.report_page import write_report_page

    try:
        index, _ = write_report_page(run_dir)
    except FileNotFoundError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    console.print(f"report: {index}")


def main() -> None:
    """Entry point of the console script."""
    app()


if __name__ == "__main__":
    main()
