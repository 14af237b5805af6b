"""Release gate: each format check on a table of good and broken trajectories; authenticity via judge.rules."""

from __future__ import annotations

import pytest

from judge.gate import FORMAT_CHECKS, format_checks, release_checks
from judge.model import (
    Message,
    Receipt,
    ToolCall,
    Trajectory,
    TrajectoryMetadata,
    number_turns,
)


def make(messages: list[Message], query: str = "fix the bug") -> Trajectory:
    return Trajectory(id="t", query=query, query_id="q", messages=number_turns(messages),
                      metadata=TrajectoryMetadata(source_format="openai"))


def call(cid: str = "c1", name: str = "bash", arguments=None, error: str | None = None) -> ToolCall:
    return ToolCall(id=cid, name=name, arguments=arguments if arguments is not None else {"cmd": "ls"},
                    raw_arguments="{bad" if error else None, arguments_error=error)


def good() -> list[Message]:
    return [
        Message(role="system", content="You are a coding agent."),
        Message(role="user", content="fix the bug"),
        Message(role="assistant", content="", tool_calls=[call()]),
        Message(role="tool", receipt=Receipt(call_id="c1", content="a.py")),
        Message(role="assistant", content="Listed the files; a.py is the only file."),
    ]


CASES = [
    ("good", good(), "fix the bug", []),
    ("empty query", good(), " ", ["format:query"]),
    ("no assistant", [Message(role="user", content="hi")], "hi", ["format:has-assistant-turn", "format:final-message"]),
    ("assistant before user, no query", [Message(role="assistant", content="hello"), Message(role="user", content="x"),
                                         Message(role="assistant", content="ok")], "", ["format:query", "format:role-order"]),
    ("assistant first, query given", [Message(role="system", content="s"), Message(role="assistant", content="ok")],
     "fix the bug", []),  # the export inserts the query as the user message
    ("tool after user", [good()[1], good()[3], good()[4]], "fix the bug", ["format:role-order"]),
    ("tool before any turn", [good()[3], good()[1], good()[4]], "", ["format:query", "format:role-order"]),
    ("text actions: tool after plain assistant", [good()[1], Message(role="assistant", content="run ls"),
                                                  Message(role="tool", receipt=Receipt(content="a.py")), good()[4]],
     "fix the bug", []),
    ("bad arguments", [good()[1], Message(role="assistant", tool_calls=[call(error="Expecting value")]), good()[3], good()[4]],
     "fix the bug", ["format:tool-arguments"]),
    ("empty assistant", good()[:4] + [Message(role="assistant", content="  "), good()[4]], "fix the bug",
     ["format:empty-assistant-message"]),
    ("reasoning only", good()[:4] + [Message(role="assistant", content="", reasoning="think"), good()[4]], "fix the bug", []),
    ("ends on tool", good()[:4], "fix the bug", ["format:final-message"]),
    ("ends on a call before the user's closing line", good()[:3] + [good()[1]], "fix the bug",
     ["format:final-message"]),
    ("simulated user's closing line after the answer", good() + [Message(role="user", content="thanks ###STOP###")],
     "fix the bug", []),
]


@pytest.mark.parametrize(("name", "messages", "query", "failed"), CASES, ids=[c[0] for c in CASES])
def test_format_checks(name, messages, query, failed) -> None:
    assert format_checks(make(messages, query)) == failed


def test_every_format_check_is_exercised_by_a_failing_case() -> None:
    failing = {check for _, _, _, failed in CASES for check in failed}
    assert failing == set(FORMAT_CHECKS)


def test_release_checks_include_format_failures() -> None:
    broken = make(good()[:4])
    assert "format:final-message" in release_checks(broken)


def test_clean_trajectory_passes_every_gate_check() -> None:
    assert release_checks(make(good())) == []


AUTHENTICITY_CASES = [
    (
        "failed receipt told as success",
        [good()[1], Message(role="assistant", tool_calls=[call("c1", "bash", {"cmd": "pytest"})]),
         Message(role="tool", receipt=Receipt(call_id="c1", content="FAILED tests/test_a.py::test_x - AssertionError\n1 failed",
                                              is_error=True, exit_code=1)),
         Message(role="assistant", content="All tests passed, the bug is fixed.")],
        "authenticity:unverified-completion",
    ),
    (
        "call without receipt",
        [good()[1], Message(role="assistant", tool_calls=[call("c9")]),
         Message(role="assistant", content="Listed the files.")],
        "authenticity:unpaired-call-id",
    ),
    (
        "call id used twice",
        [good()[1], Message(role="assistant", tool_calls=[call("c1"), call("c1")]), good()[3], good()[3], good()[4]],
        "authenticity:unpaired-call-id",
    ),
]


@pytest.mark.parametrize(("name", "messages", "failed"), AUTHENTICITY_CASES, ids=[c[0] for c in AUTHENTICITY_CASES])
def test_authenticity_checks_reuse_the_rules_detectors(name, messages, failed) -> None:
    checks = release_checks(make(messages))
    assert failed in checks
    assert all(c.startswith(("format:", "authenticity:")) for c in checks)


def test_a_bug_in_the_rules_detectors_raises_instead_of_passing_or_hiding(monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.gate

    def broken(*args: object, **kwargs: object) -> list[object]:
        raise KeyError("a bug in judge.rules")

    monkeypatch.setattr(judge.gate, "fired_detectors", broken)
    with pytest.raises(KeyError, match="a bug in judge.rules"):
        release_checks(make(good()))


@pytest.mark.parametrize(("reward", "released"), [(None, True), (1.0, True), (0.5, True), (0.0, False), (-1.0, False)])
def test_a_recorded_task_failure_blocks_release(reward, released) -> None:
    trajectory = make(good())
    trajectory.metadata = TrajectoryMetadata(source_format="openai", reward=reward)
    assert ("outcome:failed" not in release_checks(trajectory)) is released
