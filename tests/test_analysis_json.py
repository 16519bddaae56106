"""``analysis.json`` is typed: the committed example's validates against `AnalysisReport` and reads back byte for byte;
a file that drifts fails naming the section and the field; `RunFolder` reads and writes it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from pydantic import ValidationError

from airbench_nb.analysis.report import SECTIONS
from airbench_nb.analysis_report import AnalysisReport, PositionBias, TieredPayload
from airbench_nb.run_folder import RunFolder

EXAMPLE = Path(__file__).resolve().parent.parent / "reports" / "example" / "analysis" / "analysis.json"


@pytest.fixture(scope="module")
def text() -> str:
    return EXAMPLE.read_text(encoding="utf-8")


def test_the_example_validates_every_section_and_reads_back_byte_for_byte(text: str) -> None:
    report = AnalysisReport.from_json(text)
    assert report.to_json() == text
    for name, section in SECTIONS.items():  # every kit section of the report order is a field; the example holds each
        # a benchmark's added section (MMAU, ...) is kept as its JSON, after them: not a field; an optional one (the
        # controls) is left out of a run without its items, as the example is
        if section.kit and not section.optional:
            assert name in AnalysisReport.model_fields and getattr(report, name) is not None, name
    bias = report.position_bias["baseline:random"]
    assert isinstance(bias, PositionBias) and sum(bias.chosen.values()) == bias.n
    assert isinstance(report.tiered, TieredPayload) and report.tiered.tiers["A"]
    assert report.multi_clip["baseline:dsp"].single_clip.n > 0  # a JSON name with a dash is an attribute


def test_an_empty_section_reads_with_defaults_and_writes_back_empty(text: str) -> None:
    data = json.loads(text)
    data["tables"], data["ugbench"] = {}, {}
    report = AnalysisReport.from_data(data)
    assert report.tables.scores == [] and report.ugbench.ranking == []
    assert report.as_data()["tables"] == {} and report.as_data()["ugbench"] == {}


@pytest.mark.parametrize(
    ("section", "change", "where"),
    [
        ("tables", lambda d: d["scores"][3].update(value="high"), "tables.scores.3.value"),
        ("position_bias", lambda d: d["baseline:dsp"].update(p="0.1"), "position_bias.baseline:dsp.p"),
        ("tiered", lambda d: d["tiers"]["A"]["baseline:dsp"]["fine"].pop("macro_f1"), "tiered.tiers.A."),
        ("sseu", lambda d: d["baseline:dsp"]["joint"].update(n="many"), "sseu.baseline:dsp.joint.n"),
    ],
)
def test_a_drifted_file_fails_naming_the_section_and_the_field(text: str, section: str, change, where: str) -> None:
    data = json.loads(text)
    change(data[section])
    with pytest.raises(ValidationError) as error:
        AnalysisReport.from_data(data)
    assert where in str(error.value).replace("`", "")


def test_run_folder_writes_and_reads_it_and_logs_a_bad_one(text: str, tmp_path: Path, caplog) -> None:
    folder = RunFolder(tmp_path / "run")
    assert folder.read_analysis() is None  # no analysis yet
    path = folder.write_analysis(AnalysisReport.from_json(text))
    assert path == folder.analysis_json and path.read_text(encoding="utf-8") == text
    assert folder.read_analysis() == AnalysisReport.from_json(text)
    data = json.loads(text)
    data["circular"]["baseline:dsp"]["accuracy"] = "most"
    path.write_text(json.dumps(data), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert folder.read_analysis() is None
    assert "circular" in caplog.text and "accuracy" in caplog.text
