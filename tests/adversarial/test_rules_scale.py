"""The rules judge stays near-linear in a trajectory's failed calls (issue 28 item 6).

A trajectory with 3,000 failed calls took minutes: several detectors looked, for every failure or claim, at every
call before or after it. The work is counted, not timed: reads of the analysed calls' fields (every loop over the
calls reads them) must grow about as the failed calls do when they grow fourfold (quadratic would be 16x).
"""

from __future__ import annotations

import asyncio

import pytest

from judge.facts.analysis import Action
from judge.judges import make_judge
from judge.testing.synthetic import failing_calls_trajectory


def field_reads(failed: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(reads of Action fields while judging, findings) for a trajectory with ``failed`` failed calls."""
    judge = make_judge("rules")
    asyncio.run(judge(failing_calls_trajectory(5), 0))  # warm-up: config and patterns load once
    trajectory = failing_calls_trajectory(failed)
    reads = 0
    plain = object.__getattribute__

    def counting(self: Action, name: str) -> object:
        nonlocal reads
        reads += 1
        return plain(self, name)

    with monkeypatch.context() as patch:
        patch.setattr(Action, "__getattribute__", counting)
        verdict = asyncio.run(judge(trajectory, 0))
    assert verdict.status == "ok", verdict.detail
    return reads, len(verdict.issues)


@pytest.mark.timeout(120)
def test_rules_judge_work_grows_near_linearly_in_failed_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    small, small_found = field_reads(250, monkeypatch)
    large, large_found = field_reads(1000, monkeypatch)
    # 4x the failed calls: a scan of every call per failure or claim would read about 16x the fields.
    assert large <= 6 * small, (small, large)
    assert large_found >= 3 * small_found  # and every failure is still judged


def test_a_trajectory_with_more_failed_calls_than_offline_edits_goes_online_without_trying_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each offline edit re-checks the whole edited trajectory, one after another: 300 failed calls cost 146 s of
    `judge score` (cubic). Past MAX_OFFLINE_EDITS issues that would each need one, none is tried and the
    trajectory continues online from its earliest issue."""
    from judge.repair import routing
    from judge.schema import ScoredIssue, ScoreRow

    trajectory = failing_calls_trajectory(routing.MAX_OFFLINE_EDITS + 3)
    failed_turns = [m.turn for m in trajectory.messages if m.role == "tool" and m.receipt is not None
                    and m.receipt.is_error and m.turn is not None]
    issues = [ScoredIssue(cluster=f"c{i}", turn=turn, category="code", severity="severe", tag="failed-call",
                          description="the call failed", votes=1) for i, turn in enumerate(failed_turns)]
    assert len(issues) > routing.MAX_OFFLINE_EDITS
    score = ScoreRow(trajectory_id=trajectory.id, score=2, reason="severe", issues=issues, panel_size=1, valid_passes=1,
                     release=False, rubric="test")
    tried: list[object] = []
    monkeypatch.setattr(routing, "offline_edit", lambda *a, **k: tried.append(a) or (_ for _ in ()).throw(AssertionError))
    repair = routing.plan_repair(trajectory, score)
    assert tried == [] and repair is not None
    assert repair.row.route == "online-guided" and repair.row.checkpoint_turn == failed_turns[0] - 1
    assert "more than 8" in repair.row.reason
