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

    again = runner.invoke(app, ["continue", str(repaired_run), "--agent", f"scripted:{script}", "--workdir", str(workdir),
                                "--out", str(tmp_path / "again.jsonl"), "--ticket", SOURCE, "--budget-turns", "2", "--json"])
    assert again.exit_code == 0, again.output
    doc = json.loads(again.stdout)
    assert (doc["tickets"], doc["continuations"], doc["stops"]) == (2, 2, {"budget-exhausted": 1, "completed": 1})

    bad = runner.invoke(app, ["continue", str(repaired_run), "--agent", "openai:gpt-4.1", "--out", str(out)])
    assert bad.exit_code == 1 and "provider-backed agents are not available yet" in bad.output
