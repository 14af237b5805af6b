"""Load the rules corpus (tests/fixtures/rules_corpus/*.jsonl) as canonical trajectories, with their truth.

Uses ``judge.importers.load_trajectories`` when the importers package provides it; until then a tiny loader of
the two record formats the corpus uses (OpenAI chat, Anthropic messages) builds the same canonical model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from judge.model import Message, Receipt, ToolCall, Trajectory, TrajectoryMetadata, number_turns

CORPUS = Path(__file__).resolve().parent / "fixtures" / "rules_corpus"
_EXIT = re.compile(r"\A\s*(?:exit ?code:?)\s*(-?\d+)", re.IGNORECASE)


def load_corpus() -> list[Trajectory]:
    paths = sorted(CORPUS.glob("*.jsonl"))
    try:
        from judge.importers import load_trajectories  # type: ignore[attr-defined]
    except ImportError:
        load_trajectories = None
    trajectories: list[Trajectory] = []
    for path in paths:
        if load_trajectories is not None:
            trajectories.extend(load_trajectories(path))
        else:
            trajectories.extend(_tiny_load(path))
    return trajectories


def expected_of(trajectory: Trajectory) -> list[dict[str, Any]]:
    meta = trajectory.metadata.extra
    expected = meta.get("expected")
    if expected is None and isinstance(meta.get("metadata"), dict):
        expected = meta["metadata"].get("expected")
    if expected is None:
        raise KeyError(f"{trajectory.id}: no metadata.expected in the corpus record")
    return expected


def _tiny_load(path: Path) -> list[Trajectory]:
    out = []
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        record = json.loads(line)
        fmt = "anthropic" if path.stem == "anthropic" else "openai"
        messages = _anthropic(record) if fmt == "anthropic" else _openai(record)
        meta = dict(record.get("metadata") or {})
        out.append(Trajectory(
            id=record["id"], query=record["query"], query_id=record["id"], messages=number_turns(messages),
            metadata=TrajectoryMetadata(source_format=fmt, source_file=str(path), source_line=line_no,
                                        budget_exhausted=meta.pop("budget_exhausted", None), extra=meta),
        ))
    return out


def _receipt(call_id: str | None, content: str, name: str | None, is_error: bool, exit_code: int | None) -> Receipt:
    if exit_code is None:
        match = _EXIT.search(content)
        exit_code = int(match.group(1)) if match else None
    return Receipt(call_id=call_id, name=name, content=content, is_error=is_error or bool(exit_code), exit_code=exit_code)


def _openai(record: dict[str, Any]) -> list[Message]:
    messages = []
    for raw in record["messages"]:
        role = raw["role"]
        if role == "tool":
            content = raw.get("content") or ""
            messages.append(Message(role="tool", content=content, name=raw.get("name"), receipt=_receipt(
                raw.get("tool_call_id"), content, raw.get("name"), bool(raw.get("is_error")), raw.get("exit_code"))))
        elif role == "assistant":
            calls = [ToolCall(id=c["id"], name=c["function"]["name"], arguments=json.loads(c["function"]["arguments"]))
                     for c in raw.get("tool_calls") or []]
            messages.append(Message(role="assistant", content=raw.get("content") or "", name=raw.get("name"), tool_calls=calls))
        else:
            messages.append(Message(role=role, content=raw.get("content") or "", name=raw.get("name")))
    return messages


def _anthropic(record: dict[str, Any]) -> list[Message]:
    messages = [Message(role="system", content=record["system"])] if record.get("system") else []
    names: dict[str, str] = {}
    for raw in record["messages"]:
        content = raw["content"]
        if isinstance(content, str):
            messages.append(Message(role=raw["role"], content=content))
            continue
        if raw["role"] == "assistant":
            text = "\n".join(b["text"] for b in content if b["type"] == "text")
            calls = [ToolCall(id=b["id"], name=b["name"], arguments=b["input"]) for b in content if b["type"] == "tool_use"]
            names.update({c.id: c.name for c in calls})
            messages.append(Message(role="assistant", content=text, tool_calls=calls))
        else:
            for block in content:
                if block["type"] == "tool_result":
                    text = block["content"] if isinstance(block["content"], str) else "".join(b.get("text", "") for b in block["content"])
                    messages.append(Message(role="tool", content=text, receipt=_receipt(
                        block["tool_use_id"], text, names.get(block["tool_use_id"]), bool(block.get("is_error")), None)))
                elif block["type"] == "text":
                    messages.append(Message(role="user", content=block["text"]))
    return messages
