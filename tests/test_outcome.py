"""The recorded task outcome: the normalisers (table-driven), every importer's reading of its format, and the gate.

Fixtures are tests/fixtures/importers (see SOURCE.md there); a case that needs a value the fixture does not hold
(a failed exit status, an ``I`` score, a NaN reward) edits a copy of the fixture in tmp_path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judge.gate import outcome_checks, release_checks
from judge.importers import iter_records
from judge.importers._common import Source, build_metadata
from judge.model import Message, Trajectory, TrajectoryMetadata, number_turns
from judge.outcome import (
    TaskOutcome,
    combine,
    decides,
    from_exit_status,
    from_fields,
    from_inspect_scores,
    from_reward,
    from_word,
)
from judge.schema import Reject

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "importers"


# --- normalisers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "status", "unreadable"),
    [(1.0, "success", False), (1, "success", False), (3.5, "success", False), (0.0, "failure", False),
     (-1, "failure", False), (0.5, "partial", False), (True, "success", False), (False, "failure", False),
     ("0.0", "failure", False), (float("nan"), "unknown", True), (float("inf"), "unknown", True),
     ("NaN", "unknown", True), ("abc", "unknown", True), ([1], "unknown", True), (None, "unknown", False)],
)
def test_from_reward(value: Any, status: str, unreadable: bool) -> None:
    outcome = from_reward(value)
    assert (outcome.status, outcome.unreadable) == (status, unreadable)
    if unreadable:
        assert "not a finite number" in (outcome.note or "")


@pytest.mark.parametrize(
    ("value", "status"),
    [("passed", "success"), ("Resolved", "success"), ("FAILED", "failure"), ("incorrect", "failure"),
     ("error", "failure"), ("partial", "partial"), ("partial-credit", "partial"), ("submitted", "unknown"),
     ("completed", "unknown"), (True, "success"), (False, "failure")],
)
def test_from_word(value: Any, status: str) -> None:
    assert from_word(value).status == status


@pytest.mark.parametrize(
    ("value", "status"),
    [("submitted", "unknown"), ("submitted (exit_cost)", "unknown"), ("Submitted", "unknown"),
     ("exit_cost", "failure"), ("exit_format", "failure"), ("LimitsExceeded", "failure"), ("", "unknown"), (None, "unknown")],
)
def test_from_exit_status(value: Any, status: str) -> None:
    assert from_exit_status(value).status == status


@pytest.mark.parametrize(
    ("scores", "status", "source"),
    [({"match": {"value": "C"}}, "success", "scores.match"),
     ({"match": {"value": "I"}}, "failure", "scores.match"),
     ({"match": {"value": "P"}}, "partial", "scores.match"),
     ({"match": {"value": "N"}}, "failure", "scores.match"),  # no answer is not a solved task
     ({"acc": {"value": 0.0}}, "failure", "scores.acc"),
     ({"acc": {"value": 0.25}}, "partial", "scores.acc"),
     ({"ok": {"value": True}}, "success", "scores.ok"),
     ({"m": {"value": {"a": 1, "b": 1.0}}}, "success", "scores.m"),
     ({"m": {"value": {"a": 1, "b": 0}}}, "partial", "scores.m"),  # the metrics disagree
     ({"m": {"value": {"a": "I", "b": 0}}}, "failure", "scores.m"),
     ({"a": {"value": "C"}, "b": {"value": "I"}}, "partial", "scores"),  # two scorers disagree
     ({"a": {"value": "C"}, "b": {"value": float("nan")}}, "unknown", "scores.b"),  # unreadable part holds the whole
     ({"m": {"value": None}}, "unknown", None), ({}, "unknown", None), (None, "unknown", None)],
)
def test_from_inspect_scores(scores: Any, status: str, source: str | None) -> None:
    outcome = from_inspect_scores(scores)
    assert (outcome.status, outcome.source) == (status, source)


def test_combine_is_conservative() -> None:
    success, failure, partial = from_reward(1), from_reward(0), from_reward(0.5)
    unreadable, unknown = from_reward(float("nan")), from_word("submitted")
    assert combine(success, failure).status == "failure"
    assert combine(success, unreadable).unreadable  # a value that cannot be read is not outweighed by a success
    assert combine(failure, unreadable).status == "failure"
    assert combine(success, partial).status == "partial"
    assert combine(unknown, success) is success
    assert combine(TaskOutcome(), unknown) is unknown  # among unknowns, the one with a source
    assert combine().status == "unknown" and combine(None).status == "unknown"


def test_only_a_failure_with_its_source_decides_alone() -> None:
    readings = [from_reward(0), from_reward(1), from_reward(0.5), from_reward(float("nan")), from_word("failed"),
                from_word("submitted"), TaskOutcome(status="failure"), TaskOutcome()]
    for reading in readings:
        kept = all(combine(reading, other) is reading for other in readings)
        assert decides(reading) == (reading.status == "failure" and reading.source is not None and not reading.unreadable)
        assert kept or not decides(reading)  # what decides is kept whatever follows


@pytest.mark.parametrize("own", [from_reward(0), from_reward(1), from_reward("abc"), from_word("failed", "status"),
                                 TaskOutcome(status="failure"), TaskOutcome()])
@pytest.mark.parametrize("layer", [{}, {"reward": 0}, {"reward": 1}, {"reward": float("nan")}, {"outcome": "failed"},
                                   {"outcome": "partial"}, {"extra": {"reward": "n/a"}}])
def test_build_metadata_combines_the_format_reading_with_the_generic_one(own: TaskOutcome, layer: dict[str, Any]) -> None:
    """``outcome=`` gives what combining after the fact gives, whether the reading decides alone or not."""
    src = Source("run.jsonl", line=3)
    expected = build_metadata("tau", src, layer)
    expected.task_outcome = combine(own, expected.task_outcome)
    assert build_metadata("tau", src, layer, outcome=own) == expected


@pytest.mark.parametrize(
    ("fields", "status", "unreadable", "reward"),
    [({}, "unknown", False, None), ({"reward": 0.0}, "failure", False, 0.0), ({"reward": float("nan")}, "unknown", True, None),
     ({"outcome": "failed"}, "failure", False, None), ({"reward": 1.0, "outcome": "failed"}, "failure", False, 1.0),
     ({"extra": {"reward": "n/a"}}, "unknown", True, None)],
)
def test_metadata_reads_reward_and_outcome_when_no_importer_did(fields, status, unreadable, reward) -> None:
    meta = TrajectoryMetadata(source_format="openai", **fields)
    assert meta.task_outcome is not None
    assert (meta.task_outcome.status, meta.task_outcome.unreadable, meta.reward) == (status, unreadable, reward)
    assert TrajectoryMetadata.model_validate_json(meta.model_dump_json()) == meta  # NaN never reaches the JSON


# --- every importer ----------------------------------------------------------------------------------


def _json(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def _edited(name: str, edit: Callable[[Any], Any]) -> Callable[[Path], Path]:
    """A copy of fixture ``name`` changed by ``edit`` (which may change it in place or return a new value)."""
    def make(tmp: Path) -> Path:
        data = _json(name)
        data = edit(data) or data
        path = tmp / Path(name).name
        path.write_text(json.dumps(data), encoding="utf-8")
        return path
    return make


def _fixture(name: str) -> Callable[[Path], Path]:
    return lambda tmp: FIXTURES / name


def _set(obj: dict[str, Any], key: str, value: Any) -> None:
    obj[key] = value


def _drop(obj: dict[str, Any], key: str) -> None:
    del obj[key]


def _jsonl_edit(name: str, edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        record = json.loads((FIXTURES / name).read_text(encoding="utf-8").splitlines()[0])
        edit(record)
        path = tmp / name
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        return path
    return make


def _openai(metadata: dict[str, Any]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        record = {"id": "r", "query": "q", "metadata": metadata,
                  "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "done"}]}
        path = tmp / "r.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        return path
    return make


def _anthropic(metadata: dict[str, Any]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        record = {"id": "a", "metadata": metadata, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]}
        path = tmp / "a.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        return path
    return make


def _tau_reward(value: Any) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        text = (FIXTURES / "tau_airline_excerpt.json").read_text(encoding="utf-8")
        record = json.loads(text)
        record[0]["reward"] = "__REWARD__"
        path = tmp / "tau.json"
        # json.dumps cannot write a bare NaN inside a string; the reader must meet the literal as a log would hold it
        path.write_text(json.dumps(record).replace('"__REWARD__"', value), encoding="utf-8")
        return path
    return make


def _ww(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], Path]:
    return _edited("who_and_when/Algorithm-Generated/84.json", edit)


OUTCOME_CASES = [
    # (case, make the input, status, source, unreadable)
    ("tau reward 1", _fixture("tau_airline_excerpt.json"), "success", "reward", False),
    ("tau reward 0", _tau_reward("0.0"), "failure", "reward", False),
    ("tau reward NaN", _tau_reward("NaN"), "unknown", "reward", True),
    ("tau reward text", _tau_reward('"n/a"'), "unknown", "reward", True),
    ("agentrx repr record", _fixture("agentrx_repr_derived.json"), "success", "reward", False),
    ("who&when AG is_correct false", _fixture("who_and_when/Algorithm-Generated/84.json"), "failure", "is_correct", False),
    ("who&when HC is_corrected false", _fixture("who_and_when/Hand-Crafted/24.json"), "failure", "is_corrected", False),
    ("who&when annotation alone", _ww(lambda r: _drop(r, "is_correct")), "failure", "mistake_agent/mistake_step", False),
    ("mast majority annotation", _edited("mast/MAD_excerpt.json", lambda rs: [rs[1]]), "failure", "annotations", False),
    ("mast AG2 correct false", _edited("mast/MAD_excerpt.json", lambda rs: [rs[0]]), "failure", "other_data.correct", False),
    ("mast no majority", _edited("mast/MAD_excerpt.json", lambda rs: [rs[7]]), "unknown", "annotations", False),
    ("inspect C", _fixture("inspect_log_read_sample.json"), "success", "scores.match", False),
    ("inspect I", _edited("inspect_log_read_sample.json", lambda d: _set(d["samples"][0]["scores"]["match"], "value", "I")),
     "failure", "scores.match", False),
    ("inspect P", _edited("inspect_log_read_sample.json", lambda d: _set(d["samples"][0]["scores"]["match"], "value", "P")),
     "partial", "scores.match", False),
    ("inspect dict", _edited("inspect_log_read_sample.json",
                             lambda d: _set(d["samples"][0]["scores"]["match"], "value", {"acc": 0, "f1": 0.0})),
     "failure", "scores.match", False),
    ("inspect sample error", _edited("inspect_log_read_sample.json",
                                     lambda d: _set(d["samples"][0], "error", {"message": "sandbox died"})),
     "failure", "sample.error", False),
    ("swe-agent submitted", _fixture("swe_agent_function_calling.traj"), "unknown", "info.exit_status", False),
    ("swe-agent exit_cost", _edited("swe_agent_text_actions.traj", lambda d: _set(d["info"], "exit_status", "exit_cost")),
     "failure", "info.exit_status", False),
    ("swe-agent resolved", _edited("swe_agent_text_actions.traj", lambda d: _set(d["info"], "resolved", True)),
     "success", "info.resolved", False),
    ("mini-swe-agent plain list", _fixture("mini_swe_agent_github_issue.traj.json"), "unknown", None, False),
    ("mini-swe-agent LimitsExceeded",
     _edited("mini_swe_agent_github_issue.traj.json",
             lambda m: {"trajectory_format": "mini-swe-agent-1", "messages": m, "info": {"exit_status": "LimitsExceeded"}}),
     "failure", "info.exit_status", False),
    ("mini-swe-agent Submitted",
     _edited("mini_swe_agent_github_issue.traj.json",
             lambda m: {"trajectory_format": "mini-swe-agent-1", "messages": m, "info": {"exit_status": "Submitted"}}),
     "unknown", "info.exit_status", False),
    ("openhands resolver success", _fixture("openhands_resolver_excerpt.jsonl"), "success", "success", False),
    ("openhands resolver failure", _jsonl_edit("openhands_resolver_excerpt.jsonl", lambda r: _set(r, "success", False)),
     "failure", "success", False),
    ("openhands resolver error", _jsonl_edit("openhands_resolver_excerpt.jsonl",
                                             lambda r: _set(r, "error", "Agent reached maximum iteration")),
     "failure", "error", False),
    ("openhands events", _fixture("openhands_wrong_initial_state.json"), "unknown", None, False),
    ("openhands agent state error",
     _edited("openhands_wrong_initial_state.json",
             lambda events: events + [{"id": 999, "source": "environment", "observation": "agent_state_changed",
                                       "content": "", "extras": {"agent_state": "error"}}]),
     "failure", "agent_state_changed", False),
    ("atif no result", _fixture("atif_written_by_us.json"), "unknown", None, False),
    ("atif extra reward", _edited("atif_written_by_us.json", lambda d: _set(d["extra"], "reward", 0)), "failure", "reward", False),
    ("openai metadata outcome", _openai({"outcome": "failed"}), "failure", "outcome", False),
    ("openai metadata reward NaN", _openai({"reward": float("nan")}), "unknown", "reward", True),
    ("openai nothing", _openai({}), "unknown", None, False),
    ("anthropic metadata reward", _anthropic({"reward": 1}), "success", "reward", False),
]


@pytest.mark.parametrize(("case", "make", "status", "source", "unreadable"), OUTCOME_CASES, ids=[c[0] for c in OUTCOME_CASES])
def test_each_format_records_its_outcome(tmp_path: Path, case, make, status, source, unreadable) -> None:
    items = list(iter_records([make(tmp_path)]))
    assert not [i for i in items if isinstance(i, Reject)], case
    (trajectory,) = items
    outcome = trajectory.metadata.task_outcome
    assert outcome is not None
    assert (outcome.status, outcome.source, outcome.unreadable) == (status, source, unreadable)
    assert trajectory.metadata.reward is None or math.isfinite(trajectory.metadata.reward)
    line = trajectory.to_json_line()
    assert "NaN" not in line and Trajectory.model_validate_json(line) == trajectory  # the canonical form round-trips
    expected = ["outcome:failed"] if status == "failure" else (["outcome:unreadable"] if unreadable else [])
    assert outcome_checks(trajectory) == expected


# --- the gate ----------------------------------------------------------------------------------------


def _trajectory(**metadata: Any) -> Trajectory:
    messages = number_turns([Message(role="user", content="fix it"), Message(role="assistant", content="Fixed: a.py now parses.")])
    return Trajectory(id="t", query="fix it", query_id="q", messages=messages,
                      metadata=TrajectoryMetadata(source_format="openai", **metadata))


@pytest.mark.parametrize(
    ("metadata", "checks"),
    [({}, []), ({"reward": 1.0}, []), ({"reward": 0.5}, []), ({"reward": 0.0}, ["outcome:failed"]),
     ({"reward": -1.0}, ["outcome:failed"]), ({"reward": float("nan")}, ["outcome:unreadable"]),
     ({"outcome": "failure"}, ["outcome:failed"]), ({"outcome": "submitted"}, []),
     ({"task_outcome": TaskOutcome(status="failure", source="annotations")}, ["outcome:failed"])],
)
def test_gate_reads_the_recorded_outcome(metadata: dict[str, Any], checks: list[str]) -> None:
    assert [c for c in release_checks(_trajectory(**metadata)) if c.startswith("outcome:")] == checks


def test_fields_reading_matches_the_metadata_default() -> None:
    assert TrajectoryMetadata(source_format="x", reward=0.0).task_outcome == from_fields(0.0, None)
