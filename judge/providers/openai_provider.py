"""OpenAI Chat Completions (and every OpenAI-compatible server) through the official ``openai`` SDK."""

from __future__ import annotations

import json
import time
from typing import Any

from judge.model import Usage
from judge.providers import Completion, FinishReason, ProviderSpec
from judge.providers.errors import BadOutput
from judge.providers.sdk_errors import classify_sdk_error

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content_filter",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
}


class OpenAIProvider:
    """``openai:MODEL`` and ``openai-compatible:MODEL@URL``: ``AsyncOpenAI`` with retries disabled."""

    def __init__(self, spec: str, parsed: ProviderSpec, *, api_key: str, timeout_s: float, options: dict[str, Any]):
        import openai  # lazy: only when an OpenAI-protocol judge is used

        self._sdk = openai
        self.spec = spec
        self.provider = parsed.kind
        self.model = parsed.model
        self.base_url = parsed.base_url
        self.structured_output = str(options.get("structured_output") or "json_schema")
        self.default_max_tokens = options.get("default_max_tokens")
        self._client = openai.AsyncOpenAI(api_key=api_key, base_url=parsed.base_url, max_retries=0, timeout=timeout_s)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "verdict",
        temperature: float | None = None,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """One Chat Completions request; SDK errors come out as typed :class:`ProviderError`."""
        request: dict[str, Any] = {"model": self.model, "messages": messages}
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
        started = time.monotonic()
        try:
            # The SDK's low-level post: typed create() first walks every message through a TypedDict
            # transform, several ms of CPU per call that caps throughput at high concurrency; our messages are
            # plain JSON already. Auth, errors and the typed ChatCompletion result are the SDK's as usual.
            response = await self._client.post("/chat/completions", body=request, cast_to=self._sdk.types.chat.ChatCompletion)
            return self._completion(response, schema is not None, time.monotonic() - started)
        except Exception as error:  # every SDK/transport failure becomes a typed error
            raise classify_sdk_error(self._sdk, error) from None

    def _completion(self, response: Any, want_json: bool, latency_s: float) -> Completion:
        choices = getattr(response, "choices", None)
        if not choices:
            raise BadOutput("the response has no choices")
        choice = choices[0]
        message = choice.message
        text = message.content or ""
        refusal = getattr(message, "refusal", None)
        finish: FinishReason = "refusal" if refusal else _FINISH.get(str(choice.finish_reason), "stop")
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
            usage=_usage(getattr(response, "usage", None)),
            model=getattr(response, "model", None) or self.model,
            latency_s=latency_s,
        )

    async def aclose(self) -> None:
        await self._client.close()


def _usage(usage: Any) -> Usage:
    """Usage from the API's fields; missing fields stay None (unknown), never a guessed zero."""
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return Usage(
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        cached_tokens=cached,
    )
