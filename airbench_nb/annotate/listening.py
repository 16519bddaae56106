"""The MOS listening test in JupyterLab: a listener's ratings session and the ipywidgets tool over it.

A listener (a slot of the playlist, ``L1`` ..) rates each clip of their list for naturalness on the absolute category
rating scale, 1 Bad, 2 Poor, 3 Fair, 4 Good, 5 Excellent (:data:`~airbench_nb.records.ACR_LABELS`), beside the text
the system was asked to speak (or the question it answered aloud). The tool never shows which system spoke.

Ratings go to the listener's own file (:meth:`~airbench_nb.run_folder.RunFolder.listening_ratings`), one
:class:`~airbench_nb.records.Rating` action per line, appended, flushed and fsynced before the tool moves on, and
replayed on reopening: the annotation tool's machinery (:class:`~airbench_nb.annotate.session.ReplaySession`:
resume at the first clip not rated, skipped clips after the others, undo of the latest rating, repair of a line cut
short by a crash). Keys, while the pointer is over the framed card: ``1``-``5`` rate, ``N`` next (skip), ``U`` undo.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from airbench_nb.annotate.listening_playlist import listener_entries, read_playlist
from airbench_nb.annotate.session import LabelFileError, ReplaySession, check_annotator
from airbench_nb.annotate.tool import _CSS, KeyedCard, _esc
from airbench_nb.records import ACR_LABELS, ListeningEntry, Rating
from airbench_nb.run_folder import RunFolder

logger = logging.getLogger(__name__)

LISTENING_KEYS: dict[str, str] = {
    "1-5": "rate the clip's naturalness: 1 Bad, 2 Poor, 3 Fair, 4 Good, 5 Excellent",
    "N": "next: pass this clip over for now (a skip; it comes back after the others)",
    "U": "undo the latest rating (and go back to its clip)",
}
"""Keyboard shortcuts of the listening tool and what they do."""


class ListeningSession(ReplaySession[ListeningEntry, Rating]):
    """One listener rating their list of the playlist: the clip shown, ratings, skips, undo and resume."""

    record = Rating
    id_field = "entry_id"
    who_field = "listener"
    collection = "playlist"
    unit_name = "clip"

    @property
    def entries(self) -> list[ListeningEntry]:
        """The listener's entries, in order."""
        return self.units

    @property
    def listener(self) -> str:
        """The listener slot."""
        return self.who

    def rate(self, score: int, comment: str = "") -> Rating:
        """Rate the clip shown 1-5, write it durably and go to the next clip not rated.

        Raises:
            RuntimeError: When every clip is rated.
            ValueError: For a score outside 1-5 (nothing is written).
        """
        entry = self._current_or_refuse("rate")
        if score not in ACR_LABELS:
            raise ValueError(f"a rating is 1 to 5 (1 Bad .. 5 Excellent), got {score!r}")
        return self._decide(entry, score=int(score), comment=comment.strip())


def listening_key_action(entry: ListeningEntry | None, key: str) -> tuple[str, dict[str, Any]] | None:
    """What a key does: ``("rate", {"score": k})``, ``("skip", {})``, ``("undo", {})`` or None (case ignored)."""
    key = key.lower()
    if key == "u":
        return "undo", {}
    if entry is None:
        return None
    if key == "n":
        return "skip", {}
    if key in {str(k) for k in ACR_LABELS}:
        return "rate", {"score": int(key)}
    return None


def entry_html(entry: ListeningEntry, position: int, total: int) -> str:
    """What the listener sees of an entry: its position and the text asked for (never the system)."""
    asked = "The text it was asked to say" if entry.prompt_kind == "text" else "The question it answered aloud"
    return (
        f"<h4 style='margin:4px 0'>clip {position} of {total}</h4>"
        f"<p style='margin-bottom:2px'><b>{asked}.</b></p>"
        f"<div class='airbench-annotate-answer airbench-listening-prompt'>{_esc(entry.prompt)}</div>"
        "<p style='margin:6px 0 2px'>How <b>natural</b> does the speech sound? (1 Bad .. 5 Excellent)</p>"
    )


class ListeningTool(KeyedCard):
    """The widgets over a :class:`ListeningSession`: player, text asked for, five rating buttons, skip, undo.

    The widgets hold no state of their own: each button and key calls the session, then :meth:`refresh` redraws.
    :meth:`press` is what a key does, so tests can drive the tool without a browser.
    """

    key_action = staticmethod(listening_key_action)
    words: ClassVar[dict[str, str]] = {
        "unit": "clip",
        "units": "clips",
        "decision": "rating",
        "held": "ratings",
        "done": "rated",
        "verb": "rate",
    }
    shown: ClassVar[str] = "entry"

    def __init__(self, run_dir: str | Path, entries: Sequence[ListeningEntry], *, listener: str = "") -> None:
        """Build the widgets; open the listener's session now when ``listener`` is given, else after it is typed.

        Args:
            run_dir: The run folder (the clips and the ratings files live there).
            entries: The whole playlist.
            listener: The listener slot (empty: asked for in the tool).
        """
        import ipywidgets as widgets

        self.folder = RunFolder(Path(run_dir))
        self.playlist = list(entries)
        self.session: ListeningSession | None = None
        """The session (None until a listener slot is given)."""
        self.status = ""
        """The last message shown under the buttons."""
        self._events: Any = None
        self._lock = threading.RLock()  # a click and a key press may arrive on two kernel threads
        self._audio_for: str | None = None
        slots = sorted({e.listener for e in self.playlist}, key=lambda s: (len(s), s))
        button = widgets.Button
        self.controls: dict[str, Any] = {
            "listener": widgets.Text(
                value=listener, description="listener", placeholder=f"your slot, e.g. {slots[0] if slots else 'L1'}"
            ),
            "start": button(description="start listening", button_style="primary"),
            "file": widgets.HTML(),
            "progress": widgets.IntProgress(min=0, max=1, value=0, description="rated"),
            "count": widgets.Label(),
            "entry": widgets.HTML(),
            "audio": widgets.Audio(value=b"", format="wav", autoplay=False, controls=True),
            "scores": [
                button(description=f"{k} {text}", tooltip=f"{text} (key {k})", layout={"width": "auto"})
                for k, text in ACR_LABELS.items()
            ],
            "skip": button(description="next (skip)", tooltip="pass this clip over for now (key N)", icon="forward"),
            "undo": button(description="undo", tooltip="retract the latest rating (key U)", icon="undo"),
            "comment": widgets.Text(
                description="comment",
                placeholder="optional; saved with the next rating or skip",
                layout={"width": "95%"},
            ),
            "message": widgets.HTML(),
            "help": widgets.HTML(
                "<small>Keys while the pointer is over the framed card (the frame turns blue): <b>1</b>-<b>5</b> "
                "rate, <b>N</b> next (skip), <b>U</b> undo. Every rating is saved at once.</small>"
            ),
        }
        c = self.controls
        for score, b in zip(ACR_LABELS, c["scores"], strict=True):
            b.on_click(lambda _b, k=score: self.act("rate", {"score": k}))
        c["skip"].on_click(lambda _b: self.act("skip", {}))
        c["undo"].on_click(lambda _b: self.act("undo", {}))
        c["start"].on_click(lambda _b: self.start(c["listener"].value))
        c["listener"].observe(lambda change: self.start(change["new"]), names="value")
        self.score_row = widgets.HBox(c["scores"])
        self.card = widgets.VBox(
            [
                widgets.HBox([c["progress"], c["count"]]),
                c["entry"],
                c["audio"],
                self.score_row,
                widgets.HBox([c["skip"], c["undo"]]),
                c["message"],
            ]
        )
        self.card.add_class("airbench-annotate-card")
        self.card.add_class("airbench-listening-card")
        self.start_row = widgets.HBox([c["listener"], c["start"]])
        self.widget = widgets.VBox([widgets.HTML(_CSS), self.start_row, c["file"], self.card, c["comment"], c["help"]])
        """The tool's root widget (display it)."""
        self.widget.add_class("airbench-listening")
        self._watch_keys()
        if listener.strip():
            self.start(listener)
        else:
            self.card.layout.display = "none"
            self._say(f"Type your listener slot ({', '.join(slots)}) and press Enter (or <b>start listening</b>).")

    def start(self, listener: str) -> ListeningSession | None:
        """Open the listener's session (ratings file) and show the first clip not rated.

        Returns:
            The session, or None when the slot is not in the playlist or the file does not fit (the reason shown).
        """
        with self._lock:
            if self.session is not None:
                return self.session
            try:
                listener = check_annotator(listener, "listener")
                mine = listener_entries(self.playlist, listener)
                path = self.folder.listening_ratings(listener)
                self.session = ListeningSession(mine, path, listener)
            except (ValueError, LabelFileError) as exc:
                self._refused(exc, "entry")
                return None
            return self._opened("listener", listener, path)

    def _decide(self, unit: ListeningEntry, kwargs: dict[str, Any]) -> tuple[Rating, str]:
        session = self.session
        assert session is not None
        written = session.rate(kwargs["score"], comment=self.controls["comment"].value)
        score = written.score or 0
        return written, f"clip {session.index_of[unit.entry_id] + 1} rated {score} ({ACR_LABELS[score]})"

    def _draw(self, unit: ListeningEntry | None, position: int, total: int) -> None:
        self.score_row.layout.display = "none" if unit is None else ""
        if unit is not None:
            self.controls["entry"].value = entry_html(unit, position, total)

    def _media(self, unit: ListeningEntry | None) -> None:
        self._play(unit)

    def _play(self, entry: ListeningEntry | None) -> None:
        player = self.controls["audio"]
        key = None if entry is None else entry.entry_id
        if key == self._audio_for:
            return
        self._audio_for = key
        player.layout.display = "none" if entry is None else ""
        if entry is None:
            return
        try:
            data = self.folder.response_audio_path(entry.model, entry.audio).read_bytes()
        except (OSError, ValueError) as exc:
            player.layout.display = "none"
            self._say(f"<span style='color:#b00'>clip unavailable ({_esc(exc)}): skip it (N)</span>")
            return
        if hashlib.sha256(data).hexdigest() != entry.audio_sha256:
            player.layout.display = "none"
            self._say("<span style='color:#b00'>this clip changed since the playlist was drawn: skip it (N)</span>")
            return
        player.value = data


def listening_test(run_dir: str | Path, *, listener: str = "", show: bool = True) -> ListeningTool:
    """Open the MOS listening tool over the run's playlist (in JupyterLab; notebook 06).

    Args:
        run_dir: The run folder whose playlist (``airbench-nb sample-listening``) is rated.
        listener: Your listener slot (``L1`` ..; empty: the tool asks for it).
        show: Display the tool.

    Returns:
        The :class:`ListeningTool` (its ``session`` holds the state).

    Raises:
        FileNotFoundError: When the run has no playlist (the message says how to draw one).
    """
    tool = ListeningTool(run_dir, read_playlist(RunFolder(Path(run_dir)).listening_playlist), listener=listener)
    if show:
        from IPython.display import display

        display(tool.widget)
    return tool
