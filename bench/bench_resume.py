"""Resume at size: an ``infer`` of 20,000 items killed half way (SIGKILL), then run again.

It writes ``--items`` short clips and their manifest, starts ``airbench-nb infer`` (the CLI, in its own process)
against the instant loopback server (``tests/instant_server.py``), kills it with SIGKILL once half the responses are
written, and runs the same command again. It prints the seconds from the second command's start to its first new
request, and to its end; the responses kept by the first and asked by the second; and the items lost (no response)
and duplicated (two responses) at the end, and the items that had a response but were asked again. Nothing lost,
nothing duplicated and no answered item asked again is the contract (the requests in flight at the kill wrote
nothing: they are asked again with the rest).

The first process probes (hashes and checks) every clip and keeps the probes in the kit's cache folder, as any
run does; the second reads them back instead of probing every clip again (``--cold`` uses a fresh cache folder
for the second run: the cost of probing everything).

    .venv/bin/python bench/bench_resume.py [--items 20000] [--seconds 1.0] [--concurrency 16] [--cold]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import soundfile as sf

from airbench_nb.manifests import write_manifest
from airbench_nb.records import FoundationItem

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # the server lives in tests/
from tests.instant_server import instant_server, stats  # noqa: E402

SR = 16000


def write_data(folder: Path, n: int, seconds: float) -> Path:
    """``n`` distinct noise clips of ``seconds`` (16-bit PCM wav) and their manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    items = []
    for i in range(n):
        sf.write(folder / f"c{i}.wav", (0.1 * rng.standard_normal(int(SR * seconds))).astype(np.float32), SR)
        items.append(
            FoundationItem(
                uid=f"u{i}",
                dataset="synthetic",
                audio=f"c{i}.wav",
                task="Speaker_Gender_Recognition",
                question=f"Who speaks in clip {i}?",
                choices=["male", "female"],
                answer=i % 2,
            )
        )
    return write_manifest(folder / "foundation.jsonl", items)


def lines_in(path: Path) -> int:
    """Complete lines of a file (0 when absent)."""
    try:
        with open(path, "rb") as handle:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


def uids_in(path: Path) -> Counter[str]:
    """Responses per uid in a responses file (lines that do not parse are not counted)."""
    found: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            found[json.loads(line)["uid"]] += 1
        except (ValueError, KeyError):
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=1.0, help="length of each clip")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--cold", action="store_true", help="resume with a fresh cache folder (no probe kept)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, instant_server() as base_url:
        folder = Path(tmp)
        manifest = write_data(folder / "data", args.items, args.seconds)
        out = folder / "responses.jsonl"
        env = {**os.environ, "AIRBENCH_CACHE": str(folder / "cache")}
        command = [sys.executable, "-m", "airbench_nb.cli", "infer", "--model", f"openai:instant@{base_url}"]
        command += ["--manifest", str(manifest), "--out", str(out), "--concurrency", str(args.concurrency)]

        half = args.items // 2
        t0 = time.time()
        first = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while lines_in(out) < half and first.poll() is None:
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_after = time.time() - t0
        kept = len(uids_in(out))

        stats(base_url, reset=True)
        if args.cold:
            env["AIRBENCH_CACHE"] = str(folder / "cold-cache")
        t1 = time.time()
        second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
        total = time.time() - t1
        seen = stats(base_url)
        if second.returncode != 0:
            raise SystemExit(f"the resumed run failed ({second.returncode}):\n{second.stderr[-2000:]}")
        counts = uids_in(out)
        lost = args.items - len(counts)
        duplicated = sum(1 for n in counts.values() if n > 1)
        to_first = seen["first_at"] - t1 if seen["first_at"] is not None else float("nan")

    how = "cold: no probe kept" if args.cold else "probes kept"
    print(f"infer of {args.items} items ({args.seconds:g} s clips), SIGKILL at half, then resumed ({how})")
    print(f"{'first run killed after':<44}{killed_after:>10.1f} s  ({kept} responses kept)")
    print(f"{'resume: start to first new request':<44}{to_first:>10.2f} s")
    print(f"{'resume: start to end':<44}{total:>10.2f} s  ({seen['chat_requests']} requests)")
    print(f"{'items with a response asked again':<44}{seen['chat_requests'] - (args.items - kept):>10}")
    print(f"{'lost':<44}{lost:>10}")
    print(f"{'duplicated':<44}{duplicated:>10}")


if __name__ == "__main__":
    main()
