"""A shared cache of built datasets, so that reruns and grids build each dataset once.

A build is fully determined by its key: the preset, the seed, the task list, the recipe files (their SHA-256,
:attr:`~airbench_nb.builders.core.Recipes.sha256`), the SNR-grid and rotation options, the source code of everything
that makes audio (the builder, the synthesizers, the mixer, audio I/O, records and manifests) and the espeak-ng
version. Equal keys give byte-identical manifests and audio, so the first run that needs a dataset builds it into
``<cache>/data/<preset>-seed<seed>-<hash>/`` and every later run with the same key reuses it; any change to a
recipe, an option or the code gives a new key and a new build. Builds run under a file lock (``fcntl.flock``), into a
``.partial`` folder renamed into place when complete, so that parallel runs of a grid build a dataset once and a
killed build never leaves a half-written entry behind.

What is reused is verified first. When an entry is written, its key file records every file's size, modification
time (ns) and SHA-256. On a hit the manifests, ``dataset.json`` and every other non-audio file are hashed again;
the audio files are checked by size and modification time (a file whose time differs, such as a copy, is hashed), or
all hashed with ``verify="full"`` (``AIRBENCH_VERIFY_CACHE=full``). On the mini preset (990 clips, 108 MB) the
default check takes about 5 ms and the full one about 0.25 s with the files in the page cache. A file missing,
resized or hashing differently makes the entry be rebuilt, with one warning naming the first file at fault. An entry
that is a symbolic link, leads outside the cache folder, or holds a recorded file that is a link or leads out of the
entry is refused (:class:`CacheEntryError`, one line), never followed, deleted or rebuilt over: someone put it there.
The check guards against files swapped or edited by mistake or by another program; whoever can rewrite the key file
can rewrite what it records.

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
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from airbench_nb.builders.builder import BuildReport, build
from airbench_nb.builders.core import RECIPE_DIR, load_recipes
from airbench_nb.cache import CACHE_ENV, DATA_CACHE, cache_root  # noqa: F401 - re-exported: the data cache lives under it

logger = logging.getLogger(__name__)

KEY_FILE = "cache-key.json"
"""File in a cache entry holding its key (written last: an entry without it is incomplete)."""

VERIFY_ENV = "AIRBENCH_VERIFY_CACHE"
"""Environment variable choosing how a cache hit is verified when ``verify`` is not given: ``stat`` or ``full``."""

Verify = Literal["stat", "full"]
"""How the audio of a cache hit is verified: ``stat`` (sizes and modification times; a file whose time differs is
hashed) or ``full`` (every file's SHA-256). Manifests and other non-audio files are always hashed."""

_AUDIO_SUFFIXES = (".wav", ".flac", ".mp3")


class CacheEntryError(ValueError):
    """A cache entry that is a link or leads outside the cache folder: refused (never followed, deleted or rebuilt)."""


_PACKAGE = Path(__file__).resolve().parents[1]
CODE_PATHS: tuple[str, ...] = ("builders", "synth", "perturb", "mix.py", "audio.py", "records", "manifests.py")
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


def plugin_parts_sha256() -> dict[str, str]:
    """Per registered builder part defined outside the kit (a plugin's), the SHA-256 of its module's source.

    The kit's own parts are covered by :func:`code_sha256`; a plugin's part changes what a build makes when its code
    changes, so its source is part of the key too (a part whose source cannot be read is keyed by its class name).
    """
    import inspect

    from airbench_nb.builders.parts import PARTS

    out: dict[str, str] = {}
    for name, part in PARTS.items():
        module = type(part).__module__
        if module == "airbench_nb" or module.startswith("airbench_nb."):
            continue
        try:
            source = inspect.getsource(sys.modules[module])
        except (KeyError, OSError, TypeError):
            source = f"{module}.{type(part).__qualname__}"
        out[name] = hashlib.sha256(source.encode()).hexdigest()
    return out


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
            ``circular_items_per_task``, ``sseu_utterances``, ``ugbench_items``, ``tiered_clips_per_class``); None
            values are left out.

    Raises:
        RecipeError: For a bad recipe folder.
    """
    plugins = plugin_parts_sha256()
    return {
        "preset": preset,
        "seed": int(seed),
        "tasks": sorted(set(tasks)) if tasks else None,
        "recipes_sha256": load_recipes(recipe_dir).sha256,
        "options": {k: v for k, v in sorted((options or {}).items()) if v is not None},
        "code_sha256": code_sha256(),
        "espeak": espeak_version(),
        **({"plugin_parts": plugins} if plugins else {}),  # the kit's own builds keep their keys
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
    checked: str = ""
    """What was verified before reusing the entry (empty on a miss: it was just built)."""


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _inventory(entry: Path) -> dict[str, dict[str, Any]]:
    """Size, modification time (ns) and SHA-256 of every file in a freshly built entry, by relative path."""
    from airbench_nb.audio import sha256_file

    files: dict[str, dict[str, Any]] = {}
    for path in sorted(entry.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != KEY_FILE:
            info = path.stat()
            files[path.relative_to(entry).as_posix()] = {
                "size": info.st_size,
                "mtime_ns": info.st_mtime_ns,
                "sha256": sha256_file(path),
            }
    return files


def resolve_verify(verify: Verify | None) -> Verify:
    """``verify``, else :data:`VERIFY_ENV`, else ``stat``.

    Raises:
        ValueError: For another value (naming where it came from).
    """
    chosen = verify if verify is not None else (os.environ.get(VERIFY_ENV) or "stat")
    if chosen not in ("stat", "full"):
        source = "verify" if verify is not None else VERIFY_ENV
        raise ValueError(f"{source}={chosen!r}: the data cache is verified by 'stat' (sizes and times) or 'full'")
    return chosen  # type: ignore[return-value]


def _refuse_links(entry: Path, root: Path) -> None:
    """Refuse an entry that is a link or leads outside ``root`` (:class:`CacheEntryError`)."""
    if entry.is_symlink() or not entry.resolve().is_relative_to(root.resolve()):
        raise CacheEntryError(
            f"data cache entry {entry} is a link to {entry.resolve()}, not a folder the cache wrote: refused "
            "(remove it to rebuild)"
        )


def verify_entry(entry: Path, files: dict[str, dict[str, Any]], verify: Verify = "stat") -> tuple[str | None, str]:
    """Check a cache entry against the inventory written with it.

    Args:
        entry: The entry (a real folder inside the cache).
        files: Its recorded inventory (relative path: ``size``, ``mtime_ns``, ``sha256``).
        verify: ``stat`` or ``full`` (see :data:`Verify`).

    Returns:
        ``(problem, checked)``: the first mismatch (``"audio/x.wav: SHA-256 differs"``, with the number of files at
        fault), or None; and what was checked, in words.

    Raises:
        CacheEntryError: When a recorded file is a link or leads outside the entry.
    """
    from airbench_nb.audio import sha256_file

    base = entry.resolve()
    bad: list[str] = []
    hashed = 0
    for relative, want in files.items():
        path = entry / relative
        if path.is_symlink() or not path.resolve().is_relative_to(base):
            raise CacheEntryError(
                f"data cache entry {entry}: {relative} is a link to {path.resolve()}, not a file the cache wrote: "
                "refused (remove the entry to rebuild)"
            )
        try:
            info = path.stat()
        except OSError:
            bad.append(f"{relative}: missing")
            continue
        if info.st_size != want["size"]:
            bad.append(f"{relative}: {info.st_size} bytes, {want['size']} written")
            continue
        audio = path.suffix.lower() in _AUDIO_SUFFIXES
        if verify == "full" or not audio or info.st_mtime_ns != want["mtime_ns"]:
            hashed += 1
            if sha256_file(path) != want["sha256"]:
                bad.append(f"{relative}: SHA-256 differs from the one written")
    checked = f"verified {len(files)} files: {hashed} by SHA-256, {len(files) - hashed} audio by size and time"
    if bad:
        return f"{bad[0]}{f' (and {len(bad) - 1} more file(s))' if len(bad) > 1 else ''}", checked
    return None, checked


def _report_from_entry(path: Path, preset: str, seed: int, stored: dict[str, Any]) -> BuildReport:
    """The build report of a verified entry: every manifest's items by kind, each part reloading its own."""
    from airbench_nb.builders.sseu import SseuBuild
    from airbench_nb.builders.tiered import TieredBuild
    from airbench_nb.builders.ugbench import UgbenchBuild
    from airbench_nb.manifests import read_manifest
    from airbench_nb.records import ITEM_KINDS

    items: dict[str, list[Any]] = {
        kind: read_manifest(path / f"{kind}.jsonl") for kind in ITEM_KINDS if (path / f"{kind}.jsonl").is_file()
    }
    written = items.get("foundation", [])
    return BuildReport(
        out=path,
        preset=preset,
        seed=seed,
        foundation=[i for i in written if "clean_uid" not in i.meta and "rotation_of" not in i.meta],
        chat=list(items.get("chat", [])),
        failures=list(stored.get("failures", [])),
        seconds=float(stored.get("seconds", 0.0)),
        graded=[i for i in written if "clean_uid" in i.meta],
        snr_grid=list(stored.get("snr_grid", [])),
        rotated=[i for i in written if "rotation_of" in i.meta],
        sseu=SseuBuild.reloaded(items, stored),
        ugbench=UgbenchBuild.reloaded(items, stored),
        tiered=TieredBuild.reloaded(items, stored),
    )


def cached_build(
    preset: str = "mini",
    seed: int = 0,
    *,
    tasks: Sequence[str] | None = None,
    recipe_dir: str | Path = RECIPE_DIR,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    verify: Verify | None = None,
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
        verify: How a hit's audio is verified (:data:`Verify`); None: :data:`VERIFY_ENV`, else ``stat``.
        **options: ``snr_grid``, ``snr_items_per_task``, ``circular_items_per_task``, ``sseu_utterances``,
            ``ugbench_items``, ``options`` (any part's, by name) as :func:`build` takes them.

    Returns:
        A :class:`CachedBuild`.

    Raises:
        RecipeError, ValueError: As :func:`build` (nothing is cached then).
        CacheEntryError: When the entry is a link, leads outside the cache folder or holds a link (nothing is built
            or deleted).
    """
    verify = resolve_verify(verify)
    key = build_key(preset, seed, tasks=tasks, recipe_dir=recipe_dir, options=options)
    root = cache_root(cache_dir) / DATA_CACHE
    name = f"{preset}-seed{seed}-{key_digest(key)}"
    entry = root / name
    with _locked(root / f"{name}.lock"):
        if entry.is_symlink() or entry.exists():
            _refuse_links(entry, root)
        key_file = entry / KEY_FILE
        why = "is incomplete"
        if key_file.is_file():
            try:
                stored = json.loads(key_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                stored = {}
            if stored.get("key") == key and isinstance(stored.get("files"), dict):
                problem, checked = verify_entry(entry, stored["files"], verify)
                if problem is None:
                    logger.info("data cache hit: %s (%s)", entry, checked)
                    report = _report_from_entry(entry, preset, seed, stored)
                    return CachedBuild(entry, report, True, key, checked)
                why = f"does not hold what was written ({problem})"
        if entry.exists():  # incomplete, changed or foreign: rebuilt (the lock guarantees no other build writes it)
            logger.warning("data cache entry %s %s; rebuilding it", entry, why)
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
                **report.sseu.cache_fields(),
                **report.ugbench.cache_fields(),
                **report.tiered.cache_fields(),
                "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "files": _inventory(partial),
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
    verify: Verify | None = None,
    options: Mapping[str, Any] | None = None,
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
        verify: How a cache hit's audio is verified (see :func:`cached_build`).
        options: Options of the builder parts over the preset's (``build(options=...)``; part of the cache key).

    Returns:
        The build report and one line saying what happened (reused, and what was verified; built into the cache; or
        built in place).

    Raises:
        CacheEntryError: As :func:`cached_build`.
    """
    out = Path(out)
    if use_cache and (out.is_symlink() or not out.exists()):
        given = {"options": dict(options)} if options else {}  # an empty one keeps the key of a build without
        cached = cached_build(preset, seed, tasks=tasks, cache_dir=cache_dir, progress=progress, verify=verify, **given)
        link_data(cached.path, out)
        cached.report.out = out
        if cached.hit:
            return cached.report, f"reused the cached dataset {cached.path} ({cached.checked}; {out} links to it)"
        return cached.report, f"built in {cached.report.seconds} s into the cache at {cached.path} ({out} links to it)"
    why = "the cache is off" if not use_cache else f"{out} is a real folder, not a link to the cache"
    report = build(preset, seed=seed, out=out, tasks=tasks, progress=progress, options=options)
    return report, f"built in {report.seconds} s into {out} ({why})"
