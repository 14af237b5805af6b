"""MAST / MAD human-labelled multi-agent traces: ``{round, mas_name, benchmark_name, trace_id, trace, annotations}``.

The dataset (``MAD_human_labelled_dataset.json``, CC-BY-4.0, Cemri et al. 2025) is a JSON list; each record is a
whole multi-agent run whose log is **one string** (``trace``). The reader gives each record its 0-based index in
the list, which becomes ``metadata.source_line`` (the "record index" of a JSON document), so ``judge validate
--kind mast`` finds record *i*'s labels by that index.

How a trace becomes messages, by system (``mas_name``; two records put the system in ``benchmark_name`` and
``GAIA`` in ``mas_name``, so both fields are tried):

* **AG2** (JSON text with ``trajectory`` = ``[{content, role, name}]``, content a list of lines): ``name`` is the
  agent. The first message states the task: it is the user message. Its speaker is the user proxy that runs the
  code, so the proxy's later messages are tool outputs (receipts without call id, belonging to the turn before
  them). Every other speaker is an assistant with ``name`` = the agent. AG2's own ``role`` says only who the
  message was sent to, so it is not used.
* Text logs are split at speaker markers at line starts (one regular expression per system, scanned once, so
  the work is linear in the trace length). Text before the first marker (launch logs, the task) is one user
  message; text between markers belongs to the marker before it, log noise included. The query is the first
  message of a named user speaker (Magentic ``user``, MetaGPT ``Human``), else that preamble:

  ============ ======================================================== =================================
  system       marker                                                   message
  ============ ======================================================== =================================
  HyperAgent   ``HyperAgent_<id> - INFO - <Agent>'s Response:``         assistant, name = Agent
               ``HyperAgent_<id> - INFO - <A>-><B>:`` (a hand-off)      assistant, name = A
  ChatDev      ``[<time> INFO] <Role>: **<Role><-><Role> on : ...**``   assistant, name = Role
  MetaGPT      ``<time> | INFO | ...:_act:<n> - <Name>(<Role>): ...``   assistant, name = ``Name(Role)``
               ``[<time>] FROM: <Sender> TO: ...`` (communication log)  user if Human, else assistant
               ``<CamelCase>:`` alone on a line (after NEW MESSAGES)   assistant, name = the role
  AppWorld     ``Response from <X> Agent``                              assistant, name = ``X Agent``
               ``Response from <X> API`` / ``Code Execution Output``    tool (receipt without call id)
               ``Message to <X> Agent``                                 user (what agent X is told)
  Magentic     ``---------- <Speaker> ----------``                      user for ``user``, tool for
                                                                        ComputerTerminal, else assistant
  OpenManus    ``... - ✨ <Agent>'s thoughts:``                          assistant, name = Agent
               ``... - 🎯 Tool '<tool>' completed its mission!``        tool, name = tool
  ============ ======================================================== =================================

  HyperAgent traces are JSON whose ``trajectory`` is a list of log lines (joined with newlines); MetaGPT run
  records are JSON whose ``content`` is the log and ``prompt`` the task (the user message).
* A trace no splitter recognises (an unknown system, or a known one whose markers are absent) is imported as
  one assistant message holding the whole text, with ``metadata.extra['split'] = 'whole'`` (else ``'markers'``
  or ``'ag2-json'``); its first 1,000 characters stand in for the query. Nothing is rejected for its layout.

Ids: ``mast-<system>-<benchmark>-<trace_id>`` (lower case, non-alphanumerics as ``-``). ``query_id`` is the
run's ``instance_id`` when the trace carries one (``mast-<system>-<instance_id>``), else the hash of the task text,
so the same run annotated in two rounds stays in one query group. Everything else of the record except the trace
text (``round``, ``annotations`` with the three annotators' votes, the AG2/HyperAgent ``note`` and
``other_data``) goes to ``metadata.extra``; a vote written as ``NaN`` (missing) becomes None.

Outcome (:func:`recorded_outcome`): a trace with a failure mode marked by at least two of the three annotators is a
recorded failure, as is an AG2 run whose ``other_data.correct`` is false.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    build_metadata,
    build_trajectory,
    make_receipt,
    text_of,
)
from judge.model import Message, Role, Trajectory
from judge.outcome import TaskOutcome, combine, from_flag

NAME = "mast"

# A trace imported whole has no recognisable task message: its opening stands in for the query.
WHOLE_QUERY_CHARS = 1000


def detect(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("trace"), str) and "annotations" in obj and "mas_name" in obj


@dataclass(frozen=True)
class Marker:
    """A speaker marker: ``pattern`` matches at a line start and captures ``(?P<name>...)``;
    ``speaker(name)`` gives the message's (role, name)."""

    pattern: str
    speaker: Callable[[str], tuple[Role, str | None]]


def _as(role: Role) -> Callable[[str], tuple[Role, str | None]]:
    return lambda name: (role, name)


def _magentic(name: str) -> tuple[Role, str | None]:
    if name.lower() == "user":
        return "user", name
    return ("tool" if name == "ComputerTerminal" else "assistant"), name


def _metagpt_from(name: str) -> tuple[Role, str | None]:
    return ("user" if name.lower() in ("human", "user") else "assistant"), name


MARKERS: dict[str, tuple[Marker, ...]] = {
    "hyperagent": (
        Marker(r"HyperAgent_\S+ - INFO - (?P<name>[\w -]+?)'s Response:", _as("assistant")),
        Marker(r"HyperAgent_\S+ - INFO - (?P<name>[\w-]+)->[\w-]+:", _as("assistant")),
    ),
    "chatdev": (
        Marker(r"\[[^\]\n]* INFO\] (?P<name>[A-Z][\w ]*?): \*\*[^*\n]*<->", _as("assistant")),
    ),
    "metagpt": (
        Marker(r"\S+ \S+ \| INFO +\| \S+:_act:\d+ - (?P<name>\w+\(\w+\)):", _as("assistant")),
        Marker(r"\[[^\]\n]*\] FROM: (?P<name>\S+) TO:[^\n]*", _metagpt_from),
        Marker(r"(?P<name>[A-Z][a-z]+[A-Z]\w*):[ \t]*$", _as("assistant")),  # CamelCase role: SimpleCoder
    ),
    "appworld": (
        Marker(r"[ \t]*Response from (?P<name>.+? Agent)[ \t]*$", _as("assistant")),
        Marker(r"[ \t]*Response from (?P<name>.+? API)[ \t]*$", _as("tool")),
        Marker(r"[ \t]*(?P<name>Code Execution Output)[ \t]*$", _as("tool")),
        Marker(r"[ \t]*Message to (?P<name>.+? Agent)[ \t]*$", lambda name: ("user", None)),
    ),
    "magentic": (Marker(r"-{5,} (?P<name>\S+) -{5,}[ \t]*$", _magentic),),
    "openmanus": (
        Marker(r".* - \u2728 (?P<name>[\w -]+?)'s thoughts:", _as("assistant")),
        Marker(r".* - \U0001f3af Tool '(?P<name>[^'\n]+)' completed its mission!", _as("tool")),
    ),
}


def _combined(markers: tuple[Marker, ...]) -> re.Pattern[str]:
    """One alternation per system (group names made unique per marker), so a trace is scanned once."""
    parts = [f"(?P<m{i}>{m.pattern.replace('(?P<name>', f'(?P<name{i}>')})" for i, m in enumerate(markers)]
    return re.compile("^(?:" + "|".join(parts) + ")", re.MULTILINE)


_COMPILED: dict[str, re.Pattern[str]] = {system: _combined(markers) for system, markers in MARKERS.items()}


def system_of(record: dict[str, Any]) -> str | None:
    """The MAS that wrote the trace (``mas_name``, else ``benchmark_name``), lower case, or None if unknown."""
    for key in ("mas_name", "benchmark_name"):
        value = re.sub(r"[^a-z0-9]", "", str(record.get(key) or "").lower())
        if value in MARKERS or value == "ag2":
            return value
    return None


def split_text(text: str, system: str) -> list[Message]:
    """Messages of a text trace at the system's speaker markers; [] when no marker occurs."""
    markers = MARKERS.get(system)
    if not markers:
        return []
    pattern = _COMPILED[system]
    matches = list(pattern.finditer(text))
    if not matches:
        return []
    messages: list[Message] = []
    preamble = text[: matches[0].start()].strip()
    if preamble:
        messages.append(Message(role="user", content=preamble, source_index=0))
    for position, match in enumerate(matches):
        end = matches[position + 1].start() if position + 1 < len(matches) else len(text)
        content = text[match.end() : end].strip()
        index = next(i for i in range(len(markers)) if match.group(f"m{i}") is not None)
        role, name = markers[index].speaker(match.group(f"name{index}").strip())
        messages.append(_message(role, name, content, len(messages)))
    return messages


def _message(role: Role, name: str | None, content: str, index: int) -> Message:
    if role == "tool":
        return Message(role="tool", content=content, name=name, receipt=make_receipt(None, content, name=name),
                       source_index=index)
    return Message(role=role, content=content, name=name, source_index=index)


def ag2_messages(trajectory: list[Any]) -> list[Message]:
    """AG2 ``trajectory`` messages: the first speaker (the user proxy) states the task, then returns tool output."""
    messages: list[Message] = []
    proxy: str | None = None
    for index, raw in enumerate(trajectory):
        if not isinstance(raw, dict):
            raise RecordError(f"trace trajectory message {index} is not an object")
        content = "\n".join(map(str, raw["content"])) if isinstance(raw.get("content"), list) else text_of(raw.get("content"))
        name = str(raw.get("name") or raw.get("role") or "")
        if index == 0:
            proxy = name
            messages.append(Message(role="user", content=content, name=name, source_index=index))
        elif name == proxy:
            messages.append(_message("tool", name, content, index))
        else:
            messages.append(Message(role="assistant", content=content, name=name, source_index=index))
    return messages


def without_nan(value: Any) -> Any:
    """``value`` with NaN floats as None: the file writes a missing vote as ``NaN``, which is not JSON and would
    not survive a canonical round trip (and ``bool(nan)`` is True, which would count it as a vote)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [without_nan(v) for v in value]
    if isinstance(value, dict):
        return {k: without_nan(v) for k, v in value.items()}
    return value


def mode_name(raw: str) -> str:
    """``"1.3 Step Repetition\\n\\nDefinition..."`` -> ``"step repetition"`` (number and definition dropped)."""
    head = raw.split("\n", 1)[0].strip()
    return re.sub(r"^\d+(\.\d+)?\s*", "", head).strip().lower()


def majority_modes(annotations: Any) -> list[str]:
    """Failure modes marked by at least two of the three annotators, by name, in annotation order.

    Only a literal ``true`` is a vote: the file writes a missing vote as NaN, and ``bool(nan)`` is True.
    """
    modes: list[str] = []
    for annotation in annotations if isinstance(annotations, list) else []:
        if not isinstance(annotation, dict):
            continue
        votes = sum(annotation.get(f"annotator_{i}") is True for i in (1, 2, 3))
        name = mode_name(str(annotation.get("failure mode") or ""))
        if votes >= 2 and name not in modes:
            modes.append(name)
    return modes


def recorded_outcome(record: dict[str, Any], document: dict[str, Any] | None) -> TaskOutcome:
    """The run's result as the record states it: the benchmark's own grading where the trace carries one (AG2
    GSM-Plus ``other_data.correct``), and the human annotation (a failure mode marked by >= 2 of 3 annotators
    is a recorded failure). Both are read; a failure in either wins (:func:`judge.outcome.combine`)."""
    readings = []
    other = (document or {}).get("other_data")
    if isinstance(other, dict) and isinstance(other.get("correct"), bool):
        readings.append(from_flag(other["correct"], "other_data.correct"))
    modes = majority_modes(record.get("annotations"))
    if modes:
        readings.append(TaskOutcome(status="failure", source="annotations", raw="; ".join(modes)[:200],
                                    note=f"{len(modes)} failure mode(s) marked by >= 2 of 3 annotators"))
    elif isinstance(record.get("annotations"), list) and record["annotations"]:
        readings.append(TaskOutcome(source="annotations", note="annotated, and no failure mode has a majority of the "
                                    "three annotators (which does not say the task succeeded)"))
    return combine(*readings)


def _json_trace(trace: str) -> dict[str, Any] | None:
    if not trace.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(trace)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _slug(value: Any) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-") or "x"


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    trace = record.get("trace")
    if not isinstance(trace, str) or not trace.strip():
        raise RecordError("missing messages: 'trace' is not a non-empty string")
    system = system_of(record) or ""
    document = _json_trace(trace)
    extra: dict[str, Any] = {k: without_nan(v) for k, v in record.items() if k != "trace"}
    extra["system"] = system or None
    query: str | None = None
    instance_id: str | None = None
    text = trace
    messages: list[Message] = []
    split = "markers"
    if document is not None:
        instance_id = document.get("instance_id")
        statement = document.get("problem_statement")
        query = "\n".join(map(str, statement)) if isinstance(statement, list) else (document.get("prompt") or statement)
        for key in ("note", "other_data", "run_id", "cost", "timestamp"):
            if key in document:
                extra[key] = document[key]
        steps = document.get("trajectory")
        if isinstance(steps, list) and steps and all(isinstance(s, dict) for s in steps):
            messages, split = ag2_messages(steps), "ag2-json"
        elif isinstance(steps, list):
            text = "\n".join(map(str, steps))
        elif isinstance(document.get("content"), str):
            text = document["content"]
    if not messages:
        messages = split_text(text, system)
        if messages and query and messages[0].role != "user":
            messages.insert(0, Message(role="user", content=str(query)))
            for position, message in enumerate(messages):
                message.source_index = position
    if query is None:
        # The task is what a named user speaker says (Magentic "user", MetaGPT "Human"), else the preamble.
        query = next((m.content for m in messages if m.role == "user" and m.name), None)
    if not any(m.role == "assistant" for m in messages):
        messages, split = [Message(role="assistant", content=text, source_index=0)], "whole"
        query = query or text[:WHOLE_QUERY_CHARS]
    extra["split"] = split
    mas, benchmark = record.get("mas_name"), record.get("benchmark_name")
    metadata = build_metadata(NAME, src, extra, outcome=recorded_outcome(record, document))
    return build_trajectory(
        NAME,
        src,
        messages,
        trajectory_id=f"mast-{_slug(mas)}-{_slug(benchmark)}-{_slug(record.get('trace_id'))}",
        query=query,
        query_id=f"mast-{_slug(system or mas)}-{_slug(instance_id)}" if instance_id else None,
        metadata=metadata,
    )

