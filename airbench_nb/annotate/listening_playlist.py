"""The MOS listening test's playlist: a balanced, blind, seeded list of (clip, system) pairs for each listener.

**Population.** Every spoken answer of the run: the latest response per (model, item) whose
:attr:`~airbench_nb.records.Response.audio` is set, whose item is in the run (its own audio usable), and whose file
(:meth:`~airbench_nb.run_folder.RunFolder.response_audio_path`) exists, is not empty and still has the SHA-256 the
response recorded. What is left out is counted by reason (:attr:`PlaylistReport.excluded`).

**Balanced.** Each system (model) gets ``clips_per_system`` items. Items that every system answered aloud are taken
first, in the order of SHA-256(seed, uid), so every system speaks the same items; when fewer are shared, each system
fills up from its own other items (``shared_items`` says how many are common). Every listener rates every
(item, system) pair of the draw, a *stimulus*.

**Blind.** A system is named by an opaque id (``sys-`` and 6 hex digits of SHA-256(seed, model)), a stimulus by
another; the model spec (the key) is kept in the playlist file for the analysis and never shown by the tool, which
shows only the position and the text asked for.

**Order and repeats.** Each listener (``L1`` .. ``LN``) gets the stimuli in an order of their own (a permutation drawn
from a generator seeded with SHA-256(seed, listener)), then ``repeats`` stimuli from the first half of that order are
presented a second time later on (entry id ``<stimulus>~2``, ``repeat`` true, never adjacent when the list has 3 or
more stimuli): consistency checks that the analysis reads apart from the MOS. The same run, seed and parameters give
the same playlist whatever the order of the files.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.annotate.sample import _digest, read_keyed, write_once
from airbench_nb.records import AnyItem, ListeningEntry, Response
from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

REASONS: tuple[str, ...] = ("item_not_in_run", "error_response", "audio_missing", "audio_changed", "audio_empty")
"""Why a spoken answer is left out of the playlist (counted in :attr:`PlaylistReport.excluded`)."""


@dataclass
class PlaylistReport:
    """What :func:`draw_playlist` drew, and what it left out."""

    entries: list[ListeningEntry]
    """Every presentation, by listener then position."""
    listeners: list[str]
    """The listener slots (``L1`` ..)."""
    systems: dict[str, str]
    """``{system id: model spec}`` (the blinding key)."""
    items: dict[str, list[str]]
    """``{system id: uids of the items drawn}``."""
    shared_items: int
    """Items drawn for every system (the rest were filled up per system)."""
    clips_per_system: int
    """Items asked for per system."""
    repeats: int
    """Repeated presentations per listener."""
    seed: int
    """Seed of the playlist."""
    spoken_answers: int
    """Usable spoken answers in the run (the population)."""
    excluded: dict[str, int] = field(default_factory=dict)
    """Spoken answers left out, by reason (:data:`REASONS`)."""
    path: Path | None = None
    """Where the playlist was written (None when only drawn)."""

    def rows(self) -> list[dict[str, str | int]]:
        """One row per system: ``system_id, model, clips, shared`` (for the experimenter, not the listeners)."""
        return [
            {"system_id": sid, "model": model, "clips": len(self.items[sid]), "shared": self.shared_items}
            for sid, model in self.systems.items()
        ]

    def summary(self) -> str:
        """One line: stimuli, listeners, presentations, repeats and what was left out."""
        stimuli = sum(len(v) for v in self.items.values())
        left_out = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in self.excluded.items() if v) or "nothing"
        return (
            f"{stimuli} stimuli ({len(self.systems)} systems x up to {self.clips_per_system} items, "
            f"{self.shared_items} shared) for {len(self.listeners)} listeners, {len(self.entries)} presentations "
            f"({self.repeats} repeated per listener); {self.spoken_answers} spoken answers, left out: {left_out}"
        )


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def spoken_answers(run_dir: str | Path, models: Sequence[str] | None = None) -> tuple[dict[str, dict[str, Any]], dict]:
    """The run's usable spoken answers and the count of those left out.

    Args:
        run_dir: The run folder.
        models: Model specs to keep (default all).

    Returns:
        ``({model: {uid: (item, response)}}, {reason: count})``.

    Raises:
        FileNotFoundError: When the run folder holds no manifest.
    """
    from airbench_nb.analysis.data import load_run

    run = load_run(run_dir, models=models)
    folder = RunFolder(Path(run_dir))
    excluded = dict.fromkeys(REASONS, 0)
    found: dict[str, dict[str, Any]] = {}
    for model in run.models:
        for uid, response in sorted(run.responses[model].items()):
            if response.audio is None:
                continue
            item = run.items.get(uid)
            reason = _why_unusable(folder, model, response, item)
            if reason is not None:
                excluded[reason] += 1
                logger.warning("listening: %s's spoken answer to %s left out (%s)", model, uid, reason)
                continue
            found.setdefault(model, {})[uid] = (item, response)
    return found, excluded


def _why_unusable(folder: RunFolder, model: str, response: Response, item: Any) -> str | None:
    audio = response.audio
    assert audio is not None
    if item is None:
        return "item_not_in_run"
    if response.error is not None:
        return "error_response"
    try:
        path = folder.response_audio_path(model, audio.path)
    except ValueError:
        return "audio_missing"
    if not path.is_file():
        return "audio_missing"
    if path.stat().st_size == 0 or audio.duration_s <= 0:
        return "audio_empty"
    if _file_sha256(path) != audio.sha256:
        return "audio_changed"
    return None


def _prompt(item: AnyItem) -> tuple[str, str]:
    text = item.text_to_speak
    if text is not None:
        return text, "text"
    return item.question, "question"


def _choose_items(answers: dict[str, dict[str, Any]], k: int, seed: int) -> tuple[dict[str, list[str]], int]:
    """``k`` uids per model: those every model answered first (seeded order), then each model's own."""
    order = sorted({uid for by_uid in answers.values() for uid in by_uid}, key=lambda u: _digest(seed, "item", u))
    shared = [u for u in order if all(u in by_uid for by_uid in answers.values())][:k]
    chosen = {}
    for model, by_uid in answers.items():
        own = [u for u in order if u in by_uid and u not in shared]
        chosen[model] = shared + own[: k - len(shared)]
    return chosen, len(shared)


def _listener_order(stimuli: list[str], listener: str, repeats: int, seed: int) -> list[tuple[str, bool]]:
    """A listener's presentations: ``(stimulus id, is repeat)`` in order (see the module docstring)."""
    rng = np.random.default_rng(int(_digest(seed, "listener", listener)[:16], 16))
    order = [stimuli[i] for i in rng.permutation(len(stimuli))]
    n = len(order)
    first_half = max(1, (n + 1) // 2)
    picked = sorted(rng.choice(first_half, size=min(repeats, first_half), replace=False).tolist())
    keyed: list[tuple[float, str, bool]] = [(float(i), s, False) for i, s in enumerate(order)]
    for i in picked:
        low = min(i + 1.5, n - 0.5)  # at least one other clip in between when there is room
        keyed.append((float(rng.uniform(low, n - 0.5)), order[i], True))
    keyed.sort(key=lambda t: t[0])
    return [(s, repeat) for _, s, repeat in keyed]


def draw_playlist(
    run_dir: str | Path,
    *,
    listeners: int = 10,
    clips_per_system: int = 20,
    repeats: int = 2,
    seed: int = 0,
    models: Sequence[str] | None = None,
    write: bool = False,
) -> PlaylistReport:
    """Draw a balanced, blind, seeded playlist of the run's spoken answers (``airbench-nb sample-listening``).

    Args:
        run_dir: The run folder (responses with audio under ``responses/<model>/audio/``).
        listeners: Listener slots (``L1`` .. ``LN``); each rates every stimulus.
        clips_per_system: Items per system (fewer when a system answered fewer aloud).
        repeats: Stimuli presented twice to each listener (consistency checks).
        seed: Seed of the draw, the systems' ids and every listener's order.
        models: Model specs to draw from (default every model with a spoken answer).
        write: Also write it to the run's playlist file (:meth:`RunFolder.listening_playlist`).

    Returns:
        The :class:`PlaylistReport` (``path`` set when written).

    Raises:
        ValueError: For a bad parameter, or when the run holds no usable spoken answer (the reasons counted).
        FileNotFoundError: When the run folder holds no manifest.
        FileExistsError: When writing, if the run already holds a different playlist.
    """
    for name, value, least in (("listeners", listeners, 1), ("clips_per_system", clips_per_system, 1)):
        if value < least:
            raise ValueError(f"{name} must be {least} or more, got {value}")
    if repeats < 0:
        raise ValueError(f"repeats must be 0 or more, got {repeats}")
    answers, excluded = spoken_answers(run_dir, models)
    if not answers:
        left_out = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in excluded.items() if v)
        raise ValueError(
            f"{run_dir}: no usable spoken answer in the run (no response with audio"
            + (f"; left out: {left_out}" if left_out else "")
            + "): run a model that speaks (e.g. tts:espeak-ng) on speech_generation items first"
        )
    chosen, shared = _choose_items(answers, clips_per_system, seed)
    system_ids = {model: f"sys-{_digest(seed, 'system', model)[:6]}" for model in answers}
    stimuli: dict[str, dict[str, Any]] = {}
    for model, uids in chosen.items():
        for uid in uids:
            item, response = answers[model][uid]
            prompt, prompt_kind = _prompt(item)
            audio = response.audio
            stimuli[_digest(seed, "stimulus", model, uid)[:12]] = {
                "stimulus_id": _digest(seed, "stimulus", model, uid)[:12],
                "system_id": system_ids[model],
                "model": model,
                "uid": uid,
                "task": item.task,
                "prompt": prompt,
                "prompt_kind": prompt_kind,
                "audio": audio.path,
                "audio_sha256": audio.sha256,
                "duration_s": audio.duration_s,
                "seed": seed,
            }
    ids = sorted(stimuli)
    slots = [f"L{k}" for k in range(1, listeners + 1)]
    entries = []
    for listener in slots:
        for position, (sid, repeat) in enumerate(_listener_order(ids, listener, repeats, seed), start=1):
            entry_id = f"{sid}~2" if repeat else sid
            entries.append(
                ListeningEntry(listener=listener, position=position, entry_id=entry_id, repeat=repeat, **stimuli[sid])
            )
    report = PlaylistReport(
        entries=entries,
        listeners=slots,
        systems={system_ids[m]: m for m in sorted(answers)},
        items={system_ids[m]: chosen[m] for m in sorted(answers)},
        shared_items=shared,
        clips_per_system=clips_per_system,
        repeats=min(repeats, max(1, (len(ids) + 1) // 2)),
        seed=seed,
        spoken_answers=sum(len(v) for v in answers.values()),
        excluded=excluded,
    )
    logger.info("listening playlist: %s", report.summary())
    if write:
        report.path = write_playlist(RunFolder(Path(run_dir)).listening_playlist, entries)
    return report


def write_playlist(path: str | Path, entries: Sequence[ListeningEntry]) -> Path:
    """Write a playlist atomically, refusing to replace a different one (ratings refer to its entries).

    Raises:
        FileExistsError: If ``path`` holds a different playlist.
        ValueError: If a listener has two entries with one id.
    """
    keys = [(e.listener, e.entry_id) for e in entries]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: a listener has two entries with one entry_id")
    why = "ratings files may refer to its entries"
    return write_once(
        path, entries, "playlist", why, "keep it (same seed and parameters), or move the folder away first"
    )


def read_playlist(path: str | Path) -> list[ListeningEntry]:
    """Read a playlist written by :func:`write_playlist`.

    Raises:
        FileNotFoundError: If the file does not exist (the message says how to draw one).
        airbench_nb.manifests.ManifestError: On a bad line, or a listener's duplicate entry (file, line, field named).
    """
    missing = "no listening playlist (draw one with `airbench-nb sample-listening RUN_DIR`)"
    return [entry for _, entry in read_keyed(path, ListeningEntry, ("listener", "entry_id"), missing)]


def listener_entries(entries: Sequence[ListeningEntry], listener: str) -> list[ListeningEntry]:
    """One listener's entries in their order.

    Raises:
        ValueError: When the playlist has no such listener (the message lists those it has).
    """
    mine = sorted((e for e in entries if e.listener == listener), key=lambda e: e.position)
    if not mine:
        known = sorted({e.listener for e in entries}, key=lambda s: (len(s), s))
        raise ValueError(f"listener {listener!r} is not in the playlist; its listeners are {', '.join(known)}")
    return mine
