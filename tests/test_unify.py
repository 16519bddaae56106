"""Output unification: LALM-style answers read as transcript, scene and events, with what was removed and why not."""

from __future__ import annotations

import dataclasses

import pytest

from airbench_nb.unify import KIND_PARTS, PARTS, UnifiedAnswer, UnifyCounts, unify, unify_counts

COT = """Step 1 (energy and onset): The speech is loud against a steady background; a bark starts near 1.2 s.
Step 2 (ASR): Transcript: the quick brown fox
Step 3 (scene candidates): park, street
Step 4 (event candidates): dog bark, car horn, birds
Step 5 (correction and selection): the birds are faint, so I drop them; the scene is a park.

Final answer:
Transcript: the quick brown fox jumps
Scene: park
Events: dog bark, car horn"""

COT_TWICE = """Final answer:
Transcript: first try
Scene: street
Events: siren

Wait, let me correct the events.

**Final Answer:**
- **Transcript:** second try
- **Scene:** park
- **Events:** dog bark"""

# (id, text, kind, transcript, scene, events, removed, failures)
CASES = [
    # transcription: plain, preambles, quotes, think blocks, numbers, empty
    ("plain", "Hello world.", "transcription", "Hello world.", None, None, (), {}),
    ("whitespace", "  hello\n  world  ", "transcription", "hello world", None, None, (), {}),
    (
        "preamble-is",
        "The transcription is: hello world",
        "transcription",
        "hello world",
        None,
        None,
        ("preamble: The transcription is:",),
        {},
    ),
    (
        "preamble-sure",
        "Sure! Here is the transcript:\n\nI have 3 cats and 25 dogs.",
        "transcription",
        "I have 3 cats and 25 dogs.",
        None,
        None,
        ("preamble: Sure! Here is the transcript:",),
        {},
    ),
    (
        "preamble-heard",
        "Here's what I heard: twenty five people came at 10:30.",
        "transcription",
        "twenty five people came at 10:30.",
        None,
        None,
        ("preamble: Here's what I heard:",),
        {},
    ),
    (
        "label-transcript",
        "Transcript: please call Stella.",
        "transcription",
        "please call Stella.",
        None,
        None,
        ("label: Transcript",),
        {},
    ),
    (
        "label-asr-bold",
        "**ASR:** please call Stella",
        "transcription",
        "please call Stella",
        None,
        None,
        ("markdown", "label: ASR"),
        {},
    ),
    (
        "preamble-then-quotes",
        'The speaker says: "Please call Stella."',
        "transcription",
        "Please call Stella.",
        None,
        None,
        ("preamble: The speaker says:", "quotes"),
        {},
    ),
    (
        "curly-quotes",
        "“Ask her to bring these things.”",
        "transcription",
        "Ask her to bring these things.",
        None,
        None,
        ("quotes",),
        {},
    ),
    (
        "period-after-quote",
        '"Ask her to bring these things".',
        "transcription",
        "Ask her to bring these things.",
        None,
        None,
        ("quotes",),
        {},
    ),
    (
        "single-quotes",
        "'I don't know what it's for'",
        "transcription",
        "I don't know what it's for",
        None,
        None,
        ("quotes",),
        {},
    ),
    ("backticks", "`hello world`", "transcription", "hello world", None, None, ("quotes",), {}),
    ("italic", "*hello world*", "transcription", "hello world", None, None, ("markdown",), {}),
    ("code-fence", "```\nhello world\n```", "transcription", "hello world", None, None, ("code-fence",), {}),
    ("code-fence-lang", "```text\nhello world\n```", "transcription", "hello world", None, None, ("code-fence",), {}),
    ("two-quotes-kept", '"Yes" and "no" are words.', "transcription", '"Yes" and "no" are words.', None, None, (), {}),
    (
        "colon-kept",
        "Note: the meeting starts at noon.",
        "transcription",
        "Note: the meeting starts at noon.",
        None,
        None,
        (),
        {},
    ),
    (
        "inline-label-in-speech-kept",
        "I love it. Scene: two begins.",
        "transcription",
        "I love it. Scene: two begins.",
        None,
        None,
        (),
        {},
    ),
    (
        "numbers-as-written",
        "It costs $5.50, not 5 dollars 50.",
        "transcription",
        "It costs $5.50, not 5 dollars 50.",
        None,
        None,
        (),
        {},
    ),
    (
        "markdown-header",
        "## Transcription\nhello world",
        "transcription",
        "Transcription hello world",
        None,
        None,
        ("markdown",),
        {},
    ),
    (
        "think",
        "<think>The audio has a woman speaking.</think>\nhello world",
        "transcription",
        "hello world",
        None,
        None,
        ("think",),
        {},
    ),
    (
        "think-prefilled",
        "the speaker sounds calm, so\n</think>\n\nThe transcription is: hello world",
        "transcription",
        "hello world",
        None,
        None,
        ("think-prefilled", "preamble: The transcription is:"),
        {},
    ),
    ("thinking-tag", "<thinking>hmm</thinking>hello", "transcription", "hello", None, None, ("think",), {}),
    (
        "think-unclosed",
        "<think>The speaker says something about",
        "transcription",
        None,
        None,
        None,
        ("think-unclosed",),
        {"transcript": "empty answer"},
    ),
    (
        "think-only",
        "<think>no idea</think>",
        "transcription",
        None,
        None,
        None,
        ("think",),
        {"transcript": "empty answer"},
    ),
    ("empty", "", "transcription", None, None, None, (), {"transcript": "empty answer"}),
    ("blank", "  \n ", "transcription", None, None, None, (), {"transcript": "empty answer"}),
    ("none", None, "transcription", None, None, None, (), {"transcript": "no answer"}),
    (
        "preamble-only",
        "The transcription is:",
        "transcription",
        None,
        None,
        None,
        ("preamble: The transcription is:",),
        {"transcript": "empty answer"},
    ),
    ("empty-quotes", '""', "transcription", None, None, None, ("quotes",), {"transcript": "empty answer"}),
    ("json-transcript", '{"transcription": "hello world"}', "transcription", "hello world", None, None, ("json",), {}),
    (
        "json-not-text",
        '{"transcript": ["hello", "world"]}',
        "transcription",
        None,
        None,
        None,
        ("json",),
        {"transcript": "transcript in json is not text (list)"},
    ),
    (
        "final-answer-single",
        "The speech is short.\nFinal answer: hello world",
        "transcription",
        "hello world",
        None,
        None,
        ("before-final-answer",),
        {},
    ),
    # scene: sentences kept, only preambles, labels and quotes go
    ("scene-sentence", "It sounds like a busy street.", "scene", None, "It sounds like a busy street.", None, (), {}),
    ("scene-refusal", "I cannot tell.", "scene", None, "I cannot tell.", None, (), {}),
    (
        "scene-preamble",
        "The acoustic scene is: **a busy street**",
        "scene",
        None,
        "a busy street",
        None,
        ("markdown", "preamble: The acoustic scene is:"),
        {},
    ),
    ("scene-label", "Acoustic scene: park", "scene", None, "park", None, ("label: Acoustic scene",), {}),
    (
        "scene-label-in-joint-style",
        "Transcript: hi\nScene: office\nEvents: typing",
        "scene",
        None,
        "office",
        None,
        ("label: Scene",),
        {},
    ),
    (
        "scene-json",
        '```json\n{"scene": "metro station"}\n```',
        "scene",
        None,
        "metro station",
        None,
        ("json", "code-fence"),
        {},
    ),
    ("scene-empty-label", "Scene:", "scene", None, None, None, ("label: Scene",), {"scene": "empty answer"}),
    ("scene-none", None, "scene", None, None, None, (), {"scene": "no answer"}),
    (
        "scene-other-sections-only",
        "Transcript: hi\nEvents: dog",
        "scene",
        None,
        None,
        None,
        (),
        {"scene": "no scene section"},
    ),
    # events: lists split and cleaned; "none" is an explicit empty list
    (
        "events-comma-and",
        "A dog barking, a car horn, and the birds.",
        "events",
        None,
        None,
        ["dog barking", "car horn", "birds"],
        (),
        {},
    ),
    ("events-and", "dog barking and car horn", "events", None, None, ["dog barking", "car horn"], (), {}),
    ("events-semicolon", "siren; footsteps; siren", "events", None, None, ["siren", "footsteps"], ("duplicates",), {}),
    (
        "events-bullets",
        "Here are the sound events:\n- Dog bark\n- *Car horn*\n* speech.\n- dog bark",
        "events",
        None,
        None,
        ["Dog bark", "Car horn", "speech"],
        ("preamble: Here are the sound events:", "markdown", "duplicates"),
        {},
    ),
    (
        "events-numbered",
        "Sound events:\n1. dog bark\n2. the siren\n3. an alarm",
        "events",
        None,
        None,
        ["dog bark", "siren", "alarm"],
        ("label: Sound events",),
        {},
    ),
    (
        "events-bullets-blank-lines",
        "Events:\n\n- dog bark\n\n- siren",
        "events",
        None,
        None,
        ["dog bark", "siren"],
        ("label: Events",),
        {},
    ),
    ("events-quoted-items", '"dog bark", "siren"', "events", None, None, ["dog bark", "siren"], ("quotes",), {}),
    ("events-none", "None", "events", None, None, [], (), {}),
    ("events-no-events", "No sound events were detected.", "events", None, None, [], (), {}),
    ("events-there-are-none", "There are no events.", "events", None, None, [], (), {}),
    ("events-label-none", "Audio events: none", "events", None, None, [], ("label: Audio events",), {}),
    ("events-bullet-none", "- None", "events", None, None, [], (), {}),
    ("events-refusal-kept", "I cannot tell.", "events", None, None, ["I cannot tell"], (), {}),
    (
        "events-json-list",
        '{"events": ["dog bark", "Siren.", "dog bark"]}',
        "events",
        None,
        None,
        ["dog bark", "Siren"],
        ("json", "duplicates"),
        {},
    ),
    ("events-json-empty", '{"events": []}', "events", None, None, [], ("json",), {}),
    (
        "events-json-dicts",
        '{"sound_events": [{"label": "siren", "onset": 1.2}]}',
        "events",
        None,
        None,
        ["siren"],
        ("json",),
        {},
    ),
    (
        "events-json-string",
        '{"Sound Events": "dog bark and siren"}',
        "events",
        None,
        None,
        ["dog bark", "siren"],
        ("json",),
        {},
    ),
    (
        "events-json-null",
        '{"events": null}',
        "events",
        None,
        None,
        None,
        ("json",),
        {"events": "events is null in json"},
    ),
    ("events-empty", "", "events", None, None, None, (), {"events": "empty answer"}),
    ("events-punctuation-only", ", ;", "events", None, None, None, (), {"events": "no events listed"}),
    ("events-none-answer", None, "events", None, None, None, (), {"events": "no answer"}),
    # joint: labelled sections, JSON, chain of thought, missing parts
    (
        "joint-sections",
        "Transcript: please call Stella.\nScene: park\nEvents: dog bark, siren",
        "joint",
        "please call Stella.",
        "park",
        ["dog bark", "siren"],
        ("label: Transcript", "label: Scene", "label: Events"),
        {},
    ),
    (
        "joint-one-line",
        "Transcript: hello there. Scene: a park. Events: dog barking and a siren.",
        "joint",
        "hello there.",
        "a park.",
        ["dog barking", "siren"],
        ("label: Transcript", "label: Scene", "label: Events"),
        {},
    ),
    (
        "joint-markdown-numbered",
        'Here is my analysis:\n\n1. **Transcription:** "please call Stella"\n2. **Acoustic scene:** busy street\n'
        "3. **Sound events:**\n   - car horn\n   - footsteps",
        "joint",
        "please call Stella",
        "busy street",
        ["car horn", "footsteps"],
        (
            "markdown",
            "label: Transcription",
            "label: Acoustic scene",
            "label: Sound events",
            "unlabelled text",
            "quotes",
        ),
        {},
    ),
    (
        "joint-pipes",
        "Transcript: hi there | Scene: park | Events: dog",
        "joint",
        "hi there",
        "park",
        ["dog"],
        ("label: Transcript", "label: Scene", "label: Events"),
        {},
    ),
    (
        "joint-headers",
        "### Transcript\n\nhello\n\n### Scene\npark",
        "joint",
        None,
        None,
        None,
        (),
        {"transcript": "no transcript section", "scene": "no scene section", "events": "no events section"},
    ),
    (
        "joint-json",
        'Sure, here it is: {"transcript": "hi there", "scene": "office", "events": ["typing"]} Hope it helps',
        "joint",
        "hi there",
        "office",
        ["typing"],
        ("json", "text around json"),
        {},
    ),
    (
        "joint-json-fenced",
        '```json\n{"Transcription": "hi", "Acoustic Scene": "office", "Audio-Events": []}\n```',
        "joint",
        "hi",
        "office",
        [],
        ("json", "code-fence"),
        {},
    ),
    (
        "joint-json-nested",
        '{"answer": {"transcript": "hi", "scene": "office", "events": "none"}}',
        "joint",
        "hi",
        "office",
        [],
        ("json", "text around json"),
        {},
    ),
    (
        "joint-json-partial-plus-label",
        '{"transcript": "hi", "scene": "office"}\nEvents: siren',
        "joint",
        "hi",
        "office",
        ["siren"],
        ("json", "text around json", "label: Events"),
        {},
    ),
    (
        "joint-missing-scene",
        "Transcript: hello world\nEvents: dog bark",
        "joint",
        "hello world",
        None,
        ["dog bark"],
        ("label: Transcript", "label: Events"),
        {"scene": "no scene section"},
    ),
    (
        "joint-empty-scene",
        "Transcript: hello world\nScene:\nEvents: none",
        "joint",
        "hello world",
        None,
        [],
        ("label: Transcript", "label: Scene", "label: Events"),
        {"scene": "empty scene section"},
    ),
    (
        "joint-unlabelled",
        "hello world. It is a park with a dog barking.",
        "joint",
        None,
        None,
        None,
        (),
        {"transcript": "no transcript section", "scene": "no scene section", "events": "no events section"},
    ),
    (
        "joint-commentary-after",
        "Transcript: hello\nScene: park\nEvents: dog bark\n\nThe dog is loud.",
        "joint",
        "hello",
        "park",
        ["dog bark"],
        ("label: Transcript", "label: Scene", "label: Events", "unlabelled text"),
        {},
    ),
    (
        "joint-empty",
        "",
        "joint",
        None,
        None,
        None,
        (),
        {"transcript": "no transcript section", "scene": "no scene section", "events": "no events section"},
    ),
    (
        "joint-none",
        None,
        "joint",
        None,
        None,
        None,
        (),
        {"transcript": "no answer", "scene": "no answer", "events": "no answer"},
    ),
    (
        "joint-think",
        "<think>Let me listen. Transcript: wrong</think>\nTranscript: right\nScene: park\nEvents: none",
        "joint",
        "right",
        "park",
        [],
        ("think", "label: Transcript", "label: Scene", "label: Events"),
        {},
    ),
    (
        "cot-final",
        COT,
        "joint",
        "the quick brown fox jumps",
        "park",
        ["dog bark", "car horn"],
        ("before-final-answer", "label: Transcript", "label: Scene", "label: Events"),
        {},
    ),
    (
        "cot-last-final-wins",
        COT_TWICE,
        "joint",
        "second try",
        "park",
        ["dog bark"],
        ("before-final-answer", "markdown", "label: Transcript", "label: Scene", "label: Events"),
        {},
    ),
    (
        "cot-final-missing-events",
        COT.rsplit("\n", 1)[0],
        "joint",
        "the quick brown fox jumps",
        "park",
        None,
        ("before-final-answer", "label: Transcript", "label: Scene"),
        {"events": "no events section in the final answer"},
    ),
    (
        "cot-without-final",
        COT.split("\n\nFinal answer:")[0],
        "joint",
        "the quick brown fox",
        None,
        None,
        ("label: Transcript", "unlabelled text"),
        {"scene": "no scene section", "events": "no events section"},
    ),
    (
        "cot-prefilled-think",
        "energy is high</think>\n" + COT,
        "joint",
        "the quick brown fox jumps",
        "park",
        ["dog bark", "car horn"],
        ("think-prefilled", "before-final-answer", "label: Transcript", "label: Scene", "label: Events"),
        {},
    ),
]


@pytest.mark.parametrize(
    ("text", "kind", "transcript", "scene", "events", "removed", "failures"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_unify_reads_lalm_answers(text, kind, transcript, scene, events, removed, failures):
    answer = unify(text, kind)
    assert (answer.transcript, answer.scene, answer.events) == (transcript, scene, events)
    assert answer.removed == removed
    assert answer.failures == failures


def test_case_ids_are_unique():
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_a_part_is_either_read_or_failed(case):
    """Every part the kind asks for is a value or a failure, never both; parts it does not ask for are neither."""
    answer = unify(case[1], case[2])
    for part in PARTS:
        value = answer.part(part)
        if part in KIND_PARTS[case[2]]:
            assert (value is None) == (part in answer.failures), part
        else:
            assert value is None and part not in answer.failures, part


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown kind 'foundation'"):
        unify("A", "foundation")


def test_unknown_part_is_refused():
    with pytest.raises(ValueError, match="unknown part"):
        unify("hi", "transcription").part("speaker")


def test_answers_are_frozen():
    answer = unify("hi", "transcription")
    assert isinstance(answer, UnifiedAnswer)
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.transcript = "other"  # type: ignore[misc]


def test_counts_count_each_answer_once_per_removal_and_failure():
    answers = [
        unify("The transcription is: hello", "transcription"),
        unify("Transcript: hi\n\nThe answer is: x", "joint"),
        unify("<think>a</think>Sure! Here is the transcript: hi", "transcription"),
        unify(None, "joint"),
        unify("siren; siren; siren", "events"),
    ]
    counts = unify_counts(answers)
    assert isinstance(counts, UnifyCounts)
    assert counts.n == 5
    assert counts.removals == {"preamble": 2, "label": 1, "unlabelled text": 1, "think": 1, "duplicates": 1}
    assert counts.failures == {"scene": 2, "events": 2, "transcript": 1}
    assert counts.reasons == {
        "scene: no scene section": 1,
        "events: no events section": 1,
        "transcript: no answer": 1,
        "scene: no answer": 1,
        "events: no answer": 1,
    }
    rows = counts.rows()
    assert rows[0] == ("removal", "duplicates", 1)
    assert ("failure", "scene", 2) in rows and ("reason", "transcript: no answer", 1) in rows


def test_counts_of_nothing():
    counts = unify_counts([])
    assert (counts.n, counts.removals, counts.failures, counts.reasons, counts.rows()) == (0, {}, {}, {}, [])


def test_long_answers_stay_fast():
    """A long rambling answer with many braces is read in well under a second (JSON is scanned, not backtracked)."""
    import time

    text = "Step: {not json} " * 2000 + '\nFinal answer: {"transcript": "hi", "scene": "park", "events": ["dog"]}'
    start = time.perf_counter()
    answer = unify(text, "joint")
    assert (answer.transcript, answer.scene, answer.events) == ("hi", "park", ["dog"])
    assert time.perf_counter() - start < 1.0
