"""Judges: rule, proxy, and an LLM judge through the shared client against a local OpenAI-compatible server."""

from __future__ import annotations

import pytest

from airbench_nb.judge.run import (
    JudgeSpecError,
    chat_judge_messages,
    judge_responses,
    parse_judge_letter,
    parse_judge_spec,
)
from airbench_nb.manifests import read_manifest, read_records
from airbench_nb.records import ChatItem, FoundationItem, Response, Verdict
from airbench_nb.run_folder import RunFolder
from tests.openai_server import Fault, JudgeServer


@pytest.fixture
def server():
    with JudgeServer() as srv:
        yield srv


def _items():
    foundation = [
        FoundationItem(
            uid=f"f{i}",
            dataset="d",
            audio="a.wav",
            question="What is it?",
            task="Sound_AQA",
            choices=["a dog barking", "a car horn", "rain falling", "a bell ringing"],
            answer=i % 4,
        )
        for i in range(6)
    ]
    chat = [
        ChatItem(
            uid=f"c{i}",
            dataset="d",
            audio="a.wav",
            question="Describe it.",
            task="sound_QA",
            reference="REF a dog barks twice",
            meta_info="A dog barks twice over rain.",
        )
        for i in range(4)
    ]
    return foundation, chat


def _responses(foundation, chat, model="m"):
    texts = {
        "f0": "A",  # rule reads it
        "f1": "I hear something like a car horn honking, I believe",  # rule reads the option text
        "f2": "It sounds wet, like rain falling outside, or maybe a dog barking?",  # several: rule abstains
        "f3": "It's the bell, ringing.",  # rule: no option text as such -> LLM
        "f4": "I cannot tell.",  # rule abstains; LLM says none
    }
    out = [Response(uid=i.uid, model=model, text=texts[i.uid]) for i in foundation if i.uid in texts]
    out.append(Response(uid="f5", model=model, error="audio missing: a.wav"))
    chat_texts = {"c0": "A dog barking, twice.", "c1": "LABELLED: a dog", "c2": "UNPARSEABLE", "c3": "REF copy"}
    out += [Response(uid=i.uid, model=model, text=chat_texts[i.uid]) for i in chat]
    return out


def test_judge_specs():
    assert parse_judge_spec("rule") == "rule" and parse_judge_spec("openai:gpt-4o@http://x/v1")
    for bad in ("gpt4", "openai:", "llm"):
        with pytest.raises(JudgeSpecError):
            parse_judge_spec(bad)


def test_parse_judge_letter():
    assert parse_judge_letter("B", 4) == (1, None)
    assert parse_judge_letter("(c).", 4) == (2, None)
    assert parse_judge_letter("Option D", 4) == (3, None)
    assert parse_judge_letter("none", 4) == (None, None)
    assert parse_judge_letter("D", 2)[1].startswith("judge named option D")
    assert parse_judge_letter("I think so", 4)[0] is None


def test_rule_judge_counts_abstentions_and_errors(tmp_path):
    foundation, chat = _items()
    summary = judge_responses(
        "rule", [*foundation, *chat], _responses(foundation, chat), tmp_path / "v.jsonl", progress=False
    )
    verdicts = {v.uid: v for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert set(verdicts) == {f"f{i}" for i in range(6)}  # the rule judge does not score Chat
    assert verdicts["f0"].choice == 0 and verdicts["f0"].correct is True
    assert verdicts["f1"].choice == 1 and verdicts["f1"].correct is True
    assert verdicts["f2"].choice is None and "rule abstained" in verdicts["f2"].parse_error
    assert verdicts["f5"].parse_error.startswith("no response: audio missing")
    assert summary.parse_failures == 4 and summary.written == 6


def test_llm_judge_asks_only_for_abstentions_then_caches(server, tmp_path):
    foundation, chat = _items()
    responses = _responses(foundation, chat)
    cache = tmp_path / "judge.sqlite"
    spec = f"openai:judge-mini@{server.base_url}"
    summary = judge_responses(spec, [*foundation, *chat], responses, tmp_path / "v.jsonl", cache=cache, progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    keys = [(v.uid, v.order) for v in verdicts]
    assert len(keys) == len(set(keys)) == 6 + 2 * 4
    by = {(v.uid, v.order): v for v in verdicts}
    # Foundation: rule for f0/f1, LLM for f2 (several options -> 'none'), f3 (bell -> D) and f4 ('none')
    assert by[("f3", "single")].choice == 3 and by[("f3", "single")].correct is True
    assert by[("f4", "single")].choice is None and by[("f4", "single")].correct is False
    assert by[("f0", "single")].raw.startswith("rule:")
    # Chat in both orders: the reference is recognised in either position
    for order in ("reference_first", "hypothesis_first"):
        assert (by[("c0", order)].score_reference, by[("c0", order)].score_hypothesis) == (9, 4)
        assert (by[("c1", order)].score_reference, by[("c1", order)].score_hypothesis) == (9, 4)  # labelled shape
        assert by[("c3", order)].score_hypothesis == 9
        assert by[("c2", order)].score_hypothesis is None and by[("c2", order)].parse_error
    sent = server.seen.chat_requests
    assert sent == 2 * (3 + 2 * 4)  # each task asked with the verbatim and the fenced prompt
    assert all(by[("c0", o)].fenced.score_hypothesis == 4 for o in ("reference_first", "hypothesis_first"))
    assert summary.usage["requests_sent"] == sent and summary.parse_failures >= 3
    # a rerun into a new file with the same cache sends nothing; into the same file it skips everything
    again = judge_responses(spec, [*foundation, *chat], responses, tmp_path / "v2.jsonl", cache=cache, progress=False)
    assert server.seen.chat_requests == sent and again.usage["cache_hits"] == 2 * (3 + 2 * 4)

    def reading(v):
        return v.uid, v.order, v.choice, v.correct, v.score_reference, v.score_hypothesis, v.parse_error

    second = read_records(tmp_path / "v2.jsonl", Verdict)
    assert [reading(v) for v in second] == [reading(v) for v in verdicts]
    assert all(v.cached for v in second if not (v.raw or "").startswith("rule:") and v.raw is not None)
    resumed = judge_responses(spec, [*foundation, *chat], responses, tmp_path / "v.jsonl", cache=cache, progress=False)
    assert resumed.written == 0 and resumed.skipped_existing == 14


def test_judge_call_failure_is_an_explicit_verdict(server, tmp_path):
    foundation, chat = _items()
    server.plan["REF a dog barks twice"] = [Fault("400")] * 10
    summary = judge_responses(
        f"openai:judge-mini@{server.base_url}", chat, _responses(foundation, chat), tmp_path / "v.jsonl", progress=False
    )
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    assert len(verdicts) == 8 and all(v.parse_error.startswith("judge call failed") for v in verdicts)
    assert summary.failure_kinds == {"judge call failed": 8}


def test_dry_run_sends_and_writes_nothing(server, tmp_path):
    foundation, chat = _items()
    summary = judge_responses(
        f"openai:judge-mini@{server.base_url}",
        [*foundation, *chat],
        _responses(foundation, chat),
        tmp_path / "v.jsonl",
        dry_run=True,
        progress=False,
    )
    assert "22 calls" in summary.dry_run and server.seen.chat_requests == 0  # both prompts
    assert not (tmp_path / "v.jsonl").exists() or not (tmp_path / "v.jsonl").read_text()


def test_batch_api_judging(server, tmp_path):
    foundation, chat = _items()
    judge_responses(
        f"openai:judge-mini@{server.base_url}",
        chat,
        _responses(foundation, chat),
        tmp_path / "v.jsonl",
        cache=tmp_path / "c.sqlite",
        batch_api=True,
        batch_poll_s=0.05,
        progress=False,
    )
    verdicts = {(v.uid, v.order): v for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert verdicts[("c0", "hypothesis_first")].score_hypothesis == 4 and server.seen.chat_requests == 0
    assert list(tmp_path.glob("v.batch-requests-*.jsonl"))  # the requests file sits next to the verdicts


def test_chat_judge_prompt_orders():
    _, chat = _items()
    first = chat_judge_messages(chat[0], "HYP", "reference_first")[0]["content"]
    second = chat_judge_messages(chat[0], "HYP", "hypothesis_first")[0]["content"]
    assert first.index("REF a dog") < first.index("HYP") and second.index("HYP") < second.index("REF a dog")
    assert "[Detailed Audio Description]\nA dog barks twice over rain.\n[Question]" in first
    assert "helpfulness, relevance, accuracy, and comprehensiveness" in first


def test_oracle_scores_full_marks_once_judged(imported, tmp_path):
    """baseline:oracle through the runner, the rule judge and the proxy: 100% of answered Foundation items."""
    from airbench_nb.models import load_model
    from airbench_nb.runner import run_model

    root, out, _, _ = imported
    items = [*read_manifest(out / "foundation.jsonl"), *read_manifest(out / "chat.jsonl")]
    run_model(load_model("baseline:oracle"), items, root, tmp_path / "r.jsonl", progress=False)
    responses = read_records(tmp_path / "r.jsonl", Response)
    judge_responses("rule", items, responses, tmp_path / "v.jsonl", progress=False)
    judge_responses("proxy", items, responses, tmp_path / "v.jsonl", progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    answered = [v for v in verdicts if v.order == "single" and v.parse_error is None]
    assert len(answered) == 6 and all(v.correct for v in answered)
    proxy = [v for v in verdicts if v.judge == "proxy"]
    assert len(proxy) == 2 * 3 and all(v.score_hypothesis == v.score_reference for v in proxy)
    assert all("proxy" in v.raw for v in proxy)
    # the items with missing, empty or corrupt audio are data defects: left out of both protocols and counted
    from airbench_nb.scoring import score_run

    result = score_run(items, responses, verdicts, protocol="both", reps=0)
    for protocol in ("official", "strict"):
        assert getattr(result, protocol).foundation.average.value == 1.0
        assert getattr(result, protocol).unusable_items.foundation == 3
    assert result.strict.judges.chat_label.startswith("proxy (sentence-embedding")


def test_proxy_prefers_the_right_answer(tmp_path):
    _, chat = _items()
    item = chat[0]
    responses = [
        Response(uid=item.uid, model="good", text="A dog is barking two times."),
        Response(uid=item.uid, model="bad", text="The stock market fell sharply today."),
    ]
    judge_responses("proxy", [item], responses, tmp_path / "v.jsonl", progress=False)
    scores = {v.model: v.score_hypothesis for v in read_records(tmp_path / "v.jsonl", Verdict)}
    assert scores["good"] > scores["bad"] and 1 <= scores["bad"] <= 10 and scores["good"] <= 10


def test_local_transformers_judge(tmp_path):
    """hf:<path> judges with a local chat model (a tiny random one here: its replies are noise, counted as such)."""
    from airbench_nb.models.tiny import build_tiny_chat_lm

    path = build_tiny_chat_lm(tmp_path / "judge-lm")
    foundation, chat = _items()
    responses = _responses(foundation, chat)
    summary = judge_responses(f"hf:{path}", [*foundation, *chat], responses, tmp_path / "v.jsonl", progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    assert len(verdicts) == 6 + 2 * 4 and summary.written == 14
    asked = [v for v in verdicts if v.raw is not None and not v.raw.startswith("rule:")]
    assert len(asked) == 3 + 2 * 4  # the LLM saw the rule's abstentions and every Chat order
    for v in asked:  # random weights: either a reading or an explicit parse error, never a silent guess
        read = v.choice is not None or v.score_hypothesis is not None or v.correct is False
        assert read != (v.parse_error is not None), v


# ------------------------------------------------------------------------------------------- the judge registry


def test_an_unknown_spec_is_refused_with_the_message_it_always_had():
    from airbench_nb.judge import load_judge

    expected = (
        "judge spec 'llm' not understood; use rule, proxy, openai:<model>[@<base_url>], hf:<path>, asr:<model spec>, "
        "sources or strategy:<openai:... or hf:... judge spec>"
    )
    for call in (parse_judge_spec, load_judge):
        with pytest.raises(JudgeSpecError) as caught:
            call("llm")
        assert str(caught.value) == expected
    for bad in ("rule:x", "proxy:", "hf:", "openai:", "openai", ":rule", "Rule"):
        with pytest.raises(JudgeSpecError, match="not understood"):
            parse_judge_spec(bad)
    with pytest.raises(JudgeSpecError, match="^judge ") as caught:  # the openai: check of a model spec, prefixed
        parse_judge_spec("openai:gpt-4o@ftp://user:hunter2@x/v1")
    assert "hunter2" not in str(caught.value)


def test_each_judge_declares_the_kinds_it_applies_to():
    from airbench_nb.judge import Judge, judge_applies, load_judge, registered_judges
    from airbench_nb.judge.llm import HFJudge, OpenAIJudge
    from airbench_nb.judge.proxy import ProxyJudge
    from airbench_nb.judge.rule import RuleJudge
    from airbench_nb.judge.sources import SourcesJudge
    from airbench_nb.judge.strategy import StrategyJudge

    tiered = {"sound_source", "sound_source_open"}
    choice_qa = {"mmau", "mmar", "mmsu"}
    expected = {
        "rule": ({"foundation", "sound_source", *choice_qa}, RuleJudge),
        "proxy": ({"chat"}, ProxyJudge),
        "openai:gpt-4o@http://127.0.0.1:9/v1": ({"foundation", "chat", *tiered, *choice_qa}, OpenAIJudge),
        "hf:/some/judge": ({"foundation", "chat", *tiered, *choice_qa}, HFJudge),
        "sources": ({"sound_source_open"}, SourcesJudge),
        "strategy:openai:m@http://127.0.0.1:9/v1": ({"sound_source"}, StrategyJudge),
    }
    for spec, (kinds, cls) in expected.items():
        assert {k for k in ("foundation", "chat", *tiered, *choice_qa) if judge_applies(spec, k)} == kinds, spec
        assert cls.kinds == kinds and registered_judges()[cls.name] is cls
    for spec in ("rule", "proxy", "openai:gpt-4o@http://127.0.0.1:9/v1"):  # built without loading or sending
        judge = load_judge(spec, concurrency=2, cache=None, foundation_mode="all", batch_poll_s=1.0)
        assert isinstance(judge, Judge) and judge.spec == spec
    assert load_judge("openai:gpt-4o@http://127.0.0.1:9/v1", foundation_mode="all").foundation_mode == "all"


class LengthJudge:
    """A judge written in a test: scores a Chat answer by its length (no item kind but Chat), for the registry test."""

    name = "length"
    takes_argument = True
    usage_text = "length:<max>"
    kinds = frozenset({"chat"})

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.cap = int(spec.partition(":")[2])
        self.asked = 0

    @classmethod
    def check_spec(cls, argument: str) -> None:
        if not argument.isdigit():
            raise JudgeSpecError(f"judge length:{argument}: the argument is a number of characters")

    @classmethod
    def applies_to(cls, kind: str) -> bool:
        return kind in cls.kinds

    def decide(self, task):
        return None

    def ask(self, tasks, *, batch_file):
        self.asked += len(tasks)
        return [
            t.verdict(self.spec, raw="length", score_reference=10.0, score_hypothesis=min(len(t.answer), self.cap))
            for t in tasks
        ]

    def estimate(self, tasks):
        return f"{len(tasks)} lengths"

    def usage(self):
        return {}


@pytest.fixture
def length_judge():
    from airbench_nb.judge import register_judge, unregister_judge

    register_judge(LengthJudge)  # type: ignore[arg-type]
    yield LengthJudge
    unregister_judge("length")


def test_a_judge_registered_elsewhere_is_used_by_judge_responses_and_the_run_folder(length_judge, tmp_path):
    from airbench_nb.judge.run import judge_run_folder
    from airbench_nb.manifests import write_manifest, write_records

    foundation, chat = _items()
    responses = _responses(foundation, chat)
    summary = judge_responses("length:12", [*foundation, *chat], responses, tmp_path / "v.jsonl", progress=False)
    verdicts = read_records(tmp_path / "v.jsonl", Verdict)
    assert summary.tasks == summary.written == summary.asked == 2 * len(chat)  # Foundation items are not its kind
    assert {v.judge for v in verdicts} == {"length:12"} and {v.uid for v in verdicts} == {i.uid for i in chat}
    assert all(v.score_hypothesis == min(12, len(r.text)) for v in verdicts for r in responses if r.uid == v.uid)
    again = judge_responses("length:12", [*foundation, *chat], responses, tmp_path / "v.jsonl", progress=False)
    assert again.skipped_existing == 2 * len(chat) and again.written == 0  # resumed like any judge
    dry = judge_responses("length:3", chat, responses, tmp_path / "d.jsonl", progress=False, dry_run=True)
    assert dry.dry_run == f"{2 * len(chat)} lengths" and not (tmp_path / "d.jsonl").exists()
    with pytest.raises(JudgeSpecError, match="a number of characters"):
        judge_responses("length:many", chat, responses, tmp_path / "x.jsonl", progress=False)
    with pytest.raises(JudgeSpecError, match=r"or length:<max>$"):  # the message lists registered judges
        parse_judge_spec("llm")

    folder = RunFolder(tmp_path / "run")
    write_manifest(folder.manifest("foundation"), foundation)
    write_manifest(folder.manifest("chat"), chat)
    write_records(folder.responses_file("m", "foundation"), [r for r in responses if r.uid.startswith("f")])
    write_records(folder.responses_file("m", "chat"), [r for r in responses if r.uid.startswith("c")])
    rows = judge_run_folder(folder, ["rule", "length:5"]).rows()
    assert [(r["kind"], r["judge"], r["written"]) for r in rows] == [
        ("foundation", "rule", len(foundation)),
        ("chat", "length:5", 2 * len(chat)),
    ]

    judge = LengthJudge("length:4")  # an object already built is used as it is
    summary = judge_responses(judge, chat, responses, tmp_path / "o.jsonl", progress=False)
    assert judge.asked == summary.asked == 2 * len(chat)


def test_proxy_verdicts_batched_and_cached_equal_texts_embedded_one_by_one(tmp_path):
    """The proxy embeds each distinct text of a chunk once, in one batched call, and keeps embeddings by text: the
    verdicts (scores to the last digit, raw text) equal those of each text embedded alone, real MiniLM embeddings."""
    import numpy as np

    from airbench_nb.judge.base import CHAT_ORDERS, Task
    from airbench_nb.judge.proxy import EmbeddingCache, ProxyJudge
    from tests.test_judge_multi import multi_items, multi_responses

    class OneByOne(ProxyJudge):
        def embed(self, texts):
            return np.stack([np.asarray(self.encoder.encode([t], normalize_embeddings=True))[0] for t in texts])

    _, chat = _items()
    chat = [
        *chat,
        *(i for i in multi_items() if i.kind == "chat"),
        ChatItem(
            uid="long",
            dataset="d",
            audio="a.wav",
            question="What happens, in order?",
            task="sound_QA",
            reference="First a door creaks open, then footsteps cross a wooden floor, and finally a cat meows twice.",
            meta_info="A door creaks; footsteps on wood; a cat meows twice. " * 6,
        ),
    ]
    answers = ["A dog barking, twice.", "", "Footsteps and a cat.", "Rain on a roof; nothing else.", "REF twice"]
    responses = [
        Response(uid=item.uid, model=model, text=answers[(k + n) % len(answers)], turns=[])
        for n, model in enumerate(("m1", "m2"))
        for k, item in enumerate(chat)
        if not item.multi_turn
    ] + [r for r in multi_responses() if r.uid == "m0"]
    by_uid = {i.uid: i for i in chat}
    tasks = [
        Task(by_uid[r.uid], r, order, turn=turn)
        for r in responses
        for turn in (range(len(by_uid[r.uid].turns)) if by_uid[r.uid].multi_turn else [None])
        for order in CHAT_ORDERS
        if r.turn_answer(turn) is not None
    ]
    alone = OneByOne(keep_embeddings=False).judge(tasks)
    cached = ProxyJudge()
    cached.cache = EmbeddingCache()
    batched = cached.judge(tasks[: len(tasks) // 2]) + cached.judge(tasks[len(tasks) // 2 :])  # the 2nd hits
    unique = {t for task in tasks for t in (task.reference, task.answer or "", task.item.meta_info)}
    assert cached.cache.misses == len(unique) and cached.cache.hits == 3 * len(tasks) - len(unique)
    plain = ProxyJudge(keep_embeddings=False).judge(tasks)  # all texts of the chunk in one call, as before the cache
    fields = {"created"}
    assert [v.model_dump(exclude=fields) for v in batched] == [v.model_dump(exclude=fields) for v in alone]
    assert [v.model_dump(exclude=fields) for v in plain] == [v.model_dump(exclude=fields) for v in alone]
    assert len({v.score_hypothesis for v in alone}) > 3  # the answers are told apart


def test_embedding_cache_keeps_the_most_recently_used_texts():
    import numpy as np

    from airbench_nb.judge.proxy import EmbeddingCache

    class Encoder:
        calls: list[list[str]] = []

        def encode(self, texts, **_):
            self.calls.append(list(texts))
            return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    encoder, cache = Encoder(), EmbeddingCache(size=3)
    assert cache.embed(encoder, ["a", "bb", "a"]).tolist() == [[1, 1], [2, 1], [1, 1]]
    assert cache.embed(encoder, ["a", "ccc", "dddd"]).shape == (3, 2)
    assert encoder.calls == [["a", "bb"], ["ccc", "dddd"]]  # each missing text once, in one call
    assert list(cache.vectors) == ["a", "ccc", "dddd"]  # "bb" went first: least recently used
    assert cache.embed(encoder, []).shape[0] == 0 and (cache.hits, cache.misses) == (2, 4)
