"""Providers through the real openai/anthropic SDKs against local fake servers (no network)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from judge.model import ToolSpec, Usage
from judge.pricing import Price, PriceTable, cost_usd, load_price_table, price
from judge.providers import (
    PLACEHOLDER_KEY,
    AuthError,
    ProviderError,
    make_provider,
    parse_spec,
)
from judge.providers.errors import classify_status, parse_retry_after
from judge.providers.retry import (
    Attempt,
    Budget,
    BudgetExceeded,
    CallRuntime,
    RetryPolicy,
    backoff_delay,
    complete_with_retries,
)
from judge.testing.servers import FakeLLMServer, Scripted

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": False}
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
SPECS = {"openai": "openai-compatible:fake", "anthropic": "anthropic:claude-fake"}


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with FakeLLMServer(request.param) as fake:
        yield fake


def provider_for(server: FakeLLMServer, timeout_s: float = 5.0):
    return make_provider(SPECS[server.protocol], {"base_url": server.base_url, "timeout_s": timeout_s})


def complete(server: FakeLLMServer, scripted: Scripted, timeout_s: float = 5.0, **kw: Any):
    server.queue(scripted)

    async def go():
        provider = provider_for(server, timeout_s)
        try:
            return await provider.complete(MESSAGES, schema=SCHEMA, temperature=0.7, seed=3, **kw)
        finally:
            await provider.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("scripted", "kind", "retry_after"),
    [
        (Scripted.rate_limited(retry_after=2.5), "rate_limited", 2.5),
        (Scripted.server_error(500), "server_error", None),
        (Scripted.server_error(503), "server_error", None),
        (Scripted.malformed_body(), "bad_output", None),
        (Scripted.context_overflow(), "context_overflow", None),
        (Scripted(status=401), "auth", None),
        (Scripted(status=404, error_message="no such model"), "bad_request", None),
    ],
)
def test_http_errors_are_classified(server: FakeLLMServer, scripted: Scripted, kind: str, retry_after: float | None) -> None:
    with pytest.raises(ProviderError) as raised:
        complete(server, scripted)
    assert raised.value.kind == kind
    assert raised.value.retry_after == retry_after


def test_timeout_is_classified(server: FakeLLMServer) -> None:
    with pytest.raises(ProviderError) as raised:
        complete(server, Scripted.slow(1.0), timeout_s=0.2)
    assert raised.value.kind == "timeout"


def test_schema_answer_is_parsed_and_usage_normalised(server: FakeLLMServer) -> None:
    completion = complete(server, Scripted.ok({"a": "x"}, usage={"input": 100, "output": 10, "cached": 40}))
    assert completion.parsed == {"a": "x"}
    assert completion.finish_reason == "stop"
    # Both providers report input tokens including the cached part (Anthropic sends them separately).
    assert completion.usage == Usage(input_tokens=100, output_tokens=10, cached_tokens=40)


def test_schema_is_enforced_the_provider_way(server: FakeLLMServer) -> None:
    complete(server, Scripted.ok({"a": "x"}), max_tokens=321)
    request = server.requests[-1]
    if server.protocol == "openai":
        assert request["response_format"] == {"type": "json_schema", "json_schema": {"name": "verdict", "schema": SCHEMA, "strict": True}}
        assert request["seed"] == 3 and request["temperature"] == 0.7 and request["max_tokens"] == 321
    else:
        assert request["tool_choice"] == {"type": "tool", "name": "verdict"}
        assert request["tools"][0]["input_schema"] == SCHEMA
        assert request["system"] == [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
        assert request["temperature"] == 0.7 and request["max_tokens"] == 321
        assert all(m["role"] != "system" for m in request["messages"])



def test_the_passes_of_one_message_list_send_the_same_body_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three passes over one prompt (the same list object, another seed each): the server reads the body the SDK
    would have sent for each, and the ~25 KB of messages were serialised once, not once per pass (issue 27)."""
    import json

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "h\u00e9llo \u2028 \"quoted\"" * 50}]
    encoded: list[Any] = []
    dumps = json.dumps

    def counting(value: Any, *args: Any, **kwargs: Any) -> str:
        if value is messages or (isinstance(value, dict) and value.get("messages") is messages):
            encoded.append(value)
        return dumps(value, *args, **kwargs)

    with FakeLLMServer("openai") as fake:
        async def go() -> None:
            provider = make_provider("openai-compatible:fake", {"base_url": fake.base_url, "timeout_s": 5.0})
            try:
                for seed in (1, 2, 3):
                    await provider.complete(messages, schema=SCHEMA, temperature=0.0, seed=seed, max_tokens=50)
                await provider.complete([*messages, {"role": "user", "content": "again"}], max_tokens=50)
            finally:
                await provider.aclose()

        monkeypatch.setattr(json, "dumps", counting)
        asyncio.run(go())
        monkeypatch.undo()
        assert [r["seed"] for r in fake.requests[:3]] == [1, 2, 3]
        for request in fake.requests[:3]:
            assert request["messages"] == messages and request["model"] == "fake" and request["max_tokens"] == 50
            assert request["response_format"]["json_schema"]["schema"] == SCHEMA and request["temperature"] == 0.0
        assert fake.requests[3]["messages"][-1] == {"role": "user", "content": "again"}
        assert "seed" not in fake.requests[3] and "response_format" not in fake.requests[3]
    assert len(encoded) == 1, f"the messages were serialised {len(encoded)} times for 3 passes"

TOOLS = [ToolSpec(name="Bash", description="Run a command.", parameters={
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}), ToolSpec(name="Done")]
# A tool-using conversation in the OpenAI form every provider reads: a call, its result, then a user note.
CONVERSATION = [
    {"role": "system", "content": "be brief"}, {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": "Listing.", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "Bash", "arguments": '{"command": "ls"}'}},
        {"id": "c2", "type": "function", "function": {"name": "Bash", "arguments": "not json"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    {"role": "tool", "tool_call_id": "c2", "content": "Exit code 2\nbad"},
    {"role": "user", "content": "Guidance: check the exit code."},
]


def test_offered_tools_are_called_and_the_calls_come_back_parsed(server: FakeLLMServer) -> None:
    calls = [{"id": "k1", "name": "Bash", "arguments": {"command": "cat a.txt"}}, {"id": "k2", "name": "Done", "arguments": "{oops"}]
    server.queue(Scripted(content="Reading it.", tool_calls=calls, usage={"input": 50, "output": 7, "cached": 0}))

    async def go():
        provider = provider_for(server)
        try:
            return await provider.complete(CONVERSATION, tools=TOOLS, max_tokens=200)
        finally:
            await provider.aclose()

    completion = asyncio.run(go())
    assert completion.finish_reason == "tool_use" and completion.text == "Reading it."
    first, second = completion.tool_calls
    assert (first.id, first.name, first.arguments, first.arguments_error) == ("k1", "Bash", {"command": "cat a.txt"}, None)
    assert completion.usage == Usage(input_tokens=50, output_tokens=7, cached_tokens=0)
    request = server.requests[-1]
    if server.protocol == "openai":
        assert second.arguments is None and second.raw_arguments == "{oops" and second.arguments_error
        assert request["tools"] == [tool.as_openai() for tool in TOOLS]
        assert request["tools"][1] == {"type": "function", "function": {"name": "Done"}}
        assert request["messages"] == CONVERSATION  # the OpenAI form is sent as it is
    else:
        assert second.name == "Done"  # Anthropic's input is always an object: what the server sent
        assert [t["name"] for t in request["tools"]] == ["Bash", "Done"] and "tool_choice" not in request
        assert request["tools"][1]["input_schema"] == {"type": "object", "properties": {}}
        # Calls became tool_use blocks, results tool_result blocks, and the roles alternate (results + note merged).
        assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
        assert request["messages"][1]["content"] == [
            {"type": "text", "text": "Listing."},
            {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "ls"}},
            {"type": "tool_use", "id": "c2", "name": "Bash", "input": {"raw": "not json"}}]
        assert request["messages"][2]["content"] == [
            {"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "Exit code 2\nbad"},
            {"type": "text", "text": "Guidance: check the exit code."}]


def test_an_answer_without_calls_to_offered_tools_is_a_plain_stop(server: FakeLLMServer) -> None:
    server.queue(Scripted(content="All done."))

    async def go():
        provider = provider_for(server)
        try:
            return await provider.complete(MESSAGES, tools=TOOLS)
        finally:
            await provider.aclose()

    completion = asyncio.run(go())
    assert (completion.finish_reason, completion.text, completion.tool_calls) == ("stop", "All done.", [])


@pytest.mark.parametrize(
    ("scripted", "finish", "refusal"),
    [
        (Scripted.truncated('{"a": "unfinish'), "length", None),
        (Scripted.refused("I won't."), "refusal", "I won't."),
    ],
)
def test_length_and_refusal_are_normalised(server: FakeLLMServer, scripted: Scripted, finish: str, refusal: str | None) -> None:
    completion = complete(server, scripted)
    assert completion.finish_reason == finish
    assert completion.refusal == refusal
    assert completion.parsed is None


def test_placeholder_key_for_a_base_url_server(server: FakeLLMServer) -> None:
    complete(server, Scripted.ok({"a": "x"}))
    headers = server.request_headers[-1]
    sent = headers.get("authorization", "") + headers.get("x-api-key", "")
    assert PLACEHOLDER_KEY in sent


def test_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-env")
    with FakeLLMServer("openai") as fake:
        complete(fake, Scripted.ok({"a": "x"}))
        assert fake.request_headers[-1]["authorization"] == "Bearer sk-test-from-env"


def test_missing_key_for_the_real_api_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(AuthError, match="OPENAI_API_KEY is not set"):
        make_provider("openai:gpt-4o", {})
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY is not set"):
        make_provider("anthropic:claude-sonnet-4", {})


@pytest.mark.parametrize(
    ("spec", "base_url", "kind", "model", "url"),
    [
        ("openai:gpt-4o", None, "openai", "gpt-4o", None),
        ("anthropic:claude-sonnet-4-5", None, "anthropic", "claude-sonnet-4-5", None),
        ("openai-compatible:llama3@http://localhost:11434/v1", None, "openai-compatible", "llama3", "http://localhost:11434/v1"),
        ("openai:qwen2", "http://h:8000/v1", "openai-compatible", "qwen2", "http://h:8000/v1"),
        ("openai-compatible:m@http://a/v1", "http://b/v1", "openai-compatible", "m", "http://b/v1"),
    ],
)
def test_parse_spec(spec: str, base_url: str | None, kind: str, model: str, url: str | None) -> None:
    parsed = parse_spec(spec, base_url)
    assert (parsed.kind, parsed.model, parsed.base_url) == (kind, model, url)


@pytest.mark.parametrize("spec", ["gpt-4o", "cohere:command", "openai:", "openai-compatible:m"])
def test_parse_spec_rejects(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError):
        parse_spec(spec)


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [(429, "slow down", "rate_limited"), (500, "x", "server_error"), (529, "overloaded", "server_error"),
     (408, "x", "timeout"), (401, "x", "auth"), (403, "x", "auth"), (400, "prompt is too long: 300000 tokens", "context_overflow"),
     (400, "bad field", "bad_request"), (413, "x", "context_overflow")],
)
def test_classify_status(status: int, message: str, kind: str) -> None:
    assert classify_status(status, message, None).kind == kind


@pytest.mark.parametrize(("value", "seconds"), [("3", 3.0), ("0.5", 0.5), (None, None), ("Wed, 21 Oct 2015 07:28:00 GMT", None), ("-1", None)])
def test_parse_retry_after(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds


# --- the retry loop ------------------------------------------------------------------------------


def run_with_retries(server: FakeLLMServer, *scripted: Scripted, max_retries: int = 3, budget: Budget | None = None,
                     timeout_s: float = 5.0, before_retry: Any = None):
    server.queue(*scripted)
    delays: list[float] = []

    async def no_sleep(seconds: float) -> None:  # record the backoff instead of waiting it out
        delays.append(seconds)

    runtime = CallRuntime(policy=RetryPolicy(max_retries=max_retries, base_delay_s=0.5), timeout_s=timeout_s,
                          budget=budget or Budget(), sleep=no_sleep, price_fn=lambda key, usage: cost_usd(Price(1.0, 4.0, 0.5), usage))
    seen: list[Attempt] = []

    async def go():
        provider = provider_for(server, timeout_s)
        try:
            return await complete_with_retries(provider, MESSAGES, runtime=runtime, estimated_input_tokens=10,
                                               on_attempt=seen.append, before_retry=before_retry, schema=SCHEMA,
                                               max_tokens=100)
        finally:
            await provider.aclose()

    try:
        outcome: Any = asyncio.run(go())
    except (ProviderError, BudgetExceeded) as error:
        outcome = error
    return outcome, seen, delays, runtime


def test_retry_after_is_honoured_and_every_attempt_reported(server: FakeLLMServer) -> None:
    outcome, seen, delays, runtime = run_with_retries(
        server, Scripted.rate_limited(retry_after=7), Scripted.server_error(), Scripted.ok({"a": "x"}, usage={"input": 1000, "output": 100, "cached": 0}))
    completion, attempts = outcome
    assert completion.parsed == {"a": "x"}
    assert [a.outcome for a in seen] == ["rate_limited", "server_error", "ok"] == [a.outcome for a in attempts]
    assert delays[0] >= 7.0  # the server's Retry-After, not our shorter backoff
    assert 0.0 <= delays[1] <= 1.0  # second retry: full jitter under base * 2
    assert server.request_count == 3 and runtime.retries == 2
    assert seen[-1].cost_usd == pytest.approx((1000 * 1.0 + 100 * 4.0) / 1e6)


def test_retries_stop_after_max_retries(server: FakeLLMServer) -> None:
    outcome, seen, _, _ = run_with_retries(server, *[Scripted.server_error()] * 3, max_retries=2)
    assert isinstance(outcome, ProviderError) and outcome.kind == "server_error"
    assert len(seen) == 3 and server.request_count == 3


def test_a_callers_check_before_each_retry_stops_the_call_before_anything_is_reserved_or_sent(server: FakeLLMServer) -> None:
    heard: list[list[str]] = []

    def enough(attempts: list[Attempt]) -> None:  # e.g. a continuation arm's token budget
        heard.append([a.outcome for a in attempts])
        if len(attempts) == 2:
            raise RuntimeError("the caller's own budget is spent")

    budget = Budget(max_cost_usd=1.0)
    with pytest.raises(RuntimeError, match="own budget is spent"):  # raised through to the caller
        run_with_retries(server, *[Scripted.server_error()] * 4, budget=budget, before_retry=enough)
    assert heard == [["server_error"], ["server_error", "server_error"]]  # never before the first attempt
    assert server.request_count == 2 and budget.reserved_usd == 0.0  # the third was neither sent nor reserved


@pytest.mark.parametrize(
    ("scripted", "charged"),
    [
        # An error response is not billed: nothing is charged.
        (Scripted.server_error(500), 0.0),
        (Scripted.rate_limited(retry_after=0.01), 0.0),
        # A 200 whose body cannot be read was answered, so it may have been billed: its cost is unknown (None), and
        # the budget keeps its worst case, as for a timeout (it used to be charged nothing).
        (Scripted.malformed_body(), None),
        (Scripted.slow(4.0), None),
    ],
)
def test_what_a_failed_attempt_is_charged(server: FakeLLMServer, scripted: Scripted, charged: float | None) -> None:
    budget = Budget(max_cost_usd=1.0)
    _, seen, _, _ = run_with_retries(server, scripted, max_retries=0, budget=budget, timeout_s=1.0)
    assert len(seen) == 1 and seen[0].cost_usd == charged
    worst = (10 * 1.0 + 100 * 4.0) / 1e6  # the reservation: estimated input plus max_tokens of output
    assert budget.spent_usd == pytest.approx(0.0 if charged == 0.0 else worst)


def test_timeout_is_retried(server: FakeLLMServer) -> None:
    outcome, seen, _, _ = run_with_retries(server, Scripted.slow(4.0), Scripted.ok({"a": "y"}), timeout_s=1.5)
    assert outcome[0].parsed == {"a": "y"}
    assert [a.outcome for a in seen] == ["timeout", "ok"]


@pytest.mark.parametrize("scripted", [Scripted(status=401), Scripted.context_overflow()])
def test_final_errors_are_not_retried(server: FakeLLMServer, scripted: Scripted) -> None:
    outcome, seen, _, _ = run_with_retries(server, scripted)
    assert isinstance(outcome, ProviderError) and len(seen) == 1 and server.request_count == 1


def test_budget_refuses_a_call_it_cannot_afford(server: FakeLLMServer) -> None:
    # Worst case of one call: 10 input + 100 output tokens at $1/$4 per million = $0.00041.
    outcome, seen, _, _ = run_with_retries(server, Scripted.ok({"a": "x"}), budget=Budget(max_cost_usd=0.0004))
    assert isinstance(outcome, BudgetExceeded)
    assert server.request_count == 0 and seen == []


@pytest.mark.parametrize(
    ("number", "retry_after", "low", "high"),
    [(1, None, 0.0, 1.0), (3, None, 0.0, 4.0), (10, None, 0.0, 60.0), (1, 5.0, 5.0, 5.0), (1, 500.0, 60.0, 60.0)],
)
def test_backoff_delay(number: int, retry_after: float | None, low: float, high: float) -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=60.0)
    for seed in range(20):
        assert low <= backoff_delay(number, policy, retry_after, random.Random(seed)) <= high


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (Usage(input_tokens=1_000_000, output_tokens=0), 2.0),
        (Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_tokens=500_000), 0.5 * 2.0 + 0.5 * 1.0 + 8.0),
        (Usage(input_tokens=None, output_tokens=None), None),
        (Usage(input_tokens=10, output_tokens=None), 10 * 2.0 / 1e6),
    ],
)
def test_cost_arithmetic(usage: Usage, expected: float | None) -> None:
    result = cost_usd(Price(input=2.0, output=8.0, cached_input=1.0), usage)
    assert result == (pytest.approx(expected) if expected is not None else None)


def test_price_table_first_match_wins_and_unknown_is_none() -> None:
    table = load_price_table()
    assert price("openai:gpt-4o", Usage(input_tokens=1_000_000, output_tokens=0), table) == pytest.approx(2.5)
    assert table.lookup("openai-compatible:simjudge") != table.lookup("openai-compatible:llama3")
    assert price("openai:no-such-model", Usage(input_tokens=10, output_tokens=10), table) is None
    custom = PriceTable(entries=(("a:*", Price(1, 1, 1)), ("a:b", Price(9, 9, 9))))
    assert custom.lookup("a:b") == Price(1, 1, 1)


def test_price_table_errors_name_the_file(tmp_path) -> None:
    bad = tmp_path / "prices.yaml"
    bad.write_text("prices:\n  'x:y': {input: 1}\n")
    with pytest.raises(ValueError, match=r"prices.yaml: price 'x:y' needs numeric"):
        load_price_table(bad)


def test_a_key_echoed_by_the_server_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-echoed-secret-123456")
    with FakeLLMServer("openai") as fake, pytest.raises(ProviderError) as raised:
        complete(fake, Scripted(status=401, error_message="Incorrect API key provided: sk-echoed-secret-123456"))
    assert "sk-echoed-secret-123456" not in str(raised.value) and "***" in str(raised.value)


class FakeClock:
    """A clock that only moves when the code under test sleeps: rate limits are tested without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.mark.parametrize(("per_minute", "requests", "amount", "waited"), [
    (60, 60, 1, 0.0),  # a full bucket lets a burst of `per_minute` through
    (60, 61, 1, 1.0),  # the next one waits one refill step (1 s at 60 per minute)
    (120, 130, 1, 5.0),  # 10 over at 2 per second
    (1000, 3, 600, 48.0),  # tokens: 1800 wanted, 1000 at once, 800 more at 1000/60 per second
])
def test_token_bucket(per_minute: float, requests: int, amount: int, waited: float, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.providers import retry

    clock = FakeClock()
    monkeypatch.setattr(retry.asyncio, "sleep", clock.sleep)
    bucket = retry.TokenBucket(per_minute, clock=clock)

    async def go() -> None:
        for _ in range(requests):
            await bucket.acquire(amount)

    asyncio.run(go())
    assert clock.now == pytest.approx(waited, abs=1e-6)


def test_budget_waits_for_in_flight_calls_then_stops_before_overshooting() -> None:
    async def go() -> list[str]:
        budget = Budget(max_cost_usd=1.0)
        events: list[str] = []
        first = await budget.reserve(0.6)  # worst case of a call in flight

        async def second() -> None:
            await budget.reserve(0.6)  # 0.6 + 0.6 > 1.0: must wait for the first to settle
            events.append("second reserved")

        task = asyncio.create_task(second())
        await asyncio.sleep(0)
        events.append("first settles")
        await budget.settle(first, 0.1)  # it cost far less than its worst case
        await task
        await budget.settle(0.6, 0.2)
        with pytest.raises(BudgetExceeded):
            await budget.reserve(0.75)  # 0.3 spent + 0.75 > 1.0: stop, never overshoot
        events.append(f"spent {budget.spent_usd:.1f}, exceeded {budget.exceeded}")
        return events

    assert asyncio.run(go()) == ["first settles", "second reserved", "spent 0.3, exceeded True"]


@pytest.mark.parametrize(
    ("setting", "installed", "expected"),
    [(None, True, "aiohttp"), (None, False, "httpx"), ("auto", True, "aiohttp"), ("httpx", True, "httpx"),
     ("aiohttp", True, "aiohttp"), ("HTTPX", False, "httpx")],
)
def test_choose_transport(setting: str | None, installed: bool, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from judge.providers.openai_provider import choose_transport

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (object() if installed else None) if name == "aiohttp" else real(name, *a))
    assert choose_transport(setting) == expected


@pytest.mark.parametrize(("setting", "installed", "message"), [("curl", True, "one of auto"), ("aiohttp", False, "needs the aiohttp")])
def test_choose_transport_rejects(setting: str, installed: bool, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from judge.providers.openai_provider import choose_transport

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (object() if installed else None) if name == "aiohttp" else real(name, *a))
    with pytest.raises(ValueError, match=message):
        choose_transport(setting)


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize(("url", "loads"), [("http://127.0.0.1:9/v1", False), ("https://llm.example/v1", True)])
def test_a_plain_http_server_is_reached_without_loading_ca_certificates(
        transport: str, url: str, loads: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # The CA bundle costs 20-70 ms of CPU per client, at the start of every run; a plain-http server (a local vLLM,
    # the simulated judge) never uses it. It was skipped for httpx only, and aiohttp is the default transport.
    import ssl

    from judge.providers import make_provider

    loaded: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def load(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loaded.append(args or kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", load)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    provider = make_provider(f"openai-compatible:m@{url}", {"http_transport": transport, "timeout_s": 5})
    asyncio.run(provider.aclose())
    assert bool(loaded) == loads
