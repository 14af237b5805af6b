"""Fake LLM servers on 127.0.0.1 speaking the OpenAI Chat Completions and Anthropic Messages wire protocols.

The real SDK clients talk to them through their base URL, so tests exercise the same code path as
production. Each server is scriptable per request: queue :class:`Scripted` responses (a 429 with
Retry-After, a 500, a delay beyond the client's timeout, a malformed JSON body, ``finish_reason=length``,
a refusal, schema-violating content, usage with cached tokens, tool calls). When the queue is empty the ``responder``
function decides (default: an empty, valid verdict). Every request body is kept in ``requests``.

Example::

    with FakeLLMServer("openai") as server:
        server.queue(Scripted.rate_limited(retry_after=0.01), Scripted.ok({"reasoning": "...", ...}))
        provider = make_provider("openai-compatible:fake", {"base_url": server.base_url})
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Protocol = Literal["openai", "anthropic"]

EMPTY_VERDICT: dict[str, Any] = {"reasoning": "No problems found.", "issues": [], "efficiency": "high"}


@dataclass
class Scripted:
    """One scripted response. ``content`` is the model's answer: a dict is sent as JSON (OpenAI message
    content, or Anthropic forced tool input), a str as plain text."""

    status: int = 200
    content: dict[str, Any] | str | None = None
    finish_reason: str | None = None  # OpenAI finish_reason / Anthropic stop_reason; None = the normal one
    refusal: str | None = None
    usage: dict[str, int] | None = None  # {"input": n, "output": n, "cached": n}
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw_body: bytes | None = None  # sent verbatim (malformed bodies)
    error_message: str = "scripted error"
    # Calls the model makes: {"id", "name", "arguments"} (arguments: an object, or a string sent verbatim as
    # OpenAI's arguments text). Sent as OpenAI tool_calls / Anthropic tool_use blocks, after ``content`` text.
    tool_calls: list[dict[str, Any]] | None = None
    batch_fate: str | None = None  # in a batch (judge.testing.batch_servers): "expired" or "cancelled", never run

    @classmethod
    def ok(cls, content: dict[str, Any] | str | None = None, **kw: Any) -> Scripted:
        return cls(content=EMPTY_VERDICT if content is None else content, **kw)

    @classmethod
    def rate_limited(cls, retry_after: float = 0.01) -> Scripted:
        return cls(status=429, headers={"retry-after": f"{retry_after:g}"}, error_message="rate limit reached")

    @classmethod
    def server_error(cls, status: int = 500) -> Scripted:
        return cls(status=status, error_message="internal server error")

    @classmethod
    def slow(cls, delay_s: float, content: dict[str, Any] | str | None = None) -> Scripted:
        return cls(content=EMPTY_VERDICT if content is None else content, delay_s=delay_s)

    @classmethod
    def malformed_body(cls) -> Scripted:
        return cls(raw_body=b'{"id": "broken", "choices": [ {"message": ')

    @classmethod
    def truncated(cls, text: str = '{"reasoning": "The agent') -> Scripted:
        return cls(content=text, finish_reason="__length__")

    @classmethod
    def refused(cls, text: str = "I can't help with that.") -> Scripted:
        return cls(refusal=text)

    @classmethod
    def expired(cls) -> Scripted:
        """A batch request the batch's completion window ended before it ran."""
        return cls(batch_fate="expired")

    @classmethod
    def cancelled(cls) -> Scripted:
        """A batch request that did not run because the batch was cancelled."""
        return cls(batch_fate="cancelled")

    @classmethod
    def context_overflow(cls) -> Scripted:
        return cls(status=400, error_message="This model's maximum context length is 8192 tokens (context_length_exceeded)")


Responder = Callable[[dict[str, Any]], Scripted]


class FakeLLMServer:
    """A threaded HTTP server speaking one protocol. Use as a context manager; ``base_url`` for the SDK."""

    def __init__(self, protocol: Protocol = "openai", responder: Responder | None = None, port: int = 0,
                 model: str = "fake-model", response_model: str | None = None):
        self.protocol = protocol
        self.response_model = response_model  # when set, answers name this model whatever was asked for
        self.responder: Responder = responder or (lambda request: Scripted.ok())
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []  # lets a test check which key reached the server
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        # asyncio (not a thread per connection): delays are asyncio.sleep, so hundreds of slow requests in
        # flight cost nothing, and benchmarks measure the client rather than the fake server.
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._port = port
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"fake-{protocol}", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        # The OpenAI SDK appends /chat/completions, the Anthropic SDK appends /v1/messages.
        root = f"http://127.0.0.1:{self.port}"
        return f"{root}/v1" if self.protocol == "openai" else root

    def start(self) -> FakeLLMServer:
        self._thread.start()
        started = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", self._port, backlog=1024), self._loop)
        self._server = started.result(timeout=10)
        self._port = int(self._server.sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
                # Open keep-alive connections must not keep the loop alive.
                for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting -------------------------------------------------------------------------------

    def queue(self, *responses: Scripted) -> None:
        with self._lock:
            self._queue.extend(responses)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def reset_count(self) -> None:
        with self._lock:
            self.requests.clear()
            self.request_headers.clear()

    def _next(self, request: dict[str, Any], headers: dict[str, str]) -> Scripted:
        with self._lock:
            self.requests.append(request)
            self.request_headers.append(headers)
            scripted = self._queue.popleft() if self._queue else None
        return scripted if scripted is not None else self.responder(request)

    # --- wire formats ----------------------------------------------------------------------------

    def render(self, scripted: Scripted, request: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for ``scripted`` in this server's protocol."""
        headers = {"content-type": "application/json", **scripted.headers}
        if scripted.raw_body is not None:
            return scripted.status, headers, scripted.raw_body
        if scripted.status >= 400:
            return scripted.status, headers, json.dumps(self._error_body(scripted)).encode()
        body = self._openai_body(scripted, request) if self.protocol == "openai" else self._anthropic_body(scripted, request)
        return scripted.status, headers, json.dumps(body).encode()

    def _error_body(self, scripted: Scripted) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 400: "invalid_request_error", 401: "authentication_error"}.get(scripted.status, "api_error")
        if self.protocol == "openai":
            code = "context_length_exceeded" if "context_length" in scripted.error_message else kind
            return {"error": {"message": scripted.error_message, "type": kind, "code": code}}
        return {"type": "error", "error": {"type": kind, "message": scripted.error_message}}

    def _usage(self, scripted: Scripted, request: dict[str, Any], text: str) -> dict[str, int]:
        if scripted.usage is not None:
            return scripted.usage
        prompt = json.dumps(request.get("messages", [])) + str(request.get("system", ""))
        return {"input": max(1, len(prompt) // 4), "output": max(1, len(text) // 4), "cached": 0}

    def _openai_body(self, scripted: Scripted, request: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(scripted.content) if isinstance(scripted.content, dict) else (scripted.content or "")
        if scripted.refusal:
            text = ""
        finish = {"__length__": "length", None: "stop"}.get(scripted.finish_reason, scripted.finish_reason)
        usage = self._usage(scripted, request, text)
        message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": scripted.refusal}
        if scripted.tool_calls:
            message["tool_calls"] = [
                {"id": call.get("id") or f"call_{i}", "type": "function",
                 "function": {"name": call["name"], "arguments": call["arguments"] if isinstance(call.get("arguments"), str)
                              else json.dumps(call.get("arguments") or {})}}
                for i, call in enumerate(scripted.tool_calls)]
            finish = finish if scripted.finish_reason else "tool_calls"
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.response_model or request.get("model", self.model),
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": finish,
                "logprobs": None,
            }],
            "usage": {
                "prompt_tokens": usage["input"],
                "completion_tokens": usage["output"],
                "total_tokens": usage["input"] + usage["output"],
                "prompt_tokens_details": {"cached_tokens": usage.get("cached", 0)},
            },
        }

    def _anthropic_body(self, scripted: Scripted, request: dict[str, Any]) -> dict[str, Any]:
        tool = (request.get("tool_choice") or {}).get("name")
        usage = self._usage(scripted, request, json.dumps(scripted.content))
        if scripted.refusal:
            content: list[dict[str, Any]] = [{"type": "text", "text": scripted.refusal}]
            stop = "refusal"
        elif isinstance(scripted.content, dict) and tool:
            content = [{"type": "tool_use", "id": "toolu_fake", "name": tool, "input": scripted.content}]
            stop = "tool_use"
        else:
            text = scripted.content if isinstance(scripted.content, str) else json.dumps(scripted.content)
            content = [{"type": "text", "text": text}]
            stop = "end_turn"
        if scripted.tool_calls:
            text = scripted.content if isinstance(scripted.content, str) else ""
            content = [{"type": "text", "text": text}] if text else []  # text before the calls, if any
            content += [{"type": "tool_use", "id": call.get("id") or f"toolu_{i}", "name": call["name"],
                         "input": call.get("arguments") or {}} for i, call in enumerate(scripted.tool_calls)]
            stop = "tool_use"
        if scripted.finish_reason == "__length__":
            stop = "max_tokens"
        elif scripted.finish_reason:
            stop = scripted.finish_reason
        cached = usage.get("cached", 0)
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": self.response_model or request.get("model", self.model),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            # Anthropic reports cache reads separately from (uncached) input tokens.
            "usage": {"input_tokens": usage["input"] - cached, "output_tokens": usage["output"],
                      "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0},
        }


    async def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        """Status, extra headers and body for one HTTP request (a subclass adds endpoints: judge.testing.batch_servers).
        A GET of ``.../stats`` reports the request count; any POST is a model request."""
        if method == "GET":
            return (200 if path.rstrip("/").endswith("stats") else 404), {}, json.dumps(
                {"requests": self.request_count}).encode()
        try:
            request = json.loads(raw or b"{}")
        except ValueError:
            request = {}
        scripted = self._next(request, headers)
        if scripted.delay_s:
            await asyncio.sleep(scripted.delay_s)
        return self.render(scripted, request)

    # --- HTTP/1.1 over asyncio streams (just enough for the SDKs: keep-alive, content-length bodies) ------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = (lines[0].split(" ", 2) + ["", ""])[:3]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length") or 0))
                status, extra, body = await self.respond(method, path, headers, raw)
                reply = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "content-type: application/json",
                         f"content-length: {len(body)}"]
                reply += [f"{name}: {value}" for name, value in extra.items() if name.lower() not in ("content-type", "content-length")]
                writer.write(("\r\n".join(reply) + "\r\n\r\n").encode("latin-1") + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError, asyncio.LimitOverrunError):
            pass  # the client closed the connection (or gave up: timeout tests)
        finally:
            writer.close()


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 408: "Request Timeout",
            413: "Payload Too Large", 429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable",
            529: "Overloaded"}
