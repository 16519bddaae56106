"""The kit's shared cache folder: built datasets (``data/``) and judge calls (``judge_cache.sqlite``).

Ground level: every stage that caches asks here where the cache is, so that the data builder, the judges, the
pipeline and the grid agree. The folder is ``cache_dir`` when given, else ``$AIRBENCH_CACHE``, else
``~/.cache/airbench-nb``.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "AIRBENCH_CACHE"
"""Environment variable naming the cache folder."""

DATA_CACHE = "data"
"""Folder of built datasets inside the cache folder."""

JUDGE_CACHE = "judge_cache.sqlite"
"""File name of the judge calls' SQLite cache inside the cache folder."""


def cache_root(cache_dir: str | Path | None = None) -> Path:
    """The cache folder: ``cache_dir``, else ``$AIRBENCH_CACHE``, else ``~/.cache/airbench-nb``."""
    if cache_dir:
        return Path(cache_dir).expanduser()
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "airbench-nb"


def judge_cache_path(cache_dir: str | Path | None = None) -> Path:
    """The judge calls' SQLite cache in the cache folder."""
    return cache_root(cache_dir) / JUDGE_CACHE
