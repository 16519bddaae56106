"""Commands that make and check data: ``import-official``, ``import-sources``, ``validate``, ``mix``, ``build``, ...

``rotate`` too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from airbench_nb.cli.app import (
    DATA_ROOT_HELP,
    console,
    err_console,
    field_rows,
    out_file,
    out_folder,
    refuse,
    refusing,
    rows_table,
)


def import_official_cmd(
    root: Annotated[Path, typer.Argument(help="Root of an AIR-Bench release (holding Foundation/ and/or Chat/).")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for foundation.jsonl, chat.jsonl, ...", callback=out_folder)
    ],
    workers: Annotated[int, typer.Option(help="Threads used to check and hash audio (1 or more).", min=1)] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Import the official release into manifests; bad rows are rejected with reasons, never fatal.

    Exits 0 when it imported what it could, 2 when ROOT holds no readable meta file.
    """
    from airbench_nb.official import OfficialImportError, import_official

    with refusing(OfficialImportError):
        report = import_official(root, out, workers=workers)
    if as_json:
        typer.echo(json.dumps(report.counts(), indent=2))
        return
    for part in report.parts:
        if not part.present:
            console.print(f"{part.benchmark}: no {part.meta_file} (skipped)")
            continue
        if part.file_error:
            console.print(f"[red]{part.benchmark}: {part.file_error}[/red]")
            continue
        rows = part.task_table()
        total = {"task": "TOTAL", **{k: sum(r[k] for r in rows) for k in rows[0] if k != "task"}} if rows else {}
        console.print(
            rows_table(
                f"{part.benchmark}: {part.rows} rows, {len(part.items)} imported, {len(part.rejected)} rejected",
                [*rows, total] if rows else [],
            )
        )
        if part.rejected:
            console.print(
                rows_table(
                    f"{part.benchmark}: rejected rows",
                    [
                        {"index": r.index, "uniq_id": r.uniq_id, "field": r.field, "reason": r.reason[:120]}
                        for r in part.rejected
                    ],
                )
            )
    console.print(f"wrote {out}/ (foundation.jsonl, chat.jsonl, rejected.jsonl, dataset.json)")


def import_sources_cmd(
    source: Annotated[
        Path, typer.Argument(help="A CSV of audio,label rows, or a folder holding one sub-folder of clips per class.")
    ],
    hierarchy: Annotated[
        Path,
        typer.Option(
            "--hierarchy",
            help="Hierarchy JSON: categories, and fine classes with their coarse category (the format of "
            "data_manifests/tiered/hierarchy.json; ranges, synonyms, labels and prompts optional).",
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for sound_source.jsonl, sound_source_open.jsonl and the clips' copies.",
            callback=out_folder,
        ),
    ],
) -> None:
    """Import your own sound-source clips for the tiered benchmark; bad rows are rejected with reasons, never fatal.

    Each clip is checked (size, duration, decoding, silence), copied and asked closed-set (one option per fine class, at
    most 26) and open-vocabulary. Exits 0 when it imported what it could; 2 (nothing written) when OUT holds anything
    an import of SOURCE did not write, on a bad or unreadable hierarchy or CSV (file and line named), a source without
    any clip, or when every clip was rejected.
    """
    from airbench_nb.builders.tiered_import import import_sources

    with refusing(ValueError, OSError):
        result = import_sources(source, hierarchy, out)
    counts = result.build.counts()
    console.print(
        f"imported {result.imported} clips in {len(counts['categories'])} categories {counts['categories']}, "
        f"{len(result.rejected)} rejected"
    )
    if result.rejected:
        console.print(rows_table("rejected clips", [{**r, "error": r["error"][:120]} for r in result.rejected]))
    console.print(f"wrote {out}/ (sound_source.jsonl, sound_source_open.jsonl, audio/tiered/, dataset.json)")


def validate(
    manifest: Annotated[Path, typer.Argument(help="A JSONL manifest.")],
    check_audio: Annotated[
        bool, typer.Option("--audio/--no-audio", help="Also open and hash every audio file.")
    ] = True,
    data_root_dir: Annotated[Path | None, typer.Option("--data-root", help=DATA_ROOT_HELP)] = None,
) -> None:
    """Check a manifest: every line valid, uids unique, audio present, decodable and unchanged.

    Exits 1 when a line is invalid or an audio hash differs from the one recorded; 2 when the manifest is missing or
    its dataset.json is invalid or points its data root where it may not (see --data-root).
    """
    from collections import Counter

    from rich.markup import escape

    from airbench_nb.manifests import check_audio as probe_all
    from airbench_nb.manifests import data_root, read_manifest

    with refusing(FileNotFoundError, ValueError):  # ManifestError is a ValueError
        items, errors = read_manifest(manifest, strict=False)
        root = data_root(manifest, root=data_root_dir) if check_audio and items else None
    for err in errors:
        err_console.print(f"[red]{escape(str(err))}[/red]", soft_wrap=True)
    changed = 0
    if root is not None:
        checked = probe_all(items, root)
        statuses = Counter(i.audio_status.value for i in checked if i.audio_status)
        for before, after in zip(items, checked, strict=True):
            if before.audio_sha256 and after.audio_sha256 and before.audio_sha256 != after.audio_sha256:
                changed += 1
                err_console.print(
                    f"[red]{manifest}: item {before.uid!r}: audio {before.audio} changed "
                    f"(sha256 {before.audio_sha256[:12]}... recorded, {after.audio_sha256[:12]}... now)"
                )
        console.print("audio: " + ", ".join(f"{k}={v}" for k, v in sorted(statuses.items())))
        if checked and statuses.get("missing", 0) == len(checked):
            raise refuse(
                f"every one of its {len(checked)} audio files is missing under {root}: is the data root "
                "right? (see --data-root)",
                file=manifest,
            )
    console.print(f"{manifest}: {len(items)} valid items, {len(errors)} invalid lines, {changed} changed audio files")
    if errors or changed:
        raise typer.Exit(1)


def mix_cmd(
    source_a: Annotated[Path, typer.Argument(help="Source A (e.g. speech): wav, flac or mp3.")],
    source_b: Annotated[Path, typer.Argument(help="Source B (e.g. music or a sound): wav, flac or mp3.")],
    out: Annotated[
        Path,
        typer.Option("--out", "-o", help="Where to write the mix (16-bit wav, 16 kHz mono).", callback=out_file),
    ],
    snr_db: Annotated[
        float | None, typer.Option(help="SNR of A over B in dB over the overlap (SSEU-Bench style).")
    ] = None,
    gain_a_db: Annotated[float | None, typer.Option(help="Gain of A in dB relative to the loudness reference.")] = None,
    gain_b_db: Annotated[float | None, typer.Option(help="Gain of B in dB relative to the loudness reference.")] = None,
    offset_s: Annotated[float, typer.Option(help="Start of B minus start of A in seconds (negative: B first).")] = 0.0,
    reference_lufs: Annotated[
        float, typer.Option(help="Loudness both sources are normalised to before gains.")
    ] = -23.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the mix metadata as JSON.")] = False,
) -> None:
    """Mix two clips with loudness control and an offset; write the mix and print its metadata.

    Give either --snr-db, or both --gain-a-db and --gain-b-db. Files are downmixed to mono and resampled to
    16 kHz. Exits 2 on bad input: an unreadable, silent or NaN clip, clips that do not overlap, or neither or
    both level options.
    """
    from airbench_nb.mix import mix_files

    with refusing(ValueError):  # AudioError, MixError, OutputError (a refused --out): one line, no traceback
        _check_mix_output(out, source_a, source_b)
        result = mix_files(
            source_a,
            source_b,
            out=out,
            snr_db=snr_db,
            gain_a_db=gain_a_db,
            gain_b_db=gain_b_db,
            offset_s=offset_s,
            reference_loudness=reference_lufs,
        )
    if as_json:
        typer.echo(result.meta.model_dump_json(indent=2))
        return
    console.print(rows_table(f"wrote {out}", field_rows(result.meta.model_dump(exclude={"schema_version"}))))


def _check_mix_output(out: Path, source_a: Path, source_b: Path) -> None:
    """Refuse a mix ``--out`` that is a source, or an existing file that is not a WAV (left untouched)."""
    import soundfile as sf

    from airbench_nb.runner import OutputError, refuse_input_as_output

    refuse_input_as_output(out, {"source A": source_a, "source B": source_b})
    if out.is_dir():
        raise OutputError(f"--out {out} is a folder, not a wav file")
    if out.suffix.lower() != ".wav":
        raise OutputError(f"--out {out}: the mix is written as a wav file; give a name ending in .wav")
    if out.is_file() and out.stat().st_size:
        try:
            kind = sf.info(str(out)).format
        except Exception:  # noqa: BLE001 - any file libsndfile cannot read is not a mix the kit wrote
            kind = None
        if kind != "WAV":
            raise OutputError(
                f"--out {out} exists and is not a wav file, so it is left untouched; choose another --out"
            )


def build(
    preset: Annotated[
        str, typer.Option(help="tiny (2 items per task, for tests) or mini (the demo's default).")
    ] = "mini",
    seed: Annotated[int, typer.Option(help="Build seed: the same seed gives byte-identical manifests.")] = 0,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for manifests and audio.", callback=out_folder)
    ] = Path("data/mini"),
    task: Annotated[list[str] | None, typer.Option(help="Build only this task (repeatable).")] = None,
    recipes: Annotated[Path | None, typer.Option(help="Recipe folder (default: data_manifests/mini).")] = None,
    reference_model: Annotated[
        str | None,
        typer.Option(help="openai:<model>[@<base_url>]: write Chat references from the meta-information with an LLM."),
    ] = None,
    reference_cache: Annotated[
        Path | None, typer.Option(help="SQLite cache of those calls.", callback=out_file)
    ] = None,
    snr_grid: Annotated[
        str | None,
        typer.Option(
            help="SNRs in dB, comma-separated (e.g. --snr-grid=-10,-5,0,5,10): speech items are built again mixed "
            "over noise or music at each (uid <uid>@snr-05). Default: the preset's; '' or none: no graded items."
        ),
    ] = None,
    snr_items_per_task: Annotated[
        int | None, typer.Option(help="Grade the first N built items of each speech task (default: the preset's).")
    ] = None,
    circular_items_per_task: Annotated[
        int | None,
        typer.Option(
            help="Also write the first N items of each Foundation task once per rotation of their choices "
            "(circular evaluation; uid <uid>@r<k>). Default: the preset's."
        ),
    ] = None,
    sseu_utterances: Annotated[
        int | None,
        typer.Option(
            help="SSEU-style utterances: speech over a synthesized scene at 7 SNRs plus the clean speech, each mixed "
            "clip with transcription, scene, events and joint items. Default: the preset's."
        ),
    ] = None,
    ugbench_items: Annotated[
        str | None,
        typer.Option(
            help="UG-Bench items per task, e.g. --ugbench-items speech_translation=10,tts=all (tasks: "
            "speech_translation, audio_captioning, music_captioning, tts, spoken_answer; 'all' for every sentence, "
            "text or question). A task not named keeps the preset's count."
        ),
    ] = None,
    tiered_clips_per_class: Annotated[
        int | None,
        typer.Option(
            help="Tiered sound-source clips per fine class (25 classes in 8 categories), each asked closed-set "
            "(sound_source.jsonl) and open-vocabulary (sound_source_open.jsonl). Default: the preset's."
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="NAME=VALUE: an option of a builder part (VALUE read as JSON if it can be), e.g. a benchmark's own "
            "part's --option beep_items=8 (repeatable); it wins over the preset's.",
        ),
    ] = None,
) -> None:
    """Build the offline benchmark (Foundation and Chat items from synthesized audio with known ground truth)."""
    from collections import Counter

    from airbench_nb.builders import RECIPE_DIR, RecipeError
    from airbench_nb.builders import build as run_build
    from airbench_nb.builders.snr import parse_snr_grid
    from airbench_nb.builders.ugbench import parse_ugbench_option
    from airbench_nb.cli.pipeline import _parse_param

    options = dict(_parse_param(text, "--option") for text in option or ())
    with refusing(RecipeError, ValueError):
        report = run_build(
            preset,
            seed=seed,
            out=out,
            tasks=task or None,
            recipe_dir=recipes or RECIPE_DIR,
            reference_model=reference_model,
            reference_cache=reference_cache,
            snr_grid=parse_snr_grid(snr_grid) if snr_grid is not None else None,
            snr_items_per_task=snr_items_per_task,
            circular_items_per_task=circular_items_per_task,
            sseu_utterances=sseu_utterances,
            ugbench_items=parse_ugbench_option(ugbench_items) if ugbench_items is not None else None,
            tiered_clips_per_class=tiered_clips_per_class,
            options=options or None,
        )
    counts = report.counts()
    rows = [{"kind": "foundation", "task": t, "items": n} for t, n in counts["foundation"].items()]
    rows += [{"kind": "foundation, SNR-graded", "task": t, "items": n} for t, n in counts["graded"].items()]
    rows += [{"kind": "chat", "task": t, "items": n} for t, n in counts["chat"].items()]
    others: dict[str, list[Any]] = {}  # reference, tiered, plugins' kinds (perturbed copies: their own line below)
    for name, part in report.parts.items():
        for kind, items in part.items.items():
            if kind not in ("foundation", "chat") and name != "perturb":
                others.setdefault(kind, []).extend(items)
    rows += [
        {"kind": kind, "task": task, "items": n}
        for kind, items in others.items()
        for task, n in Counter(getattr(i, "task", kind) for i in items).items()
    ]
    console.print(
        rows_table(
            f"built {len(report.foundation)} Foundation + {len(report.chat)} Chat items in "
            f"{report.seconds} s ({len(report.failures)} failures)",
            rows,
        )
    )
    if report.snr_grid:
        console.print(
            f"and {len(report.graded)} SNR-graded Foundation items at {', '.join(f'{s:+g}' for s in report.snr_grid)} "
            f"dB ({counts['graded_failures']} failures), after the clean ones in foundation.jsonl"
        )
    if report.rotated:
        console.print(
            f"and {len(report.rotated)} rotated copies (circular evaluation) of "
            f"{len({i.meta['rotation_of'] for i in report.rotated})} items, last in foundation.jsonl"
        )
    controls = report.parts["controls"] if "controls" in report.parts else None
    if controls is not None and controls.card.get("control_items"):
        made = [i for items in controls.items.values() for i in items]
        console.print(
            f"and {len(made)} audio-reliance controls ({', '.join(controls.card['controls'])}) of "
            f"{len({i.meta['control_of'] for i in made})} items ({controls.card['controls_not_eligible']} not "
            f"eligible), last in {' and '.join(f'{k}.jsonl' for k, v in controls.items.items() if v)}"
        )
    perturbed = report.parts.get("perturb")
    card = perturbed.card if perturbed is not None else {}
    if perturbed is not None and card.get("perturbed_originals"):  # the card counts the copies and their originals
        console.print(
            f"and {card['perturbed_items']} perturbed copies ({', '.join(card['perturbations'])}) of "
            f"{card['perturbed_originals']} items ({len(perturbed.failures)} failed), last in foundation.jsonl and "
            "transcription.jsonl"
        )
    if perturbed is not None and card.get("paraphrased_items"):
        console.print(
            f"and {card['paraphrased_items']} paraphrased questions ({card['paraphrases']} per item, from the recipes' "
            f"phrasings; {card['paraphrase_not_eligible']} items not eligible), last in foundation.jsonl"
        )
    if report.sseu.items:
        sseu = counts["sseu"]
        console.print(
            f"and {len(report.sseu.items)} SSEU-style items: {sseu['utterances']} utterances, clean and at "
            f"{', '.join(f'{s:+g}' for s in report.sseu.snr_grid_db)} dB over scenes {sseu['scenes']} "
            f"({sseu['failures']} failures)"
        )
    if report.ugbench.items:
        ug = counts["ugbench"]
        directions = f", translation directions {ug['directions']}" if ug["directions"] else ""
        console.print(
            f"and {len(report.ugbench.items)} UG-Bench items: {ug['items']}{directions} ({ug['failures']} failures)"
        )
    if report.tiered.sound_source:
        tiered = counts["tiered"]
        console.print(
            f"and {tiered['clips']} tiered sound-source clips, each asked closed-set and open-vocabulary: "
            f"{tiered['categories']} ({tiered['failures']} failures)"
        )
    for failure in report.failures:
        err_console.print(
            f"[red]failed:[/red] {failure['task']} {failure.get('uid', failure['index'])}: {failure['error']}"
        )
    console.print(f"gold-letter balance: {report.letter_balance()}")
    written = ["foundation.jsonl", "chat.jsonl", *(f"{k}.jsonl" for k, v in others.items() if v)]
    console.print(f"wrote {out}/ ({', '.join(written)}, dataset.json, audio/)")


def rotate(
    manifest: Annotated[Path, typer.Argument(help="A manifest with Foundation items.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", help="The rotated manifest to write (e.g. DIR/foundation.jsonl).", callback=out_file
        ),
    ],
    rotations: Annotated[
        int | None,
        typer.Option(help="Rotations per item (default: one per option up to 4 options; 4, spread evenly, beyond)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Write every Foundation item once per rotation of its choices (MMBench CircularEval): uid <uid>@r<k>."""
    from airbench_nb.analysis.circular import rotate_manifest

    with refusing(FileNotFoundError, ValueError):  # ManifestError is a ValueError; so is "no Foundation item"
        counts = rotate_manifest(manifest, out, rotations=rotations)
    if as_json:
        typer.echo(json.dumps(counts, indent=2, default=str))
        return
    skipped = ", ".join(f"{n} {kind}" for kind, n in counts["skipped"].items()) or "none"
    console.print(
        f"wrote {counts['written']} rotated copies of {counts['foundation']} Foundation items to {counts['out']} "
        f"(items of other kinds not rotated: {skipped}); audio resolves from {counts['data_root']}",
        soft_wrap=True,
    )
