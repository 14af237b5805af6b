"""Model-backed continuation agents: any registered provider through the real SDKs against the scripted agent
server on 127.0.0.1 (OpenAI and Anthropic wire forms), on the judges' call path: failed attempts counted, the run's
--max-cost, attempts in the store, kept answers; the source's recorded tools offered; the CLI's exit codes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from test_continuation_run import READ_THEN_WRITE, make_ticket, options, workdir

from judge import rundir
from judge.continuation import Budget, run_tickets
from judge.continuation.model_agent import ProviderAgent, chat_messages, exit_code_text, make_agent, unique_call_ids
from judge.model import Message, Receipt, ToolCall, ToolSpec
from judge.providers.retry import CallRuntime, RetryPolicy
from judge.runcalls import CallSettings, open_calls
from judge.store import RunStore
from judge.testing.agentserver import AgentScript, ScriptedAgentServer, request_text, turns_done
from judge.testing.servers import Scripted

# The source read config.ini, wrote port.txt, then made a failing check: the arms continue from T2.
GUIDED = [
    {"content": "Check the file.", "tool_calls": [{"name": "Bash", "arguments": {"command": "cat port.txt"}}],
     "usage": {"input_tokens": 400, "output_tokens": 20}},
    {"content": "It listens on 8080.", "usage": {"input_tokens": 450, "output_tokens": 10}},
]
SCRIPT = AgentScript.model_validate({"arms": [
    {"name": "guided", "contains": ["Read config.ini before answering."], "turns": GUIDED},
    {"name": "unguided", "lacks": ["Read config.ini before answering."], "turns": GUIDED[1:]},
]})
PRICED = "openai-compatible:scripted-agent"  # made-up prices: input $2/M, output $8/M


@pytest.fixture
def server():
    with ScriptedAgentServer(SCRIPT) as fake:
        yield fake


def agent_for(server: ScriptedAgentServer, **kwargs) -> ProviderAgent:
    agent = make_agent(f"{PRICED}@{server.base_url}", **kwargs)
    assert isinstance(agent, ProviderAgent)
    agent.runtime = CallRuntime(policy=RetryPolicy(max_retries=1, base_delay_s=0.001))
    return agent


def run_arm(agent, ticket, tmp_path: Path, **kwargs):
    """One arm, then the agent's connections closed (an SDK client belongs to the event loop that opened it)."""
    [result] = asyncio.run(run_tickets([ticket], agent, options(workdir(tmp_path, {"config.ini": "port = 8080\n"}), **kwargs)))
    return result


def test_a_model_agent_runs_an_arm_with_tool_calls_and_prices_every_turn(server, tmp_path):
    result = run_arm(agent_for(server), make_ticket(READ_THEN_WRITE, checkpoint=2), tmp_path)
    assert result.stop.reason == "completed" and result.new_turns == 2
    assert result.model == "openai-compatible:scripted-agent"
    assert [(e.name, e.disposition, e.exit_code) for e in result.events] == [("Bash", "executed", 0)]
    assert result.suffix()[1].content == "8080\n"  # the real receipt of the replayed write
    assert (result.usage.input_tokens, result.usage.output_tokens) == (850, 30)
    assert result.cost_usd == pytest.approx(850 * 2e-6 + 30 * 8e-6)
    assert server.served == [("guided", 1), ("guided", 2)]
    second = server.requests[1]
    # The prefix's Read and Write, the guidance, the new call and its receipt, in the OpenAI form.
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool", "user",
                                                       "assistant", "tool"]
    assert second["messages"][6]["content"] == "Read config.ini before answering."


def test_the_anthropic_wire_form_carries_tool_use_and_tool_result(tmp_path, monkeypatch):
    with ScriptedAgentServer(SCRIPT, protocol="anthropic") as fake:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        result = run_arm(make_agent("anthropic:claude-sonnet-4-fake"), make_ticket(READ_THEN_WRITE, checkpoint=2), tmp_path)
        assert result.stop.reason == "completed" and result.new_turns == 2
        assert result.cost_usd == pytest.approx(850 * 3e-6 + 30 * 15e-6)  # the Sonnet 4 line of the price table
        second = fake.requests[1]
        assert [t["name"] for t in second["tools"]] == ["Bash", "Read", "Write", "Edit"]
        blocks = second["messages"][-1]["content"]
        assert blocks[0]["type"] == "tool_result" and blocks[0]["tool_use_id"] == "scripted-agent-guided-1-0"
        assert second["system"][0]["text"] == fake.requests[0]["system"][0]["text"]  # the prefix's system message
        assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]


def test_failed_attempts_are_recorded_and_counted_before_the_arm_stops(server, tmp_path):
    path = tmp_path / "run"
    with RunStore.for_run(path) as store:
        calls = open_calls(store, CallSettings(retry_base_delay_s=0.001, max_retries=1))
        # An answer cut at its output limit with no call is paid for, then the arm cannot go on.
        server.queue(Scripted(content="I will", finish_reason="__length__", usage={"input": 300, "output": 4096}))
        cut = run_arm(agent_for(server).bind(calls), make_ticket(READ_THEN_WRITE, checkpoint=2), tmp_path / "a")
        assert cut.stop.reason == "agent-error" and cut.stop.detail.startswith("truncated")
        assert (cut.usage.input_tokens, cut.usage.output_tokens) == (300, 4096)
        assert cut.cost_usd == pytest.approx(300 * 2e-6 + 4096 * 8e-6)
        # Server errors are retried, and each attempt is in the store, recorded before it was sent.
        server.queue(Scripted.server_error(), Scripted.server_error())
        failed = run_arm(agent_for(server).bind(calls), make_ticket(READ_THEN_WRITE, checkpoint=2), tmp_path / "b")
        assert failed.stop.reason == "agent-error" and "after 2 attempt(s)" in failed.stop.detail
        assert failed.cost_usd == 0.0  # an error response is not billed
        rows = [(a["judge"].split("@")[0], a["trajectory_id"], a["pass_index"], a["outcome"]) for a in store.attempts()]
    assert rows == [("agent:openai-compatible:scripted-agent", "t1-guided", 3, "ok"),
                    ("agent:openai-compatible:scripted-agent", "t1-guided", 3, "server_error"),
                    ("agent:openai-compatible:scripted-agent", "t1-guided", 3, "server_error")]


def test_kept_answers_replay_a_rerun_free_unless_no_cache(server, tmp_path):
    ticket = make_ticket(READ_THEN_WRITE, checkpoint=2)
    with RunStore.for_run(tmp_path / "run") as store:
        first = run_arm(agent_for(server).bind(open_calls(store)), ticket, tmp_path / "a")
        again_agent = agent_for(server).bind(open_calls(store))
        again = run_arm(again_agent, ticket, tmp_path / "b")
        assert again_agent.turns_from_store == 2 and len(server.served) == 2
        # A kept turn reports what it cost when it was made: the arm's record and budgets see the same figures.
        assert (again.usage, again.cost_usd, again.stop) == (first.usage, first.cost_usd, first.stop)
        fresh = agent_for(server, use_cache=False).bind(open_calls(store))
        run_arm(fresh, ticket, tmp_path / "c")
        assert fresh.turns_from_store == 0 and len(server.served) == 4


def test_the_runs_max_cost_stops_an_arm_before_the_call(server, tmp_path):
    with RunStore.for_run(tmp_path / "run") as store:
        agent = agent_for(server).bind(open_calls(store, CallSettings(max_cost_usd=0.0001)))
        result = run_arm(agent, make_ticket(READ_THEN_WRITE, checkpoint=2), tmp_path)
    assert result.stop.reason == "max-cost" and "--max-cost" in result.stop.detail
    assert server.served == [] and not result.finished


def test_the_sources_recorded_tools_are_offered_under_their_names(server, tmp_path):
    recorded = [ToolSpec(name="execute_bash", description="Run a command.", parameters={
        "type": "object", "properties": {"command": {"type": "string"}}}), ToolSpec(name="finish")]
    script = AgentScript.model_validate({"arms": [{"name": "any", "turns": [
        {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "cat port.txt"}}]}, {"content": "8080"}]}]})
    with ScriptedAgentServer(script) as fake:
        result = run_arm(agent_for(fake), make_ticket(READ_THEN_WRITE, checkpoint=2, tools=recorded), tmp_path,
                         budget=Budget(tokens=10_000))
        assert [t["function"]["name"] for t in fake.requests[0]["tools"]] == ["execute_bash", "finish"]
    assert result.stop.reason == "completed" and result.events[0].disposition == "executed"


@pytest.mark.parametrize(
    ("receipt", "content", "expected"),
    [
        (Receipt(content="boom", exit_code=2, is_error=True), "boom", "Exit code 2\nboom"),
        (Receipt(content="Exit code 2\nboom", exit_code=2), "Exit code 2\nboom", "Exit code 2\nboom"),  # already said
        (Receipt(content="ok", exit_code=0), "ok", "ok"),
        (Receipt(content="no code", is_error=True), "no code", "no code"),
    ],
)
def test_the_exit_code_is_written_into_the_tool_result_text(receipt, content, expected):
    message = Message(role="tool", content=content, receipt=receipt.model_copy(update={"call_id": "c1"}), turn=1)
    assert exit_code_text(message).content == expected


def test_chat_messages_have_no_training_weights_and_call_ids_stay_unique():
    messages = [Message(role="user", content="go", turn=0),
                Message(role="assistant", content="", turn=1, tool_calls=[ToolCall(id="c", name="Bash", arguments={})])]
    assert all("weight" not in row for row in chat_messages(messages))
    calls = [ToolCall(id="c", name="Bash", arguments={}), ToolCall(id="", name="Bash", arguments={}),
             ToolCall(id="k", name="Bash", arguments={})]
    assert [c.id for c in unique_call_ids(calls, {"c"}, 4)] == ["call-T4-0", "call-T4-1", "k"]


def test_the_server_picks_the_arm_by_the_request_and_the_turn_by_its_own_call_ids():
    request = {"messages": [{"role": "user", "content": "Read config.ini before answering."},
                            {"role": "assistant", "tool_calls": [{"id": "scripted-agent-guided-1-0"}]}]}
    assert "Read config.ini" in request_text(request)
    assert turns_done(request, "guided") == 1 and turns_done(request, "unguided") == 0
    anthropic = {"system": "s", "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "scripted-agent-guided-2-0"}]}]}
    assert turns_done(anthropic, "guided") == 2


def test_a_bad_script_names_the_file_and_entry(tmp_path):
    path = tmp_path / "script.yaml"
    path.write_text("arms:\n  - name: guided\n    turns: [{contnt: x}]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"script.yaml: arms.0.turns.0.contnt"):
        AgentScript.load(path)


def test_judge_continue_exits_3_when_max_cost_stopped_an_arm_and_refuses_model_options_for_a_script(server, tmp_path):
    from typer.testing import CliRunner

    from judge.cli import app

    run = tmp_path / "run"
    rundir.write_jsonl(run / rundir.TICKETS, [make_ticket(READ_THEN_WRITE, checkpoint=2)])
    source = workdir(tmp_path, {"config.ini": "port = 8080\n"}).workdir
    runner = CliRunner(env={"COLUMNS": "300", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    out = tmp_path / "out.jsonl"
    args = ["continue", str(run), "--agent", f"{PRICED}@{server.base_url}", "--workdir", str(source), "--out", str(out)]
    stopped = runner.invoke(app, [*args, "--max-cost", "0.0001"])
    assert stopped.exit_code == 3, stopped.output
    assert "1 tickets: max-cost 1\n" in stopped.output and "raise it with --max-cost N" in stopped.output
    assert "note: no --budget-turns or --budget-tokens" in stopped.output
    done = runner.invoke(app, [*args, "--max-cost", "5"])
    assert done.exit_code == 0, done.output
    assert "budget: $0.0019 of $5.0000 spent by the run" in done.output
    assert json.loads((run / rundir.MANIFEST).read_text(encoding="utf-8"))["budget"]["max_cost_usd"] == 5.0
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"scripts": {"*": [{"content": "done"}]}}), encoding="utf-8")
    refused = runner.invoke(app, ["continue", str(run), "--agent", f"scripted:{script}", "--out", str(out), "--max-cost", "1"])
    assert refused.exit_code == 2 and "apply to a model agent" in refused.output
    not_a_run = runner.invoke(app, ["continue", str(run / rundir.TICKETS), "--agent", f"{PRICED}@{server.base_url}",
                                    "--out", str(out)])
    assert not_a_run.exit_code == 2 and "is not a run directory" in not_a_run.output
