"""The batch summary (``summary.json``): every figure the reports show, computed from the stored run only.

Each section is a pure function of typed rows, so the arithmetic is tested without files. Denominators are
honest: a trajectory without a score row, or without a quorum of valid passes, counts as ``unscored`` and
stays in every share; a failed provider attempt counts in the cost.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from judge import __version__, rundir
from judge.agreement import agreement_summary, human_agreement, vote_histogram
from judge.model import Trajectory
from judge.outcome import OUTCOME_STATUSES
from judge.report.load import RunData, load_run
from judge.rundir import PanelMember, PanelSection, RunDir, RunManifest
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

_REASON_CODE = re.compile(r"^([a-z][a-z0-9_\-]*)\s*(?::|$)")


def build_summary(run_dir: Path) -> dict[str, Any]:
    """Compute the batch summary from ``run_dir`` and write it to ``summary.json``; returns the summary."""
    data = load_run(Path(run_dir))
    summary = summarise(data)
    RunDir(data.run_dir).write_json(rundir.SUMMARY, summary)
    return summary


def summarise(data: RunData) -> dict[str, Any]:
    """The summary dict of a loaded run (no file is written)."""
    score_rows = scores_by_trajectory(data.trajectories, data.scores)
    panel = panel_section(data.manifest, data.verdicts)
    return {
        "schema": SUMMARY_SCHEMA,
        "run": {
            "dir": str(data.run_dir),
            "generated_at": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
            "trajudge_version": __version__,
        },
        "inputs": inputs_section(data),
        "scores": score_distribution(score_rows.values()),
        "release": release_section(score_rows.values(), run_rubric(data.manifest).release.scores),
        "outcomes": outcome_section(data.trajectories, score_rows, panel),
        "issues": issues_section(data.clusters),
        "top_defects": top_defects(data.clusters),
        "agreement": agreement_section(data.verdicts, data.clusters, panel),
        "review": review_section(score_rows.values(), RunDir(data.run_dir), {t.id for t in data.trajectories}),
        "panel": panel,
        "unscored": unscored_section(data.verdicts, score_rows.values()),
        "environment_ledger": environment_ledger(data.scores),
        "repairs": repairs_section(data.repairs, present=data.present.get(rundir.REPAIRS, False)),
        "rejects": rejects_section(data.rejects),
        "cost": {
            "judge": judge_cost(data.attempts, data.verdicts),
            "generation": generation_usage(data.trajectories),
            "teacher": teacher_usage(data.repairs),
            "time": time_section(data.manifest, data.attempts, data.verdicts),
        },
        "reproducibility": reproducibility(data.manifest, data.verdicts),
        "trajectories": trajectory_rows(data.trajectories, score_rows, data.clusters, data.repairs),
    }


# --- inputs ------------------------------------------------------------------------------------


def inputs_section(data: RunData) -> dict[str, Any]:
    known = {t.id for t in data.trajectories}
    return {
        "trajectories": len(data.trajectories),
        # Score rows of ids that trajectories.jsonl does not hold: counted in the figures, absent from the viewer.
        "scores_without_trajectory": [row.trajectory_id for row in data.scores if row.trajectory_id not in known],
        "rejects": len(data.rejects),
        "files": dict(sorted(data.present.items())),
        "unreadable_rows": [{"file": b.file, "line": b.line, "error": b.error} for b in data.bad_rows],
    }


def scores_by_trajectory(trajectories: list[Trajectory], scores: list[ScoreRow]) -> dict[str, ScoreRow]:
    """One score row per trajectory, in input order; a trajectory the scorer skipped gets an unscored row.

    Score rows for ids that are not in ``trajectories.jsonl`` are kept too (after the others): the report
    shows what was scored, and the id mismatch is visible rather than dropped.
    """
    by_id = {row.trajectory_id: row for row in scores}
    result: dict[str, ScoreRow] = {}
    for trajectory in trajectories:
        result[trajectory.id] = by_id.get(trajectory.id) or ScoreRow(
            trajectory_id=trajectory.id,
            score=None,
            reason=f"{NO_SCORE_ROW}: the scoring stage wrote no row for this trajectory",
            release=False,
            panel_size=0,
            valid_passes=0,
        )
    for row in scores:
        result.setdefault(row.trajectory_id, row)
    return result


def score_key(score: int | None) -> str:
    return "unscored" if score is None else str(score)


def share(part: int, whole: int) -> float | None:
    """``part / whole`` rounded for display, or None when there is nothing to divide by."""
    return None if whole == 0 else round(part / whole, 4)


def score_distribution(rows: Iterable[ScoreRow]) -> dict[str, Any]:
    """Counts per score (2/3/4/5/unscored, every key present) and the mean of the scored ones."""
    rows = list(rows)
    counts = {key: 0 for key in SCORE_KEYS}
    for row in rows:
        key = score_key(row.score)
        counts[key] = counts.get(key, 0) + 1  # a rubric with other scores still shows them
    scored = [row.score for row in rows if row.score is not None]
    return {
        "counts": counts,
        "total": len(rows),
        "scored": len(scored),
        "mean": round(sum(scored) / len(scored), 3) if scored else None,
    }


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


def release_section(rows: Iterable[ScoreRow], releasable: Sequence[int] | None = None) -> dict[str, Any]:
    """Release yield (released / all trajectories, unscored included) and why releasable scores were held.

    ``releasable`` are the scores the rubric may release (``release.scores``; default: the bundled rubric's).
    """
    rows = list(rows)
    if releasable is None:
        releasable = load_rubric(None).release.scores
    released = sum(1 for row in rows if row.release)
    failed_checks: Counter[str] = Counter()
    held_by_score: Counter[str] = Counter()
    for row in rows:
        if not row.release and row.score in releasable:
            held_by_score[score_key(row.score)] += 1
        if not row.release:
            failed_checks.update(set(row.failed_checks))
    return {
        "released": released,
        "total": len(rows),
        "yield": share(released, len(rows)),
        "released_by_score": dict(sorted(Counter(score_key(r.score) for r in rows if r.release).items())),
        "held_by_gate": dict(sorted(held_by_score.items())),
        "failed_checks": dict(failed_checks.most_common()),
    }


# --- scores against recorded outcomes ----------------------------------------------------------

RULES_JUDGE = "rules"


def outcome_section(trajectories: list[Trajectory], rows: dict[str, ScoreRow], panel: dict[str, Any]) -> dict[str, Any]:
    """Scores against the task outcome each log records (``metadata.task_outcome``): does the score track the result?

    ``by_score`` has a row per score key (2-5 and unscored) and a column per outcome status; a score row whose
    trajectory is not in trajectories.jsonl counts as unknown. ``warning`` is set when a panel of the rules judge
    alone scores most recorded failures 4 or 5: it is structural and cannot see a wrong result.
    """
    from judge.gate import recorded_outcome

    outcome_of = {t.id: recorded_outcome(t) for t in trajectories}
    by_score = {key: {status: 0 for status in OUTCOME_STATUSES} for key in SCORE_KEYS}
    sources: Counter[str] = Counter()
    released_failures: list[str] = []
    unreadable = 0
    for trajectory_id, row in rows.items():
        outcome = outcome_of.get(trajectory_id)
        status = outcome.status if outcome else "unknown"
        by_score.setdefault(score_key(row.score), {s: 0 for s in OUTCOME_STATUSES})[status] += 1
        if outcome is not None and (outcome.source or outcome.status != "unknown"):
            sources[f"{outcome.source or 'unnamed'}: {status}"] += 1
        unreadable += int(bool(outcome and outcome.unreadable))
        if row.release and status == "failure":
            released_failures.append(trajectory_id)  # the gate holds these: a non-empty list is a bug, shown
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
        "released_failures": released_failures,
        "unreadable": unreadable,
        "sources": dict(sources.most_common()),
        "rules_only": rules_only,
        "warning": warning,
    }


# --- issues ------------------------------------------------------------------------------------


def _issue_counts(clusters: list[Cluster]) -> dict[str, Any]:
    by_category = {c: 0 for c in CATEGORIES}
    by_severity = {s: 0 for s in SEVERITIES}
    grid = {c: {s: 0 for s in SEVERITIES} for c in CATEGORIES}
    tags: Counter[str] = Counter()
    for cluster in clusters:
        by_category[cluster.category] += 1
        by_severity[cluster.severity] += 1
        grid[cluster.category][cluster.severity] += 1
        tags[cluster.tag or UNTAGGED] += 1
    return {
        "total": len(clusters),
        "by_category": by_category,
        "by_severity": by_severity,
        "by_category_severity": grid,
        "by_tag": dict(sorted(tags.items(), key=lambda item: (-item[1], item[0]))),
    }


def issues_section(clusters: list[Cluster]) -> dict[str, Any]:
    """Issue clusters by category, severity and tag; majority (attributed) and minority counted apart."""
    return {
        "majority": _issue_counts([c for c in clusters if c.majority]),
        "minority": _issue_counts([c for c in clusters if not c.majority]),
    }


def _example_wordings(cluster: Cluster) -> list[dict[str, Any]]:
    return [
        {"pass_key": m.pass_key, "turn": m.issue.turn, "description": m.issue.description, "evidence": m.issue.evidence}
        for m in sorted(cluster.members, key=lambda m: (m.pass_key, m.issue_index))
    ]


def top_defects(clusters: list[Cluster], limit: int = TOP_DEFECTS) -> list[dict[str, Any]]:
    """The most frequent kinds of defect in the batch: clusters grouped by (category, tag).

    Ranked by majority clusters, then all clusters. Each kind carries one example cluster (the one with the
    most votes) and the wording of each of its passes, so the reader sees what the judges actually wrote.
    """
    groups: dict[tuple[str, str], list[Cluster]] = defaultdict(list)
    for cluster in clusters:
        groups[(cluster.category, cluster.tag or UNTAGGED)].append(cluster)
    kinds = []
    for (category, tag), members in groups.items():
        example = max(members, key=lambda c: (c.votes, c.majority))  # ties: the first in file order
        kinds.append({
            "category": category,
            "tag": tag,
            "clusters": len(members),
            "majority_clusters": sum(1 for c in members if c.majority),
            "trajectories": len({c.trajectory_id for c in members}),
            "severe": sum(1 for c in members if c.severity == "severe"),
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
        })
    kinds.sort(key=lambda k: (-k["majority_clusters"], -k["clusters"], k["category"], k["tag"]))
    return kinds[:limit]


# --- panel and agreement -----------------------------------------------------------------------


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


def panel_section(manifest: RunManifest, verdicts: list[Verdict]) -> dict[str, Any]:
    """Who judged: the planned panel from run.json, and what the verdicts show."""
    planned = manifest.panel or PanelSection()
    rows = _member_rows(planned)
    judges = sorted({v.judge for v in verdicts} | {r["judge"] for r in rows if r["judge"]})
    pass_keys = sorted({v.pass_key for v in verdicts})
    return {
        "size": manifest.planned_passes() or (len(pass_keys) or None),
        "members": rows,
        "judges": judges,
        "pass_keys": pass_keys,
        "deterministic": bool(verdicts) and all(v.deterministic for v in verdicts),
        "passes_total": len(verdicts),
        "passes_ok": sum(1 for v in verdicts if v.status == "ok"),
        "note": planned.note,
    }


# The three headline statistics, and their names in judge.agreement's output.
AGREEMENT_FIELDS: dict[str, str] = {
    "krippendorff_alpha": "krippendorff_alpha_issues",
    "fleiss_kappa": "fleiss_kappa_efficiency",
    "effective_judges": "effective_judges",
}


def agreement_section(verdicts: list[Verdict], clusters: list[Cluster], panel: dict[str, Any]) -> dict[str, Any]:
    """Agreement statistics (:func:`judge.agreement.agreement_summary`) and the vote histogram.

    A statistic that cannot be computed is reported as unavailable with the reason, never as a number. The
    full output is kept under ``details``.
    """
    section: dict[str, Any] = {"vote_histogram": {str(k): v for k, v in vote_histogram(clusters).items()},
                               "source": "report", "unavailable": {}, "details": {}}
    for name in AGREEMENT_FIELDS:
        section[name] = None
    try:
        stats = dict(agreement_summary(verdicts, clusters))
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


def review_section(rows: Iterable[ScoreRow], run: RunDir, known: set[str]) -> dict[str, Any]:
    """Human review (docs/review.md): judge vs human figures from the score rows' ``review``
    (:class:`judge.agreement.HumanAgreementTally`), and the decisions that name no trajectory of the run."""
    section = human_agreement(rows)
    try:
        unmatched = sorted({row.trajectory_id for row in run.overrides() if row.trajectory_id not in known})
        section["unmatched_trajectories"] = unmatched
    except ValueError as error:  # a bad row: rescore refuses it; the report still renders and says so
        section["unmatched_trajectories"] = []
        section["unreadable"] = " ".join(str(error).splitlines()[:3])
    section["present"] = run.has(rundir.OVERRIDES)
    return section


# --- unscored, ledger, repairs, rejects --------------------------------------------------------


def reason_code(reason: str | None) -> str:
    """The machine code at the start of a reason ("no_quorum: 1 valid of 3" -> "no_quorum"), else the text."""
    if not reason:
        return "unknown"
    match = _REASON_CODE.match(reason.strip())
    return match.group(1) if match else reason.strip()


def unscored_section(verdicts: list[Verdict], rows: Iterable[ScoreRow]) -> dict[str, Any]:
    """Unscored passes and unscored trajectories, each by reason."""
    rows = list(rows)
    passes = Counter(v.reason or "unknown" for v in verdicts if v.status != "ok")
    trajectories = Counter(reason_code(r.reason) for r in rows if r.score is None)
    return {
        "passes_total": len(verdicts),
        "passes_unscored": sum(passes.values()),
        "passes_by_reason": dict(passes.most_common()),
        "trajectories_unscored": sum(trajectories.values()),
        "trajectories_by_reason": dict(trajectories.most_common()),
        "trajectory_ids": [r.trajectory_id for r in rows if r.score is None],
    }


def environment_ledger(scores: list[ScoreRow]) -> list[dict[str, Any]]:
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


def repairs_section(repairs: list[RepairRow], present: bool) -> dict[str, Any]:
    by_route = Counter(r.route for r in repairs)
    return {"present": present, "total": len(repairs), "by_route": dict(by_route.most_common())}


def rejects_section(rejects: list[Reject], limit: int = 200) -> dict[str, Any]:
    """Input records that could not be imported, by reason, and the first ``limit`` of them in full."""
    return {
        "total": len(rejects),
        "by_reason": dict(Counter(reason_code(r.reason) for r in rejects).most_common()),
        "rows": [{"location": r.location(), "format": r.format, "reason": r.reason} for r in rejects[:limit]],
    }


# --- cost and time -----------------------------------------------------------------------------


def _add(total: float | None, value: float | None) -> int | float | None:
    if value is None:
        return total
    return value if total is None else total + value


def judge_cost(attempts: list[dict[str, Any]] | None, verdicts: list[Verdict]) -> dict[str, Any]:
    """Judge tokens and money per judge, every provider attempt included (failed and retried ones too).

    The store's attempt table is the source when the run has one; otherwise the verdicts (which hold only the
    final attempt of each pass, so the figures are a lower bound, and the section says so). A cost of None
    means some attempt had no price: the total is then marked incomplete rather than counted as zero.
    """
    model_of = {v.judge: v.model for v in verdicts if v.model}
    rows: dict[str, dict[str, Any]] = {}

    def row_for(judge: str) -> dict[str, Any]:
        return rows.setdefault(judge, {
            "judge": judge, "model": model_of.get(judge), "attempts": 0, "failed_attempts": 0, "cached_calls": 0,
            "input_tokens": None, "output_tokens": None, "cached_tokens": None, "cost_usd": None, "unpriced_attempts": 0,
        })

    if attempts is not None:
        source = "store.sqlite (every provider attempt)"
        for attempt in attempts:
            row = row_for(str(attempt.get("judge")))
            row["attempts"] += 1
            if str(attempt.get("outcome")) != "ok":
                row["failed_attempts"] += 1
            for name in ("input_tokens", "output_tokens", "cached_tokens", "cost_usd"):
                row[name] = _add(row[name], attempt.get(name))
            if attempt.get("cost_usd") is None and (attempt.get("input_tokens") or attempt.get("output_tokens")):
                row["unpriced_attempts"] += 1
        for verdict in verdicts:
            if verdict.cached:
                row_for(verdict.judge)["cached_calls"] += 1
    else:
        source = "verdicts.jsonl (final attempt of each pass only: no run store)"
        for verdict in verdicts:
            row = row_for(verdict.judge)
            row["attempts"] += max(1, verdict.attempts)
            row["failed_attempts"] += max(0, verdict.attempts - 1) + int(verdict.reason == "provider_error")
            row["cached_calls"] += int(verdict.cached)
            for name in ("input_tokens", "output_tokens", "cached_tokens"):
                row[name] = _add(row[name], getattr(verdict.usage, name))
            row["cost_usd"] = _add(row["cost_usd"], verdict.cost_usd)
            if verdict.cost_usd is None and verdict.usage.total and not verdict.deterministic:
                row["unpriced_attempts"] += 1
    by_judge = sorted(rows.values(), key=lambda r: r["judge"])
    total: dict[str, Any] = {"attempts": 0, "failed_attempts": 0, "input_tokens": None, "output_tokens": None,
                             "cached_tokens": None, "cost_usd": None, "unpriced_attempts": 0}
    for row in by_judge:
        for name in total:
            total[name] = _add(total[name], row[name])
    if total["cost_usd"] is not None:
        total["cost_usd"] = round(total["cost_usd"], 6)
    return {"source": source, "by_judge": by_judge, "total": total, "complete": total["unpriced_attempts"] == 0}


def generation_usage(trajectories: list[Trajectory]) -> dict[str, Any]:
    """Tokens the agents spent generating the trajectories (as far as the sources recorded them)."""
    total: dict[str, Any] = {"input_tokens": None, "output_tokens": None, "cached_tokens": None}
    with_usage = 0
    for trajectory in trajectories:
        usage = trajectory.generation_usage()
        if usage.total is None:
            continue
        with_usage += 1
        for name in total:
            total[name] = _add(total[name], getattr(usage, name))
    return {**total, "trajectories_with_usage": with_usage, "trajectories_without_usage": len(trajectories) - with_usage}


def teacher_usage(repairs: list[RepairRow]) -> dict[str, Any]:
    """Tokens the repair stage's teacher model spent on guidance and rewrites (``extra.teacher_usage``)."""
    total: dict[str, Any] = {"input_tokens": None, "output_tokens": None, "cached_tokens": None}
    used = 0
    for row in repairs:
        usage = row.extra.get("teacher_usage")
        if not isinstance(usage, dict) or all(usage.get(name) is None for name in total):
            continue
        used += 1
        for name in total:
            value = usage.get(name)
            total[name] = _add(total[name], value if isinstance(value, (int, float)) else None)
    return {**total, "repairs_with_usage": used}


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


def time_section(manifest: RunManifest, attempts: list[dict[str, Any]] | None, verdicts: list[Verdict]) -> dict[str, Any]:
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
    latencies = [float(a["latency_s"]) for a in attempts or [] if isinstance(a.get("latency_s"), (int, float))]
    if attempts is None:
        latencies = [v.latency_s for v in verdicts if v.latency_s is not None]
    return {
        "wall_s": round(wall, 3) if wall is not None else None,
        "wall_source": source,
        "judge_latency_s": round(sum(latencies), 3) if latencies else None,
        "timed_calls": len(latencies),
    }


# --- reproducibility and per-trajectory rows ---------------------------------------------------


def reproducibility(manifest: RunManifest, verdicts: list[Verdict]) -> dict[str, Any]:
    """What someone needs to rerun this batch the same way: panel, prompt, rubric, embedder, thresholds."""
    recorded = manifest.to_json()
    prompt_versions = sorted({v.prompt_version for v in verdicts if v.prompt_version})
    planned_prompt = manifest.panel.prompt_version if manifest.panel is not None else None
    if isinstance(planned_prompt, str) and planned_prompt not in prompt_versions:  # a list: the verdicts name them
        prompt_versions.insert(0, planned_prompt)
    return {
        "trajudge_version": __version__,
        "panel": recorded.get("panel") or None,
        "judges": sorted({v.judge for v in verdicts}),
        "models": sorted({v.model for v in verdicts if v.model}),
        "prompt_versions": prompt_versions,
        "rubric": recorded.get("rubric"),
        "cluster": recorded.get("cluster"),
        "embedder": recorded.get("embedder"),
        "manifest": recorded,
    }


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
        "stale": len(review.stale),
    }


def trajectory_rows(
    trajectories: list[Trajectory], scores: dict[str, ScoreRow], clusters: list[Cluster], repairs: list[RepairRow]
) -> list[dict[str, Any]]:
    """One machine-readable row per trajectory (the report's index)."""
    by_trajectory: dict[str, list[Cluster]] = defaultdict(list)
    for cluster in clusters:
        by_trajectory[cluster.trajectory_id].append(cluster)
    route_of = {r.trajectory_id: r.route for r in repairs}
    turns_of = {t.id: t.turn_count for t in trajectories}
    result = []
    for trajectory_id, row in scores.items():
        own = by_trajectory.get(trajectory_id, [])
        majority = [c for c in own if c.majority]
        result.append({
            "id": trajectory_id,
            "score": row.score,
            "release": row.release,
            "reason": row.reason,
            "failed_checks": row.failed_checks,
            "valid_passes": row.valid_passes,
            "panel_size": row.panel_size,
            "turns": turns_of.get(trajectory_id),
            "majority_issues": len(majority),
            "minority_issues": len(own) - len(majority),
            "severe": sum(1 for c in majority if c.severity == "severe"),
            "categories": sorted({c.category for c in majority}),
            "tags": sorted({c.tag for c in majority if c.tag}),
            "all_categories": sorted({c.category for c in own}),
            "all_tags": sorted({c.tag for c in own if c.tag}),
            "route": route_of.get(trajectory_id),
            "review": review_marker(row),
        })
    return result
