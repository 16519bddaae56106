"""Listening widgets render without a front end: statically, and as widgets driven by their controls."""

import matplotlib
import numpy as np
import pytest
import soundfile as sf

from airbench_nb.audio import AudioError
from airbench_nb.listen import browse, listen, plot_audio, prepare, widgets_wanted
from airbench_nb.manifests import write_manifest
from airbench_nb.mix import mix, mix_files
from airbench_nb.records import ChatItem, FoundationItem

matplotlib.use("Agg")
SR = 16000


def _tone(freq, seconds, amp=0.3):
    t = np.arange(int(seconds * SR)) / SR
    return (amp * np.sin(2 * np.pi * freq * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t))).astype(np.float32)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A data root with two plain clips, two sources and their mix, and items pointing at them."""
    root = tmp_path_factory.mktemp("listen")
    sf.write(str(root / "low.wav"), _tone(150, 0.8), SR)
    sf.write(str(root / "high.wav"), _tone(900, 0.6), SR)
    noise = (0.05 * np.random.default_rng(0).standard_normal(SR)).astype(np.float32)
    sf.write(str(root / "noise.wav"), noise, SR)
    mixed = mix_files("low.wav", "noise.wav", root=root, out=root / "mix.wav", snr_db=5.0, offset_s=0.3)
    items = [
        FoundationItem(
            uid="f1",
            dataset="synthetic",
            audio="low.wav",
            task="Music_Midi_Pitch_Analysis",
            question="What is the pitch?",
            choices=["D3", "A4", "C5", "E2"],
            answer=0,
            meta={"midi": 50},
        ),
        FoundationItem(
            uid="f2",
            dataset="synthetic",
            audio="high.wav",
            task="Speaker_Gender_Recognition",
            question="Who speaks?",
            choices=["male", "female"],
            answer=1,
        ),
        ChatItem(
            uid="c1",
            dataset="synthetic",
            audio="mix.wav",
            task="speech_and_sound_QA",
            question="Which starts first?",
            reference="The tone, by 0.3 s.",
            meta_info="a tone and noise",
            mix=mixed.meta,
        ),
        FoundationItem(
            uid="broken",
            dataset="synthetic",
            audio="missing.wav",
            task="Speaker_Gender_Recognition",
            question="Who?",
            choices=["male", "female"],
            answer=0,
        ),
    ]
    return root, items, mixed


def test_listen_to_a_mix_offers_its_components(data, capsys):
    _, _, mixed = data
    view = listen(mixed, interactive=False, title="m")
    assert list(view.signals) == ["mix", "A", "B"] and view.widget is None
    np.testing.assert_array_equal(view.signals["A"] + view.signals["B"], view.signals["mix"])
    assert view.info["mix.louder"] == mixed.meta.louder and view.info["mix.ahead"] == "before"
    assert view.onsets["A"] == pytest.approx(0.0) and view.onsets["B"] == pytest.approx(0.3)
    shown = capsys.readouterr().out
    assert "component B" in shown and "mix.snr_db_requested: 5" in shown


def test_listen_interactive_switches_between_mix_and_components(data):
    _, _, mixed = data
    view = listen(mixed, interactive=True)
    box = view.widget
    selector = box.children[1]
    assert list(selector.options) == ["mix", "A", "B"]
    selector.value = "B"  # redraws the player and figure in the Output widget
    selector.value = "mix"
    assert box.children[-1].__class__.__name__ == "Output"


def test_listen_to_items(data):
    root, items, mixed = data
    view = listen(items[0], root=root, interactive=False)
    assert list(view.signals) == ["audio"] and view.info["answer"] == "A"
    assert "<b>A. D3 ✓</b>" in view.html and "What is the pitch?" in view.html and "midi" in view.html
    chat = listen(items[2], root=root, interactive=False)
    assert list(chat.signals) == ["mix", "A", "B"] and not chat.notes
    np.testing.assert_allclose(chat.signals["mix"], chat.signals["A"] + chat.signals["B"], atol=2 / 32768)
    assert "The tone, by 0.3 s." in chat.html and "mix.snr_db_measured" in chat.html
    broken = listen(items[3], root=root, interactive=True)
    assert not broken.signals and "audio unavailable" in broken.notes[0]
    assert "no data root" in prepare(items[0]).notes[0]


def test_listen_to_files_clips_and_arrays(data):
    root, _, _ = data
    assert prepare(root / "low.wav").info["duration_s"] == pytest.approx(0.8)
    assert listen(str(root / "high.wav"), interactive=True).widget is not None
    assert "loudness audio" in prepare(_tone(440, 0.2)).info  # too short for LUFS: dBFS, no error
    assert prepare(np.zeros(100, np.float32)).info["loudness audio"] == "silent"
    with pytest.raises(AudioError, match="no such audio file"):
        prepare(root / "none.wav")
    with pytest.raises(TypeError, match="cannot listen to a dict"):
        prepare({"audio": 1})


def test_plot_audio_has_waveform_and_log_mel(data):
    _, _, mixed = data
    fig = plot_audio(mixed.mix, SR, title="t", components={"A": mixed.a, "B": mixed.b}, onsets={"A": 0.3})
    titles = [ax.get_ylabel() for ax in fig.axes]
    assert "amplitude" in titles and "mel frequency (Hz)" in titles
    matplotlib.pyplot.close(fig)


def test_browse_static_and_filters(data, capsys):
    root, items, _ = data
    browser = browse(items, root=root, interactive=False, static_items=1)
    assert len(browser.filtered()) == 4 and "4 of 4 items" in capsys.readouterr().out
    speech = browse(items, root=root, category="speech", interactive=False, static_items=0)
    assert [i.uid for i in speech.filtered()] == ["f2", "broken"]
    assert browser.tasks("mixed") == ["speech_and_sound_QA"]
    with pytest.raises(ValueError, match="no items in category 'sound'"):
        browse(items, category="sound", interactive=False)
    with pytest.raises(ValueError, match="no items of task 'Music_AQA'"):
        browse(items, task="Music_AQA", interactive=False)


def test_browse_widget_follows_its_controls(data):
    root, items, _ = data
    browser = browse(items, root=root, interactive=True)
    controls = browser.controls
    assert controls["slider"].max == 3 and controls["label"].value.startswith("1 / 4")
    controls["category"].value = "speech"
    assert [i.uid for i in browser.filtered()] == ["f2", "broken"] and controls["slider"].max == 1
    assert list(controls["task"].options) == ["(all)", "Speaker_Gender_Recognition"]
    controls["slider"].value = 1  # the item with missing audio: shown with a note, no error
    assert controls["label"].value == "2 / 2: broken"
    controls["category"].value = "mixed"
    assert controls["label"].value == "1 / 1: c1"


def test_browse_a_manifest_file(data, tmp_path):
    root, items, _ = data
    write_manifest(root / "items.jsonl", items)
    browser = browse(root / "items.jsonl", interactive=False, static_items=0)
    assert browser.root == root.resolve() and len(browser.items) == 4


def test_widgets_wanted(monkeypatch):
    monkeypatch.setenv("AIRBENCH_WIDGETS", "1")
    assert widgets_wanted()
    monkeypatch.setenv("AIRBENCH_WIDGETS", "0")
    assert not widgets_wanted()
    monkeypatch.delenv("AIRBENCH_WIDGETS")
    assert not widgets_wanted()  # no kernel here: static


def test_mix_of_arrays_is_listenable():
    result = mix(_tone(200, 1.0), _tone(700, 0.5), gain_a_db=0.0, gain_b_db=-6.0, offset_s=0.2)
    assert prepare(result).info["loudness B"].endswith("LUFS")


def test_static_players_link_files_under_the_run_folder(data, tmp_path, capsys):
    """Headless runs link audio (relative paths, through the run's data link) instead of embedding it."""
    from airbench_nb.listen import AUDIO_FOLDER, link_audio

    root, items, mixed = data
    run = tmp_path / "run"
    run.mkdir()
    (run / "data").symlink_to(root, target_is_directory=True)
    link_audio(run)
    try:
        capsys.readouterr()
        listen(items[0], root=run / "data", interactive=False)  # the item's own file: linked through data/
        listen(items[2], root=root, interactive=False)  # a mixed item: the mix file, its components written once
        listen(mixed, interactive=False)  # a mix in memory: all three written
        again = listen(mixed, interactive=False)  # same signals: same files, nothing new
    finally:
        link_audio(None)
    shown = capsys.readouterr().out
    assert "audio: data/low.wav" in shown and "audio: data/mix.wav" in shown
    written = sorted((run / AUDIO_FOLDER).iterdir())
    # components A and B (the Chat item's equal those of `mixed`: written once) and the in-memory mix; the mix
    # file is linked, not rewritten; everything linked exists relative to the run folder
    assert len(written) == 3
    for line in shown.splitlines():
        if line.startswith("audio: "):
            assert (run / line.removeprefix("audio: ")).is_file(), line
    assert "base64" not in shown and again.signals
    one = sf.read(str(written[0]), dtype="int16")[0]
    assert one.dtype == np.int16 and one.size > 0
    from airbench_nb.listen import LinkedAudio

    assert LinkedAudio("a b/x.wav")._repr_html_() == '<audio controls preload="none" src="a%20b/x.wav"></audio>'


def test_players_embed_by_default(data):
    from airbench_nb.listen import _audio_player

    root, _, _ = data
    player = _audio_player(_tone(440, 0.1), SR, root / "low.wav", static=True)
    assert "base64" in player._repr_html_()  # no link_audio(): embedded, as in a live session


def test_a_multi_clip_item_shows_every_clip_side_by_side(data, capsys):
    """Issue 14: the clips of an item about several are offered and shown side by side, in their order."""
    root, _, _ = data
    item = FoundationItem(
        uid="pair",
        dataset="synthetic",
        audios=["low.wav", "high.wav"],
        task="kit_pitch_compare",
        question="Which clip has the higher pitch?",
        choices=["the first clip", "the second clip"],
        answer=1,
    )
    view = listen(item, root=root, interactive=False)
    assert list(view.signals) == ["clip 1", "clip 2"] and view.side_by_side and not view.notes
    assert view.signals["clip 1"].size == int(0.8 * SR) and view.signals["clip 2"].size == int(0.6 * SR)
    shown = capsys.readouterr().out
    assert shown.index("clip 1 (0.80 s)") < shown.index("clip 2 (0.60 s)")
    from airbench_nb.listen import _clip_column

    column, _ = _clip_column(view, "clip 2", static=True)
    assert "<audio" in column and "data:image/png;base64," in column
    live = listen(item, root=root, interactive=True)
    assert type(live.widget.children[-1]).__name__ == "Output"  # the row is drawn there (in a kernel)
    broken = item.model_copy(update={"audios": ["low.wav", "missing.wav"]})
    partial = listen(broken, root=root, interactive=False)
    assert list(partial.signals) == ["clip 1"] and "clip 2 unavailable" in partial.notes[0]
