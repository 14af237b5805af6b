"""`judge validate` honest by construction: baselines on the same labels (arithmetic on hand-made labels), the AgentRx
category map, failure ids as text or numbers, user-caused failures, and the refusal of labels of another run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import rundir
from judge.importers.labels import LabelledFailure, TrajectoryLabels, failure_id, load_labels
from judge.model import Message, Receipt, ToolCall, Trajectory, TrajectoryMetadata, number_turns
from judge.schema import ScoredIssue, ScoreRow
from judge.validate import (
    AGENTRX_CATEGORY_MAP,
    BASELINES,
    LabelMismatch,
    category_key,
    evaluate,
    expected_random_summary,
    first_failed_call_turn,
    format_markdown,
    majority_agent,
    map_category,
    mast_agreement,
    random_agent_hit,
    random_turn_hit,
    validate_run,
)

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def agents_trajectory(tid: str, speakers: list[str], failed_turns: tuple[int, ...] = ()) -> Trajectory:
    """A user message, then one assistant turn per speaker; a turn in ``failed_turns`` makes a call that fails."""
    messages = [Message(role="user", content="task", source_index=0)]
    for index, speaker in enumerate(speakers, start=1):
        turn = len([m for m in messages if m.role == "assistant"]) + 1
        if turn in failed_turns:
            call = ToolCall(id=f"c{turn}", name="run", arguments={})
            messages.append(Message(role="assistant", content="", name=speaker, tool_calls=[call], source_index=index))
            messages.append(Message(role="tool", content="boom", receipt=Receipt(call_id=call.id, content="boom", is_error=True)))
        else:
            messages.append(Message(role="assistant", content=f"m{index}", name=speaker, source_index=index))
    return Trajectory(id=tid, query="task", query_id=tid, messages=number_turns(messages),
                      metadata=TrajectoryMetadata(source_format="who-and-when"))


def issue(turn: int) -> ScoredIssue:
    return ScoredIssue(cluster=f"c{turn}", turn=turn, category="semantic", severity="severe", description="x", votes=2)


# --- the pure pieces ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("label_turns", "turns", "k", "expected"),
    [([3], 10, 0, 0.1), ([3], 10, 1, 0.3), ([1], 10, 1, 0.2), ([10], 10, 2, 0.3), ([2, 3], 4, 0, 0.5),
     ([2, 3], 4, 1, 1.0), ([None], 5, 3, 0.0), ([], 5, 0, 0.0), ([0], 4, 0, 0.0), ([3], 0, 0, 0.0)],
)
def test_random_turn_hit_is_the_exact_expected_value(label_turns, turns, k, expected) -> None:
    assert random_turn_hit(label_turns, turns, k) == pytest.approx(expected)


def test_random_agent_hit_draws_from_the_agents_that_speak() -> None:
    trajectory = agents_trajectory("t", ["WebSurfer", "Orchestrator (thought)", "Orchestrator (-> WebSurfer)", "FileSurfer"])
    assert random_agent_hit(trajectory, "Orchestrator") == pytest.approx(1 / 3)  # websurfer, orchestrator, filesurfer
    assert random_agent_hit(trajectory, "Assistant") == 0.0


def test_first_failed_call_turn() -> None:
    assert first_failed_call_turn(agents_trajectory("t", ["a", "b", "c", "d"], failed_turns=(3, 4))) == 3
    assert first_failed_call_turn(agents_trajectory("t", ["a", "b"])) is None


def test_majority_agent_counts_root_causes_and_breaks_ties_alphabetically() -> None:
    def label(agent: str, by_root: bool = True) -> TrajectoryLabels:
        return TrajectoryLabels(label_id=agent, kind="who-and-when", failures=[LabelledFailure(step=1, agent=agent, is_root=by_root)])
    assert majority_agent([label("WebSurfer"), label("Orchestrator (thought)"), label("Orchestrator")]) == "orchestrator"
    assert majority_agent([label("b"), label("a")]) == "a"
    assert majority_agent([label("User"), label("a", by_root=False)]) is None  # the user is no agent; only roots count


# --- every baseline beside the judge, on one small hand-made set ----------------------------------------


def test_baselines_on_hand_made_labels() -> None:
    # three trajectories of four turns; labels (0-based history step = turn here) and a failed call per trajectory
    one = agents_trajectory("one", ["A", "B", "A", "B"], failed_turns=(2,))
    two = agents_trajectory("two", ["A", "B", "A", "B"], failed_turns=(4,))
    three = agents_trajectory("three", ["B", "B", "A", "B"])
    labels = [
        TrajectoryLabels(label_id="one", kind="who-and-when", failures=[LabelledFailure(step=2, agent="B", is_root=True)]),
        TrajectoryLabels(label_id="two", kind="who-and-when", failures=[LabelledFailure(step=1, agent="A", is_root=True)]),
        TrajectoryLabels(label_id="three", kind="who-and-when", failures=[LabelledFailure(step=4, agent="B", is_root=True)]),
    ]
    trajectories = {"one": one, "two": two, "three": three}
    judge = {"one": [issue(2)], "two": [issue(3)], "three": []}  # "three" has no prediction: a miss
    report = evaluate(labels, trajectories, judge, {t: True for t in trajectories}, "who-and-when", k=1)
    p = report.predictors
    assert set(p) == {"judge", *BASELINES}

    def hits(name: str, metric: str) -> tuple[float, int]:
        rate = getattr(p[name], metric)
        return rate.hits, rate.n

    # judge: T2 of "one" is exact (speaker B, as labelled); T3 of "two" misses T1 even within +-1, but its speaker A
    # is the labelled agent; "three" has no prediction
    assert (hits("judge", "step_exact"), hits("judge", "step_within_k"), hits("judge", "agent")) == ((1, 3), (1, 3), (2, 3))
    # always T1: exact for "two"; within +-1 also for "one"; T1 speakers A, A, B against B, A, B
    assert (hits("always-first", "step_exact"), hits("always-first", "step_within_k")) == ((1, 3), (2, 3))
    assert hits("always-first", "agent") == (2, 3)
    # always T4: exact for "three" only; T4 speakers B, B, B against B, A, B
    assert (hits("always-last", "step_exact"), hits("always-last", "step_within_k"), hits("always-last", "agent")) == ((1, 3), (1, 3), (2, 3))
    # first failed call: T2 of "one" (exact, speaker B); T4 of "two" (miss, speaker B not A); "three" never fails
    assert (hits("first-failed-call", "step_exact"), hits("first-failed-call", "agent")) == ((1, 3), (1, 3))
    assert hits("first-failed-call", "root_exact") == (1, 3)
    # majority agent: B is blamed twice; it names no turn, so its step columns stay empty (n/a)
    assert report.majority_agent == "b" and hits("majority-agent", "agent") == (2, 3)
    assert hits("majority-agent", "step_exact") == (0, 0)
    # random: each trajectory has 4 turns, one labelled: exact 1/4 each; within +-1 of T2, T1, T4: 3/4, 2/4, 2/4
    assert p["random"].step_exact.hits == pytest.approx(0.75) and p["random"].step_exact.n == 3
    assert p["random"].step_within_k.hits == pytest.approx(1.75)
    assert p["random"].agent.hits == pytest.approx(1.5)  # two agents speak in each: 1/2 per trajectory
    text = format_markdown(report)
    assert "| random (expected value) | 25.0% (0.8/3) |" in text and "(here: b)" in text


def test_always_first_agent_is_scored_on_the_speaker_of_t1() -> None:
    trajectory = agents_trajectory("t", ["B", "A"])
    labels = [TrajectoryLabels(label_id="t", kind="who-and-when", failures=[LabelledFailure(step=2, agent="A", is_root=True)])]
    report = evaluate(labels, {"t": trajectory}, {}, {"t": True}, "who-and-when", k=0)
    assert report.predictors["always-first"].agent.hits == 0 and report.predictors["always-last"].agent.hits == 1


# --- user-caused failures ------------------------------------------------------------------------------


def test_a_failure_the_labels_give_the_user_is_not_an_agent_turn() -> None:
    trajectory = agents_trajectory("t", ["assistant", "assistant", "assistant", "assistant"])
    both = TrajectoryLabels(label_id="both", kind="agentrx", failures=[
        LabelledFailure(step=3, agent="Assistant", category="Invalid Invocation"),
        LabelledFailure(step=5, agent="User", category="Underspecified User Intent", is_root=True)])
    user_only = TrajectoryLabels(label_id="user", kind="agentrx", failures=[
        LabelledFailure(step=2, agent="user", category="Underspecified User Intent", is_root=True)])
    predicted = {"t": [issue(4)]}  # the judge blames T4, next to the user's failure
    report = evaluate([both, user_only], {"both": trajectory, "user": trajectory}, predicted, {"t": True}, "agentrx", k=0)
    assert (report.user_failures, report.failures) == (2, 3)
    assert report.user_root == ["both", "user"] and report.user_only == ["user"]
    assert report.step_exact.n == 1 and report.root_exact.n == 0  # no agent target for the user's failures
    assert report.issue_counts["any"]["label"] == 1  # only the agent's invalid invocation is a labelled issue
    assert report.predictors["random"].root_exact.n == 0
    assert "2 of 3 labelled failures are attributed to the user" in format_markdown(report)


# --- AgentRx categories and ids -------------------------------------------------------------------------

AGENTRX_TAXONOMY = [  # microsoft/AgentRx agentrx/judge/judge.py TAXONOMY_DATA, names as written there
    ("Instruction/Plan Adherence Failure", "semantic"), ("Invention of New Information", "semantic"),
    ("Invalid Invocation", "code"), ("Misinterpretation of Tool Output / Handoff Failure", "semantic"),
    ("Intent-Plan Misalignment", "semantic"), ("Underspecified User Intent", "semantic"),
    ("Intent Not Supported", "capability"), ("Guardrails Triggered", "environment"), ("System Failure", "environment"),
    ("Inconclusive (USE SPARINGLY)", None),
    # the spellings of the tau ground truth
    ("Instruction Adherence Failure", "semantic"), ("Misinterpretation of Tool Output", "semantic"),
    ("Intent Plan Misalignment", "semantic"),
]


@pytest.mark.parametrize(("raw", "ours"), AGENTRX_TAXONOMY)
def test_agentrx_category_map_covers_the_taxonomy(raw, ours) -> None:
    assert category_key(raw) in AGENTRX_CATEGORY_MAP
    assert map_category(raw) == ours


@pytest.mark.shared
def test_every_category_of_the_agentrx_ground_truth_is_mapped() -> None:
    path = DATASETS / "agentrx" / "ground_truth" / "tau_ground_truth.json"
    if not path.exists():
        pytest.skip(f"shared dataset not available: {path}")
    categories = {f["failure_category"] for e in json.loads(path.read_text()) for f in e["failures"]}
    assert categories and all(map_category(c) is not None for c in categories)


@pytest.mark.parametrize(("value", "expected"), [(2, "2"), ("2", "2"), (" 2 ", "2"), (2.0, "2"), ("f-2", "f-2"),
                                                 (None, None), (True, None), ("", None)])
def test_failure_id(value, expected) -> None:
    assert failure_id(value) == expected


@pytest.mark.parametrize(("ids", "root"), [((1, 2), 2), (("1", "2"), 2), ((1, 2), "2"), (("a", "b"), "b")])
def test_root_cause_is_found_whether_ids_are_text_or_numbers(tmp_path: Path, ids, root) -> None:
    entry = {"trajectory_id": 5, "root_cause": {"failure_id": root}, "failures": [
        {"failure_id": ids[0], "step_number": 3, "failure_category": "Invalid Invocation", "failed_agent": "Assistant"},
        {"failure_id": ids[1], "step_number": "5", "failure_category": "System Failure", "failed_agent": "Assistant"}]}
    path = tmp_path / "gt.json"
    path.write_text(json.dumps([entry]))
    (label,), errors = load_labels(path, "agentrx")
    assert errors == [] and [f.is_root for f in label.failures] == [False, True]


# --- MAST baselines -------------------------------------------------------------------------------------


def test_mast_baselines_on_the_same_traces() -> None:
    rows = [({"m": True}, set(), True, True), ({"m": True}, set(), False, False), ({"m": False}, set(), False, True),
            ({"m": True}, set(), False, False)]
    out = mast_agreement(rows)
    assert (out["baseline_any"]["predicted"], out["baseline_any"]["precision"]) == (4, 0.75)
    assert out["baseline_random_any"] == expected_random_summary([True, True, False, True])
    assert (out["baseline_random_any"]["precision"], out["baseline_random_any"]["recall"]) == (0.75, 0.5)
    first = out["baseline_first_failed_any"]
    assert (first["predicted"], first["precision"], first["recall"]) == (2, 0.5, 1 / 3)


@pytest.mark.parametrize(("labelled", "kappa", "recall"), [([True, False], 0.0, 0.5), ([True, True], None, 0.5), ([False], None, None)])
def test_expected_random_summary(labelled, kappa, recall) -> None:
    summary = expected_random_summary(labelled)
    assert (summary["kappa"], summary["recall"], summary["predicted"]) == (kappa, recall, len(labelled) / 2)


# --- refusing labels of another run ---------------------------------------------------------------------


def write_run(run: Path, trajectories: list[Trajectory]) -> None:
    rundir.write_jsonl(run / rundir.TRAJECTORIES, trajectories)
    rundir.write_jsonl(run / rundir.SCORES, [ScoreRow(trajectory_id=t.id, score=4, reason="r", release=False,
                                                      panel_size=1, valid_passes=1) for t in trajectories])


def agentrx_labels(tmp_path: Path, task_ids: list[int]) -> Path:
    path = tmp_path / "gt.json"
    path.write_text(json.dumps([{"trajectory_id": i, "root_cause": {"failure_id": 1}, "failures": [
        {"failure_id": 1, "step_number": 3, "failure_category": "Invalid Invocation", "failed_agent": "Assistant"}]}
        for i in task_ids]))
    return path


def tau_run(tmp_path: Path, task_ids: list[int], domain: str = "airline") -> Path:
    run = tmp_path / "run"
    write_run(run, [agents_trajectory(f"tau-{domain}-{i}-t0", ["assistant", "assistant"]).model_copy(update={
        "query_id": f"tau-{domain}-{i}", "metadata": TrajectoryMetadata(source_format="tau", extra={"task_id": i})})
        for i in task_ids])
    return run


def test_labels_naming_under_half_of_the_run_are_refused(tmp_path: Path) -> None:
    # an airline run of tasks 0..9 and AgentRx retail labels for tasks 2, 3, 4: task numbers match by accident
    run = tau_run(tmp_path, list(range(10)))
    labels = agentrx_labels(tmp_path, [2, 3, 4])
    with pytest.raises(LabelMismatch, match=r"name 3 of the run's 10 trajectories \(30%\), under the 50% needed"):
        validate_run(run, labels, "agentrx")
    report = validate_run(run, labels, "agentrx", min_coverage=0.3)  # asked for knowingly
    assert (report.evaluated, report.run_trajectories, report.matched_trajectories) == (3, 10, 3)
    assert validate_run(tau_run(tmp_path / "b", [2, 3, 4, 5]), labels, "agentrx").evaluated == 3  # 3 of 4: accepted


def test_cli_refuses_with_exit_1_and_a_clear_message(tmp_path: Path) -> None:
    from judge.cli import app

    run = tau_run(tmp_path, list(range(10)))
    labels = agentrx_labels(tmp_path, [2])
    result = CliRunner().invoke(app, ["validate", str(run), "--labels", str(labels)])
    assert result.exit_code == 1
    assert "refused" in result.output and "name 1 of the run's 10 trajectories" in result.output
    assert "--min-coverage" in result.output
    empty = tmp_path / "empty"
    write_run(empty, [])
    assert CliRunner().invoke(app, ["validate", str(empty), "--labels", str(labels)]).exit_code == 1


def test_cli_markdown_output(tmp_path: Path) -> None:
    from judge.cli import app

    run = tau_run(tmp_path, [2, 3], domain="retail")
    labels = agentrx_labels(tmp_path, [2, 3])
    result = CliRunner().invoke(app, ["validate", str(run), "--labels", str(labels), "--markdown"])
    assert result.exit_code == 0, result.output
    assert "| predictor | step, exact (any labelled failure) | step, +-1 |" in result.output
    assert "| always the last turn |" in result.output and "| first failed call |" in result.output
