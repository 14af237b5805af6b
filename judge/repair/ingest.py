"""``judge repair ingest``: continuations come back as trajectories linked to their source and branch turn.

A harness returns each continuation in any importable format (``judge.importers``). The link to the ticket
comes from the record's metadata (``source_id``, ``branch_turn``, ``arm``, ``target_issue``, docs/contracts.md) or,
when the harness only kept ``ticket_id``, from the tickets file. A record that cannot be linked is rejected
with its file and line, never guessed; the rest of the batch goes on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from judge import rundir
from judge.importers import iter_records
from judge.model import Trajectory
from judge.repair.tickets import Ticket
from judge.schema import Reject


def ingest_continuations(
    paths: Iterable[Path],
    *,
    tickets: Iterable[Ticket] | Path | None = None,
    rejects: list[Reject] | None = None,
) -> Iterator[Trajectory]:
    """Yield each continuation with ``source_id``, ``branch_turn``, ``arm`` and ``target_issue`` set (and, from
    its ticket, the teacher's ``teacher_usage`` / ``teacher_cost_usd`` in ``extra`` when the record lacks them).

    Unlinkable records (and records the importers reject) are appended to ``rejects`` when given.
    """
    by_id: dict[str, Ticket] = {}
    if isinstance(tickets, Path):
        by_id = {t.ticket_id: t for t in rundir.read_jsonl(tickets, Ticket)}
    elif tickets is not None:
        by_id = {t.ticket_id: t for t in tickets}
    for item in iter_records([Path(p) for p in paths]):
        if isinstance(item, Reject):
            if rejects is not None:
                rejects.append(item)
            continue
        meta = item.metadata
        ticket = by_id.get(str(meta.extra.get("ticket_id", "")))
        update = {}
        if ticket is not None:
            update = {"source_id": meta.source_id or ticket.trajectory_id,
                      "branch_turn": meta.branch_turn if meta.branch_turn is not None else ticket.branch_turn,
                      "arm": meta.arm or ticket.arm, "target_issue": meta.target_issue or ticket.target_issue.as_text()}
        linked = meta.model_copy(update=update)
        if ticket is not None and "teacher_usage" not in linked.extra:
            # judge compare counts the teacher's cost of each arm (a harness may not have copied it).
            linked.extra = {**linked.extra, "teacher_usage": ticket.usage.model_dump(), "teacher_cost_usd": ticket.cost_usd}
        if not linked.source_id or linked.branch_turn is None:
            if rejects is not None:
                rejects.append(Reject(source_file=meta.source_file or "?", line=meta.source_line, format=meta.source_format,
                                      reason=f"continuation {item.id!r} names no source_id/branch_turn and no known ticket_id"))
            continue
        query_id = ticket.query_id if ticket is not None else item.query_id
        if ticket is not None and item.query != ticket.query:
            # Judging stays anchored to the original query, even when the agent got a rewrite.
            linked.extra = {**linked.extra, "agent_query": item.query}
            item = item.model_copy(update={"query": ticket.query})
        yield item.model_copy(update={"metadata": linked, "query_id": query_id})
