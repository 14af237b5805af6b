"""The batch summary (``summary.json``): every figure the reports show, computed from the stored run only.

The figures are tallied while the run streams past (:mod:`judge.report.stream`), one trajectory with its
rows at a time, so a batch of any size is summarised without holding it: :class:`SummaryTally` keeps running
counts, and each section's tally is also used by the pure functions the tests call on lists of rows.
Denominators are honest: a trajectory without a score row, or without a quorum of valid passes, counts as
``unscored`` and stays in every share; a failed provider attempt counts in the cost.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from judge import __version__, rundir
from judge.agreement import AgreementTally, HumanAgreementTally
from judge.model import Trajectory
from judge.outcome import OUTCOME_STATUSES, TaskOutcome
from judge.report.stream import Entry
from judge.rundir import BadRow, PanelMember, PanelSection, RunDir, RunManifest
from judge.schema import (
    CATEGORIES,
    SEVERITIES,
    Cluster,
    Reject,
    RepairRow,
    ScoreRow,
    Verdict,
)
from judge.scoring import Rubric, load_rubric

SUMMARY_SCHEMA = "trajudge.summary/1"
SCORE_KEYS: tuple[str, ...] = ("2", "3", "4", "5", "unscored")
NO_SCORE_ROW = "no_score_row"  # the trajectory was imported but the scoring stage left no row for it
TOP_DEFECTS = 10
UNTAGGED = "(no tag)"
REJECT_ROWS = 200  # rejects listed in full; the others are counted by reason
REFUSED_LISTED = 200  # capability rewrites refused by the requirement check, listed with their reason

_REASON_CODE = re.compile(r"^([a-z][a-z0-9_\-]*)\s*(?::|$)")


def missing_score_row(trajectory_id: str) -> ScoreRow:
    """The unscored row of a trajectory the scorer left without one."""
    return ScoreRow(trajectory_id=trajectory_id, score=None, release=False, panel_size=0, valid_passes=0,
                    reason=f"{NO_SCORE_ROW}: the scoring stage wrote no row for this trajectory")


def score_key(score: int | None) -> str:
    return "unscored" if score is None else str(score)


def share(part: int, whole: int) -> float | None:
    """``part / whole`` rounded for display, or None when there is nothing to divide by."""
    return None if whole == 0 else round(part / whole, 4)


# --- the whole summary -------------------------------------------------------------------------


class SummaryTally:
    """Every section of ``summary.json``, tallied one :class:`~judge.report.stream.Entry` at a time.

    :meth:`add` returns the entry's row of the trajectory index (None for rows of an id that has neither a
    trajectory nor a score row); :meth:`summary` gives everything else, in the order of the file. ``run`` is
    read for its human decisions (``overrides.jsonl``, small: see :class:`ReviewTally`).
    """

    def __init__(self, manifest: RunManifest, run: RunDir | None = None):
        self.manifest = manifest
        self.review = ReviewTally(run)
        self.rubric = run_rubric(manifest)
        self.scores = ScoreTally(self.rubric.release.scores)
        self.outcomes = OutcomeTally()
        self.issues = IssueTally()
        self.agreement = AgreementTally()
        self.verdicts = VerdictTally()
        self.unscored = UnscoredTally()
        self.ledger: list[dict[str, Any]] = []
        self.repairs: Counter[str] = Counter()
        self.rewrite_checks: Counter[str] = Counter()  # capability rewrites: passed / refused by the requirement check
        self.rewrites_refused: list[dict[str, Any]] = []
        self.generation = UsageTally()
        self.teacher = UsageTally()
        self.trajectories = 0
        self.scores_without_trajectory: list[str] = []
        from judge.gate import recorded_outcome  # imported once here: an import statement in add() costs ~0.7 us

        self._recorded_outcome = recorded_outcome

    def add(self, entry: Entry) -> dict[str, Any] | None:
        """Count one trajectory (or one id without a trajectory) and its rows."""
        recorded_outcome = self._recorded_outcome
        trajectory = entry.trajectory
        row = entry.score
        if trajectory is not None:
            self.trajectories += 1
            row = row or missing_score_row(entry.id)
            self.generation.add(entry.generation_usage)
        else:
            self.scores_without_trajectory.extend(r.trajectory_id for r in entry.scores)
        outcome = recorded_outcome(trajectory) if trajectory is not None else None
        if row is not None:
            self.scores.add(row)
            self.outcomes.add(entry.id, row, outcome)
            self.unscored.add(row)
        self.review.add(trajectory, row)
        self.issues.add(entry.clusters)
        self.agreement.add(entry.verdicts, entry.clusters)
        for verdict in entry.verdicts:
            self.verdicts.add(verdict)
        self.ledger.extend(ledger_rows(entry.scores))
        for repair in entry.repairs:
            self.repairs[repair.route] += 1
            check = repair.extra.get("rewrite_check")
            if isinstance(check, dict):
                refused = check.get("passed") is not True
                self.rewrite_checks["refused" if refused else "passed"] += 1
                if refused and len(self.rewrites_refused) < REFUSED_LISTED:
                    self.rewrites_refused.append({"trajectory_id": repair.trajectory_id, "reason": check.get("reason")})
            usage = repair.extra.get("teacher_usage")
            if isinstance(usage, dict):
                self.teacher.add_mapping(usage)
        if row is None:
            return None
        turns = len(entry.assistant_turns) if trajectory is not None else None
        return trajectory_row(row, turns, entry.clusters, entry.verdicts, entry.repair, outcome)

    def summary(self, *, run_dir: Path, present: dict[str, bool], bad_rows: list[BadRow], rejects: RejectTally,
                attempts: list[dict[str, Any]] | None) -> dict[str, Any]:
        """The summary dict, without the per-trajectory rows (the caller streams those)."""
        panel = panel_section(self.manifest, self.verdicts)
        return {
            "schema": SUMMARY_SCHEMA,
            "run": {
                "dir": str(run_dir),
                "generated_at": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
                "trajudge_version": __version__,
            },
            "inputs": {
                "trajectories": self.trajectories,
                # Score rows of ids that trajectories.jsonl does not hold: counted in the figures, absent from the viewer.
                "scores_without_trajectory": self.scores_without_trajectory,
                "rejects": rejects.total,
                "files": dict(sorted(present.items())),
                "unreadable_rows": [{"file": b.file, "line": b.line, "error": b.error} for b in bad_rows],
                # Rows the Parquet tables left out (judge.tables): still in the JSONL and in this report.
                "rows_left_out_of_tables": [row.to_json() for row in self.manifest.tables.skipped_rows]
                if self.manifest.tables is not None else [],
            },
            "scores": self.scores.distribution(),
            "release": self.scores.release(),
            "outcomes": self.outcomes.section(panel),
            "issues": self.issues.section(),
            "top_defects": self.issues.top_defects(),
            "agreement": agreement_block(self.agreement, panel),
            "review": self.review.section(),
            "panel": {**panel, "limits": panel_limits(panel["size"], self.rubric)},
            "unscored": self.unscored.section(self.verdicts),
            "environment_ledger": self.ledger,
            "repairs": {"present": present.get(rundir.REPAIRS, False), "total": sum(self.repairs.values()),
                        "by_route": dict(self.repairs.most_common()),
                        "rewrite_checks": {"passed": self.rewrite_checks["passed"], "refused": self.rewrite_checks["refused"]},
                        "rewrites_refused": self.rewrites_refused},
            "rejects": rejects.section(),
            "cost": {
                "judge": judge_cost(attempts, self.verdicts),
                "generation": self.generation.generation(self.trajectories),
                "teacher": self.teacher.teacher(),
                "time": time_section(self.manifest, attempts, self.verdicts),
            },
            "reproducibility": reproducibility(self.manifest, self.verdicts),
        }


# --- scores and release ------------------------------------------------------------------------


def run_rubric(manifest: RunManifest) -> Rubric:
    """The rubric the run was scored with (run.json ``rubric``: its file, else the bundled rubric of its label),
    or the bundled default when neither can be read."""
    recorded = manifest.rubric
    for candidate in (recorded.source, recorded.label) if recorded is not None else ():
        if candidate:
            try:
                return load_rubric(candidate)
            except (OSError, ValueError):
                continue  # a run moved to another machine: try the next
    return load_rubric(None)


class ScoreTally:
    """Counts per score and the release yield, one score row at a time.

    ``releasable`` are the scores the rubric may release (``release.scores``; default: the bundled rubric's).
    """

    def __init__(self, releasable: Sequence[int] | None = None):
        self.releasable = list(load_rubric(None).release.scores if releasable is None else releasable)
        self.counts = {key: 0 for key in SCORE_KEYS}
        self.total = self.scored = 0
        self.score_sum = 0
        self.released = 0
        self.released_by_score: Counter[str] = Counter()
        self.held_by_score: Counter[str] = Counter()
        self.failed_checks: Counter[str] = Counter()

    def add(self, row: ScoreRow) -> None:
        key = score_key(row.score)
        self.counts[key] = self.counts.get(key, 0) + 1  # a rubric with other scores still shows them
        self.total += 1
        if row.score is not None:
            self.scored += 1
            self.score_sum += row.score
        if row.release:
            self.released += 1
            self.released_by_score[key] += 1
        else:
            if row.score in self.releasable:
                self.held_by_score[key] += 1
            for check in set(row.failed_checks):  # Counter.update() would first ask whether it is a Mapping
                self.failed_checks[check] += 1

    def distribution(self) -> dict[str, Any]:
        """Counts per score (2/3/4/5/unscored, every key present) and the mean of the scored ones."""
        return {"counts": dict(self.counts), "total": self.total, "scored": self.scored,
                "mean": round(self.score_sum / self.scored, 3) if self.scored else None}

    def release(self) -> dict[str, Any]:
        """Release yield (released / all trajectories, unscored included) and why releasable scores were held."""
        return {
            "released": self.released,
            "total": self.total,
            "releasable": self.releasable,  # the scores the rubric releases: the page says why a lower one is held
            "yield": share(self.released, self.total),
            "released_by_score": dict(sorted(self.released_by_score.items())),
            "held_by_gate": dict(sorted(self.held_by_score.items())),
            "failed_checks": dict(self.failed_checks.most_common()),
        }


def score_distribution(rows: Iterable[ScoreRow]) -> dict[str, Any]:
    """Counts per score (2/3/4/5/unscored, every key present) and the mean of the scored ones."""
    tally = ScoreTally([])
    for row in rows:
        tally.add(row)
    return tally.distribution()


def release_section(rows: Iterable[ScoreRow], releasable: Sequence[int] | None = None) -> dict[str, Any]:
    """Release yield (released / all trajectories, unscored included) and why releasable scores were held.

    ``releasable`` are the scores the rubric may release (``release.scores``; default: the bundled rubric's).
    """
    tally = ScoreTally(releasable)
    for row in rows:
        tally.add(row)
    return tally.release()


# --- scores against recorded outcomes ----------------------------------------------------------

RULES_JUDGE = "rules"


class OutcomeTally:
    """Scores against the task outcome each log records (``metadata.task_outcome``), one row at a time."""

    def __init__(self) -> None:
        self.by_score = {key: {status: 0 for status in OUTCOME_STATUSES} for key in SCORE_KEYS}
        self.sources: Counter[str] = Counter()
        self.released_failures: list[str] = []
        self.unreadable = 0

    def add(self, trajectory_id: str, row: ScoreRow, outcome: TaskOutcome | None) -> None:
        """``outcome`` is None for a score row whose trajectory is not in trajectories.jsonl (counted as unknown)."""
        status = outcome.status if outcome else "unknown"
        counts = self.by_score.get(score_key(row.score))
        if counts is None:  # a rubric with other scores still shows them
            counts = self.by_score[score_key(row.score)] = {s: 0 for s in OUTCOME_STATUSES}
        counts[status] += 1
        if outcome is not None and (outcome.source or outcome.status != "unknown"):
            self.sources[f"{outcome.source or 'unnamed'}: {status}"] += 1
        self.unreadable += int(bool(outcome and outcome.unreadable))
        if row.release and status == "failure":
            self.released_failures.append(trajectory_id)  # the gate holds these: a non-empty list is a bug, shown

    def section(self, panel: dict[str, Any]) -> dict[str, Any]:
        """``by_score`` has a row per score key (2-5 and unscored) and a column per outcome status. ``warning`` is
        set when a panel of the rules judge alone scores most recorded failures 4 or 5: it is structural and
        cannot see a wrong result."""
        by_score = self.by_score
        totals = {status: sum(counts[status] for counts in by_score.values()) for status in OUTCOME_STATUSES}
        failures = totals["failure"]
        high = sum(by_score[key]["failure"] for key in ("4", "5") if key in by_score)
        judges = [j for j in panel.get("judges") or [] if j]
        rules_only = bool(judges) and all(j == RULES_JUDGE for j in judges)
        warning = None
        if rules_only and failures and 2 * high > failures:
            warning = (
                f"The rules judge scored {high} of {failures} recorded task failures 4 or 5. It is structural: it checks "
                "tool calls against their receipts (failed and repeated calls, claims a receipt contradicts) and cannot "
                "see a wrong answer, a misread page or a missed requirement, so a high score here means the process "
                "left no structural trace of a defect, not that the task was done. The release gate holds these "
                "trajectories (outcome:failed); add an LLM judge to the panel to learn what went wrong."
            )
        return {
            "statuses": list(OUTCOME_STATUSES),
            "by_score": by_score,
            "totals": totals,
            "recorded": sum(v for k, v in totals.items() if k != "unknown"),
            "failures_scored_4_or_5": high,
            "failure_share_scored_4_or_5": share(high, failures),
            "released_failures": self.released_failures,
            "unreadable": self.unreadable,
            "sources": dict(self.sources.most_common()),
            "rules_only": rules_only,
            "warning": warning,
        }


def outcome_section(trajectories: list[Trajectory], rows: dict[str, ScoreRow], panel: dict[str, Any]) -> dict[str, Any]:
    """Scores against the task outcome each log records (see :class:`OutcomeTally`); a score row whose
    trajectory is not in ``trajectories`` counts as unknown."""
    from judge.gate import recorded_outcome

    outcome_of = {t.id: recorded_outcome(t) for t in trajectories}
    tally = OutcomeTally()
    for trajectory_id, row in rows.items():
        tally.add(trajectory_id, row, outcome_of.get(trajectory_id))
    return tally.section(panel)


# --- issues ------------------------------------------------------------------------------------


class _IssueCounts:
    def __init__(self) -> None:
        self.total = 0
        self.by_category = {c: 0 for c in CATEGORIES}
        self.by_severity = {s: 0 for s in SEVERITIES}
        self.grid = {c: {s: 0 for s in SEVERITIES} for c in CATEGORIES}
        self.tags: Counter[str] = Counter()

    def add(self, cluster: Cluster) -> None:
        self.total += 1
        self.by_category[cluster.category] += 1
        self.by_severity[cluster.severity] += 1
        self.grid[cluster.category][cluster.severity] += 1
        self.tags[cluster.tag or UNTAGGED] += 1

    def section(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_category": self.by_category,
            "by_severity": self.by_severity,
            "by_category_severity": self.grid,
            "by_tag": dict(sorted(self.tags.items(), key=lambda item: (-item[1], item[0]))),
        }


class _DefectKind:
    """One (category, tag) of :func:`top_defects`: counts and the example cluster with the most votes."""

    def __init__(self, category: str, tag: str):
        self.category, self.tag = category, tag
        self.clusters = self.majority = self.trajectories = self.severe = 0
        self.example: Cluster | None = None

    def add(self, cluster: Cluster) -> None:
        self.clusters += 1
        self.majority += cluster.majority
        self.severe += cluster.severity == "severe"
        # Ties keep the first in file order.
        if self.example is None or (cluster.votes, cluster.majority) > (self.example.votes, self.example.majority):
            self.example = cluster

    def describe(self) -> dict[str, Any]:
        example = self.example
        assert example is not None
        return {
            "category": self.category,
            "tag": self.tag,
            "clusters": self.clusters,
            "majority_clusters": self.majority,
            "trajectories": self.trajectories,
            "severe": self.severe,
            "example": {
                "trajectory_id": example.trajectory_id,
                "cluster": example.cluster,
                "turn": example.turn,
                "votes": example.votes,
                "panel_size": example.panel_size,
                "majority": example.majority,
                "description": example.description,
                "wordings": _example_wordings(example),
            },
        }


class IssueTally:
    """Issue clusters by category, severity and tag (majority and minority apart), and the kinds of defect."""

    def __init__(self) -> None:
        self.majority = _IssueCounts()
        self.minority = _IssueCounts()
        self.kinds: dict[tuple[str, str], _DefectKind] = {}

    def add(self, clusters: Sequence[Cluster]) -> None:
        """The clusters of one trajectory (a kind counts each trajectory once)."""
        seen: set[tuple[str, str, str]] = set()  # (trajectory, category, tag)
        for cluster in clusters:
            (self.majority if cluster.majority else self.minority).add(cluster)
            key = (cluster.category, cluster.tag or UNTAGGED)
            kind = self.kinds.get(key)
            if kind is None:
                kind = self.kinds[key] = _DefectKind(*key)
            kind.add(cluster)
            if (cluster.trajectory_id, *key) not in seen:
                seen.add((cluster.trajectory_id, *key))
                kind.trajectories += 1

    def section(self) -> dict[str, Any]:
        return {"majority": self.majority.section(), "minority": self.minority.section()}

    def top_defects(self, limit: int = TOP_DEFECTS) -> list[dict[str, Any]]:
        """The most frequent kinds of defect in the batch: clusters grouped by (category, tag).

        Ranked by majority clusters, then all clusters. Each kind carries one example cluster (the one with the
        most votes) and the wording of each of its passes, so the reader sees what the judges actually wrote.
        """
        kinds = sorted(self.kinds.values(), key=lambda k: (-k.majority, -k.clusters, k.category, k.tag))
        return [kind.describe() for kind in kinds[:limit]]


def _example_wordings(cluster: Cluster) -> list[dict[str, Any]]:
    return [
        {"pass_key": m.pass_key, "turn": m.issue.turn, "description": m.issue.description, "evidence": m.issue.evidence}
        for m in sorted(cluster.members, key=lambda m: (m.pass_key, m.issue_index))
    ]


# --- verdicts: panel, unscored passes, cost, reproducibility ---------------------------------------


def _add(total: float | None, value: float | None) -> int | float | None:
    if value is None:
        return total
    return value if total is None else total + value


def _cost_row(judge: str) -> dict[str, Any]:
    return {"judge": judge, "model": None, "attempts": 0, "failed_attempts": 0, "cached_calls": 0, "input_tokens": None,
            "output_tokens": None, "cached_tokens": None, "cost_usd": None, "unpriced_attempts": 0}


class VerdictTally:
    """What the verdicts say about the panel, its unscored passes, its cost and its versions, one at a time."""

    def __init__(self) -> None:
        self.total = self.ok = 0
        self.deterministic = True
        self.judges: set[str] = set()
        self.pass_keys: set[str] = set()
        self.models: set[str] = set()
        self.model_of: dict[str, str] = {}  # judge -> the model its last verdict names
        self.prompt_versions: set[str] = set()
        self.unscored: Counter[str] = Counter()
        self.latency_s = 0.0
        self.timed = 0
        self.cached_calls: Counter[str] = Counter()
        self.cost_rows: dict[str, dict[str, Any]] = {}  # per judge, from the verdicts (used without a store)

    def add(self, verdict: Verdict) -> None:
        self.total += 1
        self.ok += verdict.status == "ok"
        self.deterministic = self.deterministic and verdict.deterministic
        self.judges.add(verdict.judge)
        self.pass_keys.add(verdict.pass_key)
        if verdict.model:
            self.models.add(verdict.model)
            self.model_of[verdict.judge] = verdict.model
        if verdict.prompt_version:
            self.prompt_versions.add(verdict.prompt_version)
        if verdict.status != "ok":
            self.unscored[verdict.reason or "unknown"] += 1
        if verdict.latency_s is not None:
            self.latency_s += verdict.latency_s
            self.timed += 1
        self.cached_calls[verdict.judge] += int(verdict.cached)
        row = self.cost_rows.get(verdict.judge)
        if row is None:
            row = self.cost_rows[verdict.judge] = _cost_row(verdict.judge)
        row["attempts"] += max(1, verdict.attempts)
        row["failed_attempts"] += max(0, verdict.attempts - 1) + int(verdict.reason == "provider_error")
        row["cached_calls"] += int(verdict.cached)
        for name in ("input_tokens", "output_tokens", "cached_tokens"):
            row[name] = _add(row[name], getattr(verdict.usage, name))
        row["cost_usd"] = _add(row["cost_usd"], verdict.cost_usd)
        if verdict.cost_usd is None and verdict.usage.total and not verdict.deterministic:
            row["unpriced_attempts"] += 1

    @classmethod
    def of(cls, verdicts: Iterable[Verdict]) -> VerdictTally:
        tally = cls()
        for verdict in verdicts:
            tally.add(verdict)
        return tally


def _member_rows(planned: PanelSection) -> list[dict[str, Any]]:
    """The planned passes from run.json: members as written by the panel, or plain judge specs (old runs)."""
    rows = []
    for member in planned.members:
        if isinstance(member, PanelMember):
            rows.append({"pass_key": member.pass_key, "judge": member.judge, "model": member.model,
                         "prompt_version": member.prompt_version, "deterministic": member.deterministic})
        else:
            rows.append({"pass_key": None, "judge": member, "model": None, "prompt_version": None, "deterministic": None})
    return rows


def panel_section(manifest: RunManifest, verdicts: VerdictTally) -> dict[str, Any]:
    """Who judged: the planned panel from run.json, and what the verdicts show."""
    planned = manifest.panel or PanelSection()
    rows = _member_rows(planned)
    pass_keys = sorted(verdicts.pass_keys)
    return {
        "size": manifest.planned_passes() or (len(pass_keys) or None),
        "members": rows,
        "judges": sorted(verdicts.judges | {r["judge"] for r in rows if r["judge"]}),
        "pass_keys": pass_keys,
        "deterministic": bool(verdicts.total) and verdicts.deterministic,
        "passes_total": verdicts.total,
        "passes_ok": verdicts.ok,
        "note": planned.note,
    }


def panel_limits(panel_size: int | None, rubric: Rubric) -> dict[str, Any]:
    """What a panel of this size cannot give under ``rubric`` (pure): the report says it once in its header.

    ``top_score`` needs ``top_votes`` efficiency votes (``top_reachable``: the panel has that many passes);
    ``agreement``: agreement statistics need two passes or more.
    """
    size = panel_size or 0
    needed = rubric.efficient.needed(size)
    return {"top_score": rubric.scores.none_efficient, "top_votes": needed, "top_reachable": needed <= size,
            "agreement": size >= 2}


# The three headline statistics, and their names in judge.agreement's output.
AGREEMENT_FIELDS: dict[str, str] = {
    "krippendorff_alpha": "krippendorff_alpha_issues",
    "fleiss_kappa": "fleiss_kappa_efficiency",
    "effective_judges": "effective_judges",
}


def agreement_block(tally: AgreementTally, panel: dict[str, Any]) -> dict[str, Any]:
    """Agreement statistics (:class:`judge.agreement.AgreementTally`) and the vote histogram.

    A statistic that cannot be computed is reported as unavailable with the reason, never as a number. The
    full output is kept under ``details``.
    """
    section: dict[str, Any] = {"vote_histogram": {}, "source": "report", "unavailable": {}, "details": {}}
    for name in AGREEMENT_FIELDS:
        section[name] = None
    try:
        stats = dict(tally.summary())
    except Exception as error:  # noqa: BLE001 - the report must still render; the failure is shown in it
        for name in AGREEMENT_FIELDS:
            section["unavailable"][name] = f"judge.agreement failed: {type(error).__name__}: {error}"
    else:
        section["source"] = "judge.agreement"
        section["vote_histogram"] = stats.pop("vote_histogram")
        section["details"] = _json_number(stats)
        for name, key in AGREEMENT_FIELDS.items():
            section[name] = section["details"].get(key)
            if section[name] is None:
                section["unavailable"][name] = "cannot be computed for this batch (too few passes or units)"
    section["explanation"] = explain_agreement(section, panel)
    return section


def agreement_section(verdicts: Sequence[Verdict], clusters: Sequence[Cluster], panel: dict[str, Any]) -> dict[str, Any]:
    """:func:`agreement_block` of a batch in memory."""
    return agreement_block(AgreementTally.of(verdicts, clusters), panel)


def _json_number(value: Any) -> Any:
    """NaN and infinities are not JSON: they mean "cannot be computed" here, so they become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_number(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_number(v) for v in value]
    return value


def _number(section: dict[str, Any], name: str) -> float | None:
    value = section.get(name)
    if isinstance(value, dict):  # a statistic reported with details, e.g. {"value": 0.7, "units": 40}
        value = value.get("value")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def explain_agreement(section: dict[str, Any], panel: dict[str, Any]) -> str:
    """One plain paragraph on what the agreement figures mean for this batch."""
    judges = panel.get("judges") or []
    size = panel.get("size") or 0
    histogram = section.get("vote_histogram", {})
    clusters = sum(histogram.values())
    single = histogram.get("1", 0)
    if not panel.get("passes_total"):
        return "No judge pass is recorded for this run, so there is nothing to agree on."
    if panel.get("deterministic") and len(judges) == 1:
        runs = "runs once" if size == 1 else f"runs {size} times with the same result"
        return (
            f"One deterministic judge ({judges[0]}) {runs}: no agreement between judges can be measured, so "
            "every issue, and every score, is the word of a single judge. Add independent judges to the panel "
            "to learn how far these findings hold."
        )
    parts: list[str] = []
    alpha = _number(section, "krippendorff_alpha")
    if alpha is not None:
        if alpha >= 0.8:
            level = "strong: the passes mostly find the same issues at the same turns"
        elif alpha >= 0.667:
            level = "moderate: enough to act on majority issues, but check the minority ones"
        elif alpha >= 0.0:
            level = "weak: the passes often see different issues, so a majority may miss real defects"
        else:
            level = "below chance: the passes contradict each other; do not trust the scores without review"
        parts.append(f"Issue-level agreement (Krippendorff's alpha {alpha:.2f}) is {level}.")
    kappa = _number(section, "fleiss_kappa")
    if kappa is not None:
        parts.append(f"Efficiency votes agree with Fleiss' kappa {kappa:.2f}.")
    effective = _number(section, "effective_judges")
    if effective is not None and size:
        parts.append(
            f"The {size} passes behave like {effective:.1f} independent judge{'s' if round(effective, 1) != 1 else ''}"
            + (": they share most of their mistakes." if effective < 0.6 * size else ".")
        )
    if clusters:
        parts.append(
            f"{single} of {clusters} issue clusters ({100 * single / clusters:.0f}%) were seen by one pass only "
            "and do not count towards scores."
        )
    if not parts:
        return "Agreement statistics are unavailable for this run; only the vote histogram is shown."
    return " ".join(parts)


# --- human review ------------------------------------------------------------------------------


class ReviewTally:
    """The ``review`` section (docs/review.md): judge vs human figures tallied one score row at a time
    (:class:`judge.agreement.HumanAgreementTally`), and the decisions that name no trajectory of the run.

    ``overrides.jsonl`` holds human decisions, so it is small: it is read once at the start for the ids it
    names; each trajectory the stream shows is crossed off, and those left at the end are the unmatched ones.
    """

    def __init__(self, run: RunDir | None = None):
        self.figures = HumanAgreementTally()
        self.present = run is not None and run.has(rundir.OVERRIDES)
        self.unreadable: str | None = None
        self.named: set[str] = set()  # ids the decisions name that no trajectory of the stream had so far
        if run is not None and self.present:
            try:
                self.named = {row.trajectory_id for row in run.overrides()}
            except ValueError as error:  # a bad row: rescore refuses it; the report still renders and says so
                self.unreadable = " ".join(str(error).splitlines()[:3])

    def add(self, trajectory: Trajectory | None, row: ScoreRow | None) -> None:
        """One entry of the stream: its trajectory (None: a score row without one) and its score row."""
        if trajectory is not None:
            self.named.discard(trajectory.id)
        if row is not None:
            self.figures.add(row)

    def section(self) -> dict[str, Any]:
        section = self.figures.section()
        section["unmatched_trajectories"] = sorted(self.named)
        if self.unreadable is not None:
            section["unreadable"] = self.unreadable
        section["present"] = self.present
        return section


def review_marker(row: ScoreRow) -> dict[str, Any] | None:
    """The per-trajectory marker of human decisions (None: none): the machine's result beside the human one."""
    review = row.review
    if review is None:
        return None
    decision = review.release
    return {
        "reviewers": review.reviewers,
        "machine_score": review.machine.score,
        "machine_release": review.machine.release,
        "rejected": review.rejected + review.rejected_minority,
        "confirmed": review.confirmed + review.confirmed_minority,
        "added": review.added,
        "release_decision": None if decision is None else decision.release,
        "over_failed_checks": decision.over_failed_checks if decision is not None else [],
        "over_score": bool(decision is not None and decision.over_score),
        "stale": len(review.stale),
    }


# --- unscored, ledger, rejects -----------------------------------------------------------------


def reason_code(reason: str | None) -> str:
    """The machine code at the start of a reason ("no_quorum: 1 valid of 3" -> "no_quorum"), else the text."""
    if not reason:
        return "unknown"
    match = _REASON_CODE.match(reason.strip())
    return match.group(1) if match else reason.strip()


class UnscoredTally:
    """Unscored trajectories by reason (the unscored passes come from :class:`VerdictTally`)."""

    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()
        self.ids: list[str] = []

    def add(self, row: ScoreRow) -> None:
        if row.score is None:
            self.reasons[reason_code(row.reason)] += 1
            self.ids.append(row.trajectory_id)

    def section(self, verdicts: VerdictTally) -> dict[str, Any]:
        """Unscored passes and unscored trajectories, each by reason."""
        return {
            "passes_total": verdicts.total,
            "passes_unscored": sum(verdicts.unscored.values()),
            "passes_by_reason": dict(verdicts.unscored.most_common()),
            "trajectories_unscored": sum(self.reasons.values()),
            "trajectories_by_reason": dict(self.reasons.most_common()),
            "trajectory_ids": self.ids,
        }


def ledger_rows(scores: Iterable[ScoreRow]) -> list[dict[str, Any]]:
    """Majority environment issues: not the agent's fault, they block release until a rerun."""
    return [
        {
            "trajectory_id": row.trajectory_id,
            "turn": issue.turn,
            "severity": issue.severity,
            "tag": issue.tag,
            "description": issue.description,
            "votes": issue.votes,
            "cluster": issue.cluster,
        }
        for row in scores
        for issue in row.environment
    ]


class RejectTally:
    """Input records that could not be imported, by reason, and the first ``limit`` of them in full."""

    def __init__(self, limit: int = REJECT_ROWS):
        self.limit = limit
        self.total = 0
        self.skipped = 0  # paths listed as "skipped: ..." (not data, hidden, a run directory): not rejected records
        self.reasons: Counter[str] = Counter()
        self.rows: list[dict[str, Any]] = []

    def add(self, reject: Reject) -> None:
        code = reason_code(reject.reason)
        if code == "skipped":
            self.skipped += 1
        else:
            self.total += 1
        self.reasons[code] += 1
        if len(self.rows) < self.limit:
            self.rows.append({"location": reject.location(), "format": reject.format, "reason": reject.reason})

    def section(self) -> dict[str, Any]:
        return {"total": self.total, "skipped": self.skipped, "by_reason": dict(self.reasons.most_common()),
                "rows": self.rows}


# --- cost and time -----------------------------------------------------------------------------


def judge_cost(attempts: list[dict[str, Any]] | None, verdicts: VerdictTally) -> dict[str, Any]:
    """Judge tokens and money per judge, every provider attempt included (failed and retried ones too).

    The store's attempt table is the source when the run has one; otherwise the verdicts (which hold only the
    final attempt of each pass, so the figures are a lower bound, and the section says so). A cost of None
    means some attempt had no price: the total is then marked incomplete rather than counted as zero.
    """
    if attempts is not None:
        source = "store.sqlite (every provider attempt)"
        rows: dict[str, dict[str, Any]] = {}
        for attempt in attempts:
            judge = str(attempt.get("judge"))
            row = rows.get(judge)
            if row is None:
                row = rows[judge] = _cost_row(judge)
            row["attempts"] += 1
            if str(attempt.get("outcome")) != "ok":
                row["failed_attempts"] += 1
            for name in ("input_tokens", "output_tokens", "cached_tokens", "cost_usd"):
                row[name] = _add(row[name], attempt.get(name))
            if attempt.get("cost_usd") is None and (attempt.get("input_tokens") or attempt.get("output_tokens")):
                row["unpriced_attempts"] += 1
        for judge, cached in verdicts.cached_calls.items():
            if cached:
                row = rows.get(judge)
                if row is None:
                    row = rows[judge] = _cost_row(judge)
                row["cached_calls"] += cached
    else:
        source = "verdicts.jsonl (final attempt of each pass only: no run store)"
        rows = {judge: dict(row) for judge, row in verdicts.cost_rows.items()}
    for judge, row in rows.items():
        row["model"] = verdicts.model_of.get(judge)
    by_judge = sorted(rows.values(), key=lambda r: r["judge"])
    for row in by_judge:  # the attempts' order follows which concurrent call ended first: sums agree to 1e-6 USD
        if row["cost_usd"] is not None:
            row["cost_usd"] = round(row["cost_usd"], 6)
    total: dict[str, Any] = {"attempts": 0, "failed_attempts": 0, "input_tokens": None, "output_tokens": None,
                             "cached_tokens": None, "cost_usd": None, "unpriced_attempts": 0}
    for row in by_judge:
        for name in total:
            total[name] = _add(total[name], row[name])
    if total["cost_usd"] is not None:
        total["cost_usd"] = round(total["cost_usd"], 6)
    for row in (*by_judge, total):
        row["cost_usd"] = known_cost(row["cost_usd"], row["unpriced_attempts"])
    return {"source": source, "by_judge": by_judge, "total": total, "complete": total["unpriced_attempts"] == 0}


def known_cost(cost_usd: float | None, unpriced_attempts: int) -> float | None:
    """The one cost vocabulary of the reports, the summary, the frames and the scorer (pure): what the priced
    attempts cost, 0.0 when nothing was paid (no attempt, or a judge that makes no call), None ("unknown") only
    when attempts were made that no price covers and none that one does. With ``unpriced_attempts`` beside a
    number, the number is what is known, a lower bound."""
    if cost_usd is None and not unpriced_attempts:
        return 0.0
    return cost_usd


class UsageTally:
    """Token usage summed over the rows that record it (None stays None: unknown is not zero)."""

    NAMES = ("input_tokens", "output_tokens", "cached_tokens")

    def __init__(self) -> None:
        self.total: dict[str, Any] = {name: None for name in self.NAMES}
        self.with_usage = 0

    def add(self, usage: Any) -> None:
        """A :class:`judge.model.Usage` (counted when it records a total)."""
        if usage.total is None:
            return
        self.with_usage += 1
        for name in self.NAMES:
            self.total[name] = _add(self.total[name], getattr(usage, name))

    def add_mapping(self, usage: dict[str, Any]) -> None:
        """A usage dict (``extra.teacher_usage`` of a repair row); a non-number counts as unknown."""
        if all(usage.get(name) is None for name in self.NAMES):
            return
        self.with_usage += 1
        for name in self.NAMES:
            value = usage.get(name)
            self.total[name] = _add(self.total[name], value if isinstance(value, (int, float)) else None)

    def generation(self, trajectories: int) -> dict[str, Any]:
        """Tokens the agents spent generating the trajectories (as far as the sources recorded them)."""
        return {**self.total, "trajectories_with_usage": self.with_usage,
                "trajectories_without_usage": trajectories - self.with_usage}

    def teacher(self) -> dict[str, Any]:
        """Tokens the repair stage's teacher model spent on guidance and rewrites (``extra.teacher_usage``)."""
        return {**self.total, "repairs_with_usage": self.with_usage}


def generation_usage(trajectories: Iterable[Trajectory]) -> dict[str, Any]:
    tally = UsageTally()
    count = 0
    for trajectory in trajectories:
        count += 1
        tally.add(trajectory.generation_usage())
    return tally.generation(count)


def teacher_usage(repairs: Iterable[RepairRow]) -> dict[str, Any]:
    tally = UsageTally()
    for row in repairs:
        usage = row.extra.get("teacher_usage")
        if isinstance(usage, dict):
            tally.add_mapping(usage)
    return tally.teacher()


def _timestamp(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=_dt.UTC)
        return parsed.timestamp()
    return None


def time_section(manifest: RunManifest, attempts: list[dict[str, Any]] | None, verdicts: VerdictTally) -> dict[str, Any]:
    """Time taken: wall time from the manifest when it records one, else the span of the provider attempts."""
    wall: float | None = None
    source = None
    if manifest.elapsed_s is not None:
        wall, source = manifest.elapsed_s, "run.json elapsed_s"
    else:
        start, end = _timestamp(manifest.started_at), _timestamp(manifest.finished_at)
        if start is not None and end is not None and end >= start:
            wall, source = end - start, "run.json started_at to finished_at"
    created = [float(a["created"]) for a in attempts or [] if isinstance(a.get("created"), (int, float))]
    if wall is None and len(created) >= 2:
        wall, source = max(created) - min(created), "first to last provider attempt (store.sqlite)"
    if attempts is None:
        latency, timed = verdicts.latency_s, verdicts.timed
    else:
        latencies = [float(a["latency_s"]) for a in attempts if isinstance(a.get("latency_s"), (int, float))]
        latency, timed = sum(latencies), len(latencies)
    return {
        "wall_s": round(wall, 3) if wall is not None else None,
        "wall_source": source,
        "judge_latency_s": round(latency, 3) if timed else None,
        "timed_calls": timed,
    }


# --- reproducibility and per-trajectory rows ---------------------------------------------------


def reproducibility(manifest: RunManifest, verdicts: VerdictTally) -> dict[str, Any]:
    """What someone needs to rerun this batch the same way: panel, prompt, rubric, embedder, thresholds."""
    recorded = manifest.to_json()
    prompt_versions = sorted(verdicts.prompt_versions)
    planned_prompt = manifest.panel.prompt_version if manifest.panel is not None else None
    if isinstance(planned_prompt, str) and planned_prompt not in prompt_versions:  # a list: the verdicts name them
        prompt_versions.insert(0, planned_prompt)
    return {
        "trajudge_version": __version__,
        "panel": recorded.get("panel") or None,
        "judges": sorted(verdicts.judges),
        "models": sorted(verdicts.models),
        "prompt_versions": prompt_versions,
        "rubric": recorded.get("rubric"),
        "cluster": recorded.get("cluster"),
        "embedder": recorded.get("embedder"),
        "manifest": recorded,
    }


def judge_cost_of(verdicts: Iterable[Verdict]) -> float | None:
    """What the judge passes of one trajectory cost (their final attempts), None when none is priced."""
    total: float | None = None
    for verdict in verdicts:
        total = _add(total, verdict.cost_usd)
    return None if total is None else round(total, 6)


def trajectory_row(row: ScoreRow, turns: int | None, clusters: Sequence[Cluster], verdicts: Sequence[Verdict],
                   repair: RepairRow | None, outcome: TaskOutcome | None) -> dict[str, Any]:
    """One machine-readable row per trajectory (the report's index); ``turns``: the trajectory's turn_count
    (None: a score row without a trajectory)."""
    majority = [c for c in clusters if c.majority]
    return {
        "id": row.trajectory_id,
        "score": row.score,
        "release": row.release,
        "reason": row.reason,
        "failed_checks": row.failed_checks,
        "valid_passes": row.valid_passes,
        "panel_size": row.panel_size,
        "turns": turns,
        "majority_issues": len(majority),
        "minority_issues": len(clusters) - len(majority),
        "severe": sum(1 for c in majority if c.severity == "severe"),
        "categories": sorted({c.category for c in majority}),
        "tags": sorted({c.tag for c in majority if c.tag}),
        "all_categories": sorted({c.category for c in clusters}),
        "all_tags": sorted({c.tag for c in clusters if c.tag}),
        "route": repair.route if repair is not None else None,
        "outcome": outcome.status if outcome is not None else "unknown",
        "judge_cost_usd": judge_cost_of(verdicts),
        "review": review_marker(row),
    }
