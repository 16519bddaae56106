"""Specs answer questions through the registries (issue 30): attributes of the registered judge classes and model
backends, not string tests on the spec outside them."""

from __future__ import annotations

from airbench_nb.judge.registry import (
    deciding_judges,
    judge_class,
    labels_reasoning,
    llm_judges,
    names_sources,
    reads_spoken_answers,
    scores_only,
)
from airbench_nb.models.specs import closed_set_tier


def test_judge_classes_declare_what_the_code_used_to_read_from_their_spec():
    assert scores_only("proxy") and not scores_only("rule") and not scores_only("openai:gpt-4o")
    assert not scores_only("no-such-judge")  # a judge of older records: not scores-only
    assert judge_class("proxy").scores_only
    assert reads_spoken_answers("asr:faster-whisper:tiny.en") and not reads_spoken_answers("proxy")
    assert labels_reasoning("strategy:openai:gpt-4o") and not labels_reasoning("openai:gpt-4o")
    assert llm_judges(["proxy", "openai:j", "strategy:openai:j", "hf:/p", "rule"]) == ["openai:j", "hf:/p"]
    assert deciding_judges("A") == ["rule"] and deciding_judges("D") == ["sources"]
    assert deciding_judges("A", ["rule", "openai:j", "asr:x", "strategy:openai:j"]) == ["openai:j", "rule"]
    assert deciding_judges("B", ["openai:j"]) == []  # rankings: no judge decides them
    assert names_sources("sources") and not names_sources("openai:j") and not names_sources("rule")


def test_model_backends_declare_their_tier():
    assert closed_set_tier("classifier:/x/ast") == "B" and closed_set_tier("clap:laion/clap") == "C"
    assert closed_set_tier("baseline:oracle") == "A" and closed_set_tier("openai:gpt-4o-audio-preview") == "A"
    assert closed_set_tier("hf:/x") == "A" and closed_set_tier("nonsense") == "A"
