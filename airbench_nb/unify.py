"""Output unification: free-text answers of audio-language models read as a transcript, a scene and an event list.

SSEU-Bench's three tasks (transcription, acoustic scene, sound events) are asked in free text, alone or together
(``joint``, and the five-step chain of thought ``sseu-cot``). :func:`unify` reads one answer for one item kind and
returns a :class:`UnifiedAnswer`: the parts it found, what its clean-up removed, and why a part could not be read.
It reads; it never interprets. The rules, in the order they apply:

0. **Bounds.** An answer longer than :data:`MAX_ANSWER_CHARS` characters (far above any real answer: a degenerate
   loop or a hostile endpoint) is read truncated to its first :data:`MAX_ANSWER_CHARS` characters ("truncated: over
   N characters"). An answer holding JSON nested too deep for Python's parser, or more than
   :data:`MAX_JSON_TRIES` candidate objects that are unreadable or have no known key, cannot be read: every part it
   is asked fails with that reason (:data:`UNREADABLE_DEEP`, :data:`UNREADABLE_MANY`). Every rule below runs in
   time linear in the answer (no pattern backtracks over a run of spaces, no repeated slicing), so that one answer
   never costs a run.
1. **Reasoning.** ``<think>...</think>`` blocks (also ``<thinking>``) are removed ("think"). A ``</think>`` without
   an opening tag means the tag was pre-filled by the prompt: everything up to the last ``</think>`` is dropped
   ("think-prefilled"). An opening tag never closed drops the rest of the answer ("think-unclosed").
2. **Final block.** When a line holds "Final answer:" (the chain-of-thought prompt ends that way), only the text
   after the LAST such line is read: the final block wins over earlier steps ("before-final-answer"). A part that
   the final block lacks is a failure, even when an earlier step named it.
3. **JSON.** The last JSON object in the answer (bare, embedded in prose, or in a ```` ```json ```` fence) that has a
   known key is read: ``transcript``/``transcription``/``asr``/``text``, ``scene``/``acoustic_scene``,
   ``events``/``sound_events``/``audio_events`` (case, spaces and hyphens ignored) ("json", "code-fence", "text
   around json").
4. **Labelled sections.** Lines starting with ``Transcript:``/``Transcription:``/``ASR:``, ``Scene:``/``Acoustic
   scene:``, ``Events:``/``Sound events:``/``Audio events:`` (case-insensitive, with or without markdown ``**``,
   headers, bullets, numbers or "Step N"), and, once a line starts with a label, the same labels capitalised after
   a sentence end or a bar on one line ("Transcript: hi. Scene: park. Events: dog."). A section runs to the next
   label, a "Final answer" or "Step N" line, a markdown header, a numbered ``N. Something:`` line, or a blank line
   after its content (bullet lists excepted). When a label appears several times, the last one wins ("label:
   Scene"; text outside every section: "unlabelled text").
5. **Whole answer.** For a single-task kind without JSON or labelled sections, the whole cleaned answer is the
   part. An answer with sections, but none for a part it is asked (a joint answer without a scene, a scene answer
   that labels only a transcript), fails that part: it is never guessed from unlabelled text.
6. **Clean-up of a part.** Repeated until nothing changes: markdown bold, header marks and a wrapping italic
   ``*...*`` ("markdown"); a wrapping code fence ("code-fence"); wrapping quotes, straight or curly, and backticks
   ("quotes"); a preamble ending in a colon, such as "The transcription is:", "Sure! Here is the transcript:" or
   "Here's what I heard:" ("preamble: <its text>"). A preamble is a leading phrase up to a colon that ends its
   line, or that holds a word of :data:`PREAMBLE_WORDS` or starts with one of :data:`PREAMBLE_OPENERS`; any
   sentence before its last must be an interjection ("Sure!", "Okay."). So "Note: the meeting..." and "I love it.
   Scene: two." stay transcripts, while "The answer is: ..." loses its preamble. Whitespace runs become one space.
7. **Events** are split into items: bullet or numbered lines, then commas, semicolons, "and" and "&". Items lose
   leading articles (a, an, the, some) and trailing punctuation; repeats (case-insensitive) are dropped, keeping the
   first ("duplicates"). An answer that says so explicitly ("none", "no events", "No sound events detected.", a
   JSON ``[]``) is the empty list; an answer with no items is a failure. At most :data:`MAX_EVENTS` distinct items
   are kept, the first ones ("events capped: the first N kept"), so that one answer never floods the embedding
   step and its cache.

Scene text is kept as a sentence ("It sounds like a busy street." stays whole; "I cannot tell." stays too): the
embedding step maps it onto the classes. Numbers are left as written (WER normalisation handles them). A part is
``None`` only when it is absent or empty, with the reason in ``failures``; such a part stays in the metric's
denominator. Parts a kind does not ask for are ``None`` without a failure.
"""

from __future__ import annotations

import bisect
import json
import logging
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

UNIFY_VERSION = "1"
"""Version of the rules above; scores that read unified answers record it."""

PARTS = ("transcript", "scene", "events")
"""The parts of an answer, in the order SSEU-Bench asks them."""

KIND_PARTS: dict[str, tuple[str, ...]] = {
    "transcription": ("transcript",),
    "scene": ("scene",),
    "events": ("events",),
    "joint": PARTS,
}
"""The parts each item kind asks for."""

MAX_ANSWER_CHARS = 100_000
"""Characters of an answer read (rule 0): longer answers are read truncated, with the reason counted."""
MAX_EVENTS = 100
"""Distinct event items kept from one answer (rule 7): the rest are dropped, with the reason counted."""
MAX_JSON_TRIES = 1_000
"""Candidate JSON objects of one answer decoded without finding one with a known key before reading stops (rule 0)."""
UNREADABLE_DEEP = "json nested too deep to read"
"""Why every part of an answer fails when it holds JSON nested deeper than Python's parser goes."""
UNREADABLE_MANY = f"over {MAX_JSON_TRIES} json objects without a known key"
"""Why every part of an answer fails when it holds more candidate objects than :data:`MAX_JSON_TRIES`."""

PREAMBLE_WORDS = (
    "transcript",
    "transcription",
    "transcribed",
    "heard",
    "hear",
    "spoken",
    "speaker",
    "speech",
    "audio",
    "recording",
    "clip",
    "answer",
    "result",
    "output",
    "response",
    "scene",
    "event",
    "events",
    "sound",
    "sounds",
)
"""Words that mark a leading phrase ending in a colon as a preamble (when the colon does not end its line)."""

PREAMBLE_OPENERS = ("sure", "certainly", "okay", "ok", "of course", "absolutely", "alright", "yes", "here")
"""Words that mark a leading phrase ending in a colon as a preamble when the phrase starts with them."""

INTERJECTIONS = ("sure", "certainly", "okay", "ok", "of course", "absolutely", "alright", "yes", "great")
"""Sentences a preamble may open with ("Sure! Here is the transcript:")."""

NO_EVENTS = re.compile(
    r"^(?:none|nothing|n/?a|no(?:ne)?(?: (?:clear|distinct|distinguishable|notable|other|identifiable|specific|"
    r"additional|background))?(?: (?:sound|audio|acoustic))?(?: events?| sounds?)?"
    r"(?: (?:were |was |are |is )?(?:detected|found|present|heard|identified|audible))?"
    r"|there (?:are|were|is) no (?:sound |audio |acoustic )?(?:events?|sounds?)(?: \w+)?)[.!]?$",
    re.IGNORECASE,
)
"""An events answer (or its only item) that explicitly says there are none: read as ``[]``."""

# Every run of spaces is possessive (``[ \t]*+``) where another run, or an optional token, may follow it: a
# backtracking engine would otherwise try every split of a long run of spaces between them (rule 0).
_THINK_TAG_RE = re.compile(r"<(/?)think(?:ing)?>", re.IGNORECASE)
_FINAL_RE = re.compile(
    r"^(?:[^\n]*?\bfinal[ \t]++answer\b[ \t]*+(?:\*\*|__)?[ \t]*+[:：]"
    r"|[ \t#>*_-]*+final[ \t]++answer[ \t]*+(?:\*\*|__)?[ \t]*+$)[ \t]*+(?:\*\*|__)?",
    re.IGNORECASE | re.MULTILINE,
)

_TRANSCRIPT_LABEL = (
    r"(?:(?:speech[ \t]++|asr[ \t]++)?transcript(?:ion)?|asr(?:[ \t]++(?:result|output))?|"
    r"automatic[ \t]++speech[ \t]++recognition)"
)
_SCENE_LABEL = r"(?:(?:acoustic[ \t]++)?scene(?:[ \t]++(?:label|class|classification))?)"
_EVENTS_LABEL = (
    r"(?:(?:sound[ \t]++|audio[ \t]++|acoustic[ \t]++)?events?(?:[ \t]++(?:tags?|tagging|list))?|audio[ \t]++tags?)"
)
_LABEL_BODY = (
    rf"(?:\*\*|__)?[ \t]*+(?:(?P<transcript>{_TRANSCRIPT_LABEL})|(?P<scene>{_SCENE_LABEL})|(?P<events>{_EVENTS_LABEL}))"
    r"[ \t]*+(?:\*\*|__)?[ \t]*+(?:\([^)\n]*\))?[ \t]*+(?:\*\*|__)?[ \t]*+[:：][ \t]*+(?:\*\*|__)?"
)
_LINE_LABEL_RE = re.compile(
    r"^[ \t]*+(?:[#>]++[ \t]*+)?(?:[-*+•][ \t]++)?(?:(?:\*\*|__)?step[ \t]*+\d++[^\n:]{0,60}?[.):\-–—][ \t]*+)?"
    r"(?:\d++[.)][ \t]*+)?" + _LABEL_BODY,
    re.IGNORECASE | re.MULTILINE,
)
_INLINE_LABEL_RE = re.compile(r"(?<=[.;!?|])[ \t]++" + _LABEL_BODY, re.IGNORECASE)
_BREAK_RE = re.compile(
    r"^[ \t]*+(?:#{1,6}[ \t]|(?:\*\*|__)?[ \t]*+(?:step[ \t]*+\d+\b|final[ \t]++answer\b|"
    r"\d++[.)][ \t]*+(?:\*\*|__)?[ \t]*+[A-Za-z][^\n:：]{0,60}[:：]))",
    re.IGNORECASE,
)
_BULLET_RE = re.compile(r"^[ \t]*+(?:[-*+•·][ \t]+|\d++[.)][ \t]+)")

_JSON_KEYS = {
    "transcript": "transcript",
    "transcription": "transcript",
    "asr": "transcript",
    "asr_transcript": "transcript",
    "speech_transcript": "transcript",
    "text": "transcript",
    "scene": "scene",
    "acoustic_scene": "scene",
    "scene_label": "scene",
    "events": "events",
    "event": "events",
    "sound_events": "events",
    "audio_events": "events",
    "event_tags": "events",
}
"""JSON keys (lower case, spaces and hyphens as underscores) and the part each holds."""
_JSON_ITEM_KEYS = ("label", "name", "event", "class")
_JSON_START_RE = re.compile(r'\{[ \t\n\r]*+["}]')
_DECODER = json.JSONDecoder()
"""The decoder of :func:`_read_json` (it keeps no state between calls)."""
"""Where a JSON object can start: a brace followed (after JSON's whitespace) by a key or by the closing brace."""
_FENCE_LANGUAGE_RE = re.compile(r"[\w+-]*")
_FENCE_OPEN_RE = re.compile(r"```[ \t]*+(?:json)?[ \t]*+\n?[ \t]*+$", re.IGNORECASE)
_MARKDOWN_RE = re.compile(r"\*\*|__|^[ \t]*+#{1,6}[ \t]+", re.MULTILINE)
_ITALIC_RE = re.compile(r"^([*_])(?=\S)([^*_\n]+)(?<=\S)\1$")
_QUOTE_PAIRS = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "„": "“", "`": "`"}
_PREAMBLE_RE = re.compile(r"^(?P<pre>[^\n:：]{1,120}?)[ \t]*+[:：](?P<end>[ \t]*+\n|[ \t]++|$)")
_PREAMBLE_WORD_RE = re.compile(
    r"^(?:" + "|".join(PREAMBLE_OPENERS) + r")\b|\b(?:" + "|".join(PREAMBLE_WORDS) + r")\b", re.IGNORECASE
)
_INTERJECTION_RE = re.compile(r"^(?:" + "|".join(INTERJECTIONS) + r")\b[\w ,']{0,20}$", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
_SPACE_RE = re.compile(r"\s+")
_SEPARATOR_RE = re.compile(r"[ \t]*+[;,][ \t]*+(?:(?:and|&)[ \t]++)?|[ \t]++(?:and|&)[ \t]++", re.IGNORECASE)
"""A separator of event items."""
_SEPARATOR_AFTER_RE = re.compile(r"(?<![ \t])(?:" + _SEPARATOR_RE.pattern + ")", re.IGNORECASE)
"""A separator that starts where a run of spaces starts (searched, it scans a long run once, not once a space)."""
_ARTICLE_RE = re.compile(r"^(?:a|an|the|some)[ \t]++(?=\S)", re.IGNORECASE)
_ITEM_TRAIL = " \t.,;:!?"


@dataclass(frozen=True)
class UnifiedAnswer:
    """One free-text answer read as SSEU-Bench's parts, with what clean-up removed and what could not be read."""

    transcript: str | None
    """The transcript, whitespace collapsed, numbers as written; None when not found (a failure, never a guess) or
    not asked for."""
    scene: str | None
    """The scene as the model wrote it (a sentence is kept whole); None when not found or not asked for."""
    events: list[str] | None
    """The events, one item each, in order, without repeats; ``[]`` only when the answer says explicitly that there
    are none; None when not found or not asked for."""
    removed: tuple[str, ...]
    """What clean-up removed, each once, in order: "truncated: over N characters", "think", "think-prefilled",
    "think-unclosed",
    "before-final-answer", "json", "code-fence", "text around json", "label: <label>", "unlabelled text",
    "markdown", "quotes", "preamble: <its text>", "duplicates", "events capped: the first N kept"."""
    failures: dict[str, str] = field(default_factory=dict)
    """Part name ("transcript", "scene" or "events") -> why it could not be read; only parts the kind asks for."""

    def part(self, name: str) -> str | list[str] | None:
        """The part called ``name`` (one of :data:`PARTS`)."""
        if name not in PARTS:
            raise ValueError(f"unknown part {name!r}; expected one of {PARTS}")
        return getattr(self, name)


@dataclass(frozen=True)
class UnifyCounts:
    """How many answers had each removal and each failure: the unification line of a report."""

    n: int
    """Answers counted."""
    removals: dict[str, int]
    """Removal kind (the text before ": ", so every preamble counts as "preamble") -> answers that had it."""
    failures: dict[str, int]
    """Part -> answers where it could not be read."""
    reasons: dict[str, int]
    """"<part>: <reason>" -> answers that failed that part for that reason."""

    def rows(self) -> list[tuple[str, str, int]]:
        """``(what, name, count)`` rows, removals then failures then reasons, each sorted by name."""
        return (
            [("removal", k, v) for k, v in sorted(self.removals.items())]
            + [("failure", k, v) for k, v in sorted(self.failures.items())]
            + [("reason", k, v) for k, v in sorted(self.reasons.items())]
        )


def unify_counts(answers: Iterable[UnifiedAnswer]) -> UnifyCounts:
    """Count removals and failures over answers (each answer counts once per removal kind and failed part)."""
    n = 0
    removals: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for answer in answers:
        n += 1
        removals.update({tag.split(": ", 1)[0] for tag in answer.removed})
        failures.update(answer.failures.keys())
        reasons.update(f"{part}: {reason}" for part, reason in answer.failures.items())
    return UnifyCounts(n=n, removals=dict(removals), failures=dict(failures), reasons=dict(reasons))


class _Unreadable(Exception):
    """An answer that cannot be read at all (rule 0); its message is the reason every part it is asked fails."""


class _Removed:
    """An ordered set of removal tags."""

    def __init__(self) -> None:
        self.tags: list[str] = []

    def add(self, tag: str) -> None:
        if tag not in self.tags:
            self.tags.append(tag)


def unify(text: str | None, kind: str) -> UnifiedAnswer:
    """Read a free-text answer as the parts an item kind asks for (the rules are in this module's docstring).

    Args:
        text: The model's answer; None when there is none (every part fails with "no answer").
        kind: The item kind: "transcription", "scene", "events" or "joint".

    Returns:
        The parts found, what was removed, and a reason for each part that could not be read.

    Raises:
        ValueError: For an unknown kind.
    """
    if kind not in KIND_PARTS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {tuple(KIND_PARTS)}")
    wanted = KIND_PARTS[kind]
    if text is None:
        return _answer({}, (), {part: "no answer" for part in wanted})
    removed = _Removed()
    if len(text) > MAX_ANSWER_CHARS:
        logger.debug("unify(%s): an answer of %d characters read truncated", kind, len(text))
        text = text[:MAX_ANSWER_CHARS]
        removed.add(f"truncated: over {MAX_ANSWER_CHARS} characters")
    body = _drop_think(text, removed)
    body, in_final = _final_block(body, removed)
    raw: dict[str, object] = {}
    try:
        body = _read_json(body, removed, raw, wanted)
    except _Unreadable as exc:
        logger.debug("unify(%s): %s", kind, exc)
        return _answer({}, tuple(removed.tags), dict.fromkeys(wanted, str(exc)))
    missing = [part for part in wanted if part not in raw]
    if missing:
        sections, outside = _sections(body)
        used = [part for part in missing if part in sections]
        for part in used:
            label, content, marked = sections[part]
            if marked:
                removed.add("markdown")
            removed.add(f"label: {label}")
            raw[part] = content
        if used and outside:
            removed.add("unlabelled text")
        if kind != "joint" and wanted[0] not in raw and not sections:
            raw[wanted[0]] = body
    values: dict[str, str | list[str]] = {}
    failures: dict[str, str] = {}
    where = " in the final answer" if in_final else ""
    for part in wanted:
        if part not in raw:
            failures[part] = f"no {part} section{where}"
            continue
        value, reason = _finish(part, raw[part], removed)
        if value is None:
            failures[part] = reason if kind != "joint" or reason != "empty answer" else f"empty {part} section"
        else:
            values[part] = value
    if failures:
        logger.debug("unify(%s): %s", kind, failures)
    return _answer(values, tuple(removed.tags), failures)


def _answer(values: dict[str, str | list[str]], removed: tuple[str, ...], failures: dict[str, str]) -> UnifiedAnswer:
    transcript = values.get("transcript")
    scene = values.get("scene")
    events = values.get("events")
    return UnifiedAnswer(
        transcript=transcript if isinstance(transcript, str) else None,
        scene=scene if isinstance(scene, str) else None,
        events=events if isinstance(events, list) else None,
        removed=removed,
        failures=failures,
    )


def _drop_think(text: str, removed: _Removed) -> str:
    """Remove reasoning blocks (rule 1), in one pass over the tags.

    An opening tag starts a block that the next closing tag ends (tags in between are inside it; the block becomes
    one space); a closing tag outside any block drops everything before it; an opening tag that no closing tag
    follows drops the rest.
    """
    pieces: list[str] = []
    position = 0
    opened: re.Match[str] | None = None
    blocks = prefilled = 0
    for tag in _THINK_TAG_RE.finditer(text):
        closing = bool(tag.group(1))
        if opened is None and not closing:
            pieces.append(text[position : tag.start()])
            opened = tag
        elif opened is not None and closing:
            pieces.append(" ")
            position, opened = tag.end(), None
            blocks += 1
        elif closing:
            pieces, position = [], tag.end()
            prefilled += 1
    if opened is None:
        pieces.append(text[position:])
    for tag, count in (("think", blocks), ("think-prefilled", prefilled), ("think-unclosed", opened is not None)):
        if count:
            removed.add(tag)
    return "".join(pieces).strip()


def _final_block(text: str, removed: _Removed) -> tuple[str, bool]:
    """The text after the last "Final answer:" line, and whether there was one (rule 2)."""
    finals = list(_FINAL_RE.finditer(text))
    if not finals:
        return text, False
    if text[: finals[-1].start()].strip():
        removed.add("before-final-answer")
    return text[finals[-1].end() :].strip(), True


def _read_json(text: str, removed: _Removed, raw: dict[str, object], wanted: tuple[str, ...]) -> str:
    """Fill ``raw`` with the wanted parts of the last JSON object that has a known key (rule 3).

    Only a brace that can start an object (:data:`_JSON_START_RE`) is decoded; each decoding that fails or finds no
    known key counts, and the search stops after :data:`MAX_JSON_TRIES` of them.

    Returns:
        The text around that object (its fence removed), or the whole text when no object was read.

    Raises:
        _Unreadable: JSON nested deeper than the parser goes, or more candidates than :data:`MAX_JSON_TRIES`.
    """
    start = _JSON_START_RE.search(text) if "{" in text else None
    if start is None:  # no object can start here (most answers)
        return text
    decoder = _DECODER
    found: tuple[dict[str, object], int, int] | None = None
    tries = 0
    while start is not None:
        index, next_from = start.start(), start.start() + 1
        try:
            value, end = decoder.raw_decode(text, index)
        except RecursionError:
            raise _Unreadable(UNREADABLE_DEEP) from None
        except ValueError:  # JSONDecodeError, or an integer longer than Python converts
            value = None
        if isinstance(value, dict) and _json_parts(value):
            found, next_from = (value, index, end), end
        else:
            tries += 1
            if tries > MAX_JSON_TRIES:
                raise _Unreadable(UNREADABLE_MANY)
        start = _JSON_START_RE.search(text, next_from)
    if found is None:
        return text
    value, start, end = found
    parts = _json_parts(value)
    if not any(part in parts for part in wanted):
        return text
    removed.add("json")
    before, after = text[:start], text[end:]
    fence = _FENCE_OPEN_RE.search(before)
    if fence and after.lstrip().startswith("```"):
        removed.add("code-fence")
        before = before[: fence.start()]
        after = after.lstrip()[3:]
    if before.strip() or after.strip():
        removed.add("text around json")
    for part in wanted:
        if part in parts:
            raw[part] = parts[part]
    return (before.rstrip() + "\n" + after.lstrip()).strip()


def _json_parts(value: dict[str, object]) -> dict[str, object]:
    parts: dict[str, object] = {}
    for key, item in value.items():
        part = _JSON_KEYS.get(re.sub(r"[\s-]+", "_", str(key).strip().lower()))
        if part is not None and part not in parts:
            parts[part] = item
    return parts


def _sections(text: str) -> tuple[dict[str, tuple[str, str, bool]], bool]:
    """The last labelled section of each part, and whether words stand outside every section (rule 4).

    Returns:
        Part -> (label as written, content, whether the label had markdown), and the outside flag.
    """
    lines = list(_LINE_LABEL_RE.finditer(text))
    starts = [m.start() for m in lines]
    matches = list(lines)
    for inline in _INLINE_LABEL_RE.finditer(text) if lines else ():
        before = bisect.bisect_right(starts, inline.start()) - 1  # the line label that starts last before it
        inside = before >= 0 and inline.start() < lines[before].end()
        if _label_text(inline)[:1].isupper() and not inside:
            matches.append(inline)
    matches.sort(key=lambda m: m.start())
    sections: dict[str, tuple[str, str, bool]] = {}
    outside = bool(matches) and bool(text[: matches[0].start()].strip())
    for i, match in enumerate(matches):
        stop = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        part = next(name for name in PARTS if match.group(name) is not None)
        content, rest = _section_content(text[match.end() : stop])
        marked = any(mark in match.group(0) for mark in ("**", "__", "#"))
        sections[part] = (_label_text(match), content, marked)
        outside = outside or bool(rest.strip())
    return sections, outside


def _label_text(match: re.Match[str]) -> str:
    return _SPACE_RE.sub(" ", next(match.group(name) for name in PARTS if match.group(name) is not None))


def _section_content(chunk: str) -> tuple[str, str]:
    """A section's text and the text after it.

    A section ends at a break line, or at a blank line after its content (bullet lists excepted).
    """
    lines = chunk.split("\n")
    started = bool(lines[0].strip())
    previous = lines[0]
    end = len(lines)
    following_at = 0  # the first line after a run of blank lines that is not blank (found once per run)
    for i, line in enumerate(lines[1:], start=1):
        if _BREAK_RE.match(line):
            end = i
            break
        if not line.strip():
            if following_at <= i:
                following_at = i + 1
                while following_at < len(lines) and not lines[following_at].strip():
                    following_at += 1
            following = lines[following_at] if following_at < len(lines) else ""
            if started and not (_BULLET_RE.match(previous) and _BULLET_RE.match(following)):
                end = i
                break
            continue
        previous = line
        started = True
    return "\n".join(lines[:end]).strip().rstrip("|").rstrip(), "\n".join(lines[end:])


def _finish(part: str, raw: object, removed: _Removed) -> tuple[str | list[str] | None, str]:
    """A part's final value, or None with the reason (rules 6 and 7)."""
    if part == "events":
        return _events(raw, removed)
    if raw is None:
        return None, f"{part} is null in json"
    if not isinstance(raw, str):
        return None, f"{part} in json is not text ({type(raw).__name__})"
    value = _SPACE_RE.sub(" ", _clean(raw, removed)).strip()
    return (value, "") if value else (None, "empty answer")


def _clean(text: str, removed: _Removed) -> str:
    """Strip markdown, a wrapping fence, wrapping quotes and preambles until nothing changes (rule 6)."""
    text = text.strip()
    for _ in range(8):
        before = text
        unmarked = _ITALIC_RE.sub(r"\2", _MARKDOWN_RE.sub("", text).strip()).strip()
        if unmarked != text:
            removed.add("markdown")
            text = unmarked
        fenced = _unfence(text)
        if fenced is not None:
            removed.add("code-fence")
            text = fenced
        unquoted = _unquote(text)
        if unquoted is not None:
            removed.add("quotes")
            text = unquoted
        text = _strip_preamble(text, removed)
        if text == before:
            break
    return text


def _unfence(text: str) -> str | None:
    """The text inside a wrapping code fence (its language line dropped), stripped; None when not fenced."""
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return None
    inner = text[3:-3]
    first, newline, rest = inner.partition("\n")
    if newline and _FENCE_LANGUAGE_RE.fullmatch(first.strip(" \t")):
        inner = rest
    return inner.strip()


def _unquote(text: str) -> str | None:
    """The text inside one pair of wrapping quotes (a period may follow the closing one), or None."""
    if len(text) < 2 or text[0] not in _QUOTE_PAIRS:
        return None
    close = _QUOTE_PAIRS[text[0]]
    period = text.endswith(close + ".")
    body = text[:-1] if period else text
    if len(body) < 2 or not body.endswith(close):
        return None
    inner = body[1:-1].strip()
    if close == "'":
        if any(ch == "'" and not _between_letters(inner, i) for i, ch in enumerate(inner)):
            return None
    elif close in inner:
        return None
    if period and not inner.endswith((".", "!", "?")):
        inner += "."
    return inner


def _between_letters(text: str, i: int) -> bool:
    return 0 < i < len(text) - 1 and text[i - 1].isalpha() and text[i + 1].isalpha()


def _strip_preamble(text: str, removed: _Removed) -> str:
    match = _PREAMBLE_RE.match(text)
    if not match:
        return text
    pre = match.group("pre").strip()
    ends_line = "\n" in match.group("end") or match.end() == len(text)
    if not (ends_line or _PREAMBLE_WORD_RE.search(pre)) or "://" in text[: match.end() + 2]:
        return text
    sentences = _SENTENCE_END_RE.split(pre)
    if not all(_INTERJECTION_RE.match(sentence.strip(" .!?")) for sentence in sentences[:-1]):
        return text
    removed.add(f"preamble: {_SPACE_RE.sub(' ', pre)[:80]}:")
    return text[match.end() :].strip()


def _events(raw: object, removed: _Removed) -> tuple[list[str] | None, str]:
    """An events part as a list (rule 7)."""
    if raw is None:
        return None, "events is null in json"
    if isinstance(raw, list):
        items = [_json_item(item) for item in raw]
        if any(item is None for item in items):
            return None, "events in json hold an item that is not text"
        texts = [item for item in items if item is not None]
        return _event_items(texts, removed, split=False, explicit_empty=not raw)
    if not isinstance(raw, str):
        return None, f"events in json is not a list or text ({type(raw).__name__})"
    text = _clean(raw, removed)
    if not text:
        return None, "empty answer"
    if NO_EVENTS.match(_SPACE_RE.sub(" ", text).strip()):
        return [], ""
    return _event_items(text.split("\n"), removed, split=True, explicit_empty=False)


def _json_item(item: object) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, int | float) and not isinstance(item, bool):
        return str(item)
    if isinstance(item, dict):
        for key in _JSON_ITEM_KEYS:
            if isinstance(item.get(key), str):
                return item[key]
    return None


def _event_items(
    lines: list[str], removed: _Removed, split: bool, explicit_empty: bool
) -> tuple[list[str] | None, str]:
    """The distinct items of an events part, the first :data:`MAX_EVENTS` of them (rule 7)."""
    seen: set[str] = set()
    unique: list[str] = []
    duplicates = capped = False
    for line in lines:
        line = _BULLET_RE.sub("", line).strip()
        for piece in _split_items(line) if split else [line]:
            item = _event_item(piece, removed)
            if not item:
                continue
            if item.casefold() in seen:
                duplicates = True
            elif len(unique) == MAX_EVENTS:
                capped = True
                break
            else:
                seen.add(item.casefold())
                unique.append(item)
        if capped:
            break
    if not unique:
        return ([], "") if explicit_empty else (None, "no events listed")
    if all(NO_EVENTS.match(item) for item in unique):
        return [], ""
    if duplicates:
        removed.add("duplicates")
    if capped:
        removed.add(f"events capped: the first {MAX_EVENTS} kept")
    return unique, ""


def _split_items(line: str) -> list[str]:
    """``line`` split at each separator, as ``_SEPARATOR_RE.split`` does, in time linear in the line.

    A separator that starts inside a run of spaces is found from the run's start too, unless a separator before it
    ended inside the run: so a separator is either the one that starts where the previous one ended, or the first
    one that starts at the start of a run (or where no space precedes).
    """
    pieces: list[str] = []
    start = 0
    while True:
        separator = _SEPARATOR_RE.match(line, start) or _SEPARATOR_AFTER_RE.search(line, start + 1)
        if separator is None:
            pieces.append(line[start:])
            return pieces
        pieces.append(line[start : separator.start()])
        start = separator.end()


def _event_item(piece: str, removed: _Removed) -> str:
    text = _clean(piece, removed).strip(_ITEM_TRAIL)
    unquoted = _unquote(text)
    if unquoted is not None:
        removed.add("quotes")
        text = unquoted.strip(_ITEM_TRAIL)
    text = _ARTICLE_RE.sub("", text)
    return _SPACE_RE.sub(" ", text).strip(_ITEM_TRAIL)
