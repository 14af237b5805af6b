"""Precision and recall of each rules detector on the labelled corpus (tests/fixtures/rules_corpus, written by us),
the two worked cases of the reference documents, and the bundled example batch.

Floors (why these numbers):
- Structural detectors (failed-call, repeated-failure, environment-fault, unpaired-call-id, budget-exhausted,
  unchecked-tick) read flags, exit codes, ids and plan statuses, not prose. On a corpus whose every case
  was written to exercise them, anything below 0.9 precision or recall means a rule is broken, so 0.9 is the floor
  (the issue's target).
- Text detectors (unverified-completion, premature-claim, phantom-failure-reference, stale-evidence) also match
  claims in prose (en/zh/ja), where a phrase list can miss a wording. Their floor is 0.8: one miss in five cases
  per detector is the most we tolerate before the phrase lists must be extended. Precision matters more than
  recall for them (a false claim of a false claim costs a good trajectory), so precision keeps the 0.9 floor.
- Clean trajectories: zero findings, no tolerance (the judge's false-alarm rate on good data must be zero here).
The corpus was written together with the detectors, so these figures are an upper bound for unseen data; the
report prints the rates measured on third-party logs (swe-agent demonstrations, tau-bench, Who&When).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from judge.importers import load_trajectories
from judge.model import Trajectory
from judge.rules import DETECTOR_NAMES, run_detectors

CORPUS = Path(__file__).resolve().parent / "fixtures" / "rules_corpus"


def load_corpus() -> list[Trajectory]:
    """Every corpus trajectory, through the real importers (a rejected record raises, naming file and line)."""
    return load_trajectories(sorted(CORPUS.glob("*.jsonl")))


def expected_of(trajectory: Trajectory) -> list[dict[str, Any]]:
    """The per-turn truth written into the record's ``metadata.expected``."""
    expected = trajectory.metadata.extra.get("expected")
    if not isinstance(expected, list):
        raise KeyError(f"{trajectory.id}: no metadata.expected list in the corpus record")
    return expected

STRUCTURAL = {"failed-call", "repeated-failure", "environment-fault", "unpaired-call-id", "budget-exhausted",
              "unchecked-tick"}
FLOOR_STRUCTURAL = 0.9
FLOOR_TEXT_PRECISION = 0.9
FLOOR_TEXT_RECALL = 0.8


@pytest.fixture(scope="module")
def corpus() -> list[Trajectory]:
    return load_corpus()


def _truth(trajectory: Trajectory) -> set[tuple[int, str, str]]:
    return {(e["turn"], e["tag"], e["category"]) for e in expected_of(trajectory)}


def _found(trajectory: Trajectory) -> set[tuple[int | None, str | None, str]]:
    return {(i.turn, i.tag, i.category) for i in run_detectors(trajectory)}


def precision_recall(corpus: list[Trajectory]) -> dict[str, tuple[float, float, int, int]]:
    """Per detector: (precision, recall, found, expected); a finding counts when turn, tag and category match."""
    tp: Counter[str] = Counter()
    found: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    for trajectory in corpus:
        truth, got = _truth(trajectory), _found(trajectory)
        for _, tag, _ in truth:
            expected[tag] += 1
        for item in got:
            found[item[1] or ""] += 1
            if item in truth:
                tp[item[1] or ""] += 1
    return {
        name: (tp[name] / found[name] if found[name] else 1.0, tp[name] / expected[name] if expected[name] else 1.0,
               found[name], expected[name])
        for name in DETECTOR_NAMES
    }


def test_corpus_covers_formats_languages_and_every_detector(corpus: list[Trajectory]) -> None:
    formats = {t.metadata.source_format for t in corpus}
    languages = {t.metadata.extra["lang"] for t in corpus}
    tags = {e["tag"] for t in corpus for e in expected_of(t)}
    assert {"openai", "anthropic"} <= formats and {"en", "zh", "ja"} <= languages
    assert tags == set(DETECTOR_NAMES)
    assert sum(1 for t in corpus if not expected_of(t)) >= 6  # clean trajectories


def test_precision_and_recall_per_detector(corpus: list[Trajectory]) -> None:
    table = precision_recall(corpus)
    print("\ndetector                     precision recall found expected")
    for name, (precision, recall, found, expected) in table.items():
        print(f"{name:28} {precision:9.2f} {recall:6.2f} {found:5d} {expected:8d}")
    for name, (precision, recall, _, expected) in table.items():
        assert expected > 0, f"no labelled case for {name}"
        recall_floor = FLOOR_STRUCTURAL if name in STRUCTURAL else FLOOR_TEXT_RECALL
        precision_floor = FLOOR_STRUCTURAL if name in STRUCTURAL else FLOOR_TEXT_PRECISION
        assert precision >= precision_floor, f"{name}: precision {precision:.2f} < {precision_floor}"
        assert recall >= recall_floor, f"{name}: recall {recall:.2f} < {recall_floor}"


def test_no_finding_on_clean_trajectories(corpus: list[Trajectory]) -> None:
    false_alarms = {t.id: [(i.turn, i.tag, i.evidence) for i in run_detectors(t)] for t in corpus if not expected_of(t)}
    assert {k: v for k, v in false_alarms.items() if v} == {}


def _by_id(corpus: list[Trajectory], trajectory_id: str) -> Trajectory:
    return next(t for t in corpus if t.id == trajectory_id)


def test_worked_case_name_cleaner_tick_when_tried(corpus: list[Trajectory]) -> None:
    """plan-then-act-lesson.txt: t2 marked done after 1/2 checks passed; the false completion (plan mark and the
    final '3/3') is found at the turns that made it, citing the failing check as evidence. The check itself ran
    right and reported a failure: evidence about the draft, not a failed call (issue 11)."""
    issues = run_detectors(_by_id(corpus, "name-cleaner-tick-when-tried"))
    by_tag = {i.tag: i for i in issues}
    assert "failed-call" not in by_tag
    assert by_tag["unchecked-tick"].turn == 5 and by_tag["unchecked-tick"].severity == "severe"
    assert "FAIL" in by_tag["unchecked-tick"].evidence
    assert by_tag["unverified-completion"].turn == 8 and "3/3" in by_tag["unverified-completion"].evidence


def test_worked_case_inventory_build(corpus: list[Trajectory]) -> None:
    """training-trajectories-design.txt: numeric field-type codes -> 12 validation errors at T3; the unsupported
    --records flag at T5. Corrected later in one version (recovered: no finding, docs/finding-tags.md), never in
    the other (severe + false claim)."""
    assert run_detectors(_by_id(corpus, "inventory-build-corrected")) == []
    uncorrected = run_detectors(_by_id(corpus, "inventory-build-false-completion"))
    t5 = next(i for i in uncorrected if i.turn == 5)
    assert t5.severity == "severe" and t5.tag == "failed-call" and "--records" in t5.evidence
    assert any(i.tag == "unverified-completion" and i.turn == 7 for i in uncorrected)
    assert not any(i.turn == 3 for i in uncorrected)  # redone at T4


# --- the bundled example batch (examples/batch: EXPECTED.md for people, expected.yaml for tests) ----------

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BATCH = EXAMPLES / "batch"


def _expected_batch() -> dict[str, Any]:
    if not (BATCH / "expected.yaml").exists():
        pytest.skip("examples/batch/expected.yaml is not in this checkout")
    import yaml  # type: ignore[import-untyped]

    return yaml.safe_load((BATCH / "expected.yaml").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _batch_verdicts() -> dict[str, Any]:
    import asyncio

    from judge.judges import make_judge

    judge = make_judge("rules")
    trajectories = load_trajectories(sorted(BATCH.glob("*.json*")))
    return {t.id: asyncio.run(judge(t, 0)) for t in trajectories}


def test_example_batch_rules_judge_finds_exactly_the_rules_detectable_defects() -> None:
    """On examples/batch the rules judge reports every defect expected.yaml marks detectable_by_rules, at its
    turn with its category, tag and severity, and nothing else; logic errors (an LLM judge's) are not reported."""
    expected = _expected_batch()
    verdicts = _batch_verdicts()
    listed = {entry["id"] for entry in expected["trajectories"]}
    assert listed == set(verdicts), f"expected.yaml and the batch differ: {sorted(listed ^ set(verdicts))}"
    for entry in expected["trajectories"]:
        verdict = verdicts[entry["id"]]
        assert verdict.status == "ok", verdict.detail
        want = Counter((d["turn"], d["category"], d["tag"], d["severity"]) for d in entry["defects"] if d["detectable_by_rules"])
        found = Counter((i.turn, i.category, i.tag, i.severity) for i in verdict.issues)
        assert found == want, f"{entry['id']}: expected {sorted(want.elements())}, found {sorted(found.elements())}"
        if entry["efficiency"] is not None:
            assert verdict.efficiency == entry["efficiency"], entry["id"]


def test_example_batch_expectations_use_the_rules_vocabulary() -> None:
    """A rules-detectable defect carries a rules detector's tag; the others carry the LLM-only tag, or are failures
    the agent recovered from (a rules tag, but no rules finding: docs/finding-tags.md)."""
    expected = _expected_batch()
    assert tuple(expected["rules_tags"]) == DETECTOR_NAMES
    for entry in expected["trajectories"]:
        for item in entry["defects"]:
            recovered = item.get("recovered", False)
            assert item["detectable_by_rules"] == (item["tag"] in DETECTOR_NAMES and not recovered), (entry["id"], item)
            assert item["detectable_by_rules"] or item["tag"] == expected["llm_only_tag"] or recovered, (entry["id"], item)


def test_example_batch_expectation_files_are_generated_from_one_table() -> None:
    """EXPECTED.md and expected.yaml are what examples/build_batch.py writes now (neither was edited by hand)."""
    import importlib.util

    script = EXAMPLES / "build_batch.py"
    if not script.exists():
        pytest.skip("examples/build_batch.py is not in this checkout")
    spec = importlib.util.spec_from_file_location("build_batch", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (BATCH / "EXPECTED.md").read_text(encoding="utf-8") == module.expected_markdown()
    assert (BATCH / "expected.yaml").read_text(encoding="utf-8") == module.expected_yaml()
