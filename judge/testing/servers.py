"""Fake LLM servers on 127.0.0.1 speaking the OpenAI Chat Completions and Anthropic Messages wire protocols.

The real SDK clients talk to them through their base URL, so tests exercise the same code path as
production. Each server is scriptable per request: queue :class:`Scripted` responses (a 429 with
Retry-After, a 500, a delay beyond the client's timeout, a malformed JSON body, ``finish_reason=length``,
a refusal, schema-violating content, usage with cached tokens). When the queue is empty the ``responder``
function decides (default: an empty, valid verdict). Every request body is kept in ``requests``.

Example::

    with FakeLLMServer("openai") as server:
        server.queue(Scripted.rate_limited(retry_after=0.01), Scripted.ok({"reasoning": "...", ...}))
        provider = make_provider("openai-compatible:fake", {"base_url": server.base_url})
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
    def context_overflow(cls) -> Scripted:
        return cls(status=400, error_message="This model's maximum context length is 8192 tokens (context_length_exceeded)")


Responder = Callable[[dict[str, Any]], Scripted]


class FakeLLMServer:
    """A threaded HTTP server speaking one protocol. Use as a context manager; ``base_url`` for the SDK."""

    def __init__(self, protocol: Protocol = "openai", responder: Responder | None = None, port: int = 0, model: str = "fake-model"):
        self.protocol = protocol
        self.responder: Responder = responder or (lambda request: Scripted.ok())
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []  # lets a test check which key reached the server
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=f"fake-{protocol}", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        # The OpenAI SDK appends /chat/completions, the Anthropic SDK appends /v1/messages.
        root = f"http://127.0.0.1:{self.port}"
        return f"{root}/v1" if self.protocol == "openai" else root

    def start(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

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
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text or None, "refusal": scripted.refusal},
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
        if scripted.finish_reason == "__length__":
            stop = "max_tokens"
        elif scripted.finish_reason:
            stop = scripted.finish_reason
        cached = usage.get("cached", 0)
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", self.model),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            # Anthropic reports cache reads separately from (uncached) input tokens.
            "usage": {"input_tokens": usage["input"] - cached, "output_tokens": usage["output"],
                      "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0},
        }


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real APIs do

        def do_POST(self) -> None:  # noqa: N802 (http.server naming)
            length = int(self.headers.get("content-length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                request = {}
            scripted = server._next(request, {k.lower(): v for k, v in self.headers.items()})
            if scripted.delay_s:
                time.sleep(scripted.delay_s)
            status, headers, body = server.render(scripted, request)
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test): nothing to do

        def log_message(self, format: str, *args: Any) -> None:  # silence per-request logging
            return

    return Handler
