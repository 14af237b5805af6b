"""ATIF, Harbor's Agent Trajectory Interchange Format (``schema_version`` ``ATIF-v1.x``).

``{schema_version, session_id, agent: {name, version, model_name?}, steps: [...], notes?, final_metrics?, extra?}``
with steps ``{step_id, source: system|user|agent, message, reasoning_content?, model_name?, tool_calls?:
[{tool_call_id, function_name, arguments}], observation?: {results: [{source_call_id?, content?,
subagent_trajectory_ref?}]}, metrics?: {prompt_tokens, completion_tokens, cached_tokens, ...}}``.

Mapping: a system/user step -> one system/user message; an agent step -> one assistant message (``message``,
``reasoning_content`` -> reasoning, tool calls, per-turn usage from ``metrics``) followed by one tool message per
observation result. A result's ``source_call_id`` pairs it with its call; a result without one (an action that is
not a tool call) is a receipt without call id belonging to that turn, as is an observation on a system step.
All messages of a step keep the step's position in ``steps`` as ``source_index``. Ids: ``session_id``.
ATIF has no result field (Harbor keeps the verifier's reward outside the trajectory): a ``reward`` or ``outcome``
in the trajectory's ``extra`` object is read as the recorded outcome, like those keys in any record's metadata.
"""

from __future__ import annotations

import json
from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    as_dict,
    build_metadata,
    build_trajectory,
    make_call,
    make_receipt,
    require_list,
    text_of,
    usage_from,
)
from judge.model import Message, Trajectory

NAME = "atif"


def detect(obj: Any) -> bool:
    return isinstance(obj, dict) and str(obj.get("schema_version", "")).upper().startswith("ATIF") and isinstance(obj.get("steps"), list)


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    steps = require_list(record, "steps")
    messages: list[Message] = []
    models: list[str] = []
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            raise RecordError(f"step {index} is not an object")
        source = step.get("source")
        text = text_of(step.get("message"))
        if source in ("system", "user"):
            messages.append(Message(role=source, content=text, source_index=index))
        elif source == "agent":
            calls = []
            for position, call in enumerate(step.get("tool_calls") or []):
                if not isinstance(call, dict) or not call.get("function_name"):
                    raise RecordError(f"step {index}: tool call {position} has no function_name")
                calls.append(make_call(call.get("tool_call_id") or f"atif-{index}-{position}", call["function_name"], call.get("arguments")))
            if step.get("model_name"):
                models.append(str(step["model_name"]))
            messages.append(
                Message(
                    role="assistant",
                    content=text,
                    reasoning=step.get("reasoning_content") if isinstance(step.get("reasoning_content"), str) else None,
                    tool_calls=calls,
                    source_index=index,
                    usage=usage_from(step.get("metrics")),
                )
            )
        else:
            raise RecordError(f"step {index}: unknown source {source!r}")
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, dict) else None
        for result in results or []:
            if not isinstance(result, dict):
                raise RecordError(f"step {index}: observation result is not an object")
            content = result.get("content")
            if content is None and result.get("subagent_trajectory_ref"):
                content = json.dumps(result["subagent_trajectory_ref"], ensure_ascii=False)
            content = text_of(content)
            receipt = make_receipt(result.get("source_call_id"), content)
            messages.append(Message(role="tool", content=content, receipt=receipt, source_index=index))
    agent = as_dict(record.get("agent"))
    final = as_dict(record.get("final_metrics"))
    usage = None
    if final:
        usage = usage_from(
            {"input_tokens": final.get("total_prompt_tokens"), "output_tokens": final.get("total_completion_tokens"),
             "cached_tokens": final.get("total_cached_tokens")}
        )
    extra = {k: v for k, v in record.items() if k not in ("steps", "extra")}
    meta = as_dict(record.get("extra"))
    metadata = build_metadata(NAME, src, {"model": agent.get("model_name") or (models[0] if models else None), "usage": usage,
                                         "tools": agent.get("tool_definitions")}, extra, meta)
    return build_trajectory(
        NAME, src, messages, trajectory_id=record.get("session_id"), query_id=meta.get("query_id"), metadata=metadata
    )
