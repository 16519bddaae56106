"""Items per second of the API client at concurrency 1 and 16 against a server with a fixed 100 ms latency, their
ratio, and the time to answer 1000 items from the SQLite cache (the judge reuses this client).

The server is the tests' OpenAI-compatible server (``tests/openai_server.py``) on 127.0.0.1, run in its own
process so that its threads do not share the client's interpreter lock; requests are short text chats, as a judge
sends. With 100 ms per request, concurrency 1 cannot beat 10 items/s; concurrency 16 should come close to 16 times
that, less the client's and the server's overhead per request.

    .venv/bin/python bench/bench_api_client.py [--items 32] [--latency-ms 100] [--cached 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from airbench_nb.api_client import APIClient, ChatRequest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test server lives in tests/
from tests.openai_server import requests_seen, served_in_subprocess  # noqa: E402


def _requests(n: int, tag: str) -> list[ChatRequest]:
    return [
        ChatRequest(
            "judge-bench",
            [
                {"role": "system", "content": "You are a strict grader. Answer with one integer from 1 to 10."},
                {"role": "user", "content": f"[{tag} {i}] Question: what is heard? Reference: a dog barks twice."},
            ],
            {"temperature": 0.0, "max_tokens": 8},
        )
        for i in range(n)
    ]


def _rate(base_url: str, concurrency: int, n: int, tag: str) -> float:
    client = APIClient(base_url=base_url, concurrency=concurrency, timeout_s=30)
    t0 = time.perf_counter()
    results = client.run_sync(_requests(n, tag))
    seconds = time.perf_counter() - t0
    failed = sum(not r.ok for r in results)
    if failed:
        raise SystemExit(f"{failed} of {n} requests failed at concurrency {concurrency}")
    return n / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=32, help="requests timed at concurrency 1 (x4 at 16)")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="fixed server latency per request")
    parser.add_argument("--cached", type=int, default=1000, help="items in the cache timing")
    args = parser.parse_args()

    with served_in_subprocess(args.latency_ms) as base_url:
        _rate(base_url, 4, 8, "warm-up")  # imports, first connections
        serial = _rate(base_url, 1, args.items, "c1")
        parallel = _rate(base_url, 16, 4 * args.items, "c16")

        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "bench.sqlite"
            fill = APIClient(base_url=base_url, concurrency=64, cache_path=cache)
            fill.run_sync(_requests(args.cached, "cached"))
            fill.close()
            before = requests_seen(base_url)
            client = APIClient(base_url=base_url, concurrency=16, cache_path=cache)
            best = float("inf")
            for _ in range(3):
                fresh = _requests(args.cached, "cached")  # keys not memoised: hashing is part of the cost
                t0 = time.perf_counter()
                results = client.run_sync(fresh)
                best = min(best, time.perf_counter() - t0)
            sent = requests_seen(base_url) - before
            assert all(r.cached for r in results)
            client.close()

    print(f"API client against 127.0.0.1 with {args.latency_ms:g} ms fixed latency (text chat requests)")
    print(f"{'what':<40}{'items/s':>10}")
    print(f"{'concurrency 1':<40}{serial:>10.1f}")
    print(f"{'concurrency 16':<40}{parallel:>10.1f}")
    print(f"{'ratio 16 / 1':<40}{parallel / serial:>10.1f}  (ideal 16)")
    print(
        f"{f'{args.cached} cached items (best of 3)':<40}{args.cached / best:>10.0f}  "
        f"= {best * 1000 * 1000 / args.cached:.1f} ms per 1000 items, {sent} requests sent"
    )


if __name__ == "__main__":
    main()
