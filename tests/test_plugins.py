"""Benchmarks of one's own: plugins load in every process of the kit, and item kinds register with clear refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Literal

import pytest
from pydantic import Field

from airbench_nb.manifests import read_manifest
from airbench_nb.records import ITEM_CLASSES, ITEM_KINDS, ItemBase, item_class, kind_name, register_item_kind


def _python(code: str, tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_plugin_named_in_the_environment_registers_on_import_of_the_kit(tmp_path):
    (tmp_path / "hum_plugin.py").write_text(
        "from typing import Any, Literal\n"
        "from pydantic import Field\n"
        "from airbench_nb.records import ItemBase, register_item_kind\n"
        "class HumItem(ItemBase):\n"
        "    kind: Literal['hum'] = 'hum'\n"
        "    meta: dict[str, Any] = Field(default_factory=dict)\n"
        "register_item_kind(HumItem)\n",
        encoding="utf-8",
    )
    code = "import airbench_nb.plugins as p, airbench_nb.records as r; print(p.load_plugins(), r.ITEM_KINDS[-1])"
    done = _python(code, tmp_path, AIRBENCH_NB_PLUGINS=" hum_plugin ,")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['hum_plugin']", "hum"]
    bare = _python(
        "from airbench_nb.records import ITEM_KINDS; print(ITEM_KINDS[-1])", tmp_path, AIRBENCH_NB_PLUGINS=""
    )
    assert bare.stdout.strip() == "mmsu"


def test_a_plugin_that_cannot_be_imported_is_named_with_where_it_was_named(tmp_path):
    done = _python("import airbench_nb", tmp_path, AIRBENCH_NB_PLUGINS="no_such_plugin")
    assert done.returncode != 0
    assert "plugin 'no_such_plugin' (AIRBENCH_NB_PLUGINS) could not be imported: No module named" in done.stderr


class BuzzItem(ItemBase):
    """A kind registered by this test only."""

    kind: Literal["buzz"] = "buzz"
    """Record kind."""
    pitch: int
    """Gold."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Provenance."""


@pytest.fixture
def restore_kinds():
    before = dict(ITEM_CLASSES)
    yield
    ITEM_CLASSES.clear()
    ITEM_CLASSES.update(before)


def test_a_registered_kind_is_read_from_its_manifest_and_listed(tmp_path, restore_kinds):
    manifest = tmp_path / "buzz.jsonl"
    line = '{"kind": "buzz", "uid": "b1", "dataset": "d", "audio": "a.wav", "question": "q", "pitch": 3}\n'
    manifest.write_text(line, encoding="utf-8")
    with pytest.raises(ValueError, match="buzz"):  # not a kind yet: refused, naming the tag
        read_manifest(manifest)
    register_item_kind(BuzzItem)
    assert ITEM_KINDS[-1] == "buzz" and "buzz" in ITEM_KINDS and item_class("buzz") is BuzzItem
    (item,) = read_manifest(manifest)
    assert isinstance(item, BuzzItem) and item.pitch == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text(line.replace('"pitch": 3', '"pitch": "high"'), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: item 'b1': field 'pitch'"):
        read_manifest(bad)


def test_what_is_not_an_item_kind_is_refused_by_name():
    class NoLiteral(ItemBase):
        kind: str = "loose"
        meta: dict[str, Any] = Field(default_factory=dict)

    class NoMeta(ItemBase):
        kind: Literal["nometa"] = "nometa"

    with pytest.raises(TypeError, match=r"NoLiteral is not an item kind: its 'kind' field must be Literal\['loose'\]"):
        register_item_kind(NoLiteral)
    with pytest.raises(TypeError, match="NoMeta is not an item kind: it needs a 'meta' field"):
        kind_name(NoMeta)
    with pytest.raises(TypeError, match="subclass airbench_nb.records.ItemBase"):
        register_item_kind(dict)  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="no item kind 'nope'; registered: foundation, chat"):
        item_class("nope")
    assert "nometa" not in ITEM_KINDS


def test_any_builder_parts_option_is_given_from_the_shell(tmp_path):
    import json

    from typer.testing import CliRunner

    from airbench_nb.cli import app

    runner = CliRunner()
    out = tmp_path / "d"
    args = ["build", "--preset", "tiny", "--task", "sseu_transcription", "--out", str(out)]
    done = runner.invoke(app, [*args, "--option", "sseu_utterances=1"])
    assert done.exit_code == 0, done.output
    assert "transcription.jsonl" in done.output
    assert json.loads((out / "dataset.json").read_text(encoding="utf-8"))["counts"]["sseu_utterances"] == 1
    unknown = runner.invoke(app, [*args, "--option", "zzz=1"])
    assert unknown.exit_code == 2 and "no builder part reads option(s) zzz" in unknown.output
    malformed = runner.invoke(app, [*args, "--option", "zzz"])
    assert malformed.exit_code == 2 and "--option expects NAME=VALUE, got 'zzz'" in malformed.output
