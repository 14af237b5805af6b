"""The ``example-log`` format: one JSON object per line, ``{"example_log": {"id", "task", "steps", "result"}}``.

A step is ``{"say": TEXT}`` (an assistant message) or ``{"run": COMMAND, "output": TEXT, "exit": N}`` (an
assistant message calling the shell, and the shell's receipt).
"""

from __future__ import annotations

from typing import Any

from judge.importers import (
    FormatSpec,
    RecordError,
    Source,
    build_metadata,
    build_trajectory,
    make_call,
    make_receipt,
    register_format,
)
from judge.model import Message, Trajectory

NAME = "example-log"


def detect(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("example_log"), dict)


def parse(record: Any, src: Source) -> Trajectory:
    log = record["example_log"]
    steps = log.get("steps")
    if not isinstance(steps, list) or not steps:
        raise RecordError("example_log.steps must be a non-empty list")
    messages = [Message(role="user", content=str(log.get("task") or ""))]
    for index, step in enumerate(steps, start=1):
        if "run" in step:
            call = make_call(f"run-{index}", "shell", {"command": step["run"]})
            messages.append(Message(role="assistant", content=str(step.get("say") or ""), tool_calls=[call]))
            messages.append(Message(role="tool", receipt=make_receipt(call.id, str(step.get("output") or ""),
                                                                      exit_code=step.get("exit"))))
        else:
            messages.append(Message(role="assistant", content=str(step.get("say") or "")))
    metadata = build_metadata(NAME, src, {"outcome": log.get("result")})
    return build_trajectory(NAME, src, messages, trajectory_id=log.get("id"), metadata=metadata)


register_format(FormatSpec(NAME, "Example plugin log (example_log: task, steps)", detect, parse))
