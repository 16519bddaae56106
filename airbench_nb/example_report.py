"""The committed example report ``reports/example/``: what a run's landing page looks like, without running anything.

:func:`make_example` runs the pipeline's data, model, judge and analysis notebooks (01, 03, 04, 05) on the ``mini``
preset with the four baselines and the offline judges, then keeps only the small, audio-free part of the run folder
(the scores, the analysis tables and JSON, the figures) and writes the landing page over it. Absolute paths of the
temporary run folder are replaced by ``.``. ``make example`` calls it; a test regenerates it and checks it against the
committed copy with :func:`comparable` (timestamps, durations, versions and the commit aside; figures compared by
their pixels).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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
)

logger = logging.getLogger(__name__)

EXAMPLE_DIR = Path("reports") / "example"
"""Where ``make example`` writes the example."""

PARAMETERS: dict[str, Any] = {"preset": "mini", "seed": 0}
"""Parameters of the example run (the notebooks' defaults otherwise: the four baselines, the rule and proxy judges)."""

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

MARKER = ".airbench-example"
"""File marking a folder as an example written by :func:`make_example` (the only kind it replaces)."""

_VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\b[0-9a-f]{40}(-dirty)?\b"), "<commit>"),
    (re.compile(r"\d+(\.\d+)? ?(s|min|h)\b"), "<duration>"),
]

_LONG_FLOAT = re.compile(r"-?\d+\.\d{7,}(?:[eE][-+]?\d+)?")
"""A number written with 7 or more decimals: compared to 6 significant digits. Statistics fitted by BLAS-backed code
(statsmodels' GLM, scipy's optimisers) differ in their last digits from one CPU to another (Intel and AMD machines
give ...5198 and ...5187 for the same interval): a float written in full is not a thing that must not change."""


TINY = 1e-12
"""A long number below this in magnitude is read as 0: a slope that is zero in exact arithmetic comes out as 3.6e-19 on
one machine and -1.0e-22 on another."""


def _six_digits(match: re.Match[str]) -> str:
    value = float(match.group())
    return "0" if abs(value) < TINY else f"{value:.6g}"


@contextmanager
def _without_llm_judge() -> Iterator[None]:
    """Leave ``AIRBENCH_JUDGE`` out while the example runs: it must not depend on a server or a key."""
    saved = os.environ.pop("AIRBENCH_JUDGE", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["AIRBENCH_JUDGE"] = saved


def make_example(out: str | Path = EXAMPLE_DIR, *, cache_dir: str | Path | None = None) -> Path:
    """Run the example pipeline and write the example report folder.

    Args:
        out: The folder to (re)write; an existing one must be an earlier example (it holds :data:`MARKER`).
        cache_dir: Shared cache folder (built data) for the run.

    Returns:
        ``out``.

    Raises:
        FileExistsError: When ``out`` exists and is not an example folder.
        RuntimeError: When a notebook of the example run fails (its error is in the message).
    """
    from airbench_nb.pipeline import run_pipeline
    from airbench_nb.report_page import write_report_page

    out = Path(out)
    if out.exists() and not (out / MARKER).is_file():
        raise FileExistsError(f"{out} exists and is not an example folder (no {MARKER}); choose another folder")
    with tempfile.TemporaryDirectory(prefix="airbench-example-") as tmp, _without_llm_judge():
        info = run_pipeline(
            dict(PARAMETERS), notebooks=NOTEBOOKS, run_id="example", reports_dir=tmp, html=False, cache_dir=cache_dir
        )
        if info.status != "ok":
            failed = [f"{n.name}: {n.error}" for n in info.notebooks if n.status == "failed"]
            raise RuntimeError(f"the example run failed: {'; '.join(failed)}")
        run = RunFolder(Path(tmp) / "example")
        example = RunFolder(out)
        if out.exists():
            shutil.rmtree(out)
        example.figures_dir.mkdir(parents=True)
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
    ``(h, w, 4)`` uint8 array), since encoders may differ in bytes. Numbers written with 7 or more decimals are compared
    to 6 significant digits, and as 0 below :data:`TINY` (:data:`_LONG_FLOAT`).
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
    return _LONG_FLOAT.sub(_six_digits, text)


def main() -> None:
    """``python -m airbench_nb.example_report [OUT]``: write the example (default ``reports/example``)."""
    import sys

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    out = make_example(sys.argv[1] if len(sys.argv) > 1 else EXAMPLE_DIR)
    print(f"example report: {RunFolder(out).index_html}")


if __name__ == "__main__":
    main()
