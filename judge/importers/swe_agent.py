"""SWE-agent ``.traj`` files: ``{history: [...], trajectory?: [...], info?: {...}, environment?, replay_config?}``.

The message list is ``history`` (``source_index`` = position in it). Two dialects:

* function calling: assistant messages carry OpenAI ``tool_calls``; ``role: tool`` messages name their call in
  ``tool_call_ids`` (the first id is used).
* text actions: an assistant message carries the command in ``action``; it becomes one tool call with id
  ``swe-<index>``, name = the command's first word (``find_file``, ``edit``, ``python``...) and arguments
  ``{"command": action}``. The user message that follows it is the observation and becomes that call's receipt.

SWE-agent observations state no exit code, so receipts carry none; ``info.exit_status`` becomes the outcome
(:func:`recorded_outcome`: ``submitted`` is ungraded, any other exit a failure) and ``info.model_stats`` the usage. Demonstration messages (``is_demo``) stay user messages.
"""

from __future__ import annotations

from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    as_dict,
    build_metadata,
    build_trajectory,
    loose_value,
    make_call,
    make_receipt,
    require_list,
    text_of,
    usage_from,
)
from judge.model import Message, Trajectory
from judge.outcome import TaskOutcome, combine, from_exit_status, from_flag

NAME = "swe-agent"


def detect(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("history"), list):
        return False
    if "question" in obj or "mistake_agent" in obj:  # Who&When also has a history list
        return False
    history = obj["history"]
    return "trajectory" in obj or any(isinstance(m, dict) and "agent" in m and "role" in m for m in history)


def recorded_outcome(info: dict[str, Any]) -> TaskOutcome:
    """``info.resolved`` when an evaluation wrote it; else the exit status (a submission is ungraded, unknown; an
    exit without one, such as ``exit_cost`` or ``exit_format``, is a failure)."""
    resolved = loose_value(info.get("resolved"))
    return combine(from_flag(resolved, "info.resolved") if isinstance(resolved, bool) else None,
                   from_exit_status(info.get("exit_status"), "info.exit_status"))


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    history = require_list(record, "history")
    messages: list[Message] = []
    pending_action: str | None = None  # call id of a text action awaiting its observation
    query: str | None = None
    for index, raw in enumerate(history):
        if not isinstance(raw, dict):
            raise RecordError(f"history message {index} is not an object")
        role = raw.get("role")
        content = text_of(raw.get("content"))
        if role == "system":
            messages.append(Message(role="system", content=content, source_index=index))
        elif role == "assistant":
            calls = []
            tool_calls = loose_value(raw.get("tool_calls"))
            if isinstance(tool_calls, list) and tool_calls:
                for position, call in enumerate(tool_calls):
                    function = call.get("function") or {}
                    calls.append(make_call(call.get("id") or f"swe-{index}-{position}", function.get("name") or "unknown", function.get("arguments")))
                pending_action = None
            elif isinstance(raw.get("action"), str) and raw["action"].strip():
                action = raw["action"].strip()
                calls.append(make_call(f"swe-{index}", action.split()[0], {"command": action}))
                pending_action = calls[0].id
            else:
                pending_action = None
            thought = raw.get("thought")
            reasoning = thought if isinstance(thought, str) and thought.strip() and thought.strip() not in content else None
            messages.append(Message(role="assistant", content=content, reasoning=reasoning, tool_calls=calls, source_index=index))
        elif role == "tool":
            ids = loose_value(raw.get("tool_call_ids")) or []
            call_id = ids[0] if isinstance(ids, list) and ids else raw.get("tool_call_id")
            messages.append(
                Message(role="tool", content=content, receipt=make_receipt(call_id, content), source_index=index)
            )
            pending_action = None
        elif role == "user":
            if pending_action is not None and not raw.get("is_demo"):
                receipt = make_receipt(pending_action, content)
                messages.append(Message(role="tool", content=content, receipt=receipt, source_index=index))
                pending_action = None
            else:
                if query is None and not raw.get("is_demo"):
                    query = content
                messages.append(Message(role="user", content=content, source_index=index))
        else:
            raise RecordError(f"history message {index}: unknown role {role!r}")
    info = as_dict(record.get("info"))
    stats = as_dict(info.get("model_stats"))
    extra = {k: v for k, v in record.items() if k not in ("history", "trajectory", "info")}
    extra.update({k: v for k, v in info.items() if k not in ("exit_status",)})
    extra["trajectory_steps"] = len(record.get("trajectory") or [])
    metadata = build_metadata(NAME, src, {"outcome": info.get("exit_status"), "usage": usage_from(stats)}, extra,
                              outcome=recorded_outcome(info))
    return build_trajectory(NAME, src, messages, trajectory_id=src.stem, query=query, metadata=metadata)
