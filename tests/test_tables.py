"""The Parquet copies of a run (judge.tables): typed schemas derived from the row models, written in row groups,
equal to the JSONL row for row, and queried by pandas and DuckDB."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import judge.tables as tables
from judge import rundir
from judge.model import Usage
from judge.rundir import RunDir
from judge.schema import Cluster, ClusterMember, HumanReview, MachineResult, ReviewDecision, ScoreRow, Verdict
from judge.scoring import scored_issue
from judge.testing.builders import cluster, issue, verdict
from judge.testing.synthetic import synthetic_batch

REPO = Path(__file__).resolve().parents[1]


def write_run(run_dir: Path) -> RunDir:
    """A run with what the tables must carry: nested issues, usage, costs, unscored passes with raw output, nulls,
    unicode, a minority cluster and a trajectory with no score."""
    first, second = issue(2, "Reran the failing command.", tag="repeated-failure"), issue(None, "说完成了但没有检查。",
                                                                                          category="semantic", severity="severe")
    verdicts = [
        verdict(1, [first, second], trajectory_id="t1").model_copy(update={
            "usage": Usage(input_tokens=1200, output_tokens=80), "cost_usd": 0.0031, "latency_s": 1.25, "model": "m"}),
        verdict(2, [first], trajectory_id="t1").model_copy(update={"usage": Usage(input_tokens=1100), "cost_usd": None}),
        verdict(3, trajectory_id="t1", status="unscored", reason="parse_error").model_copy(update={"raw": "{not json"}),
        verdict(1, trajectory_id="t2", status="unscored", reason="no_assistant_turn"),
    ]
    majority = cluster(first, votes=2, trajectory_id="t1", cid="c1", judge="fake")
    minority = cluster(second, votes=1, trajectory_id="t1", cid="c2", judge="fake")
    minority.members = [ClusterMember(pass_key="fake#1", issue_index=1, issue=second)]
    scores = [
        ScoreRow(trajectory_id="t1", score=2, reason="1 severe", release=False, failed_checks=["outcome:failed"],
                 issues=[scored_issue(majority)], efficiency_votes=["high", "medium"], panel_size=3, valid_passes=2,
                 rubric="default-v2",
                 review=HumanReview(machine=MachineResult(score=3, reason="1 minor", release=True, majority=["c1"]),
                                    confirmed=["c1"], reviewers=["alice", "bob"],
                                    decisions=[ReviewDecision(kind="confirm-issue", target="c1", reviewer="alice",
                                                              at="2026-01-02T03:04:05Z")])),
        ScoreRow(trajectory_id="t2", score=None, reason="no assistant turn", release=False, panel_size=1, valid_passes=0),
    ]
    run = RunDir(run_dir)
    run.write_rows(rundir.VERDICTS, verdicts)
    run.write_rows(rundir.CLUSTERS, [majority, minority])
    run.write_rows(rundir.SCORES, scores)
    return run


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def score_rows(path: Path) -> list[dict]:
    """The rows scores.parquet must hold for a scores.jsonl: each row, then the review's figures flat."""
    return [{**row, "reviewed": row["review"] is not None,
             "reviewers": row["review"]["reviewers"] if row["review"] else None,
             "machine_score": row["review"]["machine"]["score"] if row["review"] else row["score"],
             "machine_release": row["review"]["machine"]["release"] if row["review"] else row["release"]}
            for row in jsonl(path)]


def test_every_table_equals_its_jsonl_row_for_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "ROW_GROUP_ROWS", 1)  # one row group per row: the streaming path, not one batch
    monkeypatch.setattr(tables, "MIN_BLOCK", 1)  # Arrow's reader yields several batches
    run = write_run(tmp_path)
    written = tables.write_tables(run.path)
    assert sorted(written) == sorted(rundir.PARQUET_TABLES)
    for source, target in ((rundir.VERDICTS, rundir.VERDICTS_PARQUET), (rundir.CLUSTERS, rundir.CLUSTERS_PARQUET)):
        assert pq.read_table(tmp_path / target).to_pylist() == jsonl(tmp_path / source), target
    scores = pq.read_table(tmp_path / rundir.SCORES_PARQUET).to_pylist()
    assert scores == score_rows(tmp_path / rundir.SCORES)
    assert [(s["reviewed"], s["reviewers"], s["score"], s["machine_score"], s["release"], s["machine_release"])
            for s in scores] == [(True, ["alice", "bob"], 2, 3, False, True), (False, None, None, None, False, False)]
    assert pq.ParquetFile(tmp_path / rundir.VERDICTS_PARQUET).metadata.num_row_groups == 4
    issues = pq.read_table(tmp_path / rundir.ISSUES_PARQUET).to_pylist()
    expected = [{**{k: v for k, v in row.items() if k != "members"}, "pass_keys": [m["pass_key"] for m in row["members"]]}
                for row in jsonl(tmp_path / rundir.CLUSTERS)]
    assert issues == expected and [i["majority"] for i in issues] == [True, False]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def test_the_schemas_are_typed(tmp_path: Path) -> None:
    write_run(tmp_path)
    tables.write_tables(tmp_path)
    scores = pq.read_schema(tmp_path / rundir.SCORES_PARQUET)
    assert scores.field("score").type == pa.int64() and scores.field("release").type == pa.bool_()
    assert scores.field("failed_checks").type == pa.list_(pa.string())
    verdicts = pq.read_schema(tmp_path / rundir.VERDICTS_PARQUET)
    assert verdicts.field("usage").type == pa.struct([("input_tokens", pa.int64()), ("output_tokens", pa.int64()),
                                                      ("cached_tokens", pa.int64())])
    assert verdicts.field("cost_usd").type == pa.float64()
    assert verdicts.field("issues").type.value_type.field("turn").type == pa.int64()
    assert pq.read_schema(tmp_path / rundir.ISSUES_PARQUET).names[-1] == "pass_keys"


def test_pandas_reads_the_tables_and_agrees_with_the_jsonl(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    write_run(tmp_path)
    tables.write_tables(tmp_path)
    scores = pd.read_parquet(tmp_path / rundir.SCORES_PARQUET)
    rows = jsonl(tmp_path / rundir.SCORES)
    assert scores["trajectory_id"].tolist() == [r["trajectory_id"] for r in rows]
    assert scores["score"].isna().tolist() == [r["score"] is None for r in rows] and scores["score"].iloc[0] == 2
    verdicts = pd.read_parquet(tmp_path / rundir.VERDICTS_PARQUET)
    by_status = verdicts.groupby("status").size().to_dict()
    assert by_status == dict(Counter(r["status"] for r in jsonl(tmp_path / rundir.VERDICTS)))
    assert verdicts["cost_usd"].sum() == pytest.approx(0.0031)


def test_duckdb_queries_the_tables_and_agrees_with_the_jsonl(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    write_run(tmp_path)
    tables.write_tables(tmp_path)
    folder = str(tmp_path)
    con = duckdb.connect()
    by_category = dict(con.execute(f"SELECT category, count(*) FROM '{folder}/issues.parquet' GROUP BY 1").fetchall())
    assert by_category == dict(Counter(c["category"] for c in jsonl(tmp_path / rundir.CLUSTERS)))
    nested = con.execute(f"SELECT count(*) FROM (SELECT unnest(issues) FROM '{folder}/verdicts.parquet')").fetchone()[0]
    assert nested == sum(len(v["issues"]) for v in jsonl(tmp_path / rundir.VERDICTS))
    tokens = con.execute(f"SELECT sum(usage.input_tokens) FROM '{folder}/verdicts.parquet'").fetchone()[0]
    assert tokens == sum(v["usage"]["input_tokens"] or 0 for v in jsonl(tmp_path / rundir.VERDICTS))
    joined = con.execute(f"SELECT s.trajectory_id, count(i.cluster) FROM '{folder}/scores.parquet' s LEFT JOIN "
                         f"'{folder}/issues.parquet' i ON i.trajectory_id = s.trajectory_id AND i.majority "
                         "GROUP BY 1 ORDER BY 1").fetchall()
    assert joined == [(r["trajectory_id"], len(r["issues"])) for r in jsonl(tmp_path / rundir.SCORES)]


def test_a_field_the_schema_lacks_leaves_its_row_out_and_says_so_not_a_dropped_column(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path)
    rows = jsonl(tmp_path / rundir.SCORES)
    rows[1]["novel"] = 1
    (tmp_path / rundir.SCORES).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tables.write_tables(tmp_path)
    table = pq.read_table(tmp_path / rundir.SCORES_PARQUET)
    assert table.column("trajectory_id").to_pylist() == ["t1"] and "novel" not in table.schema.names
    assert "warning: scores.jsonl:2: row left out of scores.parquet:" in capsys.readouterr().err
    (skip,) = RunDir(tmp_path).manifest().tables.skipped_rows
    assert (skip.file, skip.line) == ("scores.jsonl", 2) and "novel" in skip.error
    assert not list(tmp_path.glob("*.tmp"))
    rows[1].pop("novel")  # fixed: the next writing holds every row and clears the record
    (tmp_path / rundir.SCORES).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    tables.write_tables(tmp_path)
    assert pq.read_table(tmp_path / rundir.SCORES_PARQUET).num_rows == 2
    assert "tables" not in json.loads((tmp_path / rundir.MANIFEST).read_text())


@pytest.mark.parametrize("check_bytes", [1, 1 << 20])
def test_rows_beyond_int64_are_left_out_and_the_rest_written_in_order(
        tmp_path: Path, check_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the chunk the lines are checked in, exactly the bad rows are left out (issue 28)."""
    monkeypatch.setattr(tables, "CHECK_BYTES", check_bytes)
    write_run(tmp_path)
    rows = jsonl(tmp_path / rundir.VERDICTS)
    rows[0]["issues"][0]["turn"] = 2**63
    rows[2]["usage"] = {"input_tokens": 2**64, "output_tokens": None, "cached_tokens": None}
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path / rundir.VERDICTS).write_text(text.replace("\n", "\n\n", 1), encoding="utf-8")  # a blank line 2
    tables.write_tables(tmp_path)
    assert pq.read_table(tmp_path / rundir.VERDICTS_PARQUET).to_pylist() == [rows[1], rows[3]]
    skipped = RunDir(tmp_path).manifest().tables.skipped_rows
    assert [(s.file, s.line) for s in skipped] == [("verdicts.jsonl", 1), ("verdicts.jsonl", 4)]
    assert all("int64" in s.error for s in skipped)


def test_an_empty_file_gives_an_empty_typed_table_and_an_absent_one_none(tmp_path: Path) -> None:
    run = write_run(tmp_path)
    tables.write_tables(tmp_path)
    (tmp_path / rundir.CLUSTERS).write_text("", encoding="utf-8")
    (tmp_path / rundir.SCORES).unlink()
    written = tables.write_tables(run.path)
    assert rundir.SCORES_PARQUET not in written and not (tmp_path / rundir.SCORES_PARQUET).exists()  # no stale table
    empty = pq.read_table(tmp_path / rundir.ISSUES_PARQUET)
    assert empty.num_rows == 0 and empty.schema == tables.issues_schema()


def test_the_docs_list_every_column(tmp_path: Path) -> None:
    text = (REPO / "docs" / "parquet.md").read_text(encoding="utf-8")
    listed = {name: set(re.findall(r"^\| `([a-z_]+)`", section, re.MULTILINE))
              for name, section in re.findall(r"^## `(\w+\.parquet)`\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)}
    schemas = {rundir.VERDICTS_PARQUET: tables.model_schema(Verdict), rundir.CLUSTERS_PARQUET: tables.model_schema(Cluster),
               rundir.ISSUES_PARQUET: tables.issues_schema(), rundir.SCORES_PARQUET: tables.scores_schema()}
    assert {name: set(schema.names) for name, schema in schemas.items()} == listed


def test_judge_score_writes_the_tables(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from judge.cli import app

    batch, _ = synthetic_batch(6)
    source = tmp_path / "batch.jsonl"
    rundir.write_jsonl(source, batch)
    result = CliRunner().invoke(app, ["score", str(source), "--out", str(tmp_path / "run"), "--embedder", "lexical"])
    assert result.exit_code == 0, result.output
    for name in rundir.PARQUET_TABLES:
        assert name in result.output and (tmp_path / "run" / name).is_file()
    assert pq.read_table(tmp_path / "run" / rundir.SCORES_PARQUET).to_pylist() == score_rows(tmp_path / "run" / rundir.SCORES)
