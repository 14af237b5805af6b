"""The provider calls of one invocation on a run: the judge panel's and the repair teacher's, on one path.

:func:`open_calls` builds the :class:`~judge.providers.retry.CallRuntime` that every call of the invocation
shares - retry policy, per-call timeout, rate limits, prices - with the run's budget: the ``--max-cost`` cap
recorded in the store (a cap given now is recorded for the run from then on) and the money earlier invocations
spent. It first marks the attempts a killed process left ``sent`` as interrupted (the caller holds the run
lock, so nothing else is sending): they count in the spend at their worst case.

:meth:`RunCalls.hooks` gives the two callbacks of :func:`~judge.providers.retry.complete_with_retries`: each
attempt is written to the store before its request is sent and completed when it ends, and its cost is added
to what this invocation paid. :meth:`RunCalls.budget` is the run's money afterwards (run.json ``budget``).

Before anything, :func:`check_store` makes sure the store is the one run.json's spend was recorded with: a
store that was emptied, replaced by another run's or by an older copy would forget that money (and let the cap
allow it again), so it stops the command (:class:`~judge.runlock.ForeignStore`); ``judge score --reset-store``
calls it first with ``reset=True``.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import rundir
from judge.pricing import PriceTable, add_costs, load_price_table, price
from judge.providers.retry import DEFAULT_STOP_AFTER, Attempt, Breaker, Budget, CallRuntime, RetryPolicy
from judge.rundir import BudgetSection, RunDir, RunManifest
from judge.runlock import ForeignStore
from judge.store import RunStore

AttemptHook = Callable[[Attempt], None]
# A call that ended so was not answered (or not sent): it is not cached, and a rerun tries it again. Every other
# outcome was paid for and is final.
# A batch request that never ran (the batch expired, was cancelled or failed) is submitted again by a rerun.
NOT_CACHED_REASONS = frozenset({"provider_error", "connection_error", "budget_exceeded", "batch_expired",
                                "batch_cancelled", "batch_failed"})
STORE_ID = "store_id"  # the run_settings entry naming a store; run.json's budget records it


@dataclass(frozen=True)
class CallSettings:
    """How an invocation calls providers: retries (after the first attempt; backoff doubles from
    ``retry_base_delay_s``, with full jitter), the per-call timeout, requests and tokens per minute per model, the
    run's spending cap (None: keep the recorded one), the price table (None: rubrics/prices.yaml) and after how
    many consecutive calls answered only 429/5xx or nothing a server is no longer called (0: never)."""

    max_cost_usd: float | None = None
    timeout_s: float = 120.0
    rpm: float | None = None
    tpm: float | None = None
    max_retries: int = 4
    retry_base_delay_s: float = 1.0
    prices: str | Path | None = None
    stop_after_failures: int = DEFAULT_STOP_AFTER


@dataclass
class RunBudget:
    """The run's money, over all its invocations (from the store): the cap, what was spent (unknown costs at
    their worst case), and the attempts a kill left without an outcome (they may have been billed)."""

    max_cost_usd: float | None
    cap_source: str | None  # "given" (this invocation's --max-cost), "recorded" (an earlier one's), None
    spent_usd: float
    spent_before_usd: float  # by earlier invocations
    in_doubt_attempts: int  # over the run's history
    in_doubt_usd: float
    interrupted_now: int  # found by this invocation (left by the one a kill stopped)
    interrupted_now_usd: float
    store_id: str | None = None

    def describe(self) -> BudgetSection:
        """The ``budget`` section of run.json."""
        return BudgetSection(
            max_cost_usd=self.max_cost_usd,
            spent_usd=round(self.spent_usd, 6),
            spent_before_this_invocation_usd=round(self.spent_before_usd, 6),
            in_doubt_attempts=self.in_doubt_attempts,
            in_doubt_usd=round(self.in_doubt_usd, 6),
            store_id=self.store_id,
            note="spent_usd counts every provider attempt of every invocation of this run; an attempt whose cost "
                 "is unknown (timed out, or in flight when a process was killed) counts at its worst case",
        )


@dataclass
class RunCalls:
    """The runtime of an invocation's provider calls and their record in the run store."""

    store: RunStore
    runtime: CallRuntime
    table: PriceTable
    cap: float | None
    cap_source: str | None
    spent_before: float
    interrupted: int
    interrupted_usd: float
    cost_usd: float | None = field(default=None)  # paid by this invocation's attempts (failed ones included)
    # The quickest answer of this invocation (preflight requests aside): the servers' latency with the least of this
    # process's own queueing in it, for the client-ceiling note - a CPU-bound client delays every answer it reads,
    # so their mean says how busy the client was, not how fast the servers were.
    fastest_s: float | None = None
    store_id: str | None = None  # the store's id (check_store), recorded in run.json's budget

    def hooks(self, key: str, trajectory_id: str, judge: str, pass_index: int,
              timed: bool = True) -> tuple[AttemptHook, AttemptHook]:
        """``(on_send, on_attempt)`` for the attempts of one call: recorded under ``key`` (the call's cache key)
        with the trajectory, the judge (or ``teacher:SPEC``) and the pass index; ``timed`` False leaves their
        latency out of :attr:`fastest_s` (a preflight's minimal request says nothing of a real call's)."""

        def on_send(attempt: Attempt) -> None:
            attempt.record_id = self.store.record_attempt(key, trajectory_id, judge, pass_index, "sent",
                                                          reserved_usd=attempt.reserved_usd)

        def on_attempt(attempt: Attempt) -> None:
            self.cost_usd = add_costs(self.cost_usd, attempt.cost_usd)
            if timed and attempt.outcome == "ok" and attempt.latency_s is not None:
                self.fastest_s = attempt.latency_s if self.fastest_s is None else min(self.fastest_s, attempt.latency_s)
            record_outcome(self.store, attempt, key, trajectory_id, judge, pass_index)

        return on_send, on_attempt

    def parts(self, key: str, trajectory_id: str) -> StoredParts:
        """The stored answers of the calls (windows) of the pass ``key`` (:class:`judge.judges.PartStore`)."""
        return StoredParts(self.store, key, trajectory_id)

    def budget(self) -> RunBudget:
        """The run's money now (read from the store)."""
        in_doubt, in_doubt_usd = self.store.in_doubt()
        return RunBudget(max_cost_usd=self.cap, cap_source=self.cap_source, spent_usd=self.store.spent_usd(),
                         spent_before_usd=self.spent_before, in_doubt_attempts=in_doubt, in_doubt_usd=in_doubt_usd,
                         interrupted_now=self.interrupted, interrupted_now_usd=self.interrupted_usd,
                         store_id=self.store_id)


@dataclass(frozen=True)
class StoredParts:
    """The answers of one pass's calls in the run store (:class:`judge.judges.PartStore`); dropped when the pass's
    verdict is stored (:meth:`judge.store.RunStore.put_verdict`)."""

    store: RunStore
    key: str
    trajectory_id: str

    def get(self, part: int, fingerprint: str) -> dict[str, Any] | None:
        return self.store.get_part(self.key, part, fingerprint)

    def put(self, part: int, fingerprint: str, answer: dict[str, Any]) -> None:
        self.store.put_part(self.key, part, fingerprint, self.trajectory_id, answer)


def open_calls(store: RunStore, settings: CallSettings | None = None) -> RunCalls:
    """The calls of an invocation that holds the run lock; see the module docstring."""
    settings = settings or CallSettings()
    store_id = check_store(store)
    interrupted, interrupted_usd = store.mark_interrupted()
    cap, cap_source = run_cap(store, settings.max_cost_usd)
    spent_before = store.spent_usd()
    table = load_price_table(settings.prices)
    runtime = CallRuntime(
        policy=RetryPolicy(max_retries=settings.max_retries, base_delay_s=settings.retry_base_delay_s),
        timeout_s=settings.timeout_s, budget=Budget(cap, spent_usd=spent_before), rpm=settings.rpm, tpm=settings.tpm,
        price_fn=lambda key, usage: price(key, usage, table), breaker=Breaker(settings.stop_after_failures))
    return RunCalls(store=store, runtime=runtime, table=table, cap=cap, cap_source=cap_source, spent_before=spent_before,
                    interrupted=interrupted, interrupted_usd=interrupted_usd, store_id=store_id)


def check_store(store: RunStore, reset: bool = False) -> str:
    """The id of the run's store, once it is known to be the store run.json's budget was recorded with.

    When run.json records money spent, the store must carry the id run.json names and record at least that
    spend; otherwise it was emptied, replaced by another run's, or by an older copy, and calling on would forget
    that money: :class:`~judge.runlock.ForeignStore`, naming both files. ``reset`` takes the store as the run's
    from now on (its own spend, run.json's cap) and says what was forgotten. A store without an id gets one.
    """
    manifest_path = store.path.parent / rundir.MANIFEST
    budget = RunManifest.load(manifest_path).budget or BudgetSection()
    recorded, store_id, spent = budget.spent_usd or 0.0, store.setting(STORE_ID), store.spent_usd()
    problem = None
    if recorded > 0 and budget.store_id is not None and store_id != budget.store_id:
        problem = ("is a new store" if store_id is None and spent == 0 else "is another store") + \
            f" (id {store_id or 'none'}, ${spent:.4f} spent), not the one it names ({budget.store_id})"
    elif recorded > 0 and spent < recorded - 1e-6:  # run.json rounds to 6 decimals
        problem = f"records only ${spent:.4f} spent"
    if problem is not None:
        cap = "" if budget.max_cost_usd is None else f" of a ${budget.max_cost_usd:.4f} cap"
        what = (f"{manifest_path} records ${recorded:.4f} spent{cap}, but {store.path} {problem}: it was emptied, "
                "replaced or taken from another run")
        if not reset:
            raise ForeignStore(f"{what}. Calling on would forget that money. Put the run's own {rundir.STORE} back, "
                               "or take this store as the run's with `judge score ... --reset-store` (its spend from "
                               "then on; run.json's cap is kept).")
        if budget.max_cost_usd is not None:  # the run's cap, not the one another run recorded in that store
            store.set_setting("max_cost_usd", budget.max_cost_usd)
        print(f"warning: --reset-store: {what}; the run's spend is now the store's", file=sys.stderr)
    if store_id is None:
        store_id = uuid.uuid4().hex
        store.set_setting(STORE_ID, store_id)
    if problem is not None:  # run.json names this store and its spend from now on
        with RunDir(store.path.parent).update_manifest() as manifest:
            manifest.budget = manifest.budget or BudgetSection()
            manifest.budget.store_id, manifest.budget.spent_usd = str(store_id), round(spent, 6)
    return str(store_id)


def run_cap(store: RunStore, given: float | None) -> tuple[float | None, str | None]:
    """The run's spending cap and where it comes from: this invocation's setting (recorded for the run from now
    on) or the one recorded by an earlier invocation."""
    if given is not None:
        store.set_setting("max_cost_usd", given)
        return given, "given"
    recorded = store.setting("max_cost_usd")
    return (float(recorded), "recorded") if recorded is not None else (None, None)


def record_outcome(store: RunStore, attempt: Attempt, key: str, trajectory_id: str, judge: str, pass_index: int) -> None:
    """Complete the attempt's row written at send time (or write one, for an attempt that was never announced)."""
    fields = (attempt.outcome, attempt.usage.input_tokens, attempt.usage.output_tokens, attempt.usage.cached_tokens,
              attempt.cost_usd, attempt.latency_s)
    if attempt.record_id is not None:
        store.finish_attempt(attempt.record_id, *fields, note=attempt.note)
    else:
        store.record_attempt(key, trajectory_id, judge, pass_index, *fields, reserved_usd=attempt.reserved_usd,
                             note=attempt.note)


def write_budget(run_dir: Path, budget: RunBudget) -> None:
    """Record the run's money in run.json (``budget``)."""
    with RunDir(run_dir).update_manifest() as manifest:
        manifest.budget = budget.describe()
