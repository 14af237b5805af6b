"""The rubric as data (rubrics/*.yaml) and the per-trajectory score row.

:func:`score_trajectory` is a pure function of the verdicts, clusters, rubric and the failed gate checks;
``judge rescore`` reruns it from stored verdicts without any judge call. The default rubric
(``rubrics/default-v2.yaml``) follows docs/contracts.md:

- fewer valid passes than floor(n/2)+1 of the n planned passes: no score, reason ``no_quorum``;
- any severe majority issue: 2; only minor ones: 3; none: 4; none and enough ``high`` efficiency votes: 5
  (a majority of the planned passes and at least ``efficient.min_votes``, 2: a panel of one stops at 4);
- environment issues go to the environment ledger (``ScoreRow.environment``) and do not lower the score; an
  unrecovered one (or one whose recovery no pass states) adds the failed check ``environment-fault-rerun``, so it
  blocks release until a rerun; a fault the agent got past within the trajectory (``recovered``: a later call of
  the same intent succeeded) is recorded but does not block, unless the rubric says ``recovered_blocks: true``;
- only scores in ``release.scores`` are released, and only when no gate check failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judge.cluster import majority_floor
from judge.model import Trajectory
from judge.schema import Category, Cluster, Efficiency, ScoredIssue, ScoreRow, Verdict

DEFAULT_RUBRIC = "default-v2.yaml"
NO_QUORUM = "no_quorum"
ENVIRONMENT_CATEGORIES: tuple[Category, ...] = ("environment",)


class RubricScores(BaseModel):
    model_config = ConfigDict(extra="forbid")

    any_severe: int = 2
    only_minor: int = 3
    none: int = 4
    none_efficient: int = 5


class RubricEfficient(BaseModel):
    """When "no majority issue" earns the top score: enough passes vote efficiency ``vote``.

    ``votes`` is relative to the panel (``majority`` = floor(n/2)+1) or a count; ``min_votes`` is a floor on it
    whatever the panel size, so that a panel of one (the rules judge) cannot reach the top score on its single
    vote unless a rubric says so with ``min_votes: 1``. docs/contracts.md's rule, ">= 2 passes vote high" (2 of 3), is
    ``votes: majority`` with ``min_votes: 2``.
    """

    model_config = ConfigDict(extra="forbid")

    vote: Efficiency = "high"
    votes: int | Literal["majority"] = Field(
        default="majority", description="Votes needed for the top score: a count, or 'majority' = floor(n/2)+1."
    )
    min_votes: int = Field(
        default=2, ge=1, description="At least this many votes, whatever the panel size (2: one pass alone never reaches 5)."
    )

    @model_validator(mode="after")
    def _votes_not_below_floor(self) -> RubricEfficient:
        if self.votes != "majority" and int(self.votes) < self.min_votes:
            raise ValueError(f"efficient.votes {self.votes} is below efficient.min_votes {self.min_votes}; "
                             f"set min_votes: {self.votes} to let {self.votes} vote(s) give the top score")
        return self

    def needed(self, panel_size: int) -> int:
        """High votes needed for the top score on a panel of ``panel_size`` planned passes (pure)."""
        relative = majority_floor(panel_size) if self.votes == "majority" else int(self.votes)
        return max(relative, self.min_votes)


class RubricEnvironment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    categories: list[Category] = Field(default_factory=lambda: list(ENVIRONMENT_CATEGORIES))
    lowers_score: bool = False
    failed_check: str = "environment-fault-rerun"
    recovered_blocks: bool = Field(
        default=False, description="Whether a fault the agent recovered from within the trajectory blocks release too."
    )

    def blocking(self, ledger: list[ScoredIssue]) -> list[ScoredIssue]:
        """The ledger issues that block release until a rerun: unrecovered ones, or all if ``recovered_blocks``."""
        return list(ledger) if self.recovered_blocks else [i for i in ledger if i.recovered is not True]


class RubricRelease(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scores: list[int] = Field(default_factory=lambda: [4, 5])


class Rubric(BaseModel):
    """A versioned rubric file."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: int
    description: str = ""
    scores: RubricScores = Field(default_factory=RubricScores)
    efficient: RubricEfficient = Field(default_factory=RubricEfficient)
    environment: RubricEnvironment = Field(default_factory=RubricEnvironment)
    release: RubricRelease = Field(default_factory=RubricRelease)
    source: str | None = Field(default=None, description="The file it was read from (not part of the file).")

    @property
    def label(self) -> str:
        return f"{self.name}-v{self.version}"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "label": self.label, "source": self.source}


def load_rubric(path: Path | str | None) -> Rubric:
    """Read a rubric YAML file; errors name the file.

    ``None`` is the bundled default; a bare name such as ``default-v1`` is looked up in rubrics/.
    """
    from judge.resources import resource_dir, resource_path

    if path is None:
        path = resource_path("rubrics", DEFAULT_RUBRIC)
    path = Path(path)
    if not path.exists() and path.parent == Path(".") and (resource_dir("rubrics") / f"{path.name}.yaml").exists():
        path = resource_dir("rubrics") / f"{path.name}.yaml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"rubric file not found: {path}") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a rubric must be a YAML mapping")
    try:
        return Rubric.model_validate({**data, "source": str(path)})
    except ValidationError as error:
        raise ValueError(f"{path}: not a valid rubric: {error}") from error


def scored_issue(cluster: Cluster) -> ScoredIssue:
    return ScoredIssue(
        cluster=cluster.cluster,
        turn=cluster.turn,
        category=cluster.category,
        severity=cluster.severity,
        tag=cluster.tag,
        recovered=cluster.recovered,
        description=cluster.description,
        votes=cluster.votes,
    )


def valid_pass_count(verdicts: list[Verdict]) -> int:
    """Distinct passes with status ``ok``."""
    return len({v.pass_key for v in verdicts if v.status == "ok"})


def rubric_score(
    rubric: Rubric, agent_issues: list[ScoredIssue], efficiency_votes: list[Efficiency], panel_size: int
) -> tuple[int, str]:
    """The score and its reason from the majority agent issues and efficiency votes (pure)."""
    severe = [i for i in agent_issues if i.severity == "severe"]
    if severe:
        turns = ", ".join(f"T{i.turn}" if i.turn is not None else "?" for i in severe)
        return rubric.scores.any_severe, f"{len(severe)} severe majority issue(s) ({turns})"
    if agent_issues:
        return rubric.scores.only_minor, f"{len(agent_issues)} minor majority issue(s), none severe"
    high = sum(1 for vote in efficiency_votes if vote == rubric.efficient.vote)
    needed = rubric.efficient.needed(panel_size)
    if high >= needed:
        return rubric.scores.none_efficient, f"no majority issue; {high} of {panel_size} passes vote efficiency {rubric.efficient.vote}"
    reason = f"no majority issue; {high} of {panel_size} passes vote efficiency {rubric.efficient.vote} (needs {needed}"
    if needed > panel_size:
        reason += f": a panel of {panel_size} cannot reach {rubric.scores.none_efficient} under rubric {rubric.label}"
    return rubric.scores.none, reason + ")"


def score_trajectory(
    trajectory: Trajectory | None,
    verdicts: list[Verdict],
    clusters: list[Cluster],
    rubric: Rubric,
    *,
    panel_size: int,
    failed_checks: list[str],
) -> ScoreRow:
    """Score one trajectory from its verdicts and clusters under ``rubric`` (no judge call)."""
    trajectory_id = trajectory.id if trajectory is not None else (verdicts[0].trajectory_id if verdicts else "")
    valid = valid_pass_count(verdicts)
    needed = majority_floor(panel_size)
    efficiency = [v.efficiency for v in verdicts if v.status == "ok" and v.efficiency is not None]
    majority = [c for c in clusters if c.majority]
    environment = [scored_issue(c) for c in majority if c.category in rubric.environment.categories]
    counted = majority if rubric.environment.lowers_score else [c for c in majority if c.category not in rubric.environment.categories]
    agent_issues = [scored_issue(c) for c in counted]
    checks = list(failed_checks)
    if rubric.environment.blocking(environment) and rubric.environment.failed_check not in checks:
        checks.append(rubric.environment.failed_check)
    if valid < needed:
        reasons = sorted({v.reason or "unknown" for v in verdicts if v.status != "ok"})
        return ScoreRow(
            trajectory_id=trajectory_id,
            score=None,
            reason=f"{NO_QUORUM}: {valid} valid of {panel_size} planned passes, {needed} needed"
            + (f" (unscored: {', '.join(reasons)})" if reasons else ""),
            release=False,
            failed_checks=checks,
            issues=[],
            environment=[],
            efficiency_votes=efficiency,
            panel_size=panel_size,
            valid_passes=valid,
            rubric=rubric.label,
        )
    score, reason = rubric_score(rubric, agent_issues, efficiency, panel_size)
    if environment:
        recovered = len(environment) - len(rubric.environment.blocking(environment))
        reason += f"; {len(environment)} environment issue(s) in the ledger" + (f" ({recovered} recovered)" if recovered else "")
    minority = sum(1 for c in clusters if not c.majority)
    if minority:  # kept in clusters.jsonl and reported, never silently dropped
        reason += f"; {minority} minority cluster(s) below {needed} votes"
    release = score in rubric.release.scores and not checks
    return ScoreRow(
        trajectory_id=trajectory_id,
        score=score,
        reason=reason,
        release=release,
        failed_checks=checks,
        issues=agent_issues,
        environment=environment,
        efficiency_votes=efficiency,
        panel_size=panel_size,
        valid_passes=valid,
        rubric=rubric.label,
    )
