"""Judge provenance (issue 34, part 5): every Chat score names its judge; other judges than AIR-Bench's are labelled."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airbench_nb.judge.run import judge_responses
from airbench_nb.manifests import read_records
from airbench_nb.pages.airbench import chat_provenance
from airbench_nb.records import RunInfo, Verdict
from airbench_nb.report_page import _warnings
from airbench_nb.score_table import ScoreTable
from airbench_nb.scoring import score_run
from airbench_nb.scoring.provenance import NOT_COMPARABLE, provenance_text, published_judge
from tests.openai_server import JudgeServer
from tests.test_judge import _items, _responses


@pytest.fixture(scope="module")
def server():
    with JudgeServer() as srv:
        yield srv


def _scored(server, tmp_path, judge: str) -> tuple[ScoreTable, str]:
    _, chat = _items()
    responses = [r for r in _responses([], chat) if r.uid.startswith("c")]
    spec = judge.format(url=server.base_url)
    out = tmp_path / f"{judge[:6]}.jsonl"
    judge_responses(spec, chat, responses, out, progress=False)
    result = score_run(chat, responses, read_records(out, Verdict), reps=20)
    assert result.protocols()[0].judges.chat == [spec]  # every Chat score names its judge
    return ScoreTable({f"m | chat judge {spec}": result}), spec


def _page_warnings(table: ScoreTable) -> list[str]:
    run = RunInfo(run_id="r", started=datetime.now(UTC))
    return [text for _, text in _warnings(run, table.summary_rows(), None)]


def test_the_published_judge_served_under_its_name_is_not_labelled(server, tmp_path):
    table, spec = _scored(server, tmp_path, "openai:gpt-4-0125-preview@{url}")
    assert published_judge(spec)
    line = chat_provenance(table)
    assert "AIR-Bench's judge, comparable with the published table" in line and NOT_COMPARABLE not in line
    assert not any(NOT_COMPARABLE in w for w in _page_warnings(table))


def test_another_llm_judge_is_labelled_not_comparable(server, tmp_path):
    table, spec = _scored(server, tmp_path, "openai:gpt-4o@{url}")
    assert not published_judge(spec)
    line = chat_provenance(table)
    assert f"Chat scores judged by {spec}: {NOT_COMPARABLE}" in line
    assert [w for w in _page_warnings(table) if NOT_COMPARABLE in w and spec in w]


def test_the_proxy_is_labelled_a_proxy_and_not_comparable():
    from airbench_nb.score_table import PROXY_SHORT

    assert NOT_COMPARABLE in provenance_text([PROXY_SHORT, "-"]) and PROXY_SHORT in provenance_text([PROXY_SHORT])
    assert provenance_text(["-"]) == ""
    for spec in ("proxy", "hf:/models/judge", "openai:gpt-4-0125", "openai:gpt-4-0125-preview-x", "rule"):
        assert not published_judge(spec), spec
    assert published_judge("openai:gpt-4-0125-preview") and published_judge("openai:gpt-4-0125-preview@http://h/v1")
