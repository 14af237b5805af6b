"""Our own canonical JSONL: one :meth:`Trajectory.to_json_line` per line.

Read back exactly as written (no renumbering, no metadata rewrite), so export -> import is the identity.

Turn numbers are checked, not repaired: a record whose turns break DESIGN.md's numbering (negative, zero or
descending assistant turns, gaps, a turn beyond any int64) is a reject naming the first wrong message. Every
output of a run (verdicts, clusters, repairs, review decisions, continuation branch turns) points at turns by
number, so renumbering would make them disagree with the user's own file; the reject says what to fix.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from judge.importers._common import RecordError, Source, one_line
from judge.model import SCHEMA_VERSION, Message, Trajectory

NAME = "canonical"
_PREFIX = SCHEMA_VERSION.split("/")[0] + "/"


def detect(obj: Any) -> bool:
    return isinstance(obj, dict) and str(obj.get("schema_version", "")).startswith(_PREFIX)


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    version = record.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RecordError(f"canonical schema {version!r} is not the supported {SCHEMA_VERSION!r}")
    try:
        trajectory = Trajectory.model_validate(record)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise RecordError(one_line(f"invalid canonical trajectory: {where}: {first.get('msg')} ({error.error_count()} errors)")) from None
    check_turn_numbers(trajectory.messages)
    return trajectory


def check_turn_numbers(messages: list[Message]) -> None:
    """Raise RecordError at the first message whose turn breaks the numbering every importer gives
    (:func:`judge.model.number_turns`): the k-th assistant message is turn k (T1 the first), and a tool, user or
    system message carries a turn it follows, 0 (before T1) to the latest. A turn left out (null) is allowed."""
    latest = 0
    for position, message in enumerate(messages):
        turn, role = message.turn, message.role
        if role == "assistant":
            latest += 1
            if turn is not None and turn != latest:
                raise RecordError(one_line(
                    f"turn numbers out of order: message {position} (assistant) has turn {turn}, but it is the "
                    f"assistant message number {latest}; canonical turns count assistant messages from 1 in order "
                    f"(T1, T2, ...): fix the turn numbers (or leave them null)"))
        elif turn is not None and not 0 <= turn <= latest:
            raise RecordError(one_line(
                f"turn numbers out of order: message {position} ({role}) has turn {turn}; a {role} message carries "
                f"the turn it follows, from 0 (before T1) to the latest assistant turn ({latest} here)"))
