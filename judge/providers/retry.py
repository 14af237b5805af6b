"""Calling a provider safely: rate limits, retries with backoff, a per-call timeout and a budget cap.

:func:`complete_with_retries` is the one loop every LLM call goes through (judges, teacher, rewriter). It
reports each attempt - failed ones included, with their tokens and cost - to an ``on_attempt`` callback,
so the run store can count everything that was paid for; ``on_send`` hears of each attempt just before its
request goes out, so that a kill while it is on the wire still leaves a record of it.

What an attempt is charged: its priced usage when it answered; nothing when it failed with an error
response or could not connect (no request reached the server); its worst case (the reservation) when it
timed out or its usage is unreadable, since it may have been billed - or when the answer passed its bounds
(more output tokens than ``max_tokens`` allows, or more characters than ``max_answer_chars``): its reported usage
is not believed (:func:`judge.pricing.over_bounds`; the completion says so in ``over_bounds``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judge.model import Usage
from judge.pricing import checked_usage, over_bounds
from judge.providers import Completion, Provider
from judge.providers import price_key as pricing_key
from judge.providers.errors import ProviderError, ProviderTimeout


class BudgetExceeded(Exception):
    """The run's ``--max-cost`` would be passed by this call; it was not made."""


@dataclass
class RetryPolicy:
    """Retry on rate limits, 5xx, timeouts and unreadable bodies: exponential backoff with full jitter.

    ``max_retries`` counts retries after the first attempt. A server's ``Retry-After`` is honoured
    (capped at ``max_delay_s``) and never shortened by jitter.
    """

    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0


def backoff_delay(retry_number: int, policy: RetryPolicy, retry_after: float | None, rng: random.Random) -> float:
    """Seconds to wait before retry ``retry_number`` (1-based). Pure apart from the given ``rng``."""
    ceiling = min(policy.max_delay_s, policy.base_delay_s * (2 ** (retry_number - 1)))
    delay = rng.uniform(0.0, ceiling)  # full jitter: spreads a burst of clients that failed together
    if retry_after is not None:
        delay = max(delay, min(retry_after, policy.max_delay_s))
    return delay


class TokenBucket:
    """A bucket of ``per_minute`` units refilled continuously; ``acquire(n)`` waits until n units are free.

    A request larger than the bucket is let through once the bucket is full (else it would wait forever).
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic):
        if per_minute <= 0:
            raise ValueError("a rate limit must be positive")
        self.capacity = float(per_minute)
        self.rate = float(per_minute) / 60.0
        self._level = self.capacity
        self._clock = clock
        self._stamp = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        amount = min(float(amount), self.capacity)
        async with self._lock:  # FIFO-ish: one waiter refills at a time, so no one starves
            while True:
                self._refill()
                if self._level >= amount:
                    self._level -= amount
                    return
                await asyncio.sleep((amount - self._level) / self.rate)

    def adjust(self, delta: float) -> None:
        """Take (positive) or give back (negative) units after the fact, e.g. actual vs estimated tokens."""
        self._refill()
        self._level = min(self.capacity, self._level - delta)


@dataclass
class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits shared by all calls to one provider (None = no limit)."""

    rpm: float | None = None
    tpm: float | None = None
    _requests: TokenBucket | None = field(default=None, init=False, repr=False)
    _tokens: TokenBucket | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._requests = TokenBucket(self.rpm) if self.rpm else None
        self._tokens = TokenBucket(self.tpm) if self.tpm else None

    async def acquire(self, estimated_tokens: int) -> None:
        if self._requests:
            await self._requests.acquire(1)
        if self._tokens:
            await self._tokens.acquire(estimated_tokens)

    def settle(self, estimated_tokens: int, usage: Usage) -> None:
        if self._tokens and usage.total is not None:
            self._tokens.adjust(usage.total - estimated_tokens)


@dataclass
class Budget:
    """A run-wide spending cap that is never overshot.

    Each call first reserves its worst-case cost (estimated input plus ``max_tokens`` of output). A call
    that the money already spent cannot cover stops the run (``exceeded``, sticky: remaining passes become
    ``budget_exceeded``). A call that only in-flight reservations block waits for them to settle, since
    they usually cost far less than their worst case.
    """

    max_cost_usd: float | None = None
    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    exceeded: bool = False
    _settled: asyncio.Condition | None = field(default=None, init=False, repr=False)

    async def reserve(self, estimate_usd: float | None) -> float:
        """Reserve ``estimate_usd``; raise :class:`BudgetExceeded` when the cap cannot cover it."""
        if self.max_cost_usd is None:
            return 0.0
        estimate = estimate_usd or 0.0
        if self._settled is None:
            self._settled = asyncio.Condition()
        async with self._settled:
            while True:
                if self.exceeded or self.spent_usd + estimate > self.max_cost_usd:
                    self.exceeded = True
                    raise BudgetExceeded(
                        f"--max-cost {self.max_cost_usd:.4f} USD reached (spent {self.spent_usd:.4f}; "
                        f"the next call could cost up to {estimate:.4f})")
                if self.spent_usd + self.reserved_usd + estimate <= self.max_cost_usd:
                    self.reserved_usd += estimate
                    return estimate
                await self._settled.wait()

    def try_reserve(self, estimate_usd: float | None) -> float | None:
        """Reserve ``estimate_usd`` without waiting (a batch holds its reservations until it ends, so waiting for
        them could last a day): the amount reserved, or None when the cap cannot cover it (``exceeded`` is set)."""
        if self.max_cost_usd is None:
            return 0.0
        estimate = estimate_usd or 0.0
        if self.exceeded or self.spent_usd + self.reserved_usd + estimate > self.max_cost_usd:
            self.exceeded = True
            return None
        self.reserved_usd += estimate
        return estimate

    async def settle(self, reserved: float, actual_usd: float | None) -> None:
        """Replace a reservation by the actual cost (an unknown cost is charged at the reservation)."""
        self.reserved_usd = max(0.0, self.reserved_usd - reserved)
        self.spent_usd += actual_usd if actual_usd is not None else reserved
        if self._settled is not None:
            async with self._settled:
                self._settled.notify_all()


@dataclass
class Attempt:
    """One request to a provider, as recorded in the run store.

    ``on_send`` receives it with outcome ``sent``; ``on_attempt`` receives the same object once it ended.
    """

    number: int
    outcome: str  # "sent" while in flight, then "ok" or the error kind (rate_limited, server_error, timeout, ...)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    latency_s: float | None = None
    error: str | None = None
    completion: Completion | None = None
    reserved_usd: float = 0.0  # its worst-case cost: what it counts for if its real cost stays unknown
    note: str | None = None  # e.g. why its usage was not believed
    record_id: int | None = None  # for the recorder: the store row written at send time


@dataclass
class CallRuntime:
    """What calls to providers share within a run: limits, retry policy, timeout, budget, price lookup."""

    policy: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_s: float = 120.0
    budget: Budget = field(default_factory=Budget)
    limiters: dict[str, RateLimiter] = field(default_factory=dict)
    rpm: float | None = None
    tpm: float | None = None
    price_fn: Callable[[str, Usage], float | None] | None = None
    rng: random.Random = field(default_factory=random.Random)
    sleep: Callable[[float], Any] = asyncio.sleep
    retries: int = 0  # counters for the progress bar
    calls: int = 0
    # Per endpoint: an auth failure, or a server still unreachable after all retries, stops every further call
    # to it - each one would fail the same way (a rerun retries them: such passes are not cached).
    stopped: dict[str, ProviderError] = field(default_factory=dict)

    def limiter_for(self, key: str) -> RateLimiter:
        if key not in self.limiters:
            self.limiters[key] = RateLimiter(self.rpm, self.tpm)
        return self.limiters[key]

    def cost(self, price_key: str, usage: Usage) -> float | None:
        if self.price_fn is None:
            from judge.pricing import price

            return price(price_key, usage)
        return self.price_fn(price_key, usage)


async def complete_with_retries(
    provider: Provider,
    messages: list[dict[str, Any]],
    *,
    runtime: CallRuntime,
    estimated_input_tokens: int,
    on_attempt: Callable[[Attempt], None] | None = None,
    on_send: Callable[[Attempt], None] | None = None,
    max_answer_chars: int | None = None,
    **kwargs: Any,
) -> tuple[Completion, list[Attempt]]:
    """Call ``provider.complete(messages, **kwargs)`` until it answers or the error is final.

    An answer longer than ``max_answer_chars`` or reporting more output tokens than ``max_tokens`` allows is
    returned with ``over_bounds`` set and charged at its worst case (its usage unknown).

    Returns the completion and all attempts (the last one is the successful one). Raises the last
    :class:`ProviderError` when retries are exhausted or the error is not retryable, and
    :class:`BudgetExceeded` (before calling) when the budget cap is reached.
    """
    price_key = pricing_key(provider.provider, provider.model)
    target = f"{price_key}@{getattr(provider, 'endpoint', None) or ''}"
    limiter = runtime.limiter_for(price_key)
    max_tokens = int(kwargs.get("max_tokens") or 1024)
    estimate_usage = Usage(input_tokens=estimated_input_tokens, output_tokens=max_tokens)
    attempts: list[Attempt] = []
    for number in range(1, runtime.policy.max_retries + 2):
        earlier = runtime.stopped.get(target)
        if earlier is not None:
            stopped = type(earlier)(f"not attempted: an earlier call failed ({earlier})", status=earlier.status)
            stopped.attempts = attempts
            raise stopped
        worst = runtime.cost(price_key, estimate_usage)
        reserved = await runtime.budget.reserve(worst)
        await limiter.acquire(estimated_input_tokens + max_tokens)
        attempt = Attempt(number, "sent", reserved_usd=worst or 0.0)
        if on_send:
            on_send(attempt)  # recorded before the request exists: a kill from here on leaves it "sent"
        started = time.monotonic()
        runtime.calls += 1
        try:
            async with asyncio.timeout(runtime.timeout_s):  # no extra task per call, unlike wait_for
                completion = await provider.complete(messages, **kwargs)
        except (ProviderError, TimeoutError) as raw_error:
            error = raw_error if isinstance(raw_error, ProviderError) else ProviderTimeout(f"no answer within {runtime.timeout_s:g}s")
            # An error response is not billed, nor is a request that never connected; a timed-out request may
            # have been (the server can finish after we gave up): its cost is unknown, and the budget charges
            # its worst case.
            cost = None if error.kind == "timeout" else 0.0
            await runtime.budget.settle(reserved, cost)
            attempt.outcome, attempt.latency_s, attempt.error, attempt.cost_usd = (
                error.kind, time.monotonic() - started, str(error), cost)
            attempts.append(attempt)
            if on_attempt:
                on_attempt(attempt)
            final = not error.retryable or number > runtime.policy.max_retries
            if error.kind == "auth" or (error.kind == "connection_error" and final):
                runtime.stopped[target] = error
            if final:
                error.attempts = attempts
                raise error from (None if error is raw_error else raw_error)
            runtime.retries += 1
            await runtime.sleep(backoff_delay(number, runtime.policy, error.retry_after, runtime.rng))
            continue
        except BaseException:  # cancelled or a bug: release the reservation so other calls are not blocked
            await runtime.budget.settle(reserved, None)
            raise
        usage, note = checked_usage(completion.usage)
        completion.over_bounds = over_bounds(answer_chars(completion), usage, kwargs.get("max_tokens"), max_answer_chars)
        if completion.over_bounds is not None:
            usage, note = Usage(), completion.over_bounds[1]
        completion.usage = usage
        cost = runtime.cost(price_key, usage)
        await runtime.budget.settle(reserved, cost)
        limiter.settle(estimated_input_tokens + max_tokens, usage)
        attempt.outcome, attempt.usage, attempt.cost_usd, attempt.latency_s, attempt.completion, attempt.note = (
            "ok", usage, cost, completion.latency_s, completion, note)
        attempts.append(attempt)
        if on_attempt:
            on_attempt(attempt)
        return completion, attempts
    raise AssertionError("unreachable")  # the loop either returns or raises


def answer_chars(completion: Completion) -> int:
    """The size of an answer in characters: its text and its refusal (what would be kept of it)."""
    return len(completion.text or "") + len(completion.refusal or "")
