"""OpenAI chat records: ``{"id"?, "query"?, "metadata"?, "model"?, "messages": [...]}`` (a JSONL line or a JSON
object), or a bare JSON list of chat messages.

Assistant ``tool_calls`` carry JSON-string arguments (a Python-repr string is accepted, as in AgentRx exports;
a string that parses as neither is kept raw with ``arguments_error``); the legacy ``function_call`` field is
read as one call. ``role: tool`` (or legacy ``function``) results are receipts paired by ``tool_call_id``; a
result naming a call id no earlier call has rejects the record. Optional extension keys on a tool message,
``is_error`` and ``exit_code``, are honoured; otherwise an ``Exit code N`` first line (the Bash convention of
Claude-Code-like harnesses) or ``<returncode>N</returncode>`` gives the exit code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard

from judge.importers._common import (
    RecordError,
    Source,
    loose_value,
    make_call,
    make_receipt,
    new_message,
    require_list,
    text_of,
    trajectory_from_envelope,
    usage_from,
)
from judge.model import Message, Receipt, Role, Trajectory, Usage

NAME = "openai"

_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool", "function": "tool"}
_RECORD_KEYS = {"id", "query", "metadata", "model", "messages"}
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")  # the first that holds a string is the reasoning


def detect(obj: Any) -> bool:
    """A bare list of chat messages, or any object with a ``messages`` list.

    OpenAI is the last, catch-all chat format: a record with a ``messages`` list that no other format claims
    is parsed here, so a malformed one is rejected with a precise reason ("message 3: unknown role ...")
    rather than as an unknown format.
    """
    if isinstance(obj, list):
        return is_message_list(obj)
    return isinstance(obj, dict) and isinstance(obj.get("messages"), list)


def is_message_list(value: Any) -> TypeGuard[list[dict[str, Any]]]:
    """A non-empty list of dicts that all have an OpenAI chat role."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and m.get("role") in _ROLES for m in value)
    )


def convert_messages(
    raw_messages: list[Any],
    *,
    receipt_hook: Callable[[dict[str, Any], Receipt], Receipt] | None = None,
) -> list[Message]:
    """Convert OpenAI chat messages to canonical messages (shared with the tau-bench importer).

    ``receipt_hook`` lets a dialect adjust a receipt (tau-bench marks ``Error: ...`` tool outputs as errors).
    """
    messages: list[Message] = []
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise RecordError(f"message {index} is not an object")
        role = _ROLES.get(str(raw.get("role")))
        if role is None:
            raise RecordError(f"message {index}: unknown role {raw.get('role')!r}")
        # Inlined first cases of text_of and usage_from: this loop runs once per message of every chat import.
        content = raw.get("content")
        if not isinstance(content, str):
            content = text_of(content)
        usage = usage_from(raw["usage"]) if "usage" in raw else None
        name = raw.get("name")
        if not isinstance(name, str):
            name = None
        if role == "assistant":
            calls = _calls(raw, index)
            if calls and content.strip() == "None":  # AgentRx exports write a missing content as 'None'
                content = ""
            reasoning = None
            for key in _REASONING_KEYS:
                if isinstance(value := raw.get(key), str):
                    reasoning = value
                    break
            fields = {"role": role, "content": content, "source_index": index, "tool_calls": calls}
            if reasoning is not None:
                fields["reasoning"] = reasoning
            messages.append(_message(fields, name, usage))
        elif role == "tool":
            call_id = loose_value(raw.get("tool_call_id"))
            if call_id is None and raw.get("role") == "function":
                call_id = _legacy_call_id(messages, name)
            receipt = make_receipt(
                str(call_id) if call_id is not None else None,
                content,
                name=name,
                is_error=bool(loose_value(raw.get("is_error"))),
                exit_code=_int_or_none(raw.get("exit_code")),
            )
            if receipt_hook is not None:
                receipt = receipt_hook(raw, receipt)
            messages.append(_message({"role": role, "content": content, "source_index": index, "receipt": receipt}, name, None))
        else:
            messages.append(_message({"role": role, "content": content, "source_index": index}, name, usage))
    return messages


def _message(fields: dict[str, Any], name: str | None, usage: Usage | None) -> Message:
    """The message of ``fields`` plus name and usage when set (a field left at its default is not validated)."""
    if name is not None:
        fields["name"] = name
    if usage is not None:
        fields["usage"] = usage
    return new_message(fields)


def _calls(raw: dict[str, Any], index: int) -> list[Any]:
    tool_calls = loose_value(raw.get("tool_calls"))
    calls = []
    if isinstance(tool_calls, list):
        for position, call in enumerate(tool_calls):
            call = loose_value(call)
            if not isinstance(call, dict):
                raise RecordError(f"message {index}: tool call {position} is not an object")
            function = loose_value(call.get("function")) or {}
            name = function.get("name") if isinstance(function, dict) else None
            if not name:
                raise RecordError(f"message {index}: tool call {position} has no function name")
            call_id = call.get("id") or f"call-{index}-{position}"
            calls.append(make_call(call_id, name, function.get("arguments")))
    elif tool_calls not in (None, []):
        raise RecordError(f"message {index}: tool_calls is neither a list nor a parseable list string")
    legacy = loose_value(raw.get("function_call"))
    if isinstance(legacy, dict) and legacy.get("name"):
        calls.append(make_call(f"function-{index}", legacy["name"], legacy.get("arguments")))
    return calls


def _legacy_call_id(messages: list[Message], name: str | None) -> str | None:
    """Legacy ``role: function`` results answer the latest ``function_call`` of that name."""
    for message in reversed(messages):
        for call in message.tool_calls:
            if call.id.startswith("function-") and (name is None or call.name == name):
                return call.id
    return None


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def parse(record: Any, src: Source) -> Trajectory:
    """One OpenAI chat record (or bare message list) -> Trajectory."""
    if isinstance(record, list):
        record = {"messages": record}
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    raw_messages = require_list(record, "messages")
    messages = convert_messages(raw_messages)
    return trajectory_from_envelope(NAME, src, record, messages, _RECORD_KEYS)
