"""Rubric arithmetic (table-driven), quorum, the environment ledger, release, and score_run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import rundir
from judge.cluster import ClusterConfig
from judge.model import Message, Trajectory, TrajectoryMetadata, number_turns
from judge.schema import Cluster, ClusterMember, Issue, Verdict
from judge.scoring import load_rubric, score_trajectory
from judge.store import RunStore

RUBRIC = load_rubric(None)


def verdict(k: int, status: str = "ok", efficiency: str | None = "medium") -> Verdict:
    return Verdict(trajectory_id="t", judge="fake", pass_index=k, pass_key=f"fake#{k}", status=status,
                   reason=None if status == "ok" else "parse_error", efficiency=efficiency if status == "ok" else None)


def cluster(name: str, votes: int, severity: str = "severe", category: str = "code", panel: int = 3) -> Cluster:
    issue = Issue(turn=2, category=category, severity=severity, description=f"defect {name}")
    return Cluster(trajectory_id="t", cluster=name, votes=votes, panel_size=panel, majority=votes >= panel // 2 + 1,
                   turn=2, category=category, severity=severity, description=issue.description,
                   members=[ClusterMember(pass_key=f"fake#{k}", issue_index=0, issue=issue) for k in range(votes)])


@pytest.mark.parametrize(
    ("clusters", "efficiency", "checks", "score", "release"),
    [
        ([], ["medium", "medium", "low"], [], 4, True),
        ([], ["high", "high", "low"], [], 5, True),
        ([], ["high", "medium", "low"], [], 4, True),  # one high vote of three is not enough
        ([], ["high", "high", "high"], ["format:role-order"], 5, False),  # gate blocks release
        ([cluster("c1", 2, "minor")], ["high"] * 3, [], 3, False),
        ([cluster("c1", 2, "minor"), cluster("c2", 3, "severe")], ["high"] * 3, [], 2, False),
        ([cluster("c1", 1, "severe")], ["medium"] * 3, [], 4, True),  # a minority cluster does not count
        ([cluster("c1", 3, "severe", "environment")], ["high"] * 3, [], 5, False),  # ledger blocks, not lowers
        ([cluster("c1", 2, "minor", "environment"), cluster("c2", 2, "minor")], ["medium"] * 3, [], 3, False),
    ],
)
def test_default_rubric_table(clusters, efficiency, checks, score, release) -> None:
    verdicts = [verdict(k, efficiency=e) for k, e in enumerate(efficiency)]
    row = score_trajectory(None, verdicts, clusters, RUBRIC, panel_size=3, failed_checks=checks)
    assert (row.score, row.release) == (score, release)
    assert row.rubric == "default-v2"
    assert [i.cluster for i in row.issues] == [c.cluster for c in clusters if c.majority and c.category != "environment"]
    environment = [c.cluster for c in clusters if c.majority and c.category == "environment"]
    assert [i.cluster for i in row.environment] == environment
    assert ("environment-fault-rerun" in row.failed_checks) == bool(environment)
    minority = sum(1 for c in clusters if not c.majority)
    assert (f"{minority} minority cluster(s)" in row.reason) == bool(minority)


@pytest.mark.parametrize(
    ("statuses", "panel", "scored"),
    [(["ok", "ok", "unscored"], 3, True), (["ok", "unscored", "unscored"], 3, False), (["ok"], 3, False),
     (["ok"], 1, True), (["unscored"], 1, False), (["ok", "ok", "ok", "unscored", "unscored"], 5, True),
     (["ok", "ok", "unscored", "unscored", "unscored"], 5, False)],
)
def test_no_quorum_leaves_the_trajectory_unscored(statuses, panel, scored) -> None:
    verdicts = [verdict(k, status) for k, status in enumerate(statuses)]
    row = score_trajectory(None, verdicts, [], RUBRIC, panel_size=panel, failed_checks=[])
    assert (row.score is not None) == scored
    if not scored:
        assert row.reason.startswith("no_quorum") and not row.release
        assert ("parse_error" in row.reason) == ("unscored" in statuses)  # the reason names why passes failed
    assert row.valid_passes == statuses.count("ok")


@pytest.mark.parametrize(("rubric", "vote", "score"), [
    ("default-v2", "high", 4), ("default-v2", "medium", 4), ("default-v2", None, 4),  # one vote never gives 5
    ("default-v1", "high", 5), ("default-v1", "medium", 4), ("default-v1", None, 4),  # v1 said one vote was enough
])
def test_panel_of_one_reaches_5_only_when_the_rubric_says_so(rubric, vote, score) -> None:
    row = score_trajectory(None, [verdict(0, efficiency=vote)], [], load_rubric(rubric), panel_size=1, failed_checks=[])
    assert row.score == score
    if rubric == "default-v2" and vote == "high":
        assert "a panel of 1 cannot reach 5 under rubric default-v2" in row.reason


@pytest.mark.parametrize(
    ("efficient", "panel", "needed"),
    [({}, 1, 2), ({}, 2, 2), ({}, 3, 2), ({}, 4, 3), ({}, 5, 3), ({"min_votes": 1}, 1, 1), ({"min_votes": 1}, 3, 2),
     ({"votes": 3}, 1, 3), ({"votes": 3}, 5, 3), ({"min_votes": 4}, 3, 4), ({"votes": 1, "min_votes": 1}, 3, 1)],
)
def test_high_votes_needed_for_the_top_score(efficient, panel, needed) -> None:
    from judge.scoring import RubricEfficient

    assert RubricEfficient(**efficient).needed(panel) == needed


@pytest.mark.parametrize(("efficiency", "panel", "score"), [
    (["high", "high"], 3, 5), (["high"], 3, 4), (["high", "high", "high"], 3, 5),  # DESIGN.md: 2 of 3
    (["high"], 1, 4), (["high", "high"], 2, 5), (["high", "high"], 5, 4), (["high"] * 3, 5, 5),
])
def test_default_rubric_efficiency_rule(efficiency, panel, score) -> None:
    verdicts = [verdict(k, efficiency=e) for k, e in enumerate(efficiency)]
    verdicts += [verdict(k, efficiency="medium") for k in range(len(efficiency), panel)]
    assert score_trajectory(None, verdicts, [], RUBRIC, panel_size=panel, failed_checks=[]).score == score


def test_a_count_below_the_floor_must_say_so() -> None:
    from judge.scoring import RubricEfficient

    with pytest.raises(ValueError, match="min_votes: 1"):
        RubricEfficient(votes=1)


def test_custom_rubric_file_and_bad_rubric_errors(tmp_path: Path) -> None:
    strict = tmp_path / "strict.yaml"
    strict.write_text("name: strict\nversion: 2\nscores: {any_severe: 1, only_minor: 2, none: 3, none_efficient: 4}\n"
                      "efficient: {votes: 3}\nrelease: {scores: [4]}\n")
    rubric = load_rubric(strict)
    assert rubric.label == "strict-v2"
    row = score_trajectory(None, [verdict(k, efficiency="high") for k in range(3)], [], rubric, panel_size=3, failed_checks=[])
    assert (row.score, row.release) == (4, True)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nversion: 1\nscores: {severe: 2}\n")
    with pytest.raises(ValueError, match="bad.yaml"):
        load_rubric(bad)
    with pytest.raises(FileNotFoundError, match="missing.yaml"):
        load_rubric(tmp_path / "missing.yaml")
    assert load_rubric("default-v2") == load_rubric(None)  # a bundled rubric by name


def _trajectory(tid: str) -> Trajectory:
    messages = number_turns([Message(role="user", content="fix it"), Message(role="assistant", content="done")])
    return Trajectory(id=tid, query="fix it", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="openai"))


def test_score_run_writes_clusters_and_scores_without_judging(tmp_path: Path) -> None:
    from judge.pipeline import score_run

    rundir.write_jsonl(tmp_path / rundir.TRAJECTORIES, [_trajectory("a"), _trajectory("b")])
    wrong = Issue(turn=1, category="semantic", severity="severe", description="claims success without any action")
    rows = [
        Verdict(trajectory_id="a", judge="fake", pass_index=k, pass_key=f"fake#{k}", status="ok", issues=[wrong],
                efficiency="low") for k in range(3)
    ] + [Verdict(trajectory_id="b", judge="fake", pass_index=0, pass_key="fake#0", status="unscored", reason="refusal")]
    rundir.write_jsonl(tmp_path / rundir.VERDICTS, rows)
    rundir.write_json(tmp_path / rundir.MANIFEST, {"panel": {"size": 3}, "cluster": {"embedder": "lexical"}})
    scores = {row.trajectory_id: row for row in score_run(tmp_path)}
    assert scores["a"].score == 2 and scores["a"].issues[0].votes == 3
    assert scores["b"].score is None and scores["b"].reason.startswith("no_quorum")
    clusters = [json.loads(line) for line in (tmp_path / rundir.CLUSTERS).read_text().splitlines()]
    assert [(c["trajectory_id"], c["votes"]) for c in clusters] == [("a", 3)]
    manifest = json.loads((tmp_path / rundir.MANIFEST).read_text())
    assert manifest["embedder"]["name"] == "lexical" and manifest["rubric"]["label"] == "default-v2"
    assert manifest["cluster"]["weights"]["text"] == ClusterConfig().weights["text"]
    with RunStore.for_run(tmp_path) as store:  # the three wordings were embedded once and cached in the run
        assert len(store.get_embeddings("lexical|char3-hash|1", [wrong.description])) == 1


def test_a_rubric_may_let_environment_issues_lower_the_score(tmp_path: Path) -> None:
    path = tmp_path / "strict-env.yaml"
    path.write_text("name: strict-env\nversion: 1\nenvironment: {lowers_score: true, failed_check: env-rerun}\n")
    rubric = load_rubric(path)
    env = cluster("c1", 3, "severe", "environment")
    row = score_trajectory(None, [verdict(k) for k in range(3)], [env], rubric, panel_size=3, failed_checks=[])
    assert (row.score, row.release) == (2, False)
    assert [i.cluster for i in row.issues] == ["c1"] and [i.cluster for i in row.environment] == ["c1"]
    assert row.failed_checks == ["env-rerun"]
