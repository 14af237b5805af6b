"""One small provider interface for every LLM call trajudge makes (judges, repair teacher, rewriter).

``make_provider(spec, options)`` returns a :class:`Provider`; ``await provider.complete(messages, ...)``
returns a :class:`Completion`. Specs:

- ``openai:MODEL`` - the official ``openai`` SDK (``AsyncOpenAI``); a JSON schema is enforced with
  ``response_format={"type": "json_schema", "json_schema": {..., "strict": True}}``.
- ``anthropic:MODEL`` - the official ``anthropic`` SDK (``AsyncAnthropic``); a JSON schema is enforced by a
  forced tool call (``tool_choice={"type": "tool", "name": schema_name}``) whose input is the answer.
- ``openai-compatible:MODEL@http://host:port/v1`` - any server speaking the OpenAI Chat Completions
  protocol (vLLM, Ollama, llama.cpp, the simulated judge), through the ``openai`` SDK. The base URL may
  also come from the ``base_url`` option (``--base-url``); ``openai:MODEL`` with a ``base_url`` option is
  the same thing. The SDKs' own ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` variables are honoured too.

Keys come only from the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``); a server reached through a
base URL without a key gets a placeholder key. Keys are never logged, cached, or written anywhere: nothing
in :class:`Completion` or in a :class:`ProviderError` carries request headers. Credentials written into a
base URL (``http://user:pass@host/v1``, ``?api_key=``) and extra ``headers`` are sent but never recorded:
see :mod:`judge.providers.credentials`.

SDKs are imported inside the factory, so importing this module costs nothing. The SDKs' own retries are
disabled (``max_retries=0``): :mod:`judge.providers.retry` retries, so every attempt is counted and paid
for visibly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from judge.model import Usage
from judge.providers.credentials import redact, split_credentials, strip_credentials
from judge.providers.errors import (
    AuthError,
    BadOutput,
    BadRequest,
    ConnectionFailed,
    ContextOverflow,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    Refused,
    ServerError,
)

FinishReason = Literal["stop", "length", "refusal", "tool_use", "content_filter"]

# Servers reached through a base URL often need no key; the SDKs insist on one, so send a harmless stand-in.
PLACEHOLDER_KEY = "no-key-needed"
DEFAULT_TIMEOUT_S = 120.0


@dataclass
class Completion:
    """What a provider returned for one request.

    ``parsed`` is the JSON object the model produced when a schema was requested and the output parsed
    (None otherwise: the caller validates and decides). ``finish_reason`` is normalised across providers.
    ``usage.input_tokens`` counts every input token including cached ones; ``usage.cached_tokens`` is the
    part read from the provider's prompt cache (priced lower).
    """

    text: str
    parsed: dict[str, Any] | None
    finish_reason: FinishReason
    refusal: str | None
    usage: Usage
    model: str
    latency_s: float
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@runtime_checkable
class Provider(Protocol):
    """An LLM endpoint. ``spec`` is what the user wrote; ``provider`` + ``model`` name it for pricing."""

    spec: str
    provider: str
    model: str

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "verdict",
        temperature: float | None = None,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class ProviderSpec:
    """A parsed provider spec: ``kind`` (openai, anthropic, openai-compatible), model and optional base URL."""

    kind: Literal["openai", "anthropic", "openai-compatible"]
    model: str
    base_url: str | None = None

    @property
    def price_key(self) -> str:
        """The ``provider:model`` name used in rubrics/prices.yaml."""
        return f"{self.kind}:{self.model}"


def parse_spec(spec: str, base_url: str | None = None) -> ProviderSpec:
    """Parse ``openai:MODEL``, ``anthropic:MODEL`` or ``openai-compatible:MODEL@URL``.

    ``base_url`` (the ``--base-url`` option) overrides a URL written in the spec. ``openai:MODEL`` with a
    base URL is treated as an OpenAI-compatible server (so it is priced as one and needs no key).
    """
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ValueError(f"provider spec {redact(spec)!r} must look like openai:MODEL, anthropic:MODEL or openai-compatible:MODEL@URL")
    model, url = rest, None
    if kind == "openai-compatible" and "@" in rest:
        model, _, url = rest.partition("@")
    url = base_url or url
    if kind == "openai" and url:
        kind = "openai-compatible"
    if kind not in ("openai", "anthropic", "openai-compatible"):
        raise ValueError(f"unknown provider {kind!r} in {redact(spec)!r}; known: openai, anthropic, openai-compatible")
    if not model:
        raise ValueError(f"provider spec {redact(spec)!r} names no model")
    if kind == "openai-compatible" and not url and not os.environ.get("OPENAI_BASE_URL"):
        raise ValueError(
            f"{redact(spec)!r} needs a server URL: write openai-compatible:MODEL@http://host:port/v1, pass --base-url, "
            "or set OPENAI_BASE_URL"
        )
    return ProviderSpec(kind=kind, model=model, base_url=url)  # type: ignore[arg-type]


def make_provider(spec: str, options: dict[str, Any] | None = None) -> Provider:
    """Build the provider for ``spec``.

    Options: ``base_url`` (str), ``timeout_s`` (float, per request), ``structured_output``
    (``json_schema`` (default), ``json_object`` or ``none``: for OpenAI-compatible servers that cannot
    enforce a schema), ``default_max_tokens`` (int), ``prompt_cache`` (Anthropic: mark the system prompt
    cacheable; default true), ``concurrency`` (expected calls in flight, to size connection pools),
    ``headers`` (extra HTTP headers for a gateway: sent, never recorded).
    """
    options = dict(options or {})
    parsed = parse_spec(spec, options.get("base_url"))
    timeout_s = float(options.get("timeout_s") or DEFAULT_TIMEOUT_S)
    if parsed.kind == "anthropic":
        from judge.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(spec, parsed, api_key=_key("ANTHROPIC_API_KEY", parsed, "ANTHROPIC_BASE_URL"),
                                 timeout_s=timeout_s, options=options)
    from judge.providers.openai_provider import OpenAIProvider

    return OpenAIProvider(spec, parsed, api_key=_key("OPENAI_API_KEY", parsed, "OPENAI_BASE_URL"),
                          timeout_s=timeout_s, options=options)


def _key(env_name: str, parsed: ProviderSpec, base_url_env: str) -> str:
    """The API key from the environment; a placeholder for a self-hosted server; else a clear error."""
    key = os.environ.get(env_name)
    if key:
        return key
    if parsed.kind == "openai-compatible" or parsed.base_url or os.environ.get(base_url_env):
        return PLACEHOLDER_KEY
    raise AuthError(f"{env_name} is not set: export it to use {parsed.kind}:{parsed.model}")


def endpoint_of(client: Any) -> str:
    """The URL an SDK client sends to (its resolved ``base_url``: the option, the SDK's environment variable,
    or the official default), without credentials and without a trailing slash: part of the cache key."""
    return (strip_credentials(str(client.base_url)) or "").rstrip("/")


__all__ = [
    "PLACEHOLDER_KEY",
    "AuthError",
    "BadOutput",
    "BadRequest",
    "Completion",
    "ConnectionFailed",
    "ContextOverflow",
    "FinishReason",
    "Provider",
    "ProviderError",
    "ProviderSpec",
    "ProviderTimeout",
    "RateLimited",
    "Refused",
    "ServerError",
    "endpoint_of",
    "make_provider",
    "parse_spec",
    "redact",
    "split_credentials",
    "strip_credentials",
]


def client_connection(parsed: ProviderSpec, options: dict[str, Any]) -> tuple[str | None, dict[str, str], dict[str, str]]:
    """Base URL, default headers and default query for an SDK client: URL credentials and the ``headers``
    option, held by the client in memory only."""
    url, headers, query = split_credentials(parsed.base_url)
    extra = options.get("headers") or {}
    if not isinstance(extra, dict):
        raise ValueError("params.headers must be a mapping of header names to values")
    headers.update({str(name): str(value) for name, value in extra.items()})
    return url, headers, query
