"""Items per second of one replica against three, each a server that handles at most ``capacity`` requests at
once with a fixed latency (a vLLM whose batch is full queues the rest), and their ratio. No timing is asserted.

The servers are the tests' OpenAI-compatible server (``tests/openai_server.py``), each in its own process on
127.0.0.1 with ``--capacity`` and ``--latency-ms``. With 4 slots of 100 ms, one server cannot pass 40 requests/s
however many are in flight; three can reach 120. The client keeps 2 x capacity requests in flight per replica
(the README's advice), and the one-replica case is also run with the three-replica total in flight, to show that
more concurrency alone does not buy throughput from a full server. Two levels are timed: the API client alone
(short text chats, as a judge sends) and the model backend through the runner (``run_model`` on short wav items,
as ``airbench-nb infer`` runs them: base64 audio, batches of ``--batch-size``).

    .venv/bin/python bench/bench_replicas.py [--items 240] [--latency-ms 100] [--capacity 4]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from airbench_nb.api_client import APIClient, ChatRequest, ReplicaPool
from airbench_nb.manifests import write_manifest
from airbench_nb.models import load_model
from airbench_nb.records import FoundationItem
from airbench_nb.runner import run_model

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test server lives in tests/
from tests.openai_server import served_in_subprocess  # noqa: E402


def _requests(n: int, tag: str) -> list[ChatRequest]:
    return [
        ChatRequest(
            "replica-bench",
            [{"role": "user", "content": f"[{tag} {i}] What is heard? Answer in one word."}],
            {"temperature": 0.0, "max_tokens": 8},
        )
        for i in range(n)
    ]


def _client_rate(urls: list[str], concurrency: int, n: int, tag: str) -> float:
    client = (
        APIClient(urls[0], concurrency=concurrency) if len(urls) == 1 else ReplicaPool(urls, concurrency=concurrency)
    )
    t0 = time.perf_counter()
    results = client.run_sync(_requests(n, tag))
    seconds = time.perf_counter() - t0
    failed = sum(not r.ok for r in results)
    if failed:
        raise SystemExit(f"{failed} of {n} requests failed with {len(urls)} replica(s)")
    return n / seconds


def _items(folder: Path, n: int, tag: str) -> list[FoundationItem]:
    folder.mkdir(parents=True, exist_ok=True)
    t = np.arange(8000) / 16000
    sf.write(folder / "clip.wav", (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000)  # 0.5 s
    items = [
        FoundationItem(
            uid=f"{tag}{i:04d}",
            dataset="bench",
            audio="clip.wav",
            task="Speaker_Gender_Recognition",
            question=f"[{tag} {i}] Who speaks?",
            choices=["male", "female"],
            answer=0,
        )
        for i in range(n)
    ]
    write_manifest(folder / "foundation.jsonl", items)
    return items


def _runner_rate(urls: list[str], concurrency: int, batch_size: int, n: int, tag: str, tmp: Path) -> float:
    folder = tmp / tag
    items = _items(folder, n, tag)
    model = load_model("openai:replica-bench@" + ",".join(urls), concurrency=concurrency, batch_size=batch_size)
    try:
        summary = run_model(model, items, folder, folder / "responses.jsonl", progress=False)
    finally:
        model.close()
    if summary.failed:
        raise SystemExit(f"{summary.failed} of {n} items failed with {len(urls)} replica(s)")
    return n / summary.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=240, help="requests (and items) per timing")
    parser.add_argument("--latency-ms", type=float, default=100.0, help="fixed server latency per request")
    parser.add_argument("--capacity", type=int, default=4, help="requests a server handles at once (its batch)")
    parser.add_argument("--per-slot", type=int, default=2, help="requests in flight per server slot")
    args = parser.parse_args()
    per_replica = args.per_slot * args.capacity
    batch = 4 * 3 * per_replica  # the runner's batches: several times the concurrency, so tails stay short

    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(served_in_subprocess(args.latency_ms, capacity=args.capacity)) for _ in range(3)]
        _client_rate(urls, 3 * per_replica, 3 * per_replica, "warm-up")  # imports, first connections
        rows = [
            ("client: 1 replica", _client_rate(urls[:1], per_replica, args.items, "c1")),
            ("client: 1 replica, 3x in flight", _client_rate(urls[:1], 3 * per_replica, args.items, "c1x")),
            ("client: 3 replicas", _client_rate(urls, 3 * per_replica, args.items, "c3")),
        ]
        with tempfile.TemporaryDirectory() as tmp:
            rows += [
                ("runner: 1 replica", _runner_rate(urls[:1], per_replica, batch, args.items, "r1", Path(tmp))),
                ("runner: 3 replicas", _runner_rate(urls, 3 * per_replica, batch, args.items, "r3", Path(tmp))),
            ]
    rate = dict(rows)
    ceiling = 1000.0 / args.latency_ms * args.capacity
    print(
        f"Replicas on 127.0.0.1: each server {args.capacity} requests at once, {args.latency_ms:g} ms each "
        f"(ceiling {ceiling:.0f} items/s per replica); {per_replica} in flight per replica; {args.items} items; "
        f"runner batches of {batch}"
    )
    print(f"{'what':<36}{'in flight':>10}{'items/s':>10}")
    for what, value in rows:
        flight = 3 * per_replica if ("3 replicas" in what or "3x" in what) else per_replica
        print(f"{what:<36}{flight:>10}{value:>10.1f}")
    for level in ("client", "runner"):
        ratio = rate[f"{level}: 3 replicas"] / rate[f"{level}: 1 replica"]
        print(f"{f'ratio {level} 3 / 1 replicas':<46}{ratio:>10.2f}  (ideal 3)")


if __name__ == "__main__":
    main()
