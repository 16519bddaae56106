"""The resumable item loop shared by model runs and judges.

Results are appended to a JSONL file and flushed (and fsynced) after every batch, so an interrupted run loses at
most the batch in flight. A rerun with the same output file skips the uids already there and never writes a uid
twice; a line cut short by a crash is dropped (and reported) before anything is appended. An item whose audio is
missing, empty or corrupt gets a :class:`~airbench_nb.records.Response` with an ``error`` and the run goes on;
so does a batch whose backend raises. Every response records the model spec, the prompt hash, its latency and
token counts.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from airbench_nb.audio import AudioError, load_audio
from airbench_nb.manifests import AnyItem, dumps_record, resolve_audio
from airbench_nb.models.base import AudioLM, GenerationParams, Prompt
from airbench_nb.prompts import PromptSet, item_prompt, prompt_hash
from airbench_nb.records import AudioStatus, Response

logger = logging.getLogger(__name__)

R = TypeVar("R", bound=BaseModel)


def repair_jsonl(path: str | Path) -> int:
    """Drop lines that are not complete JSON objects (a crash mid-write) so that appending is safe.

    Args:
        path: A JSONL results file (absent is fine).

    Returns:
        How many lines were dropped.
    """
    path = Path(path)
    if not path.is_file():
        return 0
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    keep, dropped = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            if isinstance(json.loads(line), dict):
                keep.append(line)
                continue
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass
        dropped += 1
    if dropped or (raw and not raw.endswith(b"\n")):
        tmp = path.with_suffix(path.suffix + ".repair")
        tmp.write_bytes(b"".join(line + b"\n" for line in keep))
        os.replace(tmp, path)
        if dropped:
            logger.warning("%s: dropped %d incomplete line(s) left by an interrupted run", path, dropped)
    return dropped


def finished_uids(path: str | Path, model: type[BaseModel], key: Callable[[Any], str]) -> set[str]:
    """Keys of the records already in a results file (after :func:`repair_jsonl`).

    Raises:
        ManifestError: If a line is JSON but not a valid record (naming file and line).
    """
    from airbench_nb.manifests import read_records

    path = Path(path)
    if not path.is_file():
        return set()
    return {key(record) for record in read_records(path, model)}


class JsonlAppender:
    """Appends records to a JSONL file, flushing and fsyncing after each batch."""

    def __init__(self, path: str | Path) -> None:
        """Open ``path`` for appending (creating folders)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write(self, records: Iterable[BaseModel]) -> None:
        """Append records and make them durable."""
        for record in records:
            self._handle.write(dumps_record(record) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        """Close the file."""
        self._handle.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class RunSummary:
    """What one model run did."""

    model: str
    """Model spec."""
    total: int
    """Items in the manifest (after ``limit``)."""
    skipped_existing: int
    """Items already answered in the output file (resumed)."""
    answered: int = 0
    """Items answered in this run."""
    errors: int = 0
    """Items that got an error response in this run."""
    error_kinds: dict[str, int] = field(default_factory=dict)
    """Errors by kind (``audio missing``, ``backend``, ...)."""
    seconds: float = 0.0
    """Wall-clock time of this run."""
    repaired_lines: int = 0
    """Incomplete lines dropped from the output before resuming."""

    @property
    def items_per_s(self) -> float | None:
        """Throughput of this run (answered and errored items per second)."""
        done = self.answered + self.errors
        return round(done / self.seconds, 3) if self.seconds > 0 and done else None

    def as_dict(self) -> dict[str, Any]:
        """Plain dict, for tables and notebooks."""
        return {
            "model": self.model,
            "total": self.total,
            "skipped_existing": self.skipped_existing,
            "answered": self.answered,
            "errors": self.errors,
            "error_kinds": self.error_kinds,
            "seconds": round(self.seconds, 3),
            "items_per_s": self.items_per_s,
            "repaired_lines": self.repaired_lines,
        }


def _duration_key(root: Path, item: AnyItem) -> float:
    import soundfile as sf

    try:
        return float(sf.info(str(resolve_audio(root, item.audio))).duration)
    except Exception:  # noqa: BLE001 - unknown length sorts last; the item's real error comes when loading it
        return float("inf")


def _error_kind(error: str) -> str:
    return error.split(":", 1)[0]


def run_model(
    model: AudioLM,
    items: Sequence[AnyItem],
    root: str | Path,
    out: str | Path,
    *,
    params: GenerationParams | None = None,
    prompts: PromptSet | None = None,
    system: str | None = None,
    limit: int | None = None,
    progress: bool = True,
) -> RunSummary:
    """Answer every item not yet in ``out`` with ``model``, appending :class:`Response` records.

    Args:
        model: The backend.
        items: Items to answer (Foundation and/or Chat).
        root: Data root of their audio.
        out: Responses JSONL (created, or resumed).
        params: Decoding parameters (default greedy, 256 new tokens).
        prompts: Prompt templates (default AIR-Bench's).
        system: Optional system text.
        limit: Only the first ``limit`` items of the manifest.
        progress: Show a tqdm progress bar.

    Returns:
        A :class:`RunSummary`.
    """
    from tqdm.auto import tqdm

    params = params or GenerationParams()
    prompts = prompts or PromptSet()
    root = Path(root)
    out = Path(out)
    chosen = list(items)[:limit] if limit is not None else list(items)
    repaired = repair_jsonl(out)
    done = finished_uids(out, Response, key=lambda r: r.uid)
    pending = [i for i in chosen if i.uid not in done]
    summary = RunSummary(
        model=model.spec, total=len(chosen), skipped_existing=len(chosen) - len(pending), repaired_lines=repaired
    )
    kinds: Counter[str] = Counter()
    t0 = time.perf_counter()
    # Sorting by audio length makes batches of similar lengths: less padding for batched backends.
    pending.sort(key=lambda i: _duration_key(root, i))
    batch_size = max(1, int(getattr(model, "batch_size", 1)))
    with JsonlAppender(out) as sink, tqdm(total=len(pending), desc=model.spec, disable=not progress) as bar:
        for start in range(0, len(pending), batch_size):
            batch = pending[start : start + batch_size]
            records: list[Response] = []
            ready: list[Prompt] = []
            hashes: dict[str, str] = {}
            for item in batch:
                text = item_prompt(item, prompts)
                hashes[item.uid] = prompt_hash(text, item.audio_sha256, system)
                if item.audio_status not in (None, AudioStatus.ok):
                    records.append(
                        Response(
                            uid=item.uid,
                            model=model.spec,
                            prompt_hash=hashes[item.uid],
                            error=f"audio {item.audio_status.value}: {item.audio}",
                        )
                    )
                    continue
                try:
                    path = resolve_audio(root, item.audio)
                    ready.append(Prompt(item=item, text=text, audio=load_audio(path), audio_path=path, system=system))
                except (AudioError, ValueError) as exc:
                    records.append(
                        Response(
                            uid=item.uid,
                            model=model.spec,
                            prompt_hash=hashes[item.uid],
                            error=f"audio unreadable: {exc}",
                        )
                    )
            if ready:
                t_batch = time.perf_counter()
                try:
                    generations = model.generate(ready, params)
                    if len(generations) != len(ready):
                        raise RuntimeError(f"backend returned {len(generations)} answers for {len(ready)} prompts")
                    failure = None
                except Exception as exc:  # noqa: BLE001 - the batch fails, the run goes on; counted per item
                    logger.error("%s: batch of %d failed: %s: %s", model.spec, len(ready), type(exc).__name__, exc)
                    generations, failure = [], f"backend: {type(exc).__name__}: {exc}"
                latency = (time.perf_counter() - t_batch) / len(ready)
                for index, prompt in enumerate(ready):
                    if failure is not None:
                        records.append(
                            Response(
                                uid=prompt.uid,
                                model=model.spec,
                                prompt_hash=hashes[prompt.uid],
                                error=failure,
                                latency_s=round(latency, 6),
                            )
                        )
                        continue
                    gen = generations[index]
                    error = None if gen.error is None else f"backend: {gen.error}"
                    records.append(
                        Response(
                            uid=prompt.uid,
                            model=model.spec,
                            text=gen.text,
                            error=error,
                            prompt_hash=hashes[prompt.uid],
                            latency_s=round(latency, 6),
                            input_tokens=gen.input_tokens,
                            output_tokens=gen.output_tokens,
                        )
                    )
            sink.write(records)
            for record in records:
                if record.error is None:
                    summary.answered += 1
                else:
                    summary.errors += 1
                    kinds[_error_kind(record.error)] += 1
            bar.update(len(batch))
    summary.error_kinds = dict(kinds)
    summary.seconds = time.perf_counter() - t0
    logger.info("%s: %s", model.spec, summary.as_dict())
    return summary


def model_slug(spec: str) -> str:
    """A file-name-safe form of a model spec (``baseline:oracle`` -> ``baseline_oracle``)."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_")


def infer(
    spec: str,
    manifest: str | Path,
    out: str | Path,
    *,
    batch_size: int | None = None,
    concurrency: int | None = None,
    limit: int | None = None,
    max_new_tokens: int = 256,
    temperature: float = 0.0,
    prompt_set: str = "airbench",
    seed: int = 0,
    official_out: str | Path | None = None,
    progress: bool = True,
) -> RunSummary:
    """Load a model from its spec and answer a manifest into ``out`` (resumable); the CLI's ``infer``.

    Args:
        spec: Model spec (``hf:...``, ``openai:...``, ``baseline:...``).
        manifest: A JSONL manifest; audio is read from its data root.
        out: Responses JSONL.
        batch_size: Prompts per backend call (backend default when None).
        concurrency: Requests in flight for ``openai:`` models.
        limit: Only the first ``limit`` items.
        max_new_tokens: Generation length bound.
        temperature: 0 for greedy decoding.
        prompt_set: ``airbench``, ``cot`` or a template file.
        seed: Seed of ``baseline:random`` and of sampling.
        official_out: Also write the official result format (meta fields + ``response``) here.
        progress: Show a progress bar.

    Returns:
        The run's :class:`RunSummary`.
    """
    from airbench_nb.manifests import data_root, read_manifest
    from airbench_nb.models import load_model

    items = read_manifest(manifest)
    model = load_model(spec, batch_size=batch_size, concurrency=concurrency, seed=seed)
    try:
        summary = run_model(
            model,
            items,
            data_root(manifest),
            out,
            limit=limit,
            progress=progress,
            params=GenerationParams(max_new_tokens=max_new_tokens, temperature=temperature, seed=seed),
            prompts=PromptSet.named(prompt_set),
        )
    finally:
        model.close()
    if official_out is not None:
        from airbench_nb.manifests import read_records
        from airbench_nb.official import write_official_results

        texts = {r.uid: r.text for r in read_records(out, Response) if r.model == spec}
        write_official_results(items, texts, official_out)
    return summary
