"""The paper's tables, from results made by the real scoring on small hand-made runs."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from airbench_nb.analysis.data import FOUNDATION_COLUMNS
from airbench_nb.analysis.tables import (
    LONG_COLUMNS,
    MISSING,
    PARTIAL_MARK,
    format_cell,
    format_following,
    main_table,
    markdown_table,
    tables_long,
    task_table,
    write_tables,
)
from airbench_nb.judge.extract import extract_choice
from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from airbench_nb.score_table import RunScores, ScoreEntry
from airbench_nb.scoring import PROXY_SHORT, score_run

GENDER = ["male", "female"]
SOUND = ["cough", "laughter", "sneeze", "sigh"]
GENRE = ["jazz", "rock", "pop", "blues"]


def run(model, foundation, chat):
    """Items, responses and verdicts: foundation rows (uid, task, choices, answer, text); chat rows
    (uid, task, (model, reference) scores in reference_first, same in hypothesis_first)."""
    items, responses, verdicts = [], [], []
    for uid, task, choices, answer, text in foundation:
        item = FoundationItem(
            uid=uid, task=task, dataset="d", audio=f"{uid}.wav", question="?", choices=choices, answer=answer
        )
        extraction = extract_choice(text, item.choices)
        correct = None if extraction.choice is None else extraction.choice == answer
        items.append(item)
        responses.append(Response(uid=uid, model=model, text=text))
        verdicts.append(
            Verdict(
                uid=uid, model=model, judge="rule", raw=extraction.reason, choice=extraction.choice, correct=correct
            )
        )
    for uid, task, ref_first, hyp_first in chat:
        items.append(
            ChatItem(uid=uid, task=task, dataset="d", audio=f"{uid}.wav", question="?", reference="r", meta_info="m")
        )
        responses.append(Response(uid=uid, model=model, text="an answer"))
        for order, (score, reference) in (("reference_first", ref_first), ("hypothesis_first", hyp_first)):
            verdicts.append(
                Verdict(
                    uid=uid,
                    model=model,
                    judge="proxy",
                    order=order,
                    raw="similarity",
                    score_hypothesis=score,
                    score_reference=reference,
                )
            )
    return items, responses, verdicts


FULL_FOUNDATION = [
    ("g1", "Speaker_Gender_Recognition", GENDER, 0, "A"),
    ("g2", "Speaker_Gender_Recognition", GENDER, 1, "B"),
    ("g3", "Speaker_Gender_Recognition", GENDER, 0, "A"),
    ("g4", "Speaker_Gender_Recognition", GENDER, 0, "I cannot tell from this clip."),  # unreadable
    ("v1", "vocal_sound_classification", SOUND, 2, "C"),
    ("v2", "vocal_sound_classification", SOUND, 2, "B"),
    ("m1", "Music_Genre_Recognition", GENRE, 1, "B"),
    ("m2", "Music_Genre_Recognition", GENRE, 3, "D"),
]
FULL_CHAT = [
    ("s1", "speech_QA", (6, 8), (7, 8)),
    ("s2", "sound_QA", (5, 9), (5, 9)),
    ("s3", "music_QA", (4, 8), (4, 8)),
    ("s4", "speech_and_sound_QA", (8, 8), (6, 8)),
]


@pytest.fixture(scope="module")
def results():
    full = score_run(*run("m:full", FULL_FOUNDATION, FULL_CHAT), protocol="both", reps=200)
    # no music in Foundation, only speech in Chat: both averages partial
    part = score_run(*run("m:part", FULL_FOUNDATION[:6], FULL_CHAT[:1]), protocol="both", reps=200)
    return {"m:full | chat judge proxy": full, "m:part | chat judge proxy": part}


def _entry(value: float | None, ci_low: float | None = None, ci_high: float | None = None) -> ScoreEntry:
    return ScoreEntry(value=value, n=1, failures=0, ci_low=ci_low, ci_high=ci_high)


def test_cell_formatting():
    assert format_cell(_entry(value=0.75, ci_low=0.5, ci_high=1.0), "foundation") == "75.0 [50.0, 100.0]"
    assert format_cell(_entry(value=6.5, ci_low=6.0, ci_high=7.0), "chat") == "6.50 [6.00, 7.00]"
    assert format_cell(_entry(value=0.3333, ci_low=None, ci_high=None), "foundation") == "33.3"
    assert format_cell(_entry(value=5.0, ci_low=4.0, ci_high=6.0), "chat", partial=True) == "5.00 [4.00, 6.00] †"
    assert format_cell(None, "chat") == MISSING and format_cell(_entry(value=None), "foundation") == MISSING


def test_main_table_cells_side_by_side_and_partial_marker(results):
    main = main_table(results)
    assert list(main.index) == [("m:full", PROXY_SHORT), ("m:part", PROXY_SHORT)]
    assert set(main.columns.get_level_values("protocol")) == {"official", "strict"}
    full = main.loc[("m:full", PROXY_SHORT)]
    strict_speech = results["m:full | chat judge proxy"].strict.foundation.categories["speech"]
    # strict: the unreadable answer counts wrong, 3 of 4; official drops it, 3 of 3
    assert strict_speech.value == 0.75
    low, high = strict_speech.ci_low * 100, strict_speech.ci_high * 100
    assert full[("strict", "Foundation", "speech")] == f"75.0 [{low:.1f}, {high:.1f}]"
    assert full[("official", "Foundation", "speech")].startswith("100.0 [")
    assert full[("strict", "Foundation", "n (failed)")] == "8 (1 failed)"
    assert full[("official", "Foundation", "n (failed)")] == "7 (1 failed)"
    # Chat speech: model scores 6 and 7 over both orders -> 6.50
    assert full[("strict", "Chat", "speech")].startswith("6.50 [")
    assert full[("strict", "Chat", "mixed")].startswith("7.00 [")
    assert not full[("strict", "Foundation", "average")].endswith(PARTIAL_MARK)
    assert not full[("strict", "Chat", "average")].endswith(PARTIAL_MARK)
    part = main.loc[("m:part", PROXY_SHORT)]
    assert part[("strict", "Foundation", "average")].endswith(PARTIAL_MARK)
    assert part[("official", "Chat", "average")].endswith(PARTIAL_MARK)
    assert part[("strict", "Foundation", "music")] == MISSING


def test_summary_orders_and_filters_rows(results):
    summary = pd.DataFrame({"model": ["m:part"], "chat_judge": [PROXY_SHORT], "protocol": ["strict"]})
    assert list(main_table(results, summary).index) == [("m:part", PROXY_SHORT)]


def test_long_frame_has_raw_numbers(results):
    long = tables_long(results)
    assert tuple(long.columns) == LONG_COLUMNS
    row = long[
        (long.table == "main")
        & (long.model == "m:full")
        & (long.protocol == "strict")
        & (long.benchmark == "foundation")
        & (long.name == "speech")
    ].iloc[0]
    assert (row.value, row.n, row.failures, row.level) == (0.75, 4, 1, "category")
    averages = long[(long.level == "average") & (long.protocol == "strict")].set_index(["model", "benchmark"])
    assert averages.loc[("m:part", "foundation"), "partial"] is True
    assert averages.loc[("m:full", "chat"), "partial"] is False
    tasks = long[(long.table == "task") & (long.model == "m:full") & (long.protocol == "strict")]
    assert set(tasks.name) == {
        "Speaker_Gender_Recognition",
        "vocal_sound_classification",
        "Music_Genre_Recognition",
        "speech_QA",
        "sound_QA",
        "music_QA",
        "speech_and_sound_QA",
    }


def test_task_table(results):
    table = task_table(results, "strict")
    assert list(table.columns) == ["n", "m:full", "m:part"]
    gender = table.loc[("Foundation", "speech", "Speaker_Gender_Recognition")]
    assert gender["n"] == 4 and gender["m:full"].startswith("75.0 [") and gender["m:full"].endswith("(1 failed)")
    assert table.loc[("Foundation", "music", "Music_Genre_Recognition"), "m:part"] == MISSING
    assert table.loc[("Chat", "speech", "speech_QA"), "n"] == 2  # (item, order) judgments
    with pytest.raises(ValueError, match="unknown protocol"):
        task_table(results, "lenient")
    assert task_table({}, "strict").attrs["reason"]


def foundation_row(model, uid, judge, response, failed):
    row = dict.fromkeys(FOUNDATION_COLUMNS)
    row.update(model=model, uid=uid, judge=judge, response=response, failed=failed, correct=not failed)
    return row


def test_format_following_shares_by_hand():
    rows = [
        foundation_row("a", "1", "rule", "A", False),
        foundation_row("a", "2", "rule", "B", False),
        foundation_row("a", "3", "openai:gpt-4o", "I think it is the second one", False),
        foundation_row("a", "4", None, "no idea", True),  # a response nobody could read
        foundation_row("a", "5", None, None, True),  # no response or an error
        foundation_row("a", "6", None, "  ", True),  # empty response
        foundation_row("b", "1", "rule", "C", False),
    ]
    table = format_following(pd.DataFrame(rows, columns=list(FOUNDATION_COLUMNS))).set_index("model")
    a = table.loc["a"]
    assert a["n"] == 6
    assert (a["rule_count"], a["llm_judge_count"], a["unresolved_count"], a["no_response_count"]) == (2, 1, 1, 2)
    assert (a["rule"], a["llm_judge"], a["unresolved"], a["no_response"]) == pytest.approx((2 / 6, 1 / 6, 1 / 6, 2 / 6))
    assert table.loc["b", "rule"] == 1.0
    shares = table[["rule", "llm_judge", "unresolved", "no_response"]].sum(axis=1)
    assert np.allclose(shares, 1.0)
    official = pd.DataFrame([foundation_row("a", "1", "official", "A", False)], columns=list(FOUNDATION_COLUMNS))
    with pytest.raises(ValueError, match="strict"):
        format_following(official)
    assert format_following(pd.DataFrame(columns=list(FOUNDATION_COLUMNS))).attrs["reason"]


def _pipes(line):
    return len(re.findall(r"(?<!\\)\|", line))


def _tables(markdown):
    """Blocks of consecutive lines starting with '|'."""
    blocks, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def test_markdown_helper_escapes_pipes():
    text = markdown_table(pd.DataFrame({"a|b": ["x|y", None], "c": [1.5, math.nan]}))
    lines = text.splitlines()
    assert len({_pipes(line) for line in lines}) == 1 and _pipes(lines[0]) == 3
    assert "x\\|y" in text and MISSING in lines[3]
    assert re.fullmatch(r"\|(---\|)+", lines[1])


def test_write_tables_markdown_and_csv_round_trip(results, tmp_path):
    rows = [foundation_row("m:full", "1", "rule", "A", False), foundation_row("m:full", "2", None, None, True)]
    frame = pd.DataFrame(rows, columns=list(FOUNDATION_COLUMNS))
    paths = write_tables(tmp_path / "out", results, foundation_frame_strict=frame)
    markdown = paths["markdown"].read_text(encoding="utf-8")
    assert markdown.startswith("# ")
    assert "**official**" in markdown and "**strict**" in markdown
    assert "not an LLM" in markdown  # the proxy judge is labelled
    blocks = _tables(markdown)
    assert len(blocks) == 4  # main, per-task official, per-task strict, format following
    for block in blocks:
        assert len({_pipes(line) for line in block}) == 1, block
        assert re.fullmatch(r"\|(---\|)+", block[1])
    main = blocks[0]
    assert len(main) == 2 + 4  # header, separator, two models x two protocols
    assert PARTIAL_MARK in markdown and "8 (1 failed)" in markdown

    back = pd.read_csv(paths["csv"])
    expected = tables_long(results, format_following(frame))
    assert list(back.columns) == list(LONG_COLUMNS) and len(back) == len(expected)
    for column in ("table", "model", "chat_judge", "protocol", "benchmark", "level", "name"):
        assert list(back[column]) == list(expected[column])
    for column in ("value", "ci_low", "ci_high", "n", "failures"):
        assert np.allclose(back[column].astype(float), expected[column].astype(float), equal_nan=True), column
    shares = back[back.table == "format_following"].set_index("name")
    assert shares.loc["rule", "value"] == 0.5 and shares.loc["no_response", "failures"] == 1


def test_empty_results_give_reason_and_still_write(tmp_path):
    main = main_table({})
    assert main.empty and main.attrs["reason"]
    paths = write_tables(tmp_path, {})
    assert "no scored models" in paths["markdown"].read_text(encoding="utf-8")
    assert pd.read_csv(paths["csv"]).empty


def test_partial_marker_without_scoring_flag(results):
    """Results written before scoring flagged partial averages: the marker comes from the categories present."""
    import copy

    old = copy.deepcopy(results)
    for result in old.values():
        for table in result.protocols():
            for section in (table.foundation, table.chat):
                section.average.partial = None  # not written by older results
    main = main_table(old)
    assert main.loc[("m:part", PROXY_SHORT), ("strict", "Foundation", "average")].endswith(PARTIAL_MARK)
    assert not main.loc[("m:full", PROXY_SHORT), ("strict", "Chat", "average")].endswith(PARTIAL_MARK)


def test_one_protocol_only(results):
    strict_only = {key: RunScores(strict=result.strict) for key, result in results.items()}
    main = main_table(strict_only)
    assert set(main.columns.get_level_values("protocol")) == {"strict"}
    assert main.loc[("m:full", PROXY_SHORT), ("strict", "Foundation", "speech")].startswith("75.0 [")
