"""Several replicas of one model behind one client: least-outstanding dispatch, failover, cool-off, counts.

``openai:MODEL@URL1,URL2,...`` names replicas: servers that serve the same checkpoint (one vLLM per machine, say).
:class:`ReplicaPool` answers requests as :class:`~airbench_nb.api_client.APIClient` does (cache first, one
:class:`~airbench_nb.api_client.ChatResult` per request, identical requests sent once), and spreads them out.
The rules, stated once:

- **Dispatch.** ``concurrency`` is the total in flight over all replicas. A request that gets a slot goes to the
  replica with the fewest requests outstanding; ties go round robin (the first tied replica after the last one
  chosen). A request waiting out a backoff holds no slot.
- **Retries on one replica** are the client's own: 429, 408/409, 5xx and malformed bodies are retried on the same
  replica with the client's backoff (``Retry-After`` honoured), up to ``max_retries`` retries.
- **Failover.** A connection refused or reset, a replica that died mid-answer, an attempt past its deadline, or
  a retryable failure the replica's own retries did not get past sends the request to another replica at once
  (the replica is counted ``retried_elsewhere``). A request tries each replica at most once this way; when none
  is left it ends with an error naming every replica and what happened there.
- **Down and back.** ``down_after`` failed attempts in a row (any request; an answer resets the count, even a 400
  about the request itself) mark a replica down for ``cool_off_s`` seconds: it gets no requests. After the
  cool-off it gets one request at a time until one succeeds (then it is up again) or fails (then it is down for
  another cool-off). Requests already in flight when it is marked down still count, so a dead replica may fail a
  few more attempts than ``down_after`` before it is left alone.
- **All down.** A request finding no replica up ends at once with an error that names every URL: each item gets
  its own error response (a rerun retries them), never a crash and never a duplicate. A connection refused is
  therefore never fatal here, unlike a single endpoint's (:data:`~airbench_nb.api_client.MAX_REFUSALS`); what
  stops a run is what stops a single client: a 401/403, a 404 for a model no replica has answered yet (a wrong
  model name), a missing key, nonsense parameters.
- **Counts** per replica (:class:`ReplicaStats`, :meth:`ReplicaPool.replica_stats`): attempts sent, succeeded,
  failed (so ``sent == succeeded + failed`` once nothing is in flight), requests retried elsewhere, times marked
  down. The runner writes them into the run's summary.

Keys and URLs follow :mod:`.endpoints` per replica, as if each were named alone. One cache serves the pool; its
entries are namespaced by the URL list (replicas serve one checkpoint, so they share answers).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import random
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airbench_nb.api_client.cache import ResponseCache
from airbench_nb.api_client.client import APIClient, check_setting
from airbench_nb.api_client.errors import AttemptTimeoutError, FatalAPIError, MalformedResponseError
from airbench_nb.api_client.helpers import (
    check_completion,
    describe_error,
    distinct_requests,
    gather_all,
    is_retryable,
    results_in_order,
    retry_after_s,
)
from airbench_nb.api_client.records import ChatRequest, ChatResult, PriceTable, Usage

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)

DOWN_AFTER = 3
"""Failed attempts in a row after which a replica is marked down."""
COOL_OFF_S = 30.0
"""Seconds a replica marked down gets no requests; then it is tried again, one request at a time."""


@dataclass
class ReplicaStats:
    """What one replica did (counts over the pool's life; the runner reports the part of one run)."""

    url: str
    """The replica's base URL."""
    sent: int = 0
    """Attempts sent to it (a request retried on it counts once per attempt)."""
    succeeded: int = 0
    """Attempts it answered with a completion."""
    failed: int = 0
    """Attempts that got no completion: connection refused or reset, deadline passed, an error status, a malformed
    body (``sent == succeeded + failed`` once nothing is in flight)."""
    retried_elsewhere: int = 0
    """Requests that failed here and were then sent to another replica."""
    marked_down: int = 0
    """Times it was marked down (``down_after`` failed attempts in a row)."""
    down: bool = False
    """Whether it is down now (in its cool-off, or tried again and not yet answering)."""

    def as_dict(self) -> dict[str, Any]:
        """The counts as a plain dict (for tables, logs and run summaries)."""
        return dataclasses.asdict(self)


COUNTS = ("sent", "succeeded", "failed", "retried_elsewhere", "marked_down")
"""The counters of :class:`ReplicaStats` (the fields a run's share is computed of)."""


class _Replica:
    """One replica's client, load and health (mutated only on the event loop of a run, or under the pool lock)."""

    def __init__(self, index: int, client: APIClient) -> None:
        self.index = index
        self.client = client
        self.stats = ReplicaStats(url=client.endpoint)
        self.outstanding = 0
        self.failures_in_a_row = 0
        self.down_until: float | None = None  # set while down (the end of its cool-off)

    @property
    def url(self) -> str:
        return self.client.endpoint


class ReplicaPool:
    """Send chat requests to several replicas of one model (see the module docstring for the rules).

    Args:
        base_urls: Two or more base URLs (``http://host:8000/v1``), checked and distinct (see
            :func:`~airbench_nb.api_client.parse_openai_replicas`); one also works.
        api_key_env: Environment variable holding the key, for every replica; None for the default rules, applied
            to each URL alone (see :mod:`.endpoints`).
        concurrency: Most requests in flight over all replicas together.
        timeout_s: Deadline of one attempt (whole answer included); past it, the request goes elsewhere.
        max_retries: Retries of a 429/5xx/malformed answer on the same replica before it goes elsewhere.
        cache_path: SQLite cache shared by the replicas; None for none.
        prices: Price table for costs; None leaves costs unknown.
        down_after: Failed attempts in a row that mark a replica down.
        cool_off_s: Seconds a replica stays down before it is tried again.
        backoff_initial_s: First backoff wait before a retry on the same replica (doubles, plus jitter).
        backoff_max_s: Cap on one backoff wait.
        max_retry_after_s: Cap on a wait a server asks for with ``Retry-After``.
        clock: Monotonic clock of the cool-offs (tests pass their own).

    Raises:
        EndpointError: A base URL or key variable name that cannot be used.
        InvalidParameterError: A setting that makes no sense.
    """

    def __init__(
        self,
        base_urls: Sequence[str],
        api_key_env: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 60.0,
        max_retries: int = 5,
        cache_path: str | Path | None = None,
        prices: PriceTable | Mapping[str, Any] | None = None,
        down_after: int = DOWN_AFTER,
        cool_off_s: float = COOL_OFF_S,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not base_urls:
            raise ValueError("a replica pool needs at least one base URL")
        check_setting("down_after", down_after, whole=True, minimum=1)
        check_setting("cool_off_s", cool_off_s, minimum=0)
        prices = prices if isinstance(prices, PriceTable) or prices is None else PriceTable(prices)
        self.replicas = [
            _Replica(
                index,
                APIClient(
                    base_url=url,
                    api_key_env=api_key_env,
                    concurrency=concurrency,
                    timeout_s=timeout_s,
                    max_retries=max_retries,
                    prices=prices,
                    backoff_initial_s=backoff_initial_s,
                    backoff_max_s=backoff_max_s,
                    max_retry_after_s=max_retry_after_s,
                    max_refusals=sys.maxsize,  # a replica refusing connections is marked down, never fatal
                ),
            )
            for index, url in enumerate(base_urls)
        ]
        self.urls = [r.url for r in self.replicas]
        if len(set(self.urls)) != len(self.urls):
            raise ValueError(f"replica URLs must be distinct: {', '.join(self.urls)}")
        self.concurrency = int(concurrency)
        self.max_retries = int(max_retries)
        self.down_after = int(down_after)
        self.cool_off_s = float(cool_off_s)
        self.backoff_initial_s = float(backoff_initial_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_retry_after_s = float(max_retry_after_s)
        self.clock = clock
        self.cache = ResponseCache(cache_path, namespace=",".join(self.urls)) if cache_path is not None else None
        self._usage = Usage()
        self._lock = threading.Lock()
        self._next = 0  # round robin: where the search for a tied replica starts

    def __repr__(self) -> str:
        return f"ReplicaPool({', '.join(self.urls)}, concurrency={self.concurrency})"

    @property
    def endpoint(self) -> str:
        """The replicas' URLs, joined by commas (as in the spec)."""
        return ",".join(self.urls)

    @property
    def usage(self) -> Usage:
        """Running totals over all replicas (``requests_sent`` counts attempts)."""
        with self._lock:
            usage = dataclasses.replace(self._usage)
        usage.requests_sent = sum(r.client.usage.requests_sent for r in self.replicas)
        return usage

    def replica_stats(self) -> list[ReplicaStats]:
        """Per-replica counts and state, in the order of the URLs (copies: they do not change afterwards)."""
        out = []
        for replica in self.replicas:
            out.append(dataclasses.replace(replica.stats, down=replica.down_until is not None))
        return out

    # ------------------------------------------------------------------------------------------- dispatch

    def _usable(self, replica: _Replica, now: float) -> bool:
        """Up; or past its cool-off and not already trying a request (one at a time until one succeeds)."""
        if replica.down_until is None:
            return True
        return replica.down_until <= now and replica.outstanding == 0

    def _pick(self, avoid: set[int]) -> _Replica | None:
        """The usable replica not in ``avoid`` with the fewest outstanding requests (ties: round robin)."""
        now = self.clock()
        candidates = [r for r in self.replicas if r.index not in avoid and self._usable(r, now)]
        if not candidates:
            return None
        least = min(r.outstanding for r in candidates)
        n = len(self.replicas)
        chosen = min((r for r in candidates if r.outstanding == least), key=lambda r: (r.index - self._next) % n)
        self._next = (chosen.index + 1) % n
        return chosen

    def _succeeded(self, replica: _Replica) -> None:
        replica.stats.succeeded += 1
        self._healthy(replica)

    def _healthy(self, replica: _Replica) -> None:
        """The replica answered (a completion, or an error about the request itself): it is up."""
        replica.failures_in_a_row = 0
        if replica.down_until is not None:
            replica.down_until = None
            logger.info("replica %s answers again: back in the pool", replica.url)

    def _failed(self, replica: _Replica, exc: BaseException) -> None:
        replica.stats.failed += 1
        if not is_retryable(exc):  # 400, 404, 422: the request's fault; the replica answered
            self._healthy(replica)
            return
        replica.failures_in_a_row += 1
        now = self.clock()
        on_probation = replica.down_until is not None and replica.down_until <= now
        newly = replica.down_until is None and replica.failures_in_a_row >= self.down_after
        if newly or on_probation:
            replica.down_until = now + self.cool_off_s
            replica.stats.marked_down += 1
            logger.warning(
                "replica %s marked down for %g s after %d failed attempt(s) in a row (last: %s)",
                replica.url,
                self.cool_off_s,
                replica.failures_in_a_row,
                describe_error(exc),
            )

    def _backoff_s(self, exc: BaseException, retry: int) -> float:
        """Wait before retry number ``retry`` (1-based) on the same replica: Retry-After, else exponential."""
        asked = retry_after_s(exc)
        if asked is not None:
            asked = min(asked, self.max_retry_after_s)
            return asked + random.uniform(0.0, min(1.0, 0.1 * asked + 0.01))
        wait = min(self.backoff_max_s, self.backoff_initial_s * 2 ** (retry - 1))
        return wait + random.uniform(0.0, self.backoff_initial_s)

    def _why_none(self, tried: Mapping[int, str]) -> str:
        """Why no replica is left for a request: every URL, down or what failed there."""
        now = self.clock()
        parts = []
        for replica in self.replicas:
            if replica.index in tried:
                parts.append(f"{replica.url}: {tried[replica.index]}")
            elif replica.down_until is not None and replica.down_until > now:
                parts.append(f"{replica.url}: down (tried again in {replica.down_until - now:.0f} s)")
            else:
                parts.append(f"{replica.url}: down (being tried again with another request)")
        if all(r.down_until is not None for r in self.replicas):
            head = f"all {len(self.replicas)} replicas are down"
        else:
            head = f"no replica left to try ({len(self.replicas)} replicas)"
        return f"{head}: " + "; ".join(parts)

    # ------------------------------------------------------------------------------------------- one request

    async def _one(
        self,
        sessions: Mapping[int, openai.AsyncOpenAI],
        slots: asyncio.Semaphore,
        request: ChatRequest,
    ) -> ChatResult:
        """One request over the replicas: an answer, an error naming the replicas, or a fatal error (raised)."""
        import openai

        t0 = time.perf_counter()
        what = f"{request.model} request {request.key()[:12]}…"
        tried: dict[int, str] = {}  # replicas this request failed on, and how
        replica: _Replica | None = None  # the replica of the current leg (retries of 429/5xx stay on it)
        left_from: _Replica | None = None  # the replica it failed on last, counted when it is sent elsewhere
        retries_here = 0
        attempts = 0
        while True:
            async with slots:
                if replica is not None and replica.down_until is not None:  # marked down during the backoff
                    left_from, replica = replica, None
                if replica is None:
                    replica = self._pick(set(tried))
                    retries_here = 0
                    if replica is None:
                        return self._error(request, self._why_none(tried), t0, attempts)
                    if left_from is not None:
                        left_from.stats.retried_elsewhere += 1
                        logger.info("%s: retrying on %s after %s failed", what, replica.url, left_from.url)
                        left_from = None
                attempts += 1
                if attempts > 1:
                    with self._lock:
                        self._usage.retries += 1
                replica.outstanding += 1
                replica.stats.sent += 1
                try:
                    body = await replica.client.send(sessions[replica.index], request)
                except FatalAPIError:
                    raise  # 401/403, an unknown model, a missing key: the run stops
                except Exception as exc:  # noqa: BLE001 - classified below: retried here, elsewhere, or recorded
                    failure: BaseException | None = exc
                    self._failed(replica, exc)
                else:
                    failure = None
                    self._succeeded(replica)
                finally:
                    replica.outstanding -= 1
            if failure is None:
                result = replica.client.result_from_body(
                    request, body, cached=False, latency_s=time.perf_counter() - t0, attempts=attempts
                )
                self._store(request, body, result)
                self._account(result)
                return result
            said = f"{type(failure).__name__}: {replica.client.scrub(str(failure))}"
            if not is_retryable(failure):  # 400, 404, 422: another replica would refuse it too
                return self._error(request, said, t0, attempts)
            tried[replica.index] = f"{describe_error(failure)}: {said[:160]}"
            connection = isinstance(failure, openai.APIConnectionError | AttemptTimeoutError)
            if connection or retries_here >= self.max_retries:
                left_from, replica = replica, None
                continue
            retries_here += 1
            wait = self._backoff_s(failure, retries_here)
            logger.info(
                "%s: %s from %s on attempt %d/%d there; retrying in %.2f s",
                what,
                describe_error(failure),
                replica.url,
                retries_here,
                self.max_retries + 1,
                wait,
            )
            await asyncio.sleep(wait)

    def _error(self, request: ChatRequest, error: str, t0: float, attempts: int) -> ChatResult:
        """The error result of a request that gets no answer (logged and counted)."""
        logger.warning("%s request %s… failed: %s", request.model, request.key()[:12], error)
        if attempts > 1:
            error += f" (after {attempts} attempts)"
        result = ChatResult(error=error, latency_s=time.perf_counter() - t0, attempts=attempts, key=request.key())
        self._account(result)
        return result

    # ------------------------------------------------------------------------------------------- accounting, cache

    def _account(self, result: ChatResult) -> None:
        """Add a non-cached result to the usage totals."""
        with self._lock:
            self._usage.add(result)

    def _secrets(self) -> list[str]:
        return [secret for r in self.replicas for secret in r.client.redactions]

    def _store(self, request: ChatRequest, body: Mapping[str, Any], result: ChatResult) -> None:
        if self.cache is not None and result.ok:
            try:
                self.cache.put(request.key(), request.model, body, redact=self._secrets())
            except sqlite3.Error as exc:  # the answer is still returned; only the cache misses it
                logger.warning("could not cache %s…: %s: %s", request.key()[:12], type(exc).__name__, exc)

    def _from_cache(self, requests: Mapping[str, ChatRequest]) -> dict[str, ChatResult]:
        if self.cache is None or not requests:
            return {}
        front = self.replicas[0].client
        out = {}
        for key, body in self.cache.get_many(requests).items():
            try:
                out[key] = front.result_from_body(requests[key], check_completion(body), cached=True, latency_s=0.0)
            except MalformedResponseError:
                logger.warning("cache entry %s… is not a completion; asking again", key[:12])
        with self._lock:
            self._usage.cache_hits += len(out)
        return out

    # ------------------------------------------------------------------------------------------- run

    async def run(self, requests: Sequence[ChatRequest], progress: bool = False) -> list[ChatResult]:
        """Answer requests: cache first, then the replicas (see the module docstring).

        Returns:
            One :class:`ChatResult` per request, in order: text, or an explicit error.

        Raises:
            FatalAPIError: A replica answered 401 or 403, or a key's variable is unset; the requests in flight are
                cancelled (answers received before are in the cache, when there is one).
        """
        requests = list(requests)
        distinct = distinct_requests(requests)
        by_key = self._from_cache(distinct)
        todo = [r for k, r in distinct.items() if k not in by_key]
        for replica in self.replicas:
            replica.client.reset_stop()  # a new run may follow a fix (a key set)
        if todo:
            slots = asyncio.Semaphore(self.concurrency)
            sessions: dict[int, openai.AsyncOpenAI] = {}
            try:
                for replica in self.replicas:
                    sessions[replica.index] = replica.client.async_client()
                for result in await gather_all(todo, lambda r: self._one(sessions, slots, r), progress=progress):
                    by_key[result.key] = result
            finally:
                for session in sessions.values():
                    await session.close()
        logger.debug(
            "run over %d replicas: %d requests, %d distinct, %d sent; %s",
            len(self.replicas),
            len(requests),
            len(distinct),
            len(todo),
            [s.as_dict() for s in self.replica_stats()],
        )
        return results_in_order(requests, by_key)

    def run_sync(self, requests: Sequence[ChatRequest], progress: bool = False) -> list[ChatResult]:
        """:meth:`run` from synchronous code (a fresh loop in a worker thread where one is running: Jupyter)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(requests, progress=progress))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="airbench-api") as pool:
            return pool.submit(lambda: asyncio.run(self.run(requests, progress=progress))).result()

    def close(self) -> None:
        """Close the cache."""
        if self.cache is not None:
            self.cache.close()
