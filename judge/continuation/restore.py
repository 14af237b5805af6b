"""Restoring a ticket's checkpoint: the conversation, and the environment in a fresh working copy.

Environment (docs/continuation-tickets.md, "How a harness runs a ticket"): the working copy starts from
either a *workdir* (the state before the prefix; the prefix's state-changing calls are then replayed in it,
in order, through the same dispatcher the agent's calls use) or a *snapshot* (the state at the checkpoint,
used as is), or from an empty directory. A replayed write whose outcome differs from its recorded receipt
(success vs failure) stops the arm: the restored state is not the one the conversation describes.

Writes of unknown outcome (``unknown_writes``) stop the arm unless the ticket asks for a fresh environment:
then they are replayed like the others, and a snapshot (whose state is what is uncertain) is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from judge.continuation.dispatch import ToolDispatcher, ToolEvent, changes_state
from judge.model import Message, Trajectory, TrajectoryMetadata
from judge.repair.calls import CallSite, call_sites, receipt_failed
from judge.repair.tickets import Ticket

StopReason = Literal[
    "completed",                # the agent answered without calling a tool
    "budget-exhausted",         # the token or turn budget ran out first
    "not-ready",                # the ticket's status is not `ready` (e.g. needs-rewrite)
    "unknown-write",            # the prefix has writes of unknown outcome and the ticket does not ask for a fresh environment
    "environment-unavailable",  # the source directory is missing, or a snapshot where a fresh environment is needed
    "replay-diverged",          # a replayed prefix write came out differently from its receipt
    "unsupported-tool",         # a call no sandbox tool or mapping can serve
    "agent-error",              # the agent gave no turn (provider failure, script ended, no usage under a token budget)
    "max-cost",                 # the run's --max-cost cap stopped the agent's next call (a rerun with a larger cap goes on)
    "harness-error",            # the harness itself failed (a bug or the machine): the arm is recorded, the batch goes on
]


@dataclass(frozen=True)
class Stop:
    """Why an arm ended, in a word and a sentence."""

    reason: StopReason
    detail: str


@dataclass(frozen=True)
class EnvironmentSource:
    """Where an arm's working copy comes from.

    ``workdir``: the state before the prefix (copied, then the prefix's writes are replayed); ``snapshot``: the
    state at the checkpoint (copied as is); neither: an empty directory plus the replayed writes.
    ``path_alias``: the directory the original run worked in, read as the working copy in Read/Write/Edit paths.
    """

    workdir: Path | None = None
    snapshot: Path | None = None
    path_alias: str | None = None

    @property
    def directory(self) -> Path | None:
        return self.snapshot or self.workdir


@dataclass
class Environments:
    """The source of each ticket's environment: by ticket id, else by trajectory id, else what the ticket's
    ``metadata`` names (``workdir`` / ``snapshot``), else ``default``."""

    default: EnvironmentSource = field(default_factory=EnvironmentSource)
    by_id: dict[str, EnvironmentSource] = field(default_factory=dict)

    def for_ticket(self, ticket: Ticket) -> EnvironmentSource:
        for key in (ticket.ticket_id, ticket.trajectory_id):
            if key in self.by_id:
                return self.by_id[key]
        workdir, snapshot = ticket.metadata.get("workdir"), ticket.metadata.get("snapshot")
        if workdir or snapshot:
            return EnvironmentSource(workdir=Path(workdir) if workdir else None, snapshot=Path(snapshot) if snapshot else None,
                                     path_alias=self.default.path_alias)
        return self.default


def prefix_sites(ticket: Ticket) -> list[CallSite]:
    """The prefix's tool calls in order, each with its recorded receipt."""
    prefix = Trajectory(id=ticket.trajectory_id, query=ticket.query, query_id=ticket.query_id, messages=ticket.prefix,
                        metadata=TrajectoryMetadata(source_format="ticket"))
    return call_sites(prefix)


def restored_messages(ticket: Ticket) -> list[Message]:
    """The conversation at the checkpoint: the prefix; the agent's query on a rewrite restart; the guidance as a
    user message on the guided and rewrite arms."""
    messages = [m.model_copy(deep=True) for m in ticket.prefix]
    if ticket.route == "rewrite-restart":
        messages.append(Message(role="user", content=ticket.agent_query or ticket.query, turn=0))
    if ticket.arm in ("guided", "rewrite") and ticket.guidance:
        messages.append(Message(role="user", content=ticket.guidance, turn=ticket.checkpoint_turn))
    return messages


def check_ticket(ticket: Ticket, source: EnvironmentSource, sites: list[CallSite]) -> Stop | None:
    """Why this ticket cannot be restored from ``source``, if it cannot; None when it can."""
    if ticket.status != "ready":
        return Stop("not-ready", f"ticket status is {ticket.status!r}: not run")
    if ticket.unknown_writes and not ticket.fresh_environment:
        listed = "; ".join(f"T{w.turn} {w.name} ({w.call_id}): {w.reason}" for w in ticket.unknown_writes)
        return Stop("unknown-write", f"the prefix has writes of unknown outcome and the ticket does not ask for a fresh "
                                     f"environment, so the state at the checkpoint is unknown: {listed}")
    directory = source.directory
    if directory is not None and not directory.is_dir():
        return Stop("environment-unavailable", f"{directory} is not a directory")
    if source.snapshot is not None and ticket.fresh_environment and any(changes_state(s) for s in sites):
        return Stop("environment-unavailable", "the ticket asks for a fresh environment, so a snapshot of the checkpoint "
                                               "cannot be trusted: give the state before the prefix (a workdir) instead")
    return None


async def replay_prefix(ticket: Ticket, source: EnvironmentSource, dispatcher: ToolDispatcher,
                        sites: list[CallSite]) -> tuple[list[ToolEvent], Stop | None]:
    """Replay the prefix's state-changing calls in the working copy (nothing when it is a snapshot)."""
    events: list[ToolEvent] = []
    if source.snapshot is not None:
        return events, None
    for site in sites:
        if not changes_state(site):
            continue
        done = await dispatcher.dispatch(site.call, site.turn, serve=False)
        events.append(done.event)
        where = f"replaying T{site.turn} {site.call.name} ({site.call.id})"
        if done.receipt is None:
            return events, Stop("unsupported-tool", f"{where}: {done.event.detail}")
        if site.receipt is not None and receipt_failed(site.receipt) != receipt_failed(done.receipt):
            recorded = "failed" if receipt_failed(site.receipt) else "succeeded"
            now = "failed" if receipt_failed(done.receipt) else "succeeded"
            return events, Stop("replay-diverged", f"{where}: it {recorded} in the log but {now} here: "
                                                   f"{done.receipt.content[:300]}")
    return events, None
