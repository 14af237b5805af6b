"""OpenHands event streams: a JSON list of events (runtime trajectories), or a resolver output record
``{instruction, issue, history: [events], success, git_patch, metrics, ...}`` (older events without ids).

Mapping (``source_index`` = the event's position in the list):

* user ``message`` action -> user message; ``system`` action -> system message.
* agent ``message`` action -> assistant text; ``finish`` -> the final assistant text (its ``thought`` /
  ``final_thought``, else the event message). ``finish`` is not kept as a tool call: it has no observation,
  and it is the agent's answer, not an action on the environment.
* any other agent action (``run``, ``run_ipython``, ``edit``, ``read``, ``browse``, ``think``...) -> one tool call.
  Id and name come from ``tool_call_metadata`` (else ``oh-<event id or index>`` and the action name); arguments
  are the raw JSON the model wrote (from ``tool_call_metadata.model_response``) when present, else the event's
  ``args`` without the thought. The thought becomes the message text. Actions from one model response
  (same ``model_response.id``) form one assistant message with several calls.
* an observation answers the action named by ``cause`` (else the oldest unanswered action) and becomes its
  receipt: exit code from ``extras.metadata.exit_code`` / ``exit_code``; error when the observation type is
  ``error``, ``success`` is false, or the exit code is positive. OpenHands writes exit code ``-1`` for a command
  still running at its timeout (e.g. a server); it is kept as -1 and does not by itself flag an error (the
  event's ``success`` decides). The harness's ``prefix``/``suffix`` notes (e.g. "no new output after 30
  seconds") are part of what the model saw and are kept around the content.
* environment events, agent-state changes, ``null`` observations and ``recall`` events are skipped (counted in
  ``metadata.extra['skipped_events']``). An observation whose ``cause`` names no event of the log rejects the
  record; one that answers a non-call event (a message) is skipped.

Outcome (:func:`recorded_outcome`): the resolver's ``success`` and ``error``; a last agent state ``error``.
"""

from __future__ import annotations

import json
from collections import deque
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
    text_of,
    usage_from,
)
from judge.model import Message, ToolCall, Trajectory
from judge.outcome import TaskOutcome, combine, from_flag

NAME = "openhands"

_SKIPPED_ACTIONS = {"change_agent_state", "recall", "null"}
_SKIPPED_OBSERVATIONS = {"agent_state_changed", "null", "recall", "user_rejected"}
_THOUGHT_KEYS = {"thought", "final_thought", "impl_source", "translated_ipython_code", "is_confirmed", "confirmation_state",
                 "keep_prompt", "action_risk", "security_risk", "blocking", "hidden", "kernel_init_code", "is_input"}


def detect(obj: Any) -> bool:
    events = obj.get("history") if isinstance(obj, dict) and ("instruction" in obj or "git_patch" in obj) else obj
    return (
        isinstance(events, list)
        and bool(events)
        and all(isinstance(e, dict) for e in events)
        and any("action" in e or "observation" in e for e in events)
        and not any("role" in e for e in events)
    )


def recorded_outcome(record: dict[str, Any], events: list[Any]) -> TaskOutcome:
    """The resolver's ``success`` (and its ``error``: a run that stopped on an error did not do the task), and an
    event stream whose last agent state is ``error``. The agent's own ``finish`` claim (``task_completed``) is a
    claim, not a recorded result, and is not read."""
    readings = []
    success = loose_value(record.get("success"))
    if isinstance(success, bool):
        readings.append(from_flag(success, "success"))
    error = loose_value(record.get("error"))
    if error:
        readings.append(TaskOutcome(status="failure", source="error", raw=str(error)[:200], note="the run ended with an error"))
    states = [as_dict(e.get("extras")).get("agent_state") for e in events
              if isinstance(e, dict) and e.get("observation") == "agent_state_changed"]
    if states and states[-1] == "error":
        readings.append(TaskOutcome(status="failure", source="agent_state_changed", raw="error",
                                    note="the agent's last state is error"))
    return combine(*readings)


def parse(record: Any, src: Source) -> Trajectory:
    resolver = isinstance(record, dict)
    events = record.get("history") if resolver else record
    if not isinstance(events, list) or not events:
        raise RecordError("missing messages: no OpenHands event list")
    converter = _Converter()
    for index, event in enumerate(events):
        if not isinstance(event, dict):
            raise RecordError(f"event {index} is not an object")
        converter.add(index, event, first=index == 0)
    messages = converter.messages
    recorded = recorded_outcome(record if resolver else {}, events)
    if resolver:
        issue = loose_value(record.get("issue"))
        issue = issue if isinstance(issue, dict) else {}
        trajectory_id = None
        if issue.get("repo") and issue.get("number") is not None:
            trajectory_id = f"openhands-{issue.get('owner', 'x')}-{issue['repo']}-{issue['number']}"
        success = loose_value(record.get("success"))
        extra = {k: loose_value(v) for k, v in record.items() if k not in ("history", "success", "instruction")}
        extra["skipped_events"] = converter.skipped
        outcome = None if success is None else ("success" if success is True else "failure")
        metadata = build_metadata(NAME, src, {"model": converter.model, "outcome": outcome}, extra, outcome=recorded)
        query = record.get("instruction")
    else:
        trajectory_id = src.stem
        metadata = build_metadata(NAME, src, {"model": converter.model}, {"skipped_events": converter.skipped}, outcome=recorded)
        query = None
    return build_trajectory(NAME, src, messages, trajectory_id=trajectory_id or None, query=query, metadata=metadata)


class _Converter:
    """Turns events into messages, keeping the event -> call map needed to pair observations."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.skipped = 0
        self.model: str | None = None
        self._call_by_event: dict[Any, ToolCall] = {}
        self._non_call_events: set[Any] = set()
        self._unanswered: deque[ToolCall] = deque()
        self._last_response: tuple[str, Message] | None = None

    def add(self, index: int, event: dict[str, Any], *, first: bool) -> None:
        event_id = event.get("id", index)
        if "observation" in event and "action" not in event:
            self._observation(index, event)
            return
        action = event.get("action")
        source = event.get("source")
        # Older (resolver) events keep their arguments at the top level instead of under "args".
        args: dict[str, Any] = event["args"] if isinstance(event.get("args"), dict) else {k: v for k, v in event.items() if k != "action"}
        if source == "environment" or action in _SKIPPED_ACTIONS or action is None:
            self.skipped += 1
            self._non_call_events.add(event_id)
            return
        if action == "system":
            self.messages.append(Message(role="system", content=text_of(args.get("content") or event.get("message")), source_index=index))
            self._non_call_events.add(event_id)
            return
        # Older (resolver) events carry no source: the first message is the user's instruction.
        is_user = source == "user" or (source is None and action == "message" and first)
        if action == "message":
            text = text_of(args.get("content") if args.get("content") is not None else event.get("message"))
            self.messages.append(Message(role="user" if is_user else "assistant", content=text, source_index=index))
            self._non_call_events.add(event_id)
            self._last_response = None
            return
        if is_user:  # a user-side action other than a message (rare): keep its text as user input
            self.messages.append(Message(role="user", content=text_of(event.get("message")), source_index=index))
            self._non_call_events.add(event_id)
            return
        metadata = as_dict(event.get("tool_call_metadata"))
        response = as_dict(metadata.get("model_response"))
        if response.get("model") and self.model is None:
            self.model = str(response["model"])
        thought = args.get("thought") or args.get("final_thought") or ""
        if action == "finish":
            text = args.get("final_thought") or args.get("thought") or event.get("message") or ""
            if not text and args.get("outputs"):
                text = json.dumps(args["outputs"], ensure_ascii=False)
            self.messages.append(Message(role="assistant", content=text_of(text), source_index=index, usage=usage_from(response.get("usage"))))
            self._non_call_events.add(event_id)
            self._last_response = None
            return
        call = make_call(
            metadata.get("tool_call_id") or f"oh-{event_id}",
            metadata.get("function_name") or action,
            _raw_arguments(metadata, response) or {k: v for k, v in args.items() if k not in _THOUGHT_KEYS},
        )
        self._call_by_event[event_id] = call
        self._unanswered.append(call)
        response_id = response.get("id")
        if response_id and self._last_response and self._last_response[0] == response_id:
            self._last_response[1].tool_calls.append(call)  # same model response: one turn, several calls
            return
        message = Message(role="assistant", content=text_of(thought), tool_calls=[call], source_index=index, usage=usage_from(response.get("usage")))
        self.messages.append(message)
        self._last_response = (response_id, message) if response_id else None

    def _observation(self, index: int, event: dict[str, Any]) -> None:
        kind = event.get("observation")
        if kind in _SKIPPED_OBSERVATIONS:
            self.skipped += 1
            return
        cause = event.get("cause")
        if cause is not None:
            call = self._call_by_event.get(cause)
            if call is None:
                if cause in self._non_call_events:
                    self.skipped += 1
                    return
                raise RecordError(f"observation at event {index} answers event {cause!r}, which is not in the log")
        elif self._unanswered:
            call = self._unanswered[0]
        else:
            raise RecordError(f"observation at event {index} follows no action")
        self._unanswered = deque(c for c in self._unanswered if c is not call)
        extras = as_dict(event.get("extras"))
        run_meta = as_dict(extras.get("metadata"))
        exit_code = next((v for v in (run_meta.get("exit_code"), extras.get("exit_code"), event.get("exit_code")) if isinstance(v, int)), None)
        content = f"{run_meta.get('prefix') or ''}{text_of(event.get('content'))}{run_meta.get('suffix') or ''}"
        success = loose_value(event.get("success"))
        is_error = kind == "error" or success is False
        receipt = make_receipt(call.id, content, name=call.name, is_error=is_error, exit_code=exit_code)
        self.messages.append(Message(role="tool", content=content, receipt=receipt, source_index=index))


def _raw_arguments(metadata: dict[str, Any], response: dict[str, Any]) -> Any:
    """The arguments string the model wrote for this call, from the raw completion, if recorded."""
    call_id = metadata.get("tool_call_id")
    for choice in response.get("choices") or []:
        message = choice.get("message") if isinstance(choice, dict) else None
        for call in (message or {}).get("tool_calls") or []:
            if isinstance(call, dict) and call.get("id") == call_id:
                return (call.get("function") or {}).get("arguments")
    return None
