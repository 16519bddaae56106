"""The committed example report matches what `make example` writes (timestamps, durations, versions aside)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from airbench_nb.example_report import MARKER, comparable, make_example

COMMITTED = Path(__file__).resolve().parent.parent / "reports" / "example"


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


@pytest.mark.slow
def test_committed_example_matches_a_fresh_one(tmp_path):
    fresh = make_example(tmp_path / "example")
    assert _files(fresh) == _files(COMMITTED), "run `make example` and commit reports/example"
    assert sum(p.stat().st_size for p in fresh.rglob("*") if p.is_file()) < 3_000_000  # small, no audio
    assert not [p for p in fresh.rglob("*") if p.suffix in {".wav", ".flac", ".mp3", ".ipynb"}]
    for name in _files(fresh):
        new, old = comparable(fresh / name), comparable(COMMITTED / name)
        if isinstance(new, np.ndarray):
            assert new.shape == old.shape, f"{name}: figure size changed; run `make example`"
            differing = float(np.mean(np.any(new != old, axis=-1)))
            assert differing < 0.01, f"{name}: {differing:.1%} of pixels differ; run `make example`"
        else:
            assert new == old, f"{name} differs from the committed example; run `make example`"
    assert "/tmp" not in (fresh / "analysis" / "analysis.json").read_text()  # no path of the temporary run


def test_make_example_refuses_a_folder_it_did_not_write(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="not an example folder"):
        make_example(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    assert (COMMITTED / MARKER).is_file()


def test_comparable_masks_only_what_varies(tmp_path):
    page = tmp_path / "index.html"
    page.write_text(
        '<p class="meta">started 2026-12-01T13:20:09.799Z · 88 s of notebooks · commit '
        + "a" * 40
        + '-dirty</p><details><summary>Versions</summary><table>x</table></details><td class="num">12.5</td>'
        "<td>93.3 [84.6, 100.0]</td>"
    )
    assert comparable(page) == (
        '<p class="meta">started <time> · <duration> of notebooks · commit <commit></p>'
        "<details><versions><seconds><td>93.3 [84.6, 100.0]</td>"
    )


def test_comparable_reads_long_floats_to_six_digits(tmp_path):
    """Fitted statistics differ in their last digits between CPUs; a change in the sixth digit still shows."""
    one, other, changed = (tmp_path / name for name in ("a.json", "b.json", "c.json"))
    one.write_text('{"slope_ci_low": -0.032417465510355334, "p": 0.854185635198, "n": 12, "share": 0.5}')
    other.write_text('{"slope_ci_low": -0.032417465510355311, "p": 0.854185635187, "n": 12, "share": 0.5}')
    changed.write_text('{"slope_ci_low": -0.032417965510355334, "p": 0.854185635198, "n": 12, "share": 0.5}')
    assert comparable(one) == comparable(other) == '{"slope_ci_low": -0.0324175, "p": 0.854186, "n": 12, "share": 0.5}'
    assert comparable(changed) != comparable(one)
    zero, noise = tmp_path / "z.json", tmp_path / "n.json"
    zero.write_text('{"slope": 3.581531234e-19}')
    noise.write_text('{"slope": -1.040061234e-22}')
    assert comparable(zero) == comparable(noise) == '{"slope": 0}'
