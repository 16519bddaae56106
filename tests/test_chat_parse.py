"""The two Chat score parsers: the official one with its known failures, the strict one on the shapes judges write."""

import pytest

from airbench_nb.judge.chat_parse import SCORE_MAX, SCORE_MIN, parse_scores_official, parse_scores_strict

OFFICIAL = [
    ("8 7", (8, 7)),
    ("  8 7 \n", (8, 7)),  # stripped first
    ("10 9", (10, 9)),
    ("8\n 7", (8, 7)),  # the newline is deleted, the space stays
    ("8\n7", None),  # becomes "87": one part
    ("7.5 8", None),  # int() refuses decimals
    ("8  7", None),  # two spaces: three parts
    ("8, 7", None),
    ("Assistant 1: 8\nAssistant 2: 7", None),
    ("8 7\nAssistant 1 is more detailed.", None),
    ("11 3", None),  # the official script aborts on a score above 10; here a failure
    ("", None),
    (None, None),
    ("0 7", (0, 7)),  # the official script accepts what int() reads, 0 included
]


@pytest.mark.parametrize(("reply", "expected"), OFFICIAL)
def test_official_parser_reproduces_the_script(reply, expected):
    assert parse_scores_official(reply) == expected


def test_official_parser_known_failures():
    """The flaws the strict parser fixes: a newline between the scores, and decimals."""
    assert parse_scores_official("8\n7") is None
    assert parse_scores_official("7.5 8") is None
    assert parse_scores_strict("8\n7") == (8.0, 7.0)
    assert parse_scores_strict("7.5 8") == (7.5, 8.0)


STRICT_OK = [
    ("8 7", (8, 7)),
    ("8\n7", (8, 7)),
    ("8, 7", (8, 7)),
    ("8,7", (8, 7)),
    ("  9 4  ", (9, 4)),
    ("Assistant 1: 8\nAssistant 2: 7", (8, 7)),
    ("Assistant 1: 8, Assistant 2: 7", (8, 7)),
    ("**Assistant 1**: 9/10\n**Assistant 2**: 6/10", (9, 6)),
    ("Assistant 1 receives a score of 8, Assistant 2 receives 7", (8, 7)),
    ("I would rate Assistant 1 an 8 and Assistant 2 a 7.", (8, 7)),
    ("Assistant 2: 3\nAssistant 1: 9", (9, 3)),  # labels decide, not the order of appearance
    ("8/10 and 7/10", (8, 7)),
    ("8 out of 10 for Assistant 1 and 7 out of 10 for Assistant 2", (8, 7)),
    ("Scores: 8 7", (8, 7)),
    (
        "After careful review, here are my ratings.\nScores: 8 7\nAssistant 1 names 3 instruments, Assistant 2 only 1.",
        (8, 7),
    ),
    ("8 7\nAssistant 1 gives a thorough answer with 3 examples; Assistant 2 is vague.", (8, 7)),
    ("Assistant 1 and 2: 6 9", (6, 9)),
    ("Scores on a scale of 1 to 10:\n8 7", (8, 7)),
    ("7.5 8", (7.5, 8)),
    ("10 1", (10, 1)),
    ("Score: 8.\nScore: 7.", (8, 7)),
    ("`8 7`", (8, 7)),
]


@pytest.mark.parametrize(("reply", "expected"), STRICT_OK)
def test_strict_parser_reads_common_shapes(reply, expected):
    assert parse_scores_strict(reply) == (float(expected[0]), float(expected[1]))


def test_strict_parser_covers_at_least_fifteen_shapes():
    assert len(STRICT_OK) >= 15
    assert all(not isinstance(parse_scores_strict(r), str) for r, _ in STRICT_OK)


STRICT_FAIL = [
    (None, "empty"),
    ("", "empty"),
    ("   ", "empty"),
    ("8", "found 1 numbers"),
    ("8 7 6", "found 3 numbers"),
    ("I cannot evaluate these answers.", "found 0 numbers"),
    ("0 7", "outside 1-10"),
    ("11 3", "outside 1-10"),
    ("-1 8", "outside 1-10"),
    ("8 70", "outside 1-10"),
    ("Assistant 1: 8\nAssistant 1: 6\nAssistant 2: 7", "conflicting"),
    ("Assistant 1: 12\nAssistant 2: 7", "outside 1-10"),
]


@pytest.mark.parametrize(("reply", "fragment"), STRICT_FAIL)
def test_strict_parser_gives_the_reason_and_never_guesses(reply, fragment):
    result = parse_scores_strict(reply)
    assert isinstance(result, str), result
    assert fragment in result


def test_strict_scores_stay_in_range():
    for reply, _ in STRICT_OK:
        first, second = parse_scores_strict(reply)
        assert SCORE_MIN <= first <= SCORE_MAX and SCORE_MIN <= second <= SCORE_MAX


def test_strict_parser_ignores_a_denominator_even_when_labelled():
    assert parse_scores_strict("Assistant 1: 8/10\nAssistant 2: 10/10") == (8.0, 10.0)
    assert parse_scores_strict("Assistant 1: 8 out of 10. Assistant 2: 6 out of 10.") == (8.0, 6.0)
