"""Routing: each majority issue gets a repair route (docs/contracts.md, "Repair routes"); one issue drives the repair.

Per issue:
- ``environment`` -> ``environment`` (own ledger, rerun in a fresh environment);
- ``capability`` -> ``rewrite-restart``;
- an issue with no turn -> ``pending`` (no checkpoint can be chosen);
- a wording tag, or a ``code`` issue whose turn made a failed call -> the offline editor decides:
  ``offline-edit`` when the call is side-effect-free and every dependency check passes, back to
  ``online-guided`` when state or returned values (or a decision) depend on it, ``pending`` when unknown;
- other ``code`` issues -> ``online-guided``; ``semantic`` -> ``online-regenerate``.

Per trajectory: the *blocking* issue (one needing real execution) with the earliest checkpoint drives the
repair (ties: the wider restart first). Issues after its checkpoint are ``moot``: the regenerated suffix
replaces them and the continuation is judged again. With no blocking issue, pending issues make the
trajectory ``pending``; otherwise all offline edits are applied, latest turn first (so the turns of the
earlier ones stay valid), and the edited trajectory is validated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge.model import Trajectory
from judge.repair.editor import WORDING_TAGS, EditResult, failed_calls_at, offline_edit
from judge.repair.textref import Detectors, get_detectors
from judge.schema import Cluster, RepairRow, Route, ScoredIssue, ScoreRow

BLOCKING: tuple[Route, ...] = ("rewrite-restart", "environment", "online-guided", "online-regenerate")


@dataclass
class IssueRoute:
    """The route of one majority issue, with the editor's analysis when it ran."""

    issue: ScoredIssue
    cluster: Cluster | None
    route: Route
    reason: str
    edit: EditResult | None = None

    @property
    def checkpoint(self) -> int:
        """The last turn kept by this route's repair (0 = from the start)."""
        if self.route == "rewrite-restart" or self.issue.turn is None:
            return 0
        return max(0, self.issue.turn - 1)

    def summary(self, role: str) -> dict[str, Any]:
        return {"cluster": self.issue.cluster, "turn": self.issue.turn, "category": self.issue.category,
                "tag": self.issue.tag, "route": self.route, "reason": self.reason, "role": role}


@dataclass
class TrajectoryRepair:
    """Everything routing decided for one trajectory."""

    trajectory: Trajectory
    row: RepairRow
    driver: IssueRoute | None
    routes: list[IssueRoute]
    edits: list[EditResult] = field(default_factory=list)
    edited: Trajectory | None = None


def majority_issues(score: ScoreRow) -> list[ScoredIssue]:
    """Agent issues and environment-ledger issues of a score row, each cluster once. An environment fault the agent
    recovered from within the trajectory is recorded in the ledger but needs no rerun, so it is not routed."""
    seen: set[str] = set()
    issues: list[ScoredIssue] = []
    for issue in [*score.issues, *score.environment]:
        if issue.category == "environment" and issue.recovered is True:
            continue
        if issue.cluster not in seen:
            seen.add(issue.cluster)
            issues.append(issue)
    return issues


# Offline edits a trajectory may need before it goes online instead. Each edit re-checks the whole edited
# trajectory, and the edits are applied one after another, so a trajectory with hundreds of failed calls cost
# minutes (300 failed calls: 146 s); and the design's offline edit is the local removal of a failed call, not a
# rewrite of most of a trajectory (issue 28 item 6).
MAX_OFFLINE_EDITS = 8


def needs_offline_edit(trajectory: Trajectory, issue: ScoredIssue) -> bool:
    """Whether :func:`route_issue` would try an offline edit for ``issue`` (pure, cheap)."""
    if issue.category in ("environment", "capability") or issue.turn is None or not 1 <= issue.turn <= trajectory.turn_count:
        return False
    return issue.tag in WORDING_TAGS or (issue.category == "code" and bool(failed_calls_at(trajectory, issue.turn)))


def route_issue(trajectory: Trajectory, issue: ScoredIssue, cluster: Cluster | None, detectors: Detectors | None = None,
                *, too_many_edits: int = 0) -> IssueRoute:
    """The route of one issue (see the module docstring). ``too_many_edits``: how many of the trajectory's issues
    would need an offline edit, when that is more than :data:`MAX_OFFLINE_EDITS` (then none is tried: the
    trajectory continues online from its issue)."""
    if issue.category == "environment":
        return IssueRoute(issue, cluster, "environment", "environment fault: recorded in the ledger, rerun in a fresh environment")
    if issue.category == "capability":
        return IssueRoute(issue, cluster, "rewrite-restart",
                          "capability limit: restart from an equivalent rewrite that keeps every explicit requirement")
    if issue.turn is None:
        return IssueRoute(issue, cluster, "pending", "the issue is not localised to a turn, so no checkpoint can be chosen")
    if not 1 <= issue.turn <= trajectory.turn_count:
        return IssueRoute(issue, cluster, "pending", f"T{issue.turn} is not a turn of this trajectory ({trajectory.turn_count} turns)")
    if too_many_edits and needs_offline_edit(trajectory, issue):
        many = f"{too_many_edits} issues would each need an offline edit, more than {MAX_OFFLINE_EDITS}: "
        if issue.category == "code":
            return IssueRoute(issue, cluster, "online-guided", f"T{issue.turn}: {many}restore the checkpoint, add teacher "
                              "guidance, continue")
        return IssueRoute(issue, cluster, "online-regenerate", f"T{issue.turn}: {many}keep the original query and "
                          "regenerate the suffix from the state before it")
    if issue.tag in WORDING_TAGS or (issue.category == "code" and failed_calls_at(trajectory, issue.turn)):
        edit = offline_edit(trajectory, cluster or issue, detectors=detectors or get_detectors())
        return IssueRoute(issue, cluster, edit.route, edit.reason, edit)
    if issue.category == "code":
        return IssueRoute(issue, cluster, "online-guided", f"T{issue.turn}: code/argument error with no failed call to delete; "
                          "restore the checkpoint, add teacher guidance, continue")
    return IssueRoute(issue, cluster, "online-regenerate",
                      f"T{issue.turn}: semantic error; keep the original query and regenerate the suffix from the state before it")


def _order(route: IssueRoute) -> tuple[int, int]:
    return (route.checkpoint, BLOCKING.index(route.route))


def plan_repair(
    trajectory: Trajectory, score: ScoreRow, clusters: list[Cluster] | None = None, *, detectors: Detectors | None = None
) -> TrajectoryRepair | None:
    """Route every majority issue of one trajectory and decide its repair. None when it has no majority issue."""
    issues = majority_issues(score)
    if not issues:
        return None
    by_id = {c.cluster: c for c in clusters or [] if c.trajectory_id == trajectory.id}
    editable = sum(needs_offline_edit(trajectory, i) for i in issues)
    too_many = editable if editable > MAX_OFFLINE_EDITS else 0
    routes = [route_issue(trajectory, i, by_id.get(i.cluster), detectors, too_many_edits=too_many) for i in issues]
    blocking = sorted((r for r in routes if r.route in BLOCKING), key=_order)
    if blocking:
        return _online(trajectory, routes, blocking[0])
    pending = [r for r in routes if r.route == "pending"]
    if pending:
        row = RepairRow(
            trajectory_id=trajectory.id, route="pending", cluster=pending[0].issue.cluster,
            reason="; ".join(f"{r.issue.cluster}: {r.reason}" for r in pending),
            extra={"issues": [r.summary("pending" if r.route == "pending" else "edit-held") for r in routes]},
        )
        return TrajectoryRepair(trajectory, row, None, routes, edits=[r.edit for r in routes if r.edit])
    return _offline(trajectory, routes, detectors)


def _online(trajectory: Trajectory, routes: list[IssueRoute], driver: IssueRoute) -> TrajectoryRepair:
    checkpoint = driver.checkpoint
    roles: list[dict[str, Any]] = []
    moot: list[str] = []
    for route in routes:
        if route is driver:
            role = "driver"
        elif route.issue.turn is None or route.issue.turn > checkpoint or driver.route == "rewrite-restart":
            role = "moot"
            moot.append(route.issue.cluster)
        else:
            role = "prefix"  # stays in the restored prefix; listed so nobody assumes it was fixed
        roles.append(route.summary(role))
    row = RepairRow(
        trajectory_id=trajectory.id, route=driver.route, reason=driver.reason, checkpoint_turn=checkpoint,
        cluster=driver.issue.cluster, moot=moot, extra={"issues": roles},
    )
    return TrajectoryRepair(trajectory, row, driver, routes, edits=[r.edit for r in routes if r.edit])


def _offline(trajectory: Trajectory, routes: list[IssueRoute], detectors: Detectors | None) -> TrajectoryRepair:
    """Apply every offline edit, latest turn first, each re-checked on the trajectory as it is by then."""
    current = trajectory
    applied: list[EditResult] = []
    for route in sorted(routes, key=lambda r: -(r.issue.turn or 0)):
        edit = route.edit if current is trajectory and route.edit is not None else offline_edit(
            current, route.cluster or route.issue, detectors=detectors or get_detectors())
        edit.trajectory_id = trajectory.id
        applied.append(edit)
        if edit.status != "edited" or edit.edited is None:
            row = RepairRow(
                trajectory_id=trajectory.id, route=edit.route, cluster=route.issue.cluster,
                reason=f"after the other edits: {edit.reason}", checkpoint_turn=max(0, (route.issue.turn or 1) - 1) if edit.route != "pending" else None,
                extra={"issues": [r.summary("edit") for r in routes]},
            )
            return TrajectoryRepair(trajectory, row, route if edit.route != "pending" else None, routes, edits=applied)
        current = edit.edited
    first = min(routes, key=lambda r: r.issue.turn or 0)
    row = RepairRow(
        trajectory_id=trajectory.id, route="offline-edit", cluster=first.issue.cluster,
        reason="; ".join(e.reason for e in applied),
        extra={"issues": [r.summary("edit") for r in routes], "edited_id": current.id,
               "removed_calls": sorted({c for e in applied for c in e.removed_calls})},
    )
    return TrajectoryRepair(trajectory, row, None, routes, edits=applied, edited=current)


def route_trajectory(trajectory: Trajectory, score_row: ScoreRow, clusters: list[Cluster] | None = None) -> RepairRow | None:
    """The ``repairs.jsonl`` row of one trajectory (None when it has no majority issue). Offline, no LLM."""
    plan = plan_repair(trajectory, score_row, clusters)
    return plan.row if plan else None


def unfixable(trajectory_id: str, error: Exception) -> RepairRow:
    """A row for a trajectory the fixer could not process: pending, with the error, never dropped."""
    return RepairRow(trajectory_id=trajectory_id, route="pending", reason=f"repair failed: {type(error).__name__}: {error}")


__all__ = ["IssueRoute", "TrajectoryRepair", "majority_issues", "plan_repair", "route_issue", "route_trajectory"]
