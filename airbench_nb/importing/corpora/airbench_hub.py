"""Import recipes for AIR-Bench from the Hub's parquet (``airbench-hub``) and the official release (``airbench``).

``airbench-hub`` reads ``lmms-lab/AIR_bench``: configs ``Foundation`` and ``Chat``, each split by category
(``speech``, ``sound``, ``music``, ``mixed``, as the shards name them), with the official meta file's columns and
the clip as an ``audio`` cell::

    Foundation: path, question, choice_a, choice_b, choice_c, choice_d, answer_gt, task_name, dataset_name,
                uniq_id, audio
    Chat:       path, question, answer_gt, task_name, dataset_name, uniq_id, meta_info, audio

Without ``--config`` both configs are read (those the folder holds), without ``--split`` every split of each. The
items are those of ``airbench-nb import-official`` (:mod:`airbench_nb.official`): uid ``foundation-<uniq_id>`` or
``chat-<uniq_id>``, the choices ``choice_a`` .. ``choice_d`` (empty cells dropped), the gold found by
:func:`~airbench_nb.official.match_answer` (exact, else after folding case and space, with a note; no match or
several is the row's rejection), the task checked against the official tasks.

``airbench`` wraps the official release folder (``qyang1021/AIR-Bench-Dataset``: ``Foundation/Foundation_meta.json``,
``Chat/Chat_meta.json`` and the clips under ``<Foundation|Chat>/<task>_<dataset>/``) by running
:func:`~airbench_nb.official.import_official` itself, then writing its items into the import's folder: the same
items, rows and rejections (each official rejection is one of the import's, with its meta file, row and field),
with two differences from ``import-official``, which leaves the clips where they are: every clip is copied into
``audio/airbench/`` as a 16-bit wav (a data folder that moves with its clips), and an item whose clip is missing,
empty or corrupt is a rejected row (field ``audio``) instead of an item kept with that status.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from airbench_nb.hf_data import SourceError, SourceRow, config_of, hub_snapshot, split_of
from airbench_nb.importing.corpora.ugbench import AudioJobs, clip_from_file
from airbench_nb.importing.mapping import RowError, TableRecipe, TableSpec, _column, _text
from airbench_nb.importing.recipe import ImportContext, Recipe, RecipeOption, SourceSlot, register_recipe
from airbench_nb.importing.tables import Table, open_table
from airbench_nb.official import BenchmarkImport, _RowError, import_official, match_answer
from airbench_nb.records import CHAT_TASKS, FOUNDATION_TASKS, LETTERS, AudioStatus

logger = logging.getLogger(__name__)

HUB_CONFIGS: tuple[str, ...] = ("Foundation", "Chat")
"""The configs of ``lmms-lab/AIR_bench``, in the order they are read."""

AIRBENCH_HUB = TableSpec(
    name="airbench-hub",
    title="AIR-Bench Foundation and Chat (lmms-lab/AIR_bench parquet)",
    about="https://huggingface.co/datasets/lmms-lab/AIR_bench (parquet; configs Foundation and Chat)",
    kind="foundation",
    dataset="airbench",
    audio="audio",
)
"""The Hub copy's spec: its audio column (the items' fields are the official import's, :class:`AirbenchHubRecipe`)."""


def configs_and_splits(folder: Path) -> dict[str | None, list[str]]:
    """The configs of a folder of parquet shards (or of a hub cache folder) and the splits of each, sorted."""
    if (folder / "refs").is_dir() and (folder / "snapshots").is_dir():
        folder, _ = hub_snapshot(folder)
    found: dict[str | None, set[str]] = {}
    for path in folder.rglob("*.parquet"):
        if not path.is_file() or ".cache" in path.parts:
            continue
        rel = path.relative_to(folder)
        split = split_of(rel)
        if split is not None:
            found.setdefault(config_of(rel), set()).add(split)
    return {config: sorted(splits) for config, splits in found.items()}


class AirbenchHubRecipe(TableRecipe):
    """AIR-Bench from the Hub's parquet (module docstring)."""

    @property  # type: ignore[override]
    def kinds(self) -> tuple[str, ...]:  # noqa: D102 - Recipe.kinds
        return ("foundation", "chat")

    def tables(self, ctx: ImportContext) -> Iterator[Table]:
        """Each config (``--config``, else Foundation and Chat) and each split (``--split``, else all) of SOURCE."""
        for path in ctx.sources["source"]:
            if path.is_file():
                table = open_table(path)
                self._config = ctx.config or self._config_of_columns(table)
                yield table
                continue
            found = configs_and_splits(path)
            configs = [ctx.config] if ctx.config else [c for c in HUB_CONFIGS if c in found]
            if not configs:
                raise SourceError(f"{path}: no config Foundation or Chat (configs: {sorted(map(str, found))})")
            for config in configs:
                splits = [ctx.split] if ctx.split else found.get(config, [])
                for split in splits:
                    self._config = config
                    yield open_table(path, config=config, split=split)

    @staticmethod
    def _config_of_columns(table: Table) -> str:
        columns = table.dataset.columns if table.dataset is not None else []
        return "Foundation" if "choice_a" in columns else "Chat"

    def uid(self, row: SourceRow) -> str:
        """``foundation-<uniq_id>`` or ``chat-<uniq_id>``, as the official import names them."""
        uniq = _text(_column(row, "uniq_id"), "uniq_id")
        if not uniq:
            raise RowError("uniq_id", "empty id")
        return f"{self._config.lower()}-{uniq}"

    def fields(self, ctx: ImportContext, table: Table, row: SourceRow) -> dict[str, Any]:
        """The official import's fields of a Foundation or Chat row."""
        if self._config not in HUB_CONFIGS:
            raise SourceError(f"{table.path}: config {self._config!r} is not Foundation or Chat")
        uniq = _text(_column(row, "uniq_id"), "uniq_id")
        task = _text(_column(row, "task_name"), "task_name")
        tasks = FOUNDATION_TASKS if self._config == "Foundation" else CHAT_TASKS
        if task not in tasks:
            raise RowError("task_name", f"{task!r} is not an official {self._config} task")
        data: dict[str, Any] = {
            "uid": self.uid(row),
            "source_id": uniq,
            "task": task,
            "dataset": _text(_column(row, "dataset_name"), "dataset_name"),
            "question": _text(_column(row, "question"), "question"),
            "meta": {"path": row.values.get("path")},
        }
        answer_gt = _text(_column(row, "answer_gt"), "answer_gt")
        if self._config == "Chat":
            meta_info = _text(_column(row, "meta_info"), "meta_info")
            return {**data, "kind": "chat", "reference": answer_gt, "meta_info": meta_info}
        choices = []
        for letter in LETTERS.lower():
            column = f"choice_{letter}"
            if column not in row.values:
                break
            value = row.values[column]
            if value is not None and str(value).strip():
                choices.append(_text(value, column))
        try:
            answer, note = match_answer(answer_gt, choices)
        except _RowError as exc:
            raise RowError("answer_gt", exc.reason) from None
        data["meta"]["answer_gt"] = answer_gt
        return {**data, "kind": "foundation", "choices": choices, "answer": answer, "notes": [note] if note else []}


class AirbenchOfficialRecipe(Recipe):
    """The official release folder, through :func:`~airbench_nb.official.import_official` (module docstring)."""

    name: ClassVar[str] = "airbench"
    title: ClassVar[str] = "AIR-Bench Foundation and Chat (the official release folder)"
    kinds: ClassVar[tuple[str, ...]] = ("foundation", "chat")
    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot("source", "the release folder, holding Foundation/Foundation_meta.json and Chat/Chat_meta.json"),
    )
    options: ClassVar[tuple[RecipeOption, ...]] = (
        RecipeOption("workers", 4, "threads checking the release's audio (import_official's workers)"),
    )
    about: ClassVar[str] = "https://huggingface.co/datasets/qyang1021/AIR-Bench-Dataset (the release folder)"

    def run(self, ctx: ImportContext) -> None:
        """Run the official import, then hand its items (clips copied), rows and rejections to the writer."""
        root = ctx.source().resolve()
        with tempfile.TemporaryDirectory(prefix="airbench-official-") as scratch:
            report = import_official(root, Path(scratch), workers=int(ctx.options["workers"]))
        with AudioJobs(ctx) as jobs:
            for part in report.parts:
                self._part(ctx, jobs, root, part)

    @staticmethod
    def _part(ctx: ImportContext, jobs: AudioJobs, root: Path, part: BenchmarkImport) -> None:
        """One meta file's rows: its rejections counted, its items' clips copied, each item kept or rejected."""
        if part.file_error:
            ctx.writer.reject(part.meta_file, "file", part.file_error)
        for rejected in part.rejected:
            ctx.writer.count_row()
            uid = f"{part.benchmark.lower()}-{rejected.uniq_id}" if rejected.uniq_id else None
            ctx.writer.reject(
                f"{root / part.meta_file}: row {rejected.index}", rejected.field or "row", rejected.reason, uid=uid
            )
        for item in part.items:
            if ctx.done():
                return
            ctx.writer.count_row()
            where = f"{root / part.meta_file}: {item.uid}"
            if item.audio_status is not AudioStatus.ok:
                status = item.audio_status.value if item.audio_status else "unchecked"
                detail = "; ".join(n for n in item.notes if n.startswith("audio")) or item.audio
                ctx.writer.reject(where, "audio", f"{status}: {detail}", uid=item.uid)
                continue
            data = item.model_dump(mode="json", exclude={"audio_status", "audio_sha256"})
            data["audio"] = ctx.writer.audio_path(item.uid)
            data["meta"] = {**data.get("meta", {}), "release_audio": item.audio}
            kept = ctx.writer.validate(data, where=where)
            if kept is not None:
                jobs.submit(where, kept, partial(clip_from_file, ctx, item.uid, root / item.audio, root))


register_recipe(AirbenchHubRecipe(AIRBENCH_HUB))
register_recipe(AirbenchOfficialRecipe())

__all__ = ["AIRBENCH_HUB", "HUB_CONFIGS", "AirbenchHubRecipe", "AirbenchOfficialRecipe", "configs_and_splits"]
