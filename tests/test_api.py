"""The Python API (``import judge``, docs/python-api.md): one code path with the CLI, typed DataFrames, errors."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import judge
from judge import api, frames, rundir
from judge.cli import app
from judge.testing.builders import say, trajectory, verdict
from judge.testing.synthetic import synthetic_batch
from trajudge_socket_guard import child_pythonpath

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six synthetic trajectories (some with a repeated failing command) and one with no assistant turn,
    which no judge can score."""
    trajectories, _ = synthetic_batch(6, seed=3)
    trajectories.append(trajectory("no-answer", []))
    path = tmp_path_factory.mktemp("batch") / "batch.jsonl"
    path.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    return path


@pytest.fixture(scope="module")
def run(batch: Path, tmp_path_factory: pytest.TempPathFactory) -> api.Run:
    return judge.score([batch], out=tmp_path_factory.mktemp("api") / "run", embedder="lexical")


# --- import judge ----------------------------------------------------------------------------------


def test_import_judge_loads_no_api_until_a_name_is_used() -> None:
    script = (
        "import sys, judge\n"
        "heavy = ('pandas', 'pydantic', 'numpy', 'typer', 'judge.api', 'judge.pipeline', 'judge.model')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "judge.load_run\n"
        "print('judge.api' in sys.modules, 'pandas' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": child_pythonpath(ROOT)}, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "True False"]  # the frames load pandas only when asked for


def test_every_public_name_resolves() -> None:
    assert set(judge.__all__) == {"__version__", *judge._API}
    for name in judge.__all__:
        assert getattr(judge, name) is not None, name
    assert judge.score is api.score and judge.Run is api.Run and judge.Trajectory.__name__ == "Trajectory"
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        judge.nosuch  # noqa: B018


# --- one code path -----------------------------------------------------------------------------------


def test_the_cli_runs_the_api_function_and_writes_the_same_run(batch: Path, run: api.Run, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    real = api.score_async

    async def spy(inputs, out, **options):  # type: ignore[no-untyped-def]
        calls.append(Path(out))
        return await real(inputs, out, **options)

    monkeypatch.setattr(api, "score_async", spy)
    result = CliRunner().invoke(app, ["score", str(batch), "--out", str(tmp_path / "cli"), "--embedder", "lexical"])
    assert calls == [tmp_path / "cli"], result.output
    assert result.exit_code == 4, result.output  # the unanswered trajectory: its pass is unscored no_assistant_turn
    for name in (rundir.SCORES, rundir.CLUSTERS, rundir.TRAJECTORIES):
        assert (tmp_path / "cli" / name).read_text() == (run.path / name).read_text(), name


def test_score_returns_the_run_and_what_this_call_did(run: api.Run) -> None:
    assert isinstance(run, judge.Run) and run.invocation is not None
    assert run.invocation.imported is not None and run.invocation.imported.imported == 7
    assert run.invocation.panel is not None and [p.pass_key for p in run.invocation.panel.plans] == ["rules#1"]
    assert {row.trajectory_id for row in run.invocation.scores} == {t.id for t in run.trajectories()}
    assert Path(run.invocation.written["report_html"]).is_file()
    manifest = run.manifest()
    assert manifest.started_at and manifest.finished_at and manifest.panel is not None


def test_a_running_event_loop_does_not_stop_score(batch: Path, tmp_path: Path) -> None:
    async def notebook_cell() -> api.Run:  # Jupyter runs cells inside an event loop
        return judge.score(batch, out=tmp_path / "run", embedder="lexical", report=False)

    inner = asyncio.run(notebook_cell())
    assert len(inner.invocation.scores) == 7 and not (tmp_path / "run" / rundir.REPORT_HTML).exists()  # type: ignore[union-attr]


def test_rescore_recomputes_from_the_stored_verdicts(run: api.Run, tmp_path: Path) -> None:
    before = (run.path / rundir.SCORES).read_text()
    again = judge.rescore(run.path, report=False)
    assert again.invocation is not None and again.invocation.panel is None
    assert (run.path / rundir.SCORES).read_text() == before
    (tmp_path / rundir.TRAJECTORIES).write_text((run.path / rundir.TRAJECTORIES).read_text())
    with pytest.raises(FileNotFoundError, match="has no verdicts.jsonl"):
        judge.rescore(tmp_path)


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"inputs": "no/such/file.jsonl"}, "input not found: no/such/file.jsonl"),
        ({"judges": ["nosuch:model"]}, "unknown judge"),
        ({"judges": "openai:gpt-4o"}, "OPENAI_API_KEY is not set"),
        ({"rubric": "no-such-rubric.yaml"}, "rubric file not found"),
        ({"format": "nosuch"}, "unknown format 'nosuch'"),
        ({"temperature": "warm"}, "temperature"),
    ],
)
def test_bad_arguments_stop_before_any_judging(options: dict, message: str, batch: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    arguments = {"inputs": batch, "out": tmp_path / "run", **options}
    with pytest.raises(judge.SetupError, match=message):
        judge.score(arguments.pop("inputs"), **arguments)
    assert not (tmp_path / "run" / rundir.VERDICTS).exists()


def test_an_out_that_is_a_file_is_named_as_the_argument_at_fault(batch: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file\n")
    with pytest.raises(judge.SetupError, match="is a file, not a run directory") as caught:
        judge.score(batch, out=tmp_path / "taken")
    assert caught.value.argument == "out"


def test_nothing_imported_is_its_own_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(judge.NothingImported) as caught:
        judge.score(bad, out=tmp_path / "run")
    assert caught.value.stats.rejected == 1 and caught.value.rejects_path.is_file()


def test_load_run_names_what_is_missing(tmp_path: Path, run: api.Run) -> None:
    with pytest.raises(FileNotFoundError, match="no such run directory"):
        judge.load_run(tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="has no trajectories.jsonl"):
        judge.load_run(tmp_path)
    loaded = judge.load_run(str(run.path))
    assert loaded.invocation is None and [t.id for t in loaded.trajectories()] == [t.id for t in run.trajectories()]


# --- DataFrames ---------------------------------------------------------------------------------------


def _check_dtypes(frame: pd.DataFrame, columns: tuple[frames.Column, ...]) -> None:
    assert list(frame.columns) == [c.name for c in columns]
    for column in columns:
        dtype = frame[column.name].dtype
        if column.categories is None:
            assert str(dtype) == column.dtype, column.name
        else:
            assert isinstance(dtype, pd.CategoricalDtype) and dtype.ordered == column.ordered, column.name
            assert list(dtype.categories[: len(column.categories)]) == list(column.categories), column.name


def test_frames_have_one_row_per_item_and_typed_columns(run: api.Run) -> None:
    scores, issues, verdicts, clusters = run.scores_df(), run.issues_df(), run.verdicts_df(), run.clusters_df()
    for frame, columns in ((scores, frames.SCORE_COLUMNS), (issues, frames.ISSUE_COLUMNS),
                           (verdicts, frames.VERDICT_COLUMNS), (clusters, frames.CLUSTER_COLUMNS)):
        _check_dtypes(frame, columns)
    rows = list(run.verdicts())
    assert len(scores) == 7 and len(verdicts) == len(rows) == 7
    assert len(issues) == sum(len(v.issues) for v in rows) > 0
    assert len(clusters) == len(list(run.clusters())) > 0

    by_id = scores.set_index("trajectory_id")
    unanswered = by_id.loc["no-answer"]
    assert pd.isna(unanswered["score"]) and not unanswered["release"] and "valid" in unanswered["reason"]
    assert unanswered["turn_count"] == 0
    assert by_id["score"].dropna().between(2, 5).all()
    scored = by_id.drop(index="no-answer")
    assert (scored["issue_count"] == scored["severe_count"] + scored["minor_count"]).all()

    unscored = verdicts[verdicts["status"] == "unscored"]
    assert list(unscored["reason"]) == ["no_assistant_turn"] and unscored["efficiency"].isna().all()
    assert set(issues["category"].dropna()) <= set(frames.CATEGORIES) and issues["majority"].notna().all()
    # each issue row points at the cluster that holds it
    members = {(c.trajectory_id, m.pass_key, m.issue_index): c.cluster for c in run.clusters() for m in c.members}
    assert [members[key] for key in zip(issues.trajectory_id, issues.pass_key, issues.issue_index)] == list(issues["cluster"])


def test_empty_frames_keep_their_columns_and_types() -> None:
    for columns in frames.FRAMES.values():
        empty = frames.frame([], columns)
        assert len(empty) == 0
        _check_dtypes(empty, columns)


def test_an_unknown_unscored_reason_is_kept_not_turned_into_na() -> None:
    rows = [verdict(1), verdict(2, status="unscored", reason="new_kind_of_failure")]
    reasons = frames.verdicts_frame(rows)["reason"]
    assert list(reasons.astype(object).where(reasons.notna(), None)) == [None, "new_kind_of_failure"]
    assert "parse_error" in reasons.cat.categories  # the known reasons stay categories


@pytest.mark.parametrize("name", sorted(frames.FRAMES))
def test_the_documentation_lists_every_column(name: str) -> None:
    document = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert f"### {name}" in document
    assert frames.markdown_table(frames.FRAMES[name]) in document, f"docs/python-api.md: the {name} table is out of date"


# --- import -------------------------------------------------------------------------------------------


def test_read_trajectories_strict_and_not(tmp_path: Path) -> None:
    good = trajectory("t1", [say("Done.")])
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(good.to_json_line() + "\n{broken\n")
    with pytest.raises(ValueError, match=r"mixed.jsonl:2"):
        judge.read_trajectories(mixed)
    trajectories, rejects = judge.read_trajectories([mixed], strict=False)
    assert [t.id for t in trajectories] == ["t1"] and [r.line for r in rejects] == [2]
    stats = judge.import_(mixed, tmp_path / "out.jsonl")
    assert (stats.imported, stats.rejected) == (1, 1)
    assert json.loads((tmp_path / "out.jsonl").read_text())["id"] == "t1"
    assert "broken JSON" in (tmp_path / "out.rejects.jsonl").read_text()


# --- messages and several runs ----------------------------------------------------------------------------


def test_messages_df_has_a_row_per_message_with_its_turn_and_issue_flags(run: api.Run) -> None:
    messages = run.messages_df()
    _check_dtypes(messages, frames.MESSAGE_COLUMNS)
    trajectories = list(run.trajectories())
    assert len(messages) == sum(len(t.messages) for t in trajectories)
    for judged in trajectories:
        rows = messages[messages.trajectory_id == judged.id]
        assert list(rows.message_index) == list(range(len(judged.messages)))
        assert list(rows.role.astype(str)) == [m.role for m in judged.messages]
        for message, (_, row) in zip(judged.messages, rows.iterrows()):
            assert row.turn == message.turn  # a tool result carries the turn that called it
            if message.role == "tool":
                assert message.receipt is not None and bool(row.is_error) == message.receipt.is_error
                assert pd.isna(row.issue_count) and pd.isna(row.call_count)
            elif message.role == "assistant":
                assert row.call_count == len(message.tool_calls) and not pd.isna(row.issue_count)
    # the per-turn issue counts add up to scores_df's issue_count, and severe turns hold severe issues
    per_trajectory = messages.groupby("trajectory_id")["issue_count"].sum()
    scores = run.scores_df().set_index("trajectory_id")
    assert (per_trajectory.reindex(scores.index).fillna(0) <= scores["issue_count"]).all()
    for row in run.scores():
        localised = [i for i in row.issues if i.turn is not None]
        flagged = messages[(messages.trajectory_id == row.trajectory_id) & messages.severe_issue.fillna(False)]
        assert set(flagged.turn) == {i.turn for i in localised if i.severity == "severe"}
        assert per_trajectory.get(row.trajectory_id, 0) == len(localised)
    assert messages.severe_issue.fillna(False).any()  # the fixture run has a severe majority issue


def test_load_runs_concatenates_every_frame_with_a_run_column(run: api.Run, tmp_path: Path) -> None:
    import shutil

    second = tmp_path / "second"
    shutil.copytree(run.path, second)
    runs = judge.load_runs([run.path, second])
    assert len(runs) == 2 and [r.path for r in runs] == [run.path, second]
    for name, columns in frames.FRAMES.items():
        both, one = getattr(runs, name)(), getattr(run, name)()
        assert list(both.columns) == ["run", *(c.name for c in columns)], name
        assert len(both) == 2 * len(one), name
        _check_dtypes(both.drop(columns="run"), columns)
        assert list(both["run"].unique()) == [str(run.path), str(second)], name
        assert str(both["run"].dtype) == "string"
    with pytest.raises(ValueError, match="more than once"):
        judge.load_runs([run.path, run.path])
    with pytest.raises(FileNotFoundError):
        judge.load_runs([run.path, tmp_path / "missing"])
