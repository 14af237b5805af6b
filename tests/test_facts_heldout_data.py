"""Shape of the issue-24 held-out data (tests/fixtures/facts_heldout, tests/fixtures/editor_counterexamples).

These tests check the DATA, never a detector's or the editor's figures (bench/facts_heldout.py and
bench/editor_counterexamples.py print those; docs/facts-heldout.md records the first run): counts, languages,
formats that parse through judge.importers, tags and categories of docs/finding-tags.md, turns that exist, and
that the counterexample suite loads and runs through the bench's runner.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fixtures.facts_heldout.steps import TAGS
from judge.importers import Source, iter_records
from judge.importers.reader import parse_record
from judge.model import Trajectory

REPO = Path(__file__).resolve().parents[1]
HELDOUT = REPO / "tests" / "fixtures" / "facts_heldout"
COUNTER = REPO / "tests" / "fixtures" / "editor_counterexamples"
REASONS = {"effects", "dependency", "order", "unsupported-final", "reference", "flip", "future-claim", "side-effects"}


def _load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def heldout() -> list[Trajectory]:
    items = list(iter_records(sorted(HELDOUT.glob("*.jsonl"))))
    rejects = [i for i in items if not isinstance(i, Trajectory)]
    assert rejects == []
    return [i for i in items if isinstance(i, Trajectory)]


@pytest.fixture(scope="module")
def cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (COUNTER / "cases.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def test_heldout_counts_languages_and_formats(heldout: list[Trajectory]) -> None:
    assert len(heldout) >= 40
    assert len({t.id for t in heldout}) == len(heldout)
    languages = Counter(t.metadata.extra["lang"] for t in heldout)
    assert {"en", "zh", "ja"} <= set(languages) and len(languages) >= 6
    formats = Counter(t.metadata.source_format for t in heldout)
    assert set(formats) == {"openai", "anthropic", "atif"}
    clean = [t for t in heldout if not t.metadata.extra["expected"]]
    assert len(clean) >= 10
    assert all(t.metadata.extra.get("near_miss") for t in clean)  # every clean case names the control it is


def test_heldout_truth_uses_the_vocabulary_and_existing_turns(heldout: list[Trajectory]) -> None:
    for trajectory in heldout:
        extra = trajectory.metadata.extra
        turns = {m.turn for m in trajectory.messages if m.role == "assistant"}
        for item in extra["expected"]:
            assert set(item) == {"turn", "tag", "category"}, trajectory.id
            assert TAGS.get(item["tag"]) == item["category"], (trajectory.id, item)
            assert item["turn"] in turns, (trajectory.id, item)
        assert isinstance(extra["release_expected"], bool)
        assert extra["release_expected"] == (not extra["expected"]), trajectory.id
        decisive = extra.get("decisive_turn")  # null (clean) is dropped on import
        assert (decisive is None) == (not extra["expected"]), trajectory.id
        assert decisive is None or decisive in turns, trajectory.id


def test_heldout_files_are_what_the_builder_writes() -> None:
    builder = _load_module("facts_heldout_builder", HELDOUT / "build_facts_heldout.py")
    for fmt in ("openai", "anthropic", "atif"):
        rows = [json.loads(line) for line in (HELDOUT / f"facts_{fmt}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert rows == [builder.record(case) for case in builder.CASES if case.fmt == fmt], fmt


def test_counterexamples_counts_and_expectations(cases: list[dict[str, Any]]) -> None:
    assert len(cases) >= 30
    assert len({c["id"] for c in cases}) == len(cases)
    kinds = Counter((c["kind"], c["expected"]["decision"]) for c in cases)
    assert kinds[("rewrite", "refuse")] >= 12
    assert kinds[("rewrite", "accept")] + kinds[("delete", "accept")] >= 6
    for case in cases:
        expected = case["expected"]
        assert expected["decision"] in ("accept", "refuse"), case["id"]
        assert (expected["reason"] is None) == (expected["decision"] == "accept"), case["id"]
        assert expected["reason"] is None or expected["reason"] in REASONS, case["id"]


def test_counterexample_records_import_and_maps_point_at_the_original(cases: list[dict[str, Any]]) -> None:
    for case in cases:
        original = parse_record(case["original"], Source("cases.jsonl"))
        assert isinstance(original, Trajectory), case["id"]
        edit = case["edit"]
        calls = {c.id for m in original.messages for c in m.tool_calls}
        if case["kind"] == "delete":
            assert set(edit["delete_calls"]) <= calls and edit["delete_calls"], case["id"]
            assert edit["turn"] in {m.turn for m in original.messages if any(c.id in edit["delete_calls"] for c in m.tool_calls)}
            continue
        edited = parse_record(edit["edited"], Source("cases.jsonl"))
        assert isinstance(edited, Trajectory), case["id"]
        mapping = edit["message_map"]
        assert len(mapping) == len(edited.messages) and mapping == sorted(set(mapping)), case["id"]
        assert [m.role for m in edited.messages] == [original.messages[i].role for i in mapping], case["id"]
        assert set(edit["deleted_calls"]) <= calls, case["id"]


def test_counterexample_suite_runs_through_the_runner(cases: list[dict[str, Any]]) -> None:
    runner = _load_module("editor_counterexamples_bench", REPO / "bench" / "editor_counterexamples.py")
    for case in cases:
        outcome = runner.run_case(case)
        assert outcome.decision in ("accept", "refuse"), case["id"]
        decided, right = runner.is_right(case, outcome)
        assert decided or not right
