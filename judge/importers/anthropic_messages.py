"""Anthropic Messages records: ``{"id"?, "query"?, "model"?, "metadata"?, "system"?, "messages": [...]}``.

Content is a string or a list of blocks: ``text``, ``thinking`` / ``redacted_thinking`` (-> ``reasoning`` for the
judge, and the blocks themselves with their ``signature`` / ``data`` in ``thinking``, so an export can replay them),
``tool_use`` (-> a tool call, ``input`` as arguments) and, in user messages, ``tool_result`` (-> one tool
message per block, paired by ``tool_use_id``, ``is_error`` kept). A user message that carries tool results and
text becomes the tool messages followed by one user message with the text, in block order; all of them keep
the ``source_index`` of that user message. The top-level ``system`` prompt becomes a system message with
``source_index`` None (it is not an element of ``messages``).
"""

from __future__ import annotations

from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    make_call,
    make_receipt,
    require_list,
    text_of,
    text_of_block,
    trajectory_from_envelope,
    usage_from,
)
from judge.model import Message, ThinkingBlock, Trajectory

NAME = "anthropic"

_RECORD_KEYS = {"id", "query", "metadata", "model", "messages", "system"}
_ANTHROPIC_BLOCKS = {"tool_use", "tool_result", "thinking", "redacted_thinking"}


def detect(obj: Any) -> bool:
    """Anthropic when the record has content blocks only Anthropic uses, or a top-level system with no system/tool roles."""
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list) or not obj["messages"]:
        return False
    messages = obj["messages"]
    if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in messages):
        return False
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in _ANTHROPIC_BLOCKS for b in content):
            return True
    return "system" in obj


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    raw_messages = require_list(record, "messages")
    messages: list[Message] = []
    system = text_of(record.get("system"))
    if system:
        messages.append(Message(role="system", content=system))
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise RecordError(f"message {index} is not an object")
        role = raw.get("role")
        content = raw.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]
        if role == "assistant":
            messages.append(_assistant(blocks, index, usage_from(raw.get("usage"))))
        elif role == "user":
            messages.extend(_user(blocks, index))
        else:
            raise RecordError(f"message {index}: unknown role {role!r}")
    return trajectory_from_envelope(NAME, src, record, messages, _RECORD_KEYS)


def _assistant(blocks: list[Any], index: int, usage: Any) -> Message:
    texts: list[str] = []
    reasoning: list[str] = []
    thinking: list[ThinkingBlock] = []
    calls = []
    for position, block in enumerate(blocks):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "thinking":
            reasoning.append(str(block.get("thinking") or ""))
            signature = block.get("signature")
            thinking.append(ThinkingBlock(thinking=reasoning[-1], signature=signature if isinstance(signature, str) else None))
        elif kind == "redacted_thinking":
            reasoning.append("[redacted thinking]")
            data = block.get("data")
            thinking.append(ThinkingBlock(type="redacted_thinking", data=data if isinstance(data, str) else None))
        elif kind in ("tool_use", "server_tool_use"):
            if not block.get("name"):
                raise RecordError(f"message {index}: tool_use block {position} has no name")
            calls.append(make_call(block.get("id") or f"toolu-{index}-{position}", block["name"], block.get("input")))
        else:
            text = text_of_block(block)
            if text:
                texts.append(text)
    return Message(
        role="assistant",
        content="\n".join(texts),
        reasoning="\n".join(reasoning) if reasoning else None,
        thinking=thinking,
        tool_calls=calls,
        source_index=index,
        usage=usage,
    )


def _user(blocks: list[Any], index: int) -> list[Message]:
    out: list[Message] = []
    texts: list[str] = []
    for block in blocks:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = text_of(block.get("content"))
            call_id = block.get("tool_use_id")
            receipt = make_receipt(str(call_id) if call_id is not None else None, content, is_error=bool(block.get("is_error")))
            out.append(Message(role="tool", content=content, receipt=receipt, source_index=index))
        else:
            text = text_of_block(block)
            if text:
                texts.append(text)
    if texts or not out:
        out.append(Message(role="user", content="\n".join(texts), source_index=index))
    return out
