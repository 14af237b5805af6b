"""REGRESSION GUARD on the rules judge's held-out set (tests/fixtures/rules_heldout), not a tuning target.

The floors are the figures of the FIRST run on the set (docs/rules-heldout.md, rules-v2.0): precision and recall
per detector, and no finding on a clean trajectory. A change that scores below them has made the judge worse on
data it was measured on before it was tuned; the figures themselves are printed by bench/rules_heldout.py.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from judge.importers import load_trajectories
from judge.model import Trajectory
from judge.rules import run_detectors

HELDOUT = Path(__file__).resolve().parent / "fixtures" / "rules_heldout"
# detector -> (precision, recall) of the first run (rules-v2.0, commit 3c5f02f)
FIRST_RUN = {
    "environment-fault": (1.00, 1.00),
    "failed-call": (1.00, 1.00),
    "unpaired-call-id": (1.00, 1.00),
    "unverified-completion": (1.00, 0.75),
}


@pytest.fixture(scope="module")
def heldout() -> list[Trajectory]:
    return load_trajectories(sorted(HELDOUT.glob("*.jsonl")))


def test_heldout_figures_do_not_fall_below_the_first_run(heldout: list[Trajectory]) -> None:
    tp: Counter[str] = Counter()
    found: Counter[str] = Counter()
    expected: Counter[str] = Counter()
    for trajectory in heldout:
        truth = {(e["turn"], e["tag"], e["category"]) for e in trajectory.metadata.extra["expected"]}
        got = {(i.turn, i.tag, i.category) for i in run_detectors(trajectory)}
        for item in got:
            found[item[1] or ""] += 1
            tp[item[1] or ""] += item in truth
        for item in truth:
            expected[item[1]] += 1
    for name, (precision, recall) in FIRST_RUN.items():
        assert found[name] and tp[name] / found[name] >= precision - 1e-9, (name, tp[name], found[name])
        assert tp[name] / expected[name] >= recall - 1e-9, (name, tp[name], expected[name])
    assert set(found) <= set(FIRST_RUN), f"new kinds of findings on the held-out set: {set(found) - set(FIRST_RUN)}"


def test_no_finding_on_the_clean_heldout_trajectories(heldout: list[Trajectory]) -> None:
    alarms = {t.id: [(i.turn, i.tag) for i in run_detectors(t)] for t in heldout if not t.metadata.extra["expected"]}
    assert {k: v for k, v in alarms.items() if v} == {}
