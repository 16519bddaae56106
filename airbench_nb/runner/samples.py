"""Decoding stability: K sampled answers per item beside the main answer (``infer --samples K``).

Storage. The main responses file (``<kind>.jsonl``) stays as it is: the run's main answer, decoded greedily, read by
every judge, score and analysis. The K sampled answers go to a sibling file, ``<kind>.samples.jsonl``
(:func:`samples_file`), each a :class:`~airbench_nb.records.Response` whose ``sample`` is its index, 0 to K-1.

Seeds. Sample k is decoded at the temperature asked with the seed :func:`sample_seed` derives from the run's seed and
k, recorded in the record's ``generation["seed"]``: ``hf:`` seeds torch before each call, ``openai:`` sends ``seed``,
``faster-whisper:`` seeds CTranslate2. A rerun with the same seed asks the same batches with the same seeds, and a
seeded backend gives the same texts; a single sample asked again alone (after a failure) is decoded in a batch of
another make-up, which a batched backend may decode differently.

Resuming. Each sample k is one pass of the item loop (:func:`~airbench_nb.runner.models.run_model` with
``sample=k``), which reads only the records of index k: a rerun with the same K asks nothing that is done, a
record deleted or ending in error is asked again (failures heal), a larger K adds the new indices, and a changed
prompt or audio is answered again, as for the main answer.

Deterministic backends. A backend whose answer no temperature or seed changes
(:func:`~airbench_nb.models.base.samples_vary` false: the baselines, classifiers, CLAP, TTS) is asked once, sample
0, whatever K: K copies of one answer would measure nothing. Every record says how it was asked
(``generation["sampling"]``: ``samples``, the K asked, and ``samples_vary``), so the stability analysis
(:mod:`airbench_nb.analysis.stability`) reports such a model as deterministic, never as sampled K times.

Spoken answers are not kept for samples (no run folder is given to the passes): a speaking model's sampled answer is
that sample's error. The stability analysis reads choice items only.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from airbench_nb.manifests import AnyItem
from airbench_nb.models.base import AudioLM, GenerationParams, samples_vary
from airbench_nb.prompts import PromptSet
from airbench_nb.records import Response
from airbench_nb.runner.models import RunSummary, run_model
from airbench_nb.runner.outputs import check_output_file, output_lock

logger = logging.getLogger(__name__)

SAMPLES_SUFFIX = ".samples.jsonl"
"""How a samples file's name ends: ``<kind>.samples.jsonl`` beside ``<kind>.jsonl``."""
SEED_BITS = 31
"""Sample seeds are whole numbers below 2**31 (what torch, CTranslate2 and OpenAI's ``seed`` all take)."""


def samples_file(out: str | Path) -> Path:
    """The samples file beside a responses file, ``<stem>.samples.jsonl``.

    ``responses/<model>/foundation.jsonl`` -> ``responses/<model>/foundation.samples.jsonl``.
    """
    out = Path(out)
    return out.with_name(f"{out.stem}{SAMPLES_SUFFIX}")


def sample_seed(seed: int, sample: int) -> int:
    """The seed of sample ``sample`` of a run seeded ``seed``: the first 31 bits of SHA-256 of ``"<seed>:<sample>"``.

    Distinct samples get unrelated seeds (not ``seed + k``, which two runs with neighbouring seeds would share), and
    the same (seed, sample) always the same one.
    """
    digest = hashlib.sha256(f"airbench-nb sample {int(seed)}:{int(sample)}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & ((1 << SEED_BITS) - 1)


def check_samples(samples: int | None, temperature: float) -> None:
    """Refuse a number of samples that is not a whole number of 1 or more, or samples asked at temperature 0.

    Raises:
        ValueError: Naming ``--samples`` (or ``--temperature``) and the value.
    """
    if samples is None:
        return
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError(
            f"--samples {samples!r}: the number of sampled answers per item must be a whole number, 1 or more"
        )
    if not temperature > 0:
        raise ValueError(
            f"--samples {samples} needs --temperature above 0 (got {temperature:g}): at temperature 0 decoding is "
            "greedy and every sample would be the main answer again; e.g. --temperature 1.0"
        )


@dataclass
class SamplesSummary:
    """What one ``--samples K`` run did: one :class:`RunSummary` per sample index asked."""

    model: str
    """Model spec."""
    out: str
    """The samples file."""
    asked: int
    """K, the samples asked per item."""
    samples_vary: bool
    """Whether the backend samples; False: deterministic, sample 0 only was asked."""
    temperature: float
    """Decoding temperature of the samples."""
    seeds: list[int] = field(default_factory=list)
    """The seed of each sample index asked, in order (:func:`sample_seed`)."""
    passes: list[RunSummary] = field(default_factory=list)
    """The item loop's summary of each sample index, in order."""

    @property
    def taken(self) -> int:
        """Sample indices asked per item: K, or 1 for a deterministic backend."""
        return len(self.passes)

    @property
    def answered(self) -> int:
        """(item, sample) pairs answered in this run."""
        return sum(p.answered for p in self.passes)

    @property
    def skipped_existing(self) -> int:
        """(item, sample) pairs already done in the samples file (resumed)."""
        return sum(p.skipped_existing for p in self.passes)

    @property
    def failed(self) -> int:
        """(item, sample) pairs that ended in error in this run, data defects apart (rerun to retry them)."""
        return sum(p.failed for p in self.passes)

    def text(self) -> str:
        """One line: what was asked and done."""
        how = (
            f"{self.asked} samples per item at temperature {self.temperature:g}"
            if self.samples_vary
            else f"1 sample per item (deterministic backend: {self.asked} asked, the same answer each time)"
        )
        return (
            f"{self.model}: {how} into {self.out}: {self.answered} answered, {self.skipped_existing} kept from "
            f"earlier runs, {self.failed} failed"
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain dict, for tables and notebooks."""
        return {
            "out": self.out,
            "asked": self.asked,
            "taken": self.taken,
            "samples_vary": self.samples_vary,
            "temperature": self.temperature,
            "seeds": list(self.seeds),
            "answered": self.answered,
            "skipped_existing": self.skipped_existing,
            "failed": self.failed,
        }


def run_samples(
    model: AudioLM,
    items: Sequence[AnyItem],
    root: str | Path,
    out: str | Path,
    *,
    samples: int,
    params: GenerationParams,
    prompts: PromptSet | None = None,
    system: str | None = None,
    limit: int | None = None,
    progress: bool = True,
) -> SamplesSummary:
    """Ask every item ``samples`` times at ``params.temperature``, sample k seeded by :func:`sample_seed`, into ``out``.

    See the module docstring for the storage, the seeds, resuming and deterministic backends.

    Args:
        model: The backend.
        items: Items to answer.
        root: Data root of their audio.
        out: The samples file (:func:`samples_file` of the main responses file); created or resumed.
        samples: K, the sampled answers per item (1 or more).
        params: Decoding parameters; ``temperature`` above 0; ``seed`` is the run's (None: 0), from which each
            sample's is derived.
        prompts: Prompt templates (default AIR-Bench's).
        system: Optional system text.
        limit: Only the first ``limit`` items.
        progress: Show a progress bar per sample.

    Returns:
        A :class:`SamplesSummary`.

    Raises:
        ValueError: For ``samples`` below 1 or a temperature of 0 (nothing is written).
        OutputError: As :func:`~airbench_nb.runner.models.run_model` (``out`` not a responses file, another model's,
            or locked).
    """
    check_samples(samples, params.temperature)
    vary = samples_vary(model)
    taken = samples if vary else 1
    if not vary and samples > 1:
        logger.info(
            "%s is deterministic (its answer changes with no temperature or seed): 1 sample stored, not %d",
            model.spec,
            samples,
        )
    base_seed = 0 if params.seed is None else int(params.seed)
    summary = SamplesSummary(
        model=model.spec, out=str(out), asked=samples, samples_vary=vary, temperature=params.temperature
    )
    sampling = {"samples": samples, "samples_vary": vary}
    check_output_file(out, Response, "--samples file")
    with output_lock(out):
        for index in range(taken):
            seed = sample_seed(base_seed, index)
            summary.seeds.append(seed)
            summary.passes.append(
                run_model(
                    model,
                    items,
                    root,
                    out,
                    params=replace(params, seed=seed),
                    prompts=prompts,
                    system=system,
                    limit=limit,
                    progress=progress,
                    run_folder=None,
                    sample=index,
                    sampling=sampling,
                )
            )
    logger.info("%s", summary.text())
    return summary
