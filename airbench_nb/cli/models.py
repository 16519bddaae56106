"""The command that runs a model under test: ``infer``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer

from airbench_nb.cli.app import (
    API_KEY_ENV_HELP,
    DATA_ROOT_HELP,
    console,
    field_rows,
    finite_not_negative,
    items_failed,
    not_negative,
    out_file,
    refusing,
    rows_table,
)

NAMED_MODEL_OPTIONS = frozenset({"device", "dtype", "attn", "audio_output", "audio_voice", "batch_size", "seed"})
"""Backend options that ``infer`` has a named flag for (``--model-option`` may not set them)."""


def _option_value(text: str) -> int | float | bool | str:
    """A ``--model-option`` value: a whole number, a number, true/false, else the text as given."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+)([eE]-?\d+)?", text):
        return float(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def model_options_given(model: str, given: list[str]) -> dict[str, int | float | bool | str]:
    """``--model-option KEY=VALUE`` values as a dict, each key checked against what the model's backend takes.

    Values are read as a whole number, a number or true/false when they look like one, else kept as text.

    Raises:
        ValueError: For a value without ``=``, a key given twice or one with its own flag, or a key the backend does
            not take (the message lists the keys it takes).
    """
    from airbench_nb.models import model_option_names

    options: dict[str, int | float | bool | str] = {}
    for text in given:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--model-option {text!r}: write KEY=VALUE")
        if key in options:
            raise ValueError(f"--model-option {key} given twice")
        if key in NAMED_MODEL_OPTIONS:
            raise ValueError(f"--model-option {key}: use --{key.replace('_', '-')} instead")
        options[key] = _option_value(value)
    if options:
        takes = [k for k in model_option_names(model) if k not in NAMED_MODEL_OPTIONS]
        unknown = sorted(set(options) - set(takes))
        if unknown:
            raise ValueError(
                f"--model-option {', '.join(unknown)}: {model.partition(':')[0]}: takes {', '.join(takes) or 'none'}"
            )
    return options


def infer(
    model: Annotated[
        str,
        typer.Option(
            help="Model spec: hf:<path>, openai:<model>[@<base_url>], faster-whisper:<folder|size>, "
            "tts:espeak-ng[:<voice>], baseline:<name>."
        ),
    ],
    manifest: Annotated[
        Path,
        typer.Option(
            help="A JSONL manifest (foundation, chat, transcription, scene, events, joint, translation, caption or "
            "speech_generation)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Responses JSONL (resumed when it exists).", callback=out_file)
    ],
    batch_size: Annotated[int | None, typer.Option(help="Prompts per backend call (1 or more).", min=1)] = None,
    limit: Annotated[
        int | None, typer.Option(help="Only the first N items (0 or more).", callback=not_negative)
    ] = None,
    max_new_tokens: Annotated[
        int | None,
        typer.Option(
            help="Generation length bound per turn. Default: by kind, Foundation 64, Chat 512, --prompt-set cot 512.",
            min=1,
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Requests in flight (openai: models).")] = 8,
    temperature: Annotated[
        float, typer.Option(help="0 for greedy decoding (a finite number, 0 or more).", callback=finite_not_negative)
    ] = 0.0,
    prompt_set: Annotated[str, typer.Option(help="airbench, cot, or a JSON template file.")] = "airbench",
    seed: Annotated[int, typer.Option(help="Seed of baseline:random and of sampling.")] = 0,
    samples: Annotated[
        int | None,
        typer.Option(
            help="Also ask every item K times at --temperature (above 0), sample k seeded from --seed and k, into "
            "<out stem>.samples.jsonl (resumed per sample; a deterministic backend is asked once); the main answer "
            "is then greedy. For the stability analysis (docs/stability.md).",
        ),
    ] = None,
    official_out: Annotated[
        Path | None, typer.Option(help="Also write the official result format here.", callback=out_file)
    ] = None,
    data_root_dir: Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP)] = None,
    api_key_env: Annotated[str | None, typer.Option(help=API_KEY_ENV_HELP)] = None,
    device: Annotated[
        str | None,
        typer.Option(help="hf: cpu, cuda, cuda:1, or auto (spread over all GPUs; default with several GPUs)."),
    ] = None,
    dtype: Annotated[
        str | None, typer.Option(help="hf: bf16, fp16, fp32 (default: the checkpoint's on CUDA, fp32 on CPU).")
    ] = None,
    attn: Annotated[
        str | None, typer.Option(help="hf: attention kernel: sdpa, flash_attention_2, eager (default: transformers').")
    ] = None,
    audio_output: Annotated[
        bool,
        typer.Option(
            "--audio-output",
            help="openai: ask for spoken answers to speech-generation items (modalities text and audio; the wav is "
            "written beside the responses).",
        ),
    ] = False,
    audio_voice: Annotated[
        str | None, typer.Option(help="openai: the voice of spoken answers (default alloy).")
    ] = None,
    model_option: Annotated[
        list[str] | None,
        typer.Option(
            help="Another backend option as KEY=VALUE, repeatable: e.g. classifier: mapping=table.csv, "
            "kinds=sound_source,foundation, scores=sigmoid, match=exact; clap: prompts=prompts.json. A key the "
            "backend does not take is refused.",
        ),
    ] = None,
) -> None:
    """Answer a manifest with a model, appending one response per item (a rerun resumes and retries errors).

    Exits 0 when every item was answered (items whose audio the manifest marks missing, empty or corrupt apart),
    1 when some ended in error (rerun to retry them), 2 on bad input or a refused --out (nothing written), 3 when a
    fatal API error stopped the run (rejected or missing key, server unreachable).
    """
    from airbench_nb.manifests import data_root_override
    from airbench_nb.models import SpecError
    from airbench_nb.prompts import PromptSet
    from airbench_nb.runner import infer as run_infer

    with refusing(SpecError, FileNotFoundError, ValueError, fatal_api=True):
        PromptSet.named(prompt_set)  # a bad template file fails here, before a model is loaded or called
        extra = model_options_given(model, model_option or [])
        with data_root_override(manifest, data_root_dir):
            summary = run_infer(
                model,
                manifest,
                out,
                batch_size=batch_size,
                concurrency=concurrency,
                limit=limit,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                prompt_set=prompt_set,
                seed=seed,
                official_out=official_out,
                api_key_env=api_key_env,
                samples=samples,
                model_options={
                    "device": device,
                    "dtype": dtype,
                    "attn": attn,
                    "audio_output": audio_output or None,
                    "audio_voice": audio_voice,
                    **extra,
                },
            )
    console.print(rows_table(f"{model} on {manifest}", field_rows(summary.as_dict())))
    if summary.not_applicable:
        console.print(summary.not_applicable_text())
    if summary.unusable:
        console.print(
            f"{summary.unusable} items have missing, empty or corrupt audio: data defects, left out of scoring"
        )
    if summary.samples is not None:
        console.print(summary.samples.text())
    if summary.failed:
        raise items_failed(summary.failure_text())
    if summary.samples is not None and summary.samples.failed:
        raise items_failed(f"{model}: {summary.samples.failed} sampled answers ended in error")
