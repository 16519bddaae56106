"""The default run's time: a first pass of every notebook, then a resume with nothing changed.

It runs ``airbench-nb run`` with its defaults (the mini build, the four baselines, the rule and proxy judges) into a
temporary reports folder, then ``--resume`` of that run, and prints each notebook's seconds (from ``run.json``),
the totals, the share each target allows, and which notebooks the resume kept. Targets (issue 18): the first pass
at most 4 minutes of notebooks, the resume under 20 seconds in all. Times are wall-clock on the machine as it is:
other processes sharing its cores slow both.

The data cache is a fresh folder unless ``--cache-dir`` names one (a warm cache skips the build in notebook 01).

    .venv/bin/python bench/bench_pipeline.py
    .venv/bin/python bench/bench_pipeline.py --cache-dir ~/.cache/airbench-nb --keep /tmp/bench-run
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

FIRST_PASS_TARGET_S = 240.0
"""The first pass's notebooks, in seconds (issue 18)."""
RESUME_TARGET_S = 20.0
"""A resume with nothing changed, in seconds, all of it (issue 18)."""


def main() -> int:
    """Run, resume, print; exit 1 when a run failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, help="Shared cache (default: a fresh temporary folder)")
    parser.add_argument("--keep", type=Path, help="Reports folder to keep (default: a temporary one, removed)")
    parser.add_argument("--notebooks", help="Comma-separated stems (default: the whole pipeline)")
    args = parser.parse_args()
    os.environ.setdefault("MPLBACKEND", "Agg")
    from airbench_nb.pipeline import run_pipeline

    with tempfile.TemporaryDirectory(prefix="airbench-bench-") as scratch:
        reports = args.keep or Path(scratch) / "reports"
        cache = args.cache_dir or Path(scratch) / "cache"
        stems = args.notebooks.split(",") if args.notebooks else None
        run = dict(notebooks=stems, run_id="bench", reports_dir=reports, cache_dir=cache)
        t0 = time.perf_counter()
        first = run_pipeline({}, **run)
        first_wall = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = run_pipeline({}, resume=True, **run)
        again_wall = time.perf_counter() - t0

    print(f"{'notebook':<20} {'first pass s':>12} {'resume s':>9}  resume")
    for a, b in zip(first.notebooks, again.notebooks, strict=True):
        kept = "kept" if b.reused else f"executed ({b.status})"
        resumed = 0.0 if b.reused else (b.duration_s or 0.0)
        print(f"{a.name:<20} {a.duration_s or 0.0:>12.1f} {resumed:>9.1f}  {kept}")
    notebooks = sum(n.duration_s or 0.0 for n in first.notebooks)
    print(f"first pass: {notebooks:.1f} s of notebooks ({first_wall:.1f} s in all), status {first.status}")
    print(f"  target {FIRST_PASS_TARGET_S:.0f} s of notebooks: {notebooks / FIRST_PASS_TARGET_S:.2f} of it")
    print(f"resume, nothing changed: {again_wall:.1f} s in all, status {again.status}")
    share, ratio = again_wall / RESUME_TARGET_S, first_wall / again_wall
    print(f"  target {RESUME_TARGET_S:.0f} s: {share:.2f} of it; {ratio:.0f}x faster than the first")
    print("(wall-clock seconds on this machine as it is: other processes share its cores)")
    return 0 if first.status == again.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
