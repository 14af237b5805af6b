"""Run continuation tickets: restore each arm in its own working copy, let the agent continue, keep the record.

Per ticket (one arm): restore the conversation and the environment (:mod:`judge.continuation.restore`), then
ask the agent for turns from ``checkpoint_turn + 1`` on, dispatching its tool calls
(:mod:`judge.continuation.dispatch`), until it answers without a tool call (``completed``), a budget runs out
(``budget-exhausted``; the last turn's calls are still run so its receipts are real), or the harness cannot go
on (``unsupported-tool``, ``agent-error``, ``max-cost`` when the run's spending cap stopped the agent's call, or a
restore stop). Budgets: ``turns`` counts new assistant turns;
``tokens`` counts the agent's input + output tokens on this arm, failed attempts included.

Output (:func:`write_results`): the arms that ran to their own end (completed or budget-exhausted) as
canonical trajectories, ready for ``judge repair ingest`` and ``judge compare`` (the ticket's metadata, the
suffix usage, ``budget_exhausted``, the stop reason and every tool call's disposition); and an arm log with one
row per ticket, stopped arms included with their partial turns, so nothing is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import rundir
from judge.continuation.agent import Agent, AgentError, AgentRequest
from judge.continuation.dispatch import ReceiptCache, ToolDispatcher, ToolEvent
from judge.continuation.mapping import CommandMapping
from judge.continuation.restore import (
    Environments,
    Stop,
    StopReason,
    check_ticket,
    prefix_sites,
    replay_prefix,
    restored_messages,
)
from judge.continuation.sandbox import Limits, Sandbox
from judge.continuation.tools import MAPPED_TOOL_PARAMETERS, SCHEMAS, ToolKind
from judge.model import Message, ToolSpec, Trajectory, TrajectoryMetadata, Usage
from judge.repair.calls import is_plan_call
from judge.repair.tickets import Ticket
from judge.rundir import RunDir

SOURCE_FORMAT = "trajudge-continue"
FINISHED: tuple[StopReason, ...] = ("completed", "budget-exhausted")
# Ticket metadata keys that are fields of the record's metadata (the rest go to ``extra``).
_FIELDS = {"source_id", "branch_turn", "arm", "target_issue", "query_id"}


@dataclass(frozen=True)
class Budget:
    """Limits of one arm; None = no limit (give one for a real model: nothing else stops a looping agent)."""

    tokens: int | None = None
    turns: int | None = None


@dataclass
class ContinueOptions:
    """How tickets are run. ``keep_workdirs`` leaves each arm's directory in place (its path is in the log)."""

    budget: Budget = field(default_factory=Budget)
    limits: Limits = field(default_factory=Limits)
    mapping: CommandMapping = field(default_factory=CommandMapping)
    environments: Environments = field(default_factory=Environments)
    reuse_receipts: bool = True
    keep_workdirs: bool = False
    work_parent: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    concurrency: int = 1


@dataclass
class ArmResult:
    """One ticket's run: the conversation (prefix + guidance + new turns), how it ended, what it cost."""

    ticket: Ticket
    messages: list[Message]
    stop: Stop = field(default_factory=lambda: Stop("completed", ""))
    new_turns: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    model: str | None = None
    events: list[ToolEvent] = field(default_factory=list)
    replayed: list[ToolEvent] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    plan: Any = None  # the plan state (last plan-tool arguments) when the arm ended

    @property
    def finished(self) -> bool:
        """The arm ended on its own terms (an answer or its budget), so it can be judged and compared."""
        return self.stop.reason in FINISHED

    @property
    def budget_exhausted(self) -> bool:
        return self.stop.reason == "budget-exhausted"

    @property
    def output_id(self) -> str:
        return f"{self.ticket.trajectory_id}-{self.ticket.arm}"

    def suffix(self) -> list[Message]:
        """The messages the continuation added after the restored conversation."""
        return self.messages[len(restored_messages(self.ticket)):]

    def to_trajectory(self) -> Trajectory:
        """The continuation as a canonical trajectory, linked to its source by the ticket's metadata."""
        ticket = self.ticket
        extra = {k: v for k, v in ticket.metadata.items() if k not in _FIELDS}
        extra.update({
            "ticket_id": ticket.ticket_id, "route": ticket.route, "checkpoint_turn": ticket.checkpoint_turn,
            "stop_reason": self.stop.reason, "stop_detail": self.stop.detail, "agent": self.model,
            "guidance_source": ticket.guidance_source if ticket.arm in ("guided", "rewrite") else None,
            # compare's recurrence test reads these beside the target text (judge.compare.Target).
            "target_category": ticket.target_issue.category, "target_tag": ticket.target_issue.tag,
            "target_evidence": _quote(ticket.evidence[0]) if ticket.evidence else "",
            "cost_usd": self.cost_usd, "tool_events": [e.as_dict() for e in self.events],
            # compare's full cost: the teacher's tokens and dollars for this arm's guidance (judge.compare.arm_cost).
            "teacher_usage": ticket.usage.model_dump(), "teacher_cost_usd": ticket.cost_usd,
            "replayed": [e.as_dict() for e in self.replayed], "environment": self.environment,
        })
        if ticket.agent_query is not None:
            extra["agent_query"] = ticket.agent_query
        metadata = TrajectoryMetadata(
            source_format=SOURCE_FORMAT, model=self.model, arm=ticket.arm, source_id=ticket.trajectory_id,
            branch_turn=ticket.branch_turn, target_issue=ticket.metadata.get("target_issue") or ticket.target_issue.as_text(),
            budget_exhausted=self.budget_exhausted, usage=self.usage, extra=extra)
        return Trajectory(id=self.output_id, query=ticket.query, query_id=ticket.query_id, messages=self.messages,
                          metadata=metadata)

    def log_row(self) -> dict[str, Any]:
        """The arm log's row; a stopped arm keeps its partial turns here."""
        return {
            "ticket_id": self.ticket.ticket_id, "trajectory_id": self.ticket.trajectory_id, "arm": self.ticket.arm,
            "route": self.ticket.route, "output_id": self.output_id if self.finished else None,
            "stop_reason": self.stop.reason, "stop_detail": self.stop.detail, "budget_exhausted": self.budget_exhausted,
            "new_turns": self.new_turns, "usage": self.usage.model_dump(), "cost_usd": self.cost_usd, "agent": self.model,
            "environment": self.environment, "plan": self.plan, "replayed": [e.as_dict() for e in self.replayed],
            "tool_events": [e.as_dict() for e in self.events],
            "suffix": None if self.finished else [m.model_dump(mode="json") for m in self.suffix()],
        }


def _quote(evidence: str) -> str:
    """An evidence line without its ``[pass]`` label."""
    return evidence.split("] ", 1)[1] if evidence.startswith("[") and "] " in evidence else evidence


def tool_schemas(ticket: Ticket, mapping: CommandMapping) -> list[ToolSpec]:
    """What the agent is told it can call.

    The source trajectory's own tool schemas when it recorded them (``ticket.tools``): the agent continues with
    the tools of the original environment, under their names; the sandbox runs those it knows by name or alias,
    the mapping serves others, and a call to any other stops the arm (``unsupported-tool``), as in the original
    environment it would have run. Without recorded schemas: the sandbox's Bash, Read, Write and Edit, the plan
    tool when the prefix planned. Either way, each tool the mapping serves that is not listed yet (its schema
    unknown, so any object).
    """
    if ticket.tools:
        schemas = list({tool.name: tool for tool in ticket.tools}.values())
    else:
        kinds: list[ToolKind] = ["bash", "read", "write", "edit"]
        planned = ticket.plan is not None or any(is_plan_call(c) for m in ticket.prefix for c in m.tool_calls)
        schemas = [SCHEMAS[k] for k in kinds] + ([SCHEMAS["plan"]] if planned else [])
    listed = {tool.name for tool in schemas}
    schemas += [ToolSpec(name=rule.name, description=f"Served by the harness mapping ({rule.source}).",
                         parameters=MAPPED_TOOL_PARAMETERS) for rule in mapping.tools.values() if rule.name not in listed]
    return schemas


async def run_ticket(ticket: Ticket, agent: Agent, options: ContinueOptions | None = None) -> ArmResult:
    """Restore and run one ticket's arm in a fresh working copy; never raises for a failure of the arm."""
    options = options or ContinueOptions()
    result = ArmResult(ticket=ticket, messages=restored_messages(ticket), model=agent.spec)
    source = options.environments.for_ticket(ticket)
    sites = prefix_sites(ticket)
    stop = check_ticket(ticket, source, sites)
    if stop is not None:
        result.stop = stop
        return result
    try:
        sandbox = Sandbox.create(source.directory, options.limits, parent=options.work_parent, env=options.env,
                                 path_alias=source.path_alias)
    except OSError as error:
        result.stop = Stop("environment-unavailable", f"cannot make the working copy: {error}")
        return result
    result.environment = {"workdir": str(source.workdir) if source.workdir else None,
                          "snapshot": str(source.snapshot) if source.snapshot else None,
                          "fresh_environment": ticket.fresh_environment,
                          "kept_at": str(sandbox.root) if options.keep_workdirs else None}
    try:
        sandbox.plan = ticket.plan
        dispatcher = ToolDispatcher(sandbox, options.mapping)
        result.replayed, stop = await replay_prefix(ticket, source, dispatcher, sites)
        if stop is not None:
            result.stop = stop
            return result
        # Replayed writes are the prefix's own: the cache already accounts for them, so it joins only now.
        dispatcher.cache = ReceiptCache(ticket, sites) if options.reuse_receipts else None
        result.stop = await _continue(result, agent, dispatcher, tool_schemas(ticket, options.mapping), options.budget)
    except Exception as error:  # noqa: BLE001 - a failure of the harness ends this arm, recorded, not the batch
        result.stop = Stop("harness-error", f"{type(error).__name__}: {error}")
    finally:
        result.plan = sandbox.plan
        sandbox.close(keep=options.keep_workdirs)
    return result


async def _continue(result: ArmResult, agent: Agent, dispatcher: ToolDispatcher, tools: list[ToolSpec],
                    budget: Budget) -> Stop:
    ticket = result.ticket
    turn = ticket.checkpoint_turn
    costs: list[float | None] = []
    while True:
        if budget.turns is not None and result.new_turns >= budget.turns:
            return Stop("budget-exhausted", f"turn budget spent: {result.new_turns} of {budget.turns} turns")
        spent = result.usage.total or 0
        if budget.tokens is not None and spent >= budget.tokens:
            return Stop("budget-exhausted", f"token budget spent: {spent} of {budget.tokens} tokens")
        try:
            reply = await agent.next_turn(AgentRequest(ticket=ticket, messages=list(result.messages), tools=tools, turn=turn + 1))
        except AgentError as error:
            _add_cost(result, costs, error.usage, error.cost_usd)
            return Stop(error.stop, str(error))
        except Exception as error:  # noqa: BLE001 - one failing agent call ends this arm, not the batch
            return Stop("agent-error", f"{type(error).__name__}: {error}")
        turn += 1
        result.new_turns += 1
        message = reply.message.model_copy(update={"role": "assistant", "turn": turn, "usage": reply.usage})
        result.messages.append(message)
        result.model = reply.model or result.model
        _add_cost(result, costs, reply.usage, reply.cost_usd)
        if budget.tokens is not None and (reply.usage is None or reply.usage.total is None):
            return Stop("agent-error", "the agent reported no token usage, so the token budget cannot be enforced")
        if not message.tool_calls:
            return Stop("completed", f"answered at T{turn}")
        for call in message.tool_calls:
            done = await dispatcher.dispatch(call, turn)
            result.events.append(done.event)
            if done.receipt is None:
                return Stop("unsupported-tool", f"T{turn} {call.name} ({call.id}): {done.event.detail}")
            result.messages.append(Message(role="tool", content=done.receipt.content, receipt=done.receipt, turn=turn))


def _add_cost(result: ArmResult, costs: list[float | None], usage: Usage | None, cost_usd: float | None) -> None:
    if usage is not None:
        result.usage = result.usage + usage
    costs.append(cost_usd)
    # A total with an unknown part is unknown: never a sum that silently leaves calls out.
    result.cost_usd = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


async def run_tickets(tickets: Iterable[Ticket], agent: Agent, options: ContinueOptions | None = None) -> list[ArmResult]:
    """Run every ticket (``options.concurrency`` at a time), each arm in its own working copy; results in ticket order."""
    options = options or ContinueOptions()
    gate = asyncio.Semaphore(max(1, options.concurrency))

    async def one(ticket: Ticket) -> ArmResult:
        async with gate:
            return await run_ticket(ticket, agent, options)

    try:
        return list(await asyncio.gather(*(one(t) for t in tickets)))
    finally:
        await agent.aclose()


def arm_log_path(out: Path) -> Path:
    """The arm log beside a continuations file: ``X.jsonl`` -> ``X.arms.jsonl``."""
    return out.with_name(out.name.removesuffix(".jsonl") + ".arms.jsonl")


def write_results(results: Sequence[ArmResult], out: Path, log: Path | None = None) -> tuple[int, Path]:
    """Write the finished arms to ``out`` (canonical JSONL) and every arm to the log; return (written, log path)."""
    out = Path(out)
    log = Path(log) if log else arm_log_path(out)
    written = rundir.write_jsonl(out, (r.to_trajectory() for r in results if r.finished))
    rundir.write_jsonl(log, (r.log_row() for r in results))
    return written, log


def load_tickets(source: Path) -> list[Ticket]:
    """Tickets from a tickets file or a run directory's ``tickets.jsonl``."""
    source = Path(source)
    if source.is_dir():
        return list(RunDir(source).rows(rundir.TICKETS, Ticket))
    return list(rundir.read_jsonl(source, Ticket))
