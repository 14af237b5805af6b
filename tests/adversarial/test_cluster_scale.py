"""Clustering stays near-linear in the issues of a trajectory (issue 28 item 6).

A judge panel that reports thousands of issues on one long trajectory used to be clustered by comparing every
pair and rebuilding n x n matrices at each merge (500 issues per pass: 78 s; 2,000: still running after 25
minutes at 3.4 GB). The work is counted, not timed: the pairs the clusterer scores (``pair_features`` calls) and
the peak memory it allocates must grow about linearly when the issues grow fourfold (quadratic would be 16x).
"""

from __future__ import annotations

import random
import tracemalloc

import pytest

import judge.cluster.core as core
from judge.cluster import ClusterConfig, IssueItem, cluster_items
from judge.embed import make_embedder
from judge.schema import Issue

WORDINGS = [
    ("Called {tool} with the wrong {obj}", "{tool} got a wrong {obj}", "Passed an incorrect {obj} to {tool}"),
    ("Claimed {tool} worked without checking {obj}", "Said {tool} succeeded, {obj} never verified",
     "Reported {tool} as done while {obj} was unchecked"),
]
TOOLS = ["read_file", "pytest", "pip install", "git push", "curl", "make", "docker build", "psql"]
OBJECTS = ["config path", "output file", "record id", "branch name", "port number", "schema version"]


def panel(per_pass: int, seed: int = 1) -> list[IssueItem]:
    """Three passes over ``per_pass`` defects spread over ``per_pass / 2`` turns, each pass in its own words."""
    rng = random.Random(seed)
    defects = [(rng.randrange(2), rng.choice(TOOLS), rng.choice(OBJECTS), rng.randint(1, per_pass // 2))
               for _ in range(per_pass)]
    items = []
    for pass_index in range(3):
        for kind, tool, obj, turn in defects:
            description = WORDINGS[kind][pass_index].format(tool=tool, obj=obj)
            issue = Issue(turn=turn + rng.choice([0, 0, 0, 1]), category="code" if kind == 0 else "semantic",
                          severity="severe", description=description)
            items.append(IssueItem(f"judge#{pass_index}", len(items), issue))
    return items


def work(per_pass: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, list[list[int]]]:
    """(pairs scored, peak bytes allocated, groups) of clustering one panel."""
    scored = 0
    original = core.pair_features

    def counting(*args, **kwargs):
        nonlocal scored
        scored += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(core, "pair_features", counting)
    items = panel(per_pass)
    embedder = make_embedder("lexical")
    embedder.embed(["warm"])
    tracemalloc.start()
    try:
        groups, _ = cluster_items(items, ClusterConfig(embedder="lexical"), embedder)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return scored, peak, groups


@pytest.mark.timeout(120)
def test_clustering_work_and_memory_grow_near_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    small_pairs, small_peak, _ = work(150, monkeypatch)
    large_pairs, large_peak, groups = work(600, monkeypatch)
    # 4x the issues: every-pair comparison would score 16x the pairs and hold 16x the memory.
    assert large_pairs <= 6 * small_pairs, (small_pairs, large_pairs)
    assert large_peak <= 6 * small_peak, (small_peak, large_peak)
    # Still clustered: most defects gather their three passes (same turn, the same tool and object named).
    assert sum(len(group) == 3 for group in groups) >= 0.5 * 600
