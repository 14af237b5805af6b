"""OpenAI Chat Completions (and every OpenAI-compatible server) through the official ``openai`` SDK."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import itertools
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

from judge.model import ToolCall, ToolSpec, Usage
from judge.providers import (
    Completion,
    FinishReason,
    ProviderSpec,
    client_connection,
    endpoint_of,
    parse_tool_call,
    register_provider,
)
from judge.providers.batch import BatchFate, BatchItem, BatchRequest, BatchState
from judge.providers.errors import BadOutput, ProviderError, ServerError, classify_status
from judge.providers.sdk_errors import classify_sdk_error

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}
CONNECTIONS_PER_CLIENT = 8
BATCH_ENDPOINT: Final = "/v1/chat/completions"
BATCH_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
# How a request that never ran ended: the whole batch's status, or the request's error code in the error file.
_BATCH_FATES: dict[str, BatchFate] = {"expired": "expired", "cancelled": "cancelled", "failed": "failed"}
_REQUEST_FATES: dict[str, BatchFate] = {"batch_expired": "expired", "batch_cancelled": "cancelled"}
HTTP_TRANSPORTS = ("auto", "httpx", "aiohttp")
ENCODED_MESSAGES_KEPT = 64  # message lists whose JSON is kept: the passes of one trajectory send the same list


@register_provider("openai", env_key="OPENAI_API_KEY", base_url_env="OPENAI_BASE_URL", with_url="openai-compatible")
@register_provider("openai-compatible", env_key="OPENAI_API_KEY", base_url_env="OPENAI_BASE_URL", self_hosted=True)
class OpenAIProvider:
    """``openai:MODEL`` and ``openai-compatible:MODEL@URL``: ``AsyncOpenAI`` with retries disabled.

    Requests go through the SDK's low-level ``post`` and the JSON body is read directly: the typed
    ``chat.completions.create()`` walks every message through a TypedDict transform and builds a pydantic
    model of the answer, several ms of CPU per call that cap throughput at high concurrency. Auth, base URL,
    timeouts and the SDK's error types are unchanged. With ``concurrency`` above 8 the calls are spread over
    a few SDK clients, because the HTTP pool checks every idle connection on each request.
    """

    def __init__(self, spec: str, parsed: ProviderSpec, *, api_key: str | None, timeout_s: float, options: dict[str, Any]):
        import openai  # lazy: only when an OpenAI-protocol judge is used

        self._sdk = openai
        self.spec = spec
        self.provider = parsed.kind
        self.model = parsed.model
        base_url, headers, query = client_connection(parsed, options)
        self.base_url = base_url
        self.structured_output = str(options.get("structured_output") or "json_schema")
        self.default_max_tokens = options.get("default_max_tokens")
        self.http_transport = choose_transport(options.get("http_transport"))
        # A plain-http server (a local vLLM, the simulated judge) needs no TLS: skip loading the CA bundle,
        # which costs 20-70 ms of CPU per client (either transport: the run's start waits for it).
        plain_http = bool(base_url and base_url.startswith("http://"))
        connect = functools.partial(openai.AsyncOpenAI, api_key=api_key, base_url=base_url, max_retries=0,
                                    timeout=timeout_s, default_headers=headers or None, default_query=query or None)
        if self.http_transport == "aiohttp":
            # The SDK's own aiohttp transport (openai.DefaultAioHttpClient): the same SDK request path, with a
            # C HTTP parser under it instead of httpcore/h11 - about 1 ms less CPU per call. Its pool is not
            # scanned per request, so one client serves any concurrency.
            self._clients = [connect(http_client=openai.DefaultAioHttpClient(verify=not plain_http))]
        else:
            count = max(1, -(-int(options.get("concurrency") or 1) // CONNECTIONS_PER_CLIENT))
            self._clients = [connect(http_client=openai.DefaultAsyncHttpxClient(verify=False) if plain_http else None)
                             for _ in range(count)]
        self._next_client = itertools.cycle(self._clients)
        # The body is sent as bytes (``content=``) where the SDK takes them (openai >= 2): the passes of a
        # trajectory share their messages, ~25 KB of JSON on real input, encoded once instead of once per pass.
        self._raw_body = "content" in inspect.signature(self._clients[0].post).parameters
        self._encoded: OrderedDict[int, tuple[list[dict[str, Any]], bytes]] = OrderedDict()
        self.endpoint = endpoint_of(self._clients[0])  # where requests go (cache key part), no credentials

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "verdict",
        temperature: float | None = None,
        seed: int | None = None,
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        """One Chat Completions request; SDK errors come out as typed :class:`ProviderError`."""
        request = self._body(messages, schema, schema_name, temperature, seed, max_tokens, tools)
        started = time.monotonic()
        try:
            client = next(self._next_client)
            if self._raw_body:
                body = await client.post("/chat/completions", content=self._encode(request), cast_to=object)
            else:
                body = await client.post("/chat/completions", body=request, cast_to=object)
        except Exception as error:  # every SDK/transport failure becomes a typed error
            raise classify_sdk_error(self._sdk, error) from None
        return self._completion(body, schema is not None, time.monotonic() - started)

    def _encode(self, request: dict[str, Any]) -> bytes:
        """``request`` as the JSON bytes the SDK would send for it (its openapi_dumps: UTF-8, compact, no NaN), the
        messages' part taken from the last encodings of the same list object."""
        messages = request["messages"]
        kept = self._encoded.get(id(messages))
        if kept is not None and kept[0] is messages:
            self._encoded.move_to_end(id(messages))
            encoded = kept[1]
        else:
            encoded = _dumps(messages)
            self._encoded[id(messages)] = (messages, encoded)  # held: the id cannot be reused while it is here
            if len(self._encoded) > ENCODED_MESSAGES_KEPT:
                self._encoded.popitem(last=False)
        rest = _dumps({key: value for key, value in request.items() if key != "messages"})  # model first: "{...}"
        return b"".join((rest[:-1], b',"messages":' if len(rest) > 2 else b'"messages":', encoded, b"}"))

    def _body(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None, schema_name: str,
              temperature: float | None, seed: int | None, max_tokens: int | None,
              tools: Sequence[ToolSpec] | None = None) -> dict[str, Any]:
        """The Chat Completions request body (a direct request's, and a batch line's)."""
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            request["tools"] = [tool.as_openai() for tool in tools]
        if temperature is not None:
            request["temperature"] = temperature
        if seed is not None:
            request["seed"] = seed
        limit = max_tokens or self.default_max_tokens
        if limit:
            # OpenAI's own API wants max_completion_tokens; self-hosted servers still read max_tokens.
            request["max_completion_tokens" if self.provider == "openai" else "max_tokens"] = int(limit)
        if schema is not None and self.structured_output == "json_schema":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema, "strict": True},
            }
        elif schema is not None and self.structured_output == "json_object":
            request["response_format"] = {"type": "json_object"}
        return request

    # --- the Batch API (judge.providers.batch.BatchAPI) ------------------------------------------------

    async def submit_batch(self, requests: list[BatchRequest], *, label: str) -> str:
        """Upload the requests as a JSONL file (purpose ``batch``) and create a batch over it (24 h window)."""
        lines = "".join(json.dumps({
            "custom_id": r.custom_id, "method": "POST", "url": BATCH_ENDPOINT,
            "body": self._body(r.messages, r.schema, r.schema_name, r.temperature, r.seed, r.max_tokens),
        }, ensure_ascii=False) + "\n" for r in requests)
        client = self._clients[0]
        try:
            uploaded = await client.files.create(file=("trajudge-batch.jsonl", lines.encode("utf-8"), "application/jsonl"),
                                                 purpose="batch")
            batch = await client.batches.create(input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT,
                                                completion_window="24h", metadata={"trajudge": label[:512]})
        except Exception as error:
            raise classify_sdk_error(self._sdk, error) from None
        return str(batch.id)

    async def batch_state(self, batch_id: str) -> BatchState:
        try:
            batch = await self._clients[0].batches.retrieve(batch_id)
        except Exception as error:
            raise classify_sdk_error(self._sdk, error) from None
        counts = batch.request_counts
        errors = [f"{e.code}: {e.message}" for e in ((batch.errors.data or []) if batch.errors else [])]
        return BatchState(batch_id, ended=batch.status in BATCH_ENDED, status=batch.status,
                          done=(counts.completed + counts.failed) if counts else 0, total=counts.total if counts else 0,
                          failed=counts.failed if counts else 0, detail="; ".join(errors) or None)

    async def batch_results(self, batch_id: str, *, schema_name: str = "verdict") -> list[BatchItem]:
        """The output and error files of an ended batch; a request in neither shares the batch's fate."""
        client = self._clients[0]
        try:
            batch = await client.batches.retrieve(batch_id)
            texts = [(await client.files.content(file_id)).text
                     for file_id in (batch.output_file_id, batch.error_file_id) if file_id]
        except Exception as error:
            raise classify_sdk_error(self._sdk, error) from None
        items = [self._batch_item(json.loads(line)) for text in texts for line in text.splitlines() if line.strip()]
        fate = _BATCH_FATES.get(batch.status)
        if fate:
            errors = "; ".join(f"{e.code}: {e.message}" for e in ((batch.errors.data or []) if batch.errors else []))
            items.append(BatchItem("*", fate=fate, detail=f"the batch {batch_id} ended {batch.status}"
                                   + (f" ({errors})" if errors else "")))
        return items

    def _batch_item(self, row: dict[str, Any]) -> BatchItem:
        custom_id = str(row.get("custom_id"))
        response, error = row.get("response"), row.get("error") or {}
        if isinstance(response, dict) and response.get("status_code") == 200:
            try:
                return BatchItem(custom_id, completion=self._completion(response.get("body"), True, 0.0))
            except ProviderError as bad:
                return BatchItem(custom_id, error=bad)
        if isinstance(response, dict):
            body = response.get("body") or {}
            message = str((body.get("error") or {}).get("message") if isinstance(body, dict) else body)
            status = int(response.get("status_code") or 500)
            return BatchItem(custom_id, error=classify_status(status, message, None))
        code = str(error.get("code") or "")
        fate = _REQUEST_FATES.get(code)
        detail = f"{code}: {error.get('message')}"
        return BatchItem(custom_id, fate=fate, detail=detail) if fate else BatchItem(custom_id, error=ServerError(detail))

    def _completion(self, body: Any, want_json: bool, latency_s: float) -> Completion:
        if not isinstance(body, dict):
            raise BadOutput("the response body is not a JSON object")
        try:
            choice = body["choices"][0]
            message = choice.get("message") or {}
        except (KeyError, IndexError, TypeError, AttributeError):
            raise BadOutput("the response has no choices") from None
        text = message.get("content") or ""
        if not isinstance(text, str):
            raise BadOutput("the message content is not text")
        calls = _tool_calls(message.get("tool_calls"))
        refusal = message.get("refusal") or None
        finish: FinishReason = "refusal" if refusal else _FINISH.get(str(choice.get("finish_reason")), "stop")
        if calls and finish == "stop":
            finish = "tool_use"  # some compatible servers say "stop" beside their tool calls
        parsed: dict[str, Any] | None = None
        if want_json and text and finish == "stop":
            try:
                value = json.loads(text)
                parsed = value if isinstance(value, dict) else None
            except ValueError:
                parsed = None
        return Completion(
            text=text,
            parsed=parsed,
            finish_reason=finish,
            refusal=refusal,
            usage=_usage(body.get("usage")),
            model=body.get("model") or self.model,
            latency_s=latency_s,
            tool_calls=calls,
        )

    async def aclose(self) -> None:
        for client in self._clients:
            await client.close()


def _dumps(value: Any) -> bytes:
    """JSON as the SDK encodes a request body (openai._utils._json.openapi_dumps, for plain values)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def choose_transport(setting: str | None) -> str:
    """The SDK HTTP transport to use: ``httpx`` (the SDK default) or ``aiohttp`` (the SDK's optional transport,
    when the ``aiohttp`` package is installed). ``auto`` (default) picks aiohttp when it is importable."""
    value = (setting or "auto").strip().lower()
    if value not in HTTP_TRANSPORTS:
        raise ValueError(f"http_transport must be one of {', '.join(HTTP_TRANSPORTS)}, not {setting!r}")
    available = importlib.util.find_spec("aiohttp") is not None
    if value == "aiohttp" and not available:
        raise ValueError("http_transport aiohttp needs the aiohttp package (pip install aiohttp)")
    if value == "auto":
        return "aiohttp" if available else "httpx"
    return value


def _tool_calls(raw: Any) -> list[ToolCall]:
    """``message.tool_calls`` of an answer (function calls; other kinds are not offered, so not expected)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadOutput("tool_calls is not a list")
    calls = []
    for item in raw:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadOutput("a tool call has no function name")
        calls.append(parse_tool_call(item.get("id"), function["name"], function.get("arguments")))
    return calls


def _usage(usage: Any) -> Usage:
    """Usage from the API's fields; missing fields stay None (unknown), never a guessed zero."""
    if not isinstance(usage, dict):
        return Usage()
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        cached_tokens=_int(cached),
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
