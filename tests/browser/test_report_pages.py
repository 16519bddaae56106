"""The landing page of a run, opened in headless chromium as a reader opens it: from the file system, no server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airbench_nb.report_page import FIGURE_CAPTIONS

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[2] / "reports" / "example"


def test_example_landing_page_shows_the_table_and_figures(page, tmp_path):
    index = EXAMPLE / "index.html"
    assert index.is_file(), "reports/example is committed: run `make example` to regenerate it"
    page.goto(index.as_uri())
    assert page.locator("h1").inner_text().startswith("airbench-nb run")
    headers = page.locator("h2").all_inner_texts()
    assert headers[:8] == [
        "What was run", "Warnings", "Main table", "SSEU-Bench", "UG-Bench", "Tiered sound sources",
        "Clustered intervals", "Real models",
    ]  # fmt: skip
    real = page.locator("h2:text('Real models') + p + div.wide > table").inner_text()
    assert "faster-whisper:tiny.en-bundled" in real and "real" in real and "baseline:" not in real
    main = page.locator("h2:text('Main table') + p + div.wide > table")
    rows = main.locator("tbody tr")
    assert rows.count() >= 8  # 4 baselines x 2 protocols
    text = main.inner_text()
    assert "baseline:oracle" in text and "strict" in text and "official" in text
    judges = set(main.locator("tbody tr td:nth-child(2)").all_inner_texts())
    assert judges == {"proxy"}  # named short in its cells, said in full under the table
    provenance = page.locator("h2:text('Main table') + p + div.wide + p.meta").inner_text()
    assert "proxy (embedding similarity, not an LLM)" in provenance
    sseu = page.locator("h2:text('SSEU-Bench') + p + div.wide > table").inner_text()
    assert "faster-whisper:tiny.en-bundled" in sseu and "sseu-cot" in sseu  # the real model's row, every mode
    images = page.locator("figure img")
    assert images.count() >= len(FIGURE_CAPTIONS) - 2  # all of 05's figures but agreement (no labels) at least
    for k in range(images.count()):
        loaded = images.nth(k).evaluate("img => img.complete && img.naturalWidth > 0")
        assert loaded, images.nth(k).get_attribute("src")
    for link in page.locator("a[href]").all():
        href = link.get_attribute("href")
        if href and "://" not in href:
            assert (EXAMPLE / href).is_file(), f"broken link {href}"
    shot = Path(os.environ.get("AIRBENCH_SCREENSHOTS", tmp_path)) / "example-index.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 50_000
