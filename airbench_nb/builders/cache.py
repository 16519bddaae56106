"""A shared cache of built datasets, so that reruns and grids build each dataset once.

A build is fully determined by its key: the preset, the seed, the task list, the recipe files (their SHA-256,
:attr:`~airbench_nb.builders.core.Recipes.sha256`), the SNR-grid and rotation options, the source code of everything
that makes audio (the builder, the synthesizers, the mixer, audio I/O, records and manifests) and the espeak-ng
version. Equal keys give byte-identical manifests and audio, so the first run that needs a dataset builds it into
``<cache>/data/<preset>-seed<seed>-<hash>/`` and every later run with the same key reuses it; any change to a
recipe, an option or the code gives a new key and a new build. Builds run under a file lock (``fcntl.flock``), into a
``.partial`` folder renamed into place when complete, so that parallel runs of a grid build a dataset once and a
killed build never leaves a half-written entry behind.

The cache folder is ``cache_dir`` when given, else ``$AIRBENCH_CACHE``, else ``~/.cache/airbench-nb``. A run folder
links its ``data/`` to the entry (:func:`link_data`), so that its notebooks, HTML reports and audio players keep
working with relative paths while the report folder stays small.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from airbench_nb.builders.builder import BuildReport, build
from airbench_nb.builders.core import RECIPE_DIR, load_recipes
from airbench_nb.cache import CACHE_ENV, DATA_CACHE, cache_root  # noqa: F401 - re-exported: the data cache lives under it

logger = logging.getLogger(__name__)

KEY_FILE = "cache-key.json"
"""File in a cache entry holding its key (written last: an entry without it is incomplete)."""

_PACKAGE = Path(__file__).resolve().parents[1]
CODE_PATHS: tuple[str, ...] = ("builders", "synth", "mix.py", "audio.py", "records.py", "manifests.py")
"""Package paths (files or folders of ``.py`` files) whose source is part of the key."""


@lru_cache(maxsize=1)
def code_sha256() -> str:
    """SHA-256 over the source of the modules that make audio and manifests (paths and contents, sorted)."""
    digest = hashlib.sha256()
    files: list[Path] = []
    for name in CODE_PATHS:
        path = _PACKAGE / name
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    for file in sorted(files):
        digest.update(file.relative_to(_PACKAGE).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


@lru_cache(maxsize=1)
def espeak_version() -> str:
    """The first line of ``espeak-ng --version`` (speech audio depends on it), or ``"none"``."""
    try:
        out = subprocess.run(["espeak-ng", "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "none"
    return (out.stdout.strip().splitlines() or ["none"])[0]


def build_key(
    preset: str,
    seed: int = 0,
    *,
    tasks: Sequence[str] | None = None,
    recipe_dir: str | Path = RECIPE_DIR,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything a build's output depends on, as a JSON-able dict (its hash names the cache entry).

    Args:
        preset: Preset name.
        seed: Build seed.
        tasks: Task names to build (None: all; the order does not matter).
        recipe_dir: Folder of the recipe files (hashed by content, not by path).
        options: Other :func:`~airbench_nb.builders.build` options (``snr_grid``, ``snr_items_per_task``,
            ``circular_items_per_task``, ``sseu_utterances``, ``ugbench_items``); None values are left out.

    Raises:
        RecipeError: For a bad recipe folder.
    """
    return {
        "preset": preset,
        "seed": int(seed),
        "tasks": sorted(set(tasks)) if tasks else None,
        "recipes_sha256": load_recipes(recipe_dir).sha256,
        "options": {k: v for k, v in sorted((options or {}).items()) if v is not None},
        "code_sha256": code_sha256(),
        "espeak": espeak_version(),
    }


def key_digest(key: dict[str, Any]) -> str:
    """The first 16 hex digits of the SHA-256 of the key's canonical JSON."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


@dataclass
class CachedBuild:
    """A dataset from the cache."""

    path: Path
    """The cache entry (manifests, ``dataset.json``, ``audio/``)."""
    report: BuildReport
    """The build's report (re-read from the entry on a hit)."""
    hit: bool
    """True when the entry existed (nothing was built)."""
    key: dict[str, Any]
    """The key (see :func:`build_key`)."""


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _report_from_entry(path: Path, preset: str, seed: int, stored: dict[str, Any]) -> BuildReport:
    from airbench_nb.builders.sseu import SseuBuild
    from airbench_nb.builders.ugbench import UGBENCH_TASKS, UgbenchBuild
    from airbench_nb.manifests import read_manifest
    from airbench_nb.records import (
        CaptionItem,
        ChatItem,
        EventsItem,
        FoundationItem,
        JointItem,
        SceneItem,
        SpeechGenerationItem,
        TranscriptionItem,
        TranslationItem,
    )

    written = [i for i in read_manifest(path / "foundation.jsonl") if isinstance(i, FoundationItem)]
    chat = [i for i in read_manifest(path / "chat.jsonl") if isinstance(i, ChatItem)]
    reference = {
        kind: read_manifest(path / f"{kind}.jsonl") if (path / f"{kind}.jsonl").is_file() else []
        for kind in ("transcription", "scene", "events", "joint", "translation", "caption", "speech_generation")
    }
    sseu = SseuBuild(
        transcription=[i for i in reference["transcription"] if isinstance(i, TranscriptionItem)],
        scene=[i for i in reference["scene"] if isinstance(i, SceneItem)],
        events=[i for i in reference["events"] if isinstance(i, EventsItem)],
        joint=[i for i in reference["joint"] if isinstance(i, JointItem)],
        failures=[f for f in stored.get("failures", []) if f.get("task") == "sseu"],
        snr_grid_db=list(stored.get("sseu_snr_grid_db", [])),
        utterances=int(stored.get("sseu_utterances", 0)),
    )
    ugbench = UgbenchBuild(
        translation=[i for i in reference["translation"] if isinstance(i, TranslationItem)],
        caption=[i for i in reference["caption"] if isinstance(i, CaptionItem)],
        speech_generation=[i for i in reference["speech_generation"] if isinstance(i, SpeechGenerationItem)],
        failures=[f for f in stored.get("failures", []) if f.get("task") in UGBENCH_TASKS],
        requested={str(k): int(v) for k, v in stored.get("ugbench_requested", {}).items()},
    )
    return BuildReport(
        out=path,
        preset=preset,
        seed=seed,
        foundation=[i for i in written if "clean_uid" not in i.meta and "rotation_of" not in i.meta],
        chat=chat,
        failures=list(stored.get("failures", [])),
        seconds=float(stored.get("seconds", 0.0)),
        graded=[i for i in written if "clean_uid" in i.meta],
        snr_grid=list(stored.get("snr_grid", [])),
        rotated=[i for i in written if "rotation_of" in i.meta],
        sseu=sseu,
        ugbench=ugbench,
    )


def cached_build(
    preset: str = "mini",
    seed: int = 0,
    *,
    tasks: Sequence[str] | None = None,
    recipe_dir: str | Path = RECIPE_DIR,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    **options: Any,
) -> CachedBuild:
    """The dataset of (preset, seed, tasks, recipes, options, code) from the cache, built there first if missing.

    Args:
        preset: Preset name (see :func:`~airbench_nb.builders.build`).
        seed: Build seed.
        tasks: Task names (None: all buildable).
        recipe_dir: Recipe folder.
        cache_dir: Cache folder (see :func:`cache_root`).
        progress: Show the build's progress bar.
        **options: ``snr_grid``, ``snr_items_per_task``, ``circular_items_per_task``, ``sseu_utterances``,
            ``ugbench_items`` as :func:`build` takes them.

    Returns:
        A :class:`CachedBuild`.

    Raises:
        RecipeError, ValueError: As :func:`build` (nothing is cached then).
    """
    key = build_key(preset, seed, tasks=tasks, recipe_dir=recipe_dir, options=options)
    root = cache_root(cache_dir) / DATA_CACHE
    name = f"{preset}-seed{seed}-{key_digest(key)}"
    entry = root / name
    with _locked(root / f"{name}.lock"):
        key_file = entry / KEY_FILE
        if key_file.is_file():
            try:
                stored = json.loads(key_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                stored = {}
            if stored.get("key") == key:
                logger.info("data cache hit: %s", entry)
                return CachedBuild(entry, _report_from_entry(entry, preset, seed, stored), True, key)
        if entry.exists():  # incomplete or foreign: rebuilt (the lock guarantees no other build is writing it)
            logger.warning("data cache entry %s is incomplete; rebuilding it", entry)
            shutil.rmtree(entry)
        partial = root / f"{name}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        t0 = time.perf_counter()
        try:
            report = build(
                preset, seed=seed, out=partial, tasks=tasks, recipe_dir=recipe_dir, progress=progress, **options
            )
            stored = {
                "key": key,
                "seconds": report.seconds,
                "failures": report.failures,
                "snr_grid": report.snr_grid,
                "sseu_snr_grid_db": report.sseu.snr_grid_db,
                "sseu_utterances": report.sseu.utterances,
                "ugbench_requested": report.ugbench.requested,
                "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            (partial / KEY_FILE).write_text(json.dumps(stored, indent=2, default=str) + "\n", encoding="utf-8")
            os.replace(partial, entry)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        report.out = entry
        logger.info("data cache miss: built %s in %.1f s", entry, time.perf_counter() - t0)
        return CachedBuild(entry, report, False, key)


def link_data(entry: str | Path, link: str | Path) -> Path:
    """Make ``link`` (a run's ``data/``) a symbolic link to the cache entry ``entry``.

    An existing link is replaced. A real folder at ``link`` (a run made before the cache, or with ``out_dir``) is
    never deleted: :class:`FileExistsError` is raised instead.

    Returns:
        ``link``.
    """
    link, entry = Path(link), Path(entry).resolve()
    if link.is_symlink():
        link.unlink()
    elif link.exists():
        raise FileExistsError(f"{link} is a real folder, not a link to the data cache; remove it or set out_dir")
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(entry, target_is_directory=True)
    return link


def build_or_reuse(
    preset: str,
    seed: int,
    out: str | Path,
    *,
    tasks: Sequence[str] | None = None,
    use_cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: bool = True,
) -> tuple[BuildReport, str]:
    """Build a dataset for ``out``: from the cache with ``out`` linked to it, or straight into ``out``.

    The cache is used when ``use_cache`` is set and ``out`` is not a real folder already (a folder written before
    the cache existed, or on purpose, is rebuilt in place as before and never deleted).

    Args:
        preset: Preset name.
        seed: Build seed.
        out: Where the notebooks expect the data (a run's ``data/``).
        tasks: Task names (None: all).
        use_cache: Reuse or fill the shared cache.
        cache_dir: Cache folder (see :func:`cache_root`).
        progress: Show the build's progress bar.

    Returns:
        The build report and one line saying what happened (reused, built into the cache, or built in place).
    """
    out = Path(out)
    if use_cache and (out.is_symlink() or not out.exists()):
        cached = cached_build(preset, seed, tasks=tasks, cache_dir=cache_dir, progress=progress)
        link_data(cached.path, out)
        cached.report.out = out
        verb = "reused the cached dataset" if cached.hit else f"built in {cached.report.seconds} s into the cache at"
        return cached.report, f"{verb} {cached.path} ({out} links to it)"
    why = "the cache is off" if not use_cache else f"{out} is a real folder, not a link to the cache"
    report = build(preset, seed=seed, out=out, tasks=tasks, progress=progress)
    return report, f"built in {report.seconds} s into {out} ({why})"
