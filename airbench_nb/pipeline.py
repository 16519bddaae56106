"""Headless runs: execute the pipeline's notebooks with papermill into ``reports/<run_id>/``.

Each notebook gets the run's parameters that it declares in its ``parameters`` cell, plus ``run_dir`` (the
absolute path of the run folder) when it declares one. The run folder receives the executed notebooks, their
HTML exports and ``run.json`` (:class:`~airbench_nb.records.RunInfo`): parameters, package versions, git
commit, start and end, and each notebook's status. ``run.json`` is rewritten after every notebook, so an
interrupted run still says how far it got. Parameters that look like secrets are refused before anything runs.

Resumes are incremental. After a notebook executes to the end, the run records the SHA-256 of what its execution
depends on (:func:`notebook_inputs`: its source, its parameters, the package versions, a few environment variables
and the content of the run-folder files it reads and writes, :data:`STAGE_FILES`); ``run --resume`` keeps a
notebook whose hash is unchanged (its executed notebook and HTML stay, ``run.json`` marks it ``reused``) and
executes the others; ``force`` executes every one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import platform
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from airbench_nb.records import NotebookStatus, RunInfo
from airbench_nb.run_folder import GRID_JSON, RUN_JSON, STAGE_FILES, RunFolder
from airbench_nb.score_table import MAX_REPS

logger = logging.getLogger(__name__)

PIPELINE: tuple[str, ...] = (
    "00_tutorial",
    "01_build_data",
    "02_mix_and_listen",
    "03_run_model",
    "04_judge",
    "05_analyze",
    "06_annotate",
)
"""Notebook stems executed by ``airbench-nb run``, in order. Later stages register themselves here."""

REPORTS_DIR = Path("reports")
"""Default parent folder of run folders."""

TRACKED_PACKAGES = (
    "airbench-nb",
    "papermill",
    "nbformat",
    "ipykernel",
    "numpy",
    "pandas",
    "pydantic",
    "soundfile",
    "librosa",
    "pyloudnorm",
    "torch",
    "transformers",
    "openai",
    "scikit-learn",
    "scipy",
)
"""Distributions whose versions go into ``run.json`` (those installed)."""

SECRET_NAME = re.compile(r"(api[_-]?key|secret|token|passw(or)?d|bearer|credential)", re.IGNORECASE)
"""Parameter names that may hold a secret; such parameters are refused."""
SECRET_VALUE = re.compile(
    r"(?<![A-Za-z0-9_-])sk-(?:(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{6,}|[A-Za-z0-9_-]{20,})"  # OpenAI/Anthropic keys
    r"|(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{8,}"  # GitHub tokens (classic, OAuth, user, server, refresh)
    r"|(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{8,}"  # GitHub fine-grained tokens
    r"|(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}"  # Hugging Face tokens
    r"|(?<![A-Za-z0-9])AKIA[0-9A-Z]{16}"  # AWS access key ids
    r"|Bearer\s+\S{12,}"
    r"|[A-Za-z][A-Za-z0-9+.-]*://[^/\s@:]*:[^/\s@]*@"  # a password in a URL: scheme://user:password@host
)
"""Values that look like API keys, tokens or passwords in URLs; such values are refused.

``sk-`` needs 6 or more key characters with a digit among them (or 20 or more of any), not glued to a word before
it, so that ``sk-abc123`` is caught while ``task-sk-level`` or ``sk-learn`` are not."""
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""What a run id may be: a single folder name under the reports folder (no separator, no ``..``, not absolute)."""


PARAMETER_MINIMUMS: dict[str, int] = {
    "limit": 0,
    "batch_size": 0,
    "max_new_tokens": 0,
    "show": 0,
    "concurrency": 1,
    "samples": 0,
}
"""Smallest value of the counting parameters of the notebooks (03, 04): 0 means "all" or "the default" where the
notebook says so; below it a value would do something nobody asked for (``limit=-1`` would answer every item but
the last), so :func:`check_parameter_values` refuses it before anything runs."""

PARAMETER_MAXIMUMS: dict[str, int] = {"reps": MAX_REPS}
"""Largest value of the counting parameters whose cost grows with them (05, 06: bootstrap resamples), as the
commands' options have it."""

FINITE_MAPPINGS: tuple[str, ...] = ("listening_wer",)
"""Parameters mapping names to numbers that must be finite and not negative (06: a WER per system)."""

PATH_PARAMETERS = ("manifest_dir", "responses_dir", "verdicts_dir", "out_dir", "sample", "labels", "prompt_set")
"""Parameters that may name files or folders (outside the run folder) a notebook reads or writes: the content of
such a file, or of the ``.json``/``.jsonl`` files under such a folder, is part of the notebook's inputs hash."""

INPUT_ENVIRONMENT = ("AIRBENCH_JUDGE", "AIRBENCH_CACHE", "OPENAI_BASE_URL")
"""Environment variables that change what a notebook does (an added judge, the cache, an endpoint): their values
are part of every notebook's inputs hash (only the digest is stored)."""


class PipelineError(RuntimeError):
    """A run that cannot start (unknown notebook or parameter, a secret, a bad run id or reports folder).

    The run id must not leave the reports folder; the reports folder must be makeable (not a file, not under one).
    """


NOTEBOOK_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""How a notebook stem is written: a plain file name without extension, never a path."""


def notebook_path(source: Path, stem: object, default_source: bool) -> Path:
    """The notebook a stem names in ``source``, refusing what is not one of its own notebooks.

    A stem is a plain name (:data:`NOTEBOOK_STEM`: no folder, no ``..``) of a notebook directly inside ``source``;
    from the kit's own folder only the pipeline's stems (:data:`PIPELINE`) are accepted. So a grid, ``--notebooks``
    or a ``run.json`` read back on ``--resume`` can never execute a notebook from elsewhere or write outside the run
    folder.

    Args:
        source: The notebook folder.
        stem: The stem asked for.
        default_source: Whether ``source`` is the kit's own folder (no ``notebook_dir``, no ``$AIRBENCH_NOTEBOOKS``).

    Raises:
        PipelineError: In one line, for any other stem.
    """
    known = f"pipeline notebooks: {', '.join(PIPELINE)}"
    if not isinstance(stem, str) or not NOTEBOOK_STEM.fullmatch(stem):
        shown = repr(stem)[:80]
        raise PipelineError(f"notebook {shown} is not a notebook stem (a plain name such as 03_run_model; {known})")
    if default_source and stem not in PIPELINE:
        raise PipelineError(f"no notebook {stem!r} in the pipeline ({known})")
    path = source / f"{stem}.ipynb"
    if not path.is_file() or path.resolve().parent != source.resolve():
        raise PipelineError(f"no notebook {stem!r} in {source} ({known})")
    return path


def kernel_config() -> Any:
    """The Jupyter configuration of the kernels that execute a run's notebooks: IPC transport where the OS has it.

    Over TCP (jupyter_client's default) every kernel warns on start that it is "running over TCP without encryption"
    (ipykernel >= 7), once per notebook, among the kit's own progress lines; and any local user could connect to its
    ports. Over IPC the kernel's sockets are files in the Jupyter runtime folder (mode 0700): nothing to warn about.
    Windows has no IPC transport in ZeroMQ and keeps TCP.
    """
    from traitlets.config import Config

    config = Config()
    if os.name == "posix":
        config.KernelManager.transport = "ipc"
    return config


def notebooks_dir() -> Path:
    """Folder of the pipeline notebooks: ``$AIRBENCH_NOTEBOOKS`` or ``notebooks/`` beside the package."""
    env = os.environ.get("AIRBENCH_NOTEBOOKS")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "notebooks"


def check_no_secrets(parameters: dict[str, Any]) -> None:
    """Refuse parameters whose name or value looks like a secret.

    Keys come from the environment (``OPENAI_API_KEY``, ...), never from parameters: a parameter lands in the
    executed notebook and in ``run.json``.

    Raises:
        PipelineError: Naming the offending parameter (never echoing its value).
    """
    for name, value in parameters.items():
        if SECRET_NAME.search(name):
            raise PipelineError(
                f"parameter {name!r} looks like a secret; pass keys through the environment, never as parameters"
            )
        if SECRET_VALUE.search(str(value)):
            raise PipelineError(
                f"the value of parameter {name!r} looks like an API key or token; pass keys through the environment"
            )


_TYPE_CHECKS: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    ("float", (int, float), "a finite number"),
    ("str", str, "a string (quote it)"),
    ("bool", bool, "true or false"),
    ("list", list, "a list"),
    ("dict", dict, "a mapping"),
)
"""Declared parameter type, the Python types its values may have, and how an error says it."""


def _is_type(value: Any, expected: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool) and expected is not bool:
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, expected)


def check_parameter_values(parameters: dict[str, Any], declared: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Refuse a parameter value the notebooks declaring it cannot use, before anything runs.

    A parameter declared ``int`` takes a whole number (not ``true``, not ``"5"``, not ``2.5``), one declared
    ``float`` a finite number, ``str`` a string, ``bool`` true or false, ``list`` a list and ``dict`` a mapping
    (:data:`_TYPE_CHECKS`); a counting parameter of :data:`PARAMETER_MINIMUMS` takes its minimum or more
    (``limit=-1`` is refused), one of :data:`PARAMETER_MAXIMUMS` at most its maximum (``reps``), and the numbers of a
    mapping of :data:`FINITE_MAPPINGS` must be finite and not negative.

    Args:
        parameters: The run's parameters.
        declared: Per notebook stem, the parameters it declares (:func:`notebook_parameters`).

    Raises:
        PipelineError: Naming the parameter, its value, the notebooks declaring it and what it takes.
    """
    for name, value in parameters.items():
        stems = [stem for stem, names in declared.items() if name in names]
        if not stems:
            continue
        where = f"(declared by {', '.join(stems)}: {declared[stems[0]][name]['help'] or 'no help'})"
        types = {declared[stem][name]["type"] for stem in stems}
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
        if "int" in types and (isinstance(value, bool) or not isinstance(value, int)):
            raise PipelineError(f"parameter {name}={shown} must be a whole number {where}")
        for declared_type, expected, what in _TYPE_CHECKS:
            if declared_type in types and not _is_type(value, expected):
                raise PipelineError(f"parameter {name}={shown} must be {what} {where}")
        minimum = PARAMETER_MINIMUMS.get(name)
        if minimum is not None and isinstance(value, int | float) and not isinstance(value, bool) and value < minimum:
            raise PipelineError(f"parameter {name}={value!r} must be {minimum} or more {where}")
        maximum = PARAMETER_MAXIMUMS.get(name)
        if maximum is not None and isinstance(value, int | float) and not isinstance(value, bool) and value > maximum:
            raise PipelineError(f"parameter {name}={value!r} must be at most {maximum:,} {where}")
        if name in FINITE_MAPPINGS and isinstance(value, dict):
            for key, number in value.items():
                if not _is_type(number, (int, float)) or number < 0:
                    raise PipelineError(
                        f"parameter {name}[{key!r}]={number!r} must be a finite number, 0 or more {where}"
                    )


def check_run_id(run_id: str) -> str:
    """Refuse a run id that is not one plain folder name (``../x``, ``/tmp/x``, ``a/b``, ``..``).

    Raises:
        PipelineError: Saying what a run id may hold.
    """
    if not RUN_ID.fullmatch(run_id):
        raise PipelineError(
            f"run id {run_id!r} is not a plain folder name: use up to 128 letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (no '/', '\\' or '..'), so that the run stays inside the reports folder"
        )
    return run_id


def notebook_parameters(path: str | Path) -> dict[str, dict[str, Any]]:
    """The parameters a notebook declares, with their type, default and help.

    Args:
        path: The notebook.

    Returns:
        ``{name: {"type": ..., "default": ..., "help": ...}}`` as papermill reads the ``parameters`` cell.
    """
    from airbench_nb.notebook_imports import light_jsonschema

    light_jsonschema()
    import papermill

    found = papermill.inspect_notebook(str(path))
    return {
        name: {"type": p["inferred_type_name"], "default": p["default"], "help": p["help"]} for name, p in found.items()
    }


def package_versions() -> dict[str, str]:
    """Python's version and those of the tracked distributions that are installed."""
    versions = {"python": platform.python_version()}
    for dist in TRACKED_PACKAGES:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return versions


def git_commit(repo: str | Path | None = None) -> str | None:
    """The commit of ``repo`` (default: the kit's checkout), suffixed ``-dirty`` with uncommitted changes.

    Git runs with ``--no-optional-locks``: ``git status`` would otherwise refresh the index and take
    ``.git/index.lock``, making a concurrent ``git commit`` in the same checkout fail.
    """
    repo = Path(repo) if repo else Path(__file__).resolve().parent.parent
    git = ["git", "--no-optional-locks", "-C", str(repo)]
    try:
        head = subprocess.run(
            [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if dirty else head


def new_run_id(reports_dir: Path) -> str:
    """A fresh run folder name: the UTC time, with a counter if that folder exists."""
    base = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    run_id, n = base, 1
    while (reports_dir / run_id).exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


class Stopped(KeyboardInterrupt):
    """A SIGTERM received while a run or a grid ran: handled like Ctrl-C (SIGINT), naming the signal."""


def interruption(exc: BaseException) -> str:
    """``SIGTERM`` or ``SIGINT`` for an interruption, else the exception's type name (a bug, an exit)."""
    if isinstance(exc, Stopped):
        return "SIGTERM"
    return "SIGINT" if isinstance(exc, KeyboardInterrupt) else type(exc).__name__


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Stopped` (a ``KeyboardInterrupt``), so it is recorded like Ctrl-C.

    Without it, SIGTERM ends Python at once: no ``finally`` runs, ``run.json`` and ``grid.json`` keep saying
    ``running`` and a grid's runs go on as orphans. Outside the main thread (where signals cannot be handled) this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: the cleanup must not be interrupted
        raise Stopped(f"stopped by {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _refuse_existing(reports: Path, run_id: str) -> None:
    """Refuse a new run into a folder that holds a run or a grid already (its run.json would be overwritten)."""
    folder = reports / run_id
    for name, what in ((RUN_JSON, "a run"), (GRID_JSON, "a grid")):
        if (folder / name).is_file():
            raise PipelineError(
                f"{folder} holds {what} already ({name}); give --resume {run_id} to re-execute it in place, "
                "or another --run-id"
            )


def _previous_run(reports: Path, run_id: str | None) -> RunInfo:
    """The ``run.json`` of the run to resume.

    Raises:
        PipelineError: For no run id, no such run folder, or a ``run.json`` that cannot be read.
    """
    if run_id is None:
        raise PipelineError("resume needs the id of the run to resume (a folder under the reports folder)")
    run_json = RunFolder(reports / run_id).run_json
    if not run_json.is_file():
        known = sorted(p.parent.name for p in reports.glob(f"*/{RUN_JSON}"))[-5:]
        raise PipelineError(
            f"cannot resume {run_id!r}: no {run_json}" + (f" (recent runs: {', '.join(known)})" if known else "")
        )
    try:
        return RunInfo.model_validate_json(run_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PipelineError(f"cannot resume {run_id!r}: {run_json} is not a readable run.json ({first})") from None


def _now() -> datetime:
    return datetime.now(UTC)


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _files(run_dir: Path, pattern: str) -> list[Path]:
    """Files matching ``pattern`` under ``run_dir`` (a symlinked ``data/`` is followed), sorted."""
    return sorted(p for p in run_dir.glob(pattern) if p.is_file())


def _path_parameter_files(run_dir: Path, value: Any) -> dict[str, Path]:
    """The files a path parameter names: itself, or the ``.json``/``.jsonl`` files under a folder; by their name."""
    values = value if isinstance(value, list) else [value]
    found: dict[str, Path] = {}
    for one in values:
        if not isinstance(one, str) or not one.strip():
            continue
        path = Path(one).expanduser()
        path = path if path.is_absolute() else run_dir / path  # papermill runs in the run folder
        if path.is_file():
            found[one] = path
        elif path.is_dir():
            for file in sorted(path.rglob("*.json*")):
                if file.is_file() and file.suffix in {".json", ".jsonl"}:
                    found[f"{one}/{file.relative_to(path).as_posix()}"] = file
        else:
            found[one] = path  # absent: recorded as missing
    return found


def notebook_inputs(
    stem: str,
    source: Path,
    parameters: dict[str, Any],
    run_dir: Path,
    *,
    versions: dict[str, str],
    upstream: Sequence[str | None] = (),
) -> dict[str, str]:
    """SHA-256 of each thing a notebook's execution depends on (see :attr:`NotebookStatus.input_hashes`).

    Args:
        stem: The notebook's stem (its run-folder files come from :data:`STAGE_FILES`).
        source: The notebook file executed.
        parameters: The parameters injected into it.
        run_dir: The run folder.
        versions: Package versions of the run (:func:`package_versions`).
        upstream: Inputs hashes of the notebooks before it in the run, used for a notebook that
            :data:`STAGE_FILES` does not name.

    Returns:
        ``{name: sha256}``, names sorted. A run-folder file that is not there has no entry (so a deleted output
        changes the result); a path parameter naming nothing hashes to ``missing``.
    """
    hashes = {
        "notebook": _sha256_file(source),
        "parameters": _sha256_text(json.dumps(parameters, sort_keys=True, default=str)),
        "versions": _sha256_text(json.dumps(versions, sort_keys=True)),
        "code": kit_code_sha256(),
        "environment": _sha256_text(json.dumps({k: os.environ.get(k) for k in INPUT_ENVIRONMENT}, sort_keys=True)),
        "weights": _sha256_text(json.dumps(fetched_weights())),
    }
    if stem in STAGE_FILES:
        for pattern in STAGE_FILES[stem]:
            for path in _files(run_dir, pattern):
                hashes[f"file:{path.relative_to(run_dir).as_posix()}"] = _sha256_file(path)
    else:
        hashes["upstream"] = _sha256_text(json.dumps(list(upstream)))
    for name in PATH_PARAMETERS:
        if name in parameters:
            for label, path in _path_parameter_files(run_dir, parameters[name]).items():
                hashes[f"param:{name}:{label}"] = _sha256_file(path) if path.is_file() else "missing"
    return dict(sorted(hashes.items()))


def fetched_weights() -> list[str]:
    """The bundled real models whose weights are fetched (:mod:`airbench_nb.weights`), by name.

    Part of every notebook's inputs: fetching them (``airbench-nb weights fetch``) makes a resume run the notebooks
    that skipped them.
    """
    from airbench_nb.weights import BUNDLED, installed_path

    return [name for name in BUNDLED if installed_path(name) is not None]


@lru_cache(maxsize=1)
def kit_code_sha256() -> str:
    """SHA-256 over the kit's source (every ``.py`` of the package, paths and contents, sorted).

    Part of every notebook's inputs: the kit's version string does not change when its code does (an editable
    install, a checkout between releases), and a notebook run by other code is not kept by a resume.
    """
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for file in sorted(package.rglob("*.py")):
        digest.update(file.relative_to(package).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


def inputs_hash(hashes: dict[str, str]) -> str:
    """One SHA-256 over the named hashes of :func:`notebook_inputs`."""
    return _sha256_text(json.dumps(hashes, sort_keys=True))


def _changed(before: dict[str, str], now: dict[str, str]) -> str:
    """What differs between two :func:`notebook_inputs` results, in a few words for the log."""
    names = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "") if names else "nothing"


def _reusable(previous: NotebookStatus | None, run_dir: Path) -> bool:
    """Whether an earlier execution can be kept at all: it ran to the end, with a hash, and its notebook is there."""
    return (
        previous is not None
        and previous.status == "ok"
        and previous.inputs_hash is not None
        and previous.output is not None
        and (run_dir / previous.output).is_file()
    )


SHARED_CSS_MIN = 4000
"""Style blocks of nbconvert's HTML at least this long (its theme, ~260 KB, the same in every export) are written
once to ``_static/`` in the run folder and linked, unless the run embeds its audio (a self-contained report)."""

_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.S)


def share_css(body: str, folder: Path) -> str:
    """Move the long ``<style>`` blocks of an HTML export into ``folder/_static/nbconvert-<hash>.css`` and link them.

    Args:
        body: The exported HTML.
        folder: The folder the HTML is written to (the link is relative to it).

    Returns:
        The HTML with each long style block replaced by a ``<link rel="stylesheet">`` to a file written once.
    """
    import hashlib

    def link(match: re.Match[str]) -> str:
        css = match.group(1)
        if len(css) < SHARED_CSS_MIN:
            return match.group(0)
        name = f"_static/nbconvert-{hashlib.sha256(css.encode('utf-8')).hexdigest()[:12]}.css"
        path = folder / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(css, encoding="utf-8")
        return f'<link rel="stylesheet" href="{name}">'

    return _STYLE.sub(link, body)


def _export_html(notebook: Path, *, shared_css: bool = True) -> Path:
    from airbench_nb.notebook_imports import light_jsonschema

    light_jsonschema()
    import nbformat
    from nbconvert import HTMLExporter

    # nbconvert warns about images without alt text (matplotlib figures) on every export: not actionable here.
    logging.getLogger("traitlets").setLevel(logging.ERROR)
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(str(notebook), as_version=4))
    if shared_css:
        body = share_css(body, notebook.parent)
    html = notebook.with_suffix(".html")
    html.write_text(body, encoding="utf-8")
    return html


def _try_export_html(notebook: Path, parameters: dict[str, Any]) -> str | None:
    """The HTML export's name, or None (logged) when it failed: HTML is a convenience, the notebook the record."""
    try:
        return _export_html(notebook, shared_css=not parameters.get("embed_audio")).name
    except Exception as exc:  # noqa: BLE001 - any failure of nbconvert leaves the run's record intact
        logger.warning("HTML export of %s failed: %s", notebook, exc)
        return None


def run_pipeline(
    parameters: dict[str, Any] | None = None,
    *,
    notebooks: Sequence[str] | None = None,
    run_id: str | None = None,
    reports_dir: str | Path = REPORTS_DIR,
    notebook_dir: str | Path | None = None,
    kernel_name: str | None = None,
    html: bool = True,
    progress: bool = False,
    cache_dir: str | Path | None = None,
    resume: bool = False,
    force: bool = False,
) -> RunInfo:
    """Execute notebooks in order with papermill into ``reports_dir/run_id/``.

    A notebook that fails is recorded as ``failed`` (its executed copy, up to the failing cell, is kept) and the
    ones after it as ``skipped``: each stage reads what the previous one wrote.

    Args:
        parameters: Run parameters; each notebook receives those it declares (plus ``run_dir``).
        notebooks: Notebook stems to run, in order (default: :data:`PIPELINE`).
        run_id: Name of the run folder (default: a new timestamp).
        reports_dir: Parent of run folders.
        notebook_dir: Where the notebooks are (default: :func:`notebooks_dir`).
        kernel_name: Jupyter kernel to use (default: the one each notebook names).
        html: Also export each executed notebook to HTML.
        progress: Show papermill's progress bar.
        cache_dir: Shared cache folder passed as ``cache_dir`` to the notebooks that declare it (built data, judge
            calls), unless ``parameters`` sets it; None leaves their default (``$AIRBENCH_CACHE`` or
            ``~/.cache/airbench-nb``).
        resume: Re-execute the notebooks of the existing run ``run_id`` in its folder, with its parameters updated
            by ``parameters`` (and its notebooks unless ``notebooks`` is given). Every response, verdict and cache
            entry already there is reused; what a changed parameter invalidates is redone (a new model: its
            responses; a new judge: its verdicts; new data: the responses to changed items, whose prompt hash
            covers the audio's SHA-256). A notebook whose inputs hash (:func:`notebook_inputs`) is the one
            recorded when it last executed to the end is not executed again: it is kept, marked ``reused``.
        force: With ``resume``, execute every notebook, even those whose inputs did not change.

    Returns:
        The final :class:`RunInfo`, also written to ``run.json``.

    Raises:
        PipelineError: Before running anything, for an unknown notebook, a parameter that no notebook declares,
            a value its notebooks cannot use (see :func:`check_parameter_values`), a parameter that looks like a
            secret, a run id that is not a plain folder name, or a reports folder
            that cannot be made (it is a file, or under one); with ``resume``, for a missing run id or a run folder
            without a readable ``run.json``.
    """
    parameters = dict(parameters or {})
    check_no_secrets(parameters)
    if run_id is not None:
        check_run_id(run_id)
    previous = _previous_run(Path(reports_dir), run_id) if resume else None
    if run_id is not None and not resume:
        _refuse_existing(Path(reports_dir), run_id)
    if previous is not None:
        parameters = {**previous.parameters, **parameters}
        check_no_secrets(parameters)  # a run.json is a file anyone may have edited: its values are checked too
        notebooks = notebooks or [n.name for n in previous.notebooks]
        if cache_dir is None and previous.cache_dir:
            cache_dir = previous.cache_dir
    default_source = not notebook_dir and not os.environ.get("AIRBENCH_NOTEBOOKS")
    source = Path(notebook_dir) if notebook_dir else notebooks_dir()
    stems = list(notebooks or PIPELINE)
    declared: dict[str, dict[str, dict[str, Any]]] = {}
    for stem in stems:
        declared[stem] = notebook_parameters(notebook_path(source, stem, default_source))
    known = set().union(*(set(d) for d in declared.values())) - {"run_dir"}
    unknown = sorted(set(parameters) - known)
    if unknown:
        raise PipelineError(
            f"parameter(s) {', '.join(unknown)} are declared by none of {', '.join(stems)}; "
            f"known parameters: {', '.join(sorted(known)) or '(none)'}"
        )
    check_parameter_values(parameters, declared)

    reports = Path(reports_dir)
    run_id = run_id or new_run_id(reports)
    run_dir = (reports / run_id).resolve()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # the reports folder is a file, or under one; no permission
        raise PipelineError(f"cannot make the run folder {reports / run_id}: {exc.strerror or exc}") from None
    info = RunInfo(
        run_id=run_id,
        started=_now(),
        parameters=parameters,
        versions=package_versions(),
        git_commit=git_commit(),
        platform=f"{platform.system()} {platform.release()} {platform.machine()}",
        notebooks=[NotebookStatus(name=s, status="skipped", error="not reached") for s in stems],
        resumed=previous.resumed + 1 if previous is not None else 0,
        cache_dir=str(Path(cache_dir).expanduser().resolve()) if cache_dir else None,
    )
    folder = RunFolder(run_dir)

    def save() -> None:
        folder.write_info(info)

    save()
    try:
        with sigterm_as_interrupt():
            failed = _execute_notebooks(
                info,
                folder,
                source,
                declared,
                parameters,
                previous=previous,
                force=force,
                save=save,
                kernel_name=kernel_name,
                html=html,
                progress=progress,
            )
    except BaseException as exc:  # Ctrl-C, SIGTERM: record where the run stopped, then stop
        why = interruption(exc)
        for status in info.notebooks:
            if status.status == "skipped" and status.started is not None and status.ended is None:
                status.status, status.ended = "failed", _now()
                status.error = f"interrupted ({why}) while it ran"
            elif status.status == "skipped":
                status.error = f"not reached: the run was interrupted ({why})"
        info.status, info.ended = "failed", _now()
        save()
        logger.error("run %s interrupted (%s): %s", run_id, why, run_dir)
        raise
    info.status = "failed" if failed else "ok"
    info.ended = _now()
    save()
    try:
        from airbench_nb.report_page import write_report_page

        write_report_page(run_dir)
    except Exception as exc:  # noqa: BLE001 - the page is a summary; the notebooks and run.json are the record
        logger.warning("report page of %s not written: %s: %s", run_dir, type(exc).__name__, exc)
    logger.info("run %s %s: %s", run_id, info.status, run_dir)
    return info


def _execute_notebooks(
    info: RunInfo,
    folder: RunFolder,
    source: Path,
    declared: dict[str, dict[str, dict[str, Any]]],
    parameters: dict[str, Any],
    *,
    previous: RunInfo | None,
    force: bool,
    save: Any,
    kernel_name: str | None,
    html: bool,
    progress: bool,
) -> bool:
    """Execute (or keep) each notebook of ``info`` in order, saving ``run.json`` after each; True if one failed."""
    from airbench_nb.notebook_imports import light_jsonschema

    light_jsonschema()
    import papermill

    run_dir = folder.path
    stems = [n.name for n in info.notebooks]
    before = {n.name: n for n in previous.notebooks} if previous is not None and not force else {}
    failed = False
    for index, stem in enumerate(stems):
        status = info.notebooks[index]
        if failed:
            status.error = "skipped: an earlier notebook failed"
            continue
        nb_params = {k: v for k, v in parameters.items() if k in declared[stem]}
        if "run_dir" in declared[stem]:
            nb_params["run_dir"] = str(run_dir)
        if info.cache_dir and "cache_dir" in declared[stem] and "cache_dir" not in parameters:
            nb_params["cache_dir"] = info.cache_dir
        upstream = [n.inputs_hash for n in info.notebooks[:index]]
        notebook = source / f"{stem}.ipynb"
        earlier = before.get(stem)
        if earlier is not None and _reusable(earlier, run_dir):
            now = notebook_inputs(stem, notebook, nb_params, run_dir, versions=info.versions, upstream=upstream)
            if inputs_hash(now) == earlier.inputs_hash:
                logger.info("keeping %s: its inputs did not change since it last ran", stem)
                kept = earlier.model_copy(update={"reused": True})
                if html and not (kept.html and (run_dir / kept.html).is_file()):
                    kept.html = _try_export_html(run_dir / str(kept.output), parameters)
                info.notebooks[index] = kept
                save()
                continue
            logger.info("running %s again: changed %s", stem, _changed(earlier.input_hashes, now))
        output = folder.notebook(stem)
        status.parameters = nb_params
        status.output = output.name
        status.started = _now()
        status.error = None
        logger.info("running %s -> %s", stem, output)
        t0 = time.perf_counter()
        try:
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=nb_params,
                cwd=str(run_dir),
                kernel_name=kernel_name,
                progress_bar=progress,
                log_output=False,
                config=kernel_config(),
            )
            status.status = "ok"
            status.input_hashes = notebook_inputs(
                stem, notebook, nb_params, run_dir, versions=info.versions, upstream=upstream
            )
            status.inputs_hash = inputs_hash(status.input_hashes)
        except Exception as exc:  # noqa: BLE001 - recorded in run.json; later notebooks are skipped
            failed = True
            status.status = "failed"
            # papermill's message starts with the cell's traceback: record the exception line itself first
            ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
            head = f"{ename}: {evalue}" if ename else f"{type(exc).__name__}: {exc}"
            status.error = head.strip()[:2000]
            logger.error("%s failed: %s", stem, status.error)
        status.ended = _now()
        status.duration_s = round(time.perf_counter() - t0, 3)
        if html and output.is_file():
            status.html = _try_export_html(output, parameters)
        save()
    return failed
