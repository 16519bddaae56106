"""The ipywidgets :class:`AnnotationTool` over a session: keys, drawing the pair and its audio, and how to start."""

from __future__ import annotations

import contextlib
import html
import logging
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from airbench_nb.annotate.sample import read_sample
from airbench_nb.annotate.session import (
    AnnotationSession,
    LabelFileError,
    _label_text,
    check_annotator,
    label_file,
    label_files_beside,
)
from airbench_nb.records import LETTERS, AnnotationPair, Label

logger = logging.getLogger(__name__)

KEYS: dict[str, str] = {
    "A-D": "Foundation: the answer picks this option (A-Z on a pair of more options: every letter of its options)",
    "X": "Foundation: none / unclear (unless X is one of the pair's options: then 0)",
    "0": "Foundation: none / unclear (always)",
    "1": "Chat: Answer 1 is better",
    "2": "Chat: Answer 2 is better",
    "T": "Chat: tie",
    "N": "next: pass this pair over for now (a skip; it comes back after the others), unless N is an option: then →",
    "→": "next (skip), always (ArrowRight)",
    "U": "undo the latest label (and go back to its pair), unless U is an option: then Backspace",
    "Backspace": "undo, always",
}
"""Keyboard shortcuts of the tool and what they do. A letter that is one of the pair's options picks it: on a pair of
more than 13 options (the tiered benchmark's 23 classes) N, U and X are options, and 0, → and Backspace do what they
did."""

UNCLEAR_KEYS = frozenset({"0"})
"""Keys that mark a Foundation pair "none / unclear" whatever its options."""
SKIP_KEYS = frozenset({"arrowright"})
"""Keys that skip a pair whatever its options (as the browser names them, lower-cased)."""
UNDO_KEYS = frozenset({"backspace"})
"""Keys that undo whatever the pair's options."""


CHAT_PREFERENCES: dict[str, str] = {"1": "1", "2": "2", "t": "tie"}
"""Chat keys and the preference they record."""


def key_action(pair: AnnotationPair | None, key: str) -> tuple[str, dict[str, Any]] | None:
    """What a key does on a pair: ``("label", kwargs)``, ``("skip", {})``, ``("undo", {})`` or None.

    Args:
        pair: The pair shown (None when done: only undo works).
        key: The key as the browser names it (``"a"``, ``"A"``, ``"1"``, ...); case is ignored.

    Returns:
        The action and the keyword arguments of :meth:`AnnotationSession.label`, or None for a key that does
        nothing here (a letter past the pair's options, a Chat key on a Foundation pair, ...).
    """
    key = key.lower()
    options = LETTERS.lower()[: len(pair.choices)] if pair is not None and pair.kind == "foundation" else ""
    if len(key) == 1 and key in options:  # a letter of the pair's options picks it, before any other meaning
        return "label", {"choice": options.index(key)}
    if key == "u" or key in UNDO_KEYS:
        return "undo", {}
    if pair is None:
        return None
    if key == "n" or key in SKIP_KEYS:
        return "skip", {}
    if pair.kind == "foundation":
        if key == "x" or key in UNCLEAR_KEYS:
            return "label", {"unclear": True}
        return None
    if key in CHAT_PREFERENCES:
        return "label", {"preference": CHAT_PREFERENCES[key]}
    return None


_CSS = """<style>
.airbench-annotate-card { border: 2px solid #ddd; border-radius: 6px; padding: 6px 10px; }
.airbench-annotate-card.ipyevents-watched { border-color: #1976d2; }
.airbench-annotate-answer { border-left: 4px solid #1976d2; background: #f5f8fc; padding: 4px 8px;
  white-space: pre-wrap; }
</style>"""
"""Styles of the tool (the card's outline turns blue while it receives keys)."""


_SCORES: list[tuple[str, int | None]] = [("no score", None), *((str(k), k) for k in range(1, 11))]
"""Options of the score dropdowns (none, then 1-10)."""


_FIGURE_LOCK = threading.Lock()
"""Held while the tool draws a figure: pyplot keeps global state, and callbacks may run on two threads."""


@contextlib.contextmanager
def _not_interactive() -> Iterator[None]:
    """Pyplot's interactive mode off while the tool draws its figure.

    In interactive mode (``%matplotlib inline``) a new figure is queued for display, and the inline backend shows
    and closes every queued figure when a message handled on another thread (a JupyterLab subshell) ends: a figure
    being drawn here would then come out blank. The tool displays its figures itself, so nothing is lost.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - matplotlib is a dependency
        yield
        return
    with plt.ioff():
        yield


def _esc(text: Any) -> str:
    return html.escape(str(text))


def pair_html(pair: AnnotationPair, position: int, total: int) -> str:
    """The pair as the annotator sees it: question, options or the two answers, and judges when allowed."""
    parts = [
        f"<h4 style='margin:4px 0'>pair {position} of {total} · {_esc(pair.task)} ({_esc(pair.category)})</h4>",
        f"<p><b>Question.</b> {_esc(pair.question)}</p>",
    ]
    if pair.kind == "foundation":
        options = "".join(f"<li><b>{LETTERS[i]}.</b> {_esc(c)}</li>" for i, c in enumerate(pair.choices))
        parts.append(f"<p style='margin-bottom:0'><b>Options.</b></p><ul style='margin-top:0'>{options}</ul>")
        parts.append("<p style='margin-bottom:2px'><b>The model's answer.</b> Which option does it pick?</p>")
        parts.append(f"<div class='airbench-annotate-answer'>{_esc(pair.response or '')}</div>")
    else:
        parts.append("<p style='margin-bottom:2px'><b>Two answers.</b> Which one is better?</p>")
        cells = "".join(
            f"<td style='vertical-align:top;width:50%;padding:4px'><b>Answer {k}</b>"
            f"<div class='airbench-annotate-answer'>{_esc(text)}</div></td>"
            for k, text in enumerate(pair.answers, start=1)
        )
        parts.append(f"<table style='width:100%'><tr>{cells}</tr></table>")
    if pair.show_judge and pair.judge_verdicts:
        parts.append(f"<p><b>Judges.</b> {_esc(judge_text(pair))}</p>")
    return "".join(parts)


def judge_text(pair: AnnotationPair) -> str:
    """The judges' verdicts in the annotator's terms (Chat scores as Answer 1 / Answer 2)."""
    texts = []
    for judge, verdict in sorted(pair.judge_verdicts.items()):
        if pair.kind == "foundation":
            texts.append(f"{judge}: {verdict.get('choice') or 'no option'}")
            continue
        for order, scores in sorted(verdict.items()):
            model, reference = scores.get("model"), scores.get("reference")
            first, second = (model, reference) if pair.model_answer == 1 else (reference, model)
            texts.append(f"{judge} ({order.replace('_', ' ')}): Answer 1 {first}, Answer 2 {second}")
    return "; ".join(texts)


class KeyedCard:
    """What the labelling tools share: keys over their card (ipyevents), one action at a time, redraw, status line.

    A subclass builds ``card`` (the widget that receives keys) and ``controls`` (``message``, ``comment``,
    ``progress``, ``count``, ``skip`` and the one named by :attr:`shown`), and says what its decision is
    (:meth:`_decide`) and how a unit is drawn (:meth:`_draw`, :meth:`_media`).
    """

    words: ClassVar[dict[str, str]] = {
        "unit": "pair",
        "units": "pairs",
        "decision": "label",
        "held": "labels",
        "done": "labelled",
        "verb": "label",
    }
    """How the tool names things in its messages."""
    shown: ClassVar[str] = "pair"
    """The control (HTML) that shows the unit."""

    card: Any
    controls: dict[str, Any]
    status: str
    session: Any
    start_row: Any
    _events: Any
    key_action: Callable[[Any, str], tuple[str, dict[str, Any]] | None]
    """What a key does on the unit shown: ``(action, kwargs of act)`` or None."""

    _lock: Any

    def _decide(self, unit: Any, kwargs: dict[str, Any]) -> tuple[Any, str]:  # pragma: no cover - abstract
        """Write the tool's decision on ``unit`` with the typed inputs; return it and the message to show."""
        raise NotImplementedError

    def _after_decision(self) -> None:
        """Clear the inputs of the tool's own a decision used (the comment is cleared for every tool)."""

    def _draw(self, unit: Any | None, position: int, total: int) -> None:  # pragma: no cover - abstract
        """Draw ``unit`` (None: done) and show the buttons that apply."""
        raise NotImplementedError

    def _media(self, unit: Any | None) -> None:  # pragma: no cover - abstract
        """Show the unit's audio (None: none)."""
        raise NotImplementedError

    def act(self, action: str, kwargs: dict[str, Any]) -> Any:
        """Take an action (``undo``, ``skip`` or the tool's decision) with the comment typed, then redraw.

        Returns:
            The action written (None when nothing was written).
        """
        with self._lock:  # one action at a time, whichever thread the front end's message arrives on
            return self._act(action, kwargs)

    def _act(self, action: str, kwargs: dict[str, Any]) -> Any:
        session = self.session
        if session is None:
            return None
        w, c = self.words, self.controls
        unit = session.current
        try:
            if action == "undo":
                written = session.undo()
                if written is None:
                    self._say("nothing to undo")
                else:
                    position = session.index_of[session._id(written)] + 1
                    self._say(f"undid the {w['decision']} of {w['unit']} {position}")
            elif unit is None:
                self._say(f"every {w['unit']} is {w['done']} (U undoes the latest {w['decision']})")
                written = None
            elif action == "skip":
                written = session.skip(comment=c["comment"].value)
                position = session.index_of[session._id(unit)] + 1
                self._say(f"skipped {w['unit']} {position}; it comes back after the others")
            else:
                written, message = self._decide(unit, kwargs)
                self._say(message)
        except (ValueError, RuntimeError, LabelFileError) as exc:
            self._say(f"<span style='color:#b00'>{_esc(exc)}</span>")
            return None
        if written is not None and written.action != "undo":
            c["comment"].value = ""
            self._after_decision()
        self.refresh()
        return written

    def refresh(self) -> None:
        """Redraw the progress, the unit shown, the buttons that apply and the audio, from the session."""
        session = self.session
        if session is None:
            return
        w, c = self.words, self.controls
        done, total = session.progress
        c["progress"].max, c["progress"].value = total, done
        unit = session.current
        c["count"].value = f"{done} / {total} {w['done']}" + (" · done" if unit is None else "")
        c["skip"].disabled = unit is None
        if unit is None:
            c[self.shown].value = (
                f"<h4 class='airbench-annotate-done'>done: all {total} {w['units']} are {w['done']} ✓</h4>"
                f"<p>{w['held'].capitalize()} are in <code>{_esc(session.path)}</code>. Press <b>U</b> (or undo) to "
                "change the latest one.</p>"
            )
        self._draw(unit, (session.index or 0) + 1, total)
        self._media(unit)

    def press(self, key: str) -> str | None:
        """Do what ``key`` does on the unit shown (see the tool's keys).

        Returns:
            The action taken (``label``, ``rate``, ``skip``, ``undo``) or None when the key does nothing here.
        """
        if self.session is None:
            return None
        found = type(self).key_action(self.session.current, key)
        if found is None:
            return None
        self.act(*found)
        return found[0]

    def _refused(self, exc: Exception, shown: str) -> None:
        """Say why a session could not be opened (in red) and blank the unit shown."""
        self._say(f"<span style='color:#b00'>{_esc(exc)}</span>")
        self.card.layout.display = ""
        self.controls[shown].value = ""

    def _opened(self, box: str, who: str, path: Path) -> Any:
        """Show the opened session: the id fixed, where its file is, resumed or how many to do; then redraw.

        Args:
            box: The control holding the id.
            who: The id.
            path: The person's file.
        """
        w, c = self.words, self.controls
        held, done_word, units, verb = w["held"], w["done"], w["units"], w["verb"]
        c[box].value = who
        c[box].disabled = True
        self.start_row.layout.display = "none"  # the id is named in the line below
        c["file"].value = f"<small>{held} of <b>{_esc(who)}</b> go to <code>{_esc(path)}</code></small>"
        self.card.layout.display = ""
        done, total = self.session.progress
        self._say(f"resumed: {done} of {total} {done_word}" if done else f"{total} {units} to {verb}")
        self.refresh()
        return self.session

    def _watch_keys(self) -> None:
        try:
            from ipyevents import Event
        except ImportError:  # pragma: no cover - ipyevents is a dependency
            logger.warning("ipyevents is not installed: keyboard shortcuts are off, the buttons work")
            return
        self._events = Event(source=self.card, watched_events=["keydown"], prevent_default_action=True)
        self._events.on_dom_event(self._on_key)

    def _on_key(self, event: dict[str, Any]) -> None:
        if event.get("repeat") or any(event.get(m) for m in ("ctrlKey", "altKey", "metaKey")):
            return
        self.press(str(event.get("key", "")))

    def _say(self, message: str) -> None:
        self.status = re.sub(r"<[^>]+>", "", message)
        self.controls["message"].value = f"<span class='airbench-annotate-status'>{message}</span>"


class AnnotationTool(KeyedCard):
    """The widgets over an :class:`AnnotationSession`: player, pair, label buttons, scores, comment, progress.

    The widgets hold no state of their own: every button and key calls the session, then :meth:`refresh` redraws
    from it. :meth:`press` is what a key does, so tests can drive the tool without a browser.
    """

    key_action = staticmethod(key_action)

    def __init__(
        self,
        pairs: Sequence[AnnotationPair],
        *,
        sample: str | Path | None = None,
        annotator: str = "",
        labels_path: str | Path | None = None,
        root: str | Path | None = None,
        show_audio: bool = True,
    ) -> None:
        """Build the widgets; open the session now when ``annotator`` is given, else after it is typed.

        Args:
            pairs: The sample.
            sample: Path of the sample (names the default label file).
            annotator: The annotator's id (empty: asked for in the tool).
            labels_path: The label file (default: :func:`label_file` of ``sample`` and the annotator).
            root: Data root of the audio instead of the sample's (the run folder moved).
            show_audio: Show the player and spectrogram (off in fast tests).

        Raises:
            ValueError: When neither ``sample`` nor ``labels_path`` names where labels go.
        """
        import ipywidgets as widgets

        if sample is None and labels_path is None:
            raise ValueError("give the sample's path or a labels_path: labels need a file")
        self.pairs = list(pairs)
        self.sample = Path(sample) if sample else None
        self.labels_path = Path(labels_path) if labels_path else None
        self.root = root
        self.show_audio = show_audio
        self.session: AnnotationSession | None = None
        """The session (None until an annotator id is given)."""
        self.status = ""
        """The last message shown under the buttons."""
        self._events: Any = None
        # JupyterLab (ipykernel 7 subshells) may deliver a button click and a key press to two threads at once
        self._lock = threading.RLock()
        self._audio_for: str | None = None
        letters = LETTERS
        button = widgets.Button
        self.controls: dict[str, Any] = {
            "annotator": widgets.Text(
                value=annotator, description="annotator", placeholder="your id, e.g. alice", continuous_update=False
            ),
            "start": button(description="start labelling", button_style="primary"),
            "file": widgets.HTML(),
            "progress": widgets.IntProgress(min=0, max=len(self.pairs), value=0, description="labelled"),
            "count": widgets.Label(),
            "pair": widgets.HTML(),
            "audio": widgets.Output(layout={"width": "100%"}),  # full width, or a wide figure is cut
            "options": [
                button(description=letters[i], tooltip=f"the answer picks {letters[i]} (key {letters[i]})")
                for i in range(len(letters))  # one per letter; a pair shows only its own
            ],
            "unclear": button(description="none / unclear", tooltip="the answer picks no option clearly (key X)"),
            "better_1": button(description="Answer 1 better", tooltip="key 1"),
            "better_2": button(description="Answer 2 better", tooltip="key 2"),
            "tie": button(description="tie", tooltip="key T"),
            "score_1": widgets.Dropdown(options=_SCORES, index=0, description="score 1"),
            "score_2": widgets.Dropdown(options=_SCORES, index=0, description="score 2"),
            "skip": button(description="next (skip)", tooltip="pass this pair over for now (key N)", icon="forward"),
            "undo": button(description="undo", tooltip="retract the latest label (key U)", icon="undo"),
            "comment": widgets.Text(
                description="comment",
                placeholder="optional; saved with the next label or skip",
                layout={"width": "95%"},
            ),
            "message": widgets.HTML(),
            "help": widgets.HTML(
                "<small>Keys while the pointer is over the framed card (the frame turns blue): "
                "<b>A</b>-<b>D</b> option, <b>X</b> none / unclear, <b>1</b> / <b>2</b> / <b>T</b> better answer, "
                "<b>N</b> next (skip), <b>U</b> undo. Every label is saved at once. On a pair of many options every "
                "letter of its options picks it (A-Z): then <b>0</b> is none / unclear, <b>→</b> next, "
                "<b>Backspace</b> undo (they always are).</small>"
            ),
        }
        c = self.controls
        for index, option in enumerate(c["options"]):
            option.on_click(lambda _b, i=index: self.act("label", {"choice": i}))
        c["unclear"].on_click(lambda _b: self.act("label", {"unclear": True}))
        c["better_1"].on_click(lambda _b: self.act("label", {"preference": "1"}))
        c["better_2"].on_click(lambda _b: self.act("label", {"preference": "2"}))
        c["tie"].on_click(lambda _b: self.act("label", {"preference": "tie"}))
        c["skip"].on_click(lambda _b: self.act("skip", {}))
        c["undo"].on_click(lambda _b: self.act("undo", {}))
        c["start"].on_click(lambda _b: self.start(c["annotator"].value))
        c["annotator"].observe(lambda change: self.start(change["new"]), names="value")  # Enter, or leaving the box
        for name in ("options", "unclear", "better_1", "better_2", "tie"):
            for b in c[name] if isinstance(c[name], list) else [c[name]]:
                b.layout.width = "auto"
        # a pair of many options (up to 26) wraps its buttons onto several lines
        self.foundation_row = widgets.HBox([*c["options"], c["unclear"]], layout={"flex_flow": "row wrap"})
        self.chat_row = widgets.VBox(
            [widgets.HBox([c["better_1"], c["better_2"], c["tie"]]), widgets.HBox([c["score_1"], c["score_2"]])]
        )
        self.card = widgets.VBox(
            [
                widgets.HBox([c["progress"], c["count"]]),
                c["pair"],
                self.foundation_row,
                self.chat_row,
                widgets.HBox([c["skip"], c["undo"]]),
                c["message"],
                c["audio"],
            ]
        )
        self.card.add_class("airbench-annotate-card")
        self.start_row = widgets.HBox([c["annotator"], c["start"]])
        self.widget = widgets.VBox([widgets.HTML(_CSS), self.start_row, c["file"], self.card, c["comment"], c["help"]])
        """The tool's root widget (display it)."""
        self.widget.add_class("airbench-annotate")
        self._watch_keys()
        if annotator.strip():
            self.start(annotator)
        else:
            self.card.layout.display = "none"
            self._say("Type your annotator id and press Enter (or <b>start labelling</b>).")

    def start(self, annotator: str) -> AnnotationSession | None:
        """Open the annotator's session (label file) and show the first unlabelled pair.

        Returns:
            The session, or None when the id is not usable or the file does not fit (the reason is shown).
        """
        with self._lock:
            return self._start(annotator)

    def _start(self, annotator: str) -> AnnotationSession | None:
        if self.session is not None:
            return self.session
        try:
            annotator = check_annotator(annotator)
            path = self.labels_path or label_file(self.sample, annotator)  # type: ignore[arg-type]
            self.session = AnnotationSession(self.pairs, path, annotator)
        except (ValueError, LabelFileError) as exc:
            self._refused(exc, "pair")
            return None
        return self._opened("annotator", annotator, path)

    def _decide(self, unit: AnnotationPair, kwargs: dict[str, Any]) -> tuple[Label, str]:
        c = self.controls
        if unit.kind == "chat":
            kwargs = {**kwargs, "score_1": c["score_1"].value, "score_2": c["score_2"].value}
        written = self.session.label(comment=c["comment"].value, **kwargs)  # type: ignore[union-attr]
        position = self.session.index_of[unit.pair_id] + 1  # type: ignore[union-attr]
        return written, f"pair {position} labelled {_label_text(unit, written)}"

    def _after_decision(self) -> None:
        c = self.controls
        c["score_1"].index = c["score_2"].index = 0  # "no score" (a value of None would show a blank box)

    def _draw(self, unit: AnnotationPair | None, position: int, total: int) -> None:
        c = self.controls
        if unit is None:
            self.foundation_row.layout.display = self.chat_row.layout.display = "none"
            return
        c["pair"].value = pair_html(unit, position, total)
        is_foundation = unit.kind == "foundation"
        self.foundation_row.layout.display = "" if is_foundation else "none"
        self.chat_row.layout.display = "none" if is_foundation else ""
        for index, option in enumerate(c["options"]):
            option.layout.display = "" if index < len(unit.choices) else "none"
            if index < len(unit.choices):
                option.tooltip = f"the answer picks {LETTERS[index]}: {unit.choices[index]} (key {LETTERS[index]})"

    def _media(self, unit: AnnotationPair | None) -> None:
        self._show_audio(unit)

    def _show_audio(self, pair: AnnotationPair | None) -> None:
        out = self.controls["audio"]
        key = None if pair is None else pair.pair_id
        if key == self._audio_for:
            return
        self._audio_for = key
        if not self.show_audio:
            return
        out.clear_output()
        if pair is None:
            return
        from airbench_nb.audio import AudioError
        from airbench_nb.listen import listen
        from airbench_nb.manifests import resolve_audio

        with _FIGURE_LOCK, _not_interactive(), out:
            try:
                path = resolve_audio(self.root if self.root is not None else pair.data_root, pair.audio)
                listen(path, title=f"audio of pair {(self.session.index or 0) + 1}", interactive=False)  # type: ignore[union-attr]
            except (AudioError, ValueError, OSError) as exc:
                print(f"audio unavailable: {exc}")


def annotate(
    sample: str | Path,
    *,
    annotator: str = "",
    labels_path: str | Path | None = None,
    root: str | Path | None = None,
    show_audio: bool = True,
    show: bool = True,
) -> AnnotationTool:
    """Open the annotation tool over a sample (in JupyterLab).

    Args:
        sample: The sample file (``airbench-nb sample-annotation``).
        annotator: Your annotator id (empty: the tool asks for it).
        labels_path: Your label file (default ``<sample stem>.<annotator>.labels.jsonl`` beside the sample).
        root: Data root of the audio instead of the sample's (the run folder moved).
        show_audio: Show the player and spectrogram of each pair.
        show: Display the tool.

    Returns:
        The :class:`AnnotationTool` (its ``session`` holds the state).
    """
    tool = AnnotationTool(
        read_sample(sample),
        sample=sample,
        annotator=annotator,
        labels_path=labels_path,
        root=root,
        show_audio=show_audio,
    )
    if show:
        from IPython.display import display

        display(tool.widget)
    return tool


def how_to_start(sample: str | Path | None, run_dir: str | Path | None = None) -> str:
    """Markdown that says how to label a sample and then compute agreement (shown when no labels are given)."""
    lines = ["**No label files given**, so there is no agreement to compute yet. To label:", ""]
    run = str(run_dir) if run_dir else "RUN_DIR"
    shown = str(sample) if sample is not None else "sample.jsonl"
    first, second = (str(label_file(shown, who)) for who in ("alice", "bob"))
    if sample is None:
        lines += [
            "1. draw a sample from a run folder:",
            f"   `airbench-nb sample-annotation {run} --n 40 --kind foundation --out {shown}`;",
        ]
    else:
        lines.append(f"1. the sample is `{sample}`;")
    lines += [
        "2. open this notebook in JupyterLab (`make lab`), set `sample` and `annotator` (your id) in the parameters "
        "cell and run it: the annotation tool appears in section 2; a second annotator does the same with their own "
        "id (each gets their own label file, and can close the browser at any time: labelling resumes where it "
        "stopped);",
        "3. compare the labels with the judges: run this notebook headless with `run_dir`, `sample` and `labels` (the "
        f"label files), e.g. `papermill notebooks/06_annotate.ipynb 06.ipynb -p run_dir {run} -p sample {shown} "
        f"-y 'labels: [{first}, {second}]'`, or from a shell "
        f"`airbench-nb agreement {run} --sample {shown} --labels {first} {second}`.",
    ]
    if sample is not None:
        found = label_files_beside(sample)
        if found:
            names = ", ".join(f"`{p}`" for p in found)
            lines += ["", f"Label files found beside the sample: {names}."]
    return "\n".join(lines)
