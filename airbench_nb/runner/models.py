"""Model runs: the resumable loop asking a model every item (clips, turns), its summary, and ``infer``.

See :mod:`airbench_nb.runner` for the rules.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from airbench_nb.audio import AudioError, load_audio, pcm16_wav_bytes, probe_audio_cached
from airbench_nb.hand_in import handed_in_at, next_number
from airbench_nb.manifests import AnyItem, AudioResolver, check_audio
from airbench_nb.models.base import (
    AudioLM,
    GeneratedAudio,
    Generation,
    GenerationParams,
    Prompt,
    first_batch_size,
    not_applicable_reason,
    overlaps_batches,
    reads_audio,
    serves,
    warm_up,
    wav_passthrough,
)
from airbench_nb.prompts import PromptSet, item_prompt_hash, item_prompts, prompt_set_name
from airbench_nb.records import (
    AudioStatus,
    OptionProbs,
    RankedLabel,
    Response,
    ResponseAudio,
    check_ranking,
    prompt_without_audio,
)
from airbench_nb.run_folder import KINDS, RunFolder, file_slug
from airbench_nb.runner.heap import keep_heap_slack
from airbench_nb.runner.outputs import (
    JsonlAppender,
    OutputError,
    _first_line,
    _loose_values,
    check_output_file,
    is_fatal_api_error,
    output_lock,
    read_existing,
    repair_jsonl,
)
from airbench_nb.runner.response_audio import audio_problem, spoken_bound_problem, write_response_audio

if TYPE_CHECKING:
    from airbench_nb.runner.samples import SamplesSummary

logger = logging.getLogger(__name__)

DATA_DEFECTS = (AudioStatus.missing, AudioStatus.empty, AudioStatus.corrupt)
"""Audio statuses that make an item unusable: an error response once, never retried, left out of scoring."""
NOT_APPLICABLE = "n/a"
"""How a summary table shows the items of a kind a model does not serve."""
REPLICA_COUNTS = ("sent", "succeeded", "failed", "retried_elsewhere", "marked_down")
"""The counters of a replica in :attr:`RunSummary.replicas` (a model's ``replica_stats()`` records)."""


@dataclass
class RunSummary:
    """What one model run did."""

    model: str
    """Model spec."""
    total: int
    """Items in the manifest (after ``limit``)."""
    skipped_existing: int
    """Items whose latest response in the output needs no new answer (answered with this prompt, or a data
    defect recorded); resumed."""
    answered: int = 0
    """Items answered in this run."""
    errors: int = 0
    """Items that got an error response in this run (data defects included: see ``unusable``)."""
    unusable: int = 0
    """Of ``errors``: items whose manifest marks the audio missing, empty or corrupt (a defect of the data, left out
    of scoring, never retried; not a failure of the run)."""
    error_kinds: dict[str, int] = field(default_factory=dict)
    """Errors by kind (``audio missing``, ``backend``, ...)."""
    retried: int = 0
    """Items answered again because their latest response was an error (a failure healing)."""
    changed_prompt: int = 0
    """Items answered again because their latest response was made with another prompt."""
    audio_changed: int = 0
    """Items answered again because their audio is not the audio their latest response answered: the file's SHA-256
    now differs from the manifest's ``audio_sha256`` the response was made with (a clip swapped or rewritten)."""
    audio_lost: int = 0
    """Items answered again because the spoken answer their latest response records is gone: its file missing, or
    not the bytes it was written with (see :func:`~airbench_nb.runner.response_audio.audio_problem`)."""
    duplicates: int = 0
    """Response records already in the output superseded by a later record of the same uid (latest wins)."""
    seconds: float = 0.0
    """Wall-clock time of this run."""
    repaired_lines: int = 0
    """Lines taken out of the output before resuming: a final line cut by a crash dropped, unreadable lines moved
    to ``<out>.rejected``."""
    served: dict[str, int] = field(default_factory=dict)
    """Items by kind (``foundation``, ``transcription``, ...) that the model serves: asked in this run or kept from an
    earlier one."""
    not_applicable: dict[str, int] = field(default_factory=dict)
    """Items by kind that the model does not serve (a specialist's :attr:`~airbench_nb.models.base.AudioLM.kinds`:
    an ASR model and a scene item; or its ``applies(item)``: a Whisper and a foundation item that is not language
    identification): not asked, no response written, never an error and never scored."""
    replicas: list[dict[str, Any]] = field(default_factory=list)
    """Per replica of an ``openai:<model>@<url1>,<url2>,...`` model, what this run did there: ``url``, attempts
    ``sent``, ``succeeded``, ``failed``, requests ``retried_elsewhere``, times ``marked_down``, and whether it is
    ``down`` at the end (see :mod:`airbench_nb.api_client.replicas`); empty for other models."""
    samples: SamplesSummary | None = None
    """What ``infer --samples K`` did beside the main answer (a :class:`~airbench_nb.runner.samples.SamplesSummary`:
    the K sampled answers per item in ``<kind>.samples.jsonl``); None when no samples were asked."""

    @property
    def failed(self) -> int:
        """Items that ended in error in this run, data defects apart: what makes ``infer`` exit 1."""
        return self.errors - self.unusable

    @property
    def failed_every_item(self) -> bool:
        """True when the model was asked for answers and every one failed.

        None answered in this run and none kept from an earlier one: a resumed run that only retries a few failed
        items is not a model failing everywhere.
        """
        return self.failed > 0 and self.answered == 0 and self.skipped_existing == 0

    @property
    def not_applicable_total(self) -> int:
        """Items the model does not serve (all kinds together)."""
        return sum(self.not_applicable.values())

    def not_applicable_text(self) -> str:
        """One line on the items the model does not serve (empty when it serves them all)."""
        if not self.not_applicable:
            return ""
        kinds = ", ".join(f"{kind}: {n}" for kind, n in sorted(self.not_applicable.items()))
        serves_kinds = ", ".join(sorted(self.served)) or "none of these kinds"
        return (
            f"{self.model}: {self.not_applicable_total} of {self.total} items not applicable ({kinds}); it serves "
            f"{serves_kinds} here: not asked, not errors, not scored"
        )

    @property
    def items_per_s(self) -> float | None:
        """Throughput of this run (answered and errored items per second)."""
        done = self.answered + self.errors
        return round(done / self.seconds, 3) if self.seconds > 0 and done else None

    def failure_text(self) -> str:
        """One line on the items that ended in error (empty when none did)."""
        if not self.failed:
            return ""
        return f"{self.model}: {self.failed} of {self.total} items ended in error ({_kinds_text(self.error_kinds)})"

    def as_dict(self) -> dict[str, Any]:
        """Plain dict, for tables and notebooks."""
        return {
            "model": self.model,
            "total": self.total,
            "skipped_existing": self.skipped_existing,
            "answered": self.answered,
            "errors": self.errors,
            "unusable": self.unusable,
            "failed": self.failed,
            "error_kinds": self.error_kinds,
            "retried": self.retried,
            "changed_prompt": self.changed_prompt,
            "audio_changed": self.audio_changed,
            "audio_lost": self.audio_lost,
            "duplicates": self.duplicates,
            "seconds": round(self.seconds, 3),
            "items_per_s": self.items_per_s,
            "repaired_lines": self.repaired_lines,
            "not_applicable": self.not_applicable_total,
            "not_applicable_kinds": dict(self.not_applicable),
            "served_kinds": dict(self.served),
            **({"replicas": [dict(r) for r in self.replicas]} if self.replicas else {}),
            **({"samples": self.samples.as_dict()} if self.samples is not None else {}),
        }

    def replica_text(self) -> str:
        """The per-replica counts as a small fixed-width table (empty when the model has no replicas)."""
        if not self.replicas:
            return ""
        width = max(len("replica"), *(len(str(r["url"])) for r in self.replicas))
        head = f"{'replica':<{width}}  " + "  ".join(f"{c:>{len(c)}}" for c in (*REPLICA_COUNTS, "down"))
        rows = [
            f"{str(r['url']):<{width}}  "
            + "  ".join(f"{r[c]:>{len(c)}}" for c in REPLICA_COUNTS)
            + f"  {'yes' if r['down'] else 'no':>4}"
            for r in self.replicas
        ]
        return "\n".join([head, *rows])


def replica_counts(model: AudioLM) -> list[dict[str, Any]]:
    """A model's per-replica records as dicts (``replica_stats()``, records or dicts); [] for models without."""
    stats = getattr(model, "replica_stats", None)
    if not callable(stats):
        return []
    return [dict(r.as_dict() if hasattr(r, "as_dict") else r) for r in stats()]


def _replica_delta(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a run added to each replica's counters (``after`` minus ``before``, matched by URL)."""
    earlier = {r["url"]: r for r in before}
    out = []
    for row in after:
        base = earlier.get(row["url"], {})
        out.append({**row, **{c: row[c] - base.get(c, 0) for c in REPLICA_COUNTS if c in row}})
    return out


def _failure_kinds(error_kinds: Mapping[str, int]) -> Counter[str]:
    """Error kinds without the data defects (``audio missing``, ``audio empty``, ``audio corrupt``)."""
    defects = tuple(f"audio {status.value}" for status in DATA_DEFECTS)
    return Counter({k: v for k, v in error_kinds.items() if k not in defects})


def _kinds_text(error_kinds: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in _failure_kinds(error_kinds).most_common())


def _duration_key(resolve: AudioResolver, item: AnyItem) -> float:
    """The item's audio length in seconds, for sorting; unknown (a bad clip) sorts last.

    It comes from the probe :func:`check_audio` made, remembered by the file's path, size and times: not read again.
    """
    try:
        total = 0.0
        for clip in item.clips:
            seconds = probe_audio_cached(resolve(clip)).duration_s
            if seconds is None:
                return float("inf")
            total += seconds
        return total
    except Exception:  # noqa: BLE001 - unknown length sorts last; the item's real error comes when loading it
        return float("inf")


def _error_kind(error: str) -> str:
    return error.split(":", 1)[0]


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _unstorable(value: Any, where: str) -> str | None:
    """Where a record's value holds an unpaired surrogate (not Unicode text: it cannot be written as UTF-8), or None.

    Returns:
        ``"<field> holds an unpaired surrogate (U+D800 at character 2)"``, the field dotted (``turns.1``).
    """
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        name, current = stack.pop()
        if isinstance(current, str):
            found = _SURROGATE.search(current)
            if found is not None:
                return f"{name} holds an unpaired surrogate (U+{ord(found.group()):04X} at character {found.start()})"
        elif isinstance(current, Mapping):
            stack.extend((f"{name}.{key}", child) for key, child in reversed(list(current.items())))
        elif isinstance(current, list | tuple):
            stack.extend((f"{name}.{index}", child) for index, child in reversed(list(enumerate(current))))
    return None


def _storable(record: Response) -> Response:
    """The record, or that item's failure when a field of it cannot be written as UTF-8.

    A reply holding an unpaired surrogate loses its answer: the error names the field and the character (a
    ``backend`` error, counted and retried on rerun). One bad reply never stops the run nor costs the other items'
    answers.
    """
    problem = next(
        (p for name, value in record.model_dump().items() if (p := _unstorable(value, name)) is not None), None
    )
    if problem is None:
        return record
    error = f"backend: the answer cannot be stored: its {problem}, which is not Unicode text"
    logger.error("%s: %s: %s", record.model, record.uid, error)
    kept = record.model_dump(include={"uid", "model", "prompt_hash", "generation", "prompt_set", "latency_s", "sample"})
    return Response(**kept, error=error)


def _defect_error(item: AnyItem) -> str | None:
    """The error response of an item whose audio is missing, empty or corrupt (matches ``DATA_DEFECT_TEXT``).

    A multi-clip item names its first bad clip, as :func:`~airbench_nb.manifests.check_audio`'s notes do.
    """
    if item.audio_status not in DATA_DEFECTS:
        return None
    status = item.audio_status.value
    clips = item.clips
    if len(clips) > 1:
        for number, clip in enumerate(clips, start=1):
            if any(note.startswith(f"audio {status}: {clip}") for note in item.notes):
                return f"audio {status}: clip {number} of {len(clips)} ({clip})"
    return f"audio {status}: {item.audio}"


def check_limit(limit: int | None) -> None:
    """Refuse a ``limit`` that is not None or a whole number of 0 or more (``-1`` would drop the last item).

    Raises:
        ValueError: Naming ``limit`` and its value.
    """
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit={limit!r} must be a whole number, 0 or more (the first N items; None: every item)")


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
    run_folder: RunFolder | None = None,
    sample: int | None = None,
    sampling: Mapping[str, Any] | None = None,
) -> RunSummary:
    """Answer every item of ``items`` that needs an answer with ``model``, appending :class:`Response` records.

    See the module docstring for what is resumed, retried and refused.

    Args:
        model: The backend.
        items: Items to answer (Foundation and/or Chat).
        root: Data root of their audio.
        out: Responses JSONL (created, or resumed).
        params: Decoding parameters (default greedy, with each item's length bound: see
            :func:`~airbench_nb.models.base.default_max_new_tokens`); recorded in each response's ``generation``.
        prompts: Prompt templates (default AIR-Bench's).
        system: Optional system text.
        limit: Only the first ``limit`` items of the manifest (0 or more; None: all).
        progress: Show a tqdm progress bar.
        run_folder: Where spoken answers are written (:meth:`~airbench_nb.run_folder.RunFolder.response_audio_file`)
            and found again on resuming; None for a model that answers in text only (a spoken answer is then that
            item's error: there is nowhere to keep it).
        sample: The sample index this pass answers (``infer --samples K``: :func:`~airbench_nb.runner.samples.
            run_samples`), stamped on every record written (:attr:`~airbench_nb.records.Response.sample`); resuming
            reads only the records of this index in ``out``, so each (item, sample) resumes and heals on its own.
            None (the default): the main answer, records without a sample index.
        sampling: How the samples were asked (``samples``: K asked, ``samples_vary``: whether the backend samples),
            recorded in each response's ``generation["sampling"]``; None: nothing recorded.

    Returns:
        A :class:`RunSummary`.

    Raises:
        OutputError: When ``out`` is not a responses file, holds another model's responses, holds samples while
            main answers are asked (or main answers while samples are), or is being written by another process
            (:class:`OutputLockedError`); nothing is written.
        ManifestError: When a line of ``out`` is JSON but not a valid response (naming file, line and field).
        ValueError: For a negative ``limit`` (nothing is written).
        Exception: A fatal API error (see :func:`is_fatal_api_error`), after keeping what was answered.
    """
    from tqdm.auto import tqdm

    check_limit(limit)
    keep_heap_slack()  # each request's big buffers reuse freed memory instead of fresh pages (runner.heap)
    params = params or GenerationParams()
    prompts = prompts or PromptSet()
    root = Path(root)
    out = Path(out)
    chosen = list(items)[:limit] if limit is not None else list(items)
    check_output_file(out, Response)
    with output_lock(out):
        others = {m: n for m, n in _loose_values(out, "model").items() if m != model.spec}
        if others:
            named = ", ".join(f"{m!r} (line {n})" for m, n in sorted(others.items(), key=lambda kv: kv[1]))
            raise OutputError(
                f"{out} holds responses of {named}, not of {model.spec!r}: responses are kept one model per file, "
                "so this run would mix two models; choose another output (e.g. responses/<model>/<kind>.jsonl)"
            )
        repaired = repair_jsonl(out)
        every = read_existing(out, Response)
        _refuse_other_answers(out, every, sample)
        existing = [r for r in every if r.sample == sample]
        latest = {r.uid: r for r in existing}
        summary = RunSummary(
            model=model.spec,
            total=len(chosen),
            skipped_existing=0,
            repaired_lines=repaired,
            duplicates=len(existing) - len(latest),
        )
        texts: dict[str, list[str]] = {}
        hashes: dict[str, str] = {}
        pending: list[AnyItem] = []
        # Kind first, then the backend's own ``applies(item)`` (a specialist answering some items of a kind).
        refused = {item.uid: reason for item in chosen if (reason := not_applicable_reason(model, item)) is not None}
        served = [item for item in chosen if item.uid not in refused]
        if served:
            warm_up(model)  # an API backend's HTTP client is made while the audio is checked
        # The audio as it is now decides: its status (a clip deleted, emptied or damaged since the manifest was
        # written is a data defect) and its hash (the prompt hash covers the bytes actually sent).
        now = dict(zip((i.uid for i in served), check_audio(served, root), strict=True))
        item_reasons: Counter[str] = Counter()  # reasons of ``applies``, for items of kinds the model serves
        for manifest_item in chosen:
            if manifest_item.uid in refused:
                summary.not_applicable[manifest_item.kind] = summary.not_applicable.get(manifest_item.kind, 0) + 1
                if serves(model, manifest_item.kind):
                    item_reasons[refused[manifest_item.uid]] += 1
                continue
            item = now[manifest_item.uid]
            summary.served[item.kind] = summary.served.get(item.kind, 0) + 1
            texts[item.uid] = item_prompts(item, prompts)
            hashes[item.uid] = item_prompt_hash(item, prompts, system)
            previous = latest.get(item.uid)
            if previous is None:
                pending.append(item)
            elif previous.prompt_hash is not None and previous.prompt_hash != _made_with(
                manifest_item, item, previous, hashes[item.uid], prompts, system
            ):
                if _audio_changed(manifest_item, item, previous, prompts, system):
                    summary.audio_changed += 1
                else:
                    summary.changed_prompt += 1
                pending.append(item)
            elif previous.error is None and previous.audio is not None and _audio_lost(run_folder, previous):
                summary.audio_lost += 1
                pending.append(item)
            elif previous.error is None or previous.error == _defect_error(item):
                summary.skipped_existing += 1
            else:
                summary.retried += 1
                pending.append(item)
        if summary.retried or summary.changed_prompt or summary.audio_lost:
            logger.info(
                "%s: %d item(s) retried after an error, %d answered again under a changed prompt, %d whose spoken "
                "answer's file is missing or changed",
                model.spec,
                summary.retried,
                summary.changed_prompt,
                summary.audio_lost,
            )
        if summary.audio_changed:
            logger.warning(
                "%s: %d item(s) answered again: their audio changed since the manifest was written (SHA-256 of the "
                "file differs from the manifest's audio_sha256); the earlier answers are stale",
                model.spec,
                summary.audio_changed,
            )
        if summary.not_applicable:
            logger.info("%s", summary.not_applicable_text())
        for reason, n in sorted(item_reasons.items()):
            logger.info("%s: %d item(s) not applicable: %s", model.spec, n, reason)
        if not pending and summary.not_applicable and not out.exists():
            logger.info("%s: no item of %s is one it serves; %s not written", model.spec, out.name, out)
            return summary
        before = replica_counts(model)
        try:
            _answer(
                model,
                pending,
                root,
                out,
                texts,
                hashes,
                params,
                prompts,
                system,
                summary,
                progress,
                tqdm,
                run_folder,
                sample,
                sampling,
            )
        finally:
            summary.replicas = _replica_delta(before, replica_counts(model))
    logger.info("%s: %s", model.spec, summary.as_dict())
    if summary.replicas:
        logger.info("%s: requests per replica in this run:\n%s", model.spec, summary.replica_text())
    return summary


def _refuse_other_answers(out: Path, records: Sequence[Response], sample: int | None) -> None:
    """Refuse to write main answers into a samples file, or samples into a main responses file.

    Raises:
        OutputError: Naming the file and the first record of the other sort (nothing is written).
    """
    other = next((r for r in records if (r.sample is None) != (sample is None)), None)
    if other is None:
        return
    held = "sampled answers (records with a sample index)" if sample is None else "main answers (no sample index)"
    raise OutputError(
        f"{out} holds {held}, first for {other.uid!r}: main answers and samples are kept apart (<kind>.jsonl and "
        "<kind>.samples.jsonl, written by infer --samples K); choose the other file"
    )


def _made_with(
    manifest_item: AnyItem, item: AnyItem, previous: Response, now: str, prompts: PromptSet, system: str | None
) -> str:
    """The prompt hash ``previous`` must have to be current.

    That is ``now``, or, for a manifest that records no audio hash (nothing to compare the file with), the hash made
    from the manifest as it is: such an answer is kept.
    """
    if None in manifest_item.clips_sha256 and manifest_item.clips_sha256 != item.clips_sha256:
        legacy = item_prompt_hash(manifest_item, prompts, system)
        if previous.prompt_hash == legacy:
            return legacy
    return now


def _audio_changed(
    manifest_item: AnyItem, item: AnyItem, previous: Response, prompts: PromptSet, system: str | None
) -> bool:
    """Whether ``previous`` was made with the manifest's audio hashes, which the audio on disk no longer has."""
    if manifest_item.clips_sha256 == item.clips_sha256 or None in manifest_item.clips_sha256:
        return False
    return previous.prompt_hash == item_prompt_hash(manifest_item, prompts, system)


def _audio_lost(folder: RunFolder | None, response: Response) -> bool:
    """Whether a recorded spoken answer can no longer be used (no folder to find it in, file missing or changed)."""
    problem = "no run folder" if folder is None else audio_problem(folder, response)
    if problem is not None:
        logger.info("%s: %s: %s; answering again", response.model, response.uid, problem)
    return problem is not None


def _spoken(folder: RunFolder | None, model: str, uid: str, audio: GeneratedAudio) -> ResponseAudio | str:
    """Write a spoken answer and return its record, or the error of the item when it cannot be kept."""
    if folder is None:
        return "audio output: the model answered with audio and no run folder was given to write it in"
    problem = spoken_bound_problem(audio)
    if problem is not None:
        return f"audio output: {problem}"
    try:
        return write_response_audio(folder, model, uid, audio)
    except (OSError, ValueError) as exc:
        return f"audio output: cannot write the spoken answer: {exc}"


@dataclass
class _Asking:
    """An item being answered by :func:`_answer`: its prompt texts, clips, and what each turn gave so far."""

    item: AnyItem
    texts: list[str]
    """The user text of every turn."""
    params: GenerationParams
    """Decoding parameters with this item's length bound."""
    audios: list[Any]
    paths: list[Path]
    wavs: list[bytes | None] = field(default_factory=list)
    """Per clip, the wav file's bytes sent as they are (see :func:`_load_clips`), or None."""
    answers: list[str] = field(default_factory=list)
    audio: GeneratedAudio | None = None
    """The spoken answer (of the last turn answered), for models that answer with audio."""
    ranking: list[RankedLabel] = field(default_factory=list)
    """The ranked task classes (of the last turn answered), for ranked-list models (tiers B and C)."""
    option_probs: OptionProbs | None = None
    """The option-letter probabilities (of the last turn answered), for calibration."""
    error: str | None = None
    latency: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None

    def prompt(self, turn: int, system: str | None) -> Prompt:
        history = list(zip(self.texts[:turn], self.answers[:turn], strict=True))
        return Prompt.of(
            self.item,
            self.texts[turn],
            self.audios,
            self.paths,
            system=system,
            history=history,
            without_audio=prompt_without_audio(self.item),
            wavs=list(self.wavs) if any(w is not None for w in self.wavs) else [],
        )

    def fail(self, turn: int, detail: str) -> None:
        where = f"turn {turn + 1} of {len(self.texts)}: " if len(self.texts) > 1 else ""
        self.error = f"backend: {where}{detail}"

    def answered(self, generation: Generation) -> None:
        self.answers.append(generation.text or "")
        self.audio = generation.audio
        try:
            self.ranking = check_ranking([RankedLabel.model_validate(r) for r in generation.ranking])
        except ValueError as exc:  # pydantic's ValidationError is one: a bad ranking fails this item, not the run
            self.ranking = []
            self.error = f"backend: bad ranking: {' '.join(str(exc).split())}"
        self.option_probs = generation.option_probs
        for name in ("input_tokens", "output_tokens"):
            value = getattr(generation, name)
            if value is not None:
                setattr(self, name, (getattr(self, name) or 0) + int(value))


def _load_clips(
    resolve: AudioResolver, item: AnyItem, decode: bool = True, wav_rate: int | None = None
) -> tuple[list[Any], list[Path], list[bytes | None]]:
    """Every clip of an item, loaded in order; raises naming the clip when one cannot be read.

    With ``decode`` False (a backend that does not read the samples, :func:`~airbench_nb.models.base.reads_audio`)
    each clip is an empty array: the files were probed already (their status decides what is a data defect). With
    ``wav_rate`` (a backend that sends wav files, :func:`~airbench_nb.models.base.wav_passthrough`) a clip that is
    already a 16-bit PCM mono wav at that rate is read as bytes and not decoded (its samples an empty array).

    Returns:
        The samples, the files, and per clip its wav bytes or None (all None without ``wav_rate``).
    """
    audios, paths, wavs = [], [], []
    clips = item.clips
    for number, clip in enumerate(clips, start=1):
        try:
            path = resolve(clip)
            wav = pcm16_wav_bytes(path, wav_rate) if decode and wav_rate is not None else None
            audios.append(load_audio(path) if decode and wav is None else np.zeros(0, dtype=np.float32))
        except (AudioError, ValueError) as exc:
            if len(clips) == 1:
                raise
            raise AudioError(f"clip {number} of {len(clips)} ({clip}): {exc}") from None
        paths.append(path)
        wavs.append(wav)
    return audios, paths, wavs


def _ask_turn(model: AudioLM, asking: list[_Asking], turn: int, system: str | None, on_fatal: Any) -> None:
    """Ask one turn of every item in ``asking`` (one ``generate`` call per set of decoding parameters)."""
    groups: dict[GenerationParams, list[_Asking]] = {}
    for entry in asking:
        groups.setdefault(entry.params, []).append(entry)
    for params, members in groups.items():
        prompts = [entry.prompt(turn, system) for entry in members]
        t_call = time.perf_counter()
        failure = None
        try:
            generations = model.generate(prompts, params)
            if len(generations) != len(prompts):
                raise RuntimeError(f"backend returned {len(generations)} answers for {len(prompts)} prompts")
        except Exception as exc:  # noqa: BLE001 - the batch fails, the run goes on; counted per item
            if is_fatal_api_error(exc):
                on_fatal()
                raise
            logger.error("%s: batch of %d failed: %s: %s", model.spec, len(prompts), type(exc).__name__, exc)
            generations, failure = [], f"{type(exc).__name__}: {exc}"
        share = (time.perf_counter() - t_call) / len(prompts)
        for index, entry in enumerate(members):
            entry.latency += share
            if failure is not None:
                entry.fail(turn, failure)
            elif generations[index].error is not None:
                entry.fail(turn, str(generations[index].error))
            else:
                entry.answered(generations[index])


def _answer(
    model: AudioLM,
    pending: list[AnyItem],
    root: Path,
    out: Path,
    texts: dict[str, list[str]],
    hashes: dict[str, str],
    params: GenerationParams,
    prompts: PromptSet,
    system: str | None,
    summary: RunSummary,
    progress: bool,
    tqdm: Any,
    run_folder: RunFolder | None = None,
    sample: int | None = None,
    sampling: Mapping[str, Any] | None = None,
) -> None:
    """The batch loop of :func:`run_model`: answers ``pending`` into ``out`` and fills ``summary``.

    Each batch is asked turn by turn: every item's first turn, then the second turn of the items that have one
    (each prompt carrying the earlier turns and the model's own answers), and so on; an item whose turn fails is
    asked no further, and its response keeps the answers so far.
    """
    kinds: Counter[str] = Counter()
    t0 = time.perf_counter()
    # Sorting by audio length makes batches of similar lengths: less padding for batched backends.
    resolve = AudioResolver(root)  # each folder resolved once
    pending.sort(key=lambda i: _duration_key(resolve, i))
    batch_size = max(1, int(getattr(model, "batch_size", 1)))
    prompt_set = prompt_set_name(prompts)
    decode = reads_audio(model)  # a baseline answering from the item alone is given no samples
    wav_rate = wav_passthrough(model)  # an API backend sending wav is given the files that are wav already

    def count(records: list[Response]) -> None:
        for record in records:
            if record.error is None:
                summary.answered += 1
            else:
                summary.errors += 1
                kinds[_error_kind(record.error)] += 1

    backend_settings = getattr(model, "settings", None)
    backend = {"backend": dict(backend_settings)} if isinstance(backend_settings, Mapping) else {}
    if sampling:
        backend["sampling"] = dict(sampling)

    def response(item: AnyItem, item_params: GenerationParams, **fields: Any) -> Response:
        return Response(
            uid=item.uid,
            model=model.spec,
            prompt_hash=hashes[item.uid],
            generation={**item_params.as_record(), **backend},
            prompt_set=prompt_set,
            sample=sample,
            **fields,
        )

    def prepare(batch: list[AnyItem]) -> tuple[list[Response], list[_Asking]]:
        """The records of a batch's items that are not asked (data defects, unreadable audio), and the others."""
        records: list[Response] = []
        ready: list[_Asking] = []
        for item in batch:
            item_params = params.for_item(item, prompts.name)
            defect = _defect_error(item)
            if defect is not None:
                summary.unusable += 1
                records.append(response(item, item_params, error=defect))
                continue
            try:
                audios, paths, wavs = _load_clips(resolve, item, decode, wav_rate)
            except (AudioError, ValueError) as exc:
                records.append(response(item, item_params, error=f"audio unreadable: {exc}"))
                continue
            ready.append(_Asking(item, texts[item.uid], item_params, audios, paths, wavs))
        return records, ready

    def ask(ready: list[_Asking], on_fatal: Any) -> None:
        """Ask every turn of a batch's items (see :func:`_ask_turn`); a fatal API error raises."""
        for turn in range(max((len(entry.texts) for entry in ready), default=0)):
            asking = [e for e in ready if e.error is None and turn < len(e.texts)]
            if asking:
                _ask_turn(model, asking, turn, system, on_fatal)

    def answered(records: list[Response], ready: list[_Asking]) -> list[Response]:
        """Every record of a batch asked to the end: the unasked ones, then one per item asked."""
        for entry in ready:
            multi_turn = len(entry.texts) > 1
            spoken: ResponseAudio | str | None = None
            if entry.audio is not None and entry.error is None:
                spoken = _spoken(run_folder, model.spec, entry.item.uid, entry.audio)
            records.append(
                response(
                    entry.item,
                    entry.params,
                    text=entry.answers[0] if entry.answers else None,
                    error=spoken if isinstance(spoken, str) else entry.error,
                    audio=spoken if isinstance(spoken, ResponseAudio) else None,
                    latency_s=round(entry.latency, 6),
                    input_tokens=entry.input_tokens,
                    output_tokens=entry.output_tokens,
                    turns=list(entry.answers) if multi_turn else [],
                    ranking=entry.ranking if entry.error is None else [],
                    option_probs=entry.option_probs if entry.error is None else None,
                )
            )
        return records

    first = first_batch_size(model, batch_size)
    batches = [pending[:first]] if pending else []
    batches += [pending[start : start + batch_size] for start in range(first, len(pending), batch_size)]
    try:
        with JsonlAppender(out) as sink, tqdm(total=len(pending), desc=model.spec, disable=not progress) as bar:

            def write(records: list[Response], done: int) -> None:
                records = [_storable(r) for r in records]
                sink.write(records)
                count(records)
                bar.update(done)

            def keep_what_is_done(records: list[Response]) -> None:
                write(records, 0)
                # the caller prints the error once; the log only says how far the run got
                logger.info("%s: stopped after %d answered item(s)", model.spec, summary.answered)

            if overlaps_batches(model) and len(batches) > 1:
                _overlapped(batches, prepare, ask, answered, write, keep_what_is_done)
            else:
                for batch in batches:
                    records, ready = prepare(batch)
                    ask(ready, lambda records=records: keep_what_is_done(records))
                    write(answered(records, ready), len(batch))
    finally:
        summary.error_kinds = dict(kinds)
        summary.seconds = time.perf_counter() - t0


def _overlapped(
    batches: list[list[AnyItem]],
    prepare: Any,
    ask: Any,
    answered: Any,
    write: Any,
    keep_what_is_done: Any,
) -> None:
    """The batch loop with the next batch asked while one is in flight (:func:`overlaps_batches`).

    The batch after the one in flight is read (its clips loaded) and handed to a second thread, so that at most two
    batches are asked at once; batches are written in order, each as soon as it and those before it are answered.
    On a fatal API error the batch asked beside the failing one is waited for: its answers are written when it
    ended well, what is done otherwise (the failing batch's unasked records too), then the error is raised. Every
    batch is asked as handed in when the loop started (:mod:`airbench_nb.hand_in`), so the error stops the batch
    beside it whenever that batch's thread reaches the client.
    """
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    jobs: deque[tuple[list[AnyItem], list[Response], list[_Asking], Future[None]]] = deque()

    def settle(batch: list[AnyItem], records: list[Response], ready: list[_Asking], future: Future[None]) -> None:
        try:
            future.result()
        except BaseException:
            keep_what_is_done(records)
            raise
        write(answered(records, ready), len(batch))

    run_number = next_number()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="airbench-batch") as pool:
        try:
            for batch in batches:
                records, ready = prepare(batch)
                # every batch handed in when the loop started, whenever its thread reaches the client: a fatal
                # error in one batch stops the batch beside it and every later one (see airbench_nb.hand_in)
                handed_in = handed_in_at(run_number).run
                jobs.append((batch, records, ready, pool.submit(handed_in, ask, ready, lambda: None)))
                if len(jobs) > 1:
                    settle(*jobs.popleft())
            while jobs:
                settle(*jobs.popleft())
        except BaseException:
            while jobs:  # the batch asked beside the one that failed: keep what it got
                with contextlib.suppress(Exception):
                    settle(*jobs.popleft())
            raise


def models_failing_every_item(summaries: Iterable[RunSummary | Mapping[str, Any]]) -> list[str]:
    """The models that were asked for answers and failed on every item, over all their runs.

    An item answered earlier and kept (``skipped_existing``) counts as answered: resuming a run whose model failed on a
    few items, which fail again, is a run with failed items, not a model failing on every item.

    Notebook 03 raises with these, so that ``airbench-nb run`` marks the run ``failed`` rather than ``ok``.

    Args:
        summaries: :class:`RunSummary` objects or their :meth:`~RunSummary.as_dict` forms (several per model: one
            per manifest).

    Returns:
        One line per such model: ``"<spec>: <n> items ended in error (<kinds>)"``.
    """
    answered: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    kinds: dict[str, Counter[str]] = {}
    for summary in summaries:
        row = summary.as_dict() if isinstance(summary, RunSummary) else summary
        answered[row["model"]] += row["answered"] + row.get("skipped_existing", 0)  # kept from an earlier run
        failed[row["model"]] += row["failed"]
        kinds.setdefault(row["model"], Counter()).update(_failure_kinds(row["error_kinds"]))
    return [
        f"{model}: {failed[model]} items ended in error ({_kinds_text(kinds[model])})"
        for model in failed
        if failed[model] and not answered[model]
    ]


def model_slug(spec: str) -> str:
    """A file-name-safe form of a model spec (``baseline:oracle`` -> ``baseline_oracle``)."""
    return file_slug(spec)


def check_official_output(path: str | Path, option: str = "--official-out") -> None:
    """Refuse an existing file that is not an official result file (first line a JSON object with ``response``).

    Raises:
        OutputError: Naming the file and line; the file is left untouched.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{option} {path} is a folder, not an official result file")
    if not path.is_file():
        return
    lineno, line = _first_line(path)
    if not line:
        return
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        obj = None
    if not isinstance(obj, dict) or "response" not in obj:
        raise OutputError(
            f"{option} {path} is not an official result file (line {lineno} is not a JSON object with 'response'), "
            f"so it is left untouched; choose another {option}"
        )


def responses_run_folder(responses_file: str | Path) -> RunFolder:
    """The run folder a responses file lies in, as far as spoken answers go (for commands given a responses file).

    Its responses folder is two levels up (``<responses>/<model>/<kind>.jsonl``).
    """
    top = Path(responses_file).parent.parent
    return RunFolder(top, responses=top)


def _folder_of(spec: str, out: str | Path) -> RunFolder | None:
    """The run folder whose responses file for ``spec`` is ``out``, if ``out`` lies where a run folder puts it."""
    folder = responses_run_folder(out)
    return folder if folder.responses_file(spec, Path(out).stem) == Path(out) else None


@dataclass
class RunSummaries:
    """The summaries of a folder's model runs (one per model and manifest kind), with their tables."""

    runs: list[tuple[str, RunSummary]] = field(default_factory=list)
    """``(kind, summary)`` per run, in the order they ran."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Models not run, each with why: a bundled real model whose weights are not fetched
    (:func:`~airbench_nb.weights.skipped_bundled`; ``airbench-nb weights fetch`` gets them)."""

    def __iter__(self) -> Iterator[RunSummary]:
        return (summary for _, summary in self.runs)

    def skipped_texts(self) -> list[str]:
        """One line per skipped model, saying how to get it."""
        return list(self.skipped.values())

    def __len__(self) -> int:
        return len(self.runs)

    def rows(self) -> list[dict[str, Any]]:
        """One row per (model, kind) run: ``kind``, then :meth:`RunSummary.as_dict` without the replicas."""
        return [
            {"kind": kind, **{k: v for k, v in summary.as_dict().items() if k != "replicas"}}
            for kind, summary in self.runs
        ]

    def frame(self) -> Any:
        """:meth:`rows` as a ``pandas.DataFrame``."""
        import pandas as pd

        return pd.DataFrame(self.rows())

    def coverage_rows(self) -> list[dict[str, Any]]:
        """One row per model: ``model``, then for each item kind met, the items served or ``"n/a"``.

        ``n/a`` marks a kind the model does not serve (an ASR model's scene items); a kind absent from every manifest
        has no column.
        """
        kinds: list[str] = []
        rows: dict[str, dict[str, Any]] = {}
        for _, summary in self.runs:
            row = rows.setdefault(summary.model, {"model": summary.model})
            for kind, n in summary.served.items():
                kinds += [kind] if kind not in kinds else []
                row[kind] = (row[kind] if isinstance(row.get(kind), int) else 0) + n
            for kind in summary.not_applicable:
                kinds += [kind] if kind not in kinds else []
                row.setdefault(kind, NOT_APPLICABLE)
        order = [k for k in KINDS if k in kinds] + [k for k in kinds if k not in KINDS]
        return [{"model": row["model"], **{k: row.get(k, 0) for k in order}} for row in rows.values()]

    def coverage_frame(self) -> Any:
        """:meth:`coverage_rows` as a ``pandas.DataFrame`` (``n/a`` where a model does not serve a kind)."""
        import pandas as pd

        return pd.DataFrame(self.coverage_rows())

    def not_applicable_texts(self) -> list[str]:
        """:meth:`RunSummary.not_applicable_text` of every run with items a model does not serve."""
        return [summary.not_applicable_text() for _, summary in self.runs if summary.not_applicable]

    def replica_rows(self) -> list[dict[str, Any]]:
        """One row per replica of every model served by several (``model``, ``kind``, then the counters)."""
        return [
            {"model": summary.model, "kind": kind, **row} for kind, summary in self.runs for row in summary.replicas
        ]

    def replicas_frame(self) -> Any:
        """:meth:`replica_rows` as a ``pandas.DataFrame`` (no rows when no model has several replicas)."""
        import pandas as pd

        return pd.DataFrame(self.replica_rows(), columns=["model", "kind", "url", *REPLICA_COUNTS, "down"])

    def failing_every_item(self) -> list[str]:
        """The models that failed on every item they were asked (see :func:`models_failing_every_item`)."""
        return models_failing_every_item(self)
