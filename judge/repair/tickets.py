"""Continuation tickets: what a harness needs to restart a trajectory before its faulty decision.

The format is documented in docs/continuation-tickets.md; :class:`Ticket` is its schema. A ticket carries
the original query unchanged (judging stays anchored to it), the checkpoint with the message prefix to
restore, the receipts that may be reused (keyed by call id and ``ToolCall.argument_hash()``), the writes
whose outcome is unknown (they force a fresh environment), the plan state at the checkpoint, the target
issue with its evidence, and the guidance (LLM teacher or template) with the tokens it cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from judge.model import Message, ToolSpec, Trajectory, Usage
from judge.repair.calls import (
    call_sites,
    is_plan_call,
    is_read_only,
    missing_input,
    receipt_failed,
    rejected_before_running,
)
from judge.repair.prompting import (
    CallResult,
    ModelCaller,
    Provider,
    call_json,
    neutralise,
    render_prompt,
)
from judge.rules import DetectorNames
from judge.schema import Cluster, RepairRow, ScoredIssue

TICKET_VERSION = "trajudge.ticket/1"
TEACHER_PROMPT = "teacher-v1"
TEACHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"guidance": {"type": "string"}},
    "required": ["guidance"],
    "additionalProperties": False,
}
ONLINE_ROUTES = ("online-guided", "online-regenerate", "rewrite-restart", "environment")
# Rules detectors whose issue also asks the agent to revise its plan (registered with the role "plan").
PLAN_TAGS = DetectorNames("plan")

Arm = Literal["guided", "unguided", "rerun", "rewrite"]
TicketStatus = Literal["ready", "needs-rewrite"]


class ReusableReceipt(BaseModel):
    """A receipt of the prefix the harness may serve again for the same call (same name + argument hash)."""

    call_id: str
    name: str
    argument_hash: str
    turn: int
    is_error: bool
    exit_code: int | None = None
    content: str
    read_only: bool


class UnknownWrite(BaseModel):
    """A call of the prefix that may have changed state without a receipt saying what happened."""

    call_id: str
    name: str
    argument_hash: str
    turn: int
    reason: str


class TargetIssue(BaseModel):
    """The issue the continuation addresses (``target_issue`` of the continuation's metadata is its text)."""

    cluster: str | None
    turn: int | None
    category: str
    severity: str
    tag: str | None = None
    description: str
    votes: int | None = None

    def as_text(self) -> str:
        where = f"T{self.turn}" if self.turn is not None else "T?"
        return f"{where} {self.category}/{self.severity}{' [' + self.tag + ']' if self.tag else ''}: {self.description}"


class Ticket(BaseModel):
    """One continuation to run (one line of ``tickets.jsonl``)."""

    ticket_version: str = TICKET_VERSION
    ticket_id: str
    trajectory_id: str
    query_id: str
    query: str = Field(description="The original query, unchanged: the continuation is judged against it.")
    agent_query: str | None = Field(default=None, description="What the agent is given when it differs (a checked rewrite).")
    route: str
    arm: Arm
    status: TicketStatus = "ready"
    checkpoint_turn: int = Field(description="The last kept turn (0 = restart from the beginning).")
    branch_turn: int = Field(description="Same as checkpoint_turn; copy it into the continuation's metadata.")
    prefix: list[Message] = Field(description="Messages to restore, in order, with their turn numbers.")
    reusable_receipts: list[ReusableReceipt] = Field(default_factory=list)
    unknown_writes: list[UnknownWrite] = Field(default_factory=list)
    fresh_environment: bool = Field(description="True: rebuild state in a fresh environment instead of reusing one.")
    plan: Any = Field(default=None, description="The last plan (TodoWrite-style arguments) in the prefix, if any.")
    target_issue: TargetIssue
    moot: list[str] = Field(default_factory=list, description="Clusters the continuation makes moot.")
    prefix_issues: list[str] = Field(default_factory=list, description="Clusters inside the restored prefix: the continuation inherits them.")
    guidance: str | None = None
    guidance_source: str | None = Field(default=None, description="'template' or 'teacher:<spec>' (with prompt version).")
    evidence: list[str] = Field(default_factory=list)
    rewrite_check: dict[str, Any] | None = None
    usage: Usage = Field(default_factory=Usage, description="Teacher/rewrite tokens spent on this ticket (failed calls too).")
    cost_usd: float | None = Field(default=None, description="What those teacher/rewrite calls cost in USD (None: none "
                                                             "made, or unpriced).")
    tools: list[ToolSpec] = Field(default_factory=list, description="The tool schemas the source trajectory recorded "
                                                                    "(metadata.tools): what the agent was offered.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Copy into the continuation's record metadata.")

    def model_dump_json(self, **options: Any) -> str:
        """The ticket as JSON; with no options, a tickets.jsonl line (:meth:`to_json_bytes`)."""
        if options:
            return super().model_dump_json(**options)
        return self.to_json_bytes().decode("utf-8")

    def to_json_bytes(self) -> bytes:
        """The tickets.jsonl line (``model_dump_json()`` in UTF-8). The JSON of the prefix and the reusable receipts,
        most of a line, is shared with the ticket written just before when both hold the same objects (the guided
        and unguided arms of one trajectory): the same text, those serialised once."""
        rest = self.__pydantic_serializer__.to_json(self, exclude={"prefix", "reusable_receipts"})
        # Every field before ``prefix`` is a string or a number, and no JSON string holds an unescaped quote: the
        # first ``,"unknown_writes":`` is the key that follows ``prefix`` and ``reusable_receipts``.
        at = rest.index(_AFTER_SHARED)
        view = memoryview(rest)
        return b"".join((view[:at], b',"prefix":', _shared_json(self.prefix, self.reusable_receipts), view[at:]))


_AFTER_SHARED = b',"unknown_writes":'
_MESSAGES = TypeAdapter(list[Message])
_RECEIPTS = TypeAdapter(list[ReusableReceipt])
# The objects of the last prefix and reusable receipts serialised, and their JSON (strong references to those only).
_last_shared: tuple[tuple[Message | ReusableReceipt, ...], int, bytes] = ((), 0, b"")


def _shared_json(prefix: list[Message], receipts: list[ReusableReceipt]) -> bytes:
    """``prefix`` and ``reusable_receipts`` as Ticket's JSON writes them (``PREFIX,"reusable_receipts":RECEIPTS``);
    reused when the last call had the very same objects."""
    global _last_shared
    objects, split, text = _last_shared
    if (split != len(prefix) or len(objects) != len(prefix) + len(receipts)
            or any(a is not b for a, b in zip(objects, [*prefix, *receipts]))):
        text = b"".join((_MESSAGES.dump_json(prefix), b',"reusable_receipts":', _RECEIPTS.dump_json(receipts)))
        _last_shared = ((*prefix, *receipts), len(prefix), text)
    return text


def target_of(issue: ScoredIssue) -> TargetIssue:
    return TargetIssue(cluster=issue.cluster, turn=issue.turn, category=issue.category, severity=issue.severity,
                       tag=issue.tag, description=issue.description, votes=issue.votes)


def evidence_for(trajectory: Trajectory, issue: ScoredIssue, cluster: Cluster | None) -> list[str]:
    """Quotes of the issue: each pass's description and evidence, then the failed receipts of its turn."""
    quotes: list[str] = []
    if cluster is not None:
        for member in cluster.members:
            text = member.issue.evidence or member.issue.description
            line = f"[{member.pass_key}] {text}".strip()
            if line not in quotes:
                quotes.append(line)
    if issue.turn is not None:
        for site in call_sites(trajectory):
            if site.turn == issue.turn and site.failed and site.receipt is not None:
                quotes.append(f"T{site.turn} {site.call.name}({site.call.argument_text()[:200]}) -> {site.receipt.content[:400]}")
    return quotes


def prefix_before(trajectory: Trajectory, turn: int) -> list[Message]:
    """Every message before the assistant message of ``turn`` (turn 1 or less: system + user messages).

    A new list of the trajectory's own message objects (a deep copy of every prefix cost a third of repair
    routing): copy a message before changing it."""
    for index, message in enumerate(trajectory.messages):
        if message.role == "assistant" and (message.turn or 0) >= turn:
            return trajectory.messages[:index]
    return list(trajectory.messages)


def environment_state(trajectory: Trajectory, prefix: Sequence[Message]) -> tuple[list[ReusableReceipt], list[UnknownWrite], Any]:
    """Sort the prefix's calls into reusable receipts and writes of unknown outcome; find the plan state."""
    in_prefix = {c.id for m in prefix if m.role == "assistant" for c in m.tool_calls}
    reusable: list[ReusableReceipt] = []
    unknown: list[UnknownWrite] = []
    plan: Any = None
    for site in call_sites(trajectory):
        if site.call.id not in in_prefix:
            continue
        read_only, why = is_read_only(site.call)
        if is_plan_call(site.call):
            plan = site.call.arguments
        if site.receipt is None:
            if not read_only:
                unknown.append(UnknownWrite(call_id=site.call.id, name=site.call.name, argument_hash=site.call.argument_hash(),
                                            turn=site.turn, reason="no receipt"))
            continue
        failed = receipt_failed(site.receipt)
        if failed and not read_only and not rejected_before_running(site.receipt) \
                and missing_input(site.call, site.receipt) is None:
            unknown.append(UnknownWrite(call_id=site.call.id, name=site.call.name, argument_hash=site.call.argument_hash(),
                                        turn=site.turn, reason=f"failed write with no proof nothing changed ({why})"))
            continue
        reusable.append(ReusableReceipt(call_id=site.call.id, name=site.call.name, argument_hash=site.call.argument_hash(),
                                        turn=site.turn, is_error=failed, exit_code=site.receipt.exit_code,
                                        content=site.receipt.content, read_only=read_only))
    return reusable, unknown, plan


def template_guidance(trajectory: Trajectory, issue: ScoredIssue, evidence: Sequence[str]) -> str | None:
    """Guidance written from the issue's own evidence, used when no teacher model is configured."""
    turn = f"T{issue.turn}" if issue.turn is not None else "an earlier turn"
    quote = next((e for e in evidence if e.startswith("T") and "->" in e), evidence[0] if evidence else "")
    quote = quote[:300]
    if issue.category == "environment":
        return None  # not the agent's fault: the rerun needs no advice
    if issue.category == "code":
        failed = [s for s in call_sites(trajectory) if s.turn == issue.turn and s.failed]
        name = failed[0].call.name if failed else "the tool"
        text = (f"At {turn} a call failed: {issue.description} Evidence: {quote} "
                f"Before calling {name} again, check which arguments it accepts (its --help or schema) and correct "
                "the call; do not repeat the same arguments, and read the receipt before going on.")
    elif issue.category == "semantic":
        text = (f"At {turn} the decision was wrong: {issue.description} Evidence: {quote} "
                "Re-read the original request and the tool results so far, fix this before continuing, and only "
                "report something as done after a successful tool result shows it.")
    else:
        text = f"At {turn}: {issue.description} Evidence: {quote}"
    if issue.tag in PLAN_TAGS:
        text += (" Revise the plan: put the affected item back to in_progress (add a task for any missing "
                 "prerequisite before it) and mark it completed only when a successful receipt supports it.")
    return " ".join(text.split())


async def teacher_guidance(
    teacher: Provider | ModelCaller, trajectory: Trajectory, issue: ScoredIssue, evidence: Sequence[str],
    checkpoint_turn: int,
) -> CallResult:
    """Ask the teacher model for guidance (prompts/teacher-v1.md). Never raises; see ``call_json``."""
    from judge.prompting import render_trajectory

    prefix = trajectory.model_copy(update={"messages": prefix_before(trajectory, checkpoint_turn + 1)})
    rendered = render_trajectory(prefix, max_tokens=12000)
    messages = render_prompt(
        TEACHER_PROMPT,
        query=neutralise(trajectory.query),
        transcript=rendered.text,
        turn=issue.turn if issue.turn is not None else "?",
        category=issue.category,
        severity=issue.severity,
        tag=f", tag {neutralise(issue.tag, inline=True)}" if issue.tag else "",
        description=neutralise(issue.description),
        evidence=neutralise("\n".join(evidence)),
        checkpoint_turn=checkpoint_turn,
    )
    result = await call_json(teacher, messages, TEACHER_SCHEMA, schema_name="guidance", purpose=TEACHER_PROMPT,
                             trajectory_id=trajectory.id, max_tokens=400)
    if result.parsed is not None and not isinstance(result.parsed.get("guidance"), str):
        result.error, result.parsed = "parse_error: no 'guidance' string", None
    return result


def build_tickets(
    trajectory: Trajectory,
    row: RepairRow,
    issue: ScoredIssue,
    *,
    guidance: str | None,
    guidance_source: str | None,
    usage: Usage | None = None,
    cost_usd: float | None = None,
    agent_query: str | None = None,
    rewrite_check: dict[str, Any] | None = None,
    control_arm: bool = True,
    evidence: list[str],
) -> list[Ticket]:
    """The tickets of one repair row: guided + unguided arms for the online routes, one rerun for the
    environment, one restart for a capability rewrite (``needs-rewrite`` until a checked rewrite exists).
    ``evidence``: the issue's :func:`evidence_for` (the caller has found it for the guidance)."""
    if row.route not in ONLINE_ROUTES:
        return []
    checkpoint = row.checkpoint_turn or 0
    if row.route == "rewrite-restart":
        prefix = [m for m in trajectory.messages if m.role == "system" and (m.turn or 0) == 0]
    else:
        prefix = prefix_before(trajectory, checkpoint + 1)
    reusable, unknown, plan = environment_state(trajectory, prefix)
    target = target_of(issue)
    common: dict[str, Any] = {
        "trajectory_id": trajectory.id, "query_id": trajectory.query_id, "query": trajectory.query, "route": row.route,
        "checkpoint_turn": checkpoint, "branch_turn": checkpoint, "prefix": prefix, "reusable_receipts": reusable,
        "unknown_writes": unknown, "plan": plan, "target_issue": target, "moot": list(row.moot), "evidence": evidence,
        "prefix_issues": [i["cluster"] for i in row.extra.get("issues", []) if i.get("role") == "prefix"],
        "tools": [t.model_copy(deep=True) for t in trajectory.metadata.tools],
        # An environment fault anywhere in the run (even one the continuation makes moot) needs a fresh,
        # repaired environment: the same expired token would fail the continuation too.
        "fresh_environment": bool(unknown) or row.route in ("environment", "rewrite-restart")
        or any(i.get("category") == "environment" for i in row.extra.get("issues", [])),
    }
    if row.route == "environment":
        arms: list[tuple[Arm, str | None]] = [("rerun", None)]
    elif row.route == "rewrite-restart":
        arms = [("rewrite", guidance)]
    else:
        arms = [("guided", guidance)]
        if control_arm:
            arms.append(("unguided", None))
    tickets: list[Ticket] = []
    for arm, arm_guidance in arms:
        status: TicketStatus = "needs-rewrite" if row.route == "rewrite-restart" and agent_query is None else "ready"
        tickets.append(Ticket(
            ticket_id=f"{trajectory.id}:{row.cluster or 'traj'}:{arm}",
            arm=arm, status=status, guidance=arm_guidance, guidance_source=guidance_source if arm_guidance else None,
            agent_query=agent_query, rewrite_check=rewrite_check,
            usage=(usage or Usage()) if arm in ("guided", "rewrite") else Usage(),
            cost_usd=cost_usd if arm in ("guided", "rewrite") else None,
            metadata={"source_id": trajectory.id, "branch_turn": checkpoint, "arm": arm,
                      "target_issue": target.as_text(), "query_id": trajectory.query_id, "ticket_id": f"{trajectory.id}:{row.cluster or 'traj'}:{arm}"},
            **common,
        ))
    return tickets
