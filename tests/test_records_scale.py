"""Reading records at scale: the fast path of the JSON checks finds exactly what the full walk finds (issue 35)."""

from __future__ import annotations

import json
import sys

import pytest

from airbench_nb import manifests
from airbench_nb.manifests import MAX_JSON_DEPTH, json_problem, loads_json, parse_json_bytes

LINES = [
    b'{"uid": "a", "text": "The answer is A."}',
    b'{"uid": "a", "meta": {"k": [1, 2, {"x": null}]}, "text": "caf\xc3\xa9 \\u00e9 \\ud83d\\ude00"}',
    b'{"uid": "a", "text": "lone \\ud800 surrogate"}',
    b'{"uid": "a", "text": "LONE \\uDFFF"}',
    b'{"uid": "a", "text": "escaped backslash \\\\ud800 is text"}',
    b'{"uid": "a\xff", "text": "bad byte"}',
    b'{"\\udc80key": 1}',
    b'{"uid": "a", "n": ' + b"9" * 5000 + b"}",
    b'{"uid": "a", "n": ' + b"9" * 4000 + b"}",
    b'{"uid": "a", "d": ' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"}",
    b'{"uid": "a", "d": ' + b"[" * (MAX_JSON_DEPTH - 1) + b"]" * (MAX_JSON_DEPTH - 1) + b"}",
    b'{"uid": "a", "t": "' + b"{" * 100 + b'"}',
    b"[1, 2, 3]",
    b"not json",
]


def _walked(raw: bytes) -> tuple:
    """``parse_json_bytes`` as it was: every parsed document walked by ``json_problem``."""
    try:
        text, bad = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        text, bad = raw.decode("utf-8", errors="surrogateescape"), True
    try:
        obj = loads_json(text)
    except json.JSONDecodeError:
        return parse_json_bytes(raw)  # not parsed: no walk either way
    found = json_problem(obj)
    assert bad or found is None or found  # the walk is the reference
    return (obj, None, None) if found is None else (obj, found[0], found[1])


@pytest.mark.parametrize("raw", LINES)
def test_the_fast_path_agrees_with_the_walk(raw):
    ours = parse_json_bytes(raw)
    theirs = _walked(raw)
    assert ours[1:] == theirs[1:]
    assert repr(ours[0]) == repr(theirs[0])


def test_the_fast_path_is_taken_only_where_nothing_can_be_wrong(monkeypatch):
    walked = []
    monkeypatch.setattr(manifests, "json_problem", lambda obj: walked.append(obj))
    parse_json_bytes(LINES[0])
    assert not walked  # an ordinary record line is not walked
    for raw in (LINES[2], LINES[5], LINES[7], LINES[9]):
        parse_json_bytes(raw)
    assert len(walked) == 4


def test_without_an_integer_limit_long_lines_are_plain(monkeypatch):
    if not hasattr(sys, "set_int_max_str_digits"):
        pytest.skip("no integer limit in this Python")
    before = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(0)
        assert parse_json_bytes(LINES[7])[2] is None
    finally:
        sys.set_int_max_str_digits(before)
