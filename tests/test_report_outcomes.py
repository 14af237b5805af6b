"""The report's score x recorded-outcome table and its warning for a rules-only panel (summary, Markdown, HTML)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge import rundir
from judge.model import Message, Trajectory, TrajectoryMetadata, number_turns
from judge.outcome import TaskOutcome
from judge.report import build_report
from judge.report.summary import outcome_section
from judge.schema import ScoreRow, Verdict

FAILED = TaskOutcome(status="failure", source="annotations")


def _trajectory(tid: str, **metadata: Any) -> Trajectory:
    messages = number_turns([Message(role="user", content="do it"), Message(role="assistant", content="Done.")])
    return Trajectory(id=tid, query="do it", query_id="q", messages=messages,
                      metadata=TrajectoryMetadata(source_format="openai", **metadata))


def _row(tid: str, score: int | None, release: bool = False) -> ScoreRow:
    return ScoreRow(trajectory_id=tid, score=score, reason="r", release=release, panel_size=1, valid_passes=int(score is not None))


def _panel(*judges: str) -> dict[str, Any]:
    return {"judges": list(judges)}


# (trajectories as (id, metadata), rows as (id, score, release), judges, expected by_score cells, warning?)
CASES = [
    ("most failures high, rules only",
     [("a", {"reward": 0.0}), ("b", {"task_outcome": FAILED}), ("c", {"reward": 1.0}), ("d", {})],
     [("a", 5, False), ("b", 4, False), ("c", 2, False), ("d", None, False)], ("rules",),
     {("5", "failure"): 1, ("4", "failure"): 1, ("2", "success"): 1, ("unscored", "unknown"): 1}, True),
    ("half of the failures high is not most",
     [("a", {"reward": 0.0}), ("b", {"reward": 0.0})], [("a", 5, False), ("b", 2, False)], ("rules",),
     {("5", "failure"): 1, ("2", "failure"): 1}, False),
    ("an LLM panel gets no rules warning",
     [("a", {"reward": 0.0})], [("a", 5, False)], ("openai:gpt-4o",), {("5", "failure"): 1}, False),
    ("a mixed panel is not rules-only",
     [("a", {"reward": 0.0})], [("a", 5, False)], ("rules", "openai:gpt-4o"), {("5", "failure"): 1}, False),
    ("no recorded outcome, no warning",
     [("a", {}), ("b", {"outcome": "submitted"})], [("a", 5, True), ("b", 4, True)], ("rules",),
     {("5", "unknown"): 1, ("4", "unknown"): 1}, False),
    ("partial and unreadable",
     [("a", {"reward": 0.5}), ("b", {"reward": float("nan")})], [("a", 4, True), ("b", 3, False)], ("rules",),
     {("4", "partial"): 1, ("3", "unknown"): 1}, False),
]


@pytest.mark.parametrize(("case", "trajectories", "rows", "judges", "cells", "warned"), CASES, ids=[c[0] for c in CASES])
def test_outcome_section(case, trajectories, rows, judges, cells, warned) -> None:
    section = outcome_section([_trajectory(t, **m) for t, m in trajectories],
                              {tid: _row(tid, score, release) for tid, score, release in rows}, _panel(*judges))
    found = {(key, status): n for key, counts in section["by_score"].items() for status, n in counts.items() if n}
    assert found == cells
    assert sum(section["totals"].values()) == len(rows)  # every trajectory in exactly one cell, unscored included
    assert bool(section["warning"]) is warned
    if warned:
        assert "structural" in section["warning"] and "2 of 2 recorded task failures" in section["warning"]
    assert section["unreadable"] == sum(1 for _, m in trajectories if m.get("reward") != m.get("reward"))  # NaN


def test_a_released_failure_is_listed() -> None:
    section = outcome_section([_trajectory("a", reward=0.0)], {"a": _row("a", 5, release=True)}, _panel("rules"))
    assert section["released_failures"] == ["a"]


def test_report_files_show_the_table_and_warning(tmp_path: Path) -> None:
    trajectories = [_trajectory("fail-1", reward=0.0), _trajectory("fail-2", task_outcome=FAILED), _trajectory("ok", reward=1.0)]
    rundir.write_jsonl(tmp_path / rundir.TRAJECTORIES, trajectories)
    rundir.write_jsonl(tmp_path / rundir.VERDICTS, [
        Verdict(trajectory_id=t.id, judge="rules", pass_index=0, pass_key="rules#1", status="ok", efficiency="high",
                deterministic=True) for t in trajectories])
    rundir.write_jsonl(tmp_path / rundir.SCORES, [_row("fail-1", 4), _row("fail-2", 4), _row("ok", 2)])
    rundir.write_json(tmp_path / rundir.MANIFEST, {"panel": {"size": 1, "members": ["rules"]}})
    build_report(tmp_path)
    summary = json.loads((tmp_path / rundir.SUMMARY).read_text(encoding="utf-8"))
    assert summary["outcomes"]["by_score"]["4"]["failure"] == 2 and summary["outcomes"]["by_score"]["2"]["success"] == 1
    assert summary["outcomes"]["warning"]
    markdown = (tmp_path / rundir.REPORT_MD).read_text(encoding="utf-8")
    assert "| score | success | failure | partial | unknown | all |" in markdown
    assert "| 4 | 0 | 2 | 0 | 0 | 2 |" in markdown and "**Warning: recorded failures score high.**" in markdown
    html = (tmp_path / rundir.REPORT_HTML).read_text(encoding="utf-8")
    assert 'id="outcomes"' in html and "Recorded failures score high." in html and "is structural" in html
