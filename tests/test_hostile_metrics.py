"""Metrics that reward gaming or failure, and one rule for missing audio (issue 29).

- Missing audio is a data defect on every kind: the tiered benchmark leaves such items out of its denominators and
  counts them as unusable, as Foundation does (the oracle keeps recall 1.0 over the usable clips).
- A spoken answer that lists every candidate answer is not right: it is counted as an enumeration.
- Tier D's recall gets its precision and the share of classes named per answer beside it: an answer naming all 25
  classes has recall 1.0 and precision 1/25.
- The events table states the mAP an all-empty answer set gets on the same items (the floor), beside the mAP.

Every expected number is computed by hand in the test.
"""

from __future__ import annotations

from pathlib import Path

from airbench_nb.analysis.tiered_run import tiered_run
from airbench_nb.builders.tiered import source_items
from airbench_nb.judge.run import judge_run_folder
from airbench_nb.manifests import write_manifest
from airbench_nb.records import TIERED_KINDS, SoundSourceItem
from airbench_nb.run_folder import RunFolder
from airbench_nb.runner import infer_run_folder
from airbench_nb.synth.sources import hierarchy
from tests.test_hostile import _wav

# ------------------------------------------------------------------------------------ missing audio: one rule


def _tiered_run_folder(root: Path, clips_per_class: int) -> tuple[RunFolder, list[SoundSourceItem]]:
    """A run folder with ``clips_per_class`` short noise clips of every fine class, asked closed and open."""
    folder = RunFolder(root / "run")
    tree = hierarchy()
    closed, opened = [], []
    for k, fine in enumerate(c.name for c in tree.classes for _ in range(clips_per_class)):
        audio = f"audio/clip{k:03d}.wav"
        _wav(folder.data_dir / audio, seconds=0.1, seed=k)
        item, twin = source_items(tree, fine, uid=f"clip{k:03d}", audio=audio, audio_sha256=None, meta={}, dataset="t")
        closed.append(item)
        opened.append(twin)
    write_manifest(folder.manifest("sound_source"), closed)
    write_manifest(folder.manifest("sound_source_open"), opened)
    return folder, closed


def test_tiered_items_with_missing_audio_are_unusable_not_wrong(tmp_path: Path) -> None:
    folder, closed = _tiered_run_folder(tmp_path, clips_per_class=2)
    assert len(closed) == 50
    # every class keeps one clip: the second clip of each class is deleted (the open twin shares the file)
    seen: set[str] = set()
    deleted = 0
    for item in closed:
        if item.fine in seen:
            (folder.data_dir / item.audio).unlink()
            deleted += 1
        seen.add(item.fine)
    assert deleted == 25
    infer_run_folder(folder, ["baseline:oracle"], kinds=TIERED_KINDS)
    judge_run_folder(folder, ["rule", "sources"], kinds=TIERED_KINDS)
    result = tiered_run(folder)
    data = result.to_json()
    for tier in ("A", "D"):
        oracle = data["tiers"][tier]["baseline:oracle"]
        for granularity in ("coarse", "fine"):
            assert oracle[granularity]["macro_recall"] == 1.0, (tier, granularity, oracle[granularity])
            assert oracle[granularity]["n"] == 25
            assert oracle[granularity]["unanswered"] == 0
        system = f"baseline:oracle · {tier}"
        assert data["unusable"][system] == 25
        assert data["failures"][system] == 0
    assert "missing" in data["unusable_why"]
