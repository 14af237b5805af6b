"""Shape of the THIRD issue-24 held-out data (tests/fixtures/facts_heldout_v3, editor_counterexamples_v3).

These tests check the DATA only, through judge.importers: every record parses, the truth uses the vocabulary of
docs/finding-tags.md and points at turns that exist, clean trajectories expect nothing and are released, the
minimums of the brief hold (tags, languages, domains, controls, reason kinds), and the files are what their builders
write. They never run a detector, the judge, the gate, the editor or a bench on this data: the truth was committed
before any of those ran (README.md of each folder), and figures belong in the benches' output.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_facts_heldout_data import (  # one loader and one set of record checks for every edition
    _load_module,
    _read_jsonl,
)
from test_facts_heldout_data import (
    test_counterexample_records_import_and_maps_point_at_the_original as records_import_and_maps_point_at_the_original,
)
from test_facts_heldout_data import (
    test_heldout_truth_uses_the_vocabulary_and_existing_turns as truth_uses_the_vocabulary_and_existing_turns,
)

from fixtures.facts_heldout.steps import TAGS
from judge.importers import iter_records
from judge.model import Trajectory

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FACTS = FIXTURES / "facts_heldout_v3"
EDITOR = FIXTURES / "editor_counterexamples_v3"
FORMATS = ("openai", "anthropic", "atif")
REASONS = {"effects", "dependency", "order", "unsupported-final", "reference", "flip", "future-claim", "side-effects"}
# the brief: claims vocabularies are expected for these, and at least two languages without one
KNOWN = {"es", "de", "ko", "pt", "ru", "sv", "fr"}
UNKNOWN = {"cs", "fi", "hu"}


@pytest.fixture(scope="module")
def trajectories() -> list[Trajectory]:
    items = list(iter_records(sorted(FACTS.glob("*.jsonl"))))
    assert items, f"{FACTS}: no records"
    assert [i for i in items if not isinstance(i, Trajectory)] == []
    return [i for i in items if isinstance(i, Trajectory)]


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    return _read_jsonl(EDITOR / "cases.jsonl")


def test_every_record_parses_in_three_formats(trajectories: list[Trajectory]) -> None:
    assert len(trajectories) >= 60
    assert len({t.id for t in trajectories}) == len(trajectories)
    formats = Counter(t.metadata.source_format for t in trajectories)
    assert set(formats) == set(FORMATS)
    assert min(formats.values()) >= len(trajectories) // 4  # roughly a third each


def test_truth_uses_the_vocabulary_and_turns_that_exist(trajectories: list[Trajectory]) -> None:
    truth_uses_the_vocabulary_and_existing_turns(trajectories)  # the v1/v2 checks, unchanged
    assert all(t.metadata.extra["group"] for t in trajectories)


def test_clean_controls_expect_nothing_and_are_released(trajectories: list[Trajectory]) -> None:
    clean = [t for t in trajectories if not t.metadata.extra["expected"]]
    assert len(clean) >= len(trajectories) // 5  # about a quarter
    for trajectory in trajectories:
        extra = trajectory.metadata.extra
        assert extra["release_expected"] is (not extra["expected"]), trajectory.id
        assert bool(extra.get("near_miss")) is (not extra["expected"]), trajectory.id  # every control names itself
    assert {t.metadata.source_format for t in clean} == set(FORMATS)


def test_every_tag_in_at_least_four_trajectories(trajectories: list[Trajectory]) -> None:
    per_tag = Counter(tag for t in trajectories for tag in {e["tag"] for e in t.metadata.extra["expected"]})
    assert set(per_tag) == set(TAGS)
    assert {tag: n for tag, n in per_tag.items() if n < 4} == {}


def test_languages_and_domains(trajectories: list[Trajectory]) -> None:
    languages = Counter(t.metadata.extra["lang"] for t in trajectories)
    assert len(languages) >= 8 and set(languages) >= KNOWN and len(UNKNOWN & set(languages)) >= 2 and "en" in languages
    domains = Counter(t.metadata.extra["domain"] for t in trajectories)
    assert set(domains) == {"lark-base", "coding"}
    assert min(domains.values()) >= 0.4 * len(trajectories)  # half and half, roughly


def test_origin_cases_put_the_decisive_turn_before_every_finding(trajectories: list[Trajectory]) -> None:
    origin = [t.metadata.extra for t in trajectories if t.metadata.extra["group"] == "origin"]
    assert len(origin) >= 3
    for extra in origin:
        assert extra["decisive_turn"] < min(e["turn"] for e in extra["expected"]), extra["note"]


def test_ids_are_new_against_v1_and_v2(trajectories: list[Trajectory], cases: list[dict[str, Any]]) -> None:
    old: set[str] = set()
    for folder in ("facts_heldout", "facts_heldout_v2"):
        old |= {t.id for t in iter_records(sorted((FIXTURES / folder).glob("*.jsonl"))) if isinstance(t, Trajectory)}
    for folder in ("editor_counterexamples", "editor_counterexamples_v2"):
        old |= {c["id"] for c in _read_jsonl(FIXTURES / folder / "cases.jsonl")}
    assert old & ({t.id for t in trajectories} | {c["id"] for c in cases}) == set()


def test_facts_files_are_what_the_builder_writes() -> None:
    builder = _load_module("facts_heldout_builder_v3", FACTS / "build_facts_heldout_v3.py")
    for fmt in FORMATS:
        assert _read_jsonl(FACTS / f"facts_{fmt}.jsonl") == [builder.record(c) for c in builder.CASES if c.fmt == fmt], fmt


def test_counterexamples_are_what_the_builder_writes(cases: list[dict[str, Any]]) -> None:
    builder = _load_module("counterexamples_builder_v3", EDITOR / "build_counterexamples_v3.py")
    assert cases == [builder.build(c) for c in builder.CASES]


def test_counterexamples_counts_reasons_and_languages(cases: list[dict[str, Any]]) -> None:
    assert len(cases) >= 36 and len({c["id"] for c in cases}) == len(cases)
    kinds = Counter((c["kind"], c["expected"]["decision"]) for c in cases)
    assert set(kinds) == {("rewrite", "refuse"), ("rewrite", "accept"), ("delete", "refuse"), ("delete", "accept")}
    reasons = Counter(c["expected"]["reason"] for c in cases if c["expected"]["decision"] == "refuse")
    assert set(reasons) == REASONS and min(reasons.values()) >= 2
    assert all((c["expected"]["reason"] is None) == (c["expected"]["decision"] == "accept") for c in cases)
    assert len({c["lang"] for c in cases}) >= 8


def test_counterexample_records_import_and_point_at_the_original(cases: list[dict[str, Any]]) -> None:
    records_import_and_maps_point_at_the_original(cases)  # the v1/v2 checks, unchanged
