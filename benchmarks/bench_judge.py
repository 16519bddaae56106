"""Judge throughput: Chat verdicts per second at concurrency 1 and 16 against a local OpenAI-compatible server with a
fixed 100 ms latency, their ratio, and the time to judge 1000 items from the cache (a rerun sends no request).

It runs the real judge path (:func:`airbench_nb.judge.run.judge_responses`: prompts in both orders, the shared
API client, parsing, appending verdicts), not only the client. The server is the tests' fixture server, in its
own process; its replies are not scores, so every verdict is a counted parse failure, which costs the same.

    .venv/bin/python benchmarks/bench_judge.py [--items 16] [--latency-ms 100] [--cached 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=16, help="Chat items at concurrency 1 (2 verdicts each; x4 at 16)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="fixed server latency per request")
    parser.add_argument("--cached", type=int, default=1000, help="verdicts in the cache timing")
    args = parser.parse_args()

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
