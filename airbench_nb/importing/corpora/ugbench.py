"""Import recipes for the corpora behind UG-Bench's tasks (ASR, emotion, translation, captioning, intent, TTS).

=============  ==========================================  ==========================================================
recipe         source                                      items
=============  ==========================================  ==========================================================
librispeech    ``openslr/librispeech_asr`` parquet         ``transcription`` (``sseu_transcription``), reference = text
fleurs         ``google/fleurs`` parquet, one config       ``transcription``, reference = raw_transcription, the
                                                           language from :data:`FLEURS_LANGUAGES` (CER for zh, ja, ...)
covost2        ``fixie-ai/covost2`` parquet, one config    ``translation`` (``speech_translation``): the config
                                                           (``de_en``) gives the languages
clotho         Clotho v2.1's release folder                ``caption`` (``audio_captioning``), 5 references
audiocaps      AudioCaps' CSV and ``--audio DIR``          ``caption``: one item per clip with all its captions
iemocap        ``Zahra99/IEMOCAP_Audio``-style parquet     ``foundation`` ``Speaker_Emotion_Recontion``: every class
meld           MELD's CSV and ``--audio DIR``              ``foundation`` ``Speaker_Emotion_Recontion``: MELD's 7
slurp          SLURP's ``test.jsonl`` and ``--audio DIR``  ``foundation`` ``Speaker_Intent_Classification``: gold + 3
                                                           distractor intents of the file, seeded by the uid
seed-tts       Seed-TTS eval's ``meta.lst``                ``speech_generation`` (``tts``): the text, the prompt wav
=============  ==========================================  ==========================================================

Open-ended items get the question the kit's own UG-Bench build gives their kind (its prompt,
:func:`airbench_nb.prompts.reference_prompt`); the closed-set ones the questions of :data:`EMOTION_QUESTION` and
:data:`INTENT_QUESTION`. Nothing is guessed: a label that is not one of the classes, an unknown FLEURS language,
a missing audio file or an empty reference is a rejected row, counted with its file, row, field and reason.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from airbench_nb.hf_data import SourceError, SourceRow
from airbench_nb.importing.mapping import (
    AudioJobs,
    RowError,
    TableRecipe,
    TableSpec,
    _column,
    _text,
    gold_index,
    read_audio_file,
    resample,
)
from airbench_nb.importing.recipe import ImportContext, Recipe, RecipeOption, SourceSlot, register_recipe
from airbench_nb.importing.tables import Table, open_table
from airbench_nb.importing.writer import WrittenAudio
from airbench_nb.prompts import reference_prompt
from airbench_nb.records import ItemBase, ReferenceItemBase
from airbench_nb.records.checks import LANGUAGE_TAG

logger = logging.getLogger(__name__)

EMOTION_QUESTION = "What emotion does the speaker express?"
"""The question of an imported emotion item (IEMOCAP, MELD)."""
INTENT_QUESTION = "What is the intent of the spoken request?"
"""The question of an imported SLURP item (one of the kit's phrasings of ``Speaker_Intent_Classification``)."""
AUDIO_SUFFIXES: tuple[str, ...] = (".wav", ".flac", ".ogg", ".mp3")
"""Suffixes looked for when a corpus names a clip without its suffix (AudioCaps, MELD), in this order."""

FLEURS_LANGUAGES: dict[str, str] = {
    "af_za": "af", "am_et": "am", "ar_eg": "ar", "as_in": "as", "ast_es": "ast", "az_az": "az", "be_by": "be",
    "bg_bg": "bg", "bn_in": "bn", "bs_ba": "bs", "ca_es": "ca", "ceb_ph": "ceb", "ckb_iq": "ckb",
    "cmn_hans_cn": "zh", "cs_cz": "cs", "cy_gb": "cy", "da_dk": "da", "de_de": "de", "el_gr": "el", "en_us": "en",
    "es_419": "es", "et_ee": "et", "fa_ir": "fa", "ff_sn": "ff", "fi_fi": "fi", "fil_ph": "fil", "fr_fr": "fr",
    "ga_ie": "ga", "gl_es": "gl", "gu_in": "gu", "ha_ng": "ha", "he_il": "he", "hi_in": "hi", "hr_hr": "hr",
    "hu_hu": "hu", "hy_am": "hy", "id_id": "id", "ig_ng": "ig", "is_is": "is", "it_it": "it", "ja_jp": "ja",
    "jv_id": "jv", "ka_ge": "ka", "kam_ke": "kam", "kea_cv": "kea", "kk_kz": "kk", "km_kh": "km", "kn_in": "kn",
    "ko_kr": "ko", "ky_kg": "ky", "lb_lu": "lb", "lg_ug": "lg", "ln_cd": "ln", "lo_la": "lo", "lt_lt": "lt",
    "luo_ke": "luo", "lv_lv": "lv", "mi_nz": "mi", "mk_mk": "mk", "ml_in": "ml", "mn_mn": "mn", "mr_in": "mr",
    "ms_my": "ms", "mt_mt": "mt", "my_mm": "my", "nb_no": "nb", "ne_np": "ne", "nl_nl": "nl", "nso_za": "nso",
    "ny_mw": "ny", "oc_fr": "oc", "om_et": "om", "or_in": "or", "pa_in": "pa", "pl_pl": "pl", "ps_af": "ps",
    "pt_br": "pt", "ro_ro": "ro", "ru_ru": "ru", "sd_in": "sd", "sk_sk": "sk", "sl_si": "sl", "sn_zw": "sn",
    "so_so": "so", "sr_rs": "sr", "sv_se": "sv", "sw_ke": "sw", "ta_in": "ta", "te_in": "te", "tg_tj": "tg",
    "th_th": "th", "tr_tr": "tr", "uk_ua": "uk", "umb_ao": "umb", "ur_pk": "ur", "uz_uz": "uz", "vi_vn": "vi",
    "wo_sn": "wo", "xh_za": "xh", "yo_ng": "yo", "yue_hant_hk": "yue", "zu_za": "zu",
}  # fmt: skip
"""FLEURS' 102 configs (``lang_id`` names) to the language of their speech: ISO 639-1, else ISO 639-3 where the
language has no two-letter code (``ast``, ``ceb``, ``ckb``, ``fil``, ``kam``, ``kea``, ``luo``, ``nso``, ``umb``,
``yue``); Mandarin (``cmn_hans_cn``) is ``zh``. A config not listed is a rejected row, never guessed."""

IEMOCAP_WORDS: dict[str, str] = {
    "ang": "angry",
    "hap": "happy",
    "exc": "excited",
    "neu": "neutral",
    "sad": "sad",
    "fru": "frustrated",
    "sur": "surprised",
    "fea": "fearful",
    "dis": "disgusted",
    "oth": "other",
}
"""IEMOCAP's three-letter emotion codes as the words the choices show; a class name not listed is shown as given."""

MELD_EMOTIONS: tuple[str, ...] = ("neutral", "surprise", "fear", "sadness", "joy", "disgust", "anger")
"""MELD's seven emotion classes, as its ``Emotion`` column writes them: the choices of every MELD item."""

SEED_TTS_LANGUAGES: frozenset[str] = frozenset({"en", "zh"})
"""The languages of Seed-TTS eval's lists, named by the list's folder (``en/meta.lst``, ``zh/meta.lst``)."""


def _prompted(item: ItemBase) -> ItemBase:
    """The item with the question the kit's UG-Bench build gives its kind (its prompt)."""
    if isinstance(item, ReferenceItemBase):
        return item.model_copy(update={"question": reference_prompt(item)})  # type: ignore[arg-type]
    return item


def clip_from_file(ctx: ImportContext, uid: str, path: Path, root: Path, rate: int | None = None) -> WrittenAudio:
    """The clip of ``uid``: found written by an earlier run, else decoded from ``path`` and written.

    The file must lie under ``root``; it is resampled to ``rate`` when one is given.

    Raises:
        RowError: For a path outside ``root``, or a missing, oversized or undecodable file (field ``audio``).
    """
    written = ctx.writer.existing(uid)
    if written is not None:
        return written
    samples, got = read_audio_file(path, root)
    samples, got = resample(samples, got, rate)
    return ctx.writer.write_audio(uid, samples, got)


class UgRecipe(TableRecipe):
    """A table recipe whose reference items get their kind's prompt as question (module docstring)."""

    def fields(self, ctx: ImportContext, table: Table, row: SourceRow) -> dict[str, Any]:
        """The spec's fields, with an empty question when the spec names none (set from the prompt once valid)."""
        data = super().fields(ctx, table, row)
        data.setdefault("question", "")
        return data

    def check_row(self, ctx: ImportContext, table: Table, row: SourceRow) -> ItemBase | None:
        """The row's item, checked (:meth:`TableRecipe.check_row`), with its kind's prompt as question."""
        item = super().check_row(ctx, table, row)
        return _prompted(item) if item is not None else None


# -- LibriSpeech ----------------------------------------------------------------------------------------------------

LIBRISPEECH = TableSpec(
    name="librispeech",
    title="LibriSpeech ASR (openslr/librispeech_asr parquet)",
    about="https://huggingface.co/datasets/openslr/librispeech_asr (parquet; e.g. config clean, split test)",
    kind="transcription",
    dataset="librispeech",
    uid="id",
    uid_prefix="librispeech-",
    audio="audio",
    fields={"reference": "text"},
    values={"task": "sseu_transcription", "language": "en"},
    meta=["speaker_id", "chapter_id", "file"],
)
"""LibriSpeech: one transcription item per utterance, its reference the ``text`` as given (upper case, no
punctuation: scoring normalises both sides)."""


# -- FLEURS ---------------------------------------------------------------------------------------------------------

FLEURS = TableSpec(
    name="fleurs",
    title="FLEURS ASR (google/fleurs parquet, one config)",
    about="https://huggingface.co/datasets/google/fleurs (parquet; --config en_us, cmn_hans_cn, ja_jp, ...)",
    kind="transcription",
    dataset="fleurs",
    audio="audio",
    fields={"reference": "raw_transcription"},
    values={"task": "sseu_transcription"},
    meta=["id", "gender", "language", "transcription"],
)
"""FLEURS: one transcription item per recording; reference ``raw_transcription`` (cased, punctuated)."""


class FleursRecipe(UgRecipe):
    """FLEURS: the language of each row from its ``lang_id`` class name, else the config (:data:`FLEURS_LANGUAGES`)."""

    def _config(self, table: Table, row: SourceRow) -> str:
        names = table.class_names("lang_id")
        value = row.values.get("lang_id")
        if names is not None and isinstance(value, int) and not isinstance(value, bool):
            if not 0 <= value < len(names):
                raise RowError("lang_id", f"class {value} is not one of the {len(names)} lang_id classes")
            return names[value]
        if isinstance(value, str) and value.strip():
            return value.strip()
        config = table.dataset.config if table.dataset is not None else None
        if config:
            return config
        raise RowError("lang_id", "no lang_id class name and no config to read the language from (give --config)")

    def uid(self, row: SourceRow) -> str:
        """``fleurs-<id>-<recording>``: FLEURS repeats a sentence's ``id`` for each speaker who read it."""
        sentence = _text(_column(row, "id"), "id")
        cell = row.values.get("audio")
        path = cell.get("path") if isinstance(cell, dict) else None
        recording = Path(str(path)).stem if path else f"{row.file.stem}-{row.row}"
        return f"fleurs-{sentence}-{recording}"

    def fields(self, ctx: ImportContext, table: Table, row: SourceRow) -> dict[str, Any]:
        """The spec's fields and the row's language (an unknown FLEURS config is the row's rejection)."""
        data = super().fields(ctx, table, row)
        config = self._config(table, row)
        if config not in FLEURS_LANGUAGES:
            raise RowError("lang_id", f"unknown FLEURS language {config!r} (not one of FLEURS' 102 configs)")
        data["language"] = FLEURS_LANGUAGES[config]
        data["meta"] = {**data.get("meta", {}), "fleurs_config": config}
        return data


# -- CoVoST 2 -------------------------------------------------------------------------------------------------------

COVOST2 = TableSpec(
    name="covost2",
    title="CoVoST 2 speech translation (fixie-ai/covost2 parquet, one config)",
    about="https://huggingface.co/datasets/fixie-ai/covost2 (parquet; --config de_en, en_de, ...)",
    kind="translation",
    dataset="covost2",
    uid="id",
    uid_prefix="covost2-",
    audio="audio",
    fields={"source_text": "sentence", "references": "translation"},
    list_fields=["references"],
    values={"task": "speech_translation"},
    meta=["client_id", "file"],
)
"""CoVoST 2: one translation item per clip; ``sentence`` is the source text, ``translation`` the one reference."""

COVOST_CONFIG = re.compile(r"^([A-Za-z]{2,3}(?:-[A-Za-z]{2})?)_([A-Za-z]{2,3}(?:-[A-Za-z]{2})?)$")
"""A CoVoST 2 config: ``<source>_<target>`` (``de_en``, ``en_zh-CN``, ``sv-SE_en``)."""


def covost_languages(config: str) -> tuple[str, str]:
    """The source and target languages of a CoVoST 2 config (``de_en`` -> ``("de", "en")``).

    Raises:
        ValueError: For a name that is not ``<source>_<target>`` of two language tags.
    """
    match = COVOST_CONFIG.fullmatch(config)
    if not match or not all(LANGUAGE_TAG.fullmatch(part) for part in match.groups()):
        raise ValueError(f"{config!r} is not a CoVoST 2 config (<source>_<target>, e.g. de_en)")
    return match.group(1), match.group(2)


class CovostRecipe(UgRecipe):
    """CoVoST 2: the languages from the config, given by ``--config`` or found in the source's path."""

    def _languages(self, ctx: ImportContext, table: Table) -> tuple[str, str]:
        named = ctx.config or (table.dataset.config if table.dataset is not None else None)
        if named:
            return covost_languages(named)
        for part in reversed(table.path.resolve().parts):
            if COVOST_CONFIG.fullmatch(part):
                return covost_languages(part)
        raise ValueError(f"{table.path}: no CoVoST 2 config (de_en, ...) in the path; give it with --config")

    def tables(self, ctx: ImportContext) -> Iterator[Table]:
        """The source's tables, each with its languages (a source without a config is refused before any row)."""
        for table in super().tables(ctx):
            self._pair = self._languages(ctx, table)
            yield table

    def fields(self, ctx: ImportContext, table: Table, row: SourceRow) -> dict[str, Any]:
        """The spec's fields and the config's languages."""
        data = super().fields(ctx, table, row)
        data["source_language"], data["target_language"] = self._pair
        return data


# -- Clotho ---------------------------------------------------------------------------------------------------------

CLOTHO = TableSpec(
    name="clotho",
    title="Clotho v2.1 audio captioning (the release folder)",
    about="https://zenodo.org/records/4783391 (Clotho v2.1: clotho_csv_files/ and clotho_audio_files/)",
    kind="caption",
    dataset="clotho",
    encoding="iso-8859-1",
    uid="file_name",
    uid_prefix="clotho-",
    audio="file_name",
    fields={"references": [f"caption_{k}" for k in range(1, 6)]},
    values={"task": "audio_captioning"},
)
"""Clotho: one caption item per clip, its five captions the references; the captions CSV is ISO-8859-1."""


class ClothoRecipe(UgRecipe):
    """Clotho: SOURCE is the release folder; ``--option split=`` picks the captions file and the audio folder."""

    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot("source", "Clotho v2.1's folder, holding clotho_csv_files/ and clotho_audio_files/<split>/"),
    )
    options: ClassVar[tuple[RecipeOption, ...]] = (
        RecipeOption("split", "evaluation", "the split: development, validation or evaluation"),
    )

    def tables(self, ctx: ImportContext) -> Iterator[Table]:
        """``clotho_csv_files/clotho_captions_<split>.csv`` of the release folder."""
        split = str(ctx.options["split"])
        if not re.fullmatch(r"[a-z_]+", split):
            raise ValueError(f"clotho: split {split!r} is not a Clotho split (development, validation, evaluation)")
        self._split = split
        csv = ctx.source() / "clotho_csv_files" / f"clotho_captions_{split}.csv"
        if not csv.is_file():
            raise FileNotFoundError(f"{csv}: no such file (is {ctx.source()} Clotho v2.1's folder?)")
        yield open_table(csv, encoding=ctx.encoding or self.spec.encoding)

    def audio_root(self, table: Table, row: SourceRow) -> Path:
        """``clotho_audio_files/<split>`` of the release folder."""
        return table.root.parent / "clotho_audio_files" / self._split

    def uid(self, row: SourceRow) -> str:
        """``clotho-<split>-<file name without .wav>``."""
        name = _text(_column(row, "file_name"), "file_name")
        if not name:
            raise RowError("file_name", "empty file name")
        return f"clotho-{self._split}-{Path(name).stem}"


# -- AudioCaps ------------------------------------------------------------------------------------------------------


def find_clip(folder: Path, stem: str) -> Path | None:
    """The clip ``<stem>.<suffix>`` in ``folder`` (:data:`AUDIO_SUFFIXES`, in order), or None."""
    for suffix in AUDIO_SUFFIXES:
        path = folder / f"{stem}{suffix}"
        if path.is_file():
            return path
    return None


class AudioCapsRecipe(Recipe):
    """AudioCaps: the rows of a clip (``youtube_id``, ``start_time``) become one item with all its captions."""

    name: ClassVar[str] = "audiocaps"
    title: ClassVar[str] = "AudioCaps audio captioning (its CSV and a folder of clips)"
    kinds: ClassVar[tuple[str, ...]] = ("caption",)
    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot("source", "AudioCaps' CSV (test.csv: audiocap_id, youtube_id, start_time, caption)"),
        SourceSlot("audio", "the folder of clips named <youtube_id>_<start_time>.wav (or .flac, .ogg, .mp3)"),
    )
    about: ClassVar[str] = "https://github.com/cdjkim/audiocaps (dataset/test.csv; the clips fetched from YouTube)"

    def run(self, ctx: ImportContext) -> None:
        """Group the rows by clip (first appearance order), then write one item per clip."""
        table = open_table(ctx.source(), encoding=ctx.encoding or "utf-8")
        clips: dict[str, list[tuple[SourceRow, str]]] = {}
        for row in table.rows():
            if ctx.limit is not None and ctx.writer.result.rows >= ctx.limit:
                break
            ctx.writer.count_row()
            try:
                stem = f"{_text(_column(row, 'youtube_id'), 'youtube_id')}_{self._start(row)}"
                caption = _text(_column(row, "caption"), "caption")
                if not caption:
                    raise RowError("caption", "empty caption")
                _text(_column(row, "audiocap_id"), "audiocap_id")
            except RowError as exc:
                ctx.writer.reject(row.where, exc.field, exc.reason)
                continue
            clips.setdefault(stem, []).append((row, caption))
        folder = ctx.source("audio")
        with AudioJobs(ctx) as jobs:
            for stem, rows in clips.items():
                self._clip(ctx, jobs, folder, stem, rows)

    def _clip(
        self, ctx: ImportContext, jobs: AudioJobs, folder: Path, stem: str, rows: list[tuple[SourceRow, str]]
    ) -> None:
        """One item of a clip's rows (all its captions, in file order), its clip written by ``jobs``."""
        first = rows[0][0]
        uid = f"audiocaps-{stem}"
        data = {
            "kind": "caption",
            "task": "audio_captioning",
            "dataset": "audiocaps",
            "uid": uid,
            "source_id": stem,
            "question": "",
            "audio": ctx.writer.audio_path(uid),
            "references": [caption for _, caption in rows],
            "meta": {"audiocap_ids": [str(r.values["audiocap_id"]).strip() for r, _ in rows]},
        }
        item = ctx.writer.validate(data, where=first.where)
        if item is not None:
            jobs.submit(first.where, _prompted(item), partial(self._audio, ctx, folder, stem, uid))

    @staticmethod
    def _start(row: SourceRow) -> str:
        text = _text(_column(row, "start_time"), "start_time")
        if not re.fullmatch(r"\d+", text):
            raise RowError("start_time", f"{text!r} is not a whole number of seconds")
        return text

    @staticmethod
    def _audio(ctx: ImportContext, folder: Path, stem: str, uid: str) -> WrittenAudio:
        written = ctx.writer.existing(uid)
        if written is not None:
            return written
        path = find_clip(folder, stem)
        if path is None:
            raise RowError("audio", f"no clip {stem}.* ({', '.join(AUDIO_SUFFIXES)}) in {folder}")
        return clip_from_file(ctx, uid, path, folder)


# -- emotion: IEMOCAP and MELD ----------------------------------------------------------------------------------------

IEMOCAP = TableSpec(
    name="iemocap",
    title="IEMOCAP emotion (Zahra99/IEMOCAP_Audio-style parquet with a ClassLabel emotion column)",
    about="https://huggingface.co/datasets/Zahra99/IEMOCAP_Audio (parquet; sessions as splits: --split session1)",
    kind="foundation",
    dataset="iemocap",
    audio="audio",
    question_text=EMOTION_QUESTION,
    choices_feature="label",
    answer="label",
    answer_format="index",
    values={"task": "Speaker_Emotion_Recontion"},
)
"""IEMOCAP: one single-choice item per utterance; the choices every class of the label column, as words."""


class IemocapRecipe(TableRecipe):
    """IEMOCAP: the choices are the ClassLabel's names as words (:data:`IEMOCAP_WORDS`), the gold the row's class."""

    options: ClassVar[tuple[RecipeOption, ...]] = (
        RecipeOption("label_column", "", "the ClassLabel emotion column (default: the dataset's one ClassLabel)"),
    )

    def tables(self, ctx: ImportContext) -> Iterator[Table]:
        """The source's tables, their emotion column found (the one ClassLabel column, or the one named)."""
        for table in super().tables(ctx):
            named = str(ctx.options.get("label_column") or "")
            labels = [c for c in table.features if table.class_names(c) is not None]
            if named:
                if named not in labels:
                    raise SourceError(f"{table.path}: {named!r} is not a ClassLabel column (those: {labels})")
                self._label = named
            elif len(labels) == 1:
                self._label = labels[0]
            else:
                raise SourceError(
                    f"{table.path}: {len(labels)} ClassLabel columns ({labels}); name the emotion one with "
                    "--option label_column=NAME"
                )
            yield table

    def choices(self, table: Table, row: SourceRow) -> list[str] | None:
        """The label column's class names, as words."""
        names = table.class_names(self._label) or []
        return [IEMOCAP_WORDS.get(name.strip().lower(), name.strip()) for name in names]

    def fields(self, ctx: ImportContext, table: Table, row: SourceRow) -> dict[str, Any]:
        """The item: every class a choice, the row's class the gold (an index out of the classes is rejected)."""
        spec = self.spec
        choices = self.choices(table, row) or []
        data: dict[str, Any] = {
            "kind": spec.kind,
            "dataset": spec.dataset,
            "uid": self.uid(row),
            "question": spec.question_text,
            "choices": choices,
            "answer": gold_index(_column(row, self._label), choices, "index", self._label),
            **spec.values,
        }
        data["meta"] = {"label": table.class_names(self._label)[data["answer"]]}  # type: ignore[index]
        return data

    def uid(self, row: SourceRow) -> str:
        """``iemocap-<utterance>`` from the audio cell's file name, else ``iemocap-<shard>-<row>``."""
        cell = row.values.get(self.spec.audio)
        path = cell.get("path") if isinstance(cell, dict) else None
        return f"iemocap-{Path(str(path)).stem}" if path else f"iemocap-{row.file.stem}-{row.row}"


class MeldRecipe(TableRecipe):
    """MELD: the CSV's ``Emotion`` is the gold among :data:`MELD_EMOTIONS`; clips ``dia<D>_utt<U>.*`` in --audio."""

    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot("source", "MELD's CSV (test_sent_emo.csv)"),
        SourceSlot("audio", "the folder of clips dia<D>_utt<U>.wav (MELD's mp4 converted: docs/data.md)"),
    )

    def choices(self, table: Table, row: SourceRow) -> list[str] | None:
        """MELD's seven emotions."""
        return list(MELD_EMOTIONS)

    def uid(self, row: SourceRow) -> str:
        """``meld-dia<D>_utt<U>``."""
        return f"meld-{self._stem(row)}"

    @staticmethod
    def _stem(row: SourceRow) -> str:
        parts = []
        for column in ("Dialogue_ID", "Utterance_ID"):
            text = _text(_column(row, column), column)
            if not re.fullmatch(r"\d+", text):
                raise RowError(column, f"{text!r} is not a whole number")
            parts.append(text)
        return f"dia{parts[0]}_utt{parts[1]}"

    def tables(self, ctx: ImportContext) -> Iterator[Table]:
        """The CSV, the clips' folder (``--audio``) kept for :meth:`decode`."""
        self._folder = ctx.source("audio")
        yield from super().tables(ctx)

    def decode(self, table: Table, row: SourceRow) -> tuple[np.ndarray, int]:
        """The clip ``dia<D>_utt<U>.*`` of the audio folder."""
        stem = self._stem(row)
        path = find_clip(self._folder, stem)
        if path is None:
            raise RowError("audio", f"no clip {stem}.* ({', '.join(AUDIO_SUFFIXES)}) in {self._folder}")
        return read_audio_file(path, self._folder)


MELD = TableSpec(
    name="meld",
    title="MELD emotion (its CSV and a folder of clips)",
    about="https://affective-meld.github.io/ (MELD.Raw: test_sent_emo.csv and output_repeated_splits_test/)",
    kind="foundation",
    dataset="meld",
    audio="Utterance_ID",  # the clip is dia<Dialogue_ID>_utt<Utterance_ID>.* (MeldRecipe.decode)
    question_text=EMOTION_QUESTION,
    answer="Emotion",
    answer_format="text",
    values={"task": "Speaker_Emotion_Recontion"},
    meta=["Sr No.", "Utterance", "Speaker", "Sentiment", "Season", "Episode", "StartTime", "EndTime"],
)
"""MELD: one single-choice item per utterance, its choices MELD's seven emotions."""


# -- SLURP ----------------------------------------------------------------------------------------------------------


def seeded_rng(uid: str) -> np.random.Generator:
    """A generator seeded by an item's uid (the same draws on every machine and run)."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(uid.encode("utf-8")).digest()[:8], "big"))


class SlurpRecipe(Recipe):
    """SLURP intents as AIR-Bench asks them: the gold intent and 3 distractors of the file's intents, seeded."""

    name: ClassVar[str] = "slurp"
    title: ClassVar[str] = "SLURP intent classification (test.jsonl and slurp_real/)"
    kinds: ClassVar[tuple[str, ...]] = ("foundation",)
    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot("source", "SLURP's dataset/slurp/test.jsonl"),
        SourceSlot("audio", "SLURP's slurp_real/ folder (the recordings, flac)"),
    )
    options: ClassVar[tuple[RecipeOption, ...]] = (
        RecipeOption("per", "recording", "one item per 'recording' (every one), or per 'utterance' (its first)"),
    )
    about: ClassVar[str] = "https://github.com/pswietojanski/slurp (dataset/slurp/test.jsonl; audio slurp_real.tar.gz)"

    def run(self, ctx: ImportContext) -> None:
        """Read the file's intents, then one item per recording (or utterance)."""
        per = str(ctx.options["per"])
        if per not in {"recording", "utterance"}:
            raise ValueError(f"slurp: option per is 'recording' or 'utterance', got {per!r}")
        table = open_table(ctx.source(), encoding=ctx.encoding or "utf-8")
        intents = sorted(
            {str(row.values["intent"]).strip() for row in table.rows() if str(row.values.get("intent") or "").strip()}
        )
        folder = ctx.source("audio")
        with AudioJobs(ctx) as jobs:
            for row in table.rows():
                if ctx.done():
                    break
                ctx.writer.count_row()
                try:
                    self._row(ctx, jobs, row, intents, folder, per)
                except RowError as exc:
                    ctx.writer.reject(row.where, exc.field, exc.reason, uid=self._uid_of(row))

    @staticmethod
    def _uid_of(row: SourceRow, recording: str | None = None) -> str | None:
        slurp_id = row.values.get("slurp_id")
        if slurp_id is None or isinstance(slurp_id, (dict, list)):
            return None
        return f"slurp-{slurp_id}" + (f"-{Path(recording).stem}" if recording else "")

    def _row(
        self, ctx: ImportContext, jobs: AudioJobs, row: SourceRow, intents: list[str], folder: Path, per: str
    ) -> None:
        _text(_column(row, "slurp_id"), "slurp_id")
        gold = _text(_column(row, "intent"), "intent")
        if not gold:
            raise RowError("intent", "empty intent")
        others = [i for i in intents if i != gold]
        if len(others) < 3:
            raise RowError("intent", f"the file has {len(intents)} intents; 3 distractors need at least 4")
        recordings = _column(row, "recordings")
        if not isinstance(recordings, list) or not recordings:
            raise RowError("recordings", "no recordings")
        files = []
        for entry in recordings if per == "recording" else recordings[:1]:
            name = entry.get("file") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name.strip():
                raise RowError("recordings", f"a recording without a file: {entry!r}")
            files.append(name.strip())
        for index, name in enumerate(files):
            uid = self._uid_of(row, name if per == "recording" else None)
            assert uid is not None
            where = row.where if len(files) == 1 else f"{row.where} recording {index}"
            rng = seeded_rng(uid)
            picked = [others[i] for i in rng.choice(len(others), size=3, replace=False)]
            choices = [gold, *picked]
            order = [int(i) for i in rng.permutation(4)]
            choices = [choices[i] for i in order]
            data = {
                "kind": "foundation",
                "task": "Speaker_Intent_Classification",
                "dataset": "slurp",
                "uid": uid,
                "source_id": str(row.values["slurp_id"]),
                "question": INTENT_QUESTION,
                "choices": choices,
                "answer": choices.index(gold),
                "audio": ctx.writer.audio_path(uid),
                "meta": {"sentence": row.values.get("sentence"), "recording": name, "intent": gold},
            }
            item = ctx.writer.validate(data, where=where)
            if item is not None:
                jobs.submit(where, item, partial(clip_from_file, ctx, uid, folder / name, folder))


# -- Seed-TTS eval --------------------------------------------------------------------------------------------------


class SeedTtsRecipe(Recipe):
    """Seed-TTS eval's ``meta.lst`` (``utt|prompt_text|prompt_wav|text``): one ``tts`` item per line."""

    name: ClassVar[str] = "seed-tts"
    title: ClassVar[str] = "Seed-TTS eval (meta.lst and its prompt wavs)"
    kinds: ClassVar[tuple[str, ...]] = ("speech_generation",)
    slots: ClassVar[tuple[SourceSlot, ...]] = (
        SourceSlot("source", "a Seed-TTS eval list (en/meta.lst or zh/meta.lst; prompt wavs relative to its folder)"),
    )
    options: ClassVar[tuple[RecipeOption, ...]] = (
        RecipeOption("language", "", "the texts' language (default: the list's folder name, en or zh)"),
        RecipeOption("sample_rate", 0, "resample the prompt wavs to this rate (Hz); 0 keeps each file's rate"),
    )
    about: ClassVar[str] = "https://github.com/BytedanceSpeech/seed-tts-eval (seedtts_testset: en/, zh/)"

    def run(self, ctx: ImportContext) -> None:
        """Read the list line by line; each line's prompt wav is decoded (or found written by an earlier run)."""
        path = ctx.source()
        language = str(ctx.options["language"] or path.parent.name)
        if language not in SEED_TTS_LANGUAGES and not ctx.options["language"]:
            raise ValueError(f"seed-tts: the folder of {path} names no language (en, zh): give --option language=")
        if not LANGUAGE_TAG.fullmatch(language):
            raise ValueError(f"seed-tts: option language {language!r} is not a language tag")
        rate = int(ctx.options["sample_rate"]) or None
        raw = path.read_bytes()
        try:
            text = raw.decode(ctx.encoding or "utf-8")
        except UnicodeDecodeError as exc:
            encoding = ctx.encoding or "utf-8"
            raise SourceError(f"{path}: not {encoding} text (byte {exc.start}); give --encoding") from None
        with AudioJobs(ctx) as jobs:
            for lineno, raw_line in enumerate(text.split("\n"), start=1):  # "\n" only: not U+2028 in a text
                line = raw_line.removesuffix("\r")
                if not line.strip():
                    continue
                if ctx.done():
                    break
                ctx.writer.count_row()
                where = f"{path}:{lineno}"
                try:
                    self._line(ctx, jobs, path.parent, line, where, language, rate)
                except RowError as exc:
                    ctx.writer.reject(where, exc.field, exc.reason)

    @staticmethod
    def _line(
        ctx: ImportContext, jobs: AudioJobs, root: Path, line: str, where: str, language: str, rate: int | None
    ) -> None:
        parts = line.split("|")
        if len(parts) != 4:
            raise RowError("line", f"{len(parts)} fields; a line is utt|prompt_text|prompt_wav|text")
        utt, prompt_text, prompt_wav, target = (p.strip() for p in parts)
        if not utt:
            raise RowError("utt", "empty id")
        uid = f"seed-tts-{language}-{utt}"
        data = {
            "kind": "speech_generation",
            "task": "tts",
            "dataset": "seed-tts",
            "uid": uid,
            "source_id": utt,
            "question": "",
            "audio": ctx.writer.audio_path(uid),
            "text": target,
            "language": language,
            "meta": {"prompt_text": prompt_text, "prompt_wav": prompt_wav},
        }
        if not prompt_wav:
            raise RowError("prompt_wav", "empty path")
        item = ctx.writer.validate(data, where=where)
        if item is not None:
            jobs.submit(where, _prompted(item), partial(clip_from_file, ctx, uid, root / prompt_wav, root, rate))


register_recipe(UgRecipe(LIBRISPEECH))
register_recipe(FleursRecipe(FLEURS))
register_recipe(CovostRecipe(COVOST2))
register_recipe(ClothoRecipe(CLOTHO))
register_recipe(AudioCapsRecipe())
register_recipe(IemocapRecipe(IEMOCAP))
register_recipe(MeldRecipe(MELD))
register_recipe(SlurpRecipe())
register_recipe(SeedTtsRecipe())

__all__ = [
    "AUDIO_SUFFIXES",
    "CLOTHO",
    "COVOST2",
    "EMOTION_QUESTION",
    "FLEURS",
    "FLEURS_LANGUAGES",
    "IEMOCAP",
    "IEMOCAP_WORDS",
    "INTENT_QUESTION",
    "LIBRISPEECH",
    "MELD",
    "MELD_EMOTIONS",
    "AudioCapsRecipe",
    "ClothoRecipe",
    "CovostRecipe",
    "FleursRecipe",
    "IemocapRecipe",
    "MeldRecipe",
    "SeedTtsRecipe",
    "SlurpRecipe",
    "UgRecipe",
    "clip_from_file",
    "covost_languages",
    "find_clip",
    "seeded_rng",
]
