"""The environment ledger: a fault the agent recovered from is recorded but does not block release; an
unrecovered one (or one whose recovery no judge states) blocks it until a rerun (DESIGN.md, issue 11)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_rules_detectors import A, U, build, sh

from judge.cluster import ClusterConfig, cluster_recovered, cluster_verdicts
from judge.judges import make_judge
from judge.schema import Cluster, ClusterMember, Issue, Verdict
from judge.scoring import load_rubric, score_trajectory

RUBRIC = load_rubric(None)


def env_cluster(flags: list[bool | None]) -> Cluster:
    members = [ClusterMember(pass_key=f"p#{k}", issue_index=0, issue=Issue(
        turn=1, category="environment", severity="severe", description="DNS failure", recovered=flag))
        for k, flag in enumerate(flags)]
    return Cluster(trajectory_id="t", cluster="c1", members=members, votes=len(flags), panel_size=len(flags),
                   majority=True, turn=1, category="environment", severity="severe", description="DNS failure",
                   recovered=cluster_recovered(flags))


@pytest.mark.parametrize(("flags", "recovered"), [
    ([True, True, True], True),
    ([True, None, True], True),  # a pass that says nothing does not undo the others
    ([True, False, True], False),  # one pass that saw no recovery keeps it blocking
    ([None, None], None),
])
def test_cluster_recovered_only_when_every_pass_that_says_agrees(flags: list[bool | None], recovered: bool | None) -> None:
    assert cluster_recovered(flags) is recovered


@pytest.mark.parametrize(("flags", "blocks"), [([True, True, True], False), ([False, False, False], True),
                                                ([None, None, None], True), ([True, False, True], True)])
def test_only_unrecovered_faults_block_release(flags: list[bool | None], blocks: bool) -> None:
    verdicts = [Verdict(trajectory_id="t", judge="j", pass_index=k, pass_key=f"p#{k}", status="ok", efficiency="high")
                for k in range(3)]
    row = score_trajectory(None, verdicts, [env_cluster(flags)], RUBRIC, panel_size=3, failed_checks=[])
    assert row.score == 5 and [i.cluster for i in row.environment] == ["c1"]  # never lowers the score
    assert ("environment-fault-rerun" in row.failed_checks) is blocks
    assert row.release is not blocks
    assert ("recovered" in row.reason) is not blocks


def test_a_rubric_may_block_on_recovered_faults_too(tmp_path: Path) -> None:
    path = tmp_path / "strict.yaml"
    path.write_text("name: strict\nversion: 1\nenvironment: {recovered_blocks: true}\n")
    verdict = Verdict(trajectory_id="t", judge="j", pass_index=0, pass_key="p#0", status="ok", efficiency="high")
    row = score_trajectory(None, [verdict], [env_cluster([True])], load_rubric(path), panel_size=1, failed_checks=[])
    assert row.failed_checks == ["environment-fault-rerun"] and not row.release


@pytest.mark.parametrize(("retry", "released"), [("Successfully installed requests-2.32", True),
                                                  ("ERROR: Could not resolve host: pypi.org", False)])
def test_rules_panel_releases_after_a_recovered_fault_only(retry: str, released: bool) -> None:
    trajectory = build(U("Install requests."), A("", sh("pip install requests", "ERROR: Could not resolve host: pypi.org", 1)),
                       A("", sh("pip install requests --retries 5", retry, 0 if released else 1)),
                       A("I installed requests." if released else "The network is down; nothing was installed."))
    verdict = asyncio.run(make_judge("rules")(trajectory, 0))
    clusters = cluster_verdicts("t", [verdict], panel_size=1, config=ClusterConfig.from_options({"embedder": "lexical"}), embedder=None)
    row = score_trajectory(trajectory, [verdict], clusters, RUBRIC, panel_size=1, failed_checks=[])
    assert row.environment and {i.recovered for i in row.environment} == {released}
    assert row.release is released


def test_a_recovered_fault_is_not_routed_for_a_rerun() -> None:
    from judge.repair.routing import majority_issues
    from judge.schema import ScoredIssue, ScoreRow

    def ledger(recovered: bool | None) -> ScoredIssue:
        return ScoredIssue(cluster="c1", turn=1, category="environment", severity="severe", description="DNS",
                           votes=1, recovered=recovered)

    for recovered, routed in [(True, []), (False, ["c1"]), (None, ["c1"])]:
        row = ScoreRow(trajectory_id="t", score=5, reason="", release=True, environment=[ledger(recovered)],
                       panel_size=1, valid_passes=1)
        assert [i.cluster for i in majority_issues(row)] == routed
