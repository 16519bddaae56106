"""The run folder: one class owns every path and file name of a run, and reads and writes its typed artifacts.

A run folder (``reports/<run_id>/``) holds::

    run.json                         RunInfo: parameters, versions, each notebook's status   (read_info/write_info)
    data/                            foundation.jsonl, chat.jsonl, audio, dataset.json        (data_dir, manifests)
    responses/<model>/<kind>.jsonl   notebook 03                                              (responses_file)
    verdicts/<model>/<kind>.<judge>.jsonl   notebook 04                                       (verdicts_file)
    summary.json                     ScoreTable: every score with n, failures and CI          (read_scores/write_scores)
    summary.inputs.json              ScoreInputs: what the score table was computed from     (read_score_inputs)
    scores.csv, scores_summary.csv   the same, flattened                                      (write_scores)
    analysis/                        AnalysisReport: analysis.json; leaderboard.md, tables.csv, figures/  (*_analysis)
    annotation/sample-<kind>.jsonl   annotation samples and their label files                 (notebook 06)
    <notebook>.ipynb, .html, index.html, README.md                                            (pipeline, pages)

Nothing else in the kit spells these names: stages, notebooks, pages, the grid and the CLI ask a
:class:`RunFolder`. The folders ``data/``, ``responses/`` and ``verdicts/`` can be pointed elsewhere (a notebook's
``manifest_dir``, ``responses_dir``, ``verdicts_dir`` parameters) without changing anything else.

This module is ground level: it imports records, manifests, the score table and the analysis report only.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from airbench_nb.analysis_report import AnalysisReport
from airbench_nb.manifests import DATASET_CARD
from airbench_nb.records import ITEM_KINDS, RunInfo
from airbench_nb.score_table import ScoreInputs, ScoreTable

logger = logging.getLogger(__name__)

RUN_JSON = "run.json"
"""The run record (:class:`~airbench_nb.records.RunInfo`)."""
DATA = "data"
"""Folder of the manifests and audio."""
RESPONSES = "responses"
"""Folder of the responses, one folder per model."""
VERDICTS = "verdicts"
"""Folder of the verdicts, one folder per model, one file per (kind, judge)."""
SUMMARY_JSON = "summary.json"
"""The score table (:class:`~airbench_nb.score_table.ScoreTable`)."""
SCORE_INPUTS_JSON = "summary.inputs.json"
"""What the score table was computed from (:class:`~airbench_nb.score_table.ScoreInputs`): whether it is current."""
SCORES_CSV = "scores.csv"
"""Every score, one row each."""
SCORES_SUMMARY_CSV = "scores_summary.csv"
"""One row per (model, Chat judge, protocol)."""
ANALYSIS = "analysis"
"""Notebook 05's folder."""
ANALYSIS_JSON = "analysis.json"
"""Notebook 05's results inside ``analysis/``."""
LEADERBOARD = "leaderboard.md"
"""The leaderboard inside ``analysis/``."""
TABLES_CSV = "tables.csv"
"""The main table inside ``analysis/``."""
FIGURES = "figures"
"""Figures inside ``analysis/``."""
ANNOTATION = "annotation"
"""Notebook 06's folder: samples and label files."""
LABELS_SUFFIX = ".labels.jsonl"
"""Label files end in this (``<sample stem>.<annotator>.labels.jsonl``)."""
INDEX_HTML = "index.html"
"""The landing page."""
README_MD = "README.md"
"""The landing page for GitHub viewers."""
GRID_JSON = "grid.json"
"""A grid folder's record (:class:`~airbench_nb.grid.GridInfo`); a folder holding it is a grid's, not a run's."""
GRID_COPY = "grid.yaml"
"""The copy of the grid file kept in a grid folder."""
RESPONSE_AUDIO = "audio"
"""Folder, inside a model's responses folder, of its spoken answers (``<uid>.wav``)."""
LISTENING = "listening"
"""Folder, inside ``annotation/``, of the MOS listening test (playlist and each listener's ratings)."""
BATCH_REQUESTS = ".batch-requests-"
"""Batch API request files (``<kind>.<judge>.batch-requests-<k>.jsonl``) lie beside the verdicts; never verdicts."""

RAW_FILES: tuple[str, ...] = (
    RUN_JSON,
    SCORES_CSV,
    SCORES_SUMMARY_CSV,
    SUMMARY_JSON,
    f"{ANALYSIS}/{ANALYSIS_JSON}",
    f"{ANALYSIS}/{LEADERBOARD}",
    f"{ANALYSIS}/{TABLES_CSV}",
)
"""The run's files a landing page links under "Raw files" (relative to the run folder)."""

_MANIFESTS = (f"{DATA}/*.jsonl", f"{DATA}/{DATASET_CARD}")
_ANSWERS = (f"{RESPONSES}/**/*.jsonl", f"{VERDICTS}/**/*.jsonl")
STAGE_FILES: dict[str, tuple[str, ...]] = {
    "00_tutorial": ("tutorial/manifests/*.jsonl",),
    "01_build_data": _MANIFESTS,
    "02_mix_and_listen": ("mix_and_listen/**/*",),
    "03_run_model": (*_MANIFESTS, f"{RESPONSES}/**/*.jsonl"),
    "04_judge": (f"{DATA}/*.jsonl", *_ANSWERS, SCORES_CSV, SCORES_SUMMARY_CSV, SUMMARY_JSON, SCORE_INPUTS_JSON),
    "05_analyze": (f"{DATA}/*.jsonl", *_ANSWERS, SUMMARY_JSON, SCORE_INPUTS_JSON, f"{ANALYSIS}/**/*"),
    "06_annotate": (f"{DATA}/*.jsonl", *_ANSWERS, f"{ANNOTATION}/**/*"),
}
"""Run-folder files (globs) each pipeline notebook reads or writes; their content is part of its inputs hash.

A notebook is kept by a resume only while these files are as it left them: an upstream notebook that wrote new
responses, or a deleted output, makes it execute again. A notebook not named here (another notebook folder)
depends on the hashes of every notebook before it instead."""

KINDS: Sequence[str] = ITEM_KINDS
"""Manifest kinds, in pipeline order: AIR-Bench's two, those scored against references (schema 3), the tiered
benchmark's two, then any kind a benchmark registered (a live view of :data:`airbench_nb.records.ITEM_CLASSES`)."""


def file_slug(spec: str) -> str:
    """A file-name-safe form of a model or judge spec (``baseline:oracle`` -> ``baseline_oracle``)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_")


UID_STEM_CHARS = 80
"""Longest stem of a spoken answer's file name kept from the item's uid (the rest is a hash)."""


def uid_file_stem(uid: str) -> str:
    """The stem of an item's file name, one per uid (two uids never share a file).

    The uid itself when it is file-name safe (what :func:`file_slug` leaves unchanged, at most
    :data:`UID_STEM_CHARS` long), else its slug, cut to that length, with ``~`` and 12 hex digits of the uid's
    SHA-256: ``a/1`` -> ``a_1~<hash>`` while ``a_1`` stays ``a_1`` (``~`` is in no safe name).
    """
    if uid and len(uid) <= UID_STEM_CHARS and file_slug(uid) == uid:
        return uid
    digest = hashlib.sha256(uid.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{file_slug(uid)[:UID_STEM_CHARS]}~{digest}"


@dataclass
class RunFolder:
    """A run folder and every file in it.

    Args:
        path: The run folder.
        data: Where the manifests are (default ``<path>/data``).
        responses: Where the responses are (default ``<path>/responses``).
        verdicts: Where the verdicts are (default ``<path>/verdicts``).
    """

    path: Path
    """The run folder."""
    data: Path | None = None
    """The manifests' folder, when not ``<path>/data``."""
    responses: Path | None = None
    """The responses' folder, when not ``<path>/responses``."""
    verdicts: Path | None = None
    """The verdicts' folder, when not ``<path>/verdicts``."""

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.data = Path(self.data) if self.data else None
        self.responses = Path(self.responses) if self.responses else None
        self.verdicts = Path(self.verdicts) if self.verdicts else None

    @classmethod
    def of(
        cls,
        run_dir: str | Path | None,
        *,
        manifest_dir: str | Path | None = None,
        responses_dir: str | Path | None = None,
        verdicts_dir: str | Path | None = None,
    ) -> RunFolder:
        """The run folder a notebook's parameters name (empty strings meaning "the default").

        Outside a run (no ``run_dir``), the folder is the parent of ``manifest_dir`` (responses and verdicts go
        beside the data), else the current folder.
        """
        if run_dir:
            base = Path(run_dir)
        elif manifest_dir:
            base = Path(manifest_dir).parent
        else:
            base = Path(".")
        return cls(base, data=manifest_dir or None, responses=responses_dir or None, verdicts=verdicts_dir or None)

    # --- run record -------------------------------------------------------------------------------------------

    @property
    def run_json(self) -> Path:
        """``run.json``."""
        return self.path / RUN_JSON

    def read_info(self) -> RunInfo | None:
        """The run record, or None when there is none (raises on one that is not a run record)."""
        if not self.run_json.is_file():
            return None
        return RunInfo.model_validate_json(self.run_json.read_text(encoding="utf-8"))

    def write_info(self, info: RunInfo) -> Path:
        """Write the run record (rewritten after every notebook)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.run_json.write_text(info.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return self.run_json

    # --- data -------------------------------------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        """The manifests' folder."""
        return self.data or self.path / DATA

    def manifest(self, kind: str) -> Path:
        """The manifest of a kind (``foundation`` or ``chat``), whether it exists or not."""
        return self.data_dir / f"{kind}.jsonl"

    def manifests(self, kinds: Sequence[str] = KINDS) -> dict[str, Path]:
        """The manifests present, by kind (a missing folder, or none of them, is an error).

        Raises:
            FileNotFoundError: As :func:`~airbench_nb.manifests.manifest_files`.
        """
        from airbench_nb.manifests import manifest_files

        return manifest_files(self.data_dir, kinds)

    @property
    def dataset_card(self) -> Path:
        """``data/dataset.json``."""
        return self.data_dir / DATASET_CARD

    # --- responses --------------------------------------------------------------------------------------------

    @property
    def responses_dir(self) -> Path:
        """The responses' folder."""
        return self.responses or self.path / RESPONSES

    def responses_file(self, model: str, kind: str) -> Path:
        """The responses of a model (spec or folder name) to a kind's items."""
        return self.responses_dir / file_slug(model) / f"{kind}.jsonl"

    def response_audio_file(self, model: str, uid: str) -> Path:
        """Where a model's spoken answer to an item is written (``responses/<model>/audio/<stem>.wav``).

        The stem is :func:`uid_file_stem`'s: the uid itself when it is file-name safe.
        """
        return self.responses_dir / file_slug(model) / RESPONSE_AUDIO / f"{uid_file_stem(uid)}.wav"

    def response_audio_path(self, model: str, relative: str) -> Path:
        """The file a :class:`~airbench_nb.records.ResponseAudio` ``path`` names: relative to the model's folder.

        Raises:
            ValueError: When the path leaves the model's responses folder.
        """
        base = (self.responses_dir / file_slug(model)).resolve()
        path = (base / relative).resolve()
        if not path.is_relative_to(base):
            raise ValueError(f"response audio path {relative!r} leaves the model's responses folder")
        return path

    def model_dirs(self) -> list[Path]:
        """The models' response folders, sorted (none when there is no responses folder)."""
        if not self.responses_dir.is_dir():
            return []
        return sorted(p for p in self.responses_dir.iterdir() if p.is_dir())

    # --- verdicts ---------------------------------------------------------------------------------------------

    @property
    def verdicts_dir(self) -> Path:
        """The verdicts' folder."""
        return self.verdicts or self.path / VERDICTS

    def verdicts_file(self, model: str, kind: str, judge: str) -> Path:
        """The verdicts of one judge on a model's (spec or folder name) answers to a kind's items."""
        return self.verdicts_dir / file_slug(model) / f"{kind}.{file_slug(judge)}.jsonl"

    def verdict_files(self, model: str | None = None) -> list[Path]:
        """The verdict files of one model (spec or folder name), or of every model; Batch API files left out."""
        if model is not None:
            found = (self.verdicts_dir / file_slug(model)).glob("*.jsonl")
        else:
            found = self.verdicts_dir.glob("*/*.jsonl")
        return sorted(p for p in found if not is_batch_requests_file(p))

    @staticmethod
    def batch_requests_file(verdicts_file: Path, index: int) -> Path:
        """The Batch API request file of a chunk of judge calls, beside their verdicts file."""
        return verdicts_file.with_name(f"{verdicts_file.stem}{BATCH_REQUESTS}{index:04d}.jsonl")

    # --- scores -----------------------------------------------------------------------------------------------

    @property
    def summary_json(self) -> Path:
        """``summary.json``."""
        return self.path / SUMMARY_JSON

    @property
    def scores_csv(self) -> Path:
        """``scores.csv``."""
        return self.path / SCORES_CSV

    @property
    def scores_summary_csv(self) -> Path:
        """``scores_summary.csv``."""
        return self.path / SCORES_SUMMARY_CSV

    @property
    def score_inputs_json(self) -> Path:
        """``summary.inputs.json``."""
        return self.path / SCORE_INPUTS_JSON

    def write_scores(self, table: ScoreTable, inputs: ScoreInputs | None = None) -> list[Path]:
        """Write the score table: ``summary.json``, ``scores.csv`` and ``scores_summary.csv`` (nothing when empty).

        Args:
            table: The score table.
            inputs: What it was computed from, written to ``summary.inputs.json`` so that later stages read the table
                instead of computing it again (:meth:`read_scores`); None: none is known, and an earlier record is
                removed (it described another table).
        """
        self.score_inputs_json.unlink(missing_ok=True)
        if not table:
            return []
        self.path.mkdir(parents=True, exist_ok=True)
        table.summary_frame().to_csv(self.scores_summary_csv, index=False)
        table.frame().to_csv(self.scores_csv, index=False)
        self.summary_json.write_text(table.to_json(), encoding="utf-8")
        written = [self.summary_json, self.scores_csv, self.scores_summary_csv]
        if inputs is not None:
            self.score_inputs_json.write_text(inputs.model_dump_json(indent=1) + "\n", encoding="utf-8")
            written.append(self.score_inputs_json)
        return written

    def read_score_inputs(self) -> ScoreInputs | None:
        """What the score table was computed from, or None when not recorded or unreadable (logged)."""
        try:
            return ScoreInputs.model_validate_json(self.score_inputs_json.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("%s: unreadable score inputs (%s)", self.score_inputs_json, str(exc).splitlines()[0])
            return None

    def read_scores(self, inputs: ScoreInputs | None = None) -> ScoreTable | None:
        """The score table, or None when the run has none or it cannot be read (logged).

        Args:
            inputs: When given, the table only if it was computed from exactly these (:meth:`read_score_inputs`):
                None when it was not (the records changed since, other options) or when that is not recorded.
        """
        if inputs is not None and self.read_score_inputs() != inputs:
            return None
        try:
            return ScoreTable.model_validate_json(self.summary_json.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("%s: unreadable score table (%s)", self.summary_json, str(exc).splitlines()[0])
            return None

    # --- analysis and annotation ------------------------------------------------------------------------------

    @property
    def analysis_dir(self) -> Path:
        """Notebook 05's folder."""
        return self.path / ANALYSIS

    @property
    def analysis_json(self) -> Path:
        """``analysis/analysis.json``."""
        return self.analysis_dir / ANALYSIS_JSON

    def write_analysis(self, report: AnalysisReport, folder: Path | None = None) -> Path:
        """Write ``analysis.json`` (into ``folder`` when given, else :attr:`analysis_dir`) and return its path."""
        path = (Path(folder) if folder is not None else self.analysis_dir) / ANALYSIS_JSON
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report.to_json(), encoding="utf-8")
        return path

    def read_analysis(self) -> AnalysisReport | None:
        """The analysis, or None when the run has none or it cannot be read (logged with the section and field)."""
        try:
            return AnalysisReport.from_json(self.analysis_json.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("%s: unreadable analysis (%s)", self.analysis_json, " ".join(str(exc).splitlines()[:3]))
            return None

    @property
    def leaderboard(self) -> Path:
        """``analysis/leaderboard.md``."""
        return self.analysis_dir / LEADERBOARD

    @property
    def tables_csv(self) -> Path:
        """``analysis/tables.csv``."""
        return self.analysis_dir / TABLES_CSV

    @property
    def figures_dir(self) -> Path:
        """``analysis/figures``."""
        return self.analysis_dir / FIGURES

    @property
    def annotation_dir(self) -> Path:
        """Notebook 06's folder."""
        return self.path / ANNOTATION

    def annotation_sample(self, kind: str) -> Path:
        """The default annotation sample of a kind."""
        return self.annotation_dir / f"sample-{kind}.jsonl"

    def annotation_samples(self) -> list[Path]:
        """The annotation samples of the run (label files left out), sorted."""
        return sorted(p for p in self.annotation_dir.glob("sample*.jsonl") if not p.name.endswith(LABELS_SUFFIX))

    @property
    def listening_dir(self) -> Path:
        """The MOS listening test's folder (``annotation/listening``)."""
        return self.annotation_dir / LISTENING

    @property
    def listening_playlist(self) -> Path:
        """The listening test's playlist (``annotation/listening/playlist.jsonl``)."""
        return self.listening_dir / "playlist.jsonl"

    def listening_ratings(self, listener: str) -> Path:
        """One listener's ratings (``annotation/listening/<listener>.ratings.jsonl``)."""
        return self.listening_dir / f"{file_slug(listener)}.ratings.jsonl"

    # --- notebooks and pages ----------------------------------------------------------------------------------

    def notebook(self, stem: str) -> Path:
        """An executed notebook."""
        return self.path / f"{stem}.ipynb"

    @property
    def index_html(self) -> Path:
        """The landing page."""
        return self.path / INDEX_HTML

    @property
    def readme(self) -> Path:
        """The landing page's Markdown twin."""
        return self.path / README_MD

    def raw_files(self) -> list[str]:
        """The :data:`RAW_FILES` present, relative to the run folder."""
        return [name for name in RAW_FILES if (self.path / name).is_file()]


def is_batch_requests_file(path: Path) -> bool:
    """Whether a file beside the verdicts is a Batch API request file (never read as verdicts)."""
    return BATCH_REQUESTS in path.name
