"""Commands that run the notebooks and write their pages: ``run``, ``params``, ``report``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from airbench_nb.cli.app import console, out_folder, refuse, refusing, rows_table
from airbench_nb.run_folder import RunFolder


def _parse_param(text: str, flag: str = "-p") -> tuple[str, Any]:
    if "=" not in text:
        raise refuse(f"{flag} expects NAME=VALUE, got {text!r}")
    name, raw = text.split("=", 1)
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    except (ValueError, RecursionError):  # an integer longer than Python converts; nesting too deep
        raise refuse(
            f"{flag} {name.strip()}: the value is JSON the kit cannot use (too long a number or too deep)"
        ) from None
    return name.strip(), value


@contextmanager
def _stopped(what: str) -> Iterator[None]:
    """Ctrl-C or SIGTERM (recorded by the run or grid before it stops): one line and exit 130 or 143."""
    try:
        yield
    except KeyboardInterrupt as exc:
        from airbench_nb.pipeline import Stopped, interruption

        console.print(f"{escape(what)} stopped by {interruption(exc)}: what ran is recorded; --resume finishes it")
        raise typer.Exit(143 if isinstance(exc, Stopped) else 130) from None


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
    reports: Annotated[Path, typer.Option(help="Parent folder of run folders.", callback=out_folder)] = Path("reports"),
    kernel: Annotated[str | None, typer.Option(help="Jupyter kernel name (default: the notebooks' own).")] = None,
    html: Annotated[bool, typer.Option("--html/--no-html", help="Export executed notebooks to HTML.")] = True,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Re-execute the run REPORTS/RESUME in place with its parameters (updated by --param), reusing "
            "every response, verdict and cache entry already there; a notebook whose inputs did not change is kept. "
            "A grid's id resumes the grid: its finished runs are kept, its failed and pending ones rerun.",
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
    jobs: Annotated[
        int | None,
        typer.Option(
            help="With --grid: runs at a time (default 1; on Ray, as many as the cluster's resources allow).", min=1
        ),
    ] = None,
    executor: Annotated[
        str | None,
        typer.Option(
            help="With --grid or a grid's --resume: where the runs execute. local (default: a process per run here), "
            "ray (this machine's Ray cluster, or a new local one), ray:ADDRESS (e.g. ray:auto, ray:HOST:6379) or "
            "ray://HOST:PORT (Ray Client): each run a Ray task holding the grid file's resources: (num_cpus, "
            "num_gpus), run again when its worker dies; the reports and cache folders must be on storage every node "
            "sees. Needs pip install 'airbench-nb\\[ray]'. A resumed grid runs where it ran unless given.",
        ),
    ] = None,
) -> None:
    """Execute the pipeline notebooks with papermill into REPORTS/RUN_ID/ and write run.json.

    Built datasets and judge calls are cached across runs (see --cache-dir); --resume RUN_ID re-executes a run in
    place and redoes only what its changed parameters invalidate. --grid GRID.yaml runs once per parameter set of
    the grid, --jobs at a time, sharing the cache; the exit code is the number of failed runs (capped at 125).
    --resume GRID_ID resumes a grid: finished runs kept, failed and pending ones rerun. --executor ray runs a
    grid's runs as tasks on a Ray cluster.
    """
    from airbench_nb.pipeline import PipelineError, run_pipeline

    if resume and run_id and resume != run_id:
        raise refuse("give either --run-id (a new run) or --resume (an existing run), not both")
    parameters = dict(_parse_param(p) for p in param or [])
    stems = [s.strip() for s in notebooks.split(",") if s.strip()] if notebooks else None
    from airbench_nb.grid import is_grid_folder

    grid_resume = resume is not None and is_grid_folder(reports / resume)  # --resume GRID_ID resumes a grid
    if jobs is not None and grid is None and not grid_resume:
        raise refuse("--jobs sets how many runs of a grid go at a time: give --grid GRID.yaml too")
    if executor is not None and grid is None and not grid_resume:
        raise refuse("--executor sets where the runs of a grid execute: give --grid GRID.yaml too")
    if grid is not None or grid_resume:
        from airbench_nb.grid import GridError, run_grid_command

        if resume and grid is not None:
            raise refuse("--resume re-executes one run or one grid; it cannot be combined with --grid")
        with refusing(GridError), _stopped(f"grid {resume or run_id or ''}".strip()):
            grid_info = run_grid_command(
                grid,
                parameters,
                stems,
                show=console.print,
                table=rows_table,
                grid_id=resume or run_id,
                reports_dir=reports,
                jobs=jobs,
                cache_dir=cache_dir,
                kernel_name=kernel,
                html=html,
                resume=grid_resume,
                executor=executor,
            )
        raise typer.Exit(min(grid_info.failed, 125))
    with refusing(PipelineError), _stopped(f"run {resume or run_id or ''}".strip()):
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
    rows = [
        {"notebook": n.name, "status": n.status, "seconds": n.duration_s, "error": (n.error or "")[:100]}
        for n in info.notebooks
    ]
    console.print(rows_table(f"run {info.run_id}: {info.status}", rows))
    from airbench_nb.pages.real_models import real_model_rows
    from airbench_nb.report_page import skipped_real_models

    folder = RunFolder(reports / info.run_id)
    real = real_model_rows(folder.read_scores(), folder.read_analysis())
    if real:
        console.print(
            rows_table(
                "real models (strict protocol; every number with its 95% interval on the landing page)",
                [
                    {"model": r.model, "benchmark": r.benchmark, "task": r.task, "metric": r.metric, "value": r.value}
                    | {"n": r.n, "failures": r.failures}
                    for r in real
                ],
            )
        )
    skipped = skipped_real_models(reports / info.run_id, info.notebooks)
    if skipped:
        from airbench_nb.weights import fetch_command

        console.print(
            f"real models skipped (weights not fetched): {', '.join(skipped)}; "
            f"get them with `{fetch_command(skipped)}`",
            soft_wrap=True,
        )
    page = RunFolder(reports / info.run_id).index_html
    console.print(f"report: {page if page.is_file() else f'{reports / info.run_id}/'}")
    if info.status != "ok":
        raise typer.Exit(1)


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
        console.print(rows_table(stem, rows))


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (reports/<run_id>) with run.json.")],
) -> None:
    """Write (again) the run's landing page: index.html and README.md beside run.json (a grid's: beside grid.json).

    A grid killed while it ran is first marked failed (its process is gone), with the runs it left unfinished.
    """
    from airbench_nb.grid import GridError, is_grid_folder, write_grid_page_settled
    from airbench_nb.report_page import write_report_page

    with refusing(FileNotFoundError, GridError):
        index = write_grid_page_settled(run_dir) if is_grid_folder(run_dir) else write_report_page(run_dir)[0]
    console.print(f"report: {index}")
