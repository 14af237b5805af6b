"""Human review (docs/review.md): override rows, their precedence and stale check, and the pure step that applies
them to a score row (judge.review); judge-vs-human agreement (judge.agreement)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from judge import rundir
from judge.agreement import MIN_KAPPA_DECISIONS, cohen_kappa, human_agreement
from judge.review import (
    ReviewError,
    ReviewItem,
    apply_review,
    clusters_fingerprint,
    latest_decisions,
    parse_added_issue,
    score_reviewed,
    split_id,
)
from judge.rundir import RunDir
from judge.schema import Issue, OverrideRow
from judge.scoring import load_rubric, score_trajectory
from judge.testing.builders import call, cluster, issue, say, tool, trajectory, verdict

RUBRIC = load_rubric(None)
TRAJ = trajectory("t", [say("Running the tests.", call("k1", "bash", cmd="pytest")), tool("k1", "3 passed"),
                        say("The tests pass."), say("Done.")])
SEVERE = cluster(issue(2, "claims more than the receipts show", category="semantic", severity="severe"), 2, cid="c1")
MINOR = cluster(issue(1, "a redundant call", category="code", severity="minor"), 1, cid="c2")  # minority (1 of 3)
ENV = cluster(issue(1, "DNS failure", category="environment", severity="severe"), 3, cid="c3")
PASSES = [verdict(k, efficiency="high") for k in (1, 2, 3)]


def machine_row(clusters, checks=()):
    return score_trajectory(TRAJ, PASSES, clusters, RUBRIC, panel_size=3, failed_checks=list(checks))


def decide(clusters, kind, target=None, *, checks=(), reviewer="alice", traj=TRAJ, **fields) -> OverrideRow:
    """A decision made on the run as it is now (its `seen` filled from TRAJ, ``clusters`` and the machine row)."""
    item = ReviewItem(traj, list(clusters), machine_row(clusters, checks))
    return item.decide(kind, reviewer=reviewer, target=target, **fields)


def reviewed(clusters, overrides, checks=()):
    return score_reviewed(TRAJ, PASSES, list(clusters), RUBRIC, panel_size=3, failed_checks=list(checks),
                          overrides=overrides)


# --- what each decision does to the row ----------------------------------------------------------------------


def test_without_decisions_the_row_is_the_machines():
    assert reviewed([SEVERE, MINOR], []) == machine_row([SEVERE, MINOR])
    assert reviewed([SEVERE], []).review is None


@pytest.mark.parametrize(
    ("clusters", "decisions", "score", "release", "counted", "changed"),
    [
        # a rejected severe majority issue no longer counts: 2 -> 5 (no issue left, 3 high votes)
        ([SEVERE], [("reject-issue", "c1")], 5, True, [], {"rejected": ["c1"]}),
        # a confirmed majority issue changes nothing but the record
        ([SEVERE], [("confirm-issue", "c1")], 2, False, ["c1"], {"confirmed": ["c1"]}),
        # a confirmed minority issue counts: 5 -> 3
        ([MINOR], [("confirm-issue", "c2")], 3, False, ["c2"], {"confirmed_minority": ["c2"]}),
        # a rejected minority issue is neither counted nor listed as a minority any longer
        ([MINOR], [("reject-issue", "c2")], 5, True, [], {"rejected_minority": ["c2"]}),
        # the last decision per target wins
        ([SEVERE], [("reject-issue", "c1"), ("confirm-issue", "c1")], 2, False, ["c1"], {"confirmed": ["c1"]}),
        ([SEVERE], [("confirm-issue", "c1"), ("reject-issue", "c1")], 5, True, [], {"rejected": ["c1"]}),
    ],
)
def test_issue_decisions_change_the_counted_set_then_the_rubric_scores_it(clusters, decisions, score, release, counted, changed):
    rows = [decide(clusters, kind, target) for kind, target in decisions]
    row = reviewed(clusters, rows)
    assert (row.score, row.release) == (score, release)
    assert [i.cluster for i in row.issues] == counted
    review = row.review
    assert review is not None
    machine = machine_row(clusters)
    assert (review.machine.score, review.machine.release, review.machine.reason) == (machine.score, machine.release, machine.reason)
    assert review.machine.majority == [c.cluster for c in clusters if c.majority]
    for name in ("confirmed", "rejected", "confirmed_minority", "rejected_minority"):
        assert getattr(review, name) == changed.get(name, []), name
    assert row.failed_checks == machine.failed_checks


def test_an_added_issue_counts_as_a_majority_issue_with_no_panel_vote():
    added = decide([], "add-issue", issue=issue(3, "says done before the last check", category="semantic", severity="severe"))
    assert added.target == "h1"
    row = reviewed([], [added])
    assert (row.score, row.release) == (2, False)
    assert [(i.cluster, i.votes, i.turn, i.severity) for i in row.issues] == [("h1", 0, 3, "severe")]
    assert row.review is not None and row.review.added == ["h1"] and row.review.machine.score == 5
    assert "machine score 5" in row.reason and "added h1" in row.reason


def test_environment_decisions_move_the_ledger_and_its_gate_check():
    held = machine_row([ENV])
    assert held.failed_checks == ["environment-fault-rerun"] and not held.release
    row = reviewed([ENV], [decide([ENV], "reject-issue", "c3")])
    assert row.release and row.failed_checks == [] and row.environment == []
    assert row.review.machine.failed_checks == ["environment-fault-rerun"]  # the judges' gate, kept beside
    fault = issue(2, "the registry timed out", category="environment", severity="severe")
    row = reviewed([], [decide([], "add-issue", issue=fault)])
    assert not row.release and row.failed_checks == ["environment-fault-rerun"] and [i.cluster for i in row.environment] == ["h1"]


def test_a_release_decision_wins_over_the_gate_and_says_which_checks_it_overrode():
    checks = ["authenticity:unverified-completion"]
    assert not machine_row([], checks).release
    row = reviewed([], [decide([], "release-override", release=True, reason="checked the receipts", checks=checks)], checks)
    assert row.release and row.score == 5
    assert row.failed_checks == checks  # the gate's result is never rewritten
    decision = row.review.release
    assert decision.over_failed_checks == checks and not decision.over_score and decision.reason == "checked the receipts"
    assert "released by alice over failed checks authenticity:unverified-completion" in row.reason


def test_a_release_over_a_score_the_rubric_does_not_release_is_flagged():
    row = reviewed([SEVERE], [decide([SEVERE], "release-override", release=True, reason="good enough")])
    assert row.release and row.score == 2 and row.review.release.over_score


def test_holding_back_a_released_trajectory():
    row = reviewed([], [decide([], "release-override", release=False, reason="the task was misread")])
    assert not row.release and row.score == 5 and row.review.release.over_failed_checks == []


def test_the_release_decision_wins_over_what_issue_decisions_imply():
    rows = [decide([SEVERE], "reject-issue", "c1"), decide([SEVERE], "release-override", release=False)]
    row = reviewed([SEVERE], rows)
    assert row.score == 5 and not row.release  # agreeing with the judges' hold needs no reason


@pytest.mark.parametrize(("release", "reason", "ok"), [(True, None, False), (True, "  ", False), (True, "checked", True),
                                                       (False, None, True)])
def test_overriding_the_machines_release_needs_a_reason(release, reason, ok):
    checks = ["format:final-message"]  # the judges hold it
    if ok:
        assert decide([], "release-override", release=release, reason=reason, checks=checks).release is release
    else:
        with pytest.raises(ReviewError, match="needs a reason"):
            decide([], "release-override", release=release, reason=reason, checks=checks)


def test_an_undo_clears_the_target_and_the_machines_decision_stands():
    rows = [decide([SEVERE], "reject-issue", "c1"), decide([SEVERE], "release-override", release=True, reason="x")]
    item = ReviewItem(TRAJ, [SEVERE], machine_row([SEVERE]), list(rows))
    rows.append(item.decide("undo", reviewer="bob", target="c1"))
    rows.append(item.decide("undo", reviewer="bob", target="release"))
    assert reviewed([SEVERE], rows) == machine_row([SEVERE])
    with pytest.raises(ReviewError, match="nothing to undo for 'c9'"):
        item.decide("undo", reviewer="bob", target="c9")


def test_added_ids_are_never_reused():
    item = ReviewItem(TRAJ, [], machine_row([]))
    first = item.decide("add-issue", reviewer="a", issue=issue(1))
    item.decide("undo", reviewer="a", target=first.target)
    assert item.decide("add-issue", reviewer="a", issue=issue(2)).target == "h2"


@pytest.mark.parametrize(("kind", "fields", "message"), [
    ("confirm-issue", {"target": "c9"}, "no cluster 'c9'"),
    ("add-issue", {"issue": issue(9)}, "no turn T9"),
    ("add-issue", {}, "needs the issue"),
])
def test_decisions_the_trajectory_cannot_hold_are_refused(kind, fields, message):
    with pytest.raises(ReviewError, match=message):
        decide([SEVERE], kind, **fields)


# --- stale decisions -----------------------------------------------------------------------------------------


def test_a_decision_on_another_trajectory_content_is_stale_and_not_applied():
    changed = trajectory("t", [say("Running.", call("k1", "bash", cmd="pytest -x")), tool("k1", "3 passed"), say("ok")])
    stale = decide([SEVERE], "reject-issue", "c1", traj=changed)
    row = reviewed([SEVERE], [stale])
    assert row.score == 2 and row.review.rejected == []
    assert row.review.decisions[0].stale == "the trajectory changed since the review"
    assert row.reason.endswith("1 stale human decision(s) not applied")


def test_a_decision_on_other_clusters_is_stale():
    stale = decide([SEVERE], "reject-issue", "c1")
    rejudged = cluster(issue(2, "a different defect now", category="code", severity="severe"), 3, cid="c1")
    row = reviewed([rejudged], [stale])
    assert row.score == 2 and "issues changed" in row.review.decisions[0].stale


def test_a_release_decision_made_against_another_machine_decision_is_stale():
    agreed = decide([], "release-override", release=True)  # the judges released it: agreeing, no reason
    checks = ["outcome:failed"]  # now the gate holds it: the reasonless agreement must not release it
    row = reviewed([], [agreed], checks)
    assert not row.release and "machine's release decision changed" in row.review.decisions[0].stale


def test_a_stale_latest_decision_does_not_bring_back_an_earlier_one():
    earlier = decide([SEVERE], "reject-issue", "c1")
    changed = trajectory("t", [say("Other.")])
    later = decide([SEVERE], "confirm-issue", "c1", traj=changed)
    assert latest_decisions([earlier, later])["c1"] is later
    row = reviewed([SEVERE], [earlier, later])
    assert row.score == 2 and row.review.rejected == [] and row.review.decisions[0].stale


def test_the_clusters_fingerprint_follows_what_the_reviewer_sees():
    same = [c.model_copy(deep=True) for c in (SEVERE, MINOR)]
    assert clusters_fingerprint(same) == clusters_fingerprint([MINOR, SEVERE])  # order-free
    moved = SEVERE.model_copy(update={"turn": 3})
    assert clusters_fingerprint([moved, MINOR]) != clusters_fingerprint(same)
    reworded = SEVERE.model_copy(deep=True)
    reworded.members[0].issue.description = "another wording"
    assert clusters_fingerprint([reworded, MINOR]) != clusters_fingerprint(same)


def test_without_a_quorum_the_trajectory_stays_unscored_but_a_release_decision_applies():
    passes = [verdict(1), verdict(2, status="unscored"), verdict(3, status="unscored")]
    machine = score_trajectory(TRAJ, passes, [], RUBRIC, panel_size=3, failed_checks=[])
    item = ReviewItem(TRAJ, [], machine)
    rows = [item.decide("add-issue", reviewer="a", issue=issue(1, severity="severe")),
            item.decide("release-override", reviewer="a", release=True, reason="read it whole")]
    row = apply_review(machine, TRAJ, passes, [], RUBRIC, panel_size=3, failed_checks=[], overrides=rows)
    assert row.score is None and row.release and row.review.release.over_score


# --- rows, files and the command line's compact forms --------------------------------------------------------


def test_override_rows_validate_their_kind():
    seen = decide([SEVERE], "confirm-issue", "c1").seen
    base = {"trajectory_id": "t", "reviewer": "a", "at": "2026-01-01T00:00:00+00:00", "seen": seen.model_dump()}
    with pytest.raises(ValidationError, match="takes no issue"):
        OverrideRow(kind="reject-issue", target="c1", issue=issue(1), **base)
    with pytest.raises(ValidationError, match="targets 'release'"):
        OverrideRow(kind="release-override", target="c1", release=True, reason="x", **base)
    with pytest.raises(ValidationError, match="needs release"):
        OverrideRow(kind="release-override", target="release", **base)


def test_overrides_append_and_read_back_and_a_bad_row_names_its_line(tmp_path: Path):
    run = RunDir(tmp_path)
    assert list(run.overrides()) == []  # no file: no decision
    rows = [decide([SEVERE], "reject-issue", "c1"), decide([SEVERE], "confirm-issue", "c1", reviewer="bob")]
    run.append_rows(rundir.OVERRIDES, rows[:1])
    run.append_rows(rundir.OVERRIDES, rows[1:])
    assert list(run.overrides()) == rows and run.overrides_by_trajectory() == {"t": rows}
    with (tmp_path / rundir.OVERRIDES).open("a") as handle:
        handle.write('{"trajectory_id": "t", "kind": "approve"}\n')
    with pytest.raises(ValueError, match=r"overrides.jsonl:3: not a valid OverrideRow"):
        list(run.overrides())


@pytest.mark.parametrize(("spec", "expected"), [
    ("a:c1", ("a", "c1")),
    ("ns:a:c2", ("ns:a", "c2")),  # the longest id wins: ids may hold colons
    ("ns:c3", ("ns", "c3")),
])
def test_split_id_matches_the_longest_known_id(spec, expected):
    assert split_id(spec, ["a", "ns", "ns:a"]) == expected


def test_split_id_names_an_unknown_id():
    with pytest.raises(ReviewError, match="no trajectory of the run is named 'b'"):
        split_id("b:c1", ["a"])


@pytest.mark.parametrize(("text", "expected"), [
    ("3:semantic:severe:claims the tests pass", Issue(turn=3, category="semantic", severity="severe", description="claims the tests pass")),
    ("T2:code:minor:wrong flag: -x", Issue(turn=2, category="code", severity="minor", description="wrong flag: -x")),
    ("-:environment:severe:DNS down", Issue(turn=None, category="environment", severity="severe", description="DNS down")),
])
def test_parse_added_issue(text, expected):
    assert parse_added_issue(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("3:semantic:severe", "expected TURN:CATEGORY:SEVERITY:DESCRIPTION"),
    ("x:semantic:severe:d", "the turn must be a number"),
    ("3:logic:severe:d", "category must be one of"),
    ("3:code:major:d", "severity must be one of"),
])
def test_parse_added_issue_errors(text, message):
    with pytest.raises(ReviewError, match=message):
        parse_added_issue(text)


# --- judge vs human agreement --------------------------------------------------------------------------------


@pytest.mark.parametrize(("pairs", "kappa"), [
    ([(1, 1), (0, 0)] * 5, 1.0),
    ([(1, 0), (0, 1)] * 5, -1.0),
    # Cohen's worked example shape: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> p_o 0.7, p_e 0.5, kappa 0.4
    ([(1, 1)] * 20 + [(1, 0)] * 5 + [(0, 1)] * 10 + [(0, 0)] * 15, 0.4),
    ([(1, 1)] * 4, None),  # one value throughout: undefined
    ([], None),
])
def test_cohen_kappa(pairs, kappa):
    value = cohen_kappa(pairs)
    assert (value is None and kappa is None) or value == pytest.approx(kappa)


def test_cohen_kappa_matches_scikit_learn():
    metrics = pytest.importorskip("sklearn.metrics")
    pairs = [(1, 1), (1, 0), (0, 0), (0, 0), (1, 1), (0, 1), (1, 1), (0, 0), (1, 0), (1, 1), (0, 0)]
    expected = metrics.cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
    assert cohen_kappa(pairs) == pytest.approx(expected)


def test_human_agreement_counts_issues_and_release_with_their_n():
    rows = [
        reviewed([SEVERE, MINOR], [decide([SEVERE, MINOR], "confirm-issue", "c1"), decide([SEVERE, MINOR], "reject-issue", "c2")]),
        reviewed([SEVERE], [decide([SEVERE], "reject-issue", "c1"),
                            decide([SEVERE], "add-issue", issue=issue(3, "missed", severity="minor")),
                            decide([SEVERE], "release-override", release=False)]),
        machine_row([SEVERE]),  # not reviewed
    ]
    figures = human_agreement(rows)
    assert (figures["trajectories"], figures["reviewed_trajectories"], figures["reviewers"]) == (3, 2, ["alice"])
    issues = figures["issues"]
    assert (issues["majority_confirmed"], issues["majority_rejected"], issues["minority_rejected"], issues["added"]) == (1, 1, 1, 1)
    assert issues["precision_majority"] == {"value": 0.5, "n": 2}
    assert issues["precision_minority"] == {"value": 0.0, "n": 1}  # the baseline beside it
    assert issues["recall_majority"] == {"value": 0.5, "n": 2}  # of the 2 issues reviewers hold real, 1 was a majority's
    release = figures["release"]
    assert release["decisions"] == 1 and release["agreement"] == {"value": 1.0, "n": 1}
    assert release["cohen_kappa"] is None and f"at least {MIN_KAPPA_DECISIONS}" in release["kappa_unavailable"]
    assert figures["score_changed"] == 1 and figures["changed"][0]["machine_score"] == 2


def test_human_agreement_gives_kappa_from_enough_release_decisions_and_lists_releases_over_the_gate():
    checks = ["authenticity:premature-claim"]
    rows = []
    pairs = []
    for k in range(MIN_KAPPA_DECISIONS):
        gate = checks if k % 2 == 0 else []  # the judges hold every other one
        release = not gate or k == 2  # the reviewer agrees, but releases one held trajectory over its failed check
        rows.append(reviewed([], [decide([], "release-override", release=release, reason="checked" if k == 2 else None,
                                         checks=gate)], gate))
        pairs.append((not gate, release))
    release = human_agreement(rows)["release"]
    assert release["decisions"] == MIN_KAPPA_DECISIONS and release["overridden"] == 1
    assert release["cohen_kappa"] == pytest.approx(round(cohen_kappa(pairs), 4)) and release["kappa_unavailable"] is None
    assert [r["checks"] for r in release["released_over_gate"]] == [checks]


def test_the_review_screen_lists_an_issue_without_a_turn_even_when_a_reply_has_no_turn_number(tmp_path: Path) -> None:
    """An issue with no turn goes under "issues without a turn"; it was filed under turn None and never shown when a
    trajectory built by hand left an assistant message unnumbered."""
    from rich.console import Console

    from judge.review import ReviewItem
    from judge.review_flow import ReviewSession

    built = trajectory("t", [say("All done.")])
    built.messages[-1].turn = None
    found = cluster(issue(None, "claims the tests pass without running them"))
    console = Console(record=True, width=200)
    session = ReviewSession(RunDir(tmp_path), "ana", console, lambda prompt: None)
    session.show(ReviewItem(trajectory=built, clusters=[found], score=None), 1, 1)
    shown = console.export_text()
    assert "issues without a turn" in shown and "claims the tests pass without running them" in shown
