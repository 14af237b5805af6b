"""Span exports (OpenTelemetry GenAI, OpenInference / Phoenix, Langfuse) -> canonical trajectories.

The four files recorded by the real instrumentations (tests/fixtures/importers/otel/generate.py) hold the same
agent run in different shapes, so they must give the same conversation; the hand-written files cover the
spec's variants, Langfuse, and malformed input (every problem a reject with file, line and reason).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.importers import detect_format, iter_records, load_trajectories
from judge.importers._common import Source
from judge.importers.otel_spans import (
    Conversation,
    SpanError,
    Step,
    _any_value,
    _hex_id,
    _time,
    indexed,
    read_span,
    spans_of,
)
from judge.model import Message, Trajectory
from judge.schema import Reject

OTEL = Path(__file__).parent / "fixtures" / "importers" / "otel"
FIXTURES = Path(__file__).parent / "fixtures" / "importers"
# A chat span in the SDK console shape, the good trace of the malformed-input tests.
MALFORMED_GOOD = '{"name": "chat gpt-4", "context": {"trace_id": "0x7ef92f3577b34da6a3ce929d0e0e4739", "span_id": "0x30f067aa0ba902b7", "trace_state": "[]"}, "kind": "SpanKind.CLIENT", "parent_id": null, "start_time": "2026-01-05T10:00:30.000000Z", "end_time": "2026-01-05T10:00:31.000000Z", "status": {"status_code": "UNSET"}, "attributes": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4", "gen_ai.response.model": "gpt-4-0613", "gen_ai.input.messages": "[{\\"role\\": \\"user\\", \\"parts\\": [{\\"type\\": \\"text\\", \\"content\\": \\"ping\\"}]}]", "gen_ai.output.messages": "[{\\"role\\": \\"assistant\\", \\"parts\\": [{\\"type\\": \\"text\\", \\"content\\": \\"pong\\"}]}]"}, "events": [], "links": [], "resource": {"attributes": {"service.name": "weather-agent"}, "schema_url": ""}}'


def shape(trajectory: Trajectory) -> list[tuple]:
    """The conversation as (turn, role, text, call ids, receipt call id, receipt error)."""
    return [(m.turn, m.role, m.content, [c.id for c in m.tool_calls], m.receipt.call_id if m.receipt else None,
             m.receipt.is_error if m.receipt else None) for m in trajectory.messages]


TOOL_LOOP = [
    (0, "system", "You are a coding agent. Use the tools; report only what they return.", [], None, None),
    (0, "user", "Which port does the service configuration set?", [], None, None),
    (1, "assistant", "", ["call_cfg_1"], None, None),
    (1, "tool", "error: no such file: config.yml", [], "call_cfg_1", True),  # the tool span's status ERROR
    (2, "assistant", "No config.yml; trying config.yaml.", ["call_cfg_2"], None, None),
    (2, "tool", "service:\n  port: 8080\n", [], "call_cfg_2", False),
    (3, "assistant", "config.yaml sets port 8080 (service.port).", [], None, None),
]


@pytest.mark.parametrize(
    ("name", "traces", "tools", "extra"),
    [
        ("genai_otlp.json", 2, [], {"service": "config-agent", "root_span": "invoke_agent config-agent"}),
        ("genai_console_spans.jsonl", 2, [], {"root_span": "invoke_agent config-agent"}),
        ("openinference_otlp.jsonl", 1, ["read_file"], {"service": "config-agent", "session_id": "session-42", "root_span": "config-agent"}),
        ("phoenix_spans.json", 1, ["read_file"], {"session_id": "session-42", "root_span": "config-agent"}),
    ],
)
def test_recorded_exports_of_one_run_give_the_same_conversation(name, traces, tools, extra):
    items = list(iter_records(OTEL / name))
    assert not [i for i in items if isinstance(i, Reject)]
    assert len(items) == traces
    run = items[0]
    assert shape(run) == TOOL_LOOP
    assert run.metadata.source_format == "otel" and run.metadata.source_file.endswith(name)
    assert run.id == run.metadata.extra["trace_id"] and len(run.id) == 32
    assert run.metadata.model == "gpt-4o-2024-08-06"
    assert [m.usage.input_tokens for m in run.messages if m.role == "assistant"] == [120, 160, 200]
    assert (run.metadata.usage.input_tokens, run.metadata.usage.output_tokens) == (480, 62)
    assert [t.name for t in run.metadata.tools] == tools
    assert run.metadata.extra["spans"] == {"llm": 3, "other": 1, "tool": 2}
    assert extra.items() <= run.metadata.extra.items()
    assert run.query == "Which port does the service configuration set?"
    assert run.messages[2].tool_calls[0].arguments == {"path": "config.yml"}
    if traces == 2:  # the second trace is its own trajectory
        assert shape(items[1]) == [(0, "user", "Say hello.", [], None, None), (1, "assistant", "Hello!", [], None, None)]


def test_genai_spec_examples_system_instructions_definitions_reasoning_events_and_legacy_attributes():
    weather, scratch, legacy = load_trajectories(OTEL / "genai_spec_examples.jsonl")
    assert shape(weather) == [
        (0, "system", "You are a helpful bot", [], None, None),
        (0, "user", "Weather in Paris?", [], None, None),
        (1, "assistant", "", ["call_VSPygqKTWdrhaFErNvMV18Yl"], None, None),
        (1, "tool", "rainy, 57°F", [], "call_VSPygqKTWdrhaFErNvMV18Yl", False),  # id written " call_..." in the input
        (2, "assistant", "The weather in Paris is currently rainy with a temperature of 57°F.", [], None, None),
    ]
    assert weather.messages[2].reasoning == "The user asks for the weather: call get_weather for Paris."
    (tool,) = weather.metadata.tools
    assert (tool.name, tool.parameters["required"]) == ("get_weather", ["location"])
    assert weather.metadata.extra.get("history_breaks") is None
    # content on the inference-details event; the failing call's result exists only on its tool span
    assert shape(scratch) == [
        (0, "user", "Clean up the scratch directory.", [], None, None),
        (1, "assistant", "", ["call_rm"], None, None),
        (1, "tool", "PermissionError: [Errno 13] Permission denied: '/srv/scratch'", [], "call_rm", True),
        (1, "tool", "sent", [], None, False),  # a tool span no call asked for: kept, placed by time, counted
    ]
    assert scratch.messages[3].receipt.name == "notify"
    assert scratch.metadata.extra["unpaired_tool_spans"] == 1
    assert shape(legacy) == [(0, "system", "Answer briefly.", [], None, None), (0, "user", "What is 2 + 2?", [], None, None),
                             (1, "assistant", "4", [], None, None)]
    assert (legacy.metadata.model, legacy.metadata.usage.input_tokens) == ("gpt-4o-mini-2024-07-18", 25)


def test_langfuse_trace_export():
    (trajectory,) = load_trajectories(OTEL / "langfuse_trace.json")
    assert shape(trajectory) == [
        (0, "system", "You are a support agent. Look orders up before answering.", [], None, None),
        (0, "user", "Where is my order A17?", [], None, None),
        (1, "assistant", "", ["call_a17"], None, None),
        (1, "tool", "order A17 not found", [], "call_a17", True),  # level ERROR on the TOOL observation
        (2, "assistant", "I could not find order A17. Could you check the number?", [], None, None),
    ]
    assert trajectory.id == "9f1c2a7e-lf-trace"
    assert trajectory.metadata.extra["session_id"] == "sess-9"
    assert [t.name for t in trajectory.metadata.tools] == ["lookup_order"]
    assert trajectory.metadata.usage.total == 116 + 146


GOOD_SPAN = json.loads(MALFORMED_GOOD)


@pytest.mark.parametrize(
    ("bad_lines", "reason"),
    [
        ([{"name": "orphan", "context": {"span_id": "0x40f067aa0ba902b7"}, "attributes": {}}], "span: not a span: no trace and span ids"),
        ([{"traceId": "8e" * 16, "spanId": "50f067aa0ba902b7", "name": "chat gpt-4", "attributes": [{"value": {"stringValue": "chat"}}]},
          {**GOOD_SPAN, "context": {"trace_id": "0x" + "8e" * 16, "span_id": "0x50f067aa0ba902b8"}}],  # its sibling goes with it
         f"trace {'8e' * 16} not imported: span: attribute 0 has no key"),
        (['{"name": "cut off", "context": {"trace_id": "0x'], "broken JSON"),
        ([{**GOOD_SPAN, "context": {"trace_id": "0x" + "9e" * 16, "span_id": "0x60f067aa0ba902b7"}, "name": "GET /health",
           "attributes": {"http.request.method": "GET", "url.path": "/health"}}],
         f"trace {'9e' * 16}: no LLM span with recorded messages (1 spans: 1 other); was message content capture off?"),
        ([{**GOOD_SPAN, "context": {"trace_id": "0x" + "ae" * 16, "span_id": "0x70f067aa0ba902b7"},
           "attributes": {**GOOD_SPAN["attributes"], "gen_ai.input.messages": '[{"role": "user", "parts": ['}}],
         f"trace {'ae' * 16} not imported: span: gen_ai.input.messages is not valid JSON"),
        ([{**GOOD_SPAN, "context": {"trace_id": "0x" + "be" * 16, "span_id": "0x80f067aa0ba902b7"}, "start_time": "yesterday"}],
         f"trace {'be' * 16} not imported: span: unreadable time 'yesterday'"),
        ([{**GOOD_SPAN, "context": {"trace_id": "0x" + "ce" * 16, "span_id": "0x90f067aa0ba902b7"},
           "attributes": {**GOOD_SPAN["attributes"], "gen_ai.output.messages": '[{"role": "critic", "parts": []}]'}}],
         f"trace {'ce' * 16} not imported: span: gen_ai.output.messages[0]: unknown role 'critic'"),
        ([{"traceId": "de" * 16, "spanId": "a0f067aa0ba902b7", "name": "chat", "attributes": [
            {"key": "llm.output_messages.0.message.role", "value": {"stringValue": "assistant"}},
            {"key": "llm.output_messages.0.message.tool_calls.0.tool_call.id", "value": {"stringValue": "c1"}}]}],
         f"trace {'de' * 16} not imported: span: llm.output_messages.0: tool call 0 has no function name"),
    ],
)
def test_a_malformed_span_is_a_reject_with_file_line_and_reason_and_the_good_trace_still_imports(tmp_path: Path, bad_lines, reason):
    path = tmp_path / "spans.jsonl"
    lines = [MALFORMED_GOOD] + [line if isinstance(line, str) else json.dumps(line) for line in bad_lines]
    path.write_text("\n".join(lines) + "\n")
    items = list(iter_records(path))
    trajectories = [i for i in items if isinstance(i, Trajectory)]
    (reject,) = [i for i in items if isinstance(i, Reject)]  # one problem, one reject (a trace's siblings go with it)
    assert [shape(t) for t in trajectories] == [[(0, "user", "ping", [], None, None), (1, "assistant", "pong", [], None, None)]]
    assert (reject.source_file, reject.line) == (str(path), 2)
    assert reject.reason.startswith(reason), reject.reason


def test_bad_spans_inside_a_json_document_are_located_by_path(tmp_path: Path):
    document = json.loads((OTEL / "genai_otlp.json").read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[2]["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "many"}})
    path = tmp_path / "export.json"
    path.write_text(json.dumps(document))
    items = list(iter_records(path))
    (reject,) = [i for i in items if isinstance(i, Reject)]
    assert reject.reason.startswith(f"trace {spans[2]['traceId']} not imported: span at resourceSpans[0].scopeSpans[0].spans[2]: "
                                    "attribute 'gen_ai.usage.input_tokens': intValue 'many' is not an integer")
    assert [len(t.messages) for t in items if isinstance(t, Trajectory)] == [2]  # the other trace is unharmed


def test_cli_import_writes_trajectories_and_rejects(tmp_path: Path):
    from judge.cli import app

    out = tmp_path / "spans.jsonl"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(MALFORMED_GOOD + "\n" + '{"traceId": "ab"}\n{"cut": \n')
    result = CliRunner().invoke(app, ["import", str(bad), str(OTEL / "phoenix_spans.json"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == 2
    rejects = [json.loads(line) for line in (tmp_path / "spans.rejects.jsonl").read_text().splitlines()]
    assert sorted((r["line"], r["reason"][:34]) for r in rejects) == [(2, "trace ab not imported: span: not a"), (3, "broken JSON: Expecting value (colu")]
    forced = CliRunner().invoke(app, ["import", str(OTEL / "langfuse_trace.json"), "--format", "otel", "--out", str(tmp_path / "lf.jsonl")])
    assert forced.exit_code == 0, forced.output


# --- the parts, table-driven -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"stringValue": "chat"}, "chat"),
        ({"intValue": "120"}, 120),  # OTLP/JSON writes 64-bit ints as strings
        ({"int_value": 7}, 7),
        ({"doubleValue": 1.5}, 1.5),
        ({"boolValue": True}, True),
        ({"arrayValue": {"values": [{"stringValue": "stop"}]}}, ["stop"]),
        ({"kvlistValue": {"values": [{"key": "a", "value": {"intValue": "1"}}]}}, {"a": 1}),
        ({}, None),
        (None, None),
    ],
)
def test_otlp_any_values(value, expected):
    assert _any_value(value, "k") == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"intValue": "many"}, "intValue 'many' is not an integer"),
        ({"stringValue": "a", "intValue": "1"}, "unreadable value"),
        ({"mapValue": {}}, "unknown value type 'mapValue'"),
    ],
)
def test_unreadable_otlp_values_are_span_errors(value, reason):
    with pytest.raises(SpanError, match=reason):
        _any_value(value, "k")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0x4bf92f3577b34da6a3ce929d0e0e4736", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("4BF92F3577B34DA6A3CE929D0E0E4736", "4bf92f3577b34da6a3ce929d0e0e4736"),
        ("S/kvNXezTaajzpKdDg5HNg==", "4bf92f3577b34da6a3ce929d0e0e4736"),  # protobuf JSON's base64
        ("APBnqgupArc=", "00f067aa0ba902b7"),
        ("9f1c2a7e-lf-trace", "9f1c2a7e-lf-trace"),  # Langfuse ids are free text
    ],
)
def test_ids_are_normalised_to_hex(value, expected):
    assert _hex_id(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1767607200000000000", 1767607200000000000),
        (1767607200000000000, 1767607200000000000),
        ("2026-01-05T10:00:00Z", 1767607200000000000),
        ("2026-01-05T10:00:00.250000+00:00", 1767607200250000000),
        (None, None),
    ],
)
def test_times_in_nanoseconds(value, expected):
    assert _time(value) == expected


def test_indexed_and_nested_attributes_read_alike():
    flat = {"llm.input_messages.1.message.role": "user", "llm.input_messages.0.message.role": "system", "llm.other": 1}
    assert indexed(flat, "llm.input_messages") == [{"message.role": "system"}, {"message.role": "user"}]
    nested = {"name": "ChatCompletion", "context": {"trace_id": "ab" * 16, "span_id": "cd" * 8},
              "attributes": {"llm": {"input_messages": [{"message": {"role": "system", "content": "s"}}]},
                             "gen_ai": {"input": {"messages": [{"role": "user", "parts": []}]}}}}
    span = read_span(next(spans_of(nested, Source("x.json"))))
    assert span.attributes["llm.input_messages.0.message.role"] == "system"
    assert span.attributes["gen_ai.input.messages"] == [{"role": "user", "parts": []}]  # JSON-valued: kept whole


@pytest.mark.parametrize(
    "path",
    sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".json", ".jsonl", ".traj") and "otel" not in p.parts),
    ids=lambda p: p.name,
)
def test_other_formats_are_not_taken_for_spans(path: Path):
    first = path.read_text(encoding="utf-8").splitlines()[0] if path.suffix == ".jsonl" else path.read_text(encoding="utf-8")
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        pytest.skip("not one JSON document")
    assert detect_format(record) != "otel"


def test_an_input_that_rewrites_history_adds_only_unseen_messages_and_is_counted():
    conversation = Conversation()
    span = read_span(next(spans_of({"traceId": "ab" * 16, "spanId": "cd" * 8}, Source("x"))))
    first = Step(span, "llm", inputs=[Message(role="user", content="a")], outputs=[Message(role="assistant", content="b")], choices=2)
    conversation.feed(first)
    trimmed = Step(span, "llm", inputs=[Message(role="user", content="summary of a"), Message(role="assistant", content="b"),
                                        Message(role="user", content="c")], outputs=[Message(role="assistant", content="d")], choices=1)
    conversation.feed(trimmed)
    assert [m.content for m in conversation.messages] == ["a", "b", "summary of a", "c", "d"]
    assert (conversation.history_breaks, conversation.unused_choices) == (1, 1)
