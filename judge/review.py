"""Human review (docs/review.md): decisions in ``overrides.jsonl``, applied to score rows as a pure step.

A reviewer confirms or rejects an issue cluster, adds an issue the panel missed, or decides the release. Each
decision is one :class:`judge.schema.OverrideRow`, appended; nothing is ever rewritten. :func:`apply_review`
turns the machine's score row and the decisions into the human-adjusted row, keeping the machine's result beside
it (``ScoreRow.review``). Precedence, per trajectory:

1. **The last row per target wins.** A target is a cluster id (confirm/reject), an added issue's id (``h1``, ...)
   or ``release``. An ``undo`` row clears its target: the machine's decision stands there, and an earlier row for
   it never resurfaces. Rows are ordered as the file holds them (clocks of two reviewers may disagree).
2. **A stale decision is flagged, never applied.** A decision records what the reviewer saw (:class:`ReviewedState`):
   the trajectory's content hash and a fingerprint of its clusters; a release decision also the machine's release
   decision. When the run now shows something else (the trajectory changed, it was judged again or re-clustered,
   a rubric change flipped the machine's release), the decision is listed with the reason and not applied.
3. **Issue decisions change the counted issue set, then the rubric scores it** as it scores the panel's: a
   rejected cluster no longer counts (majority or minority), a confirmed minority cluster counts as a majority
   issue, an added issue counts as a majority issue with 0 votes. The environment ledger and its gate check follow
   the adjusted set; every other gate check stays the machine's (``review.machine.failed_checks`` keeps its list).
   Without a quorum of valid passes there is no score to adjust: it stays unscored.
4. **A release decision wins over the score and the gate.** Overriding the machine's release needs a reason; a
   release over failed gate checks lists them (``ReleaseDecision.over_failed_checks``), and the report shows
   them prominently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from judge import rundir
from judge.jsonenc import compact_json
from judge.model import Trajectory
from judge.rundir import RunDir
from judge.schema import (
    CATEGORIES,
    RELEASE_TARGET,
    SEVERITIES,
    Cluster,
    HumanReview,
    Issue,
    MachineResult,
    OverrideRow,
    ReleaseDecision,
    ReviewDecision,
    ReviewedState,
    ReviewKind,
    ScoreRow,
    Verdict,
)
from judge.scoring import Rubric, score_trajectory

ADDED_PREFIX = "h"  # ids of issues reviewers add: h1, h2, ... (clusters are c1, c2, ...)


# --- what a reviewer saw ---------------------------------------------------------------------------


def clusters_fingerprint(clusters: Sequence[Cluster]) -> str:
    """A hash of a trajectory's clusters as a reviewer sees them: ids, majority, votes, the merged issue, and each
    member (pass, issue index and its words). Judging again or re-clustering changes it; a rescore with the same
    verdicts and settings does not."""
    shown = [
        [c.cluster, c.majority, c.votes, c.turn, c.category, c.severity, c.description,
         sorted([m.pass_key, m.issue_index, m.issue.turn, m.issue.category, m.issue.severity, m.issue.description]
                for m in c.members)]
        for c in sorted(clusters, key=lambda c: c.cluster)
    ]
    text = compact_json(shown)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def machine_result(row: ScoreRow, clusters: Sequence[Cluster]) -> MachineResult:
    """The machine's result of a score row: its own, or the one its review kept beside the human-adjusted row."""
    if row.review is not None:
        return row.review.machine
    return MachineResult(score=row.score, reason=row.reason, release=row.release, failed_checks=list(row.failed_checks),
                         majority=[c.cluster for c in clusters if c.majority])


def reviewed_state(trajectory: Trajectory, clusters: Sequence[Cluster], machine: MachineResult) -> ReviewedState:
    """What a reviewer sees of a trajectory now (recorded in each decision)."""
    return ReviewedState(trajectory_hash=trajectory.content_hash(), clusters_hash=clusters_fingerprint(clusters),
                         clusters=[c.cluster for c in clusters], score=machine.score, release=machine.release)


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --- precedence ------------------------------------------------------------------------------------


def latest_decisions(rows: Iterable[OverrideRow]) -> dict[str, OverrideRow]:
    """Target -> the last row naming it, in file order (an ``undo`` row included: it clears the target)."""
    latest: dict[str, OverrideRow] = {}
    for row in rows:
        latest.pop(row.target, None)  # re-insert: the dict's order is the order of the latest decisions
        latest[row.target] = row
    return latest


def stale_reason(row: OverrideRow, seen_now: ReviewedState, clusters: dict[str, Cluster]) -> str | None:
    """Why ``row`` no longer applies to the run as it is (``seen_now``), or None when it does (pure)."""
    if row.seen.trajectory_hash != seen_now.trajectory_hash:
        return "the trajectory changed since the review"
    if row.seen.clusters_hash != seen_now.clusters_hash:
        return "its issues changed since the review (judged again or re-clustered)"
    if row.kind in ("confirm-issue", "reject-issue") and row.target not in clusters:
        return f"the trajectory has no cluster {row.target}"
    if row.kind == "release-override" and row.seen.release != seen_now.release:
        was, now = ("released" if v else "held" for v in (row.seen.release, seen_now.release))
        return f"the machine's release decision changed since the review ({was} then, {now} now)"
    return None


def human_cluster(trajectory_id: str, target: str, issue: Issue, panel_size: int) -> Cluster:
    """An added issue as a cluster the rubric counts: a majority issue with no panel vote."""
    return Cluster(trajectory_id=trajectory_id, cluster=target, members=[], votes=0, panel_size=panel_size,
                   majority=True, turn=issue.turn, category=issue.category, severity=issue.severity, tag=issue.tag,
                   recovered=issue.recovered, description=issue.description)


def apply_review(
    machine: ScoreRow,
    trajectory: Trajectory,
    verdicts: list[Verdict],
    clusters: list[Cluster],
    rubric: Rubric,
    *,
    panel_size: int,
    failed_checks: list[str],
    overrides: Sequence[OverrideRow],
) -> ScoreRow:
    """The human-adjusted score row of one trajectory (pure; precedence in the module docstring).

    ``machine`` is :func:`judge.scoring.score_trajectory`'s row for the same inputs, ``failed_checks`` the gate's
    checks it was given. Without a decision to show (none, or every target undone) ``machine`` is returned as is.
    """
    latest = [row for row in latest_decisions(overrides).values() if row.kind != "undo"]
    if not latest:
        return machine
    by_id = {c.cluster: c for c in clusters}
    result = MachineResult(score=machine.score, reason=machine.reason, release=machine.release,
                           failed_checks=list(machine.failed_checks), majority=[c.cluster for c in clusters if c.majority])
    seen_now = reviewed_state(trajectory, clusters, result)
    decisions: list[ReviewDecision] = []
    applied: dict[str, OverrideRow] = {}
    for row in latest:
        why = stale_reason(row, seen_now, by_id)
        decisions.append(ReviewDecision(kind=row.kind, target=row.target, reviewer=row.reviewer, at=row.at,
                                        reason=row.reason, stale=why))
        if why is None:
            applied[row.target] = row
    review = HumanReview(machine=result, decisions=decisions,
                         reviewers=sorted({row.reviewer for row in applied.values()}))

    kept: list[Cluster] = []
    for cluster in clusters:
        decided = applied.get(cluster.cluster)
        kind = decided.kind if decided is not None else None
        if kind == "reject-issue":
            (review.rejected if cluster.majority else review.rejected_minority).append(cluster.cluster)
            continue
        if kind == "confirm-issue":
            (review.confirmed if cluster.majority else review.confirmed_minority).append(cluster.cluster)
            cluster = cluster.model_copy(update={"majority": True})
        kept.append(cluster)
    for target, row in applied.items():
        if row.kind == "add-issue" and row.issue is not None:
            review.added.append(target)
            kept.append(human_cluster(trajectory.id, target, row.issue, panel_size))
    if review.rejected or review.rejected_minority or review.confirmed_minority or review.added:
        adjusted = score_trajectory(trajectory, verdicts, kept, rubric, panel_size=panel_size, failed_checks=failed_checks)
    else:
        adjusted = machine.model_copy(deep=True)

    release = applied.get(RELEASE_TARGET)
    if release is not None and release.release is not None:
        review.release = ReleaseDecision(release=release.release, reviewer=release.reviewer, at=release.at,
                                         reason=release.reason,
                                         over_failed_checks=list(adjusted.failed_checks) if release.release else [],
                                         over_score=release.release and adjusted.score not in rubric.release.scores)
        adjusted.release = release.release
    adjusted.reason = adjusted.reason + describe_review(review, adjusted.score, machine.score)
    adjusted.review = review
    return adjusted


def describe_review(review: HumanReview, score: int | None, machine_score: int | None) -> str:
    """The suffix of a human-adjusted row's reason: what reviewers changed, stale decisions, the machine's score."""
    parts = []
    for label, ids in (("rejected", review.rejected + review.rejected_minority), ("confirmed", review.confirmed + review.confirmed_minority),
                       ("added", review.added)):
        if ids:
            parts.append(f"{label} {', '.join(ids)}")
    decision = review.release
    if decision is not None:
        verb = "released" if decision.release else "held"
        over = f" over failed checks {', '.join(decision.over_failed_checks)}" if decision.over_failed_checks else ""
        if decision.over_score:
            over += f"{' and' if over else ' over'} a score the rubric does not release"
        parts.append(f"{verb} by {decision.reviewer}{over}" + (f" ({decision.reason})" if decision.reason else ""))
    text = ""
    if parts:
        text += f"; human review ({', '.join(review.reviewers)}): " + "; ".join(parts)
    if score != machine_score:
        text += f"; machine score {machine_score if machine_score is not None else 'none'}"
    if review.stale:
        text += f"; {len(review.stale)} stale human decision(s) not applied"
    return text


def score_reviewed(
    trajectory: Trajectory,
    verdicts: list[Verdict],
    clusters: list[Cluster],
    rubric: Rubric,
    *,
    panel_size: int,
    failed_checks: list[str],
    overrides: Sequence[OverrideRow] = (),
) -> ScoreRow:
    """:func:`judge.scoring.score_trajectory`, then :func:`apply_review` with the trajectory's decisions."""
    machine = score_trajectory(trajectory, verdicts, clusters, rubric, panel_size=panel_size, failed_checks=failed_checks)
    return apply_review(machine, trajectory, verdicts, clusters, rubric, panel_size=panel_size,
                        failed_checks=failed_checks, overrides=overrides)


# --- writing decisions -----------------------------------------------------------------------------


class ReviewError(ValueError):
    """A decision that cannot be recorded (an unknown trajectory or cluster, a missing reason): says why."""


@dataclass
class ReviewItem:
    """One trajectory as a reviewer sees it: the machine's clusters and result, and the decisions so far."""

    trajectory: Trajectory
    clusters: list[Cluster]
    score: ScoreRow | None
    overrides: list[OverrideRow] = field(default_factory=list)

    @property
    def machine(self) -> MachineResult:
        if self.score is None:
            return MachineResult(score=None, reason="not scored yet", release=False,
                                 majority=[c.cluster for c in self.clusters if c.majority])
        return machine_result(self.score, self.clusters)

    def seen(self) -> ReviewedState:
        return reviewed_state(self.trajectory, self.clusters, self.machine)

    def cluster(self, cluster_id: str) -> Cluster:
        for cluster in self.clusters:
            if cluster.cluster == cluster_id:
                return cluster
        known = ", ".join(c.cluster for c in self.clusters) or "none"
        raise ReviewError(f"{self.trajectory.id}: no cluster {cluster_id!r} (its clusters: {known})")

    def latest(self) -> dict[str, OverrideRow]:
        return latest_decisions(self.overrides)

    def stale(self) -> list[tuple[OverrideRow, str]]:
        """The latest decisions that no longer apply, with why."""
        seen = self.seen()
        by_id = {c.cluster: c for c in self.clusters}
        found = []
        for row in self.latest().values():
            why = stale_reason(row, seen, by_id) if row.kind != "undo" else None
            if why is not None:
                found.append((row, why))
        return found

    def next_added_id(self) -> str:
        """The next free id for an added issue (never reused, undone ones included)."""
        numbers = [int(row.target[len(ADDED_PREFIX):]) for row in self.overrides
                   if row.kind == "add-issue" and row.target[len(ADDED_PREFIX):].isdigit()]
        return f"{ADDED_PREFIX}{max(numbers, default=0) + 1}"

    def decide(self, kind: ReviewKind, *, reviewer: str, target: str | None = None, issue: Issue | None = None,
               release: bool | None = None, reason: str | None = None, at: str | None = None) -> OverrideRow:
        """A new decision on this trajectory, checked against what it shows now; also kept in ``overrides``."""
        if kind in ("confirm-issue", "reject-issue"):
            if target is None:
                raise ReviewError(f"{kind} needs a cluster id")
            self.cluster(target)
        elif kind == "add-issue":
            target = target or self.next_added_id()
            if issue is not None:
                check_turn(self.trajectory, issue.turn)
        elif kind == "release-override":
            target = RELEASE_TARGET
        elif kind == "undo" and (target is None or target not in self.latest()):
            decided = ", ".join(self.latest()) or "none"
            raise ReviewError(f"{self.trajectory.id}: nothing to undo for {target!r} (decided targets: {decided})")
        reason = reason.strip() if reason and reason.strip() else None
        try:
            row = OverrideRow(trajectory_id=self.trajectory.id, kind=kind, target=target or "", issue=issue,
                              release=release, reason=reason, reviewer=reviewer, at=at or now_iso(), seen=self.seen())
        except ValueError as error:
            raise ReviewError(f"{self.trajectory.id}: {_first_error(error)}") from error
        self.overrides.append(row)
        return row


def _first_error(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            message = str(found[0].get("msg", error)).removeprefix("Value error, ")
            where = ".".join(str(p) for p in found[0].get("loc", ()))
            return f"{where}: {message}" if where else message
    return str(error)


def check_turn(trajectory: Trajectory, turn: int | None) -> None:
    if turn is not None and not 1 <= turn <= trajectory.turn_count:
        raise ReviewError(f"{trajectory.id}: no turn T{turn} (it has T1-T{trajectory.turn_count})")


def review_items(run: RunDir, ids: Iterable[str] | None = None) -> Iterator[ReviewItem]:
    """The trajectories of a scored run as reviewers see them, in input order (only ``ids`` when given)."""
    wanted = set(ids) if ids is not None else None
    clusters = run.clusters_by_trajectory()
    scores = run.scores_by_trajectory() if run.has(rundir.SCORES) else {}  # read on demand: flat at any size
    overrides = run.overrides_by_trajectory()
    for trajectory in run.trajectories():
        if wanted is not None and trajectory.id not in wanted:
            continue
        yield ReviewItem(trajectory, clusters.get(trajectory.id, []), scores.get(trajectory.id),
                         list(overrides.get(trajectory.id, [])))


# --- the command line's compact forms --------------------------------------------------------------


def split_id(spec: str, known: Iterable[str]) -> tuple[str, str]:
    """``ID:REST`` -> (ID, REST), where ID is the longest known trajectory id the spec starts with (ids may hold
    colons). Raises :class:`ReviewError` naming the spec when none matches."""
    matches = [tid for tid in known if spec.startswith(tid + ":")]
    if not matches:
        head = spec.split(":", 1)[0]
        raise ReviewError(f"{spec!r}: no trajectory of the run is named {head!r} (expected ID:...)")
    tid = max(matches, key=len)
    return tid, spec[len(tid) + 1:]


def parse_added_issue(text: str, *, evidence: str = "", tag: str | None = None) -> Issue:
    """``TURN:CATEGORY:SEVERITY:DESCRIPTION`` (TURN a number, or ``-`` when not localised; the description may hold
    colons) -> an :class:`Issue`."""
    parts = text.split(":", 3)
    if len(parts) != 4 or not parts[3].strip():
        raise ReviewError(f"{text!r}: expected TURN:CATEGORY:SEVERITY:DESCRIPTION, e.g. 3:semantic:severe:claims the tests pass")
    turn_text, category, severity, description = (p.strip() for p in parts)
    turn_text = turn_text.upper().removeprefix("T")
    if turn_text in ("", "-", "?"):
        turn = None
    elif turn_text.isdigit():
        turn = int(turn_text)
    else:
        raise ReviewError(f"{text!r}: the turn must be a number (T3 or 3) or '-', not {parts[0]!r}")
    if category not in CATEGORIES:
        raise ReviewError(f"{text!r}: category must be one of {', '.join(CATEGORIES)}, not {category!r}")
    if severity not in SEVERITIES:
        raise ReviewError(f"{text!r}: severity must be one of {', '.join(SEVERITIES)}, not {severity!r}")
    return Issue(turn=turn, category=category, severity=severity, description=description,
                 evidence=evidence, tag=tag or None)


__all__ = [
    "ReviewError", "ReviewItem", "apply_review", "clusters_fingerprint", "latest_decisions", "machine_result",
    "parse_added_issue", "review_items", "reviewed_state", "score_reviewed", "split_id", "stale_reason",
]
