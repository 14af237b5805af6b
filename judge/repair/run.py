"""``judge repair RUN``: route every scored trajectory of a run, write tickets and offline edits.

Reads ``trajectories.jsonl``, ``scores.jsonl`` and ``clusters.jsonl`` of a run directory; writes
``repairs.jsonl`` (one row per trajectory with majority issues), ``tickets.jsonl`` (continuations to run,
docs/continuation-tickets.md), ``edited.jsonl`` (offline-edited trajectories, re-scorable with
``judge score``) and ``edits.jsonl`` (the edit log: dependency checks, validators, diff). With no teacher it
makes no model call (the embedding model for text references loads once, only if an edit is analysed).

With a teacher, its guidance and rewrite calls take the judges' call path on the run: retries, rate limits,
timeouts, the run's ``--max-cost`` budget and its store (every attempt recorded before it is sent, every answer
kept, so repairing again pays nothing twice). The run directory is locked meanwhile, and run.json's ``budget``
is brought up to date.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Coroutine, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, cast

from judge import rundir
from judge.model import Trajectory, Usage
from judge.providers import redact
from judge.repair.prompting import ModelCaller, Provider, make_provider_from_spec
from judge.repair.rewrite import rewrite_query, same_model
from judge.repair.routing import TrajectoryRepair, plan_repair, unfixable
from judge.repair.tickets import (
    TEACHER_PROMPT,
    Ticket,
    build_tickets,
    evidence_for,
    teacher_guidance,
    template_guidance,
)
from judge.runcalls import CallSettings, RunBudget, open_calls, write_budget
from judge.rundir import RunDir
from judge.runlock import run_lock
from judge.schema import Cluster, RepairRow, ScoreRow
from judge.store import RunStore

T = TypeVar("T")
CHUNK = 256  # trajectories routed (and their teacher calls made) before their rows are written


@dataclass
class RepairOutputs:
    """What one repair run produced, and where it wrote it.

    The rows are in the files: ``rows``, ``tickets`` and ``edited`` are views of repairs.jsonl, tickets.jsonl and
    edited.jsonl (each iteration reads the file); ``routes`` counts the rows by route, ``edits`` the edit-log rows.
    """

    rows: Sequence[RepairRow] = field(default_factory=list)
    tickets: Sequence[Ticket] = field(default_factory=list)
    edited: Sequence[Trajectory] = field(default_factory=list)
    edits: int = 0
    routes: Counter[str] = field(default_factory=Counter)
    paths: dict[str, Path] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)  # of the teacher answers used (those from the store included)
    calls: int = 0  # teacher attempts this invocation made (failed and retried ones included)
    retries: int = 0
    cost_usd: float | None = None  # what those attempts cost
    budget: RunBudget | None = None  # the run's money after the teacher's calls
    budget_exceeded: bool = False  # the cap stopped teacher calls: their repairs fell back to templates

    def counts(self) -> dict[str, int]:
        return dict(self.routes)


async def _finish_online(plan: TrajectoryRepair, provider: Provider | ModelCaller | None, teacher: str | None,
                         control_arm: bool, checker: Provider | ModelCaller | None = None) -> list[Ticket]:
    """Guidance (teacher or template) or a checked rewrite for the driver; the row and tickets are updated."""
    row, driver, trajectory = plan.row, plan.driver, plan.trajectory
    if driver is None or row.route not in ("online-guided", "online-regenerate", "rewrite-restart", "environment"):
        return []
    evidence = evidence_for(trajectory, driver.issue, driver.cluster)
    # A capability restart starts fresh from the (checked) rewrite: no advice about the failed run.
    guidance = None if row.route == "rewrite-restart" else template_guidance(trajectory, driver.issue, evidence)
    source = "template" if guidance else None
    usage, cost = Usage(), None
    agent_query, check = None, None
    if provider is not None and row.route in ("online-guided", "online-regenerate"):
        result = await teacher_guidance(provider, trajectory, driver.issue, evidence, row.checkpoint_turn or 0)
        usage, cost = result.usage, result.cost_usd
        if result.parsed is not None:
            guidance, source = result.parsed["guidance"].strip(), f"teacher:{teacher} ({TEACHER_PROMPT})"
        else:
            source = f"template (teacher failed: {result.error})"
    if row.route == "rewrite-restart":
        if provider is None:
            row.extra["rewrite"] = "needs-rewrite: no rewrite model configured"
        elif checker is None:
            # A rewrite nobody independent checks is not made (nor paid for).
            row.extra["rewrite"] = "needs-rewrite: no checker model configured (--checker SPEC)"
        else:
            outcome = await rewrite_query(provider, trajectory, driver.issue, evidence, checker=checker)
            usage, cost = outcome.usage, outcome.cost_usd
            check = outcome.check_summary()
            row.extra["rewrite_check"] = check
            if not outcome.passed:
                # Only a rewrite that keeps every explicit requirement earns a restart.
                row.route, row.reason = "pending", f"capability limit, rewrite refused by the requirement check: {outcome.reason}"
                row.extra["teacher_usage"] = usage.model_dump()
                return []
            agent_query = outcome.rewrite
    row.guidance, row.extra["guidance_source"] = guidance, source
    row.extra["teacher_usage"] = usage.model_dump()
    return build_tickets(trajectory, row, driver.issue, guidance=guidance, guidance_source=source,
                         usage=usage, cost_usd=cost, agent_query=agent_query, rewrite_check=check, control_arm=control_arm,
                         evidence=evidence)


def repair_run(
    run_dir: Path,
    out_dir: Path | None = None,
    *,
    teacher: str | None = None,
    base_url: str | None = None,
    provider: Provider | None = None,
    control_arm: bool = True,
    concurrency: int = 4,
    settings: CallSettings | None = None,
    checker: str | None = None,
    checker_provider: Provider | None = None,
    allow_same_checker: bool = False,
) -> RepairOutputs:
    """Route, ticket and edit every trajectory of a scored run; write the four files to ``out_dir`` (default RUN).

    ``teacher`` is a provider spec (``openai:MODEL``...) for guidance and rewrites; ``provider`` passes a
    ready provider object instead (tests). ``checker`` (or ``checker_provider``) is the model that checks a
    capability rewrite: without one no rewrite is made (the ticket stays ``needs-rewrite``); the rewriter's own
    model is refused (ValueError) unless ``allow_same_checker``. ``control_arm`` adds an unguided ticket beside
    each guided one.
    ``settings`` bound the teacher's calls (retries, timeout, rate limits, the run's ``--max-cost``); its calls
    are recorded in RUN's store and count in RUN's budget, wherever ``out_dir`` is. Streams the run: trajectories
    are read once, in order, and routed in chunks of :data:`CHUNK` while teacher calls overlap.
    """
    run = RunDir(run_dir)
    out = RunDir(out_dir) if out_dir else run
    settings = settings or CallSettings()
    if teacher and provider is None:  # fail fast (a missing key) before any work
        provider = make_provider_from_spec(teacher, base_url, timeout_s=settings.timeout_s)
    label = redact(teacher or getattr(provider, "spec", None))  # recorded in tickets: no URL credential
    check_label = check_checker(label, checker or _spec_of(checker_provider), allow_same_checker)
    if checker and checker_provider is None:
        checker_provider = make_provider_from_spec(checker, None, timeout_s=settings.timeout_s)
    outputs = RepairOutputs()
    if provider is None:
        _route_all(run, out, outputs, None, label, control_arm, concurrency)
        return outputs
    with run_lock(run.path, "judge repair"), RunStore.for_run(run.path) as store:
        calls = open_calls(store, settings)
        model = ModelCaller(provider, calls=calls, label=f"teacher:{label}")
        check = None if checker_provider is None else ModelCaller(checker_provider, calls=calls, label=f"checker:{check_label}")
        _route_all(run, out, outputs, model, label, control_arm, concurrency, check)
        outputs.calls, outputs.retries, outputs.cost_usd = calls.runtime.calls, calls.runtime.retries, calls.cost_usd
        outputs.budget, outputs.budget_exceeded = calls.budget(), calls.runtime.budget.exceeded
        write_budget(run.path, outputs.budget)
    return outputs


def _spec_of(provider: Provider | None) -> str | None:
    if provider is None:
        return None
    spec = getattr(provider, "spec", None)
    return spec if isinstance(spec, str) else f"{provider.provider}:{provider.model}"


def check_checker(teacher: str | None, checker: str | None, allow_same: bool) -> str | None:
    """The checker's label (redacted), after refusing what cannot check a rewrite: a checker without a rewriter,
    or the rewriter's own model (unless ``allow_same``: its rewrite checks then say ``independent: false``)."""
    if checker is None:
        return None
    if teacher is None:
        raise ValueError(f"--checker {redact(checker)} needs a rewriter (--teacher SPEC): it checks the teacher's rewrites")
    if same_model(teacher, checker) and not allow_same:
        raise ValueError(f"--checker {redact(checker)} is the rewriter's model ({teacher}): a model checking its own "
                         "rewrite tends to leave out what it dropped; name another model, or pass --allow-same-checker")
    return str(redact(checker))


def _route_all(run: RunDir, out: RunDir, outputs: RepairOutputs, model: ModelCaller | None, label: str | None,
               control_arm: bool, concurrency: int, checker: ModelCaller | None = None) -> None:
    """Stream the run: trajectories are read once, in order, routed, and their rows written in input order."""
    with (run.scores_by_trajectory() as scores, run.clusters_by_trajectory() as clusters,
          Router(out, outputs, model, label, control_arm, concurrency, checker) as router):

        async def route_all() -> None:
            try:
                for trajectory in run.trajectories():
                    score = scores.get(trajectory.id)
                    if score is not None:
                        await router.add(trajectory, score, clusters.get(trajectory.id, []))
                await router.flush()
            finally:
                if model is not None:
                    await model.provider.aclose()
                if checker is not None:
                    await checker.provider.aclose()

        asyncio.run(route_all())


def _plan(trajectory: Trajectory, score: ScoreRow, clusters: list[Cluster]) -> TrajectoryRepair | RepairRow | None:
    """The repair plan of one scored trajectory (None: nothing to repair), or the row saying it cannot be routed."""
    try:
        return plan_repair(trajectory, score, clusters)
    except Exception as error:  # noqa: BLE001 - one bad trajectory must not stop the batch; it is reported
        return unfixable(trajectory.id, error)


def _run_without_io(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run to its end a coroutine that awaits nothing (a repair without a teacher makes no call to wait for)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return cast(T, done.value)
    coroutine.close()
    raise RuntimeError("the coroutine waited for I/O: it needs an event loop")


class Router:
    """Routes scored trajectories one at a time, in input order, into the four repair files of ``out``
    (repairs, tickets, edited, edits); use it as a context manager: the files are written atomically when the
    block ends without an error, and ``outputs`` then holds their counts and views.

    ``judge repair`` feeds it from the run's files (:func:`repair_run`); ``judge score`` feeds it each trajectory
    as soon as it is scored, while the trajectory is still in memory (:class:`judge.pipeline.FinishStream`).
    """

    def __init__(self, out: RunDir, outputs: RepairOutputs, model: ModelCaller | None = None, label: str | None = None,
                 control_arm: bool = True, concurrency: int = 4, checker: ModelCaller | None = None):
        self.out, self.outputs, self.model, self.label, self.control_arm = out, outputs, model, label, control_arm
        self.checker = checker
        # Bounded chunks: the plans of a chunk (trajectories included) wait for their teacher calls together,
        # then are written and released, so memory stays flat while up to ``concurrency`` calls overlap.
        # Without a teacher nothing overlaps: one trajectory at a time (fewer live objects, cheaper GC passes).
        self.gate = asyncio.Semaphore(max(1, concurrency))
        self.chunk: list[TrajectoryRepair | RepairRow] = []
        self.chunk_size = 1 if model is None else max(CHUNK, 4 * concurrency)
        self._files = ExitStack()

    def __enter__(self) -> Router:
        self.out.path.mkdir(parents=True, exist_ok=True)
        with ExitStack() as files:
            self.repairs_out, self.tickets_out, self.edited_out, self.edits_out = (
                files.enter_context(self.out.writer(name))
                for name in (rundir.REPAIRS, rundir.TICKETS, rundir.EDITED, rundir.EDITS))
            self._files = files.pop_all()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._files.__exit__(kind, error, trace)
        if kind is not None:
            return
        out, outputs = self.out, self.outputs
        outputs.edits = self.edits_out.count
        outputs.rows = out.view(rundir.REPAIRS, RepairRow, self.repairs_out.count)
        outputs.tickets = out.view(rundir.TICKETS, Ticket, self.tickets_out.count)
        outputs.edited = out.view(rundir.EDITED, Trajectory, self.edited_out.count)
        outputs.paths = {name: out.file(name) for name in (rundir.REPAIRS, rundir.TICKETS, rundir.EDITED, rundir.EDITS)}

    async def add(self, trajectory: Trajectory, score: ScoreRow, clusters: list[Cluster]) -> None:
        """Route one scored trajectory; its rows are written once its chunk is complete (at once without a teacher)."""
        item = _plan(trajectory, score, clusters)
        if item is not None:
            self.chunk.append(item)
            if len(self.chunk) >= self.chunk_size:
                await self.flush()

    def add_offline(self, trajectory: Trajectory, score: ScoreRow, clusters: list[Cluster]) -> RepairRow | None:
        """:meth:`add` for a router without a teacher, from synchronous code: nothing waits for a call, so the
        trajectory is routed and its rows written at once. Returns its repairs.jsonl row (None: nothing to repair)."""
        if self.model is not None:
            raise RuntimeError("a router with a teacher routes through add(), which waits for its calls")
        item = _plan(trajectory, score, clusters)
        if item is None:
            return None
        plans = [item] if isinstance(item, TrajectoryRepair) else []
        self._write([item], [_run_without_io(_finish_online(plan, None, self.label, self.control_arm)) for plan in plans])
        return item.row if isinstance(item, TrajectoryRepair) else item

    async def flush(self) -> None:
        """Finish the pending chunk (teacher calls overlapping) and write its rows, in input order."""
        plans = [item for item in self.chunk if isinstance(item, TrajectoryRepair)]
        self._write(self.chunk, await asyncio.gather(*(self._finish(plan) for plan in plans)))
        self.chunk = []

    async def _finish(self, plan: TrajectoryRepair) -> list[Ticket]:
        async with self.gate:
            return await _finish_online(plan, self.model, self.label, self.control_arm, self.checker)

    def _write(self, chunk: list[TrajectoryRepair | RepairRow], tickets: list[list[Ticket]]) -> None:
        outputs = self.outputs
        for item in chunk:
            row = item.row if isinstance(item, TrajectoryRepair) else item
            self.repairs_out.write(row)
            outputs.routes[row.route] += 1
            used = row.extra.get("teacher_usage")
            if used:
                outputs.usage = outputs.usage + Usage(**used)
            if isinstance(item, TrajectoryRepair):
                for edit in item.edits:
                    self.edits_out.write(edit.log_row())
                if item.edited is not None and row.route == "offline-edit":
                    self.edited_out.write(item.edited)
        for batch in tickets:
            for ticket in batch:
                self.tickets_out.write(ticket)


def route_run(run_dir: Path, *, teacher: str | None = None) -> Sequence[RepairRow]:
    """Route a scored run and write repairs.jsonl (plus tickets, edited and edits) into it.

    Offline and model-free when ``teacher`` is None (what ``judge score`` calls at its end).
    """
    return repair_run(Path(run_dir), teacher=teacher).rows


def make_tickets(
    trajectory: Trajectory,
    score_row: ScoreRow,
    clusters: list[Cluster] | None = None,
    *,
    provider: Provider | None = None,
    teacher: str | None = None,
    control_arm: bool = True,
    checker: Provider | None = None,
) -> list[Ticket]:
    """The continuation tickets of one trajectory (empty when its repair is offline or pending); ``checker``
    checks a capability rewrite (see :func:`repair_run`; here the caller chooses it)."""
    plan = plan_repair(trajectory, score_row, clusters)
    if plan is None:
        return []
    return asyncio.run(_finish_online(plan, provider, teacher, control_arm, checker))
