"""Notebook 02 runs headless under papermill with a tiny grid, and its recorded results hold."""

from pathlib import Path

import nbformat
import numpy as np
import papermill
import soundfile as sf

from airbench_nb.nbresults import read_results
from airbench_nb.pipeline import PIPELINE

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "02_mix_and_listen.ipynb"


def test_notebook_02_runs_under_papermill(tmp_path):
    run_dir = tmp_path / "run"
    out = tmp_path / "02_mix_and_listen.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        cwd=str(tmp_path),
        progress_bar=False,
        parameters={
            "run_dir": str(run_dir),
            "n_pairs": 1,
            "background_s": 2.0,
            "snr_grid": [-10, 0, 10],
            "gain_pairs": [[3, -3]],
            "offsets_s": [0.0, 0.5, 9.0],  # 9 s: beyond both clips, recorded as failures
            "listen_count": 1,
            "seed": 1,
        },
    )
    results = read_results(out)["mix_and_listen"]
    assert results["pairs"] == 1 and results["mixes"] == 12
    assert results["written"] == 8 and results["failed"] == 4
    assert results["max_snr_error_db"] < 0.5
    assert results["max_peak"] < 1.0
    assert results["ahead"] == {"meanwhile": 4, "before": 4}
    assert sum(results["louder"].values()) == 8 and results["loudness_units"] == ["LUFS"]
    assert results["browsable_items"] == 8
    mixes = sorted((run_dir / "mix_and_listen" / "mixes").glob("*.flac"))  # lossless, smaller than wav
    assert len(mixes) == 8
    peak = max(np.max(np.abs(sf.read(str(p), dtype="int16")[0].astype(int))) for p in mixes)
    assert peak < 32767
    executed = nbformat.read(str(out), as_version=4)
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    mimes = {m for c in executed.cells for o in c.get("outputs", []) for m in o.get("data", {})}
    assert {"image/png", "text/html"} <= mimes  # static figures and players, headless


def test_notebook_02_is_registered_and_committed_clean():
    assert "02_mix_and_listen" in PIPELINE
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    params = papermill.inspect_notebook(str(NOTEBOOK))
    assert {"data_dir", "run_dir", "snr_grid", "gain_pairs", "offsets_s", "seed"} <= set(params)
    assert all(p["help"] for p in params.values())
