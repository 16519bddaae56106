"""The Benchmark unit: every item kind, metric, builder part, analysis section, page section and capability-map task
belongs to exactly one registered benchmark, and every name a benchmark declares is registered where it lives."""

from __future__ import annotations

import re
import typing
from collections import Counter

import pytest

from airbench_nb.benchmarks import (
    BENCHMARKS,
    SHARED_ANALYSIS_SECTIONS,
    SHARED_PAGE_SECTIONS,
    Benchmark,
    benchmark_for,
    benchmark_of_kind,
    kind_of,
    register_benchmark,
)
from airbench_nb.builders import PARTS
from airbench_nb.records import ITEM_KINDS, AnyItem, ChatItem


def _owners(attribute: str) -> Counter[str]:
    return Counter(name for b in BENCHMARKS.values() for name in getattr(b, attribute))


def test_the_benchmarks_are_registered_in_pipeline_order():
    assert list(BENCHMARKS) == ["airbench", "sseu", "ugbench", "tiered", "mmau", "mmar", "mmsu"]
    assert tuple(kind for b in BENCHMARKS.values() for kind in b.kinds) == ITEM_KINDS


def test_every_item_kind_belongs_to_exactly_one_benchmark():
    classes = typing.get_args(AnyItem)
    owners = Counter(record for b in BENCHMARKS.values() for record in b.item_kinds)
    assert set(owners) == set(classes), "an item class of records.AnyItem is not declared by a benchmark, or vice versa"
    assert all(n == 1 for n in owners.values()), owners
    for record in classes:
        assert benchmark_of_kind(kind_of(record)).item_kinds.count(record) == 1


def test_declared_metrics_are_registered_and_are_the_kinds_metrics():
    from airbench_nb.scoring.metrics import METRICS

    owners = _owners("metrics")
    assert set(owners) == set(METRICS), "every registered metric belongs to a benchmark, every declared one exists"
    assert all(n == 1 for n in owners.values()), owners
    for benchmark in BENCHMARKS.values():
        of_kinds = {name for record in benchmark.item_kinds for name in record.METRICS}
        assert of_kinds == set(benchmark.metrics), benchmark.name


def test_declared_builder_parts_are_registered_and_write_the_benchmarks_kinds():
    owners = _owners("parts")
    assert set(owners) == set(PARTS) and all(n == 1 for n in owners.values()), owners
    for benchmark in BENCHMARKS.values():
        for part in benchmark.builder_parts():
            assert set(part.manifests) <= set(benchmark.kinds), (benchmark.name, part.name)
    with pytest.raises(KeyError, match="no builder part 'nope'"):
        Benchmark("x", "X", (), ("nope",), (), (), (), ()).builder_parts()


def test_every_analysis_section_belongs_to_one_benchmark_or_is_shared():
    from airbench_nb.analysis.report import SECTIONS

    owners = _owners("analysis_sections") + Counter(SHARED_ANALYSIS_SECTIONS)
    assert set(owners) == set(SECTIONS) and all(n == 1 for n in owners.values()), owners


def test_every_page_section_is_registered_and_the_shell_holds_the_shared_ones():
    from airbench_nb.pages import KIT_PAGE_SECTIONS, PAGE_SECTIONS
    from airbench_nb.report_page import TEMPLATE

    owners = _owners("page_sections") + Counter(KIT_PAGE_SECTIONS)
    assert set(owners) == set(PAGE_SECTIONS), "every declared page section is registered, every registered one declared"
    assert all(n == 1 for n in owners.values()), owners
    assert not set(owners) & set(SHARED_PAGE_SECTIONS)
    headings = [h for h in re.findall(r"<h2>([^<]+)</h2>", TEMPLATE) if "{{" not in h]
    assert headings == list(SHARED_PAGE_SECTIONS), headings


def test_every_task_of_the_capability_map_belongs_to_exactly_one_benchmark():
    from airbench_nb.analysis.ugbench import load_capability_map

    ids = [spec.id for spec in load_capability_map().tasks]
    owners = _owners("capability_tasks")
    assert set(owners) == set(ids) and all(n == 1 for n in owners.values()), set(owners) ^ set(ids)


def test_registry_refuses_a_kind_of_another_benchmark_and_names_the_known_ones():
    with pytest.raises(ValueError, match=r"kinds \['chat'\] belong to 'airbench'"):
        register_benchmark(Benchmark("copy", "Copy", (ChatItem,), (), (), (), (), ()))
    assert "copy" not in BENCHMARKS
    with pytest.raises(KeyError, match="registered: airbench, sseu, ugbench, tiered, mmau, mmar, mmsu"):
        benchmark_for("ghost")
    with pytest.raises(KeyError, match="no registered benchmark has item kind 'beep'"):
        benchmark_of_kind("beep")
    with pytest.raises(TypeError, match="not an item kind"):
        kind_of(Benchmark)  # type: ignore[arg-type]
