"""A queued in-process provider for tests: scripted answers in order, every request recorded.

It satisfies :class:`judge.providers.Provider`, so it goes wherever a real provider is injected: the
``provider`` option of :class:`judge.judges.llm.LLMJudge`, the ``provider=`` argument of the repair
functions - or anywhere a spec is written, as the registered provider ``fake`` (:class:`FakeProviders`, the
``fake_providers`` fixture of tests/conftest.py): ``--judge fake:gpt-test`` then talks to a queue. Unlike :class:`judge.testing.servers.FakeLLMServer` it bypasses the SDKs and HTTP: use it
to test what callers do with answers and errors, and the fake servers to test the SDK paths.

    provider = FakeProvider(EMPTY_VERDICT, "not json", RateLimited("slow down", retry_after=0.01))
    ... run the code under test ...
    assert len(provider.requests) == 3 and provider.requests[0].seed == 1

Queued items: a dict (a JSON answer: ``parsed`` when a schema was asked for), a str (plain text, parsed if it
is a JSON object and a schema was asked for), a :class:`Completion` (returned as is, e.g. a truncated
answer), or an exception instance (raised, e.g. a :class:`judge.providers.ProviderError`). An empty queue
raises :class:`QueueEmpty` (a test asked for more calls than it scripted) unless ``default`` is set.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from judge.model import Usage
from judge.providers import Completion, ProviderSpec, register_provider, unregister_provider

Answer = dict[str, Any] | str | Completion | BaseException


class QueueEmpty(AssertionError):
    """The code under test made more calls than the test queued answers for."""


@dataclass
class FakeRequest:
    """One call as the provider received it."""

    messages: list[dict[str, Any]]
    schema: dict[str, Any] | None
    schema_name: str
    temperature: float | None
    seed: int | None
    max_tokens: int | None


class FakeProvider:
    """Answers from a queue; ``requests`` holds every call in order (failed ones included).

    ``spec`` is ``provider:model`` as for the real providers (the price key and the cache identity use it).
    """

    def __init__(self, *answers: Answer, spec: str = "fake:fake-model", default: Answer | None = None,
                 usage: Usage | None = None, endpoint: str | None = None):
        self.answers: list[Answer] = list(answers)
        self.spec = spec
        self.provider, _, self.model = spec.partition(":")
        self.endpoint = endpoint  # part of LLMJudge's cache identity, as for the real providers
        self.default = default
        self.usage = usage or Usage(input_tokens=100, output_tokens=20)
        self.requests: list[FakeRequest] = []
        self.closed = False

    def queue(self, *answers: Answer) -> FakeProvider:
        """Append answers; returns self so a test can write ``FakeProvider().queue(...)``."""
        self.answers.extend(answers)
        return self

    @property
    def pending(self) -> int:
        """Answers queued but not yet used."""
        return len(self.answers)

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
        self.requests.append(FakeRequest([dict(m) for m in messages], schema, schema_name, temperature, seed, max_tokens))
        if self.answers:
            answer = self.answers.pop(0)
        elif self.default is not None:
            answer = self.default
        else:
            raise QueueEmpty(f"{self.spec}: call {len(self.requests)} has no queued answer")
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, Completion):
            return answer
        return self._completion(answer, schema is not None)

    def _completion(self, answer: dict[str, Any] | str, want_json: bool) -> Completion:
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        parsed: dict[str, Any] | None = None
        if want_json:
            try:
                value = json.loads(text)
            except ValueError:
                value = None
            parsed = value if isinstance(value, dict) else None
        return Completion(text=text, parsed=parsed, finish_reason="stop", refusal=None, usage=self.usage.model_copy(),
                          model=self.model, latency_s=0.0)

    async def aclose(self) -> None:
        self.closed = True


class FakeProviders(dict[str, FakeProvider]):
    """Queued fake providers by spec, made on first use: ``providers["fake:gpt-4o"].queue(...)``.

    Inside :meth:`registered` they are the provider ``fake`` of the registry, so any spec ``fake:MODEL`` (a
    panel's judge, a repair teacher) is served from its queue, through the same call path as a real provider.
    """

    NAME = "fake"

    def __init__(self) -> None:
        super().__init__()
        self.options: dict[str, dict[str, Any]] = {}  # what each spec's provider was last built with

    def __missing__(self, spec: str) -> FakeProvider:
        provider = self[spec] = FakeProvider(spec=spec)
        return provider

    def __call__(self, spec: str, parsed: ProviderSpec, *, api_key: str | None, timeout_s: float,
                 options: dict[str, Any]) -> FakeProvider:
        self.options[spec] = dict(options)
        return self[spec]

    @contextmanager
    def registered(self, pricing_key: str | None = None) -> Iterator[FakeProviders]:
        """Register these as the provider ``fake`` for the duration of the block; ``pricing_key`` prices their
        calls as that provider's (``openai``: ``fake:gpt-4o`` costs what ``openai:gpt-4o`` does)."""
        register_provider(self.NAME, supports_seed=True, pricing_key=pricing_key)(self)
        try:
            yield self
        finally:
            unregister_provider(self.NAME)


__all__ = ["FakeProvider", "FakeProviders", "FakeRequest", "QueueEmpty"]
