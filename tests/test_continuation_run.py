"""Running continuation tickets with a scripted agent: restoring the checkpoint (conversation, replayed writes,
snapshots, unknown writes), reusing receipts, budgets, stops, and the records `judge repair ingest` reads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from judge.continuation import (
    Budget,
    CommandMapping,
    ContinueOptions,
    Environments,
    EnvironmentSource,
    ScriptedAgent,
    run_ticket,
    run_tickets,
    write_results,
)
from judge.model import Message, Usage
from judge.repair import ingest_continuations
from judge.repair.tickets import TargetIssue, Ticket, environment_state, prefix_before
from judge.testing.builders import call, say, tool, trajectory

USAGE = {"input_tokens": 500, "output_tokens": 100}


def make_ticket(steps: list[Message], checkpoint: int, arm: str = "guided", **update) -> Ticket:
    """A ticket for the trajectory ``steps``, built the way `judge repair` builds one (prefix, receipts, writes)."""
    source = trajectory("t1", steps)
    prefix = prefix_before(source, checkpoint + 1)
    reusable, unknown, plan = environment_state(source, prefix)
    target = TargetIssue(cluster="c1", turn=checkpoint + 1, category="code", severity="severe", tag="failed-call",
                         description="A call failed.")
    ticket = Ticket(ticket_id=f"t1:c1:{arm}", trajectory_id="t1", query_id="q-t1", query=source.query,
                    route="online-guided", arm=arm, checkpoint_turn=checkpoint, branch_turn=checkpoint, prefix=prefix,
                    reusable_receipts=reusable, unknown_writes=unknown, fresh_environment=bool(unknown), plan=plan,
                    target_issue=target, guidance="Read config.ini before answering." if arm == "guided" else None,
                    guidance_source="template" if arm == "guided" else None, evidence=["[rules#0] T2 Bash: exit 1"],
                    metadata={"source_id": "t1", "branch_turn": checkpoint, "arm": arm, "target_issue": target.as_text(),
                              "query_id": "q-t1", "ticket_id": f"t1:c1:{arm}"})
    return ticket.model_copy(update=update)


def workdir(tmp_path: Path, files: dict[str, str]) -> EnvironmentSource:
    root = tmp_path / "workdir"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return EnvironmentSource(workdir=root)


def options(source: EnvironmentSource | None = None, **kwargs) -> ContinueOptions:
    return ContinueOptions(environments=Environments(default=source or EnvironmentSource()), **kwargs)


def run(ticket: Ticket, turns: list[dict], opts: ContinueOptions | None = None):
    agent = ScriptedAgent.of({"*": turns})
    return asyncio.run(run_ticket(ticket, agent, opts or options())), agent


# T1 reads the config, T2 writes the port file, T3 fails: the checkpoint is T2.
READ_THEN_WRITE = [
    say("", call("r1", "Read", file_path="config.ini")),
    tool("r1", "port = 8080\n"),
    say("", call("w1", "Write", file_path="port.txt", content="8080\n")),
    tool("w1", "File created successfully at: port.txt"),
    say("", call("b1", "Bash", command="grep -q 9090 port.txt")),
    tool("b1", "Exit code 1", error=True, exit_code=1),
    say("It listens on 9090."),
]


def test_the_conversation_is_the_prefix_then_the_guidance_and_writes_are_replayed(tmp_path):
    ticket = make_ticket(READ_THEN_WRITE, checkpoint=2)
    result, agent = run(ticket, [{"content": "It listens on 8080.", "usage": USAGE}],
                        options(workdir(tmp_path, {"config.ini": "port = 8080\n"}), keep_workdirs=True, work_parent=tmp_path))
    seen = agent.requests[0]
    assert [m.role for m in seen.messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]
    assert seen.messages[-1].content == "Read config.ini before answering." and seen.turn == 3
    assert [t.name for t in seen.tools] == ["Bash", "Read", "Write", "Edit"]
    assert [(e.name, e.disposition) for e in result.replayed] == [("Write", "executed")]  # the read is not replayed
    kept = Path(result.environment["kept_at"])
    assert (kept / "port.txt").read_text(encoding="utf-8") == "8080\n"
    assert result.stop.reason == "completed" and result.messages[-1].turn == 3


def test_the_unguided_arm_gets_no_guidance_message(tmp_path):
    result, agent = run(make_ticket(READ_THEN_WRITE, checkpoint=2, arm="unguided"), [{"content": "8080", "usage": USAGE}],
                        options(workdir(tmp_path, {"config.ini": "port = 8080\n"})))
    assert agent.requests[0].messages[-1].role == "tool" and result.stop.reason == "completed"


def test_a_read_only_call_is_served_from_its_receipt_until_the_state_changes(tmp_path):
    steps = [say("", call("r1", "Read", file_path="config.ini")), tool("r1", "port = 8080\n"),
             say("", call("b1", "Bash", command="curl -s localhost:8080")), tool("b1", "Exit code 7", error=True, exit_code=7),
             say("Down.")]
    # The working copy differs from the recorded receipt, so a served read and an executed one can be told apart.
    source = workdir(tmp_path, {"config.ini": "port = 1234\n"})
    read = {"name": "Read", "arguments": {"file_path": "config.ini"}}
    turns = [{"tool_calls": [read], "usage": USAGE},
             {"tool_calls": [{"name": "Write", "arguments": {"file_path": "notes.txt", "content": "n"}}], "usage": USAGE},
             {"tool_calls": [read], "usage": USAGE}, {"content": "done", "usage": USAGE}]
    result, _ = run(make_ticket(steps, checkpoint=1), turns, options(source))
    assert [(e.name, e.disposition) for e in result.events] == [("Read", "served"), ("Write", "executed"), ("Read", "executed")]
    assert result.events[0].detail == "receipt of r1 (T1)"
    receipts = [m.receipt.content for m in result.suffix() if m.role == "tool"]
    assert receipts[0] == "port = 8080\n" and receipts[2] == "port = 1234\n"

    no_reuse, _ = run(make_ticket(steps, checkpoint=1), turns[:1] + [{"content": "done", "usage": USAGE}],
                      options(source, reuse_receipts=False))
    assert no_reuse.events[0].disposition == "executed"


def test_a_read_followed_by_a_write_in_the_prefix_is_never_served(tmp_path):
    result, _ = run(make_ticket(READ_THEN_WRITE, checkpoint=2),
                    [{"tool_calls": [{"name": "Read", "arguments": {"file_path": "config.ini"}}], "usage": USAGE},
                     {"content": "done", "usage": USAGE}],
                    options(workdir(tmp_path, {"config.ini": "port = 8080\n"})))
    assert [e.disposition for e in result.events] == ["executed"]


def test_an_unknown_write_stops_the_arm_unless_the_ticket_asks_for_a_fresh_environment(tmp_path):
    steps = [say("", call("w1", "Bash", command="echo 8080 > port.txt")),  # no receipt: unknown outcome
             say("", call("b1", "Bash", command="cat port.txt")), tool("b1", "Exit code 1", error=True, exit_code=1),
             say("Done.")]
    ticket = make_ticket(steps, checkpoint=1)
    assert [w.call_id for w in ticket.unknown_writes] == ["w1"] and ticket.fresh_environment

    stopped, agent = run(ticket.model_copy(update={"fresh_environment": False}), [{"content": "x", "usage": USAGE}])
    assert stopped.stop.reason == "unknown-write" and "T1 Bash (w1): no receipt" in stopped.stop.detail
    assert agent.requests == [] and not stopped.finished

    fresh, _ = run(ticket, [{"tool_calls": [{"name": "Bash", "arguments": {"command": "cat port.txt"}}], "usage": USAGE},
                            {"content": "8080", "usage": USAGE}])
    assert [(e.call_id, e.disposition) for e in fresh.replayed] == [("w1", "executed")]
    assert fresh.suffix()[1].receipt.content == "8080\n" and fresh.stop.reason == "completed"


def test_a_replayed_write_that_comes_out_differently_stops_the_arm(tmp_path):
    steps = [say("", call("e1", "Edit", file_path="app.py", old_string="A", new_string="B")),
             tool("e1", "The file app.py has been updated."), say("", call("b1", "Bash", command="false")),
             tool("b1", "Exit code 1", error=True, exit_code=1), say("Done.")]
    result, agent = run(make_ticket(steps, checkpoint=1), [{"content": "x", "usage": USAGE}])  # empty workdir: no app.py
    assert result.stop.reason == "replay-diverged" and agent.requests == []
    assert "replaying T1 Edit (e1): it succeeded in the log but failed here" in result.stop.detail


def test_a_snapshot_is_used_as_is_and_refused_when_a_fresh_environment_is_needed(tmp_path):
    snapshot = tmp_path / "snap"
    snapshot.mkdir()
    (snapshot / "port.txt").write_text("from snapshot\n", encoding="utf-8")
    ticket = make_ticket(READ_THEN_WRITE, checkpoint=2)
    turns = [{"tool_calls": [{"name": "Bash", "arguments": {"command": "cat port.txt"}}], "usage": USAGE},
             {"content": "done", "usage": USAGE}]
    result, _ = run(ticket, turns, options(EnvironmentSource(snapshot=snapshot)))
    assert result.replayed == [] and result.suffix()[1].receipt.content == "from snapshot\n"

    refused, _ = run(ticket.model_copy(update={"fresh_environment": True}), turns, options(EnvironmentSource(snapshot=snapshot)))
    assert refused.stop.reason == "environment-unavailable" and "a snapshot of the checkpoint cannot be trusted" in refused.stop.detail
    missing, _ = run(ticket, turns, options(EnvironmentSource(workdir=tmp_path / "nowhere")))
    assert missing.stop.reason == "environment-unavailable"


def test_environments_are_chosen_by_ticket_then_trajectory_then_ticket_metadata(tmp_path):
    a, b, c, d = (EnvironmentSource(workdir=tmp_path / n) for n in "abcd")
    ticket = make_ticket(READ_THEN_WRITE, checkpoint=2)
    assert Environments(default=d, by_id={"t1:c1:guided": a, "t1": b}).for_ticket(ticket) == a
    assert Environments(default=d, by_id={"t1": b}).for_ticket(ticket) == b
    named = ticket.model_copy(update={"metadata": {**ticket.metadata, "workdir": str(tmp_path / "c")}})
    assert Environments(default=d).for_ticket(named).workdir == c.workdir
    assert Environments(default=d).for_ticket(ticket) == d


def test_an_unsupported_tool_stops_the_arm_and_a_mapping_serves_it(tmp_path):
    steps = [say("", call("l1", "Bash", command="lark-cli base fields create --name 供应商")), tool("l1", '{"ok": true}'),
             say("", call("l2", "Bash", command="lark-cli base records update")), tool("l2", "Exit code 1", error=True, exit_code=1),
             say("已完成")]
    ticket = make_ticket(steps, checkpoint=1)
    turns = [{"tool_calls": [{"name": "Bash", "arguments": {"command": "lark-cli base records list"}}], "usage": USAGE},
             {"content": "found it", "usage": USAGE}]
    # lark-cli is not installed here: replaying T1's write cannot even start.
    unmapped, agent = run(ticket, turns)
    assert unmapped.stop.reason == "unsupported-tool" and "replaying T1 Bash (l1)" in unmapped.stop.detail
    assert agent.requests == []

    (tmp_path / "lark.py").write_text("import sys\nprint('records:', ' '.join(sys.argv[1:]))\n", encoding="utf-8")
    (tmp_path / "created.json").write_text('{"content": "{\\"ok\\": true}"}', encoding="utf-8")
    mapping = CommandMapping.from_dict({"programs": {"lark-cli": "python {dir}/lark.py"},
                                        "commands": [{"prefix": "lark-cli base fields create", "receipt": "created.json"}]},
                                       base_dir=tmp_path)
    mapped, _ = run(ticket, turns, options(mapping=mapping))
    assert [(e.disposition, e.detail[:30]) for e in mapped.replayed] == [("mapped", "<mapping>: commands[0]: canned")]
    assert mapped.events[0].detail == "mapped programs: lark-cli"
    assert mapped.suffix()[1].receipt.content == "records: base records list\n" and mapped.stop.reason == "completed"

    unknown_tool, _ = run(ticket, [{"tool_calls": [{"name": "present_files", "arguments": {}}], "usage": USAGE}],
                          options(mapping=mapping))
    assert unknown_tool.stop.reason == "unsupported-tool" and "T2 present_files" in unknown_tool.stop.detail
    assert unknown_tool.suffix()[-1].tool_calls[0].name == "present_files"  # the call is kept, with no receipt


@pytest.mark.parametrize(
    ("budget", "turns", "reason", "new_turns"),
    [
        (Budget(turns=2), 2, "budget-exhausted", 2),
        (Budget(tokens=1000), 2, "budget-exhausted", 2),   # 600 per turn: the second turn crosses 1000
        (Budget(tokens=2000), 4, "budget-exhausted", 4),
        (Budget(turns=10), 10, "completed", 10),           # the tenth turn answers: the budget was enough
    ],
)
def test_budgets_end_an_arm_with_budget_exhausted_after_running_the_last_turns_calls(budget, turns, reason, new_turns):
    step = {"tool_calls": [{"name": "Bash", "arguments": {"command": "echo working"}}], "usage": USAGE}
    script = [step] * 9 + [{"content": "done", "usage": USAGE}]
    result, _ = run(make_ticket(READ_THEN_WRITE, checkpoint=0), script, options(budget=budget))
    assert (result.stop.reason, result.new_turns) == (reason, new_turns)
    assert result.usage == Usage(input_tokens=500 * new_turns, output_tokens=100 * new_turns)
    record = result.to_trajectory()
    assert record.metadata.budget_exhausted is (reason == "budget-exhausted")
    if reason == "budget-exhausted":
        assert record.messages[-1].role == "tool" and record.messages[-1].receipt.content == "working\n"


def test_a_token_budget_needs_the_agent_to_report_usage():
    result, _ = run(make_ticket(READ_THEN_WRITE, checkpoint=0), [{"content": "hi"}], options(budget=Budget(tokens=100)))
    assert result.stop.reason == "agent-error" and "no token usage" in result.stop.detail


def test_an_agent_that_runs_out_of_turns_or_a_ticket_not_ready_is_stopped_with_a_reason():
    ended, _ = run(make_ticket(READ_THEN_WRITE, checkpoint=0),
                   [{"tool_calls": [{"name": "Bash", "arguments": {"command": "true"}}], "usage": USAGE}])
    assert ended.stop.reason == "agent-error" and "has 1 turns; turn 2 was asked for" in ended.stop.detail
    assert ended.usage == Usage(**USAGE)
    pending, agent = run(make_ticket(READ_THEN_WRITE, checkpoint=0, status="needs-rewrite"), [{"content": "x"}])
    assert pending.stop.reason == "not-ready" and agent.requests == []


def test_a_rewrite_arm_gets_the_rewritten_query_then_the_guidance():
    ticket = make_ticket(READ_THEN_WRITE, checkpoint=0, arm="rewrite", route="rewrite-restart",
                         agent_query="Open config.ini and report the port.", guidance="Keep every requirement.",
                         prefix=[m for m in trajectory("t1", READ_THEN_WRITE).messages if m.role == "system"])
    result, agent = run(ticket, [{"content": "8080", "usage": USAGE}])
    assert [(m.role, m.content) for m in agent.requests[0].messages[1:]] == [
        ("user", "Open config.ini and report the port."), ("user", "Keep every requirement.")]
    record = result.to_trajectory()
    assert record.query == ticket.query and record.metadata.extra["agent_query"] == "Open config.ini and report the port."


def test_every_arm_is_written_for_ingest_with_its_stop_and_stopped_ones_keep_their_turns_in_the_log(tmp_path):
    source = workdir(tmp_path, {"config.ini": "port = 8080\n"})
    guided = make_ticket(READ_THEN_WRITE, checkpoint=2)
    unguided = make_ticket(READ_THEN_WRITE, checkpoint=2, arm="unguided")
    agent = ScriptedAgent.of({"guided": [{"content": "It listens on 8080.", "usage": USAGE}],
                              "unguided": [{"tool_calls": [{"name": "deploy", "arguments": {}}], "usage": USAGE}]},
                             spec="scripted:test")
    results = asyncio.run(run_tickets([guided, unguided], agent, options(source, concurrency=2)))
    out = tmp_path / "continuations.jsonl"
    written, log = write_results(results, out)
    assert written == 2 and log == tmp_path / "continuations.arms.jsonl"

    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r["ticket_id"], r["stop_reason"], r["output_id"], r["finished"]) for r in rows] == [
        ("t1:c1:guided", "completed", "t1-guided", True), ("t1:c1:unguided", "unsupported-tool", "t1-unguided", False)]
    assert rows[1]["suffix"][0]["tool_calls"][0]["name"] == "deploy"

    linked = list(ingest_continuations([out]))
    assert len(linked) == 2
    stopped = linked[1].metadata
    assert (stopped.arm, stopped.extra["stop_reason"], stopped.usage) == ("unguided", "unsupported-tool", Usage(**USAGE))
    meta = linked[0].metadata
    assert (meta.source_id, meta.branch_turn, meta.arm, meta.budget_exhausted) == ("t1", 2, "guided", False)
    assert meta.target_issue == "T3 code/severe [failed-call]: A call failed." and meta.usage == Usage(**USAGE)
    assert meta.model == "scripted:test" and meta.extra["ticket_id"] == "t1:c1:guided"
    assert (meta.extra["target_category"], meta.extra["target_tag"], meta.extra["target_evidence"]) == (
        "code", "failed-call", "T2 Bash: exit 1")
    assert meta.extra["stop_reason"] == "completed" and meta.extra["guidance_source"] == "template"
    assert linked[0].messages[-1].usage == Usage(**USAGE)  # compare counts suffix tokens from the turns
    assert linked[0].query_id == "q-t1" and linked[0].id == "t1-guided"


def test_the_plan_state_is_restored_and_follows_the_plan_tool():
    todos = {"todos": [{"id": "t1", "content": "Fix", "status": "in_progress"}]}
    steps = [say("", call("p1", "TodoWrite", **todos)), tool("p1", "Todos have been modified successfully."),
             say("", call("b1", "Bash", command="false")), tool("b1", "Exit code 1", error=True, exit_code=1), say("Done.")]
    ticket = make_ticket(steps, checkpoint=1)
    assert ticket.plan == todos
    kept, agent = run(ticket, [{"content": "ok", "usage": USAGE}])
    assert kept.plan == todos and "TodoWrite" in [t.name for t in agent.requests[0].tools]
    done = {"todos": [{"id": "t1", "content": "Fix", "status": "completed"}]}
    moved, _ = run(ticket, [{"tool_calls": [{"name": "TodoWrite", "arguments": done}], "usage": USAGE},
                            {"content": "ok", "usage": USAGE}])
    assert moved.plan == done and moved.suffix()[1].receipt.content == "Todos have been modified successfully."


def test_a_failure_of_the_harness_ends_that_arm_only(monkeypatch):
    from judge.continuation.sandbox import Sandbox

    async def broken(self, command, timeout_s=None, stdin=None):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Sandbox, "bash", broken)
    bash = {"tool_calls": [{"name": "Bash", "arguments": {"command": "ls"}}], "usage": USAGE}
    agent = ScriptedAgent.of({"guided": [bash], "unguided": [{"content": "fine", "usage": USAGE}]})
    tickets = [make_ticket(READ_THEN_WRITE, checkpoint=0), make_ticket(READ_THEN_WRITE, checkpoint=0, arm="unguided")]
    guided, unguided = asyncio.run(run_tickets(tickets, agent))
    assert (guided.stop.reason, guided.stop.detail) == ("harness-error", "RuntimeError: disk on fire")
    assert unguided.stop.reason == "completed"
