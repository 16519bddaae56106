"""The ``run.json`` of a pipeline run (:class:`RunInfo`) and the status of each of its notebooks."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from airbench_nb.records.base import Record
from airbench_nb.records.checks import StrictBoolean

logger = logging.getLogger(__name__)


class NotebookStatus(Record):
    """What happened to one notebook of a pipeline run."""

    name: str
    """Notebook stem, e.g. ``00_tutorial``."""
    status: Literal["ok", "failed", "skipped"]
    """``ok`` when it executed to the end, ``failed`` when a cell raised, ``skipped`` when not run."""
    output: str | None = None
    """Path of the executed notebook, relative to the run folder."""
    html: str | None = None
    """Path of its HTML export, relative to the run folder."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Parameters injected into this notebook."""
    started: datetime | None = None
    """Start time (UTC)."""
    ended: datetime | None = None
    """End time (UTC)."""
    duration_s: float | None = None
    """Execution time in seconds."""
    error: str | None = None
    """The exception that stopped the notebook, or why it was skipped."""
    inputs_hash: str | None = None
    """SHA-256 over :attr:`input_hashes`, taken when the notebook last executed to the end; a resumed run whose
    hash for this notebook is the same keeps its executed notebook instead of executing it again. None when it
    failed, was skipped, or in a ``run.json`` written before resumes were incremental (it then executes again)."""
    input_hashes: dict[str, str] = Field(default_factory=dict)
    """SHA-256 of each thing the notebook's execution depends on, by name: ``notebook`` (its source),
    ``parameters`` (those injected), ``versions`` (Python, the kit, its dependencies), ``environment`` (the
    variables that change what it does), ``weights`` (which bundled real models are fetched), ``upstream`` (for a
    notebook outside the pipeline: the hashes of those before it), ``file:<path>`` for each run-folder file it reads
    or writes (one that is absent has no entry) and ``param:<name>:<path>`` for each file a path parameter names
    (``missing`` when absent)."""
    reused: StrictBoolean = False
    """True when a resumed run kept this notebook's earlier execution (its inputs hash unchanged): the executed
    notebook, its HTML and the times above are those of that execution."""


class RunInfo(Record):
    """The ``run.json`` of a pipeline run: what ran, with what, and how it ended."""

    run_id: str
    """Name of the run folder under ``reports/``."""
    started: datetime
    """Start of the run (UTC)."""
    ended: datetime | None = None
    """End of the run (UTC); None while running."""
    status: Literal["running", "ok", "failed"] = "running"
    """``ok`` when every notebook ran, ``failed`` when one failed."""
    parameters: dict[str, Any] = Field(default_factory=dict)
    """Parameters given to the run (never secrets)."""
    versions: dict[str, str] = Field(default_factory=dict)
    """Versions of Python, the kit and its main dependencies."""
    git_commit: str | None = None
    """Commit of the kit's repository, with ``-dirty`` when it had uncommitted changes; None outside git."""
    platform: str | None = None
    """Operating system and machine."""
    notebooks: list[NotebookStatus] = Field(default_factory=list)
    """One entry per notebook of the pipeline, in order."""
    resumed: int = 0
    """How many times the run was resumed (``airbench-nb run --resume``): notebooks re-executed in place, reusing
    the responses, verdicts and cache entries already there."""
    cache_dir: str | None = None
    """Shared cache folder given to the notebooks (built data, judge calls); None: their default."""
