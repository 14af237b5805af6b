"""inspect_ai eval logs (log format version 2): one trajectory per sample (per epoch).

JSON logs are read here; an ``.eval`` log (inspect's zip format) is read through inspect_ai by
:func:`judge.importers.reader.read_inspect_eval`, which hands each sample to :func:`parse` the same way.

A log file ``{version, status, eval: {task, model, ...}, samples: [...]}`` is split into its samples (the
record index is the sample's position in ``samples``); a bare sample object (``{id, epoch, input, messages,
...}``) is read as one record too. Messages: ``content`` is a string or a list of content blocks (``text``,
``reasoning`` -> ``reasoning``, images); assistant ``tool_calls`` are ``{id, function, arguments (dict)}``;
tool messages pair by ``tool_call_id`` and an ``error`` object marks the receipt as an error.
``attachment://<hash>`` references are resolved from the sample's ``attachments``.

Ids: ``inspect-<task>-<sample id>-e<epoch>``; the query group is ``inspect-<task>-<sample id>``. The first
score's value becomes the outcome, and its float value (C=1, I=0, P=0.5, N=0, numbers as is) the reward. The
recorded result (``metadata.task_outcome``) reads every scorer (C success, I and N failure, P partial, numbers as
rewards, dict and list scores per entry; scorers that disagree make it partial), and a sample ``error`` is a failure.
A score of trajudge's own inspect scorer (:mod:`judge.inspect`) is a judgment, not a result: it is left out of
both and kept in ``metadata.extra["trajudge"]`` by scorer name (score, explanation, release, majority issues).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
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
from judge.model import Message, ThinkingBlock, Trajectory, Usage
from judge.outcome import TaskOutcome, combine, from_inspect_scores

NAME = "inspect"

_SCORE_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_TRAJUDGE_MARKER = "trajudge_version"  # judge.inspect.MARKER (that module needs inspect_ai: not imported here)


@dataclass(frozen=True)
class Sample:
    """A sample with the header of the log it came from."""

    eval: dict[str, Any]
    sample: dict[str, Any]


def detect(obj: Any) -> bool:
    if isinstance(obj, Sample):
        return True
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("eval"), dict) and ("samples" in obj or "status" in obj):
        return True
    return "epoch" in obj and "input" in obj and isinstance(obj.get("messages"), list)


def split(document: Any) -> Iterator[tuple[int | None, Any]] | None:
    """The samples of a log file, each with the eval header; None when ``document`` is a bare sample."""
    if not (isinstance(document, dict) and isinstance(document.get("eval"), dict)):
        return None
    header = document["eval"]
    samples = document.get("samples")
    if not isinstance(samples, list) or not samples:
        raise RecordError(f"inspect log has no samples (status {document.get('status')!r})")
    return ((index, Sample(header, sample)) for index, sample in enumerate(samples))


def parse(record: Any, src: Source) -> Trajectory:
    if isinstance(record, Sample):
        header, sample = record.eval, record.sample
    elif isinstance(record, dict) and isinstance(record.get("eval"), dict):
        # A whole log given as one record (e.g. one JSONL line): only a single-sample log maps to one trajectory.
        samples = record.get("samples") or []
        if len(samples) != 1:
            raise RecordError(f"inspect log with {len(samples)} samples in one record; give it as a .json file")
        header, sample = record["eval"], samples[0]
    elif isinstance(record, dict):
        header, sample = {}, record
    else:
        raise RecordError("record is not a JSON object")
    if not isinstance(sample, dict):
        raise RecordError("sample is not an object")
    raw_messages = sample.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise RecordError(f"missing messages: sample {sample.get('id')!r} has no messages")
    attachments = as_dict(sample.get("attachments"))
    messages = [_message(index, raw, attachments) for index, raw in enumerate(raw_messages)]
    task = header.get("task") or "task"
    sample_id = sample.get("id")
    epoch = sample.get("epoch", 1)
    query = _resolve(text_of(sample.get("input")) if not isinstance(sample.get("input"), list) else "", attachments)
    results, judgments = _split_scores(sample.get("scores"))
    outcome, reward = _score(results)
    usage = _usage(sample.get("model_usage"))
    extra = {
        "task": task,
        "sample_id": sample_id,
        "epoch": epoch,
        "target": sample.get("target"),
        "sample_metadata": sample.get("metadata") or {},
        "scores": sample.get("scores"),
        **({"trajudge": judgments} if judgments else {}),
        "eval_task_id": header.get("task_id"),
        "eval_run_id": header.get("run_id"),
    }
    if sample.get("error"):
        extra["error"] = sample["error"]
        outcome = outcome or "error"
    recorded = from_inspect_scores(results)
    if sample.get("error"):  # the sample did not finish: whatever the scores say, the task was not done
        recorded = combine(TaskOutcome(status="failure", source="sample.error", raw=str(sample["error"])[:200],
                                       note="the sample ended with an error"), recorded)
    metadata = build_metadata(NAME, src, {"model": header.get("model"), "outcome": outcome, "reward": reward, "usage": usage,
                                          "tools": _offered_tools(sample, attachments)}, extra, outcome=recorded)
    query_id = f"inspect-{task}-{sample_id}" if sample_id is not None else None
    trajectory_id = f"{query_id}-e{epoch}" if query_id else None
    return build_trajectory(NAME, src, messages, trajectory_id=trajectory_id, query=query or None, query_id=query_id, metadata=metadata)


def _offered_tools(sample: dict[str, Any], attachments: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The tools (ToolInfo) offered in the sample's model events, first declaration of each name; None if none."""
    tools: dict[str, dict[str, Any]] = {}
    for event in sample.get("events") or []:
        if isinstance(event, dict) and event.get("event") == "model" and isinstance(event.get("tools"), list):
            for tool in event["tools"]:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str) and tool["name"] not in tools:
                    description = tool.get("description")
                    tools[tool["name"]] = {**tool, "description": _resolve(description, attachments) if isinstance(description, str) else ""}
    return list(tools.values()) or None


def _message(index: int, raw: Any, attachments: dict[str, Any]) -> Message:
    if not isinstance(raw, dict):
        raise RecordError(f"message {index} is not an object")
    role = raw.get("role")
    content = raw.get("content")
    text = _resolve(text_of(content), attachments)
    reasoning = None
    thinking: list[ThinkingBlock] = []
    if isinstance(content, list):
        blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "reasoning"]
        reasoning = "\n".join(str(b.get("reasoning") or "") for b in blocks if b.get("reasoning") and not b.get("redacted")) or None
        # Signed reasoning (Anthropic models): kept verbatim so an export can replay it; a redacted block's
        # ``reasoning`` is the encrypted payload, not text.
        if any(b.get("signature") or b.get("redacted") for b in blocks):
            thinking = [ThinkingBlock(type="redacted_thinking", data=str(b.get("reasoning") or "")) if b.get("redacted")
                        else ThinkingBlock(thinking=str(b.get("reasoning") or ""), signature=b.get("signature")) for b in blocks]
    if role == "assistant":
        calls = []
        for position, call in enumerate(raw.get("tool_calls") or []):
            if not isinstance(call, dict) or not call.get("function"):
                raise RecordError(f"message {index}: tool call {position} has no function")
            arguments = call.get("arguments")
            arguments = {k: _resolve(v, attachments) if isinstance(v, str) else v for k, v in arguments.items()} if isinstance(arguments, dict) else arguments
            calls.append(make_call(call.get("id") or f"call-{index}-{position}", call["function"], arguments))
        return Message(role="assistant", content=text, reasoning=reasoning, thinking=thinking, tool_calls=calls, source_index=index)
    if role == "tool":
        error = raw.get("error")
        if isinstance(error, dict) and not text:
            text = str(error.get("message") or "")
        receipt = make_receipt(raw.get("tool_call_id"), text, name=raw.get("function"), is_error=bool(error))
        return Message(role="tool", content=text, receipt=receipt, source_index=index)
    if role in ("system", "user"):
        return Message(role=role, content=text, source_index=index)
    raise RecordError(f"message {index}: unknown role {role!r}")


def _resolve(text: str, attachments: dict[str, Any]) -> str:
    if text.startswith("attachment://"):
        return str(attachments.get(text.removeprefix("attachment://"), text))
    return text


def _split_scores(scores: Any) -> tuple[Any, dict[str, dict[str, Any]]]:
    """The scores that record the task's result, and the trajudge judgments (``judge.inspect.trajudge``, known
    by the ``trajudge_version`` key of their metadata): a 2-5 judgment of the process is not a reward, and
    an unscored one (NaN) is not an unreadable result. A judgment comes back as its score (None when
    unscored), explanation, reason and metadata (release, majority issues...)."""
    if not isinstance(scores, dict):
        return scores, {}
    results: dict[str, Any] = {}
    judgments: dict[str, dict[str, Any]] = {}
    for name, score in scores.items():
        metadata = score.get("metadata") if isinstance(score, dict) else None
        if not (isinstance(metadata, dict) and _TRAJUDGE_MARKER in metadata):
            results[name] = score
            continue
        value = score.get("value")
        finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        judgments[name] = {"score": value if finite else None, "explanation": score.get("explanation"),
                           "reason": score.get("reason"), **metadata}
    return results, judgments


def _score(scores: Any) -> tuple[str | None, float | None]:
    if not isinstance(scores, dict) or not scores:
        return None, None
    first = next(iter(scores.values()))
    value = first.get("value") if isinstance(first, dict) else None
    if isinstance(value, bool):
        return str(value), float(value)
    if isinstance(value, (int, float)):
        return str(value), float(value)
    if isinstance(value, str):
        return value, _SCORE_VALUES.get(value)
    return (None, None) if value is None else (str(value), None)


def _usage(model_usage: Any) -> Usage | None:
    if not isinstance(model_usage, dict):
        return None
    total: Usage | None = None
    for value in model_usage.values():
        usage = usage_from(value)
        if usage is not None:
            total = usage if total is None else total + usage
    return total
