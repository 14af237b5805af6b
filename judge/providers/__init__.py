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
base URL (``http://user:pass@host/v1``, ``?code=``) and extra ``headers`` are sent but never recorded: each is
registered as a secret when a provider is made, as is the key it reads, and scrubbed by value from answers,
errors and output (:mod:`judge.secrets`).

Providers are registered by name (:func:`register_provider`): the decorator on a provider class says which
environment variable holds its key, whether it passes a seed, and how it is priced, and that is all the rest of
trajudge reads - the spec parser, the key lookup, the scrubbing of keys from error texts, the LLM judge (any
registered name is a judge spec) and pricing. A new provider is one module plus its line in
rubrics/prices.yaml; one outside this package is found through the ``trajudge.providers`` entry point
(:mod:`judge.plugins`).

SDKs are imported inside the provider classes, so importing this module costs nothing. The SDKs' own retries
are disabled (``max_retries=0``): :mod:`judge.providers.retry` retries, so every attempt is counted and paid
for visibly.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar, cast, runtime_checkable

from judge.model import ToolCall, ToolSpec, Usage
from judge.plugins import claim_name, load_plugins, problems_note
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
from judge.secrets import (
    any_secret,
    redact,
    register_secret,
    register_secrets_in,
    scrub,
    scrub_value,
    split_credentials,
    strip_credentials,
)

FinishReason = Literal["stop", "length", "refusal", "tool_use", "content_filter"]

# Servers reached through a base URL often need no key; the SDKs insist on one, so send a harmless stand-in.
PLACEHOLDER_KEY = "no-key-needed"
DEFAULT_TIMEOUT_S = 120.0
F = TypeVar("F")


@dataclass
class Completion:
    """What a provider returned for one request.

    ``parsed`` is the JSON object the model produced when a schema was requested and the output parsed
    (None otherwise: the caller validates and decides). ``finish_reason`` is normalised across providers.
    ``usage.input_tokens`` counts every input token including cached ones; ``usage.cached_tokens`` is the
    part read from the provider's prompt cache (priced lower). ``tool_calls``: the calls the model made when it
    was offered ``tools`` (OpenAI ``tool_calls``, Anthropic ``tool_use`` blocks), arguments parsed (the raw text
    kept, and an ``arguments_error`` when it is not JSON); ``finish_reason`` is then ``tool_use``.
    """

    text: str
    parsed: dict[str, Any] | None
    finish_reason: FinishReason
    refusal: str | None
    usage: Usage
    model: str
    latency_s: float
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    tool_calls: list[ToolCall] = field(default_factory=list)
    # (unscored reason, why) when the answer passed its request's bounds (judge.pricing.over_bounds): set by the
    # call loop, which then charges the call at its worst case
    over_bounds: tuple[str, str] | None = None


def scrub_completion(completion: Completion) -> Completion:
    """``completion`` with every registered secret scrubbed from its text, parsed answer, refusal, raw body and tool
    calls (changed in place; returned): a server that echoes a key or a header in an answer gets it stored as ``***``."""
    if not any_secret():
        return completion
    completion.text = scrub(completion.text)
    completion.parsed = scrub_value(completion.parsed)
    completion.refusal = scrub(completion.refusal) if completion.refusal is not None else None
    completion.model = scrub(completion.model)
    completion.raw = scrub_value(completion.raw)
    completion.tool_calls = [call.model_copy(update=scrub_value(call.model_dump())) for call in completion.tool_calls]
    return completion


@runtime_checkable
class Provider(Protocol):
    """An LLM endpoint. ``spec`` is what the user wrote; ``provider`` + ``model`` name it for pricing.

    ``messages`` are OpenAI Chat Completions messages (the one form every provider reads): ``role`` and text
    ``content``; in a tool-using conversation also assistant ``tool_calls`` and ``role: tool`` results with their
    ``tool_call_id``. ``tools`` offers tools the model may call (the answer's ``tool_calls``); a provider that
    cannot call tools may leave the parameter out, and a caller that needs it then gets a ``TypeError``.
    """

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
        tools: Sequence[ToolSpec] | None = None,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class ProviderSpec:
    """A parsed provider spec: ``kind`` (a registered provider name), model and optional base URL."""

    kind: str
    model: str
    base_url: str | None = None

    @property
    def price_key(self) -> str:
        """The ``provider:model`` name used in rubrics/prices.yaml."""
        return price_key(self.kind, self.model)


class ProviderFactory(Protocol):
    """What :func:`register_provider` decorates: a provider class (or a function) called with the spec as
    written, the parsed spec, the API key (None for a provider without ``env_key``), the per-request timeout
    and the options of :func:`make_provider`."""

    def __call__(self, spec: str, parsed: ProviderSpec, *, api_key: str | None, timeout_s: float,
                 options: dict[str, Any]) -> Provider: ...


@dataclass(frozen=True)
class ProviderKind:
    """A registered provider: the spec prefix and what the rest of trajudge needs to know about it.

    ``env_key``: the environment variable holding its API key (None: it needs none); its value is a registered
    secret, scrubbed from answers, errors and output. ``base_url_env``: the SDK's own base-URL variable (read by
    trajudge, so that its user info becomes a header); with it set (or a URL given) a missing key is replaced by a
    placeholder. ``supports_seed``: whether a per-pass seed reaches the model
    (recorded as part of how passes are kept independent). ``pricing_key``: the provider part of its keys in
    rubrics/prices.yaml (default: its name). ``self_hosted``: a server at a URL (``NAME:MODEL@URL``, or the
    ``base_url`` option, or ``base_url_env``), which needs no key. ``with_url``: the registered provider that
    serves this spec when a base URL is given (``openai:MODEL`` with a URL is ``openai-compatible``).
    ``takes_base_url``: whether the panel's ``--base-url`` (an OpenAI-compatible server) is passed to it.
    """

    name: str
    factory: ProviderFactory
    env_key: str | None = None
    base_url_env: str | None = None
    supports_seed: bool = True
    pricing_key: str | None = None
    self_hosted: bool = False
    with_url: str | None = None
    takes_base_url: bool = True

    @property
    def price_prefix(self) -> str:
        return self.pricing_key or self.name


_PROVIDERS: dict[str, ProviderKind] = {}
_BUILTIN_PROVIDERS = ("judge.providers.openai_provider", "judge.providers.anthropic_provider")
PLUGIN_GROUP = "trajudge.providers"


def register_provider(
    name: str,
    *,
    env_key: str | None = None,
    base_url_env: str | None = None,
    supports_seed: bool = True,
    pricing_key: str | None = None,
    self_hosted: bool = False,
    with_url: str | None = None,
    takes_base_url: bool = True,
) -> Callable[[F], F]:
    """Register a provider class (or factory) for specs ``NAME:MODEL``; see :class:`ProviderKind`.

    Adding an LLM provider is one module with a decorated class (plus its price line in rubrics/prices.yaml);
    a third-party package exposes the module under the ``trajudge.providers`` entry point. A name taken by
    another factory is an error (a plugin cannot silently replace ``openai``); registering the same factory
    again (a module imported twice) is allowed.
    """
    def decorate(factory: F) -> F:
        _load_builtin_providers()  # first, so that no other registration can take a built-in name
        # cast: a provider that cannot call tools leaves ``tools`` out of complete(), which Provider cannot say
        kind = ProviderKind(name, cast(ProviderFactory, factory), env_key=env_key, base_url_env=base_url_env,
                            supports_seed=supports_seed, pricing_key=pricing_key, self_hosted=self_hosted,
                            with_url=with_url, takes_base_url=takes_base_url)
        claim_name(_PROVIDERS, name, kind, "provider", owner=lambda registered: registered.factory)
        if env_key:
            register_secret(os.environ.get(env_key))  # scrubbed from the start, even before a provider reads it
        return factory

    return decorate


def unregister_provider(name: str) -> None:
    """Remove a registered provider (tests that register one for their own duration)."""
    _PROVIDERS.pop(name, None)


def provider_kind(name: str) -> ProviderKind | None:
    """The registered provider called ``name`` (built-in or from a plugin), or None."""
    _load_providers()
    return _PROVIDERS.get(name)


def provider_names() -> list[str]:
    """Every registered provider name, sorted."""
    _load_providers()
    return sorted(_PROVIDERS)


def key_variables() -> tuple[str, ...]:
    """The environment variables that hold API keys of registered providers (their values are registered secrets)."""
    _load_providers()
    return tuple(dict.fromkeys(kind.env_key for kind in _PROVIDERS.values() if kind.env_key))


def price_key(provider: str, model: str) -> str:
    """The ``provider:model`` key of rubrics/prices.yaml for a call to ``model`` of the provider ``provider``."""
    kind = provider_kind(provider)
    return f"{kind.price_prefix if kind else provider}:{model}"


def supports_seed(provider: str) -> bool:
    """Whether the provider's API passes a seed to the model (unknown providers: assumed yes)."""
    kind = provider_kind(provider)
    return kind.supports_seed if kind else True


def base_url_for(spec: str, base_url: str | None) -> str | None:
    """The panel's or teacher's ``--base-url`` (an OpenAI-compatible server) for ``spec``: given to providers that
    take it, not to others (Anthropic reads ANTHROPIC_BASE_URL), so a mixed panel does not send Claude requests
    to a vLLM."""
    kind = provider_kind(spec.partition(":")[0])
    return base_url if kind is None or kind.takes_base_url else None


def _load_providers() -> None:
    """The built-in providers, then the plugins of the trajudge.providers entry point (once)."""
    _load_builtin_providers()
    load_plugins(PLUGIN_GROUP)


def _load_builtin_providers() -> None:
    # Importing the modules registers their classes (their SDKs are imported only when a provider is built). A
    # module importing itself through this (its decorator runs while it loads) gets its partial self: harmless.
    for module in _BUILTIN_PROVIDERS:
        importlib.import_module(module)


def _known() -> str:
    return ", ".join(provider_names()) + problems_note(PLUGIN_GROUP)


def parse_spec(spec: str, base_url: str | None = None) -> ProviderSpec:
    """Parse ``NAME:MODEL`` for a registered provider (``openai:MODEL``, ``anthropic:MODEL``,
    ``openai-compatible:MODEL@URL``, or one a plugin registered).

    ``base_url`` (the ``--base-url`` option) overrides a URL written in the spec. ``openai:MODEL`` with a
    base URL is treated as an OpenAI-compatible server (so it is priced as one and needs no key).
    """
    name, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ValueError(f"provider spec {redact(spec)!r} must look like NAME:MODEL (openai:MODEL, anthropic:MODEL, "
                         f"openai-compatible:MODEL@URL); known providers: {_known()}")
    kind = provider_kind(name)
    if kind is None:
        raise ValueError(f"unknown provider {name!r} in {redact(spec)!r}; known: {_known()}")
    model, url = rest, None
    if kind.self_hosted and "@" in rest:
        model, _, url = rest.partition("@")
    url = base_url or url
    if url and kind.with_url:
        redirected = provider_kind(kind.with_url)
        if redirected is None:
            raise ValueError(f"provider {kind.name!r} with a base URL needs provider {kind.with_url!r}, which is not registered")
        kind = redirected
    if not model:
        raise ValueError(f"provider spec {redact(spec)!r} names no model")
    if kind.self_hosted and not url and not (kind.base_url_env and os.environ.get(kind.base_url_env)):
        where = f", or set {kind.base_url_env}" if kind.base_url_env else ""
        raise ValueError(f"{redact(spec)!r} needs a server URL: write {kind.name}:MODEL@http://host:port/v1 or pass "
                         f"--base-url{where}")
    return ProviderSpec(kind=kind.name, model=model, base_url=url)


def make_provider(spec: str, options: dict[str, Any] | None = None) -> Provider:
    """Build the provider for ``spec`` through the provider registry.

    Options: ``base_url`` (str), ``timeout_s`` (float, per request), ``structured_output``
    (``json_schema`` (default), ``json_object`` or ``none``: for OpenAI-compatible servers that cannot
    enforce a schema), ``default_max_tokens`` (int), ``prompt_cache`` (Anthropic: mark the system prompt
    cacheable; default true), ``concurrency`` (expected calls in flight, to size connection pools),
    ``headers`` (extra HTTP headers for a gateway: sent, never recorded), ``key_optional`` (build the client
    without a key when none is set: ``judge score --dry-run``, which sends nothing). A plugin provider reads the
    options it knows and ignores the rest.
    """
    options = dict(options or {})
    register_secrets_in({"spec": spec, **options})  # URL credentials, query values, headers: scrubbed from now on
    parsed = parse_spec(spec, options.get("base_url"))
    kind = _PROVIDERS[parsed.kind]
    timeout_s = float(options.get("timeout_s") or DEFAULT_TIMEOUT_S)
    api_key = _key(kind, parsed, optional=bool(options.get("key_optional")))
    return kind.factory(spec, parsed, api_key=api_key, timeout_s=timeout_s, options=options)


def _key(kind: ProviderKind, parsed: ProviderSpec, optional: bool = False) -> str | None:
    """The API key from the environment; a placeholder for a self-hosted server (or when ``optional``); else a
    clear error."""
    if kind.env_key is None:
        return None
    key = os.environ.get(kind.env_key)
    if key:
        register_secret(key)
        return key
    if optional or kind.self_hosted or parsed.base_url or (kind.base_url_env and os.environ.get(kind.base_url_env)):
        return PLACEHOLDER_KEY
    raise AuthError(f"{kind.env_key} is not set: export it to use {parsed.kind}:{parsed.model}")


def parse_tool_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A tool call of a model's answer (arguments as a JSON string or an object), parsed as the importers parse a
    log's calls: the raw text kept, an ``arguments_error`` when it is not JSON (the call is still returned)."""
    from judge.importers._common import make_call  # lazy: the importers are not needed to call a model

    return make_call(str(call_id or ""), str(name or ""), arguments)


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
    "ProviderFactory",
    "ProviderKind",
    "ProviderSpec",
    "ProviderTimeout",
    "RateLimited",
    "Refused",
    "ServerError",
    "base_url_for",
    "endpoint_of",
    "key_variables",
    "make_provider",
    "parse_spec",
    "parse_tool_call",
    "price_key",
    "provider_kind",
    "provider_names",
    "redact",
    "register_provider",
    "register_secret",
    "register_secrets_in",
    "scrub",
    "scrub_completion",
    "scrub_value",
    "split_credentials",
    "strip_credentials",
    "supports_seed",
    "unregister_provider",
]


def client_connection(parsed: ProviderSpec, options: dict[str, Any]) -> tuple[str | None, dict[str, str], dict[str, str]]:
    """Base URL, default headers and default query for an SDK client: URL credentials and the ``headers``
    option, held by the client in memory only.

    Without a URL in the spec or the options, the provider's base-URL variable (``OPENAI_BASE_URL``) is read here
    rather than by the SDK, so that its user info becomes a header as a given URL's does (the SDK would leave it
    in the URL, and its HTTP client would refuse it beside the key's ``Authorization`` header).
    """
    kind = _PROVIDERS.get(parsed.kind)
    url = parsed.base_url
    if not url and kind is not None and kind.base_url_env:
        url = os.environ.get(kind.base_url_env) or None
    url, headers, query = split_credentials(url)
    extra = options.get("headers") or {}
    if not isinstance(extra, dict):
        raise ValueError("params.headers must be a mapping of header names to values")
    headers.update({str(name): str(value) for name, value in extra.items()})
    return url, headers, query
