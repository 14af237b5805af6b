"""Anthropic Messages through the official ``anthropic`` SDK; a schema is enforced as a forced tool call."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from judge.model import ToolSpec, Usage
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
from judge.providers.errors import BadOutput, ProviderError, classify_status
from judge.providers.sdk_errors import classify_sdk_error

if TYPE_CHECKING:
    from anthropic.types.messages.batch_create_params import Request

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_use",
    "refusal": "refusal",
}
DEFAULT_MAX_TOKENS = 4096  # the Messages API requires max_tokens


# The Messages API has no seed; the panel's --base-url names an OpenAI-compatible server, not an Anthropic one
# (ANTHROPIC_BASE_URL does that).
@register_provider("anthropic", env_key="ANTHROPIC_API_KEY", base_url_env="ANTHROPIC_BASE_URL", supports_seed=False,
                   takes_base_url=False)
class AnthropicProvider:
    """``anthropic:MODEL``: ``AsyncAnthropic`` with retries disabled."""

    def __init__(self, spec: str, parsed: ProviderSpec, *, api_key: str | None, timeout_s: float, options: dict[str, Any]):
        import anthropic  # lazy: only when an Anthropic judge is used

        self._sdk = anthropic
        self.spec = spec
        self.provider = parsed.kind
        self.model = parsed.model
        base_url, headers, query = client_connection(parsed, options)
        self.base_url = base_url
        self.default_max_tokens = int(options.get("default_max_tokens") or DEFAULT_MAX_TOKENS)
        self.prompt_cache = bool(options.get("prompt_cache", True))
        self._accepted: frozenset[str] | None = None
        self._client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s,
                                                default_headers=headers or None, default_query=query or None)
        self.endpoint = endpoint_of(self._client)  # where requests go (cache key part), no credentials

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "verdict",
        temperature: float | None = None,
        seed: int | None = None,  # the Messages API has no seed; independence comes from temperature
        max_tokens: int | None = None,
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion:
        """One Messages request; system messages go to ``system``; SDK errors become typed errors.

        OpenAI-form tool calls and results (a tool-using conversation) become ``tool_use`` and ``tool_result``
        blocks; ``tools`` are offered with ``tool_choice`` auto, and the answer's ``tool_use`` blocks are its calls.
        """
        if schema is not None and tools:
            raise ValueError("a schema (forced answer tool) and offered tools cannot be combined in one request")
        request = self._request(messages, schema, schema_name, temperature, max_tokens, tools)
        started = time.monotonic()
        try:
            response = await self._client.messages.create(**request)
            return self._completion(response, schema_name if schema is not None else None, time.monotonic() - started,
                                    offered=bool(tools))
        except Exception as error:  # every SDK/transport failure becomes a typed error
            raise classify_sdk_error(self._sdk, error) from None

    def _request(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None, schema_name: str,
                 temperature: float | None, max_tokens: int | None,
                 tools: Sequence[ToolSpec] | None = None) -> dict[str, Any]:
        """The ``messages.create`` arguments (a direct request's; a batch request's params after :func:`_params`)."""
        system = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "system")
        chat = messages_to_anthropic([m for m in messages if m["role"] != "system"])
        request: dict[str, Any] = {"model": self.model, "messages": chat, "max_tokens": int(max_tokens or self.default_max_tokens)}
        if system:
            # The judge's instructions are the same in every call: mark them cacheable, so a batch pays the
            # cache-read price (about a tenth) for them after the first call. Below the model's minimum
            # cacheable length the API simply does not cache.
            request["system"] = ([{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
                                 if self.prompt_cache else system)
        if temperature is not None:
            # Some SDK releases dropped the typed ``temperature`` argument; the API still reads it.
            if self._sdk_accepts("temperature"):
                request["temperature"] = temperature
            else:
                request["extra_body"] = {"temperature": temperature}
        if schema is not None:
            request["tools"] = [{"name": schema_name, "description": "Record your answer.", "input_schema": schema}]
            request["tool_choice"] = {"type": "tool", "name": schema_name}
        elif tools:
            request["tools"] = [tool.as_anthropic() for tool in tools]
        return request

    # --- Message Batches (judge.providers.batch.BatchAPI) --------------------------------------------

    async def submit_batch(self, requests: list[BatchRequest], *, label: str) -> str:
        """Create one Message Batch of the requests (Anthropic batches carry no label: ``label`` is unused)."""
        # cast: the params are messages.create's arguments as _request builds them (a dict, not the SDK's TypedDict)
        entries = cast("list[Request]", [
            {"custom_id": r.custom_id,
             "params": _params(self._request(r.messages, r.schema, r.schema_name, r.temperature, r.max_tokens))}
            for r in requests])
        try:
            batch = await self._client.messages.batches.create(requests=entries)
        except Exception as error:
            raise classify_sdk_error(self._sdk, error) from None
        return str(batch.id)

    async def batch_state(self, batch_id: str) -> BatchState:
        try:
            batch = await self._client.messages.batches.retrieve(batch_id)
        except Exception as error:
            raise classify_sdk_error(self._sdk, error) from None
        counts = batch.request_counts
        failed = counts.errored + counts.canceled + counts.expired
        total = counts.processing + counts.succeeded + failed
        return BatchState(batch_id, ended=batch.processing_status == "ended", status=batch.processing_status,
                          done=total - counts.processing, total=total, failed=failed)

    async def batch_results(self, batch_id: str, *, schema_name: str = "verdict") -> list[BatchItem]:
        """The results JSONL of an ended batch: succeeded, errored, canceled or expired per request."""
        items: list[BatchItem] = []
        try:
            async for entry in await self._client.messages.batches.results(batch_id):
                items.append(self._batch_item(entry, schema_name, batch_id))
        except Exception as error:
            raise classify_sdk_error(self._sdk, error) from None
        return items

    def _batch_item(self, entry: Any, schema_name: str, batch_id: str) -> BatchItem:
        result = entry.result
        if result.type == "succeeded":
            try:
                return BatchItem(entry.custom_id, completion=self._completion(result.message, schema_name, 0.0))
            except ProviderError as bad:
                return BatchItem(entry.custom_id, error=bad)
        if result.type == "errored":
            inner = getattr(result.error, "error", None)
            kind, message = str(getattr(inner, "type", "api_error")), str(getattr(inner, "message", ""))
            return BatchItem(entry.custom_id, error=classify_status(_ERROR_STATUS.get(kind, 500), f"{kind}: {message}", None))
        fate: BatchFate = "expired" if result.type == "expired" else "cancelled"
        return BatchItem(entry.custom_id, fate=fate, detail=f"the request was {result.type} in batch {batch_id}")

    def _sdk_accepts(self, name: str) -> bool:
        if self._accepted is None:
            self._accepted = frozenset(inspect.signature(self._client.messages.create).parameters)
        return name in self._accepted

    def _completion(self, response: Any, tool_name: str | None, latency_s: float, offered: bool = False) -> Completion:
        blocks = getattr(response, "content", None)
        if blocks is None:
            raise BadOutput("the response has no content")
        texts = [b.text for b in blocks if getattr(b, "type", None) == "text"]
        tool_inputs = [b.input for b in blocks if getattr(b, "type", None) == "tool_use" and b.name == tool_name]
        finish: FinishReason = _FINISH.get(str(getattr(response, "stop_reason", None)), "stop")
        parsed: dict[str, Any] | None = None
        if tool_name is not None and tool_inputs and isinstance(tool_inputs[0], dict) and finish != "length":
            parsed = tool_inputs[0]
            # The forced tool call is the answer, so for the caller this is an ordinary stop.
            finish = "stop" if finish == "tool_use" else finish
        text = json.dumps(parsed, ensure_ascii=False) if parsed is not None else "\n".join(texts)
        if tool_inputs and parsed is None:
            text = json.dumps(tool_inputs[0], ensure_ascii=False, default=str)
        refusal = ("\n".join(texts) or "the model refused") if finish == "refusal" else None
        return Completion(
            text=text,
            parsed=parsed,
            finish_reason=finish,
            refusal=refusal,
            usage=_usage(getattr(response, "usage", None)),
            model=getattr(response, "model", None) or self.model,
            latency_s=latency_s,
            tool_calls=[parse_tool_call(b.id, b.name, b.input) for b in blocks if getattr(b, "type", None) == "tool_use"]
            if offered else [],
        )

    async def aclose(self) -> None:
        await self._client.close()


def messages_to_anthropic(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-form chat messages (no system) as Messages API messages.

    Plain text messages stay plain (``content`` a string), so a judge's request is unchanged. An assistant
    message with ``tool_calls`` becomes text + ``tool_use`` blocks (arguments that are not a JSON object are
    sent as ``{"raw": text}``); a ``role: tool`` result becomes a ``tool_result`` block of a user message; the
    API wants the roles to alternate, so consecutive messages of one role are merged into one block list.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message["role"] == "assistant" else "user"
        content = message.get("content")
        if message["role"] == "tool":
            blocks: list[dict[str, Any]] | str = [{"type": "tool_result", "tool_use_id": str(message.get("tool_call_id") or ""),
                                                    "content": str(content or "")}]
        elif role == "assistant" and message.get("tool_calls"):
            blocks = [{"type": "text", "text": content}] if content else []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments) if arguments.strip() else {}
                    except ValueError:
                        arguments = None
                blocks.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                               "input": arguments if isinstance(arguments, dict) else {"raw": function.get("arguments")}})
        else:
            blocks = content if isinstance(content, (str, list)) else str(content or "")
        if out and out[-1]["role"] == role:
            out[-1]["content"] = _blocks(out[-1]["content"]) + _blocks(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []  # the API refuses empty text blocks
    return list(content)


# Message Batches report an errored request by its error type: the status a direct request would have had.
_ERROR_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
                 "permission_error": 403, "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
                 "api_error": 500, "timeout_error": 504, "gateway_timeout_error": 504, "overloaded_error": 529}


def _params(request: dict[str, Any]) -> dict[str, Any]:
    """A batch request's params: the create arguments, with ``extra_body`` (an SDK-side option) merged in."""
    extra = request.pop("extra_body", None) or {}
    return {**request, **extra}


def _usage(usage: Any) -> Usage:
    """Normalise to OpenAI's convention: input_tokens includes cache reads and writes; cached = cache reads."""
    if usage is None:
        return Usage()
    fresh = getattr(usage, "input_tokens", None)
    read = getattr(usage, "cache_read_input_tokens", None)
    written = getattr(usage, "cache_creation_input_tokens", None)
    total_input = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Usage(input_tokens=total_input, output_tokens=getattr(usage, "output_tokens", None), cached_tokens=read)
