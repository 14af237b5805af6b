"""Typed rows of the run directory (docs/contracts.md, "Run directory") and the judge's issue model.

Each stage reads and writes these models only, so a stage can be rerun from the files of the previous one
(``judge rescore``, ``judge report``, ``judge repair``) without any judge call.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judge.model import Usage

Category = Literal["code", "semantic", "capability", "environment"]
Severity = Literal["severe", "minor"]
Efficiency = Literal["high", "medium", "low"]
PassStatus = Literal["ok", "unscored"]
UnscoredReason = Literal[
    "parse_error", "refusal", "truncated", "context_overflow", "provider_error", "connection_error", "budget_exceeded",
    "invalid_turn", "no_assistant_turn", "batch_expired", "batch_cancelled", "batch_failed", "answer_too_large",
    "usage_implausible",
]
Route = Literal["online-guided", "online-regenerate", "rewrite-restart", "environment", "offline-edit", "pending"]

CATEGORIES: tuple[Category, ...] = ("code", "semantic", "capability", "environment")
SEVERITIES: tuple[Severity, ...] = ("severe", "minor")
EFFICIENCIES: tuple[Efficiency, ...] = ("high", "medium", "low")


class Issue(BaseModel):
    """One finding of one judge pass. Reasoning (description) comes before the verdict fields a judge fills."""

    model_config = ConfigDict(extra="forbid")

    turn: int | None = Field(description="The assistant turn (T1 = 1) whose decision was faulty; None if not localised.")
    category: Category = Field(description="code: tool/argument/syntax/usage; semantic: wrong logic, missed requirement, false claim; capability: beyond the model as asked; environment: network/auth/quota/infra.")
    severity: Severity
    description: str = Field(description="What went wrong, in one or two sentences.")
    evidence: str = Field(default="", description="Text quoted from the trajectory that shows it.")
    tag: str | None = Field(default=None, description="Short machine name, e.g. repeated-failure, unverified-completion.")
    recovered: bool | None = Field(
        default=None,
        description="Environment faults: True when the agent got past the fault within the trajectory (a later call "
        "of the same intent succeeded): recorded, does not block release. False: never got past it. None: not said.",
    )
    evidence_verified: bool | None = Field(
        default=None,
        description="True: the evidence was found verbatim in the trajectory (whitespace and quote marks normalised); "
                    "False: it was not, so it weighs nothing in clustering; None: not checked, or no quote given.",
    )


class Verdict(BaseModel):
    """``verdicts.jsonl``: one row per (trajectory, judge, pass). Unscored passes stay in the file with a reason."""

    model_config = ConfigDict(extra="forbid")

    trajectory_id: str
    judge: str = Field(description="The judge spec, e.g. 'rules', 'openai:gpt-4o', 'replay:path'.")
    pass_index: int
    pass_key: str = Field(description="Unique label of this pass within the panel, e.g. 'openai:gpt-4o#1'.")
    status: PassStatus
    reason: str | None = Field(default=None, description="Why the pass is unscored (UnscoredReason), else None.")
    detail: str | None = Field(default=None, description="Human-readable detail of the reason.")
    raw: str | None = Field(default=None, description="The raw model output, kept for unscored passes.")
    reasoning: str | None = Field(default=None, description="The judge's reasoning before its verdict, when it gave one.")
    issues: list[Issue] = Field(default_factory=list)
    efficiency: Efficiency | None = None
    critical_turn: int | None = Field(
        default=None, description="The turn of the critical step (root cause of the failure) the pass named; None: none named.")
    windows: int | None = Field(
        default=None, description="Overlapping windows the trajectory was judged in (long trajectories); None: one call.")
    model: str | None = None
    prompt_version: str | None = None
    deterministic: bool = False
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    latency_s: float | None = None
    attempts: int = 1
    cached: bool = False
    cached_from: str | None = Field(
        default=None, description="'shared': the answer came from the cache shared across runs (judge cache stats), "
                                  "so this run paid nothing for it (cost_usd 0, no attempt); None: judged for this run.")
    original_cost_usd: float | None = Field(
        default=None, description="For an answer from the shared cache: what it cost when it was paid for.")


class ClusterMember(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pass_key: str
    issue_index: int
    issue: Issue


class Cluster(BaseModel):
    """``clusters.jsonl``: issues of different passes that describe one defect."""

    model_config = ConfigDict(extra="forbid")

    trajectory_id: str
    cluster: str = Field(description="Id unique within the trajectory.")
    members: list[ClusterMember]
    votes: int = Field(description="Distinct passes among the members.")
    panel_size: int
    majority: bool
    turn: int | None
    category: Category
    severity: Severity
    tag: str | None = None
    recovered: bool | None = Field(default=None, description="True only when every member that says, says recovered.")
    description: str


class ScoredIssue(BaseModel):
    """A majority issue as it appears in ``scores.jsonl``."""

    model_config = ConfigDict(extra="forbid")

    cluster: str
    turn: int | None
    category: Category
    severity: Severity
    tag: str | None = None
    recovered: bool | None = None
    description: str
    votes: int


# --- human review (docs/review.md) -------------------------------------------------------------------

OVERRIDE_SCHEMA = "trajudge.override/1"
ReviewKind = Literal["confirm-issue", "reject-issue", "add-issue", "release-override", "undo"]
REVIEW_KINDS: tuple[ReviewKind, ...] = ("confirm-issue", "reject-issue", "add-issue", "release-override", "undo")
RELEASE_TARGET = "release"  # the target of every release-override row (issue decisions target a cluster or added id)


class ReviewedState(BaseModel):
    """What a reviewer saw when deciding: a decision is applied only while the run still shows the same."""

    model_config = ConfigDict(extra="forbid")

    trajectory_hash: str = Field(description="Trajectory.content_hash() of the trajectory reviewed.")
    clusters_hash: str = Field(description="judge.review.clusters_fingerprint of its clusters (ids, members, majority).")
    clusters: list[str] = Field(default_factory=list, description="The cluster ids it had (for messages).")
    score: int | None = Field(default=None, description="The machine score shown.")
    release: bool = Field(description="The machine release decision shown (before any human decision).")


class OverrideRow(BaseModel):
    """``overrides.jsonl``: one human decision. Append-only: the last row per (trajectory, target) wins, and an
    undo is a new row. ``target`` is the cluster id (confirm/reject), the added issue's id (``h1``, ...) or
    ``release``; an undo names the target it clears."""

    model_config = ConfigDict(extra="forbid")

    schema_version: str = OVERRIDE_SCHEMA
    trajectory_id: str
    kind: ReviewKind
    target: str = Field(min_length=1)
    issue: Issue | None = Field(default=None, description="add-issue: the issue the panel missed.")
    release: bool | None = Field(default=None, description="release-override: the reviewer's release decision.")
    reason: str | None = Field(default=None, description="Why; required when a release decision differs from the machine's.")
    reviewer: str = Field(min_length=1)
    at: str = Field(description="When the decision was made (ISO 8601, UTC).")
    seen: ReviewedState

    @model_validator(mode="after")
    def _fields_of_the_kind(self) -> OverrideRow:
        if self.kind == "add-issue" and self.issue is None:
            raise ValueError("an add-issue row needs the issue (turn, category, severity, description)")
        if self.kind != "add-issue" and self.issue is not None:
            raise ValueError(f"a {self.kind} row takes no issue")
        if self.kind == "release-override":
            if self.release is None:
                raise ValueError("a release-override row needs release: true or false")
            if self.target != RELEASE_TARGET:
                raise ValueError(f"a release-override row targets {RELEASE_TARGET!r}, not {self.target!r}")
            if self.release != self.seen.release and not (self.reason or "").strip():
                raise ValueError("overriding the machine's release decision needs a reason")
        elif self.release is not None:
            raise ValueError(f"a {self.kind} row takes no release value")
        return self


class ReviewDecision(BaseModel):
    """A human decision as applied to (or withheld from) a score row."""

    model_config = ConfigDict(extra="forbid")

    kind: ReviewKind
    target: str
    reviewer: str
    at: str
    reason: str | None = None
    stale: str | None = Field(default=None, description="Why it was not applied (the run changed since); None: applied.")


class MachineResult(BaseModel):
    """The panel's result before any human decision, kept beside the human-adjusted one."""

    model_config = ConfigDict(extra="forbid")

    score: int | None
    reason: str
    release: bool
    failed_checks: list[str] = Field(default_factory=list, description="The gate's failed checks on the panel's issues.")
    majority: list[str] = Field(default_factory=list, description="The panel's majority clusters (agent and environment).")


class ReleaseDecision(BaseModel):
    """A reviewer's release decision that the row applies."""

    model_config = ConfigDict(extra="forbid")

    release: bool
    reviewer: str
    at: str
    reason: str | None = None
    over_failed_checks: list[str] = Field(
        default_factory=list, description="Gate checks that failed and that this decision released over (shown prominently).")
    over_score: bool = Field(
        default=False, description="True: released although the rubric does not release its score (or it has none).")


class HumanReview(BaseModel):
    """``scores.jsonl`` ``review``: what human review changed, beside the machine's result."""

    model_config = ConfigDict(extra="forbid")

    machine: MachineResult
    confirmed: list[str] = Field(default_factory=list, description="Majority clusters a reviewer confirmed.")
    rejected: list[str] = Field(default_factory=list, description="Majority clusters a reviewer rejected: they no longer count.")
    confirmed_minority: list[str] = Field(default_factory=list, description="Minority clusters a reviewer confirmed: they count.")
    rejected_minority: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list, description="Ids of issues reviewers added (they count, votes 0).")
    release: ReleaseDecision | None = None
    decisions: list[ReviewDecision] = Field(default_factory=list, description="Every latest decision, applied or stale.")
    reviewers: list[str] = Field(default_factory=list)

    @property
    def stale(self) -> list[ReviewDecision]:
        return [d for d in self.decisions if d.stale is not None]


class ScoreRow(BaseModel):
    """``scores.jsonl``: one row per trajectory.

    With human decisions (``overrides.jsonl``), ``score``, ``reason``, ``release`` and the issues are the
    human-adjusted ones and ``review`` holds the machine's result beside them. ``failed_checks`` stays the gate's:
    a release decision never removes a check (only the environment check follows the human-adjusted ledger).
    """

    model_config = ConfigDict(extra="forbid")

    trajectory_id: str
    score: int | None = Field(description="2-5, or None when the trajectory could not be scored.")
    reason: str = Field(description="Why this score (or why none), in words.")
    release: bool
    failed_checks: list[str] = Field(default_factory=list)
    issues: list[ScoredIssue] = Field(default_factory=list)
    environment: list[ScoredIssue] = Field(default_factory=list, description="Majority environment issues (ledger).")
    efficiency_votes: list[Efficiency] = Field(default_factory=list)
    panel_size: int
    valid_passes: int
    rubric: str | None = None
    review: HumanReview | None = Field(default=None, description="Human decisions applied (docs/review.md); None: none.")


class RepairRow(BaseModel):
    """``repairs.jsonl``: one row per trajectory with majority issues."""

    model_config = ConfigDict(extra="forbid")

    trajectory_id: str
    route: Route
    reason: str
    checkpoint_turn: int | None = None
    cluster: str | None = None
    guidance: str | None = None
    moot: list[str] = Field(default_factory=list, description="Clusters made moot by this repair.")
    extra: dict[str, Any] = Field(default_factory=dict)


class Reject(BaseModel):
    """``rejects.jsonl``: an input record that could not be imported. Nothing is dropped silently."""

    model_config = ConfigDict(extra="forbid")

    source_file: str
    line: int | None = Field(default=None, description="1-based line for line-oriented files.")
    record_index: int | None = Field(default=None, description="0-based record index inside a JSON document.")
    format: str | None = None
    reason: str

    def location(self) -> str:
        where = self.source_file
        if self.line is not None:
            where += f":{self.line}"
        if self.record_index is not None:
            where += f" [record {self.record_index}]"
        return where
