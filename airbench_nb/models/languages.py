"""Whisper's languages: code -> English name (and other names), and an item's language tag -> Whisper's code.

:data:`WHISPER_LANGUAGES` lists the 100 language codes Whisper knows (large-v3's; the earlier checkpoints lack
``yue``), each with its English name first and the other names it goes by (Whisper's own aliases: ``Castilian``,
``Flemish``, ``Mandarin``, ...). The ``faster-whisper:`` backend uses it two ways:

- to map a detected language onto a Spoken_Language_Identification item's choices (:func:`choice_for`): a choice
  names the language when it equals one of its names, case and spacing aside; the reply is that choice's letter and
  the choice as the item spells it (``B) German``: the official protocol reads only a letter, and would read a bare
  ``Chinese`` as option C), or, when no choice names it, :data:`NOT_AMONG` with the language's English name;
- to read an item's ``language`` (a BCP 47 tag: ``en-us``, ``de``, ``zh_CN``) as Whisper's code
  (:func:`whisper_code`): the primary subtag, with the few codes Whisper spells its own way (``jw`` for Javanese,
  ``he`` for Hebrew).

A code the table does not name (a fine-tuned checkpoint's own language token) is never guessed at: the callers make it
the item's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from airbench_nb.records import LETTERS

WHISPER_LANGUAGES: dict[str, tuple[str, ...]] = {
    "en": ("English",),
    "zh": ("Chinese", "Mandarin"),
    "de": ("German",),
    "es": ("Spanish", "Castilian"),
    "ru": ("Russian",),
    "ko": ("Korean",),
    "fr": ("French",),
    "ja": ("Japanese",),
    "pt": ("Portuguese",),
    "tr": ("Turkish",),
    "pl": ("Polish",),
    "ca": ("Catalan", "Valencian"),
    "nl": ("Dutch", "Flemish"),
    "ar": ("Arabic",),
    "sv": ("Swedish",),
    "it": ("Italian",),
    "id": ("Indonesian",),
    "hi": ("Hindi",),
    "fi": ("Finnish",),
    "vi": ("Vietnamese",),
    "he": ("Hebrew",),
    "uk": ("Ukrainian",),
    "el": ("Greek",),
    "ms": ("Malay",),
    "cs": ("Czech",),
    "ro": ("Romanian", "Moldavian", "Moldovan"),
    "da": ("Danish",),
    "hu": ("Hungarian",),
    "ta": ("Tamil",),
    "no": ("Norwegian",),
    "th": ("Thai",),
    "ur": ("Urdu",),
    "hr": ("Croatian",),
    "bg": ("Bulgarian",),
    "lt": ("Lithuanian",),
    "la": ("Latin",),
    "mi": ("Maori",),
    "ml": ("Malayalam",),
    "cy": ("Welsh",),
    "sk": ("Slovak",),
    "te": ("Telugu",),
    "fa": ("Persian", "Farsi"),
    "lv": ("Latvian",),
    "bn": ("Bengali", "Bangla"),
    "sr": ("Serbian",),
    "az": ("Azerbaijani",),
    "sl": ("Slovenian", "Slovene"),
    "kn": ("Kannada",),
    "et": ("Estonian",),
    "mk": ("Macedonian",),
    "br": ("Breton",),
    "eu": ("Basque",),
    "is": ("Icelandic",),
    "hy": ("Armenian",),
    "ne": ("Nepali",),
    "mn": ("Mongolian",),
    "bs": ("Bosnian",),
    "kk": ("Kazakh",),
    "sq": ("Albanian",),
    "sw": ("Swahili",),
    "gl": ("Galician",),
    "mr": ("Marathi",),
    "pa": ("Punjabi", "Panjabi"),
    "si": ("Sinhala", "Sinhalese"),
    "km": ("Khmer",),
    "sn": ("Shona",),
    "yo": ("Yoruba",),
    "so": ("Somali",),
    "af": ("Afrikaans",),
    "oc": ("Occitan",),
    "ka": ("Georgian",),
    "be": ("Belarusian",),
    "tg": ("Tajik",),
    "sd": ("Sindhi",),
    "gu": ("Gujarati",),
    "am": ("Amharic",),
    "yi": ("Yiddish",),
    "lo": ("Lao",),
    "uz": ("Uzbek",),
    "fo": ("Faroese",),
    "ht": ("Haitian Creole", "Haitian"),
    "ps": ("Pashto", "Pushto"),
    "tk": ("Turkmen",),
    "nn": ("Nynorsk", "Norwegian Nynorsk"),
    "mt": ("Maltese",),
    "sa": ("Sanskrit",),
    "lb": ("Luxembourgish", "Letzeburgesch"),
    "my": ("Burmese", "Myanmar"),
    "bo": ("Tibetan",),
    "tl": ("Tagalog",),
    "mg": ("Malagasy",),
    "as": ("Assamese",),
    "tt": ("Tatar",),
    "haw": ("Hawaiian",),
    "ln": ("Lingala",),
    "ha": ("Hausa",),
    "ba": ("Bashkir",),
    "jw": ("Javanese",),
    "su": ("Sundanese",),
    "yue": ("Cantonese",),
}
"""Whisper's language codes, each with its English name first and the other names it goes by."""

CODE_ALIASES: dict[str, str] = {"iw": "he", "jv": "jw", "in": "id", "ji": "yi", "mo": "ro", "nb": "no"}
"""Language codes Whisper spells otherwise: ISO 639-1 ``jv`` (Javanese) is Whisper's ``jw``; the withdrawn ISO codes
``iw``, ``in``, ``ji``, ``mo``; Norwegian Bokmål ``nb`` is Whisper's ``no``."""


def language_name(code: str) -> str | None:
    """The English name of a Whisper language code (``de`` -> ``German``), or None for a code the table lacks."""
    names = WHISPER_LANGUAGES.get(code)
    return names[0] if names else None


def whisper_code(tag: str | None) -> str | None:
    """Whisper's code of an item's language tag (``en-us`` -> ``en``, ``jv`` -> ``jw``), or None when it knows none.

    The primary subtag, lower-cased (``_`` read as ``-``); a code of three letters Whisper knows (``haw``, ``yue``)
    as it is.
    """
    if not tag:
        return None
    primary = tag.strip().lower().replace("_", "-").split("-")[0]
    primary = CODE_ALIASES.get(primary, primary)
    return primary if primary in WHISPER_LANGUAGES else None


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


NOT_AMONG = "detected: {name} (not among the choices)"
"""The reply when no choice names the detected language: it starts in lower case and names no option, so neither
protocol reads a letter from it (the official one would read ``Dutch`` as option D, ``Chinese`` as C): a failure
scored as a wrong answer in ``strict``, dropped in ``official`` as that script drops an answer without a letter."""


@dataclass(frozen=True)
class LanguageAnswer:
    """What a detected language answers to a language-identification item: a choice, a name, or why there is none."""

    code: str
    """The detected language code."""
    text: str | None
    """The choice naming the language, as the item spells it; the language's English name when no choice names it;
    None with :attr:`error`."""
    index: int | None = None
    """The index of that choice among the item's choices; None when no choice names the language."""
    error: str | None = None
    """Why no answer can be given (a code the table cannot name; two choices naming the one language)."""

    @property
    def reply(self) -> str | None:
        """The response text, or None with :attr:`error`.

        ``"B) German"`` (the choice's letter, then the choice as spelled: both protocols read the letter), or
        :data:`NOT_AMONG` with the language's name.
        """
        if self.text is None:
            return None
        if self.index is None:
            return NOT_AMONG.format(name=self.text)
        return f"{LETTERS[self.index]}) {self.text}"


def choice_for(code: str, choices: Sequence[str]) -> LanguageAnswer:
    """The answer a detected language code gives to an item with these choices.

    The choice naming the language (one of its names in :data:`WHISPER_LANGUAGES`, case and spacing aside), as spelled
    by the item; when none does, the language's English name (among no choice: scored as a wrong answer); an error
    for a code the table cannot name, or when two choices name the language (never a guess).

    Args:
        code: The detected language code (``de``).
        choices: The item's choices (``["German", "Dutch", ...]``).
    """
    names = WHISPER_LANGUAGES.get(code)
    if names is None:
        return LanguageAnswer(code, None, error=f"Whisper detected language code {code!r}, which the table cannot name")
    wanted = {_folded(name) for name in names}
    matching = [i for i, choice in enumerate(choices) if _folded(choice) in wanted]
    if len(matching) > 1:
        shown = ", ".join(repr(choices[i]) for i in matching)
        return LanguageAnswer(
            code, None, error=f"Whisper detected {names[0]} ({code}), which the choices {shown} all name"
        )
    if matching:
        return LanguageAnswer(code, choices[matching[0]], index=matching[0])
    return LanguageAnswer(code, names[0])
