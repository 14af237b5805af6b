"""Helpers shared by the format modules: where a record came from, argument parsing, text extraction,
exit codes, record metadata, and the final assembly into a numbered :class:`~judge.model.Trajectory`.

Every format module turns one source record into a ``Trajectory`` through :func:`build_trajectory`, so
turn numbering, call/receipt pairing checks, query ids and the docs/contracts.md record-metadata keys are handled
in one place.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel
from pydantic_core import from_json

from judge.model import (
    Message,
    Receipt,
    ToolCall,
    ToolSpec,
    Trajectory,
    TrajectoryMetadata,
    Usage,
    number_turns,
)
from judge.outcome import TaskOutcome, combine, decides

DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".traj", ".eval")  # .eval: inspect_ai's zip log (reader.read_inspect_eval)
COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz")  # read transparently (gzip, bz2, lzma from the standard library)

# Free-form values (metadata.extra, tool-call arguments) may nest this many levels. Real logs stay under 15
# (the deepest of the 224 files in ../shared/datasets nests 13); pydantic cannot serialise a model nested
# deeper than about 250, and a deep value costs every later stage recursion.
MAX_DEPTH = 100

# Every integer of a trajectory (turns, indices, exit codes, token counts) fits the int64 columns the run's
# Parquet tables store: a larger one stopped the whole run at the tables (issue 28), so it is refused here.
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class RecordError(ValueError):
    """A record that cannot be imported. The message is the one-line reason that goes to rejects.jsonl."""


@dataclass(frozen=True)
class Source:
    """Where a record was read: file, 1-based line (JSONL) or 0-based index inside a JSON document."""

    file: str
    line: int | None = None
    index: int | None = None

    @property
    def stem(self) -> str:
        """File name without data and compression suffixes (``run.traj.json``, ``run.jsonl.gz`` -> ``run``)."""
        name = Path(self.file).name
        for suffix in COMPRESSION_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        for suffix in DATA_SUFFIXES:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
        return name

    @property
    def position(self) -> int | None:
        """The line for line-oriented files, else the record index (what ``source_line`` holds)."""
        return self.line if self.line is not None else self.index

    def fallback_id(self) -> str:
        """An id for records that carry none: the file stem, plus the line or index inside the file."""
        if self.line is not None:
            return f"{self.stem}-L{self.line}"
        if self.index is not None:
            return f"{self.stem}-{self.index}"
        return self.stem


ModelT = TypeVar("ModelT", bound=BaseModel)


def constructor(model: type[ModelT]) -> Callable[[dict[str, Any]], ModelT]:
    """``model(**fields)`` as a function of the field dict: pydantic-core validates the dict exactly as the class
    call would, without ``BaseModel.__init__``'s Python frame and keyword dict (a third of the cost of a small
    model). For the models an import builds once per source message or record."""
    return cast(Callable[[dict[str, Any]], ModelT], model.__pydantic_validator__.validate_python)


new_message = constructor(Message)
new_call = constructor(ToolCall)
new_receipt = constructor(Receipt)
new_metadata = constructor(TrajectoryMetadata)
new_trajectory = constructor(Trajectory)


# ----------------------------------------------------------------------------------------------------
# JSON text


def load_json(text: str) -> Any:
    """``json.loads(text)``: the same value, or the same error, in about half the time.

    pydantic-core's parser (jiter) reads the text first; what it refuses (a lone surrogate escape such as
    ``"\\ud800"``, values nested over ~200 levels, broken JSON: ValueError; a text holding a lone surrogate
    itself, which is not UTF-8: TypeError) is read again by ``json.loads``, whose value or ``JSONDecodeError``
    is then the answer. Where jiter accepts a text it gives the value ``json.loads`` gives (numbers, duplicate
    keys, NaN/Infinity, escapes: checked on the shared datasets and fuzzed).
    """
    try:
        return from_json(text)
    except (ValueError, TypeError):
        return json.loads(text)


# ----------------------------------------------------------------------------------------------------
# Values written loosely by some logs (AgentRx: repr strings, 'None' strings)

_LITERAL_WORDS = {"None": None, "null": None, "True": True, "true": True, "False": False, "false": False}


def loose_value(value: Any) -> Any:
    """Turn the string spellings of Python/JSON literals into values (``'None'`` -> None, ``"[{'a': 1}]"`` -> list).

    Only strings that look like a literal container or a literal word are converted; parsing uses
    ``json.loads`` then ``ast.literal_eval`` (never ``eval``), and a string that parses as neither is returned
    unchanged.
    """
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text in _LITERAL_WORDS:
        return _LITERAL_WORDS[text]
    if text[:1] in "[{(" and text[-1:] in "]})":
        for parse in (load_json, ast.literal_eval):
            try:
                return parse(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
    return value


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty dict (for optional sub-objects of loosely written logs)."""
    return value if isinstance(value, dict) else {}


_ARGUMENTS_TOO_DEEP = f"arguments nested deeper than {MAX_DEPTH} levels"


def parse_arguments(raw: Any) -> tuple[Any, str | None, str | None]:
    """Parse tool-call arguments given as a dict, a JSON string or a Python-repr string.

    Returns ``(arguments, raw_arguments, arguments_error)`` for :class:`~judge.model.ToolCall`: the raw text is
    kept whenever the source wrote a string, and ``arguments_error`` says why it did not parse (the call is
    still imported: a malformed argument string is a defect to judge, not a reason to drop the record).
    """
    if not isinstance(raw, str):  # None, a dict, a list, a number...: kept as given
        return raw, None, None
    text = raw.strip()
    if not text:
        return {}, raw, None
    try:
        value = load_json(text)
    except json.JSONDecodeError as error:
        json_error = f"invalid JSON arguments: {error.msg} at char {error.pos}"
    except RecursionError:
        return None, raw, _ARGUMENTS_TOO_DEEP
    else:
        return (None, raw, _ARGUMENTS_TOO_DEEP) if _may_nest_deeper(text, MAX_DEPTH) and nests_deeper(value, MAX_DEPTH) else (value, raw, None)
    # Some logs (AgentRx exports) store arguments as a Python repr; literal_eval only accepts literals.
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, raw, json_error
    if isinstance(value, (dict, list)):
        return (None, raw, _ARGUMENTS_TOO_DEEP) if nests_deeper(value, MAX_DEPTH) else (value, raw, None)
    return None, raw, json_error


def make_call(call_id: str, name: str, raw_arguments: Any) -> ToolCall:
    arguments, raw, error = parse_arguments(raw_arguments)
    return new_call({"id": str(call_id), "name": str(name), "arguments": arguments, "raw_arguments": raw, "arguments_error": error})


def text_of(content: Any) -> str:
    """Plain text of a message content: a string, None, or a list of content blocks/parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [text_of_block(block) for block in content]
        return "\n".join(part for part in parts if part)
    if isinstance(content, dict):
        return text_of_block(content)
    return str(content)


def text_of_block(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return str(block)
    kind, text = block.get("type"), block.get("text")
    if kind in (None, "text", "input_text", "output_text") and isinstance(text, str):
        return text
    if kind in ("image", "image_url", "input_image"):
        return "[image]"
    if kind in ("reasoning", "thinking", "redacted_thinking"):
        return ""  # reasoning is not message text; format modules collect it separately
    if "content" in block:
        return text_of(block["content"])
    return json.dumps(block, ensure_ascii=False, sort_keys=True)


# ----------------------------------------------------------------------------------------------------
# Exit codes written into tool output text

# Each pattern with a piece of text it cannot match without ("" for the anchored ones, which fail fast): a
# substring test skips the regex scan of a long output that cannot match.
_EXIT_PATTERNS = (
    (re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"), "<returncode>"),  # mini-swe-agent
    (re.compile(r"\A\s*(?:Error:\s*)?Exit code:?\s*(-?\d+)\b", re.IGNORECASE), ""),  # Bash tools of Claude-Code-like harnesses
    (re.compile(r"\A\s*exitcode:\s*(-?\d+)\b"), ""),  # AG2 / Who&When Computer_terminal
    (re.compile(r"executed with exit code (-?\d+)"), "executed with exit code "),  # OpenHands observation message
)


def exit_code_from_text(text: str | None) -> int | None:
    """The exit code a tool output states, for the conventions listed above; None when it states none."""
    if not text:
        return None
    for pattern, needed in _EXIT_PATTERNS:
        if needed in text and (match := pattern.search(text)):
            code = int(match.group(1))
            # a number no process can exit with is text about something else: not a reason to refuse the record
            return code if INT64_MIN <= code <= INT64_MAX else None
    return None


def make_receipt(
    call_id: str | None,
    content: str,
    *,
    name: str | None = None,
    is_error: bool | None = None,
    exit_code: int | None = None,
) -> Receipt:
    """A receipt; a non-zero exit code (other than OpenHands' -1 'still running') marks it as an error."""
    if exit_code is None:
        exit_code = exit_code_from_text(content)
    error = bool(is_error) or (exit_code is not None and exit_code > 0)
    return new_receipt({"call_id": call_id, "name": name, "content": content, "is_error": error, "exit_code": exit_code})


# ----------------------------------------------------------------------------------------------------
# Usage and record metadata

_INPUT_KEYS = ("input_tokens", "prompt_tokens", "tokens_sent")
_OUTPUT_KEYS = ("output_tokens", "completion_tokens", "tokens_received")
_CACHED_KEYS = ("cached_tokens", "cache_read_input_tokens", "input_tokens_cache_read")


def usage_from(value: Any) -> Usage | None:
    """A Usage from the usual spellings (OpenAI, Anthropic, inspect_ai, SWE-agent model_stats); None if none found."""
    if isinstance(value, Usage):
        return value
    if not isinstance(value, dict):
        return None

    def first(keys: tuple[str, ...]) -> int | None:
        for key in keys:
            number = value.get(key)
            if isinstance(number, float) and not math.isfinite(number):
                raise RecordError(f"usage {key} is {number}: a token count must be a finite number")
            if isinstance(number, (int, float)) and not isinstance(number, bool):
                return int(number)
        return None

    cached = first(_CACHED_KEYS)
    if cached is None and isinstance(value.get("prompt_tokens_details"), dict):
        cached = value["prompt_tokens_details"].get("cached_tokens")
    usage = Usage(input_tokens=first(_INPUT_KEYS), output_tokens=first(_OUTPUT_KEYS), cached_tokens=cached)
    return usage if usage.total is not None or usage.cached_tokens is not None else None


def tool_specs(value: Any) -> list[ToolSpec] | None:
    """Tool schemas in the usual spellings -> :class:`ToolSpec` list; None when ``value`` is not a tool list.

    Accepted items: OpenAI ``{"type": "function", "function": {name, description, parameters}}``, flat
    ``{name, description, parameters}`` (legacy OpenAI functions, inspect_ai ToolInfo), Anthropic
    ``{name, description, input_schema}``, MCP ``{name, description, inputSchema}``, or a bare name.
    """
    value = loose_value(value)
    if not isinstance(value, list) or not value:
        return None
    specs = []
    for item in value:
        item = loose_value(item)
        if isinstance(item, str) and item.strip():
            specs.append(ToolSpec(name=item.strip()))
            continue
        if not isinstance(item, dict):
            return None
        body = item["function"] if isinstance(item.get("function"), dict) else item
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            return None
        description = body.get("description")
        parameters = next((body[k] for k in ("parameters", "input_schema", "inputSchema") if isinstance(body.get(k), dict)), None)
        specs.append(ToolSpec(name=name, description=description if isinstance(description, str) else "", parameters=parameters))
    return specs


# The docs/contracts.md record-metadata keys with a typed field in TrajectoryMetadata.
_TYPED_KEYS = ("model", "arm", "source_id", "branch_turn", "target_issue", "budget_exhausted", "reward", "outcome")


def build_metadata(fmt: str, src: Source, *layers: dict[str, Any] | None, outcome: TaskOutcome | None = None) -> TrajectoryMetadata:
    """Merge metadata layers (later wins) into TrajectoryMetadata; unknown keys go to ``extra``.

    ``query_id`` is not a metadata field (it is ``Trajectory.query_id``) and is dropped here. ``outcome`` is the
    format's own reading of the recorded result: ``task_outcome`` is then ``combine(outcome, generic)``, the
    generic reading being the model's of the merged ``reward`` and ``outcome`` keys. A reading that decides
    alone (a failure: :func:`judge.outcome.decides`) is given to the model, which then makes no generic reading
    (three TaskOutcomes and a combine, ~5 us a record).
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        if layer:
            merged.update({k: v for k, v in layer.items() if v is not None})
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in merged.items():
        if key == "query_id":
            continue
        if key == "usage":
            usage = usage_from(value)
            if usage is not None:
                fields["usage"] = usage
            else:
                extra["usage"] = value
        elif key in ("tools", "functions"):
            specs = tool_specs(value)
            if specs is not None and "tools" not in fields:
                fields["tools"] = specs
            else:
                extra[key] = value
        elif key in _TYPED_KEYS:
            fields[key] = _coerce(key, value, extra)
        elif key == "extra" and isinstance(value, dict):
            extra.update(value)
        else:
            extra[key] = value
    fields = {k: v for k, v in fields.items() if v is not None}
    decided = outcome is not None and decides(outcome)
    if decided:
        fields["task_outcome"] = outcome
    metadata = new_metadata({"source_format": fmt, "source_file": src.file, "source_line": src.position, "extra": extra, **fields})
    if outcome is not None and not decided:
        metadata.task_outcome = combine(outcome, metadata.task_outcome)
    return metadata


def _coerce(key: str, value: Any, extra: dict[str, Any]) -> Any:
    """Coerce a typed metadata value; a value of the wrong kind is kept in extra instead of failing the record."""
    value = loose_value(value)
    try:
        if key == "branch_turn":
            return int(value)
        if key == "reward":
            return float(value)
        if key == "budget_exhausted":
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes")
            return bool(value)
        return str(value)
    except (TypeError, ValueError):
        extra[key] = value
        return None


def query_hash(query: str) -> str:
    """A query group key for logs without a task id: hash of the whitespace-collapsed, case-folded query."""
    normalised = " ".join(query.split()).casefold()
    # surrogatepass: a lone surrogate (a JSON escape such as \ud800) must not stop the record here; the
    # reader replaces it afterwards (replace_lone_surrogates)
    return "q-" + hashlib.sha256(normalised.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def first_user_text(messages: list[Message]) -> str:
    return next((m.content for m in messages if m.role == "user" and m.content.strip()), "")


# ----------------------------------------------------------------------------------------------------
# Assembly


def pair_receipts(messages: list[Message]) -> None:
    """Check that every tool result naming a call id answers a call made earlier in the trajectory, and give
    receipts without a tool name the name of the call they answer (one pass: it runs on every import)."""
    made: set[str] = set()  # ids of the calls of assistant messages so far
    names: dict[str, str] = {}  # call id -> tool name, of the calls of any message so far
    for position, message in enumerate(messages):
        calls = message.tool_calls
        if calls:
            by_assistant = message.role == "assistant"
            for call in calls:
                names[call.id] = call.name
                if by_assistant:
                    made.add(call.id)
        receipt = message.receipt
        if receipt is None or (call_id := receipt.call_id) is None:
            continue
        if message.role == "tool" and call_id not in made:
            where = f"source message {message.source_index}" if message.source_index is not None else f"message {position}"
            raise RecordError(f"tool result for call id {call_id!r} ({where}) has no matching tool call")
        if receipt.name is None and call_id in names:
            receipt.name = names[call_id]


def build_trajectory(
    fmt: str,
    src: Source,
    messages: list[Message],
    *,
    trajectory_id: str | None,
    query: str | None = None,
    query_id: str | None = None,
    metadata: TrajectoryMetadata,
) -> Trajectory:
    """Check, number and wrap converted messages. Raises RecordError for an empty or inconsistent record."""
    if not messages:
        raise RecordError("record has no messages")
    pair_receipts(messages)
    number_turns(messages)
    text = query if query is not None and str(query).strip() else first_user_text(messages)
    text = str(text)
    return new_trajectory({
        "id": str(trajectory_id) if trajectory_id not in (None, "") else src.fallback_id(),
        "query": text,
        "query_id": str(query_id) if query_id not in (None, "") else query_hash(text),
        "messages": messages,
        "metadata": metadata,
    })




def trajectory_from_envelope(
    fmt: str, src: Source, record: dict[str, Any], messages: list[Message], known_keys: set[str]
) -> Trajectory:
    """Wrap converted messages of a chat record with the docs/contracts.md envelope (``id``, ``query``, ``model``,
    ``metadata``); keys outside ``known_keys`` are kept in ``metadata.extra``."""
    meta = as_dict(record.get("metadata"))
    unknown = {k: v for k, v in record.items() if k not in known_keys}
    metadata = build_metadata(fmt, src, {"model": record.get("model")}, unknown, meta)
    return build_trajectory(
        fmt,
        src,
        messages,
        trajectory_id=record.get("id"),
        query=record.get("query"),
        query_id=meta.get("query_id") or record.get("query_id"),
        metadata=metadata,
    )

def require_list(record: dict[str, Any], key: str) -> list[Any]:
    """``record[key]`` as a list (loosely parsed), or a RecordError naming the key."""
    value = loose_value(record.get(key)) if isinstance(record, dict) else None
    if not isinstance(value, list):
        raise RecordError(f"missing messages: no {key!r} list in the record")
    if not value:
        raise RecordError(f"missing messages: {key!r} is empty")
    return value


# ----------------------------------------------------------------------------------------------------
# Hostile shapes: deep nesting, lone surrogates

_CONTAINERS = (dict, list, tuple, set, frozenset)
_LEAVES = frozenset({str, int, float, bool, type(None)})


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` holds containers nested more than ``limit`` levels (``[]`` is 1, a scalar 0).

    Level by level, without recursion, so a value of any depth is measured safely.
    """
    level = [value] if isinstance(value, _CONTAINERS) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        below = []
        for item in level:
            for child in item.values() if isinstance(item, dict) else item:
                if type(child) not in _LEAVES and isinstance(child, _CONTAINERS):  # most children are JSON scalars
                    below.append(child)
        level = below
    return False


def _may_nest_deeper(text: str, limit: int) -> bool:
    """False when the JSON ``text`` cannot hold containers nested more than ``limit`` levels: it has no more
    than ``limit`` opening brackets (counting is far cheaper than walking the parsed value)."""
    return text.count("[") + text.count("{") > limit


def check_depth(trajectory: Trajectory) -> None:
    """Raise RecordError when a free-form value (``metadata.extra``, tool-call arguments) nests deeper than
    :data:`MAX_DEPTH`; every other field of the model has a fixed shape."""
    for key, value in trajectory.metadata.extra.items():
        if nests_deeper(value, MAX_DEPTH):
            raise RecordError(f"metadata {str(key)[:80]!r} is nested deeper than {MAX_DEPTH} levels")
    for position, message in enumerate(trajectory.messages):
        for call in message.tool_calls:
            if nests_deeper(call.arguments, MAX_DEPTH):
                raise RecordError(f"message {position}: the arguments of tool call {call.id[:80]!r} are nested deeper than {MAX_DEPTH} levels")


def check_integers(trajectory: Trajectory) -> None:
    """Raise RecordError naming the first integer of the trajectory outside the int64 range (:data:`INT64_MAX`):
    a turn, a source index, an exit code, a token count, the source line or the branch turn."""
    metadata = trajectory.metadata
    _check_range("metadata", {"source_line": metadata.source_line, "branch_turn": metadata.branch_turn})
    _check_usage("metadata.usage", metadata.usage)
    for position, message in enumerate(trajectory.messages):
        receipt = message.receipt
        exit_code = receipt.exit_code if receipt is not None else None
        # names built only for a value out of range: this runs for every message of every import
        if not _in_range(message.turn) or not _in_range(message.source_index) or not _in_range(exit_code):
            _check_range(f"message {position}", {"turn": message.turn, "source_index": message.source_index,
                                                 "receipt.exit_code": exit_code})
        if message.usage is not None:
            _check_usage(f"message {position}: usage", message.usage)


def _in_range(value: int | None) -> bool:
    return value is None or INT64_MIN <= value <= INT64_MAX


def _check_range(where: str, values: dict[str, int | None]) -> None:
    for name, value in values.items():
        if not _in_range(value):
            raise RecordError(f"{where}: {name} {value} is outside the 64-bit integer range the run's tables store")


def _check_usage(where: str, usage: Usage | None) -> None:
    if usage is not None:
        _check_range(where, {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                             "cached_tokens": usage.cached_tokens})


_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(trajectory: Trajectory) -> Trajectory:
    """``trajectory`` with every lone UTF-16 surrogate replaced by U+FFFD, their number recorded in
    ``metadata.extra["lone_surrogates_replaced"]``; the same object when it holds none.

    JSON may spell a lone surrogate (``"\\ud800"``, e.g. a JavaScript harness cutting an emoji in half); Python
    decodes it, but it cannot be written as UTF-8, so left alone it would stop the batch when written.
    """
    count = 0

    def fix(value: Any) -> Any:
        nonlocal count
        if isinstance(value, str):
            fixed, found = _SURROGATE.subn("\ufffd", value)
            count += found
            return fixed
        if isinstance(value, dict):
            return {fix(key): fix(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [fix(item) for item in value]
        return value

    data = fix(trajectory.model_dump())
    if not count:
        return trajectory
    data["metadata"]["extra"]["lone_surrogates_replaced"] = count
    return Trajectory.model_validate(data)


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so a reason fits on one line of rejects.jsonl."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
