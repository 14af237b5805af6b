"""`judge validate`: label adapters, exact step -> turn mapping, accuracy and precision/recall arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import rundir
from judge.importers.labels import (
    LabelError,
    LabelledFailure,
    TrajectoryLabels,
    load_labels,
    normalise_agent,
    parse_step,
)
from judge.importers.mast import mode_name
from judge.model import (
    Message,
    Receipt,
    ToolCall,
    Trajectory,
    TrajectoryMetadata,
    number_turns,
)
from judge.schema import ScoredIssue, ScoreRow
from judge.validate import (
    agent_at_turn,
    cohen_kappa,
    decisive_issue,
    evaluate,
    format_table,
    label_turn,
    match_issues,
    turns_match,
    validate_run,
)

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def issue(turn: int | None, category: str = "semantic", severity: str = "severe", tag: str | None = None,
          description: str = "x") -> ScoredIssue:
    return ScoredIssue(cluster=f"c{turn}", turn=turn, category=category, severity=severity, tag=tag,  # type: ignore[arg-type]
                       description=description, votes=2)


def multi_agent_trajectory(n: int = 14, source_file: str | None = None) -> Trajectory:
    """Who&When-like: history[0] is the human, then agents alternate; history index = source_index."""
    messages = [Message(role="user", content="task", source_index=0)]
    for i in range(1, n):
        name = "WebSurfer" if i % 2 else "Orchestrator (thought)"
        messages.append(Message(role="assistant", content=f"m{i}", name=name, source_index=i))
    return Trajectory(id="ww-1", query="task", query_id="q", messages=number_turns(messages),
                      metadata=TrajectoryMetadata(source_format="who-and-when", source_file=source_file))


def tau_trajectory() -> Trajectory:
    """tau-like: positions 0..6 = index 1..7 (system, user, assistant+call, tool, assistant, user, assistant)."""
    messages = number_turns([
        Message(role="system", content="policy", source_index=0),
        Message(role="user", content="hi", source_index=1),
        Message(role="assistant", content="", tool_calls=[ToolCall(id="a", name="find", arguments={})], source_index=2),
        Message(role="tool", content="{}", receipt=Receipt(call_id="a", content="{}"), source_index=3),
        Message(role="assistant", content="what else?", source_index=4),
        Message(role="user", content="cancel it", source_index=5),
        Message(role="assistant", content="done", source_index=6),
    ])
    return Trajectory(id="tau-2", query="hi", query_id="2", messages=messages,
                      metadata=TrajectoryMetadata(source_format="tau-bench", extra={"task_id": 2}))


@pytest.mark.parametrize(("value", "expected"), [("10", 10), ("1", 1), (" 7 ", 7), (0, 0), ("0", 0)])
def test_parse_step_reads_whole_integers(value, expected):
    assert parse_step(value, "f") == expected


@pytest.mark.parametrize("value", ["1a", "step 1", "", None, 1.5, True])
def test_parse_step_rejects_non_integers(value):
    with pytest.raises(LabelError):
        parse_step(value, "f")


@pytest.mark.parametrize(
    ("label", "predicted", "k", "expected"),
    [(1, 10, 0, False), (10, 1, 0, False), (1, 10, 1, False), (10, 10, 0, True), (9, 10, 1, True),
     (8, 10, 1, False), (8, 10, 2, True), (None, 1, 5, False), (1, None, 5, False)],
)
def test_turns_match_is_integer_comparison(label, predicted, k, expected):
    assert turns_match(label, predicted, k) is expected


def test_step_1_is_not_counted_correct_for_label_step_10():
    # A public scorer matched steps by substring ("1" in "10"); here the label step 10 and a prediction at the
    # message of step 1 are different turns, so the step is a miss.
    trajectory = multi_agent_trajectory()
    labels = [TrajectoryLabels(label_id="w", kind="who-and-when",
                               failures=[LabelledFailure(step=parse_step("10", "f"), agent="WebSurfer", is_root=True)])]
    at_step_1 = label_turn(trajectory, 1, "who-and-when")
    report = evaluate(labels, {"w": trajectory}, {trajectory.id: [issue(at_step_1)]}, {trajectory.id: True},
                      "who-and-when", k=0)
    assert report.step_exact.hits == 0 and report.step_exact.n == 1
    hit = evaluate(labels, {"w": trajectory}, {trajectory.id: [issue(label_turn(trajectory, 10, "who-and-when"))]},
                   {trajectory.id: True}, "who-and-when", k=0)
    assert hit.step_exact.hits == 1


@pytest.mark.parametrize(
    ("step", "kind", "expected_turn"),
    [
        # Who&When: 0-based history index; history[0] is the human message before T1
        (0, "who-and-when", 0), (1, "who-and-when", 1), (10, "who-and-when", 10), (13, "who-and-when", 13),
        (99, "who-and-when", None),
    ],
)
def test_who_and_when_step_maps_to_turn(step, kind, expected_turn):
    assert label_turn(multi_agent_trajectory(), step, kind) == expected_turn


@pytest.mark.parametrize(
    ("step", "expected_turn"),
    [
        (1, 0),  # system prompt (index 1): before T1
        (2, 0),  # first user message: before T1
        (3, 1),  # the assistant message that makes the call
        (4, 1),  # its tool result belongs to T1
        (5, 2),
        (6, 2),  # a user message maps to the turn it follows
        (7, 3),
        (8, None),
    ],
)
def test_agentrx_step_number_is_one_based_message_index(step, expected_turn):
    assert label_turn(tau_trajectory(), step, "agentrx") == expected_turn


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Orchestrator (-> WebSurfer)", "orchestrator"), ("Orchestrator (thought)", "orchestrator"),
     ("WebSurfer", "websurfer"), (None, ""), ("Excel_Expert", "excel_expert")],
)
def test_normalise_agent(name, expected):
    assert normalise_agent(name) == expected


@pytest.mark.parametrize(
    ("issues", "expected_turn"),
    [
        ([], None),
        ([issue(5, severity="minor"), issue(3, severity="minor")], 3),
        ([issue(2, severity="minor"), issue(6), issue(4)], 4),  # first severe wins over an earlier minor
        ([issue(None), issue(7, severity="minor")], 7),  # unlocalised issues cannot be a step prediction
    ],
)
def test_decisive_issue(issues, expected_turn):
    decisive = decisive_issue(issues)
    assert (decisive.turn if decisive else None) == expected_turn


def test_match_issues_is_one_to_one_and_respects_category():
    labels = [(3, "code"), (4, "semantic")]
    predictions = [(3, "semantic"), (9, "semantic")]
    assert match_issues(labels, predictions, k=1, by_category=False) == [(0, 0)]
    assert match_issues(labels, predictions, k=1, by_category=True) == [(1, 0)]
    assert match_issues(labels, [(4, "code")], k=1, by_category=False) == [(1, 0)]  # nearest label takes it


def test_agentrx_evaluation_counts_steps_root_cause_and_category_precision_recall():
    trajectory = tau_trajectory()
    labels = [TrajectoryLabels(label_id="2", kind="agentrx", task_id="2", failures=[
        LabelledFailure(step=3, category="Invalid Invocation", agent="Assistant"),
        LabelledFailure(step=7, category="Intent Plan Misalignment", agent="Assistant", is_root=True),
    ])]
    predicted = [issue(1, category="code"), issue(2, category="semantic", severity="minor")]
    report = evaluate(labels, {"2": trajectory}, {trajectory.id: predicted}, {trajectory.id: True}, "agentrx", k=1)
    assert (report.step_exact.hits, report.step_exact.n) == (1, 1)  # decisive = T1 = the labelled invalid call
    assert (report.root_exact.hits, report.root_within_k.hits) == (0, 0)  # the root is at T3
    assert report.issue_counts["any"] == {"tp_pred": 2, "pred": 2, "tp_label": 2, "label": 2}
    assert report.issue_counts["code"] == {"tp_pred": 1, "pred": 1, "tp_label": 1, "label": 1}
    assert report.issue_counts["semantic"] == {"tp_pred": 1, "pred": 1, "tp_label": 1, "label": 1}
    table = format_table(report)
    assert "root cause, exact" in table and "0.0% (0/1)" in table


def test_unscored_and_prediction_free_trajectories_stay_in_denominators():
    trajectory = multi_agent_trajectory()
    labels = [TrajectoryLabels(label_id="w", kind="who-and-when",
                               failures=[LabelledFailure(step=3, agent="WebSurfer", is_root=True)]),
              TrajectoryLabels(label_id="missing", kind="who-and-when", failures=[LabelledFailure(step=1, is_root=True)])]
    report = evaluate(labels, {"w": trajectory}, {}, {}, "who-and-when", k=1)
    assert (report.step_exact.n, report.agent.n, report.unscored) == (1, 1, 1)
    assert report.unmatched_labels == ["missing"]
    assert "1 labelled trajectories not in the run: missing" in format_table(report)


def test_agent_accuracy_normalises_orchestrator_suffixes():
    trajectory = multi_agent_trajectory()
    turn_of_step_2 = label_turn(trajectory, 2, "who-and-when")  # an "Orchestrator (thought)" message
    labels = [TrajectoryLabels(label_id="w", kind="who-and-when",
                               failures=[LabelledFailure(step=4, agent="Orchestrator", is_root=True)])]
    report = evaluate(labels, {"w": trajectory}, {trajectory.id: [issue(turn_of_step_2)]}, {trajectory.id: True},
                      "who-and-when", k=1)
    assert report.agent.hits == 1 and report.step_exact.hits == 0
    table = format_table(report)
    assert "14.2%" in table and "53.5%" in table


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [([True, False, True, False], [True, False, True, False], 1.0),
     ([True, True, False, False], [False, False, True, True], -1.0),
     ([True, True, True], [True, True, True], None),
     ([True, False, True, True], [True, False, False, True], 0.5)],
)
def test_cohen_kappa(a, b, expected):
    assert cohen_kappa(a, b) == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1.3 Step Repetition\n\nDefinition here", "step repetition"), ("2.1 Conversation reset ", "conversation reset"),
     ("3.2 No or Incomplete Verification", "no or incomplete verification")],
)
def test_mast_mode_name(raw, expected):
    assert mode_name(raw) == expected


def test_adapters_read_fixture_files(tmp_path: Path):
    ww = tmp_path / "Hand-Crafted"
    ww.mkdir()
    (ww / "1.json").write_text(json.dumps({"history": [], "mistake_step": "10", "mistake_agent": "WebSurfer", "question_ID": "q"}))
    (ww / "2.json").write_text(json.dumps({"history": [], "mistake_step": "ten"}))
    labels, errors = load_labels(ww)
    assert [l.failures[0].step for l in labels] == [10]
    assert len(errors) == 1 and "2.json" in errors[0] and "ten" in errors[0]
    mast = tmp_path / "mast.json"
    mast.write_text(json.dumps([{"mas_name": "AG2", "round": "Round 1", "trace_id": 0, "trace": "",
                                 "annotations": [
                                     {"failure mode": "1.3 Step Repetition\n\nd", "annotator_1": True, "annotator_2": True, "annotator_3": False},
                                     {"failure mode": "3.2 No or Incomplete Verification\n\nd", "annotator_1": True, "annotator_2": False, "annotator_3": False}]}]))
    (label,), _ = load_labels(mast)
    assert label.kind == "mast" and label.modes == {"step repetition": True, "no or incomplete verification": False}


def write_run(run_dir: Path, trajectories: list[Trajectory], scores: list[ScoreRow]) -> None:
    rundir.write_jsonl(run_dir / rundir.TRAJECTORIES, trajectories)
    rundir.write_jsonl(run_dir / rundir.SCORES, scores)


def test_validate_run_and_cli_on_a_who_and_when_folder(tmp_path: Path):
    labels_dir = tmp_path / "Hand-Crafted"
    labels_dir.mkdir()
    label_file = labels_dir / "7.json"
    label_file.write_text(json.dumps({"history": [], "mistake_step": "5", "mistake_agent": "WebSurfer"}))
    trajectory = multi_agent_trajectory(source_file=str(label_file))
    row = ScoreRow(trajectory_id=trajectory.id, score=2, reason="r", release=False, issues=[issue(5)], panel_size=1, valid_passes=1)
    write_run(tmp_path / "run", [trajectory], [row])
    report = validate_run(tmp_path / "run", labels_dir, "who-and-when", k=1)
    assert (report.step_exact.hits, report.agent.hits, report.evaluated) == (1, 1, 1)
    from judge.cli import app

    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["validate", str(tmp_path / "run"), "--labels", str(labels_dir), "--json-out", str(tmp_path / "v.json")])
    assert result.exit_code == 0, result.output
    assert "step, exact" in result.output and "100.0% (1/1)" in result.output
    assert json.loads((tmp_path / "v.json").read_text())["step_exact"]["hits"] == 1
    printed = CliRunner().invoke(app, ["validate", str(tmp_path / "run"), "--labels", str(labels_dir), "--json"])
    assert printed.exit_code == 0 and json.loads(printed.stdout) == json.loads((tmp_path / "v.json").read_text())
    assert "step, exact" in printed.stderr  # the table is a message now
    old_form = CliRunner().invoke(app, ["validate", str(tmp_path / "run"), "--labels", str(labels_dir), "--json", "v.json"])
    assert old_form.exit_code == 2 and "--json-out FILE" in old_form.output


# --- the real labelled sets (skipped when ../shared/datasets is absent) ---------------------------


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared dataset not available: {path}")
    return path


@pytest.mark.shared
def test_who_and_when_labels_all_parse():
    labels, errors = load_labels(_need(DATASETS / "who_and_when"), "who-and-when")
    assert errors == [] and len(labels) == 184
    assert all(len(l.failures) == 1 and l.failures[0].is_root for l in labels)


@pytest.mark.shared
def test_agentrx_labels_and_the_index_convention():
    labels, errors = load_labels(_need(DATASETS / "agentrx" / "ground_truth" / "tau_ground_truth.json"))
    assert errors == [] and len(labels) == 29 and sum(len(l.failures) for l in labels) == 39
    assert all(sum(f.is_root for f in l.failures) == 1 for l in labels)
    # step_number counts the `index` field, which is the 1-based position in traj (checked on the data)
    records = json.loads((DATASETS / "agentrx" / "tau_retail" / "tau_dataset_failed.json").read_text())
    assert all(m["index"] == i + 1 for r in records for i, m in enumerate(r["traj"]))


@pytest.mark.shared
def test_mast_majority_positive_count():
    labels, errors = load_labels(_need(DATASETS / "mast_mad_human" / "MAD_human_labelled_dataset.json"), "mast")
    assert errors == [] and len(labels) == 19
    assert sum(sum(l.modes.values()) for l in labels) == 56


def oracle_scores(trajectories: dict[str, Trajectory], labels, kind) -> dict[str, list[ScoredIssue]]:
    """Majority issues placed exactly on every agent-caused labelled step (the root cause severe, the rest minor;
    when the root cause is the user's, the first agent failure is severe). User-caused failures get no issue."""
    issues: dict[str, list[ScoredIssue]] = {}
    for label in labels:
        trajectory = trajectories[label.label_id]
        agent_failures = [f for f in label.failures if not f.by_user]
        decisive = next((f for f in agent_failures if f.is_root), agent_failures[0] if agent_failures else None)
        issues[trajectory.id] = [
            issue(label_turn(trajectory, f.step, kind), severity="severe" if f is decisive else "minor")
            for f in agent_failures
        ]
    return issues


@pytest.mark.shared
def test_oracle_predictions_on_who_and_when_score_every_step_and_the_agents_the_logs_name():
    from judge.importers import load_trajectories
    from judge.validate import match_trajectories

    root = _need(DATASETS / "who_and_when")
    labels, _ = load_labels(root, "who-and-when")
    matched = match_trajectories(labels, load_trajectories(root))
    assert len(matched) == 184
    issues = oracle_scores(matched, labels, "who-and-when")
    # origins=False: the label mapping is checked with the issues' own turns (the decisive origin is
    # tests/test_validate_decisive.py's subject)
    report = evaluate(labels, matched, issues, {t.id: True for t in matched.values()}, "who-and-when", k=0, origins=False)
    assert (report.step_exact.hits, report.step_exact.n) == (184, 184)
    # 178 logs name the labelled agent at the labelled step (after dropping "Orchestrator (...)" suffixes); the
    # two labels on a Computer_terminal message map to the agent whose code it ran. The other 4 are label noise.
    assert (report.agent.hits, report.agent.n) == (180, 184)
    missed = sorted(r.label_id for r in report.results if normalise_agent(r.predicted_agent) != normalise_agent(r.label_agent))
    assert missed == ["Algorithm-Generated/15.json", "Hand-Crafted/20.json", "Hand-Crafted/22.json", "Hand-Crafted/49.json"]


@pytest.mark.shared
def test_oracle_predictions_on_agentrx_tau_are_exact():
    from judge.importers import load_trajectories
    from judge.validate import match_trajectories

    labels, _ = load_labels(_need(DATASETS / "agentrx" / "ground_truth" / "tau_ground_truth.json"), "agentrx")
    matched = match_trajectories(labels, load_trajectories(DATASETS / "agentrx" / "tau_retail" / "tau_dataset_failed.json"))
    assert len(matched) == 29
    issues = oracle_scores(matched, labels, "agentrx")
    report = evaluate(labels, matched, issues, {t.id: True for t in matched.values()}, "agentrx", k=0, origins=False)
    assert report.unmappable_steps == 0
    # SOURCE.md: 10 of the 39 failures are the simulated user's; 8 of the 29 root causes are
    assert (report.user_failures, report.failures, len(report.user_root)) == (10, 39, 8)
    steps = 29 - len(report.user_only)
    assert (report.step_exact.hits, report.step_exact.n) == (steps, steps)
    assert (report.root_exact.hits, report.root_exact.n) == (21, 21)
    assert report.issue_counts["any"] == {"tp_pred": 29, "pred": 29, "tp_label": 29, "label": 29}
    assert report.unmapped_categories == {}  # every category of the tau ground truth has a counterpart


@pytest.mark.shared
def test_validate_cli_on_a_rules_run_of_agentrx_tau(tmp_path: Path):
    import asyncio

    from judge.cli import app
    from judge.panel import PanelConfig, run_panel
    from judge.pipeline import import_to_run, score_run
    from judge.rundir import RunDir

    source = _need(DATASETS / "agentrx" / "tau_retail" / "tau_dataset_failed.json")
    run = tmp_path / "run"
    import_to_run([source], run, None)
    asyncio.run(run_panel(list(RunDir(run).trajectories()), PanelConfig(judges=["rules"]), run, progress=False))
    score_run(run, None, {"embedder": "lexical"})
    labels = DATASETS / "agentrx" / "ground_truth" / "tau_ground_truth.json"
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["validate", str(run), "--labels", str(labels), "--json-out", str(tmp_path / "v.json")])
    assert result.exit_code == 0, result.output
    assert "29 of 29 labelled trajectories found in the run" in result.output
    assert "the labels name 29 of the run's 29 trajectories" in result.output
    assert "root cause, exact" in result.output and "first failed call" in result.output
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["step_exact"]["n"] == 29 - len(data["user_only"]) and data["issue_counts"]["any"]["label"] == 29
    assert set(data["predictors"]) == {"judge", "random", "always-first", "always-last", "first-failed-call",
                                       "first-agent-step", "answer-origin", "judge-or-answer-origin", "majority-agent"}


def test_trivial_baselines_are_scored_on_the_same_labels():
    trajectory = multi_agent_trajectory()  # turns 1..13
    labels = [TrajectoryLabels(label_id=str(step), kind="who-and-when", failures=[LabelledFailure(step=step, is_root=True)])
              for step in (1, 13, 5)]
    report = evaluate(labels, {l.label_id: trajectory for l in labels}, {}, {trajectory.id: True}, "who-and-when", k=0)
    first, last = report.predictors["always-first"], report.predictors["always-last"]
    assert (first.step_exact.hits, last.step_exact.hits, first.step_exact.n) == (1, 1, 3)
    assert "always T1" in format_table(report)


# --- bundled excerpts of the labelled sets (tests/fixtures/analysis, see SOURCE.md there) -------------

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "analysis"


def test_real_who_and_when_step_12_is_not_matched_by_a_prediction_at_step_1(tmp_path: Path):
    from judge.importers import load_trajectories
    from judge.validate import match_trajectories

    labels, errors = load_labels(FIXTURES / "who_and_when", "who-and-when")
    assert errors == [] and {l.label_id: l.failures[0].step for l in labels} == {"Hand-Crafted/24.json": 1, "Hand-Crafted/43.json": 12}
    matched = match_trajectories(labels, load_trajectories(FIXTURES / "who_and_when"))
    long_log = matched["Hand-Crafted/43.json"]
    assert label_turn(long_log, 12, "who-and-when") == 12  # history[12] is the 12th agent message: T12
    assert normalise_agent(agent_at_turn(long_log, 12)) == "assistant"
    only_43 = [l for l in labels if l.label_id == "Hand-Crafted/43.json"]
    wrong = evaluate(only_43, matched, {long_log.id: [issue(label_turn(long_log, 1, "who-and-when"))]},
                     {long_log.id: True}, "who-and-when", k=0)
    assert (wrong.step_exact.hits, wrong.step_exact.n) == (0, 1)
    right = evaluate(only_43, matched, {long_log.id: [issue(12)]}, {long_log.id: True}, "who-and-when", k=0)
    assert (right.step_exact.hits, right.agent.hits) == (1, 1)


def test_real_agentrx_failures_map_to_the_turns_of_their_messages():
    from judge.importers import load_trajectories
    from judge.validate import match_trajectories

    (label,), errors = load_labels(FIXTURES / "agentrx" / "tau_ground_truth_74.json")
    assert errors == [] and label.kind == "agentrx"
    (trajectory,) = load_trajectories(FIXTURES / "agentrx" / "tau_dataset_failed_74.json")
    assert match_trajectories([label], [trajectory]) == {"74": trajectory}
    # step 21: the assistant's exchange call (T10); step 24: a user message, so the turn it follows (T11)
    assert [label_turn(trajectory, f.step, "agentrx") for f in label.failures] == [10, 11]
    assert [f.is_root for f in label.failures] == [True, False]
    report = evaluate([label], {"74": trajectory}, {trajectory.id: [issue(10, category="semantic")]},
                      {trajectory.id: True}, "agentrx", k=0)
    assert (report.step_exact.hits, report.root_exact.hits) == (1, 1)
    # the failure at step 24 is the simulated user's (failed_agent "User"): not a labelled agent issue
    assert report.issue_counts["semantic"] == {"tp_pred": 1, "pred": 1, "tp_label": 1, "label": 1}
    assert report.user_failures == 1 and report.results[0].user_caused == 1


@pytest.mark.parametrize(("content", "kind", "message"), [
    ("{not json", "agentrx", "not valid JSON"),
    ("{not json", None, "not valid JSON"),
    ('{"a": 1}', "agentrx", "expected a JSON list"),
    ('[{"x": 1}]', None, "cannot tell the label kind"),
])
def test_bad_label_files_name_the_file(tmp_path: Path, content, kind, message):
    path = tmp_path / "labels.json"
    path.write_text(content)
    with pytest.raises(LabelError, match=message) as caught:
        load_labels(path, kind)
    assert str(path) in str(caught.value)


def test_agentrx_labels_prefer_the_retail_task_over_an_airline_task_with_the_same_number():
    from judge.validate import match_trajectories

    retail = tau_trajectory().model_copy(update={"id": "tau-retail-2-t0", "query_id": "tau-retail-2"})
    airline = tau_trajectory().model_copy(update={"id": "tau-airline-2-t0", "query_id": "tau-airline-2"})
    label = TrajectoryLabels(label_id="2", kind="agentrx", task_id="2", failures=[LabelledFailure(step=3, is_root=True)])
    assert match_trajectories([label], [airline, retail])["2"].id == "tau-retail-2-t0"


def test_mast_labels_match_trajectories_by_record_index_and_score_trace_level_modes(tmp_path: Path):
    from judge.validate import match_trajectories

    mast = tmp_path / "MAD.json"
    records = [{"mas_name": "AG2", "round": "Round 3", "trace_id": i, "trace": "",
                "annotations": [{"failure mode": "1.3 Step Repetition\n\nd", "annotator_1": i == 1, "annotator_2": i == 1, "annotator_3": False},
                                {"failure mode": "3.2 No or Incomplete Verification\n\nd", "annotator_1": True, "annotator_2": True, "annotator_3": i == 0}]}
               for i in range(2)]
    mast.write_text(json.dumps(records))
    labels, _ = load_labels(mast)
    trajectories = [multi_agent_trajectory().model_copy(update={
        "id": f"mast-{i}", "metadata": TrajectoryMetadata(source_format="x", source_file=str(mast), source_line=i)}) for i in range(2)]
    matched = match_trajectories(labels, trajectories)
    assert {k: v.id for k, v in matched.items()} == {"AG2/Round 3/0": "mast-0", "AG2/Round 3/1": "mast-1"}
    issues = {"mast-0": [issue(2, tag="unverified-completion", description="Claimed done without running the tests")],
              "mast-1": [issue(3, tag="repeated-failure", description="Ran the same failing command again")]}
    report = evaluate(labels, matched, issues, {"mast-0": True, "mast-1": True}, "mast")
    assert report.mast["repetition"]["kappa"] == pytest.approx(1.0)
    assert (report.mast["verification"]["labelled"], report.mast["verification"]["predicted"]) == (2, 1)
    assert report.mast["verification"]["recall"] == 0.5
    assert "kappa 0.77" in format_table(report)
