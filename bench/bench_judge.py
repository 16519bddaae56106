"""Judge throughput: Chat verdicts per second at concurrency 1 and 16 against a local OpenAI-compatible server with a
fixed 100 ms latency, their ratio, and the time to judge 1000 items from the cache (a rerun sends no request); and
the offline proxy judge's verdicts per second before and after embedding each distinct text once and keeping
embeddings by text (several models judged in one process, as notebook 04 does), with their ratio.

It runs the real judge path (:func:`airbench_nb.judge.run.judge_responses`: prompts in both orders, the shared
API client, parsing, appending verdicts), not only the client. The server is the tests' fixture server, in its
own process; its replies are not scores, so every verdict is a counted parse failure, which costs the same.

    .venv/bin/python bench/bench_judge.py [--items 16] [--latency-ms 100] [--cached 1000] [--only api|proxy]
        [--proxy-items 126] [--proxy-models 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from airbench_nb.judge.proxy import EmbeddingCache, ProxyJudge
from airbench_nb.judge.run import judge_responses
from airbench_nb.records import ChatItem, Response

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test server lives in tests/
from tests.openai_server import requests_seen, served_in_subprocess  # noqa: E402


def _data(n: int, tag: str) -> tuple[list[ChatItem], list[Response]]:
    items = [
        ChatItem(
            uid=f"{tag}-{i}",
            dataset="bench",
            audio="a.wav",
            question=f"What is heard in clip {i}?",
            task="sound_QA",
            reference="A dog barks twice.",
            meta_info=f"Clip {i}: a dog barks twice.",
        )
        for i in range(n)
    ]
    responses = [Response(uid=i.uid, model="bench-model", text=f"I hear a dog ({tag})") for i in items]
    return items, responses


def _rate(base_url: str, concurrency: int, n: int, tag: str, tmp: Path, cache: Path | None = None) -> float:
    items, responses = _data(n, tag)
    t0 = time.perf_counter()
    summary = judge_responses(
        f"openai:judge-bench@{base_url}",
        items,
        responses,
        tmp / f"{tag}.jsonl",
        concurrency=concurrency,
        cache=cache,
        progress=False,
    )
    seconds = time.perf_counter() - t0
    if summary.failure_kinds.get("judge call failed"):
        raise SystemExit(f"judge calls failed at concurrency {concurrency}: {summary.failure_kinds}")
    return summary.written / seconds


SOURCES = ("a dog", "a car horn", "rain", "a door", "a violin", "a crowd", "a train", "birds", "a kettle", "a drum")
PLACES = ("in a kitchen", "on a street", "in a forest", "at a station", "in a hall", "by the sea")


def _proxy_data(n: int, models: int) -> tuple[list[ChatItem], list[list[Response]]]:
    """Chat items shaped like the kit's (a sentence of reference, a description), and each model's answers."""
    items = []
    for i in range(n):
        source, place = SOURCES[i % len(SOURCES)], PLACES[i % len(PLACES)]
        items.append(
            ChatItem(
                uid=f"proxy-{i}",
                dataset="bench",
                audio="a.wav",
                question=f"What do you hear, and where? ({i})",
                task="sound_QA",
                reference=f"The clip holds {source} {place}, heard {i % 4 + 1} times.",
                meta_info=f"Sound: {source} {place}, {i % 4 + 1} events, recorded at {i % 7 + 1} metres (clip {i}).",
            )
        )
    answers = [
        [
            Response(uid=item.uid, model=f"model-{m}", text=f"I hear {SOURCES[(k + m) % len(SOURCES)]}, maybe {k % 3}.")
            for k, item in enumerate(items)
        ]
        for m in range(models)
    ]
    return items, answers


def _proxy_rate(items: list[ChatItem], answers: list[list[Response]], tmp: Path, keep: bool) -> float:
    """Verdicts per second of the proxy over every model's answers (one judge run per model, one process)."""
    written, t0 = 0, time.perf_counter()
    for k, responses in enumerate(answers):
        judge = ProxyJudge(keep_embeddings=keep)
        if keep and k == 0:
            judge.cache = EmbeddingCache()  # nothing kept from an earlier measure
        written += judge_responses(judge, items, responses, tmp / f"proxy-{keep}-{k}.jsonl", progress=False).written
    return written / (time.perf_counter() - t0)


def proxy_rates(n_items: int, models: int) -> tuple[float, float]:
    """The proxy's verdicts per second embedding every text of a chunk (before) and each distinct text once, kept
    by text (after); the embedding model is loaded first, outside both timings."""
    items, answers = _proxy_data(n_items, models)
    ProxyJudge().encoder.encode(["warm up"])
    with tempfile.TemporaryDirectory() as folder:
        before = _proxy_rate(items, answers, Path(folder), keep=False)
        after = _proxy_rate(items, answers, Path(folder), keep=True)
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16, help="Chat items at concurrency 1 (2 verdicts each; x4 at 16)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="fixed server latency per request")
    parser.add_argument("--cached", type=int, default=1000, help="verdicts in the cache timing")
    parser.add_argument("--only", choices=("api", "proxy"), help="run one part only")
    parser.add_argument("--proxy-items", type=int, default=126, help="Chat items per model for the proxy (2 verdicts)")
    parser.add_argument("--proxy-models", type=int, default=3, help="models judged by the proxy in one process")
    args = parser.parse_args()

    if args.only != "proxy":
        api(args)
    if args.only != "api":
        before, after = proxy_rates(args.proxy_items, args.proxy_models)
        print(f"proxy judge, {args.proxy_models} models x {args.proxy_items} Chat items (both orders), one process")
        print(f"{'what':40s} {'verdicts/s':>12s}")
        print(f"{'every text of a chunk embedded (before)':40s} {before:12.1f}")
        print(f"{'distinct texts once, kept by text':40s} {after:12.1f}")
        print(f"{'ratio after / before':40s} {after / before:12.1f}")


def api(args: argparse.Namespace) -> None:
    """The API judge part: verdicts per second at concurrency 1 and 16, and from the cache."""
    with served_in_subprocess(args.latency_ms) as base_url:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            _rate(base_url, 4, 4, "warm-up", tmp)
            serial = _rate(base_url, 1, args.items, "c1", tmp)
            parallel = _rate(base_url, 16, 4 * args.items, "c16", tmp)
            cache = tmp / "judge.sqlite"
            _rate(base_url, 64, args.cached // 2, "cached", tmp, cache)  # fill: 2 verdicts per Chat item
            (tmp / "cached.jsonl").unlink()
            before = requests_seen(base_url)
            t0 = time.perf_counter()
            _rate(base_url, 16, args.cached // 2, "cached", tmp, cache)
            cached_s = time.perf_counter() - t0
            sent = requests_seen(base_url) - before
    print(f"judge against 127.0.0.1 with {args.latency_ms:g} ms fixed latency (Chat verdicts, both orders)")
    print(f"{'what':40s} {'verdicts/s':>12s}")
    print(f"{'concurrency 1':40s} {serial:12.1f}")
    print(f"{'concurrency 16':40s} {parallel:12.1f}")
    print(f"{'ratio 16 / 1':40s} {parallel / serial:12.1f}  (ideal 16)")
    per_1000 = cached_s * 1000 / (2 * (args.cached // 2))
    print(
        f"{'1000 cached verdicts':40s} {1000 / per_1000:12.0f}  = {per_1000 * 1000:.0f} ms per 1000, "
        f"{sent} requests sent"
    )


if __name__ == "__main__":
    main()
