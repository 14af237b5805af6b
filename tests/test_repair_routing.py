"""Routing: every route of DESIGN.md's table, the driving (earliest blocking) issue, moot issues, and the run-level
entry points (route_run, the CLI) on run directories built from the schema models."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fixtures.repair import cases
from judge import rundir
from judge.cli import app
from judge.repair import route_run, route_trajectory
from judge.repair.routing import plan_repair
from judge.repair.textref import get_detectors
from judge.schema import RepairRow


@pytest.fixture(scope="module", autouse=True)
def _warm_detectors():
    get_detectors()


def route_of(traj, *issues):
    clusters = [cases.cluster_of(traj.id, f"c{i + 1}", found) for i, found in enumerate(issues)]
    return route_trajectory(traj, cases.score_row(traj.id, clusters), clusters)


SEMANTIC = {"category": "semantic", "severity": "severe", "tag": "unverified-completion", "description": "Claims done after a failure."}


@pytest.mark.parametrize("build, found, route, checkpoint", [
    (cases.read_retry, cases.issue(1), "offline-edit", None),                          # side-effect-free failed call
    (cases.write_unknown, cases.issue(1), "online-guided", 0),                         # write with unknown outcome
    (cases.returned_value, cases.issue(1), "online-guided", 0),                        # returned value used later
    (cases.fallback_write, cases.issue(1), "online-guided", 0),                        # control dependency
    (cases.long_reference, cases.issue(1), "pending", None),                           # unknown (flagged text)
    (cases.phantom_reference, cases.issue(2, category="semantic", tag="phantom-failure-reference"), "offline-edit", None),
    (cases.read_retry, cases.issue(2, tag="wrong-argument"), "online-guided", 1),      # code issue, no failed call
    (cases.read_retry, cases.issue(3, **SEMANTIC), "online-regenerate", 2),            # semantic
    (cases.read_retry, cases.issue(None, category="capability", tag="budget-exhausted"), "rewrite-restart", 0),
    (cases.read_retry, cases.issue(1, category="environment", severity="severe", tag="environment-fault"), "environment", 0),
    (cases.read_retry, cases.issue(None, **SEMANTIC), "pending", None),                # not localised
    (cases.read_retry, cases.issue(9, **SEMANTIC), "pending", None),                   # not a turn of it
])
def test_each_issue_kind_gets_its_route(build, found, route, checkpoint):
    row = route_of(build(), found)
    assert isinstance(row, RepairRow)
    assert row.route == route, row.reason
    assert row.checkpoint_turn == checkpoint
    assert row.reason


def test_a_trajectory_without_majority_issues_gets_no_row():
    traj = cases.read_retry()
    assert route_trajectory(traj, cases.score_row(traj.id, []), []) is None


def test_the_earliest_blocking_issue_drives_and_later_ones_are_moot():
    traj = cases.write_unknown()  # T1 write timed out, T2 retried, T3 answers
    row = route_of(traj, cases.issue(3, **SEMANTIC), cases.issue(1, description="timed out"), cases.issue(2, **SEMANTIC))
    assert row.route == "online-guided" and row.cluster == "c2" and row.checkpoint_turn == 0
    assert sorted(row.moot) == ["c1", "c3"]
    roles = {i["cluster"]: i["role"] for i in row.extra["issues"]}
    assert roles == {"c1": "moot", "c2": "driver", "c3": "moot"}


def test_an_issue_before_the_checkpoint_stays_in_the_prefix():
    traj = cases.read_retry()
    row = route_of(traj, cases.issue(3, **SEMANTIC), cases.issue(1, category="environment", severity="severe", tag="environment-fault"))
    # environment at T1 restarts after T0, so the semantic issue at T3 is moot
    assert row.route == "environment" and row.moot == ["c1"]
    row = route_of(traj, cases.issue(1, category="semantic", severity="minor", tag="wording-x"), cases.issue(3, **SEMANTIC))
    assert row.route == "online-regenerate" and row.cluster == "c1"
    row = route_of(traj, cases.issue(3, **SEMANTIC), cases.issue(2, tag="wrong-argument"))
    assert row.cluster == "c2" and row.moot == ["c1"]


def test_capability_restart_makes_every_other_issue_moot():
    row = route_of(cases.read_retry(), cases.issue(2, tag="wrong-argument"), cases.issue(None, category="capability", tag="budget-exhausted"))
    assert row.route == "rewrite-restart" and row.moot == ["c1"]


def test_pending_issue_with_no_blocking_issue_holds_the_trajectory():
    row = route_of(cases.long_reference(), cases.issue(1))
    assert row.route == "pending" and "unknown dependency" in row.reason


def test_several_offline_edits_are_applied_latest_first():
    traj = cases.trajectory("two-failures", [
        cases.say("Looking.", cases.call("c1", "Read", file_path="a.yaml")),
        cases.tool("c1", "Error: ENOENT: no such file or directory, open 'a.yaml'", error=True),
        cases.say("", cases.call("c2", "Read", file_path="conf/a.yaml")),
        cases.tool("c2", "port: 8080"),
        cases.say("Now the second file.", cases.call("c3", "Bash", command="ls conf --bogus")),
        cases.tool("c3", "ls: unrecognized option '--bogus'", error=True, exit_code=2),
        cases.say("", cases.call("c4", "Bash", command="ls conf")),
        cases.tool("c4", "a.yaml b.yaml"),
        cases.say("Port 8080; conf holds a.yaml and b.yaml."),
    ])
    clusters = [cases.cluster_of(traj.id, "c1", cases.issue(1)), cases.cluster_of(traj.id, "c2", cases.issue(3))]
    plan = plan_repair(traj, cases.score_row(traj.id, clusters), clusters)
    assert plan.row.route == "offline-edit", plan.row.reason
    assert plan.row.extra["removed_calls"] == ["c1", "c3"]
    assert [m.turn for m in plan.edited.messages if m.role == "assistant"] == [1, 2, 3]
    assert [e.status for e in plan.edits] == ["edited", "edited"]


# --- run level -----------------------------------------------------------------------------------------


def _run(tmp_path: Path) -> Path:
    return cases.run_dir(tmp_path / "run", [
        (cases.read_retry(), [cases.issue(1)]),
        (cases.write_unknown(), [cases.issue(1)]),
        (cases.returned_value(), [cases.issue(1), cases.issue(3, **SEMANTIC)]),
        (cases.fallback_write().model_copy(update={"id": "semantic-one"}), [cases.issue(2, **SEMANTIC)]),
        (cases.long_reference().model_copy(update={"id": "pending-one"}), [cases.issue(1)]),
        (cases.read_retry_silent().model_copy(update={"id": "env-one"}),
         [cases.issue(1, category="environment", severity="severe", tag="environment-fault")]),
        (cases.read_retry_silent().model_copy(update={"id": "cap-one"}), [cases.issue(None, category="capability", tag="budget-exhausted")]),
        (cases.read_retry_silent().model_copy(update={"id": "clean-one"}), []),
    ])


def test_route_run_writes_every_file_and_covers_every_route(tmp_path):
    run = _run(tmp_path)
    rows = route_run(run)
    routes = {r.trajectory_id: r.route for r in rows}
    assert routes == {
        "read-retry": "offline-edit", "write-unknown": "online-guided", "returned-value": "online-guided",
        "semantic-one": "online-regenerate", "pending-one": "pending", "env-one": "environment", "cap-one": "rewrite-restart",
    }
    assert [r.trajectory_id for r in rundir.read_jsonl(run / rundir.REPAIRS, RepairRow)] == [r.trajectory_id for r in rows]
    tickets = [json.loads(line) for line in (run / "tickets.jsonl").read_text().splitlines()]
    by_traj = {}
    for t in tickets:
        by_traj.setdefault(t["trajectory_id"], []).append((t["arm"], t["status"]))
    assert by_traj == {
        "write-unknown": [("guided", "ready"), ("unguided", "ready")],
        "returned-value": [("guided", "ready"), ("unguided", "ready")],
        "semantic-one": [("guided", "ready"), ("unguided", "ready")],
        "env-one": [("rerun", "ready")],
        "cap-one": [("rewrite", "needs-rewrite")],
    }
    edited = (run / "edited.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in edited] == ["read-retry+edit"]
    log = [json.loads(line) for line in (run / "edits.jsonl").read_text().splitlines()]
    assert {(e["trajectory_id"], e["status"]) for e in log} >= {("read-retry", "edited"), ("pending-one", "pending")}
    assert all("diff" in e and "dependencies" in e for e in log)


def test_a_broken_trajectory_is_reported_pending_and_the_batch_goes_on(tmp_path, monkeypatch):
    run = _run(tmp_path)
    import judge.repair.run as run_module

    real = run_module.plan_repair

    def flaky(trajectory, *args, **kwargs):
        if trajectory.id == "write-unknown":
            raise RuntimeError("boom")
        return real(trajectory, *args, **kwargs)

    monkeypatch.setattr(run_module, "plan_repair", flaky)
    rows = route_run(run)
    broken = next(r for r in rows if r.trajectory_id == "write-unknown")
    assert broken.route == "pending" and "boom" in broken.reason
    assert len(rows) == 7


def test_cli_prints_counts_per_route_and_writes_to_out(tmp_path):
    run = _run(tmp_path)
    out = tmp_path / "repairs"
    result = CliRunner().invoke(app, ["repair", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "7 trajectories with majority issues" in result.output
    for route, count in [("online-guided", 2), ("online-regenerate", 1), ("rewrite-restart", 1), ("environment", 1),
                         ("offline-edit", 1), ("pending", 1)]:
        assert any(line.split() == [route, str(count)] for line in result.output.splitlines()), (route, result.output)
    assert {p.name for p in out.iterdir()} == {"repairs.jsonl", "tickets.jsonl", "edited.jsonl", "edits.jsonl"}


def test_cli_names_a_directory_that_is_not_a_run(tmp_path):
    result = CliRunner().invoke(app, ["repair", str(tmp_path)])
    assert result.exit_code != 0
    flat = "".join(result.output.replace("│", "").split())  # rich wraps the error box, even inside words
    assert "trajectories.jsonldoesnotexist" in flat and "scoredrundirectory" in flat


def test_cli_reports_a_teacher_without_a_key_before_doing_any_work(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    run = _run(tmp_path)
    result = CliRunner().invoke(app, ["repair", str(run), "--teacher", "openai:gpt-4o"])
    assert result.exit_code == 1
    assert "OPENAI_API_KEY is not set" in result.output
    assert not (run / "repairs.jsonl").exists()
