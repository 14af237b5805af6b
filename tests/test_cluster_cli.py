"""`judge cluster`, `judge calibrate` and `judge rescore` through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from judge import rundir
from judge.cli import app
from judge.model import Message, Trajectory, TrajectoryMetadata, number_turns
from judge.schema import Issue, Verdict

FIXTURE = Path(__file__).parent / "fixtures" / "cluster" / "multilingual_defects.jsonl"
runner = CliRunner()


def test_cluster_writes_rows_back_with_cluster_and_votes(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    source.write_text("\n".join(lines[:6] + ["{not json", json.dumps({"trajectory_id": "x", "pass": "p"})] + lines[6:]) + "\n",
                      encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["cluster", str(source), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"{source}:7" in result.output and f"{source}:8" in result.output  # bad rows named, the rest goes on
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 36
    assert [r["description"] for r in rows] == [json.loads(line)["description"] for line in lines]  # input order kept
    truth_to_cluster = {(r["trajectory_id"], r["truth"]): r["cluster"] for r in rows}
    for row in rows:  # each hand-made defect (three languages) is one 3-vote cluster
        assert truth_to_cluster[(row["trajectory_id"], row["truth"])] == row["cluster"] and row["votes"] == 3


def test_calibrate_prints_the_fit_and_writes_a_config(tmp_path: Path) -> None:
    out = tmp_path / "fit.json"
    result = runner.invoke(app, ["calibrate", str(FIXTURE), "--embedder", "lexical", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "fitted" in result.output and "ARI" in result.output and "weights:" in result.output
    config = json.loads(out.read_text())
    assert config["embedder"] == "lexical" and set(config["weights"]) >= {"text", "turn_exact", "category"}
    clustered = tmp_path / "clustered.jsonl"
    again = runner.invoke(app, ["cluster", str(FIXTURE), "--out", str(clustered), "--config", str(out)])
    assert again.exit_code == 0, again.output


def test_calibrate_without_labels_fails_clearly(tmp_path: Path) -> None:
    source = tmp_path / "nolabels.jsonl"
    source.write_text("\n".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "truth"})
                                for line in FIXTURE.read_text(encoding="utf-8").splitlines()) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["calibrate", str(source), "--embedder", "lexical"])
    assert result.exit_code != 0 and "label" in result.output


def test_rescore_changes_scores_with_the_rubric_and_no_judge(tmp_path: Path) -> None:
    messages = number_turns([Message(role="user", content="fix it"), Message(role="assistant", content="Fixed nothing yet.")])
    rundir.write_jsonl(tmp_path / rundir.TRAJECTORIES, [Trajectory(id="a", query="fix it", query_id="q", messages=messages,
                                                                  metadata=TrajectoryMetadata(source_format="openai"))])
    minor = Issue(turn=1, category="semantic", severity="minor", description="vague final answer")
    rundir.write_jsonl(tmp_path / rundir.VERDICTS, [
        Verdict(trajectory_id="a", judge="fake", pass_index=k, pass_key=f"fake#{k}", status="ok", issues=[minor], efficiency="high")
        for k in range(3)])
    rundir.write_json(tmp_path / rundir.MANIFEST, {"panel": {"size": 3}, "cluster": {"embedder": "lexical"}})
    result = runner.invoke(app, ["rescore", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / rundir.SCORES).read_text())["score"] == 3
    harsh = tmp_path / "harsh.yaml"
    harsh.write_text("name: harsh\nversion: 1\nscores: {any_severe: 1, only_minor: 1, none: 4, none_efficient: 5}\n")
    result = runner.invoke(app, ["rescore", str(tmp_path), "--rubric", str(harsh)])
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / rundir.SCORES).read_text())
    assert (row["score"], row["rubric"]) == (1, "harsh-v1")
    assert json.loads((tmp_path / rundir.MANIFEST).read_text())["rubric"]["label"] == "harsh-v1"
    assert (tmp_path / rundir.SUMMARY).is_file() and (tmp_path / rundir.REPAIRS).is_file()  # later stages rerun too


def test_rescore_of_a_folder_without_verdicts_fails_clearly(tmp_path: Path) -> None:
    result = runner.invoke(app, ["rescore", str(tmp_path)])
    assert result.exit_code == 1 and "trajectories.jsonl" in result.output
