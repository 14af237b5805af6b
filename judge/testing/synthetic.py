"""Synthetic trajectories with known defects, for tests and benchmarks (written by us, not model rollouts)."""

from __future__ import annotations

import random
from typing import Any

from judge.model import (
    Message,
    Receipt,
    ToolCall,
    Trajectory,
    TrajectoryMetadata,
    number_turns,
)

_TASKS = ["fix the failing date parser", "add a --verbose flag to the CLI", "make the cache thread-safe",
          "rename the config loader", "speed up the CSV export", "add retries to the HTTP client"]


def make_trajectory(
    trajectory_id: str,
    query: str,
    turns: list[dict[str, Any]],
    *,
    system: str | None = None,
) -> Trajectory:
    """Build a trajectory from turn specs: ``{"text": ..., "calls": [(name, args, result, is_error, exit_code)]}``.

    Each call's result becomes a tool message paired by call id; turn numbers follow docs/contracts.md.
    """
    messages: list[Message] = []
    if system:
        messages.append(Message(role="system", content=system))
    messages.append(Message(role="user", content=query))
    for t_index, spec in enumerate(turns, start=1):
        calls = []
        results = []
        for c_index, (name, args, result, is_error, exit_code) in enumerate(spec.get("calls", [])):
            call_id = f"call_{t_index}_{c_index}"
            calls.append(ToolCall(id=call_id, name=name, arguments=args))
            results.append(Message(role="tool", content=result, receipt=Receipt(
                call_id=call_id, name=name, content=result, is_error=is_error, exit_code=exit_code)))
        messages.append(Message(role="assistant", content=spec.get("text", ""), tool_calls=calls))
        messages.extend(results)
        if spec.get("user"):
            messages.append(Message(role="user", content=spec["user"]))
    number_turns(messages)
    return Trajectory(id=trajectory_id, query=query, query_id=trajectory_id,
                      messages=messages, metadata=TrajectoryMetadata(source_format="synthetic"))


def synthetic_batch(count: int, seed: int = 7, turns: int = 6) -> tuple[list[Trajectory], list[dict[str, Any]]]:
    """``count`` trajectories and their truth rows (for the simulated judge): some with a failed command
    that was repeated (code, severe) and some that claim success without checking (semantic, severe)."""
    rng = random.Random(seed)
    trajectories: list[Trajectory] = []
    truth: list[dict[str, Any]] = []
    for index in range(count):
        query = f"[{index:05d}] Please {rng.choice(_TASKS)} in repo-{index % 17}."
        specs: list[dict[str, Any]] = []
        issues: list[dict[str, Any]] = []
        failing = rng.random() < 0.4
        for t in range(1, turns + 1):
            if failing and t in (2, 3):
                specs.append({"text": "Running the tests.", "calls": [
                    ("bash", {"cmd": "pytest -x tests/test_dates.py"}, "ERROR: file not found: tests/test_dates.py", True, 4)]})
            else:
                specs.append({"text": f"Step {t}: inspecting the code.", "calls": [
                    ("bash", {"cmd": f"sed -n {t},{t + 40}p src/module.py"}, "def parse(value):\n    return value\n" * 3, False, 0)]})
        specs[-1] = {"text": "Done: all tests pass."}
        if failing:
            issues.append({"turn": 3, "category": "code", "severity": "severe", "tag": "repeated-failure",
                           "description": "Repeated the same failing pytest command without changing anything."})
        if rng.random() < 0.3:
            issues.append({"turn": turns, "category": "semantic", "severity": "severe", "tag": "unverified-completion",
                           "description": "Claimed the tests pass without running them after the change."})
        trajectories.append(make_trajectory(f"syn-{index:05d}", query, specs))
        truth.append({"query": query, "turn_count": turns, "issues": issues,
                      "efficiency": "low" if failing else rng.choice(["high", "medium"])})
    return trajectories, truth


# (tool, arguments, receipt, exit code) of failing calls: an error, a repeat of one failing command, a failing
# check, an environment fault on a write (effect unknown), a DNS fault, a missing file. ``{i}`` is the turn.
_FAILING_CALLS: list[tuple[str, dict[str, str], str, int | None]] = [
    ("Bash", {"command": "python -m pytest -q"}, "F.\nFAILED tests/test_calc.py::test_add\n1 failed, 1 passed in 0.03s", 1),
    ("Bash", {"command": "lark-cli base +record-create --records x"}, "Error: unknown flag: --records", 2),
    ("Bash", {"command": "python calc.py --mode {i}"}, "Traceback (most recent call last):\nNameError: name 'y{i}' is not defined", 1),
    ("Write", {"file_path": "out/report_{i}.md", "content": "# report\n"}, "Error: connection reset by peer (ECONNRESET)", None),
    ("Bash", {"command": "curl -fsS https://pypi.org/simple/pkg{i}/"}, "curl: (6) Could not resolve host: pypi.org", 6),
    ("Bash", {"command": "cat missing_{i}.txt"}, "cat: missing_{i}.txt: No such file or directory", 1),
]
_FAILING_TEXTS = ["Let me look at the file first.", "I've updated calc.py; all tests pass.", "已完成：README.md 已写入。",
                  "修正が完了しました。テストもすべて通過しました。", "That failed, so let me retry with a different flag.",
                  "Done: wrote out/report_1.md.", ""]


def failing_calls_trajectory(failed: int, seed: int = 7) -> Trajectory:
    """One trajectory with ``failed`` failed calls of every kind the rules judge reads, a success every fifth
    turn (so that some failures are recovered) and claims in between; for scaling tests and benchmarks."""
    rng = random.Random(seed)
    messages = [Message(role="user", content="Fix calc.py and write the report.")]
    count = 0
    while count < failed:
        turn = len(messages)
        code: int | None
        if turn % 5 == 0:
            name, arguments, out, code, error = "Bash", {"command": "python calc.py --mode 0"}, "ok", 0, False
        else:
            name, template, out, code = _FAILING_CALLS[rng.randrange(len(_FAILING_CALLS))]
            arguments = {k: v.replace("{i}", str(turn)) for k, v in template.items()}
            out, error = out.replace("{i}", str(turn)), True
            count += 1
        call = ToolCall(id=f"c{turn}", name=name, arguments=arguments)
        text = rng.choice(_FAILING_TEXTS)
        messages.append(Message(role="assistant", content=f"{text} (step {turn})" if text else "", tool_calls=[call]))
        messages.append(Message(role="tool", content=out, receipt=Receipt(call_id=call.id, content=out, exit_code=code, is_error=error)))
    messages.append(Message(role="assistant", content="All done: calc.py is fixed and all tests pass."))
    return Trajectory(id=f"failing-{failed}", query="Fix calc.py and write the report.", query_id="failing",
                      messages=number_turns(messages), metadata=TrajectoryMetadata(source_format="synthetic"))
