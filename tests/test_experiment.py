"""judge experiment (issue 25 item 5): arm files, fresh rollouts through judge continue's harness, the spec kept
from the judge, stopped rollouts in every denominator, checks in the final copy, resume, report figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.experiment import (
    ArmSpec,
    Query,
    choose_queries,
    judged_view,
    load_arms,
    load_checks,
    load_queries,
    rollout_ticket,
)
from judge.model import Message, ToolCall, Trajectory, TrajectoryMetadata
from judge.schema import Reject

SPEC = "SPEC-TEXT-7f3a: the answer file holds exactly 42"
DEMO = Path(__file__).resolve().parent.parent / "examples" / "experiments" / "demo"


# --- arm files -----------------------------------------------------------------------------------

ARM_FILES = [
    # (text, error fragment; None = valid)
    ("arms: {a: {spec: none}, b: {spec: user, todo: true}}", None),
    ("baseline: b\narms: {a: {}, b: {spec: reminder, correct: true, posthoc_rounds: 1}}", None),
    ("arms: {a: {spec: inline}, b: {}}", "arms.a.spec: Input should be 'user', 'reminder' or 'none'"),
    ("arms: {a: {}, b: {tools: [Bash]}}", "arms.b.tools: Extra inputs are not permitted"),
    ("arms: {a: {}, b: {posthoc_rounds: -1}}", "arms.b.posthoc_rounds: Input should be greater than or equal to 0"),
    ("arms: {a: {}, b: {posthoc_rounds: 9}}", "arms.b.posthoc_rounds: Input should be less than or equal to 3"),
    ("arms: {a: {}, b: {todo: maybe}}", "arms.b.todo: Input should be a valid boolean"),
    ("arms: {a: {}}", "arms: an experiment needs at least two arms"),
    ("baseline: c\narms: {a: {}, b: {}}", "baseline: 'c' is not an arm"),
    ("arms: {'a b': {}, b: {}}", "arms.a b: an arm name is letters"),
    ("arm: {a: {}, b: {}}", "arm: Extra inputs are not permitted"),
    ("- a\n- b", "an arms file is a mapping with the key 'arms'"),
    ("arms: {a: {}, b: [1]", "cannot read the arms file"),
]


@pytest.mark.parametrize(("text", "error"), ARM_FILES)
def test_arm_file_validation(tmp_path: Path, text: str, error: str | None) -> None:
    path = tmp_path / "arms.yaml"
    path.write_text(text, encoding="utf-8")
    if error is None:
        arms = load_arms(path)
        assert len(arms.arms) == 2 and arms.baseline in {a.name for a in arms.arms}
        return
    with pytest.raises(ValueError) as raised:
        load_arms(path)
    assert str(raised.value).startswith(f"{path}: ") and error in str(raised.value)


def test_example_arm_files_are_valid() -> None:
    files = sorted((DEMO.parent).glob("*.yaml")) + [DEMO / "arms.yaml"]
    assert files
    for path in files:
        load_arms(path)


def test_queries_bad_rows_named_and_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "query": "do a", "workdir": "repo"}\nnot json\n{"id": "b"}\n{"id": "a", "query": "x"}\n'
                    '{"id": "c", "query": "do c", "spec": "s"}\n', encoding="utf-8")
    rejects: list[Reject] = []
    queries = load_queries(path, rejects)
    assert [q.id for q in queries] == ["a", "c"]
    assert queries[0].workdir == str((tmp_path / "repo").resolve())
    assert [(r.source_file, r.line, r.record_index) for r in rejects] == [(str(path), n, None) for n in (2, 3, 4)]
    assert "query: Field required" in rejects[1].reason and "given twice" in rejects[2].reason
    listed = tmp_path / "q.yaml"
    listed.write_text("queries:\n  - {id: a, query: do a}\n  - {id: b}\n", encoding="utf-8")
    yaml_rejects: list[Reject] = []
    assert [q.id for q in load_queries(listed, yaml_rejects)] == ["a"]
    assert [(r.line, r.record_index, r.location()) for r in yaml_rejects] == [(None, 1, f"{listed} [record 1]")]
    with pytest.raises(ValueError, match=r"q.jsonl:2: not JSON"):
        load_queries(path)
    assert [q.id for q in choose_queries(queries, 1)] == ["a"]
    sample = choose_queries([Query(id=f"q{i}", query="x") for i in range(10)], 3, seed=5)
    assert sample == choose_queries([Query(id=f"q{i}", query="x") for i in range(10)], 3, seed=5) and len(sample) == 3


def test_checks_file(tmp_path: Path) -> None:
    path = tmp_path / "checks.yaml"
    path.write_text("checks:\n  a: ['true', {name: two, run: 'false'}]\n  '*': 'test -f x'\n", encoding="utf-8")
    checks = load_checks(path)
    assert [c.name for c in checks["a"]] == ["true", "two"] and checks["*"][0].run == "test -f x"
    path.write_text("checks:\n  a: [{name: x}]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"checks.a\[0\]: run: Field required"):
        load_checks(path)


# --- the spec never reaches the judge -------------------------------------------------------------


@pytest.mark.parametrize("placement", ["user", "reminder", "none"])
def test_judged_view_has_no_spec(placement: str) -> None:
    query = Query(id="q1", query="Write the answer file.", spec=SPEC)
    arm = ArmSpec(name=f"arm-{placement}", spec=placement)  # type: ignore[arg-type]  # one of the placements
    ticket = rollout_ticket(query, arm)
    from judge.continuation.restore import restored_messages

    restored = restored_messages(ticket)
    shown = json.dumps([m.model_dump(mode="json") for m in restored])
    assert (SPEC in shown) == (placement != "none")  # the agent does get it
    suffix = [Message(role="assistant", turn=1, content="writing",
                      tool_calls=[ToolCall(id="c1", name="Write", arguments={"file_path": "a", "content": "42"})]),
              Message(role="assistant", turn=2, content="done")]
    record = Trajectory(id="q1-rewrite", query=ticket.query, query_id="q1", messages=[*restored, *suffix],
                        metadata=TrajectoryMetadata(source_format="trajudge-continue", arm="rewrite",
                                                    extra={"agent_query": ticket.agent_query, "stop_reason": "completed"}))
    judged = judged_view(record, ticket, arm)
    assert SPEC not in judged.model_dump_json()
    assert judged.messages[0].content == "Write the answer file." and judged.messages[1:] == suffix
    assert (judged.id, judged.query_id, judged.metadata.arm) == (f"q1@arm-{placement}", "q1", f"arm-{placement}")


# --- end to end ---------------------------------------------------------------------------------


def _turn(calls: list[dict[str, Any]], content: str = "", tokens: tuple[int, int] = (100, 10)) -> dict[str, Any]:
    return {"content": content, "tool_calls": calls, "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1]}}


def _setup(tmp_path: Path, *, script: dict[str, Any] | None = None) -> dict[str, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README").write_text("demo\n", encoding="utf-8")
    queries = tmp_path / "queries.yaml"
    queries.write_text(yaml.safe_dump({"queries": [
        {"id": "q1", "query": "Write answer.txt with the answer.", "spec": SPEC},
        {"id": "q2", "query": "Write answer.txt with the answer, again.", "spec": SPEC},
        {"id": "q3", "query": "not run: past --pairs 2", "spec": SPEC}]}), encoding="utf-8")
    arms = tmp_path / "arms.yaml"
    arms.write_text("baseline: plain\narms: {plain: {spec: none}, spec: {spec: user, todo: true}}\n", encoding="utf-8")
    checks = tmp_path / "checks.yaml"
    checks.write_text("checks:\n  '*': ['grep -qx 42 answer.txt', 'test -f README']\n", encoding="utf-8")
    write = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "42\n"}}
    wrong = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "41\n"}}
    scripts = script or {"q1:plain": [_turn([wrong]), _turn([], "done", (200, 5))],
                         "q2:plain": [_turn([wrong])],  # runs out of turns: agent-error, a stopped rollout
                         "q1:spec": [_turn([write]), _turn([], "done", (300, 7))],
                         "q2:spec": [_turn([write]), _turn([], "done", (300, 7))]}
    script_path = tmp_path / "script.yaml"
    script_path.write_text(yaml.safe_dump({"scripts": scripts}), encoding="utf-8")
    return {"repo": repo, "queries": queries, "arms": arms, "checks": checks, "script": script_path}


def _run(args: list[Any], code: int = 0) -> str:
    from typer.testing import CliRunner

    from judge.cli import app

    result = CliRunner(env={"COLUMNS": "300", "OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}).invoke(app, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


def _experiment(paths: dict[str, Path], out: Path, agent: str, *extra: Any) -> list[Any]:
    return ["experiment", paths["queries"], "--arms", paths["arms"], "--agent", agent, "--checks", paths["checks"],
            "--workdir", paths["repo"], "--pairs", 2, "--out", out, "--sandbox", "none", *extra]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_experiment_scripted_end_to_end(tmp_path: Path) -> None:
    """Stopped rollouts stay in every denominator; checks run in each final copy; the figures are the data's."""
    paths = _setup(tmp_path)
    listed = yaml.safe_load(paths["queries"].read_text(encoding="utf-8"))["queries"]
    paths["queries"].write_text(yaml.safe_dump({"queries": [*listed, {"id": "q9"}]}), encoding="utf-8")  # no query
    out = tmp_path / "exp"
    output = _run(_experiment(paths, out, f"scripted:{paths['script']}", "--judge", "rules"))
    report = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    plain, spec = report["summary"]["plain"], report["summary"]["spec"]
    assert report["queries"] == ["q1", "q2"]  # --pairs 2: the first two
    # The bad row is named on stderr and kept as a reject row, the rest of the file ran.
    where = f"{paths['queries']} [record {len(listed)}]"
    assert f"rejected {where}: query: Field required" in output
    rejected = [json.loads(x) for x in (out / "rejected_queries.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["record_index"], r["format"]) for r in rejected] == [(len(listed), "queries")]
    assert report["settings"]["rejected_queries"] == [f"{where}: query: Field required"]
    # q2 under plain ran out of script: stopped, yet counted in every denominator.
    assert plain["queries"] == 2 and [s["query_id"] for s in plain["stopped"]] == ["q2"]
    assert plain["stopped"][0]["stop_reason"] == "agent-error"
    assert plain["released"]["queries"] == 2 and plain["retained"]["queries"] == 2
    rollouts = {(r["arm"], r["query_id"]): r for r in report["rollouts"]}
    assert rollouts[("plain", "q2")]["released"] is False
    # Checks ran in each final copy: the spec arm wrote 42 (both pass), plain wrote 41 (only the README check).
    checks = [json.loads(line) for line in (out / "checks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(c["arm"], c["query_id"]): (c["passed"], c["total"], c["ran"]) for c in checks} == {
        ("plain", "q1"): (1, 2, True), ("plain", "q2"): (1, 2, True), ("spec", "q1"): (2, 2, True), ("spec", "q2"): (2, 2, True)}
    assert spec["retained"] == {"retained": 2, "queries": 2, "rate": 1.0, "mean_checks_passed": 1.0, "not_run": 0}
    assert plain["retained"]["retained"] == 0 and plain["retained"]["mean_checks_passed"] == 0.5
    # The checked copies are removed, but for the agent-error rollout's: a rerun resumes it there (judge continue's rule).
    assert [p.name for p in (out / "arms").glob("*.work/*")] == ["q2-rewrite-1"]
    # Generation tokens are the script's usage, every turn's input (the repeated context) included.
    assert spec["generation_tokens"] == {"input_tokens": 800, "output_tokens": 34, "total": 834}
    assert plain["generation_tokens"] == {"input_tokens": 400, "output_tokens": 25, "total": 425}
    comparison = report["comparisons"][0]
    assert (comparison["treatment"], comparison["baseline"]) == ("spec", "plain")
    assert (comparison["retained"]["wins"], comparison["retained"]["ties"], comparison["retained"]["losses"]) == (2, 0, 0)
    assert comparison["retained"]["mean_difference"] == pytest.approx(0.5)
    assert comparison["score"]["pairs"] == 2  # the stopped rollout is in compare's pairs too
    # The TodoWrite arm was offered the plan tool, the other not.
    arms_rows = {a: [json.loads(x) for x in (out / "arms" / f"{a}.jsonl").read_text(encoding="utf-8").splitlines()]
                 for a in ("plain", "spec")}
    assert all(r["metadata"]["extra"]["spec_added"] for r in arms_rows["spec"])
    judged = (out / "judged.jsonl").read_text(encoding="utf-8") + (out / "run" / "trajectories.jsonl").read_text(encoding="utf-8")
    assert SPEC not in judged and SPEC in json.dumps(arms_rows["spec"])
    assert (out / "experiment.md").exists() and "<table>" in (out / "experiment.html").read_text(encoding="utf-8")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_spec_never_reaches_an_llm_judge_and_resume_pays_nothing_twice(tmp_path: Path) -> None:
    """A model agent (the scripted agent server) and an LLM judge (a fake server recording every request): the spec
    is in the agent's requests, in none of the judge's; a rerun makes no agent call and no judge call."""
    from judge.testing.agentserver import AgentScript, ScriptedAgentServer
    from judge.testing.servers import FakeLLMServer

    paths = _setup(tmp_path)
    write = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "42\n"}}
    script = AgentScript.model_validate({"arms": [
        {"name": "spec", "contains": ["SPEC-TEXT"], "turns": [{"tool_calls": [write]}, {"content": "done"}]},
        {"name": "plain", "lacks": ["SPEC-TEXT"], "turns": [{"tool_calls": [write]}, {"content": "done"}]}]})
    out = tmp_path / "exp"
    with ScriptedAgentServer(script) as agent, FakeLLMServer("openai") as judge:
        args = _experiment(paths, out, f"openai-compatible:scripted-agent@{agent.base_url}",
                           "--judge", f"openai-compatible:fake-judge@{judge.base_url}")
        _run(args)
        agent_calls, judge_calls = agent.request_count, judge.request_count
        assert agent_calls == 8  # 2 queries x 2 arms x 2 turns
        assert any(SPEC in json.dumps(r) for r in agent.requests)
        assert judge_calls >= 4 and not any(SPEC in json.dumps(r) for r in judge.requests)
        first = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
        # A rerun (after the report was lost, as after a kill before it was written) pays nothing twice.
        (out / "experiment.json").unlink()
        _run(args)
        assert (agent.request_count, judge.request_count) == (agent_calls, judge_calls)
        again = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    assert again["summary"] == first["summary"]
    checks = (out / "checks.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(checks) == 4  # checked once each: the rerun kept them
    generation = first["summary"]["spec"]["cost"]["generation"]
    assert generation["usd"] is not None and generation["usd"] > 0  # the scripted agent's made-up prices


def test_correction_needs_a_teacher(tmp_path: Path) -> None:
    paths = _setup(tmp_path)
    paths["arms"].write_text("arms: {plain: {}, corrected: {correct: true}}\n", encoding="utf-8")
    output = _run(_experiment(paths, tmp_path / "exp", f"scripted:{paths['script']}", "--judge", "rules"), code=2)
    assert "--teacher" in output and "corrected" in output


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_posthoc_round_repairs_what_the_judge_flags(tmp_path: Path) -> None:
    """posthoc_rounds: the rollout is judged (without its spec), routed, its guided ticket continued in the
    conversation the agent had (with its spec); the repair is the arm's result, checked in its own copy, its cost
    the rollout's generation plus the repair's plus the post-hoc judging."""
    bad = [_turn([{"name": "Write", "arguments": {"file_path": "answer.txt", "content": "41\n"}}]),
           _turn([{"name": "Bash", "arguments": {"command": "grep -qx 42 answer.txt"}}], "", (200, 10)),
           _turn([], "Done: answer.txt holds 42 and the check passes.", (300, 10))]
    fix = [_turn([{"name": "Write", "arguments": {"file_path": "answer.txt", "content": "42\n"}}], "", (400, 10)),
           _turn([], "Fixed: answer.txt holds 42.", (500, 10))]
    paths = _setup(tmp_path, script={"q1:plain": bad, "q1:repaired": bad, "q1@repaired:guided": fix})
    paths["arms"].write_text("baseline: plain\narms: {plain: {}, repaired: {spec: user, posthoc_rounds: 1}}\n", encoding="utf-8")
    out = tmp_path / "exp"
    args = _experiment(paths, out, f"scripted:{paths['script']}", "--judge", "rules", "--teacher", "template")
    args[args.index("--pairs") + 1] = 1
    _run(args)
    report = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    plain, repaired = report["summary"]["plain"], report["summary"]["repaired"]
    assert (plain["retained"]["retained"], repaired["retained"]["retained"]) == (0, 1)
    # Generation: the rollout's three turns (100+10, 200+10, 300+10) plus the repair's two (400+10, 500+10).
    assert plain["generation_tokens"]["total"] == 630 and repaired["generation_tokens"]["total"] == 630 + 920
    assert "posthoc_judge" in repaired["cost"] and "posthoc_judge" not in plain["cost"]
    continuation = (out / "posthoc" / "repaired" / "round-1" / "continuations.jsonl").read_text(encoding="utf-8")
    assert SPEC in continuation  # the agent's repair conversation kept its spec ...
    for judged in (out / "judged.jsonl", out / "posthoc" / "repaired" / "round-1" / "judged.jsonl"):
        assert SPEC not in judged.read_text(encoding="utf-8")  # ... which no judging read
    final = next(json.loads(line) for line in (out / "judged.jsonl").read_text(encoding="utf-8").splitlines()
                 if json.loads(line)["id"] == "q1@repaired")
    assert final["metadata"]["extra"]["repaired_from"] == "q1-rewrite"
    assert final["messages"][0]["content"] == "Write answer.txt with the answer."


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_rerun_after_a_failure_pays_no_answered_turn_twice(tmp_path: Path) -> None:
    """The agent fails mid-rollout (its server refuses turn 2 of the spec arm): the rerun runs no finished rollout
    again and asks only the turn that was never answered (turn 1 is replayed from the store, its Write served by the
    ledger); the stopped rollouts were in the first report's denominators."""
    from judge.testing.agentserver import AgentScript, ScriptedAgentServer

    paths = _setup(tmp_path)
    write = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "42\n"}}
    plain = {"name": "plain", "lacks": ["SPEC-TEXT"], "turns": [{"tool_calls": [write]}, {"content": "done"}]}
    short = AgentScript.model_validate({"arms": [{"name": "spec", "contains": ["SPEC-TEXT"], "turns": [{"tool_calls": [write]}]}, plain]})
    whole = AgentScript.model_validate({"arms": [{"name": "spec", "contains": ["SPEC-TEXT"],
                                                  "turns": [{"tool_calls": [write]}, {"content": "done"}]}, plain]})
    out = tmp_path / "exp"
    with ScriptedAgentServer(short) as agent:
        args = _experiment(paths, out, f"openai-compatible:scripted-agent@{agent.base_url}", "--judge", "rules")
        _run(args)
        first = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
        assert [s["stop_reason"] for s in first["summary"]["spec"]["stopped"]] == ["agent-error", "agent-error"]
        assert first["summary"]["spec"]["released"] == {"released": 0, "queries": 2, "rate": 0.0}
        answered = [served for served in agent.served if served[0] is not None]
        assert sorted(answered) == [("plain", 1), ("plain", 1), ("plain", 2), ("plain", 2), ("spec", 1), ("spec", 1)]
        agent.script = whole  # the server is back
        agent.served.clear()
        _run(args)
        assert sorted(agent.served) == [("spec", 2), ("spec", 2)]  # only the turns never answered
    again = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    assert again["summary"]["spec"]["stopped"] == [] and again["summary"]["spec"]["retained"]["retained"] == 2
    # The judging saw the finished rollouts, not the stopped ones of the first run.
    judged = {row["id"]: row for row in map(json.loads, (out / "run" / "trajectories.jsonl").read_text(encoding="utf-8").splitlines())}
    assert judged["q1@spec"]["messages"][-1]["content"] == "done"
    assert judged["q1@spec"]["metadata"]["extra"]["stop_reason"] == "completed"
    assert {r["arm"]: r["released"] for r in again["rollouts"] if r["query_id"] == "q1"}["spec"] is not False
    checks = [json.loads(line) for line in (out / "checks.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(c["query_id"], c["stop_reason"], c["passed"]) for c in checks if c["arm"] == "spec"] == [
        ("q1", "agent-error", 2), ("q2", "agent-error", 2), ("q1", "completed", 2), ("q2", "completed", 2)]


# --- report arithmetic (pure) ----------------------------------------------------------------------

ORDER_CASES = [
    # (tag, description, majority, counted)
    ("premature-claim", "The agent claims the job finished while it is still running.", True, True),
    ("unchecked-tick", "A todo is marked completed without a passing check.", True, True),
    ("stale-evidence", "The test run cited predates the last edit.", True, True),
    (None, "The workflow depends on a field that was not yet created.", True, True),
    (None, "Steps run out of order: the index is built before the table exists.", True, True),
    (None, "The prerequisite migration was skipped.", True, True),
    ("failed-call", "The Bash call failed and the agent did not recover.", True, False),
    (None, "The final answer orders the list alphabetically as asked.", True, False),
    ("premature-claim", "Minority finding: claims done early.", False, False),
]


@pytest.mark.parametrize(("tag", "description", "majority", "counted"), ORDER_CASES)
def test_dependency_and_ordering_errors(tag: str | None, description: str, majority: bool, counted: bool) -> None:
    from judge.compare import ArmRecord
    from judge.experiment import order_errors
    from judge.schema import Cluster

    cluster = Cluster(trajectory_id="q@a", cluster="c1", members=[], votes=2 if majority else 1, panel_size=3,
                      majority=majority, turn=2, category="semantic", severity="severe", tag=tag, description=description)
    record = ArmRecord(trajectory=Trajectory(id="q@a", query="x", query_id="q", messages=[],
                                             metadata=TrajectoryMetadata(source_format="t")),
                       score=None, clusters=[cluster], panel_size=3)
    assert bool(order_errors(record)) == counted


def test_paired_checks_arithmetic() -> None:
    from judge.experiment import ArmRow, checks_row, paired_checks

    def row(arm: str, query: str, passed: int, total: int = 4) -> ArmRow:
        results = [{"passed": i < passed} for i in range(total)]
        return ArmRow(arm=arm, query_id=query, record=None, checks=checks_row(arm, query, None, results, total))

    treatment = [row("t", "a", 4), row("t", "b", 2), row("t", "c", 1), row("t", "d", 3, total=0)]
    baseline = [row("b", "a", 2), row("b", "b", 2), row("b", "c", 3), row("b", "d", 0, total=0)]
    paired = paired_checks(treatment, baseline)
    # a: +0.5 (win), b: 0 (tie), c: -0.5 (loss); d has no checks: not a pair.
    assert (paired["pairs"], paired["wins"], paired["ties"], paired["losses"]) == (3, 1, 1, 1)
    assert paired["mean_difference"] == pytest.approx(0.0) and paired["sign_test_p"] == pytest.approx(1.0)
    assert treatment[0].checks["retained"] and not treatment[1].checks["retained"] and not treatment[3].checks["retained"]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_budget_stopped_rollouts_stay_in_every_denominator(tmp_path: Path) -> None:
    paths = _setup(tmp_path)
    out = tmp_path / "exp"
    _run(_experiment(paths, out, f"scripted:{paths['script']}", "--judge", "rules", "--budget-turns", 1))
    report = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    for arm in ("plain", "spec"):
        summary = report["summary"][arm]
        assert summary["queries"] == 2 and summary["budget_cut"] == 2 and summary["finished"] == 2
        assert [s["stop_reason"] for s in summary["stopped"]] == ["budget-exhausted", "budget-exhausted"]
        assert summary["released"]["queries"] == 2 and summary["retained"]["queries"] == 2
        assert summary["cost"]["arms"] == 2  # both judged and costed
    # The spec arm's one turn wrote the answer before the budget cut it: its checks pass in the copy it left.
    assert report["summary"]["spec"]["retained"]["retained"] == 2
    assert report["comparisons"][0]["score"]["pairs"] == 2


def _experiment_process(paths: dict[str, Path], out: Path, url: str) -> Any:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    command = [sys.executable, "-c", "from judge.cli import main; main()", "experiment", str(paths["queries"]),
               "--arms", str(paths["arms"]), "--agent", f"openai-compatible:scripted-agent@{url}", "--judge", "rules",
               "--checks", str(paths["checks"]), "--pairs", "2", "--out", str(out), "--sandbox", "none"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)


def test_experiment_killed_at_random_moments_pays_no_turn_and_runs_no_call_twice(tmp_path: Path) -> None:
    """judge experiment SIGKILLed at seeded moments, then run to its end: each agent turn is paid once (but one in
    flight at a kill), each tool call ran once (a probe outside the copies counts them), every rollout is in the
    report once."""
    import os
    import random
    import signal
    import time
    from collections import Counter

    from judge.store import RunStore
    from judge.testing.agentserver import AgentScript, ScriptedAgentServer

    paths = _setup(tmp_path)
    probe = tmp_path / "probe.txt"
    queries = yaml.safe_load(paths["queries"].read_text(encoding="utf-8"))
    for query in queries["queries"][:2]:  # each query its own repository, so a call's probe line names its query
        repo = tmp_path / f"repo-{query['id']}"
        repo.mkdir()
        (repo / "id.txt").write_text(query["id"], encoding="utf-8")
        query["workdir"] = str(repo)
    paths["queries"].write_text(yaml.safe_dump(queries), encoding="utf-8")

    def turns(arm: str) -> list[dict[str, Any]]:
        return [{"content": f"step {k}", "usage": {"input_tokens": 100 * k, "output_tokens": 10}, "tool_calls": [
            {"name": "Bash", "arguments": {"command": f"echo {arm}-{k}-$(cat id.txt) >> {probe}; sleep 0.3"}}]}
            for k in (1, 2)] + [{"content": "done", "usage": {"input_tokens": 300, "output_tokens": 5}}]

    script = AgentScript.model_validate({"arms": [{"name": "spec", "contains": ["SPEC-TEXT"], "turns": turns("spec")},
                                                  {"name": "plain", "lacks": ["SPEC-TEXT"], "turns": turns("plain")}]})
    out = tmp_path / "exp"
    kills = 0
    rng = random.Random(5)
    # The kills are placed by progress, not by the clock (a fast machine finished before a timed kill): each run is
    # killed once the server has answered `threshold` turns in all (12 in a whole experiment: 2 queries x 2 arms x 3
    # turns; a resumed run asks only what is left), after a seeded pause that lands the kill inside a turn, a tool
    # call or between them.
    with ScriptedAgentServer(script) as server:
        for threshold in sorted(rng.sample(range(1, 12), 4)):
            process = _experiment_process(paths, out, server.base_url)
            while len(server.served) < threshold and process.poll() is None:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 0.4))
            if process.poll() is not None:
                break
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            kills += 1
        process = _experiment_process(paths, out, server.base_url)
        printed = process.communicate(timeout=300)[0].decode("utf-8", errors="replace")
        assert process.returncode == 0, printed
        served = Counter(server.served)
    assert kills >= 1
    with RunStore.for_run(out) as store:
        interrupted = sum(1 for a in store.attempts() if a["outcome"] == "interrupted")
    report = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    rollouts = Counter((r["arm"], r["query_id"]) for r in report["rollouts"])
    assert rollouts == Counter({(a, q): 1 for a in ("plain", "spec") for q in ("q1", "q2")})
    completed = {(r["arm"], r["query_id"]) for r in report["rollouts"] if r["stop_reason"] == "completed"}
    assert {r["stop_reason"] for r in report["rollouts"]} <= {"completed", "unknown-write"}
    # Each (arm, turn) is asked once per query that got there; more only for a request in flight at a kill.
    assert sum(served.values()) - sum(min(n, 2) for n in served.values()) <= interrupted
    lines = Counter(probe.read_text(encoding="utf-8").split())
    assert set(lines.values()) == {1}, lines  # no tool call ran twice
    for arm, query in completed:
        assert {f"{arm}-1-{query}", f"{arm}-2-{query}"} <= set(lines)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_correction_arm_rewinds_a_failed_call_and_counts_its_cost(tmp_path: Path) -> None:
    """correct: true runs judge continue's runtime correction in the rollout: the failed call's turn is rewound out of
    the judged trajectory, its tokens stay in the arm's generation; the arm without it keeps the failed call."""
    broken = {"name": "Bash", "arguments": {"command": "python3 -c 'import no_such_module_xyz'"}}
    write = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "42\n"}}
    turns = [_turn([broken], "", (100, 10)), _turn([write], "", (200, 10)), _turn([], "done", (300, 10))]
    paths = _setup(tmp_path, script={"q1:plain": turns, "q1:corrected": turns})
    paths["arms"].write_text("baseline: plain\narms: {plain: {}, corrected: {correct: true}}\n", encoding="utf-8")
    out = tmp_path / "exp"
    args = _experiment(paths, out, f"scripted:{paths['script']}", "--judge", "rules", "--teacher", "template")
    args[args.index("--pairs") + 1] = 1
    _run(args)
    report = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
    plain, corrected = report["summary"]["plain"], report["summary"]["corrected"]
    assert (plain["corrections"], corrected["corrections"]) == (0, 1)
    assert plain["generation_tokens"]["total"] == corrected["generation_tokens"]["total"] == 630  # the rewound turn too
    assert plain["retained"]["retained"] == corrected["retained"]["retained"] == 1
    judged = {row["id"]: row for row in map(json.loads, (out / "judged.jsonl").read_text(encoding="utf-8").splitlines())}
    assert "no_such_module_xyz" in json.dumps(judged["q1@plain"]["messages"])
    assert "no_such_module_xyz" not in json.dumps([m for m in judged["q1@corrected"]["messages"] if m["role"] != "user"])


# --- one budget, one full cost ------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_max_cost_is_one_cap_over_every_store_and_a_rerun_keeps_the_spend(tmp_path: Path) -> None:
    """Agents ($0.17 in OUT's store) and the judging (its own store, about $0.05, with worst-case reservations of
    some cents) each fit under $0.19; their sum does not. The judging is stopped, exit 3 names it; a rerun without
    --max-cost keeps the cap and the spend (no agent call again); a raised cap finishes the judging and the total
    is the sum of both stores."""
    from judge.testing.agentserver import AgentScript, ScriptedAgentServer
    from judge.testing.servers import FakeLLMServer

    paths = _setup(tmp_path)
    write = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "42\n"}}
    paid = {"input_tokens": 10000, "output_tokens": 100}  # $0.0208 a turn at the scripted agent's price
    turns = [{"tool_calls": [write], "usage": paid}, {"content": "done", "usage": paid}]
    script = AgentScript.model_validate({"arms": [{"name": "spec", "contains": ["SPEC-TEXT"], "turns": turns},
                                                  {"name": "plain", "lacks": ["SPEC-TEXT"], "turns": turns}]})
    out = tmp_path / "exp"
    with ScriptedAgentServer(script) as agent, FakeLLMServer("openai") as judge:
        # A priced judge model name (the price table's scripted-agent* entry), so the judging costs money.
        args = _experiment(paths, out, f"openai-compatible:scripted-agent@{agent.base_url}",
                           "--judge", f"openai-compatible:scripted-agent-judge@{judge.base_url}")
        output = _run([*args, "--max-cost", "0.19"], code=3)
        assert "the judging of the rollouts" in output and "budget_exceeded" in output and "one cap" in output
        assert agent.request_count == 8
        first = json.loads((out / "budget.json").read_text(encoding="utf-8"))
        assert first["max_cost_usd"] == 0.19
        assert first["stores"]["."] == pytest.approx(8 * (10000 * 2 + 100 * 8) / 1e6)
        assert first["spent_usd"] <= 0.19  # the cap held over the sum
        report = json.loads((out / "experiment.json").read_text(encoding="utf-8"))
        assert report["settings"]["budget_usd"]["spent_usd"] == first["spent_usd"]
        assert [s.split(":")[0] for s in report["settings"]["budget_usd"]["stopped"]] == ["the judging of the rollouts"]
        # A rerun without --max-cost: the cap is remembered, the agents' spend too (nothing paid again).
        judge_calls = judge.request_count
        output = _run(args, code=3)
        assert "the judging of the rollouts" in output
        assert agent.request_count == 8
        again = json.loads((out / "budget.json").read_text(encoding="utf-8"))
        assert again["max_cost_usd"] == 0.19 and again["stores"]["."] == first["stores"]["."]
        assert again["spent_usd"] <= 0.19
        # A raised cap: the judging ends; the experiment's spend is both stores', the agents' paid once.
        _run([*args, "--max-cost", "1"])
        assert agent.request_count == 8 and judge.request_count > judge_calls
        final = json.loads((out / "budget.json").read_text(encoding="utf-8"))
        assert final["stores"]["run"] > 0.19 - first["stores"]["."]  # the judging alone would have crossed the rest
        assert final["spent_usd"] == pytest.approx(final["stores"]["."] + final["stores"]["run"], abs=1e-5)
        assert final["stores"]["."] == first["stores"]["."]


def test_compare_and_the_experiment_report_give_the_same_full_cost(tmp_path: Path) -> None:
    """A post-hoc repaired result's rounds' judging is in compare's full cost (OUT/compare) as in experiment.json:
    both read judge.compare.arm_cost."""
    from judge.compare import ArmRecord, compare_records, write_outputs
    from judge.experiment import ArmRow, arm_summary
    from judge.model import Usage
    from judge.schema import ScoreRow, Verdict

    def record(arm: str, extra: dict[str, Any]) -> ArmRecord:
        trajectory = Trajectory(id=f"q1@{arm}", query="q", query_id="q1",
                                messages=[Message(role="user", content="q", turn=0), Message(role="assistant", content="a", turn=1)],
                                metadata=TrajectoryMetadata(source_format="openai", arm=arm,
                                                            usage=Usage(input_tokens=100, output_tokens=10),
                                                            extra={"cost_usd": 0.5, "teacher_usage": {}, **extra}))
        verdict = Verdict(trajectory_id=trajectory.id, judge="openai:gpt-4o", pass_index=0, pass_key="openai:gpt-4o#0",
                          status="ok", usage=Usage(input_tokens=100, output_tokens=10), cost_usd=0.02, attempts=1)
        row = ScoreRow(trajectory_id=trajectory.id, score=7, reason="r", release=True, panel_size=1, valid_passes=1)
        return ArmRecord(trajectory=trajectory, score=row, clusters=[], panel_size=1, verdicts=[verdict])

    rounds = [{"round": 1, "input_tokens": 300, "output_tokens": 30, "usd": 0.25, "note": None},
              {"round": 2, "input_tokens": 200, "output_tokens": 20, "usd": 0.125, "note": None}]
    records = [record("plain", {}), record("repaired", {"posthoc_judge": rounds})]
    compared = compare_records(records, None, baseline="plain", pair_by="query")
    write_outputs(compared, tmp_path / "compare")
    written = json.loads((tmp_path / "compare" / "compare.json").read_text(encoding="utf-8"))
    side = next(c for c in written["summary"]["comparisons"] if c["treatment"] == "repaired")["cost"]["treatment"]
    summary = arm_summary([ArmRow(arm="repaired", query_id="q1", record=records[1], checks={"total": 0})])
    assert side["total_usd"] == pytest.approx(0.5 + 0.02 + 0.25 + 0.125)
    assert summary["cost"]["total_usd"] == pytest.approx(side["total_usd"])
    assert summary["cost"]["judge"] == side["judge"] and side["judge"]["input_tokens"] == 600
    assert side["posthoc_judge"]["usd"] == pytest.approx(0.375) and summary["cost"]["posthoc_judge"] == side["posthoc_judge"]
    assert "post-hoc" in (tmp_path / "compare" / "compare.md").read_text(encoding="utf-8")
    # A round of unknown cost makes the judge part, and the total, unknown in both (never a smaller number).
    rounds[1]["usd"] = None
    unknown = compare_records([record("plain", {}), record("repaired", {"posthoc_judge": rounds})], None,
                              baseline="plain", pair_by="query")
    assert unknown.comparisons[0]["cost"]["treatment"]["total_usd"] is None


def test_experiment_budget_gives_each_store_the_rest_and_remembers_a_lost_store(tmp_path: Path) -> None:
    """Each store gets the cap less every other store's spend (failed and unknown-cost attempts included: the
    store counts them); budget.json keeps the cap for a rerun without --max-cost and the spend of a store removed
    since."""
    import shutil

    from judge.experiment import BUDGET_FILE, ExperimentBudget
    from judge.store import RunStore

    out = tmp_path / "exp"
    rounds = out / "posthoc" / "fixed" / "round-1" / "run"
    for where, costs in ((out, [0.25, None]), (out / "run", [0.125]), (rounds, [0.0625])):
        where.mkdir(parents=True, exist_ok=True)
        with RunStore.for_run(where) as store:
            for cost in costs:  # None: a timed-out attempt, counted at its reservation (0.03125)
                store.record_attempt("k", "t", "j", 0, "ok" if cost is not None else "timeout", cost_usd=cost,
                                     reserved_usd=0.03125)
    budget = ExperimentBudget.open(out, 1.0)
    assert budget.total() == pytest.approx(0.25 + 0.03125 + 0.125 + 0.0625)
    assert budget.cap_for(out / "run") == pytest.approx(1.0 - 0.25 - 0.03125 - 0.0625)
    assert budget.cap_for(out) == pytest.approx(1.0 - 0.125 - 0.0625)
    budget.note(rounds)
    shutil.rmtree(out / "posthoc")  # a lost post-hoc round: its money was spent all the same
    again = ExperimentBudget.open(out, None)
    assert again.cap == 1.0 and again.total() == pytest.approx(0.46875)
    assert again.cap_for(out / "run") == pytest.approx(1.0 - 0.28125 - 0.0625)
    assert json.loads((out / BUDGET_FILE).read_text(encoding="utf-8"))["stores"]["posthoc/fixed/round-1/run"] == 0.0625
    assert ExperimentBudget.open(out, 0.25).cap_for(out / "run") == 0.0  # the others spent past a lowered cap
    (out / BUDGET_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=BUDGET_FILE):
        ExperimentBudget.open(out, None)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_post_hoc_round_stopped_by_the_cap_is_named(tmp_path: Path) -> None:
    """A post-hoc round's model teacher under a cap that cannot cover its call: the repair falls back to its
    template, and exit 3 names the round's repair teacher (not only rollouts stopped max-cost count)."""
    from judge.testing.servers import FakeLLMServer

    bad = [_turn([{"name": "Write", "arguments": {"file_path": "answer.txt", "content": "41\n"}}]),
           _turn([{"name": "Bash", "arguments": {"command": "grep -qx 42 answer.txt"}}], "", (200, 10)),
           _turn([], "Done: answer.txt holds 42 and the check passes.", (300, 10))]
    fix = [_turn([{"name": "Write", "arguments": {"file_path": "answer.txt", "content": "42\n"}}], "", (400, 10)),
           _turn([], "Fixed: answer.txt holds 42.", (500, 10))]
    paths = _setup(tmp_path, script={"q1:plain": bad, "q1:repaired": bad, "q1@repaired:guided": fix})
    paths["arms"].write_text("baseline: plain\narms: {plain: {}, repaired: {posthoc_rounds: 1}}\n", encoding="utf-8")
    out = tmp_path / "exp"
    with FakeLLMServer("openai") as teacher:
        args = _experiment(paths, out, f"scripted:{paths['script']}", "--judge", "rules", "--max-cost", "0",
                           "--teacher", f"openai-compatible:scripted-agent-teacher@{teacher.base_url}")
        args[args.index("--pairs") + 1] = 1
        output = _run(args, code=3)
        assert teacher.request_count == 0  # the cap covered no teacher call
    assert "repaired: post-hoc round 1's repair teacher" in output
