"""Span exports of tracing tools: OpenTelemetry GenAI conventions, OpenInference (Phoenix), Langfuse.

**Shapes read** (a JSON document, or JSON Lines with one of them per line; the spans of one trace may be spread
over many lines, so a span file is read whole and grouped):

* OTLP/JSON: ``{"resourceSpans": [{"resource", "scopeSpans": [{"spans": [...]}]}]}`` with attribute
  ``{"key", "value": {"stringValue" | "intValue" | "doubleValue" | "boolValue" | "arrayValue" | "kvlistValue"}}``
  lists (what an OTLP/HTTP exporter posts and the collector's file exporter writes, one request per line);
  snake_case spellings and base64 ids are accepted too.
* Flat spans: the OpenTelemetry SDK's ``span.to_json()`` (``context.trace_id``, ``parent_id``, ISO times, an
  attribute dict), Phoenix's REST API spans (``span_kind``, ``status_code``; a ``{"data": [...]}`` page), bare
  OTLP spans, and lists of any of them. Attribute dicts may be flat (``llm.input_messages.0.message.role``) or
  nested, as Phoenix's dataframes write them.
* Langfuse observations (``traceId``, ``type``: GENERATION, TOOL, SPAN...; ``input``, ``output``,
  ``usageDetails``, ``level``), alone, as an API page ``{"data": [...]}`` or in a trace ``{"id", "observations"}``.

**Reading a trace.** Spans are grouped by trace id and ordered by start time. An LLM span (GenAI
``gen_ai.operation.name`` chat / text_completion / generate_content, OpenInference kind ``LLM``, Langfuse
``GENERATION``) carries the history it was sent (``gen_ai.system_instructions`` + ``gen_ai.input.messages``,
``llm.input_messages.N.message.*``, the legacy ``gen_ai.prompt.N.*``, Langfuse ``input``) and what it answered
(``gen_ai.output.messages``, ``llm.output_messages...``, ``gen_ai.completion.N.*``, Langfuse ``output``). The
conversation is the first span's input, then for each span the messages its input adds to what came before,
then its answer (the first choice; further choices are counted in ``extra.unused_choices``). An input that does
not extend the conversation (an agent that trimmed its history) adds only the messages not seen yet and is
counted in ``extra.history_breaks``. A tool span (``execute_tool``, kind ``TOOL``, Langfuse ``TOOL``) is the
receipt of the call with its call id (``gen_ai.tool.call.id``, ``tool.id``, ``tool_call.id``), else of the
earliest unanswered call of its tool name: a span status ERROR, an ``error.type`` or a Langfuse level ERROR
marks the receipt ``is_error``, and a call whose result no later input shows gets the span's result (or its
error message) as a tool message after the call. A tool span that pairs with no call becomes a tool message
without call id at its place in time (counted in ``extra.unpaired_tool_spans``).

Usage per answer from ``gen_ai.usage.*`` / ``llm.token_count.*`` / Langfuse ``usageDetails``; the model from
the response model attributes; tool schemas from ``gen_ai.tool.definitions`` or ``llm.tools.N.tool.json_schema``;
reasoning parts (with an OpenInference ``message_content.signature``, kept as signed thinking). The trace id is
the trajectory id; ``extra`` keeps the trace id, service, session and span counts.

**Nothing dropped silently.** A span that cannot be read (no trace id, broken attribute list, message JSON that
does not parse) is a reject naming its file, line (or index) and reason, and so is its whole trace (a
conversation with a hole would be judged as if complete). A trace without any LLM span that recorded messages
(content capture off) is a reject that says so. Spans of other kinds (HTTP, retrieval, chains) hold no
conversation; they are counted in ``extra.spans``.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    as_dict,
    build_metadata,
    build_trajectory,
    make_call,
    make_receipt,
    one_line,
    text_of,
    tool_specs,
)
from judge.model import Message, Role, ThinkingBlock, ToolSpec, Trajectory, Usage
from judge.schema import Reject

NAME = "otel"

LLM_OPERATIONS = {"chat", "text_completion", "generate_content"}
LANGFUSE_LLM = {"GENERATION"}
LANGFUSE_TOOL = {"TOOL"}
_TEXT_ROLES: tuple[Role, ...] = ("system", "user")  # roles whose message is its text only
# Attributes whose value is one JSON document (possibly sent as a string): never split into dotted keys.
JSON_VALUED = {
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.response.finish_reasons", "input.value",
    "output.value", "metadata", "llm.invocation_parameters", "tool.parameters", "tool.json_schema", "tag.tags",
}


class SpanError(ValueError):
    """A span that cannot be read; the message is the reason."""


# --- detection --------------------------------------------------------------------------------------


def _is_otlp_span(obj: Any) -> bool:
    # Tested on nearly every record whose format is detected (otel comes second): no generator per test.
    return isinstance(obj, dict) and ("traceId" in obj or "trace_id" in obj) and ("spanId" in obj or "span_id" in obj)


def _is_sdk_span(obj: Any) -> bool:
    context = obj.get("context") if isinstance(obj, dict) else None
    return isinstance(context, dict) and "trace_id" in context and "span_id" in context


def _is_langfuse(obj: Any) -> bool:
    return isinstance(obj, dict) and "traceId" in obj and "type" in obj and "startTime" in obj


def is_span(obj: Any) -> bool:
    """One span in any of the shapes of the module docstring."""
    return _is_otlp_span(obj) or _is_sdk_span(obj) or _is_langfuse(obj)


def detect(obj: Any) -> bool:
    """An OTLP export, a span, a list or page of spans, or a Langfuse trace with observations."""
    if isinstance(obj, list):
        return bool(obj) and is_span(obj[0])
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("resourceSpans"), list) or isinstance(obj.get("resource_spans"), list):
        return True
    if isinstance(obj.get("observations"), list):
        return True
    if isinstance(obj.get("data"), list) and obj["data"]:
        return is_span(obj["data"][0])
    return is_span(obj)


# --- spans out of documents -------------------------------------------------------------------------


@dataclass
class Located:
    """A raw span and where it was read."""

    raw: Any
    source: Source
    path: str
    resource: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, Any] | None = None  # the Langfuse trace an observation was listed in (its id, session)


def spans_of(record: Any, source: Source) -> Iterator[Located]:
    """Every span of one record (a JSONL line or a JSON document), with its path inside the record."""
    if isinstance(record, list):
        for index, item in enumerate(record):
            yield from _spans_of_item(item, source, f"[{index}]")
        return
    yield from _spans_of_item(record, source, "")


def _spans_of_item(item: Any, source: Source, path: str) -> Iterator[Located]:
    if isinstance(item, dict) and ("resourceSpans" in item or "resource_spans" in item):
        for r, resource_spans in enumerate(_list(item, "resourceSpans", "resource_spans")):
            resource = _attributes(_get(_get(resource_spans, "resource") or {}, "attributes")) if isinstance(resource_spans, dict) else {}
            scopes = _list(resource_spans, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") if isinstance(resource_spans, dict) else []
            for s, scope in enumerate(scopes):
                for k, span in enumerate(_list(scope, "spans") if isinstance(scope, dict) else []):
                    yield Located(span, source, f"{path}resourceSpans[{r}].scopeSpans[{s}].spans[{k}]", resource)
        return
    if isinstance(item, dict) and isinstance(item.get("observations"), list):
        trace = {k: v for k, v in item.items() if k != "observations"}
        for k, observation in enumerate(item["observations"]):
            yield Located(observation, source, f"{path}observations[{k}]", trace=trace)
        return
    if isinstance(item, dict) and isinstance(item.get("data"), list) and not is_span(item):
        for k, span in enumerate(item["data"]):
            yield Located(span, source, f"{path}data[{k}]")
        return
    yield Located(item, source, path)


def _list(obj: Any, *keys: str) -> list[Any]:
    for key in keys:
        value = obj.get(key) if isinstance(obj, dict) else None
        if isinstance(value, list):
            return value
    return []


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if isinstance(obj, dict) and key in obj:
            return obj[key]
    return None


# --- one span, normalised -----------------------------------------------------------------------------


@dataclass
class Span:
    """A span of any shape, normalised: ids, times, status, flat attributes, events."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int | None  # ns since the epoch
    end: int | None
    error: bool
    status_message: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    where: Located
    order: int = 0
    langfuse: dict[str, Any] | None = None


def read_span(located: Located) -> Span:
    """Normalise one raw span; raises SpanError naming what is wrong."""
    raw = located.raw
    if not isinstance(raw, dict):
        raise SpanError("span is not a JSON object")
    if _is_langfuse(raw) or (located.trace is not None and "type" in raw and "startTime" in raw):
        return _langfuse_span(raw, located)
    if _is_sdk_span(raw):
        context = raw["context"]
        trace_id, span_id = context.get("trace_id"), context.get("span_id")
        parent = raw.get("parent_id")
        status = as_dict(raw.get("status"))
        code = raw.get("status_code", status.get("status_code"))
        message = raw.get("status_message") or status.get("description") or ""
        attributes = _attributes(raw.get("attributes"))
        if isinstance(raw.get("span_kind"), str) and "openinference.span.kind" not in attributes:
            attributes["openinference.span.kind"] = raw["span_kind"]  # Phoenix's REST API lifts it out
        events = [(str(e.get("name") or ""), _attributes(e.get("attributes"))) for e in _events(raw)]
        start, end = _time(raw.get("start_time")), _time(raw.get("end_time"))
    elif _is_otlp_span(raw):
        trace_id, span_id = _get(raw, "traceId", "trace_id"), _get(raw, "spanId", "span_id")
        parent = _get(raw, "parentSpanId", "parent_span_id")
        status = as_dict(raw.get("status"))
        code = status.get("code")
        message = status.get("message") or ""
        attributes = _attributes(raw.get("attributes"))
        events = [(str(e.get("name") or ""), _attributes(e.get("attributes"))) for e in _events(raw)]
        start, end = _time(_get(raw, "startTimeUnixNano", "start_time_unix_nano")), _time(_get(raw, "endTimeUnixNano", "end_time_unix_nano"))
    else:
        raise SpanError(f"not a span: no trace and span ids ({_keys(raw)})")
    if not trace_id or not isinstance(trace_id, str):
        raise SpanError("span has no trace id")
    if not span_id or not isinstance(span_id, str):
        raise SpanError("span has no span id")
    return Span(
        trace_id=_hex_id(trace_id), span_id=_hex_id(span_id), parent_id=_hex_id(parent) if isinstance(parent, str) and parent else None,
        name=str(raw.get("name") or ""), start=start, end=end, error=_is_error_status(code), status_message=str(message),
        attributes=attributes, events=events, where=located,
    )


def _langfuse_span(raw: dict[str, Any], located: Located) -> Span:
    trace_id = raw.get("traceId") or (located.trace or {}).get("id")
    if not trace_id or not isinstance(trace_id, str):
        raise SpanError("observation has no traceId")
    if not isinstance(raw.get("id"), str) or not raw["id"]:
        raise SpanError("observation has no id")
    return Span(
        trace_id=trace_id, span_id=raw["id"], parent_id=raw.get("parentObservationId") or None,
        name=str(raw.get("name") or ""), start=_time(raw.get("startTime")), end=_time(raw.get("endTime")),
        error=raw.get("level") == "ERROR", status_message=str(raw.get("statusMessage") or ""),
        attributes={}, events=[], where=located, langfuse=raw,
    )


def _keys(raw: dict[str, Any]) -> str:
    return "keys: " + ", ".join(sorted(map(str, raw))[:8])


def _events(raw: dict[str, Any]) -> list[dict[str, Any]]:
    events = raw.get("events")
    if events is None:
        return []
    if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
        raise SpanError("events is not a list of objects")
    return events


def _is_error_status(code: Any) -> bool:
    return code in (2, "2", "ERROR", "STATUS_CODE_ERROR", "StatusCode.ERROR")


def _hex_id(value: str) -> str:
    """Trace/span ids as lowercase hex: strips the SDK's ``0x``, decodes protobuf-JSON base64."""
    text = value.strip()
    if text.startswith("0x"):
        return text[2:].lower()
    if all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        decoded = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return decoded.hex() if len(decoded) in (8, 16) else text


def _time(value: Any) -> int | None:
    """ns since the epoch from OTLP nanos (int or string) or an ISO time; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise SpanError(f"unreadable time {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as error:
            raise SpanError(f"unreadable time {value!r}") from error
        return int(moment.timestamp() * 1_000_000) * 1000
    raise SpanError(f"unreadable time {value!r}")


def _attributes(raw: Any) -> dict[str, Any]:
    """Attributes as one flat dict with dotted keys, from an OTLP key/value list or a (flat or nested) dict."""
    if raw is None:
        return {}
    flat: dict[str, Any] = {}
    if isinstance(raw, list):
        for position, item in enumerate(raw):
            if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                raise SpanError(f"attribute {position} has no key")
            _flatten(_any_value(item.get("value"), item["key"]), item["key"], flat)
        return flat
    if isinstance(raw, dict):
        for key, value in raw.items():
            _flatten(value, str(key), flat)
        return flat
    raise SpanError("attributes are neither a key/value list nor an object")


def _any_value(value: Any, key: str) -> Any:
    """An OTLP AnyValue as a Python value."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise SpanError(f"attribute {key!r} has an unreadable value")
    (kind, inner), = value.items()
    if kind in ("stringValue", "string_value", "boolValue", "bool_value"):
        return inner
    if kind in ("intValue", "int_value"):
        try:
            return int(inner)
        except (TypeError, ValueError) as error:
            raise SpanError(f"attribute {key!r}: intValue {inner!r} is not an integer") from error
    if kind in ("doubleValue", "double_value"):
        return float(inner)
    if kind in ("arrayValue", "array_value"):
        return [_any_value(v, key) for v in (inner or {}).get("values", [])]
    if kind in ("kvlistValue", "kvlist_value"):
        return {kv["key"]: _any_value(kv.get("value"), key) for kv in (inner or {}).get("values", [])}
    if kind in ("bytesValue", "bytes_value"):
        return inner
    raise SpanError(f"attribute {key!r} has an unknown value type {kind!r}")


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if prefix in JSON_VALUED or not isinstance(value, (dict, list)) or (isinstance(value, list) and not any(isinstance(v, dict) for v in value)):
        out[prefix] = value
        return
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, inner in items:
        _flatten(inner, f"{prefix}.{key}", out)


def indexed(flat: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.suffix`` keys as a list (by N) of ``{suffix: value}`` dicts."""
    groups: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in flat.items():
        if not key.startswith(head):
            continue
        index, _, suffix = key[len(head):].partition(".")
        if index.isdigit() and suffix:
            groups.setdefault(int(index), {})[suffix] = value
    return [groups[i] for i in sorted(groups)]


def json_value(value: Any, what: str) -> Any:
    """A JSON-valued attribute: parsed when it is a string, as is when structured."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise SpanError(f"{what} is not valid JSON: {error.msg} at char {error.pos}") from error
    return value


# --- what a span says ---------------------------------------------------------------------------------


@dataclass
class Step:
    """An LLM call or a tool run, read from one span."""

    span: Span
    kind: str  # llm | tool | other
    inputs: list[Message] = field(default_factory=list)
    outputs: list[Message] = field(default_factory=list)
    choices: int = 0
    model: str | None = None
    usage: Usage | None = None
    tools: list[ToolSpec] = field(default_factory=list)
    call_id: str | None = None
    tool_name: str | None = None
    result: str | None = None
    error_text: str | None = None


def interpret(span: Span) -> Step:
    """The step a span records; raises SpanError when its message content does not parse."""
    if span.langfuse is not None:
        return _langfuse_step(span)
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    oi_kind = str(attrs.get("openinference.span.kind") or "").upper()
    if operation == "execute_tool" or oi_kind == "TOOL":
        return _tool_step(span)
    has_genai = any(k in attrs for k in ("gen_ai.input.messages", "gen_ai.output.messages"))
    has_oi = any(k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in attrs)
    has_legacy = any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in attrs)
    details = next((a for name, a in span.events if name == "gen_ai.client.inference.operation.details"), None)
    if details is not None and not has_genai:  # content captured on the event instead of the span
        attrs = {**attrs, **details}
        has_genai = True
    if not (operation in LLM_OPERATIONS or oi_kind == "LLM" or has_genai or has_oi or has_legacy):
        return Step(span, "other")
    step = Step(span, "llm", model=_model(attrs), usage=_usage(attrs), tools=_tools(attrs))
    if has_genai:
        system = attrs.get("gen_ai.system_instructions")
        if system is not None:
            text = text_of(_parts_text(json_value(system, "gen_ai.system_instructions")))
            if text:
                step.inputs.append(Message(role="system", content=text))
        step.inputs += _genai_messages(json_value(attrs.get("gen_ai.input.messages") or [], "gen_ai.input.messages"), "gen_ai.input.messages")
        outputs = _genai_messages(json_value(attrs.get("gen_ai.output.messages") or [], "gen_ai.output.messages"), "gen_ai.output.messages")
    elif has_oi:
        step.inputs = _oi_messages(attrs, "llm.input_messages")
        outputs = _oi_messages(attrs, "llm.output_messages")
    else:
        step.inputs = _oi_messages(attrs, "gen_ai.prompt", flat_names=True)
        outputs = _oi_messages(attrs, "gen_ai.completion", flat_names=True)
    step.choices = sum(1 for m in outputs if m.role == "assistant")
    first = next((m for m in outputs if m.role == "assistant"), None)
    step.outputs = [first] if first is not None else []
    return step


def _tool_step(span: Span) -> Step:
    attrs = span.attributes
    call_id = next((attrs[k] for k in ("gen_ai.tool.call.id", "tool.id", "tool_call.id", "message.tool_call_id") if attrs.get(k)), None)
    name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or span.name.removeprefix("execute_tool ").strip() or None
    result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))
    error = span.error or bool(attrs.get("error.type"))
    error_text = None
    if error:
        exception = next((a for n, a in span.events if n == "exception"), {})
        error_text = span.status_message or " ".join(
            str(exception[k]) for k in ("exception.type", "exception.message") if exception.get(k)) or str(attrs.get("error.type") or "error")
    return Step(span, "tool", call_id=str(call_id) if call_id is not None else None, tool_name=str(name) if name else None,
                result=None if result is None else _text(result), error_text=error_text)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _model(attrs: dict[str, Any]) -> str | None:
    for key in ("gen_ai.response.model", "llm.response.model_name", "llm.model_name", "gen_ai.request.model", "llm.request.model_name"):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _usage(attrs: dict[str, Any]) -> Usage | None:
    def first(*keys: str) -> int | None:
        for key in keys:
            value = attrs.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                return int(value)
        return None

    usage = Usage(
        input_tokens=first("gen_ai.usage.input_tokens", "llm.token_count.prompt", "gen_ai.usage.prompt_tokens"),
        output_tokens=first("gen_ai.usage.output_tokens", "llm.token_count.completion", "gen_ai.usage.completion_tokens"),
        cached_tokens=first("gen_ai.usage.cache_read.input_tokens", "llm.token_count.prompt_details.cache_read"),
    )
    return usage if usage.total is not None or usage.cached_tokens is not None else None


def _tools(attrs: dict[str, Any]) -> list[ToolSpec]:
    if "gen_ai.tool.definitions" in attrs:
        return tool_specs(json_value(attrs["gen_ai.tool.definitions"], "gen_ai.tool.definitions")) or []
    schemas = []
    for tool in indexed(attrs, "llm.tools"):
        if "tool.json_schema" in tool:
            schemas.append(json_value(tool["tool.json_schema"], "llm.tools tool.json_schema"))
        elif tool.get("tool.name"):
            schemas.append({"name": tool["tool.name"], "description": tool.get("tool.description") or "",
                            "parameters": json_value(tool.get("tool.parameters"), "tool.parameters")})
    return tool_specs(schemas) or []


def _parts_text(parts: Any) -> Any:
    """GenAI system-instruction parts ``[{"type": "text", "content": ...}]`` as text blocks."""
    if isinstance(parts, list):
        return [{"type": "text", "text": p.get("content", "")} if isinstance(p, dict) and p.get("type") == "text" else p for p in parts]
    return parts


def _genai_messages(value: Any, what: str) -> list[Message]:
    """GenAI ``{role, parts: [...]}`` messages (gen-ai-input-messages.json / gen-ai-output-messages.json)."""
    if not isinstance(value, list):
        raise SpanError(f"{what} is not a list of messages")
    out: list[Message] = []
    for index, raw in enumerate(value):
        if not isinstance(raw, dict) or not isinstance(raw.get("parts", []), list):
            raise SpanError(f"{what}[{index}] is not a message with a parts list")
        role = {"developer": "system"}.get(str(raw.get("role")), str(raw.get("role")))
        texts: list[str] = []
        reasoning: list[str] = []
        calls = []
        results: list[Message] = []
        for position, part in enumerate(raw.get("parts", [])):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("content") or ""))
            elif kind == "reasoning":
                reasoning.append(str(part.get("content") or ""))
            elif kind in ("tool_call", "function_call", "server_tool_call"):
                call_name = part.get("name") or (part.get("server_tool_call") or {}).get("type")
                if not call_name:
                    raise SpanError(f"{what}[{index}] part {position}: tool call without a name")
                calls.append(make_call(part.get("id") or f"call-{index}-{position}", call_name,
                                       part.get("arguments", (part.get("server_tool_call") or {}).get("arguments"))))
            elif kind in ("tool_call_response", "server_tool_call_response"):
                response = part.get("response", part.get("result", part.get("server_tool_call_response")))
                content = "" if response is None else _text(response)
                call_id = part.get("id")
                results.append(Message(role="tool", content=content,
                                       receipt=make_receipt(str(call_id).strip() if call_id else None, content)))
            elif kind in ("blob", "uri", "file"):
                texts.append(f"[{part.get('modality') or kind}]")
            else:
                texts.append(json.dumps(part, ensure_ascii=False, sort_keys=True))
        if role == "assistant":
            out.append(Message(role="assistant", content="\n".join(texts), reasoning="\n".join(reasoning) or None,
                               tool_calls=calls, name=raw.get("name") if isinstance(raw.get("name"), str) else None))
            out.extend(results)
        elif role in _TEXT_ROLES:
            out.extend(results)
            if texts or not results:
                out.append(Message(role=role, content="\n".join(texts)))
        elif role == "tool":
            out.extend(results or [Message(role="tool", content="\n".join(texts), receipt=make_receipt(None, "\n".join(texts)))])
        else:
            raise SpanError(f"{what}[{index}]: unknown role {raw.get('role')!r}")
    return out


def _oi_messages(attrs: dict[str, Any], prefix: str, *, flat_names: bool = False) -> list[Message]:
    """OpenInference ``prefix.N.message.*`` messages (or, ``flat_names``, OpenLLMetry ``gen_ai.prompt.N.*``)."""
    out: list[Message] = []
    for index, raw in enumerate(indexed(attrs, prefix)):
        m = {k.removeprefix("message."): v for k, v in raw.items()} if not flat_names else raw
        role = {"developer": "system", "function": "tool"}.get(str(m.get("role")), str(m.get("role")))
        content = m.get("content")
        texts = [content] if isinstance(content, str) else []
        reasoning: list[str] = []
        thinking: list[ThinkingBlock] = []
        for part in indexed(m, "contents"):
            kind = part.get("message_content.type")
            if kind == "text":
                texts.append(str(part.get("message_content.text") or ""))
            elif kind == "reasoning":
                reasoning.append(str(part.get("message_content.text") or ""))
                if part.get("message_content.signature") or part.get("message_content.data"):
                    thinking.append(ThinkingBlock(
                        type="redacted_thinking" if part.get("message_content.data") else "thinking",
                        thinking=reasoning[-1], signature=part.get("message_content.signature"), data=part.get("message_content.data")))
            elif kind:
                texts.append(f"[{kind}]")
        calls = []
        for position, call in enumerate(indexed(m, "tool_calls")):
            call = {k.removeprefix("tool_call."): v for k, v in call.items()}
            name = call.get("function.name") or call.get("name")
            if not name:
                raise SpanError(f"{prefix}.{index}: tool call {position} has no function name")
            calls.append(make_call(str(call.get("id") or f"call-{index}-{position}"), str(name),
                                   call.get("function.arguments", call.get("arguments"))))
        text = "\n".join(texts)
        if role == "assistant":
            out.append(Message(role="assistant", content=text, reasoning="\n".join(reasoning) or None, thinking=thinking, tool_calls=calls))
        elif role == "tool":
            call_id = m.get("tool_call_id")
            out.append(Message(role="tool", content=text, name=m.get("name") if isinstance(m.get("name"), str) else None,
                               receipt=make_receipt(str(call_id) if call_id else None, text)))
        elif role in _TEXT_ROLES:
            out.append(Message(role=role, content=text))
        else:
            raise SpanError(f"{prefix}.{index}: unknown role {m.get('role')!r}")
    return out


def _langfuse_step(span: Span) -> Step:
    from judge.importers.openai_chat import convert_messages, is_message_list

    raw = span.langfuse or {}
    kind = str(raw.get("type") or "").upper()
    if kind in LANGFUSE_TOOL:
        metadata = as_dict(raw.get("metadata"))
        call_id = metadata.get("tool_call_id") or metadata.get("toolCallId")
        error_text = (span.status_message or "error") if span.error else None
        output = raw.get("output")
        return Step(span, "tool", call_id=str(call_id) if call_id else None, tool_name=span.name or None,
                    result=None if output is None else _text(output), error_text=error_text)
    if kind not in LANGFUSE_LLM:
        return Step(span, "other")
    source = raw.get("input")
    tools: list[ToolSpec] = []
    if isinstance(source, dict):
        tools = tool_specs(source.get("tools")) or []
        source = source.get("messages", source)
    try:
        if isinstance(source, str):
            inputs = [Message(role="user", content=source)]
        elif is_message_list(source):
            inputs = convert_messages(source)
        else:
            raise SpanError("GENERATION input is neither text nor a list of chat messages")
        output = raw.get("output")
        if isinstance(output, str):
            outputs = [Message(role="assistant", content=output)]
        elif isinstance(output, dict) and output.get("role"):
            outputs = convert_messages([output])
        elif is_message_list(output):
            outputs = [m for m in convert_messages(output) if m.role == "assistant"]
        elif output is None:
            outputs = []
        else:
            raise SpanError("GENERATION output is neither text nor a chat message")
    except RecordError as error:
        raise SpanError(f"GENERATION {error}") from error
    usage_raw = raw.get("usageDetails") or raw.get("usage") or {}
    usage = None
    if isinstance(usage_raw, dict):
        def count(*keys: str) -> int | None:
            return next((int(usage_raw[k]) for k in keys if isinstance(usage_raw.get(k), (int, float)) and not isinstance(usage_raw.get(k), bool)), None)

        usage = Usage(input_tokens=count("input", "promptTokens", "input_tokens"), output_tokens=count("output", "completionTokens", "output_tokens"),
                      cached_tokens=count("input_cached_tokens", "cache_read_input_tokens"))
        usage = usage if usage.total is not None else None
    return Step(span, "llm", inputs=inputs, outputs=outputs[:1], choices=len(outputs), model=raw.get("model"), usage=usage, tools=tools)


# --- a trace, rebuilt -----------------------------------------------------------------------------------


def _signature(message: Message) -> tuple[Any, ...]:
    """What makes two records of one message the same message (echoes differ in None vs "" and argument spelling)."""
    receipt_id = message.receipt.call_id if message.receipt else None
    return (message.role, message.content.strip(), tuple(c.id for c in message.tool_calls), receipt_id)


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    times: list[int] = field(default_factory=list)  # when each message was known (ns), for placing tool spans
    history_breaks: int = 0
    unused_choices: int = 0
    unpaired_tool_spans: int = 0

    def add(self, message: Message, time: int, at: int | None = None) -> None:
        position = len(self.messages) if at is None else at
        self.messages.insert(position, message)
        self.times.insert(position, time)

    def feed(self, step: Step) -> None:
        """Add what an LLM step's input adds to the conversation, then its answer."""
        start = step.span.start or 0
        common = 0
        while common < min(len(step.inputs), len(self.messages)) and _signature(step.inputs[common]) == _signature(self.messages[common]):
            common += 1
        new = step.inputs[common:]
        if common < len(self.messages):  # the input does not extend the conversation: keep only unseen messages
            self.history_breaks += 1
            seen = {_signature(m) for m in self.messages}
            new = [m for m in new if _signature(m) not in seen]
        for message in new:
            self.add(message, start)
        for message in step.outputs:
            if step.usage is not None:
                message.usage = step.usage
            self.add(message, step.span.end or start)
        self.unused_choices += max(0, step.choices - len(step.outputs))

    def settle(self, step: Step) -> None:
        """Pair a tool step with its call: mark the receipt, or add the result the inputs never showed."""
        receipt_message = next((m for m in self.messages if m.receipt and step.call_id and m.receipt.call_id == step.call_id), None)
        call_at = self._call_position(step)
        if receipt_message is not None and receipt_message.receipt is not None:
            receipt_message.receipt.is_error = receipt_message.receipt.is_error or step.error_text is not None
            if not receipt_message.content and step.result:
                receipt_message.content = receipt_message.receipt.content = step.result
            return
        content = step.result if step.result is not None else (step.error_text or "")
        if call_at is not None:
            call = next(c for c in self.messages[call_at].tool_calls if c.id == step.call_id or (step.call_id is None and c.name == step.tool_name))
            receipt = make_receipt(call.id, content, name=call.name, is_error=step.error_text is not None)
            at = call_at + 1
            while at < len(self.messages) and self.messages[at].role == "tool":
                at += 1
            self.add(Message(role="tool", content=content, receipt=receipt), self.times[call_at], at)
            return
        self.unpaired_tool_spans += 1
        start = step.span.start or 0
        at = sum(1 for t in self.times if t <= start)
        receipt = make_receipt(None, content, name=step.tool_name, is_error=step.error_text is not None)
        self.add(Message(role="tool", content=content, name=step.tool_name, receipt=receipt), start, at)

    def _call_position(self, step: Step) -> int | None:
        answered = {m.receipt.call_id for m in self.messages if m.receipt and m.receipt.call_id}
        for position, message in enumerate(self.messages):
            for call in message.tool_calls:
                if step.call_id is not None and call.id == step.call_id:
                    return position
                if step.call_id is None and call.name == step.tool_name and call.id not in answered:
                    return position
        return None


def trajectory_of(trace_id: str, spans: list[Span], steps: list[Step], resources: dict[str, Any]) -> Trajectory:
    """One trace (its spans and their steps) -> Trajectory; RecordError when it holds no conversation."""
    steps = sorted(steps, key=lambda s: (s.span.start if s.span.start is not None else math.inf, s.span.order))
    kinds = Counter(step.kind for step in steps)
    llm_steps = [s for s in steps if s.kind == "llm" and (s.inputs or s.outputs)]
    if not llm_steps:
        raise RecordError(f"trace {trace_id}: no LLM span with recorded messages ({len(spans)} spans: "
                          f"{', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); was message content capture off?")
    conversation = Conversation()
    for step in steps:
        if step.kind == "llm":
            conversation.feed(step)
    for step in steps:
        if step.kind == "tool":
            conversation.settle(step)
    first = spans[0]
    by_id = {s.span_id: s for s in spans}
    root = next((s for s in sorted(spans, key=lambda s: s.order) if not s.parent_id or s.parent_id not in by_id), first)
    attrs = root.attributes
    models = Counter(s.model for s in llm_steps if s.model)
    tools: dict[str, ToolSpec] = {}
    for step in llm_steps:
        for tool in step.tools:
            tools.setdefault(tool.name, tool)
    usage = Usage()
    for step in llm_steps:
        if step.usage is not None:
            usage = usage + step.usage
    session = next((s.attributes.get(k) for s in spans for k in ("session.id", "gen_ai.conversation.id", "langfuse.session.id")
                    if s.attributes.get(k)), None)
    if session is None:
        session = next((s.where.trace.get("sessionId") for s in spans if s.where.trace), None)
    extra: dict[str, Any] = {"trace_id": trace_id, "spans": dict(sorted(kinds.items())), "root_span": root.name}
    for key, value in (("service", resources.get("service.name")), ("session_id", session),
                       ("history_breaks", conversation.history_breaks), ("unused_choices", conversation.unused_choices),
                       ("unpaired_tool_spans", conversation.unpaired_tool_spans)):
        if value:
            extra[key] = value
    if root.error:
        extra["root_status"] = "ERROR"
        extra["root_status_message"] = root.status_message
    src = Source(first.where.source.file, line=first.where.source.line, index=first.where.source.index)
    metadata = build_metadata(NAME, src, {"model": models.most_common(1)[0][0] if models else None}, {"extra": extra})
    metadata.tools = list(tools.values())
    if usage.total is not None:
        metadata.usage = usage
    query = attrs.get("input.value") if isinstance(attrs.get("input.value"), str) else None
    if any(m.role == "user" and m.content.strip() for m in conversation.messages):
        query = None  # the first user message is the query
    return build_trajectory(NAME, src, conversation.messages, trajectory_id=trace_id, query=query, metadata=metadata)


# --- the reader's entry points -------------------------------------------------------------------------


def gather(records: Iterable[tuple[Source, Any]]) -> Iterator[Trajectory | Reject]:
    """Every record of one file -> one trajectory per trace (in order of first appearance), and rejects.

    One reject per problem: a span without a trace id is rejected alone; a span that cannot be read rejects its
    whole trace, located at that span; a trace with no conversation is rejected at its first span.
    """
    traces: dict[str, list[Span]] = {}
    resources: dict[str, dict[str, Any]] = {}
    broken: dict[str, tuple[Located, str]] = {}
    order = 0
    for source, record in records:
        for located in spans_of(record, source):
            order += 1
            try:
                span = read_span(located)
            except _SPAN_ERRORS as error:
                trace_id = _trace_id_of(located.raw)
                if trace_id is None:
                    yield _reject(located, f"span{_at(located)}: {_reason(error)}")
                else:
                    traces.setdefault(trace_id, [])
                    broken.setdefault(trace_id, (located, _reason(error)))
                continue
            span.order = order
            traces.setdefault(span.trace_id, []).append(span)
            resources.setdefault(span.trace_id, located.resource)
    for trace_id, spans in traces.items():
        steps: list[Step] = []
        for span in spans:
            if trace_id in broken:
                break
            try:
                steps.append(interpret(span))
            except _SPAN_ERRORS as error:
                broken[trace_id] = (span.where, _reason(error))
        if trace_id in broken:
            located, reason = broken[trace_id]
            yield _reject(located, f"trace {trace_id} not imported: span{_at(located)}: {reason} "
                                   f"(a trace with a hole would be judged as if complete)")
            continue
        try:
            yield trajectory_of(trace_id, spans, steps, resources.get(trace_id, {}))
        except RecordError as error:
            reason = str(error)
            yield _reject(spans[0].where, reason if reason.startswith("trace ") else f"trace {trace_id}: {reason}")


# A span of an unexpected shape must not stop the file; the reason names what broke.
_SPAN_ERRORS = (SpanError, KeyError, TypeError, ValueError, AttributeError, IndexError)


def _reason(error: Exception) -> str:
    return str(error) if isinstance(error, SpanError) else f"unexpected span shape: {type(error).__name__}: {error}"


def _trace_id_of(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return None
    value = _get(raw, "traceId", "trace_id") or _get(as_dict(raw.get("context")), "trace_id")
    return _hex_id(value) if isinstance(value, str) and value else None


def _at(located: Located) -> str:
    return f" at {located.path}" if located.path else ""


def _reject(located: Located, reason: str) -> Reject:
    src = located.source
    return Reject(source_file=src.file, line=src.line, record_index=src.index, format=NAME, reason=one_line(reason))


def parse(record: Any, src: Source) -> Trajectory:
    """One record holding exactly one trace (the per-record API); a file of spans is read by :func:`gather`."""
    items = list(gather([(src, record)]))
    rejects = [i for i in items if isinstance(i, Reject)]
    trajectories = [i for i in items if isinstance(i, Trajectory)]
    if rejects:
        raise RecordError(rejects[0].reason)
    if len(trajectories) != 1:
        raise RecordError(f"record holds {len(trajectories)} traces; read the whole file (judge import) to split them")
    return trajectories[0]
