"""Shared fixtures: a seeded rng, and a release in the official AIR-Bench layout built by the tests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Every record file a test reads is read both ways (pydantic straight from the JSON text, and the checking reader),
# failing on any difference (airbench_nb.manifests.VERIFY_FAST_READ), and every plain PCM wav probed is also probed
# through the decoders (airbench_nb.audio.VERIFY_FAST_PROBE); notebooks run by papermill inherit it.
os.environ.setdefault("AIRBENCH_NB_VERIFY_FAST_READ", "1")
# The shared cache of built data, judge calls and embeddings (airbench_nb.cache): one fresh folder per test session,
# so that tests never read or fill the user's ~/.cache/airbench-nb, and notebooks run by papermill inherit it. The
# pytest-xdist workers of one session share it (their run id names it): a dataset one worker built is a cache hit
# for the other (the cache is safe across processes: builds take a file lock).
_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")
if _RUN:
    _SHARED = Path(tempfile.gettempdir()) / f"airbench-cache-{_RUN}"
    _SHARED.mkdir(exist_ok=True)
    os.environ["AIRBENCH_CACHE"] = str(_SHARED)
else:
    os.environ["AIRBENCH_CACHE"] = tempfile.mkdtemp(prefix="airbench-cache-")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def official_release(tmp_path_factory: pytest.TempPathFactory):
    """A fresh sample release (official layout, with its defects) and the counts an import must give."""
    from airbench_nb.examples import write_official_sample

    root = tmp_path_factory.mktemp("release")
    expected = write_official_sample(root)
    return root, expected


@pytest.fixture(scope="session")
def imported(official_release, tmp_path_factory: pytest.TempPathFactory):
    """The sample release imported once for the session: (root, out, report, expected)."""
    from airbench_nb.official import import_official

    root, expected = official_release
    out = tmp_path_factory.mktemp("manifests")
    report = import_official(root, out)
    return root, out, report, expected


HEAVY_FIRST: tuple[str, ...] = (
    "test_grid.py",
    "test_example_report.py",
    "test_rerun.py",
    "test_build.py",
    "test_pipeline_e2e.py",
    "test_pipeline.py",
    "test_annotate.py",
    "test_import_choice_qa.py",
    "test_analysis_report.py",
    "test_widgets_in_lab.py",
    "test_analysis_multi.py",
    "test_resume.py",
    "test_escaping.py",
    "test_hostile.py",
    "test_nb_01_build_data.py",
    "test_judge.py",
    "test_sseu_whisper.py",
    "test_faults.py",
    "test_build_snr.py",
    "test_listening_in_lab.py",
    "test_models_multi.py",
    "test_analysis_compare.py",
    "test_asr.py",
    "test_models_hf.py",
    "test_adapters.py",
    "test_injection.py",
    "test_listening.py",
    "test_speech_output.py",
)
"""Test files that take minutes (grids, the example, pipelines) or tens of seconds (JupyterLab in chromium, notebook
05, Whisper), longest first (as measured with ``--durations``): collected first, and handed to `make test`'s workers in
that order (pytest-xdist, ``--dist loadfile --no-loadscope-reorder``: by default xdist sorts files by their number of
tests, which sent the example's three minutes of three tests last and left one worker running it alone), so that the
workers start them early and finish together. The rest follow in pytest's order, the tutorial's cells last."""


def pytest_configure(config: pytest.Config) -> None:
    """Before pytest-xdist's workers start: compile pYIN's numba functions into their on-disk cache, once.

    numba caches librosa's JIT functions beside their sources in site-packages. Two workers compiling and writing one
    entry at once on a fresh install left a half-written entry that the other loaded, and pyin segfaulted (seen once
    from a clean clone); giving each worker a cache of its own made each compile for about 40 s. ``make setup``
    compiles them (:func:`airbench_nb.models.pyin.warm_up`); here the controller makes sure of it (2 to 4 s when
    warm), and the workers and their notebooks only read the cache.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    from airbench_nb.models.pyin import warm_up

    warm_up()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Heavy files first; skip `gpu` tests without CUDA and `api` tests unless a key is set and paid calls are
    asked for."""
    api_ok = bool(os.environ.get("OPENAI_API_KEY")) and os.environ.get("AIRBENCH_RUN_API_TESTS") == "1"
    try:
        import torch

        gpu_ok = torch.cuda.is_available()
    except ImportError:
        gpu_ok = False
    rank = {name: k for k, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).name, len(rank)))  # stable: files keep their order
    for item in items:
        if "api" in item.keywords and not api_ok:
            item.add_marker(pytest.mark.skip(reason="paid API test: set OPENAI_API_KEY and AIRBENCH_RUN_API_TESTS=1"))
        if "gpu" in item.keywords and not gpu_ok:
            item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU"))
