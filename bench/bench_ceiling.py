"""The ``openai:`` backend against its ceiling: ``infer``'s items/s as a share of a bare client's (5 s, 30 s clips).

Both sides talk to the same instant loopback server (``tests/instant_server.py``: it answers a fixed completion
without parsing the body, in its own process) at the same concurrency, and send the same thing: each clip's wav file
read from disk, base64-encoded into an ``input_audio`` part, posted as a chat completion, the JSON answer read.

- **bare**: one ``httpx.AsyncClient`` and a semaphore; nothing else (no manifest, no retries, no cache, no output).
  It encodes with the standard library's ``base64`` (``--bare-encoder stdlib``, the default) or with pybase64, the
  kit's own encoder (``--bare-encoder pybase64``: the kit's share then leaves out what its encoder saves).
- **kit**: :func:`airbench_nb.runner.infer` on a manifest of the same clips into a fresh responses file, the whole
  call timed (manifest read, audio checks, model load, requests, responses written).

It prints, per clip length, items/s of each and their ratio (the kit's share of the ceiling), and the CPU
milliseconds per item of each (this process's; the server's apart). Timings on a shared machine are noisy: the two
sides run alternately, ``--rounds`` times, and the best of each is kept.

    .venv/bin/python bench/bench_ceiling.py [--items 2000] [--long-items 500] [--concurrency 16] [--rounds 3]
        [--bare-encoder stdlib|pybase64]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pybase64
import soundfile as sf

from airbench_nb.manifests import write_manifest
from airbench_nb.records import FoundationItem
from airbench_nb.runner import infer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the server lives in tests/
from tests.instant_server import instant_server  # noqa: E402

SR = 16000


def write_clips(folder: Path, n: int, seconds: float) -> tuple[Path, list[Path]]:
    """``n`` noise clips of ``seconds`` (16-bit PCM mono wav at 16 kHz, as the kit's builders write) and a manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths, items = [], []
    for i in range(n):
        path = folder / f"c{i}.wav"
        sf.write(path, (0.1 * rng.standard_normal(int(SR * seconds))).astype(np.float32), SR, subtype="PCM_16")
        paths.append(path)
        items.append(
            FoundationItem(
                uid=f"u{i}",
                dataset="synthetic",
                audio=path.name,
                task="Speaker_Gender_Recognition",
                question="What is the gender of the speaker?",
                choices=["male", "female"],
                answer=i % 2,
            )
        )
    return write_manifest(folder / "foundation.jsonl", items), paths


ENCODERS = {
    "stdlib": lambda raw: base64.b64encode(raw).decode(),
    "pybase64": lambda raw: pybase64.b64encode_as_string(raw),
}
"""The bare client's base64 encoders: the standard library's, or the kit's own (pybase64)."""


async def _bare(base_url: str, paths: list[Path], concurrency: int, encoder: str = "stdlib") -> None:
    import httpx

    encode = ENCODERS[encoder]

    async with httpx.AsyncClient(base_url=base_url, timeout=60.0) as client:
        sem = asyncio.Semaphore(concurrency)

        async def one(index: int, path: Path) -> None:
            async with sem:
                data = encode(path.read_bytes())
                body = {
                    "model": "instant",
                    "messages": [
                        {
                            "role": "user",
                            "content": [
                                {"type": "input_audio", "input_audio": {"data": data, "format": "wav"}},
                                {"type": "text", "text": f"question {index}: what is the gender of the speaker?"},
                            ],
                        }
                    ],
                    "temperature": 0.0,
                    "max_tokens": 64,
                }
                response = await client.post(
                    "/chat/completions", content=json.dumps(body), headers={"content-type": "application/json"}
                )
                response.raise_for_status()
                assert response.json()["choices"][0]["message"]["content"]

        await asyncio.gather(*(one(i, p) for i, p in enumerate(paths)))


def bare_rate(base_url: str, paths: list[Path], concurrency: int, encoder: str = "stdlib") -> tuple[float, float]:
    """Items/s of the bare client over ``paths``, and its CPU milliseconds per item."""
    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(_bare(base_url, paths, concurrency, encoder))
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(paths) / seconds, 1000 * cpu / len(paths)


def kit_rate(base_url: str, manifest: Path, out: Path, concurrency: int, batch_size: int | None) -> tuple[float, float]:
    """Items/s of a first ``infer`` over the manifest into a fresh ``out``, and its CPU milliseconds per item.

    First: no audio probe remembered, in this process or in the kit's cache folder (every clip hashed and checked).
    """
    from airbench_nb import audio

    out.unlink(missing_ok=True)
    audio.forget_probes()
    os.environ["AIRBENCH_CACHE"] = tempfile.mkdtemp(dir=out.parent)  # a fresh cache folder: no probe kept
    t0, c0 = time.perf_counter(), time.process_time()
    summary = infer(
        f"openai:instant@{base_url}",
        manifest,
        out,
        concurrency=concurrency,
        batch_size=batch_size,
        progress=False,
    )
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if summary.answered != summary.total:
        raise SystemExit(f"kit answered {summary.answered} of {summary.total} items: {summary.as_dict()}")
    return summary.total / seconds, 1000 * cpu / summary.total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000, help="5 s clips")
    parser.add_argument("--long-items", type=int, default=500, help="30 s clips")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight, both sides")
    parser.add_argument("--batch-size", type=int, default=None, help="infer --batch-size (backend default: None)")
    parser.add_argument("--rounds", type=int, default=3, help="alternate runs of each side; the best is kept")
    parser.add_argument("--bare-encoder", choices=sorted(ENCODERS), default="stdlib", help="the bare client's base64")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    rows = []
    with tempfile.TemporaryDirectory() as tmp, instant_server() as base_url:
        for seconds, n in ((5.0, args.items), (30.0, args.long_items)):
            manifest, paths = write_clips(Path(tmp) / f"clips{seconds:g}", n, seconds)
            bare_rate(base_url, paths[: min(n, 100)], args.concurrency)  # warm-up: imports, page cache
            kit_rate(base_url, manifest, Path(tmp) / "warm.jsonl", args.concurrency, args.batch_size)
            bare, kit, bare_cpu, cpu = 0.0, 0.0, float("inf"), float("inf")
            for _ in range(args.rounds):
                rate, ms = bare_rate(base_url, paths, args.concurrency, args.bare_encoder)
                bare, bare_cpu = max(bare, rate), min(bare_cpu, ms)
                rate, ms = kit_rate(base_url, manifest, Path(tmp) / "out.jsonl", args.concurrency, args.batch_size)
                kit, cpu = max(kit, rate), min(cpu, ms)
            rows.append((seconds, n, bare, kit, bare_cpu, cpu))

    print(
        f"infer (openai: backend) vs a bare httpx client ({args.bare_encoder} base64), instant loopback server, "
        f"concurrency {args.concurrency}"
    )
    head = f"{'clips':<8}{'items':>6}{'bare items/s':>14}{'kit items/s':>13}{'kit / bare':>12}"
    print(head + f"{'CPU ms/item bare, kit':>24}")
    for seconds, n, bare, kit, bare_cpu, cpu in rows:
        print(f"{f'{seconds:g} s':<8}{n:>6}{bare:>14.1f}{kit:>13.1f}{kit / bare:>12.2f}{bare_cpu:>15.2f}, {cpu:>6.2f}")


if __name__ == "__main__":
    main()
