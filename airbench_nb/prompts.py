"""Model prompts as versioned module constants, and how an item becomes a prompt.

Foundation prompts follow AIR-Bench: an instruction to choose one of the lettered options, then the question,
then only the options that exist. Chat prompts are the question alone. A template file (JSON with the keys of
:class:`PromptSet`) or explicit strings override them; the chain-of-thought variant asks the model to reason
first and end with ``Answer: <letter>`` (SSEU-Bench found step-by-step prompting helps joint tasks).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from airbench_nb.records import ChatItem, FoundationItem

logger = logging.getLogger(__name__)

PROMPTS_VERSION = "1"
"""Version of the constants below; recorded with every response through the prompt hash and the prompt set name."""

FOUNDATION_INSTRUCTION = (
    "Choose the most suitable answer from options {letters_and} to respond the question in next line, "
    "you may only choose {letters_or}."
)
"""AIR-Bench's Foundation instruction, generalised to 2-4 options (the official text names A, B, C and D)."""

FOUNDATION_TEMPLATE = "{instruction}\n{question}\n{options}"
"""How instruction, question and lettered options are joined."""

FOUNDATION_COT_INSTRUCTION = (
    "Listen carefully and think step by step about what you hear. Then choose the most suitable answer from "
    "options {letters_and} to respond the question in next line. End your reply with a line "
    "'Answer: X' where X is {letters_or}."
)
"""Chain-of-thought variant of the Foundation instruction."""

CHAT_TEMPLATE = "{question}"
"""Chat prompt: the question alone, as AIR-Bench does."""

CHAT_COT_TEMPLATE = "{question}\nThink step by step about what you hear before you answer."
"""Chain-of-thought variant of the Chat prompt."""


@dataclass(frozen=True)
class PromptSet:
    """A named set of templates used to turn items into prompts."""

    name: str = "airbench"
    """Name recorded with responses (``airbench``, ``cot`` or a template file's name)."""
    foundation_instruction: str = FOUNDATION_INSTRUCTION
    """Instruction placed before the question; ``{letters_and}``/``{letters_or}`` are filled in."""
    foundation_template: str = FOUNDATION_TEMPLATE
    """Layout of ``{instruction}``, ``{question}`` and ``{options}``."""
    chat_template: str = CHAT_TEMPLATE
    """Layout of a Chat prompt (``{question}``)."""

    @classmethod
    def named(cls, name: str) -> PromptSet:
        """The built-in set ``airbench`` or ``cot``, or a JSON template file given by path.

        Raises:
            ValueError: For an unknown name, or a file with unknown keys or invalid JSON.
        """
        if name == "airbench":
            return cls()
        if name == "cot":
            return cls(name="cot", foundation_instruction=FOUNDATION_COT_INSTRUCTION, chat_template=CHAT_COT_TEMPLATE)
        path = Path(name)
        if not path.is_file():
            raise ValueError(f"unknown prompt set {name!r}: use 'airbench', 'cot' or the path of a JSON template file")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}: invalid JSON in prompt template file: {exc.msg}") from None
        allowed = {"foundation_instruction", "foundation_template", "chat_template"}
        unknown = set(data) - allowed
        if unknown:
            raise ValueError(
                f"{path}: unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(allowed))}"
            )
        return replace(cls(), name=path.stem, **data)


def _letters(n: int) -> tuple[str, str]:
    letters = list("ABCD"[:n])
    joined_and = ", ".join(letters[:-1]) + f", and {letters[-1]}" if n > 2 else " and ".join(letters)
    return joined_and, " or ".join(letters)


def foundation_prompt(item: FoundationItem, prompts: PromptSet | None = None) -> str:
    """The text prompt of a Foundation item: instruction, question and its lettered options (only those present)."""
    prompts = prompts or PromptSet()
    letters_and, letters_or = _letters(len(item.choices))
    instruction = prompts.foundation_instruction.format(letters_and=letters_and, letters_or=letters_or)
    options = "\n".join(f"{letter}. {choice}" for letter, choice in zip("ABCD", item.choices, strict=False))
    return prompts.foundation_template.format(instruction=instruction, question=item.question, options=options)


def chat_prompt(item: ChatItem, prompts: PromptSet | None = None) -> str:
    """The text prompt of a Chat item."""
    return (prompts or PromptSet()).chat_template.format(question=item.question)


def item_prompt(item: FoundationItem | ChatItem, prompts: PromptSet | None = None) -> str:
    """The text prompt of either kind of item."""
    return foundation_prompt(item, prompts) if isinstance(item, FoundationItem) else chat_prompt(item, prompts)


def prompt_hash(text: str, audio_sha256: str | None = None, system: str | None = None) -> str:
    """SHA-256 of what a model is sent (system text, prompt text and the audio's hash)."""
    payload = json.dumps({"system": system, "text": text, "audio": audio_sha256}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
