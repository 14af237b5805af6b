"""Agreement statistics against hand-computed values and published worked examples."""

from __future__ import annotations

import pytest

from judge.agreement import (
    agreement_summary,
    effective_judges,
    fleiss_kappa,
    issue_units,
    krippendorff_alpha_nominal,
    mean_pairwise_correlation,
    vote_histogram,
)
from judge.schema import Cluster, ClusterMember, Issue, Verdict

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal example: 4 observers x 12 units
# (None = missing). Published nominal alpha = 0.743.
KRIPPENDORFF_2011 = [
    [1, 1, None, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [None, 5, 5, 5], [None, None, 1, 1], [None, 3, None, None],
]

# Fleiss (1971) as worked on Wikipedia ("Fleiss' kappa", worked example): 10 subjects, 14 raters, 5 categories;
# P-bar = 0.378, P-bar_e = 0.213, kappa = 0.210.
FLEISS_EXAMPLE = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def test_alpha_matches_the_published_example() -> None:
    assert krippendorff_alpha_nominal(KRIPPENDORFF_2011) == pytest.approx(0.743, abs=5e-4)


@pytest.mark.parametrize(
    ("units", "expected"),
    [
        # two coders, binary: o11 = o00 = o01 = o10 = 2, n = 8 -> 1 - 4 / (32 / 7) = 0.125
        ([[1, 1], [0, 0], [1, 0], [0, 1]], 0.125),
        ([[1, 1, 1], [0, 0, 0], [1, 1, None]], 1.0),
        # one disagreement of three coders in two units: o = {11: 2, 10: 1, 01: 1, 00: 2}... see below
        ([[1, 1, 0], [0, 0, 0]], 1 - (5 * 2) / (2 * 4 * 2)),
        ([[1, 1], [1, 1]], None),  # no variation: undefined
        ([[1], [0]], None),  # nothing pairable
    ],
)
def test_alpha_hand_computed(units, expected) -> None:
    # Third case by hand: unit 1 (1,1,0): o11 = 2/2 = 1, o10 = o01 = 2/2 = 1; unit 2 (0,0,0): o00 = 6/2 = 3.
    # n1 = 2, n0 = 4, n = 6; D_o = 2; sum n_c n_k (c != k) = 16; alpha = 1 - (n-1) D_o / 16 = 1 - 10/16.
    result = krippendorff_alpha_nominal(units)
    assert result == (None if expected is None else pytest.approx(expected))


def test_fleiss_matches_the_worked_example() -> None:
    assert fleiss_kappa(FLEISS_EXAMPLE) == pytest.approx(0.20993, abs=1e-4)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ([[2, 0, 0], [0, 2, 0]], 1.0),  # P_i = 1, P_e = 0.5
        ([[1, 1, 0], [1, 1, 0]], -1.0),  # P_i = 0, P_e = 0.5
        ([[3, 0, 0], [3, 0, 0]], None),  # one category only: undefined
        ([[1, 0, 0]], None),  # a single rating per subject
        ([[3, 0, 0], [0, 2, 1], [1, 0, 0]], (((1 + 1 / 3) / 2) - (0.5**2 + (1 / 3) ** 2 + (1 / 6) ** 2)) / (1 - (0.5**2 + (1 / 3) ** 2 + (1 / 6) ** 2))),
    ],
)
def test_fleiss_hand_computed(table, expected) -> None:
    result = fleiss_kappa(table)
    assert result == (None if expected is None else pytest.approx(expected))


@pytest.mark.parametrize(
    ("n", "r", "expected"), [(3, 0.0, 3.0), (3, 1.0, 1.0), (3, 0.5, 1.5), (3, -0.3, 3.0), (1, 0.7, 1.0), (1, None, 1.0), (3, None, None)]
)
def test_effective_judges(n, r, expected) -> None:
    assert effective_judges(n, r) == expected


def test_mean_pairwise_correlation() -> None:
    codes = {"a": {1: 1, 2: 0, 3: 1}, "b": {1: 1, 2: 0, 3: 1}, "c": {1: 0, 2: 1, 3: 0}}
    # a~b = 1, a~c = -1, b~c = -1 -> mean -1/3
    assert mean_pairwise_correlation(codes) == pytest.approx(-1 / 3)
    assert mean_pairwise_correlation({"a": {1: 1, 2: 1}, "b": {1: 0, 2: 1}}) is None  # a is constant


def _verdict(tid: str, k: int, flags: list[tuple[int, str]], efficiency: str = "high", status: str = "ok") -> Verdict:
    return Verdict(trajectory_id=tid, judge="j", pass_index=k, pass_key=f"j#{k}", status=status,
                   reason=None if status == "ok" else "refusal", efficiency=efficiency if status == "ok" else None,
                   issues=[Issue(turn=t, category=c, severity="minor", description="x") for t, c in flags])


def _cluster(votes: int) -> Cluster:
    issue = Issue(turn=1, category="code", severity="minor", description="x")
    return Cluster(trajectory_id="t", cluster=f"c{votes}", votes=votes, panel_size=3, majority=votes >= 2, turn=1,
                   category="code", severity="minor", description="x",
                   members=[ClusterMember(pass_key=f"j#{k}", issue_index=0, issue=issue) for k in range(votes)])


def test_issue_units_and_summary() -> None:
    verdicts = [
        _verdict("t1", 0, [(2, "code"), (5, "semantic")]),
        _verdict("t1", 1, [(2, "code")]),
        _verdict("t1", 2, [], status="unscored"),
        _verdict("t2", 0, [(1, "code")], "low"),
        _verdict("t2", 1, [(1, "code")], "low"),
        _verdict("t2", 2, [(1, "code")], "medium"),
    ]
    units, codes = issue_units(verdicts)
    assert sorted(units) == [[1, 0], [1, 1], [1, 1, 1]]  # t1: (2,code) both, (5,semantic) one; t2: (1,code) all
    assert codes["j#0"][("t1", 5, "semantic")] == 1 and codes["j#1"][("t1", 5, "semantic")] == 0
    summary = agreement_summary(verdicts, [_cluster(1), _cluster(2), _cluster(3), _cluster(3)])
    assert summary["vote_histogram"] == {"1": 1, "2": 1, "3": 2}
    assert summary["krippendorff_alpha_issues"] == pytest.approx(krippendorff_alpha_nominal(units), abs=1e-4)
    # efficiency: t1 = 2 high, t2 = 2 low + 1 medium
    assert summary["fleiss_kappa_efficiency"] == pytest.approx(fleiss_kappa([[2, 0, 0], [0, 1, 2]]), abs=1e-4)
    assert summary["panel_size"] == 3 and summary["alpha_units"] == 3


def test_cluster_level_alpha_counts_clustered_passes_as_agreeing() -> None:
    from judge.agreement import cluster_units

    # Two passes name turns 3 and 4 for one defect: the turn x category units disagree, the cluster agrees.
    verdicts = [_verdict("t", 0, [(3, "code"), (6, "semantic")]), _verdict("t", 1, [(4, "code"), (6, "semantic")])]
    issue = Issue(turn=3, category="code", severity="minor", description="x")
    both = Cluster(trajectory_id="t", cluster="c1", votes=2, panel_size=2, majority=True, turn=3, category="code",
                   severity="minor", description="x",
                   members=[ClusterMember(pass_key="j#0", issue_index=0, issue=issue),
                            ClusterMember(pass_key="j#1", issue_index=0, issue=issue)])
    other = both.model_copy(update={"cluster": "c2", "turn": 6})
    lone = both.model_copy(update={"cluster": "c3", "votes": 1, "members": both.members[:1]})
    assert cluster_units(verdicts, [both, other, lone]) == [[1, 1], [1, 1], [1, 0]]
    units, _ = issue_units(verdicts)
    assert sorted(units) == [[0, 1], [1, 0], [1, 1]]
    summary = agreement_summary(verdicts, [both, other, lone])
    # clusters: o11 = 2 + 2, o10 = o01 = 1 -> n1 = 5, n0 = 1, n = 6: alpha = 1 - 5 * 2 / (2 * 5 * 1) = 0
    assert summary["krippendorff_alpha_clusters"] == pytest.approx(0.0)
    # units: (3,code) = [1,0], (4,code) = [0,1], (6,semantic) = [1,1]: o11 = 2, o10 = o01 = 2, n1 = 4, n0 = 2
    # alpha = 1 - 5 * 4 / (2 * 4 * 2) = -0.25
    assert summary["krippendorff_alpha_issues"] == pytest.approx(-0.25)


def test_vote_histogram_and_empty_summary() -> None:
    assert vote_histogram([_cluster(2), _cluster(2), _cluster(1)]) == {1: 1, 2: 2, 3: 0}  # up to the panel size
    empty = agreement_summary([], [])
    assert empty["krippendorff_alpha_issues"] is None and empty["fleiss_kappa_efficiency"] is None
    assert empty["vote_histogram"] == {}


def test_a_trajectory_with_one_valid_pass_adds_only_its_clusters_votes() -> None:
    """One valid pass codes no unit twice: no issue unit, no efficiency subject, no pair; its clusters still vote."""
    verdicts = [
        _verdict("t1", 0, [(2, "code"), (5, "semantic")]),
        _verdict("t1", 1, [(2, "code")], "medium"),
    ]
    clusters = [_cluster(2)]
    lone_pass = [
        _verdict("t3", 0, [(1, "code"), (4, "environment")], "low"),
        _verdict("t3", 1, [], status="unscored"),
        _verdict("t3", 2, [], status="unscored"),
    ]
    before = agreement_summary(verdicts, clusters)
    after = agreement_summary(verdicts + lone_pass, [*clusters, _cluster(1)])
    for key in ("krippendorff_alpha_issues", "alpha_units", "krippendorff_alpha_clusters", "fleiss_kappa_efficiency",
                "efficiency_subjects", "mean_pairwise_correlation"):
        assert after[key] == before[key], key
    assert before["alpha_units"] == 2 and before["efficiency_subjects"] == 1
    assert after["vote_histogram"] == {"1": 1, "2": 1, "3": 0}
