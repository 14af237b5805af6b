"""mini-swe-agent trajectories: a JSON list of ``{role, content}`` messages, or the newer
``{"trajectory_format": "mini-swe-agent-1", "messages": [...], "info": {...}}`` object.

An assistant message holds a THOUGHT and one fenced command block (```` ```mswea_bash_command ````, or
```` ```bash ```` in older versions). The command becomes one tool call ``bash`` with id ``mswea-<index>``; the
user message that follows is its observation and becomes the receipt, with the exit code from
``<returncode>N</returncode>`` (non-zero -> error). An assistant message without a command block is plain text,
and the user message after it (usually the harness's format-error feedback) stays a user message.
"""

from __future__ import annotations

import re
from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    as_dict,
    build_metadata,
    build_trajectory,
    make_call,
    make_receipt,
    text_of,
    usage_from,
)
from judge.model import Message, Trajectory
from judge.outcome import from_exit_status

NAME = "mini-swe-agent"

_COMMAND = re.compile(r"```(?:mswea_bash_command|bash|sh)[ \t]*\n(.*?)```", re.DOTALL)
_MARKERS = ("```mswea_bash_command", "<returncode>")


def detect(obj: Any) -> bool:
    if isinstance(obj, dict):
        if str(obj.get("trajectory_format", "")).startswith("mini-swe-agent"):
            return True
        obj = obj.get("messages") if "info" in obj else None
    if not isinstance(obj, list) or not obj:
        return False
    if not all(isinstance(m, dict) and m.get("role") in ("system", "user", "assistant") and "tool_calls" not in m for m in obj):
        return False
    return any(isinstance(m.get("content"), str) and any(mark in m["content"] for mark in _MARKERS) for m in obj)


def command_of(text: str) -> str | None:
    """The command of an assistant message: the last fenced bash block, stripped."""
    blocks = _COMMAND.findall(text)
    return blocks[-1].strip() if blocks else None


def parse(record: Any, src: Source) -> Trajectory:
    info: dict[str, Any] = {}
    if isinstance(record, dict):
        info = as_dict(record.get("info"))
        raw_messages = record.get("messages")
    else:
        raw_messages = record
    if not isinstance(raw_messages, list) or not raw_messages:
        raise RecordError("missing messages: no mini-swe-agent message list")
    messages: list[Message] = []
    pending: str | None = None
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise RecordError(f"message {index} is not an object")
        role = raw.get("role")
        content = text_of(raw.get("content"))
        if role == "assistant":
            command = command_of(content)
            calls = [make_call(f"mswea-{index}", "bash", {"command": command})] if command is not None else []
            pending = calls[0].id if calls else None
            messages.append(Message(role="assistant", content=content, tool_calls=calls, source_index=index))
        elif role == "user" and pending is not None:
            messages.append(Message(role="tool", content=content, receipt=make_receipt(pending, content), source_index=index))
            pending = None
        elif role in ("user", "system"):
            messages.append(Message(role=role, content=content, source_index=index))
        else:
            raise RecordError(f"message {index}: unknown role {role!r}")
    stats = as_dict(info.get("model_stats"))
    config = as_dict(info.get("config"))
    model_config = as_dict(config.get("model"))
    extra = {k: v for k, v in info.items() if k not in ("exit_status", "config")}
    metadata = build_metadata(
        NAME,
        src,
        {"model": model_config.get("model_name"), "outcome": info.get("exit_status"), "usage": usage_from(stats)},
        extra,
        # "Submitted" is ungraded (unknown); any other exit (LimitsExceeded, FormatError, a crash) submitted nothing.
        outcome=from_exit_status(info.get("exit_status"), "info.exit_status"),
    )
    return build_trajectory(NAME, src, messages, trajectory_id=src.stem, metadata=metadata)
