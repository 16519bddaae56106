"""The offline benchmark builder: Foundation and Chat items from synthesized audio with known ground truth.

Modules: :mod:`~airbench_nb.builders.core` (recipes, seeding, choice order, drafts), one module of task makers per
category (:mod:`~airbench_nb.builders.speech`, :mod:`~airbench_nb.builders.sounds`, :mod:`~airbench_nb.builders.music`,
:mod:`~airbench_nb.builders.chat`, and :mod:`~airbench_nb.builders.multi` for the kit's own tasks about several clips or
turns), :mod:`~airbench_nb.builders.sseu` (SSEU-style speech over synthesized scenes, scored against references),
:mod:`~airbench_nb.builders.ugbench` (UG-Bench's translation, captioning and speech generation items; recipes read by
:mod:`~airbench_nb.builders.ugbench_recipes`),
:mod:`~airbench_nb.builders.tiered` (the tiered sound-source clips), :mod:`~airbench_nb.builders.airbench` (AIR-Bench's
Foundation and Chat makers and its builder parts), :mod:`~airbench_nb.builders.parts` (the :class:`BuilderPart` protocol
and its registry: :func:`build` loops over the registered parts), :mod:`~airbench_nb.builders.builder` (:func:`build`
and the report). The names below are the package's public interface.
"""

from airbench_nb.builders.airbench import AirbenchPart, CircularPart
from airbench_nb.builders.builder import (
    BUILTIN_PARTS,
    CHAT_MAKERS,
    FOUNDATION_MAKERS,
    NOT_BUILT,
    BuildReport,
    build,
    llm_references,
)
from airbench_nb.builders.chat import (
    make_chat_dialogue,
    make_chat_mixed,
    make_chat_music,
    make_chat_sound,
    make_chat_speech,
)
from airbench_nb.builders.core import (
    DATASET,
    LEAD_S,
    RECIPE_DIR,
    RECIPE_FILES,
    SR,
    TURN_GAP_S,
    WORD_GAP_S,
    ChatDraft,
    Ctx,
    FoundationDraft,
    RecipeError,
    Recipes,
    arrange,
    cycle_value,
    gold_position,
    item_rng,
    load_recipes,
)
from airbench_nb.builders.multi import (
    make_followup,
    make_louder_clip,
    make_more_events,
    make_pitch_compare,
    make_same_speaker,
)
from airbench_nb.builders.music import make_instrument, make_mood, make_music_aqa, make_pitch, make_velocity
from airbench_nb.builders.parts import PARTS, BuildContext, BuilderPart, PartResult, part_for, register_part
from airbench_nb.builders.snr import SnrPart
from airbench_nb.builders.sounds import make_audio_grounding, make_sound_aqa
from airbench_nb.builders.speech import (
    NUMBER_WORDS,
    make_entity,
    make_gender,
    make_intent,
    make_language_id,
    make_speaker_number,
    make_speech_grounding,
)
from airbench_nb.builders.sseu import (
    SSEU_BUILDER_VERSION,
    SSEU_TASKS,
    SseuBuild,
    SseuPart,
    SseuRecipe,
    build_sseu,
    clip_id,
    sseu_recipe,
)
from airbench_nb.builders.tiered import TieredPart
from airbench_nb.builders.ugbench import (
    UGBENCH_BUILDER_VERSION,
    UGBENCH_KINDS,
    UGBENCH_TASKS,
    UgbenchBuild,
    UgbenchPart,
    build_ugbench,
    parse_ugbench_items,
)

__all__ = [
    "BUILTIN_PARTS",
    "PARTS",
    "AirbenchPart",
    "BuildContext",
    "BuilderPart",
    "CircularPart",
    "PartResult",
    "SnrPart",
    "SseuPart",
    "TieredPart",
    "UgbenchPart",
    "part_for",
    "register_part",
    "CHAT_MAKERS",
    "DATASET",
    "FOUNDATION_MAKERS",
    "LEAD_S",
    "NOT_BUILT",
    "NUMBER_WORDS",
    "RECIPE_DIR",
    "RECIPE_FILES",
    "SR",
    "SSEU_BUILDER_VERSION",
    "SSEU_TASKS",
    "TURN_GAP_S",
    "UGBENCH_BUILDER_VERSION",
    "UGBENCH_KINDS",
    "UGBENCH_TASKS",
    "WORD_GAP_S",
    "BuildReport",
    "ChatDraft",
    "Ctx",
    "FoundationDraft",
    "RecipeError",
    "Recipes",
    "SseuBuild",
    "SseuRecipe",
    "UgbenchBuild",
    "arrange",
    "build",
    "build_sseu",
    "build_ugbench",
    "clip_id",
    "cycle_value",
    "gold_position",
    "item_rng",
    "llm_references",
    "load_recipes",
    "make_audio_grounding",
    "make_chat_dialogue",
    "make_chat_mixed",
    "make_chat_music",
    "make_chat_sound",
    "make_chat_speech",
    "make_entity",
    "make_followup",
    "make_gender",
    "make_instrument",
    "make_intent",
    "make_language_id",
    "make_louder_clip",
    "make_mood",
    "make_more_events",
    "make_music_aqa",
    "make_pitch",
    "make_pitch_compare",
    "make_same_speaker",
    "make_sound_aqa",
    "make_speaker_number",
    "make_speech_grounding",
    "make_velocity",
    "parse_ugbench_items",
    "sseu_recipe",
]
