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
import re
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

SOURCE = "ja-false-completion"
# The repository's test file before the prefix (written by us to match the log's receipts: one test passes
# once "2026/03/05" parses, the other needs invalid input to raise).
TEST_DATE = """import pytest

from utils.date import parse_date


def test_slash_format():
    assert parse_date('2026/03/05').day == 5


def test_invalid_raises():
    with pytest.raises(ValueError):
        parse_date('05-03-2026')
"""
PYTEST = {"name": "Bash", "arguments": {"command": "python -m pytest tests/test_date.py -q -p no:cacheprovider"}}
SCRIPTS = {
    "guided": [
        {"content": "ループの後で ValueError を送出します。", "usage": {"input_tokens": 1800, "output_tokens": 90},
         "tool_calls": [{"name": "Edit", "arguments": {
             "file_path": "utils/date.py", "old_string": "            pass\n",
             "new_string": "            pass\n    raise ValueError(f'unsupported date format: {s!r}')\n"}}]},
        {"content": "", "usage": {"input_tokens": 1900, "output_tokens": 30}, "tool_calls": [PYTEST]},
        {"content": "修正しました。pytest の結果は 2 passed です。", "usage": {"input_tokens": 2100, "output_tokens": 40}},
    ],
    "unguided": [
        {"content": "", "usage": {"input_tokens": 1700, "output_tokens": 30}, "tool_calls": [PYTEST]},
        {"content": "完了しました。parse_date は \"2026/03/05\" 形式にも対応し、テストも通っています。",
         "usage": {"input_tokens": 2000, "output_tokens": 50}},
    ],
}


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
    """The repository before the prefix (the module as T1 read it, from its receipt, and the test file) and the
    agent's script file."""
    workdir = tmp_path / "repo"
    (workdir / "utils").mkdir(parents=True)
    (workdir / "tests").mkdir()
    (workdir / "utils" / "date.py").write_text(next(r.content for r in ticket.reusable_receipts if r.name == "Read"), encoding="utf-8")
    (workdir / "tests" / "test_date.py").write_text(TEST_DATE, encoding="utf-8")
    script = tmp_path / "script.json"
    keyed = {f"{SOURCE}:{arm}": turns for arm, turns in SCRIPTS.items()}  # other trajectories' tickets get no script
    script.write_text(json.dumps({"scripts": keyed}, ensure_ascii=False), encoding="utf-8")
    return workdir, script


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
    lines = result.output.splitlines()
    assert lines[0] == "4 tickets: budget-exhausted 1, completed 1, unsupported-tool 2"
    assert any(line.startswith("  zh-false-completion:c1:guided: unsupported-tool: replaying T1 Bash") for line in lines)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted((r["id"], r["metadata"]["budget_exhausted"]) for r in rows) == [
        (f"{SOURCE}-guided", True), (f"{SOURCE}-unguided", False)]

    bad = runner.invoke(app, ["continue", str(repaired_run), "--agent", "openai:gpt-4.1", "--out", str(out)],
                        env={"OPENAI_API_KEY": ""})
    assert bad.exit_code == 1 and "OPENAI_API_KEY is not set" in bad.output
    unknown = runner.invoke(app, ["continue", str(repaired_run), "--agent", "nosuch:model", "--out", str(out)])
    assert unknown.exit_code == 1 and "unknown agent 'nosuch:model'" in unknown.output


# --- the same loop through the command line, with a model agent on the provider layer -----------------------

TEACHER_GUIDANCE = "Make parse_date raise ValueError for formats it cannot read, then run the tests again."


def test_the_loop_through_the_cli_with_a_model_agent_and_a_teacher(tmp_path: Path):
    """score -> repair (teacher) -> continue (an OpenAI-compatible agent: the scripted server) -> ingest -> compare,
    all through `judge`, with every cost counted: the agent's and the teacher's calls are priced (made-up prices of
    the test doubles in rubrics/prices.yaml) and recorded in the run's store; the rules judge is free."""
    if not (EXAMPLES / "anthropic_runs.jsonl").exists():
        pytest.skip("examples/batch is not in this checkout")
    from typer.testing import CliRunner

    from judge.cli import app
    from judge.testing.agentserver import AgentScript, ScriptedAgentServer
    from judge.testing.servers import FakeLLMServer, Scripted

    runner = CliRunner(env={"COLUMNS": "300", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})

    def judge(*args: str, code: int = 0) -> str:
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == code, result.output
        return result.output

    run, out = tmp_path / "run", tmp_path / "continuations.jsonl"
    judge("score", EXAMPLES / "openai_runs.jsonl", EXAMPLES / "anthropic_runs.jsonl", "--out", run)
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok({"guidance": TEACHER_GUIDANCE},
                                                                         usage={"input": 1000, "output": 50})) as teacher:
        judge("repair", run, "--teacher", f"openai-compatible:scripted-agent-teacher@{teacher.base_url}")
    guided = next(t for t in load_tickets(run) if t.ticket_id == f"{SOURCE}:c1:guided")
    assert guided.guidance == TEACHER_GUIDANCE and guided.cost_usd == pytest.approx(1000 * 2e-6 + 50 * 8e-6)
    workdir, _ = before_the_prefix(guided, tmp_path)

    script = AgentScript.model_validate({"arms": [
        {"name": "guided", "contains": [TEACHER_GUIDANCE], "turns": SCRIPTS["guided"]},
        {"name": "unguided", "contains": ["parse_date"], "lacks": [TEACHER_GUIDANCE], "turns": SCRIPTS["unguided"]},
    ]})
    with ScriptedAgentServer(script) as agent:
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
        # Run again: a turn whose request is unchanged is answered from the run's store, free. The turns after a
        # pytest run may not be: its receipt shows the run's duration.
        again = re.search(r"agent calls: (\d) made \(0 retries\), (\d) turns replayed from the store", judge(*command))
        made, replayed = int(again[1]), int(again[2])
        assert made + replayed == 5 and replayed >= 3 and len(agent.served) == 5 + made
    attempts = [a for a in RunStore_attempts(run) if a["judge"].startswith("agent:")]
    assert len(attempts) == 5 + made and {a["outcome"] for a in attempts} == {"ok"}
    assert {a["trajectory_id"] for a in attempts} == {f"{SOURCE}-guided", f"{SOURCE}-unguided"}

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


def RunStore_attempts(run: Path) -> list[dict]:
    from judge.rundir import RunDir

    return RunDir(run).attempts() or []
