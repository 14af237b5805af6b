"""The run's calls across Ray workers: one actor holds the run store, the budget and the rate limits.

:class:`RunLedger` is a Ray actor (async: a call waiting for the budget or a rate limit does not hold up the
others) that opens the run's calls exactly as a local invocation does (:func:`judge.runcalls.open_calls` on the
run's ``store.sqlite``: interrupted attempts marked, the ``--max-cost`` cap recorded). Every worker - and the
driver - gets a :class:`~judge.runcalls.RunCalls` from :func:`ledger_calls` whose store, budget and rate limiters
are proxies to that actor, and hands it to :func:`judge.panel.run_panel`, so the panel's one call path is
unchanged:

- every attempt is written to the run store by the actor *before* its request is sent (the worker waits for
  the write), and completed after, failed attempts included: the run's spend counts all of them;
- before each call the worker reserves its worst case against the run's one :class:`~judge.providers.retry.Budget`
  in the actor, and settles it afterwards: ``--max-cost`` holds across all workers, never overshot;
- ``--rpm``/``--tpm`` token buckets live in the actor, one per provider model, shared by all workers;
- verdicts are read from and written to the run store through the actor, so a second run (on either engine)
  makes no call for what is cached, and a killed run resumes; so are answers of the cache shared across runs
  (:mod:`judge.sharedcache`), which the actor opens on its node: workers need no access to the cache folder.

The actor runs on the node that holds the run directory (:mod:`judge.engine.ray_engine` pins it there). What a
worker keeps for itself: its count of calls and retries, and the per-endpoint stop after an authentication
failure (each worker finds that out with one failed call).
"""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from judge.model import Usage
from judge.pricing import PriceTable, price
from judge.providers.retry import Breaker, Budget, BudgetExceeded, CallRuntime, RateLimiter, RetryPolicy
from judge.runcalls import CallSettings, RunBudget, RunCalls, open_calls
from judge.sharedcache import SharedCache, open_shared_cache
from judge.store import RunStore

# RunStore methods a worker may call through the actor (the panel's and the call recorder's).
STORE_METHODS = frozenset({"get_verdict", "put_verdict", "record_attempt", "finish_attempt", "spent_usd", "in_doubt",
                           "get_answer", "put_answer", "setting", "count_verdicts", "get_part", "put_part"})
SHARED_METHODS = frozenset({"get", "put", "add", "flush", "record_hits"})  # SharedCache methods, the same way


@dataclass(frozen=True)
class LedgerInfo:
    """What a worker needs to build its calls: the retry policy and limits, the run's cap, the price table."""

    settings: CallSettings
    cap: float | None
    cap_source: str | None
    spent_before: float
    table: PriceTable
    store_id: str | None = None


class RunLedger:
    """The actor's class (made remote by :func:`start_ledger`); see the module docstring."""

    def __init__(self, run_dir: str, settings: CallSettings):
        path = Path(run_dir)
        if not path.is_dir():
            raise FileNotFoundError(f"the run directory {run_dir} is not visible on the node of the run's ledger: with "
                                    "a remote cluster (ray://) it must be on a filesystem shared with the head node "
                                    "(docs/ray.md)")
        self.settings = settings
        self.store = RunStore.for_run(path)
        self.calls = open_calls(self.store, settings)
        self.shared: SharedCache | None = None

    def open_shared(self, cache_dir: str | None) -> bool:
        """Open the cache shared across runs (the panel's rule decides whether: paid judges, not turned off);
        False when it cannot be opened (a warning says why, and the run goes on without it)."""
        if self.shared is None:
            self.shared = open_shared_cache(True, cache_dir, warn=lambda line: print(line, file=sys.stderr))
        return self.shared is not None

    def shared_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, str | None]:
        """``(result, None)``, or ``(None, why)`` when the cache failed (raised again as sqlite3.Error by the proxy)."""
        if name not in SHARED_METHODS or self.shared is None:
            raise AttributeError(f"the run ledger does not forward SharedCache.{name}")
        try:
            return getattr(self.shared, name)(*args, **kwargs), None
        except sqlite3.Error as error:
            return None, str(error)

    def info(self) -> LedgerInfo:
        calls = self.calls
        return LedgerInfo(self.settings, calls.cap, calls.cap_source, calls.spent_before, calls.table, calls.store_id)

    def store_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if name not in STORE_METHODS:
            raise AttributeError(f"the run ledger does not forward RunStore.{name}")
        return getattr(self.store, name)(*args, **kwargs)

    async def reserve(self, estimate_usd: float | None) -> tuple[float, str | None]:
        """``(reserved, None)``, or ``(0, why)`` when the cap cannot cover the call (BudgetExceeded's message)."""
        try:
            return await self.calls.runtime.budget.reserve(estimate_usd), None
        except BudgetExceeded as error:
            return 0.0, str(error)

    async def settle(self, reserved: float, actual_usd: float | None) -> None:
        await self.calls.runtime.budget.settle(reserved, actual_usd)

    async def acquire(self, key: str, estimated_tokens: int) -> None:
        await self.calls.runtime.limiter_for(key).acquire(estimated_tokens)

    def adjust(self, key: str, estimated_tokens: int, usage: Usage) -> None:
        self.calls.runtime.limiter_for(key).settle(estimated_tokens, usage)

    def budget(self) -> tuple[RunBudget, bool]:
        """The run's money now, and whether the cap stopped a call."""
        return self.calls.budget(), self.calls.runtime.budget.exceeded

    def close(self) -> None:
        self.store.close()
        if self.shared is not None:
            self.shared.close()


def start_ledger(run_dir: Path, settings: CallSettings, node_id: str | None) -> Any:
    """Start the run's ledger actor (on ``node_id`` when given) and wait until it has opened the run store."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    options: dict[str, Any] = {"num_cpus": 0, "max_concurrency": 1000}
    if node_id is not None:
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
    ledger: Any = ray.remote(RunLedger).options(**options).remote(str(Path(run_dir).resolve()), settings)
    ray.get(ledger.info.remote())  # raises here (with the actor's reason) when it could not open the run
    return ledger


class LedgerStore:
    """The :class:`~judge.store.RunStore` methods of :data:`STORE_METHODS`, carried out by the ledger actor.

    Each call waits for the actor: an attempt is on record before its request is sent, as with a local store."""

    def __init__(self, ledger: Any):
        self._ledger = ledger

    def __getattr__(self, name: str) -> Any:
        if name not in STORE_METHODS:
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            import ray

            return ray.get(self._ledger.store_call.remote(name, args, kwargs))

        return call

    def close(self) -> None:
        return None  # the actor owns the store


class LedgerSharedCache:
    """The :class:`~judge.sharedcache.SharedCache` methods the panel calls, carried out by the ledger actor on the
    home node (workers never open the cache file); a failure of the cache is a ``sqlite3.Error`` here too."""

    def __init__(self, ledger: Any):
        self._ledger = ledger

    def __getattr__(self, name: str) -> Any:
        if name not in SHARED_METHODS:
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            import ray

            result, failure = ray.get(self._ledger.shared_call.remote(name, args, kwargs))
            if failure is not None:
                raise sqlite3.Error(failure)
            return result

        return call

    def close(self) -> None:
        return None  # the actor owns the cache


class LedgerBudget(Budget):
    """The run's :class:`~judge.providers.retry.Budget`, kept by the ledger actor. Without a cap nothing is asked:
    the spend is the store's record of attempts either way."""

    def __init__(self, ledger: Any, cap: float | None):
        super().__init__(max_cost_usd=cap)
        self._ledger = ledger

    async def reserve(self, estimate_usd: float | None) -> float:
        if self.max_cost_usd is None:
            return 0.0
        reserved, refusal = await self._ledger.reserve.remote(estimate_usd)
        if refusal is not None:
            self.exceeded = True
            raise BudgetExceeded(refusal)
        return float(reserved)

    async def settle(self, reserved: float, actual_usd: float | None) -> None:
        if self.max_cost_usd is not None:
            await self._ledger.settle.remote(reserved, actual_usd)


class LedgerLimiter(RateLimiter):
    """One provider model's rpm/tpm token buckets, kept by the ledger actor (shared by every worker)."""

    def __init__(self, ledger: Any, key: str):
        super().__init__()
        self._ledger, self._key = ledger, key

    async def acquire(self, estimated_tokens: int) -> None:
        await self._ledger.acquire.remote(self._key, estimated_tokens)

    def settle(self, estimated_tokens: int, usage: Usage) -> None:
        self._ledger.adjust.remote(self._key, estimated_tokens, usage)  # the actual tokens: no need to wait


@dataclass
class LedgerRuntime(CallRuntime):
    """A :class:`~judge.providers.retry.CallRuntime` whose budget and rate limiters are the ledger actor's."""

    ledger: Any = field(default=None, repr=False)

    def limiter_for(self, key: str) -> RateLimiter:
        if key not in self.limiters:
            limited = self.rpm is not None or self.tpm is not None
            self.limiters[key] = LedgerLimiter(self.ledger, key) if limited else RateLimiter()
        return self.limiters[key]


def ledger_calls(ledger: Any, info: LedgerInfo | None = None) -> RunCalls:
    """The run's calls in this process (a worker or the driver), carried out through the ledger actor."""
    import ray

    info = info if info is not None else ray.get(ledger.info.remote())
    settings, table = info.settings, info.table
    runtime = LedgerRuntime(
        policy=RetryPolicy(max_retries=settings.max_retries, base_delay_s=settings.retry_base_delay_s),
        timeout_s=settings.timeout_s, budget=LedgerBudget(ledger, info.cap), rpm=settings.rpm, tpm=settings.tpm,
        price_fn=lambda key, usage: price(key, usage, table), ledger=ledger,
        breaker=Breaker(settings.stop_after_failures))
    store = cast(RunStore, LedgerStore(ledger))
    return RunCalls(store=store, runtime=runtime, table=table, cap=info.cap, cap_source=info.cap_source,
                    spent_before=info.spent_before, interrupted=0, interrupted_usd=0.0, store_id=info.store_id)


def stop_ledger(ledger: Any) -> None:
    """Close the run store and end the actor."""
    import ray

    try:
        ray.get(ledger.close.remote())
    finally:
        ray.kill(ledger)

