"""Miniature Hugging Face datasets for the import tests: parquet as ``datasets`` writes it, audio synthesized."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

AUDIO_STRUCT = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
"""The Arrow type of a ``datasets`` ``Audio`` column stored undecoded."""


def tone(hz: float = 440.0, sr: int = 16000, seconds: float = 0.25, amplitude: float = 0.3) -> np.ndarray:
    """A sine tone (float32)."""
    t = np.arange(int(sr * seconds)) / sr
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def wav_bytes(hz: float = 440.0, sr: int = 16000, seconds: float = 0.25, fmt: str = "WAV") -> bytes:
    """A tone as the bytes of an audio file (WAV or FLAC)."""
    buffer = io.BytesIO()
    sf.write(buffer, tone(hz, sr, seconds), sr, format=fmt)
    return buffer.getvalue()


def value(dtype: str = "string") -> dict[str, Any]:
    """A ``Value`` feature."""
    return {"dtype": dtype, "_type": "Value"}


def audio_feature(sr: int | None = 16000) -> dict[str, Any]:
    """An ``Audio`` feature."""
    return {"sampling_rate": sr, "_type": "Audio"} if sr else {"_type": "Audio"}


def class_label(names: list[str]) -> dict[str, Any]:
    """A ``ClassLabel`` feature."""
    return {"names": names, "_type": "ClassLabel"}


def write_parquet(
    path: Path, columns: dict[str, list[Any]], features: dict[str, Any], *, row_group_size: int = 2
) -> Path:
    """Write a parquet file as ``datasets`` does: the features in the schema's ``huggingface`` metadata.

    Columns whose feature is ``Audio`` are written as ``{bytes, path}`` structs.
    """
    arrays = {}
    for name, values in columns.items():
        spec = features.get(name, {})
        if spec.get("_type") == "Audio":
            arrays[name] = pa.array(values, type=AUDIO_STRUCT)
        elif spec.get("_type") == "ClassLabel":
            arrays[name] = pa.array(values, type=pa.int64())
        else:
            arrays[name] = pa.array(values)
    table = pa.table(arrays).replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path
