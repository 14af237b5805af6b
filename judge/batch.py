"""``judge score --batch``: the panel's LLM calls through provider batch APIs, at the batch price, resumable.

:class:`BatchRunner` takes the passes the panel still has to judge with a judge whose provider has a batch API
(:mod:`judge.providers.batch`: the OpenAI Batch API, Anthropic Message Batches) and returns, per pass, the
first answer of each of its calls (windows). The panel then hands them to the judge (``judge_batched``), which
checks and parses them exactly as direct answers - the verdicts are the same.

- **Recorded before it is sent.** Each request is written to the run store (``batch_items``) with its attempt,
  which reserves the request's worst-case cost at the batch price, before the batch is submitted; the batch id
  is recorded the moment the provider returns it. A run killed while it waits (polling can last hours) finds
  the id on the next start and polls that batch again: nothing is submitted twice. A kill in the instant
  between submission and recording leaves the requests ``sent``: they are counted at their worst case (they may
  have been billed) and submitted again.
- **Budget.** ``--max-cost`` holds: requests are reserved at their worst case before submission and those the
  cap cannot cover are unscored ``budget_exceeded``; an ended batch settles each at its real cost.
- **Results.** An answer is priced at the batch price (:func:`judge.pricing.price` with ``batch=True``); an error
  response is unscored as a direct call's would be; a request the batch never ran is unscored
  ``batch_expired``, ``batch_cancelled`` or ``batch_failed`` (a whole batch refused) with the provider's words.
  None of these is cached: a rerun submits them again, while answered requests are never asked again.
- **Corrective retry: a direct call.** An answer that does not parse gets its one corrective retry as a direct
  request at the normal price (by the judge, with the same hooks): it concerns few answers, and a second batch
  would add up to another day to the run.

Rate limits (``--rpm``/``--tpm``) do not apply to batches (providers queue them separately); ``--timeout`` applies
to each status request, not to the batch, which has the provider's 24-hour window.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, cast

from judge.judges import AttemptHook, Judge, PartStore
from judge.judges.llm import call_fingerprint
from judge.model import Trajectory, Usage
from judge.pricing import KEPT_CHARS, checked_usage, over_bounds, price
from judge.providers import Completion, redact, scrub, scrub_completion
from judge.providers.batch import BatchAnswer, BatchAPI, BatchItem, BatchRequest, BatchState, batch_api
from judge.providers.errors import ProviderError, unscored_reason
from judge.providers.retry import Attempt, answer_chars
from judge.runcalls import RunCalls
from judge.schema import Verdict
from judge.store import ANSWERED, FAILED, PENDING, RunStore
from judge.terminal import clip

MAX_REQUESTS_PER_BATCH = 10_000  # far below both APIs' limits (50,000 and 100,000), so a batch file stays small
MAX_BYTES_PER_BATCH = 100_000_000  # OpenAI takes 200 MB per file, Anthropic 256 MB per batch
MAX_POLL_FAILURES = 10  # consecutive failed status checks before a batch is left for a rerun to resume
PassItem = tuple[Trajectory, Any, str]  # (trajectory, PassPlan, pass cache key)


class BatchJudge(Judge, Protocol):
    """A judge whose passes can go through a batch (the LLM judge): the requests of a pass, and the pass made from
    the answers a batch gave them."""

    def batch_calls(self, trajectory: Trajectory, pass_index: int) -> list[dict[str, Any]]: ...

    async def judge_batched(self, trajectory: Trajectory, pass_index: int, answers: list[BatchAnswer], *,
                            on_attempt: AttemptHook | None = None, on_send: AttemptHook | None = None,
                            parts: PartStore | None = None) -> Verdict: ...


def batchable(judge: Judge) -> TypeGuard[BatchJudge]:
    """Whether ``judge``'s passes can go through a batch: a paid LLM judge whose provider has a batch API."""
    return bool(judge.cacheable and hasattr(judge, "judge_batched") and hasattr(judge, "batch_calls")
                and batch_api(judge.provider) is not None)


@dataclass
class _Live:
    batch_id: str
    judge: str
    api: BatchAPI
    price_key: str | None
    last: BatchState | None = None
    failures: int = 0


@dataclass
class BatchRunner:
    """Submits, resumes, polls and ingests the batches of one invocation; see the module docstring."""

    store: RunStore
    calls: RunCalls
    judges: Mapping[str, Judge]
    poll_s: float = 30.0
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr))
    sleep: Callable[[float], Any] = asyncio.sleep
    submitted: list[str] = field(default_factory=list)  # batch ids created by this invocation
    resumed: list[str] = field(default_factory=list)  # batch ids an earlier invocation created, polled now
    requests: int = 0  # requests submitted by this invocation
    reused: int = 0  # requests answered in an earlier invocation, used now
    _reserved: dict[str, float] = field(default_factory=dict)  # custom_id -> reservation made by this invocation
    _over_budget: set[tuple[str, int]] = field(default_factory=set)
    _unpolled: dict[str, str] = field(default_factory=dict)  # batch id -> why it was not (fully) polled

    async def collect(self, items: list[PassItem]) -> dict[str, list[BatchAnswer]]:
        """Per pass key: the first answer of each of its calls (an empty list: the pass needs no call)."""
        wanted: dict[str, list[dict[str, Any]]] = {}
        for trajectory, plan, key in items:
            judge = cast(BatchJudge, self.judges[plan.judge])  # the panel plans batches for batchable judges only
            wanted[key] = judge.batch_calls(trajectory, plan.pass_index)
        known = self.store.latest_batch_items(list(wanted))
        to_submit: dict[str, list[tuple[PassItem, int, dict[str, Any]]]] = {}
        queued: set[str] = set()
        for item in items:
            key = item[2]
            if key in queued:
                continue  # the same content twice in the input: one request answers both passes
            queued.add(key)
            for part, call in enumerate(wanted[key]):
                row = known.get(key, {}).get(part)
                if row is not None and row["state"] == ANSWERED:
                    self.reused += 1
                elif len(wanted[key]) > 1 and self.store.get_part(key, part + 1, call_fingerprint(call["messages"])):
                    self.reused += 1  # a window a direct call answered before a kill (the judge takes it from the store)
                elif row is None or row["state"] != PENDING:  # never sent, or it ended without an answer: (re)submit
                    to_submit.setdefault(item[1].judge, []).append((item, part, call))
        for spec, entries in to_submit.items():
            for chunk in _chunks(entries):
                await self._submit(spec, chunk)
        await self._poll()
        rows = self.store.latest_batch_items(list(wanted))
        return {key: [self._answer(key, part, rows.get(key, {}).get(part)) for part in range(len(calls))]
                for key, calls in wanted.items()}

    def lines(self) -> list[str]:
        """What the batches did, for the run's summary."""
        if not (self.submitted or self.resumed or self.reused or self._over_budget):
            return []
        parts = [f"batch: {self.requests} request(s) submitted in {len(self.submitted)} batch(es)"
                 + (f" ({', '.join(self.submitted)})" if self.submitted else "")]
        if self.resumed:
            parts.append(f"resumed {len(self.resumed)} batch(es) an earlier invocation submitted ({', '.join(self.resumed)})")
        if self.reused:
            parts.append(f"{self.reused} answer(s) from earlier batches reused")
        lines = ["; ".join(parts) + "; priced at the batch price"]
        if self._over_budget:
            lines.append(f"batch: {len(self._over_budget)} request(s) not submitted: the --max-cost cap cannot cover "
                         "their worst case")
        lines += [f"batch {batch_id}: {why}" for batch_id, why in self._unpolled.items()]
        return lines

    # --- submitting ----------------------------------------------------------------------------

    async def _submit(self, spec: str, entries: list[tuple[PassItem, int, dict[str, Any]]]) -> None:
        judge = self.judges[spec]
        api = batch_api(judge.provider)
        assert api is not None
        budget, table = self.calls.runtime.budget, self.calls.table
        token = uuid.uuid4().hex[:10]
        rows, requests = [], []
        for (trajectory, plan, key), part, call in entries:
            usage = Usage(input_tokens=call["estimated_input_tokens"], output_tokens=call["max_tokens"])
            worst = price(judge.price_key, usage, table, batch=True) if judge.price_key else None
            reserved = budget.try_reserve(worst)
            if reserved is None:
                self._over_budget.add((key, part))
                continue
            custom_id = f"{key[:24]}-{part}-{token}"
            self._reserved[custom_id] = reserved
            rows.append({"custom_id": custom_id, "key": key, "part": part, "trajectory_id": trajectory.id,
                         "judge": spec, "pass_index": plan.pass_index, "reserved_usd": worst or 0.0})
            requests.append(BatchRequest(custom_id=custom_id, **{k: v for k, v in call.items()
                                                                 if k != "estimated_input_tokens"}))
        if not requests:
            return
        self.store.add_batch_items(rows)  # before the request exists: a kill from here on leaves them on record
        try:
            batch_id = await api.submit_batch(requests, label=f"trajudge {redact(spec)} {token}")
        except ProviderError as error:
            # A refused submission costs nothing; one that timed out may have created the batch all the same: its
            # requests count at their worst case (a rerun submits them again).
            self.log(f"batch: {redact(spec)}: the batch of {len(requests)} request(s) could not be submitted: {error}")
            await self._finish([(row["custom_id"], row["reserved_usd"], BatchItem(row["custom_id"], error=error))
                                for row in rows], spec, billed_unknown=error.kind == "timeout")
            return
        self.store.batch_submitted(batch_id, spec, [row["custom_id"] for row in rows])
        self.submitted.append(batch_id)
        self.requests += len(requests)
        self.log(f"batch: submitted {len(requests)} request(s) of {redact(spec)} as {batch_id}")

    # --- polling -------------------------------------------------------------------------------

    async def _poll(self) -> None:
        """Check every batch of the run whose results were not read, until each has ended (or cannot be checked)."""
        live: dict[str, _Live] = {}
        by_redacted = {redact(spec): spec for spec in self.judges}
        for row in self.store.live_batches():
            spec = by_redacted.get(row["judge"])
            api = batch_api(self.judges[spec].provider) if spec is not None else None
            if spec is None or api is None:
                self._unpolled[row["id"]] = (f"of judge {row['judge']}, which is not in this panel: not checked (its "
                                             "requests count at their worst case until a run with that judge reads it)")
                continue
            live[row["id"]] = _Live(row["id"], spec, api, self.judges[spec].price_key)
            if row["id"] not in self.submitted:
                self.resumed.append(row["id"])
                self.log(f"batch: resuming {row['id']} of {row['judge']} (submitted by an earlier invocation)")
        while live:
            for batch in list(live.values()):
                try:
                    state = await batch.api.batch_state(batch.batch_id)
                    batch.failures = 0
                    if batch.last is None or (state.status, state.done) != (batch.last.status, batch.last.done):
                        self.log(f"batch {batch.batch_id}: {state.status}, {state.done}/{state.total} done"
                                 + (f", {state.failed} failed" if state.failed else ""))
                    batch.last = state
                    if state.ended:
                        items = await batch.api.batch_results(batch.batch_id)
                        await self._ingest(batch, items, state)
                        del live[batch.batch_id]
                except ProviderError as error:
                    batch.failures += 1
                    self.log(f"batch {batch.batch_id}: status check failed ({error}); "
                             f"{batch.failures} of {MAX_POLL_FAILURES} in a row")
                    if batch.failures >= MAX_POLL_FAILURES or error.kind == "auth":
                        self._unpolled[batch.batch_id] = (f"could not be checked ({error}); it is recorded in the run "
                                                          "store: run the same command again to resume it")
                        del live[batch.batch_id]
            if live:
                await self.sleep(self.poll_s)

    async def _ingest(self, batch: _Live, items: list[BatchItem], state: BatchState) -> None:
        rows = self.store.batch_item_rows(batch.batch_id)
        by_id = {item.custom_id: item for item in items}
        fate = by_id.get("*")  # the whole batch ended so (OpenAI): every request it does not list shares it
        outcomes = []
        for row in rows:
            item = by_id.get(row["custom_id"]) or (
                BatchItem(row["custom_id"], fate=fate.fate, detail=fate.detail) if fate is not None else
                BatchItem(row["custom_id"], fate="failed", detail=f"the results of batch {batch.batch_id} do not list "
                                                                  "this request"))
            outcomes.append((row["custom_id"], row.get("reserved_usd"), item))
        await self._finish(outcomes, batch.judge, batch.batch_id, state.status)
        answered = sum(1 for _, _, item in outcomes if item.completion is not None)
        self.log(f"batch {batch.batch_id}: {state.status}; {answered} of {len(outcomes)} request(s) answered")

    async def _finish(self, outcomes: list[tuple[str, float | None, BatchItem]], spec: str,
                      batch_id: str | None = None, provider_status: str | None = None,
                      billed_unknown: bool = False) -> None:
        """Record how requests ended (one transaction) and settle their reservations at their real cost
        (``billed_unknown``: requests without an answer whose cost is unknown, counted at their worst case)."""
        price_key = self.judges[spec].price_key
        budget = self.calls.runtime.budget
        records = []
        for custom_id, recorded_reserve, item in outcomes:
            cost: float | None = 0.0  # a request that got no answer is not billed
            record: dict[str, Any] = {"custom_id": custom_id}
            if item.completion is not None:
                scrub_completion(item.completion)  # as a direct answer is (judge.providers.retry)
                usage, note = checked_usage(item.completion.usage)
                item.completion.over_bounds = over_bounds(answer_chars(item.completion), usage,
                                                          getattr(self.judges[spec], "max_tokens", None),
                                                          getattr(self.judges[spec], "max_answer_chars", None))
                if item.completion.over_bounds is not None:  # charged at its worst case (the reservation)
                    usage, note = Usage(), item.completion.over_bounds[1]
                item.completion.usage = usage
                cost = price(price_key, usage, self.calls.table, batch=True) if price_key else None
                record.update(state=ANSWERED, result=_completion_json(item.completion), outcome="ok",
                              input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                              cached_tokens=usage.cached_tokens, cost_usd=cost, note=note or "batch request")
            elif item.error is not None:
                cost = None if billed_unknown else 0.0
                record.update(state=FAILED, result={"reason": unscored_reason(item.error), "detail": scrub(str(item.error))},
                              outcome=item.error.kind, cost_usd=cost, note="batch request")
            else:
                reason = f"batch_{item.fate or 'failed'}"
                record.update(state=FAILED, result={"reason": reason, "detail": item.detail or reason},
                              outcome=reason, cost_usd=0.0, note="batch request")
            records.append(record)
            if custom_id in self._reserved:
                await budget.settle(self._reserved.pop(custom_id), cost)
            else:  # reserved by an earlier invocation: the spend read at start counted its worst case
                budget.spent_usd += (cost if cost is not None else recorded_reserve or 0.0) - (recorded_reserve or 0.0)
            if cost:
                self.calls.cost_usd = (self.calls.cost_usd or 0.0) + cost
        self.store.finish_batch_items(records, batch_id, provider_status)

    # --- answers -------------------------------------------------------------------------------

    def _answer(self, key: str, part: int, row: dict[str, Any] | None) -> BatchAnswer:
        if row is None:
            if (key, part) in self._over_budget:
                return BatchAnswer(None, reason="budget_exceeded", detail=(
                    f"--max-cost {self.calls.runtime.budget.max_cost_usd} USD cannot cover this request's worst case "
                    "in a batch"))
            return BatchAnswer(None, reason="provider_error", detail="the request was never submitted")
        attempt = Attempt(1, str(row.get("outcome") or "sent"), reserved_usd=row.get("reserved_usd") or 0.0,
                          record_id=row.get("attempt_id"), note="batch request")
        if row["state"] == PENDING:
            why = self._unpolled.get(row["batch_id"], "has not ended")
            return BatchAnswer(None, attempt=None, reason="provider_error",
                               detail=f"batch {row['batch_id']} {why}")
        result = row["result"] or {}
        if row["state"] != ANSWERED:
            attempt.cost_usd = row.get("cost_usd")
            return BatchAnswer(None, attempt=attempt, reason=result.get("reason") or "provider_error",
                               detail=f"{result.get('detail')} (batch {row['batch_id']})" if row["batch_id"]
                               else result.get("detail"))
        completion = _completion_from(result)
        attempt.usage, attempt.cost_usd, attempt.completion = completion.usage, row.get("cost_usd"), completion
        return BatchAnswer(completion, attempt=attempt)


def _chunks(entries: list[Any]) -> list[list[Any]]:
    chunks: list[list[Any]] = [[]]
    size = 0
    for entry in entries:
        weight = sum(len(str(m.get("content", ""))) for m in entry[2]["messages"]) + 2000
        if chunks[-1] and (len(chunks[-1]) >= MAX_REQUESTS_PER_BATCH or size + weight > MAX_BYTES_PER_BATCH):
            chunks.append([])
            size = 0
        chunks[-1].append(entry)
        size += weight
    return [chunk for chunk in chunks if chunk]


def _completion_json(completion: Completion) -> dict[str, Any]:
    if completion.over_bounds is not None:  # an answer past its bounds is not kept whole (it is unscored)
        return {"text": clip(completion.text, KEPT_CHARS), "parsed": None, "finish_reason": completion.finish_reason,
                "refusal": clip(completion.refusal, KEPT_CHARS) or None, "usage": completion.usage.model_dump(),
                "model": completion.model, "over_bounds": list(completion.over_bounds)}
    return {"text": completion.text, "parsed": completion.parsed, "finish_reason": completion.finish_reason,
            "refusal": completion.refusal, "usage": completion.usage.model_dump(), "model": completion.model}


def _completion_from(data: dict[str, Any]) -> Completion:
    bounds = data.get("over_bounds")
    return Completion(text=data.get("text") or "", parsed=data.get("parsed"),
                      finish_reason=data.get("finish_reason") or "stop", refusal=data.get("refusal"),
                      usage=Usage.model_validate(data.get("usage") or {}), model=data.get("model") or "", latency_s=0.0,
                      over_bounds=(str(bounds[0]), str(bounds[1])) if bounds else None)
