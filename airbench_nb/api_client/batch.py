"""The OpenAI Batch API (half price on OpenAI): write the requests file, submit, poll, collect into the cache."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from airbench_nb.api_client.errors import MalformedResponseError
from airbench_nb.api_client.helpers import check_completion, distinct_requests, results_in_order
from airbench_nb.api_client.records import ChatRequest, ChatResult

if TYPE_CHECKING:
    import openai

    from airbench_nb.api_client.client import APIClient

logger = logging.getLogger(__name__)

BATCH_ENDPOINT = "/v1/chat/completions"
"""The Batch API endpoint used for chat requests."""
BATCH_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
"""Batch statuses after which nothing changes."""
BATCH_MAX_LINES = 50_000
"""OpenAI's limit on requests per batch file (a warning is logged above it)."""
BATCH_MAX_BYTES = 200 * 1024 * 1024
"""OpenAI's limit on the size of a batch file (a warning is logged above it)."""

T = TypeVar("T")


class BatchAPI:
    """The Batch API side of an :class:`~airbench_nb.api_client.APIClient`.

    It uses the client's endpoint, key, retry policy, cache and usage totals; answers go into the client's cache,
    so a later normal run sends none of them again.

    Args:
        client: The client whose endpoint, key, cache and accounting are used.
    """

    def __init__(self, client: APIClient) -> None:
        self.client = client

    def _sync_call(self, what: str, fn: Callable[[], T]) -> T:
        """A management call (files, batches) through the client's retry policy and fatal errors.

        Raises:
            FatalAPIError: 401/403, or an endpoint that refused every connection (see :meth:`APIClient.call`).
        """
        return self.client.call(what, fn)

    def _sync_client(self) -> openai.OpenAI:
        """The client's synchronous ``openai.OpenAI`` (:meth:`APIClient.sync_client`, which tests may replace)."""
        return self.client.sync_client()

    def write_batch_file(self, requests: Sequence[ChatRequest], path: str | Path) -> int:
        """Write the Batch API input file: one JSONL line per distinct request not already cached.

        Each line is ``{"custom_id": <request key>, "method": "POST", "url": "/v1/chat/completions", "body": ...}``.

        Returns:
            The number of lines written (0: everything is cached, nothing to submit).
        """
        distinct = distinct_requests(requests)
        cached = set(self.client.cache.get_many(distinct)) if self.client.cache is not None else set()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = 0
        with path.open("w", encoding="utf-8") as handle:
            for key, request in distinct.items():
                if key in cached:
                    continue
                line = {"custom_id": key, "method": "POST", "url": BATCH_ENDPOINT, "body": request.body()}
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
                lines += 1
        size = path.stat().st_size
        if lines > BATCH_MAX_LINES or size > BATCH_MAX_BYTES:
            logger.warning(
                "%s: %d requests, %d bytes exceed OpenAI's batch limits (%d, %d): split the run",
                path,
                lines,
                size,
                BATCH_MAX_LINES,
                BATCH_MAX_BYTES,
            )
        logger.info("wrote %d batch requests (%d cached left out) to %s", lines, len(cached), path)
        return lines

    def submit_batch(self, path: str | Path, metadata: Mapping[str, str] | None = None) -> str:
        """Upload a batch file (purpose ``batch``) and create a batch (24 h window); returns the batch id."""
        path = Path(path)
        with self._sync_client() as client:
            uploaded = self._sync_call(
                f"upload {path.name}",
                lambda: client.files.create(file=(path.name, path.read_bytes()), purpose="batch"),
            )
            extra: dict[str, Any] = {"metadata": dict(metadata)} if metadata else {}
            batch = self._sync_call(
                "create batch",
                lambda: client.batches.create(
                    input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT, completion_window="24h", **extra
                ),
            )
        logger.info("submitted batch %s (file %s, %s)", batch.id, uploaded.id, path.name)
        return batch.id

    def poll_batch(self, batch_id: str, interval_s: float = 30.0, timeout_s: float = 24 * 3600.0) -> dict[str, Any]:
        """Wait until a batch is completed, failed, expired or cancelled; returns the batch object as a dict.

        Raises:
            TimeoutError: The batch is still running after ``timeout_s`` (it goes on server-side; poll again).
        """
        deadline = time.monotonic() + timeout_s
        last = None
        with self._sync_client() as client:
            while True:
                batch = self._sync_call(f"retrieve batch {batch_id}", lambda: client.batches.retrieve(batch_id))
                if batch.status != last:
                    logger.info(
                        "batch %s: %s %s",
                        batch_id,
                        batch.status,
                        batch.request_counts.model_dump() if batch.request_counts else "",
                    )
                    last = batch.status
                if batch.status in BATCH_TERMINAL:
                    return batch.model_dump()
                if time.monotonic() + interval_s > deadline:
                    raise TimeoutError(f"batch {batch_id} still {batch.status} after {timeout_s:g} s; poll it again")
                time.sleep(interval_s)

    def collect_batch(self, batch_id: str, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Read a finished batch's output and error files into one result per request (in order), and cache them.

        Requests answered before (cached) come from the cache; a request with no line in either file gets an
        explicit error naming the batch and its status. Costs use the table's batch discount.
        """
        requests = list(requests)
        distinct = distinct_requests(requests)
        lines: dict[str, dict[str, Any]] = {}
        with self._sync_client() as client:
            batch = self._sync_call(f"retrieve batch {batch_id}", lambda: client.batches.retrieve(batch_id))
            for file_id in (batch.output_file_id, batch.error_file_id):
                if not file_id:
                    continue
                content = self._sync_call(f"download {file_id}", lambda fid=file_id: client.files.content(fid).text)
                for number, text in enumerate(content.split("\n"), 1):  # "\n" only: a row may hold a raw U+2028
                    if not text.strip():
                        continue
                    try:
                        row = json.loads(text)
                        lines[row["custom_id"]] = row
                    except (ValueError, KeyError, TypeError):
                        logger.warning("batch %s file %s line %d is not a batch result", batch_id, file_id, number)
        by_key = self.client.from_cache({k: r for k, r in distinct.items() if k not in lines})
        for key, request in distinct.items():
            if key in by_key:
                continue
            row = lines.get(key)
            if row is None:
                result = ChatResult(error=f"batch {batch_id} ({batch.status}): no result for this request", key=key)
                self.client.account(result)
                by_key[key] = result
                continue
            by_key[key] = self._batch_result(batch_id, request, row)
        return results_in_order(requests, by_key)

    def _batch_result(self, batch_id: str, request: ChatRequest, row: Mapping[str, Any]) -> ChatResult:
        key = request.key()
        response = row.get("response") or {}
        status = response.get("status_code")
        body = response.get("body")
        error = None
        if row.get("error"):
            err = row["error"]
            error = f"batch {batch_id}: {err.get('code')}: {err.get('message')}" if isinstance(err, dict) else str(err)
        elif status != 200:
            message = body.get("error", {}).get("message") if isinstance(body, dict) else body
            error = f"batch {batch_id}: HTTP {status}: {message}"
        else:
            try:
                body = check_completion(body)
            except MalformedResponseError as exc:
                error = f"batch {batch_id}: {exc}"
        if error is not None:
            result = ChatResult(error=self.client.scrub(error), key=key)
        else:
            result = self.client.result_from_body(request, body, cached=False, latency_s=None, batch=True)
            self.client.store(request, body, result)
        self.client.account(result)
        return result

    def run_batch(
        self,
        requests: Sequence[ChatRequest],
        path: str | Path,
        interval_s: float = 30.0,
        timeout_s: float = 24 * 3600.0,
    ) -> list[ChatResult]:
        """Write, submit, poll and collect in one call (nothing is submitted when everything is cached)."""
        if self.write_batch_file(requests, path) == 0:
            return results_in_order(list(requests), self.client.from_cache(distinct_requests(requests)))
        batch_id = self.submit_batch(path)
        self.poll_batch(batch_id, interval_s=interval_s, timeout_s=timeout_s)
        return self.collect_batch(batch_id, requests)
