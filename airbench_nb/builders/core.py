"""Shared pieces of the offline builder: recipes, per-item seeding, balanced cycles, choice arrangement, drafts.

Every item is made from its own random generator seeded by ``(seed, task, index)`` (:func:`item_rng`), so a task
filter does not change the other items, and the same seed gives byte-identical manifests. Choice order: for each
task, the position of the gold answer cycles through the letters in a seeded shuffled order
(:func:`gold_position`), so that over a preset every letter is gold equally often (within one item); the gold
*values* cycle too (:func:`cycle_value`: genders, speaker counts, instruments, ...), so classes are balanced.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from airbench_nb.audio import TARGET_SR
from airbench_nb.records import MixMeta

logger = logging.getLogger(__name__)

SR = TARGET_SR
"""Sample rate of every built clip."""
RECIPE_DIR = Path(__file__).resolve().parents[2] / "data_manifests" / "mini"
"""Default folder of the recipe files."""
RECIPE_FILES = (
    "presets.json",
    "phrasings.json",
    "speech.json",
    "sounds.json",
    "music.json",
    "chat.json",
    "snr.json",
    "multi.json",
    "sseu.json",
    "translation.json",
    "captions.json",
    "speech_generation.json",
)
"""Recipe files read by the builder."""
DATASET = "synthetic"
"""``dataset`` of every built item."""
WORD_GAP_S = 0.3
"""Silence between words in grounding items (seconds): each word is synthesized alone, so its interval is exact."""
TURN_GAP_S = 0.5
"""Silence between speaker turns (seconds)."""
LEAD_S = 0.3
"""Silence before the first and after the last sound of speech items (seconds)."""


class RecipeError(ValueError):
    """A recipe file that is missing, not JSON, or lacks what the builder needs."""


@dataclass(frozen=True)
class Recipes:
    """The recipe files of a preset folder, parsed."""

    folder: Path
    """Where they were read from."""
    presets: dict[str, Any]
    """Sizes per preset."""
    phrasings: dict[str, list[str]]
    """Question phrasings per task (and subtask)."""
    speech: dict[str, Any]
    """Languages, voices, sentences, commands, dialogues."""
    sounds: dict[str, Any]
    """Events, backgrounds, scene settings."""
    music: dict[str, Any]
    """Instruments, ranges."""
    chat: dict[str, Any]
    """Chat questions, reference templates and the mixing grid."""
    snr: dict[str, Any]
    """SNR-graded items: tasks to grade, background noise colours and music settings."""
    multi: dict[str, Any]
    """The kit's own tasks about several clips or several turns: phrasings, pools and ranges."""
    sseu: dict[str, Any]
    """SSEU-style items: sentences, voices, SNR grid, scene settings and questions
    (:mod:`airbench_nb.builders.sseu`)."""
    translation: dict[str, Any]
    """UG-Bench's speech translation: parallel sentences, languages, voices and directions
    (:mod:`airbench_nb.builders.ugbench`)."""
    captions: dict[str, Any]
    """UG-Bench's audio and music captioning: clip settings and caption templates."""
    speech_generation: dict[str, Any]
    """UG-Bench's speech generation: texts to speak and questions to answer aloud."""
    sha256: str
    """Hash of the recipe files' bytes, recorded in ``dataset.json``."""


def load_recipes(folder: str | Path = RECIPE_DIR) -> Recipes:
    """Read and check the recipe files.

    Raises:
        RecipeError: Naming the file and what is wrong.
    """
    folder = Path(folder)
    parsed: dict[str, Any] = {}
    digest = hashlib.sha256()
    for name in RECIPE_FILES:
        path = folder / name
        if not path.is_file():
            raise RecipeError(f"{path}: recipe file missing")
        data = path.read_bytes()
        digest.update(name.encode() + b"\0" + data)
        try:
            parsed[name.removesuffix(".json")] = json.loads(data)
        except json.JSONDecodeError as exc:
            raise RecipeError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    multi = parsed["multi"]
    tables = {
        "phrasings.json": parsed["phrasings"],
        "multi.json": multi.get("phrasings") if isinstance(multi, dict) else None,
    }
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise RecipeError(f"{folder / name}: phrasings must be an object of task names to lists of phrasings")
        for task, phrasings in table.items():
            if task.startswith("_"):
                continue
            if not isinstance(phrasings, list) or len(phrasings) < 5:
                raise RecipeError(f"{folder / name}: task {task!r} needs at least 5 phrasings")
    return Recipes(folder=folder, sha256=digest.hexdigest(), **parsed)


def item_rng(seed: int, task: str, index: int) -> np.random.Generator:
    """The generator of one item: independent of the other tasks and items."""
    task_key = int.from_bytes(hashlib.sha256(task.encode()).digest()[:8], "big")
    return np.random.default_rng([seed, task_key, index])


def _pick(rng: np.random.Generator, seq: Sequence[Any]) -> Any:
    return seq[int(rng.integers(len(seq)))]


def cycle_value(values: Sequence[Any], seed: int, task: str, index: int) -> Any:
    """The ``index``-th value of a seeded permutation of ``values``, cycled: balanced classes over a preset."""
    order = np.random.default_rng([seed, 7, int.from_bytes(hashlib.sha256(task.encode()).digest()[:4], "big")])
    perm = order.permutation(len(values))
    return values[int(perm[index % len(values)])]


def gold_position(n_choices: int, seed: int, task: str, index: int) -> int:
    """Letter index of the gold answer for item ``index``: each letter equally often over consecutive items."""
    block, offset = divmod(index, n_choices)
    rng = np.random.default_rng([seed, 11, n_choices, block, int.from_bytes(task.encode()[:8].ljust(8, b"_"), "big")])
    return int(rng.permutation(n_choices)[offset])


def arrange(gold: str, distractors: Sequence[str], position: int, rng: np.random.Generator) -> tuple[list[str], int]:
    """Put ``gold`` at ``position`` and the distractors, shuffled, around it.

    Raises:
        ValueError: If a distractor equals the gold answer or repeats.
    """
    distractors = list(distractors)
    if gold in distractors or len(set(distractors)) != len(distractors):
        raise ValueError(f"distractors {distractors!r} must be distinct and differ from the gold {gold!r}")
    rng.shuffle(distractors)
    choices = distractors[:position] + [gold] + distractors[position:]
    return choices, position


@dataclass
class FoundationDraft:
    """What a Foundation task maker returns: audio, question and the gold answer with its distractors."""

    audio: np.ndarray
    """16 kHz mono samples."""
    question: str
    """The question."""
    gold: str
    """Text of the correct choice."""
    distractors: list[str]
    """Texts of the wrong choices (1 to 3)."""
    meta: dict[str, Any]
    """Ground truth used to make the item."""
    clips: list[np.ndarray] = field(default_factory=list)
    """Every clip of an item about several (2 or more), in the order the question names them, ``audio`` being the
    first; empty for a one-clip item. The builder writes them as ``<uid>-1.wav``, ``<uid>-2.wav``, ..."""


@dataclass
class ChatDraft:
    """What a Chat task maker returns."""

    audio: np.ndarray
    """16 kHz mono samples."""
    question: str
    """The question."""
    reference: str
    """Reference answer written from the meta by a template."""
    meta_info: str
    """Textual description of the audio (what the judge reads)."""
    mix: MixMeta | None = None
    """Mix metadata for mixed items."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Ground truth used to make the item (judges read ``meta_info``, not this)."""
    turns: list[tuple[str, str]] = field(default_factory=list)
    """``(question, reference)`` of every turn of a multi-turn item (2 or more), the first being ``question`` and
    ``reference``; empty for a one-turn item."""


@dataclass
class Ctx:
    """What a task maker needs: recipes, seed, index and the item's generator."""

    recipes: Recipes
    """The parsed recipes."""
    seed: int
    """Build seed."""
    task: str
    """Task (or subtask) name, for seeding cycles."""
    index: int
    """Item index within the task."""
    rng: np.random.Generator
    """The item's generator."""
    out: Path = Path(".")
    """Output folder (the data root), for makers that write extra files (mix sources and stems)."""
    stem: str = ""
    """Path of the item's audio relative to ``out``, without the ``.wav`` suffix."""

    def cycle(self, values: Sequence[Any], key: str = "") -> Any:
        """Balanced value for this item (see :func:`cycle_value`)."""
        return cycle_value(values, self.seed, self.task + key, self.index)

    def phrase(self, key: str, **fields: Any) -> str:
        """A phrasing of task ``key`` picked by the item's generator, with ``fields`` filled in."""
        return _pick(self.rng, self.recipes.phrasings[key]).format(**fields)


def _r(x: float) -> float:
    return round(float(x), 3)


def _interval(start: float, end: float) -> str:
    return f"[{start:.2f}, {end:.2f}]"


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)
