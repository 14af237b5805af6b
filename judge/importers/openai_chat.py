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
from judge.model import Message, Receipt, Role, Trajectory

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
    error_text: Callable[[str], bool] | None = None,
) -> list[Message]:
    """Convert OpenAI chat messages to canonical messages (shared with the tau-bench importer).

    ``error_text`` lets a dialect mark tool outputs that report a failure in their text as errors (tau-bench:
    ``Error: ...``), besides the ``is_error`` key and a non-zero exit code.
    """
    messages: list[Message] = []
    # This loop runs once per message of every chat import: the common cases are inlined (text_of, usage_from,
    # _calls and the message constructor are called only for what needs them).
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise RecordError(f"message {index} is not an object")
        role = _ROLES.get(str(raw.get("role")))
        if role is None:
            raise RecordError(f"message {index}: unknown role {raw.get('role')!r}")
        content = raw.get("content")
        if not isinstance(content, str):
            content = text_of(content)
        usage = usage_from(raw["usage"]) if "usage" in raw else None  # read (and so checked) on every role
        fields: dict[str, Any] = {"role": role, "content": content, "source_index": index}
        name = raw.get("name")
        if isinstance(name, str):
            fields["name"] = name
        else:
            name = None
        if role == "tool":  # a field left at its default is not given (not validated)
            fields["receipt"] = _receipt(raw, content, name, messages, error_text)
            messages.append(new_message(fields))
            continue
        if usage is not None:
            fields["usage"] = usage
        if role == "assistant":
            calls = _calls(raw, index) if raw.get("tool_calls") is not None or raw.get("function_call") is not None else []
            if calls and content.strip() == "None":  # AgentRx exports write a missing content as 'None'
                fields["content"] = ""
            fields["tool_calls"] = calls
            for key in _REASONING_KEYS:  # the first that holds a string
                if isinstance(value := raw.get(key), str):
                    fields["reasoning"] = value
                    break
        messages.append(new_message(fields))
    return messages


def _receipt(raw: dict[str, Any], content: str, name: str | None, messages: list[Message],
             error_text: Callable[[str], bool] | None) -> Receipt:
    """The receipt of a ``role: tool`` (or legacy ``function``) message; ``messages``: the ones converted before it."""
    call_id = loose_value(raw.get("tool_call_id"))
    if call_id is None and raw.get("role") == "function":
        call_id = _legacy_call_id(messages, name)
    is_error = raw.get("is_error")
    exit_code = raw.get("exit_code")
    return make_receipt(
        str(call_id) if call_id is not None else None,
        content,
        name=name,
        is_error=(is_error is not None and bool(loose_value(is_error))) or (error_text is not None and error_text(content)),
        exit_code=_int_or_none(exit_code) if exit_code is not None else None,
    )


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
