"""Items per second of ``airbench-nb import`` on a Hugging Face parquet of 5-10 s clips, and its memory against rows.

Writes a parquet as ``datasets`` does (FLAC cells in an ``Audio`` column, row groups of 64), imports it with a
declarative recipe (decode, optionally resample, write a 16-bit wav durably, SHA-256, validate the item) and prints
the rate against the floor of a bare decode + write of the same cells, then the peak memory (max RSS) of an import of
N rows and of 4N rows in fresh processes: their ratio near 1 says memory is flat in the number of rows.

    .venv/bin/python bench/bench_import.py [--rows 200] [--resample 44100]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

SR = 16000


def _write_parquet(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("audio", pa.struct([("bytes", pa.binary()), ("path", pa.string())])),
            ("text", pa.string()),
        ],
        metadata={
            "huggingface": json.dumps(
                {
                    "info": {
                        "features": {
                            "id": {"dtype": "string", "_type": "Value"},
                            "audio": {"sampling_rate": SR, "_type": "Audio"},
                            "text": {"dtype": "string", "_type": "Value"},
                        }
                    }
                }
            )
        },
    )
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, rows, 64):
            ids, cells, texts = [], [], []
            for k in range(start, min(rows, start + 64)):
                seconds = rng.uniform(5, 10)
                t = np.arange(int(seconds * SR)) / SR
                signal = 0.2 * np.sin(2 * np.pi * rng.uniform(100, 300) * t) + 0.02 * rng.standard_normal(t.size)
                buffer = io.BytesIO()
                sf.write(buffer, signal.astype(np.float32), SR, format="FLAC")
                ids.append(f"utt{k:06d}")
                cells.append({"bytes": buffer.getvalue(), "path": f"utt{k:06d}.flac"})
                texts.append(f"sentence number {k}")
            writer.write_table(pa.table({"id": ids, "audio": cells, "text": texts}, schema=schema))


def _import(source: Path, out: Path, resample: int | None) -> tuple[int, float]:
    from airbench_nb.importing import ImportRequest, TableRecipe, TableSpec, run_import

    spec = TableSpec(
        name="bench",
        kind="transcription",
        dataset="bench",
        uid="id",
        audio="audio",
        question_text="Transcribe the speech.",
        fields={"reference": "text"},
        values={"task": "sseu_transcription"},
        sample_rate=resample,
    )
    t0 = time.perf_counter()
    result = run_import(ImportRequest(recipe=TableRecipe(spec), out=out, positional=[source]))
    return result.imported, time.perf_counter() - t0


def _floor(source: Path, out: Path) -> float:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for batch in pq.ParquetFile(source).iter_batches(batch_size=64, columns=["id", "audio"]):
        for row in batch.to_pylist():
            samples, rate = sf.read(io.BytesIO(row["audio"]["bytes"]), dtype="float32")
            sf.write(out / f"{row['id']}.wav", samples, rate, subtype="PCM_16")
    return time.perf_counter() - t0


def _child(rows: int, folder: Path) -> None:
    source = folder / f"rows{rows}.parquet"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _import(source, folder / f"out{rows}", None)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": rows, "maxrss_kib": after, "grew_kib": after - before}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200, help="rows of the parquet")
    parser.add_argument("--resample", type=int, default=44100, help="also time an import resampling to this rate")
    parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.folder)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        source = folder / "bench.parquet"
        _write_parquet(source, args.rows)
        _write_parquet(folder / "warm.parquet", 8, seed=1)
        _import(folder / "warm.parquet", folder / "warm", None)  # warm up imports, validators and the page cache
        floor = _floor(source, folder / "floor")
        n, plain = _import(source, folder / "plain", None)
        _, resumed = _import(source, folder / "plain", None)
        _, resampled = _import(source, folder / "resampled", args.resample)
        print(f"{n} rows of 5-10 s FLAC at {SR} Hz in one parquet")
        print(f"{'what':<44}{'items/s':>10}{'x floor':>10}")
        for name, seconds in (
            ("bare decode + write (floor)", floor),
            ("import", plain),
            ("import again (resume: verify, no decode)", resumed),
            (f"import resampling to {args.resample} Hz", resampled),
        ):
            print(f"{name:<44}{n / seconds:>10.1f}{seconds / floor:>10.2f}")
        peaks = []
        for rows in (args.rows, 4 * args.rows):
            _write_parquet(folder / f"rows{rows}.parquet", rows)
            done = subprocess.run(
                [sys.executable, __file__, "--child", str(rows), "--folder", str(folder)],
                check=True,
                capture_output=True,
                text=True,
            )
            peaks.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(
            f"peak memory: {peaks[0]['maxrss_kib'] / 1024:.0f} MiB for {peaks[0]['rows']} rows, "
            f"{peaks[1]['maxrss_kib'] / 1024:.0f} MiB for {peaks[1]['rows']} rows "
            f"(ratio {peaks[1]['maxrss_kib'] / peaks[0]['maxrss_kib']:.2f} for 4x the rows)"
        )


if __name__ == "__main__":
    main()
