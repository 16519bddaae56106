"""Offline baselines: ``random``, ``first``, ``oracle``, ``dsp`` (signal processing) and ``text-prior``.

They need no model and no network, and they calibrate a table: ``random`` is chance, ``first`` shows letter bias
in scoring, ``oracle`` checks the pipeline end to end (it must score 100%), and ``dsp`` shows how far plain
signal processing gets on the tasks whose answer is measurable (pitch, velocity, gender, number of voices, event
count); ``text-prior`` is a planted model that answers from the question's text alone (:func:`text_prior_answer`),
unchanged under every audio-reliance control by construction. Where a baseline cannot answer, it says so
(``I cannot tell.``): it never guesses, so the judge abstains.

Items scored against references (transcription, scene, events, joint). ``oracle`` answers from the item in the form
the prompts ask (:func:`oracle_answer`): the reference transcript, the scene label, the events comma-separated (or
``none``), and for a joint item the three labelled lines (``Transcript:``, ``Scene:``, ``Events:``), under a
``Final answer:`` line when the item asks for SSEU-Bench's chain of thought; it must score WER 0, mACC 1 and mAP 1.
``random`` names a seeded class for a scene and a seeded subset of the classes for events, ``first`` the first class
for both (chance and label-bias calibrations of mACC and mAP); neither can transcribe (``I cannot tell.``), and a joint
item gets their scene and events under the labels, with that line as its transcript. ``dsp`` measures nothing that
names a scene, an event class or a word: it answers ``I cannot tell.`` to these kinds. Translation and caption items:
``oracle`` answers the first reference (BLEU and CIDEr-D against itself are high but not 100: the other references
count too), the others ``I cannot tell.``; the tiered benchmark's open-vocabulary items (tier D): ``oracle`` names
the gold class ("I hear <its first name>."), ``random`` a seeded class, ``first`` the first class, ``dsp`` cannot
tell; speech generation: ``oracle`` writes the text asked for, but no baseline
speaks, so every spoken answer is a failure with no audio. Every baseline serves every kind (``kinds`` is None).

Any number of options (2 to 26). ``random`` names a seeded letter among the item's own ``n`` (uniform: chance is
``1/n``), ``first`` always ``A``, ``oracle`` the gold letter (A-Z); ``dsp`` answers by the letter of the option its
measurement picks, whatever the number of options. A kind asked for an option's text (``ANSWERED_BY_TEXT``: MMAU,
MMAR) gets the same options' texts in place of their letters (``first`` the first option's text, ...), and ``dsp``
cannot tell. Such a kind keeps its release's repeated and empty options: the oracle's text, the gold's, is read as
the gold (options of one text are one answer), and ``first`` answers the first option's text even when it is empty.

Several clips and turns. ``random`` and ``first`` answer a multi-clip item like any Foundation item (a seeded letter,
``A``), and every turn of a multi-turn item as they answer Chat (``I cannot tell.``); ``oracle`` answers the gold
letter, and on each turn that turn's reference. ``dsp`` compares the clips of the kit's multi-clip tasks by
measurement: the higher (or lower) pitch by median F0, the louder (or quieter) clip by BS.1770 loudness, the clip
with more (or fewer) events by onset counting, and same-or-different speaker only when the two voices' median F0
differ by more than :data:`DIFFERENT_SPEAKER_F0_RATIO` (a voice of the other gender); otherwise it cannot tell.

The tiered benchmark's closed set. ``random``, ``first`` and ``oracle`` answer it like any item of up to 26 options;
``dsp`` measures the clip's defining properties and answers with a rationale and a final ``Answer: X`` line
(:mod:`airbench_nb.models.dsp_sources`), or cannot tell when no option's class has measurable ranges.

Per kind. What the baselines answer is registered per item kind, next to each answer: :func:`oracle_answer` and
:func:`baseline_guess` dispatch on the item's class (``functools.singledispatch``, following the class hierarchy: the
single-choice registration answers Foundation and the tiered closed set alike). A new kind registers its two
functions (``@oracle_answer.register(NewItem)``, ``@baseline_guess.register(NewItem)``) with no edit here; a kind
without them is refused (``TypeError``, the item's error).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import singledispatch
from typing import cast

import numpy as np

from airbench_nb.audio import SilentAudioError
from airbench_nb.models.base import Generation, GenerationParams, Prompt
from airbench_nb.records import (
    LETTERS,
    CaptionItem,
    ChatItem,
    EventsItem,
    JointItem,
    OpenSourceItem,
    SceneItem,
    SingleChoiceItem,
    SoundSourceItem,
    SpeechGenerationItem,
    TranscriptionItem,
    TranslationItem,
)

logger = logging.getLogger(__name__)

CANNOT_TELL = "I cannot tell."
"""What a baseline answers when it has no way to answer (Chat items, unsupported tasks)."""
BASELINES = ("random", "first", "oracle", "dsp", "text-prior")
"""Names accepted after ``baseline:``."""


class Baseline:
    """A baseline model; see the module docstring."""

    def __init__(self, name: str, seed: int = 0, batch_size: int = 64) -> None:
        """Create the baseline ``name`` (``random`` uses ``seed``)."""
        if name not in BASELINES:
            raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
        self.name = name
        self.seed = seed
        self.batch_size = batch_size
        self.spec = f"baseline:{name}"
        self.kinds: frozenset[str] | None = None
        """Every item kind (see the module docstring for what each baseline answers)."""
        self.text_alone = name != "dsp"
        self.samples_vary = False
        """Deterministic: every baseline ignores the temperature (``random`` draws from its own seed and the uid,
        the same answer on every sample); ``infer --samples K`` stores one sample."""
        """Whether it answers a prompt without audio: every baseline but ``dsp`` (which measures the audio) never
        reads the clip."""
        self.reads_audio = name == "dsp"
        """Whether it reads the clips' samples (``dsp`` only): the runner decodes no clip for the others."""

    def _answer(self, prompt: Prompt) -> str:
        if self.name == "oracle":
            return oracle_answer(prompt.item, prompt.turn)
        if self.name == "text-prior":
            return text_prior_answer(prompt.item)
        return baseline_guess(prompt.item, self, prompt)

    def _pick(self, uid: str, classes: list[str], salt: str) -> int:
        digest = hashlib.sha256(f"{self.seed}:{uid}:{salt}".encode()).digest()
        return int.from_bytes(digest[:4], "big") % len(classes)

    def _scene_guess(self, uid: str, classes: list[str]) -> str:
        return classes[0] if self.name == "first" else classes[self._pick(uid, classes, "scene")]

    def _events_guess(self, uid: str, classes: list[str]) -> str:
        if self.name == "first":
            return classes[0]
        chosen = [c for c in classes if self._pick(uid, [c, c], f"event:{c}") == 0]  # each class with chance 1/2
        return events_text(chosen)

    def generate(self, prompts: list[Prompt], params: GenerationParams) -> list[Generation]:
        """Answer each prompt; a DSP failure on one item becomes that item's error."""
        out = []
        for prompt in prompts:
            try:
                text = self._answer(prompt)
            except Exception as exc:  # noqa: BLE001 - one item's measurement failure is that item's error
                out.append(Generation(error=f"{self.spec}: {type(exc).__name__}: {exc}"))
                continue
            out.append(Generation(text=text, input_tokens=0, output_tokens=0))
        return out

    def close(self) -> None:
        """Nothing to release."""


def events_text(labels: list[str]) -> str:
    """Events as the prompts ask for them: comma-separated, or ``none``."""
    return ", ".join(labels) or "none"


def joint_answer(item: JointItem, transcript: str, scene: str, events: str) -> str:
    """A joint item's answer in the form its prompt asks: three labelled lines, under ``Final answer:`` for CoT."""
    lines = f"Transcript: {transcript}\nScene: {scene}\nEvents: {events}"
    return f"Final answer:\n{lines}" if item.prompting == "sseu-cot" else lines


@singledispatch
def oracle_answer(item: object, turn: int = 0) -> str:
    """The gold answer of an item, in the form its prompt asks (what ``baseline:oracle`` answers).

    Foundation and the tiered closed set: the gold letter; Chat: the turn's reference; transcription: the reference
    transcript; scene: the label; events: the labels comma-separated, or ``none``; joint: the three labelled lines
    (see :func:`joint_answer`); translation and caption: the first reference; speech generation: the text to speak or
    the first accepted answer, as text (the oracle cannot speak: its spoken-answer score counts every item as a
    failure with no audio); the open-vocabulary question: "I hear <the gold class's first name>.".

    Each item kind registers its answer here (``@oracle_answer.register(SomeItem)``, a function ``(item, turn)``).

    Raises:
        TypeError: For an object whose kind registered no oracle answer.
    """
    raise TypeError(f"no oracle answer for a {type(item).__name__}")


@oracle_answer.register(SingleChoiceItem)
def _oracle_single_choice(item: SingleChoiceItem, turn: int = 0) -> str:
    return item.choices[item.answer] if item.ANSWERED_BY_TEXT else item.answer_letter


@oracle_answer.register(ChatItem)
def _oracle_chat(item: ChatItem, turn: int = 0) -> str:
    return item.conversation[turn][1]


@oracle_answer.register(TranscriptionItem)
def _oracle_transcription(item: TranscriptionItem, turn: int = 0) -> str:
    return item.reference


@oracle_answer.register(SceneItem)
def _oracle_scene(item: SceneItem, turn: int = 0) -> str:
    return item.label


@oracle_answer.register(EventsItem)
def _oracle_events(item: EventsItem, turn: int = 0) -> str:
    return events_text(item.labels)


@oracle_answer.register(JointItem)
def _oracle_joint(item: JointItem, turn: int = 0) -> str:
    return joint_answer(item, item.reference, item.scene_label, events_text(item.event_labels))


@oracle_answer.register(TranslationItem)
@oracle_answer.register(CaptionItem)
def _oracle_first_reference(item: TranslationItem | CaptionItem, turn: int = 0) -> str:
    return item.references[0]


@oracle_answer.register(SpeechGenerationItem)
def _oracle_speech_generation(item: SpeechGenerationItem, turn: int = 0) -> str:
    return item.text if item.text is not None else item.answers[0]


@oracle_answer.register(OpenSourceItem)
def _oracle_open_source(item: OpenSourceItem, turn: int = 0) -> str:
    return f"I hear {source_name(item, item.label)}."


@singledispatch
def baseline_guess(item: object, baseline: Baseline, prompt: Prompt) -> str:
    """What ``random``, ``first`` and ``dsp`` answer to an item (``oracle`` answers :func:`oracle_answer`).

    Each item kind registers its guess here (``@baseline_guess.register(SomeItem)``, a function
    ``(item, baseline, prompt)`` that reads :attr:`Baseline.name` and :attr:`Baseline.seed`); see the module
    docstring for what each baseline answers to each kind.

    Raises:
        TypeError: For an object whose kind registered no guess (the item's error, as any failure of a baseline).
    """
    raise TypeError(f"no baseline guess for a {type(item).__name__}")


@baseline_guess.register(SingleChoiceItem)
def _guess_single_choice(item: SingleChoiceItem, baseline: Baseline, prompt: Prompt) -> str:
    if baseline.name in ("first", "random"):
        k = 0
        if baseline.name == "random":
            digest = hashlib.sha256(f"{baseline.seed}:{item.uid}".encode()).digest()
            k = int.from_bytes(digest[:4], "big") % len(item.choices)
        return item.choices[k] if item.ANSWERED_BY_TEXT else LETTERS[k]
    if item.ANSWERED_BY_TEXT:
        return CANNOT_TELL  # dsp measures the kit's own lettered tasks, nothing a released question asks
    return dsp_answer(prompt)


@baseline_guess.register(SoundSourceItem)
def _guess_sound_source(item: SoundSourceItem, baseline: Baseline, prompt: Prompt) -> str:
    if baseline.name == "dsp":  # measures the clip's defining properties (tiered closed set)
        from airbench_nb.models.dsp_sources import dsp_source_answer

        return dsp_source_answer(prompt) or CANNOT_TELL
    return _guess_single_choice(item, baseline, prompt)


@baseline_guess.register(ChatItem)
@baseline_guess.register(TranscriptionItem)
@baseline_guess.register(TranslationItem)
@baseline_guess.register(CaptionItem)
@baseline_guess.register(SpeechGenerationItem)
def _guess_nothing(item: object, baseline: Baseline, prompt: Prompt) -> str:
    return CANNOT_TELL


@baseline_guess.register(SceneItem)
def _guess_scene(item: SceneItem, baseline: Baseline, prompt: Prompt) -> str:
    return CANNOT_TELL if baseline.name == "dsp" else baseline._scene_guess(item.uid, item.classes)


@baseline_guess.register(EventsItem)
def _guess_events(item: EventsItem, baseline: Baseline, prompt: Prompt) -> str:
    return CANNOT_TELL if baseline.name == "dsp" else baseline._events_guess(item.uid, item.classes)


@baseline_guess.register(JointItem)
def _guess_joint(item: JointItem, baseline: Baseline, prompt: Prompt) -> str:
    if baseline.name == "dsp":
        return CANNOT_TELL
    scene = baseline._scene_guess(item.uid, item.scene_classes)
    return joint_answer(item, CANNOT_TELL, scene, baseline._events_guess(item.uid, item.event_classes))


@baseline_guess.register(OpenSourceItem)
def _guess_open_source(item: OpenSourceItem, baseline: Baseline, prompt: Prompt) -> str:
    if baseline.name == "dsp":
        return CANNOT_TELL
    pick = 0 if baseline.name == "first" else baseline._pick(item.uid, item.classes, "source")
    fine = item.classes[pick]
    return f"I hear {source_name(item, fine)}."


def source_name(item: OpenSourceItem, fine: str) -> str:
    """How a baseline names a fine class in an open-vocabulary answer: its first synonym, else its name spelled out."""
    names = item.names.get(fine) or [fine.replace("_", " ")]
    return names[0]


def text_prior_answer(item: object) -> str:
    """What ``baseline:text-prior`` answers: an option picked from the question's text alone, never the audio.

    A planted model for the audio-reliance controls (:mod:`airbench_nb.builders.controls`): the option is the
    SHA-256 of the question and the options' texts modulo their number, so that it depends on nothing else (not the
    uid, not the seed, not the audio) and is the same under every control by construction: its audio-needed share
    is 0. A single-choice item gets that option's letter (its text for a kind answered by text); every other kind
    ``I cannot tell.`` (no answer there depends on the audio either).

    Args:
        item: The item asked.
    """
    choices = getattr(item, "choices", None)  # what single-choice kinds declare; other kinds have none
    question = getattr(item, "question", None)
    if not choices or not isinstance(question, str):
        return CANNOT_TELL
    text = "\x1f".join([question, *choices])
    k = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") % len(choices)
    return choices[k] if getattr(item, "ANSWERED_BY_TEXT", False) else LETTERS[k]


def make_baseline(rest: str, seed: int = 0, batch_size: int = 64) -> Baseline:
    """Registry entry: ``baseline:<name>``."""
    return Baseline(rest, seed=seed, batch_size=batch_size)


# ------------------------------------------------------------------------------------------------ DSP


class Unmeasurable(ValueError):
    """The clip does not hold what the measurement needs (no voiced frame, silence): the baseline cannot tell.

    Not an error of the item: an error is retried on every resume and would fail again the same way.
    """


F0_CACHE_SIZE = 4096
"""Median F0s remembered by :func:`_median_f0`, by the samples' SHA-256 and the search range: the rotated copies of
an item (circular evaluation) and items sharing a clip are measured once."""
_F0_CACHE: OrderedDict[tuple[str, int, float, float], float | None] = OrderedDict()
_F0_LOCK = threading.Lock()


def _median_f0(samples: np.ndarray, sr: int, fmin: float, fmax: float) -> float:
    """Median F0 in Hz over the frames pYIN calls voiced (the same as ``librosa.pyin``'s, computed faster).

    Raises:
        Unmeasurable: When no frame is voiced.
    """
    from airbench_nb.models.pyin import pyin

    samples = np.ascontiguousarray(samples)
    key = (hashlib.sha256(samples.tobytes()).hexdigest() + str(samples.dtype), sr, fmin, fmax)
    with _F0_LOCK:
        known = key in _F0_CACHE
        if known:
            _F0_CACHE.move_to_end(key)
        median = _F0_CACHE.get(key)
    if not known:
        f0 = pyin(samples, sr=sr, fmin=fmin, fmax=fmax, frame_length=2048)
        voiced = f0[~np.isnan(f0)]
        median = float(np.median(voiced)) if voiced.size else None
        with _F0_LOCK:
            _F0_CACHE[key] = median
            while len(_F0_CACHE) > F0_CACHE_SIZE:
                _F0_CACHE.popitem(last=False)
    if median is None:
        raise Unmeasurable("no voiced frames")
    return median


def _numbers(choices: list[str]) -> list[float | None]:
    values: list[float | None] = []
    for choice in choices:
        match = re.search(r"-?\d+(\.\d+)?", choice)
        values.append(float(match.group()) if match else None)
    return values


def _closest(choices: list[str], value: float) -> str:
    numbers = _numbers(choices)
    if any(n is None for n in numbers):
        return CANNOT_TELL
    best = min(range(len(choices)), key=lambda i: abs(numbers[i] - value))  # type: ignore[operator]
    return LETTERS[best]


def _pitch(prompt: Prompt) -> str:
    import librosa

    f0 = _median_f0(prompt.audio[: prompt.sample_rate], prompt.sample_rate, 60.0, 1400.0)
    return _closest(prompt.item.choices, float(librosa.hz_to_midi(f0)))


PEAK_AT_VELOCITY_127 = 0.8
"""Peak level of a velocity-127 note in the kit's synthesizer; peak ∝ (velocity/127)² (40 log10 dB)."""


def _velocity(prompt: Prompt) -> str:
    peak = float(np.max(np.abs(prompt.audio)))
    if peak <= 0:
        raise Unmeasurable("silent clip")
    velocity = 127.0 * np.sqrt(peak / PEAK_AT_VELOCITY_127)
    return _closest(prompt.item.choices, velocity)


GENDER_F0_SPLIT_HZ = 150.0
"""Median F0 below which a voice is called male."""


def _gender(prompt: Prompt) -> str:
    f0 = _median_f0(prompt.audio, prompt.sample_rate, 60.0, 400.0)
    wanted = "male" if f0 < GENDER_F0_SPLIT_HZ else "female"
    for i, choice in enumerate(prompt.item.choices):
        if choice.strip().lower() in (wanted, "man" if wanted == "male" else "woman"):
            return LETTERS[i]
    return CANNOT_TELL


def _segments(samples: np.ndarray, sr: int, min_silence_s: float, threshold_db: float = -35.0) -> list[slice]:
    hop = sr // 100
    frames = samples[: samples.size // hop * hop].reshape(-1, hop)
    db = 10 * np.log10(np.maximum(np.mean(frames.astype(np.float64) ** 2, axis=1), 1e-12))
    active = db > db.max() + threshold_db
    limit = int(min_silence_s * 100)
    spans, start, quiet = [], None, 0
    for i, on in enumerate(active):
        if on:
            start = i if start is None else start
            quiet = 0
        elif start is not None:
            quiet += 1
            if quiet >= limit:
                spans.append(slice(start * hop, (i - quiet + 1) * hop))
                start, quiet = None, 0
    if start is not None:
        spans.append(slice(start * hop, active.size * hop))
    return spans


def _speakers(prompt: Prompt) -> str:
    f0s = []
    for span in _segments(prompt.audio, prompt.sample_rate, 0.35):
        try:
            f0s.append(_median_f0(prompt.audio[span], prompt.sample_rate, 60.0, 450.0))
        except Unmeasurable:
            continue
    if not f0s:
        raise Unmeasurable("no voiced segment")
    f0s.sort()
    voices = 1 + sum(1 for a, b in zip(f0s, f0s[1:], strict=False) if b / a > 1.2)
    return _closest(prompt.item.choices, voices)


def _event_count(prompt: Prompt) -> str:
    count = _count_events(prompt.audio, prompt.sample_rate)
    words = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
    numbers = [words.get(c.strip().lower(), None) for c in prompt.item.choices]
    if all(v is not None for v in numbers):
        return LETTERS[min(range(len(numbers)), key=lambda i: abs(numbers[i] - count))]  # type: ignore[operator]
    return _closest(prompt.item.choices, count)


def _count_events(samples: np.ndarray, sr: int) -> int:
    """Onsets in a clip.

    A 10 ms RMS envelope (high-passed at 100 Hz) rising 7 dB over its median starts an event, 30 ms under 3 dB over
    it ends one.
    """
    from scipy.signal import butter, sosfilt

    x = sosfilt(butter(2, 100.0, "highpass", fs=sr, output="sos"), samples.astype(np.float64))
    hop, frame = sr // 400, sr // 100
    n = 1 + (x.size - frame) // hop
    idx = np.arange(frame)[None, :] + hop * np.arange(n)[:, None]
    rms = np.sqrt(np.mean(x[idx] ** 2, axis=1))
    floor = np.median(rms)
    on, off = floor * 10 ** (7 / 20), floor * 10 ** (3 / 20)
    count, active, quiet = 0, False, 0
    for r in rms:
        if not active and r > on:
            count, active, quiet = count + 1, True, 0
        elif active:
            quiet = quiet + 1 if r < off else 0
            if quiet * hop / sr >= 0.03:
                active = False
    return count


DSP_TASKS: dict[str, Callable[[Prompt], str]] = {
    "Music_Midi_Pitch_Analysis": _pitch,
    "Music_Midi_Velocity_Analysis": _velocity,
    "Speaker_Gender_Recognition": _gender,
    "Speaker_Number_Verification": _speakers,
}
"""Tasks the DSP baseline answers by measurement (Sound_AQA counting questions too)."""


# ------------------------------------------------------------------------------------------------ DSP, several clips

ORDINAL_WORDS: dict[str, int] = {"first": 0, "second": 1, "third": 2, "fourth": 3, "1": 0, "2": 1, "3": 2, "4": 3}
"""Words a choice may name a clip by ("the first clip", "Clip 2")."""

LOUDER_TOLERANCE_DB = 1.0
"""Loudness difference (LU or dB) at or under which the DSP baseline cannot tell the louder clip."""
PITCH_TOLERANCE_SEMITONES = 0.5
"""Pitch difference at or under which the DSP baseline cannot tell the higher clip."""
DIFFERENT_SPEAKER_F0_RATIO = 1.35
"""Median-F0 ratio above which two voices are called different speakers (male voices of espeak-ng lie at 89-111 Hz,
female at 173-221 Hz); under it the DSP baseline cannot tell (two voices of one gender overlap)."""


def _clip_choice(choices: list[str], clip: int) -> str:
    """The letter of the choice naming clip ``clip`` (0-based), or :data:`CANNOT_TELL` when none or several do."""
    found = []
    for i, choice in enumerate(choices):
        words = re.findall(r"[a-z0-9]+", choice.lower())
        named = {ORDINAL_WORDS[w] for w in words if w in ORDINAL_WORDS}
        if named == {clip}:
            found.append(i)
    return LETTERS[found[0]] if len(found) == 1 else CANNOT_TELL


def _which(prompt: Prompt, values: list[float], tolerance: float, more: str, less: str) -> str:
    """The choice naming the clip with the largest value (smallest when the question asks ``less``)."""
    if len(values) < 2:
        raise ValueError(f"{prompt.uid}: a comparison of clips needs two or more, this prompt has {len(values)}")
    question = prompt.item.question.lower()
    wants_less = re.search(less, question) is not None and re.search(more, question) is None
    order = sorted(range(len(values)), key=lambda i: values[i], reverse=not wants_less)
    if abs(values[order[0]] - values[order[1]]) <= tolerance:
        return CANNOT_TELL
    return _clip_choice(prompt.item.choices, order[0])


def _pitch_compare(prompt: Prompt) -> str:
    import librosa

    midi = [
        float(librosa.hz_to_midi(_median_f0(a[: 2 * prompt.sample_rate], prompt.sample_rate, 60.0, 1400.0)))
        for a in prompt.audios
    ]
    return _which(prompt, midi, PITCH_TOLERANCE_SEMITONES, r"\b(higher|highest)\b", r"\b(lower|lowest)\b")


def _louder_clip(prompt: Prompt) -> str:
    from airbench_nb.audio import loudness, lufs_applicable

    clips = prompt.audios
    unit = "LUFS" if all(lufs_applicable(a, prompt.sample_rate) for a in clips) else "dBFS"
    values = [loudness(a, prompt.sample_rate, unit=unit).value for a in clips]
    return _which(prompt, values, LOUDER_TOLERANCE_DB, r"\b(louder|loudest)\b", r"\b(quieter|quietest|softer)\b")


def _more_events(prompt: Prompt) -> str:
    counts = [float(_count_events(a, prompt.sample_rate)) for a in prompt.audios]
    return _which(prompt, counts, 0.0, r"\bmore\b", r"\b(fewer|less)\b")


def _same_speaker(prompt: Prompt) -> str:
    f0 = [_median_f0(a, prompt.sample_rate, 60.0, 400.0) for a in prompt.audios]
    if max(f0) / min(f0) <= DIFFERENT_SPEAKER_F0_RATIO:
        return CANNOT_TELL  # one gender: F0 alone does not tell two voices apart
    different = [
        i
        for i, choice in enumerate(prompt.item.choices)
        if re.search(r"\b(different|two speakers|two people)\b", choice.lower()) or choice.strip().lower() == "no"
    ]
    return LETTERS[different[0]] if len(different) == 1 else CANNOT_TELL


MULTI_CLIP_DSP_TASKS: dict[str, Callable[[Prompt], str]] = {
    "kit_pitch_compare": _pitch_compare,
    "kit_louder_clip": _louder_clip,
    "kit_more_events": _more_events,
    "kit_same_speaker": _same_speaker,
}
"""The kit's multi-clip tasks the DSP baseline answers by measuring each clip."""


def dsp_answer(prompt: Prompt) -> str:
    """Answer a single-choice item by signal processing when its task allows it, else :data:`CANNOT_TELL`.

    The tiered closed set is measured by :func:`airbench_nb.models.dsp_sources.dsp_source_answer` instead (its
    registered guess, :func:`baseline_guess`).

    A clip without what the measurement needs (:class:`Unmeasurable`: no voiced frame, silence; or a clip of digital
    silence, :class:`~airbench_nb.audio.SilentAudioError`, which loudness refuses) is answered
    :data:`CANNOT_TELL` too, not an error: a resume retries errors, and this one would come back every time.
    """
    item = cast(SingleChoiceItem, prompt.item)  # baseline_guess's single-choice registration calls it
    measure: Callable[[Prompt], str] | None = MULTI_CLIP_DSP_TASKS.get(item.task) or DSP_TASKS.get(item.task)
    if measure is None and item.task == "Sound_AQA":
        if re.search(r"\b(how many|count|number of|how often)\b", item.question, re.I):
            measure = _event_count
    if measure is None:
        return CANNOT_TELL
    try:
        return measure(prompt)
    except (Unmeasurable, SilentAudioError) as exc:  # a silent clip (the silence control) has nothing to measure
        logger.debug("%s: %s, so the DSP baseline cannot tell", item.uid, exc)
        return CANNOT_TELL
