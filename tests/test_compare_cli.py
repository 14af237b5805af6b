"""`judge compare` on the command line: score options pass through to `judge score`, run dirs are read as is."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
import typer
from typer.testing import CliRunner

from judge import rundir
from judge.cli.analyse_cmds import split_score_args

# A stand-in with the shape of a score command: value options, a flag, a boolean pair, a count option.
FAKE_SCORE = click.Command(
    "score",
    params=[
        click.Argument(["inputs"], nargs=-1),
        click.Option(["--out", "-o"]),
        click.Option(["--judge", "-j"], multiple=True),
        click.Option(["--passes"], type=int),
        click.Option(["--resume/--no-resume"], default=True),
        click.Option(["--quiet"], is_flag=True),
        click.Option(["-v", "--verbose"], count=True),
    ],
)


@pytest.mark.parametrize(
    ("tokens", "inputs", "options"),
    [
        (["a.jsonl"], ["a.jsonl"], []),
        (["a.jsonl", "--judge", "rules", "b/"], ["a.jsonl", "b/"], ["--judge", "rules"]),
        (["--judge=rules", "a"], ["a"], ["--judge=rules"]),
        (["-j", "openai:gpt-4o", "--passes", "3", "x"], ["x"], ["-j", "openai:gpt-4o", "--passes", "3"]),
        (["--quiet", "x", "--no-resume", "-v"], ["x"], ["--quiet", "--no-resume", "-v"]),
    ],
)
def test_split_score_args_uses_the_score_commands_own_parameters(tokens, inputs, options):
    assert split_score_args(tokens, FAKE_SCORE) == (inputs, options)


@pytest.mark.parametrize(
    ("tokens", "message"),
    [(["--bogus", "x"], "no such option: --bogus"), (["x", "--passes"], "needs a value"),
     (["x", "--out", "d"], "--out belongs to judge compare")],
)
def test_split_score_args_rejects_what_score_would_not_take(tokens, message):
    with pytest.raises(typer.BadParameter, match=message):
        split_score_args(tokens, FAKE_SCORE)


def write_arm_run(run: Path, arm: str, scores: list[int]) -> None:
    """A scored run of one arm: continuations s0..sN branching after T1, with the given scores."""
    from judge.model import Message, Trajectory, TrajectoryMetadata, number_turns
    from judge.schema import ScoreRow

    trajectories, rows = [], []
    for i, score in enumerate(scores):
        messages = number_turns([Message(role="user", content="task"), Message(role="assistant", content="a"),
                                 Message(role="assistant", content="b")])
        tid = f"{arm}-{i}"
        trajectories.append(Trajectory(id=tid, query="task", query_id=f"q{i}", messages=messages, metadata=TrajectoryMetadata(
            source_format="openai", arm=arm, source_id=f"s{i}", branch_turn=1, target_issue="wrong flag")))
        rows.append(ScoreRow(trajectory_id=tid, score=score, reason="r", release=False, panel_size=1, valid_passes=1))
    rundir.write_jsonl(run / rundir.TRAJECTORIES, trajectories)
    rundir.write_jsonl(run / rundir.SCORES, rows)
    rundir.write_json(run / rundir.MANIFEST, {"cluster": {"embedder": "lexical"}})


def test_compare_cli_on_scored_run_dirs(tmp_path: Path):
    from judge.cli import app

    write_arm_run(tmp_path / "guided", "guided", [4, 4, 5, 3])
    write_arm_run(tmp_path / "unguided", "unguided", [3, 3, 3, 3, 2])
    runner = CliRunner(env={"COLUMNS": "300"})
    result = runner.invoke(app, ["compare", str(tmp_path / "guided"), str(tmp_path / "unguided"), "--out", str(tmp_path / "cmp"),
                                 "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "guided vs unguided: 4 pairs" in result.output
    assert "NOT evidence that guided is better than unguided" in result.output
    assert "1 continuation(s) without a partner" in result.output
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [p["source_id"] for p in data["pairs"]] == ["s0", "s1", "s2", "s3"]
    assert data["summary"]["unmatched"][0]["trajectory_id"] == "unguided-4"
    assert (tmp_path / "cmp" / "compare.html").exists() and (tmp_path / "cmp" / "compare.md").exists()


def test_compare_cli_errors_name_the_problem(tmp_path: Path):
    from judge.cli import app

    write_arm_run(tmp_path / "guided", "guided", [4])
    runner = CliRunner(env={"COLUMNS": "300"})
    one_arm = runner.invoke(app, ["compare", str(tmp_path / "guided"), "--out", str(tmp_path / "c")])
    assert one_arm.exit_code == 2 and "at least two arms" in one_arm.output
    missing = runner.invoke(app, ["compare", str(tmp_path / "nope"), "--out", str(tmp_path / "c")])
    assert missing.exit_code == 2 and "input not found" in missing.output
    nothing = runner.invoke(app, ["compare", "--out", str(tmp_path / "c")])
    assert nothing.exit_code == 2 and "at least one INPUT" in nothing.output


def test_compare_cli_judges_continuation_files_with_judge_score_options(tmp_path: Path):
    from judge.cli import app

    examples = Path(__file__).resolve().parents[1] / "examples" / "continuations" / "continuations.jsonl"
    out = tmp_path / "cmp"
    result = CliRunner(env={"COLUMNS": "300"}).invoke(
        app, ["compare", str(examples), "--out", str(out), "--judge", "rules", "--embedder", "lexical"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run" / "run.json").read_text())
    assert manifest["cluster"]["embedder"] == "lexical"  # the score option reached `judge score`
    assert [m["judge"] for m in manifest["panel"]["members"]] == ["rules"]
    data = json.loads((out / "compare.json").read_text())
    assert len(data["pairs"]) == 10
    assert "guided vs unguided: 10 pairs" in result.output
    bad = CliRunner(env={"COLUMNS": "300"}).invoke(
        app, ["compare", str(out / "run"), "--out", str(tmp_path / "c2"), "--judge", "rules"])
    assert bad.exit_code == 2 and "every input is an already scored run" in bad.output
