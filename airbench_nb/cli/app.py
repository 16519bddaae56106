"""The Typer app of ``airbench-nb`` and what its commands share: consoles, tables, option callbacks, exits."""

from __future__ import annotations

import logging
import math
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from airbench_nb import __version__
from airbench_nb.score_table import MAX_REPS  # noqa: F401 - the commands' bound, imported from here by them

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


def rows_table(title: str, rows: list[dict[str, Any]]) -> Table:
    """A rich table of ``rows`` (one dict a row, columns from the first row's keys) under ``title``."""
    table = Table(title=title, title_justify="left")
    if not rows:
        return table
    for column in rows[0]:
        table.add_column(column, justify="left" if column in ("task", "reason", "field") else "right")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    return table


def field_rows(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows of a two-column ``field, value`` table: a record's fields, one a row (``infer``, ``judge``, ``mix``)."""
    return [{"field": name, "value": value} for name, value in values.items()]


DATA_ROOT_HELP = (
    "Folder the manifest's audio paths are relative to, instead of the data_root of its dataset.json (which may "
    "only point inside the manifest's folder, at an AIR-Bench release root or at a manifest folder holding its own "
    "audio)."
)
"""Help of ``--data-root``, shared by the commands that read audio."""


API_KEY_ENV_HELP = (
    "NAME of the environment variable whose value is sent as the API key of an openai: endpoint, whatever it is "
    "(local ones included). Default: OPENAI_API_KEY goes only to OpenAI's endpoint or OPENAI_BASE_URL, never to a "
    "local one; any other @URL gets no key."
)
"""Help of ``--api-key-env`` on ``infer`` and ``judge``."""


EXIT_FAILED_ITEMS = 1
"""Exit code of ``infer`` and ``judge`` when some items ended in error (a rerun retries them)."""
EXIT_BAD_INPUT = 2
"""Exit code for bad input or a refused output: nothing was run or written."""
EXIT_FATAL_API = 3
"""Exit code of ``infer`` and ``judge`` stopped by a fatal API error (rejected or missing key, server unreachable)."""

MAX_LISTENERS = 1_000
"""Most listener slots of a listening test (``sample-listening --listeners``): a MOS test has tens; each slot is a
playlist of every stimulus, so millions would write a playlist of billions of lines."""


def _error(message: str, code: int) -> typer.Exit:
    """Print ``error: MESSAGE`` as one line on stderr and return the exit with ``code`` to raise."""
    err_console.print("[red]error:[/red] " + escape(message), soft_wrap=True, emoji=False)  # ":x:" stays ":x:"
    return typer.Exit(code)


def refuse(
    message: str,
    *,
    file: Path | str | None = None,
    line: int | None = None,
    item: str | None = None,
    field: str | None = None,
) -> typer.Exit:
    """The one way a command refuses bad input: one line on stderr, and the exit (code 2) to raise.

    The line reads ``error: FILE:LINE: item 'UID': field 'NAME': MESSAGE``, each location part only when known (the
    way :class:`airbench_nb.manifests.ManifestError` names a bad line); an exception that already names its file,
    line, item and field is refused with its own text (see :func:`refusing`).

    Args:
        message: What is wrong and, where it helps, what to do instead.
        file: The file (or folder) at fault.
        line: Its 1-based line number (shown only with ``file``).
        item: The uid of the item at fault.
        field: The field (or option) at fault.

    Returns:
        ``typer.Exit(EXIT_BAD_INPUT)``, for the caller to raise.
    """
    where = None if file is None else f"{file}:{line}" if line is not None else str(file)
    parts = [where, None if item is None else f"item {item!r}", None if field is None else f"field {field!r}"]
    return _error(": ".join([*(p for p in parts if p is not None), message]), EXIT_BAD_INPUT)


RESUMABLE = "what was done is kept: fix this and rerun to resume"
"""What a command stopped by a fatal API error says by default (``infer``, ``judge``: their outputs resume)."""


@contextmanager
def refusing(*errors: type[Exception], fatal_api: bool = False, kept: str = RESUMABLE) -> Iterator[None]:
    """Refuse (exit 2, one line: the exception's text) the ``errors`` raised inside; let any other through.

    Args:
        *errors: The exception classes that mean bad input.
        fatal_api: Also stop on a fatal API error (rejected or missing key, server unreachable): one line saying
            ``kept``, exit 3. A ``ValueError`` is bad input even when the client raised it.
        kept: What became of the work done before the stop, said in brackets after the error.
    """
    try:
        yield
    except Exception as exc:
        if fatal_api and not isinstance(exc, ValueError):
            from airbench_nb.runner import is_fatal_api_error

            if is_fatal_api_error(exc):
                message = f"stopped: {exc} ({kept})"
                raise _error(message, EXIT_FATAL_API) from None
        if isinstance(exc, errors):
            raise refuse(str(exc)) from None
        raise


def items_failed(failure_text: str) -> typer.Exit:
    """Print that some items ended in error (one line: ``failure_text`` and how to retry) and return exit 1."""
    return _error(f"{failure_text}; rerun the same command to retry them", EXIT_FAILED_ITEMS)


def one_of(*choices: str) -> Callable[[typer.CallbackParam, str], str]:
    """Typer callback of an option whose value must be one of ``choices`` (else exit 2)."""

    def check(param: typer.CallbackParam, value: str) -> str:
        if value not in choices:
            allowed = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
            raise refuse(f"{_option_name(param)} must be {allowed}, got {value!r}")
        return value

    return check


def _option_name(param: typer.CallbackParam) -> str:
    """The option as the user types it (``--out``), for messages."""
    return param.opts[0] if param.opts else str(param.name)


def _unmakeable(path: Path) -> str | None:
    """Why ``path`` cannot be created: the nearest existing ancestor is a file (None when it can be)."""
    for parent in path.absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else f"{parent} is a file, not a folder"
    return None


def out_file(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback of an option naming a file to write: not a folder, not under a file (else exit 2)."""
    if value is not None:
        name = _option_name(param)
        if value.is_dir():
            raise refuse(f"{name} {value} is a folder; give the name of a file to write")
        why = _unmakeable(value)
        if why:
            raise refuse(f"{name} {value} cannot be written: {why}")
    return value


def out_folder(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Typer callback of an option naming a folder to write into: not a file, not under a file (else exit 2)."""
    if value is not None:
        name = _option_name(param)
        if value.exists() and not value.is_dir():
            raise refuse(f"{name} {value} is a file; give a folder")
        why = _unmakeable(value)
        if why:
            raise refuse(f"{name} {value} cannot be made: {why}")
    return value


def not_negative(param: typer.CallbackParam, value: int | None) -> int | None:
    """Typer callback of a count that may be 0 but not negative (else exit 2)."""
    if value is not None and value < 0:
        raise refuse(f"{_option_name(param)} must be 0 or more, got {value}")
    return value


def finite_not_negative(param: typer.CallbackParam, value: float | None) -> float | None:
    """Typer callback of a number that must be finite and 0 or more (``nan``, ``inf``, ``-1``: exit 2)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise refuse(f"{_option_name(param)} must be a finite number, 0 or more, got {value}")
    return value


def within(least: int, most: int, why: str) -> Callable[[typer.CallbackParam, int | None], int | None]:
    """Typer callback of a count that must lie in ``least .. most`` (else exit 2, the bounds and ``why`` said)."""

    def check(param: typer.CallbackParam, value: int | None) -> int | None:
        if value is not None and not least <= value <= most:
            raise refuse(f"{_option_name(param)} must be at least {least} and at most {most:,} ({why}), got {value}")
        return value

    return check


REPS_BOUND = "bootstrap resamples beyond that change no interval and would fill memory"
"""Why ``--reps`` is bounded by :data:`MAX_REPS` (said when it is refused)."""


def version() -> None:
    """Print the kit's version."""
    console.print(__version__)
