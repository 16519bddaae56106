"""``airbench-nb import``: a corpus or a Hugging Face dataset into a data folder, by recipe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from airbench_nb.cli.app import console, out_folder, refuse, refusing, rows_table

SHOWN_REJECTIONS = 20
"""Rejected rows listed on the screen (all of them are in ``rejected.jsonl``)."""


def _split_sources(args: list[str]) -> tuple[list[Path], dict[str, list[Path]]]:
    """The positional sources, and the ``--NAME PATH`` (or ``--NAME=PATH``) ones by name.

    Click hands options it does not know over as arguments, so both come in one list.
    """
    positional: list[Path] = []
    named: dict[str, list[Path]] = {}
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("--") or len(arg) < 3:
            positional.append(Path(arg))
            continue
        name, _, value = arg[2:].partition("=")
        if not value:
            if not rest or rest[0].startswith("--"):
                raise refuse(f"--{name} needs a path")
            value = rest.pop(0)
        named.setdefault(name.replace("-", "_"), []).append(Path(value))
    return positional, named


def _options(texts: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise refuse(f"--option {text!r}: give NAME=VALUE")
        options[name.strip()] = value.strip()
    return options


def _list_recipes(as_json: bool) -> None:
    from airbench_nb.importing import RECIPES

    rows = [
        {
            "recipe": recipe.name,
            "version": recipe.version,
            "kinds": ", ".join(recipe.kinds),
            "sources": " ".join(
                ("SOURCE" if slot.name == "source" else f"--{slot.name} PATH") + ("" if slot.required else "?")
                for slot in recipe.slots
            ),
            "options": ", ".join(f"{o.name}={o.default}" for o in recipe.options),
            "what": recipe.title,
        }
        for recipe in RECIPES.values()
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    console.print(rows_table(f"{len(rows)} import recipes (docs/data.md says where to get each corpus)", rows))


def import_cmd(
    ctx: typer.Context,
    recipe: Annotated[
        str | None, typer.Argument(help="The recipe (see --list), or the first source when --recipe-file is given.")
    ] = None,
    sources: Annotated[
        list[Path] | None,
        typer.Argument(
            help="The source(s): a parquet file or folder of shards, a save_to_disk folder, a hub cache folder "
            "(datasets--org--name), a .json/.jsonl/.csv file, or the corpus's folder. Named sources: --NAME PATH."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="The data folder to write (new, or this import's own: resumes).", callback=out_folder
        ),
    ] = None,
    recipe_file: Annotated[
        Path | None, typer.Option("--recipe-file", help="Your own recipe (YAML or JSON: columns to item fields).")
    ] = None,
    option: Annotated[
        list[str] | None, typer.Option("--option", help="A recipe option, NAME=VALUE (repeatable).")
    ] = None,
    config: Annotated[str | None, typer.Option(help="Hugging Face config to read (a folder holding several).")] = None,
    split: Annotated[str | None, typer.Option(help="Hugging Face split to read (a folder holding several).")] = None,
    encoding: Annotated[str | None, typer.Option(help="Encoding of CSV/JSON tables (default: the recipe's).")] = None,
    limit: Annotated[int | None, typer.Option(help="Read at most this many rows (a first look).", min=1)] = None,
    workers: Annotated[
        int | None,
        typer.Option(help="Threads decoding and writing audio (default: the CPUs, at most 8).", min=1, max=64),
    ] = None,
    list_recipes: Annotated[bool, typer.Option("--list", help="List the recipes and exit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result (or the list) as JSON.")] = False,
) -> None:
    """Import a corpus or a Hugging Face dataset by recipe: manifests by kind, audio/ with SHA-256, dataset.json.

    Nothing is downloaded: the sources are local files. Rows a recipe cannot use are rejected with file, row and
    field, counted in dataset.json and listed in rejected.jsonl; running again into the same folder resumes (audio
    already written and verified is not decoded again). Exits 0 when it imported what it could; 2 (nothing written)
    for an unknown recipe, option or source, a folder another tool wrote, or when every row was rejected.
    """
    from airbench_nb.importing import ImportRequest, load_spec, recipe_for, run_import
    from airbench_nb.importing.mapping import TableRecipe

    if list_recipes:
        _list_recipes(as_json)
        return
    positional, named = _split_sources([str(p) for p in sources or []] + list(ctx.args))
    with refusing(ValueError, FileNotFoundError, OSError):
        if recipe_file is not None:
            spec = load_spec(recipe_file)
            chosen = TableRecipe(spec, recipe_file)
            if recipe is not None:
                positional.insert(0, Path(recipe))
        elif recipe is None:
            raise refuse("name a recipe (airbench-nb import --list shows them) or give --recipe-file")
        else:
            try:
                chosen = recipe_for(recipe)
            except KeyError as exc:
                raise refuse(str(exc.args[0])) from None
        if out is None:
            raise refuse("--out DIR is required: the data folder to write")
        request = ImportRequest(
            recipe=chosen,
            out=out,
            positional=positional,
            named=named,
            options=_options(list(option or [])),
            limit=limit,
            config=config,
            split=split,
            encoding=encoding,
            workers=workers,
        )
        result = run_import(request)
    if as_json:
        payload = {
            "recipe": result.recipe,
            "out": str(result.out),
            "items": result.items,
            "rows": result.rows,
            "rejected": len(result.rejected),
            "rejected_by_field": result.rejected_by_field(),
            "audio_written": result.audio_written,
            "audio_reused": result.audio_reused,
        }
        typer.echo(json.dumps(payload, indent=2))
        return
    kinds = ", ".join(f"{n} {kind}" for kind, n in result.items.items())
    console.print(
        f"{result.recipe}: {result.imported} items ({kinds}) from {result.rows} rows, {len(result.rejected)} rejected; "
        f"audio: {result.audio_written} written, {result.audio_reused} already there"
    )
    if result.rejected:
        shown = [
            {"where": r.where[-60:], "field": r.field, "reason": r.reason[:100]}
            for r in result.rejected[:SHOWN_REJECTIONS]
        ]
        more = len(result.rejected) - len(shown)
        title = "rejected rows" + (f" (first {len(shown)}; all in rejected.jsonl)" if more > 0 else "")
        console.print(rows_table(title, shown))
    manifests = ", ".join(f"{kind}.jsonl" for kind in result.items)
    console.print(f"wrote {result.out}/ ({manifests}, audio/, rejected.jsonl, dataset.json)")
