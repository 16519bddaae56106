"""Miniature copies of UG-Bench's corpora and of AIR-Bench, in their real schemas, for the import recipes' tests.

Each writer makes a few rows in the layout and schema the real corpus has (Hugging Face parquet with its
``huggingface`` schema metadata and ``{bytes, path}`` audio cells; a release's CSV, JSON Lines or list files beside
its clips), with one or two bad rows, and returns what the test compares with: the rows it wrote, good and bad.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

RATE = 8000
"""Sample rate of the miniature clips (Hz)."""

AUDIO_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
"""The Arrow type of a Hugging Face ``Audio`` cell."""


def wav_bytes(seed: int, seconds: float = 0.5, rate: int = RATE) -> bytes:
    """A short wav of a sine and a little noise, different for each seed."""
    t = np.arange(int(rate * seconds)) / rate
    rng = np.random.default_rng(seed)
    samples = 0.3 * np.sin(2 * np.pi * (200 + 40 * seed) * t) + 0.01 * rng.standard_normal(t.size)
    buffer = io.BytesIO()
    sf.write(buffer, samples.astype(np.float32), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def write_wav(path: Path, seed: int) -> Path:
    """Write :func:`wav_bytes` at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(wav_bytes(seed))
    return path


def _value(dtype: str) -> dict[str, Any]:
    return {"dtype": dtype, "_type": "Value"}


def _class_label(names: list[str]) -> dict[str, Any]:
    return {"names": names, "_type": "ClassLabel"}


AUDIO_FEATURE = {"sampling_rate": 16000, "_type": "Audio"}
"""``datasets``' description of an audio column."""


def write_hf_parquet(path: Path, columns: dict[str, pa.Array], features: dict[str, Any]) -> Path:
    """One parquet shard as ``datasets`` writes it: the columns and the features in the schema metadata."""
    table = pa.table(columns)
    table = table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, row_group_size=2)
    return path


def _audio(names: list[str], seeds: list[int]) -> pa.Array:
    return pa.array([{"bytes": wav_bytes(s), "path": n} for n, s in zip(names, seeds, strict=True)], type=AUDIO_TYPE)


# -- LibriSpeech ----------------------------------------------------------------------------------------------------

LIBRISPEECH_ROWS = [
    {"id": "1089-134686-0000", "text": "HE HOPED THERE WOULD BE STEW FOR DINNER", "speaker_id": 1089},
    {"id": "1089-134686-0001", "text": "STUFF IT INTO YOU HIS BELLY COUNSELLED HIM", "speaker_id": 1089},
    {"id": "1089-134686-0002", "text": "", "speaker_id": 1089},
]
"""The rows: the last has an empty reference (rejected)."""


def librispeech(root: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    """``openslr/librispeech_asr``'s parquet (config ``clean``, split ``test``) of ``rows`` (default
    :data:`LIBRISPEECH_ROWS`); returns the dataset folder."""
    rows = LIBRISPEECH_ROWS if rows is None else rows
    ids = [r["id"] for r in rows]
    features = {
        "file": _value("string"),
        "audio": AUDIO_FEATURE,
        "text": _value("string"),
        "speaker_id": _value("int64"),
        "chapter_id": _value("int64"),
        "id": _value("string"),
    }
    write_hf_parquet(
        root / "librispeech_asr" / "clean" / "test-00000-of-00001.parquet",
        {
            "file": [f"{i}.flac" for i in ids],
            "audio": _audio([f"{i}.flac" for i in ids], list(range(len(ids)))),
            "text": [r["text"] for r in rows],
            "speaker_id": pa.array([r["speaker_id"] for r in rows], pa.int64()),
            "chapter_id": pa.array([134686] * len(ids), pa.int64()),
            "id": ids,
        },
        features,
    )
    return root / "librispeech_asr"


# -- FLEURS ---------------------------------------------------------------------------------------------------------

FLEURS_LANG_NAMES = ["en_us", "cmn_hans_cn", "ja_jp", "xx_yy"]
"""The mini's lang_id classes: three FLEURS configs and one that is not FLEURS' (its row is rejected)."""
FLEURS_ROWS = [
    {"id": 1001, "lang": 0, "raw": "The cat sat on the mat.", "language": "English"},
    {"id": 1002, "lang": 1, "raw": "今天天气很好。", "language": "Mandarin Chinese"},
    {"id": 1003, "lang": 2, "raw": "今日はいい天気です。", "language": "Japanese"},
    {"id": 1004, "lang": 3, "raw": "Unknown words.", "language": "Nowhere"},
]
"""The rows: English, Mandarin and Japanese kept; the unknown language rejected."""


def fleurs(root: Path) -> Path:
    """``google/fleurs``' parquet (config ``all``, split ``test``); returns the parquet file."""
    n = len(FLEURS_ROWS)
    paths = [f"{10_000 + k}.wav" for k in range(n)]
    features = {
        "id": _value("int32"),
        "num_samples": _value("int32"),
        "path": _value("string"),
        "audio": AUDIO_FEATURE,
        "transcription": _value("string"),
        "raw_transcription": _value("string"),
        "gender": _class_label(["male", "female", "other"]),
        "lang_id": _class_label(FLEURS_LANG_NAMES),
        "language": _value("string"),
        "lang_group_id": _class_label(["western_european_we", "cjk_cjk"]),
    }
    return write_hf_parquet(
        root / "fleurs" / "all" / "test-00000-of-00001.parquet",
        {
            "id": pa.array([r["id"] for r in FLEURS_ROWS], pa.int32()),
            "num_samples": pa.array([RATE // 2] * n, pa.int32()),
            "path": paths,
            "audio": _audio(paths, list(range(10, 10 + n))),
            "transcription": [r["raw"].lower() for r in FLEURS_ROWS],
            "raw_transcription": [r["raw"] for r in FLEURS_ROWS],
            "gender": pa.array([0, 1, 0, 1], pa.int64()),
            "lang_id": pa.array([r["lang"] for r in FLEURS_ROWS], pa.int64()),
            "language": [r["language"] for r in FLEURS_ROWS],
            "lang_group_id": pa.array([0, 1, 1, 0], pa.int64()),
        },
        features,
    )


# -- CoVoST 2 -------------------------------------------------------------------------------------------------------

COVOST_ROWS = [
    {"id": "common_voice_de_1", "sentence": "Das ist ein Haus.", "translation": "This is a house."},
    {"id": "common_voice_de_2", "sentence": "Ich trinke Wasser.", "translation": "I drink water."},
    {"id": "common_voice_de_3", "sentence": "Guten Morgen.", "translation": ""},
]
"""The rows: the last has an empty translation (rejected)."""


def covost2(root: Path) -> Path:
    """``fixie-ai/covost2``'s parquet of config ``de_en``; returns the shard (the config is in its path)."""
    ids = [r["id"] for r in COVOST_ROWS]
    features = {
        "client_id": _value("string"),
        "file": _value("string"),
        "audio": AUDIO_FEATURE,
        "sentence": _value("string"),
        "translation": _value("string"),
        "id": _value("string"),
    }
    return write_hf_parquet(
        root / "covost2" / "de_en" / "test-00000-of-00001.parquet",
        {
            "client_id": ["c1", "c2", "c3"],
            "file": [f"{i}.mp3" for i in ids],
            "audio": _audio([f"{i}.mp3" for i in ids], [20, 21, 22]),
            "sentence": [r["sentence"] for r in COVOST_ROWS],
            "translation": [r["translation"] for r in COVOST_ROWS],
            "id": ids,
        },
        features,
    )


# -- Clotho ---------------------------------------------------------------------------------------------------------

CLOTHO_ROWS = [
    {"file_name": "Santa Motor.wav", "captions": [f"A car engine revs {k}." for k in range(1, 6)], "audio": True},
    {
        "file_name": "cafe ambience.wav",
        "captions": ["People chat in a café.", "A busy café hums.", "Cups clink.", "Voices murmur.", "A door shuts."],
        "audio": True,
    },
    {"file_name": "lost.wav", "captions": [f"Wind blows {k}." for k in range(1, 6)], "audio": False},
]
"""The rows: the second has non-ASCII captions; the third's clip is missing (rejected)."""


def clotho(root: Path) -> Path:
    """Clotho v2.1's release folder (split ``evaluation``), its CSV in ISO-8859-1; returns the folder."""
    folder = root / "clotho"
    lines = ["file_name,caption_1,caption_2,caption_3,caption_4,caption_5"]
    for k, row in enumerate(CLOTHO_ROWS):
        lines.append(",".join([row["file_name"], *(f'"{c}"' for c in row["captions"])]))
        if row["audio"]:
            write_wav(folder / "clotho_audio_files" / "evaluation" / row["file_name"], 30 + k)
    csv = folder / "clotho_csv_files" / "clotho_captions_evaluation.csv"
    csv.parent.mkdir(parents=True, exist_ok=True)
    csv.write_bytes(("\r\n".join(lines) + "\r\n").encode("iso-8859-1"))
    return folder


# -- AudioCaps ------------------------------------------------------------------------------------------------------

AUDIOCAPS_ROWS = [
    (103549, "7fmOlUlwoNg", 20, "A dog barks repeatedly."),
    (103548, "ZYWCwfCkBp4", 50, "Rain falls on a roof."),
    (103550, "7fmOlUlwoNg", 20, "Barking from a small dog."),
    (103551, "ZYWCwfCkBp4", 50, "Steady rain and thunder."),
    (103552, "7fmOlUlwoNg", 20, "A dog yaps while a man talks."),
    (103553, "nOclipHere", 30, "A bell rings."),
]
"""``audiocap_id, youtube_id, start_time, caption``: three rows of one clip, two of another (interleaved), one of
a clip whose file is missing (rejected)."""


def audiocaps(root: Path) -> tuple[Path, Path]:
    """AudioCaps' ``test.csv`` and a folder of clips ``<youtube_id>_<start_time>.wav``; returns both."""
    folder = root / "audiocaps"
    lines = ["audiocap_id,youtube_id,start_time,caption"]
    lines += [f'{a},{y},{s},"{c}"' for a, y, s, c in AUDIOCAPS_ROWS]
    (folder / "dataset").mkdir(parents=True, exist_ok=True)
    (folder / "dataset" / "test.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_wav(folder / "audio" / "7fmOlUlwoNg_20.wav", 40)
    write_wav(folder / "audio" / "ZYWCwfCkBp4_50.wav", 41)
    return folder / "dataset" / "test.csv", folder / "audio"


# -- IEMOCAP --------------------------------------------------------------------------------------------------------

IEMOCAP_NAMES = ["ang", "hap", "neu", "sad"]
"""The mini's emotion classes (the ClassLabel names)."""
IEMOCAP_ROWS = [("Ses01F_impro01_F000.wav", 2), ("Ses01F_impro01_M001.wav", 0), ("Ses01F_script01_F002.wav", 3),
                ("Ses01F_script01_M003.wav", 7)]  # fmt: skip
"""(audio file, label): the last label is not one of the four classes (rejected)."""


def iemocap(root: Path) -> Path:
    """``Zahra99/IEMOCAP_Audio``'s parquet (split ``session1``): audio and a ClassLabel ``label``; returns the shard."""
    features = {"audio": AUDIO_FEATURE, "label": _class_label(IEMOCAP_NAMES)}
    return write_hf_parquet(
        root / "iemocap" / "data" / "session1-00000-of-00001-04e11ca668d90573.parquet",  # the Hub's hashed name
        {
            "audio": _audio([n for n, _ in IEMOCAP_ROWS], [50, 51, 52, 53]),
            "label": pa.array([label for _, label in IEMOCAP_ROWS], pa.int64()),
        },
        features,
    )


# -- MELD -----------------------------------------------------------------------------------------------------------

MELD_ROWS = [
    (1, "Oh my God!", "Rachel", "surprise", "positive", 0, 0),
    (2, "I'm fine.", "Ross", "neutral", "neutral", 0, 1),
    (3, "Get out!", "Monica", "anger", "negative", 1, 0),
    (4, "Whatever.", "Chandler", "bored", "neutral", 1, 1),
    (5, "No clip here.", "Joey", "joy", "positive", 2, 0),
]
"""``Sr No., Utterance, Speaker, Emotion, Sentiment, Dialogue_ID, Utterance_ID``: the fourth's emotion is not one of
MELD's (rejected), the fifth's clip is missing (rejected)."""


def meld(root: Path) -> tuple[Path, Path]:
    """MELD's ``test_sent_emo.csv`` and a folder of ``dia<D>_utt<U>.wav``; returns both."""
    folder = root / "meld"
    header = "Sr No.,Utterance,Speaker,Emotion,Sentiment,Dialogue_ID,Utterance_ID,Season,Episode,StartTime,EndTime"
    lines = [header]
    for sr, utt, speaker, emotion, sentiment, dia, utt_id in MELD_ROWS:
        lines.append(f'{sr},"{utt}",{speaker},{emotion},{sentiment},{dia},{utt_id},3,19,"00:14:15,055","00:14:17,183"')
        if sr != 5:
            write_wav(folder / "audio" / f"dia{dia}_utt{utt_id}.wav", 60 + sr)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_sent_emo.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "test_sent_emo.csv", folder / "audio"


# -- SLURP ----------------------------------------------------------------------------------------------------------

SLURP_ROWS = [
    {"slurp_id": 13804, "sentence": "wake me up at five am", "intent": "alarm_set", "files": ["a-1-headset.flac",
                                                                                               "a-1.flac"]},
    {"slurp_id": 13805, "sentence": "what is the weather", "intent": "weather_query", "files": ["b-2.flac"]},
    {"slurp_id": 13806, "sentence": "play some jazz", "intent": "play_music", "files": ["c-3.flac"]},
    {"slurp_id": 13807, "sentence": "turn the lights off", "intent": "iot_hue_lightoff", "files": ["d-4.flac"]},
    {"slurp_id": 13808, "sentence": "tell me a joke", "intent": "general_joke", "files": ["missing.flac"]},
]  # fmt: skip
"""The utterances: five intents; the first has two recordings; the last's recording is missing (rejected)."""


def slurp(root: Path) -> tuple[Path, Path]:
    """SLURP's ``dataset/slurp/test.jsonl`` and ``slurp_real/`` (flac); returns both."""
    folder = root / "slurp"
    lines = []
    for k, row in enumerate(SLURP_ROWS):
        recordings = [{"file": f, "wer": 0.0, "ent_wer": 0.0, "status": "correct"} for f in row["files"]]
        entry = {
            "slurp_id": row["slurp_id"],
            "sentence": row["sentence"],
            "sentence_annotation": row["sentence"],
            "intent": row["intent"],
            "action": row["intent"].split("_", 1)[1],
            "tokens": [],
            "scenario": row["intent"].split("_", 1)[0],
            "recordings": recordings,
            "entities": [],
        }
        lines.append(json.dumps(entry))
        for j, name in enumerate(row["files"]):
            if name != "missing.flac":
                path = folder / "slurp_real" / name
                path.parent.mkdir(parents=True, exist_ok=True)
                data, rate = sf.read(io.BytesIO(wav_bytes(70 + 3 * k + j)))
                sf.write(path, data, rate, format="FLAC")
    jsonl = folder / "dataset" / "slurp" / "test.jsonl"
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return jsonl, folder / "slurp_real"


# -- Seed-TTS eval --------------------------------------------------------------------------------------------------

SEED_TTS_LINES = [
    ("common_voice_en_1", "The prompt sentence one.", "prompt-wavs/common_voice_en_1.wav", "Please call Stella."),
    ("common_voice_en_2", "The prompt sentence two.", "prompt-wavs/common_voice_en_2.wav", "Ask her to bring these."),
    ("common_voice_en_3", "The prompt sentence three.", "prompt-wavs/gone.wav", "Six spoons of fresh snow peas."),
]
"""``utt|prompt_text|prompt_wav|text``: the third's prompt wav is missing (rejected)."""


def seed_tts(root: Path) -> Path:
    """Seed-TTS eval's ``en/meta.lst`` with its prompt wavs; returns the list."""
    folder = root / "seedtts_testset" / "en"
    for k, (_, _, wav, _) in enumerate(SEED_TTS_LINES[:2]):
        write_wav(folder / wav, 80 + k)
    (folder / "meta.lst").write_text("\n".join("|".join(line) for line in SEED_TTS_LINES) + "\n", encoding="utf-8")
    return folder / "meta.lst"


# -- AIR-Bench ------------------------------------------------------------------------------------------------------

AIRBENCH_FOUNDATION = [
    {"path": "Ses01F_0.wav", "question": "What emotion is in the speech?", "choice_a": "sad", "choice_b": "happy",
     "choice_c": "angry", "choice_d": "neutral", "answer_gt": "happy", "task_name": "Speaker_Emotion_Recontion",
     "dataset_name": "IEMOCAP", "uniq_id": 101},
    {"path": "gender_1.wav", "question": "What is the gender of the speaker?", "choice_a": "Male",
     "choice_b": "Female", "answer_gt": "female.", "task_name": "Speaker_Gender_Recognition",
     "dataset_name": "common_voice", "uniq_id": 102},
    {"path": "gender_2.wav", "question": "What is the gender of the speaker?", "choice_a": "Male",
     "choice_b": "Female", "answer_gt": "child", "task_name": "Speaker_Gender_Recognition",
     "dataset_name": "common_voice", "uniq_id": 103},
]  # fmt: skip
"""Foundation rows: exact gold, gold matched after folding case and a final period (noted), and a gold that is no
choice (rejected)."""

AIRBENCH_CHAT = [
    {"path": "clip_9.wav", "question": "What happens in the audio?", "answer_gt": "A dog barks at a passing car.",
     "meta_info": "dog barking, car passing", "task_name": "sound_QA", "dataset_name": "Clotho", "uniq_id": 201},
    {"path": "clip_10.wav", "question": "Describe it.", "answer_gt": "Rain.", "meta_info": "rain",
     "task_name": "sound_QA", "dataset_name": "Clotho", "uniq_id": 202},
]  # fmt: skip
"""Chat rows: the second's clip is missing in the release folder (rejected by ``airbench``)."""


def airbench_hub(root: Path) -> Path:
    """``lmms-lab/AIR_bench``'s parquet: Foundation (split ``speech``), Chat (split ``sound``); returns the folder."""
    folder = root / "AIR_bench"
    string = _value("string")
    f_cols = ["path", "question", "choice_a", "choice_b", "choice_c", "choice_d", "answer_gt", "task_name",
              "dataset_name"]  # fmt: skip
    f_features = {**{c: string for c in f_cols}, "uniq_id": _value("int64"), "audio": AUDIO_FEATURE}
    write_hf_parquet(
        folder / "Foundation" / "speech-00000-of-00001.parquet",
        {
            **{c: [r.get(c) for r in AIRBENCH_FOUNDATION] for c in f_cols},
            "uniq_id": pa.array([r["uniq_id"] for r in AIRBENCH_FOUNDATION], pa.int64()),
            "audio": _audio([r["path"] for r in AIRBENCH_FOUNDATION], [90, 91, 92]),
        },
        f_features,
    )
    c_cols = ["path", "question", "answer_gt", "task_name", "dataset_name"]
    c_features = {**{c: string for c in c_cols}, "uniq_id": _value("int64"), "meta_info": string}
    write_hf_parquet(
        folder / "Chat" / "sound-00000-of-00001.parquet",
        {
            **{c: [r[c] for r in AIRBENCH_CHAT] for c in c_cols},
            "uniq_id": pa.array([r["uniq_id"] for r in AIRBENCH_CHAT], pa.int64()),
            "meta_info": [r["meta_info"] for r in AIRBENCH_CHAT],
            "audio": _audio([r["path"] for r in AIRBENCH_CHAT], [93, 94]),
        },
        {**c_features, "audio": AUDIO_FEATURE},
    )
    return folder


def airbench_release(root: Path) -> Path:
    """The official release folder (``qyang1021/AIR-Bench-Dataset``'s layout); the last Chat clip is missing."""
    folder = root / "AIR-Bench-Dataset"
    for benchmark, rows, meta in (
        ("Foundation", AIRBENCH_FOUNDATION, "Foundation_meta.json"),
        ("Chat", AIRBENCH_CHAT, "Chat_meta.json"),
    ):
        (folder / benchmark).mkdir(parents=True, exist_ok=True)
        (folder / benchmark / meta).write_text(json.dumps(rows), encoding="utf-8")
        for k, row in enumerate(rows):
            if row["uniq_id"] != 202:
                write_wav(folder / benchmark / f"{row['task_name']}_{row['dataset_name']}" / row["path"], 95 + k)
    return folder
