"""Issue 24's speed budget, round three: the readings computed once and shared (an action's shell command, a
speech's asserting sentences, the value tokens of a text, exit-code answers) must give what reading them afresh
gives. Table-driven over the shapes each memo sees."""

from __future__ import annotations

import pytest

from judge.facts.analysis import analyse, command_of
from judge.facts.config import default_config
from judge.facts.shell import exit_answer
from judge.facts.values import value_tokens
from judge.model import Trajectory
from judge.rules.detectors import _claims
from judge.testing.builders import call, say, tool, trajectory

CALLS = [
    # (tool name, arguments, receipt, exit code)
    ("Bash", {"command": "grep -q TODO src/app.py"}, "Exit code 1", 1),
    ("Bash", {"command": "python -m pytest -q"}, "3 passed in 0.02s", 0),
    ("Write", {"file_path": "calc.py", "content": "x = 1\n"}, "File created successfully at: calc.py", None),
    ("Read", {"file_path": "calc.py"}, "1: x = 1", None),
    ("TodoWrite", {"todos": [{"id": "t1", "content": "Fix", "status": "completed"}]}, "Todos updated", None),
]


def _run(calls: list[tuple[str, dict[str, object], str, int | None]]) -> Trajectory:
    messages = []
    for n, (name, arguments, receipt, code) in enumerate(calls):
        messages.append(say(f"Step {n}: done, created calc.py and rec12345.", call(f"c{n}", name, **arguments)))
        messages.append(tool(f"c{n}", receipt, exit_code=code, error=bool(code)))
    messages.append(say("All done: calc.py is created and all tests pass."))
    return trajectory("memos", messages)


def test_action_command_is_command_of_its_call() -> None:
    config = default_config()
    an = analyse(_run(CALLS), config)
    assert len(an.actions) == len(CALLS)
    for action in an.actions:
        assert action.call is not None
        assert action.command == command_of(action.call, config)
    assert [a.command is not None for a in an.actions] == [True, True, False, False, False]


def test_speech_claims_are_its_asserting_sentences_and_kept() -> None:
    an = analyse(_run(CALLS), default_config())
    assert any(speech.sentences for speech in an.speeches)
    for speech in an.speeches:
        first = _claims(speech)
        assert first == [s for s in speech.sentences if s.asserts]
        assert _claims(speech) is first  # listed once per speech


VALUE_TEXTS = [
    "created rec12345 and rec67890 (HTTP 404, see --help)",
    "run 20260101 of job imp_301; --records x --version",
    "",
    "nothing to hand on",
    "x" * 5000 + " rec12345",  # longer than the memo holds: scanned each time
]


@pytest.mark.parametrize("text", VALUE_TEXTS)
def test_value_tokens_fresh_set_each_call(text: str) -> None:
    first = value_tokens(text)
    expected = set(first)
    order = list(first)
    first.add("changed-by-caller")
    again = value_tokens(text)
    assert again == expected and again is not first
    assert list(again) == order  # iterates as the first answer did


EXIT_CASES = [
    ("grep -q TODO src/app.py", 1, "no match"),
    ("grep -q TODO src/app.py", 2, None),
    ("diff a.txt b.txt", 1, "differ"),
    ("python -m pytest -q", 1, None),
]


@pytest.mark.parametrize(("command", "code", "meaning"), EXIT_CASES)
def test_exit_answers_memo_matches_a_fresh_reading(command: str, code: int, meaning: str | None) -> None:
    config = default_config()
    patterns = config.patterns
    fresh = exit_answer(command, code, patterns.exit_answers)
    assert (fresh is None) == (meaning is None)
    an = analyse(trajectory("exit", [say("Checking.", call("c1", "Bash", command=command)),
                                     tool("c1", f"Exit code {code}", exit_code=code, error=True)]), config)
    if fresh is not None:
        assert patterns.memo_exit_answers[(command, code)] == fresh
        assert an.actions[0].answer == fresh
