"""``judge review``: the scripted form, --apply, --list, and the terminal flow driven through stdin; then
``judge rescore`` and a rerun of ``judge score`` apply the decisions, and the report shows them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge import rundir
from judge.cli import app
from judge.report.paged import INDEX_COLUMNS
from judge.rundir import RunDir
from judge.testing.builders import call, say, tool, trajectory

runner = CliRunner()
FAILS, CLEAN = "fails", "ns:clean"  # an id with a colon: ID:CLUSTER must still parse


def invoke(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), input=input, env={"USER": "tester", "NO_COLOR": "1"})


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run scored by the rules judge: FAILS gets 2 and is held (a severe issue c1 at T2, a failed authenticity
    check); CLEAN gets 4 and is released."""
    base = tmp_path_factory.mktemp("review")
    fails = trajectory(FAILS, [say("Running the tests.", call("k1", "bash", cmd="pytest")),
                               tool("k1", "1 failed, 2 passed", error=True, exit_code=1), say("All tests pass.")])
    clean = trajectory(CLEAN, [say("Reading.", call("k1", "bash", cmd="cat app.cfg")), tool("k1", "port = 8080"),
                               say("It listens on port 8080.")])
    source = base / "in.jsonl"
    source.write_text(fails.to_json_line() + "\n" + clean.to_json_line() + "\n", encoding="utf-8")
    result = invoke("score", str(source), "--out", str(base / "run"), "--embedder", "lexical")
    assert result.exit_code == 0, result.output
    return base / "run"


@pytest.fixture
def run(scored: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(scored, copy)
    shutil.copy(scored.parent / "in.jsonl", tmp_path / "in.jsonl")
    return copy


def scores(run: Path) -> dict:
    return {row.trajectory_id: row for row in RunDir(run).scores()}


def overrides(run: Path) -> list:
    return list(RunDir(run).overrides())


def test_the_scored_fixture_is_what_the_tests_assume(run: Path):
    rows = scores(run)
    assert (rows[FAILS].score, rows[FAILS].release, [i.cluster for i in rows[FAILS].issues]) == (2, False, ["c1"])
    assert rows[FAILS].failed_checks == ["authenticity:unverified-completion"]
    assert (rows[CLEAN].score, rows[CLEAN].release) == (4, True)


def test_scripted_decisions_then_rescore_apply_them_and_the_report_shows_them(run: Path):
    result = invoke("review", str(run), "--reject", f"{FAILS}:c1", "--release", FAILS, "--reason", "the failure was expected",
                    "--reviewer", "alice")
    assert result.exit_code == 0, result.output
    assert "recorded 2 decision(s)" in result.output and f"judge rescore {run}" in result.output
    added = invoke("review", str(run), "--add", f"{CLEAN}:2:semantic:minor:says 8080: the config has two ports",
                   "--evidence", "port = 8080")
    assert added.exit_code == 0, added.output
    rows = overrides(run)
    assert [(r.trajectory_id, r.kind, r.target, r.reviewer) for r in rows] == [
        (FAILS, "reject-issue", "c1", "alice"), (FAILS, "release-override", "release", "alice"),
        (CLEAN, "add-issue", "h1", "tester")]
    assert rows[2].issue.description == "says 8080: the config has two ports" and rows[2].issue.evidence == "port = 8080"
    assert scores(run)[FAILS].review is None  # recorded, not applied until a rescore

    rescored = invoke("rescore", str(run))
    assert rescored.exit_code == 0, rescored.output
    fails, clean = scores(run)[FAILS], scores(run)[CLEAN]
    assert (fails.score, fails.release, fails.issues) == (4, True, [])
    assert fails.failed_checks == ["authenticity:unverified-completion"]
    assert fails.review.machine.score == 2 and fails.review.release.over_failed_checks == fails.failed_checks
    assert (clean.score, clean.release, [i.cluster for i in clean.issues]) == (3, False, ["h1"])

    summary = json.loads((run / rundir.SUMMARY).read_text())["review"]
    assert summary["reviewed_trajectories"] == 2 and summary["issues"]["precision_majority"] == {"value": 0.0, "n": 1}
    assert [r["trajectory_id"] for r in summary["release"]["released_over_gate"]] == [FAILS]
    row = next(r for r in json.loads((run / rundir.SUMMARY).read_text())["trajectories"] if r["id"] == FAILS)
    assert row["review"]["machine_score"] == 2 and row["review"]["release_decision"] is True
    markdown = (run / rundir.REPORT_MD).read_text()
    assert "## Human review" in markdown and "released by a reviewer against the gate" in markdown
    assert "released (human; judges: held)" in markdown and r"T2 semantic/severe \(rejected\)" in markdown
    html = (run / rundir.REPORT_HTML).read_text()
    assert 'id="review"' in html and "rejected by alice: not counted" in html and "added by tester" in html
    # repairs follow the human-adjusted issues: the rejected issue is no longer routed, the added one is
    routes = {r.trajectory_id: r for r in RunDir(run).repairs()}
    assert FAILS not in routes and routes[CLEAN].cluster == "h1"


def test_the_paged_report_carries_each_rows_review_into_its_index(run: Path):
    assert invoke("review", str(run), "--reject", f"{FAILS}:c1", "--release", FAILS, "--reason", "expected",
                  "--reviewer", "alice").exit_code == 0
    assert invoke("rescore", str(run)).exit_code == 0
    result = invoke("report", str(run), "--layout", "paged")
    assert result.exit_code == 0, result.output
    index = (run / "report_data" / "index.js").read_text(encoding="utf-8")
    rows = {json.loads(line.rstrip(",\n"))[0]: json.loads(line.rstrip(",\n"))
            for line in index.splitlines() if line.startswith("[")}
    review = INDEX_COLUMNS.index("review")
    assert rows[FAILS][review] == {"by": "alice", "score": 2, "release": 0, "over": 1, "stale": 0}
    assert rows[CLEAN][review] is None
    assert "Human review" in (run / rundir.REPORT_HTML).read_text(encoding="utf-8")


def test_a_rerun_of_judge_score_applies_the_decisions_too(run: Path):
    assert invoke("review", str(run), "--reject", f"{FAILS}:c1").exit_code == 0
    result = invoke("score", str(run.parent / "in.jsonl"), "--out", str(run), "--embedder", "lexical")
    assert result.exit_code == 0, result.output
    assert scores(run)[FAILS].review.rejected == ["c1"]


@pytest.mark.parametrize(("args", "message"), [
    (["--release", FAILS], "needs a reason"),
    (["--reject", f"{FAILS}:c7"], "no cluster 'c7'"),
    (["--confirm", "nope:c1"], "no trajectory of the run is named 'nope'"),
    (["--add", f"{FAILS}:9:code:minor:x"], "no turn T9"),
    (["--add", f"{FAILS}:2:code:huge:x"], "severity must be one of"),
    (["--reject", f"{FAILS}:c1", "--hold", CLEAN], "needs a reason"),  # one bad decision: none written
])
def test_a_bad_decision_records_nothing(run: Path, args: list[str], message: str):
    result = invoke("review", str(run), *args)
    assert result.exit_code == 1 and message in result.output and "nothing recorded" in result.output
    assert not (run / rundir.OVERRIDES).exists()


def test_apply_reads_rows_fills_what_is_missing_and_names_bad_lines(run: Path, tmp_path: Path):
    decisions = tmp_path / "decisions.jsonl"
    good = {"trajectory_id": FAILS, "kind": "confirm-issue", "target": "c1"}
    bad = {"trajectory_id": FAILS, "kind": "release-override", "release": True}
    decisions.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\nnot json\n", encoding="utf-8")
    result = invoke("review", str(run), "--apply", str(decisions))
    assert result.exit_code == 1 and not (run / rundir.OVERRIDES).exists()
    assert f"{decisions}:3: overriding the machine's release decision needs a reason" in result.output
    assert f"{decisions}:4:" in result.output
    decisions.write_text(json.dumps(good) + "\n" + json.dumps({**bad, "reason": "ok", "reviewer": "carol"}) + "\n")
    result = invoke("review", str(run), "--apply", str(decisions))
    assert result.exit_code == 0, result.output
    rows = overrides(run)
    assert [(r.kind, r.reviewer) for r in rows] == [("confirm-issue", "tester"), ("release-override", "carol")]
    assert rows[0].seen.score == 2 and rows[0].seen.clusters == ["c1"] and not rows[0].seen.release


def test_list_shows_the_latest_decisions_and_flags_stale_ones(run: Path):
    assert invoke("review", str(run), "--reject", f"{FAILS}:c1", "--hold", CLEAN, "--reason", "unsure").exit_code == 0
    assert invoke("review", str(run), "--confirm", f"{FAILS}:c1").exit_code == 0
    listed = invoke("review", str(run), "--list", "--json")
    document = json.loads(listed.stdout)
    assert [(d["trajectory_id"], d["decision"]["kind"], d["stale"]) for d in document["decisions"]] == [
        (FAILS, "confirm-issue", None), (CLEAN, "release-override", None)]
    # the trajectory changes (a re-import of a fixed log, receipt and answer alike: a receipt changed alone would
    # now contradict the answer): its decision is flagged, and rescore does not apply it
    path = run / rundir.TRAJECTORIES
    path.write_text(path.read_text().replace("8080", "9090"), encoding="utf-8")
    document = json.loads(invoke("review", str(run), "--list", "--json").stdout)
    assert document["stale"] == 1 and "trajectory changed" in document["decisions"][1]["stale"]
    assert invoke("rescore", str(run)).exit_code == 0
    clean = scores(run)[CLEAN]
    assert clean.release and clean.review.release is None and clean.review.stale[0].kind == "release-override"
    assert "1 stale human decision(s) not applied" in clean.reason


def test_the_terminal_flow_driven_through_stdin(run: Path):
    answers = "\n".join([
        "?",  # help, then the same question again
        "r", "claims are fine here",  # reject c1 of FAILS, with a reason
        "a", "2", "semantic", "minor", "says all pass", "All tests pass.",  # add an issue
        "a", "7", "code", "minor", "x", "",  # a turn that does not exist: not recorded
        "n",
        "r", "", "the failure is the test's",  # release: no reason at first, then one
    ]) + "\n"
    result = invoke("review", str(run), "--reviewer", "dana", "--only", "all", input=answers)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"[1/2] {FAILS}" in out and "judges: score 2, held" in out and "⚑ majority c1 T2 severe semantic" in out
    assert "c: confirm, r: reject, s: skip, q: quit" in out and "not recorded:" in out and "no turn T7" in out
    assert f"[2/2] {CLEAN}" in out and "stopped: 2 of 2" in out  # the input ended at CLEAN's first question
    rows = overrides(run)
    assert [(r.kind, r.target, r.reason) for r in rows] == [
        ("reject-issue", "c1", "claims are fine here"), ("add-issue", "h1", None),
        ("release-override", "release", "the failure is the test's")]
    assert rows[1].issue.turn == 2 and rows[1].issue.evidence == "All tests pass." and rows[0].reviewer == "dana"
    # a second session leaves out what is decided, unless --again
    again = invoke("review", str(run), "--only", "all", input="q\n")
    assert f"[1/1] {CLEAN}" in again.output
    assert f"[1/2] {FAILS}" in invoke("review", str(run), "--only", "all", "--again", input="q\n").output
    assert "decided: rejected c1 (dana" in invoke("review", str(run), "--id", FAILS, input="q\n").output


def test_the_flow_quits_on_q_and_only_selects(run: Path):
    result = invoke("review", str(run), "--only", "unreleased", input="q\n")
    assert result.exit_code == 0 and f"[1/1] {FAILS}" in result.output and "stopped: 1 of 1" in result.output
    assert not (run / rundir.OVERRIDES).exists()
    none = invoke("review", str(run), "--only", "stale")
    assert none.exit_code == 0 and "nothing to review" in none.output
    bad = invoke("review", str(run), "--only", "some")
    assert bad.exit_code == 2 and "--only must be one of" in bad.output


def test_review_needs_a_scored_run_and_a_reviewer(tmp_path: Path, run: Path, monkeypatch: pytest.MonkeyPatch):
    missing = invoke("review", str(tmp_path))
    assert missing.exit_code == 1 and "a scored run directory" in missing.output

    def no_login() -> str:
        raise OSError("no login name")

    monkeypatch.setattr("getpass.getuser", no_login)
    nameless = runner.invoke(app, ["review", str(run), "--reject", f"{FAILS}:c1"], env={"USER": "", "LOGNAME": "", "USERNAME": ""})
    assert nameless.exit_code == 2 and "--reviewer NAME" in nameless.output
    assert not (run / rundir.OVERRIDES).exists()


def test_the_python_api_shows_the_judges_result_beside_the_reviewed_one(run: Path):
    import judge

    assert invoke("review", str(run), "--reject", f"{FAILS}:c1").exit_code == 0
    loaded = judge.rescore(run)
    assert [row.kind for row in loaded.overrides()] == ["reject-issue"]
    frame = loaded.scores_df().set_index("trajectory_id")
    assert frame.loc[FAILS, ["score", "machine_score", "reviewed"]].tolist() == [4, 2, True]
    assert frame.loc[CLEAN, ["score", "machine_score", "reviewed", "machine_release"]].tolist() == [4, 4, False, True]


def test_rescore_writes_the_review_into_scores_parquet(run: Path):
    import pyarrow.parquet as pq

    assert invoke("review", str(run), "--reject", f"{FAILS}:c1", "--release", FAILS, "--reason", "expected",
                  "--reviewer", "alice").exit_code == 0
    assert invoke("rescore", str(run)).exit_code == 0
    rows = {r["trajectory_id"]: r for r in pq.read_table(run / rundir.SCORES_PARQUET).to_pylist()}
    columns = ("score", "machine_score", "release", "machine_release", "reviewed", "reviewers")
    assert [rows[FAILS][c] for c in columns] == [4, 2, True, False, True, ["alice"]]
    assert [rows[CLEAN][c] for c in columns] == [4, 4, True, True, False, None]
    assert rows[FAILS]["review"]["rejected"] == ["c1"] and rows[FAILS]["review"]["release"]["over_failed_checks"]
