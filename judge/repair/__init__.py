"""The fixer: route majority issues to repair paths, write continuation tickets, edit offline along dependencies.

Public API:
- :func:`route_run` / :func:`repair_run`: a whole scored run directory -> repairs, tickets, edits;
- :func:`route_trajectory`: the repairs.jsonl row of one trajectory;
- :func:`make_tickets`: continuation tickets of one trajectory (docs/continuation-tickets.md);
- :func:`offline_edit`: dependency-checked local edit of one issue, with validators and a diff;
- :func:`ingest_continuations`: continuations back as trajectories linked to source and branch turn.
"""

from judge.repair.editor import EditResult, offline_edit
from judge.repair.ingest import ingest_continuations
from judge.repair.routing import plan_repair, route_issue, route_trajectory
from judge.repair.run import RepairOutputs, make_tickets, repair_run, route_run
from judge.repair.tickets import Ticket

__all__ = [
    "EditResult", "RepairOutputs", "Ticket", "ingest_continuations", "make_tickets",
    "offline_edit", "plan_repair", "repair_run", "route_issue", "route_run", "route_trajectory",
]
