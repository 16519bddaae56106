"""Notebook 01 runs under papermill on the tiny preset, and on an official-layout release."""

from pathlib import Path

import papermill

from airbench_nb.nbresults import read_results

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "01_build_data.ipynb"


def test_builds_tiny(tmp_path):
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        parameters={"preset": "tiny", "run_dir": str(tmp_path)},
        cwd=str(tmp_path),
        kernel_name="python3",
        progress_bar=False,
    )
    results = read_results(out)["build_data"]
    assert results["source"] == "build:tiny" and results["failures"] == 0
    assert results["foundation_tasks"] == 17 and results["chat_tasks"] == 9  # 13 + 4 and 8 + 1 of the kit's own
    assert set(results["chat_categories"]) == {"speech", "sound", "music", "mixed", "multi-turn"}
    # tiny: 6 speech tasks x 1 item x 2 SNRs graded; 1 item of each of the 13 tasks in every rotation
    assert results["graded_items"] == 12 and results["rotated_items"] > 13
    assert results["foundation_items"] == 34
    assert (tmp_path / "data" / "foundation.jsonl").is_file()


def test_imports_official_release_instead(tmp_path, official_release):
    root, expected = official_release
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        parameters={"official_root": str(root), "out_dir": str(tmp_path / "m")},
        cwd=str(tmp_path),
        kernel_name="python3",
        progress_bar=False,
    )
    results = read_results(out)["build_data"]
    assert results["source"] == "official-import"
    assert results["foundation_items"] == expected.foundation_imported
    assert results["failures"] == 4  # rejected rows, counted
