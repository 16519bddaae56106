"""Hear and see audio in JupyterLab: a player, the waveform, a log-mel spectrogram and the item's metadata.

:func:`listen` shows one thing (an item of a manifest, a :class:`~airbench_nb.mix.MixResult`, a
:class:`~airbench_nb.mix.Clip`, a file or an array); for a mix it also offers each component (A and B, at
their level in the mix: players are not normalised, so what sounds louder is louder). :func:`browse` is an
item browser over a manifest, with filters by category and task.

Two renderings:

- interactive (ipywidgets): a selector switches the player and plots between the mix and its components, and
  the browser's dropdowns and slider pick the item;
- static: plain ``display()`` outputs (HTML, audio players, PNG figures), which papermill keeps in the executed
  notebook and its HTML export.

``interactive=None`` picks widgets only when a live front end runs the code: inside an IPython kernel whose
current request allows stdin (JupyterLab, Notebook and VS Code send such requests; papermill, nbclient and
nbval do not). Set ``AIRBENCH_WIDGETS=1`` or ``0`` to force either way. Outside a kernel (a plain Python
test), displays print their text form, so both renderings run anywhere without error.
"""

from __future__ import annotations

import html
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import singledispatch
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.audio import TARGET_SR, AudioError, load_audio, loudness
from airbench_nb.mix import Clip, MixError, MixResult, remix
from airbench_nb.records import LETTERS, ChatItem, ItemBase, MixMeta, SingleChoiceItem

logger = logging.getLogger(__name__)

_FIGURE_LOCK = threading.Lock()
"""Serialises figure drawing in widget callbacks (see :func:`_show_signal`)."""

ALL = "(all)"
"""Filter value meaning no filter."""
LISTEN_DPI = 64
"""Resolution of the waveform and spectrogram figures (small: a report shows several per notebook)."""
MEL_BANDS = 64
"""Mel bands of the spectrogram."""
HOP_S = 0.01
"""Hop of the spectrogram in seconds."""
WAVEFORM_POINTS = 4000
"""Waveforms longer than this are drawn as a min/max envelope of this many buckets."""
MIX_FIELDS = (
    "source_a",
    "source_b",
    "gain_a_db",
    "gain_b_db",
    "snr_db_requested",
    "snr_db_measured",
    "loudness_a",
    "loudness_b",
    "loudness_unit",
    "offset_s",
    "overlap_s",
    "louder",
    "ahead",
    "scale",
)
"""MixMeta fields shown in the metadata table."""

AnyItem = SingleChoiceItem | ChatItem


def widgets_wanted() -> bool:
    """Whether to render ipywidgets: ``$AIRBENCH_WIDGETS`` if set, else whether a live front end runs the kernel."""
    forced = os.environ.get("AIRBENCH_WIDGETS", "").strip().lower()
    if forced in ("1", "true", "yes", "on"):
        return True
    if forced in ("0", "false", "no", "off"):
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    return bool(kernel is not None and getattr(kernel, "_allow_stdin", False))


@dataclass
class ListenView:
    """What :func:`listen` shows: the title, the signals on offer, the metadata, and the widget if any."""

    title: str
    """Heading (uid, file name or mix name)."""
    sr: int
    """Sample rate of the signals."""
    signals: dict[str, np.ndarray] = field(default_factory=dict)
    """Signals on offer, first the main one (``audio`` or ``mix``), then components ``A`` and ``B``."""
    info: dict[str, Any] = field(default_factory=dict)
    """Metadata shown in the table (question, choices, answer, mix fields, ...)."""
    notes: list[str] = field(default_factory=list)
    """Problems met (missing audio, components unavailable, ...)."""
    onsets: dict[str, float] = field(default_factory=dict)
    """Onsets (s) of the components, marked on the waveform."""
    files: dict[str, Path] = field(default_factory=dict)
    """The file each signal was loaded from, when it was (static players link it under :func:`link_audio`)."""
    widget: Any = None
    """The ipywidgets container in interactive mode; None when rendered statically."""

    @property
    def side_by_side(self) -> bool:
        """Whether the signals are the clips of a multi-clip item (shown side by side, not switched)."""
        return len(self.signals) > 1 and all(label.startswith("clip ") for label in self.signals)

    @property
    def html(self) -> str:
        """The metadata as an HTML fragment."""
        return _info_html(self.title, self.info, self.notes)

    @property
    def text(self) -> str:
        """The metadata as plain text (what a console or a text-only viewer shows)."""
        lines = [self.title, *(f"  {key}: {_fmt(value)[:300]}" for key, value in self.info.items())]
        return "\n".join([*lines, *(f"  ! {note}" for note in self.notes)])


def _show_html(fragment: str, text: str) -> None:
    """Display HTML with a plain-text alternative (used by consoles and text-only report viewers)."""
    from IPython.display import display

    display({"text/html": fragment, "text/plain": text}, raw=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if np.isfinite(value) else str(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def _info_html(title: str, info: dict[str, Any], notes: Sequence[str]) -> str:
    rows = []
    for key, value in info.items():
        if key == "choices" and isinstance(value, list):
            answer = info.get("answer")
            items = "".join(
                f"<li>{'<b>' if letter == answer else ''}{letter}. {html.escape(str(c))}"
                f"{' ✓</b>' if letter == answer else ''}</li>"
                for letter, c in zip(LETTERS, value, strict=False)
            )
            cell = f"<ul style='margin:0;padding-left:1.2em'>{items}</ul>"
        else:
            text = _fmt(value)
            if len(text) > 2000:
                text = text[:2000] + " ..."
            cell = f"<span style='white-space:pre-wrap'>{html.escape(text)}</span>"
        rows.append(f"<tr><th style='text-align:left;vertical-align:top'>{html.escape(key)}</th><td>{cell}</td></tr>")
    notes_html = "".join(f"<p style='color:#b00'>{html.escape(n)}</p>" for n in notes)
    return f"<h4>{html.escape(title)}</h4><table>{''.join(rows)}</table>{notes_html}"


def _mix_info(meta: MixMeta) -> dict[str, Any]:
    dump = meta.model_dump()
    return {f"mix.{k}": dump[k] for k in MIX_FIELDS if dump.get(k) is not None}


def _with_mix(view: ListenView, result: MixResult) -> None:
    view.signals.update({"mix": result.mix, "A": result.a, "B": result.b})
    meta = result.meta
    if meta.onset_a_s is not None and meta.onset_b_s is not None:
        view.onsets = {"A": meta.onset_a_s, "B": meta.onset_b_s}


@singledispatch
def _add_gold_info(item: ItemBase, info: dict[str, Any]) -> None:
    """Add to ``info`` what the item's kind shows of its gold.

    By default the gold it registered for the items table (:func:`airbench_nb.manifests.gold_columns`); nothing for
    a kind that registered none.
    """
    from airbench_nb.manifests import gold_columns

    try:
        info["gold"] = gold_columns(item)[1]
    except TypeError:  # the kind registered no gold columns
        pass


@_add_gold_info.register
def _single_choice_info(item: SingleChoiceItem, info: dict[str, Any]) -> None:
    info["choices"] = list(item.choices)
    info["answer"] = item.answer_letter
    if item.meta:
        info["meta"] = item.meta


@_add_gold_info.register
def _chat_info(item: ChatItem, info: dict[str, Any]) -> None:
    info["reference"] = item.reference
    info["meta_info"] = item.meta_info
    if item.mix is not None:
        info.update(_mix_info(item.mix))


def _item_view(item: ItemBase, root: str | Path | None, sources_root: str | Path | None, sr: int) -> ListenView:
    audio = ", ".join(item.clips) if item.multi_clip else item.audio
    info: dict[str, Any] = {"task": f"{item.task} ({item.category})", "audio": audio, "question": item.question}
    _add_gold_info(item, info)
    if item.audio_status is not None:
        info["audio_status"] = item.audio_status.value
    view = ListenView(title=f"{item.uid} · {item.kind}", sr=sr, info=info)
    if root is None:
        view.notes.append("no data root given: audio not loaded (pass root=...)")
        return view
    from airbench_nb.manifests import resolve_audio

    if item.multi_clip:  # several clips: each offered as "clip k", shown side by side
        for k, relative in enumerate(item.clips, start=1):
            try:
                file = resolve_audio(root, relative)
                view.signals[f"clip {k}"] = load_audio(file, sr=sr)
                view.files[f"clip {k}"] = file
            except (AudioError, ValueError) as exc:
                view.notes.append(f"clip {k} unavailable: {exc}")
        return view
    try:
        file = resolve_audio(root, item.audio)
        audio = load_audio(file, sr=sr)
    except (AudioError, ValueError) as exc:
        view.notes.append(f"audio unavailable: {exc}")
        return view
    mix = item.mix_meta
    if mix is None:
        view.signals["audio"] = audio
        view.files["audio"] = file
        return view
    # A mixed item: play the file as the mix, and rebuild the components from the sources it records.
    view.signals["mix"] = audio
    view.files["mix"] = file
    try:
        result = remix(mix, sources_root if sources_root is not None else root)
    except (AudioError, MixError, ValueError) as exc:
        view.notes.append(f"components unavailable: {exc}")
        return view
    if result.mix.size != audio.size:
        view.notes.append(f"components unavailable: rebuilt mix has {result.mix.size} samples, the file {audio.size}")
        return view
    view.signals.update({"A": result.a, "B": result.b})
    view.onsets = {"A": result.meta.onset_a_s or 0.0, "B": result.meta.onset_b_s or 0.0}
    return view


def prepare(
    target: Any,
    *,
    root: str | Path | None = None,
    sources_root: str | Path | None = None,
    sr: int = TARGET_SR,
    title: str | None = None,
) -> ListenView:
    """Build what :func:`listen` shows, without displaying it.

    Args:
        target: An item, e.g. a :class:`FoundationItem` or :class:`ChatItem` (audio resolved against ``root``; an
            item with mix metadata, :attr:`~airbench_nb.records.ItemBase.mix_meta`, is rebuilt from its sources to
            offer components; its kind's gold is shown where it registered it), a :class:`MixResult`, a
            :class:`Clip`, a path to an audio file, or a mono array at ``sr``.
        root: Data root of an item's audio (and of its mix sources unless ``sources_root`` is given).
        sources_root: Data root of a mixed item's source files, when not ``root``.
        sr: Sample rate to load at (and of a bare array).
        title: Heading; default from the target.

    Returns:
        The :class:`ListenView`.

    Raises:
        AudioError: For a path that cannot be loaded, or an unusable array (items never raise: problems become
            notes).
        TypeError: For an unsupported target.
    """
    if isinstance(target, ItemBase):
        view = _item_view(target, root, sources_root, sr)
    elif isinstance(target, MixResult):
        view = ListenView(title="mix", sr=target.sr, info=_mix_info(target.meta))
        _with_mix(view, target)
    elif isinstance(target, Clip):
        view = ListenView(title=target.source or "clip", sr=target.sr, info={"source": target.source})
        if target.sha256:
            view.info["sha256"] = target.sha256
        view.signals["audio"] = np.asarray(target.samples)
    elif isinstance(target, str | Path):
        path = Path(target)
        view = ListenView(title=path.name, sr=sr, info={"path": str(target)})
        view.signals["audio"] = load_audio(path, sr=sr)
        view.files["audio"] = path
    elif isinstance(target, np.ndarray):
        from airbench_nb.audio import check_samples

        view = ListenView(title="audio", sr=sr, info={})
        view.signals["audio"] = check_samples(target, "audio", allow_silent=True)
    else:
        raise TypeError(f"cannot listen to a {type(target).__name__}: give an item, MixResult, Clip, path or array")
    if title:
        view.title = title
    main = next(iter(view.signals.values()), None)
    if main is not None and not view.side_by_side:
        view.info["duration_s"] = round(main.size / view.sr, 3)
    if main is not None:
        for label, signal in view.signals.items():
            view.info[f"loudness {label}"] = _loudness_text(signal, view.sr)
    return view


def _loudness_text(signal: np.ndarray, sr: int) -> str:
    nonzero = np.flatnonzero(signal)
    if nonzero.size == 0:
        return "silent"
    try:
        value = loudness(signal[nonzero[0] : nonzero[-1] + 1], sr)
    except AudioError as exc:
        return f"unmeasurable ({exc})"
    return f"{value.value:.1f} {value.unit}"


def _envelope(signal: np.ndarray, sr: int, points: int = WAVEFORM_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = signal.size
    if n <= points:
        t = np.arange(n) / sr
        return t, signal, signal
    bucket = int(np.ceil(n / points))
    padded = np.zeros(bucket * int(np.ceil(n / bucket)), dtype=np.float32)
    padded[:n] = signal
    blocks = padded.reshape(-1, bucket)
    t = (np.arange(blocks.shape[0]) * bucket + bucket / 2) / sr
    return t, blocks.min(axis=1), blocks.max(axis=1)


def plot_audio(
    signal: np.ndarray,
    sr: int = TARGET_SR,
    *,
    title: str = "",
    components: dict[str, np.ndarray] | None = None,
    onsets: dict[str, float] | None = None,
    figsize: tuple[float, float] = (9, 4.2),
) -> Any:
    """Figure with the waveform (components overlaid, onsets marked) and a log-mel spectrogram of ``signal``.

    Args:
        signal: Mono samples to show.
        sr: Sample rate in Hz.
        title: Figure title.
        components: Signals drawn over the waveform in colour (e.g. ``{"A": a, "B": b}``).
        onsets: Times (s) to mark with a dashed line, by label.
        figsize: Figure size in inches (smaller for clips shown side by side).

    Returns:
        A matplotlib Figure (close it after displaying it).
    """
    import librosa
    import librosa.display
    import matplotlib.pyplot as plt

    fig, (ax_wave, ax_spec) = plt.subplots(2, 1, figsize=figsize, sharex=True, height_ratios=(1, 1.4))
    t, low, high = _envelope(np.asarray(signal, dtype=np.float32), sr)
    ax_wave.fill_between(t, low, high, color="0.45", linewidth=0.5, label=None if components else "audio")
    colours = {"A": "tab:blue", "B": "tab:orange"}
    for label, comp in (components or {}).items():
        tc, lc, hc = _envelope(np.asarray(comp, dtype=np.float32), sr)
        ax_wave.fill_between(tc, lc, hc, color=colours.get(label, "tab:green"), alpha=0.45, linewidth=0, label=label)
    for label, onset in (onsets or {}).items():
        ax_wave.axvline(onset, color=colours.get(label, "k"), linestyle="--", linewidth=1)
    if components:
        ax_wave.legend(loc="upper right", fontsize="small")
    ax_wave.set(ylabel="amplitude", title=title)
    ax_wave.set_xlim(0, max(signal.size / sr, 1.0 / sr))
    hop = max(1, int(round(HOP_S * sr)))
    n_fft = 512 if sr <= 16000 else 2048
    power = librosa.feature.melspectrogram(
        y=np.asarray(signal, dtype=np.float32), sr=sr, n_fft=n_fft, hop_length=hop, n_mels=MEL_BANDS
    )
    db = librosa.power_to_db(power, ref=np.max(power) if np.any(power) else 1.0, top_db=80.0)
    image = librosa.display.specshow(db, sr=sr, hop_length=hop, x_axis="time", y_axis="mel", ax=ax_spec)
    ax_spec.set(xlabel="time (s)", ylabel="mel frequency (Hz)")
    if figsize[0] < 7:  # a narrow figure (clips side by side): fewer time ticks, so that their labels do not overlap
        from matplotlib.ticker import MaxNLocator

        ax_spec.xaxis.set_major_locator(MaxNLocator(nbins=4))
    fig.colorbar(image, ax=[ax_wave, ax_spec], format="%+.0f dB", shrink=0.6, pad=0.01)
    return fig


AUDIO_FOLDER = "listen_audio"
"""Folder (under the :func:`link_audio` base) where linked players' audio that is not a file there is written."""

_LINK_BASE: list[Path] = []
"""The base folder of linked players (empty: players embed their audio)."""


def link_audio(base_dir: str | Path | None) -> None:
    """Make static players link audio files relative to ``base_dir`` instead of embedding them (None: embed).

    Headless runs (``airbench-nb run``) call this with the run folder, where the executed notebooks and their HTML
    live: a player then links the file its signal was loaded from, by a path relative to ``base_dir`` (through a
    link such as the run's ``data/`` into the data cache), so the HTML stays small and the audio plays when the
    folder is opened locally or served. A signal that is no file under ``base_dir`` (a component at its level in
    a mix, a remix, a file elsewhere) is written once, as 16-bit WAV named by its content hash, into
    ``base_dir/listen_audio/``. Widgets in a live front end always embed.
    """
    _LINK_BASE.clear()
    if base_dir is not None:
        _LINK_BASE.append(Path(base_dir))


def _relative_link(file: Path, base: Path) -> str | None:
    """``file`` as a path relative to ``base``, directly or through a symbolic link that is a child of ``base``."""
    target, root = file.resolve(), base.resolve()
    if target.is_relative_to(root):
        return target.relative_to(root).as_posix()
    for child in sorted(base.iterdir()) if base.is_dir() else []:
        if child.is_symlink() and target.is_relative_to(child.resolve()):
            return (Path(child.name) / target.relative_to(child.resolve())).as_posix()
    return None


class LinkedAudio:
    """A player that links an audio file (HTML ``<audio>`` with a relative ``src``) instead of embedding it."""

    def __init__(self, src: str) -> None:
        """Args: src: The file's path relative to the notebook's folder."""
        self.src = src

    def _repr_html_(self) -> str:
        from urllib.parse import quote

        return f'<audio controls preload="none" src="{html.escape(quote(self.src))}"></audio>'

    def __repr__(self) -> str:
        return f"audio: {self.src}"


def _linked_player(signal: np.ndarray, sr: int, file: Path | None, base: Path) -> LinkedAudio:
    import hashlib

    import soundfile as sf

    src = _relative_link(file, base) if file is not None else None
    if src is None:
        pcm = (np.clip(signal, -1.0, 1.0) * 32767.0).astype("<i2")
        name = f"{hashlib.sha256(pcm.tobytes() + str(sr).encode()).hexdigest()[:20]}.wav"
        path = base / AUDIO_FOLDER / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            sf.write(path, pcm, sr, subtype="PCM_16")
        src = f"{AUDIO_FOLDER}/{name}"
    return LinkedAudio(src)


def _audio_player(signal: np.ndarray, sr: int, file: Path | None = None, *, static: bool = False) -> Any:
    from IPython.display import Audio

    if static and _LINK_BASE:
        return _linked_player(signal, sr, file, _LINK_BASE[0])
    peak = float(np.max(np.abs(signal))) if signal.size else 0.0
    # Not normalised, so that components keep their level in the mix; louder-than-full-scale audio must be.
    return Audio(signal, rate=sr, normalize=peak > 1.0 or peak == 0.0)


def _show_signal(view: ListenView, label: str, *, static: bool = False) -> None:
    import matplotlib.pyplot as plt
    from IPython.display import display

    signal = view.signals[label]
    _show_html(
        f"<b>{html.escape(label)}</b> ({signal.size / view.sr:.2f} s)", f"{label} ({signal.size / view.sr:.2f} s)"
    )
    display(_audio_player(signal, view.sr, view.files.get(label), static=static))
    components = {k: v for k, v in view.signals.items() if k in ("A", "B")} if label == "mix" else None
    # Drawn with pyplot's interactive mode off and one figure at a time: in JupyterLab 4 with ipykernel 7 a widget
    # callback may run on another kernel thread while the inline backend flushes figures, which leaves a figure blank.
    with _FIGURE_LOCK, plt.ioff():
        fig = plot_audio(signal, view.sr, title=f"{view.title}: {label}", components=components, onsets=view.onsets)
        image = figure_png(fig, dpi=LISTEN_DPI)
        plt.close(fig)
    display(image)


CLIP_FIGSIZE = (5.0, 3.4)
"""Figure size (inches) of each clip of a multi-clip item, so that two or three fit side by side."""


def _clip_column(view: ListenView, label: str, *, static: bool) -> tuple[str, str]:
    """HTML and text of one clip's column: its label, player and figure (PNG inline)."""
    import base64

    import matplotlib.pyplot as plt

    signal = view.signals[label]
    player = _audio_player(signal, view.sr, view.files.get(label), static=static)
    with _FIGURE_LOCK, plt.ioff():
        fig = plot_audio(signal, view.sr, title=f"{view.title}: {label}", figsize=CLIP_FIGSIZE)
        png = figure_png(fig, dpi=LISTEN_DPI).data
        plt.close(fig)
    head = f"{label} ({signal.size / view.sr:.2f} s)"
    data = base64.b64encode(png).decode()
    image = f"<img alt='{html.escape(head)}' style='max-width:100%' src='data:image/png;base64,{data}'>"
    column = f"<div style='flex:1;min-width:0'><b>{html.escape(head)}</b><br>{player._repr_html_()}<br>{image}</div>"
    return column, f"{head}: {player!r}"


def _show_side_by_side(view: ListenView, *, static: bool) -> None:
    """Display every clip of a multi-clip item in one row: label, player and figure per column."""
    columns = [_clip_column(view, label, static=static) for label in view.signals]
    _show_html(
        "<div style='display:flex;gap:1em;align-items:flex-start'>" + "".join(c for c, _ in columns) + "</div>",
        "\n".join(t for _, t in columns),
    )


def figure_png(fig: Any, dpi: int = 80) -> Any:
    """A figure as an IPython PNG image: shown the same under any matplotlib backend (inline, Agg, ...)."""
    import io

    from IPython.display import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return Image(data=buffer.getvalue(), format="png")


def render(view: ListenView, *, interactive: bool | None = None) -> ListenView:
    """Display a :class:`ListenView`: widgets when interactive, static outputs otherwise.

    Args:
        view: What to show.
        interactive: Widgets (True), static output (False) or auto (None, see the module docstring).

    Returns:
        The view, with ``widget`` set in interactive mode.
    """
    from IPython.display import display

    if interactive is None:
        interactive = widgets_wanted()
    if not interactive:
        _show_html(view.html, view.text)
        if view.side_by_side:
            _show_side_by_side(view, static=True)
            return view
        for label in view.signals:
            if label in ("A", "B"):  # components: players only, the mix's figure overlays them
                _show_html(
                    f"<b>component {label}</b> (level as in the mix)", f"component {label} (level as in the mix)"
                )
                display(_audio_player(view.signals[label], view.sr, view.files.get(label), static=True))
            else:
                _show_signal(view, label, static=True)
        return view
    import ipywidgets as widgets

    out = widgets.Output()
    children: list[Any] = [widgets.HTML(view.html)]
    if view.side_by_side:
        with out:
            _show_side_by_side(view, static=False)
        view.widget = widgets.VBox([*children, out])
        display(view.widget)
        return view
    if view.signals:
        selector = widgets.ToggleButtons(options=list(view.signals), description="play", value=next(iter(view.signals)))

        def _draw(change: dict[str, Any] | None = None) -> None:
            with out:
                out.clear_output(wait=True)
                _show_signal(view, selector.value)

        selector.observe(_draw, names="value")
        _draw()
        if len(view.signals) > 1:
            children.append(selector)
    children.append(out)
    view.widget = widgets.VBox(children)
    display(view.widget)
    return view


def listen(
    target: Any,
    *,
    root: str | Path | None = None,
    sources_root: str | Path | None = None,
    sr: int = TARGET_SR,
    title: str | None = None,
    interactive: bool | None = None,
) -> ListenView:
    """Show an audio player, the waveform, a log-mel spectrogram and the metadata of an item, mix, clip or file.

    For a mix (a :class:`MixResult`, or a Chat item whose mix sources can be found), the mix and each
    component (A, B) can be played and seen.

    Args:
        target: What to listen to (see :func:`prepare`).
        root: Data root of an item's audio (and of its mix sources unless ``sources_root`` is given).
        sources_root: Data root of a mixed item's source files, when not ``root``.
        sr: Sample rate to load at.
        title: Heading; default from the target.
        interactive: Widgets (True), static output (False) or auto (None: widgets in a live front end).

    Returns:
        The :class:`ListenView` shown (``widget`` set in interactive mode).

    Raises:
        AudioError: For a path or array that cannot be used (an item's problems are shown as notes instead).
    """
    view = prepare(target, root=root, sources_root=sources_root, sr=sr, title=title)
    return render(view, interactive=interactive)


class ItemBrowser:
    """Browse items of a manifest by category and task: dropdowns, a slider, and :func:`listen` for the item."""

    def __init__(
        self,
        items: Sequence[AnyItem],
        root: str | Path | None = None,
        sources_root: str | Path | None = None,
        sr: int = TARGET_SR,
    ) -> None:
        """Hold the items; widgets are built by :meth:`widget`.

        Args:
            items: The items to browse.
            root: Data root of their audio.
            sources_root: Data root of mixed items' source files, when not ``root``.
            sr: Sample rate to load at.
        """
        self.items = list(items)
        self.root = root
        self.sources_root = sources_root
        self.sr = sr
        self.category = ALL
        self.task = ALL
        self._box: Any = None
        self.controls: dict[str, Any] = {}
        """The widgets of :meth:`widget` by name (``category``, ``task``, ``slider``, ``label``)."""

    def categories(self) -> list[str]:
        """Categories present, sorted."""
        return sorted({str(i.category) for i in self.items})

    def tasks(self, category: str = ALL) -> list[str]:
        """Tasks present (in ``category`` unless ``(all)``), sorted case-insensitively."""
        return sorted({i.task for i in self.items if category in (ALL, i.category)}, key=str.lower)

    def filtered(self) -> list[AnyItem]:
        """Items passing the current category and task filters."""
        return [i for i in self.items if self.category in (ALL, i.category) and self.task in (ALL, i.task)]

    def table(self, max_rows: int = 20) -> Any:
        """A pandas DataFrame of the filtered items (uid, task, category, question, audio)."""
        import pandas as pd

        rows = [
            {"uid": i.uid, "task": i.task, "category": i.category, "question": i.question[:80], "audio": i.audio}
            for i in self.filtered()[:max_rows]
        ]
        return pd.DataFrame(rows, columns=["uid", "task", "category", "question", "audio"])

    def show_static(self, n_items: int = 1, max_rows: int = 20) -> None:
        """Display the filter, a table of the filtered items, and :func:`listen` for the first ``n_items``."""
        from IPython.display import display

        chosen = self.filtered()
        summary = (
            f"{len(chosen)} of {len(self.items)} items (category: {self.category}, task: {self.task}); "
            f"showing the first {min(n_items, len(chosen))}"
        )
        _show_html(f"<b>{html.escape(summary)}</b>", summary)
        display(self.table(max_rows))
        for item in chosen[:n_items]:
            listen(item, root=self.root, sources_root=self.sources_root, sr=self.sr, interactive=False)

    def widget(self) -> Any:
        """The interactive browser: category and task dropdowns, an item slider, and the item's view."""
        import ipywidgets as widgets

        category = widgets.Dropdown(options=[ALL, *self.categories()], value=self.category, description="category")
        task = widgets.Dropdown(options=[ALL, *self.tasks(self.category)], value=self.task, description="task")
        slider = widgets.IntSlider(min=0, max=max(0, len(self.filtered()) - 1), value=0, description="item")
        label = widgets.Label()
        out = widgets.Output()

        def _draw(change: dict[str, Any] | None = None) -> None:
            chosen = self.filtered()
            with out:
                out.clear_output(wait=True)
                if not chosen:
                    label.value = "no items match"
                    return
                item = chosen[min(slider.value, len(chosen) - 1)]
                label.value = f"{slider.value + 1} / {len(chosen)}: {item.uid}"
                listen(item, root=self.root, sources_root=self.sources_root, sr=self.sr, interactive=False)

        def _on_category(change: dict[str, Any]) -> None:
            self.category = change["new"]
            self.task = ALL
            task.options = [ALL, *self.tasks(self.category)]
            task.value = ALL
            _on_filter()

        def _on_task(change: dict[str, Any]) -> None:
            self.task = change["new"] if change["new"] is not None else ALL
            _on_filter()

        def _on_filter() -> None:
            slider.value = 0
            slider.max = max(0, len(self.filtered()) - 1)
            _draw()

        category.observe(_on_category, names="value")
        task.observe(_on_task, names="value")
        slider.observe(_draw, names="value")
        _draw()
        self._box = widgets.VBox([widgets.HBox([category, task]), widgets.HBox([slider, label]), out])
        self.controls = {"category": category, "task": task, "slider": slider, "label": label}
        return self._box


def browse(
    items: Sequence[AnyItem] | str | Path,
    *,
    root: str | Path | None = None,
    sources_root: str | Path | None = None,
    category: str = ALL,
    task: str = ALL,
    interactive: bool | None = None,
    static_items: int = 1,
    sr: int = TARGET_SR,
) -> ItemBrowser:
    """Browse items: widgets (category and task dropdowns, an item slider) or, headless, a table and the first items.

    Args:
        items: Items, or the path of a JSONL manifest (its data root is then found from ``dataset.json``).
        root: Data root of the items' audio (default: the manifest's, for a path).
        sources_root: Data root of mixed items' source files, when not ``root``.
        category: Initial category filter (``(all)``: none).
        task: Initial task filter.
        interactive: Widgets (True), static output (False) or auto (None, see the module docstring).
        static_items: How many items the static rendering shows in full.
        sr: Sample rate to load at.

    Returns:
        The :class:`ItemBrowser` (its widget is displayed in interactive mode).

    Raises:
        ValueError: For a category or task filter that matches none of the items' values.
    """
    from IPython.display import display

    if isinstance(items, str | Path):
        from airbench_nb.manifests import data_root, read_manifest

        manifest = Path(items)
        items = read_manifest(manifest)
        root = root if root is not None else data_root(manifest)
    browser = ItemBrowser(items, root=root, sources_root=sources_root, sr=sr)
    if category != ALL and category not in browser.categories():
        raise ValueError(f"no items in category {category!r}; present: {', '.join(browser.categories()) or 'none'}")
    if task != ALL and task not in browser.tasks(category):
        raise ValueError(f"no items of task {task!r}; present: {', '.join(browser.tasks(category)) or 'none'}")
    browser.category, browser.task = category, task
    if interactive is None:
        interactive = widgets_wanted()
    if interactive:
        display(browser.widget())
    else:
        browser.show_static(static_items)
    return browser
