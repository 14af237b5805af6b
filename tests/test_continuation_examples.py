"""The repair loop end to end on the bundled example, through library calls: score -> repair (tickets) ->
continue (a scripted agent in real sandboxes) -> ingest -> score the continuations -> compare.

The scripted guided arm follows the guidance (make invalid input raise, then run the tests: they pass); the
unguided arm repeats the source's T3 (run the failing tests) and claims success. The judge must see the
target error (T4's completion claimed over the failing run) recur in the unguided arm only.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from test_repair_examples import scored_run  # noqa: E402  (the rules judge through the pipeline's own functions)

from judge import rundir  # noqa: E402
from judge.continuation import (  # noqa: E402
    ContinueOptions,
    Environments,
    EnvironmentSource,
    ScriptedAgent,
    load_tickets,
    run_tickets,
    write_results,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "batch"

LOOP = EXAMPLES.parent / "loop"  # the repository before the prefix, and the scripted agent's turns (README's loop)
SOURCE = "ja-false-completion"


def loop_scripts() -> dict[str, list[dict]]:
    """The turns of examples/loop/agent-script.yaml per arm (the guided arm follows the guidance: make invalid input
    raise, then run the tests; the unguided arm repeats the source's T3 and claims success)."""
    from judge.testing.agentserver import AgentScript

    return {arm.name: [turn.model_dump() for turn in arm.turns] for arm in AgentScript.load(LOOP / "agent-script.yaml").arms}


@pytest.fixture(scope="module")
def repaired_run(tmp_path_factory) -> Path:
    if not (EXAMPLES / "anthropic_runs.jsonl").exists():
        pytest.skip("examples/batch is not in this checkout")
    from judge.repair import repair_run

    run = tmp_path_factory.mktemp("loop") / "run"
    scored_run(run, [EXAMPLES / "openai_runs.jsonl", EXAMPLES / "anthropic_runs.jsonl"])
    repair_run(run)
    return run


def before_the_prefix(ticket, tmp_path: Path) -> tuple[Path, Path]:
    """The repository before the prefix (examples/loop/repo: the module as T1 read it, and the test file) and a
    script file for the scripted agent with the example's turns."""
    assert (LOOP / "repo" / "utils" / "date.py").read_text(encoding="utf-8") == next(
        r.content for r in ticket.reusable_receipts if r.name == "Read")
    script = tmp_path / "script.json"
    keyed = {f"{SOURCE}:{arm}": turns for arm, turns in loop_scripts().items()}  # other trajectories' tickets get no script
    script.write_text(json.dumps({"scripts": keyed}, ensure_ascii=False), encoding="utf-8")
    return LOOP / "repo", script


def test_score_repair_continue_ingest_compare(repaired_run: Path, tmp_path: Path):
    from judge.compare import compare_records, load_records, make_scorer
    from judge.repair import ingest_continuations

    tickets = [t for t in load_tickets(repaired_run) if t.trajectory_id == SOURCE]
    assert sorted(t.arm for t in tickets) == ["guided", "unguided"]
    guided = next(t for t in tickets if t.arm == "guided")
    # The target is T4's false claim: T3's failing test run is evidence, not an agent error (issue 11), so the
    # checkpoint is after it and the prefix replays T2's edit and T3's test run.
    assert (guided.checkpoint_turn, guided.target_issue.turn, guided.target_issue.tag) == (3, 4, "unverified-completion")

    workdir, script = before_the_prefix(guided, tmp_path)
    options = ContinueOptions(environments=Environments(default=EnvironmentSource(workdir=workdir)))
    results = asyncio.run(run_tickets(tickets, ScriptedAgent.load(script), options))
    by_arm = {r.ticket.arm: r for r in results}
    assert {arm: r.stop.reason for arm, r in by_arm.items()} == {"guided": "completed", "unguided": "completed"}
    # T2's edit and T3's test run were replayed in each arm's own copy; the test runs are real receipts of the sandbox.
    assert all([(e.name, e.disposition) for e in r.replayed] == [("Edit", "executed"), ("Bash", "executed")] for r in results)
    assert [e.exit_code for e in by_arm["guided"].events] == [None, 0]
    assert [e.exit_code for e in by_arm["unguided"].events] == [1]
    assert "DID NOT RAISE" in by_arm["unguided"].suffix()[1].receipt.content

    out = tmp_path / "continuations.jsonl"
    assert write_results(results, out)[0] == 2
    linked = tmp_path / "linked.jsonl"
    rundir.write_jsonl(linked, ingest_continuations([out], tickets=repaired_run / rundir.TICKETS))

    judged = tmp_path / "judged"
    scores = {row.trajectory_id: row.score for row in scored_run(judged, [linked])}
    assert scores[f"{SOURCE}-guided"] > scores[f"{SOURCE}-unguided"]
    compared = compare_records(load_records(judged), make_scorer([judged], cache_dir=tmp_path / "cmp"), resamples=200)
    [pair] = compared.pairs
    assert (pair["source_id"], pair["branch_turn"]) == (SOURCE, 3)
    arms = pair["arms"]
    assert arms["guided"]["target_recurred"] is False and arms["unguided"]["target_recurred"] is True
    assert (arms["guided"]["suffix_tokens"], arms["unguided"]["suffix_tokens"]) == (160, 80)
    assert arms["guided"]["budget_exhausted"] is False and compared.unmatched == []


def test_judge_continue_runs_the_tickets_of_a_run_from_the_command_line(repaired_run: Path, tmp_path: Path):
    from typer.testing import CliRunner

    from judge.cli import app

    guided = next(t for t in load_tickets(repaired_run) if t.ticket_id == f"{SOURCE}:c1:guided")
    workdir, script = before_the_prefix(guided, tmp_path)
    out = tmp_path / "continuations.jsonl"
    runner = CliRunner(env={"COLUMNS": "300"})
    result = runner.invoke(app, ["continue", str(repaired_run), "--agent", f"scripted:{script}", "--workdir", str(workdir),
                                 "--out", str(out), "--ticket", SOURCE, "--ticket", "zh-false-completion", "--budget-turns", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()  # (stderr may hold the no-sandbox warning of a machine without bwrap)
    assert lines[0] == "4 tickets: budget-exhausted 1, completed 1, unsupported-tool 2"
    assert any(line.startswith("  zh-false-completion:c1:guided: unsupported-tool: replaying T1 Bash") for line in lines)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # Every arm is in the output, whatever stopped it, with its stop reason.
    assert sorted((r["id"], r["metadata"]["budget_exhausted"], r["metadata"]["extra"]["stop_reason"]) for r in rows) == [
        (f"{SOURCE}-guided", True, "budget-exhausted"), (f"{SOURCE}-unguided", False, "completed"),
        ("zh-false-completion-guided", False, "unsupported-tool"), ("zh-false-completion-unguided", False, "unsupported-tool")]
    # The same command again keeps the arms that ended for good and runs none of them again.
    rerun = runner.invoke(app, ["continue", str(repaired_run), "--agent", f"scripted:{script}", "--workdir", str(workdir),
                                "--out", str(out), "--ticket", SOURCE, "--ticket", "zh-false-completion", "--budget-turns", "2"])
    assert rerun.exit_code == 0 and "(4 kept from an earlier run into it, 2 stopped before their end;" in rerun.output
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == rows

    again = runner.invoke(app, ["continue", str(repaired_run), "--agent", f"scripted:{script}", "--workdir", str(workdir),
                                "--out", str(tmp_path / "again.jsonl"), "--ticket", SOURCE, "--budget-turns", "2", "--json"])
    assert again.exit_code == 0, again.output
    doc = json.loads(again.stdout)
    assert (doc["tickets"], doc["continuations"], doc["stops"]) == (2, 2, {"budget-exhausted": 1, "completed": 1})

    bad = runner.invoke(app, ["continue", str(repaired_run), "--agent", "openai:gpt-4.1", "--out", str(out)],
                        env={"OPENAI_API_KEY": ""})
    assert bad.exit_code == 1 and "OPENAI_API_KEY is not set" in bad.output
    unknown = runner.invoke(app, ["continue", str(repaired_run), "--agent", "nosuch:model", "--out", str(out)])
    assert unknown.exit_code == 1 and "unknown agent 'nosuch:model'" in unknown.output


# --- the same loop through the command line, with a model agent on the provider layer -----------------------

TEACHER_GUIDANCE = ("Re-read the original request: the tests must pass. Make parse_date raise ValueError for formats it "
                    "cannot read, then run the tests again.")


def test_the_loop_through_the_cli_with_a_model_agent_and_a_teacher(tmp_path: Path):
    """score -> repair (teacher) -> continue (an OpenAI-compatible agent: the scripted server) -> ingest -> compare,
    all through `judge`, with every cost counted: the agent's and the teacher's calls are priced (made-up prices of
    the test doubles in rubrics/prices.yaml) and recorded in the run's store; the rules judge is free."""
    if not (EXAMPLES / "anthropic_runs.jsonl").exists():
        pytest.skip("examples/batch is not in this checkout")
    from typer.testing import CliRunner

    from judge.cli import app
    from judge.rundir import RunDir
    from judge.testing.agentserver import AgentScript, ScriptedAgentServer
    from judge.testing.servers import FakeLLMServer, Scripted

    runner = CliRunner(env={"COLUMNS": "300", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})

    def judge(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == code, result.output
        return result.stdout  # the report; stderr may warn that bwrap is missing on this machine

    run, out = tmp_path / "run", tmp_path / "continuations.jsonl"
    judge("score", EXAMPLES / "anthropic_runs.jsonl", "--out", run)
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok({"guidance": TEACHER_GUIDANCE},
                                                                         usage={"input": 1000, "output": 50})) as teacher:
        judge("repair", run, "--teacher", f"openai-compatible:scripted-agent-teacher@{teacher.base_url}")
    guided = next(t for t in load_tickets(run) if t.ticket_id == f"{SOURCE}:c1:guided")
    assert guided.guidance == TEACHER_GUIDANCE and guided.cost_usd == pytest.approx(1000 * 2e-6 + 50 * 8e-6)
    workdir, _ = before_the_prefix(guided, tmp_path)

    with ScriptedAgentServer(AgentScript.load(LOOP / "agent-script.yaml")) as agent:  # the README's loop demo
        spec = f"openai-compatible:scripted-agent@{agent.base_url}"
        command = ["continue", run, "--agent", spec, "--workdir", workdir, "--ticket", SOURCE, "--budget-turns", "10",
                   "--out", out]
        printed = judge(*command)
        assert printed.splitlines()[0] == "2 tickets: completed 2"
        assert "agent calls: 5 made (0 retries), 0 turns replayed from the store; $0.0209 paid" in printed
        assert sorted(agent.served) == [("guided", 1), ("guided", 2), ("guided", 3), ("unguided", 1), ("unguided", 2)]
        # The arm's conversation reached the model in the OpenAI form, the sandbox's tools offered, results paired.
        last = agent.requests[-1]  # the unguided arm's second turn: after its failing test run
        assert [t["function"]["name"] for t in last["tools"]][:4] == ["Bash", "Read", "Write", "Edit"]
        assert last["messages"][-2]["tool_calls"][0]["id"] == "scripted-agent-unguided-1-0"
        assert last["messages"][-1]["tool_call_id"] == "scripted-agent-unguided-1-0"
        assert last["messages"][-1]["content"].startswith("Exit code 1\n")
    # Every attempt is in the run's store (a rerun would replay the turns whose request is unchanged:
    # tests/test_continuation_model.py), beside the teacher's.
    attempts = RunDir(run).attempts() or []
    assert [a["outcome"] for a in attempts if a["judge"].startswith("agent:")] == ["ok"] * 5
    assert {a["trajectory_id"] for a in attempts if a["judge"].startswith("agent:")} == {f"{SOURCE}-guided", f"{SOURCE}-unguided"}
    assert any(a["judge"].startswith("teacher:") and a["trajectory_id"] == SOURCE for a in attempts)

    linked = tmp_path / "linked.jsonl"
    judge("repair", "ingest", out, "--tickets", run / rundir.TICKETS, "--out", linked)
    judge("compare", linked, "--out", tmp_path / "cmp", "--judge", "rules", "--resamples", "200")
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    [pair] = compared["pairs"]
    arms = pair["arms"]
    assert (arms["guided"]["target_recurred"], arms["unguided"]["target_recurred"]) == (False, True)
    assert arms["guided"]["score"] > arms["unguided"]["score"]
    guided_cost, unguided_cost = arms["guided"]["cost"], arms["unguided"]["cost"]
    assert guided_cost["generation"] == {"input_tokens": 5800, "output_tokens": 160, "note": None,
                                         "usd": pytest.approx(5800 * 2e-6 + 160 * 8e-6)}
    assert guided_cost["teacher"]["usd"] == pytest.approx(0.0024) and guided_cost["teacher"]["input_tokens"] == 1000
    assert unguided_cost["teacher"]["usd"] == 0.0 and unguided_cost["generation"]["input_tokens"] == 3700
    assert guided_cost["judge"]["usd"] == 0.0 and guided_cost["unknown"] == []  # the rules judge costs nothing
    assert pair["cost_usd"] == pytest.approx(guided_cost["total_usd"] + unguided_cost["total_usd"])
    [summary] = compared["summary"]["comparisons"]
    assert summary["cost"]["treatment"]["total_usd"] == pytest.approx(5800 * 2e-6 + 160 * 8e-6 + 0.0024)
    assert any(line.startswith("Full cost over 1 pairs") for line in summary["verdict"])
