"""One record, one row never stops a run (issue 28, item 1): integers beyond what the tables store and turn numbers
out of order are rejects with file, line and reason at the import; a row the Parquet tables cannot convert is
left out of them, said on stderr and in summary.json, and the rest is written."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from typer.testing import CliRunner

from adversarial.inputs import CASES, build, canonical, line
from judge import rundir
from judge.cli import app
from judge.importers import iter_records
from judge.model import Trajectory

runner = CliRunner()


def score(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["score", *args, "--embedder", "lexical"])
    return result.exit_code, result.stdout, result.stderr


def test_a_turn_beyond_int64_is_a_reject_and_the_run_writes_everything(tmp_path: Path) -> None:
    """The issue's repro: such a record failed the Parquet step, exit 1, no summary, report or tables, on every
    rerun. Now it is a reject, the other record is scored, and a rerun does the same."""
    huge = canonical("huge", (2**63, 2**63, 2**63 + 1))
    huge["messages"][2]["receipt"].update(is_error=True, exit_code=127, content="bash: lx: command not found")  # an issue at T2**63
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(huge) + "\n" + line("fine") + "\n", encoding="utf-8")
    out = tmp_path / "run"
    for _ in range(2):
        code, stdout, stderr = score(str(source), "--out", str(out))
        assert code == 0, stdout + stderr
        assert "imported 1, rejected 1" in stdout
        for name in (rundir.SUMMARY, rundir.REPORT_HTML, rundir.REPORT_MD, *rundir.PARQUET_TABLES):
            assert (out / name).is_file(), name
        (reject,) = [json.loads(r) for r in (out / rundir.REJECTS).read_text().splitlines()]
        assert (reject["source_file"], reject["line"]) == (str(source), 1)
        assert f"message 1 (assistant) has turn {2**63}" in reject["reason"]
        assert pq.read_table(out / rundir.SCORES_PARQUET).column("trajectory_id").to_pylist() == ["fine"]


def test_turn_numbers_out_of_order_are_rejects_never_renumbered(tmp_path: Path) -> None:
    folder = build(tmp_path, [c for c in CASES if c.name == "canonical-turns"])["canonical-turns"]
    items = list(iter_records([folder]))
    kept = [i for i in items if isinstance(i, Trajectory)]
    assert [t.id for t in kept] == ["ok", "unnumbered", "after"]
    assert [m.turn for m in kept[0].messages] == [0, 1, 1, 2]  # read back exactly as written
    assert [m.turn for m in kept[1].messages] == [0, None, None, None]  # null turns stay null: not a wrong number
    reasons = [i.reason for i in items if not isinstance(i, Trajectory)]
    assert len(reasons) == 6 and all(r.startswith("turn numbers out of order: ") for r in reasons), reasons


def test_a_number_in_a_tool_text_is_not_an_exit_code_beyond_int64(tmp_path: Path) -> None:
    folder = build(tmp_path, [c for c in CASES if c.name == "integers-beyond-int64"])["integers-beyond-int64"]
    (told,) = [t for t in iter_records([folder]) if isinstance(t, Trajectory) and t.id == "exit-code-in-text"]
    assert told.messages[2].receipt is not None and told.messages[2].receipt.exit_code is None


def test_judge_import_of_an_infinite_token_count_is_a_reject_not_a_crash(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(line("inf", metadata={"usage": {"input_tokens": 7}}).replace("7", "1e400") + "\n"
                      + line("fine") + "\n", encoding="utf-8")
    result = runner.invoke(app, ["import", str(source), "--out", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 0, result.output
    assert "imported 1, rejected 1" in result.output and "in.jsonl:1: usage input_tokens is inf" in result.output


def test_rows_the_tables_cannot_convert_are_left_out_reported_and_the_run_finishes(tmp_path: Path) -> None:
    """Past the import (a run directory written by hand, or by an older version): `judge rescore` writes the tables
    without the rows Arrow cannot convert, names them on stderr and in summary.json, and writes the report."""
    source = tmp_path / "in.jsonl"
    source.write_text(line("a") + "\n" + line("b") + "\n", encoding="utf-8")
    out = tmp_path / "run"
    code, stdout, stderr = score(str(source), "--out", str(out))
    assert code == 0, stdout + stderr
    lines = (out / rundir.VERDICTS).read_text().splitlines()
    row = json.loads(lines[0])
    row["critical_turn"] = 2**63  # beyond int64: Arrow refused the whole file
    (out / rundir.VERDICTS).write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n", encoding="utf-8")
    for name in (rundir.SUMMARY, rundir.VERDICTS_PARQUET):
        (out / name).unlink()
    result = runner.invoke(app, ["rescore", str(out)])
    assert result.exit_code == 0, result.output
    assert "warning: verdicts.jsonl:1: row left out of verdicts.parquet:" in result.stderr
    assert pq.read_table(out / rundir.VERDICTS_PARQUET).column("trajectory_id").to_pylist() == ["b"]
    summary = json.loads((out / rundir.SUMMARY).read_text())
    (left_out,) = summary["inputs"]["rows_left_out_of_tables"]
    assert (left_out["file"], left_out["line"]) == (rundir.VERDICTS, 1) and "int64" in left_out["error"]
    assert summary["inputs"]["trajectories"] == 2  # the row is still in the JSONL and the report
    assert "left out of the Parquet tables" in (out / rundir.REPORT_MD).read_text()


def test_a_cluster_row_claiming_a_huge_panel_does_not_stall_the_report() -> None:
    """A hand-edited clusters.jsonl row with votes or panel_size 2**63 made the report list every vote count up to
    it (a minute and gigabytes before; never, at 2**63): above a small panel only the counts seen are listed."""
    from judge.agreement import AgreementTally, vote_histogram
    from judge.testing.builders import cluster, issue

    normal = cluster(issue(1, "Reran the failing command."), votes=2, cid="c1")
    # 10**5, not 2**63: on the code before the fix the test must end (and fail), not stall
    claimed = normal.model_copy(update={"cluster": "c2", "votes": 10**5, "panel_size": 10**5})
    assert vote_histogram([normal]) == {1: 0, 2: 1, 3: 0}  # a real panel: every count, zeros included
    assert vote_histogram([normal, claimed]) == {2: 1, 10**5: 1}
    tally = AgreementTally()
    tally.add([], [normal, claimed])
    assert tally.summary()["vote_histogram"] == {"2": 1, str(10**5): 1}
