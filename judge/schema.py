"""Typed rows of the run directory (DESIGN.md, "Run directory") and the judge's issue model.

Each stage reads and writes these models only, so a stage can be rerun from the files of the previous one
(``judge rescore``, ``judge report``, ``judge repair``) without any judge call.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judge.model import Usage

Category = Literal["code", "semantic", "capability", "environment"]
Severity = Literal["severe", "minor"]
Efficiency = Literal["high", "medium", "low"]
PassStatus = Literal["ok", "unscored"]
UnscoredReason = Literal[
    "parse_error", "refusal", "truncated", "context_overflow", "provider_error", "connection_error", "budget_exceeded",
    "invalid_turn", "no_assistant_turn", "batch_expired", "batch_cancelled", "batch_failed",
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


class ScoreRow(BaseModel):
    """``scores.jsonl``: one row per trajectory."""

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
