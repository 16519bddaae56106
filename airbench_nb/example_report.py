"""The committed example report ``reports/example/``: what a run's landing page looks like, without running anything.

:func:`make_example` runs the pipeline's data, model, judge and analysis notebooks (01, 03, 04, 05) on the ``mini``
preset with the four baselines and the offline judges, then keeps only the small, audio-free part of the run folder
(the scores, the analysis tables and JSON, the figures) and writes the landing page over it. Absolute paths of the
temporary run folder are replaced by ``.``. ``make example`` calls it; a test regenerates it and checks it against the
committed copy with :func:`comparable` (timestamps, durations, versions and the commit aside; figures compared by
their pixels).

Recorded model answers. Whisper tiny.en (CTranslate2, int8) answers the transcription items and transcribes the spoken
answers back, and its output depends on the CPU's kernels: on one machine, forcing ``CT2_FORCE_CPU_ISA=GENERIC``
changes 5 of 24 transcripts (corpus WER 44.5% against 43.0%). The example therefore keeps what the real models said
under ``recorded/`` (the responses of :data:`RECORDED_MODELS`, the verdicts of :data:`RECORDED_JUDGES`) and replays
them: they are put into the run folder before it runs, the pipeline resumes them (their prompt and response hashes
still match) and everything downstream (scores, analyses, figures, the page) is computed again and must match exactly.
A run that did not reuse them (a changed prompt, a changed clip) raises; ``make example ARGS=--record`` records them
afresh. The live model is checked apart, with a tolerance (``tests/test_example_report.py``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airbench_nb.run_folder import (
    ANALYSIS,
    ANALYSIS_JSON,
    INDEX_HTML,
    LEADERBOARD,
    README_MD,
    RUN_JSON,
    SCORES_SUMMARY_CSV,
    SUMMARY_JSON,
    TABLES_CSV,
    RunFolder,
    file_slug,
)

logger = logging.getLogger(__name__)

EXAMPLE_DIR = Path("reports") / "example"
"""Where ``make example`` writes the example."""

PARAMETERS: dict[str, Any] = {
    "preset": "mini",
    "seed": 0,
    "build_options": {"controls_items_per_task": 0, "perturb_items_per_task": 0},
    "models": [
        "baseline:oracle",
        "baseline:random",
        "baseline:first",
        "baseline:dsp",
        "faster-whisper:tiny.en-bundled",
        "tts:espeak-ng",
        "onnx:yamnet-bundled",
        "faster-whisper:base-bundled",
    ],
}
"""Parameters of the example run (the notebooks' defaults otherwise: the four baselines, the rule and proxy judges).
The mini preset's audio-reliance controls and perturbed copies are left out, and with them notebook 03's
``baseline:text-prior`` (which only they tell apart from a guess): the demo shows them; the example stays the size it
was (its replayed real-model answers cover the items it always had)."""

NOTEBOOKS: tuple[str, ...] = ("01_build_data", "03_run_model", "04_judge", "05_analyze")
"""Notebooks the example runs (no tutorial, mixing or annotation: they add audio, not results)."""

KEPT_FILES: tuple[str, ...] = (
    RUN_JSON,
    SUMMARY_JSON,
    SCORES_SUMMARY_CSV,
    f"{ANALYSIS}/{ANALYSIS_JSON}",
    f"{ANALYSIS}/{LEADERBOARD}",
    f"{ANALYSIS}/{TABLES_CSV}",
)
"""Files of the run folder copied into the example (plus ``analysis/figures/*.png``)."""

RECORDED = "recorded"
"""Folder of the example holding the recorded answers of the real models (a run folder's ``responses/`` and
``verdicts/`` layout, only the recorded models' and judges' files)."""

RECORDED_MODELS: tuple[str, ...] = ("faster-whisper:tiny.en-bundled",)
"""Models of the example whose answers depend on the CPU (and are replayed from :data:`RECORDED`)."""

RECORDED_JUDGES: tuple[str, ...] = ("asr:faster-whisper:tiny.en-bundled",)
"""Judges of the example whose verdicts depend on the CPU (and are replayed from :data:`RECORDED`)."""

RUN_ID = "example"
"""Run id of the example's run (its page's title)."""

MARKER = ".airbench-example"
"""File marking a folder as an example written by :func:`make_example` (the only kind it replaces)."""

_VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b[0-9a-f]{40}(-dirty)?\b"), "<commit>"),
    (re.compile(r"\d+(\.\d+)? ?(s|min|h)\b"), "<duration>"),
]

_LONG_FLOAT = re.compile(r"-?\d+\.\d{7,}(?:[eE][-+]?\d+)?")
"""A number written with 7 or more decimals: compared within :data:`REL_TOL`. Statistics fitted by BLAS-backed code
(statsmodels' GLM, scipy's optimisers) and similarities from a text-embedding model (torch's kernels) differ in their
last digits from one CPU to another (Intel and AMD machines give ...5198 and ...5187 for the same interval; torch's
default kernel moves a caption similarity from 0.05453643 to 0.05453645, and the bootstrap bound of a mean similarity
from 0.0426541169 to 0.0426540731): a float written in full is not a thing that must not change. (Rounding both to 6
significant digits was not enough: the two values above round differently.)"""

REL_TOL = 1e-4
"""Relative difference below which two long numbers are the same: kernels move them by up to ~2e-6 relative; a change
in the fourth significant digit is a change."""

TINY = 1e-12
"""Absolute difference below which two long numbers are the same: a slope that is zero in exact arithmetic comes out
as 3.6e-19 on one machine and -1.0e-22 on another."""


@dataclass(frozen=True)
class Comparable:
    """A text file as :func:`comparable` reads it: the text with its long numbers taken out, and those numbers."""

    text: str
    """The text, volatile parts masked, each long number replaced by ``<float>``."""
    numbers: tuple[float, ...]
    """The long numbers, in order."""

    def __eq__(self, other: object) -> bool:
        """Same text, and each long number within :data:`REL_TOL` (or :data:`TINY`) of the other's."""
        if isinstance(other, str):
            other = _comparable_text(other)
        if not isinstance(other, Comparable):
            return NotImplemented
        if self.text != other.text or len(self.numbers) != len(other.numbers):
            return False
        pairs = zip(self.numbers, other.numbers, strict=True)
        return all(math.isclose(a, b, rel_tol=REL_TOL, abs_tol=TINY) for a, b in pairs)

    __hash__ = None  # type: ignore[assignment]  # compared with a tolerance: not hashable

    def __repr__(self) -> str:
        """The text with its numbers put back (what a failing test shows)."""
        numbers = iter(self.numbers)
        return re.sub("<float>", lambda _: repr(next(numbers)), self.text)


def _comparable_text(text: str) -> Comparable:
    numbers = tuple(float(m.group()) for m in _LONG_FLOAT.finditer(text))
    return Comparable(_LONG_FLOAT.sub("<float>", text), numbers)


@contextmanager
def _without_llm_judge() -> Iterator[None]:
    """Leave ``AIRBENCH_JUDGE`` out while the example runs: it must not depend on a server or a key.

    The bundled real models (:mod:`airbench_nb.weights`) are left out too: ``AIRBENCH_WEIGHTS`` points at an empty
    folder, so the example is the same whether this machine fetched them or not (the page says they were not run).
    """
    saved = os.environ.pop("AIRBENCH_JUDGE", None)
    saved_weights = os.environ.get("AIRBENCH_WEIGHTS")
    with tempfile.TemporaryDirectory(prefix="no-weights-") as empty:
        os.environ["AIRBENCH_WEIGHTS"] = empty
        try:
            yield
        finally:
            if saved is not None:
                os.environ["AIRBENCH_JUDGE"] = saved
            if saved_weights is None:
                os.environ.pop("AIRBENCH_WEIGHTS", None)
            else:
                os.environ["AIRBENCH_WEIGHTS"] = saved_weights


def recorded_files(run: RunFolder) -> list[Path]:
    """The files of ``run`` that hold answers of :data:`RECORDED_MODELS` and verdicts of :data:`RECORDED_JUDGES`."""
    files = []
    for model in RECORDED_MODELS:
        files += sorted(run.responses_dir.glob(f"{file_slug(model)}/*.jsonl"))
    for judge in RECORDED_JUDGES:
        files += sorted(run.verdicts_dir.glob(f"*/*.{file_slug(judge)}.jsonl"))
    return files


def _replay(recorded: RunFolder, run: RunFolder) -> dict[Path, bytes]:
    """Put the recorded answers into the run folder; the bytes each file must still have after the run."""
    placed = {}
    for source in recorded_files(recorded):
        relative = source.relative_to(recorded.path)
        target = run.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        placed[relative] = source.read_bytes()
    return placed


def _check_replayed(run: RunFolder, placed: dict[Path, bytes]) -> None:
    """Refuse an example whose run answered a recorded model or judge live instead of reusing the recording."""
    stale = [str(rel) for rel, data in placed.items() if (run.path / rel).read_bytes() != data]
    if stale:
        raise RuntimeError(
            f"the example run did not reuse the recorded answers in {', '.join(stale)} (a prompt or a clip changed); "
            "record them again: python -m airbench_nb.example_report --record"
        )


def make_example(
    out: str | Path = EXAMPLE_DIR,
    *,
    cache_dir: str | Path | None = None,
    record: bool = False,
    recorded: str | Path | None = None,
    reports_dir: str | Path | None = None,
) -> Path:
    """Run the example pipeline and write the example report folder.

    Args:
        out: The folder to (re)write; an existing one must be an earlier example (it holds :data:`MARKER`).
        cache_dir: Shared cache folder (built data) for the run.
        record: Run the real models live and record their answers (else replay the recorded answers, when there
            are any; an example without them is recorded).
        recorded: The folder of recorded answers to replay (default ``<out>/recorded``); the test that checks the
            committed example names the committed one while it writes a fresh example elsewhere.
        reports_dir: Keep the whole run folder (data, audio, responses) as ``<reports_dir>/example`` instead of in a
            temporary folder; that folder must not exist yet.

    Returns:
        ``out``.

    Raises:
        FileExistsError: When ``out`` exists and is not an example folder, or ``<reports_dir>/example`` exists.
        RuntimeError: When a notebook of the example run fails (its error is in the message), or the run did not
            reuse the recorded answers it was given.
    """
    from airbench_nb.pipeline import run_pipeline
    from airbench_nb.report_page import write_report_page

    out = Path(out)
    if out.exists() and not (out / MARKER).is_file():
        raise FileExistsError(f"{out} exists and is not an example folder (no {MARKER}); choose another folder")
    if reports_dir is not None and (Path(reports_dir) / RUN_ID).exists():
        raise FileExistsError(f"{Path(reports_dir) / RUN_ID} exists; give another folder to keep the example's run in")
    with tempfile.TemporaryDirectory(prefix="airbench-example-") as tmp, _without_llm_judge():
        reports = Path(tmp) if reports_dir is None else Path(reports_dir)
        run = RunFolder(reports / RUN_ID)
        placed = {} if record else _replay(RunFolder(Path(recorded) if recorded else out / RECORDED), run)
        info = run_pipeline(
            dict(PARAMETERS), notebooks=NOTEBOOKS, run_id=RUN_ID, reports_dir=reports, html=False, cache_dir=cache_dir
        )
        if info.status != "ok":
            failed = [f"{n.name}: {n.error}" for n in info.notebooks if n.status == "failed"]
            raise RuntimeError(f"the example run failed: {'; '.join(failed)}")
        _check_replayed(run, placed)
        example = RunFolder(out)
        if out.exists():
            shutil.rmtree(out)
        example.figures_dir.mkdir(parents=True)
        for source in recorded_files(run):  # as they are, or with this machine's paths left out when just recorded
            target = out / RECORDED / source.relative_to(run.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            text = source.read_text(encoding="utf-8")
            if source.relative_to(run.path) not in placed:
                text = text.replace(str(run.path.resolve()), ".").replace(sys.prefix, "<venv>")
            target.write_text(text, encoding="utf-8")
        absolute = str(run.path.resolve())
        for name in KEPT_FILES:
            source = run.path / name
            if source.is_file():
                text = source.read_text(encoding="utf-8").replace(absolute, ".")
                (out / name).write_text(text, encoding="utf-8")
        for figure in sorted(run.figures_dir.glob("*.png")):
            shutil.copyfile(figure, example.figures_dir / figure.name)
    written = json.loads(example.run_json.read_text(encoding="utf-8"))
    written["cache_dir"] = None
    example.run_json.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    (out / MARKER).write_text("written by airbench_nb.example_report.make_example (make example)\n", encoding="utf-8")
    write_report_page(out)
    logger.info("example report: %s", example.index_html)
    return out


def comparable(path: str | Path) -> Any:
    """What of an example file must not change between two runs of :func:`make_example`.

    Text files with timestamps, commits and durations masked; ``run.json`` without its times, versions, commit,
    platform and each notebook's input hashes (they cover versions and the kit's code); a PNG as its pixels (an
    ``(h, w, 4)`` uint8 array), since encoders may differ in bytes. A text file is a :class:`Comparable`: numbers
    written with 7 or more decimals are compared within a relative :data:`REL_TOL` (or an absolute :data:`TINY`),
    the rest exactly (:data:`_LONG_FLOAT`).
    """
    path = Path(path)
    if path.suffix == ".png":
        import matplotlib.image as mpimg
        import numpy as np

        return np.round(mpimg.imread(str(path)) * 255).astype("uint8")
    text = path.read_text(encoding="utf-8")
    if path.name == RUN_JSON:
        run = json.loads(text)
        for key in ("started", "ended", "versions", "git_commit", "platform"):
            run.pop(key, None)
        for nb in run.get("notebooks", []):
            for key in ("started", "ended", "duration_s", "input_hashes", "inputs_hash"):
                nb.pop(key, None)
        return run
    if path.name in (INDEX_HTML, README_MD):
        text = re.sub(r"<summary>Versions</summary>.*?</details>", "<versions>", text, flags=re.S)
        text = re.sub(r'<td class="num">[\d.]*</td>', "<seconds>", text)
    for pattern, mask in _VOLATILE:
        text = pattern.sub(mask, text)
    return _comparable_text(text)


def main() -> None:
    """``python -m airbench_nb.example_report [--record] [OUT]``: write the example (default ``reports/example``).

    ``--record`` runs the real models live and records their answers (see the module docstring); without it the
    recorded answers are replayed.
    """
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = sys.argv[1:]
    record = "--record" in args
    args = [a for a in args if a != "--record"]
    out = make_example(args[0] if args else EXAMPLE_DIR, record=record)
    print(f"example report: {RunFolder(out).index_html}")


if __name__ == "__main__":
    main()
