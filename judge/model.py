"""The canonical trajectory model every importer produces and every later stage reads.

A trajectory is kept as its ordered message list (nothing reordered, nothing merged), with turn numbers
attached: T1 is the first assistant message, and a tool result carries the turn of the call it answers
(docs/contracts.md, "turn"). Everything else (the turn view, receipts paired to calls, hashes) is derived from the
messages, so there is one source of truth and the canonical JSON round-trips to the identical model.
"""

from __future__ import annotations

import hashlib
import math
import operator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.jsonenc import canonical_json, sorted_compact_json
from judge.outcome import TaskOutcome, from_fields

SCHEMA_VERSION = "trajudge.trajectory/1"

Role = Literal["system", "user", "assistant", "tool"]


class Usage(BaseModel):
    """Token counts, as far as the source reports them (None = unknown, never a guessed zero)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None

    @property
    def total(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            cached_tokens=add(self.cached_tokens, other.cached_tokens),
        )


class ToolCall(BaseModel):
    """One tool call of an assistant message. ``arguments`` is parsed; the raw text is kept when it did not parse."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: Any = None
    raw_arguments: str | None = Field(
        default=None, description="The arguments as the source wrote them, when they were a string."
    )
    arguments_error: str | None = Field(
        default=None, description="Why the raw arguments did not parse as JSON (None when they did)."
    )

    def argument_hash(self) -> str:
        """Stable hash of (name, arguments): the key for reusing a receipt on resume."""
        payload = self.raw_arguments if self.arguments_error else sorted_compact_json(self.arguments)
        return _sha256(f"{self.name}\x00{payload}")[:16]

    def argument_text(self) -> str:
        """The arguments as one string, what the rules judge and the repair checks search for tokens: the text the
        source wrote when it did not parse (empty when it wrote none), a string argument as it is, else the
        arguments as ``canonical_json``."""
        if self.arguments_error:
            return self.raw_arguments or ""
        if isinstance(self.arguments, str):
            return self.arguments
        return canonical_json(self.arguments)


class Receipt(BaseModel):
    """The real result of a tool call, as the tool returned it."""

    model_config = ConfigDict(extra="forbid")

    call_id: str | None = None
    name: str | None = None
    content: str = ""
    is_error: bool = False
    exit_code: int | None = None


class ThinkingBlock(BaseModel):
    """One native reasoning block as the source wrote it, kept so an export can replay it verbatim.

    Anthropic signs its ``thinking`` blocks (``signature``) and encrypts ``redacted_thinking`` ones (``data``); the
    API refuses a replayed block whose signature is missing or whose text was changed, so the text alone
    (``Message.reasoning``) is not enough to train on Anthropic's form.
    """

    model_config = ConfigDict(extra="forbid")

    type: Literal["thinking", "redacted_thinking"] = "thinking"
    thinking: str = ""
    signature: str | None = None
    data: str | None = Field(default=None, description="The encrypted payload of a redacted_thinking block.")


class Message(BaseModel):
    """One message, in source order.

    ``turn`` is set on assistant messages (1, 2, ...) and on tool messages (the turn that made the call);
    system and user messages carry the turn they follow (0 before T1), so information order is explicit.
    ``name`` is the speaker for multi-agent logs (Who&When agent names). ``source_index`` is the position in
    the source record (0-based), so labelled steps can be mapped back exactly.
    """

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    name: str | None = None
    reasoning: str | None = None
    # Left out of dumps when empty: most sources have no signed thinking, and leaving the empty list out keeps
    # their canonical lines (and every cache key derived from them) exactly what they were before the field
    # existed. ``exclude_if`` keeps the dump in pydantic-core (a wrap serializer cost a Python call per message).
    thinking: list[ThinkingBlock] = Field(
        default_factory=list, exclude_if=operator.not_,
        description="The native reasoning blocks with their signatures, when the source has them.",
    )
    tool_calls: list[ToolCall] = Field(default_factory=list)
    receipt: Receipt | None = Field(default=None, description="Set on role=tool messages.")
    turn: int | None = None
    source_index: int | None = None
    usage: Usage | None = None


class ToolSpec(BaseModel):
    """A tool the agent was offered, as the source declared it: name, description, JSON-schema parameters."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    parameters: Any = Field(default=None, description="The JSON schema of the arguments (None when not declared).")

    def as_openai(self) -> dict[str, Any]:
        """The OpenAI Chat Completions ``tools`` entry (``parameters`` left out when none was declared)."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        if self.parameters is not None:
            function["parameters"] = self.parameters
        return {"type": "function", "function": function}

    def as_anthropic(self) -> dict[str, Any]:
        """The Anthropic Messages ``tools`` entry (``input_schema`` is required: an empty object when none was declared)."""
        schema = self.parameters if isinstance(self.parameters, dict) else {"type": "object", "properties": {}}
        return {"name": self.name, **({"description": self.description} if self.description else {}), "input_schema": schema}


# Metadata keys (in ``extra``) that hold a reference answer: inspect_ai ``target``, Who&When ``ground_truth``...
REFERENCE_KEYS = ("reference_answer", "reference", "expected_answer", "ground_truth", "target")


class TrajectoryMetadata(BaseModel):
    """What we know about where a trajectory came from. Unknown source keys are kept in ``extra``."""

    model_config = ConfigDict(extra="forbid")

    source_format: str
    source_file: str | None = None
    source_line: int | None = Field(default=None, description="1-based line (JSONL) or record index.")
    model: str | None = None
    arm: str | None = None
    source_id: str | None = Field(default=None, description="For a continuation: the trajectory it branched from.")
    branch_turn: int | None = Field(default=None, description="For a continuation: the turn it branched after.")
    target_issue: str | None = None
    budget_exhausted: bool | None = None
    usage: Usage | None = None
    reward: float | None = Field(default=None, description="A finite reward; a NaN is read into task_outcome and dropped.")
    outcome: str | None = Field(default=None, description="The outcome as the source wrote it (e.g. 'submitted', 'C').")
    task_outcome: TaskOutcome | None = Field(
        default=None,
        description="The recorded result, normalised (judge.outcome): what the gate and the report read. Importers "
        "set it from their format's fields; when absent it is read from reward and outcome.",
    )
    tools: list[ToolSpec] = Field(default_factory=list, description="Tool schemas the agent was given, when the log has them.")
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _settle_outcome(self) -> TrajectoryMetadata:
        # A reward the importer could not coerce stays in extra; it is still a recorded value that must be read.
        reward = self.reward if self.reward is not None else self.extra.get("reward")
        if self.task_outcome is None:
            self.task_outcome = from_fields(reward, self.outcome)
        if self.reward is not None and not math.isfinite(self.reward):
            self.reward = None  # NaN/inf are not JSON; the raw value and why it blocks release are in task_outcome
        return self

    def reference_answer(self) -> str | None:
        """The reference (expected) answer a log records (see :data:`REFERENCE_KEYS`), as text; None if none."""
        for key in REFERENCE_KEYS:
            value = self.extra.get(key)
            if value in (None, "", [], {}):
                continue
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return "\n".join(value)
            return value if isinstance(value, str) else canonical_json(value)
        return None

    def judge_context(self) -> dict[str, Any]:
        """The metadata a judge prompt shows (recorded outcome, reward, tool schemas, reference answer); only what is set."""
        recorded = self.task_outcome
        context: dict[str, Any] = {
            "outcome": recorded.status if recorded is not None and recorded.status != "unknown" else self.outcome,
            "reward": self.reward,
            "tools": [tool.model_dump(mode="json") for tool in self.tools] or None,
            "reference": self.reference_answer(),
        }
        return {key: value for key, value in context.items() if value is not None}


class Turn(BaseModel):
    """A derived view: one assistant message with the receipts of its calls and what came before it."""

    number: int
    message: Message
    receipts: list[Receipt]
    message_index: int

    def receipt_for(self, call_id: str) -> Receipt | None:
        return next((r for r in self.receipts if r.call_id == call_id), None)


class Trajectory(BaseModel):
    """One rollout: the original query, its messages with turn numbers, and metadata."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = SCHEMA_VERSION
    id: str
    query: str
    query_id: str = Field(description="Groups trajectories of one original query (train/test split key).")
    messages: list[Message]
    metadata: TrajectoryMetadata

    # --- derived views -------------------------------------------------------------------------

    def turns(self) -> list[Turn]:
        """Assistant turns in order, each with the receipts of its tool calls."""
        turns: list[Turn] = []
        # A receipt answers the oldest unanswered call with its id, so a call id that a log reuses in a later
        # turn (tau-bench airline, SWE-agent replays) still pairs each call with its own receipt.
        receipt_of: dict[tuple[int, int], Receipt] = {}
        waiting: dict[str, list[tuple[int, int]]] = {}
        # Receipts without call ids (formats that pair by position) belong to the turn that precedes them.
        unkeyed_by_turn: dict[int | None, list[Receipt]] = {}
        for index, message in enumerate(self.messages):
            if message.role == "assistant":
                for position, call in enumerate(message.tool_calls):
                    waiting.setdefault(call.id, []).append((index, position))
            elif message.role == "tool" and message.receipt and message.receipt.call_id:
                queue = waiting.get(message.receipt.call_id)
                if queue:
                    receipt_of[queue.pop(0)] = message.receipt
            elif message.role == "tool" and message.receipt:
                unkeyed_by_turn.setdefault(message.turn, []).append(message.receipt)
        for index, message in enumerate(self.messages):
            if message.role != "assistant":
                continue
            receipts = [receipt_of[(index, p)] for p in range(len(message.tool_calls)) if (index, p) in receipt_of]
            receipts += unkeyed_by_turn.get(message.turn, [])
            turns.append(Turn(number=message.turn or len(turns) + 1, message=message, receipts=receipts, message_index=index))
        return turns

    @property
    def turn_count(self) -> int:
        return sum(1 for m in self.messages if m.role == "assistant")

    @property
    def has_assistant_turn(self) -> bool:
        """``turn_count > 0``, without counting every message."""
        return any(m.role == "assistant" for m in self.messages)

    def content_hash(self) -> str:
        """Hash of what a judge sees: the judge-call cache key.

        Query and messages, plus the metadata a judge prompt shows (:meth:`TrajectoryMetadata.judge_context`)
        when any is set; other metadata (ids, arm, model, source file) does not change it.
        """
        content: dict[str, Any] = {
            "query": self.query, "messages": [m.model_dump(mode="json", exclude={"source_index", "thinking"}) for m in self.messages]}
        context = self.metadata.judge_context()
        if context:  # left out when empty, so the hash of a trajectory without any stays what it was
            content["context"] = context
        return _sha256(sorted_compact_json(content))

    def generation_usage(self) -> Usage:
        """Generation tokens recorded in the trajectory (per-turn usage, else the metadata total)."""
        total = Usage()
        for message in self.messages:
            if message.usage:
                total = total + message.usage
        if total.total is None and self.metadata.usage is not None:
            return self.metadata.usage
        return total

    def to_json_line(self) -> str:
        """The canonical JSON line (no newline): what trajectories.jsonl holds, one per trajectory."""
        return self.to_json_bytes().decode("utf-8")

    def to_json_bytes(self) -> bytes:
        """:meth:`to_json_line` as the UTF-8 bytes pydantic-core writes (the import writes these: no round trip
        through ``str``)."""
        return self.__pydantic_serializer__.to_json(self)


def number_turns(messages: list[Message]) -> list[Message]:
    """Assign turn numbers in place per docs/contracts.md and return the list.

    Assistant messages are T1, T2, ...; a tool message takes the turn of the assistant message whose call it
    answers (by call id, else the latest assistant turn); other messages take the latest turn (0 before T1).
    """
    call_turn: dict[str, int] = {}
    current = 0
    for message in messages:
        if message.role == "assistant":
            current += 1
            turn = current
            for call in message.tool_calls:
                call_turn[call.id] = current
        elif message.role == "tool":
            call_id = message.receipt.call_id if message.receipt else None
            turn = call_turn.get(call_id, current) if call_id else current
        else:
            turn = current
        # ``message.turn = turn`` as pydantic assigns a plain field (Message has no validate_assignment): the value,
        # and the name among the fields set. Its __setattr__ adds two Python frames per message of every import.
        message.__dict__["turn"] = turn
        message.__pydantic_fields_set__.add("turn")
    return messages


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
