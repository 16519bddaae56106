"""Grids of runs: ``airbench-nb run --grid GRID.yaml`` runs the pipeline once per parameter set.

A grid file is YAML, in one of two forms. The **product form** maps parameter names to lists of values and runs
every combination::

    name: seeds-by-model               # optional: a label shown on the grid page
    notebooks: [01_build_data, 03_run_model, 04_judge]   # optional: notebook stems (default: the pipeline)
    fixed:                             # optional: parameters given to every run, as single values
      judges: [rule]
    preset: [tiny]                     # every other top-level key is a parameter with a list of values
    seed: [0, 1]
    models: [[baseline:oracle], [baseline:random]]       # a list-valued parameter takes a list of lists

gives 1 x 2 x 2 = 4 runs (the last key varies fastest). The **runs form** lists the parameter sets themselves::

    fixed: {preset: tiny}
    runs:
      - {seed: 0, models: [baseline:oracle]}
      - {seed: 1, snr_grid: [0, 5]}

``name``, ``notebooks``, ``fixed`` and ``runs`` are the reserved keys, with ``resources`` (``{num_cpus: 1,
num_gpus: 1}``: what each run holds on a Ray cluster) and ``retries`` (how often Ray runs a run again when its
worker dies) for grids on Ray; a file uses either ``runs:`` or parameter lists, never both. A parameter may not be
both fixed and varied, two runs may not have equal parameters, and every parameter must be declared by one of the
notebooks run (the check ``run_pipeline`` makes), so that a misspelt name is refused before anything runs. Every
error is one line naming the file and the key.

Each parameter set runs, through :func:`~airbench_nb.pipeline.run_pipeline` in a process of its own, into
``reports/<grid_id>/<run_id>/``, where ``run_id`` is the set's index and a slug of the parameters that vary across
the grid (``01-seed0-models-baseline_oracle``). ``jobs`` runs go at a time; a failing run never stops the others.
All runs share one cache folder (built data, judge calls), which is safe across processes. The grid folder holds
``grid.json`` (:class:`GridInfo`, rewritten as each run ends), ``grid.yaml`` (a copy of the grid file),
``logs/<run_id>.log`` (each run's log) and the comparison page ``index.html`` with its ``README.md`` twin
(:mod:`airbench_nb.grid_page`).

With ``--executor ray`` (``ray:ADDRESS``, ``ray://HOST:PORT``) each run is a task on a Ray cluster instead of a
local process (:mod:`airbench_nb.grid_ray`): same job, same ``grid.json``, logs, page and resume; the grid folder
and the cache must then be on storage every node sees.

``airbench-nb run --resume GRID_ID`` resumes a grid that failed or was stopped (:func:`resume_grid`): its finished
runs are kept as they are, its failed and pending ones run again with the parameters ``grid.json`` recorded (in
place, reusing what they had written, when their folder holds a ``run.json``).
"""

from __future__ import annotations

import inspect
import itertools
import json
import logging
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from airbench_nb import grid_ray
from airbench_nb.grid_ray import RESOURCE_KEYS, Executor, RayUnavailable, parse_executor
from airbench_nb.records import Record
from airbench_nb.run_folder import GRID_COPY, GRID_JSON, INDEX_HTML, RunFolder

logger = logging.getLogger(__name__)

RESERVED_KEYS: tuple[str, ...] = ("name", "notebooks", "fixed", "runs", "resources", "retries")
"""Top-level keys of a grid file that are not parameters."""

MAX_RUNS = 999
"""Most parameter sets a grid may hold (a larger product is almost always a mistake)."""

LOGS = "logs"
"""Folder of the grid folder holding each run's log (``<run_id>.log``)."""

SLUG_VALUE_CHARS = 40
"""Longest slug of one parameter value in a run id (the index keeps ids unique whatever is cut)."""

POLL_S = 0.2
"""Seconds between checks of the running runs."""

MAX_RETRIES = 100
"""Most retries a grid file may ask for (``retries:``): a run whose worker dies every time is not worth more."""


class GridError(ValueError):
    """A grid file that cannot run: unreadable, malformed, empty, or naming a parameter no notebook declares."""


@dataclass(frozen=True)
class Grid:
    """A grid file, read and checked: the parameter sets to run, in order."""

    source: Path
    """The grid file."""
    sets: list[dict[str, Any]]
    """Every run's full parameters (``fixed`` included), in run order."""
    varying: list[str]
    """Names of the parameters whose values differ between sets, in order of first appearance."""
    fixed: dict[str, Any] = field(default_factory=dict)
    """Parameters every run gets with the same value (``fixed:``, ``-p``, single-value lists)."""
    name: str | None = None
    """The file's ``name:``, if any."""
    notebooks: list[str] | None = None
    """Notebook stems to run (None: the whole pipeline)."""
    form: Literal["product", "runs"] = "product"
    """Which form the file used."""
    resources: dict[str, float] = field(default_factory=dict)
    """What each run holds on a Ray cluster (``num_cpus``, ``num_gpus``; empty: one CPU, no GPU)."""
    retries: int | None = None
    """Times Ray runs a run again when its worker dies (None: :data:`~airbench_nb.grid_ray.DEFAULT_RETRIES`)."""

    def run_ids(self) -> list[str]:
        """The run folder names, one per set: see :func:`run_slug`."""
        width = max(2, len(str(len(self.sets))))
        return [run_slug(i + 1, s, self.varying, width=width) for i, s in enumerate(self.sets)]


MAX_ALIASES = 16
"""Aliases (``*name``) a grid file may use: a few save typing; a "billion laughs" file of nested aliases would
expand into gigabytes and keep a core busy for minutes."""
MAX_GRID_BYTES = 1_000_000
"""Largest grid file read (a grid of 999 runs is a few tens of kilobytes)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing what a grid file must not hold.

    A mapping that gives the same key twice (PyYAML keeps the last silently), merge keys (``<<:``), and more than
    :data:`MAX_ALIASES` aliases.
    """

    aliases_seen = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, f"more than {MAX_ALIASES} aliases (*name); write the values out", mark
                )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    "merge keys (<<:) are not read in grid files; write the parameters out",
                    key_node.start_mark,
                )
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: PyYAML's own error says so
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _describe(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_like(value: Any, source: Path, key: str) -> None:
    """Refuse values papermill and ``run.json`` cannot carry (YAML dates, sets, non-string mapping keys)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise GridError(f"{source}: key {key!r}: mapping keys must be strings, got {k!r}")
            _json_like(v, source, key)
    elif isinstance(value, list):
        for v in value:
            _json_like(v, source, key)
    elif isinstance(value, float) and not math.isfinite(value):
        raise GridError(f"{source}: key {key!r}: {value} is not a usable value (quote it to pass a string)")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise GridError(
            f"{source}: key {key!r}: {value!r} is a YAML {type(value).__name__}, not a number, string, list or "
            "mapping; quote it to pass a string"
        )


def _parameter_map(value: Any, source: Path, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GridError(f"{source}: key {key!r}: give a mapping of parameter names to values, got {_describe(value)}")
    for name, v in value.items():
        if not isinstance(name, str) or not name:
            raise GridError(f"{source}: key {key!r}: parameter names must be strings, got {name!r}")
        _json_like(v, source, f"{key}.{name}" if key != "runs" else name)
    return dict(value)


def parse_grid(data: Any, source: str | Path, *, extra: dict[str, Any] | None = None) -> Grid:
    """Expand the content of a grid file into parameter sets (no notebook is read: see :func:`check_grid`).

    Args:
        data: The file's content as YAML loads it.
        source: The file, for error messages.
        extra: Parameters added to ``fixed`` (the command line's ``-p``), overriding the file's.

    Returns:
        The :class:`Grid`.

    Raises:
        GridError: Naming the file and the key, for anything but the schema of the module docstring.
    """
    source = Path(source)
    if data is None or data == {} or data == []:
        raise GridError(f"{source}: empty grid: give parameter lists (seed: [0, 1]) or runs: [...]")
    if isinstance(data, list):  # a bare list of parameter sets is the runs form without options
        data = {"runs": data}
    if not isinstance(data, dict):
        raise GridError(
            f"{source}: a grid is a mapping of parameter names to lists of values, or runs: [...]; "
            f"got {_describe(data)}"
        )
    for key in data:
        if not isinstance(key, str) or not key:
            raise GridError(f"{source}: key {key!r}: top-level keys must be parameter names or {RESERVED_KEYS}")

    name = data.get("name")
    if name is not None and not isinstance(name, str | int | float):
        raise GridError(f"{source}: key 'name': give a short label, got {_describe(name)}")
    notebooks = data.get("notebooks")
    if isinstance(notebooks, str):
        notebooks = [s.strip() for s in notebooks.split(",") if s.strip()]
    if notebooks is not None and (
        not isinstance(notebooks, list) or not notebooks or not all(isinstance(s, str) and s for s in notebooks)
    ):
        raise GridError(f"{source}: key 'notebooks': give a list of notebook stems, got {_describe(notebooks)}")
    fixed = _parameter_map(data.get("fixed"), source, "fixed")
    resources = _resources(data.get("resources"), source)
    retries = data.get("retries")
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= MAX_RETRIES
    ):
        raise GridError(
            f"{source}: key 'retries': give how many times a run whose worker died runs again (0 to {MAX_RETRIES}), "
            f"got {_describe(retries)}"
        )
    extra = dict(extra or {})

    lists = {k: v for k, v in data.items() if k not in RESERVED_KEYS}
    if "runs" in data and lists:
        first = next(iter(lists))
        raise GridError(
            f"{source}: key {first!r}: give either runs: or parameter lists at the top level, not both "
            "(put parameters common to every run under fixed:)"
        )
    sets: list[dict[str, Any]]
    if "runs" in data:
        form: Literal["product", "runs"] = "runs"
        runs = data["runs"]
        if not isinstance(runs, list):
            raise GridError(f"{source}: key 'runs': give a list of parameter sets, got {_describe(runs)}")
        if not runs:
            raise GridError(f"{source}: key 'runs': empty grid: give at least one parameter set")
        variable = []
        for i, entry in enumerate(runs, 1):
            if not isinstance(entry, dict):
                raise GridError(
                    f"{source}: key 'runs[{i}]': a parameter set is a mapping name: value, got {_describe(entry)}"
                )
            params = _parameter_map(entry, source, "runs")
            for k in params:
                if k in fixed:
                    raise GridError(
                        f"{source}: key 'runs[{i}].{k}': {k} is also under fixed:, which every run gets unchanged"
                    )
            variable.append(params)
        for k in extra:
            for i, params in enumerate(variable, 1):
                if k in params:
                    raise GridError(f"{source}: key 'runs[{i}].{k}': -p {k} cannot override a parameter a run sets")
    else:
        form = "product"
        if not lists:
            raise GridError(
                f"{source}: empty grid: no parameter lists (only {', '.join(k for k in data if k in RESERVED_KEYS)}); "
                "give e.g. seed: [0, 1], or runs: [...]"
            )
        for k, values in lists.items():
            if not isinstance(values, list):
                raise GridError(
                    f"{source}: key {k!r}: give a list of values ({k}: [{_describe(values)}]), got "
                    f"{_describe(values)}; a parameter whose value is a list takes a list of lists"
                )
            if not values:
                raise GridError(f"{source}: key {k!r}: empty list: the product would have no runs")
            _json_like(values, source, k)
            seen: set[str] = set()
            for v in values:
                canonical = json.dumps(v, sort_keys=True)
                if canonical in seen:
                    raise GridError(f"{source}: key {k!r}: value {_describe(v)} listed twice")
                seen.add(canonical)
            if k in fixed:
                raise GridError(f"{source}: key {k!r}: also under fixed:; a parameter is either fixed or varied")
            if k in extra:
                raise GridError(f"{source}: key {k!r}: the grid varies {k}; -p {k} cannot fix it")
        total = math.prod(len(v) for v in lists.values())
        if total > MAX_RUNS:
            raise GridError(
                f"{source}: the product of {', '.join(f'{k} ({len(v)})' for k, v in lists.items())} is {total} "
                f"runs, more than {MAX_RUNS}; use fewer values or the runs: form"
            )
        names = list(lists)
        variable = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*lists.values())]

    fixed = {**fixed, **extra}
    sets = [{**fixed, **params} for params in variable]
    if len(sets) > MAX_RUNS:
        raise GridError(f"{source}: key 'runs': {len(sets)} parameter sets, more than {MAX_RUNS}")
    if form == "runs":
        first_seen: dict[str, int] = {}
        for i, params in enumerate(sets, 1):
            canonical = json.dumps(params, sort_keys=True)
            if canonical in first_seen:
                raise GridError(
                    f"{source}: key 'runs[{i}]': same parameters as runs[{first_seen[canonical]}]; "
                    "each run of a grid must differ"
                )
            first_seen[canonical] = i
    varying = _varying(sets)
    return Grid(
        source=source,
        sets=sets,
        varying=varying,
        fixed={k: v for k, v in sets[0].items() if k not in varying},
        name=None if name is None else str(name),
        notebooks=notebooks,
        form=form,
        resources=resources,
        retries=retries,
    )


def _resources(value: Any, source: Path) -> dict[str, float]:
    """Check a grid file's ``resources:`` (a mapping of ``num_cpus`` and ``num_gpus`` to numbers of 0 or more)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise GridError(
            f"{source}: key 'resources': give what each run holds, e.g. {{num_cpus: 1, num_gpus: 1}}; "
            f"got {_describe(value)}"
        )
    out: dict[str, float] = {}
    for key, amount in value.items():
        if key not in RESOURCE_KEYS:
            raise GridError(f"{source}: key 'resources.{key}': not a resource; give {' or '.join(RESOURCE_KEYS)}")
        if isinstance(amount, bool) or not isinstance(amount, int | float) or not math.isfinite(amount) or amount < 0:
            raise GridError(f"{source}: key 'resources.{key}': give a number of 0 or more, got {_describe(amount)}")
        out[key] = amount
    return out


def _varying(sets: Sequence[dict[str, Any]]) -> list[str]:
    """Names whose value differs between sets (or that some sets lack), in order of first appearance."""
    names = list(dict.fromkeys(k for s in sets for k in s))
    missing = object()
    return [k for k in names if len({json.dumps(s.get(k, missing), sort_keys=True, default=repr) for s in sets}) > 1]


def read_grid(path: str | Path, *, extra: dict[str, Any] | None = None) -> Grid:
    """Read and expand a grid file (see the module docstring for its schema).

    Raises:
        GridError: One line naming the file (and the key, or the line for bad YAML).
    """
    path = Path(path)
    try:
        if path.is_file() and path.stat().st_size > MAX_GRID_BYTES:
            raise GridError(f"{path}: {path.stat().st_size} bytes, more than a grid file holds ({MAX_GRID_BYTES})")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GridError(f"{path}: no such grid file") from None
    except IsADirectoryError:
        raise GridError(f"{path}: is a folder; give a grid file (YAML)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise GridError(f"{path}: unreadable grid file ({exc})") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise GridError(f"{path}: not valid YAML: {where}{problem}") from None
    except RecursionError:
        raise GridError(f"{path}: not valid YAML: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits (Python's int conversion limit)
        raise GridError(f"{path}: not a usable grid: {str(exc).splitlines()[0][:120]}") from None
    return parse_grid(data, path, extra=extra)


def check_grid(grid: Grid, *, notebook_dir: str | Path | None = None) -> list[str]:
    """Make the checks ``run_pipeline`` makes, for every set, before any run starts.

    Every notebook must exist, every parameter must be declared by one of them, and no parameter may look like a
    secret.

    Returns:
        The notebook stems the runs will execute.

    Raises:
        GridError: Naming the file and the key.
    """
    from airbench_nb.pipeline import (
        PIPELINE,
        PipelineError,
        check_no_secrets,
        check_parameter_values,
        notebook_parameters,
        notebook_path,
        notebooks_dir,
    )

    default_source = not notebook_dir and not os.environ.get("AIRBENCH_NOTEBOOKS")
    source = Path(notebook_dir) if notebook_dir else notebooks_dir()
    stems = list(grid.notebooks or PIPELINE)
    by_notebook: dict[str, dict[str, dict[str, Any]]] = {}
    for stem in stems:
        try:
            path = notebook_path(source, stem, default_source)
        except PipelineError as exc:
            raise GridError(f"{grid.source}: key 'notebooks': {exc}") from None
        by_notebook[stem] = notebook_parameters(path)
    declared: set[str] = set().union(*by_notebook.values()) - {"run_dir"}
    for params in grid.sets:
        for name in params:
            if name not in declared:
                raise GridError(
                    f"{grid.source}: key {name!r}: declared by none of {', '.join(stems)}; "
                    f"known parameters: {', '.join(sorted(declared)) or '(none)'}"
                )
        try:
            check_no_secrets(params)
        except PipelineError as exc:
            bad = next((n for n in params if repr(n) in str(exc)), "?")
            raise GridError(f"{grid.source}: key {bad!r}: {exc}") from None
        try:
            check_parameter_values(params, by_notebook)
        except PipelineError as exc:  # "parameter limit=-1 must be ...": the key is the name before "="
            bad = str(exc).removeprefix("parameter ").split("=", 1)[0]
            raise GridError(f"{grid.source}: key {bad!r}: {exc}") from None
    return stems


def _slug_value(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "_".join(_slug_value(v) for v in value) or "empty"
    if isinstance(value, dict):
        return "_".join(f"{k}-{_slug_value(v)}" for k, v in value.items()) or "empty"
    return re.sub(r"[^A-Za-z0-9.-]+", "_", str(value)).strip("_.-")


def run_slug(index: int, params: dict[str, Any], varying: Sequence[str], *, width: int = 2) -> str:
    """A readable, valid run id for one set: its index, then ``name<number>`` or ``name-<value>`` per varying one.

    ``run_slug(1, {"seed": 0, "models": ["baseline:oracle"]}, ["seed", "models"])`` is
    ``01-seed0-models-baseline_oracle``. Values are cut to :data:`SLUG_VALUE_CHARS` characters and the id to 128;
    the index keeps ids unique. A parameter a set lacks is left out.
    """
    from airbench_nb.pipeline import check_run_id

    parts = [f"{index:0{width}d}"]
    for name in varying:
        if name not in params:
            continue
        value = params[name]
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{name}{value}")  # seed0, snr_db-5, background_s2.5
            continue
        text = _slug_value(value)[:SLUG_VALUE_CHARS].strip("_.-") or ("empty" if value in ("", []) else "x")
        parts.append(f"{name}-{text}")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))
    slug = re.sub(r"_{2,}", "_", slug)[:128].rstrip("_.-")
    return check_run_id(slug)


RunStatus = Literal["pending", "running", "ok", "failed"]


class GridRun(Record):
    """One parameter set of a grid and what became of its run."""

    index: int
    """Position of the set in the grid (from 1)."""
    run_id: str
    """Name of the run folder inside the grid folder."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Every parameter of the run (fixed ones included)."""
    varying: dict[str, Any] = Field(default_factory=dict)
    """The parameters that vary across the grid, with this run's values."""
    status: RunStatus = "pending"
    """``pending`` (not started), ``running``, ``ok`` (every notebook ran) or ``failed``."""
    started: datetime | None = None
    """When its process started (UTC)."""
    ended: datetime | None = None
    """When its process ended (UTC)."""
    duration_s: float | None = None
    """Wall-clock seconds of its process."""
    error: str | None = None
    """Why it failed: the failing notebook and its exception, or why the run could not start or finish."""
    log: str | None = None
    """Its log, relative to the grid folder."""
    pid: int | None = None
    """Process id of its run while it runs (checked when the grid is read: a ``running`` run whose process is gone
    is marked ``failed``)."""
    pid_start: int | None = None
    """Start time of that process (clock ticks since boot, Linux), so that a reused pid is not taken for it."""
    host: str | None = None
    """Host name of the node a Ray grid's run ran on (None: a local grid's, on the grid's own machine)."""
    attempts: int | None = None
    """Times a Ray grid's run was started: more than 1 when its worker died and Ray ran it again (None: local)."""


class GridInfo(Record):
    """The ``grid.json`` of a grid: the file it came from, how it ran, and each run."""

    grid_id: str
    """Name of the grid folder under the reports folder."""
    name: str | None = None
    """The grid file's ``name:``."""
    source: str
    """Path of the grid file."""
    started: datetime
    """Start of the grid (UTC)."""
    ended: datetime | None = None
    """End of the grid (UTC); None while running."""
    status: Literal["running", "ok", "failed"] = "running"
    """``ok`` when every run is ok, ``failed`` when one failed (or the grid was interrupted)."""
    notebooks: list[str] = Field(default_factory=list)
    """Notebook stems each run executes."""
    fixed: dict[str, Any] = Field(default_factory=dict)
    """Parameters common to every run."""
    varying: list[str] = Field(default_factory=list)
    """Names of the parameters that differ between runs."""
    jobs: int = 1
    """How many runs went at a time."""
    cache_dir: str | None = None
    """The cache folder every run shared (None: the runs' default)."""
    runs: list[GridRun] = Field(default_factory=list)
    """One entry per parameter set, in grid order."""
    pid: int | None = None
    """Process id of the grid while it runs (checked when the grid is read: a ``running`` grid whose process is
    gone, killed by SIGKILL or a crash, is marked ``failed``)."""
    pid_start: int | None = None
    """Start time of that process (clock ticks since boot, Linux), so that a reused pid is not taken for it."""
    host: str | None = None
    """Host name of the machine the grid's process runs on (its pids are checked only there)."""
    error: str | None = None
    """Why the grid stopped before its end (a signal, a process found gone), None when it ran to its end."""
    executor: str = "local"
    """Where its runs executed: ``local`` processes, or Ray tasks (``ray``, ``ray:ADDRESS``, ``ray://HOST:PORT``)."""
    resources: dict[str, float] = Field(default_factory=dict)
    """What each run held on the Ray cluster (``num_cpus``, ``num_gpus``); empty for a local grid."""
    retries: int | None = None
    """Times Ray ran a run again when its worker died (None for a local grid)."""

    @property
    def failed(self) -> int:
        """How many runs did not end ``ok``."""
        return sum(r.status != "ok" for r in self.runs)


def process_start(pid: int) -> int | None:
    """Start time of process ``pid`` in clock ticks since boot (from ``/proc``), None when unknown or gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the name, in parentheses, may hold spaces
    try:
        return None if fields[0] == "Z" else int(fields[19])  # a zombie has ended
    except (IndexError, ValueError):
        return None


def process_alive(pid: int | None, start: int | None) -> bool:
    """Whether process ``pid`` still runs and is the one recorded (same start time when both are known)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return start is None
    now = process_start(pid)
    if Path("/proc/self/stat").is_file():  # Linux: a zombie or a pid taken by another process is gone
        return now is not None and (start is None or now == start)
    return True


def settle_grid(grid_dir: str | Path) -> GridInfo:
    """The grid's record, with what a killed grid left behind settled (and written back to ``grid.json``).

    A grid whose record says ``running`` but whose process is gone (SIGKILL, a crash, a reboot) is marked
    ``failed``; so is each of its ``running`` runs whose process is gone (or ``ok`` when its ``run.json`` says it
    ended ok). Pending runs stay pending: ``run --resume GRID_ID`` runs them.

    Raises:
        GridError: No readable ``grid.json`` (see :func:`read_grid_info`).
    """
    grid_dir = Path(grid_dir)
    info = read_grid_info(grid_dir)
    if info.status != "running" or process_alive(info.pid, info.pid_start):
        return info
    if info.host and info.host != socket.gethostname():  # its pids mean nothing here
        logger.warning(
            "grid %s runs (or ran) on %s: its processes cannot be checked from here", info.grid_id, info.host
        )
        return info
    why = f"the grid's process (pid {info.pid}) is gone: it was killed or crashed before it finished"
    for entry in info.runs:
        if entry.status != "running" or process_alive(entry.pid, entry.pid_start):
            continue
        entry.status, entry.error = _run_error(
            RunFolder(grid_dir / entry.run_id).run_json, 0, grid_dir / str(entry.log)
        )
        if entry.error and entry.error.startswith("the run's process ended"):  # its run.json was left unfinished
            what = f"the run's process (pid {entry.pid})" if entry.pid else "the run's Ray task"  # a Ray grid's: no pid
            entry.error = f"{what} is gone: killed with its grid before it finished"
    info.status, info.error = "failed", why
    logger.warning("grid %s: %s; marked failed", info.grid_id, why)
    _save(info, grid_dir)
    return info


def write_grid_page_settled(grid_dir: str | Path) -> Path:
    """Settle a grid killed while it ran (:func:`settle_grid`), then write its page; the page's ``index.html``.

    Raises:
        GridError: No readable ``grid.json``.
    """
    from airbench_nb.grid_page import write_grid_page

    settle_grid(grid_dir)
    return write_grid_page(grid_dir)[0]


def new_grid_id(reports_dir: Path) -> str:
    """A fresh grid folder name: ``grid-`` and the UTC time, with a counter if that folder exists."""
    base = "grid-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    grid_id, n = base, 1
    while (reports_dir / grid_id).exists():
        n += 1
        grid_id = f"{base}-{n}"
    return grid_id


def _default_cache(cache_dir: str | Path | None) -> str | None:
    """The cache folder the runs will share: ``cache_dir``, else the kit's default one (None if it has none)."""
    if cache_dir:
        return str(Path(cache_dir).expanduser().resolve())
    try:
        from airbench_nb.cache import cache_root
    except ImportError:  # a kit without the data cache: each notebook keeps its own default
        return None
    return str(cache_root(None).resolve())


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
"""Terminal colour codes, which IPython puts in tracebacks."""


def _one_line(text: str, limit: int = 500) -> str:
    text = re.sub(r"\s+", " ", ANSI.sub("", text)).strip()
    text = re.sub(r"-{5,}", "", text).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def notebook_error(path: Path) -> str | None:
    """``Name: message`` of the last exception an executed notebook shows (None when it shows none).

    ``run.json`` keeps papermill's exception, whose text starts with the traceback and is cut at 2,000 characters;
    the failing cell's error output names the exception itself.
    """
    try:
        notebook = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = None
    for cell in notebook.get("cells") or [] if isinstance(notebook, dict) else []:
        for output in cell.get("outputs") or [] if isinstance(cell, dict) else []:
            if isinstance(output, dict) and output.get("output_type") == "error":
                found = _one_line(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
    return found


def _run_error(run_json: Path, returncode: int, log: Path) -> tuple[RunStatus, str | None]:
    """Status and error of a finished run process, from its ``run.json`` (its record) or else its log."""
    record: dict[str, Any] | None = None
    try:
        record = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = None
    if isinstance(record, dict) and record.get("status") == "ok" and returncode == 0:
        return "ok", None
    if isinstance(record, dict) and record.get("status") == "failed":
        for nb in record.get("notebooks") or []:
            if nb.get("status") == "failed":
                output = run_json.parent / str(nb.get("output") or f"{nb.get('name')}.ipynb")
                why = notebook_error(output) or _one_line(nb.get("error") or "no error recorded")
                return "failed", f"{nb.get('name')}: {why}"
        return "failed", "failed (run.json names no failing notebook)"
    tail = ""
    try:
        lines = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        tail = lines[-1].strip() if lines else ""
    except OSError:
        pass
    why = "killed by a signal" if returncode < 0 else f"exit code {returncode}"
    where = "before it finished" if isinstance(record, dict) else "before writing run.json"
    return "failed", f"the run's process ended ({why}) {where}" + (f": {_one_line(tail)}" if tail else "")


def run_grid(
    grid: Grid,
    *,
    grid_id: str | None = None,
    reports_dir: str | Path = "reports",
    jobs: int | None = None,
    cache_dir: str | Path | None = None,
    kernel_name: str | None = None,
    html: bool = True,
    notebook_dir: str | Path | None = None,
    on_run_end: Callable[[GridRun, GridInfo], None] | None = None,
    executor: str | Executor = "local",
) -> GridInfo:
    """Run every parameter set of ``grid`` into ``reports_dir/grid_id/<run_id>/``, ``jobs`` at a time.

    Each run is :func:`~airbench_nb.pipeline.run_pipeline` in a process of its own (``python -m airbench_nb.grid``,
    its parameters on stdin, its log in ``logs/<run_id>.log``): runs share nothing but the cache folder, a run that
    fails or dies leaves the others running, and its ``run.json`` says how far it got. ``grid.json`` and the
    comparison page are rewritten as each run ends.

    Args:
        grid: The grid (see :func:`read_grid`).
        grid_id: Name of the grid folder (default: ``grid-<UTC time>``).
        reports_dir: Parent of the grid folder.
        jobs: Runs at a time (1 or more; default: 1 locally, every run on Ray, whose resources then decide).
        cache_dir: Cache folder shared by every run (default: the kit's, ``$AIRBENCH_CACHE`` or
            ``~/.cache/airbench-nb``).
        kernel_name: Jupyter kernel of every notebook (default: each notebook's own).
        html: Also export each executed notebook to HTML.
        notebook_dir: Where the notebooks are (default: :func:`~airbench_nb.pipeline.notebooks_dir`).
        on_run_end: Called with each run's entry as it ends (for progress lines).
        executor: ``local`` (a process per run on this machine) or a Ray cluster (``ray``, ``ray:ADDRESS``,
            ``ray://HOST:PORT``, see :func:`~airbench_nb.grid_ray.parse_executor`): each run a Ray task holding
            the grid file's ``resources:``; the grid folder and the cache must then be on storage every node sees.

    Returns:
        The final :class:`GridInfo`, also written to ``grid.json``.

    Raises:
        GridError: Before anything runs: a grid :func:`check_grid` refuses, a bad grid id, a grid folder that holds
            a grid already or cannot be made, ``jobs`` under 1, or a Ray executor without Ray (or whose cluster
            cannot be joined).
    """
    from airbench_nb.pipeline import PipelineError, check_run_id

    runner = _executor(executor)
    if jobs is not None and jobs < 1:
        raise GridError(f"jobs must be 1 or more, got {jobs}")
    _check_executor(runner, grid)
    stems = check_grid(grid, notebook_dir=notebook_dir)
    reports = Path(reports_dir)
    if grid_id is not None:
        try:
            check_run_id(grid_id)
        except PipelineError as exc:
            raise GridError(f"grid id: {exc}") from None
    grid_id = grid_id or new_grid_id(reports)
    grid_dir = (reports / grid_id).resolve()
    if (grid_dir / GRID_JSON).exists():
        raise GridError(
            f"{reports / grid_id} already holds a grid ({GRID_JSON}); give --resume {grid_id} to finish it, "
            "or another --run-id"
        )
    if RunFolder(grid_dir).run_json.exists():
        raise GridError(f"{reports / grid_id} holds a run already (run.json); choose another --run-id")
    connected = _join(runner)  # before the grid folder is made: a cluster that cannot be joined leaves nothing
    try:
        info = _new_grid(grid, grid_id, grid_dir, reports / grid_id, stems, jobs, cache_dir, runner)
    except BaseException:
        if connected:
            grid_ray.disconnect()
        raise

    return _execute(
        info,
        grid_dir,
        list(info.runs),
        notebook_dir=notebook_dir,
        kernel_name=kernel_name,
        html=html,
        on_run_end=on_run_end,
        executor=runner,
        connected=connected,
    )


def _new_grid(
    grid: Grid,
    grid_id: str,
    grid_dir: Path,
    shown: Path,
    stems: list[str],
    jobs: int | None,
    cache_dir: str | Path | None,
    runner: Executor,
) -> GridInfo:
    """Make a new grid's folder (``logs/``, the grid file's copy) and its record, every run pending.

    Raises:
        GridError: The folder cannot be made (``shown`` is how the message names it).
    """
    try:
        (grid_dir / LOGS).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GridError(f"cannot make the grid folder {shown}: {exc.strerror or exc}") from None

    if grid.source.is_file():  # the file as it was run: it may change after
        shutil.copyfile(grid.source, grid_dir / GRID_COPY)
    run_ids = grid.run_ids()
    shared_cache = _default_cache(cache_dir)
    return GridInfo(
        grid_id=grid_id,
        name=grid.name,
        source=str(grid.source),
        started=datetime.now(UTC),
        notebooks=stems,
        fixed=grid.fixed,
        varying=grid.varying,
        jobs=jobs or (len(grid.sets) if runner.kind == "ray" else 1),
        cache_dir=shared_cache,
        executor=str(runner),
        resources=grid.resources,
        retries=grid.retries,
        runs=[
            GridRun(
                index=i + 1,
                run_id=run_id,
                parameters=params,
                varying={k: params[k] for k in grid.varying if k in params},
                log=f"{LOGS}/{run_id}.log",
            )
            for i, (run_id, params) in enumerate(zip(run_ids, grid.sets, strict=True))
        ],
    )


def _check_executor(executor: Executor, grid: Grid) -> None:
    """Refuse a Ray executor without Ray; say that a local grid leaves the file's Ray settings unused."""
    if executor.kind == "ray":
        if not grid_ray.available():
            raise GridError(f"--executor {executor}: Ray is not installed: {grid_ray.INSTALL_HINT}")
    elif grid.resources or grid.retries is not None:
        logger.info("%s: resources: and retries: are for --executor ray; this grid runs locally", grid.source)


def _save(info: GridInfo, grid_dir: Path) -> None:
    """Write ``grid.json`` and the grid page (a page that fails is logged: ``grid.json`` is the record)."""
    from airbench_nb.grid_page import write_grid_page

    (grid_dir / GRID_JSON).write_text(info.model_dump_json(indent=2) + "\n", encoding="utf-8")
    try:
        write_grid_page(grid_dir)
    except Exception as exc:  # noqa: BLE001 - the page is a summary; grid.json and the runs are the record
        logger.warning("grid page of %s not written: %s: %s", grid_dir, type(exc).__name__, exc)


def _job(
    info: GridInfo,
    grid_dir: Path,
    entry: GridRun,
    *,
    notebook_dir: str | Path | None,
    kernel_name: str | None,
    html: bool,
    resume: bool,
) -> dict[str, Any]:
    """The job of one run, as ``python -m airbench_nb.grid`` reads it on stdin (``grid_pid`` apart)."""
    return {
        "parameters": entry.parameters,
        "notebooks": info.notebooks,
        "run_id": entry.run_id,
        "reports_dir": str(grid_dir),
        "notebook_dir": str(Path(notebook_dir).resolve()) if notebook_dir else None,
        "kernel_name": kernel_name,
        "html": html,
        "cache_dir": info.cache_dir,
        "resume": resume and RunFolder(grid_dir / entry.run_id).run_json.is_file(),
    }


def _execute(
    info: GridInfo,
    grid_dir: Path,
    todo: list[GridRun],
    *,
    notebook_dir: str | Path | None,
    kernel_name: str | None,
    html: bool,
    on_run_end: Callable[[GridRun, GridInfo], None] | None,
    resume: bool = False,
    executor: Executor | None = None,
    connected: bool | None = None,
) -> GridInfo:
    """Run the entries ``todo`` of ``info``, ``info.jobs`` at a time, each in a process of its own.

    With ``resume``, a run whose folder holds a ``run.json`` is resumed in place (see
    :func:`~airbench_nb.pipeline.run_pipeline`); the others start afresh. With a Ray ``executor``, each run is a
    Ray task instead (:func:`_execute_ray`); ``connected`` says whether :func:`_join` joined its cluster already
    (True: this grid left it at the end; None: not joined yet).
    """
    from airbench_nb.pipeline import interruption, sigterm_as_interrupt

    if executor is not None and executor.kind == "ray":
        return _execute_ray(
            info,
            grid_dir,
            todo,
            executor=executor,
            notebook_dir=notebook_dir,
            kernel_name=kernel_name,
            html=html,
            on_run_end=on_run_end,
            resume=resume,
            connected=connected,
        )

    grid_id, jobs = info.grid_id, info.jobs

    def save() -> None:
        _save(info, grid_dir)

    info.pid, info.pid_start, info.error = os.getpid(), process_start(os.getpid()), None
    info.host, info.executor = socket.gethostname(), "local"
    outer = signal.getsignal(signal.SIGTERM) if _main_thread() else None
    save()
    pending = list(todo)
    active: dict[str, tuple[GridRun, subprocess.Popen[bytes], float, Any]] = {}

    def start(entry: GridRun) -> None:
        payload = {
            **_job(info, grid_dir, entry, notebook_dir=notebook_dir, kernel_name=kernel_name, html=html, resume=resume),
            "grid_pid": os.getpid(),
        }
        log = (grid_dir / entry.log).open("ab" if resume else "wb")  # type: ignore[operator]
        process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "airbench_nb.grid"], stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(payload).encode("utf-8"))
        process.stdin.close()
        entry.status, entry.started = "running", datetime.now(UTC)
        entry.pid, entry.pid_start = process.pid, process_start(process.pid)
        entry.host, entry.attempts = None, None
        active[entry.run_id] = (entry, process, time.perf_counter(), log)
        logger.info("grid %s: started %s (pid %d)", grid_id, entry.run_id, process.pid)

    def finish(entry: GridRun, returncode: int, t0: float, log: Any) -> None:
        log.close()
        entry.ended = datetime.now(UTC)
        entry.duration_s = round(time.perf_counter() - t0, 3)
        entry.status, entry.error = _run_error(
            RunFolder(grid_dir / entry.run_id).run_json, returncode, grid_dir / entry.log
        )
        save()
        if on_run_end is not None:
            on_run_end(entry, info)

    try:
        with sigterm_as_interrupt():
            while pending or active:
                while pending and len(active) < jobs:
                    start(pending.pop(0))
                    save()
                time.sleep(POLL_S)
                for run_id, (entry, process, t0, log) in list(active.items()):
                    returncode = process.poll()
                    if returncode is not None:
                        del active[run_id]
                        finish(entry, returncode, t0, log)
    except BaseException as exc:  # Ctrl-C, SIGTERM, or a bug here: stop our runs, record where the grid stopped
        why = interruption(exc)
        if _main_thread():  # finish recording first: a second SIGTERM waits
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for entry, process, t0, log in active.values():
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
            entry.status, entry.error = "failed", f"interrupted: the grid was stopped ({why}) while it ran"
            entry.ended, entry.duration_s = datetime.now(UTC), round(time.perf_counter() - t0, 3)
        for entry in pending:
            entry.error = f"not started: the grid was stopped ({why})"
        info.status, info.ended, info.error = "failed", datetime.now(UTC), f"stopped by {why}"
        save()
        if outer is not None:
            signal.signal(signal.SIGTERM, outer)
        logger.error("grid %s stopped by %s; resume it with: airbench-nb run --resume %s", grid_id, why, grid_id)
        raise
    info.status = "ok" if info.failed == 0 else "failed"
    info.ended = datetime.now(UTC)
    save()
    logger.info("grid %s %s: %d of %d runs failed", grid_id, info.status, info.failed, len(info.runs))
    return info


def _join(executor: Executor) -> bool:
    """Join the Ray cluster of a Ray ``executor`` before a grid starts (nothing for a local one).

    Returns:
        Whether this call connected (then :func:`_execute_ray` disconnects at the grid's end).

    Raises:
        GridError: Ray is not installed, or the cluster cannot be joined.
    """
    if executor.kind != "ray":
        return False
    try:
        return grid_ray.connect(executor.address)
    except RayUnavailable as exc:
        raise GridError(f"--executor {executor}: {exc}") from None


def _executor(spelling: str | Executor | None, default: str = "local") -> Executor:
    """An :class:`~airbench_nb.grid_ray.Executor` from ``--executor``'s text (None: ``default``)."""
    if isinstance(spelling, Executor):
        return spelling
    try:
        return parse_executor(spelling or default)
    except ValueError as exc:
        raise GridError(str(exc)) from None


def _execute_ray(
    info: GridInfo,
    grid_dir: Path,
    todo: list[GridRun],
    *,
    executor: Executor,
    notebook_dir: str | Path | None,
    kernel_name: str | None,
    html: bool,
    on_run_end: Callable[[GridRun, GridInfo], None] | None,
    resume: bool,
    connected: bool | None = None,
) -> GridInfo:
    """Run the entries ``todo`` of ``info`` as Ray tasks, ``info.jobs`` submitted at a time (see :mod:`grid_ray`).

    The cluster is joined here unless ``connected`` says the caller did (:func:`_join`), and left at the end
    (unless this process had joined it before the grid). A run is ``pending`` until its task starts on a node (its
    attempts ledger gets a line), then ``running``; its entry gets the node's host name and the number of attempts
    (more than 1 when its worker died and Ray ran it again). ``grid.json`` and the page are rewritten as runs start
    and end. Ctrl-C or SIGTERM cancel every task: a running one sends its
    run SIGTERM, which the run records in its ``run.json`` as a local grid's does (see :func:`grid_ray.cancel`).
    """
    from airbench_nb.pipeline import Stopped, interruption, sigterm_as_interrupt

    grid_id, jobs = info.grid_id, info.jobs
    resources = {**grid_ray.DEFAULT_RESOURCES, **info.resources}
    retries = grid_ray.DEFAULT_RETRIES if info.retries is None else info.retries
    environment = grid_ray.forwarded_environment()

    def save() -> None:
        _save(info, grid_dir)

    if connected is None:
        connected = _join(executor)
    info.pid, info.pid_start, info.error = os.getpid(), process_start(os.getpid()), None
    info.host, info.executor = socket.gethostname(), str(executor)
    outer = signal.getsignal(signal.SIGTERM) if _main_thread() else None
    pending = list(todo)
    for entry in pending:
        entry.host, entry.attempts, entry.pid, entry.pid_start = None, None, None, None
    submitted: dict[Any, GridRun] = {}

    def submit(entry: GridRun) -> None:
        job = _job(info, grid_dir, entry, notebook_dir=notebook_dir, kernel_name=kernel_name, html=html, resume=resume)
        log = grid_dir / str(entry.log)
        if not resume:
            log.unlink(missing_ok=True)
        submitted[grid_ray.submit(job, log, resources=resources, retries=retries, environment=environment)] = entry
        logger.info("grid %s: submitted %s to Ray", grid_id, entry.run_id)

    def started() -> bool:
        """Mark ``running`` the submitted runs whose task has started; whether any was."""
        changed = False
        for entry in submitted.values():
            if entry.status == "pending" and (attempts := grid_ray.read_attempts(grid_dir / str(entry.log))):
                entry.status, entry.host, entry.attempts = "running", attempts[-1].get("host"), len(attempts)
                entry.started = datetime.now(UTC)
                changed = True
        return changed

    def finish(entry: GridRun, result: grid_ray.TaskResult) -> None:
        log = grid_dir / str(entry.log)
        attempts = grid_ray.read_attempts(log)
        entry.attempts = len(attempts) or None
        entry.host = result.host or (attempts[-1].get("host") if attempts else None)
        entry.started = result.started or entry.started
        entry.ended = result.ended or datetime.now(UTC)
        entry.duration_s = round((entry.ended - entry.started).total_seconds(), 3) if entry.started else None
        if result.returncode is None:
            entry.status, entry.error = "failed", f"not finished: {result.error}"
        else:
            entry.status, entry.error = _run_error(RunFolder(grid_dir / entry.run_id).run_json, result.returncode, log)
        if (entry.attempts or 0) > 1:
            logger.warning("grid %s: %s ran %d times (its Ray worker died)", grid_id, entry.run_id, entry.attempts)
        save()
        if on_run_end is not None:
            on_run_end(entry, info)

    sigterm: list[int] = []  # Ray's wait turns the Stopped a SIGTERM raises into a bare KeyboardInterrupt

    try:
        with sigterm_as_interrupt():
            if _main_thread():
                signal.signal(signal.SIGTERM, _noting(signal.getsignal(signal.SIGTERM), sigterm))
            save()
            while pending or submitted:
                if pending and len(submitted) < jobs:
                    while pending and len(submitted) < jobs:
                        submit(pending.pop(0))
                    save()
                for ref, result in grid_ray.wait(list(submitted)):
                    finish(submitted.pop(ref), result)
                if started():
                    save()
    except BaseException as exc:  # Ctrl-C, SIGTERM, or a bug here: cancel the tasks, record where the grid stopped
        stopped = Stopped("stopped by SIGTERM") if sigterm and not isinstance(exc, Stopped) else None
        why = interruption(stopped or exc)
        if _main_thread():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        grid_ray.cancel(list(submitted))
        now = datetime.now(UTC)
        for entry in submitted.values():
            if entry.status == "running":
                entry.status, entry.error = "failed", f"interrupted: the grid was stopped ({why}) while it ran"
                entry.ended = now
                entry.duration_s = round((now - entry.started).total_seconds(), 3) if entry.started else None
            else:
                entry.error = f"not started: the grid was stopped ({why})"
        for entry in pending:
            entry.error = f"not started: the grid was stopped ({why})"
        info.status, info.ended, info.error = "failed", now, f"stopped by {why}"
        save()
        if outer is not None:
            signal.signal(signal.SIGTERM, outer)
        logger.error("grid %s stopped by %s; resume it with: airbench-nb run --resume %s", grid_id, why, grid_id)
        if stopped is not None:
            raise stopped from None
        raise
    finally:
        if connected:
            grid_ray.disconnect()
    info.status = "ok" if info.failed == 0 else "failed"
    info.ended = datetime.now(UTC)
    save()
    logger.info("grid %s %s: %d of %d runs failed", grid_id, info.status, info.failed, len(info.runs))
    return info


def _noting(handler: Any, seen: list[int]) -> Callable[[int, Any], None]:
    """A signal handler that appends the signal to ``seen``, then calls ``handler`` (a callable one)."""

    def handle(signum: int, frame: Any) -> None:
        seen.append(signum)
        if callable(handler):
            handler(signum, frame)

    return handle


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def is_grid_folder(folder: str | Path) -> bool:
    """Whether ``folder`` is a grid's folder (it holds ``grid.json``), not a single run's."""
    return (Path(folder) / GRID_JSON).is_file()


def read_grid_info(grid_dir: str | Path) -> GridInfo:
    """The :class:`GridInfo` of a grid folder.

    Raises:
        GridError: No ``grid.json`` there, or one that is not a grid's record (naming the file and why).
    """
    path = Path(grid_dir) / GRID_JSON
    try:
        return GridInfo.model_validate_json(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GridError(f"{path}: no such file; {Path(grid_dir)} is not a grid folder") from None
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise GridError(f"{path}: not a readable grid record ({first})") from None


def resume_grid(
    grid_id: str,
    *,
    reports_dir: str | Path = "reports",
    jobs: int | None = None,
    cache_dir: str | Path | None = None,
    kernel_name: str | None = None,
    html: bool = True,
    notebook_dir: str | Path | None = None,
    on_run_end: Callable[[GridRun, GridInfo], None] | None = None,
    executor: str | Executor | None = None,
) -> GridInfo:
    """Resume the grid ``reports_dir/grid_id``: its finished runs are kept, its failed and pending ones rerun.

    The rule: a run whose entry in ``grid.json`` is ``ok`` and whose ``run.json`` still says ``ok`` is kept as it
    is (not re-executed, its entry unchanged). Every other run (``failed``; ``pending`` or ``running`` when the
    grid was stopped) runs again with the parameters ``grid.json`` recorded: in place, as
    ``airbench-nb run --resume`` does, when its folder holds a ``run.json`` (its responses, verdicts and cache
    entries are reused), afresh otherwise. Its log gets the new run appended. The parameters are checked again
    against the notebooks before anything runs.

    Args:
        grid_id: Name of the grid folder under ``reports_dir``.
        reports_dir: Parent of the grid folder.
        jobs: Runs at a time (default: the grid's own).
        cache_dir: Cache folder shared by the runs (default: the one the grid used).
        kernel_name: Jupyter kernel of every notebook (default: each notebook's own).
        html: Also export each executed notebook to HTML.
        notebook_dir: Where the notebooks are (default: :func:`~airbench_nb.pipeline.notebooks_dir`).
        on_run_end: Called with each rerun's entry as it ends.
        executor: Where the reruns execute (see :func:`run_grid`; default: where the grid ran, ``executor`` of its
            ``grid.json``).

    Returns:
        The final :class:`GridInfo`, also written to ``grid.json``.

    Raises:
        GridError: Before anything runs: a bad grid id, no readable ``grid.json``, ``jobs`` under 1, or
            parameters the notebooks now refuse.
    """
    from airbench_nb.pipeline import PipelineError, check_run_id

    try:
        check_run_id(grid_id)
    except PipelineError as exc:
        raise GridError(f"grid id: {exc}") from None
    if jobs is not None and jobs < 1:
        raise GridError(f"jobs must be 1 or more, got {jobs}")
    grid_dir = (Path(reports_dir) / grid_id).resolve()
    info = settle_grid(grid_dir)
    _refuse_running(info)
    if not info.runs:
        raise GridError(f"{grid_dir / GRID_JSON}: the grid has no runs to resume")
    runner = _executor(executor, default=info.executor)
    grid = Grid(
        source=grid_dir / GRID_JSON,
        sets=[r.parameters for r in info.runs],
        varying=info.varying,
        fixed=info.fixed,
        name=info.name,
        notebooks=info.notebooks or None,
        resources=info.resources,
        retries=info.retries,
    )
    _check_executor(runner, grid)
    stems = check_grid(grid, notebook_dir=notebook_dir)
    todo = [r for r in info.runs if not _finished(grid_dir, r)]
    for entry in todo:
        entry.status, entry.started, entry.ended, entry.duration_s, entry.error = "pending", None, None, None, None
        entry.log = entry.log or f"{LOGS}/{entry.run_id}.log"
    (grid_dir / LOGS).mkdir(parents=True, exist_ok=True)
    info.notebooks, info.status, info.ended = stems, "running", None
    if jobs is None and runner.kind == "ray" and info.executor == "local":  # a local grid resumed on Ray: all at once
        jobs = len(todo) or 1
    info.jobs = jobs or info.jobs
    if cache_dir is not None:
        info.cache_dir = _default_cache(cache_dir)
    logger.info(
        "grid %s resumed: %d of %d runs kept, %d to run", grid_id, len(info.runs) - len(todo), len(info.runs), len(todo)
    )
    return _execute(
        info,
        grid_dir,
        todo,
        notebook_dir=notebook_dir,
        kernel_name=kernel_name,
        html=html,
        on_run_end=on_run_end,
        resume=True,
        executor=runner,
    )


def _refuse_running(info: GridInfo) -> None:
    """Refuse to resume a grid whose process, or one of whose runs' processes, still runs."""
    if info.status == "running":
        where = f" on {info.host}" if info.host and info.host != socket.gethostname() else ""
        raise GridError(f"grid {info.grid_id} is still running (pid {info.pid}{where}): wait for it, or stop it first")
    for entry in info.runs:
        if entry.status == "running" and process_alive(entry.pid, entry.pid_start):
            raise GridError(
                f"grid {info.grid_id}: run {entry.run_id} still runs (pid {entry.pid}): wait for it, or stop it first"
            )


def _finished(grid_dir: Path, entry: GridRun) -> bool:
    """Whether a run of a grid ended ``ok`` and its ``run.json`` still says so (then a resume keeps it)."""
    if entry.status != "ok":
        return False
    try:
        info = RunFolder(grid_dir / entry.run_id).read_info()
    except (OSError, ValueError):
        return False
    return info is not None and info.status == "ok"


def run_grid_command(
    grid_file: str | Path | None,
    parameters: dict[str, Any],
    notebooks: list[str] | None,
    *,
    show: Callable[[Any], None],
    table: Callable[[str, list[dict[str, Any]]], Any],
    grid_id: str | None = None,
    reports_dir: str | Path = "reports",
    jobs: int | None = None,
    cache_dir: str | Path | None = None,
    kernel_name: str | None = None,
    html: bool = True,
    resume: bool = False,
    executor: str | None = None,
) -> GridInfo:
    """What ``run --grid`` and ``run --resume GRID_ID`` do: run or resume a grid, printing a line per run and a table.

    ``parameters`` (``-p``) are added to every run, ``notebooks`` (``--notebooks``) replace the file's. With
    ``resume``, ``grid_id`` names the grid to resume (:func:`resume_grid`) and ``grid_file``, ``parameters`` and
    ``notebooks`` must be empty: a grid resumes as it was started. ``show`` prints (a rich console's ``print``)
    and ``table`` makes a table from a title and rows. ``executor`` (``--executor``) is where the runs execute
    (:func:`run_grid`; default: ``local`` for a new grid, the grid's own for a resumed one).

    Returns:
        The grid's :class:`GridInfo` (the command exits with the number of failed runs, capped at 125).

    Raises:
        GridError: Before anything runs (one line, naming the file and the key).
    """
    from rich.markup import escape

    from airbench_nb.grid_page import _short as short

    ran_on = "local"
    if resume:
        if grid_file is not None or parameters or notebooks:
            raise GridError(
                f"--resume {grid_id} resumes a grid with the parameters and notebooks it was started with; "
                "give no --grid, --param or --notebooks (start a new grid to change them)"
            )
        if grid_id is None:
            raise GridError("resuming a grid needs its id (the grid folder under the reports folder)")
        before = settle_grid(Path(reports_dir) / grid_id)
        _refuse_running(before)
        ran_on = before.executor
        total = len(before.runs)
        kept = sum(_finished((Path(reports_dir) / grid_id).resolve(), r) for r in before.runs)
    else:
        if grid_file is None:
            raise GridError("give a grid file (--grid GRID.yaml)")
        grid = read_grid(grid_file, extra=parameters)
        if notebooks:
            grid = replace(grid, notebooks=list(notebooks))
        total, kept = len(grid.sets), 0
    runner = _executor(executor, default=ran_on)
    width = len(str(total))

    def progress(entry: GridRun, info: GridInfo) -> None:
        done = sum(r.status in ("ok", "failed") for r in info.runs)
        colour = "green" if entry.status == "ok" else "red"
        error = f" {entry.error[:200]}" if entry.error else ""
        where = f" on {entry.host}" if entry.host else ""
        tries = f", {entry.attempts} attempts" if (entry.attempts or 0) > 1 else ""
        show(
            f"[{done:>{width}}/{total}] {escape(entry.run_id)}: [{colour}]{entry.status}[/{colour}] "
            f"({entry.duration_s or 0:.0f} s{escape(where + tries)}){escape(error)}"
        )

    options: dict[str, Any] = {
        "reports_dir": reports_dir,
        "cache_dir": cache_dir,
        "kernel_name": kernel_name,
        "html": html,
        "on_run_end": progress,
        "executor": runner,
    }
    on = f" on {escape(str(runner))}" if runner.kind == "ray" else ""
    if resume:
        assert grid_id is not None
        show(f"grid {escape(grid_id)}: resuming {total - kept} of {total} runs ({kept} finished kept){on}")
        info = resume_grid(grid_id, jobs=jobs, **options)
    else:
        assert grid_file is not None
        if runner.kind == "ray":
            held = {**grid_ray.DEFAULT_RESOURCES, **grid.resources}
            at_a_time = f"{jobs} at a time" if jobs else "as the cluster's resources allow"
            show(
                f"grid {escape(str(grid_file))}: {total} runs{on}, {at_a_time}, each holding "
                f"{held['num_cpus']:g} CPU and {held['num_gpus']:g} GPU"
            )
        else:
            show(f"grid {escape(str(grid_file))}: {total} runs, {jobs or 1} at a time")
        info = run_grid(grid, grid_id=grid_id, jobs=jobs, **options)
    rows = [
        {
            "run": escape(r.run_id),
            **{k: escape(short(r.varying.get(k, "-"))) for k in info.varying},
            "status": r.status,
            "seconds": f"{r.duration_s:.0f}" if r.duration_s is not None else "",
            "error": escape((r.error or "")[:100]),
        }
        for r in info.runs
    ]
    show(table(f"grid {escape(info.grid_id)}: {info.status}, {info.failed} of {total} runs failed", rows))
    page = Path(reports_dir) / info.grid_id / INDEX_HTML
    show(f"grid page: {escape(str(page))}")
    return info


def _worker() -> int:
    """One run of a grid (``python -m airbench_nb.grid``, its job as JSON on stdin); exit 0 ok, 1 failed, 2 refused."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from airbench_nb.pipeline import PipelineError, Stopped, interruption, run_pipeline

    job = json.loads(sys.stdin.read())
    _die_with(job.get("grid_pid"))
    options: dict[str, Any] = {
        "notebooks": job["notebooks"],
        "run_id": job["run_id"],
        "reports_dir": job["reports_dir"],
        "notebook_dir": job["notebook_dir"],
        "kernel_name": job["kernel_name"],
        "html": job["html"],
        "progress": False,
    }
    if job.get("cache_dir") and "cache_dir" in inspect.signature(run_pipeline).parameters:
        options["cache_dir"] = job["cache_dir"]
    if job.get("resume"):  # a grid resumed: the run re-executes in place, reusing what it had written
        options["resume"] = True
    logger.info("run %s (pid %d): %s", job["run_id"], os.getpid(), json.dumps(job["parameters"]))
    try:
        info = run_pipeline(job["parameters"], **options)  # records a SIGTERM in run.json before it stops
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"error: run {job['run_id']} interrupted ({interruption(exc)})", file=sys.stderr)
        return 143 if isinstance(exc, Stopped) else 130
    return 0 if info.status == "ok" else 1


def _die_with(grid_pid: int | None) -> None:
    """Have the kernel send this run SIGTERM when its grid's process dies, even by SIGKILL (Linux).

    The run then records the interruption in its ``run.json`` and shuts its notebook's kernel down: a killed grid
    leaves no orphan running. Elsewhere, or when the grid already died, the grid's next reader settles it.
    """
    if grid_pid and os.getppid() != grid_pid:  # the grid died before this run started
        raise SystemExit(f"error: the grid's process (pid {grid_pid}) is gone; not starting")
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # no prctl: settled by the grid's next reader instead
        logger.warning("cannot ask to be stopped with the grid (prctl unavailable)")
    if grid_pid and os.getppid() != grid_pid:  # it died between the check and prctl
        raise SystemExit(f"error: the grid's process (pid {grid_pid}) is gone; not starting")


if __name__ == "__main__":
    sys.exit(_worker())
