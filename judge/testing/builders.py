"""Small builders of the canonical models for tests: messages, trajectories, issues, verdicts, clusters.

Every builder fills the fields a test does not care about with plain defaults, so a test states only what it
checks. Turn numbers are assigned by :func:`judge.model.number_turns`, as an importer would (docs/contracts.md).

    traj = trajectory("t1", [say("Running.", call("c1", "bash", cmd="pytest")), tool("c1", "1 failed", error=True),
                             say("All tests pass.")])
    v = verdict(1, [issue(2, "claims success after a failed run", category="semantic", severity="severe")])
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from judge.cluster import majority_floor
from judge.model import Message, Receipt, ToolCall, Trajectory, TrajectoryMetadata, number_turns
from judge.schema import Category, Cluster, ClusterMember, Efficiency, Issue, PassStatus, ScoredIssue, Severity, Verdict
from judge.scoring import scored_issue

QUERY = "Read the service configuration and tell me which port it listens on."
SYSTEM = "You are a coding agent."


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    """A tool call with keyword arguments, e.g. ``call("c1", "bash", cmd="ls")``."""
    return ToolCall(id=call_id, name=name, arguments=arguments)


def tool(call_id: str, content: str, *, error: bool = False, exit_code: int | None = None, name: str | None = None) -> Message:
    """The tool message carrying the receipt of call ``call_id``."""
    return Message(role="tool", receipt=Receipt(call_id=call_id, name=name, content=content, is_error=error, exit_code=exit_code))


def say(text: str, *calls: ToolCall) -> Message:
    """An assistant message, optionally calling tools."""
    return Message(role="assistant", content=text, tool_calls=list(calls))


def user(text: str) -> Message:
    return Message(role="user", content=text)


def trajectory(tid: str, messages: Sequence[Message], query: str = QUERY, *, system: str | None = SYSTEM,
               source_format: str = "canonical", **metadata: Any) -> Trajectory:
    """A trajectory opened by the system prompt (unless None) and the user's ``query``, then ``messages``.

    Extra keywords go to :class:`TrajectoryMetadata` (``arm``, ``branch_turn``, ``budget_exhausted``, ...).
    """
    opening = [Message(role="system", content=system)] if system is not None else []
    full = [*opening, user(query), *messages]
    return Trajectory(id=tid, query=query, query_id=f"q-{tid}", messages=number_turns(full),
                      metadata=TrajectoryMetadata(source_format=source_format, **{"model": "test-model", **metadata}))


def issue(turn: int | None, description: str = "A call failed.", *, category: Category = "code",
          severity: Severity = "minor", tag: str | None = None, evidence: str = "") -> Issue:
    return Issue(turn=turn, description=description, category=category, severity=severity, tag=tag, evidence=evidence)


def verdict(pass_index: int, issues: Sequence[Issue] = (), *, trajectory_id: str = "t", judge: str = "fake",
            status: PassStatus = "ok", reason: str | None = None, efficiency: Efficiency | None = "high") -> Verdict:
    """One judge pass. An unscored pass gets ``reason`` (default ``parse_error``) and no efficiency vote."""
    ok = status == "ok"
    return Verdict(trajectory_id=trajectory_id, judge=judge, pass_index=pass_index, pass_key=f"{judge}#{pass_index}",
                   status=status, reason=None if ok else (reason or "parse_error"), issues=list(issues),
                   efficiency=efficiency if ok else None)


def cluster(found: Issue, votes: int = 2, *, trajectory_id: str = "t", cid: str = "c1", panel_size: int = 3,
            judge: str = "fake") -> Cluster:
    """A cluster of ``votes`` passes that all reported ``found``; majority by the clusterer's own rule."""
    members = [ClusterMember(pass_key=f"{judge}#{k}", issue_index=0, issue=found) for k in range(1, votes + 1)]
    return Cluster(trajectory_id=trajectory_id, cluster=cid, members=members, votes=votes, panel_size=panel_size,
                   majority=votes >= majority_floor(panel_size), turn=found.turn, category=found.category,
                   severity=found.severity, tag=found.tag, description=found.description)


def scored(found: Cluster) -> ScoredIssue:
    """The cluster as a majority issue of ``scores.jsonl``."""
    return scored_issue(found)


__all__ = ["QUERY", "SYSTEM", "call", "cluster", "issue", "say", "scored", "tool", "trajectory", "user", "verdict"]


def bash_call(call_id: str, command: str) -> dict[str, Any]:
    """An OpenAI chat assistant message (a raw record, before import) that calls the Bash tool once."""
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "Bash", "arguments": json.dumps({"command": command})}}]}


def bash_receipt(call_id: str, content: str, exit_code: int) -> dict[str, Any]:
    """The OpenAI chat tool message answering :func:`bash_call`, with its exit code."""
    return {"role": "tool", "tool_call_id": call_id, "name": "Bash", "content": content, "exit_code": exit_code}


def bash_chat(query: str, steps: Sequence[tuple[str, str, int] | str], *, record_id: str = "chat",
              text_joins_next_call: bool = False) -> Trajectory:
    """An OpenAI chat record of Bash calls ``(command, receipt, exit code)`` and assistant texts, read by the real
    importer (so turns, receipts and exit codes are what a user's file would give). Call ids are ``c<step>``.

    With ``text_joins_next_call`` a text right before a call is that call's message content (the agent says what it
    does, then calls), as most agents write; otherwise every text is its own assistant message.
    """
    from judge.importers import Source  # the importers pull the format registry: only tests that build records need it
    from judge.importers.reader import parse_record

    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent with a Bash tool."},
                                      {"role": "user", "content": query}]
    text: str | None = None
    for n, step in enumerate(steps, 1):
        if isinstance(step, str):
            if text_joins_next_call and n < len(steps) and not isinstance(steps[n], str):
                text = step
                continue
            messages.append({"role": "assistant", "content": step})
        else:
            command, content, code = step
            call = bash_call(f"c{n}", command)
            call["content"], text = text, None
            messages += [call, bash_receipt(f"c{n}", content, code)]
    item = parse_record({"id": record_id, "query": query, "messages": messages}, Source(f"bash_chat:{record_id}"))
    if not isinstance(item, Trajectory):
        raise ValueError(f"bash_chat built a record the importer rejects: {item}")
    return item
