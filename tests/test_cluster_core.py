"""Clustering across passes: the same-pass constraint, member rules, majority floor, lazy embedding."""

from __future__ import annotations

import numpy as np
import pytest

from judge.cluster import (
    ClusterConfig,
    IssueItem,
    agglomerate,
    cluster_category,
    cluster_items,
    cluster_severity,
    cluster_tag,
    cluster_turn,
    cluster_verdicts,
    description_text,
    feature_tensor,
    link_scores,
    majority_floor,
)
from judge.embed import make_embedder
from judge.schema import Issue, Verdict


def verdict(pass_index: int, issues: list[Issue], status: str = "ok", efficiency: str | None = "high") -> Verdict:
    return Verdict(
        trajectory_id="t", judge="fake", pass_index=pass_index, pass_key=f"fake#{pass_index}", status=status,
        reason=None if status == "ok" else "parse_error", issues=issues, efficiency=efficiency if status == "ok" else None,
    )


def issue(turn: int | None, description: str, category: str = "code", severity: str = "severe", tag: str | None = None,
          evidence: str = "") -> Issue:
    return Issue(turn=turn, category=category, severity=severity, description=description, tag=tag, evidence=evidence)


class CountingEmbedder:
    """Lexical vectors, counting calls: proves when the clusterer embeds and when it does not."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = make_embedder("lexical")
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return self.inner.embed(texts)

    def describe(self) -> dict:
        return {"name": self.name, "model": "lexical", "version": "test", "dim": 1024}


@pytest.mark.parametrize(
    ("panel_size", "needed"), [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (6, 4), (7, 4)]
)
def test_majority_floor_is_floor_half_plus_one(panel_size: int, needed: int) -> None:
    assert majority_floor(panel_size) == needed


@pytest.mark.parametrize(
    ("severities", "expected"),
    [(["severe"], "severe"), (["minor"], "minor"), (["minor", "minor", "severe"], "minor"),
     (["severe", "severe", "minor"], "severe"), (["severe", "minor"], "severe"), (["minor", "severe"], "severe")],
)
def test_cluster_severity_majority_ties_to_severe(severities, expected) -> None:
    assert cluster_severity(severities) == expected


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        ([("code", "minor"), ("code", "minor"), ("semantic", "severe")], "code"),  # majority wins
        ([("code", "minor"), ("semantic", "severe")], "semantic"),  # tie: the one with severe members
        ([("code", "severe"), ("semantic", "severe")], "semantic"),  # full tie: priority order
        ([("environment", "minor"), ("capability", "minor")], "capability"),  # an agent category before environment
        ([("environment", "severe"), ("capability", "minor")], "environment"),  # severity beats priority
        ([("environment", "minor")], "environment"),  # one member: its own
    ],
)
def test_cluster_category_rule(members, expected) -> None:
    assert cluster_category(members) == expected


@pytest.mark.parametrize(
    ("turns", "expected"),
    [([3, 3, 4], 3), ([5, 4], 4), ([None, 6], 6), ([None, None], None), ([2, 9, 9, 2, 7], 2), ([8], 8), ([None], None)],
)
def test_cluster_turn_most_common_then_earliest(turns, expected) -> None:
    assert cluster_turn(turns) == expected


@pytest.mark.parametrize(
    ("tags", "expected"),
    [([None, None], None), (["b", "a"], "b"), (["a", "b", "b"], "b"), ([None, "x"], "x"), (["x"], "x"), ([""], None),
     ([None], None)],
)
def test_cluster_tag_rule(tags, expected) -> None:
    assert cluster_tag(tags) == expected


@pytest.mark.parametrize("labels", [["p1"], ["p1", "p1", "p1"], ["p1", "p2", "p1"], ["p1", "p2", "p3", "p2"]])
def test_cluster_items_gives_what_the_agglomeration_gives(labels: list[str]) -> None:
    """One pass takes a shortcut (nothing can merge); its groups and link scores are the full matrix's."""
    descriptions = ["Wrong path argument to read_file", "read_file got the wrong path", "Claimed tests passed",
                    "Says tests pass without running them"]
    items = [IssueItem(label, index, issue(3, descriptions[index])) for index, label in enumerate(labels)]
    config = ClusterConfig(embedder="lexical")
    embedder = make_embedder("lexical")
    groups, scores = cluster_items(items, config, embedder)
    expected_scores = link_scores(items, feature_tensor(items, config, embedder), config)
    assert groups == agglomerate(expected_scores, labels, config.threshold)
    pairs = [(i, j) for i in range(len(labels)) for j in range(len(labels)) if i != j]
    assert [scores[i, j] for i, j in pairs] == [expected_scores[i, j] for i, j in pairs]
    if len(set(labels)) == 1:
        assert groups == [[i] for i in range(len(labels))] and all(np.isneginf(scores[i, j]) for i, j in pairs)
        assert scores.scored == 0


def test_agglomerate_never_merges_two_issues_of_one_pass() -> None:
    scores = np.full((3, 3), 10.0)  # everything wants to merge
    groups = agglomerate(scores, ["p1", "p1", "p2"], threshold=0.0)
    assert sorted(len(g) for g in groups) == [1, 2]
    for group in groups:
        assert len({["p1", "p1", "p2"][i] for i in group}) == len(group)


def test_agglomerate_respects_threshold() -> None:
    scores = np.array([[0, -1.0, 2.0], [-1.0, 0, -3.0], [2.0, -3.0, 0]])
    assert agglomerate(scores, ["a", "b", "c"], threshold=0.0) == [[0, 2], [1]]
    assert agglomerate(scores, ["a", "b", "c"], threshold=5.0) == [[0], [1], [2]]


def test_three_wordings_of_one_defect_form_one_majority_cluster() -> None:
    verdicts = [
        verdict(1, [issue(3, "Called read_file with the wrong path argument"),
                    issue(7, "Claimed tests passed without running them", "semantic")]),
        verdict(2, [issue(3, "Wrong path argument given to the read_file tool")]),
        verdict(3, [issue(4, "The path passed to read_file is wrong", severity="minor"),
                    issue(7, "Says the tests pass but never ran them", "semantic", "minor")]),
    ]
    clusters = cluster_verdicts("t", verdicts, panel_size=3, config=ClusterConfig(embedder="lexical"),
                                embedder=make_embedder("lexical"))
    by_turn = {c.turn: c for c in clusters}
    assert set(by_turn) == {3, 7}
    assert by_turn[3].votes == 3 and by_turn[3].majority and by_turn[3].category == "code"
    assert by_turn[3].severity == "severe"  # 2 severe, 1 minor
    assert by_turn[7].votes == 2 and by_turn[7].majority and by_turn[7].severity == "severe"  # tie -> severe
    assert [c.cluster for c in clusters] == ["c1", "c2"]


def test_minority_clusters_are_kept_and_unscored_passes_ignored() -> None:
    verdicts = [
        verdict(1, [issue(2, "Network timeout while fetching the package index", "environment")]),
        verdict(2, [issue(9, "Final summary mentions a file that was never created", "semantic", "minor")]),
        verdict(3, [], status="unscored"),
    ]
    clusters = cluster_verdicts("t", verdicts, panel_size=3, config=ClusterConfig(embedder="lexical"),
                                embedder=make_embedder("lexical"))
    assert [(c.votes, c.majority) for c in clusters] == [(1, False), (1, False)]
    assert {m.pass_key for c in clusters for m in c.members} == {"fake#1", "fake#2"}


def test_single_pass_never_embeds() -> None:
    embedder = CountingEmbedder()
    verdicts = [verdict(0, [issue(1, "a"), issue(2, "b"), issue(3, "c")])]
    clusters = cluster_verdicts("t", verdicts, panel_size=1, config=ClusterConfig(), embedder=embedder)
    assert embedder.calls == 0
    assert [(c.votes, c.majority) for c in clusters] == [(1, True)] * 3  # 1 of 1 is a majority


def test_config_from_options_keeps_default_weights_and_rejects_unknown() -> None:
    config = ClusterConfig.from_options({"weights": {"text": 1.0}, "threshold": 0.5})
    assert config.weights["text"] == 1.0 and config.weights["turn_exact"] == ClusterConfig().weights["turn_exact"]
    assert config.describe()["threshold"] == 0.5
    assert ClusterConfig.from_options(config.describe()) == config
    with pytest.raises(ValueError, match="unknown cluster weight"):
        ClusterConfig.from_options({"weights": {"colour": 1.0}})
    with pytest.raises(ValueError, match="unknown cluster weight"):
        ClusterConfig(weights={"colour": 1.0})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("At step 4, the agent retried", "the agent retried"), ("In turn 12: wrong path", "wrong path"),
     ("Step 3 was fine", "Step 3 was fine"), ("At T3 the agent went wrong: x", "the agent went wrong: x"),
     ("At the top the agent", "At the top the agent"), ("at turn 7 — 它重复了", "— 它重复了")],
)
def test_description_text_strips_step_prefix(text: str, expected: str) -> None:
    assert description_text(issue(1, text)) == expected


@pytest.mark.parametrize(
    ("truth", "predicted", "expected"),
    [
        ([0, 0, 1, 1], [0, 0, 1, 1], 1.0),
        ([0, 0, 1, 1], [1, 1, 0, 0], 1.0),
        ([0, 0, 1, 1], [0, 1, 0, 1], -0.5),  # joint 0, E = 2*2/6, max 2: (0 - 2/3) / (2 - 2/3)
        ([0, 0, 0, 1, 1, 2], [0, 0, 1, 1, 2, 2], 2 / 27),  # joint 1, E = 4*3/15, max 3.5
        ([0, 1, 2, 3], [0, 0, 0, 0], 0.0),
        ([0, 0, 0], [0, 0, 0], 1.0),  # one cluster each: trivially identical
        ([], [], 1.0),
        (list("aabbccdd"), list("abababcd"), -6 / 29),  # joint 0, E = 4*6/28, max 5
    ],
)
def test_adjusted_rand_index_hand_computed(truth, predicted, expected) -> None:
    from judge.cluster import adjusted_rand_index

    assert adjusted_rand_index(truth, predicted) == pytest.approx(expected, abs=1e-12)


def test_adjusted_rand_index_needs_labelings_of_one_length() -> None:
    from judge.cluster import adjusted_rand_index

    with pytest.raises(ValueError, match="differ in length"):
        adjusted_rand_index([0, 1], [0])


def test_cluster_quality_hand_computed() -> None:
    from judge.cluster import cluster_quality

    # one trajectory, defects A (passes p,q,r) and B (p,q); prediction merges B's q into A's cluster
    passes = ["p", "q", "r", "p", "q"]
    truth = ["A", "A", "A", "B", "B"]
    predicted = ["1", "1", "1", "2", "1"]
    quality = cluster_quality([(passes, truth, predicted)], panel_size=3)
    # true pairs: A has 3, B has 1 -> 4; predicted pairs: cluster 1 has C(4,2)=6; tp = 3 (A) -> P 3/6, R 3/4
    assert (quality.precision, quality.recall) == (0.5, 0.75)
    assert quality.majority_recall == 0.5  # A reaches 3 votes; B is split into 1 + 1
    # cross-pass pairs of different defects: A_p-B_q, A_q-B_p, A_r-B_p, A_r-B_q (A_p-B_p, A_q-B_q same pass) -> 4;
    # merged among them: A_p-B_q, A_r-B_q -> 2/4
    assert quality.cross_merge_rate == 0.5


def test_labelled_false_alarms_are_left_out_of_majority_recall() -> None:
    from judge.cluster import cluster_quality

    quality = cluster_quality([(["p", "q", "p"], ["A", "A", "noise:x"], ["1", "1", "2"])], panel_size=3)
    assert (quality.defects, quality.majority_recall, quality.f1) == (1, 1.0, 1.0)


QUOTE = "ERROR: file not found: tests/test_dates.py"


@pytest.mark.parametrize(
    ("evidence_a", "evidence_b", "category_b", "merged"),
    [
        ("", "", "code", False),
        (QUOTE, QUOTE, "code", True),
        (QUOTE, "exit code 0, 12 passed", "code", False),
        (QUOTE, QUOTE, "semantic", False),  # a false claim about the failure quotes it too: another defect
    ],
)
def test_shared_quoted_evidence_links_different_wordings(evidence_a: str, evidence_b: str, category_b: str, merged: bool) -> None:
    verdicts = [
        verdict(1, [issue(4, "Kept rerunning a command that could not work.", tag="repeated-failure", evidence=evidence_a)]),
        verdict(2, [issue(5, "The test path is wrong so pytest aborts.", category=category_b, evidence=evidence_b)]),
    ]
    clusters = cluster_verdicts("t", verdicts, panel_size=3, config=ClusterConfig(embedder="lexical"),
                                embedder=make_embedder("lexical"))
    assert (len(clusters) == 1) == merged


def test_turn_nearness_decides_between_two_candidates() -> None:
    # Pass 2's issue is equally worded to both of pass 1's; it joins the one at the nearer turn.
    verdicts = [
        verdict(1, [issue(2, "Retried the failing install command."), issue(9, "Retried the failing install command.")]),
        verdict(2, [issue(8, "Retried the failing install command.")]),
    ]
    clusters = cluster_verdicts("t", verdicts, panel_size=3, config=ClusterConfig(embedder="lexical"),
                                embedder=make_embedder("lexical"))
    assert sorted((c.turn, c.votes) for c in clusters) == [(2, 1), (8, 2)]


@pytest.mark.parametrize(
    ("tag_a", "tag_b", "same", "differ"),
    [("repeated-failure", "Repeated_Failure", 1.0, 0.0), ("repeated failure", "repeated-failure", 1.0, 0.0),
     ("a", "b", 0.0, 1.0), (None, "b", 0.0, 0.0), ("", "b", 0.0, 0.0)],
)
def test_tag_features_compare_normalised_tags(tag_a, tag_b, same, differ) -> None:
    from judge.cluster import FEATURES, pair_features

    features = dict(zip(FEATURES, pair_features(issue(1, "x", tag=tag_a), issue(1, "y", tag=tag_b), 0.0, 2)))
    assert (features["tag_same"], features["tag_differ"]) == (same, differ)


def dense_agglomerate(scores: np.ndarray, passes: list[str], threshold: float) -> list[list[int]]:
    """The full n x n agglomeration as it was before candidate pairs (O(n^2) per merge): the reference."""
    n = len(passes)
    labels = np.array(passes, dtype=object)
    conflict = labels[:, None] == labels[None, :]
    sums = np.where(conflict, 0.0, np.asarray(scores, dtype=np.float64))
    sizes = np.ones(n)
    alive = np.ones(n, dtype=bool)
    members: list[list[int]] = [[i] for i in range(n)]
    while alive.sum() > 1:
        means = sums / np.outer(sizes, sizes)
        blocked = conflict | ~alive[:, None] | ~alive[None, :] | np.tri(n, dtype=bool)
        means = np.where(blocked, -np.inf, means)
        x, y = np.unravel_index(int(np.argmax(means)), means.shape)
        if not np.isfinite(means[x, y]) or means[x, y] < threshold:
            break
        sums[x, :] += sums[y, :]
        sums[:, x] += sums[:, y]
        conflict[x, :] |= conflict[y, :]
        conflict[:, x] |= conflict[:, y]
        sizes[x] += sizes[y]
        alive[y] = False
        members[x] = sorted(members[x] + members[y])
    return sorted((members[i] for i in range(n) if alive[i]), key=lambda g: g[0])


@pytest.mark.parametrize("seed", range(40))
def test_agglomerate_merges_as_the_full_matrix_did(seed: int) -> None:
    """Only linked pairs are compared, yet every merge (ties included) is the full matrix algorithm's."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    passes = [f"p{int(p)}" for p in rng.integers(0, int(rng.integers(2, 6)), size=n)]
    # Small integers and halves make many exact ties; a float matrix makes sums whose order of addition matters.
    upper = rng.integers(-6, 4, size=(n, n)) / 2.0 if seed % 2 else rng.normal(-1.0, 2.0, size=(n, n))
    scores = np.triu(upper, 1) + np.triu(upper, 1).T
    threshold = float(rng.choice([0.0, -0.5, 0.5]))
    assert agglomerate(scores, passes, threshold) == dense_agglomerate(scores, passes, threshold)


def test_cluster_items_below_the_limit_scores_every_cross_pass_pair() -> None:
    """Ordinary sizes compare everything, as before: the groups are the full matrix's."""
    from judge.cluster import cross_pass_pairs

    rng = np.random.default_rng(3)
    words = ["read_file", "wrong path", "tests", "never ran", "timeout", "install", "claimed", "retried", "flag"]
    items = [IssueItem(f"p{index % 3}", index, issue(int(rng.integers(1, 8)), " ".join(rng.choice(words, size=4)),
                                                     str(rng.choice(["code", "semantic"]))))
             for index in range(60)]
    config = ClusterConfig(embedder="lexical")
    embedder = make_embedder("lexical")
    groups, scores = cluster_items(items, config, embedder)
    full = link_scores(items, feature_tensor(items, config, embedder), config)
    assert groups == dense_agglomerate(full, [i.pass_label for i in items], config.threshold)
    assert scores.scored == cross_pass_pairs([i.pass_label for i in items])
