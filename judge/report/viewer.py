"""The trajectory viewer's view model: each trajectory as blocks in source order, issues pinned to turns.

Everything here is plain data for the templates, which escape all of it. Nothing from the data becomes a
file name, and HTML anchors are derived from a hash of the trajectory id, never from the id itself.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from judge.model import Message, Receipt, Trajectory
from judge.schema import Cluster, HumanReview, RepairRow, ScoredIssue, ScoreRow, Verdict

FOLD_CHARS = 700  # receipts (and system prompts) longer than this fold into <details>
FOLD_LINES = 12


def anchor_id(trajectory_id: str) -> str:
    """An HTML id for a trajectory: stable, unique in practice, and free of any character from the data."""
    return "t-" + hashlib.sha256(trajectory_id.encode("utf-8")).hexdigest()[:12]


def is_long(text: str) -> bool:
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


def query_preview(query: str, limit: int = 160) -> str:
    """The start of a query on one line, for the index's text search and tooltips."""
    text = " ".join(query.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 issue``, ``2 issues``, ``1,234 issues`` (``many``: the plural when it is not ``word`` + s)."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def preview(text: str, limit: int = 140) -> str:
    """First line of ``text``, cut to ``limit`` characters, for the summary of a folded block."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


@dataclass
class Wording:
    pass_key: str
    turn: int | None
    description: str
    evidence: str


@dataclass
class IssueView:
    """One cluster as the viewer shows it: the merged issue, its votes, and each pass's own wording."""

    cluster: str
    turn: int | None
    category: str
    severity: str
    tag: str | None
    description: str
    votes: int
    panel_size: int
    majority: bool
    wordings: list[Wording]
    human: str | None = None  # a reviewer's decision on it: "confirmed by alice", "rejected by bob: not counted", ...
    decision: str | None = None  # "confirmed", "rejected" or "added" (None: no human decision)

    @classmethod
    def from_cluster(cls, cluster: Cluster) -> IssueView:
        wordings = [
            Wording(m.pass_key, m.issue.turn, m.issue.description, m.issue.evidence)
            for m in sorted(cluster.members, key=lambda m: (m.pass_key, m.issue_index))
        ]
        return cls(cluster.cluster, cluster.turn, cluster.category, cluster.severity, cluster.tag, cluster.description,
                   cluster.votes, cluster.panel_size, cluster.majority, wordings)


@dataclass
class CallView:
    id: str
    name: str
    arguments: str
    arguments_error: str | None
    answered: bool
    long: bool = False
    preview: str = ""


@dataclass
class ReceiptView:
    call_id: str | None
    name: str | None
    content: str
    is_error: bool
    exit_code: int | None
    long: bool
    preview: str

    @classmethod
    def from_receipt(cls, receipt: Receipt) -> ReceiptView:
        failed = receipt.is_error or (receipt.exit_code not in (None, 0))
        return cls(receipt.call_id, receipt.name, receipt.content, failed, receipt.exit_code,
                   is_long(receipt.content), preview(receipt.content))


@dataclass
class Block:
    """One message of the trajectory, in source order."""

    role: str
    turn: int | None
    content: str
    name: str | None = None
    reasoning: str | None = None
    calls: list[CallView] = field(default_factory=list)
    receipt: ReceiptView | None = None
    issues: list[IssueView] = field(default_factory=list)  # majority issues pinned to this assistant turn
    minority_count: int = 0
    long: bool = False


@dataclass
class PassView:
    pass_key: str
    judge: str
    status: str
    reason: str | None
    detail: str | None
    raw: str | None
    efficiency: str | None
    issues: int
    model: str | None
    cached: bool


@dataclass
class CheckView:
    name: str
    passed: bool


@dataclass
class TrajectoryView:
    id: str
    anchor: str
    query: str
    score: int | None
    score_key: str
    release: bool
    reason: str
    valid_passes: int
    panel_size: int
    efficiency_votes: list[str]
    checks: list[CheckView]
    failed_checks: list[str]
    metadata: list[tuple[str, str]]
    blocks: list[Block]
    unpinned: list[IssueView]  # majority issues whose turn is missing or not in the trajectory
    minority: list[IssueView]
    environment: list[IssueView]
    passes: list[PassView]
    repair: RepairRow | None
    categories: list[str]
    tags: list[str]
    turns: int
    review: HumanReview | None = None  # human decisions applied to the score row (docs/review.md)
    added: list[IssueView] = field(default_factory=list)  # issues reviewers added (they count; no panel vote)


def _arguments_text(arguments: Any, raw: str | None, error: str | None) -> str:
    if error is not None:
        return raw or ""
    if isinstance(arguments, (dict, list)):
        return json.dumps(arguments, ensure_ascii=False, indent=2)
    return "" if arguments is None else str(arguments)


def _metadata_rows(trajectory: Trajectory) -> list[tuple[str, str]]:
    meta = trajectory.metadata
    rows: list[tuple[str, str]] = [("query id", trajectory.query_id), ("format", meta.source_format)]
    if meta.source_file:
        rows.append(("source", meta.source_file + (f":{meta.source_line}" if meta.source_line is not None else "")))
    for label, value in (("model", meta.model), ("arm", meta.arm), ("continues", meta.source_id),
                         ("branch turn", meta.branch_turn), ("target issue", meta.target_issue),
                         ("budget exhausted", meta.budget_exhausted), ("reward", meta.reward), ("outcome", meta.outcome)):
        if value is not None:
            rows.append((label, str(value)))
    recorded = meta.task_outcome
    if recorded is not None and (recorded.status != "unknown" or recorded.source):
        rows.append(("recorded result", f"{recorded.status} ({recorded.note or recorded.source})"))
    usage = trajectory.generation_usage()
    if usage.total is not None:
        rows.append(("generation tokens", f"{usage.input_tokens or 0:,} in / {usage.output_tokens or 0:,} out"))
    return rows


def gate_check_names() -> list[str]:
    """Every release-gate check by name."""
    from judge.gate import AUTHENTICITY_DETECTORS, FORMAT_CHECKS, OUTCOME_CHECKS

    return list(FORMAT_CHECKS) + list(OUTCOME_CHECKS) + [f"authenticity:{name}" for name in AUTHENTICITY_DETECTORS]


def _checks(failed: list[str], known: list[str]) -> list[CheckView]:
    views = [CheckView(name, name not in failed) for name in known]
    views += [CheckView(name, False) for name in failed if name not in known]
    return views


def build_view(
    trajectory: Trajectory,
    score: ScoreRow,
    clusters: list[Cluster],
    verdicts: list[Verdict],
    repair: RepairRow | None,
    check_names: list[str],
) -> TrajectoryView:
    """The viewer's model of one trajectory (pure)."""
    issues = [IssueView.from_cluster(c) for c in clusters]
    added = _human_decisions(score.review, issues, score.issues + score.environment, score.panel_size)
    turns = {m.turn for m in trajectory.messages if m.role == "assistant"}
    environment = [i for i in issues if i.majority and i.category == "environment"]
    pinned: dict[int, list[IssueView]] = defaultdict(list)
    unpinned: list[IssueView] = []
    minority_by_turn: dict[int, int] = defaultdict(int)
    for issue in issues:
        if not issue.majority:
            if issue.turn is not None:
                minority_by_turn[issue.turn] += 1
            continue
        if issue.turn is not None and issue.turn in turns:
            pinned[issue.turn].append(issue)
        else:
            unpinned.append(issue)
    for group in pinned.values():
        group.sort(key=lambda i: (i.severity != "severe", -i.votes, i.cluster))

    answered = {m.receipt.call_id for m in trajectory.messages if m.role == "tool" and m.receipt and m.receipt.call_id}
    blocks = [_block(m, pinned, minority_by_turn, answered) for m in trajectory.messages]
    return TrajectoryView(
        id=trajectory.id,
        anchor=anchor_id(trajectory.id),
        query=trajectory.query,
        score=score.score,
        score_key="unscored" if score.score is None else str(score.score),
        release=score.release,
        reason=score.reason,
        valid_passes=score.valid_passes,
        panel_size=score.panel_size,
        efficiency_votes=list(score.efficiency_votes),
        checks=_checks(score.failed_checks, check_names),
        failed_checks=list(score.failed_checks),
        metadata=_metadata_rows(trajectory),
        blocks=blocks,
        unpinned=unpinned,
        minority=sorted((i for i in issues if not i.majority), key=lambda i: (i.turn is None, i.turn or 0, i.cluster)),
        environment=environment,
        passes=[
            PassView(v.pass_key, v.judge, v.status, v.reason, v.detail, v.raw, v.efficiency, len(v.issues), v.model, v.cached)
            for v in sorted(verdicts, key=lambda v: (v.judge, v.pass_index, v.pass_key))
        ],
        repair=repair,
        categories=sorted({i.category for i in issues if i.majority}),
        tags=sorted({i.tag for i in issues if i.majority and i.tag}),
        turns=len(turns),
        review=score.review,
        added=added,
    )


def _human_decisions(review: HumanReview | None, issues: list[IssueView], counted: list[ScoredIssue],
                     panel_size: int) -> list[IssueView]:
    """Mark the clusters reviewers decided on (in place) and return the issues they added, as views."""
    if review is None:
        return []
    who = {d.target: d.reviewer for d in review.decisions if d.stale is None}
    for issue in issues:
        if issue.cluster in review.rejected or issue.cluster in review.rejected_minority:
            issue.human = f"rejected by {who.get(issue.cluster, 'a reviewer')}: not counted"
            issue.decision = "rejected"
        elif issue.cluster in review.confirmed or issue.cluster in review.confirmed_minority:
            issue.human = f"confirmed by {who.get(issue.cluster, 'a reviewer')}" + ("" if issue.majority else ": counted")
            issue.decision = "confirmed"
    return [IssueView(i.cluster, i.turn, i.category, i.severity, i.tag, i.description, i.votes, panel_size, True, [],
                      human=f"added by {who.get(i.cluster, 'a reviewer')}", decision="added")
            for i in counted if i.cluster in review.added]


def _block(message: Message, pinned: dict[int, list[IssueView]], minority_by_turn: dict[int, int], answered: set[str]) -> Block:
    block = Block(role=message.role, turn=message.turn, content=message.content, name=message.name,
                  reasoning=message.reasoning or None, long=message.role == "system" and is_long(message.content))
    if message.role == "assistant" and message.turn is not None:
        block.issues = pinned.get(message.turn, [])
        block.minority_count = minority_by_turn.get(message.turn, 0)
    for call in message.tool_calls:
        text = _arguments_text(call.arguments, call.raw_arguments, call.arguments_error)
        one_line = text if call.arguments_error else json.dumps(call.arguments, ensure_ascii=False, default=str)
        block.calls.append(CallView(call.id, call.name, text, call.arguments_error, call.id in answered,
                                    long=is_long(text), preview=preview(one_line)))
    if message.receipt is not None:
        block.receipt = ReceiptView.from_receipt(message.receipt)
    return block
