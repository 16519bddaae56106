"""``infer`` (the CLI's ``infer``: one model, one manifest, with its samples) and ``infer_run_folder`` (notebook 03).

They sit above :mod:`airbench_nb.runner.models` (the item loop) and :mod:`airbench_nb.runner.samples` (sampled
answers), which both use the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airbench_nb.models.base import GenerationParams
from airbench_nb.prompts import PromptSet
from airbench_nb.records import Response
from airbench_nb.run_folder import KINDS, RunFolder
from airbench_nb.runner.models import (
    RunSummaries,
    RunSummary,
    _folder_of,
    check_limit,
    check_official_output,
    run_model,
)
from airbench_nb.runner.outputs import check_output_file, output_lock, read_existing, refuse_input_as_output

logger = logging.getLogger(__name__)


def infer(
    spec: str,
    manifest: str | Path,
    out: str | Path,
    *,
    batch_size: int | None = None,
    concurrency: int | None = None,
    limit: int | None = None,
    max_new_tokens: int | None = None,
    temperature: float = 0.0,
    prompt_set: str = "airbench",
    seed: int = 0,
    official_out: str | Path | None = None,
    api_key_env: str | None = None,
    progress: bool = True,
    model_options: dict[str, Any] | None = None,
    run_folder: RunFolder | None = None,
    samples: int | None = None,
) -> RunSummary:
    """Load a model from its spec and answer a manifest into ``out`` (resumable); the CLI's ``infer``.

    The outputs are checked before the model is loaded: neither may be the manifest, ``official_out`` may not be
    ``out``, an existing ``out`` must be a responses file of this model, and no other process may be writing it.

    Args:
        spec: Model spec (``hf:...``, ``openai:...``, ``baseline:...``).
        manifest: A JSONL manifest; audio is read from its data root.
        out: Responses JSONL.
        batch_size: Prompts per backend call (backend default when None).
        concurrency: Requests in flight for ``openai:`` models.
        limit: Only the first ``limit`` items.
        max_new_tokens: Generation length bound per turn; None: each item's kind decides
            (:data:`~airbench_nb.models.base.DEFAULT_MAX_NEW_TOKENS`: Foundation 64, Chat 512, ``cot`` 512).
        temperature: 0 for greedy decoding. With ``samples``, the temperature of the samples (above 0); the main
            answer is then decoded greedily.
        prompt_set: ``airbench``, ``cot`` or a template file.
        seed: Seed of ``baseline:random`` and of sampling.
        official_out: Also write the official result format (meta fields + ``response``) here.
        api_key_env: Environment variable holding the key of an ``openai:`` model (the backend's default when None).
        progress: Show a progress bar.
        model_options: More backend options (``hf:``: ``device``, ``dtype``, ``attn``), ignored by backends that
            do not take them.
        run_folder: Where spoken answers are written; None: the run folder ``out`` lies in when it is where one puts
            this model's responses (``.../<model>/<kind>.jsonl``), else none (see :func:`run_model`).
        samples: Also ask every item K times at ``temperature``, each sample seeded from ``seed`` and its index,
            into ``<out stem>.samples.jsonl`` (:mod:`airbench_nb.runner.samples`; resumed per item and sample; a
            deterministic backend is asked once); None: no samples.

    Returns:
        The run's :class:`RunSummary` (its ``samples``: what the samples did).

    Raises:
        OutputError: For an output refused (see above); nothing is written.
        ValueError: For a negative ``limit``, or ``samples`` below 1 or at temperature 0 (nothing is loaded or
            written).
    """
    from airbench_nb.manifests import data_root, read_manifest
    from airbench_nb.models import load_model
    from airbench_nb.runner.samples import check_samples, run_samples, samples_file

    check_limit(limit)
    check_samples(samples, temperature)
    refuse_input_as_output(out, {"--manifest": manifest})
    samples_out = samples_file(out) if samples is not None else None
    if samples_out is not None:
        refuse_input_as_output(samples_out, {"--manifest": manifest}, "--samples file")
        check_output_file(samples_out, Response, "--samples file")
    if official_out is not None:
        refuse_input_as_output(official_out, {"--manifest": manifest, "--out": out}, "--official-out")
        check_official_output(official_out)
    check_output_file(out, Response)
    items = read_manifest(manifest)
    with output_lock(out):
        model = load_model(
            spec,
            batch_size=batch_size,
            concurrency=concurrency,
            seed=seed,
            api_key_env=api_key_env,
            **(model_options or {}),
        )
        try:
            summary = run_model(
                model,
                items,
                data_root(manifest),
                out,
                limit=limit,
                progress=progress,
                params=GenerationParams(
                    max_new_tokens=max_new_tokens, temperature=0.0 if samples is not None else temperature, seed=seed
                ),
                prompts=PromptSet.named(prompt_set),
                run_folder=run_folder if run_folder is not None else _folder_of(spec, out),
            )
            if samples_out is not None and samples is not None:
                summary.samples = run_samples(
                    model,
                    items,
                    data_root(manifest),
                    samples_out,
                    samples=samples,
                    params=GenerationParams(max_new_tokens=max_new_tokens, temperature=temperature, seed=seed),
                    prompts=PromptSet.named(prompt_set),
                    limit=limit,
                    progress=progress,
                )
        finally:
            model.close()
        if official_out is not None:
            from airbench_nb.official import write_official_results

            texts = {r.uid: r.text for r in read_existing(out, Response) if r.model == spec}
            write_official_results(items, texts, official_out)
    return summary


def infer_run_folder(
    folder: RunFolder,
    models: Sequence[str],
    kinds: Sequence[str] = KINDS,
    **options: Any,
) -> RunSummaries:
    """Answer a run folder's manifests with each model, into ``folder.responses_file(model, kind)`` (resumable).

    The twin of :func:`~airbench_nb.judge.run.judge_run_folder`: notebook 03 and ``airbench-nb run`` call it.

    Args:
        folder: The run folder (manifests read from its data folder).
        models: Model specs.
        kinds: Manifest kinds to answer (those present; none present is an error).
        **options: Passed to :func:`infer` (``batch_size``, ``concurrency``, ``limit``, ``max_new_tokens``,
            ``prompt_set``, ``seed``, ...).

    Returns:
        A :class:`RunSummaries`, one summary per (model, kind), models in the order given; a bundled real model
        whose weights are not fetched is skipped (:attr:`RunSummaries.skipped`), never an error.

    Raises:
        FileNotFoundError: When the data folder holds none of the manifests.
    """
    from airbench_nb.weights import skipped_bundled

    manifests = folder.manifests(kinds)
    options.setdefault("progress", False)
    summaries = RunSummaries(skipped=skipped_bundled(models))
    for line in summaries.skipped_texts():
        logger.warning("%s", line)
    for spec in (m for m in models if m not in summaries.skipped):
        for kind, manifest in manifests.items():
            out = folder.responses_file(spec, kind)
            summaries.runs.append((kind, infer(spec, manifest, out, run_folder=folder, **options)))
    return summaries
