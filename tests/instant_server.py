"""An OpenAI-compatible chat server that answers at once, for throughput benchmarks (``bench/bench_ceiling.py``).

It reads each ``POST .../chat/completions`` request (HTTP/1.1, keep-alive, ``Content-Length`` bodies), counts it and
answers a fixed completion without parsing the body: the cheapest server there can be, so that a benchmark measures
the client. ``GET .../_stats`` returns ``{"chat_requests": n, "first_at": t}`` (``t``: the ``time.time()`` of the
first chat request, None before one); ``GET .../_reset`` sets both back. It runs in its own process
(:func:`instant_server`), on plain asyncio, bound to 127.0.0.1 on an ephemeral port.

    python -m tests.instant_server   # prints its base URL, serves until stdin closes
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ANSWER = json.dumps(
    {
        "id": "chatcmpl-instant",
        "object": "chat.completion",
        "created": 0,
        "model": "instant",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
    }
).encode()
"""The body of every chat answer."""


class _Stats:
    chat_requests = 0
    first_at: float | None = None


def _reply(body: bytes) -> bytes:
    head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


class _Protocol(asyncio.Protocol):
    """One connection: reads a request's head, counts its body's bytes without keeping them, answers at once."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.head = bytearray()
        self.target = ""
        self.body_left = -1  # bytes of the body still to come; -1 while reading a head

    def data_received(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.body_left < 0:
                self.head += view
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    return
                rest = memoryview(bytes(self.head[end + 4 :]))
                lines = bytes(self.head[:end]).decode("latin-1").split("\r\n")
                self.head.clear()
                self.target = lines[0].split(" ", 2)[1]
                self.body_left = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        self.body_left = int(value.strip())
                view = rest
            taken = min(len(view), self.body_left)
            self.body_left -= taken
            view = view[taken:]
            if self.body_left == 0:
                self.body_left = -1
                self._answer()

    def _answer(self) -> None:
        if self.target.endswith("/_reset"):
            _Stats.chat_requests, _Stats.first_at = 0, None
        if self.target.endswith(("/_stats", "/_reset")):
            stats = {"chat_requests": _Stats.chat_requests, "first_at": _Stats.first_at}
            self.transport.write(_reply(json.dumps(stats).encode()))
            return
        if _Stats.first_at is None:
            _Stats.first_at = time.time()
        _Stats.chat_requests += 1
        self.transport.write(_reply(ANSWER))


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(_Protocol, "127.0.0.1", 0, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


@contextlib.contextmanager
def instant_server() -> Iterator[str]:
    """Run the instant server in its own process; yields its base URL (``http://127.0.0.1:<port>/v1``)."""
    repo = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.instant_server"],
        cwd=repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=10)


def stats(base_url: str, reset: bool = False) -> dict[str, Any]:
    """The server's counts (``chat_requests``, ``first_at``); with ``reset``, set back to none first."""
    with urllib.request.urlopen(f"{base_url}/{'_reset' if reset else '_stats'}", timeout=10) as response:
        return dict(json.load(response))


if __name__ == "__main__":
    asyncio.run(_serve())
