"""Who&When multi-agent logs: ``{history: [...], question, question_ID, mistake_agent, mistake_step, ...}``.

``source_index`` is the position in ``history``, so the gold ``mistake_step`` (a 0-based history index) maps
to a message exactly. Roles:

* Hand-Crafted (Magentic-One): ``role`` is the speaker. ``human`` -> user; ``ComputerTerminal`` -> tool;
  every other speaker (``Orchestrator (thought)``, ``Orchestrator (-> WebSurfer)``, ``WebSurfer``...) ->
  assistant with ``name`` = the raw role.
* Algorithm-Generated (AG2 group chats): ``name`` is the speaker and ``role`` is user/assistant from AG2's
  point of view, which says nothing about who acted. ``Computer_terminal`` -> tool; every expert ->
  assistant with ``name`` = the agent. The opening message is an expert's (it restates the task and earlier
  results, and is sometimes the gold mistake step), so it is T1, not a user message.

Terminal outputs become receipts **without a call id**: the logs record no calls, only that a terminal spoke
after an agent. Such a receipt belongs to the preceding turn (``number_turns`` gives it the latest turn),
which is the agent whose code the terminal ran. ``exitcode: N`` gives the exit code (non-zero -> error).

Ids: ``ww-<subset>-<file stem>`` with subset ``algorithm-generated`` or ``hand-crafted`` (told apart by shape:
AG2 messages carry ``name``). ``query`` = ``question``, ``query_id`` = ``question_ID``. The gold label
(``mistake_agent``, ``mistake_step`` as int, ``mistake_reason``) and the rest go to ``metadata.extra``.

Outcome (:func:`recorded_outcome`): every Who&When log is a recorded failure (``is_correct`` / ``is_corrected``
false, and a failure annotation); ``metadata.task_outcome`` says so, and the release gate holds it.
"""

from __future__ import annotations

from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    build_metadata,
    build_trajectory,
    loose_value,
    make_receipt,
    require_list,
    text_of,
)
from judge.model import Message, Trajectory
from judge.outcome import TaskOutcome, combine, from_flag

NAME = "who-and-when"

_TERMINALS = {"Computer_terminal", "ComputerTerminal"}
_USERS = {"human"}


def detect(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("history"), list) and ("question" in obj or "mistake_agent" in obj)


def recorded_outcome(record: dict[str, Any]) -> TaskOutcome:
    """What the log records about the result: ``is_correct`` (Algorithm-Generated) or ``is_corrected``
    (Hand-Crafted), and the failure annotation itself: Who&When annotates failed runs only, so a record naming
    the agent and step that caused the failure (``mistake_agent`` / ``mistake_step``) is a recorded failure."""
    readings = []
    for key in ("is_correct", "is_corrected"):
        value = loose_value(record.get(key))
        if isinstance(value, bool):
            readings.append(from_flag(value, key))
    if record.get("mistake_agent") or record.get("mistake_step") not in (None, ""):
        readings.append(TaskOutcome(status="failure", source="mistake_agent/mistake_step",
                                    raw=f"{record.get('mistake_agent')} at step {record.get('mistake_step')}",
                                    note="Who&When annotates failed runs only: the log names the agent and step "
                                         "that caused the failure"))
    return combine(*readings)


def subset_of(history: list[Any]) -> str:
    return "algorithm-generated" if any(isinstance(m, dict) and "name" in m for m in history) else "hand-crafted"


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    history = require_list(record, "history")
    subset = subset_of(history)
    messages: list[Message] = []
    for index, raw in enumerate(history):
        if not isinstance(raw, dict):
            raise RecordError(f"history message {index} is not an object")
        content = text_of(raw.get("content"))
        role = str(raw.get("role") or "")
        speaker = raw.get("name") if subset == "algorithm-generated" else role
        if speaker in _TERMINALS:
            receipt = make_receipt(None, content, name=str(speaker))
            messages.append(Message(role="tool", content=content, name=str(speaker), receipt=receipt, source_index=index))
        elif speaker in _USERS or (speaker is None and role == "user"):
            messages.append(Message(role="user", content=content, name=speaker, source_index=index))
        elif speaker is None and role == "system":
            messages.append(Message(role="system", content=content, source_index=index))
        else:
            messages.append(Message(role="assistant", content=content, name=str(speaker or role), source_index=index))
    extra = {k: v for k, v in record.items() if k not in ("history", "question", "question_ID")}
    extra["subset"] = subset
    step = loose_value(extra.get("mistake_step"))
    if isinstance(step, str) and step.strip().lstrip("-").isdigit():
        extra["mistake_step"] = int(step)
    correct = loose_value(record.get("is_correct", record.get("is_corrected")))
    outcome = "failure" if correct is False else ("success" if correct is True else None)
    metadata = build_metadata(NAME, src, {"outcome": outcome}, extra, outcome=recorded_outcome(record))
    return build_trajectory(
        NAME,
        src,
        messages,
        trajectory_id=f"ww-{subset}-{src.stem}",
        query=record.get("question"),
        query_id=record.get("question_ID"),
        metadata=metadata,
    )
