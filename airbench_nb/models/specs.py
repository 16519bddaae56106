"""Model spec strings: ``kind:rest`` split and checked before any backend is built."""

from __future__ import annotations

from pathlib import Path


class SpecError(ValueError):
    """A model spec string that names no known backend."""


def parse_spec(spec: str) -> tuple[str, str]:
    """Split ``kind:rest`` and check the kind.

    Raises:
        SpecError: For a spec without a known ``hf:``, ``openai:`` or ``baseline:`` prefix.
    """
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in {"hf", "openai", "baseline"} or not rest:
        raise SpecError(
            f"model spec {spec!r} not understood; use hf:<path or hub id>, openai:<model>[@<base_url>] "
            "or baseline:random|first|dsp|oracle"
        )
    return kind, rest


def check_hf_path(path: str) -> None:
    """Refuse an ``hf:`` path that names something on disk that is not a checkpoint folder.

    A path that exists, or that is written as one (``/...``, ``./...``, ``../...``, ``~...``), must be a folder
    holding ``config.json``; anything else is taken for a hub id and left to transformers.

    Raises:
        SpecError: In one line, for a file, a missing folder, or a folder without ``config.json``.
    """
    local = Path(path).expanduser()
    try:
        exists, is_file = local.exists(), local.is_file()
        has_config = (local / "config.json").is_file()
    except (OSError, ValueError) as exc:  # a name too long, an embedded NUL
        raise SpecError(f"hf:{path}: not a usable path ({type(exc).__name__})") from None
    if not exists and not path.startswith(("/", "./", "../", "~", ".\\", "..\\")):
        return
    if is_file:
        raise SpecError(f"hf:{path}: is a file; give the checkpoint's folder (the one holding config.json)")
    if not exists:
        raise SpecError(f"hf:{path}: no such folder")
    if not has_config:
        raise SpecError(f"hf:{path}: not a transformers checkpoint (no config.json in the folder)")
