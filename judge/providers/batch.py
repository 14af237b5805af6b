"""Provider batch APIs (OpenAI Batch, Anthropic Message Batches): an optional addition to :class:`Provider`.

A provider that can send requests in batches has three more methods (:class:`BatchAPI`): ``submit_batch``
(the requests, each with a ``custom_id``, as one batch; returns the provider's batch id), ``batch_state`` (one
status check) and ``batch_results`` (once the batch ended: one :class:`BatchItem` per request it knows of). A
request is described exactly as for :meth:`Provider.complete` (:class:`BatchRequest`), and an answer comes back
as the same :class:`~judge.providers.Completion`, so a batched pass is parsed like a direct one. A provider
without these methods is simply called directly (:func:`batch_api` returns None).

Orchestration - recording, budget, polling, resuming a killed run by batch id - is :mod:`judge.batch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from judge.providers import Completion
from judge.providers.errors import ProviderError
from judge.providers.retry import Attempt

BatchFate = Literal["expired", "cancelled", "failed"]  # a request that never ran: the batch ended without it


@dataclass(frozen=True)
class BatchRequest:
    """One request of a batch: the arguments of :meth:`Provider.complete`, under an id unique in the batch
    (``[A-Za-z0-9_-]{1,64}``: Anthropic's rule)."""

    custom_id: str
    messages: list[dict[str, Any]]
    schema: dict[str, Any] | None = None
    schema_name: str = "verdict"
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class BatchState:
    """One status check: ``ended`` once results can be read; ``status`` is the provider's own word."""

    batch_id: str
    ended: bool
    status: str
    done: int = 0
    total: int = 0
    failed: int = 0
    detail: str | None = None  # why a whole batch failed (OpenAI validation errors), when it did


@dataclass
class BatchItem:
    """The outcome of one request of an ended batch: an answer, an error response, or a fate (never ran)."""

    custom_id: str
    completion: Completion | None = None
    error: ProviderError | None = None
    fate: BatchFate | None = None
    detail: str | None = None


@dataclass
class BatchAnswer:
    """The first answer of one call of a pass as a batch gave it, for the judge (``judge_batched``): the
    completion, or the unscored reason and detail of a request that got none; ``attempt`` is the request as the
    run store recorded it (tokens, cost at the batch price), counted in the pass's verdict."""

    completion: Completion | None
    attempt: Attempt | None = None
    reason: str | None = None
    detail: str | None = None


@runtime_checkable
class BatchAPI(Protocol):
    """What a provider implements to take part in ``judge score --batch``."""

    async def submit_batch(self, requests: list[BatchRequest], *, label: str) -> str: ...

    async def batch_state(self, batch_id: str) -> BatchState: ...

    async def batch_results(self, batch_id: str, *, schema_name: str = "verdict") -> list[BatchItem]: ...


def batch_api(provider: Any) -> BatchAPI | None:
    """``provider`` when it implements :class:`BatchAPI`, else None."""
    return provider if provider is not None and isinstance(provider, BatchAPI) else None
